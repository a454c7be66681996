"""Builds and caches parsers; the one place where Lark's options live.

A parser is made once per process for each set of syntax extensions. A template is parsed in one
pass (grammar/onepass.py) over plain tables: for the default grammars they are shipped in the
package and read without importing Lark (grammar/tables.py); for others they are read from the
grammar's Lark parser (grammar/larktables.py). The two-pass parse (Lark's tree, then
grammar/transform.py) decides every failure, so that errors do not depend on which pass found
them; its Lark parser is made when first needed, from the tables shipped in the package, else
from the user's cache folder (`cache_folder`), else built (50-250 ms) and kept there.
"""
from __future__ import annotations

import functools
import gc
import os
import re
import sys
import threading
from dataclasses import field
from typing import TYPE_CHECKING, Any, Callable, Mapping, Optional

from . import ast, records, tables
from ._lark_import import import_lark
from .delimiters import DEFAULT, Delimiters
from .errors import TemplateError, TemplateSyntaxError, TemplateTooLarge, position
from .generate import grammar_text, opener_tags
from .whitespace import Options

if TYPE_CHECKING:
    from lark import Lark, Token, Tree

    from .onepass import OnePass

# Lark and the modules built on it (larktables, tagstream, lark_errors) are imported when a Lark
# parser is first needed (see above), never by `import jinjamark` (grammar/_lark_import.py).

DEFAULT_MAX_DEPTH = 200


records.MODULES.add(__name__)  # Syntax is a record (grammar/records.py): cheaper to define


class Syntax(records.Record):
    """The grammar side of an extension: a Lark fragment and builders for its rules.

    The fragment adds statements with `%extend _statement: my_stmt` and defines its own
    opener terminals in the core's style (`_MYTAG: /\\{%[-+]?\\s*mytag(?!\\w)/`). Each rule
    it defines that is not inlined needs a builder `(meta, children) -> ast node`. Openers are
    written for the default delimiters; with custom ones grammar/generate.py rewrites them.
    """
    name: str
    grammar: str
    rules: Mapping[str, Callable] = field(default_factory=dict)


def core_grammar() -> str:
    return _read("jinja.lark")


def extension_grammar(filename: str) -> str:
    """A grammar fragment shipped in grammar/extensions/."""
    return _read("extensions", filename)


def _read(*parts: str) -> str:
    """A file of this package: read from its folder (importlib.resources costs milliseconds
    to import, at every start), or through importlib.resources where the package is not in
    a folder (a zip)."""
    try:
        with open(os.path.join(os.path.dirname(__file__), *parts), encoding="utf-8") as f:
            return f.read()
    except OSError:
        from importlib import resources
        return resources.files(__package__).joinpath(*parts).read_text(encoding="utf-8")


def cache_folder() -> Optional[str]:
    """Where built parser tables are kept between processes, so that a process after the first
    loads them (about 40 ms) instead of building them (about 250 ms): JINJAMARK_CACHE_DIR, or the
    user's cache folder (XDG_CACHE_HOME or ~/.cache, then jinjamark). JINJAMARK_CACHE_DIR=''
    keeps nothing; a folder that cannot be made keeps nothing either."""
    folder = os.environ.get("JINJAMARK_CACHE_DIR")
    if folder is None:
        home = os.path.expanduser("~")
        base = os.environ.get("XDG_CACHE_HOME") or (None if home == "~" else os.path.join(home, ".cache"))
        folder = os.path.join(base, "jinjamark") if base else None
    if not folder:
        return None
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError:
        return None
    return folder


# The options that shape a parser's tables (grammar/tables.py keys shipped tables by them)
LARK_OPTIONS = dict(parser="lalr", lexer="contextual", propagate_positions=True, maybe_placeholders=True)


def has_shipped_tables(syntaxes: tuple[Syntax, ...], delimiters: Delimiters = DEFAULT) -> bool:
    """Whether the grammar of these extensions has plain tables shipped in the package: a grammar
    made and checked when they were generated (grammar/tables.py), whose fragments need no
    checking again (grammar/compose.py)."""
    if not delimiters.is_default or _no_shipped():
        return False
    grammar = _generated(tuple(s.grammar for s in syntaxes), delimiters).text
    return tables.load_plain(grammar, LARK_OPTIONS) is not None


