"""Rendered output: a list of string pieces, some marked, turned into text or into parts."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from .marks import Input, Mixed


@dataclass(frozen=True, slots=True)
class Part:
    """A run of output characters that all came from the template, or all from input."""
    text: str
    is_input: bool


def to_parts(pieces: Iterable[str]) -> list[Part]:
    """Split pieces by their marks and merge neighbours with the same flag."""
    runs: list[tuple[str, bool]] = []  # (text, is_input), neighbours not merged yet
    add = runs.append
    for piece in pieces:
        kind = type(piece)
        if kind is Input:
            add((piece, True))
        elif kind is not Mixed:  # str, and str subclasses without marks (Markup)
            add((piece, False))
        else:
            raw, pos = str.__str__(piece), 0
            for a, b in piece.spans:
                if a > pos:
                    add((raw[pos:a], False))
                add((raw[a:b], True))
                pos = b
            if pos < len(raw):
                add((raw[pos:], False))
    return _merge(runs)


def _merge(runs: list[tuple[str, bool]]) -> list[Part]:
    parts: list[Part] = []
    texts: list[str] = []
    current = False
    for text, flag in runs:
        if not text:
            continue
        if flag is not current and texts:
            parts.append(Part(str.__str__("".join(texts)), current))
            texts = []
        current = flag
        texts.append(text)
    if texts:
        parts.append(Part(str.__str__("".join(texts)), current))
    return parts
