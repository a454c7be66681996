"""String formatting with marks: printf-style `%` and `str.format`, sandboxed.

Python computes the text (so every error and every corner of the mini-languages is Python's);
then the text is rebuilt piece by piece to place the marks: literal text keeps the format
string's marks, a field that is a marked string inserted as it is keeps its own, any other field
is input if anything it was made from is. When the rebuilt text is not exactly Python's, the whole
result is input if anything was (fail safe).

`str.format` fields reach into values the way templates do (`{0.name}`, `{0[key]}` through
`values.get_attribute` / `get_item`), never through Python attributes: `{0.__class__}` is a
`SecurityError`, as in Jinja2's sandbox. Safe text formats with markup.py's escaping formatter,
built on this one.
"""
from __future__ import annotations

import re
import string
from _string import formatter_field_name_split  # type: ignore[import-not-found]
from typing import Any, Callable, Optional

from ..limits import check_percent, check_size, check_spec, printed_size
from . import marks
from .. import metering
from ..errors import SecurityError
from .undefined import Undefined

_SCALARS = (str, int, float, bool, type(None))
_WIDTHS = re.compile(r"\d+")


def _all_plain(*values: Any) -> bool:
    return all(type(v) in _SCALARS for v in values)


# ---------------------------------------------------------------------------- printf style

_CONVERSION = re.compile(
    r"%(?:\((?P<key>[^)]*)\))?(?P<flags>[-#0 +]*)(?P<width>\*|\d+)?"
    r"(?:\.(?P<precision>\*|\d*))?[hlL]?(?P<type>[diouxXeEfFgGcrsa%])")


def percent_format(fmt: str, params: Any) -> str:
    """`fmt % params` with marks."""
    check_percent(marks.plain(fmt), params)
    text = str.__mod__(marks.plain(fmt), params)
    if not marks.has_input(fmt) and not marks.has_input(params):
        return text
    try:
        rebuilt = _rebuild_percent(fmt, params)
    except Exception:  # noqa: BLE001 - any disagreement with Python falls back to tainting
        rebuilt = None
    if rebuilt is None or marks.plain(rebuilt) != text:
        return marks.taint(text, fmt, params)
    return rebuilt


def _rebuild_percent(fmt: str, params: Any) -> str:
    positional = iter(params if isinstance(params, tuple) else (params,))
    pieces, pos = [], 0
    for m in _CONVERSION.finditer(fmt):
        pieces.append(marks.sub(fmt, pos, m.start()))
        pos = m.end()
        if m.group("type") == "%":
            pieces.append(marks.sub(fmt, m.start(), m.start() + 1))
            continue
        stars = [next(positional) for part in ("width", "precision") if m.group(part) == "*"]
        key = m.group("key")
        arg = params[key] if key is not None else next(positional)
        spec = "%" + fmt[m.start("flags"):m.end()]
        piece = str.__mod__(marks.plain(spec), (*stars, arg))
        if marks.is_marked(marks.sub(fmt, m.start(), m.end())):  # the conversion came from input
            pieces.append(marks.mark_all(piece))
        elif m.group("type") == "s" and marks.is_marked(arg) and piece == arg:
            pieces.append(arg)
        else:
            pieces.append(marks.taint(piece, arg))
    pieces.append(marks.sub(fmt, pos, len(fmt)))
    return marks.concat(pieces)


# ---------------------------------------------------------------------------- str.format

# How a field's `.name` and `[key]` are read: by the template's own attribute and item rules
# (`values.get_attribute` / `get_item`). They sit above this module (they find `str.format`
# in the method tables, which format with this module), so access.py hands them down when it
# loads, through `read_fields_with`.
_read_attribute: Optional[Callable[..., Any]] = None
_read_item: Optional[Callable[..., Any]] = None


def read_fields_with(attribute: Callable[..., Any], item: Callable[..., Any]) -> None:
    """Set how `{0.name}` and `{0[key]}` read a field: `attribute(obj, name, undefined)` and
    `item(obj, key, undefined)`."""
    global _read_attribute, _read_item
    _read_attribute, _read_item = attribute, item


class SandboxedFormatter(string.Formatter):
    """`str.format` whose fields follow template attribute and item rules."""

    def __init__(self, undefined: type = Undefined) -> None:
        super().__init__()
        self.undefined = undefined
        self.built = 0  # characters of the fields formatted so far

    def get_field(self, field_name: str, args: Any, kwargs: Any) -> tuple:
        first, rest = formatter_field_name_split(field_name)
        obj = self.get_value(first, args, kwargs)
        for is_attribute, key in rest:
            if not is_attribute:
                obj = _read_item(obj, key, self.undefined)
            elif key.startswith("_"):
                owner = "str" if marks.is_marked(obj) else type(obj).__name__
                raise SecurityError(f"access to attribute {key!r} of {owner!r} object is unsafe.")
            else:
                obj = _read_attribute(obj, key, self.undefined)
        return obj, first

    def format_field(self, value: Any, format_spec: str) -> str:
        check_spec(str(format_spec))
        # the text grows field by field: refused before a field takes it past the output limit
        field = printed_size(value) + sum(map(int, _WIDTHS.findall(str(format_spec))))
        self.built += field
        check_size(self.built)
        metering.charge(field * metering.COPY)
        return self.format_value(value, format_spec)

    def format_value(self, value: Any, format_spec: str) -> str:
        """One field's text, once its size is allowed (markup's formatter escapes it)."""
        return super().format_field(value, format_spec)

    def rebuild(self, fmt: str, args: Any, kwargs: Any) -> Optional[str]:
        """The formatted text with marks, or None where fields are nested in specs."""
        pieces, auto = [], 0
        self.built = 0  # the fields are formatted again
        for literal, field, spec, conversion in self.parse(marks.plain(fmt)):
            if literal:
                pieces.append(literal)
            if field is None:
                continue
            if spec and "{" in spec:
                return None
            if field == "":
                field, auto = str(auto), auto + 1
            found, _ = self.get_field(field, args, kwargs)
            obj = self.convert_field(found, conversion)  # !r and !a drop marks: taint by `found`
            text = self.format_field(obj, spec)
            if marks.is_marked(obj) and not spec and conversion is None and text == obj:
                pieces.append(obj)
            else:
                pieces.append(marks.taint(text, found))
        return marks.concat(pieces)


def format_string(fmt: str, args: Any, kwargs: Any, undefined: type = Undefined,
                  formatter_class: type = SandboxedFormatter) -> str:
    """`fmt.format(*args, **kwargs)` (or `format_map(kwargs)`), sandboxed, with marks."""
    formatter = formatter_class(undefined)
    metering.charge(len(fmt) * metering.CALL / 4)  # parsed in Python steps, a field per 4 chars
    text = formatter.vformat(marks.plain(fmt), args, kwargs)
    check_size(len(text))
    values = list(args) + list(kwargs.values()) if isinstance(kwargs, dict) else None
    if not marks.is_marked(fmt) and values is not None and _all_plain(*values):
        return text
    if marks.is_marked(fmt):
        return marks.mark_all(text)
    rebuilt = formatter.rebuild(fmt, args, kwargs)
    if rebuilt is None or marks.plain(rebuilt) != text:
        return marks.taint(text, fmt, args, kwargs)
    return rebuilt