@functools.lru_cache(maxsize=32)
def _generated(fragments: tuple[str, ...], delimiters: Delimiters) -> Any:
    """The composed grammar (grammar/generate.py), made once for `has_shipped_tables` and the
    parser both."""
    return grammar_text(core_grammar(), list(fragments), delimiters)


class Parser:
    """Source text to `ast.Template` for one grammar (the core plus some extensions).

    The one-pass parse runs on plain tables (grammar/larktables.py): the shipped ones for the
    default grammars, which need no Lark at all, else those read from the Lark parser built
    for the grammar. Lark itself (`self.lark`) is loaded when first needed: the two-pass parse
    that decides every error, error messages, or a grammar without shipped tables."""

    def __init__(self, syntaxes: tuple[Syntax, ...] = (), strict: bool = False,
                 delimiters: Delimiters = DEFAULT) -> None:
        from .transform import builder_class
        self.syntaxes = syntaxes
        self.delimiters = delimiters
        self.strict = strict
        generated = _generated(tuple(s.grammar for s in syntaxes), delimiters)
        self.grammar = generated.text  # with the default delimiters, the files' text unchanged
        callbacks = {"NAME": _identifier}
        options = dict(LARK_OPTIONS, strict=strict, lexer_callbacks=callbacks)
        if not delimiters.is_default:
            # Which tag the lexer is in, line ends, whitespace facts: grammar/tagstream.py
            from .tagstream import TagStream  # imports Lark
            block_openers = set(generated.tags) - generated.line_openers
            options["postlex"] = TagStream(delimiters, block_openers, generated.line_openers)
        self.lark_options = dict(options)
        self._lark = None
        self._lark_lock = threading.Lock()
        rules: dict[str, Callable] = {}
        for s in syntaxes:
            rules.update(s.rules)
        self.builder = builder_class(rules)
        shipped = (None if strict or not delimiters.is_default or _no_shipped()
                   else tables.load_plain(self.grammar, options))
        if shipped is None:
            self.lark  # built here: a grammar that does not build fails now  # noqa: B018
        self.tables = shipped if shipped is not None else _plain_tables(self._lark, callbacks)
        self._one_pass = _one_pass(self.tables, self.builder, callbacks, self._lark)
        self._tags = generated.tags
        self._custom = None if delimiters.is_default else delimiters
        self._name: Optional[re.Pattern] = None

    @property
    def tags(self) -> dict[str, str]:
        """Opener terminal -> tag keyword (error messages name tags by them): read from the
        grammar when first asked, for the default delimiters (grammar/generate.py)."""
        if self._tags is None:
            self._tags = opener_tags(self.grammar)
        return self._tags

    @property
    def lark(self) -> Lark:
        """The Lark parser of this grammar: loaded from the shipped tables, the user cache
        folder, or built (50-250 ms), when first asked for."""
        if self._lark is None:
            with self._lark_lock:
                if self._lark is None:
                    self._lark = _lark_parser(self.grammar, dict(self.lark_options), self.strict)
        return self._lark

    def parse(self, source: str, name: Optional[str] = None, options: Options = Options(),
              max_depth: int = DEFAULT_MAX_DEPTH) -> ast.Template:
        text = source
        if not options.keep_trailing_newline:
            text = _without_trailing_newline(source)
        collecting = gc.isenabled()
        try:
            # The parse makes millions of small objects that all live until it ends: the
            # garbage collector's passes over them cost a quarter of the time and grow with
            # the template (super-linear), for nothing to collect.
            gc.disable()
            if self._one_pass is not None:
                built = self._one_pass.parse(text, self.builder(text, options, self._custom), max_depth)
                if built is not None:
                    return built
            return self._two_pass(text, source, name, options, max_depth)
        finally:
            if collecting:
                gc.enable()

    def _two_pass(self, text: str, source: str, name: Optional[str], options: Options,
                  max_depth: int) -> ast.Template:
        """A tree, then the AST. The one-pass parse leaves every failure to it, so that errors
        are the same whichever pass found them."""
        from lark.exceptions import LarkError, UnexpectedInput, VisitError

        from .larktables import lark_transformer
        try:
            tree = self.lark.parse(text)
            check_depth(tree, max_depth, source)
            return lark_transformer(self.builder)(text, options, self._custom).transform(tree)
        except TemplateError as e:
            e.locate(e.lineno or 1, e.column or 1, name, source)
            raise
        except VisitError as e:
            inner = e.orig_exc
            if isinstance(inner, TemplateError):
                line, column = (inner.lineno, inner.column) if inner.lineno else _tree_position(e.obj)
                inner.locate(line, column, name, source)
                raise inner from None
            raise TemplateSyntaxError(f"cannot build the template: {inner}", name=name,
                                      lineno=1, column=1, source=source) from None
        except UnexpectedInput as e:
            from .lark_errors import from_lark
            raise from_lark(e, text, self.tags, name, source, self._custom, options,
                            lambda offset: self._read_until(text, offset), self._name_pattern()) from None
        except LarkError as e:
            raise TemplateSyntaxError(str(e), name=name, lineno=1, column=1, source=source) from None

    def _name_pattern(self) -> re.Pattern:
        """The NAME terminal's regular expression, for error messages: compiled when one is
        needed (its Unicode classes cost milliseconds, at every start otherwise)."""
        if self._name is None:
            self._name = re.compile(self.lark.get_terminal("NAME").pattern.to_regexp())
        return self._name

    def _read_until(self, text: str, offset: int) -> tuple[list[Token], Any]:
        """The tokens the parser reads from `text` before `offset`, and Lark's interactive parser
        in the state they leave it in. Parsed again, for error messages only: the state where a
        parse failed is past reductions made for the token it could not take."""
        from lark.exceptions import UnexpectedInput
        parser = self.lark.parse_interactive(text)
        tokens: list[Token] = []
        try:
            for tok in parser.lexer_thread.lex(parser.parser_state):
                if tok.start_pos >= offset:
                    break
                parser.feed_token(tok)
                tokens.append(tok)
        except (UnexpectedInput, TemplateError):
            pass
        return tokens, parser


