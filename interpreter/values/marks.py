"""Marked strings: text that knows, per character span, which characters came from input.

Template text stays a plain `str` (the fast path). A `Marked` is a `str` subclass carrying
`spans`: sorted, disjoint, non-adjacent `(start, end)` ranges of input characters. Because it
is a `str`, every operation that does not know about marks still computes the right text;
the operations below also compute the right marks. Where no character map exists, callers
use `taint`: any input among the operands makes the whole result input (fail safe: a lost
mark is an injection, an extra mark only a missed special token).
"""
from __future__ import annotations

from bisect import bisect_right
from itertools import repeat
from operator import itemgetter
from typing import Any, Iterable, Optional, Sequence

from ..limits import check_size, input_text
from .numbers import InputBytes, InputFloat, InputInt, as_input
from .origins import TRACING, label
from .undefined import Undefined

Spans = tuple  # tuple[tuple[int, int], ...]


class Marked(str):
    """A string some of whose characters came from input. Build with `make` or `mark`.

    Two concrete kinds: `Input`, every character input (most marked strings: what `mark_input`
    makes and what one-to-one operations on it give; it has no per-instance storage, so it costs
    what a plain str subclass costs), and `Mixed`, which keeps its `spans`. Test with
    `isinstance(s, Marked)`."""

    __slots__ = ()
    spans: Spans

    def __str__(self) -> str:
        return self

    def __repr__(self) -> str:
        return str.__repr__(self)

    def __getnewargs__(self):
        return (str.__str__(self),)

    def __reduce__(self):
        return (make, (str.__str__(self), self.spans))

    # -- operators that map characters one to one
    def __add__(self, other):
        if not isinstance(other, str):
            return NotImplemented
        return concat2(self, other)

    def __radd__(self, other):
        if not isinstance(other, str):
            return NotImplemented
        return concat2(other, self)

    def __mul__(self, n):
        if not isinstance(n, int):
            return NotImplemented
        return concat([self] * n) if n > 0 else ""

    __rmul__ = __mul__

    def __mod__(self, args):
        return taint(str.__mod__(self, args), self)

    def __getitem__(self, key):
        return getitem(self, key)

    def __iter__(self):
        spans = self.spans
        if len(spans) == 1 and spans[0][0] == 0 and spans[0][1] == len(self):
            # a field with its origin (an Input iterates as its own class): each character
            # marked at once, not cut out by the span algebra
            return map(mark, str.__iter__(self), repeat(label(spans[0]), len(self)))
        return map(getitem, repeat(self, len(self)), range(len(self)))

    # -- str methods, each mapping marks
    def strip(self, chars=None):
        return _strip(self, chars, True, True)

    def lstrip(self, chars=None):
        return _strip(self, chars, True, False)

    def rstrip(self, chars=None):
        return _strip(self, chars, False, True)

    def upper(self):
        return case_map(self, str.upper)

    def lower(self):
        return case_map(self, str.lower)

    def title(self):
        return case_map(self, str.title)

    def capitalize(self):
        return case_map(self, str.capitalize)

    def swapcase(self):
        return case_map(self, str.swapcase)

    def casefold(self):
        return case_map(self, str.casefold)

    def split(self, sep=None, maxsplit=-1):
        return split(self, sep, maxsplit)

    def rsplit(self, sep=None, maxsplit=-1):
        return rsplit(self, sep, maxsplit)

    def splitlines(self, keepends=False):
        return splitlines(self, keepends)

    def partition(self, sep):
        return partition(self, sep, str.find)

    def rpartition(self, sep):
        return partition(self, sep, str.rfind)

    def replace(self, old, new, count=-1):
        return replace(self, old, new, count)

    def removeprefix(self, prefix):
        return self[len(prefix):] if self.startswith(prefix) else self

    def removesuffix(self, suffix):
        return self[: len(self) - len(suffix)] if suffix and self.endswith(suffix) else self

    def join(self, iterable):
        return join(self, iterable)

    def center(self, width, fillchar=" "):
        return _pad(self, str.center(self, width, fillchar))

    def ljust(self, width, fillchar=" "):
        return _pad(self, str.ljust(self, width, fillchar))

    def rjust(self, width, fillchar=" "):
        return _pad(self, str.rjust(self, width, fillchar))

    def zfill(self, width):
        return taint(str.zfill(self, width), self)

    def expandtabs(self, tabsize=8):
        return taint(str.expandtabs(self, tabsize), self)

    def format(self, *args, **kwargs):
        return taint(str.format(self, *args, **kwargs), self, args, kwargs)

    def format_map(self, mapping):
        return taint(str.format_map(self, mapping), self, mapping)

    def translate(self, table):
        return taint(str.translate(self, table), self)

    def encode(self, *args, **kwargs):
        return InputBytes(str.encode(self, *args, **kwargs))  # no byte map: all input


