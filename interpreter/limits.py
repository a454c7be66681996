"""Bounds on what a template may make the machine do. An embedder can set each one.

Templates are downloaded from model hubs and inputs come from strangers: every way a template
can make a render slow or large is bounded, and checked *before* the work or the allocation.
The limits of the render in progress are in a context variable, so that filters and methods
(which get no environment) can check widths too.
"""
from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass
from typing import Any, Optional

from . import metering
from .errors import LimitExceeded


@dataclass(frozen=True)
class Limits:
    """Every limit a render is held to; raise one with `Limits(max_output=...)`. The defaults are
    measured: every corpus chat template renders a 1,000-turn conversation, and so does a
    template looking ahead over the rest of it for each message (1,001,000 iterations, 13.6M
    steps), while every attack of tests/test_attacks.py ends within 2 s and 500 MB. Steps are
    weighted by what a node costs to run (evaluation/compiling/core.py: a call 10, a filter 6, a name 1), so
    that a loop of cheap steps within every limit ends, by the fuel, in about 1-3 s."""
    max_template_size: int = 100_000       # characters of template source (compiles in < ~1 s)
    max_nesting: int = 200                 # parser: how deeply constructs may nest
    max_output: int = 50_000_000           # characters written by one render (and any one string)
    max_fuel: int = 15_000_000             # evaluation steps (AST nodes evaluated) per render
    max_loop_iterations: int = 2_500_000   # iterations of all loops of one render together
    max_recursion: int = 50                # nested macro calls plus recursive-loop depth
    max_range: int = 100_000               # items of `range()` (Jinja2's sandbox: the same)
    max_repeat: int = 10_000_000           # items made by `'ab' * n` or `[x] * n`, or of a list sum
    max_power_bits: int = 100_000          # bits of an integer `a ** b`
    max_format_width: int = 100_000        # widths and precisions: `%`, format, center, indent
    max_work: int = 500_000_000            # work of builtins per render, in units of about 1 ns
    deadline: Optional[float] = None       # seconds of wall clock per render, None: no deadline

    def check_repeat(self, left: Any, right: Any) -> None:
        for seq, n in ((left, right), (right, left)):
            if isinstance(seq, (str, list, tuple)) and isinstance(n, int) and not isinstance(n, bool):
                if len(seq) * n > self.max_repeat:
                    raise LimitExceeded(f"repetition would make {len(seq) * n} items "
                                        f"(limit {self.max_repeat})")

    def check_power(self, base: Any, exponent: Any) -> None:
        if (isinstance(base, int) and isinstance(exponent, int) and exponent > 0
                and abs(base) > 1 and exponent * math.log2(abs(base)) >= self.max_power_bits):
            raise LimitExceeded(f"the power would have more than {self.max_power_bits} bits")

    def check_product(self, left: Any, right: Any) -> None:
        """Integers grown by multiplication (`x * x` in a loop) are bounded like powers."""
        if (type(left) is not bool and type(right) is not bool and isinstance(left, int)
                and isinstance(right, int)
                and left.bit_length() + right.bit_length() > self.max_power_bits + 1):
            raise LimitExceeded(f"the product would have more than {self.max_power_bits} bits")

    def check_items(self, size: int) -> None:
        """A list or tuple about to be built of this many items (8 bytes each at least)."""
        if size > self.max_repeat:
            raise LimitExceeded(f"a list of {size} items would exceed the limit ({self.max_repeat})")

    def check_size(self, size: int) -> None:
        """A string or list about to be built from pieces of this total size."""
        if size > self.max_output:
            raise LimitExceeded(f"a value of {size} items would exceed the output limit "
                                f"({self.max_output})")

    def check_width(self, width: Any) -> None:
        if isinstance(width, str):
            width = len(width)  # indent("    ") and friends take a string as the width
        if isinstance(width, int) and width > self.max_format_width:
            raise LimitExceeded(f"width {width} is over the limit ({self.max_format_width})")


