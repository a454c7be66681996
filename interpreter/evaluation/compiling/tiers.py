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
    state = [compile_body(body), 0]  # the code that runs the body, and its runs so far (-1: done)

    def run(ev: Any, scope: Any) -> Any:
        if state[1] >= 0:
            state[1] += 1
        if state[1] >= HOT:  # not `==`: HOT may be lowered after the body first ran (tests)
            state[1] = -1  # generated once, or kept as closures when Python cannot compile it
            from .codegen import fixed_parameters, free_names, generate  # here: a first call need not pay
            generated = generate(body, free_names(ev.memo) | fixed_parameters(ev.memo, body))
            if generated is not None:
                # The generated function replaces the closures, in the table and here (a parent's
                # closure may hold this function): they are not kept alive beside it.
                table[id(body)] = (generated, body)
                state[0] = generated
        return state[0](ev, scope)
    return run
