"""How the benchmark reads the clock: CPU time of this process, engines interleaved, ratios per round.

The machine is shared, so wall time would charge an engine for other programs' work: every figure is
`time.process_time()` (this process's CPU seconds), with the garbage collector off while a loop
runs, as `timeit` does. A case is timed in rounds; in each round every engine runs its loop once,
in an order that rotates from round to round, so that a busy moment or a warming cache weighs on all
of them alike. A ratio is taken within a round and the case's ratio is the median of its rounds'.
"""
from __future__ import annotations

import gc
import math
import statistics
import time
from typing import Any, Callable, Sequence

clock = time.process_time


def loop_time(fn: Callable[[], Any], number: int) -> float:
    """CPU seconds of `number` calls, the collector off."""
    gc.disable()
    try:
        start = clock()
        for _ in range(number):
            fn()
        return clock() - start
    finally:
        gc.enable()


def calibrate(fn: Callable[[], Any], budget: float) -> int:
    """How many calls make a loop of at least `budget` CPU seconds (at most 10,000)."""
    number = 1
    while True:
        elapsed = loop_time(fn, number)
        if elapsed >= budget or number >= 10_000:
            return number
        # aim a little above the budget, without overshooting on a first noisy reading
        guess = int(number * budget * 1.2 / elapsed) if elapsed > 0 else number * 10
        number = max(number * 2, min(guess, number * 100))


WARM_CALLS = 3  # calls of each function before it is calibrated: what a first use costs is not timed


def rounds(fns: dict[str, Callable[[], Any]], count: int, budget: float) -> dict[str, list[float]]:
    """Seconds per call of each function, one figure per round, the functions interleaved.
    Each is called a few times first: a body is generated on its second run (jinjamark's
    tiers), and an origin render compiles its variant of the template when first asked, so a
    calibration that met those one-off costs chose loops of one or two calls, timed cold."""
    for fn in fns.values():
        for _ in range(WARM_CALLS):
            fn()
    numbers = {name: calibrate(fn, budget) for name, fn in fns.items()}
    names = list(fns)
    times: dict[str, list[float]] = {name: [] for name in names}
    for r in range(count):
        order = names[r % len(names):] + names[:r % len(names)]
        for name in order:
            times[name].append(loop_time(fns[name], numbers[name]) / numbers[name])
    return times


def once(fn: Callable[[], Any]) -> float:
    """CPU seconds of a single call, the collector off (for steps that cannot be repeated warm)."""
    gc.disable()
    try:
        start = clock()
        fn()
        return clock() - start
    finally:
        gc.enable()


def round_ratio(times: dict[str, list[float]], a: str, b: str) -> float:
    """The median over rounds of a's time / b's time in the same round."""
    return statistics.median(x / y for x, y in zip(times[a], times[b]) if y > 0)


def percentile(values: Sequence[float], p: float) -> float:
    """The p-th percentile (0..100), linear between the closest ranks."""
    ordered = sorted(values)
    if not ordered:
        return math.nan
    k = (len(ordered) - 1) * p / 100
    lo, hi = math.floor(k), math.ceil(k)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)
