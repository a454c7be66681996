"""`json.dumps` that keeps marks: characters of input strings (values and keys) stay input
inside their JSON escapes; quotes, brackets, commas and template strings stay template text.

The text is always exactly `json.dumps(value, **kwargs)`. The marks come from finding each
string and number of the value in that text, in the encoder's order (the fast path); for
options that path does not model (`default`, `cls`, separators or indents of other characters)
from the standard library's pure-Python encoder run with a string encoder that returns marked
pieces. Any failure, or a disagreement with `json.dumps`, makes the whole text input (fail safe).
"""
from __future__ import annotations

import json
import re
from json import encoder as _std
from typing import Any

from .marks import Input, Marked, Mixed, concat, has_input, make, mark, merge, plain, shifted_all, spans_of, taint
from .. import metering
from ..limits import check_printable
from .numbers import is_input_number
from .origins import number_origin


def _number_span(number: Any, at: int, end: int) -> tuple:
    """The span of a number from input written at [at, end), with its origin when it has one."""
    origin = number_origin(number)
    return (at, end) if origin is None else (at, end, origin)


def dumps(value: Any, **kwargs: Any) -> str:
    if type(value) is Input and kwargs.get("cls") is None:  # `key|tojson`, `arg|tojson`
        metering.charge(len(value) * metering.TEXT)
        text = _encoded(value, kwargs)
        # all between the quotes is the input's characters or their escapes
        return make(text, ((1, len(text) - 1),)) if len(text) > 2 else text
    may_hold_input = check_printable(value)  # the same walk tells if any str is a subclass
    if isinstance(value, str):
        metering.charge(len(value) * metering.TEXT)  # check_printable charges containers
    text = _encoded(value, kwargs)
    if not may_hold_input:
        return text
    # The marks located first: found, they show input is there without a walk to ask (none
    # found, the text is plain); the walk asks before the slower paths.
    try:
        marked = _located(value, text, **kwargs)  # its text is `text` itself
        if marked is None:  # options the fast path does not model
            if not has_input(value):
                return text
            marked = _marked_dumps(value, **kwargs)
            if plain(marked) != text:
                return taint(text, value)
    except Exception:  # noqa: BLE001 - any failure only costs precision, never safety
        return taint(text, value)
    return marked


def _encoded(value: Any, kwargs: dict) -> str:
    """`json.dumps(value, **kwargs)`, by an encoder made once for these options: json.dumps
    makes one per call for any options but its defaults (as transformers' tojson passes),
    which took longer than writing a short value."""
    try:
        key = tuple(kwargs.items())
        encoder = _ENCODERS.get(key)
    except TypeError:  # an option that is no key (separators as a list)
        return json.dumps(value, **kwargs)
    if encoder is None:
        if len(_ENCODERS) >= 64 or kwargs.get("cls") is not None or kwargs.get("default") is not None:
            return json.dumps(value, **kwargs)  # an encoder class, a function: not kept
        encoder = _ENCODERS[key] = json.JSONEncoder(**kwargs)  # it keeps no state between calls
    return encoder.encode(value)


_ENCODERS: dict[tuple, json.JSONEncoder] = {}


# ---------------------------------------------------------------------------- the fast path
# json.dumps (C) writes the text; the marks come from pairing, in order, each string and
# number the encoder wrote with the value's strings and numbers. Between two such tokens the
# encoder writes only brackets, commas, colons, whitespace and true/false/null, none of which
# can start a string or a number. So when no string holds an escaped quote, the k-th string
# token is the k-th quoted run of the text (one regular-expression scan finds them all), and a
# number is the first occurrence of its digits after the token before it.

_PLAIN_PUNCTUATION = frozenset(" ,:\n\t")
_STRING = re.compile('"([^"]*)"')  # a string literal, where none holds an escaped quote


def _located(value: Any, text: str, skipkeys: bool = False, ensure_ascii: bool = True,
             check_circular: bool = True, allow_nan: bool = True, indent: Any = None,
             separators: Any = None, sort_keys: bool = False, default: Any = None,
             cls: Any = None) -> str | None:
    layout = "".join(separators or ()) + (indent if isinstance(indent, str) else "")
    if cls is not None or default is not None or not _PLAIN_PUNCTUATION.issuperset(layout):
        return None
    tokens: list[Any] = []
    _tokens(value, sort_keys, skipkeys, tokens, 0)
    base = _std.encode_basestring_ascii if ensure_ascii else _std.encode_basestring
    if '\\"' in text:  # an escaped quote (or a string ending in a backslash): search
        return _searched(tokens, text, base)
    inner = [m.span(1) for m in _STRING.finditer(text)]  # inside each string literal, in order
    if "" not in tokens and set(map(type, tokens)) == {Input}:  # every token an input string
        return make(text, tuple(inner)) if len(inner) == len(tokens) else None
    spans: list[tuple[int, int]] = []
    strings = iter(inner)
    pos = 0  # where the token before ended
    for token in tokens:
        if isinstance(token, str):
            at, end = next(strings)
            pos = end + 1
            kind = type(token)
            if kind is Input:
                if end > at:
                    spans.append((at, end))
            elif (kind is Mixed or isinstance(token, Marked)) and _whole(token):  # a traced field
                if end > at:
                    spans.append((at, end) + token.spans[0][2:])
            elif isinstance(token, Marked):
                literal = _encode_marked(token, base)
                if len(literal) != end - at + 2:
                    raise ValueError("a string is not where the encoder wrote it")
                spans.extend(shifted_all(spans_of(literal), at - 1))
        else:
            digits = float.__repr__(token) if isinstance(token, float) else int.__repr__(token)
            at = text.index(digits, pos)
            pos = at + len(digits)
            if is_input_number(token):
                spans.append(_number_span(token, at, pos))
    if next(strings, None) is not None:
        return None
    return make(text, merge(spans))


