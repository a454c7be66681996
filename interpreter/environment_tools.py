"""Decorators for filters, tests and globals that need more than their arguments.

A callable marked with one of these is called with the named object first:
`f(environment, value, *args)`. The evaluator reads `f.jinja_pass_arg`, as Jinja2 reads its own
`jinja_pass_arg`; a callable without the attribute gets only its arguments.
"""
from __future__ import annotations

from typing import Optional, Any, Callable, TypeVar

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

    def __init__(self, environment: Any, autoescape: Optional[bool] = None,
                 template_name: Optional[str] = None) -> None:
        """`autoescape` None (Jinja2's `EvalContext(environment, template_name)`): the
        environment's setting for a template of that name."""
        self.environment = environment
        if autoescape is None:
            setting = environment.autoescape
            autoescape = bool(setting(template_name)) if callable(setting) else bool(setting)
        self.autoescape = autoescape
        self.eval_ctx = self
