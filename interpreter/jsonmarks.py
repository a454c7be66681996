"""`json.dumps` that keeps marks: characters of input strings (values and keys) stay input
inside their JSON escapes; quotes, brackets, commas and template strings stay template text.

The text is always exactly `json.dumps(value, **kwargs)`. The marks come from running the
standard library's own pure-Python encoder with a string encoder that returns marked pieces; if
that encoder is unavailable or disagrees with `json.dumps`, the whole text is input (fail safe).
"""
from __future__ import annotations

import json
from json import encoder as _std
from typing import Any

from .marks import Marked, concat, has_input, make, mark, plain, taint
from .limits import check_printable
from .numbers import is_input_number


def dumps(value: Any, **kwargs: Any) -> str:
    check_printable(value)
    text = json.dumps(value, **kwargs)
    if not has_input(value):
        return text
    try:
        marked = _marked_dumps(value, **kwargs)
    except Exception:  # noqa: BLE001 - any failure only costs precision, never safety
        return taint(text, value)
    return marked if plain(marked) == text else taint(text, value)


def _marked_dumps(value: Any, skipkeys: bool = False, ensure_ascii: bool = True,
                  check_circular: bool = True, allow_nan: bool = True, indent: Any = None,
                  separators: Any = None, sort_keys: bool = False, default: Any = None,
                  cls: Any = None) -> str:
    if cls is not None:
        raise TypeError("custom encoder classes are not supported for marks")
    reference = json.JSONEncoder(skipkeys=skipkeys, ensure_ascii=ensure_ascii,
                                 check_circular=check_circular, allow_nan=allow_nan,
                                 indent=indent, separators=separators, sort_keys=sort_keys,
                                 default=default)
    base = _std.encode_basestring_ascii if ensure_ascii else _std.encode_basestring

    def encode_string(s: str) -> str:
        return _encode_marked(s, base)

    def intstr(o: int) -> str:
        text = int.__repr__(o)
        return mark(text) if is_input_number(o) else text

    def floatstr(o: float) -> str:
        if is_input_number(o) and o == o and o not in (float("inf"), -float("inf")):
            return mark(float.__repr__(o))
        if o != o:
            text = "NaN"
        elif o == float("inf"):
            text = "Infinity"
        elif o == -float("inf"):
            text = "-Infinity"
        else:
            return float.__repr__(o)
        if not allow_nan:
            raise ValueError("Out of range float values are not JSON compliant: " + repr(o))
        return text

    indent_text = indent
    if indent is not None and not isinstance(indent, str):
        indent_text = " " * indent
    iterencode = _std._make_iterencode(
        {} if check_circular else None, reference.default, encode_string, indent_text, floatstr,
        reference.key_separator, reference.item_separator, sort_keys, skipkeys, False,
        _intstr=intstr)
    return concat(list(iterencode(value, 0)))


def _encode_marked(s: str, base) -> str:
    """The JSON string literal of `s`, each run of input characters marked inside its escapes."""
    if not isinstance(s, Marked):
        return base(s)
    pieces = ['"']
    raw, pos = str.__str__(s), 0
    for a, b in s.spans:
        if a > pos:
            pieces.append(base(raw[pos:a])[1:-1])
        escaped = base(raw[a:b])[1:-1]
        pieces.append(make(escaped, ((0, len(escaped)),)))
        pos = b
    if pos < len(raw):
        pieces.append(base(raw[pos:])[1:-1])
    pieces.append('"')
    return concat(pieces)