def _whole(s: str) -> bool:
    """Whether all of marked `s` is one input run (a string from input with its origin: every
    character of its literal between the quotes is input, escapes included)."""
    own = s.spans
    return len(own) == 1 and own[0][0] == 0 and own[0][1] == len(s)


def _searched(tokens: list, text: str, base: Any) -> str:
    """The marks found by searching each token's literal in the text, in order."""
    spans: list[tuple[int, int]] = []
    pos = 0  # where the search for the next token starts
    for token in tokens:
        if isinstance(token, str):
            literal = base(token)
        else:
            literal = float.__repr__(token) if isinstance(token, float) else int.__repr__(token)
        at = text.index(literal, pos)
        pos = at + len(literal)
        if type(token) is Input:  # all of it input: everything between the quotes
            spans.append((at + 1, pos - 1))
        elif isinstance(token, Marked) and _whole(token):
            spans.append((at + 1, pos - 1) + token.spans[0][2:])
        elif isinstance(token, Marked):
            spans.extend(shifted_all(spans_of(_encode_marked(token, base)), at))
        elif is_input_number(token):
            spans.append(_number_span(token, at, pos))
    return make(text, merge(spans))


def _tokens(value: Any, sort_keys: bool, skipkeys: bool, out: list, depth: int) -> None:
    """The strings and finite numbers of `value` in the order json.dumps writes them."""
    # Runs over every node of every marked tojson: the common leaves (strings, marked or not;
    # None) are taken inline, one call per container rather than per leaf.
    if isinstance(value, dict):
        if depth > 1000:
            raise RecursionError("value nests too deeply for JSON")
        items = sorted(value.items()) if sort_keys else value.items()
        for key, item in items:
            kind = type(key)
            if kind is not Input and kind is not str and kind is not Mixed:
                key = _key(key, skipkeys)
                if key is _SKIP:
                    continue
            out.append(key)
            kind = type(item)
            if kind is Input or kind is str or kind is Mixed:
                out.append(item)
            elif item is not None:
                _tokens(item, sort_keys, skipkeys, out, depth + 1)
    elif isinstance(value, (list, tuple)):
        if depth > 1000:
            raise RecursionError("value nests too deeply for JSON")
        for item in value:
            kind = type(item)
            if kind is Input or kind is str or kind is Mixed:
                out.append(item)
            elif item is not None:
                _tokens(item, sort_keys, skipkeys, out, depth + 1)
    elif isinstance(value, str):
        out.append(value)
    elif value is None or value is True or value is False:
        pass
    elif isinstance(value, (int, float)):
        if value == value and value not in (_INF, -_INF):
            out.append(value)
    else:
        raise TypeError("not JSON data")  # json.dumps raised already; never reached


def _key(key: Any, skipkeys: bool) -> Any:
    """A dict key as the string json.dumps writes: input numbers' text is input."""
    if isinstance(key, str):
        return key
    if isinstance(key, float):
        if key != key or key in (_INF, -_INF):
            return "NaN" if key != key else "Infinity" if key > 0 else "-Infinity"
        text = float.__repr__(key)
        return mark(text, number_origin(key)) if is_input_number(key) else text
    if key is True or key is False or key is None:
        return "true" if key is True else "false" if key is False else "null"
    if isinstance(key, int):
        text = int.__repr__(key)
        return mark(text, number_origin(key)) if is_input_number(key) else text
    if skipkeys:
        return _SKIP
    raise TypeError("keys must be str, int, float, bool or None")


_INF = float("inf")
_SKIP = object()


# ---------------------------------------------------------------------------- the general path

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
        return mark(text, number_origin(o)) if is_input_number(o) else text

    def floatstr(o: float) -> str:
        if is_input_number(o) and o == o and o not in (_INF, -_INF):
            return mark(float.__repr__(o), number_origin(o))
        if o != o:
            text = "NaN"
        elif o == _INF:
            text = "Infinity"
        elif o == -_INF:
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
    for span in s.spans:
        a, b = span[0], span[1]
        if a > pos:
            pieces.append(base(raw[pos:a])[1:-1])
        escaped = base(raw[a:b])[1:-1]
        pieces.append(make(escaped, ((0, len(escaped)) + span[2:],)))
        pos = b
    if pos < len(raw):
        pieces.append(base(raw[pos:])[1:-1])
    pieces.append('"')
    return concat(pieces)
