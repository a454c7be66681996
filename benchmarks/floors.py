"""What stands between targets that are not met and their bounds, measured (issues 13 and 25).

    python benchmarks/floors.py            # every third corpus template: about a minute
    python benchmarks/floors.py --every 8  # every eighth: under half a minute

render_parts against render, summed over the cases (template x conversation) of the templates
taken, in the same rounds (CPU time, engines interleaved, as bench.py times):
- its steps: splitting the rendered pieces into parts (`to_parts`, beyond joining them),
  marking the conversation (beyond the check render makes), and the rest, rendering with
  marked values;
- a floor: render, plus making every `Part` of the result, plus marking the conversation, and
  nothing else that tracking provenance does.

A tool's `| string` (issue 25's construct table, 200 tools, CPU time, interleaved): Jinja2's
whole render against its `repr()` of the tools alone, and jinjamark's render against the two
steps it cannot leave out, the walk that sizes each print for the output limit
(limits.small_plain_size, what check_printable runs for a tool) and the `repr()` itself. The
walk and the `repr()` together, with nothing else, are the floor of this construct's ratio.

Retained memory: the AST alone (the blocks `grammar/transform.py` allocated that a compiled
template keeps) against Jinja2's whole compiled template (its code objects, module and
Template), by the drop measure of memory.py (`kept_by_file`).
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path
from typing import Any, Optional

import engines
from engines import ENGINES, attempt, jinjamark_parts, jinjamark_render
from memory import kept_by_file
from timing import rounds

import jinjamark
from constructs import CONSTRUCTS
from jinjamark.chat import template as chat_template
from jinjamark.limits import small_plain_size
from jinjamark.chat.normalize import start_conversation, walk_conversation
from jinjamark.evaluation.output import Part, to_parts


def parts_steps(templates: list[Path], conversations: list[dict], count: int) -> dict:
    total = dict.fromkeys(("render", "render_parts", "to_parts", "join", "marked", "plain",
                           "parts made"), 0.0)
    new = tuple.__new__
    cases = 0
    for path in templates:
        template, error = attempt(lambda: ENGINES["jinjamark"].compile(
            ENGINES["jinjamark"].fresh(), path.read_text(encoding="utf-8")))
        if error is not None:
            continue
        for fixture in conversations:
            if attempt(lambda: jinjamark_render(template, fixture))[1] is not None:
                continue
            pieces = _pieces(template, fixture)
            made = [(part.text, part.is_input) for part in to_parts(pieces)]
            messages = fixture["messages"]
            times = rounds({
                "render": lambda: jinjamark_render(template, fixture),
                "render_parts": lambda: jinjamark_parts(template, fixture),
                "to_parts": lambda: to_parts(pieces),
                "join": lambda: "".join(pieces),
                "marked": lambda: walk_conversation(*start_conversation(messages, True)),
                "plain": lambda: walk_conversation(*start_conversation(messages, False)),
                "parts made": lambda: [new(Part, part) for part in made],
            }, count, 0.001)
            for name, values in times.items():
                total[name] += statistics.median(values)
            cases += 1
    render = total["render"]
    splitting = (total["to_parts"] - total["join"]) / render
    marking = (total["marked"] - total["plain"]) / render
    ratio = total["render_parts"] / render
    return {"cases": cases, "ratio": ratio, "splitting": splitting, "marking": marking,
            "rest": ratio - 1 - splitting - marking,
            "floor": 1 + (total["parts made"] + total["marked"] - total["plain"]) / render}


def _pieces(template: Any, fixture: dict) -> list:
    """The pieces render_parts splits into parts, for this case."""
    caught: list = []
    original = chat_template.to_parts
    chat_template.to_parts = lambda pieces: (caught.append(list(pieces)), original(pieces))[1]
    try:
        jinjamark_parts(template, fixture)
    finally:
        chat_template.to_parts = original
    return caught[-1]


def printed_tools(count: int) -> dict:
    source, tools = CONSTRUCTS["string filter of a tool"]
    ours = jinjamark.chat_environment().from_string(source)
    theirs = engines.oracle.compiled(source)
    assert ours.render(messages=tools) == theirs.render(messages=tools)
    times = rounds({
        "jinjamark": lambda: ours.render(messages=tools),
        "jinja2": lambda: theirs.render(messages=tools),
        "walk": lambda: [small_plain_size(tool) for tool in tools],
        "repr": lambda: [repr(tool) for tool in tools],
    }, count, 0.02)
    best = {name: min(values) for name, values in times.items()}
    return {"ratio": best["jinjamark"] / best["jinja2"], "repr": best["repr"] / best["jinja2"],
            "floor": (best["walk"] + best["repr"]) / best["jinja2"]}


def ast_share(templates: list[Path]) -> dict:
    ratios = []
    for path in templates:
        source = path.read_text(encoding="utf-8")
        ours = kept_by_file("jinjamark", source)
        theirs = kept_by_file("jinja2", source)
        if ours is None or theirs is None:
            continue
        tree = sum(size for name, size in ours.items() if name.endswith("transform.py"))
        whole = sum(size for name, size in theirs.items() if "tracemalloc" not in name)
        if whole > 0:
            ratios.append(tree / whole)
    return {"templates": len(ratios), "median": statistics.median(ratios)}


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--every", type=int, default=3, help="every Nth corpus template (default 3)")
    parser.add_argument("--rounds", type=int, default=3, help="timing rounds per case (default 3)")
    args = parser.parse_args(argv)
    templates, conversations = engines.load_corpus(False)
    templates = templates[::args.every]
    steps = parts_steps(templates, conversations, args.rounds)
    print(f"render_parts / render over {steps['cases']} cases, summed: {steps['ratio']:.3f}x")
    print(f"  splitting into parts {steps['splitting']:.1%} of render, marking the conversation "
          f"{steps['marking']:.1%}, the rest (rendering marked values) {steps['rest']:.1%}")
    print(f"  floor, render + the Part objects + the marked conversation: {steps['floor']:.3f}x")
    tools = printed_tools(max(args.rounds, 5))
    print(f"a tool's | string / Jinja2's, 200 tools: {tools['ratio']:.2f}x; Jinja2's repr() alone "
          f"{tools['repr']:.2f}x of its render; floor, the size walk + repr(): {tools['floor']:.2f}x")
    share = ast_share(templates)
    print(f"the AST alone / Jinja2's whole compiled template, median over {share['templates']} "
          f"templates: {share['median']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
