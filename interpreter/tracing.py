"""Source tracing: a render that reports each statement as it runs (`jinjamark render --trace`).

The traced render compiles the template's statements again, each wrapped to report itself, and
keeps those closures apart from the untraced ones: an ordinary render pays nothing for tracing.
"""
from __future__ import annotations

from typing import Any, Callable, NamedTuple, Optional

from .compiling import TRACER


class Step(NamedTuple):
    """A statement about to run: where it stands and what kind it is (its AST class name)."""
    template: Optional[str]
    line: int
    column: int
    statement: str


def render_traced(template: Any, on_step: Callable[[Step], None], *args: Any,
                  **kwargs: Any) -> str:
    """Render `template` with `args`/`kwargs` as `Template.render` does, calling `on_step` with
    each statement as it runs (also those of templates it includes, imports or extends)."""
    def report(ev: Any, statement: Any) -> None:
        span = statement.span
        on_step(Step(ev.name, span.line, span.column, type(statement).__name__))

    token = TRACER.set(report)
    try:
        return template.render(*args, **kwargs)
    finally:
        TRACER.reset(token)


__all__ = ["Step", "render_traced"]
