"""Compile and render times of jinjamark against Jinja2 and minijinja on the chat-template corpus.

    python benchmarks/bench.py [--quick]

Every corpus template x every corpus conversation (add_generation_prompt=True), each engine
configured like transformers' apply_chat_template (see benchmarks/README.md). Reports, per engine,
the median time of (a) compile: building a template in a fresh environment plus its first render,
and (b) a warm render of an already compiled template; then the medians of the per-case ratios
jinjamark/Jinja2 and jinjamark/minijinja, render_parts/render for jinjamark, and the share of
marking the longest conversation (mark_input) in rendering it.
Timings are taken only on cases that every compared engine renders to Jinja2's output.
"""
from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable, Optional

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

try:
    import oracle  # tests/oracle.py: Jinja2 configured as transformers configures it
except ImportError as missing:
    sys.exit(f"bench.py needs Jinja2 ({missing}): pip install -e '.[bench]'")

import jinjamark

try:
    import minijinja
except ImportError:
    minijinja = None


def corpus() -> Path:
    for folder in (ROOT / "tests" / "corpus", ROOT.parent / "shared" / "corpus"):
        if (folder / "templates").is_dir():
            return folder
    sys.exit("no corpus found in tests/corpus or ../shared/corpus")


# ---------------------------------------------------------------------------- engines
# Each engine: fresh() -> environment; compile(env, source) -> template; render(template, fixture).

_CLEANED: dict[int, dict] = {}


def context(fixture: dict) -> dict:
    """The context Jinja2 and minijinja render with: the fixture cleaned as transformers 5's
    apply_chat_template cleans it (as ChatTemplate.render does, whose time includes it), made
    once per fixture so that their timings do not include it."""
    found = _CLEANED.get(id(fixture))
    if found is None:
        cleaner = jinjamark.ChatTemplate("{{ messages }}", special_tokens=dict(oracle.SPECIAL_TOKENS))
        found = _CLEANED[id(fixture)] = cleaner.context(
            fixture["messages"], fixture.get("tools"), fixture.get("documents"), True,
            **(fixture.get("kwargs") or {}))
    return found


def jinjamark_compile(env, source: str):
    return jinjamark.ChatTemplate(source, special_tokens=dict(oracle.SPECIAL_TOKENS),
                                  now=lambda: oracle.FIXED_NOW, environment=env)


def jinjamark_render(template, fixture: dict) -> str:
    return template.render(fixture["messages"], tools=fixture.get("tools"),
                           documents=fixture.get("documents"), add_generation_prompt=True,
                           **(fixture.get("kwargs") or {}))


def jinjamark_parts(template, fixture: dict) -> list:
    return template.render_parts(fixture["messages"], tools=fixture.get("tools"),
                                 documents=fixture.get("documents"), add_generation_prompt=True,
                                 **(fixture.get("kwargs") or {}))


def minijinja_environment():
    def raise_exception(message):
        raise minijinja.TemplateError(message)

    return minijinja.Environment(
        trim_blocks=True, lstrip_blocks=True, auto_escape_callback=lambda name: False,
        filters={"tojson": oracle.tojson},
        globals={"raise_exception": raise_exception,
                 "strftime_now": lambda fmt: oracle.FIXED_NOW.strftime(fmt)})


def minijinja_compile(env, source: str):
    env.add_template("chat", source)
    return env


def minijinja_render(env, fixture: dict) -> str:
    return env.render_template("chat", **context(fixture))


ENGINES: dict[str, tuple[Callable, Callable, Callable]] = {
    "jinjamark": (jinjamark.chat_environment, jinjamark_compile, jinjamark_render),
    "jinja2": (oracle.environment, lambda env, source: env.from_string(source),
               lambda template, fixture: template.render(**context(fixture))),
}
if minijinja is not None:
    ENGINES["minijinja"] = (minijinja_environment, minijinja_compile, minijinja_render)


# ---------------------------------------------------------------------------- timing

def best_time(fn: Callable[[], Any], repeat: int, budget: float = 0.002) -> float:
    """Seconds per call: the best of `repeat` loops, each long enough to read the clock well."""
    number, elapsed = 1, 0.0
    while True:  # calibrate, as timeit does
        elapsed = loop_time(fn, number)
        if elapsed >= budget or number >= 1000:
            break
        number *= 4
    return min([elapsed] + [loop_time(fn, number) for _ in range(repeat - 1)]) / number


