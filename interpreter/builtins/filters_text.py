"""Built-in filters on text: case, padding, trimming, replacing, indenting, wrapping, formatting.

Each keeps marks where characters map one to one (the marked string's own methods and the helpers
of `marks`) and makes the result input wherever it cannot tell (`marks.taint`).
"""
from __future__ import annotations

import re
from typing import Any, Optional

from .. import metering
from ..limits import check_printable, check_size, check_width
from ..values import marks
from ..environment_tools import pass_environment, pass_eval_context
from .filters_support import FilterArgumentError, text
from ..values.formatting import percent_format
from ..values.markup import Markup, escape, is_safe, markup_mod
from ..values.methods import STR_METHODS, str_replace
from ..values.numbers import derived
from ..values.printing import data_string


def _unsafe_text(value: Any) -> str:
    """str(value) as Jinja2 takes it where Markup does not matter: a Markup becomes plain."""
    value = text(value)
    return str.__str__(value) if isinstance(value, Markup) else value


def do_upper(s: Any) -> str:
    return text(s).upper()


def do_lower(s: Any) -> str:
    return text(s).lower()


do_upper.same_as, do_lower.same_as = "upper", "lower"  # on plain text, str's own method (codegen)


def do_capitalize(s: Any) -> str:
    return text(s).capitalize()


_WORD_START = re.compile(r"([-\s({\[<]+)")


def do_title(s: Any) -> str:
    """Each piece between runs of spaces, dashes and opening brackets: first letter upper, the
    rest lower (Jinja2's rule, not str.title, which also starts words after digits and quotes)."""
    s = text(s)
    pieces, pos = [], 0
    for item in _WORD_START.split(marks.plain(s)):
        if item:
            pieces.append(marks.sub(s, pos, pos + 1).upper())
            pieces.append(marks.sub(s, pos + 1, pos + len(item)).lower())
        pos += len(item)
    return marks.concat(pieces)


def do_center(value: Any, width: int = 80) -> str:
    return STR_METHODS["center"](text(value), width)


def do_trim(value: Any, chars: Optional[str] = None) -> str:
    return text(value).strip(chars)


do_trim.same_as = "strip"


@pass_eval_context
def do_replace(eval_ctx: Any, s: Any, old: Any, new: Any, count: Optional[int] = None) -> str:
    if not eval_ctx.autoescape:
        return str_replace(_unsafe_text(s), _unsafe_text(old), _unsafe_text(new),
                           -1 if count is None else count)
    # Jinja2's test, precedence included: safe text brought in makes the receiver escaped
    if hasattr(old, "__html__") or hasattr(new, "__html__") and not hasattr(s, "__html__"):
        s = escape(s)
    else:
        s = text(s)
    return str_replace(s, text(old), text(new), -1 if count is None else count)


def _replace_in_text(s: str, old: Any, new: Any, count: Optional[int] = None) -> str:
    """do_replace of text (str or marked, never safe) by plain arguments, autoescaping or not."""
    if count is None and type(old) is str and type(new) is str:
        return marks.replace(s, old, new)  # what str_replace comes to for such arguments
    return str_replace(s, text(old), text(new), -1 if count is None else count)


# What compiled code calls for text and literal arguments (codegen's light calls): the filter
# without the eval context it only asks for escaping.
do_replace.text_form = _replace_in_text


def do_format(value: Any, *args: Any, **kwargs: Any) -> str:
    if args and kwargs:
        raise FilterArgumentError("can't handle positional and keyword arguments at the same time")
    fmt = text(value)
    if is_safe(fmt):  # Markup, or safe marked text: the arguments are escaped
        return markup_mod(fmt, kwargs or args)
    return percent_format(fmt, kwargs or args)


def do_indent(s: Any, width: Any = 4, first: bool = False, blank: bool = False) -> Any:
    check_width(width)
    indention = width if isinstance(width, str) else " " * width
    check_size(len(s) + (str(s).count("\n") + 2) * len(indention) if isinstance(s, str) else 0)
    newline = "\n"
    is_markup = isinstance(s, Markup)
    # Jinja2 appends a newline before splitting (so a trailing newline keeps its line); `+`
    # also fails for what is not a string, the way Jinja2's does.
    s += newline
    lines = s.splitlines()
    if blank:
        result = marks.join(newline + indention, lines)
    else:
        rest = [marks.concat((indention, line)) if line else line for line in lines[1:]]
        result = marks.concat((lines[0], newline, marks.join(newline, rest))) if rest else lines[0]
    if first:
        result = marks.concat((indention, result))
    return Markup(result) if is_markup else result


