"""Jinja2's delimiter options: the strings that open and close tags, and the line-based syntax.

`Delimiters` holds the eight options under Jinja2's names and refuses settings that cannot work.
The rest of this module turns them into the regular expressions the generated grammar
(grammar/generate.py), the tag stream (grammar/tagstream.py), whitespace control and error
messages share. Where two openers can match at one position, Jinja2's lexer takes the first of
its alternatives, longest delimiter first (ties: variable, line statement, line comment, comment,
block); every opener regex here carries lookaheads that refuse the position to the ones before it.
"""
from __future__ import annotations

import re
from dataclasses import fields
from functools import cached_property
from typing import Iterator, Optional

from . import records

# Jinja2's names for the openers: ties of length are broken by these, in reverse order.
VARIABLE, LINE_STATEMENT, LINE_COMMENT, COMMENT, BLOCK = (
    "variable_begin", "linestatement_begin", "linecomment_begin", "comment_begin", "block_begin")
LINE_START = r"(?<![^\n\r])"  # start of the text or after a line break (Jinja2 reads \r as one)
_REGEX_SPECIAL = set("\\.^$*+?{}[]|()/")


records.MODULES.add(__name__)  # Delimiters is a record (grammar/records.py): cheaper to define


class Delimiters(records.Record):
    """Jinja2's delimiter options, with its defaults. Invalid settings raise ValueError/TypeError."""
    block_start_string: str = "{%"
    block_end_string: str = "%}"
    variable_start_string: str = "{{"
    variable_end_string: str = "}}"
    comment_start_string: str = "{#"
    comment_end_string: str = "#}"
    line_statement_prefix: Optional[str] = None
    line_comment_prefix: Optional[str] = None

    def __post_init__(self) -> None:
        for f in fields(self):
            _check_string(f.name, getattr(self, f.name), optional=f.name.startswith("line_"))
        starts = {"block_start_string": self.block_start_string,
                  "variable_start_string": self.variable_start_string,
                  "comment_start_string": self.comment_start_string}
        if len(set(starts.values())) < 3:
            raise ValueError("block_start_string, variable_start_string and comment_start_string "
                             f"must be different: {starts}")
        end, var = self.block_end_string, self.variable_end_string
        if end != var and (end.startswith(var) or var.startswith(end)):
            # Inside a tag the lexer cannot tell a block from a print statement (they share
            # parser states), so it could not tell which of the two ends the tag.
            raise ValueError("block_end_string and variable_end_string must be equal or neither "
                             f"may start with the other: {end!r}, {var!r}")

    @property
    def is_default(self) -> bool:
        return self == DEFAULT

    # ------------------------------------------------------------------ opener regexes
    @cached_property
    def openers(self) -> dict[str, str]:
        """Jinja2's opener name -> regex of what it matches at a position, in Jinja2's order."""
        found = [(len(self.block_start_string), BLOCK, escape(self.block_start_string)),
                 (len(self.variable_start_string), VARIABLE, escape(self.variable_start_string)),
                 (len(self.comment_start_string), COMMENT, escape(self.comment_start_string))]
        if self.line_statement_prefix is not None:
            found.append((len(self.line_statement_prefix), LINE_STATEMENT,
                          LINE_START + r"[ \t\v]*" + escape(self.line_statement_prefix)))
        if self.line_comment_prefix is not None:
            found.append((len(self.line_comment_prefix), LINE_COMMENT,
                          rf"(?:{LINE_START}|(?<=\S))[^\S\n\r]*" + escape(self.line_comment_prefix)))
        return {name: regex for _, name, regex in sorted(found, reverse=True)}

    def guarded(self, name: str) -> str:
        """The opener's regex, refused where an opener Jinja2 tries first matches."""
        before = []
        for other, regex in self.openers.items():
            if other == name:
                break
            before.append(regex)
        guard = f"(?!{'|'.join(before)})" if before else ""
        return guard + self.openers[name]

    @cached_property
    def first_chars(self) -> set[str]:
        """Characters where an opener's match can begin (line starts aside)."""
        strings = [self.block_start_string, self.variable_start_string, self.comment_start_string,
                   self.line_statement_prefix, self.line_comment_prefix]
        return {s[0] for s in strings if s}

    def text_regex(self) -> str:
        """Template text: everything up to the first position where any opener matches.

        Written in chunks so that the lookahead runs only where an opener can begin: at a
        character that starts one, after a line break (line statements), at whitespace (line
        comments swallow the spaces before them)."""
        stop = "".join(class_escape(c) for c in sorted(self.first_chars | {"\n", "\r"}))
        if self.line_comment_prefix is not None:
            stop += r"\s"
        anywhere = "|".join(self.openers.values())
        return rf"(?:(?!{anywhere})(?:[\n\r]|[^\n\r][^{stop}]*))+"

    # ------------------------------------------------------------------ compiled, for Python
    @cached_property
    def raw_parts(self) -> re.Pattern:
        """A raw block: groups (opener sign, its closer's sign, body, endraw sign, closer sign)."""
        bs, be = escape(self.block_start_string), escape(self.block_end_string)
        return re.compile(rf"{bs}([-+]?)\s*raw\s*(-?){be}(.*?){bs}([-+]?)\s*endraw\s*([-+]?){be}", re.S)

    @cached_property
    def line_opener(self) -> re.Pattern:
        """The start of a line statement's opener token: group 1 is its sign."""
        return re.compile(r"[ \t\v]*" + escape(self.line_statement_prefix or "\0") + "([-+]?)")

    @cached_property
    def line_comment_opener(self) -> re.Pattern:
        return re.compile(r"[^\S\n\r]*" + escape(self.line_comment_prefix or "\0") + "([-+]?)")

    # ------------------------------------------------------------------ for error messages
    @cached_property
    def _compiled_openers(self) -> list[tuple[str, re.Pattern]]:
        return [(name, re.compile(self.guarded(name))) for name in self.openers]

    def opener_at(self, text: str, offset: int) -> tuple[str, int]:
        """(Jinja2's name of the opener at `offset`, where it ends), or ("", offset)."""
        for name, regex in self._compiled_openers:
            m = regex.match(text, offset)
            if m:
                return name, m.end()
        return "", offset

    @cached_property
    def _tag_scanner(self) -> re.Pattern:
        bs, be = escape(self.block_start_string), escape(self.block_end_string)
        cs, ce = escape(self.comment_start_string), escape(self.comment_end_string)
        parts = [rf"{bs}[-+]?\s*raw\s*[-+]?{be}.*?{bs}[-+]?\s*endraw\s*[-+]?{be}",
                 rf"{bs}[-+]?\s*(\w+)(.*?)[-+]?{be}", rf"{cs}.*?{ce}"]
        if self.line_statement_prefix is not None:
            parts.append(self.guarded(LINE_STATEMENT) + r"[-+]?[^\S\n\r]*(\w+)([^\n\r]*)")
        return re.compile("|".join(parts), re.S)

    def tags_before(self, text: str, offset: int) -> Iterator[tuple[str, str]]:
        """(name, rest) of each block tag and line statement before `offset`, in order."""
        for m in self._tag_scanner.finditer(text, 0, offset):
            if m.group(1) is not None:
                yield m.group(1), m.group(2)
            elif m.lastindex and m.lastindex >= 3:
                yield m.group(3), m.group(4)



