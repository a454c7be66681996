"""What `mark_input` does with values that are not plain JSON-like data.

The marking model is closed: every value that enters from input is either marked (a container
materialised as the list, dict or set a template sees, a number as a number from input) or
refused with an `InputTypeError` that says what to pass instead. Nothing passes through unknown,
because an unknown value prints or iterates as template text: a generator of messages would
otherwise render the whole conversation, forged control tokens included, unmarked.

`values.mark_input` keeps the fast path for str, dict, list and tuple; it hands everything else
here with itself as `mark`, so that the items of what is materialised are marked the same way.
"""
from __future__ import annotations

import dataclasses
import numbers
from collections import abc
from itertools import islice
from typing import Any, Callable

from ..errors import InputTypeError, LimitExceeded
from .hostcalls import all_input
from .numbers import InputFloat, InputInt
from .undefined import Undefined

# An iterator in the input (a generator of messages) is read into a list; one that never ends
# must still end, and so does one that is merely huge. The same number bounds the containers a
# walk over the input meets (check_input).
MAX_INPUT_ITEMS = 1_000_000
MAX_INPUT_DEPTH = 200
_JSON = frozenset((str, int, float, bool, type(None)))  # the scalars json.loads makes

Mark = Callable[[Any, int], Any]
_VIEWS = {type({}.keys()): "keys", type({}.values()): "values", type({}.items()): "items"}


def too_deep() -> LimitExceeded:
    return LimitExceeded(f"the input nests deeper than {MAX_INPUT_DEPTH} levels (or contains itself)")


def too_many() -> LimitExceeded:
    return LimitExceeded(f"the input holds more than {MAX_INPUT_ITEMS:,} lists, dicts and other "
                         "containers (a shared one counted each time it is met, as a copy meets it)")


def check_input(value: Any, depth: int = 0) -> bool:
    """Whether `value` (at `depth`) is JSON as json.loads makes it: dicts with scalar keys, lists
    and exact scalars, no deeper than MAX_INPUT_DEPTH. One walk without recursion, over all of
    it, which refuses (LimitExceeded) what no walk could finish: data nested too deep (or inside
    itself), or holding more than MAX_INPUT_ITEMS containers when a shared one is counted each
    time it is met, as a copying walk meets it (forty lists `a = [a, a]` are 2**40 of them).
    Tuples, mappings and dataclasses are walked too (the cleaning walks copy them); anything
    else is a leaf."""
    scalars = _JSON
    if type(value) in scalars:
        return True
    level = [value]  # level by level: no depth to keep per item
    is_json = True
    met = 0
    while level:
        met += len(level)
        if met > MAX_INPUT_ITEMS:
            raise too_many()
        deep = depth >= MAX_INPUT_DEPTH
        below: list = []
        push = below.append
        for item in level:
            kind = type(item)
            if kind is dict:
                if deep:
                    raise too_deep()
                for key, child in item.items():  # one loop: cheaper than a C scan per dict
                    if type(key) is not str and type(key) not in scalars:
                        is_json = False
                        push(key)
                    if type(child) not in scalars:
                        push(child)
                continue
            if kind is list:
                children: Any = item
            else:
                is_json = False
                children = _children(item)
                if children is None:
                    met -= 1  # a leaf (a str subclass, an object), not a container
                    continue
            if deep:
                raise too_deep()
            for child in children:
                if type(child) not in scalars:
                    push(child)
        level = below
        depth += 1
    return is_json


def _children(item: Any) -> Any:
    """What a cleaning walk copies of a container that is not an exact list or dict; None for
    a leaf (a string, a number, an iterator that reading would use up)."""
    if isinstance(item, (str, int, float)):
        return None
    if isinstance(item, (list, tuple)):
        return item
    if isinstance(item, abc.Mapping):
        return [*item.keys(), *item.values()]
    names = _FIELD_NAMES.get(type(item))
    if names is None:
        if not dataclasses.is_dataclass(item) or isinstance(item, type):
            return None
        names = tuple(f.name for f in dataclasses.fields(item))
        if len(_FIELD_NAMES) < 1000:
            _FIELD_NAMES[type(item)] = names
    return [getattr(item, name) for name in names]


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}  # a dataclass's fields, found once per class


