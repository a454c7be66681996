"""What a host callable marked `pass_context` / `pass_environment` / `pass_eval_context` gets
first when a template calls it, as Jinja2 passes it: the render's `Context`, the environment,
or the evaluation context (`RenderContext`).

Jinja2's context holds the template's top-level names (the render's variables, the globals and
what the template's top level set) and, inside a loop or a block, the names `set` there; never a
loop's target or a macro's parameters. Ours shows the same: below the top level, only names the
template assigns with `set` (`ASSIGNED` in the template's memo). A callable object whose
`__call__` is marked is treated as marked, as in Jinja2.
"""
from __future__ import annotations

from types import BuiltinFunctionType, FunctionType, MethodType
from typing import Any, Callable, Iterator, Optional

from ..environment_tools import RenderContext, pass_arg_of
from ..values.hostcalls import host_result
from ..metering import charge_walk
from ..values.runtime import Function
from .scope import Scope
from ..grammar import ast
from ..values.undefined import MISSING

ASSIGNED = "names assigned by set"  # key of the template's memo: a frozenset of names


def assigned_names(tree: ast.Template) -> frozenset[str]:
    """The names a `set` or block `set` of the template assigns, but for those that are also
    a loop's target, a `with` name or a parameter somewhere (which the context never shows)."""
    assigned, bound = set(), set()
    for node in ast.walk(tree):
        kind = type(node)
        if kind is ast.Assign or kind is ast.AssignBlock:
            assigned.update(_names(node.target))
        elif kind is ast.For:
            bound.update(_names(node.target))
        elif kind is ast.With:
            bound.update(name for target, _ in node.targets for name in _names(target))
        elif kind is ast.Parameter:
            bound.add(node.name)
    return frozenset(assigned - bound)


def _names(target: Any) -> Iterator[str]:
    return (n.name for n in ast.walk(target) if type(n) is ast.NameTarget)


class Context:
    """The variables a template's top level sees, read only (Jinja2's `Context` API)."""

    __slots__ = ("_ev", "_top", "_inner")

    def __init__(self, ev: Any, scope: Scope) -> None:
        self._ev = ev
        chain = ev.chain
        top = chain.top if chain is not None else getattr(ev, "top", None)
        self._top: Scope = top if top is not None else scope
        # the frames between the call and the top level, nearest first, keeping only what
        # `set` assigned there (Jinja2's loop and block variables)
        try:
            assigned = ev.memo[ASSIGNED]  # a template's memo finds them when first asked
        except KeyError:  # the evaluator of an expression on its own: no template, no set
            assigned = frozenset()
        inner, current = [], scope
        while current is not None and current is not self._top:
            found = {k: v for k, v in current.vars.items() if k in assigned and v is not MISSING}
            if found:
                inner.append(found)
            current = current.parent
        self._inner = inner if current is self._top else []

    def _lookup(self, key: str) -> Any:
        for frame in self._inner:
            if key in frame:
                return frame[key]
        return self._top.lookup(key)

    @property
    def environment(self) -> Any:
        return self._ev.env

    @property
    def name(self) -> Optional[str]:
        return self._ev.name

    @property
    def autoescape(self) -> bool:
        return self._ev.autoescape

    @property
    def eval_ctx(self) -> RenderContext:
        return self._ev.eval_ctx or RenderContext(self._ev.env, self._ev.autoescape)

    def resolve_or_missing(self, key: str) -> Any:
        return self._lookup(key)

    def resolve(self, key: str) -> Any:
        """The value of `key`, or an undefined of the environment's kind."""
        value = self._lookup(key)
        return self._ev.undefined(name=key) if value is MISSING else value

    def get(self, key: str, default: Any = None) -> Any:
        value = self._lookup(key)
        return default if value is MISSING else value

    def __getitem__(self, key: str) -> Any:
        value = self._lookup(key)
        if value is MISSING:
            raise KeyError(key)
        return value

    def __contains__(self, key: str) -> bool:
        return self._lookup(key) is not MISSING

    def get_all(self) -> dict[str, Any]:
        """Every name the top level sees, the nearest definition of each."""
        frames, scope = [], self._top
        while scope is not None:
            frames.append(scope.vars)
            scope = scope.parent
        merged: dict[str, Any] = {}
        for frame in reversed(frames):
            merged.update(frame)
        for frame in reversed(self._inner):
            merged.update(frame)
        return {k: v for k, v in merged.items() if v is not MISSING}

    @property
    def vars(self) -> dict[str, Any]:
        return {k: v for k, v in self._top.vars.items() if v is not MISSING}

    @property
    def parent(self) -> dict[str, Any]:
        return {k: v for k, v in self.get_all().items() if k not in self._top.vars}

    def keys(self) -> Iterator[str]:
        return iter(self.get_all())

    __iter__ = keys

    def values(self) -> Any:
        return self.get_all().values()

    def items(self) -> Any:
        return self.get_all().items()

    def call(self, obj: Callable, *args: Any, **kwargs: Any) -> Any:
        """Call `obj`, passing this context (or what it asks for) first if it is marked."""
        first = passed_first(obj, self._ev, self._top)
        return obj(*args, **kwargs) if first is NOTHING else obj(first, *args, **kwargs)

    def jinja_holds_input(self, check: Callable[[Any], bool]) -> bool:
        """Whether a value it shows may hold input (a callable's result may be built from any
        of them); functions are code, not values, and the host's would count as opaque."""
        return check([v for v in self.get_all().values()
                      if type(v) not in _PLAIN and type(v) is not Function])

    def __repr__(self) -> str:
        return f"<Context {self.get_all()!r} of {self.name!r}>"


NOTHING: Any = object()
_PLAIN = frozenset({FunctionType, BuiltinFunctionType, MethodType})


def passed_first(func: Any, ev: Any, scope: Scope) -> Any:
    """What `func` wants first (a Context, the environment, an eval context), or NOTHING."""
    passed = pass_arg_of(func)
    if passed is None and type(func) not in _PLAIN:
        passed = pass_arg_of(getattr(type(func), "__call__", None))
    passed = getattr(passed, "name", passed)  # Jinja2's own decorators too
    if passed is None:
        return NOTHING
    if passed == "context":
        return Context(ev, scope)
    if passed == "environment":
        return ev.env
    if passed == "eval_context":
        return ev.eval_ctx or RenderContext(ev.env, ev.autoescape)
    return NOTHING


def quiet_context(env: Any) -> RenderContext:
    """The eval context of a render that does not autoescape, for the builtin filters that ask
    for one (they only read it): one per environment, not one per call."""
    ctx = env.__dict__.get("_quiet_eval_context")
    if ctx is None:
        ctx = env.__dict__["_quiet_eval_context"] = RenderContext(env, False)
    return ctx


def context_if_wanted(fn: Any, ev: Any, scope: Scope) -> Optional[Context]:
    """The render's context for a filter or test marked `pass_context`, else None."""
    passed = pass_arg_of(fn)
    return Context(ev, scope) if getattr(passed, "name", passed) == "context" else None


def call_passing(func: Any, ev: Any, scope: Scope, args: list, kwargs: dict) -> Any:
    """`func(*args, **kwargs)` from a template; with what it asks for first when it is marked.
    NOTHING when it is not (the caller calls it as any host function)."""
    first = passed_first(func, ev, scope)
    if first is NOTHING:
        return NOTHING
    charge_walk(*args, *kwargs.values())
    result = func(first, *args, **kwargs)
    # a result built from the context's values is input when any of them is
    sources = (args, first) if type(first) is Context else args
    return host_result(func, result, sources, kwargs)
