"""Questions about a parsed template, as `jinja2.meta` answers them: which variables it reads
from its context, and which other templates it refers to.

Both take what `Environment.parse` returns. Jinja2's parse tree knows its environment (whose
globals are never undeclared variables); ours does not, so `find_undeclared_variables` takes it
as an optional second argument and otherwise leaves out the default globals.
"""
from __future__ import annotations

from typing import Any, Iterator, Optional

from .chat.variables import undeclared_variables
from .builtins.globals import GLOBALS
from .grammar import ast

__all__ = ["find_undeclared_variables", "find_referenced_templates"]


def find_undeclared_variables(tree: ast.Template, environment: Any = None) -> set[str]:
    """The names the template reads from its context (not set by it first, not globals)."""
    names = GLOBALS if environment is None else environment.globals
    return set(undeclared_variables(tree, names))


def find_referenced_templates(tree: ast.Template) -> Iterator[Optional[str]]:
    """The names of the templates that `extends`, `include`, `import` and `from` name, in
    the order they appear; None for each one computed when rendering."""
    for node in ast.walk(tree):
        if isinstance(node, _REFERRING):
            yield from _names(node)


_REFERRING = (ast.Extends, ast.Include, ast.Import, ast.FromImport)


def _names(node: Any) -> Iterator[Optional[str]]:
    template = node.template
    if type(template) in (ast.ListLiteral, ast.TupleLiteral):
        for item in template.items:  # the literal strings; None for a computed name
            if type(item) is not ast.Const:
                yield None
            elif isinstance(item.value, str):
                yield item.value
    elif type(template) is not ast.Const:
        yield None
    elif isinstance(template.value, str):
        yield template.value
    elif type(node) is ast.Include and isinstance(template.value, (tuple, list)):
        yield from (name for name in template.value if isinstance(name, str))
    else:
        yield None
