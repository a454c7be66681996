"""How values print: `{{ value }}` and `~` (`to_string`), and the repr() a container prints its
items with (`repr_value`), keeping the marks of the strings inside. Below markup.py, which
escapes what this prints, and below access.py, which reads attributes and items."""
from __future__ import annotations

from typing import Any

from . import marks
from ..limits import check_printable
from ..metering import PRINT_BASE
from .marks import Input, Mixed, concat
from .numbers import InputBytes, InputFloat, InputInt, InputRange
from .origins import number_origin
from .runtime import LoopContext, Namespace, TemplateModule
from .sandbox import holds_marked_fields, is_host_object, prints_itself
from .undefined import Undefined


def to_string(value: Any) -> str:
    """`{{ value }}` and `~`: Python's str() for data, '' for undefined, marks kept."""
    t = type(value)
    if t is str or t is Input or t is Mixed:
        return value
    if t is dict or t is list or t is tuple:  # typed content, a message, tools
        # plain data all through (no input inside): Python's own repr is the same text
        return repr_value(value) if check_printable(value) else repr(value)
    if value is None or t is bool or t is int or t is float:
        return str(value)
    if t is InputInt or t is InputFloat or t is InputBytes:  # from input: prints as input
        return marks.mark(str(value), number_origin(value))
    if isinstance(value, Undefined):
        return str(value)
    if isinstance(value, (list, tuple, dict, set, frozenset)) or t in _VIEWS or t in _SHOWING:
        check_printable(value)  # a subclass, a set, a view: refused past the output limit first
        return repr_value(value)
    if isinstance(value, str):
        return value
    if t is TemplateModule:  # an imported template prints what it rendered
        return value.body
    if is_host_object(value) and prints_itself(value):  # a date, an object's own __str__
        text = str.__str__(str(value))
        return marks.mark(text) if text and holds_marked_fields(value) else text
    return safe_repr(value)


def data_string(value: Any) -> str:
    """`value | string` of a dict, list or tuple (the generated code's call of the builtin): what
    `{{ value }}` prints, the print's setup (metering.PRINT_BASE) charged with its walk."""
    return repr_value(value) if check_printable(value, PRINT_BASE) else repr(value)


def safe_repr(value: Any) -> str:
    """How an object outside the data model prints: its own repr if it is one of ours, else its
    kind and name only (no module path, no memory address)."""
    if hasattr(type(value), "jinja_attribute") or isinstance(value, Undefined):
        return repr(value)
    if isinstance(value, (int, float, complex)):
        return str(value)
    if isinstance(value, _PLAIN_DATA) or getattr(type(value), "jinja_plain_repr", False):
        return repr(value)
    if callable(value):
        return f"<callable {getattr(value, '__name__', type(value).__name__)}>"
    if is_host_object(value) and prints_itself(value) and type(value).__repr__ is not object.__repr__:
        text = str.__str__(repr(value))
        return marks.mark(text) if holds_marked_fields(value) else text  # a dataclass, a date: its own repr (what Jinja2 shows in a list)
    return f"<{type(value).__name__} object>"


_VIEWS = (type({}.keys()), type({}.values()), type({}.items()))
_PLAIN_DATA = (range, set, frozenset, bytes, bytearray, slice)  # their repr shows only data


def repr_value(value: Any, _depth: int = 0) -> str:
    """Python's repr(), keeping the marks of strings inside containers (and sets, and the
    runtime objects whose repr shows what they hold). The pieces of the whole value are
    collected in one list and joined once: a container of marked strings (typed content,
    `tools|string`) costs one `concat`, not one per level and per string."""
    texts: list[str] = []
    spans: list[tuple[int, int]] = []
    try:
        _input_repr_into(value, texts, spans, 0, _depth)
    except _Other:
        pieces: list[str] = []
        _repr_into(value, pieces, _depth)
        return concat(pieces)
    return marks.make("".join(texts), tuple(spans))


class _Other(Exception):
    """What `_input_repr_into` leaves to `_repr_into` (and `concat`)."""


