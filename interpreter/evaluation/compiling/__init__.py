"""Compiling: each AST node becomes a Python closure once per template (core.py), expressions
(access.py, calls.py, operators.py) and statements (statements.py) by their own compilers."""
from __future__ import annotations

from typing import Any

from . import access, calls, operators, statements  # noqa: F401 - they register their compilers
from .core import COMPILERS, TRACER, Code, compile_body, compile_node
from .tiers import tiered

CODE = "compiled code"  # the template memo's key: id(node or body) -> (closure, node or body)
TRACED_CODE = "traced code"  # the same for traced renders (each statement reports itself)


def code_table(memo: dict) -> dict:
    """The closures of a template's nodes for the render starting now: traced or not."""
    key = CODE if TRACER.get() is None else TRACED_CODE
    table = memo.get(key)
    return memo.setdefault(key, {}) if table is None else table


def code_of(code: dict, node: Any) -> Code:
    """The closure of a node (or of a body, a tuple of statements), compiled when first asked.
    The entry holds the node too, so that its id is not reused while the entry lives."""
    entry = code.get(id(node))
    if entry is None:
        if type(node) is not tuple:
            compiled = compile_node(node)
        elif TRACER.get() is None:  # closures first, generated code once the body runs often
            compiled = tiered(code, node)
        else:
            compiled = compile_body(node)
        entry = code[id(node)] = (compiled, node)
    return entry[0]


__all__ = ["CODE", "COMPILERS", "TRACED_CODE", "TRACER", "Code", "code_of", "code_table", "compile_body",
           "compile_node"]