def mark_other(data: Any, depth: int, mark: Mark) -> Any:
    """`data` (neither an exact str, dict, list, tuple, None, bool nor a marked string) marked
    as input, or an InputTypeError."""
    if isinstance(data, str):  # Markup and other str subclasses: their text, all input
        return mark(str.__str__(data), depth)
    if isinstance(data, Undefined):
        return data
    if isinstance(data, (bytes, bytearray, memoryview)):
        raise InputTypeError(f"mark_input cannot mark {type(data).__name__}: a template would see "
                             "them as numbers and print their repr; decode them to str first")
    if isinstance(data, numbers.Number):
        return input_number(data)
    view = _VIEWS.get(type(data))
    if view is not None:  # a dict view stays a view (it prints as one), of a marked dict
        pairs = {"keys": lambda: dict.fromkeys(data), "values": lambda: dict(enumerate(data)),
                 "items": lambda: dict(data)}[view]()
        return getattr(mark(pairs, depth), view)()
    return _mark_container(data, depth, mark)


def _mark_container(data: Any, depth: int, mark: Mark) -> Any:
    if isinstance(data, abc.Mapping):  # dict subclasses, UserDict, ChainMap, MappingProxyType
        return mark(dict(data.items()), depth)
    if isinstance(data, (set, frozenset, abc.Set)):
        items = mark(_bounded(data, depth), depth)
        return frozenset(items) if isinstance(data, frozenset) else set(items)
    if isinstance(data, tuple):  # a named tuple: a plain tuple of its items
        return mark(tuple(data), depth)
    if dataclasses.is_dataclass(data) and not isinstance(data, type):
        return mark({f.name: getattr(data, f.name) for f in dataclasses.fields(data)}, depth)
    dump = getattr(type(data), "model_dump", None)
    if callable(dump):  # a pydantic model (a message object): the dict it stands for
        return mark(data.model_dump(), depth)
    if isinstance(data, abc.Iterable):  # list subclasses, deque, UserList, generators, map, range
        return mark(_bounded(data, depth), depth)
    if callable(data):
        return InputFunction(data)
    raise InputTypeError(
        f"mark_input cannot mark a {type(data).__name__} object: pass str, int, float, bool, None "
        "and lists, tuples and dicts of them (a dataclass or an object with model_dump() is taken "
        "as its dict)")


def _bounded(items: Any, depth: int) -> list:
    """The items of an iterable as a list, refused past MAX_INPUT_ITEMS, and checked as the
    data it holds was (check_input: the walk over the data took it for a leaf)."""
    taken = list(islice(items, MAX_INPUT_ITEMS + 1))
    if len(taken) > MAX_INPUT_ITEMS:
        raise LimitExceeded(f"an iterable in the input has more than {MAX_INPUT_ITEMS} items")
    check_input(taken, depth)
    return taken


def input_number(data: Any) -> Any:
    """A number of another type than int and float (an int subclass, numpy's scalars, Decimal)
    as the int or float from input it stands for; refused when it prints otherwise than that
    number would (its own `__str__`), since a template could print it."""
    number: Any = None
    if isinstance(data, numbers.Integral):
        number = InputInt(int(data))
    elif isinstance(data, numbers.Real) or not isinstance(data, numbers.Complex):  # Decimal
        try:
            number = InputFloat(float(data))
        except (TypeError, ValueError, OverflowError):
            pass
    if number is None or str(data) != str(number):
        raise InputTypeError(
            f"mark_input cannot mark a {type(data).__name__} that prints as {str(data)[:40]!r}: "
            "pass it as an int, a float or the str it should print as")
    return number


class InputFunction:
    """A callable given as input: what it returns is input (keys, items and numbers too)."""

    jinja_type_name = "function"

    def __init__(self, fn: Callable) -> None:
        self.fn = fn

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return all_input(self.fn(*args, **kwargs))

    def jinja_attribute(self, name: str) -> Any:
        raise KeyError(name)

    def jinja_holds_input(self, check: Callable[[Any], bool]) -> bool:
        return True

    def __repr__(self) -> str:
        return "<function from input>"
