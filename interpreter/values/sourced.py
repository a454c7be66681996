"""Data marked as input with the origin of every string and number in it (values/origins.py):
what `render_parts(origins=True)` hands a template, and `mark_input(value, origin=...)`."""
from __future__ import annotations

from typing import Any, Optional

from .marks import mark
from .numbers import InputFloat, InputInt
from .sources import Source

MAX_DEPTH = 200


def traced(value: Any, message: Optional[int], path: str, _depth: int = 0) -> Any:
    """`value` (plain JSON-like data, or data `mark_input` marked) with each string, key and
    number marked as input from `Source(message, <its path under path>)`; containers copied.
    What holds no text (None, bools, undefined) is kept as it is."""
    if isinstance(value, (str, int, float)) and value is not True and value is not False:
        return _leaf(value, Source(message, path))
    if value is None or value is True or value is False:
        return value
    if _depth > MAX_DEPTH:  # what marking refuses already; never reached by walked data
        return value
    d = _depth + 1
    if isinstance(value, dict):
        return {_key(k, message, child(path, k)): traced(v, message, child(path, k), d)
                for k, v in value.items()}
    if isinstance(value, list):
        return [traced(v, message, f"{path}[{i}]", d) for i, v in enumerate(value)]
    if isinstance(value, tuple):
        return tuple(traced(v, message, f"{path}[{i}]", d) for i, v in enumerate(value))
    if isinstance(value, (set, frozenset)):
        items = [traced(v, message, f"{path}[]", d) for v in value]
        return frozenset(items) if isinstance(value, frozenset) else set(items)
    return value


def _key(key: Any, message: Optional[int], path: str) -> Any:
    if isinstance(key, (str, int, float)) and key is not True and key is not False:
        return _leaf(key, Source(message, path, key=True))
    return key


def _leaf(value: Any, source: Source) -> Any:
    """A string or number (not a bool) marked as input from `source`."""
    if isinstance(value, str):
        return mark(str.__str__(value), source)  # '' stays ''
    number = InputFloat(value) if isinstance(value, float) else InputInt(value)
    number.origin = source
    return number


def child(path: str, key: Any) -> str:
    """The path of `key` under `path`: `a.b` for a name, `a[0]` for anything else."""
    name = str.__str__(key) if isinstance(key, str) else None
    if name is not None and name.isidentifier():
        return f"{path}.{name}" if path else name
    return f"{path}[{key!r}]"  # a marked key's repr is its text's
