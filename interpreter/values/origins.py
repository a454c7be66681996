"""Origins: which field of the caller's data wrote each input character.

An input mark says *that* a character came from the data; an origin says *where from*: the
message and the field (`content`, `tool_calls[0].function.arguments`, a key of `tools`, a keyword
argument). Origins ride on the spans of marked strings: a span is `(start, end)` when only the
flag is tracked (every render but `render_parts(origins=True)`), and `(start, end, origin)` in a
render that asked for origins, so that the span algebra of marks.py carries them wherever it
carries marks, and nothing is paid for them otherwise. Where no character map exists (a length,
`format`), a result computed from several origins is said to be so (`Several`), never one of them.
"""
from __future__ import annotations

from contextvars import ContextVar
from typing import Any, NamedTuple, Optional, Union


class Source(NamedTuple):
    """Where input characters came from: the message (its index in the conversation, None for
    data outside the messages: tools, documents, keyword arguments) and the path of the field
    inside it (`content`, `tool_calls[0].function.arguments.city`; for data outside the messages
    the path starts with its variable: `tools[0].function.name`, `documents[1].text`). `key`: the
    characters are the name of that field (a dict key), not its value."""
    message: Optional[int]
    field: str
    key: bool = False

    def __str__(self) -> str:
        where = f"message {self.message} " if self.message is not None else ""
        return f"{where}{self.field}{' (key)' if self.key else ''}"


class Several(NamedTuple):
    """Characters computed from more than one origin, with no character map back to one
    (a `format` of two messages, a length of the conversation): every origin that went in."""
    sources: tuple

    @property
    def message(self) -> Optional[int]:
        """The one message they all came from, or None."""
        messages = {source.message for source in self.sources}
        return messages.pop() if len(messages) == 1 else None

    @property
    def field(self) -> str:
        return " + ".join(sorted({source.field for source in self.sources}))

    def __str__(self) -> str:
        return " + ".join(str(source) for source in self.sources)


Origin = Union[Source, Several]
UNKNOWN = Source(None, "?")  # input whose origin was not recorded (data marked without one)


def combine(origins: Any) -> Optional[Origin]:
    """One origin for characters that came from all of `origins` (None: none given)."""
    found: dict = {}
    for origin in origins:
        if type(origin) is Several:
            found.update(dict.fromkeys(origin.sources))
        elif origin is not None:
            found[origin] = None
    if not found:
        return None
    if len(found) == 1:
        return next(iter(found))
    return Several(tuple(found))


# Whether the current render tracks origins: the fail-safe paths (a taint, a computed number)
# then look for the origins of what went in; every other render never does.
TRACING: ContextVar[bool] = ContextVar("jinjamark_origins", default=False)


def label(span: tuple) -> Any:
    """The origin a span carries (None for a span that only flags input)."""
    return span[2] if len(span) > 2 else None


def origins_in(value: Any, _depth: int = 0, _seen: Optional[set] = None) -> Optional[Origin]:
    """The combined origin of the input inside `value` (strings, numbers, containers), None
    when nothing in it carries one."""
    found: list = []
    _collect(value, found, 0, set())
    return combine(found)


def _collect(value: Any, found: list, depth: int, seen: set) -> None:
    spans = getattr(value, "spans", None) if isinstance(value, str) else None
    if spans is not None:
        found.extend(label(span) or UNKNOWN for span in spans)
        return
    origin = getattr(value, "origin", None) if isinstance(value, (int, float)) else None
    if origin is not None:
        found.append(number_origin(value))
        return
    if depth > 200 or id(value) in seen:
        return
    if isinstance(value, dict):
        seen.add(id(value))
        for k, v in value.items():
            _collect(k, found, depth + 1, seen)
            _collect(v, found, depth + 1, seen)
    elif isinstance(value, (list, tuple, set, frozenset)):
        seen.add(id(value))
        for item in value:
            _collect(item, found, depth + 1, seen)


def number_origin(number: Any) -> Optional[Origin]:
    """The origin of a number from input. A number computed from input (`messages | length`)
    keeps what it was computed from, and its origin is found only if it is printed."""
    origin = getattr(number, "origin", None)
    if type(origin) is _Pending:
        origin = origins_in(origin.sources) or UNKNOWN
        number.origin = origin
    return origin


class _Pending(NamedTuple):
    sources: tuple


def computed_from(number: Any, sources: tuple) -> Any:
    """`number` (a number from input) remembering what it was computed from, when origins are
    traced."""
    if TRACING.get():
        try:
            number.origin = _Pending(sources)
        except AttributeError:  # a bool, or a type without a dict
            pass
    return number
