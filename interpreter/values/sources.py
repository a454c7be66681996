"""What an origin is: the field of the caller's data input characters came from (`Source`),
or several of them (`Several`), and how the origins of a value are found. Loaded when an origin
render first needs them (values/origins.py is what every render loads)."""
from __future__ import annotations

from typing import Any, NamedTuple, Optional, Union

from .origins import label, number_origin


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


def origins_in(value: Any) -> Optional[Origin]:
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
    origin = number_origin(value) if isinstance(value, (int, float)) else None
    if origin is not None:
        found.append(origin)
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


