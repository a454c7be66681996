"""Data marked as input with the origin of every string and number in it (values/origins.py):
what `render_parts(origins=True)` hands a template, and `mark_input(value, origin=...)`.

An origin render marks every string of the conversation, the tools and the documents anew (the
data is the caller's, and may change between renders), but the origins themselves repeat: a
tool's schema has the same paths in every request, a message the same few keys. The paths, the
`Source`s and the marked keys are made once for every render (they are immutable), up to a
bound, so that marking a string costs the marked copy and little more."""
from __future__ import annotations

from typing import Any, Optional

from .marks import Mixed
from .numbers import InputFloat, InputInt
from .sources import Source

MAX_DEPTH = 200
_KEPT = 1 << 15  # entries of each cache below; past it, made per render as before

_CHILDREN: dict[tuple[str, Any], str] = {}       # (path, key) -> the key's path under path
_SOURCES: dict[tuple[Any, str], Source] = {}      # (message, path) -> Source(message, path)
_KEYS: dict[tuple[Any, str, Any], Any] = {}      # (message, path, key) -> the key marked
# (message, path, key) -> (the key's path, the Source of its value, the key marked): what a
# dict item needs, found in one look-up (a str key only: 1 == 1.0 == True)
_FIELDS: dict[tuple[Any, str, Any], tuple[str, Source, Any]] = {}


def traced(value: Any, message: Optional[int], path: str, _depth: int = 0) -> Any:
    """`value` (plain JSON-like data, or data `mark_input` marked) with each string, key and
    number marked as input from `Source(message, <its path under path>)`; containers copied.
    What holds no text (None, bools, undefined) is kept as it is."""
    kind = type(value)
    if kind is dict:  # the commonest containers first: their leaves inline
        if _depth > MAX_DEPTH:  # what marking refuses already; never reached by walked data
            return value
        out = {}
        fields = _FIELDS.get
        for k, v in value.items():
            found = fields((message, path, k)) if type(k) is str else None
            at, source, key = found if found is not None else _field(message, path, k)
            if type(v) is str and v:
                v = Mixed(v)
                v.spans = ((0, len(v), source),)
            else:
                v = traced(v, message, at, _depth + 1)
            out[key] = v
        return out
    if kind is list:
        if _depth > MAX_DEPTH:
            return value
        return [traced(v, message, f"{path}[{i}]", _depth + 1) for i, v in enumerate(value)]
    if isinstance(value, (str, int, float)) and value is not True and value is not False:
        return _leaf(value, source_of(message, path))
    if value is None or value is True or value is False or _depth > MAX_DEPTH:
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


def _field(message: Optional[int], path: str, key: Any) -> tuple[str, Source, Any]:
    """What item `key` of the dict at `path` needs: its path, its value's Source and the key
    marked; kept for every render when the key is a str."""
    at = child(path, key)
    found = (at, source_of(message, at), _key(key, message, at))
    if type(key) is str and len(_FIELDS) < _KEPT:
        _FIELDS[(message, path, key)] = found
    return found


def source_of(message: Optional[int], path: str) -> Source:
    """`Source(message, path)`, one for every render."""
    found = _SOURCES.get((message, path))
    if found is None:
        found = tuple.__new__(Source, (message, path, False))
        if len(_SOURCES) < _KEPT:
            _SOURCES[(message, path)] = found
    return found


def _key(key: Any, message: Optional[int], path: str) -> Any:
    if type(key) is str:
        cached = (message, path, key)
        found = _KEYS.get(cached)
        if found is None:
            found = _leaf(key, Source(message, path, key=True)) if key else key
            if len(_KEYS) < _KEPT:
                _KEYS[cached] = found
        return found
    if isinstance(key, (str, int, float)) and key is not True and key is not False:
        return _leaf(key, Source(message, path, key=True))
    return key


def _leaf(value: Any, source: Source) -> Any:
    """A string or number (not a bool) marked as input from `source`."""
    if isinstance(value, str):
        if not value:
            return ""
        marked = Mixed(str.__str__(value))
        marked.spans = ((0, len(marked), source),)
        return marked
    number = InputFloat(value) if isinstance(value, float) else InputInt(value)
    number.origin = source
    return number


def child(path: str, key: Any) -> str:
    """The path of `key` under `path`: `a.b` for a name, `a[0]` for anything else."""
    exact = type(key) is str or type(key) is int  # not a bool or float: 1.0 == 1 == True
    found = _CHILDREN.get((path, key)) if exact else None
    if found is None:
        name = str.__str__(key) if isinstance(key, str) else None
        if name is not None and name.isidentifier():
            found = f"{path}.{name}" if path else name
        else:
            found = f"{path}[{key!r}]"  # a marked key's repr is its text's
        if exact and len(_CHILDREN) < _KEPT:
            _CHILDREN[(path, key)] = found
    return found
