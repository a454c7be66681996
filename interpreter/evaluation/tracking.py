"""Where stretches of output land in the final text: the `{% generation %}` spans.

transformers' assistant masks need the character offsets, in the rendered prompt, of every
`{% generation %}` body. A body can be rendered into a buffer that is not the output (a macro's,
a `{% set %}` capture's, a call block's) and printed later, somewhere else, or not at all; its
offsets are known only when the final text is joined. So the generation handler writes zero-width
markers into the pieces it renders among: empty strings of their own type, which every consumer
of pieces already passes over (`"".join`, `concat`, `to_parts` skips empty pieces).

A captured value carries its markers to where it is printed: when a buffer holding markers is
captured, the spans it contains (relative to the captured text) are remembered for that string
object, and printing that same object writes a `SpanMarker` before it. The final join resolves
every marker to offsets. A captured value that a filter or an operation turns into a new string
loses its spans (there is no character map to follow), as it is lost in transformers.

This costs nothing when no spans are asked for: renders then run on the plain `Evaluator`; a
`TrackingEvaluator` (whose sub-evaluators, made by `type(ev)`, track too) only when they are.
"""
from __future__ import annotations

from contextvars import ContextVar
from typing import Any, Iterable, Optional

from .evaluator import Evaluator
from ..values.marks import concat
from ..values.printing import to_string

Span = tuple[int, int]


class Marker(str):
    """A zero-width piece of output that marks a position."""


class SpanMarker(Marker):
    """Before a captured text that holds spans: those spans, relative to that text."""

    def __new__(cls, spans: tuple[Span, ...]) -> "SpanMarker":
        marker = super().__new__(cls, "")
        marker.spans = spans
        return marker


START = Marker("")  # where a generation body starts ...
END = Marker("")    # ... and ends; they nest as the tags do


class Tracker:
    """What the evaluators of one render share: the spans of captured texts, by object."""

    __slots__ = ("captured",)

    def __init__(self) -> None:
        # id -> (the text, its spans); the text is held so that its id is not reused
        self.captured: dict[int, tuple[str, tuple[Span, ...]]] = {}


_TRACKER: ContextVar[Optional[Tracker]] = ContextVar("jinjamark_span_tracker", default=None)


class TrackingEvaluator(Evaluator):
    """An evaluator that carries generation spans through captures to where text lands."""

    tracks = True  # its printing is never plain: a printed capture writes its spans first

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        tracker = _TRACKER.get()
        self.tracker = tracker if tracker is not None else Tracker()

    def capture(self, body: Iterable[Any], scope: Any) -> str:
        saved, self.out = self.out, []
        try:
            self.run(body, scope)
            pieces = self.out
        finally:
            self.out = saved
        text = concat(pieces)
        spans = resolve(pieces)
        if spans:
            self.tracker.captured[id(text)] = (text, tuple(spans))
        return text

    def write(self, value: Any) -> None:
        text = to_string(value)
        if text:
            found = self.tracker.captured.get(id(text))
            if found is not None and found[0] is text:
                self.out.append(SpanMarker(found[1]))
            self.budget.wrote(len(text))
            self.out.append(text)


def resolve(pieces: Iterable[str]) -> list[Span]:
    """The spans the markers among `pieces` stand for, as offsets in their joined text; in the
    order their bodies end (transformers' order)."""
    spans: list[Span] = []
    open_at: list[int] = []
    pos = 0
    for piece in pieces:
        if isinstance(piece, Marker):
            if piece is START:
                open_at.append(pos)
            elif piece is END:
                spans.append((open_at.pop(), pos))
            else:
                spans.extend((pos + a, pos + b) for a, b in piece.spans)
        else:
            pos += len(piece)
    return spans


def start_tracking(tracker: Tracker) -> Any:
    """Share `tracker` with every evaluator made until `stop_tracking(token)`."""
    return _TRACKER.set(tracker)


def stop_tracking(token: Any) -> None:
    _TRACKER.reset(token)


def tracking(ev: Any) -> bool:
    """Whether `ev` records spans: the generation handler asks before writing markers."""
    return type(ev) is TrackingEvaluator or isinstance(ev, TrackingEvaluator)
