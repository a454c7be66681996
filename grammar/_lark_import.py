"""Imports Lark without the optional modules it imports at start and uses only on request.

When installed, `interegular` (terminal-collision checks of a grammar build: strict mode) and
`regex` (grammars that ask for it, `regex=True`) are imported by Lark's own modules as they load:
more than a quarter of `import jinjamark`, for nothing a template needs (`regex` comes with
transformers, so it is installed wherever chat templates are). Lark is imported with both kept
out, then each that is installed is handed back to Lark as a stand-in that imports it on first
use, so that strict builds here, and any other user of Lark in the process, still get it.
"""
from __future__ import annotations

import importlib
import sys
import types
from importlib.util import find_spec

# module name -> the Lark modules that hold it, and their flag saying it is there
OPTIONAL = {"interegular": (("lark.lexer", "interegular", "has_interegular"),),
            "regex": (("lark.utils", "regex", "_has_regex"), ("lark.lark", "regex", "_has_regex"))}


class OnFirstUse(types.ModuleType):
    """A module that is imported when one of its attributes is first read."""

    def __getattr__(self, attribute: str):
        return getattr(importlib.import_module(self.__name__), attribute)


def import_lark() -> None:
    if "lark" in sys.modules:
        _tokens_registered()
        return  # imported already (by the embedder): as it is
    kept_out = [name for name in OPTIONAL if name not in sys.modules]
    for name in kept_out:
        sys.modules[name] = None  # type: ignore[assignment]  # Lark's `import` fails at once
    try:
        import lark  # noqa: F401
        import lark.lexer  # noqa: F401
    finally:
        for name in kept_out:
            del sys.modules[name]
    for name in kept_out:
        try:
            installed = find_spec(name) is not None
        except (ImportError, ValueError):
            installed = False
        if installed:
            for module, attribute, flag in OPTIONAL[name]:
                setattr(sys.modules[module], attribute, OnFirstUse(name))
                setattr(sys.modules[module], flag, True)
    _tokens_registered()


def _tokens_registered() -> None:
    """Lark's tokens count as this package's (`isinstance(tok, grammar.tokens.Token)`): the
    builder takes both, from the one-pass parse and from Lark's tree (grammar/tokens.py)."""
    import lark.lexer

    from .tokens import Token
    if not issubclass(lark.lexer.Token, Token):
        Token.register(lark.lexer.Token)
