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
    pieces = list(pieces)
    if Mixed in map(type, pieces):  # a C loop; most renders have no mixed piece
        pieces = _expanded(pieces)
    parts: list[Part] = []
    run: list[str] = []  # the texts of the part being built
    current = False      # whether that part is input
    for piece in pieces:
        if not piece:
            continue
        flag = type(piece) is Input  # str and unmarked str subclasses (Markup) are template text
        if flag is not current:
            if run:
                parts.append(_make(("".join(run), current)))
                run = []
            current = flag
        run.append(piece)
    if run:
        parts.append(_make(("".join(run), current)))
    return parts


def _expanded(pieces: list[str]) -> list[str]:
    """Mixed pieces replaced by their runs: template runs as str, input runs as Input."""
    out: list[str] = []
    for piece in pieces:
        if type(piece) is not Mixed:
            out.append(piece)
            continue
        raw, pos = str.__str__(piece), 0
        for a, b in piece.spans:
            if a > pos:
                out.append(raw[pos:a])
            out.append(Input(raw[a:b]))
            pos = b
        if pos < len(raw):
            out.append(raw[pos:])
    return out


_make = Part._make
