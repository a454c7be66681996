"""The scope chain, with Jinja2's rules.

`if` makes no scope; every loop iteration, macro call, `with`, call block and filter block
makes a child scope. Assignments go to the innermost scope, so nothing set inside a loop is
seen after it: `namespace()` is the way out. Macros see the scope they were defined in.
"""
from __future__ import annotations

from typing import Any, Optional

from .undefined import MISSING


class Scope:
    __slots__ = ("vars", "parent")

    def __init__(self, parent: Optional["Scope"] = None, variables: Optional[dict] = None) -> None:
        self.parent = parent
        self.vars: dict[str, Any] = {} if variables is None else variables

    def lookup(self, name: str) -> Any:
        scope: Optional[Scope] = self
        while scope is not None:
            value = scope.vars.get(name, MISSING)
            if value is not MISSING:
                return value
            scope = scope.parent
        return MISSING

    def set(self, name: str, value: Any) -> None:
        self.vars[name] = value

    def child(self) -> "Scope":
        return Scope(self)