def _check_string(name: str, value: object, optional: bool) -> None:
    if value is None and optional:
        return
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string{' or None' if optional else ''}, "
                        f"not {type(value).__name__}")
    if not value:
        raise ValueError(f"{name} must not be empty")
    if "\r" in value:  # Jinja2 turns every line break into \n before it looks for delimiters
        raise ValueError(f"{name} must not contain '\\r': it could never match")
    if optional and "\n" in value:
        raise ValueError(f"{name} must not contain a line break")


def escape(text: str) -> str:
    """A regex matching `text`, valid both in Python's `re` and inside a Lark /regex/.

    A line break matches any line break, as Jinja2 reads the source with its line breaks made \\n."""
    out = []
    for ch in text:
        if ch == "\n":
            out.append(r"(?:\r\n|\r|\n)")
        elif ch in _REGEX_SPECIAL:
            out.append("\\" + ch)
        elif ch.isspace() or not ch.isprintable():
            out.append(_code(ch))
        else:
            out.append(ch)
    return "".join(out)


def class_escape(ch: str) -> str:
    """A character inside a regex character class."""
    if ch in "\\]^-[/":  # `/` would end a Lark /regex/
        return "\\" + ch
    if ch.isspace() or not ch.isprintable():
        return _code(ch)
    return ch


def _code(ch: str) -> str:
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def only_brackets(text: str) -> bool:
    """Whether a closer is made of closing brackets only: then it is lexed as brackets, and the
    parser (not the lexer) tells a closer from a bracket that closes a literal, as Jinja2's
    bracket-balancing lexer does."""
    return all(ch in ")]}" for ch in text)


DEFAULT = Delimiters()

__all__ = ["Delimiters", "DEFAULT", "escape", "only_brackets"]