@pass_environment
def do_truncate(env: Any, s: Any, length: int = 255, killwords: bool = False, end: str = "...",
                leeway: Optional[int] = None) -> Any:
    check_width(length)
    if leeway is None:
        leeway = env.policies.get("truncate.leeway", 5)
    if length < len(end):
        raise FilterArgumentError(f"expected length >= {len(end)}, got {length}")
    if leeway < 0:
        raise FilterArgumentError(f"expected leeway >= 0, got {leeway}")
    if len(s) <= length + leeway:
        return s
    if killwords:
        return s[: length - len(end)] + end
    return s[: length - len(end)].rsplit(" ", 1)[0] + end


_WORD = re.compile(r"\w+")


def do_wordcount(s: Any) -> int:
    return derived(len(_WORD.findall(text(s))), text(s))


@pass_environment
def do_wordwrap(env: Any, s: Any, width: int = 79, break_long_words: bool = True,
                wrapstring: Optional[str] = None, break_on_hyphens: bool = True) -> str:
    """Each line of `s` wrapped on its own; every wrapped line is a run of its line's characters."""
    check_width(width)
    if wrapstring is None:
        wrapstring = getattr(env, "newline_sequence", "\n")
    paragraphs = []
    import textwrap  # here: its class compiles regexes on import (5 ms at every start)
    for line in s.splitlines():
        wrapped = textwrap.wrap(marks.plain(line), width=width, expand_tabs=False,
                                replace_whitespace=False, break_long_words=break_long_words,
                                break_on_hyphens=break_on_hyphens)
        paragraphs.append(marks.join(wrapstring, _runs_of(line, wrapped)))
    return marks.join(wrapstring, paragraphs)


def _runs_of(line: str, wrapped: list[str]) -> list[str]:
    """The wrapped pieces as runs of `line` (with its marks), found in order."""
    pieces, pos, plain = [], 0, marks.plain(line)
    for piece in wrapped:
        i = plain.find(piece, pos)
        if i < 0:
            return [marks.taint(w, line) for w in wrapped]
        pieces.append(marks.sub(line, i, i + len(piece)))
        pos = i + len(piece)
    return pieces


@pass_environment
def do_string(env: Any, value: Any) -> str:
    kind = type(value)
    if kind is dict or kind is list or kind is tuple:  # data: its print's setup charged with its walk
        return data_string(value)
    if not isinstance(value, str):  # printing a container or an object takes microseconds
        metering.charge(metering.PRINT_BASE)
    return env.to_string(value)


def _text_itself(value: str) -> str:
    return value


do_string.text_form = _text_itself  # text prints as itself, marks kept
do_string.container_form = data_string  # a dict, list or tuple: its print, one charge


def do_filesizeformat(value: Any, binary: bool = False) -> str:
    size = float(value)
    base = 1024 if binary else 1000
    prefixes = ("KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB") if binary else \
        ("kB", "MB", "GB", "TB", "PB", "EB", "ZB", "YB")
    if size == 1:
        result = "1 Byte"
    elif size < base:
        result = f"{int(size)} Bytes"
    else:
        # the largest prefix whose unit is below the size; the last one for anything larger
        exponent = 2
        while exponent <= len(prefixes) and not size < base ** exponent:
            exponent += 1
        result = f"{base * size / base ** exponent:.1f} {prefixes[exponent - 2]}"
    return marks.taint(result, value)


def do_pprint(value: Any) -> str:
    check_printable(value)
    # pprint wraps long str (not str subclasses): format the plain data, so that the text is
    # render()'s, then mark all of it when any of it was input (no character map)
    import pprint  # here, as textwrap: a filter templates rarely use
    return marks.taint(pprint.pformat(marks.unmarked(value)), value)
