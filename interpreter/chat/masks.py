"""Assistant masks: which tokens a `{% generation %}` body's characters became.

transformers marks every token whose characters overlap a generation span (so a span cut by
truncation keeps its remaining tokens), in one pass over tokens and spans in order. We take the
same spans (from the engine's `generation_spans`, where the text finally lands) and the same
token offsets, and mark the same way, so the masks are equal wherever the spans are.
"""
from __future__ import annotations

from typing import Sequence

Span = tuple[int, int]


def assistant_mask(offsets: Sequence[Span], spans: Sequence[Span]) -> list[int]:
    """1 for each token whose characters overlap a span, else 0."""
    mask = [0] * len(offsets)
    index, count = 0, len(spans)
    for token, (start, end) in enumerate(offsets):
        while index < count and start >= spans[index][1]:
            index += 1
        if index == count:
            break
        if end > spans[index][0]:
            mask[token] = 1
    return mask
