"""Host objects under Jinja2's sandbox rules: what a template may read and call of them.

A host object is any value the embedding program passes that is not part of jinjamark's value
model (a dataclass, a named tuple, a `datetime.date`, an object of its own). Templates read it as
Jinja2's `SandboxedEnvironment` does: public attributes (an item when there is no attribute),
its own `__getitem__`, `str()` to print; names starting with `_`, Python's internals
(`is_internal_attribute`) and callables marked `@unsafe` (or `alters_data`, as Django's) are
refused. The environment decides through `is_safe_attribute(obj, attr, value)` and
`is_safe_callable(obj)`, which an `Environment` subclass may override, as in Jinja2.

The values of jinjamark's own model (str, numbers, lists, dicts, the loop, macros ...) keep their
fixed tables (access.py, methods.py): the sandbox holds for them by construction, and these
hooks are asked about host objects only.

The render's environment is known here through the render's meter (metering.py), which the
context variable `Template` sets for the duration of a render holds; outside a render the
defaults below decide.
"""
from __future__ import annotations

import operator
import types
from collections import abc
from typing import Any, Callable, Optional, TypeVar

from ..metering import Meter, running, start, stop
from .marks import Input, Marked, Mixed
from .numbers import InputBytes, InputFloat, InputInt, InputRange
from .undefined import Undefined

F = TypeVar("F", bound=Callable[..., Any])

MAX_RANGE = 100_000  # Jinja2's sandbox constant; jinjamark's bound is `Limits.max_range` (the same)

# Attributes of Python's own objects that reach code and frames; every `__dunder__` is refused too.
UNSAFE_FUNCTION_ATTRIBUTES: frozenset = frozenset()
UNSAFE_METHOD_ATTRIBUTES: frozenset = frozenset()
UNSAFE_GENERATOR_ATTRIBUTES = frozenset({"gi_frame", "gi_code", "gi_yieldfrom"})
UNSAFE_COROUTINE_ATTRIBUTES = frozenset({"cr_frame", "cr_code", "cr_await"})
UNSAFE_ASYNC_GENERATOR_ATTRIBUTES = frozenset({"ag_code", "ag_frame", "ag_await"})
# and those of the old Python 2 names Jinja2's documentation names (func_code, func_globals ...)
_OLD_FUNCTION_ATTRIBUTES = frozenset({"func_closure", "func_code", "func_dict", "func_defaults",
                                      "func_globals", "im_class", "im_func", "im_self"})

# The methods that change a container of each abstract kind (ImmutableSandboxedEnvironment's).
MUTATING: tuple = (
    # a deque first: it is a MutableSequence too, and Jinja2's order lets `popleft`, `appendleft`,
    # `extendleft` and `rotate` through its immutable sandbox; ours refuses them
    (__import__("collections").deque, frozenset({"append", "appendleft", "clear", "extend",
                                                 "extendleft", "pop", "popleft", "remove",
                                                 "rotate", "insert", "reverse"})),
    (abc.MutableSet, frozenset({"add", "clear", "difference_update", "discard", "pop", "remove",
                                "symmetric_difference_update", "update",
                                "intersection_update"})),
    (abc.MutableMapping, frozenset({"clear", "pop", "popitem", "setdefault", "update"})),
    (abc.MutableSequence, frozenset({"append", "clear", "pop", "reverse", "insert", "sort",
                                     "extend", "remove"})),
)


def unsafe(fn: F) -> F:
    """Mark a function or method as never callable from a template (Jinja2's `sandbox.unsafe`)."""
    fn.unsafe_callable = True  # type: ignore[attr-defined]
    return fn


def is_internal_attribute(obj: Any, attr: str) -> bool:
    """Whether `attr` of `obj` is one of Python's internals a template must never reach: every
    `__dunder__` name, a function's or generator's code and frame, a type's `mro`, anything of a
    code, frame or traceback object (Jinja2's rule, and the Python 2 `func_*` names)."""
    if isinstance(obj, (types.FunctionType, types.MethodType, types.BuiltinFunctionType)):
        if attr in UNSAFE_FUNCTION_ATTRIBUTES or attr in _OLD_FUNCTION_ATTRIBUTES:
            return True
        if isinstance(obj, types.MethodType) and attr in UNSAFE_METHOD_ATTRIBUTES:
            return True
    elif isinstance(obj, type):
        if attr == "mro":
            return True
    elif isinstance(obj, (types.CodeType, types.TracebackType, types.FrameType)):
        return True
    elif isinstance(obj, types.GeneratorType):
        if attr in UNSAFE_GENERATOR_ATTRIBUTES:
            return True
    elif isinstance(obj, types.CoroutineType):
        if attr in UNSAFE_COROUTINE_ATTRIBUTES:
            return True
    elif isinstance(obj, types.AsyncGeneratorType):
        if attr in UNSAFE_ASYNC_GENERATOR_ATTRIBUTES:
            return True
    return attr.startswith("__")


def modifies_known_mutable(obj: Any, attr: str) -> bool:
    """Whether `attr` is a method that changes `obj`, a list, dict, set or deque (or one of their
    abstract kinds): what the immutable sandbox refuses."""
    for kind, names in MUTATING:
        if isinstance(obj, kind):
            return attr in names
    return False


