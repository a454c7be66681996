"""HTML-safe strings: `Markup` and `escape`, as markupsafe has them, without markupsafe.

A `Markup` is text that is already safe for HTML; operations that bring other text in escape it
first. Provenance wins over safety: text that carries input marks cannot be a `Markup` (marks
live only on `marks.Marked`), so an operation whose result would contain input returns a
`Marked` instead, flagged safe by an `__html__` attribute of its own so that escaping it again
leaves it alone, as escaping a `Markup` would.
"""
from __future__ import annotations

import re
from typing import Any

from . import marks
from .formatting import SandboxedFormatter, format_string
from .marks import Marked
from .printing import to_string

_SPECIAL = re.compile("[&<>'\"]")


def escape_text(text: str) -> str:
    """The characters & < > ' " as HTML entities; plain text in, plain text out."""
    text = str.__str__(text)
    return _entities(text) if _SPECIAL.search(text) else text


def _entities(text: str) -> str:
    """`text` with its special characters replaced: five passes in C (`&` first, since the other
    entities hold one); a regular expression calling Python per character escaped took most of
    `'<x>'|safe + tools|tojson`."""
    return (text.replace("&", "&amp;").replace(">", "&gt;").replace("<", "&lt;")
            .replace("'", "&#39;").replace('"', "&#34;"))


def _escape_marked(s: str) -> str:
    """Escape keeping marks: an entity is input exactly when the character it replaces was.
    The text is escaped as plain text; each bound of an input run moves by what the characters
    before it grew (counted in C between one bound and the next), so that a JSON of many quotes
    costs a few counts per run, not a cut of the marked string per quote."""
    text = str.__str__(s)
    if not _SPECIAL.search(text):
        return s
    spans, moved, pos, grown = s.spans, [], 0, 0
    for span in spans:
        a, b = span[0], span[1]
        grown += _growth(text, pos, a)
        start = a + grown
        grown += _growth(text, a, b)
        moved.append((start, b + grown) + span[2:])
        pos = b
    return marks.make(_entities(text), tuple(moved))


def _growth(text: str, start: int, stop: int) -> int:
    """How many characters escaping adds to text[start:stop]."""
    if start >= stop or not _SPECIAL.search(text, start, stop):  # most runs: one scan
        return 0
    count = text.count
    return (4 * (count("&", start, stop) + count("'", start, stop) + count('"', start, stop))
            + 3 * (count("<", start, stop) + count(">", start, stop)))


class SafeMixed(marks.Mixed):
    """Safe text that carries input marks: what `Markup` is to text without them. Its
    operations keep both, as markupsafe's keep safety: their results are safe, and text they
    bring in (an operand, an item, a fill character) is escaped first."""

    def __html__(self) -> "SafeMixed":
        return self

    def __add__(self, other: Any):
        if isinstance(other, str) or hasattr(other, "__html__"):
            return _wrap(marks.concat((self, escape(other))))
        return NotImplemented

    def __radd__(self, other: Any):
        if isinstance(other, str) or hasattr(other, "__html__"):
            return _wrap(marks.concat((escape(other), self)))
        return NotImplemented

    def __mul__(self, n: Any):
        result = marks.Mixed.__mul__(self, n)
        return result if result is NotImplemented else _wrap(result)

    __rmul__ = __mul__

    def __mod__(self, value: Any):
        return markup_mod(self, value)

    def __getitem__(self, key: Any):
        return _wrap(marks.getitem(self, key))

    def __iter__(self):
        return iter([_wrap(c) for c in marks.Mixed.__iter__(self)])

    def join(self, iterable: Any):
        return _wrap(marks.join(self, [escape(x) for x in iterable]))

    def replace(self, old: str, new: str, count: int = -1):
        return _wrap(marks.replace(self, old, escape(new), count))

    def center(self, width: int, fillchar: str = " "):
        return _wrap(marks.Mixed.center(self, width, escape(fillchar)))

    def ljust(self, width: int, fillchar: str = " "):
        return _wrap(marks.Mixed.ljust(self, width, escape(fillchar)))

    def rjust(self, width: int, fillchar: str = " "):
        return _wrap(marks.Mixed.rjust(self, width, escape(fillchar)))

    def format(self, *args: Any, **kwargs: Any):
        return format_markup(self, args, kwargs)

    def format_map(self, mapping: Any):
        return format_markup(self, (), mapping)

    # No character map through entities and tags: the result is input as a whole (fail safe).
    def unescape(self) -> str:
        return marks.taint(Markup.unescape(self), self)

    def striptags(self) -> str:
        return marks.taint(Markup.striptags(self), self)

    @classmethod
    def escape(cls, value: Any) -> str:
        return escape(value)


