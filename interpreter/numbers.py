"""Numbers that came from input. They behave exactly as int and float (they are subclasses),
print as input, and arithmetic with them gives numbers that are input too (fail safe)."""
from __future__ import annotations

from typing import Any


def _carry(op: str, base: type):
    method = getattr(base, op)

    def apply(self, *args: Any) -> Any:
        result = method(self, *args)
        return as_input(result) if result is not NotImplemented else result
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


def is_input_number(value: Any) -> bool:
    return type(value) is InputInt or type(value) is InputFloat