def default_is_safe_attribute(obj: Any, attr: str, value: Any) -> bool:
    """Jinja2's `SandboxedEnvironment.is_safe_attribute`: no `_` names, no internals."""
    return not (attr.startswith("_") or is_internal_attribute(obj, attr))


def default_is_safe_callable(obj: Any) -> bool:
    """Jinja2's `SandboxedEnvironment.is_safe_callable`: not marked unsafe, nor `alters_data`."""
    return not (getattr(obj, "unsafe_callable", False) or getattr(obj, "alters_data", False))


# Jinja2's operator tables, for `call_binop` / `call_unop` of the intercepted operators.
DEFAULT_BINOP_TABLE: dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
    "//": operator.floordiv, "**": operator.pow, "%": operator.mod,
}
DEFAULT_UNOP_TABLE: dict[str, Callable[[Any], Any]] = {"+": operator.pos, "-": operator.neg}


# ---------------------------------------------------------------------------- the render's policy

# The environment whose hooks decide is the running render's (its meter's, metering.py: the render
# sets one context variable for its limits and its policy); outside a render, the defaults.

def _deciding() -> Optional[Any]:
    meter = running()
    return None if meter is None else meter.environment


def read_as(env: Any, read: Callable, obj: Any, key: Any) -> Any:
    """`env.getattr` / `env.getitem`: `read` (values.get_attribute or get_item) with `env`'s hooks
    deciding, also when Python calls it outside a render (under a meter of `env`'s limits)."""
    if _deciding() is env:
        return read(obj, key, env.undefined, not env.immutable)
    token = start(Meter(env.limits, env))
    try:
        return read(obj, key, env.undefined, not env.immutable)
    finally:
        stop(token)


def is_safe_attribute(obj: Any, attr: str, value: Any) -> bool:
    env = _deciding()
    if env is None:
        return default_is_safe_attribute(obj, attr, value)
    return bool(env.is_safe_attribute(obj, attr, value))


def is_safe_callable(obj: Any) -> bool:
    env = _deciding()
    if env is None:
        return default_is_safe_callable(obj)
    return bool(env.is_safe_callable(obj))


def is_immutable() -> bool:
    env = _deciding()
    return bool(env is not None and env.immutable)


# ---------------------------------------------------------------------------- host objects

def _model_types() -> frozenset:
    views = (type({}.keys()), type({}.values()), type({}.items()))
    return frozenset({str, int, float, bool, complex, type(None), list, tuple, dict, set,
                      frozenset, bytes, bytearray, range, slice, InputInt, InputFloat, InputBytes,
                      InputRange, Input, Mixed, *views})  # marked text: known at once, no hasattr


# The types of jinjamark's value model: everything else an embedder passes is a host object.
_MODEL = _model_types()


def is_host_object(obj: Any) -> bool:
    """Whether `obj` is outside jinjamark's value model (read with Jinja2's sandbox rules)."""
    t = type(obj)
    return not (t in _MODEL or hasattr(t, "jinja_attribute") or isinstance(obj, (Marked, Undefined)))


REFUSED = object()


def host_attribute(obj: Any, name: str) -> Optional[tuple]:
    """`obj.name` of a host object as Jinja2's sandbox reads it: `(value,)`, `(REFUSED,)` when
    the environment's `is_safe_attribute` says no, or None when there is no such attribute."""
    if isinstance(obj, types.ModuleType):  # ours: a module passed in is no way to its globals
        return (REFUSED,)
    if name.startswith("_"):  # refused whenever it is there, never looked at
        try:
            return (REFUSED,) if hasattr(obj, name) else None
        except Exception:
            return (REFUSED,)
    try:
        value = getattr(obj, name)
    except AttributeError:
        return None
    return (value if is_safe_attribute(obj, name, value) else REFUSED,)


def holds_marked_fields(value: Any) -> bool:
    """Whether a host object's own fields (a named tuple's items, its `__dict__`) hold text
    from input, in a marked string or in a list, tuple or dict of them: its `str()` is then
    input as a whole (an f-string drops marks). Objects nested in it are not looked into: they
    are the host's data, as a host object's attributes are."""
    fields = value if isinstance(value, tuple) else getattr(value, "__dict__", None)
    if not isinstance(fields, (tuple, dict)):
        return False
    from .marks import has_input
    items = fields.values() if isinstance(fields, dict) else fields
    return any(isinstance(v, (Marked, InputInt, InputFloat)) or
               isinstance(v, (list, tuple, dict)) and has_input(v) for v in items)


_HEAP_TYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class written in Python, not one of Python's own


def prints_itself(value: Any) -> bool:
    """Whether a host object has its own text (`__str__` or `__repr__`): printed with str() as
    in Jinja2. Without one, Python's default text shows a module path and a memory address,
    which no template may see: it prints as its kind (values.safe_repr), and so do callables,
    classes, modules and Python's own objects (a generator, a map)."""
    t = type(value)
    if callable(value) or isinstance(value, types.ModuleType):
        return False
    if t.__module__ == "builtins" and not t.__flags__ & _HEAP_TYPE:  # Python's own, in C
        return False
    return t.__str__ is not object.__str__ or t.__repr__ is not object.__repr__


# ---------------------------------------------------------------------------- the environment's


# ---------------------------------------------------------------------------- Jinja2's class names


