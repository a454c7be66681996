"""Decorators for filters, tests and globals that need more than their arguments.

A callable marked with one of these is called with the named object first:
`f(environment, value, *args)`. The evaluator reads `f.jinja_pass_arg`, as Jinja2 reads its own
`jinja_pass_arg`; a callable without the attribute gets only its arguments.
"""
from __future__ import annotations

from typing import Any, Callable, TypeVar

F = TypeVar("F", bound=Callable)


def _passing(what: str) -> Callable[[F], F]:
    def decorate(f: F) -> F:
        f.jinja_pass_arg = what  # type: ignore[attr-defined]
        return f
    return decorate


pass_environment = _passing("environment")
pass_context = _passing("context")
pass_eval_context = _passing("eval_context")


def pass_arg_of(f: Callable) -> str | None:
    """What `f` wants passed first: 'environment', 'context', 'eval_context' or None."""
    return getattr(f, "jinja_pass_arg", None)


class RenderContext:
    """What `pass_context` / `pass_eval_context` callables receive: the environment, and
    whether output is being autoescaped where they are called."""

    def __init__(self, environment: Any, autoescape: bool = False) -> None:
        self.environment = environment
        self.autoescape = autoescape
        self.eval_ctx = self
