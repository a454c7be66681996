"""Errors for people: every error carries the template name, line, column and a caret.

The base classes live here, in the grammar package, because syntax errors are raised here and
the grammar package never imports the interpreter. `jinjamark` re-exports them and adds the
run-time errors. grammar/lark_errors.py turns Lark's parse errors into these, in Jinja2's words.
"""
from __future__ import annotations

from typing import Optional


class TemplateError(ValueError):
    """Base class of every error a template or its data can cause.

    A `ValueError` too: servers answer "bad request" on the exceptions they already catch
    (vLLM names ValueError, TypeError, RuntimeError and jinja2's TemplateError), and a template
    that fails on its data is exactly that. Code inside jinjamark that catches ValueError from
    Python lets a TemplateError through (see filters.do_int)."""

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
        shown_name = getattr(self, "filename", None) or self.name or "<template>"
        where = f'  File "{shown_name}", line {self.lineno}'
        if self.column is not None:
            where += f", column {self.column}"
        text = [self.message, where]
        line = source_line(self.source, self.lineno)
        if line is not None and self.column is not None:
            shown = line.expandtabs(1)
            text.append("    " + shown)
            text.append("    " + " " * max(0, min(self.column - 1, len(shown))) + "^")
        return "\n".join(text)


class TemplateSyntaxError(TemplateError):
    """The source is not a valid template. Takes Jinja2's positional arguments too:
    `TemplateSyntaxError(message, lineno, name, filename)`."""

    def __init__(self, message: str = "", lineno: Optional[int] = None,
                 name: Optional[str] = None, filename: Optional[str] = None, *,
                 column: Optional[int] = None, source: Optional[str] = None) -> None:
        super().__init__(message, name=name, lineno=lineno, column=column, source=source)
        self.filename = filename


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
