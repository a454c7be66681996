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
    runs: list[list] = []

    def add(text: str, is_input: bool) -> None:
        if not text:
            return
        if runs and runs[-1][1] == is_input:
            runs[-1][0].append(text)
        else:
            runs.append([[text], is_input])

    for piece in pieces:
        if type(piece) is Marked:
            raw = str.__str__(piece)
            pos = 0
            for a, b in piece.spans:
                add(raw[pos:a], False)
                add(raw[a:b], True)
                pos = b
            add(raw[pos:], False)
        else:
            add(piece, False)
    return [Part("".join(texts), flag) for texts, flag in runs]
