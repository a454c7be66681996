"""The public API: `Environment` holds the options, filters, tests and globals; `Template` renders."""
from __future__ import annotations

import dataclasses
import functools
import threading
from collections import OrderedDict
from collections import ChainMap
from typing import Any, Callable, Iterable, Iterator, Mapping, Optional

from .grammar import ast
from .values.hostcalls import host_result, keeps_marks_declared
from .loaders import TemplateLoading, keep
from .grammar.delimiters import Delimiters
from .grammar.sharedspans import share as share_spans
from .grammar.whitespace import Options
from .errors import TemplateError, TemplateRuntimeError, TemplateTooLarge
from .evaluation.autoescape import initial as initial_autoescape, set_autoescape
from .evaluation.composition import TOPLEVEL_BLOCKS, analyse, composes, run_template
from .evaluation.printer import GUARDED
from .evaluation.evaluator import DECLARED, Evaluator
from .evaluation.loops import LoopSignal
from .evaluation.expressions import BINARY
from .evaluation.compiling import code_of
from .evaluation.compiling.core import SCOPE_NEUTRAL
from .ext.api import Extension, install, parser_for
from .ext.names import resolve
from . import compile_checks, limits, metering, template_api
from .sandbox_hooks import SandboxHooks
from .values import sandbox
from .evaluation import tracking
from .builtins import filters_support
from .builtins.tests import BUILTIN_TESTS
from .limits import DEFAULT_LIMITS, Limits
from .evaluation.output import Part, to_parts
from .evaluation.scope import Scope, declarations
from .values.runtime import TemplateModule
from .values.undefined import Undefined
from .environment_tools import RenderContext, pass_arg_of
from .values.access import get_attribute, get_item
from .values.printing import to_string


def _option(field: str) -> Any:
    """A whitespace option of `Environment.options`, readable and settable by its own name."""
    def get(env: "Environment") -> Any:
        return getattr(env.options, field)

    def put(env: "Environment", value: Any) -> None:
        if field == "newline_sequence" and value not in ("\n", "\r\n", "\r"):
            raise ValueError("newline_sequence set to unknown line ending string.")
        env.options = dataclasses.replace(env.options, **{field: value})
        with env._lock:
            env._cache.clear()  # compiled with the old options
    return property(get, put)



