"""The parser's tokens, without Lark: what the one-pass parse hands the AST builder.

The one-pass parse (grammar/onepass.py) runs on tables of plain data shipped in the package, so a
template parses without importing Lark (about 30 ms at every start, and 20 ms more to load its
tables). Its tokens are `Token`s of this module, shaped as Lark's (`str` with the same position
attributes). The two-pass parse, which decides every error, still hands the builder Lark's own
tokens: grammar/_lark_import.py registers Lark's class as a virtual subclass of this one, so that
`isinstance(child, Token)` in the builder holds for both.
"""
from __future__ import annotations

from abc import ABCMeta
from typing import Optional


class Token(str, metaclass=ABCMeta):
    """A terminal the lexer read: its text, terminal name and positions (as Lark's `Token`)."""
    __slots__ = ("type", "start_pos", "value", "line", "column", "end_line", "end_column",
                 "end_pos")

    def __new__(cls, type: str, value: str, start_pos: Optional[int] = None,
                line: Optional[int] = None, column: Optional[int] = None,
                end_line: Optional[int] = None, end_column: Optional[int] = None,
                end_pos: Optional[int] = None) -> "Token":
        token = str.__new__(cls, value)
        token.type = type
        token.value = value
        token.start_pos = start_pos
        token.line = line
        token.column = column
        token.end_line = end_line
        token.end_column = end_column
        token.end_pos = end_pos
        return token

    def __repr__(self) -> str:
        return f"Token({self.type!r}, {self.value!r})"

    def __reduce__(self):
        return (Token, (self.type, self.value, self.start_pos, self.line, self.column,
                        self.end_line, self.end_column, self.end_pos))


class Spliced:
    """The children of an inlined `_rule`, on the one-pass parse's stack until its parent takes
    them (Lark makes a `Tree` there, of which only the children are read)."""
    __slots__ = ("children",)

    def __init__(self, children: list) -> None:
        self.children = children


__all__ = ["Token", "Spliced"]