DEFAULT_LIMITS = Limits()
metering.OUTSIDE_A_RENDER = DEFAULT_LIMITS

# ---------------------------------------------------------------------------- the current render
# A render's Budget is also its work meter (metering.Meter): one object, one context variable,
# for what the builtins charge and the limits they check.

def current() -> Limits:
    """The limits of the render running now; the defaults outside one."""
    running = metering.running()
    return DEFAULT_LIMITS if running is None else running.limits


# activate(budget): start a render under `budget`: its builtins check widths against its limits
# and charge their work to it (metering.py), and its environment's sandbox hooks decide
# (values/sandbox.py); deactivate(the token activate returned) ends it. metering's own.
activate = metering.start
deactivate = metering.stop


def check_width(width: Any) -> None:
    """For filters and methods that pad or indent: refuse absurd widths before allocating."""
    current().check_width(width)


_NUMBERS = re.compile(r"\d+")
_PERCENT_SPEC = re.compile(r"%(\([^)]*\))?[-#0 +]*(\*|\d*)(?:\.(\*|\d*))?[hlL]?(.?)")


def check_percent(fmt: str, params: Any) -> None:
    """Widths and precisions of a `%` format, `*` ones (taken from the arguments) included, and
    the size of the text: each conversion counted with what it prints (a key used 1,000 times
    prints its value 1,000 times), before Python builds it."""
    limits = current()
    args = params if isinstance(params, tuple) else (params,)
    metering.charge(len(fmt) * metering.CALL / 4)  # the conversions are found in Python steps
    total = len(fmt)
    position = 0
    for m in _PERCENT_SPEC.finditer(fmt):
        if m.group(4) == "%":
            continue
        for group in (m.group(2), m.group(3)):
            if group == "*":
                if position < len(args):
                    limits.check_width(args[position])
                    total += args[position] if type(args[position]) is int else 0
                position += 1
            elif group:
                limits.check_width(int(group))
                total += int(group)
        if m.group(1) is not None and isinstance(params, dict):
            total += printed_size(params.get(m.group(1)[1:-1]))
        elif position < len(args):
            total += printed_size(args[position])
        position += 1
        limits.check_size(total)
    metering.charge(total * metering.COPY)


def printed_size(value: Any) -> int:
    """About how many characters `str(value)` has; refused past the output limit."""
    if isinstance(value, str):
        return len(value)
    if type(value) in _EXACT:
        return 8
    most = current().max_output
    printed = _Printed(most)
    total = printed.size(value)
    if total > most:
        raise LimitExceeded(f"printing this value would pass the output limit ({most})")
    printed.meter.charge(printed.walked)
    return total


def check_spec(spec: str) -> None:
    """The widths and precisions of one `{}` format spec, nested fields already filled in."""
    if spec:
        limits = current()
        for digits in _NUMBERS.findall(spec):
            limits.check_width(int(digits))


def check_size(size: int) -> None:
    current().check_size(size)


def check_printable(value: Any, setup: float = 0) -> bool:
    """Refuse to print (repr, JSON) a value whose text would pass the output limit, before
    printing it. A container met again is counted from memory, so shared references cost one
    look-up each; a container inside itself prints as `[...]` once. Returns whether any string
    or number inside is of a subclass (so may carry input marks): False means surely none.
    `setup`: units the caller's print costs besides, charged with the walk."""
    if isinstance(value, str):
        return type(value) is not str
    meter = metering.running()  # one look for the limit and the charge (a message printed
    if meter is None:           # whole: the guard cost twice what repr() does)
        meter = metering.meter()
    memo = meter.printed
    known = None if memo is None else memo.get(id(value))
    if known is not None and known[0] is value:  # measured before in this render (the tools
        small = known[1]  # printed for each turn): its walk charged again, not walked again
    else:
        small = small_plain_size(value)
        if small is not None and memo is not None and len(memo) < REMEMBERED:
            memo[id(value)] = (value, small)  # the value kept: its id stays its own
    if small is not None:  # a few items of plain data (typed content, a tool call): no walker
        total, items, subclassed, _ = small
        most = meter.limits.max_output
        if total > most:
            raise LimitExceeded(f"printing this value would pass the output limit ({most})")
        meter.charge(setup + items * _PRINT_WALK + total * metering.TEXT)  # each container and its items walked
        return subclassed
    most = current().max_output
    printed = _Printed(most)
    total = printed.size(value)
    if total > most:
        raise LimitExceeded(f"printing this value would pass the output limit ({most})")
    printed.meter.charge(setup + printed.walked + total * metering.TEXT)  # the rest of the walk, the printing
    return printed.subclassed