def loop_time(fn: Callable[[], Any], number: int) -> float:
    gc.disable()
    try:
        start = time.perf_counter()
        for _ in range(number):
            fn()
        return time.perf_counter() - start
    finally:
        gc.enable()


def cold_time(engine: str, source: str, fixture: dict, repeat: int) -> float:
    """A fresh environment (not timed), then compile plus first render (timed); best of repeat."""
    fresh, compile_, render = ENGINES[engine]
    times = []
    for _ in range(repeat):
        env = fresh()
        gc.disable()
        try:
            start = time.perf_counter()
            render(compile_(env, source), fixture)
            times.append(time.perf_counter() - start)
        finally:
            gc.enable()
    return min(times)


def attempt(fn: Callable[[], str]) -> tuple[Optional[str], Optional[BaseException]]:
    try:
        return fn(), None
    except Exception as error:  # noqa: BLE001 - any failure makes the case unsupported
        return None, error


# ---------------------------------------------------------------------------- the run

class Tally:
    """Per engine: cases equal to Jinja2, different, raised; templates it cannot render."""

    def __init__(self) -> None:
        self.equal = self.differ = self.raised = 0
        self.uncompiled: set[str] = set()    # templates that do not compile
        self.unsupported: set[str] = set()   # templates that raise where Jinja2 renders