def _input(text: str) -> str:
    """All of `text` (an exact str) as input; '' stays plain."""
    return Input(text) if text else ""


@input_text
class Input(Marked):
    """A string all of whose characters came from input. Whatever is cut from it or computed
    from it alone is input too, so its methods skip the span algebra."""

    __slots__ = ()

    @property
    def spans(self) -> Spans:
        return ((0, len(self)),) if self else ()  # an empty one (a split's piece) marks nothing

    def __getitem__(self, key):
        return _input(str.__getitem__(self, key))

    def __iter__(self):
        return map(_character, str.__iter__(self))  # characters are never empty

    def __mod__(self, args):
        return _input(str.__mod__(self, args))

    # Stripping usually finds nothing to strip (`message.content | trim`): the string itself
    # then, not a copy.
    def strip(self, chars=None):
        text = str.strip(self, chars)
        return self if len(text) == len(self) else _input(text)

    def lstrip(self, chars=None):
        text = str.lstrip(self, chars)
        return self if len(text) == len(self) else _input(text)

    def rstrip(self, chars=None):
        text = str.rstrip(self, chars)
        return self if len(text) == len(self) else _input(text)

    def upper(self):
        return _input(str.upper(self))

    def lower(self):
        return _input(str.lower(self))

    def title(self):
        return _input(str.title(self))

    def capitalize(self):
        return _input(str.capitalize(self))

    def swapcase(self):
        return _input(str.swapcase(self))

    def casefold(self):
        return _input(str.casefold(self))

    # The pieces of a split are input even when empty: how many there are is the input's (a
    # count of them must print as input), and an empty Input adds nothing where it is joined.
    def split(self, sep=None, maxsplit=-1):
        return [Input(p) for p in str.split(self, sep, maxsplit)]

    def rsplit(self, sep=None, maxsplit=-1):
        return [Input(p) for p in str.rsplit(self, sep, maxsplit)]

    def splitlines(self, keepends=False):
        return [Input(p) for p in str.splitlines(self, keepends)]

    def partition(self, sep):
        return tuple(_input(p) for p in str.partition(self, sep))

    def rpartition(self, sep):
        return tuple(_input(p) for p in str.rpartition(self, sep))

    def removeprefix(self, prefix):
        return _input(str.removeprefix(self, prefix))

    def removesuffix(self, suffix):
        return _input(str.removesuffix(self, suffix))


class Mixed(Marked):
    """A string with input characters in `spans` and template characters elsewhere. Never safe
    text: a safe one is a `SafeMixed` (values/markup.py), so an exact `Mixed` is added and
    printed without asking for `__html__`."""


# Python's own messages name a value's type by `__name__`: a marked string is a str to users
# ("'str' object has no attribute 'x'"); `__qualname__` still tells them apart when debugging.
Marked.__name__ = Input.__name__ = Mixed.__name__ = "str"


# ---------------------------------------------------------------------------- constructors