class Environment(SandboxHooks, TemplateLoading):
    """Options and registries shared by the templates made from it (Jinja2's defaults), with
    Jinja2's sandbox hooks for host objects (sandbox_hooks.py)."""

    def __init__(self, block_start_string: str = "{%", block_end_string: str = "%}",
                 variable_start_string: str = "{{", variable_end_string: str = "}}",
                 comment_start_string: str = "{#", comment_end_string: str = "#}",
                 line_statement_prefix: Optional[str] = None,
                 line_comment_prefix: Optional[str] = None, trim_blocks: bool = False,
                 lstrip_blocks: bool = False, newline_sequence: str = "\n",
                 keep_trailing_newline: bool = False, extensions: Iterable[Extension | str] = (),
                 optimized: bool = True, undefined: type = Undefined,
                 finalize: Optional[Callable] = None, autoescape: Any = False, loader: Any = None,
                 cache_size: int = 400, auto_reload: bool = True, bytecode_cache: Any = None,
                 enable_async: bool = False, *, limits: Limits = DEFAULT_LIMITS,
                 immutable: bool = False, strict_extensions: bool = False) -> None:
        """Jinja2's arguments in Jinja2's order (`optimized` and `bytecode_cache` are accepted and
        have no effect); then ours, by keyword only: `limits`, `immutable`, `strict_extensions`."""
        from .builtins.tests import TESTS
        from .builtins.filters import FILTERS
        from .builtins.globals import GLOBALS

        if newline_sequence not in ("\n", "\r\n", "\r"):
            raise ValueError("newline_sequence set to unknown line ending string.")
        if enable_async:
            raise ValueError("enable_async: jinjamark renders synchronously only")
        self.options = Options(trim_blocks, lstrip_blocks, keep_trailing_newline, newline_sequence)
        # Jinja2's delimiter options; the grammar is generated from them (ValueError if unusable)
        self.delimiters = Delimiters(block_start_string, block_end_string, variable_start_string,
                                     variable_end_string, comment_start_string, comment_end_string,
                                     line_statement_prefix, line_comment_prefix)
        self.undefined = undefined
        self.loader = loader
        self.autoescape = autoescape  # a bool, or a function of the template name (select_autoescape)
        self.limits = limits
        self.immutable = immutable  # True: mutating list/dict methods raise SecurityError
        self.extensions = resolve(extensions)
        self.filters: dict[str, Callable] = dict(FILTERS)
        self.tests: dict[str, Callable] = dict(TESTS)
        self.globals: dict[str, Any] = dict(GLOBALS)
        self.cache_size = cache_size  # templates kept: 0 none, below 0 all
        self.auto_reload = auto_reload  # False: a loaded template is not checked for changes
        self.optimized, self.bytecode_cache = optimized, bytecode_cache
        self.policies: dict[str, Any] = {"json.dumps_function": None,
                                         "json.dumps_kwargs": {"sort_keys": True},
                                         "truncate.leeway": 5, "urlize.rel": "noopener",
                                         "urlize.target": None, "urlize.extra_schemes": None}
        self.handlers: dict[type, Callable] = {}  # extensions' node classes -> their handlers
        self.operators: dict[str, Callable] = dict(BINARY)
        self.binop_table, self.unop_table = dict(self.default_binop_table), dict(self.default_unop_table)
        install(self, self.extensions)  # conflicts between extensions are ExtensionErrors
        self.finalize = finalize  # applied to every `{{ }}` value first (evaluation/printer.py)
        # strict_extensions: Lark's strict mode, so that grammar conflicts fail instead of being
        # resolved silently (for developing and testing an extension; building is ~4x slower)
        self.strict_extensions = strict_extensions
        self._prepare()

    def _prepare(self) -> None:
        """What follows from the options and extensions (the parser: one per process and
        extension set), and the caches and lock: made here and again on unpickling, never
        pickled (pickling.py lists these attributes)."""
        # nodes whose handlers may look variables up by name: they hide what a template reads
        self.opaque_nodes = frozenset(kind for ext in self.extensions if not (
            ext.names_from_expressions or ext.scope_neutral) for kind in ext.handlers)
        # nodes that touch no frame by themselves: loops holding them keep their fast paths
        SCOPE_NEUTRAL.update(kind for ext in self.extensions if ext.scope_neutral
                             for kind in ext.handlers)
        self._parser = parser_for(self.extensions, strict=self.strict_extensions,
                                  delimiters=self.delimiters)
        self._cache: OrderedDict = OrderedDict()
        self._templates: OrderedDict = OrderedDict()  # by name, from the loader
        self._lock = threading.Lock()

    def __getstate__(self) -> dict:
        """The options and what differs from a new environment's tables (pickling.py)."""
        from . import pickling
        return pickling.environment_state(self)

    def __setstate__(self, state: dict) -> None:
        from . import pickling
        pickling.restore_environment(self, state)

    # Jinja2 lets these be set after the environment is made: templates compiled later use them
    newline_sequence = _option("newline_sequence")
    trim_blocks = _option("trim_blocks")
    lstrip_blocks = _option("lstrip_blocks")
    keep_trailing_newline = _option("keep_trailing_newline")

    # ------------------------------------------------------------------ templates
    def parse(self, source: str, name: Optional[str] = None) -> ast.Template:
        if len(source) > self.limits.max_template_size:
            raise TemplateTooLarge(f"the template has {len(source)} characters, more than "
                                   f"{self.limits.max_template_size}", name=name, lineno=1,
                                   column=1, source=source)
        tree = self._parser.parse(source, name, self.options, self.limits.max_nesting)
        compile_checks.check(self, tree, name, source)
        for ext in self.extensions:
            if ext.validate is not None:
                try:
                    ext.validate(tree)
                except TemplateError as e:
                    e.locate(e.lineno or 1, e.column or 1, name, source)
                    raise
        return tree

    def from_string(self, source: str, globals: Optional[Mapping[str, Any]] = None,
                    template_class: Optional[type] = None, name: Optional[str] = None
                    ) -> "Template":
        """A template for `source` (Jinja2's arguments; `name` is ours, and a string given
        second is still taken as the name, our older signature). Compiled templates are kept
        by source and name (`cache_size` of them); one with its own `globals` is a new one."""
        if isinstance(globals, str):
            name, globals = globals, None
        key = (source, name)
        with self._lock:
            template = self._cache.get(key)
            if template is not None:
                self._cache.move_to_end(key)
        if template is None:
            template = Template.from_ast(self, self.parse(source, name), source, name)
            keep(self._cache, self._lock, key, template, self.cache_size)
        if globals or template_class is not None:
            cls = template_class or self.template_class
            template = cls.from_ast(self, template.tree, source, name, globals)
        return template

    def compile_expression(self, source: str, undefined_to_none: bool = True
                           ) -> template_api.TemplateExpression:
        """`source` as one expression, a callable of the variables that returns its value."""
        return template_api.compile_expression(self, source, undefined_to_none)

    # ------------------------------------------------------------------ used by filters
    def getattr(self, obj: Any, name: str) -> Any:
        return sandbox.read_as(self, get_attribute, obj, name)

    def getitem(self, obj: Any, key: Any) -> Any:
        return sandbox.read_as(self, get_item, obj, key)

    def to_string(self, value: Any) -> str:
        return to_string(value)

    def call_filter(self, name: str, value: Any, args: Iterable = (),
                    kwargs: Optional[Mapping] = None, context: Any = None,
                    eval_ctx: Optional[RenderContext] = None) -> Any:
        fn = self.filters.get(name)
        if fn is None:
            raise TemplateRuntimeError(f"No filter named {name!r}.")
        if not keeps_marks_declared(fn):  # the host's own: what it may print, compare or hash
            metering.charge_walk(value, *args, *(kwargs or {}).values())
        result = self._call_with_env(fn, value, args, kwargs, eval_ctx, context)
        # the builtin filters keep marks (they say so); the host's own are taken fail safe
        return host_result(fn, result, (value, args), kwargs)

    def call_test(self, name: str, value: Any, args: Iterable = (),
                  kwargs: Optional[Mapping] = None, context: Any = None,
                  eval_ctx: Optional[RenderContext] = None) -> Any:
        fn = self.tests.get(name)
        if fn is None:
            raise TemplateRuntimeError(f"No test named {name!r}.")
        if fn not in BUILTIN_TESTS:  # the host's own: what it may compare or hash
            metering.charge_walk(value, *args, *(kwargs or {}).values())
        return self._call_with_env(fn, value, args, kwargs, eval_ctx, context)

    def _call_with_env(self, fn: Callable, value: Any, args: Iterable, kwargs: Optional[Mapping],
                       eval_ctx: Optional[RenderContext] = None, context: Any = None) -> Any:
        passed = pass_arg_of(fn)
        passed = getattr(passed, "name", passed)  # also accept Jinja2's own decorators
        if passed == "environment":
            return fn(self, value, *args, **(kwargs or {}))
        if passed == "context" and context is not None:  # the render's (contexts.Context)
            return fn(context, value, *args, **(kwargs or {}))
        if passed in ("context", "eval_context"):
            return fn(eval_ctx or RenderContext(self, False), value, *args, **(kwargs or {}))
        return fn(value, *args, **(kwargs or {}))


