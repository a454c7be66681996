"""Where `{% extends %}`, `{% include %}`, `{% import %}` and `Environment.get_template` find
templates: Jinja2's loaders, with Jinja2's names and behaviour, and the environment's side of
loading (`TemplateLoading`).

A loader's `get_source(environment, name)` returns `(source, filename, uptodate)`: the text, the
file it came from (or None) and a callable that says whether a compiled copy is still current
(or None: always). It raises `TemplateNotFound` for a name it does not have. Template names are
always '/'-separated; a name that climbs out of a loader's folders (`..`) is not found.
"""
from __future__ import annotations

import importlib
import importlib.util
import os
import posixpath
import zipimport
from collections import abc
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence, Union

from .errors import UndefinedError
from .grammar.errors import TemplateError
from .values.undefined import Undefined

Source = tuple[str, Optional[str], Optional[Callable[[], bool]]]


class TemplateNotFound(TemplateError, LookupError):
    """No loader has a template of that name. As in Jinja2, `name` is that name and the
    message is the name; `lineno` and `column` tell where a template asked for it."""

    def __init__(self, name: Any, message: Optional[str] = None) -> None:
        super().__init__(str(name) if message is None else message, name=name)
        self.templates = [name]

    def __str__(self) -> str:
        return self.message


class TemplatesNotFound(TemplateNotFound):
    """None of several names (`select_template`, `{% include ['a', 'b'] %}`) was found."""

    def __init__(self, names: Sequence[Any] = (), message: Optional[str] = None) -> None:
        names = list(names)
        if message is None:  # an undefined name says why it is undefined, as in Jinja2
            message = "none of the templates given were found: " + ", ".join(
                n.undefined_message if isinstance(n, Undefined) else str(n) for n in names)
        super().__init__(names[-1] if names else None, message)
        self.templates = names


def split_template_path(name: str) -> list[str]:
    """The '/'-separated pieces of `name`, refusing any that would leave the loader's folder."""
    pieces = []
    for piece in name.split("/"):
        if os.path.sep in piece or (os.path.altsep and os.path.altsep in piece) or piece == os.path.pardir:
            raise TemplateNotFound(name)
        if piece and piece != ".":
            pieces.append(piece)
    return pieces


class BaseLoader:
    """Subclass and implement `get_source`; `list_templates` if the loader can list its names."""

    has_source_access = True

    def get_source(self, environment: Any, template: str) -> Source:
        raise TemplateNotFound(template)

    def list_templates(self) -> list[str]:
        raise TypeError("this loader cannot iterate over all templates")

    def load(self, environment: Any, name: str, globals: Optional[Mapping] = None) -> Any:
        source, filename, uptodate = self.get_source(environment, name)
        template = environment.compile_template(source, name, filename, globals)
        template.uptodate = uptodate
        return template


class DictLoader(BaseLoader):
    """Templates from a dict of name -> source."""

    def __init__(self, mapping: Mapping[str, str]) -> None:
        self.mapping = mapping

    def get_source(self, environment: Any, template: str) -> Source:
        if template in self.mapping:
            source = self.mapping[template]
            return source, None, lambda: source == self.mapping.get(template)
        raise TemplateNotFound(template)

    def list_templates(self) -> list[str]:
        return sorted(self.mapping)


class FunctionLoader(BaseLoader):
    """Templates from a function of the name: a source, `(source, filename, uptodate)`, or None."""

    def __init__(self, load_func: Callable[[str], Any]) -> None:
        self.load_func = load_func

    def get_source(self, environment: Any, template: str) -> Source:
        found = self.load_func(template)
        if found is None:
            raise TemplateNotFound(template)
        if isinstance(found, str):
            return found, None, None
        return found


class FileSystemLoader(BaseLoader):
    """Templates from files under one or more folders, searched in order."""

    def __init__(self, searchpath: Union[str, os.PathLike, Sequence[Union[str, os.PathLike]]],
                 encoding: str = "utf-8", followlinks: bool = False) -> None:
        if not isinstance(searchpath, abc.Iterable) or isinstance(searchpath, str):
            searchpath = [searchpath]
        self.searchpath = [os.fspath(p) for p in searchpath]
        self.encoding = encoding
        self.followlinks = followlinks

    def get_source(self, environment: Any, template: str) -> Source:
        pieces = split_template_path(template)
        for folder in self.searchpath:
            # '/' joins, as Jinja2 does: template names are never OS paths
            filename = posixpath.join(folder, *pieces)
            if os.path.isfile(filename):
                break
        else:
            where = ", ".join(map(repr, self.searchpath))
            plural = "path" if len(self.searchpath) == 1 else "paths"
            raise TemplateNotFound(template, f"{template!r} not found in search {plural}: {where}")
        try:
            with open(filename, encoding=self.encoding) as f:
                source = f.read()
        except UnicodeDecodeError as e:
            raise TemplateError(f"{template!r} is not {self.encoding} text: {e.reason} at byte "
                                f"{e.start}", name=template) from None
        mtime = os.path.getmtime(filename)

        def uptodate() -> bool:
            try:
                return os.path.getmtime(filename) == mtime
            except OSError:
                return False

        return source, os.path.normpath(filename), uptodate

    def list_templates(self) -> list[str]:
        found = set()
        for folder in self.searchpath:
            for dirpath, _, filenames in os.walk(folder, followlinks=self.followlinks):
                for filename in filenames:
                    path = os.path.join(dirpath, filename)[len(folder):].strip(os.path.sep)
                    found.add(path.replace(os.path.sep, "/"))
        return sorted(found)