def make(text: str, spans: Spans) -> str:
    """`text` with the given input spans; a plain `str` when there are none."""
    if not spans or not text:
        return plain(text)
    if len(spans) == 1 and spans[0][0] == 0 and spans[0][1] == len(text) and len(spans[0]) == 2:
        return Input(text)
    m = Mixed(text)
    m.spans = spans
    return m


def plain(text: str) -> str:
    """The text of `text` as an exact `str`, dropping marks."""
    return str.__str__(text) if type(text) is not str else text


def mark(text: str, origin: Any = None) -> str:
    """All of `text` as input (from `origin`, when one is given: values/origins.py)."""
    if not text:
        return ""
    if origin is None:
        return Input(text)
    m = Mixed(text)
    m.spans = ((0, len(text), origin),)
    return m


def spans_of(s: Any) -> Spans:
    return s.spans if isinstance(s, Marked) else ()


def is_marked(s: Any) -> bool:
    return isinstance(s, Marked)


def from_flags(text: str, flags: Sequence[Any]) -> str:
    """Build from one label per character: False for template text, True for input, or the
    origin the character came from (what `flags_of` gives)."""
    spans = []
    start, current = None, False
    for i, flag in enumerate(flags):
        if start is not None and flag is not current and flag != current:
            spans.append((start, i) if current is True else (start, i, current))
            start = None
        if flag and start is None:
            start, current = i, flag
    if start is not None:
        spans.append((start, len(flags)) if current is True else (start, len(flags), current))
    return make(text, tuple(spans))


def flags_of(s: str) -> list[Any]:
    """One label per character: False (template text), True (input), or its origin."""
    flags: list[Any] = [False] * len(s)
    for span in spans_of(s):
        a, b = span[0], span[1]
        flags[a:b] = [label(span) or True] * (b - a)
    return flags


# ---------------------------------------------------------------------------- span algebra

def merge(spans: Iterable[tuple[int, int]]) -> Spans:
    """Sorted spans made disjoint and non-adjacent; empty ones dropped."""
    out: list[tuple] = []
    end, origin = -1, None  # of the last span of `out`
    for span in spans:
        a, b = span[0], span[1]
        if a >= b:
            continue
        own = span[2] if len(span) > 2 else None
        if out and a <= end and own == origin:
            end = max(end, b)
            out[-1] = (out[-1][0], end) if own is None else (out[-1][0], end, own)
        else:  # most spans: kept as they are when already in their canonical form
            out.append(span if type(span) is tuple and len(span) == (2 if own is None else 3) else
                       (a, b) if own is None else (a, b, own))
            end, origin = b, own
    return tuple(out)


def clip(spans: Spans, start: int, stop: int) -> Spans:
    """The spans inside [start, stop), shifted so that `start` becomes 0. The first one that
    reaches past `start` is found by bisection: cutting a string of many spans into many pieces
    (escaping, splitting, replacing) costs each piece only the spans it holds."""
    out = []
    for i in range(bisect_right(spans, start, key=_end), len(spans)):
        span = spans[i]
        a, b = span[0], span[1]
        if a >= stop:
            break
        a = a if a > start else start
        b = b if b < stop else stop
        if a < b:
            out.append((a - start, b - start) if len(span) == 2 else (a - start, b - start, span[2]))
    return tuple(out)


_end = itemgetter(1)


def sub(s: str, start: int, stop: int) -> str:
    """`s[start:stop]` for 0 <= start <= stop <= len(s), keeping marks."""
    kind = type(s)
    if kind is Mixed and start == 0 and stop == len(s):  # all of it (`|trim` found nothing)
        return s
    text = str.__getitem__(s, slice(start, stop))
    if kind is Input:  # every character input: so is any piece
        return Input(text) if text else ""
    if not isinstance(s, Marked):
        return text
    spans = s.spans
    if len(spans) == 1:  # one input run (`'<think>' ~ content`, a field with its origin): no search
        span = spans[0]
        a, b = span[0], span[1]
        a = a - start if a > start else 0
        b = (b if b < stop else stop) - start
        if a >= b:
            return text
        m = Mixed(text)
        if len(span) == 2:
            if a == 0 and b == len(text):
                return Input(text)
            m.spans = ((a, b),)
        else:
            m.spans = ((a, b, span[2]),)
        return m
    return make(text, clip(spans, start, stop))


