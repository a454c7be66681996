"""Rendered output: a list of string pieces, some marked, turned into text or into parts."""
from __future__ import annotations

from typing import Iterable, NamedTuple

from ..values.markup import SafeMixed
from ..values.marks import Input, Mixed


class Part(NamedTuple):
    """A run of output characters that all came from the template, or all from input.
    A named tuple: cheap to make by the hundred per render, and `text, is_input = part`."""
    text: str
    is_input: bool


def to_parts(pieces: Iterable[str]) -> list[Part]:
    """Split pieces by their marks and merge neighbours with the same flag.

    One pass, every branch inline: this runs once per `render_parts` over every piece written,
    so it is kept to the cheapest Python operations. Exact text and input pieces (most of them)
    are told apart first, by type; an empty piece never starts a part."""
    parts: list[Part] = []
    add = parts.append
    run: list[str] = []  # the texts of the current part
    current = False      # whether the current part is input
    for piece in pieces:
        kind = type(piece)
        if kind is str:
            if current:
                if not piece:
                    continue
                t = _join(run)
                add(_new(Part, (t, True)) if len(t) > _SHORT else _known_input(t) or _input_part(t))
                run = [piece]
                current = False
            elif piece:
                run.append(piece)
        elif kind is Input:
            if not current:
                if not piece:
                    continue
                if run:
                    t = _join(run)
                    add(_known(t) or _template_part(t))
                run = [piece]
                current = True
            else:
                run.append(piece)
        elif (kind is Mixed or kind is SafeMixed) and piece.spans:  # its runs, in order
            text = str.__str__(piece)
            spans = piece.spans
            a, b = spans[0]
            if a:  # template text first
                if current:
                    t = _join(run)
                    add(_new(Part, (t, True)) if len(t) > _SHORT else _known_input(t) or _input_part(t))
                    run, current = [], False
                run.append(text[:a])
            if not current:
                if run:
                    t = _join(run)
                    add(_known(t) or _template_part(t))
                run, current = [], True
            run.append(text[a:b])
            pos = b
            if len(spans) > 1:  # the runs in between are whole parts (JSON of a tool: many)
                t = _join(run)
                add(_new(Part, (t, True)) if len(t) > _SHORT else _known_input(t) or _input_part(t))
                known = _known_inner(text)
                if known is None or known[0] != spans:
                    known = _inner_parts(text, spans)
                parts.extend(known[1])
                a, pos = spans[-1]
                run = [text[a:pos]]
            if pos < len(text):
                t = _join(run)
                add(_new(Part, (t, True)) if len(t) > _SHORT else _known_input(t) or _input_part(t))
                run, current = [text[pos:]], False
        elif piece:  # other str subclasses (Markup), unmarked: template text; a marker is empty
            if current:
                t = _join(run)
                add(_new(Part, (t, True)) if len(t) > _SHORT else _known_input(t) or _input_part(t))
                run = [piece]
                current = False
            else:
                run.append(piece)
    if run:
        t = _join(run)
        if not current:
            add(_known(t) or _template_part(t))
        else:
            add(_new(Part, (t, True)) if len(t) > _SHORT else _known_input(t) or _input_part(t))
    return parts


# Template parts repeat from render to render (a role header, an end-of-turn token): the short
# ones are made once and shared (a Part is immutable), which saves most of render_parts' part
# making. Bounded, in entries and in length, since template text can be computed.
_TEMPLATE_PARTS: dict[str, Part] = {}
_known = _TEMPLATE_PARTS.get


def _template_part(text: str) -> Part:
    part = _new(Part, (text, False))
    if len(text) <= 256 and len(_TEMPLATE_PARTS) < 4096:
        _TEMPLATE_PARTS[text] = part
    return part


# So do the shortest input parts (a role, a tool name): those of at most _SHORT characters,
# which cost less to look up than to make.
_SHORT = 16
_INPUT_PARTS: dict[str, Part] = {}
_known_input = _INPUT_PARTS.get


def _input_part(text: str) -> Part:
    part = _new(Part, (text, True))
    if len(_INPUT_PARTS) < 4096:
        _INPUT_PARTS[text] = part
    return part


# And so do the parts inside a marked string of many runs (the JSON of the tools, printed in
# every render of a deployment, with the same marks): made once, then looked up by its text
# (and compared by its spans). Bounded, in entries (emptied when full: the tools of today's
# requests are kept, not those of the first ones) and in length.
_INNER_PARTS: dict[str, tuple] = {}
_known_inner = _INNER_PARTS.get


def _inner_parts(text: str, spans: tuple) -> tuple:
    """(spans, the parts of `text` between the end of its first span and the start of its last):
    its template runs and the input runs between them."""
    made: list[Part] = []
    add = made.append
    pos = spans[0][1]
    for a, b in spans[1:-1]:
        t = text[pos:a]
        add(_known(t) or _template_part(t))
        t = text[a:b]
        add(_new(Part, (t, True)) if len(t) > _SHORT else _known_input(t) or _input_part(t))
        pos = b
    t = text[pos:spans[-1][0]]
    add(_known(t) or _template_part(t))
    known = (spans, made)
    if len(text) <= 8192:
        if len(_INNER_PARTS) >= 256:  # full: started again, so that what repeats now is kept
            _INNER_PARTS.clear()
        _INNER_PARTS[text] = known
    return known


_join = "".join
_new = tuple.__new__  # makes a Part without the Python-level __new__ of a named tuple

