"""Render time against conversation length, per engine, for a few template families.

Generated conversations of 1 .. 2,048 messages (user and assistant turns; with tools, a cycle of a
user question, an assistant tool call, the tool's answer and the assistant's reply), each rendered
by every engine (checked equal to Jinja2's text first), timed in interleaved rounds. The cost per
message is the least-squares slope of time against length over the lengths from 16 on, where the
fixed cost of a render no longer dominates; the ratio is the median over rounds of the slopes' ratio
within a round. `plot` draws the curves (log-log) into a PNG.
"""
from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any, Optional

from engines import ENGINES, OTHERS, attempt, corpus
from timing import rounds

FAMILIES = {  # label: (corpus template, with tools)
    "ChatML": ("chatml--teknium_OpenHermes-2.5-Mistral-7B", False),
    "Llama-3.1": ("llamacpp--meta-llama-Llama-3.1-8B-Instruct", False),
    "Qwen3 with tools": ("qwen--Qwen_Qwen3-1.7B", True),
}
LENGTHS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048]
QUICK_LENGTHS = [1, 4, 16, 64, 256, 1024]
FIT_FROM = 16

TOOLS = [{"type": "function", "function": {
    "name": "get_current_weather", "description": "Get the current weather in a given location",
    "parameters": {"type": "object", "required": ["location"], "properties": {
        "location": {"type": "string", "description": "The city and state, e.g. San Francisco, CA"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}}}}]


def conversation(n: int, tools: bool) -> dict:
    """n generated messages; every text a little different, as in a real chat."""
    messages: list[dict[str, Any]] = []
    for i in range(n):
        step = i % 4 if tools else i % 2
        if step == 0:
            messages.append({"role": "user", "content": f"Question {i}: what is the weather like "
                                                        f"in city number {i} today?"})
        elif step == 1 and tools:
            messages.append({"role": "assistant", "content": "", "tool_calls": [{
                "type": "function", "function": {"name": "get_current_weather",
                                                 "arguments": {"location": f"City {i}"}}}]})
        elif step == 2:
            messages.append({"role": "tool", "content": f"{{\"temperature\": {i % 30}, \"sky\": \"clear\"}}"})
        else:
            messages.append({"role": "assistant", "content": f"Answer {i}: it is sunny and mild, "
                                                             f"about {i % 30} degrees."})
    return {"messages": messages, "tools": TOOLS if tools else None, "_name": f"generated-{n}"}


def run(quick: bool, count: int, budget: float) -> dict:
    lengths = QUICK_LENGTHS if quick else LENGTHS
    return {label: family(stem, tools, lengths, count, budget)
            for label, (stem, tools) in FAMILIES.items()}


def family(stem: str, tools: bool, lengths: list[int], count: int, budget: float) -> dict:
    source = (corpus() / "templates" / f"{stem}.jinja").read_text(encoding="utf-8")
    compiled = {name: e.compile(e.fresh(), source) for name, e in ENGINES.items()}
    points: list[dict] = []
    agree = set(ENGINES)
    for n in lengths:
        fixture = conversation(n, tools)
        want = ENGINES["jinja2"].render(compiled["jinja2"], fixture)
        for name in list(agree):
            got, _ = attempt(lambda: ENGINES[name].render(compiled[name], fixture))
            if got != want:
                agree.discard(name)  # an engine is timed only where it renders Jinja2's text
        fns = {name: (lambda name=name: ENGINES[name].render(compiled[name], fixture))
               for name in ENGINES if name in agree}
        points.append({"messages": n, "times": rounds(fns, count, budget)})
    return {"template": stem, "tools": tools, "engines": sorted(agree, key=list(ENGINES).index),
            **fit(points, [name for name in ENGINES if name in agree])}


def fit(points: list[dict], engines: list[str]) -> dict:
    """Per engine: the median time at each length and the slope; slope ratios to jinjamark."""
    fitted = [p for p in points if p["messages"] >= FIT_FROM] or points
    xs = [p["messages"] for p in fitted]
    out: dict[str, Any] = {"lengths": [p["messages"] for p in points], "seconds": {}, "slope": {},
                           "slope_ratio": {}}
    for name in engines:
        out["seconds"][name] = [statistics.median(p["times"][name]) for p in points]
        ys = [statistics.median(p["times"][name]) for p in fitted]
        out["slope"][name] = statistics.linear_regression(xs, ys).slope
    if "jinjamark" in engines:
        count = min(len(t) for p in fitted for t in p["times"].values())
        for other in OTHERS:
            if other in engines:
                per_round = [slope_in_round(fitted, "jinjamark", r) / slope_in_round(fitted, other, r)
                             for r in range(count)]
                out["slope_ratio"][f"jinjamark/{other}"] = statistics.median(per_round)
    return out


def slope_in_round(points: list[dict], name: str, r: int) -> float:
    xs = [p["messages"] for p in points]
    return statistics.linear_regression(xs, [p["times"][name][r] for p in points]).slope


def plot(curves: dict, path: Path, machine: Optional[str] = None) -> Path:
    """Render time against conversation length, a panel per family, a line per engine (log-log)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(curves), figsize=(5 * len(curves), 4.2), squeeze=False)
    for ax, (label, curve) in zip(axes[0], curves.items()):
        for name in curve["engines"]:
            per_message = curve["slope"][name] * 1e6
            ax.plot(curve["lengths"], [s * 1e3 for s in curve["seconds"][name]], marker="o",
                    markersize=3, label=f"{name} ({per_message:.2f} µs/message)")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(f"{label} ({curve['template'].split('--')[-1]})", fontsize=10)
        ax.set_xlabel("messages in the conversation")
        ax.set_ylabel("render time, ms (CPU)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("Warm render time against conversation length" + (f" ({machine})" if machine else ""),
                 fontsize=11)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