def concat(pieces: Iterable[str]) -> str:
    """Join strings, keeping each piece's marks (adjacent input spans merge).

    Runs for every captured body (macros, `{% set %}` blocks) and every marked filter result:
    the text is joined in C, and the Python loop runs only when some piece is marked. A body
    that wrote one string (a macro returning a filter's result: most of the marked captures of
    the corpus) gives that string back: it is immutable, and the join then the marked copy
    would copy it twice."""
    if type(pieces) is not list and type(pieces) is not tuple:
        pieces = list(pieces)
    if len(pieces) == 1:
        only = pieces[0]
        kind = type(only)
        if kind is str or kind is Input or kind is Mixed:
            return only if only else ""
    text = "".join(pieces)
    if _PLAIN_STR.issuperset(map(type, pieces)):
        return text
    spans: list[tuple[int, int]] = []
    offset = 0
    for p in pieces:
        kind = type(p)
        n = len(p)
        if kind is str or not n:
            pass
        elif kind is Input:
            if spans and offset <= spans[-1][1] and len(spans[-1]) == 2:
                spans[-1] = (spans[-1][0], offset + n)
            else:
                spans.append((offset, offset + n))
        elif isinstance(p, Marked):
            own = p.spans
            if not own:
                pass
            elif not offset and not spans:  # `ns.out ~ text` on a growing string: its spans
                spans.extend(own)           # as they are, no Python step per span (quadratic)
            elif len(own[0]) > 2 or (spans and len(spans[-1]) > 2):  # spans with origins
                _append_shifted(spans, own, offset)
            else:
                a, b = own[0]
                a += offset
                if spans and a <= spans[-1][1]:  # touches the run before it
                    spans[-1] = (spans[-1][0], b + offset)
                else:
                    spans.append((a, b + offset))
                if len(own) > 1:
                    spans.extend(shifted_all(own[1:], offset))
        offset += n
    return make(text, tuple(spans)) if spans else text


_PLAIN_STR = frozenset((str,))


def shifted(span: tuple, n: int) -> tuple:
    """`span` moved `n` characters on, keeping its origin."""
    return (span[0] + n, span[1] + n) if len(span) == 2 else (span[0] + n, span[1] + n, span[2])


def shifted_all(spans: Spans, n: int) -> list:
    """`spans` moved `n` characters on, in one comprehension: flag-only spans (every render but
    an origin render) or spans with origins (an origin render's); a mix one by one."""
    if not spans:
        return []
    try:
        if len(spans[0]) == 2:
            return [(a + n, b + n) for a, b in spans]
        return [(a + n, b + n, origin) for a, b, origin in spans]
    except ValueError:  # spans of both kinds
        return [shifted(span, n) for span in spans]


def _append_shifted(spans: list, own: Spans, offset: int) -> None:
    """Append `own`, moved by `offset`, to `spans`; the first joins the last run of `spans`
    when they touch and came from the same origin (or both only flag input)."""
    first = own[0]
    if spans:
        last = spans[-1]
        if first[0] + offset <= last[1] and len(first) == len(last) and (len(first) == 2
                                                                         or first[2] == last[2]):
            spans[-1] = (last[0], first[1] + offset) + tuple(first[2:])
            spans.extend(shifted_all(own[1:], offset))
            return
    spans.extend(shifted_all(own, offset))