class PackageLoader(BaseLoader):
    """Templates from the folder `package_path` of an importable package (imported to find
    it), on disk or inside a zip archive."""

    def __init__(self, package_name: str, package_path: str = "templates",
                 encoding: str = "utf-8") -> None:
        package_path = os.path.normpath(package_path).rstrip(os.path.sep)
        if package_path == os.path.curdir:
            package_path = ""
        elif package_path.startswith(os.path.curdir + os.path.sep):
            package_path = package_path[2:]
        self.package_name, self.package_path, self.encoding = package_name, package_path, encoding
        importlib.import_module(package_name)
        spec = importlib.util.find_spec(package_name)
        if spec is None:
            raise ValueError(f"no package named {package_name!r}")
        self._loader = spec.loader
        self._archive: Optional[str] = None
        if isinstance(spec.loader, zipimport.zipimporter):
            self._archive = spec.loader.archive
            root = os.path.join(next(iter(spec.submodule_search_locations or ())), package_path)
        else:  # a package's folders, or the folder of a single module
            folders = list(spec.submodule_search_locations or ())
            if not folders and spec.origin is not None:
                folders = [os.path.dirname(spec.origin)]
            if not folders:
                raise ValueError(f"The {package_name!r} package was not installed in a way "
                                 "that PackageLoader understands.")
            root = next((os.path.join(f, package_path) for f in folders
                         if os.path.isdir(os.path.join(f, package_path))), None)
            if root is None:
                raise ValueError(f"PackageLoader could not find a {package_path!r} directory "
                                 f"in the {package_name!r} package.")
        self._template_root = root.rstrip(os.path.sep)

    def get_source(self, environment: Any, template: str) -> Source:
        path = os.path.normpath(posixpath.join(self._template_root, *split_template_path(template)))
        if self._archive is None:
            if not os.path.isfile(path):
                raise TemplateNotFound(template)
            with open(path, "rb") as f:
                data = f.read()
            mtime = os.path.getmtime(path)
            uptodate: Optional[Callable[[], bool]] = (
                lambda: os.path.isfile(path) and os.path.getmtime(path) == mtime)
        else:
            try:
                data = self._loader.get_data(path)  # type: ignore[union-attr]
            except OSError:
                raise TemplateNotFound(template) from None
            uptodate = None  # an archive does not change under a running program
        return data.decode(self.encoding), path, uptodate

    def list_templates(self) -> list[str]:
        if self._archive is None:
            return sorted(
                os.path.relpath(os.path.join(folder, name), self._template_root).replace(os.path.sep, "/")
                for folder, _, names in os.walk(self._template_root) for name in names)
        prefix = os.path.relpath(self._template_root, self._archive).replace(os.path.sep, "/") + "/"
        import zipfile  # here: zipfile imports shutil, bz2 and lzma (3-4 ms at every start)
        with zipfile.ZipFile(self._archive) as archive:
            return sorted(n[len(prefix):] for n in archive.namelist()
                          if n.startswith(prefix) and not n.endswith("/"))


class PrefixLoader(BaseLoader):
    """Loaders by prefix: `'app/index.html'` is `index.html` of the loader under `'app'`."""

    def __init__(self, mapping: Mapping[str, BaseLoader], delimiter: str = "/") -> None:
        self.mapping = mapping
        self.delimiter = delimiter

    def _loader_for(self, template: str) -> tuple[BaseLoader, str]:
        try:
            prefix, name = template.split(self.delimiter, 1)
            return self.mapping[prefix], name
        except (ValueError, KeyError):
            raise TemplateNotFound(template) from None

    def get_source(self, environment: Any, template: str) -> Source:
        loader, name = self._loader_for(template)
        try:
            return loader.get_source(environment, name)
        except TemplateNotFound:
            raise TemplateNotFound(template) from None  # the full name, not the inner one

    def list_templates(self) -> list[str]:
        return [prefix + self.delimiter + name for prefix, loader in self.mapping.items()
                for name in loader.list_templates()]


