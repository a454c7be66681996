"""The first call in a fresh process on its own, and where a compile's time goes: a quick look
while working on start-up, with the benchmark's own instrument.

    python benchmarks/startup.py [--runs 7] [--compile]

The first call is measured by `first_call.py` (the `first-call` section of `bench.py`: one
`python -c` process per engine and run, CPU time of import, environment, compile and render, the
whole process too, jinjamark also with an empty parser cache), and printed as `bench.py` prints
it. This script once had an instrument of its own (wall time, a Jinja2 environment of its own);
two instruments gave two answers, so there is one.

`--compile` adds the warm compile over the corpus split in two: jinjamark's parse (source to
checked AST, `Environment.parse`) and its whole `from_string`, each against Jinja2's
`from_string` (best CPU time of 3, median of per-template ratios), to tell the parse from what
follows it. The compile row of `bench.py` times `from_string` alone, interleaved.
"""
from __future__ import annotations

import argparse
import statistics
import time

import first_call
from engines import ROOT, oracle
from report import first_call_detail

import jinjamark


def compile_ratios(repeat: int = 3) -> None:
    ours, theirs = jinjamark.chat_environment(), oracle.environment()

    def best(fn) -> float:
        times = []
        for _ in range(repeat):
            start = time.process_time()
            fn()
            times.append(time.process_time() - start)
        return min(times)

    parse, whole = [], []
    for i, path in enumerate(sorted((ROOT / "tests" / "corpus" / "templates").glob("*.jinja"))):
        source = path.read_text(encoding="utf-8")
        try:
            ours.from_string(source + "{# warm-up #}")
            theirs.from_string(source)
        except Exception:  # noqa: BLE001 - a template one engine refuses is left out
            continue
        names = iter(range(repeat))
        t_theirs = best(lambda: theirs.from_string(source))
        parse.append(best(lambda: ours.parse(source)) / t_theirs)
        whole.append(best(lambda: ours.from_string(f"{source}{{# {i}-{next(names)} #}}")) / t_theirs)
    print(f"compile over {len(parse)} corpus templates, median of per-template ratios to Jinja2's "
          f"from_string: parse {statistics.median(parse):.2f}x, from_string "
          f"{statistics.median(whole):.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--compile", action="store_true", help="also the warm compile over the corpus")
    args = parser.parse_args()
    if args.compile:
        compile_ratios()
    results = first_call.run(args.runs)
    print("\n".join(first_call_detail(results)))
    for label, case in results.items():
        print(f"{label}: jinjamark/jinja2 {case['ratios']['jinjamark/jinja2']:.2f}x "
              f"(whole process {case['process_ratios']['jinjamark/jinja2']:.2f}x)")


if __name__ == "__main__":
    main()