def concat2(a: str, b: str) -> str:
    """`a + b` for two strings, the common case of `concat`. The commonest shapes of chat
    templates (`message.content + '<|im_end|>'`, `'<|im_start|>' + message.content`) are told
    apart by exact type first: this runs for every such `+` of every render_parts."""
    ta, tb = type(a), type(b)
    if ta is Input and tb is str:  # `message.content + '<|im_end|>'`
        if not b:
            return a
        if not a:
            return b
        m = Mixed(str.__add__(a, b))
        m.spans = ((0, len(a)),)
        return m
    if ta is str and tb is Input:  # `'<|im_start|>' + message.content`
        if not a:
            return b
        if not b:
            return a
        m = Mixed(str.__add__(a, b))
        m.spans = ((len(a), len(m)),)
        return m
    ma, mb = isinstance(a, Marked), isinstance(b, Marked)
    if not (ma or mb):
        return str.__add__(a, b)
    text = str.__add__(a, b)
    n = len(a)
    if ta is Input:
        if tb is Input:
            return Input(text)
        if not mb:  # a str subclass (Markup)
            if n and b:
                return _input_then_plain(text, n)
            return Input(text) if n else text
    if not ma:
        if tb is Input:
            return make(text, ((n, len(text)),)) if b else text
        return make(text, tuple(shifted_all(b.spans, n)))
    if not mb:
        return make(text, a.spans)
    first, second = a.spans, b.spans
    if not first or not second:  # an empty Input
        return make(text, first or tuple(shifted_all(second, n)))
    if len(first[-1]) > 2 or len(second[0]) > 2:  # spans with origins
        spans = list(first)
        _append_shifted(spans, second, n)
        return make(text, tuple(spans))
    if first[-1][1] == n and second[0][0] == 0:  # the two input runs touch: one span
        joined = first[:-1] + ((first[-1][0], second[0][1] + n),)
        return make(text, joined + tuple(shifted_all(second[1:], n)))
    return make(text, first + tuple(shifted_all(second, n)))


def _input_then_plain(text: str, n: int) -> str:
    """`text` whose first `n` characters (0 < n < len(text)) are input, the rest template."""
    m = Mixed(text)
    m.spans = ((0, n),)
    return m


def join(separator: str, items: Iterable[str]) -> str:
    items = list(items)
    if not items:
        return ""
    check_size(sum(len(i) for i in items if isinstance(i, str)) + len(separator) * (len(items) - 1))
    pieces = [items[0]]
    for item in items[1:]:
        pieces.append(separator)
        pieces.append(item)
    for p in pieces:
        if not isinstance(p, str):
            raise TypeError(f"sequence item: expected str instance, {type(p).__name__} found")
    return concat(pieces)


def getitem(s: str, key: Any) -> str:
    """Indexing and slicing with marks."""
    if isinstance(key, slice):
        start, stop, step = key.indices(len(s))
        if step == 1:
            return sub(s, start, max(start, stop))
        text = str.__getitem__(s, key)
        if not isinstance(s, Marked):
            return text
        flags = flags_of(s)
        return from_flags(text, [flags[i] for i in range(start, stop, step)])
    ch = str.__getitem__(s, key)
    if not isinstance(s, Marked):
        return ch
    i = key + len(s) if key < 0 else key
    return sub(s, i, i + 1)


# ---------------------------------------------------------------------------- str methods

def _strip(s: str, chars, left: bool, right: bool) -> str:
    start, stop = 0, len(s)
    if left:
        start = stop - len(str.lstrip(s, chars))
    if right:
        stop = len(str.rstrip(s, chars))
    return sub(s, start, max(start, stop))


def case_map(s: str, fn) -> str:
    """Case changes map characters one to one, except where a character's image is longer
    ('ß' -> 'SS'): there each piece of the image takes the mark of its source character."""
    whole = fn(str.__str__(s))
    if not isinstance(s, Marked):
        return whole
    if len(whole) == len(s):
        return make(whole, s.spans)
    if fn in (str.title, str.capitalize):  # context-dependent: no per-character map
        return taint(whole, s)
    out_flags: list[bool] = []
    for ch, flag in zip(str.__str__(s), flags_of(s)):
        out_flags.extend([flag] * len(fn(ch)))
    return from_flags(whole, out_flags) if len(out_flags) == len(whole) else taint(whole, s)


