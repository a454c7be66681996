"""Rendered output: a list of string pieces, some marked, turned into text or into parts."""
from __future__ import annotations

from itertools import accumulate, compress, cycle, repeat
from operator import is_, is_not
from typing import Iterable, NamedTuple

from .marks import Input, Mixed


class Part(NamedTuple):
    """A run of output characters that all came from the template, or all from input.
    A named tuple: cheap to make by the hundred per render, and `text, is_input = part`."""
    text: str
    is_input: bool


def to_parts(pieces: Iterable[str]) -> list[Part]:
    """Split pieces by their marks and merge neighbours with the same flag.

    Runs once per render over hundreds of pieces, so the per-piece work is done by C loops
    (map, accumulate, compress) and Python code runs once per part, not once per piece."""
    pieces = list(filter(None, pieces))
    if not pieces:
        return []
    kinds = list(map(type, pieces))
    if Mixed in kinds:
        pieces = _expanded(pieces)
        kinds = list(map(type, pieces))
    text = "".join(pieces)
    flags = list(map(is_, kinds, repeat(Input)))
    ends = list(accumulate(map(len, pieces)))
    # a part starts at each piece whose flag differs from the one before; flags alternate
    cuts = [ends[i - 1] for i in compress(range(1, len(flags)), map(is_not, flags[1:], flags))]
    texts = map(text.__getitem__, map(slice, [0, *cuts], [*cuts, len(text)]))
    return list(map(_make, zip(texts, cycle((flags[0], not flags[0])))))


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
