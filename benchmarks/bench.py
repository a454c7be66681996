"""jinjamark against Jinja2 and minijinja: every performance target of issue 13 in one run.

    python benchmarks/bench.py            # the whole corpus; writes docs/images/render-vs-length.png
    python benchmarks/bench.py --quick    # every 8th template, every 4th conversation: ~2 minutes
    python benchmarks/bench.py --json results.json --plot curve.png --sections warm,curve

Sections: `warm` (correctness, warm render, render_parts, compile over the corpus: corpus_bench),
`curve` (render time against conversation length, the plot: length_curve), `first-call` (a fresh
process per engine: first_call), `memory` (what a compiled template keeps: memory). Every figure is
CPU time, engines interleaved, ratios taken within a round; see benchmarks/README.md.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional

import constructs
import corpus_bench
import engines
import first_call
import length_curve
import memory
import report

SECTIONS = ("warm", "constructs", "curve", "first-call", "memory")
PLOT = engines.ROOT / "docs" / "images" / "render-vs-length.png"


def options(argv: Optional[list[str]]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="every 8th template, every 4th conversation, fewer rounds and lengths")
    parser.add_argument("--json", metavar="PATH", help="also write every measurement as JSON")
    parser.add_argument("--plot", metavar="PATH",
                        help=f"the PNG of render time against length (default: {PLOT.relative_to(engines.ROOT)}, "
                             f"or a temporary file with --quick)")
    parser.add_argument("--sections", default=",".join(SECTIONS),
                        help=f"comma-separated, of {', '.join(SECTIONS)} (default: all)")
    parser.add_argument("--rounds", type=int, help="timing rounds per case (default 5; 3 with --quick)")
    return parser.parse_args(argv)


def main(argv: Optional[list[str]] = None) -> int:
    args = options(argv)
    sections = [s.strip() for s in args.sections.split(",") if s.strip()]
    unknown = set(sections) - set(SECTIONS)
    if unknown:
        sys.exit(f"unknown sections: {', '.join(sorted(unknown))}")
    count = args.rounds or (3 if args.quick else 5)
    budget = 0.001 if args.quick else 0.002  # CPU seconds a timed loop lasts at least
    templates, conversations = engines.load_corpus(args.quick)
    data: dict = {"machine": report.machine(), "quick": args.quick, "rounds": count}
    print(f"machine: {report.machine_line(data['machine'])}", file=sys.stderr)
    started = time.perf_counter()
    if "warm" in sections:
        step(f"corpus: {len(templates)} templates x {len(conversations)} conversations")
        measured = corpus_bench.run(templates, conversations, count, budget)
        data["corpus"] = corpus_bench.summarize(measured)
        data["corpus_cases"], data["corpus_compiles"] = measured.cases, measured.compiles
    if "constructs" in sections:
        step("constructs alone, 200 messages")
        data["constructs"] = constructs.run(count, budget)
    if "curve" in sections:
        step("render time against conversation length")
        data["curve"] = length_curve.run(args.quick, count, budget)
        plot = Path(args.plot) if args.plot else (
            Path(tempfile.gettempdir()) / "jinjamark-render-vs-length.png" if args.quick else PLOT)
        data["plot"] = str(length_curve.plot(data["curve"], plot, machine_label(data["machine"])))
    if "first-call" in sections:
        step("first call in fresh processes")
        data["first_call"] = first_call.run(3 if args.quick else 7)
    if "memory" in sections:
        step("retained memory of compiled templates")
        fixture = next(f for f in engines.load_corpus(False)[1] if f["_name"] == "03-multi-turn")
        data["memory"] = memory.run(templates, fixture)
    data["seconds"] = time.perf_counter() - started
    report.print_report(data)
    if "constructs" in data:
        print("\n" + "\n".join(constructs.table(data["constructs"])))
    if args.json:
        Path(args.json).write_text(json.dumps(data, indent=1, default=str), encoding="utf-8")
    print(f"benchmark took {data['seconds']:.0f} s", file=sys.stderr)
    return 0


def step(what: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {what}", file=sys.stderr, flush=True)


def machine_label(m: dict) -> str:
    return f"{m['cpu']}, {m['cores']} cores, Python {m['python']}, jinjamark {m['commit']}"


if __name__ == "__main__":
    sys.exit(main())
