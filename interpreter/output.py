"""Rendered output: a list of string pieces, some marked, turned into text or into parts."""
from __future__ import annotations

from typing import Iterable, NamedTuple

from .marks import Input, Mixed


class Part(NamedTuple):
    """A run of output characters that all came from the template, or all from input.
    A named tuple: cheap to make by the hundred per render, and `text, is_input = part`."""
    text: str
    is_input: bool


def to_parts(pieces: Iterable[str]) -> list[Part]:
    """Split pieces by their marks and merge neighbours with the same flag."""
    parts: list[Part] = []
    texts: list[str] = []  # the run being built
    current = False        # whether that run is input
    for piece in pieces:
        kind = type(piece)
        if kind is Input:
            runs: Iterable[tuple[str, bool]] = ((piece, True),)
        elif kind is not Mixed:  # str, and str subclasses without marks (Markup)
            runs = ((piece, False),)
        else:
            runs = _runs(piece)
        for text, flag in runs:
            if not text:
                continue
            if flag is not current:
                if texts:
                    parts.append(_new(Part, (str.__str__("".join(texts)), current)))
                    texts = []
                current = flag
            texts.append(text)
    if texts:
        parts.append(_new(Part, (str.__str__("".join(texts)), current)))
    return parts


def _runs(piece: Mixed) -> list[tuple[str, bool]]:
    """A mixed string's alternating template and input runs."""
    raw, pos = str.__str__(piece), 0
    runs = []
    for a, b in piece.spans:
        if a > pos:
            runs.append((raw[pos:a], False))
        runs.append((raw[a:b], True))
        pos = b
    if pos < len(raw):
        runs.append((raw[pos:], False))
    return runs


_new = tuple.__new__
