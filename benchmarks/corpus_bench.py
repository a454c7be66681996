"""Warm render, render_parts and compile over the corpus: every template x every conversation.

Correctness first: each case is rendered by every engine and compared with Jinja2's text; an engine
is timed on a case only when it gives exactly Jinja2's text there (jinjamark against Jinja2 on the
cases jinjamark agrees on; minijinja joins the cases it agrees on too). render_parts is checked to
join to the render's text, untimed.
"""
from __future__ import annotations

import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from engines import ENGINES, OTHERS, attempt, jinjamark_parts
from timing import once, percentile, round_ratio, rounds


@dataclass
class Tally:
    """Per engine: cases equal to Jinja2, different, raised; templates it cannot render."""

    equal: int = 0
    differ: int = 0
    raised: int = 0
    uncompiled: set = field(default_factory=set)   # templates that do not compile
    unsupported: set = field(default_factory=set)  # templates that raise where Jinja2 renders

    def summary(self) -> dict:
        return {"equal": self.equal, "differ": self.differ, "raised": self.raised,
                "uncompiled": sorted(self.uncompiled),
                "unsupported": sorted(self.unsupported | self.uncompiled)}


@dataclass
class CorpusResults:
    templates: int = 0
    conversations: int = 0
    jinja2_raised: int = 0
    parts_differ: int = 0  # cases whose render_parts text is not the render's text
    origins_differ: int = 0  # the same for render_parts(origins=True)
    tally: dict = field(default_factory=lambda: {name: Tally() for name in ["jinjamark", *OTHERS]
                                                 if name != "jinja2"})
    cases: list = field(default_factory=list)     # one dict per timed case
    compiles: list = field(default_factory=list)  # one dict per timed template


def run(templates: list[Path], conversations: list[dict], count: int, budget: float,
        progress: bool = True) -> CorpusResults:
    results = CorpusResults(templates=len(templates), conversations=len(conversations))
    for path in templates:
        source = path.read_text(encoding="utf-8")
        compiled = {}
        for name, engine in ENGINES.items():
            compiled[name], error = attempt(lambda: engine.compile(engine.fresh(), source))
            if error is not None and name != "jinja2":
                results.tally[name].uncompiled.add(path.stem)
        for fixture in conversations:
            agree = agreeing(path.stem, compiled, fixture, results)
            if agree:
                results.cases.append(time_case(path.stem, compiled, fixture, agree, count, budget))
        if all(compiled.values()):
            results.compiles.append(time_compile(path.stem, source, count))
        if progress:
            print(".", end="", file=sys.stderr, flush=True)
    if progress:
        print(file=sys.stderr)
    return results


def agreeing(stem: str, compiled: dict, fixture: dict, results: CorpusResults) -> list[str]:
    """Render one case with every engine and tally; the engines that give Jinja2's text
    (empty when Jinja2 raises or jinjamark does not agree: nothing to time then)."""
    want, error = (None, True) if compiled["jinja2"] is None else attempt(
        lambda: ENGINES["jinja2"].render(compiled["jinja2"], fixture))
    if error is not None:
        results.jinja2_raised += 1
        return []
    agree = ["jinja2"]
    for name, tally in results.tally.items():
        outcome = "raised"  # a template that does not compile raises on every case
        if compiled[name] is not None:
            got, error = attempt(lambda: ENGINES[name].render(compiled[name], fixture))
            outcome = "raised" if error else "equal" if got == want else "differ"
        setattr(tally, outcome, getattr(tally, outcome) + 1)
        if outcome == "raised":
            tally.unsupported.add(stem)
        if outcome == "equal":
            agree.append(name)
    if "jinjamark" not in agree:
        return []
    parts = jinjamark_parts(compiled["jinjamark"], fixture)
    if "".join(p.text for p in parts) != want:
        results.parts_differ += 1
    if "".join(p.text for p in jinjamark_parts(compiled["jinjamark"], fixture, origins=True)) != want:
        results.origins_differ += 1
    return agree