_EXACT = frozenset((str, int, float, bool, type(None)))
_Input: type = str  # values.marks.Input once it is defined (it builds on this module)


def input_text(cls: type) -> type:
    """Class decorator for the string of input (values/marks.py's Input): the size walk counts
    its strings where it meets them, as it does exact ones, not through its stack."""
    global _Input
    _Input = cls
    return cls

# Containers whose printed size a render remembers: a few printed again and again (tools, a
# system message's parts); a loop printing new lists does not keep them all alive.
REMEMBERED = 64
_VIEWS = (type({}.keys()), type({}.values()), type({}.items()))
# Items: what the walk without a walker takes on (more goes to _Printed). It is two to three
# times as fast as the walker for data without shared containers (a list of ten tools is a few
# hundred items); a value past it costs this many items' walk more, once.
SMALL = 512


def small_plain_size(value: Any) -> Optional[tuple[int, int, bool, bool]]:
    """(size, items walked, whether a string or number of a subclass is inside, whether it is
    JSON as json.loads makes it: no subclass, no tuple) as `_Printed` counts the first three
    (its walk units: items times _PRINT_WALK), for a value of at most `SMALL` items of plain
    data (dicts, lists, tuples, str, numbers, None; the strings and numbers may be of a
    subclass: marked ones, in render_parts);
    None for anything else (a container of a subclass, a host object, more items, a container
    inside itself: counted past `SMALL`). A container met twice is walked twice here, so its
    walk may be charged twice (the walker counts it from memory): what walking it again costs."""
    stack, total, items, subclassed, tuples = [value], 0, 0, False, False
    push, pop = stack.append, stack.pop
    while stack:
        item = pop()
        kind = type(item)
        # A container's exact strings (most of what typed content and tools hold) are counted
        # as its items are met, without a trip through the stack: a fifth to a third faster.
        if kind is dict:
            n = len(item)
            items += n + 1
            if items > SMALL:
                return None
            total += 2 * n + 2
            for key, child in item.items():
                if type(key) is str:
                    total += len(key) + 4
                elif type(key) is _Input:  # (render_parts' keys and texts)
                    total += len(key) + 4
                    subclassed = True
                else:
                    push(key)
                if type(child) is str:
                    total += len(child) + 4
                elif type(child) is _Input:
                    total += len(child) + 4
                    subclassed = True
                else:
                    push(child)
        elif kind is list or kind is tuple:
            if kind is tuple:
                tuples = True
            n = len(item)
            items += n + 1
            if items > SMALL:
                return None
            total += 2 * n + 2
            for child in item:
                if type(child) is str:
                    total += len(child) + 4
                elif type(child) is _Input:
                    total += len(child) + 4
                    subclassed = True
                else:
                    push(child)
        elif kind in _EXACT:
            total += len(item) + 4 if kind is str else 8
        elif isinstance(item, str):  # a marked string, say
            total += len(item) + 4
            subclassed = True
        elif isinstance(item, (int, float)) and kind not in metering.ATTRIBUTE_HOLDERS:
            total += 8  # a number from input
            subclassed = True
        else:
            return None
    return total, items, subclassed, not (subclassed or tuples)


