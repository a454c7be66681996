"""The work builtins do, metered: every filter, method, test, comparison and format that walks
or builds something in proportion to its size charges the render's work budget first.

Fuel counts evaluation steps, but one step can be a filter over ten million characters, or a
comparison of two structures of 2^40 leaves built by sharing (`[x, x]` doubled 40 times: 40
list cells, a walk that never returns). So the builtins charge their work to a per-render
`Meter` before doing it, in units of about a nanosecond of this machine (the costs below were
measured with the standard library's own operations): a render gets `Limits.max_work` of them
in all, and a step whose estimated cost is more than what is left of the deadline is refused
before it starts. The meter also looks at the clock every `CLOCK` units, so the deadline fires
inside long steps and loops of them, not only between evaluation steps.

Structures are measured by their expanded size (what a comparison, a hash or a print walks:
a shared part counted each time it is reached), found with a walk that visits each distinct
container once.
"""
from __future__ import annotations

import contextvars
import functools
import time
from typing import Any, Callable, Iterator, Optional

from .errors import LimitExceeded

# Costs, in units (about a nanosecond here) per character or item of the operands.
FIND = 0.25     # a search or comparison in C's memchr/memcmp: in, ==, find, startswith
SCAN = 5        # a scan of characters one by one: count, strip, isdigit
COPY = 2        # a copy that maps characters: upper, replace, slicing, concatenation
TEXT = 12       # a pass in small Python steps or per-character tables: escape, JSON
TITLE = 40      # title case (a look at each character's neighbour)
SPLIT = 100     # a split: one new object per piece, as many as characters at worst
REGEX = 100     # regular expressions: wordcount, striptags
WRAP = 400      # text wrapping in Python steps: wordwrap
LINKS = 800     # urlize: a regular expression and Python steps per word
ITEM = 25       # an item through C code: in, max, sort, list(), a leaf of a comparison
WALK = 60       # an item of a container measured before a comparison (its type, its length)
CALL = 3000     # an item through a Python loop that calls back: map, select, batch, groupby
PRINT_BASE = 2000  # a call that prints a value other than text (`string` of a list: repr's setup)
CLOCK = 1_000_000  # units between looks at the clock


class Meter:
    """The work budget of one render and its deadline; and the environment whose sandbox hooks
    decide while it runs (values/sandbox.py: one context variable a render, not two)."""

    __slots__ = ("limits", "left", "deadline", "clock_at", "printed", "environment")

    def __init__(self, limits: Any, environment: Any = None) -> None:
        self.limits = limits
        self.environment = environment
        # Printed sizes of containers measured in this render, by id (limits.check_printable):
        # a dict where no container can change while it renders (the immutable sandbox), else None.
        self.printed: Optional[dict] = None
        self.left = limits.max_work
        self.deadline = None if limits.deadline is None else time.monotonic() + limits.deadline
        self.clock_at = self.left - CLOCK

    def charge(self, units: float) -> None:
        self.left -= units
        if self.left < self.clock_at:
            self.check(units)

    def check(self, units: float) -> None:
        if self.left < 0:
            raise LimitExceeded(f"the render's builtins would do more than {self.limits.max_work} "
                                "units of work (characters and items walked or built)")
        if self.deadline is not None:
            rest = self.deadline - time.monotonic()
            if rest < 0:
                raise LimitExceeded(f"the render took longer than {self.limits.deadline} seconds")
            if units * 1e-9 > rest:
                raise LimitExceeded(f"one step would run past the deadline "
                                    f"({self.limits.deadline} seconds)")
        self.clock_at = self.left - CLOCK


# The limits a question asked outside a render is held to: the defaults, set by limits.py (which
# builds on this module) when it makes them.
OUTSIDE_A_RENDER: Any = None

_meter: contextvars.ContextVar[Optional[Meter]] = contextvars.ContextVar("jinjamark_meter",
                                                                       default=None)


# start(meter) makes `meter` the one builtins charge (a render's: limits.Budget) until
# stop(the token start returned): the context variable's own methods, a Python call less each.
start: Callable[[Meter], contextvars.Token] = _meter.set
stop: Callable[[contextvars.Token], None] = _meter.reset


# The meter of the render running now, None outside a render (the context variable's own get:
# limits.current() asks it for every size check).
running: Callable[[], Optional[Meter]] = _meter.get


def meter() -> Meter:
    """The render's meter; outside a render (an expression evaluated on its own), a fresh one
    with the default limits for each question."""
    current = _meter.get()
    if current is None:
        return Meter(OUTSIDE_A_RENDER)
    return current


