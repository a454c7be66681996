"""Source tracing: a render that reports each statement as it runs (`jinjamark render --trace`).

The traced render compiles the template's statements again, each wrapped to report itself, and
keeps those closures apart from the untraced ones: an ordinary render pays nothing for tracing.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Callable, Iterator, NamedTuple, Optional

from .evaluation.compiling import TRACER


class Step(NamedTuple):
    """A statement about to run: where it stands, what kind it is (its AST class name), and
    the source line it starts on."""
    template: Optional[str]
    line: int
    column: int
    statement: str
    source_line: str = ""


@contextmanager
def tracing(on_step: Callable[[Step], None]) -> Iterator[None]:
    """Within the block, every render (of a Template, a ChatTemplate, in this thread or task)
    calls `on_step` with each statement as it runs, also those of templates it includes,
    imports or extends."""
    lines: dict[int, list[str]] = {}  # the source lines of each template met, by id

    def report(ev: Any, statement: Any) -> None:
        span = statement.span
        found = lines.get(id(ev.source))
        if found is None:
            found = lines[id(ev.source)] = (ev.source or "").splitlines()
        text = found[span.line - 1] if 0 < span.line <= len(found) else ""
        on_step(Step(ev.name, span.line, span.column, type(statement).__name__, text))

    token = TRACER.set(report)
    try:
        yield
    finally:
        TRACER.reset(token)


def render_traced(template: Any, on_step: Callable[[Step], None], *args: Any,
                  **kwargs: Any) -> str:
    """Render `template` with `args`/`kwargs` as `Template.render` does, tracing it."""
    with tracing(on_step):
        return template.render(*args, **kwargs)


__all__ = ["Step", "render_traced", "tracing"]
