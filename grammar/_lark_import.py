"""Imports Lark, which only the two-pass parse (reporting a syntax error) and grammars whose
tables are not shipped (extensions, other delimiters) need: the default path never imports it.

Lark's tokens are registered as this package's (`grammar/tokens.py`), so that the rule builders
take both the one-pass parse's tokens and those in Lark's trees.
"""
from __future__ import annotations


def import_lark() -> None:
    import lark.lexer

    from .tokens import Token
    if not issubclass(lark.lexer.Token, Token):
        Token.register(lark.lexer.Token)