filters_support.BASE_GETITEM = Environment.getitem  # attribute getters read plain dicts at once
_NONE: frozenset = frozenset()  # shared by the templates with no ids to keep


def _names_read(tree: ast.Template, opaque: frozenset) -> Optional[frozenset[str]]:
    """Every variable name the template can read: a superset (a name counts wherever it is
    read, also where the template set it first). None when a node whose handler may look
    names up by itself (an extension's, see `Extension.names_from_expressions`) hides it."""
    names = set()
    for node in ast.walk(tree):
        kind = type(node)
        if kind is ast.Name or kind is ast.NamespaceTarget:
            names.add(node.name)
        elif kind in opaque or kind in _OTHER_TEMPLATES:
            return None
    return frozenset(names)


_OTHER_TEMPLATES = (ast.Extends, ast.Include, ast.Import, ast.FromImport)  # they read names too


class Template:
    """A compiled template. Render it to a string, or to parts flagged `is_input`.

    `names_read`: the variable names it can read (a superset), or None when unknown."""

    def __new__(cls, source: str = "", *args: Any, **options: Any) -> "Template":
        """`Template(source, ...)`: Environment's arguments, in Jinja2's order too."""
        if not source and not args and not options:
            return super().__new__(cls)
        return Environment(*args, **options).from_string(source)

    @classmethod
    def from_ast(cls, environment: Environment, tree: ast.Template, source: str,
                 name: Optional[str], globals: Optional[Mapping[str, Any]] = None) -> "Template":
        template = super().__new__(cls)
        template.environment = environment
        template.own_globals = dict(globals or {})  # before the environment's (Jinja2's globals=)
        template.tree = tree
        template.source = source
        template.name = name
        template.filename = None
        template.uptodate = None  # from the loader: whether the source is still what it was
        # the spans kept in one array (grammar/sharedspans.py), by the walk composes() asks
        template.composes = composes(share_spans(tree))
        try:  # which frame owns which name, and the blocks, found once, as Jinja2's compiler does
            template.blocks, toplevel, guarded = analyse(tree)
            # a template that does not compose never extends: nothing of it is guarded (and the
            # ids of its texts and outputs were a twentieth of what it keeps)
            template.memo = template_api.Memo(tree, {
                DECLARED: declarations(tree.body), TOPLEVEL_BLOCKS: toplevel or _NONE,
                GUARDED: guarded if template.composes else _NONE})
        except TemplateError as e:  # what Jinja2 cannot compile
            e.locate(e.lineno or 1, e.column or 1, name, source)
            raise
        return template

    @functools.cached_property
    def names_read(self) -> Optional[frozenset[str]]:
        """The variable names the template can read (a superset), or None when unknown; found
        when first asked (render_parts asks), so that rendering to a string never pays for it."""
        return _names_read(self.tree, self.environment.opaque_nodes)

    def __init__(self, source: str = "", *args: Any, **options: Any) -> None:
        pass

    # What compiling the source makes, and what using the template keeps (the loader's check,
    # the module): never pickled; unpickling compiles the source again, or takes the compile the
    # environment keeps for it.
    _COMPILED = ("tree", "blocks", "memo", "composes", "names_read")
    _KEPT_BY_USE = ("module", "uptodate", "origin_variant", "last_base")
    last_base: Optional[tuple] = None  # base_scope's last scopes, made again when what they hold changes

    def __getstate__(self) -> dict:
        """The environment, the source, its names and own globals: no tree."""
        return {key: value for key, value in self.__dict__.items()
                if key not in self._COMPILED and key not in self._KEPT_BY_USE}

    def __setstate__(self, state: dict) -> None:
        compiled = state["environment"].from_string(state["source"], name=state["name"])
        self.__dict__.update((key, value) for key, value in compiled.__dict__.items()
                             if key in self._COMPILED)
        self.__dict__.update(state)
        self.uptodate = None

    @property
    def is_up_to_date(self) -> bool:
        """Whether the loader's source is still the one this template was compiled from."""
        return self.uptodate is None or bool(self.uptodate())

    @property
    def globals(self) -> ChainMap:
        """The names every render sees: the template's own, then the environment's."""
        return ChainMap(self.own_globals, self.environment.globals)

    @functools.cached_property
    def module(self) -> TemplateModule:
        """The template rendered without variables, as `{% import %}` sees it (kept)."""
        return self.make_module()

    def make_module(self, vars: Optional[Mapping] = None, shared: bool = False,
                    locals: Optional[Mapping] = None) -> TemplateModule:
        """The template rendered with `vars` as a module: its exported names and its output."""
        return template_api.module_of(self, {**(vars or {}), **(locals or {})})

    def generate(self, *args: Any, **kwargs: Any) -> Iterator[str]:
        """The output piece by piece (rendered when the first piece is asked for)."""
        for piece in self._render(dict(*args, **kwargs)):
            yield str.__str__(piece)

    def stream(self, *args: Any, **kwargs: Any) -> template_api.TemplateStream:
        return template_api.TemplateStream(self.generate(*args, **kwargs))

    def render(self, *args: Any, **kwargs: Any) -> str:
        return "".join(self._render(dict(*args, **kwargs)))

    def render_parts(self, *args: Any, origins: bool = False, **kwargs: Any) -> list:
        """The output as parts flagged `is_input`; with `origins`, as `OriginPart`s that also say
        where input came from (marked with `mark_input(value, origin=...)`) and which message a
        loop over `messages` was writing for (evaluation/origins.py). `origins` is this method's
        own parameter, never a template variable."""
        if origins:
            from .evaluation.origins import render  # only for origins: not at import
            return render(self, dict(*args, **kwargs), parts=True)
        return to_parts(self._render(dict(*args, **kwargs)))

    @functools.cached_property
    def origin_variant(self) -> "Template":
        """This template with the marker nodes an origin render needs (evaluation/origins.py),
        compiled when first asked for."""
        from .evaluation.origins import traced_tree
        return Template.from_ast(self.environment, traced_tree(self.tree), self.source, self.name,
                                 self.own_globals)

    def render_with(self, context: dict, overlay: Optional[dict] = None,
                    generation_spans: Optional[list] = None) -> str:
        """Render with `overlay` between the environment's globals and the context. Given a
        list, `generation_spans` gets the (start, end) offsets in the output of every
        `{% generation %}` body, where its text lands (also from a macro or a capture)."""
        return "".join(self._render(dict(context), overlay, generation_spans))

    def render_parts_with(self, context: dict, overlay: Optional[dict] = None,
                          generation_spans: Optional[list] = None) -> list[Part]:
        return to_parts(self._render(dict(context), overlay, generation_spans))

    def _render(self, context: dict, overlay: Optional[dict] = None,
                generation_spans: Optional[list] = None, printed: Optional[dict] = None) -> list[str]:
        """Render; `context` (the caller's to give away) becomes the template's top-level scope
        (its `set`s write there) and is emptied once the render is done: a macro defined there
        refers to that scope, which holds the macro, and those cycles (a hundred objects a
        render for a template of a dozen macros) would otherwise wait for the garbage collector.
        `printed`: printed sizes of the context's data, measured as it was cleaned (a ChatTemplate's
        tools), for the render's memo where the environment is immutable."""
        try:
            if generation_spans is not None:
                return _render_tracked(self, context, overlay, generation_spans)
            env = self.environment
            ev = Evaluator(env, env.handlers, self.name, self.source, self.memo)
            if printed and ev.budget.printed is not None:
                ev.budget.printed = printed
            return self._start(ev, context, overlay)
        finally:
            context.clear()

    def _start(self, ev: Evaluator, context: dict, overlay: Optional[dict]) -> list[str]:
        """Run the template on `ev` with `context` over the base scopes (one frame for the whole
        render: a short render's setup is a few microseconds, and each call counted)."""
        env = self.environment
        if env.autoescape:
            ev.default_autoescape = initial_autoescape(env, self.name)
            set_autoescape(ev, ev.default_autoescape)
        token = limits.activate(ev.budget)  # its environment's hooks decide, too
        try:
            base = self.base_scope(overlay)
            scope = Scope(base, context)
            if self.composes:  # blocks, extends, include, import: evaluation/composition.py
                return run_template(ev, self, scope, base)
            ev.top = scope  # what pass_context callables see (contexts.Context)
            code_of(ev.code, self.tree.body)(ev, scope)  # ev.run, without its frame
        except LoopSignal:
            raise TemplateRuntimeError("break or continue outside of a loop", name=self.name,
                                       lineno=1, column=1, source=self.source) from None
        finally:
            limits.deactivate(token)
        return ev.out

    def base_scope(self, overlay: Optional[dict] = None) -> Scope:
        """The scopes under a render's variables: the environment's globals, the template's
        own, then `overlay`. A render only reads them, so the last ones made are used again
        while they stand for the same dicts (a ChatTemplate passes the same overlay each time)."""
        env_globals, own = self.environment.globals, self.own_globals
        last = self.last_base  # (overlay, globals, own, whether each is empty, base)
        if (last is not None and last[0] is overlay and last[1] is env_globals and last[2] is own
                and last[3] is (not own) and last[4] is (not overlay)):
            return last[5]
        base = Scope(None, env_globals)
        if own:
            base = Scope(base, own)
        base = Scope(base, overlay) if overlay else base
        self.last_base = (overlay, env_globals, own, not own, not overlay, base)
        return base


def _render_tracked(template: Template, context: dict, overlay: Optional[dict],
                    spans: list) -> list[str]:
    """A render on evaluators that record where generation bodies land (evaluation/tracking.py)."""
    tracker = tracking.Tracker()
    token = tracking.start_tracking(tracker)
    try:
        ev = tracking.TrackingEvaluator(template.environment, template.environment.handlers,
                                        template.name, template.source, template.memo)
        pieces = template._start(ev, context, overlay)
    finally:
        tracking.stop_tracking(token)
    spans.extend(tracking.resolve(pieces))
    return pieces


Environment.template_class = Template  # what loaders compile to (Jinja2's attribute)
for _name in Delimiters.__dataclass_fields__:  # Jinja2's delimiter attributes, read only
    setattr(Environment, _name, property(lambda env, name=_name: getattr(env.delimiters, name)))