def _no_shipped() -> bool:
    """JINJAMARK_NO_SHIPPED_TABLES set: the shipped tables are not read (to build them, or to
    time a build)."""
    return bool(os.environ.get("JINJAMARK_NO_SHIPPED_TABLES"))


def _lark_parser(grammar: str, options: dict, strict: bool) -> Lark:
    """The Lark parser for `grammar`: from the tables shipped in the package for this very
    grammar (grammar/tables.py), else from the user cache folder, else built (and kept there)."""
    import_lark()
    import lark
    parser = None if strict or _no_shipped() else tables.load(grammar, options)
    if parser is None:
        folder = None if strict else cache_folder()
        if folder is not None:
            # Lark checks the file's own hash of grammar, options and versions, and rebuilds
            # (and rewrites) a table it cannot use; the name only keeps grammars apart.
            key = f"{grammar}\0{lark.__version__}\0{sys.version_info[:2]}"
            options["cache"] = os.path.join(folder, f"lark-{_digest(key)}.cache")
        parser = _build(grammar, options, strict)
    _unit_rules_unwrapped(parser)
    return parser


def _plain_tables(parser: Lark, callbacks: Mapping[str, Callable]) -> Optional[dict]:
    """The one-pass parse's tables read from a Lark parser, or None where it cannot run."""
    from .larktables import plain_tables
    try:
        return plain_tables(parser, frozenset(callbacks))
    except Exception:  # noqa: BLE001 - Unsupported, or Lark's internals not as expected
        return None


def _one_pass(plain: Optional[dict], builder_class: type, callbacks: Mapping[str, Callable],
              lark_parser: Optional[Lark]) -> Optional[OnePass]:
    """The one-pass parse (grammar/onepass.py) for these tables, or None where it cannot run
    (a rule or builder of a shape it does not know)."""
    if plain is None:
        return None
    from .onepass import OnePass
    try:
        lexer = None if "scanners" in plain or lark_parser is None else lark_parser.parser.lexer
        return OnePass(plain, builder_class, callbacks, lexer)
    except Exception:  # noqa: BLE001 - Unsupported, or tables not as expected
        return None


