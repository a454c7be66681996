"""`Span`, where a node came from, packed in one int (see the class).

Every node has one, so its size is much of what a compiled template keeps: as a record of four
fields (64 bytes, and two int objects of 28 bytes for offsets past 256) it was nearly half. Once
a template is compiled, even the int moves into one array for the whole tree (sharedspans.py).
"""
from __future__ import annotations

from typing import Any

from . import records


class Span(int):
    """Where a node came from: 1-based line and column, 0-based character offsets.

    A record of four fields to the outside (`Span(line, column, start, end)`, the attributes,
    `dataclasses.fields` and `replace`, equality, hashing, repr and pickling as a frozen
    dataclass's), kept as one int: every node has one, and as a record with four int objects it
    was nearly half of what a compiled template keeps. A node keeps the plain int (`Node._span`,
    32 bytes; records.Packed) and makes the Span when `span` is read. Positions below 2**15 are
    packed in 60 bits (two of the int's digits), others in 128 bits, as the int's complement."""
    __slots__ = ()
    __match_args__ = ("line", "column", "start", "end")

    def __new__(cls, line: int, column: int, start: int, end: int) -> "Span":
        if not (line | column | start | end) >> 15:  # each in 0 .. 2**15 - 1
            return int.__new__(cls, (line << 45) | (column << 30) | (start << 15) | end)
        if not (0 <= line <= _WIDE and 0 <= column <= _WIDE and 0 <= start <= _WIDE and 0 <= end <= _WIDE):
            raise ValueError(f"a span's positions are between 0 and {_WIDE}: "
                             f"{(line, column, start, end)}")
        return int.__new__(cls, ~((line << 96) | (column << 64) | (start << 32) | end))

    @property
    def line(self) -> int:
        return self >> 45 if self >= 0 else ~self >> 96

    @property
    def column(self) -> int:
        return (self >> 30) & 0x7FFF if self >= 0 else (~self >> 64) & _WIDE

    @property
    def start(self) -> int:
        return (self >> 15) & 0x7FFF if self >= 0 else (~self >> 32) & _WIDE

    @property
    def end(self) -> int:
        return self & 0x7FFF if self >= 0 else ~self & _WIDE

    def __repr__(self) -> str:
        return f"Span(line={self.line!r}, column={self.column!r}, start={self.start!r}, end={self.end!r})"

    __str__ = __repr__

    def __reduce__(self):
        return (Span, (self.line, self.column, self.start, self.end))

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not Span:
            return NotImplemented
        return int.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        if other.__class__ is not Span:
            return NotImplemented
        return int.__ne__(self, other)

    __hash__ = int.__hash__


_WIDE = (1 << 32) - 1
records.as_record(Span, {"line": int, "column": int, "start": int, "end": int})


def span(line: int, column: int, start: int, end: int) -> Span:
    """`Span(line, column, start, end)`, a call shorter: the parser makes one per node."""
    if not (line | column | start | end) >> 15:
        return _new(Span, (line << 45) | (column << 30) | (start << 15) | end)
    return Span(line, column, start, end)


_new = int.__new__


def pack_span(value: Any) -> Any:
    """What a node keeps of its span: the Span's int (a plain int: no GC header, 32 bytes)."""
    return int(value) if value.__class__ is Span else value


def unpack_span(value: Any, node: Any = None) -> Any:
    """The Span a node's kept int stands for (or the one its template keeps for it:
    sharedspans.py)."""
    if value.__class__ is int:
        return int.__new__(Span, value)
    return value.of(node) if hasattr(value, "of") else value




__all__ = ["Span", "span", "pack_span", "unpack_span"]
