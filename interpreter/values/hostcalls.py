"""The fail-safe rule at the edge of the engine: what the host's own functions return.

Builtin filters, globals, methods and macros keep marks character by character. A function the
embedding program brings (a filter, a global, an extension's operator, a callable in the
context) is Python code that may build its result with f-strings, `%` or `str.join`, which return
plain text: the user's characters would come back looking like template text, an injection. So
its result is input as a whole whenever any of its arguments holds input, unless the function
declares with `keeps_marks` that it keeps marks itself (through the marked strings' own
operations or `jinjamark.marks`). A lost mark is an injection, an extra mark only a missed
special token.
"""
from __future__ import annotations

from collections import abc
from types import BuiltinFunctionType, BuiltinMethodType, MethodType, ModuleType
from typing import Any, Callable, Optional, TypeVar

from . import marks, sandbox
from ..errors import LimitExceeded
from .markup import Markup, safe_marked
from .numbers import InputBytes, as_input
from .runtime import Namespace
from .sandbox import REFUSED, holds_marked_fields, host_attribute, is_host_object

F = TypeVar("F", bound=Callable[..., Any])

_ATTRIBUTE = "jinjamark_keeps_marks"
MAX_DEPTH = 200


def keeps_marks(fn: F) -> F:
    """Declare that `fn` keeps input marks in what it returns, so that the engine takes its result
    as it is instead of marking all of it as input when an argument holds input."""
    try:
        setattr(fn, _ATTRIBUTE, True)
    except AttributeError:  # a builtin function (`len`): known by identity
        _BUILTINS_KEEPING.add(fn)
    return fn


_BUILTINS_KEEPING: set = set()


def keeps_marks_declared(fn: Callable) -> bool:
    """Whether `fn` said it keeps marks (`keeps_marks`): its result is taken as it is."""
    return bool(getattr(fn, _ATTRIBUTE, False)) or (type(fn) is BuiltinFunctionType
                                                    and fn in _BUILTINS_KEEPING)


def host_result(fn: Callable, result: Any, args: Any, kwargs: Any) -> Any:
    """`result` of the host function `fn` called with `args` and `kwargs`, fail safe: input
    when any argument may hold input (`marks.has_input` counts lazy and opaque values as
    input: a `map` result, a dict view, a macro, a namespace holding input)."""
    if getattr(fn, _ATTRIBUTE, False) or (type(fn) is BuiltinFunctionType and fn in _BUILTINS_KEEPING):
        return result  # first: every builtin filter leaves here
    if result is None or type(result) is bool:
        return result  # bools and None print as themselves, never as text from input
    if marks.has_input(args) or (kwargs and marks.has_input(kwargs)) or _receiver_has_input(fn):
        return all_input(result)
    return result


def _receiver_has_input(fn: Callable) -> bool:
    """Whether `fn` is a method of a host object whose own fields hold input (`u.greet()`
    reading a marked `u.name` into an f-string)."""
    receiver = getattr(fn, "__self__", None) if isinstance(fn, _METHODS) else None
    if receiver is None or isinstance(receiver, ModuleType):
        return False
    return is_host_object(receiver) and holds_marked_fields(receiver)


_METHODS = (MethodType, BuiltinMethodType)