def split(s: str, sep=None, maxsplit=-1) -> list[str]:
    parts = str.split(s, sep, maxsplit)
    if not isinstance(s, Marked):
        return parts
    return _marked_pieces(s, parts)


def rsplit(s: str, sep=None, maxsplit=-1) -> list[str]:
    parts = str.rsplit(s, sep, maxsplit)
    if not isinstance(s, Marked):
        return parts
    return _marked_pieces(s, parts)


def splitlines(s: str, keepends=False) -> list[str]:
    parts = str.splitlines(s, keepends)
    if not isinstance(s, Marked):
        return parts
    return _marked_pieces(s, parts)


def _marked_pieces(s: str, parts: list[str]) -> list[str]:
    """The in-order substrings `parts` of marked `s` (what str.split gave), each with the marks
    of where it sits in `s`: the pieces themselves, not cut from `s` a second time."""
    out, pos, spans = [], 0, s.spans
    for p in parts:
        at = str.find(s, p, pos)
        pos = at + len(p)
        out.append(make(p, clip(spans, at, pos)))
    return out


def partition(s: str, sep: str, find) -> tuple:
    i = find(s, sep)
    if i < 0:
        return (s, "", "") if find is str.find else ("", "", s)
    return (sub(s, 0, i), sub(s, i, i + len(sep)), sub(s, i + len(sep), len(s)))


def replace(s: str, old: str, new: str, count: int = -1) -> str:
    """Each replacement keeps its own provenance; untouched characters keep theirs."""
    if len(new) > len(old):
        found = len(s) + 1 if not old else str.count(s, old)
        found = found if count < 0 else min(found, count)
        check_size(len(s) + found * (len(new) - len(old)))
    if not isinstance(s, Marked) and not isinstance(new, Marked):
        return str.replace(s, old, new, count)
    if not old:
        return taint(str.replace(s, old, new, count), s, new)
    if (type(s) is Input or type(s) is Mixed) and (count == 0 or not str.__contains__(s, old)):
        return s  # nothing to replace (`|replace('&', ...)` on most text): no three copies of it
    pieces, pos, done = [], 0, 0
    while count < 0 or done < count:
        i = str.find(s, old, pos)
        if i < 0:
            break
        pieces.append(sub(s, pos, i))
        pieces.append(new)
        pos = i + len(old)
        done += 1
    pieces.append(sub(s, pos, len(s)))
    return concat(pieces)


def _pad(s: str, padded: str) -> str:
    """center/ljust/rjust: the original sits inside `padded` unchanged."""
    if not isinstance(s, Marked):
        return padded
    i = padded.find(str.__str__(s))
    return concat([padded[:i], s, padded[i + len(s):]])


# ---------------------------------------------------------------------------- fail safe

def has_input(value: Any, _depth: int = 0, _seen: Optional[set] = None) -> bool:
    """Whether anything inside `value` came from input: a marked string, a number or bytes from
    input, in lists, tuples, dicts (keys too), sets and dict views, or in a runtime object that
    says what it holds (`jinja_holds_input`). Fail safe: an opaque value (an iterator, a macro,
    an object of the host's) may hold input, and so does anything nested past 200 levels. Each
    container is looked into once, so a structure built by sharing (`[x, x]` doubled 40 times)
    costs what its distinct containers cost."""
    t = type(value)
    if t is str or t is int or t is bool or value is None:
        return False
    if isinstance(value, Marked) or t in _INPUT_VALUES:
        return True
    if t in _PLAIN_LEAVES:
        return False
    if _depth > 200:
        return True
    if isinstance(value, (dict, list, tuple, set, frozenset)) or t in _VIEWS:
        if _seen is None:
            _seen = set()
        elif id(value) in _seen:  # looked into already, and found nothing (or being looked into)
            return False
        _seen.add(id(value))
        if isinstance(value, dict) or t is _ITEMS:  # keys and values, never the passing pairs
            pairs = value.items() if isinstance(value, dict) else value
            for k, v in pairs:  # (whose ids Python reuses: they must not enter `_seen`)
                if has_input(k, _depth + 1, _seen) or has_input(v, _depth + 1, _seen):
                    return True
            return False
        for item in value:
            if has_input(item, _depth + 1, _seen):
                return True
        return False
    if isinstance(value, (str, Undefined)):  # Markup and other str subclasses: template text
        return False
    holds = getattr(t, "jinja_holds_input", None)
    if holds is not None:
        return holds(value, lambda inner: has_input(inner, _depth + 1, _seen))
    return True


