"""Bounds on what a template may make the machine do. An embedder can set each one.

Templates are downloaded from model hubs and inputs come from strangers: every way a template
can make a render slow or large is bounded, and checked *before* the work or the allocation.
The limits of the render in progress are in a context variable, so that filters and methods
(which get no environment) can check widths too.
"""
from __future__ import annotations

import contextvars
import re
import time
from dataclasses import dataclass
from typing import Any, Optional

from .errors import LimitExceeded


@dataclass(frozen=True)
class Limits:
    """Every limit a render is held to. The defaults let every corpus chat template render a
    1,000-turn conversation; raise one with `Limits(max_output=...)`."""
    max_template_size: int = 1_000_000     # characters of template source
    max_nesting: int = 200                 # parser: how deeply constructs may nest
    max_output: int = 50_000_000           # characters written by one render (and any one string)
    max_fuel: int = 50_000_000             # evaluation steps (AST nodes evaluated) per render
    max_loop_iterations: int = 5_000_000   # iterations of all loops of one render together
    max_recursion: int = 50                # nested macro calls plus recursive-loop depth
    max_range: int = 100_000               # items of `range()` (Jinja2's sandbox: the same)
    max_repeat: int = 10_000_000           # items made by `'ab' * n` or `[x] * n`
    max_power_bits: int = 100_000          # bits of an integer `a ** b`
    max_format_width: int = 100_000        # widths and precisions: `%`, format, center, indent
    deadline: Optional[float] = None       # seconds of wall clock per render, None: no deadline

    def check_repeat(self, left: Any, right: Any) -> None:
        for seq, n in ((left, right), (right, left)):
            if isinstance(seq, (str, list, tuple)) and isinstance(n, int) and not isinstance(n, bool):
                if len(seq) * n > self.max_repeat:
                    raise LimitExceeded(f"repetition would make {len(seq) * n} items "
                                        f"(limit {self.max_repeat})")

    def check_power(self, base: Any, exponent: Any) -> None:
        if (isinstance(base, int) and isinstance(exponent, int) and exponent > 0
                and abs(base) > 1 and base.bit_length() * exponent > self.max_power_bits):
            raise LimitExceeded(f"the power would have more than {self.max_power_bits} bits")

    def check_size(self, size: int) -> None:
        """A string or list about to be built from pieces of this total size."""
        if size > self.max_output:
            raise LimitExceeded(f"a value of {size} items would exceed the output limit "
                                f"({self.max_output})")

    def check_width(self, width: Any) -> None:
        if isinstance(width, int) and width > self.max_format_width:
            raise LimitExceeded(f"width {width} is over the limit ({self.max_format_width})")


DEFAULT_LIMITS = Limits()

# ---------------------------------------------------------------------------- the current render

_current: contextvars.ContextVar[Limits] = contextvars.ContextVar("jinjamark_limits",
                                                                  default=DEFAULT_LIMITS)


def current() -> Limits:
    return _current.get()


def activate(limits: Limits) -> contextvars.Token:
    return _current.set(limits)


def deactivate(token: contextvars.Token) -> None:
    _current.reset(token)


def check_width(width: Any) -> None:
    """For filters and methods that pad or indent: refuse absurd widths before allocating."""
    _current.get().check_width(width)


_NUMBERS = re.compile(r"\d+")
_PERCENT_SPEC = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\d*)(?:\.(\d*))?")


def check_format(fmt: str) -> None:
    """Widths and precisions in a `%` or `{}` format string."""
    limits = _current.get()
    if "%" in fmt:
        for m in _PERCENT_SPEC.finditer(fmt):
            for group in m.groups():
                if group and len(group) > 3:
                    limits.check_width(int(group))
    if "{" in fmt:
        for spec in re.findall(r":([^{}]*)\}", fmt):
            for digits in _NUMBERS.findall(spec):
                if len(digits) > 3:
                    limits.check_width(int(digits))


class Budget:
    """The counters of one render: fuel, loop iterations, recursion, output, deadline."""

    __slots__ = ("limits", "fuel", "iterations", "depth", "output", "deadline")
    BATCH = 4096  # steps between looks at the clock

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.fuel = limits.max_fuel
        self.iterations = limits.max_loop_iterations
        self.depth = 0
        self.output = limits.max_output
        self.deadline = time.monotonic() + limits.deadline if limits.deadline is not None else None

    def refuel(self) -> int:
        """Called every BATCH steps: take fuel from the budget and look at the clock."""
        self.fuel -= self.BATCH
        if self.fuel < 0:
            raise LimitExceeded(f"the render took more than {self.limits.max_fuel} steps")
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise LimitExceeded(f"the render took longer than {self.limits.deadline} seconds")
        return self.BATCH

    def wrote(self, n: int) -> None:
        self.output -= n
        if self.output < 0:
            raise LimitExceeded(f"the output is longer than {self.limits.max_output} characters")

    def iterate(self, n: int) -> None:
        self.iterations -= n
        if self.iterations < 0:
            raise LimitExceeded(f"loops ran more than {self.limits.max_loop_iterations} iterations")

    def enter(self) -> None:
        self.depth += 1
        if self.depth > self.limits.max_recursion:
            self.depth -= 1
            raise LimitExceeded(f"macros and recursive loops nest deeper than "
                                f"{self.limits.max_recursion} calls")

    def leave(self) -> None:
        self.depth -= 1
