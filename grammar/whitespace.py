"""Whitespace control, applied to a text run by looking at the delimiters around it.

Jinja2 strips whitespace in its lexer; we parse first and then trim each text run by its
position in the source, which keeps every token's offset true. The rules, as Jinja2 has them:

- a `-` on the delimiter before the text strips all leading whitespace; on the one after, all
  trailing whitespace;
- `trim_blocks` removes one newline after a block tag or comment (not after `{{ }}`, not after
  `{% raw %}`, and not when the tag ends with `+%}`);
- `lstrip_blocks` removes spaces and tabs between the start of a line and a block tag or comment
  (not before `{{`, not when the tag starts with `{%+`).

With the default delimiters the delimiters are read from the source around the text (`trim`).
With custom ones the tag stream tells each text token what is around it (grammar/tagstream.py),
and `trim_between` applies the same rules; a line statement's end, which has eaten its line
break, and a line comment, which keeps it, leave the text after them alone.
"""
from __future__ import annotations

import re

from . import records

records.MODULES.add(__name__)  # Options is a record (grammar/records.py): cheaper to define

NEWLINES = re.compile(r"\r\n|\r")
_ONLY_SPACE = re.compile(r"\s+")

# The kinds of delimiter around a text, named after the default delimiters' characters.
BLOCK, COMMENT, VARIABLE_OPEN, VARIABLE_CLOSE = "%", "#", "{", "}"
RAW_OPENED = "raw"  # the end of `{% raw %}`: `-` strips, trim_blocks does not apply
NOTHING = ""        # the template's edges, a line statement's end, a line comment


class Options(records.Record):
    trim_blocks: bool = False
    lstrip_blocks: bool = False
    keep_trailing_newline: bool = False
    newline_sequence: str = "\n"  # what every line break in template text and string literals becomes


def normalize_newlines(text: str) -> str:
    return NEWLINES.sub("\n", text) if "\r" in text else text


def _closer_before(source: str, start: int) -> tuple[str, str]:
    """(kind, sign) of the delimiter that ends at `start`: kind is '%', '#' or '}'."""
    if start < 2 or source[start - 1] != "}":
        return "", ""
    kind = source[start - 2]
    sign = source[start - 3] if start >= 3 and source[start - 3] in "-+" else ""
    if sign and kind == "#" and source.startswith("{#", start - 5):
        sign = ""  # `{#-#}`: the sign is the opener's
    return kind, sign


def _opener_after(source: str, end: int) -> tuple[str, str]:
    """(kind, sign) of the delimiter that starts at `end`: kind is '%', '#' or '{'."""
    if end + 1 >= len(source) or source[end] != "{":
        return "", ""
    kind = source[end + 1]
    sign = source[end + 2] if end + 2 < len(source) and source[end + 2] in "-+" else ""
    return kind, sign


def trim(source: str, start: int, end: int, options: Options, after_raw_open: bool = False) -> str:
    """The text of `source[start:end]` after whitespace control (default delimiters)."""
    kind, sign = _closer_before(source, start)
    closer = (RAW_OPENED if after_raw_open else kind, sign)
    return trim_between(source, start, end, options, closer, _opener_after(source, end))


def trim_between(source: str, start: int, end: int, options: Options,
                 closer: tuple[str, str], opener: tuple[str, str]) -> str:
    """The text of `source[start:end]` after whitespace control, between the delimiters
    `closer` and `opener`, each a (kind, sign) pair."""
    text = normalize_newlines(source[start:end])
    consumed = ""
    kind, sign = closer
    if sign == "-":
        stripped = text.lstrip()
        consumed, text = text[: len(text) - len(stripped)], stripped
    elif (kind in (BLOCK, COMMENT) and sign != "+" and options.trim_blocks
          and text.startswith("\n")):
        consumed, text = "\n", text[1:]
    # As Jinja2's lexer: does the text start a line (the delimiter before it ended one)?
    line_starting = start == 0 or consumed.endswith("\n") or source[start - 1] in "\n\r"

    kind, sign = opener
    if sign == "-":
        return text.rstrip()
    if kind in (BLOCK, COMMENT) and sign != "+" and options.lstrip_blocks:
        line_start = text.rfind("\n") + 1
        if (line_start > 0 or line_starting) and _ONLY_SPACE.fullmatch(text, line_start):
            return text[:line_start]
    return text
