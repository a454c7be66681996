"""Retained memory of a compiled template: what it keeps alive once compiled, per engine.

Measured with `tracemalloc` (every block Python's allocators hand out, objects and buffers alike):
the template is first compiled and rendered once in another environment, so that whatever an engine
builds once per process (regular expressions, parser tables, lazily made tables) exists already;
then a fresh environment is made, tracing starts, the engine's own compile step runs (`from_string`,
a distinct trailing comment so that no cache can answer), and the traced bytes in use are read;
then the template and its environment are dropped, the collector runs, and the bytes in use are read
again: the difference is what the compiled template kept. (Reading the growth from before the
compile instead counts the blocks Python's free lists keep after the compile's churn of tuples,
dicts and frames: for Jinja2, whose compile churns much, about twice what its template keeps.)
For Jinja2 that is its Template with the module namespace, functions and code objects of the Python
it generated; for jinjamark its Template (the AST, the analysis of scopes and blocks, whatever its
compiler keeps); the environment's cache entry counts too, for both. The same after one render of
a conversation (an engine may build parts of a template on first use), and after a second one:
jinjamark's steady state, in which a body rendered again runs as generated Python (its second
tier), which a template that serves many renders keeps. minijinja keeps its
templates in Rust's heap, which tracemalloc does not see: it is left out. A ChatTemplate (what a
jinjamark user holds: the Template plus its options) is reported alongside.
"""
from __future__ import annotations

import gc
import statistics
import sys
import tracemalloc
from pathlib import Path
from typing import Any, Callable, Optional

from engines import ENGINES, attempt, context, jinjamark_compile, jinjamark_render
from timing import percentile

MEASURED = {  # label: (engine, compile step, a render of what it gives)
    "jinjamark": ("jinjamark", ENGINES["jinjamark"].from_string,
                  lambda template, fixture: template.render(**context(fixture))),
    "jinja2": ("jinja2", ENGINES["jinja2"].from_string,
               lambda template, fixture: template.render(**context(fixture))),
    "jinjamark ChatTemplate": ("jinjamark", jinjamark_compile, jinjamark_render),
}


def retained(engine: str, compile_: Callable[[Any, str], Any], render: Callable[[Any], Any],
             source: str) -> tuple[int, Optional[int], Optional[int]]:
    """Bytes that dropping the template frees, after compiling `source` in a fresh environment (see
    the module doc), after its first render (an engine may build parts on first use) and after
    its second (the steady state)."""
    fresh = ENGINES[engine].fresh
    warm = attempt(lambda: compile_(fresh(), source + "{# warm-up #}"))[0]
    for _ in range(2):  # both tiers' modules loaded, whatever a render makes once per process made
        attempt(lambda: render(warm))
    env = fresh()
    gc.collect()
    tracemalloc.start()
    try:
        held = [compile_(env, source + "{# measured #}")]
        gc.collect()
        compiled = tracemalloc.get_traced_memory()[0]
        # only whether it raised: an error's traceback holds the render's frames, and they
        # the template, which would then outlive its drop (both engines read negative)
        failed = attempt(lambda: render(held[0]))[1] is not None
        gc.collect()
        rendered = tracemalloc.get_traced_memory()[0]
        attempt(lambda: render(held[0]))
        gc.collect()
        steady = tracemalloc.get_traced_memory()[0]
        held.clear()
        del env  # the environment too: its cache holds the template
        gc.collect()
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    if failed:
        return compiled - after, None, None
    return compiled - after, rendered - after, steady - after



def kept_by_file(engine: str, source: str) -> Optional[dict[str, int]]:
    """What `retained` reads after the compile, split by the source file that allocated each
    block (tracemalloc snapshots before and after the drop); None when `source` does not
    compile. benchmarks/floors.py counts the AST's part of it."""
    make = ENGINES[engine]
    if attempt(lambda: make.from_string(make.fresh(), source + "{# warm-up #}"))[1] is not None:
        return None
    env = make.fresh()
    gc.collect()
    tracemalloc.start()
    try:
        held = [make.from_string(env, source + "{# measured #}")]
        gc.collect()
        compiled = tracemalloc.take_snapshot()
        held.clear()
        del env  # the environment too: its cache holds the template
        gc.collect()
        dropped = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    return {stat.traceback[0].filename: stat.size_diff
            for stat in compiled.compare_to(dropped, "filename")}

def run(templates: list[Path], fixture: dict, progress: bool = True) -> dict:
    """Every template that both engines compile; the render is of `fixture`."""
    rows = []
    for path in templates:
        source = path.read_text(encoding="utf-8")
        row, ok = {"template": path.stem}, True
        for label, (engine, compile_, render) in MEASURED.items():
            kept, error = attempt(lambda: retained(engine, compile_,
                                                   lambda t: render(t, fixture), source))
            ok = ok and error is None
            if kept is not None:
                row[label], row[f"{label} rendered"], row[f"{label} rendered twice"] = kept
        if ok:
            rows.append(row)
        if progress:
            print("m", end="", file=sys.stderr, flush=True)
    if progress:
        print(file=sys.stderr)
    return summarize(rows)


def summarize(rows: list[dict]) -> dict:
    out: dict[str, Any] = {"templates": len(rows), "rows": rows}
    if not rows:
        return out
    for label in MEASURED:
        out[f"median bytes {label}"] = statistics.median(r[label] for r in rows)
    for label in ("jinjamark", "jinjamark ChatTemplate"):
        for after in ("", " rendered", " rendered twice"):
            both = [r for r in rows if r.get(label + after) and r.get("jinja2" + after)]
            if not both:
                continue
            ratios = [r[label + after] / r["jinja2" + after] for r in both]
            out[f"{label}/jinja2{after}"] = {
                "n": len(both), "median": statistics.median(ratios), "p90": percentile(ratios, 90),
                "summed": sum(r[label + after] for r in both) / sum(r["jinja2" + after] for r in both)}
    return out
