"""Errors for people: every error carries the template name, line, column and a caret.

The base classes live here, in the grammar package, because syntax errors are raised here and
the grammar package never imports the interpreter. `jinjamark` re-exports them and adds the
run-time errors.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    from .delimiters import Delimiters


class TemplateError(Exception):
    """Base class of every error a template or its data can cause."""

    def __init__(self, message: str = "", *, name: Optional[str] = None,
                 lineno: Optional[int] = None, column: Optional[int] = None,
                 source: Optional[str] = None) -> None:
        super().__init__(message)
        self.message = message
        self.name = name
        self.lineno = lineno
        self.column = column
        self.source = source

    def locate(self, lineno: int, column: int, name: Optional[str], source: Optional[str]) -> None:
        """Give the error a position unless an inner node already did."""
        if self.lineno is None:
            self.lineno, self.column = lineno, column
        if self.name is None:
            self.name = name
        if self.source is None:
            self.source = source

    def __str__(self) -> str:
        if self.lineno is None:
            return self.message
        where = f'  File "{self.name or "<template>"}", line {self.lineno}, column {self.column}'
        text = [self.message, where]
        line = source_line(self.source, self.lineno)
        if line is not None:
            shown = line.expandtabs(1)
            text.append("    " + shown)
            text.append("    " + " " * max(0, min(self.column - 1, len(shown))) + "^")
        return "\n".join(text)


class TemplateSyntaxError(TemplateError):
    """The source is not a valid template."""


class TemplateAssertionError(TemplateSyntaxError):
    """The template is well formed but refers to something that cannot exist (a filter, a test)."""


class TemplateRuntimeError(TemplateError):
    """Something went wrong while rendering: a type error, a failing filter, a host exception."""


class LimitExceeded(TemplateRuntimeError):
    """The render went past one of the environment's limits (see jinjamark.Limits)."""


class TemplateTooLarge(LimitExceeded, TemplateSyntaxError):
    """The source is longer, or nests deeper, than the limits allow: refused while parsing."""


def source_line(source: Optional[str], lineno: int) -> Optional[str]:
    if source is None or lineno < 1:
        return None
    lines = source.splitlines()
    return lines[lineno - 1] if lineno <= len(lines) else None


def position(source: str, offset: int) -> tuple[int, int]:
    """1-based (line, column) of a character offset."""
    line = source.count("\n", 0, offset) + 1
    column = offset - (source.rfind("\n", 0, offset) + 1) + 1
    return line, column


# ---------------------------------------------------------------------------- from Lark

_OPENERS = {"{%": "block", "{{": "variable", "{#": "comment"}


def from_lark(exc, text: str, tags: dict, name: Optional[str], source: str,
              delimiters: Optional["Delimiters"] = None) -> TemplateSyntaxError:
    """Turn a Lark parse error into the message Jinja2 would give, with a position.
    `delimiters`: custom delimiters, or None for Jinja2's defaults."""
    from lark.exceptions import UnexpectedToken

    expected = set(getattr(exc, "expected", ()) or getattr(exc, "allowed", ()) or ())
    history = getattr(exc, "token_history", None) or ()
    last = history[-1] if history else None
    if (delimiters is None and last is not None and last.type == "RBRACE"
            and not text.startswith("}", last.end_pos)):
        # `{{ x }` then something else: the lone brace is the mistake, not what follows it
        line, column = position(text, last.start_pos)
        return TemplateSyntaxError("unexpected '}'", name=name, lineno=line, column=column, source=source)
    if isinstance(exc, UnexpectedToken):
        tok = exc.token
        offset = tok.start_pos if tok.start_pos is not None else len(text)
        if tok.type == "$END":
            offset = len(text)
            message = "Unexpected end of template." + _looking_for(text, offset, tags, None, delimiters)
        elif tok.type in tags:
            message = (f"Encountered unknown tag '{tags[tok.type]}'."
                       + _looking_for(text, offset, tags, tags[tok.type], delimiters))
        elif _opener_at(text, offset, delimiters)[0]:
            message = _unexpected_text(text, offset, expected, tags, delimiters)
        else:
            message = f"unexpected {_describe(tok, delimiters)}"
    else:
        offset = exc.pos_in_stream
        message = _unexpected_text(text, offset, expected, tags, delimiters)
    line, column = position(text, offset)
    return TemplateSyntaxError(message, name=name, lineno=line, column=column, source=source)


