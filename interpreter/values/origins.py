"""Origins: which field of the caller's data wrote each input character.

An input mark says *that* a character came from the data; an origin says *where from*: the
message and the field (`content`, `tool_calls[0].function.arguments`, a key of `tools`, a keyword
argument). Origins ride on the spans of marked strings: a span is `(start, end)` when only the
flag is tracked (every render but `render_parts(origins=True)`), and `(start, end, origin)` in a
render that asked for origins, so that the span algebra of marks.py carries them wherever it
carries marks, and nothing is paid for them otherwise. Where no character map exists (a length,
`format`), a result computed from several origins is said to be so (`Several`), never one of them.
The origins themselves are values/sources.py's, loaded when an origin render needs them: this
module is what every render loads.
"""
from __future__ import annotations

from contextvars import ContextVar
from typing import Any


# Whether the current render tracks origins: the fail-safe paths (a taint, a computed number)
# then look for the origins of what went in; every other render never does.
TRACING: ContextVar[bool] = ContextVar("jinjamark_origins", default=False)


def label(span: tuple) -> Any:
    """The origin a span carries (None for a span that only flags input)."""
    return span[2] if len(span) > 2 else None


def number_origin(number: Any) -> Any:
    """The origin of a number from input. A number computed from input (`messages | length`)
    keeps what it was computed from (`computed_from`), and its origin is found only if it is
    printed."""
    origin = getattr(number, "origin", None)
    if origin is None:
        sources = getattr(number, "computed_from", None)
        if sources is not None:
            from .sources import UNKNOWN, origins_in  # noqa: PLC0415 - an origin render loaded them
            origin = number.origin = origins_in(sources) or UNKNOWN
    return origin


def computed_from(number: Any, sources: tuple) -> Any:
    """`number` (a number from input) remembering what it was computed from, when origins are
    traced: the operands themselves, one attribute set (arithmetic in a loop makes many such
    numbers, and few are printed). An operand computed in turn gives its own operands instead,
    so that a counter a loop adds to ten thousand times finds its origin without recursion."""
    if TRACING.get():
        try:
            number.computed_from = _leaves(sources) if any(map(_computed, sources)) else sources
        except AttributeError:  # a bool, or a type without a dict
            pass
    return number


def _computed(value: Any) -> bool:
    return isinstance(value, (int, float)) and "computed_from" in getattr(value, "__dict__", ())


def _leaves(sources: tuple) -> tuple:
    """`sources` with each computed number replaced by what it was computed from (already
    leaves), each value once."""
    out: dict = {}
    for source in sources:
        for leaf in source.__dict__["computed_from"] if _computed(source) else (source,):
            out.setdefault(id(leaf), leaf)
    return tuple(out.values())