class EscapingFormatter(SandboxedFormatter):
    """`str.format` of safe text: each field escaped unless it is safe itself."""

    def format_value(self, value: Any, format_spec: str) -> str:
        if hasattr(value, "__html_format__"):
            text = value.__html_format__(format_spec)
        elif hasattr(value, "__html__"):
            if format_spec:
                raise ValueError(f"Format specifier {format_spec} given, but {type(value)} does "
                                 "not define __html_format__. A class that defines __html__ must "
                                 "define __html_format__ to work with format specifiers.")
            text = value.__html__()
        else:
            text = super().format_value(value, str(format_spec))
        return str.__str__(escape(text))


def format_markup(fmt: str, args: Any, kwargs: Any) -> str:
    """`fmt.format(*args, **kwargs)` for safe `fmt` (or `format_map(kwargs)`): safe text."""
    return _wrap(format_string(fmt, args, kwargs, formatter_class=EscapingFormatter))


def _keep_safe(name: str, each: bool = False):
    method = getattr(marks.Mixed, name)

    def keep(self, *args: Any, **kwargs: Any):
        result = method(self, *args, **kwargs)
        return type(result)(_wrap(r) for r in result) if each else _wrap(result)
    keep.__name__ = name
    return keep


for _name in ("capitalize", "title", "lower", "upper", "swapcase", "casefold", "strip", "lstrip",
              "rstrip", "expandtabs", "zfill", "removeprefix", "removesuffix", "translate"):
    setattr(SafeMixed, _name, _keep_safe(_name))
for _name in ("split", "rsplit", "splitlines", "partition", "rpartition"):
    setattr(SafeMixed, _name, _keep_safe(_name, each=True))
SafeMixed.__name__ = "str"  # as every marked string (marks.py): a str to users


def safe_marked(text: str) -> str:
    """A copy of marked `text` that escaping passes through (`is escaped` holds for it)."""
    spans = marks.spans_of(text)
    if not spans:
        return text
    copy = SafeMixed(str.__str__(text))
    copy.spans = spans
    return copy


def _wrap(text: str) -> str:
    """Safe text: a `Markup`, or a safe `Marked` when the text carries input."""
    if isinstance(text, Marked):
        return safe_marked(text)
    return str.__new__(Markup, text)


def _text_of(value: Any) -> str:
    """str(value), with marks when the value carries input."""
    if isinstance(value, (list, tuple, dict)):
        from ..limits import check_printable
        if not check_printable(value):  # refused past the output limit; False: no marks inside
            return str(value)
    if marks.has_input(value):
        return to_string(value)
    return str(value)


def escape(value: Any) -> str:
    """`value` as safe HTML text: Markup and objects with `__html__` as they are, the rest escaped."""
    if type(value) is str:
        return str.__new__(Markup, escape_text(value))
    if hasattr(value, "__html__"):
        return Markup(value.__html__())
    text = _text_of(value)
    if isinstance(text, Marked):
        return safe_marked(_escape_marked(text))
    return str.__new__(Markup, escape_text(text))