class _Printed:
    """About how many characters a value prints as (str() of a container, or its JSON)."""

    def __init__(self, most: int) -> None:
        self.most = most
        self.steps = _MAX_PRINT_STEPS
        self.meter = metering.meter()    # the walk is charged as it goes, in chunks
        self.walked = 0                  # units of walk not charged yet
        self.known: dict[int, int] = {}  # id of a container walked already -> its size
        self.path: set[int] = set()      # the containers being walked, for cycles
        self.subclassed = False          # met a str or number of a subclass (a marked one?)

    def size(self, value: Any) -> int:
        if isinstance(value, str):
            if type(value) is not str:
                self.subclassed = True
            return len(value) + 4
        if not isinstance(value, (dict, list, tuple)):
            if type(value) in _EXACT:
                return 8
            self.subclassed = True
            if type(value) in metering.ATTRIBUTE_HOLDERS:  # a namespace prints its attributes
                return 13 + self.size(value.attrs)
            if isinstance(value, (set, frozenset)) or type(value) in _VIEWS:
                return 6 + self.size(list(value))
            return 8
        if type(value) is not list and type(value) is not dict and type(value) is not tuple:
            self.subclassed = True  # a subclass may print otherwise (a named tuple, its own repr)
        key = id(value)
        total = self.known.get(key)
        if total is not None:
            return total
        if key in self.path:
            return 5
        self.steps -= len(value) + 1
        self.walked += (len(value) + 1) * _PRINT_WALK
        if self.walked > metering.CLOCK:  # a long walk is charged (and the clock looked at) as it goes
            self.meter.charge(self.walked)
            self.walked = 0
        if self.steps < 0:
            raise LimitExceeded(f"printing this value would pass the output limit ({self.most})")
        self.path.add(key)
        total = 2 * len(value) + 2
        if isinstance(value, dict):
            total += self._items(value) + self._items(value.values())
        else:
            total += self._items(value)
        self.path.discard(key)
        if total > self.most:
            raise LimitExceeded(f"printing this value would pass the output limit ({self.most})")
        self.known[key] = total
        return total

    def _items(self, items: Any) -> int:
        """The sizes of a container's items (a dict's keys, or its values): the common leaves,
        strings and None, inline; one call per container rather than per leaf."""
        total = 0
        for item in items:
            if type(item) is str:
                total += len(item) + 4
            elif item is None:
                total += 8
            elif isinstance(item, str):  # a subclass: a marked string, say
                self.subclassed = True
                total += len(item) + 4
            else:
                total += self.size(item)
        return total


_MAX_PRINT_STEPS = 5_000_000  # a value of more parts than this is no prompt
_PRINT_WALK = 60  # units per item of the size walk (Python steps, measured about 50 ns)


class Budget(metering.Meter):
    """The counters of one render: fuel, loop iterations, recursion, output; and, as the
    render's meter, the builtins' work and the deadline."""

    __slots__ = ("fuel", "iterations", "depth", "output")
    BATCH = 4096  # steps between looks at the clock
    ENTER = 10    # steps a macro call, caller, include or recursive loop level costs beyond its
                  # nodes: binding a frame costs about ten simple nodes (measured)

    def __init__(self, limits: Limits, environment: Any = None) -> None:
        metering.Meter.__init__(self, limits, environment)  # (super() costs twice the call)
        self.fuel = limits.max_fuel
        self.iterations = limits.max_loop_iterations
        self.depth = 0
        self.output = limits.max_output

    def refuel(self, steps: int = 0) -> int:
        """Called when the steps of a batch are spent (`steps` <= 0: how far past): take the
        batch and the overdraft from the fuel and look at the clock; a new batch of steps."""
        self.fuel -= self.BATCH - steps
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
        self.fuel -= self.ENTER
        if self.fuel < 0:
            raise LimitExceeded(f"the render took more than {self.limits.max_fuel} steps")
        self.depth += 1
        if self.depth > self.limits.max_recursion:
            self.depth -= 1
            raise LimitExceeded(f"macros, recursive loops, blocks and included templates nest deeper than "
                                f"{self.limits.max_recursion} calls")

    def leave(self) -> None:
        self.depth -= 1
