"""Source positions of what Lark hands the AST builder, as `ast.Span`s, without importing Lark:
the interpreter's extension API (`jinjamark.ext.span`) uses these, and `import jinjamark` must
not pay for Lark (grammar/parser.py imports it when the first parser is made)."""
from __future__ import annotations

from typing import Any

from . import ast
from .spans import span


def token_span(tok: Any) -> ast.Span:
    """The span of a Lark `Token` (a `str` with positions)."""
    return span(tok.line, tok.column, tok.start_pos, tok.end_pos)


def meta_span(meta: Any) -> ast.Span:
    """The span of a rule's `meta`; NO_SPAN for a rule that matched nothing."""
    if getattr(meta, "empty", True):
        return ast.NO_SPAN
    return span(meta.line, meta.column, meta.start_pos, meta.end_pos)


__all__ = ["token_span", "meta_span"]