def charge(units: float) -> None:
    current = _meter.get()
    (current if current is not None else meter()).charge(units)


# ---------------------------------------------------------------------------- sizes

_SIZED = (str, list, tuple, dict)


def arguments_size(args: Any, kwargs: Any = None) -> int:
    """The sizes of a call's arguments together (the top level of each)."""
    total = 0
    for arg in args:
        if isinstance(arg, _SIZED):
            total += len(arg)
    if kwargs:
        for arg in kwargs.values():
            if isinstance(arg, _SIZED):
                total += len(arg)
    return total


class _Expansion:
    """Expanded sizes, in leaves (a character of a string inside counts a fraction of one)."""

    def __init__(self, current: Meter, most: float) -> None:
        self.meter = current
        self.most = most
        self.known: dict[int, float] = {}
        self.path: set[int] = set()

    def of(self, value: Any) -> float:
        key = id(value)
        known = self.known.get(key)
        if known is not None:
            return known
        if key in self.path:  # a container inside itself: Python's comparison recurses too
            return self.most + 1
        items = _items(value)
        n = len(items)
        self.meter.charge(n * WALK)
        if n > 16 and not any(issubclass(kind, _CONTAINERS) for kind in set(map(type, items))):
            total = n + _characters(items, self.meter) * (FIND / ITEM)  # flat: counted in C
        else:
            self.path.add(key)
            total = float(n)
            for item in items:
                if isinstance(item, str):
                    total += len(item) * (FIND / ITEM)
                elif isinstance(item, _CONTAINERS):
                    total += self.of(item)
                    if total > self.most:
                        break
            self.path.discard(key)
        self.known[key] = total
        return total


def _characters(items: Any, current: Meter) -> int:
    """The characters of the strings among `items` (a container without containers inside)."""
    kinds = set(map(type, items))
    if all(issubclass(kind, str) for kind in kinds):
        return sum(map(len, items))
    if not any(issubclass(kind, str) for kind in kinds):
        return 0
    current.charge(len(items) * ITEM * 5)  # strings among numbers: one by one, in Python
    return sum(len(item) for item in items if isinstance(item, str))


def _items(value: Any) -> Any:
    """What a walk of a container meets: a dict's values, a namespace's attributes' values."""
    if isinstance(value, dict):
        return value.values()
    if isinstance(value, (list, tuple, set, frozenset)):
        return value
    return value.attrs.values()  # a namespace, which prints its attributes


_CONTAINERS: tuple = (list, tuple, dict, set, frozenset)  # and the classes below
ATTRIBUTE_HOLDERS: set[type] = set()


def prints_its_attributes(cls: type) -> type:
    """Class decorator: an object of `cls` prints (and so is walked, measured and metered) as
    the values of its `attrs` dict, as a template's namespace does. The runtime's classes are
    declared so where they are defined (values/runtime.py, which builds on this module)."""
    global _CONTAINERS
    ATTRIBUTE_HOLDERS.add(cls)
    _CONTAINERS = (*_CONTAINERS, cls)
    return cls


def walked(*values: Any) -> float:
    """The units a walk of `values` costs (a comparison, a hash, a print of them)."""
    current = meter()
    most = current.left / ITEM + 1
    total = 0.0
    for value in values:
        if isinstance(value, str):
            total += len(value) * FIND
        elif isinstance(value, _CONTAINERS):
            flat = _flat_units(value)
            total += _Expansion(current, most).of(value) * ITEM if flat is None else flat
        elif isinstance(value, range):  # `x in range(n)` scans it unless x is an int
            total += len(value) * ITEM * 4
    return total


def _flat_units(value: Any) -> Optional[float]:
    """What walking a dict, list or tuple of at most 16 exact strings and numbers costs (a
    message compared with another: `message == user_messages[-1]`): _Expansion's units, each
    item measured and its leaf compared, without its memo and path; None for anything else."""
    kind = type(value)
    if kind is not dict and kind is not list and kind is not tuple:
        return None
    items = value.values() if kind is dict else value
    n = len(items)
    if n > 16:
        return None
    characters = 0
    for item in items:
        if type(item) is str:
            characters += len(item)
        elif type(item) not in _CHEAP:
            return None
    return n * (WALK + ITEM) + characters * FIND


def charge_walk(*values: Any) -> None:
    """Before a comparison, hash or print of `values`: charge what walking them costs."""
    charge(walked(*values))