def markup_join(pieces: list) -> str:
    """`a ~ b` while autoescaping (Jinja2's markup_join): safe, the other pieces escaped, as
    soon as one piece is safe; else the pieces joined as they are."""
    if any(hasattr(p, "__html__") for p in pieces):
        return _wrap(marks.concat([escape(p) for p in pieces]))
    return marks.concat(pieces)


def soft_str(value: Any) -> str:
    """A string as it is (Markup and marks kept), anything else through str()."""
    return value if isinstance(value, str) else str(value)


class _EscapingArgument:
    """An argument of `Markup % args`: escaped when it turns into text."""

    __slots__ = ("obj",)

    def __init__(self, obj: Any) -> None:
        self.obj = obj

    def __getitem__(self, key: Any) -> "_EscapingArgument":
        return _EscapingArgument(self.obj[key])

    def __str__(self) -> str:
        return str.__str__(escape(self.obj))

    def __repr__(self) -> str:
        return str.__str__(escape(repr(self.obj)))

    def __int__(self) -> int:
        return int(self.obj)

    def __float__(self) -> float:
        return float(self.obj)


class Markup(str):
    """Text safe for HTML. `Markup('<b>') + '<'` is `Markup('<b>&lt;')`."""

    __slots__ = ()

    def __new__(cls, obj: Any = "", encoding: str | None = None, errors: str = "strict"):
        if hasattr(obj, "__html__"):
            obj = obj.__html__()
        if encoding is not None:
            return super().__new__(cls, obj, encoding, errors)
        if marks.has_input(obj):
            return _wrap(_text_of(obj))
        return super().__new__(cls, obj)

    def __html__(self) -> "Markup":
        return self

    def __html_format__(self, format_spec: str) -> "Markup":
        if format_spec:
            raise ValueError("Unsupported format specification for Markup.")
        return self

    def __repr__(self) -> str:
        return f"Markup({str.__repr__(self)})"

    def __add__(self, other: Any):
        if isinstance(other, str) or hasattr(other, "__html__"):
            return _wrap(marks.concat((str.__str__(self), escape(other))))
        return NotImplemented

    def __radd__(self, other: Any):
        if isinstance(other, str) or hasattr(other, "__html__"):
            return _wrap(marks.concat((escape(other), str.__str__(self))))
        return NotImplemented

    def __mul__(self, n: Any) -> "Markup":
        return Markup(str.__mul__(self, n))

    __rmul__ = __mul__

    def __mod__(self, value: Any):
        if isinstance(value, tuple):
            args: Any = tuple(_EscapingArgument(x) for x in value)
        elif hasattr(type(value), "__getitem__") and not isinstance(value, str):
            args = _EscapingArgument(value)
        else:
            args = (_EscapingArgument(value),)
        return _wrap(marks.taint(str.__mod__(self, args), value))

    def __getitem__(self, key: Any) -> "Markup":
        return Markup(str.__getitem__(self, key))

    def join(self, iterable: Any):
        return _wrap(marks.join(str.__str__(self), [escape(x) for x in iterable]))

    def split(self, sep: str | None = None, maxsplit: int = -1) -> list:
        return [Markup(v) for v in str.split(self, sep, maxsplit)]

    def rsplit(self, sep: str | None = None, maxsplit: int = -1) -> list:
        return [Markup(v) for v in str.rsplit(self, sep, maxsplit)]

    def splitlines(self, keepends: bool = False) -> list:
        return [Markup(v) for v in str.splitlines(self, keepends)]

    def partition(self, sep: str) -> tuple:
        return tuple(Markup(v) for v in str.partition(self, sep))

    def rpartition(self, sep: str) -> tuple:
        return tuple(Markup(v) for v in str.rpartition(self, sep))

    def replace(self, old: str, new: str, count: int = -1):
        return _wrap(marks.replace(str.__str__(self), old, escape(new), count))

    def center(self, width: int, fillchar: str = " "):
        return _wrap(marks.taint(str.center(self, width, escape(fillchar)), fillchar))

    def ljust(self, width: int, fillchar: str = " "):
        return _wrap(marks.taint(str.ljust(self, width, escape(fillchar)), fillchar))

    def rjust(self, width: int, fillchar: str = " "):
        return _wrap(marks.taint(str.rjust(self, width, escape(fillchar)), fillchar))

    def format(self, *args: Any, **kwargs: Any):
        return format_markup(self, args, kwargs)

    def format_map(self, mapping: Any):
        return format_markup(self, (), mapping)

    def unescape(self) -> str:
        """The text with HTML entities turned back into characters."""
        import html  # here: html.entities costs a millisecond at every start
        return html.unescape(str.__str__(self))

    def striptags(self) -> str:
        """Comments and tags removed, whitespace runs made one space, entities unescaped."""
        return Markup(collapse_spaces(remove_tags(str.__str__(self)))).unescape()

    @classmethod
    def escape(cls, value: Any) -> str:
        return escape(value)