class Results:
    """Everything one run found: correctness tallies and the timings of the agreeing cases."""

    def __init__(self) -> None:
        self.tally = {name: Tally() for name in ENGINES if name != "jinja2"}
        self.warm: dict[str, list[float]] = {name: [] for name in [*ENGINES, "jinjamark parts"]}
        self.cold: dict[str, list[float]] = {name: [] for name in ENGINES}
        self.jinja2_raised = 0
        self.parts_differ = 0  # cases whose render_parts text is not the render's text
        self.timed_templates = 0
        self.marking: list[tuple[float, float]] = []  # longest conversation: (mark, render)


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="every 8th template, every 4th conversation, fewer repeats")
    args = parser.parse_args(argv)
    repeat = 2 if args.quick else 5

    folder = corpus()
    templates = sorted((folder / "templates").glob("*.jinja"))
    conversations = [json.loads(p.read_text(encoding="utf-8"))
                     for p in sorted((folder / "conversations").glob("*.json"))]
    if args.quick:
        templates, conversations = templates[::8], conversations[::4]

    start = time.perf_counter()
    jinjamark.chat_environment()  # builds (or loads) the Lark parser: once per process
    parser_time = time.perf_counter() - start

    print(f"corpus {folder}: {len(templates)} templates x {len(conversations)} conversations",
          file=sys.stderr)
    results = Results()
    longest = max(conversations, key=lambda fixture: len(fixture["messages"]))
    for path in templates:
        measure_template(path, conversations, repeat, results, longest)
        print(".", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    report(templates, conversations, results, parser_time)
    return 0


def measure_template(path: Path, conversations: list[dict], repeat: int, results: Results,
                     longest: dict) -> None:
    source = path.read_text(encoding="utf-8")
    compiled = {}
    for name, (fresh, compile_, _) in ENGINES.items():
        compiled[name], error = attempt(lambda: compile_(fresh(), source))
        if error is not None and name != "jinja2":
            results.tally[name].uncompiled.add(path.stem)
    first_ok = None
    for fixture in conversations:
        if not all_agree(path.stem, compiled, fixture, results):
            continue  # time only the cases every engine renders as Jinja2 does
        first_ok = first_ok or fixture
        for name, (_, _, render) in ENGINES.items():
            results.warm[name].append(best_time(lambda: render(compiled[name], fixture), repeat))
        parts = jinjamark_parts(compiled["jinjamark"], fixture)  # checked untimed: the text of
        if "".join(p.text for p in parts) != jinjamark_render(compiled["jinjamark"], fixture):
            results.parts_differ += 1                           # the parts is the rendered text
        results.warm["jinjamark parts"].append(
            best_time(lambda: jinjamark_parts(compiled["jinjamark"], fixture), repeat))
        if fixture is longest:
            data = {"messages": fixture["messages"], "tools": fixture.get("tools"),
                    "documents": fixture.get("documents"), **(fixture.get("kwargs") or {})}
            results.marking.append((best_time(lambda: jinjamark.mark_input(data), repeat),
                                    results.warm["jinjamark"][-1]))
    if first_ok is not None:
        results.timed_templates += 1
        for name in ENGINES:
            results.cold[name].append(cold_time(name, source, first_ok, max(1, repeat // 2)))


def all_agree(stem: str, compiled: dict, fixture: dict, results: Results) -> bool:
    """Render one case with every engine and tally; True when all give Jinja2's text."""
    if compiled["jinja2"] is None:
        results.jinja2_raised += 1
        return False
    want, error = attempt(lambda: ENGINES["jinja2"][2](compiled["jinja2"], fixture))
    if error is not None:
        results.jinja2_raised += 1
        return False
    agree = True
    for name, tally in results.tally.items():
        outcome = "raised"  # a template that does not compile raises on every case
        if compiled[name] is not None:
            got, error = attempt(lambda: ENGINES[name][2](compiled[name], fixture))
            outcome = "raised" if error else "equal" if got == want else "differ"
        setattr(tally, outcome, getattr(tally, outcome) + 1)
        if outcome == "raised":
            tally.unsupported.add(stem)
        agree = agree and outcome == "equal"
    return agree


def report(templates: list, conversations: list, results: Results, parser_time: float) -> None:
    cases = len(templates) * len(conversations)
    print(f"{len(templates)} templates x {len(conversations)} conversations = {cases} cases "
          f"(add_generation_prompt=True); Jinja2 raises on {results.jinja2_raised} (left out)")
    for name, t in results.tally.items():
        unsupported = t.unsupported | t.uncompiled
        line = (f"{name:>10}: {t.equal} cases equal to Jinja2, {t.differ} differ, {t.raised} raise; "
                f"{len(unsupported)} of {len(templates)} templates unsupported")
        if unsupported:
            line += (f" ({len(t.uncompiled)} do not compile, {len(unsupported - t.uncompiled)} "
                     f"raise on some conversation)")
        print(line)
    if "minijinja" not in results.tally:
        print("minijinja: not installed (pip install minijinja), left out")
    print(f"timed: {len(results.warm['jinja2'])} render cases and {results.timed_templates} "
          f"templates that every engine renders exactly as Jinja2")
    print(f"jinjamark parser build or load, once per process: {parser_time * 1e3:.1f} ms")
    if results.warm["jinja2"]:
        timing_tables(results)


def timing_tables(results: Results) -> None:
    rows = (("compile + first render", results.cold), ("warm render", results.warm))
    others = [n for n in ENGINES if n != "jinjamark"]
    print(f"\n{'median time':<28}" + "".join(f"{n:>14}" for n in ENGINES))
    for label, data in rows:
        print(f"{label:<28}" + "".join(f"{ms(statistics.median(data[n])):>14}" for n in ENGINES))
    print(f"\n{'median of per-case ratios':<28}" + "".join(f"{'jinjamark/' + n:>22}" for n in others))
    for label, data in rows:
        print(f"{label:<28}" + "".join(f"{ratio(data['jinjamark'], data[n]):>22}" for n in others))
    parts, plain = results.warm["jinjamark parts"], results.warm["jinjamark"]
    print(f"\njinjamark render_parts / render (warm), median ratio: {ratio(parts, plain)}"
          f" ({results.parts_differ} cases where the parts' text differs from the render)")
    extra = statistics.median(a - b for a, b in zip(parts, plain))
    print(f"  what returning parts adds, median: {extra * 1e6:.1f} us a render; over all timed "
          f"cases together: {sum(parts) / sum(plain):.2f}x the time of rendering them")
    if results.marking:
        share = statistics.median(mark / render for mark, render in results.marking)
        print(f"mark_input of the longest conversation / rendering it, median over "
              f"{len(results.marking)} templates: {share:.1%}")


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3f} ms"


def ratio(numerators: list[float], denominators: list[float]) -> str:
    return f"{statistics.median(a / b for a, b in zip(numerators, denominators)):.2f}x"


if __name__ == "__main__":
    sys.exit(main())
