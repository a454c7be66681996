"""The generated function's temporaries share locals: each `t<n>` the writers make is used over
a few lines, and a local no longer needed holds the next one.

Why: a writer never reuses a temporary, so a body had one local per temporary (a long template's
had seven hundred, a recursive macro's a hundred). Python 3.11 gives every call a frame with a
slot per local, set empty when the call starts and cleared when it ends, in 16 KiB chunks of
memory that it maps when a call crosses a chunk's end and unmaps when that call returns: a
recursive macro going up and down across a chunk's end mapped and unmapped memory per call,
and its time doubled or not with the caller's stack depth. Shared locals cut those frames to
a few dozen slots.

How: the generated code is structured (no jumps back but loops), so a temporary is live from
the first line that names it to the last, widened to the whole of any loop it is live across
part of (it may be read on the next round). Temporaries whose lines do not overlap get one local,
allotted as an interval graph is coloured (by first line, a freed local taken again).
"""
from __future__ import annotations

import heapq
import re

# A temporary's name, outside the string literals and comments of a line (a template's names
# are written as literals: `'t5'` is no temporary).
_TOKENS = re.compile(r"""'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*"|#.*|\b(t\d+)\b""")
_LOOP = re.compile(r" *(?:for|while) ")


def shared_locals(lines: list[str]) -> list[str]:
    """`lines` (a function's body, one statement or clause a line, indented by spaces) with
    its temporaries renamed so that those never live at once share a name."""
    spans = _spans(lines)
    if len(spans) < 2:
        return lines
    names = _allotted(spans)

    def renamed(match: re.Match) -> str:
        name = match.group(1)
        return match.group(0) if name is None else names[name]
    return [_TOKENS.sub(renamed, line) if "t" in line else line for line in lines]


def _spans(lines: list[str]) -> dict[str, tuple[int, int]]:
    """Each temporary's live lines: from its first line to its last, widened to the whole of
    each loop it is live across part of (a loop: its line and the lines after it indented
    deeper), again until no loop is left partly covered."""
    spans: dict[str, list[int]] = {}
    around: list[tuple[int, ...]] = []  # each line's loops (their first lines), innermost last
    last_of: dict[int, int] = {}  # a loop's first line -> its last
    loops: tuple[int, ...] = ()
    depths: list[int] = []  # the indentation of each loop in `loops`
    for number, line in enumerate(lines):
        indent = len(line) - len(line.lstrip(" "))
        while depths and indent <= depths[-1]:
            last_of[loops[-1]] = number - 1
            loops = loops[:-1]  # (a new tuple: each line keeps the one it was in)
            depths.pop()
        if _LOOP.match(line):
            loops += (number,)
            depths.append(indent)
        around.append(loops)
        for name in _TOKENS.findall(line):  # "" for a literal or a comment
            if name:
                span = spans.get(name)
                if span is None:
                    spans[name] = [number, number]
                else:
                    span[1] = number
    for first in loops:
        last_of[first] = len(lines) - 1
    return {name: _widened(first, last, around, last_of) for name, (first, last) in spans.items()}


def _widened(first: int, last: int, around: list[tuple[int, ...]], last_of: dict[int, int]) -> tuple[int, int]:
    while True:
        wider = first, last
        for loop in around[first] + around[last]:
            if not loop < first <= last <= last_of[loop]:  # not inside the loop's body
                wider = min(wider[0], loop), max(wider[1], last_of[loop])
        if wider == (first, last):
            return wider
        first, last = wider


def _allotted(spans: dict[str, tuple[int, int]]) -> dict[str, str]:
    """The local of each temporary: by first line, a local whose temporary's last line has
    passed taken again, else a new one."""
    names: dict[str, str] = {}
    live: list[tuple[int, str]] = []  # (last line, local): a heap
    free: list[str] = []
    made = 0
    for name in sorted(spans, key=spans.__getitem__):
        first, last = spans[name]
        while live and live[0][0] < first:
            free.append(heapq.heappop(live)[1])
        if not free:
            made += 1
            free.append(f"t{made}")
        names[name] = local = free.pop()
        heapq.heappush(live, (last, local))
    return names