def _same_kind(name: str):
    method = getattr(str, name)

    def keep_markup(self, *args: Any) -> Markup:
        return Markup(method(self, *args))
    keep_markup.__name__ = name
    return keep_markup


for _name in ("capitalize", "title", "lower", "upper", "swapcase", "casefold", "strip", "lstrip",
              "rstrip", "expandtabs", "zfill", "removeprefix", "removesuffix", "translate"):
    setattr(Markup, _name, _same_kind(_name))


# ---------------------------------------------------------------------------- striptags

def remove_tags(text: str) -> str:
    """Drop comments and tags in one pass from left to right, as markupsafe 3.0.4 does: at each
    '<', a comment runs to the next '-->' and a tag to the next '>'; at the first one left
    unclosed the scan stops and the rest of the text stays as it is."""
    kept, pos = [], 0
    while (start := text.find("<", pos)) != -1:
        if text.startswith("<!--", start):
            end = text.find("-->", start + 4)
            width = 3
        else:
            end = text.find(">", start)
            width = 1
        if end == -1:
            break
        kept.append(text[pos:start])
        pos = end + width
    if pos == 0:
        return text
    kept.append(text[pos:])
    return "".join(kept)


def collapse_spaces(text: str) -> str:
    return " ".join(text.split())


# ---------------------------------------------------------------------------- operators

def is_safe(value: Any) -> bool:
    """Markup, or text marked safe (what `escape` leaves alone)."""
    return hasattr(value, "__html__")


def markup_add(left: Any, right: Any) -> Any:
    """`left + right` as Jinja2 computes it when a side is safe: the other string is escaped.

    Python's own `+` does this for `Markup` operands, but not when the safe side is a `Marked`
    (a marked `|safe`, `|escape` or `|tojson`): Marked's `+` only concatenates. Evaluators use
    this for `+` whenever either operand `is_safe`."""
    tl, tr = type(left), type(right)
    if (tl is Markup and (tr is str or tr is Markup)) or (tr is Markup and tl is str):
        # unmarked text on both sides (`"<x>"|safe + name`): one escape, no marks to join
        a = str.__str__(left) if tl is Markup else escape_text(left)
        return str.__new__(Markup, a + (str.__str__(right) if tr is Markup else escape_text(right)))
    if is_safe(left) and (isinstance(right, str) or is_safe(right)):
        return _wrap(marks.concat((_safe_text(left), escape(right))))
    if is_safe(right) and isinstance(left, str):
        return _wrap(marks.concat((escape(left), _safe_text(right))))
    return left + right


def markup_mod(left: Any, right: Any) -> Any:
    """`left % right` when `left` is safe: the arguments are escaped, as `Markup % args` does."""
    if is_safe(left) and isinstance(left, str) and not isinstance(left, Markup):
        text = Markup(marks.plain(left)) % right
        return _wrap(marks.taint(marks.plain(text), left, right))
    return left % right


def _safe_text(value: Any) -> str:
    text = value.__html__()
    return text if isinstance(text, Marked) else str.__str__(text)
