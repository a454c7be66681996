"""Printing: what template text and `{{ }}` write, in the one place that decides it.

A render prints plainly unless one of four things changes printing: autoescaping (what `{{ }}`
prints is escaped), the environment's `finalize` (every printed value goes through it first), a
template that has extended another (its own text and outputs are no longer printed: the parent
writes the page) and span tracking (a printed capture carries its generation spans). The
evaluator decides which holds when it starts and again when one of them changes (`reprint`:
an `{% autoescape %}` tag, an `{% extends %}`); `ev.fast` says that none does, and then the
compiled code of both tiers writes text and values itself, inline. Otherwise it calls
`print_text` and `print_output` here, which do what the policy asks in Jinja2's order: guard,
finalize, escape, write.
"""
from __future__ import annotations

from typing import Any

from ..grammar import ast
from ..values.markup import escape
from ..values.printing import to_string
from ..environment_tools import RenderContext, pass_arg_of
from ..values.hostcalls import host_result
from .contexts import Context

GUARDED = "guarded output"  # the memo's key: ids of what a child template does not print


def reprint(ev: Any) -> None:
    """Decide again whether `ev` prints plainly: after autoescaping is switched or the
    template has extended (finalize and tracking hold for the whole render)."""
    ev.fast = not (ev.autoescape or ev.guarding or ev.tracks or ev.env.finalize is not None)


def write(ev: Any, value: Any) -> None:
    """Print one value plainly: its text (values.printing.to_string, what `{{ }}` prints, for
    both tiers), metered, appended. The output append is the one piece the generated code
    writes inline instead of calling this."""
    text = to_string(value)
    if text:
        budget = ev.budget
        budget.output -= len(text)
        if budget.output < 0:
            budget.wrote(0)  # raises LimitExceeded
        ev.out.append(text)


def print_text(ev: Any, node: ast.Text, scope: Any) -> None:
    """Template text, where printing is not plain: only a template that has extended skips it."""
    if ev.guarding and id(node) in ev.memo[GUARDED]:
        return
    ev.budget.wrote(len(node.text))
    ev.out.append(node.text)


def print_output(ev: Any, node: ast.Output, scope: Any) -> None:
    """`{{ expr }}` where printing is not plain. `{{ a ~ b }}` prints as `{{ a }}{{ b }}` (each
    piece escaped, as Jinja2's join), except under `finalize`, which gets the joined value."""
    if ev.guarding and id(node) in ev.memo[GUARDED]:
        return
    expr = node.expr
    if ev.env.finalize is not None:
        return _finalized(ev, expr, scope)
    for item in expr.items if type(expr) is ast.Concat else (expr,):
        value = ev.eval(item, scope)
        try:
            ev.write(_escaped(value) if ev.autoescape else value)
        except Exception as e:
            ev.fail(e, expr)


def _finalized(ev: Any, expr: Any, scope: Any) -> None:
    """The whole value finalized once, then printed (escaped while autoescaping), as Jinja2."""
    value = ev.eval(expr, scope)
    try:
        if ev.autoescape and type(expr) is ast.Const:
            # Jinja2 escapes a constant when compiling, finalizes it and prints the result as is
            ev.write(finalized(ev, escape(value), scope))
            return
        value = finalized(ev, value, scope)
        ev.write(_escaped(value) if ev.autoescape else value)
    except Exception as e:
        ev.fail(e, expr)


def _escaped(value: Any) -> Any:
    """What autoescaping prints: the value as `{{ }}` prints it (host objects by kind, limits),
    escaped unless it is safe."""
    return escape(value if hasattr(value, "__html__") else to_string(value))


def finalized(ev: Any, value: Any, scope: Any) -> Any:
    """`value` through the environment's `finalize`, called as Jinja2 calls it (with the
    environment or the render context first when it asks for them); its result is taken as
    a host function's (input when the value was)."""
    fn = ev.env.finalize
    passed = pass_arg_of(fn)
    passed = getattr(passed, "name", passed)
    if passed == "environment":
        result = fn(ev.env, value)
    elif passed == "context":
        result = fn(Context(ev, scope), value)
    elif passed == "eval_context":
        result = fn(ev.eval_ctx or RenderContext(ev.env, ev.autoescape), value)
    else:
        result = fn(value)
    return host_result(fn, result, (value,), None)
