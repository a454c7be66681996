"""How the caller's stack depth moves a render's time (CPython 3.11's frame stack), measured.

    python benchmarks/stack_depth.py [TEMPLATE [CONVERSATION]]

CPython 3.11 keeps Python frames in chunks of 16 KiB, and frees a chunk when the first frame in
it returns; a render whose calls go up and down across a chunk's end (a template's recursive
macros, each a generated function with its locals) maps and unmaps a chunk each time it does.
Where the chunk ends depends on how deep the caller already is, so the same render, called
from a few frames deeper, took up to twice the time while generated functions had a local per
temporary (hundreds): a tail that moved between benchmark runs when a change shifted frame
sizes. They share locals now (codegen/slots.py); this shows whether a change brings it back. This prints the time of one ChatTemplate render
(default: Kimi-K3, whose tools are printed by recursive macros, x 08-tools-no-call) and of
Jinja2's render of the same template, each called from 0 to 22 extra frames, and the spread.
"""
from __future__ import annotations

import json
import sys
from typing import Any, Callable

from engines import corpus, context, jinjamark_compile, jinjamark_render, oracle
from timing import rounds

import jinjamark


def at_depth(depth: int, render: Callable[[], Any]) -> Any:
    """`render()` called from `depth` frames deeper than here."""
    return render() if depth == 0 else at_depth(depth - 1, render)


def main() -> int:
    stem = sys.argv[1] if len(sys.argv) > 1 else "llamacpp--Kimi-K3"
    name = sys.argv[2] if len(sys.argv) > 2 else "08-tools-no-call"
    folder = corpus()
    source = (folder / "templates" / f"{stem}.jinja").read_text(encoding="utf-8")
    fixture = json.loads((folder / "conversations" / f"{name}.json").read_text(encoding="utf-8"))
    chat = jinjamark_compile(jinjamark.chat_environment(), source)
    theirs, variables = oracle.compiled(source), context(fixture)
    assert jinjamark_render(chat, fixture) == theirs.render(**variables)
    rows = []
    for depth in range(0, 24, 2):
        times = rounds({"jinjamark": lambda: at_depth(depth, lambda: jinjamark_render(chat, fixture)),
                        "jinja2": lambda: at_depth(depth, lambda: theirs.render(**variables))}, 5, 0.05)
        ours, jinja2 = min(times["jinjamark"]), min(times["jinja2"])
        rows.append((depth, ours, jinja2))
        print(f"{depth:2d} extra frames: jinjamark {ours * 1e6:8.1f} µs, Jinja2 {jinja2 * 1e6:8.1f} µs, "
              f"ratio {ours / jinja2:.2f}x")
    for label, column in (("jinjamark", 1), ("Jinja2", 2)):
        times = [row[column] for row in rows]
        print(f"{label}: slowest / fastest depth {max(times) / min(times):.2f}x")
    ratios = [ours / jinja2 for _, ours, jinja2 in rows]
    print(f"ratio from {min(ratios):.2f}x to {max(ratios):.2f}x ({stem} x {name})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