def all_input(value: Any, depth: int = 0, memo: Optional[dict] = None) -> Any:
    """`value` with every string (keys too), number and byte in it input, whatever marks it
    had: containers copied (each once: what was shared stays shared, so a structure built by
    sharing costs what its distinct containers cost), an iterator's items marked as they come,
    objects that print what they hold (a namespace, safe HTML of an object's own) rebuilt from
    what they hold."""
    if isinstance(value, str):
        if not value:
            return value
        whole = marks.mark(str.__str__(value))
        if hasattr(value, "__html__"):  # safe text stays safe (as a safe marked string)
            return safe_marked(whole)
        return whole
    if depth >= MAX_DEPTH:
        raise LimitExceeded(f"a value nests deeper than {MAX_DEPTH} levels (or contains itself)")
    if isinstance(value, (list, tuple, dict, set, frozenset)) or type(value) in _VIEWS:
        memo = {} if memo is None else memo
        done = memo.get(id(value))
        if done is None:  # the value is kept with its copy: its id cannot be reused meanwhile
            done = memo[id(value)] = (value, _all_input_container(value, depth + 1, memo))
        return done[1]
    if isinstance(value, (int, float)) and type(value) is not bool:
        return _input_number(value)
    if isinstance(value, (bytes, bytearray)):
        return InputBytes(value)
    if isinstance(value, Namespace):
        return Namespace(all_input(value.attrs, depth + 1, memo))
    if isinstance(value, abc.Iterator):  # a generator: lazy as it was, each item input
        return (all_input(item, depth + 1) for item in value)
    if hasattr(value, "__html__") and not hasattr(type(value), "jinja_attribute"):
        return all_input(Markup(value.__html__()), depth)  # printed by its __html__ when escaping
    if is_host_object(value) and not isinstance(value, type):  # read as a host object,
        return (InputCallable if callable(value) else InputObject)(value)  # all of it input
    return value  # a class, or one of ours


def _all_input_container(value: Any, depth: int, memo: dict) -> Any:
    if isinstance(value, dict):
        return {all_input(k, depth, memo): all_input(v, depth, memo) for k, v in value.items()}
    view = _VIEWS.get(type(value))
    if view == "keys":
        return dict.fromkeys(all_input(list(value), depth, memo)).keys()
    if view == "values":
        return dict(enumerate(all_input(list(value), depth, memo))).values()
    if view == "items":
        return dict(all_input(list(value), depth, memo)).items()
    items = [all_input(v, depth, memo) for v in value]
    if isinstance(value, (set, frozenset)):
        return frozenset(items) if isinstance(value, frozenset) else set(items)
    return items if isinstance(value, list) else tuple(items)


def _input_number(value: Any) -> Any:
    """An int or float (or a subclass's, as the number it stands for) from input; a subclass
    that prints otherwise than its number is its text, input."""
    if type(value) is int or type(value) is float:
        return as_input(value)
    number = as_input(int(value) if isinstance(value, int) else float(value))
    return number if str(number) == str(value) else marks.mark(str(value))


_VIEWS = {type({}.keys()): "keys", type({}.values()): "values", type({}.items()): "items"}


class InputObject:
    """A host object a host function made from input (a `SimpleNamespace` of the user's text):
    a template reads it as a host object (sandbox.py), and everything read from it, its text
    when printed included, is input. Without it, its attributes and `str()` would print the
    user's characters as template text."""

    jinja_type_name = "object"
    __slots__ = ("obj",)

    def __init__(self, obj: Any) -> None:
        self.obj = obj

    def jinja_attribute(self, name: str) -> Any:
        found = host_attribute(self.obj, name)
        if found is None:
            raise KeyError(name)
        if found[0] is REFUSED:
            from .runtime import unsafe_attribute
            from .undefined import Undefined
            return unsafe_attribute(Undefined, self.obj, name)
        return all_input(found[0])

    def jinja_item(self, key: Any) -> Any:
        return all_input(self.obj[key])

    def jinja_holds_input(self, check: Callable[[Any], bool]) -> bool:
        return True

    def __iter__(self) -> Any:
        return iter(all_input(list(self.obj)))

    def __len__(self) -> int:
        return len(self.obj)

    def __bool__(self) -> bool:
        return bool(self.obj)

    def __eq__(self, other: Any) -> bool:
        return self.obj == (other.obj if type(other) is InputObject else other)

    def __hash__(self) -> int:
        return hash(self.obj)

    def __repr__(self) -> str:
        """Printed, it shows its kind only (as before host objects were readable): its own text
        would be the user's characters, which only a character map could keep marked."""
        return f"<{type(self.obj).__name__} object>"

    __str__ = __repr__


class InputCallable(InputObject):
    """A callable host object made from input: what calling it returns is input too."""

    __slots__ = ()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not sandbox.is_safe_callable(self.obj):
            from ..errors import SecurityError
            raise SecurityError(f"{type(self.obj).__name__!r} is not safely callable")
        return all_input(self.obj(*args, **kwargs))