def charge_compare(left: Any, right: Any) -> None:
    """Before `left op right` (==, <, in, ...): strings are scanned, structures walked."""
    tl, tr = type(left), type(right)
    if tl in _CHEAP and tr in _CHEAP:
        return
    if isinstance(left, str) and isinstance(right, str):
        if len(left) + len(right) > 4096:
            charge((len(left) + len(right)) * FIND)
        return
    if tl is int and tr is range:
        return
    if (tl is dict or tl is list or tl is tuple) and (tr is dict or tr is list or tr is tuple):
        units, more = _flat_units(left), _flat_units(right)  # two messages: walked() inline
        if units is not None and more is not None:
            charge(units + more)
            return
    charge_walk(left, right)


_CHEAP = frozenset((int, float, bool, type(None)))


# ---------------------------------------------------------------------------- builtins, metered

_RESULTS = (str, list, tuple, dict)


def metered(fn: Callable, cost: float, walk: Optional[int] = None, base: float = 0) -> Callable:
    """`fn` charging `base` units a call and `cost` units per character or item of its arguments
    (the top level of each) before it runs, with what comparing or hashing its arguments from
    position `walk` on walks (list.index compares with every item: 0; dict.get hashes its key:
    1), and then what it built, per character or item of its result. `base` is for builtins
    whose every call costs microseconds whatever their input (wordwrap, urlize, groupby): the
    common cheap ones have none, so that a template calling them for each pair of messages of a
    long conversation is not refused."""
    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        size = 0
        for arg in args:  # arguments_size, inline: most builtins are called with a few short ones
            if isinstance(arg, _SIZED):
                size += len(arg)
        if kwargs:
            size += arguments_size((), kwargs)
        units = base + cost * size
        if walk is not None:  # walked(), inline for the short texts and numbers most calls take
            for value in args[walk:]:
                if isinstance(value, str):
                    units += len(value) * FIND
                elif type(value) not in _CHEAP:
                    units += walked(value)
            if kwargs:
                units += walked(*kwargs.values())
        if units >= SMALL_WORK:
            (_meter.get() or meter()).charge(units)
        result = fn(*args, **kwargs)
        if isinstance(result, _RESULTS) and len(result) * COPY >= SMALL_WORK:
            charge(len(result) * COPY)
        return result
    # What the second tier reads to call `fn` itself, charging the same units as this wrapper
    # (codegen's light calls): a call of text is then one call, not three.
    call.unmetered, call.cost, call.walk, call.base = fn, cost, walk, base
    return call


# Work below this many units is left to the fuel: a call is a step that weighs ten (WEIGHTS in
# evaluation/compiling/core.py), and the fuel's bound on steps bounds what small calls can add up to
# (15M fuel / 10 * 512 units stays below the default max_work of 500M).
SMALL_WORK = 512


def charge_building(left: Any, right: Any, op: str) -> None:
    """Before `left * right` or `left + right` builds a sequence: charged for the memory it
    will hold, COPY units a character (four times that for text beyond ASCII, four bytes a
    character) and ITEM an item of a list or tuple (a reference, and usually an object). So
    what a render can hoard is bounded too, not only what it does. Another operator, or `+`
    with a number (a TypeError to come), builds nothing."""
    seq, other = (left, right) if isinstance(left, (str, list, tuple)) else (right, left)
    if op == "*" and type(other) is int:
        n = len(seq) * max(other, 0)
    elif op == "+" and isinstance(other, (str, list, tuple)):
        n = len(seq) + len(other)
    else:
        return
    if isinstance(seq, str):
        wide = not seq.isascii() or (isinstance(other, str) and not other.isascii())
        charge(n * COPY * (4 if wide else 1))
    else:
        charge(n * ITEM)


def charge_sort(items: list) -> None:
    """Before ordering (or grouping) `items` by comparisons: each item walked, about log n
    times, and a key computed per item in Python."""
    n = len(items)
    if n <= 16:  # a few texts (a dict's keys): what walked() comes to for them, in short
        characters = 0
        for item in items:
            if type(item) is not str:
                break
            characters += len(item)
        else:
            charge(n * (CALL + WALK) + (n * ITEM + characters * FIND) * max(1, n.bit_length()))
            return
    charge(n * CALL)
    charge(walked(items) * max(1, n.bit_length()))


def each(items: Any, cost: float = CALL) -> Iterator[Any]:
    """`items`, charging `cost` units for each as it is taken (lazy filters: map, select)."""
    current = _meter.get() or meter()
    for item in items:
        current.charge(cost)
        yield item