def _opener_at(text: str, offset: int, delimiters: Optional["Delimiters"]) -> tuple[str, int]:
    """('comment', 'block', 'line' or '', where the opener ends) for the text at `offset`."""
    if delimiters is None:
        return {"{#": "comment", "{%": "block"}.get(text[offset:offset + 2], ""), offset + 2
    name, end = delimiters.opener_at(text, offset)
    return {"comment_begin": "comment", "block_begin": "block",
            "linestatement_begin": "line"}.get(name, ""), end


def _unexpected_text(text: str, offset: int, expected: set, tags: dict,
                     delimiters: Optional["Delimiters"] = None) -> str:
    kind, after = _opener_at(text, offset, delimiters)
    if kind == "comment":
        return "Missing end of comment tag"
    if kind:
        rest = text[after:].lstrip("-+").lstrip()
        word = ""
        for ch in rest:
            if not (ch.isalnum() or ch == "_"):
                break
            word += ch
        if word == "raw" and kind == "block":  # a raw block is never a line statement
            return "Missing end of raw directive"
        if not word:
            return "tag name expected"
        return f"Encountered unknown tag '{word}'." + _looking_for(text, offset, tags, word, delimiters)
    if offset >= len(text):
        return "Unexpected end of template." + _looking_for(text, offset, tags, None, delimiters)
    return f"unexpected char {text[offset]!r} at {offset}"


# The order in which Jinja2 lists the tags that may continue or close each block.
_CLOSERS = {"if": ("elif", "else", "endif"), "for": ("endfor", "else")}
_TAG = re.compile(r"\{%[-+]?\s*(\w+)(.*?)[-+]?%\}|\{#.*?#\}|\{%[-+]?\s*raw\s*[-+]?%\}.*?endraw\s*[-+]?%\}", re.S)


def _tags_before(text: str, offset: int, delimiters: Optional["Delimiters"]):
    """(name, rest) of each tag before `offset`."""
    if delimiters is not None:
        yield from delimiters.tags_before(text, offset)
        return
    for m in _TAG.finditer(text, 0, offset):
        if m.group(1) is not None:
            yield m.group(1), m.group(2) or ""


def _open_blocks(text: str, offset: int, tags: dict,
                 delimiters: Optional["Delimiters"] = None) -> list[tuple[str, tuple[str, ...]]]:
    """The blocks still open at `offset`, innermost last, each with the tags that may continue
    or close it (after its `else`, only its end tag), by scanning the tags before `offset`."""
    names = set(tags.values())
    stack: list[tuple[str, tuple[str, ...]]] = []
    for word, rest in _tags_before(text, offset, delimiters):
        if word.startswith("end") and stack and stack[-1][0] == word[3:]:
            stack.pop()
        elif word == "else" and stack and stack[-1][0] in _CLOSERS:
            stack[-1] = (stack[-1][0], ("end" + stack[-1][0],))
        elif "end" + word in names and not (word == "set" and "=" in rest):
            stack.append((word, _CLOSERS.get(word, ("end" + word,))))
    return stack


def _looking_for(text: str, offset: int, tags: dict, tag: Optional[str] = None,
                 delimiters: Optional["Delimiters"] = None) -> str:
    """Jinja2's hint: what the innermost block needs, and whether `tag` closes an outer block."""
    stack = _open_blocks(text, offset, tags, delimiters)
    if not stack:
        return ""
    block, closers = stack[-1]
    listed = " or ".join(f"'{n}'" for n in closers)
    if tag is not None and any(tag in expected for _, expected in stack):
        hint = ("You probably made a nesting mistake. Jinja is expecting this tag, but currently "
                f"looking for {listed}.")
    else:
        hint = f"Jinja was looking for the following tags: {listed}."
    return f" {hint} The innermost block that needs to be closed is '{block}'."


def _describe(tok, delimiters: Optional["Delimiters"] = None) -> str:
    value = str(tok)
    if delimiters is not None:  # closers are told by their token type
        if tok.type in ("_BC", "_LINE_END"):
            return "'end of statement block'"
        if tok.type == "VAR_CLOSE":
            return "'end of print statement'"
        return repr(value.split()[0] if value.split() else value)
    if value.endswith("%}"):
        return "'end of statement block'"
    if value in ("}", "-}}"):
        return "'end of print statement'"
    return repr(value.split()[0] if value.split() else value)