_INPUT_VALUES = frozenset({InputInt, InputFloat, InputBytes})
_PLAIN_LEAVES = frozenset({float, bytes, complex, range, slice, type(Ellipsis)})
_ITEMS = type({}.items())
_VIEWS = frozenset({type({}.keys()), type({}.values()), _ITEMS})


def taint(result: Any, *sources: Any) -> Any:
    """Where no character map exists: any input among `sources` makes `result` input (from all
    of their origins, in a render that traces them)."""
    if not any(has_input(s) for s in sources):
        return result
    if not TRACING.get():
        return mark_all(result)
    from .sources import origins_in  # noqa: PLC0415 - loaded by the origin render
    return mark_all(result, origins_in(sources))


def mark_all(value: Any, origin: Any = None) -> Any:
    """`value` (a string, a number, or a list or tuple of them) all input (from `origin`)."""
    if isinstance(value, str):
        return mark(value, origin) if value else value
    if type(value) is int or type(value) is float:
        number = as_input(value)
        if origin is not None:
            number.origin = origin
        return number
    if isinstance(value, list):
        return [mark_all(v, origin) for v in value]
    if isinstance(value, tuple):
        return tuple(mark_all(v, origin) for v in value)
    if type(value) is dict:  # a translate table
        return {mark_all(k, origin): mark_all(v, origin) for k, v in value.items()}
    return value


def unmarked(value: Any, _depth: int = 0) -> Any:
    """`value` as plain data (exact str, int and float, in containers of the same kinds), for
    code such as `pprint` that treats str subclasses otherwise than str."""
    t = type(value)
    if isinstance(value, Marked):
        return str.__str__(value)
    if t in _INPUT_VALUES:
        return t.__mro__[1](value)
    if _depth > 200:
        return value
    if t is list or t is tuple or t is set or t is frozenset:
        return t(unmarked(v, _depth + 1) for v in value)
    if t is dict:
        return {unmarked(k, _depth + 1): unmarked(v, _depth + 1) for k, v in value.items()}
    return value


def escape_chars(s: str, table: dict[str, str]) -> str:
    """Replace single characters by their escapes; an escape keeps the mark of the character
    it stands for (unlike `replace`, whose replacement text keeps its own provenance)."""
    if not isinstance(s, Marked):
        for char, escaped in table.items():
            s = s.replace(char, escaped)
        return s
    pieces = []
    raw = str.__str__(s)
    flags = flags_of(s)
    start = 0
    for i, ch in enumerate(raw):
        if ch in table:
            pieces.append(sub(s, start, i))
            escaped = table[ch]
            flag = flags[i]
            pieces.append(mark(escaped, None if flag is True else flag) if flag else escaped)
            start = i + 1
    pieces.append(sub(s, start, len(raw)))
    return concat(pieces)


class _Characters(dict):
    """Input characters by character, made when first met: a loop over a marked string's
    characters (`for c in message.content`) looks each up in C rather than making a copy.
    Bounded: past `_MOST` distinct characters, new ones are made each time."""

    def __missing__(self, char: str) -> "Input":
        made = Input(char)
        if len(self) < _MOST:
            self[char] = made
        return made


_MOST = 4096
_character = _Characters().__getitem__
