"""Rendered output: a list of string pieces, some marked, turned into text or into parts."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from .marks import Marked


@dataclass(frozen=True, slots=True)
class Part:
    """A run of output characters that all came from the template, or all from input."""
    text: str
    is_input: bool


def to_parts(pieces: Iterable[str]) -> list[Part]:
    """Split pieces by their marks and merge neighbours with the same flag."""
    texts: list[str] = []   # the run being built
    parts: list[Part] = []
    current = False         # whether that run is input
    for piece in pieces:
        if type(piece) is not Marked:
            if current and texts:
                parts.append(Part("".join(texts), True))
                texts = []
            current = False
            texts.append(piece)
            continue
        raw = str.__str__(piece)
        pos = 0
        for a, b in piece.spans:
            for chunk, flag in ((raw[pos:a], False), (raw[a:b], True)):
                if not chunk:
                    continue
                if flag != current and texts:
                    parts.append(Part("".join(texts), current))
                    texts = []
                current = flag
                texts.append(chunk)
            pos = b
        if pos < len(raw):
            if current and texts:
                parts.append(Part("".join(texts), True))
                texts = []
            current = False
            texts.append(raw[pos:])
    if texts:
        text = "".join(texts)
        if text:
            parts.append(Part(text, current))
    return [p for p in parts if p.text]