class ChoiceLoader(BaseLoader):
    """The first of several loaders that has the template."""

    def __init__(self, loaders: Iterable[BaseLoader]) -> None:
        self.loaders = list(loaders)

    def get_source(self, environment: Any, template: str) -> Source:
        for loader in self.loaders:
            try:
                return loader.get_source(environment, template)
            except TemplateNotFound:
                pass
        raise TemplateNotFound(template)

    def list_templates(self) -> list[str]:
        return sorted({name for loader in self.loaders for name in loader.list_templates()})


class TemplateLoading:
    """Jinja2's loading API, for `Environment`: templates by name from its `loader`, compiled
    once and kept (by loader and name) while the loader says they are up to date."""

    template_class: Any  # set by environment.py: the Template class
    loader: Any
    cache_size: int
    auto_reload: bool
    _templates: Any  # an OrderedDict (loader, name) -> template, made by Environment
    _lock: Any

    def get_template(self, name: Any, parent: Optional[str] = None,
                     globals: Optional[Mapping] = None) -> Any:
        """The template the loader has under `name` (compiled once, kept while up to date).
        `globals`: names for that template, added to its own the first time it is loaded."""
        if isinstance(name, self.template_class):
            if globals:
                name.globals.update(globals)
            return name
        if isinstance(name, Undefined):
            name.fail()
        if parent is not None:
            name = self.join_path(name, parent)
        return self._load_template(name, globals)

    def select_template(self, names: Any, parent: Optional[str] = None,
                        globals: Optional[Mapping] = None) -> Any:
        """The first of `names` the loader has."""
        if isinstance(names, Undefined):
            names.fail()
        if not names:
            raise TemplatesNotFound(message="Tried to select from an empty list of templates.")
        for name in names:
            if isinstance(name, self.template_class):
                return name
            if parent is not None:
                name = self.join_path(name, parent)
            try:
                return self._load_template(name, globals)
            except (TemplateNotFound, UndefinedError):
                pass
        raise TemplatesNotFound(names)

    def get_or_select_template(self, template_name_or_list: Any, parent: Optional[str] = None,
                               globals: Optional[Mapping] = None) -> Any:
        """`get_template` for a name or a template, `select_template` for a list of them."""
        if isinstance(template_name_or_list, (str, Undefined, self.template_class)):
            return self.get_template(template_name_or_list, parent, globals)
        return self.select_template(template_name_or_list, parent, globals)

    def join_path(self, template: str, parent: str) -> str:
        """A name relative to the template that refers to it; override for relative names."""
        return template

    def list_templates(self, extensions: Optional[Iterable[str]] = None,
                       filter_func: Optional[Callable[[str], bool]] = None) -> list[str]:
        if self.loader is None:
            raise TypeError("no loader for this environment specified")
        names = self.loader.list_templates()
        if extensions is not None:
            wanted = tuple("." + e for e in extensions)
            names = [n for n in names if n.endswith(wanted)]
        return [n for n in names if filter_func(n)] if filter_func is not None else names

    def compile_template(self, source: str, name: Optional[str], filename: Optional[str] = None,
                         globals: Optional[Mapping] = None) -> Any:
        template = self.template_class.from_ast(self, self.parse(source, name), source, name,
                                                globals)
        template.filename = filename
        return template

    def _load_template(self, name: Any, globals: Optional[Mapping] = None) -> Any:
        if self.loader is None:
            raise TypeError("no loader for this environment specified")
        key = (self.loader, name)  # a loader set later has its own templates
        with self._lock:
            template = self._templates.get(key)
        if template is not None and (not self.auto_reload or template.uptodate is None
                                     or template.uptodate()):
            if globals:  # as Jinja2: a cached template takes the globals given later too
                template.globals.update(globals)
            return template
        if isinstance(self.loader, BaseLoader):
            template = self.loader.load(self, name, globals)
        else:  # a Jinja2-style loader object: get_source is the protocol
            source, filename, uptodate = self.loader.get_source(self, name)
            template = self.compile_template(source, name, filename, globals)
            template.uptodate = uptodate
        keep(self._templates, self._lock, key, template, self.cache_size)
        return template


def keep(cache: Any, lock: Any, key: Any, value: Any, size: int) -> None:
    """Put `value` in the LRU `cache` of `size` entries (Jinja2's cache_size: 0 keeps nothing,
    a negative size everything)."""
    if size == 0:
        return
    with lock:
        cache[key] = value
        cache.move_to_end(key)
        if size > 0 and len(cache) > size:
            cache.popitem(last=False)
