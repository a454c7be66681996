"""Compile time against template size: jinjamark next to Jinja2, in microseconds per character.

    python benchmarks/parse_curve.py [--sizes 10000,100000,1000000] [--repeat 1]
                                     [--shape corpus|outputs|list]

A template of each size is made by joining whole corpus chat templates (in the corpus order,
skipping one that would pass the size), so the text is real template code; or, with `--shape`,
of the slowest shapes per character known: `{{ x }}` repeated (outputs) or one list literal of
numbers (list), where every item goes through each level of the expression grammar. jinjamark: `Environment.from_string` with the chat profile's
extensions (parse, check, build the tree). Jinja2: `ImmutableSandboxedEnvironment.from_string`
(lex, parse, generate Python, compile it). Both: the best of `--repeat` runs, CPU time of this
process. Time linear in size shows as a flat µs/char column. `parse µs/c` is the parser's part
of jinjamark's time (`Environment.parse`: parse, build the AST, the compile-time checks); the
rest is the compiler's. See benchmarks/README.md.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import jinjamark  # noqa: E402

try:
    import oracle  # noqa: E402  tests/oracle.py: Jinja2 configured as transformers does
except ImportError:
    oracle = None


def sources() -> list[str]:
    """The corpus chat templates that both engines compile, in name order."""
    folder = ROOT / "tests" / "corpus" / "templates"
    texts = [p.read_text(encoding="utf-8") for p in sorted(folder.glob("*.jinja"))]
    env = jinjamark.chat_environment()
    usable = []
    for text in texts:
        try:
            env.from_string(text)
            if oracle is not None:
                oracle.environment().from_string(text)
        except Exception:  # noqa: BLE001 - a template one engine refuses is left out
            continue
        usable.append(text)
    return usable


def template_of(size: int, pieces: list[str]) -> str:
    """Whole corpus templates joined up to `size` characters: each in turn that still fits."""
    out, total, misses, i = [], 0, 0, 0
    while misses < len(pieces):
        piece = pieces[i % len(pieces)]
        i += 1
        if total + len(piece) > size:
            misses += 1
            continue
        out.append(piece)
        total += len(piece)
        misses = 0
    return "".join(out)


SHAPES = {
    "outputs": lambda size: "{{ x }} " * (size // 8),
    "list": lambda size: "{{ [" + "1, " * (size // 3 - 3) + "] }}",
}


def best_cpu(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        fn()
        best = min(best, time.process_time() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,30000,100000,300000,1000000")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--shape", choices=["corpus", *SHAPES], default="corpus")
    args = parser.parse_args()
    pieces = sources()
    make = SHAPES.get(args.shape) or (lambda size: template_of(size, pieces))
    limits = jinjamark.Limits(max_template_size=10**8)
    ours = jinjamark.chat_environment(limits=limits)
    ours.from_string(pieces[0])  # the parser's tables built or loaded: not timed
    print(f"{'size':>9} {'chars':>9} {'parse µs/c':>10} {'jinjamark s':>12} {'µs/char':>8} "
          f"{'jinja2 s':>9} {'µs/char':>8} {'ratio':>6}")
    for size in (int(s) for s in args.sizes.split(",")):
        text = make(size)
        t_parse = best_cpu(lambda: ours.parse(text), args.repeat)
        names = iter(range(args.repeat))  # a name per run: from_string keeps what it compiled
        t_ours = best_cpu(lambda: ours.from_string(text, name=f"run{next(names)}"), args.repeat)
        line = (f"{size:>9} {len(text):>9} {t_parse * 1e6 / len(text):>10.2f} {t_ours:>12.3f}"
                f" {t_ours * 1e6 / len(text):>8.2f}")
        if oracle is not None:
            theirs = oracle.environment()
            t_theirs = best_cpu(lambda: theirs.from_string(text), args.repeat)
            line += (f" {t_theirs:>9.3f} {t_theirs * 1e6 / len(text):>8.2f}"
                     f" {t_ours / t_theirs:>6.2f}")
        print(line, flush=True)


if __name__ == "__main__":
    main()
