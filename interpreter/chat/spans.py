"""Where each message lands in the rendered prompt: its characters and its tokens.

From an origin render (chat/origins.py): a message's characters are those written for its turn
or copied from its data, from the first to the last. With token offsets, its tokens are those
whose characters overlap that stretch; a token that reaches past it (a merge across the
boundary) belongs to both messages and is listed in `straddling`, never given to one of them.
"""
from __future__ import annotations

from bisect import bisect_left, bisect_right
from typing import Any, NamedTuple, Optional, Sequence


class MessageSpan(NamedTuple):
    """Message `message`'s stretch of the output: characters [start, end) and, when tokens were
    given, tokens [token_start, token_end); `straddling`: the indices of its first and last
    tokens when they reach past its characters (a token merged across the boundary). A message the template does not print is left out."""
    message: int
    start: int
    end: int
    token_start: Optional[int] = None
    token_end: Optional[int] = None
    straddling: tuple = ()


def character_spans(runs: Sequence[Any]) -> dict[int, tuple[int, int]]:
    """message -> (start, end) of the characters written for it."""
    found: dict[int, list[int]] = {}
    pos = 0
    for run in runs:
        end = pos + len(run.text)
        owner = run.turn if run.turn is not None else getattr(run.source, "message", None)
        if owner is not None and end > pos and not run.prompt:
            span = found.setdefault(owner, [pos, end])
            span[0], span[1] = min(span[0], pos), max(span[1], end)
        pos = end
    return {message: (a, b) for message, (a, b) in sorted(found.items())}


def message_spans(runs: Sequence[Any], offsets: Optional[Sequence[tuple[int, int]]] = None,
                  ) -> list[MessageSpan]:
    """The span of every message the output holds, in message order; with `offsets` (each
    token's characters), their tokens too."""
    chars = character_spans(runs)
    if offsets is None:
        return [MessageSpan(m, a, b) for m, (a, b) in chars.items()]
    ends = [end for _, end in offsets]  # in order, as a tokenizer gives them
    starts = [start for start, _ in offsets]
    out = []
    for message, (a, b) in chars.items():
        first, last = bisect_right(ends, a), bisect_left(starts, b)  # tokens overlapping [a, b)
        if first >= last:
            out.append(MessageSpan(message, a, b))
            continue
        shared = tuple(i for i in {first, last - 1} if starts[i] < a or ends[i] > b)
        out.append(MessageSpan(message, a, b, first, last, tuple(sorted(shared))))
    return out