def _input_repr_into(value: Any, texts: list, spans: list, at: int, depth: int) -> int:
    """`_repr_into` for the commonest marked data (dicts, lists and tuples of plain values and
    of strings all input: typed content, tools, tool calls in `render_parts`), its input spans
    found as the text is written instead of by a `concat` over its pieces: the text written
    (to `texts`), the spans of the input strings (to `spans`), the offset after it. Raises
    _Other for anything else, before the caller keeps what it wrote."""
    t = type(value)
    if t is Input:
        text = str.__repr__(value)
        if len(text) != len(value) + 2:  # escaped characters: _repr_into taints the whole repr
            raise _Other
        texts.append(text)
        if value:
            spans.append((at + 1, at + 1 + len(value)))
        return at + len(text)
    if t is str or t is int or t is float or t is bool or value is None:
        text = repr(value)
        texts.append(text)
        return at + len(text)
    if depth > 100:
        raise _Other  # _repr_into says it is too deep
    if t is dict:
        texts.append("{")
        at += 1
        for i, (k, v) in enumerate(value.items()):
            if i:
                texts.append(", ")
                at += 2
            at = _input_repr_into(k, texts, spans, at, depth + 1)
            texts.append(": ")
            at = _input_repr_into(v, texts, spans, at + 2, depth + 1)
        texts.append("}")
        return at + 1
    if t is list or t is tuple:
        texts.append("[" if t is list else "(")
        at += 1
        for i, item in enumerate(value):
            if i:
                texts.append(", ")
                at += 2
            at = _input_repr_into(item, texts, spans, at, depth + 1)
        closing = "]" if t is list else ",)" if len(value) == 1 else ")"
        texts.append(closing)
        return at + len(closing)
    raise _Other


def _repr_into(value: Any, out: list, depth: int) -> None:
    """Append the pieces of `value`'s repr to `out` (see repr_value)."""
    t = type(value)
    if t is str or t is int or t is float or t is bool or value is None:
        out.append(repr(value))
    elif t is InputInt or t is InputFloat or t is InputBytes:
        out.append(marks.mark(repr(value), number_origin(value)))
    elif t is Input or isinstance(value, Mixed):  # Mixed, or safe marked text (markup.SafeMixed)
        text = repr(value)
        wrapper = "Markup(" if hasattr(value, "__html__") else ""  # safe text, as markupsafe's
        # the characters between the quotes are the string's own when nothing was escaped
        if len(text) == len(value) + 2:
            if wrapper:
                out.extend((wrapper, text[0], value, text[-1], ")"))
            else:  # no empty pieces for concat to step over (a dict of typed content has many)
                out.extend((text[0], value, text[-1]))
        else:
            out.append(marks.taint(wrapper + text + (")" if wrapper else ""), value))
    elif depth > 100:
        raise RecursionError("value nests too deeply to print")
    elif t is list:
        _items_into("[", value, "]", out, depth)
    elif t in _VIEWS:
        _items_into(f"{t.__name__}([", value, "])", out, depth + 1)  # as a list inside
    elif isinstance(value, tuple) and (t is tuple or not hasattr(value, "_fields")):
        _items_into("(", value, ",)" if len(value) == 1 else ")", out, depth)
    elif isinstance(value, tuple):  # a named tuple (groupby's groups): Name(field=value, ...)
        out.append(f"{t.__name__}(")
        for i, (field, item) in enumerate(zip(value._fields, value)):
            out.append(f", {field}=" if i else f"{field}=")
            _repr_into(item, out, depth + 1)
        out.append(")")
    elif t is dict:
        out.append("{")
        for i, (k, v) in enumerate(value.items()):
            if i:
                out.append(", ")
            _repr_into(k, out, depth + 1)
            out.append(": ")
            _repr_into(v, out, depth + 1)
        out.append("}")
    elif isinstance(value, str):
        out.append(repr(value))  # Markup and other str subclasses
    elif isinstance(value, (set, frozenset)):
        if not value:
            out.append("set()" if type(value) is set else f"{type(value).__name__}()")
        elif type(value) is set:
            _items_into("{", value, "}", out, depth)
        else:
            _items_into(f"{type(value).__name__}({{", value, "})", out, depth)
    elif t in _SHOWING:
        out.append(_SHOWING[t](value, depth))
    else:
        out.append(safe_repr(value))


def _items_into(opening: str, items: Any, closing: str, out: list, depth: int) -> None:
    out.append(opening)
    for i, item in enumerate(items):
        if i:
            out.append(", ")
        _repr_into(item, out, depth + 1)
    out.append(closing)


# The runtime objects whose repr shows what they hold (which may be input), as Jinja2's do.
_SHOWING: dict = {
    Namespace: lambda ns, depth: concat(["<Namespace ", repr_value(ns.attrs, depth + 1), ">"]),
    LoopContext: lambda loop, depth: concat(["<LoopContext ", repr_value(loop.index, depth + 1),
                                             "/", repr_value(loop.length, depth + 1), ">"]),
    InputRange: lambda numbers, depth: marks.mark(repr(numbers)),
}
