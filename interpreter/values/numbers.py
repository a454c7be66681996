"""Numbers (and bytes) that came from input. They behave exactly as int, float and bytes (they
are subclasses), print as input, and arithmetic with them gives numbers that are input too (fail
safe). A number computed from input (a length, a count, a position, `int(text)`) is one too."""
from __future__ import annotations

from typing import Any

from .origins import TRACING, computed_from
from .undefined import Undefined


def _carry(op: str, base: type):
    method = getattr(base, op)

    def apply(self, *args: Any) -> Any:
        # as_input and computed_from written out: `messages|length - 1 - loop.index0` runs
        # this twice per message in render_parts
        result = method(self, *args)
        kind = type(result)
        if kind is int:
            result = InputInt(result)
        elif kind is float:
            result = InputFloat(result)
        else:  # NotImplemented, or a complex (`(-8) ** 0.5`): no number to mark
            return result
        return computed_from(result, (self, *args)) if TRACING.get() else result  # its origin
    apply.__name__ = op
    return apply


_OPERATORS = ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__",
              "__rtruediv__", "__floordiv__", "__rfloordiv__", "__mod__", "__rmod__", "__pow__",
              "__rpow__", "__neg__", "__pos__", "__abs__")


class InputInt(int):
    """An int from input."""
    jinja_type_name = "int"

    def __repr__(self) -> str:
        return int.__repr__(self)

    __str__ = __repr__


class InputFloat(float):
    """A float from input."""
    jinja_type_name = "float"

    def __repr__(self) -> str:
        return float.__repr__(self)

    __str__ = __repr__


class InputBytes(bytes):
    """Bytes from input (`text.encode()`): what is cut from them, or read from them as numbers,
    is input too."""
    jinja_type_name = "bytes"

    def __getitem__(self, key: Any) -> Any:
        item = bytes.__getitem__(self, key)
        return InputInt(item) if type(item) is int else InputBytes(item)

    def __iter__(self):
        return map(InputInt, bytes.__iter__(self))

    def __repr__(self) -> str:
        return bytes.__repr__(self)

    def __add__(self, other: Any) -> Any:
        result = bytes.__add__(self, other)
        return result if result is NotImplemented else InputBytes(result)

    def __radd__(self, other: Any) -> Any:
        return InputBytes(bytes(other) + bytes(self)) if isinstance(other, bytes) else NotImplemented

    def __mul__(self, n: Any) -> Any:
        result = bytes.__mul__(self, n)
        return result if result is NotImplemented else InputBytes(result)

    __rmul__ = __mul__


class InputRange:
    """`range()` of bounds from input: a range whose numbers are input. Prints as the range."""
    jinja_type_name = "range"

    def __init__(self, numbers: range) -> None:
        self.numbers = numbers

    def __len__(self) -> int:
        return len(self.numbers)

    def __iter__(self):
        return map(InputInt, self.numbers)

    def __reversed__(self):
        return map(InputInt, reversed(self.numbers))

    def __getitem__(self, key: Any) -> Any:
        item = self.numbers[key]
        return InputRange(item) if isinstance(item, range) else InputInt(item)

    def __contains__(self, item: Any) -> bool:
        return item in self.numbers

    def __eq__(self, other: Any) -> bool:
        return self.numbers == (other.numbers if isinstance(other, InputRange) else other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr(self.numbers)


for _op in _OPERATORS:
    setattr(InputInt, _op, _carry(_op, int))
    setattr(InputFloat, _op, _carry(_op, float))


def as_input(value: Any) -> Any:
    """Mark a number as input; bools and everything else are returned unchanged."""
    t = type(value)
    if t is int:
        return InputInt(value)
    if t is float:
        return InputFloat(value)
    return value


def derived(number: Any, *sources: Any) -> Any:
    """`number`, computed from `sources`, as input when any of them holds input (fail safe).
    Only what a source shows on its face is looked at (a marked string, a number from input, or
    any item of a container that is not plain template data), so that `messages | length` costs
    no walk over the conversation."""
    kind = type(number)
    if kind is not int and kind is not float:
        return number
    for source in sources:
        if _may_hold_input(source):  # (`messages | length`, once per message in some loops)
            number = InputInt(number) if kind is int else InputFloat(number)
            return computed_from(number, sources) if TRACING.get() else number
    return number


_PLAIN = frozenset({str, int, float, bool, type(None)})


def _may_hold_input(value: Any) -> bool:
    t = type(value)
    if t in _PLAIN:
        return False
    if t is list or isinstance(value, (list, tuple)):
        return not all(map(_PLAIN.__contains__, map(type, value)))
    if isinstance(value, dict):
        return not (all(map(_PLAIN.__contains__, map(type, value)))
                    and all(map(_PLAIN.__contains__, map(type, value.values()))))
    if isinstance(value, str):
        return hasattr(value, "spans")  # a marked string; Markup is template text
    return not isinstance(value, (range, Undefined))  # an opaque value may hold input


INPUT_NUMBERS = frozenset((InputInt, InputFloat))


def is_input_number(value: Any) -> bool:
    return type(value) is InputInt or type(value) is InputFloat