def time_case(stem: str, compiled: dict, fixture: dict, agree: list[str], count: int,
              budget: float) -> dict:
    fns = {name: (lambda name=name: ENGINES[name].render(compiled[name], fixture)) for name in agree}
    fns["parts"] = lambda: jinjamark_parts(compiled["jinjamark"], fixture)
    fns["origins"] = lambda: jinjamark_parts(compiled["jinjamark"], fixture, origins=True)
    times = rounds(fns, count, budget)
    case: dict[str, Any] = {"template": stem, "conversation": fixture.get("_name"),
                            "seconds": {name: statistics.median(t) for name, t in times.items()},
                            "ratios": {"parts/render": round_ratio(times, "parts", "jinjamark"),
                                       "origins/parts": round_ratio(times, "origins", "parts")}}
    for other in OTHERS:
        if other in times:
            case["ratios"][f"jinjamark/{other}"] = round_ratio(times, "jinjamark", other)
    return case


def time_compile(stem: str, source: str, count: int) -> dict:
    """Each engine's own compile step (`from_string`; minijinja's `add_template`) in a fresh
    environment made untimed, rounds interleaved. Every compile gets a distinct trailing comment,
    so that no cache of compiled templates keyed by source can answer instead of compiling."""
    times: dict[str, list[float]] = {name: [] for name in ENGINES}
    names = list(ENGINES)
    for r in range(count):
        for name in names[r % len(names):] + names[:r % len(names)]:
            engine, text = ENGINES[name], f"{source}{{# compile {r} #}}"
            env = engine.fresh()
            times[name].append(once(lambda: engine.from_string(env, text)))
    return {"template": stem, "seconds": {name: statistics.median(t) for name, t in times.items()},
            "ratios": {f"jinjamark/{o}": round_ratio(times, "jinjamark", o) for o in OTHERS}}


# ---------------------------------------------------------------------------- summary

def ratios_of(items: list[dict], key: str) -> list[float]:
    return [item["ratios"][key] for item in items if key in item["ratios"]]


def summarize(results: CorpusResults) -> dict:
    """Medians, p90s, sums and worst cases of what `run` measured."""
    out: dict[str, Any] = {"templates": results.templates, "conversations": results.conversations,
                           "jinja2_raised": results.jinja2_raised,
                           "parts_differ": results.parts_differ,
                           "origins_differ": results.origins_differ,
                           "tally": {name: t.summary() for name, t in results.tally.items()},
                           "timed_cases": len(results.cases),
                           "compiled_templates": len(results.compiles)}
    for other in OTHERS:
        warm = ratios_of(results.cases, f"jinjamark/{other}")
        comp = ratios_of(results.compiles, f"jinjamark/{other}")
        out[f"warm/{other}"] = spread(warm)
        out[f"compile/{other}"] = spread(comp)
    parts = ratios_of(results.cases, "parts/render")
    out["parts/render"] = spread(parts)
    out["parts/render"]["summed"] = (sum(c["seconds"]["parts"] for c in results.cases)
                                     / max(1e-12, sum(c["seconds"]["jinjamark"] for c in results.cases)))
    origins = ratios_of(results.cases, "origins/parts")
    out["origins/parts"] = spread(origins)
    out["origins/parts"]["summed"] = (sum(c["seconds"]["origins"] for c in results.cases)
                                      / max(1e-12, sum(c["seconds"]["parts"] for c in results.cases)))
    out["median_seconds"] = {
        "warm": {name: median_of(results.cases, name) for name in [*ENGINES, "parts"]},
        "compile": {name: median_of(results.compiles, name) for name in ENGINES}}
    by_ratio = sorted(results.cases, key=lambda c: c["ratios"]["jinjamark/jinja2"], reverse=True)
    out["worst_cases"] = [(f"{c['template']} x {c['conversation']}", c["ratios"]["jinjamark/jinja2"])
                          for c in by_ratio[:10]]  # the worst ten (issue 25)
    return out


def spread(values: list[float]) -> dict:
    if not values:
        return {"n": 0}
    return {"n": len(values), "median": statistics.median(values), "p90": percentile(values, 90),
            "worst": max(values)}


def median_of(items: list[dict], name: str) -> Optional[float]:
    values = [item["seconds"][name] for item in items if name in item["seconds"]]
    return statistics.median(values) if values else None
