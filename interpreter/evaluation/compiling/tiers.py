"""The two tiers: a body (a template's, a macro's, a block's) runs as closures until its `HOT`-th
run, from which on it runs as the one Python function codegen/ writes for it. codegen/ is
imported only then: a template rendered once never loads it."""
from __future__ import annotations

from typing import Any

from .core import Code, compile_body

HOT = 2  # the run of a body from which it is generated (tests set 1: every body from its first)


def tiered(table: dict, body: tuple) -> Code:
    """The closure of `body` that, on its `HOT`-th run, replaces itself in `table` (the
    template's code table) by the generated function."""
    closure = compile_body(body)
    runs = [0]

    def run(ev: Any, scope: Any) -> Any:
        runs[0] += 1
        if runs[0] == HOT:
            from .codegen import generate  # here, not at import: a few ms a first call need not pay
            generated = generate(body)
            if generated is not None:
                table[id(body)] = (generated, body)
                return generated(ev, scope)
        return closure(ev, scope)
    return run
