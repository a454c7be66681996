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

from types import BuiltinFunctionType
from typing import Any, Callable, TypeVar

from . import marks
from .errors import LimitExceeded
from .markup import safe_marked
from .numbers import as_input

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


def host_result(fn: Callable, result: Any, args: Any, kwargs: Any) -> Any:
    """`result` of the host function `fn` called with `args` and `kwargs`, fail safe."""
    if getattr(fn, _ATTRIBUTE, False) or (type(fn) is BuiltinFunctionType and fn in _BUILTINS_KEEPING):
        return result  # first: every builtin filter leaves here
    if not isinstance(result, (str, list, tuple, dict)) and type(result) not in (int, float):
        return result  # bools, None and objects print as themselves, never as text from input
    if marks.has_input(args) or (kwargs and marks.has_input(kwargs)):
        return all_input(result)
    return result


def all_input(value: Any, depth: int = 0) -> Any:
    """`value` with every string (keys too) and number in it input, whatever marks it had."""
    if isinstance(value, str):
        if not value:
            return value
        whole = marks.mark(str.__str__(value))
        if hasattr(value, "__html__"):  # safe text stays safe (as a safe marked string)
            return safe_marked(whole)
        return whole
    if isinstance(value, (list, tuple, dict)):
        if depth >= MAX_DEPTH:
            raise LimitExceeded(f"a value nests deeper than {MAX_DEPTH} levels (or contains itself)")
        if isinstance(value, dict):
            return {all_input(k, depth + 1): all_input(v, depth + 1) for k, v in value.items()}
        items = [all_input(v, depth + 1) for v in value]
        return items if isinstance(value, list) else tuple(items)
    return as_input(value)