def _identifier(token: Token) -> Token:
    """Names are Python identifiers (`é`, `名前`); a run of word characters that is not one
    (`x²`) is refused with Jinja2's message."""
    if not token.value.isidentifier():
        raise TemplateSyntaxError("Invalid character in identifier", lineno=token.line,
                                  column=token.column)
    return token


_build_lock = threading.Lock()


def _build(grammar: str, options: dict, strict: bool) -> Lark:
    """Build a Lark parser. Outside strict mode, skip Lark's terminal-collision analysis: when
    `interegular` happens to be installed it costs more than half of every build, and the
    grammar's collisions are checked once, by the strict-mode test."""
    import lark.lexer as lexer_module
    from lark import Lark
    with _build_lock:
        saved = lexer_module.has_interegular
        lexer_module.has_interegular = saved and strict
        try:
            return Lark(grammar, **options)
        finally:
            lexer_module.has_interegular = saved


def _unit_rules_unwrapped(parser: Lark) -> None:
    """A unit rule (`?or_expr: and_expr`, one nonterminal, inlined) hands its child back as it
    is, so Lark's position bookkeeping around it finds the child's own positions and writes
    them back unchanged. An expression goes through about 16 of them (each precedence level),
    half of a parse's time: their callbacks keep only the inlining."""
    from lark.parse_tree_builder import ExpandSingleChild, PropagatePositions
    lalr = parser.parser.parser.parser
    callbacks = lalr.callbacks
    for rule, callback in callbacks.items():
        inner = getattr(callback, "node_builder", None)
        if (type(callback) is PropagatePositions and type(inner) is ExpandSingleChild
                and len(rule.expansion) == 1 and not rule.expansion[0].is_term):
            callbacks[rule] = inner
    # Keyed by the very rule objects of the parse table (tables loaded from the cache hold
    # copies): each reduction's look-up is then found by identity, not by Rule.__eq__.
    table_rules = {id(arg): arg for actions in lalr.parse_table.states.values()
                   for _, arg in actions.values() if type(arg) is not int}
    lalr.callbacks = {rule: callbacks[rule] for rule in table_rules.values()}


def _without_trailing_newline(source: str) -> str:
    """Jinja2 drops a single trailing newline unless keep_trailing_newline is set."""
    if source.endswith("\r\n"):
        return source[:-2]
    if source.endswith(("\n", "\r")):
        return source[:-1]
    return source


def _tree_position(obj) -> tuple[int, int]:
    meta = getattr(obj, "meta", None)
    if meta is not None and not getattr(meta, "empty", True):
        return meta.line, meta.column
    return 1, 1


def check_depth(tree: Tree, max_depth: int, source: str) -> None:
    """Refuse trees nested deeper than the evaluator can walk (e.g. 10,000 brackets)."""
    from lark import Tree
    stack = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > max_depth:
            line, column = _tree_position(node)
            raise TemplateTooLarge(f"the template nests deeper than {max_depth} levels",
                                   lineno=line, column=column)
        for child in node.children:
            if isinstance(child, Tree):
                stack.append((child, depth + 1))


def _digest(text: str) -> str:
    import hashlib
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


_parsers: dict[tuple, Parser] = {}
_lock = threading.Lock()


def get_parser(syntaxes: tuple[Syntax, ...] = (), strict: bool = False,
               delimiters: Delimiters = DEFAULT) -> Parser:
    """The memoised parser for a set of extensions, keyed by their grammars and builders (the same
    grammar with other builders makes other nodes), in the order given, which callers fix.
    `strict` builds with Lark's strict mode: grammar conflicts and colliding terminals fail.
    `delimiters`: Jinja2's delimiter options; the grammar is generated from them."""
    key = (tuple((s.name, s.grammar, tuple(s.rules.items())) for s in syntaxes), strict, delimiters)
    parser = _parsers.get(key)
    if parser is None:
        with _lock:
            parser = _parsers.get(key)
            if parser is None:
                parser = _parsers[key] = Parser(syntaxes, strict, delimiters)
    return parser


__all__ = ["Parser", "Syntax", "get_parser", "core_grammar", "extension_grammar", "position"]
