"""Built-in filters on sequences and mappings: picking, ordering, grouping, mapping, selecting.

Items pass through untouched, so their marks do too. Like Jinja2's, `map`, `select`, `reject`,
`selectattr`, `rejectattr`, `unique`, `batch`, `slice` and `items` give generators: lazy (an error
shows when the result is used), single-pass and always true in a test; `|list` makes a list.
"""
from __future__ import annotations

from collections import abc
from itertools import groupby
from operator import itemgetter
from typing import Any, Callable, Iterator, Optional

from ..values import marks
from .. import metering
from ..environment_tools import pass_arg_of, pass_environment, pass_eval_context
from ..values.markup import Markup, _wrap, escape
from .filters_support import (FilterArgumentError, ignore_case, make_attrgetter,
                              make_multi_attrgetter)
from ..values.undefined import Undefined
from .tests import BUILTIN_TESTS

# ---------------------------------------------------------------------------- picking


@pass_environment
def do_first(env: Any, seq: Any) -> Any:
    for item in seq:
        return item
    return env.undefined("No first item, sequence was empty.")


@pass_environment
def do_last(env: Any, seq: Any) -> Any:
    for item in reversed(seq):
        return item
    return env.undefined("No last item, sequence was empty.")


@pass_environment
def do_random(env: Any, seq: Any) -> Any:
    import random  # here: a millisecond at every start, for a filter chat templates never use
    try:
        return random.choice(seq)
    except IndexError:
        return env.undefined("No random item, sequence was empty.")


def _min_or_max(env: Any, value: Any, pick: Callable, case_sensitive: bool,
                attribute: Any) -> Any:
    items = list(value)
    if not items:
        return env.undefined("No aggregated item, sequence was empty.")
    metering.charge_sort(items)
    key = make_attrgetter(env, attribute, postprocess=None if case_sensitive else ignore_case)
    return pick(items, key=key)


@pass_environment
def do_min(env: Any, value: Any, case_sensitive: bool = False, attribute: Any = None) -> Any:
    return _min_or_max(env, value, min, case_sensitive, attribute)


@pass_environment
def do_max(env: Any, value: Any, case_sensitive: bool = False, attribute: Any = None) -> Any:
    return _min_or_max(env, value, max, case_sensitive, attribute)


@pass_environment
def do_sum(env: Any, iterable: Any, attribute: Any = None, start: Any = 0) -> Any:
    if attribute is not None:
        iterable = map(make_attrgetter(env, attribute), iterable)
    if not isinstance(start, (list, tuple, str)):
        return sum(metering.each(iterable, metering.ITEM), start)
    total = start  # a sum of sequences copies what it has so far at each step: charged so
    for item in metering.each(iterable, metering.ITEM):
        if isinstance(item, (list, tuple, str)):
            metering.charge((len(total) + len(item)) * metering.ITEM)
        total = total + item
    return total


# ---------------------------------------------------------------------------- shaping


def do_list(value: Any) -> list:
    return list(value)


def do_reverse(value: Any) -> Any:
    if isinstance(value, str):
        return value[::-1]
    try:
        return reversed(value)
    except TypeError:
        try:
            items = list(value)
        except TypeError as e:
            raise FilterArgumentError("argument must be iterable") from e
        items.reverse()
        return items


@pass_eval_context
def do_join(eval_ctx: Any, value: Any, d: Any = "", attribute: Any = None) -> str:
    env = eval_ctx.environment
    if attribute is not None:
        value = map(make_attrgetter(env, attribute), value)
    items = [item if hasattr(item, "__html__") and (eval_ctx.autoescape or isinstance(item, str))
             else env.to_string(item) for item in value]  # a host object's __html__: escaping only
    sep = d if hasattr(d, "__html__") else env.to_string(d)
    if eval_ctx.autoescape and any(hasattr(x, "__html__") for x in [sep, *items]):
        # as Jinja2: a safe separator or item makes the join safe, the rest escaped
        return _wrap(marks.join(escape(sep), [escape(item) for item in items]))
    return marks.join(str.__str__(sep) if isinstance(sep, Markup) else sep,
                      [str.__str__(x) if isinstance(x, Markup) else x for x in items])


def do_batch(value: Any, linecount: int, fill_with: Any = None) -> Iterator[list]:
    batch: list = []
    for item in metering.each(value):
        if len(batch) == linecount:
            yield batch
            batch = []
        batch.append(item)
    if batch:
        if fill_with is not None and len(batch) < linecount:
            batch += [fill_with] * (linecount - len(batch))
        yield batch


def do_slice(value: Any, slices: int, fill_with: Any = None) -> Iterator[list]:
    """`slices` columns; the first `len % slices` get one item more, the others the filler."""
    items = list(value)
    if isinstance(slices, int):
        metering.charge(slices * metering.CALL)
    per_slice, with_extra = divmod(len(items), slices)
    start = 0
    for number in range(slices):
        end = start + per_slice + (1 if number < with_extra else 0)
        column = items[start:end]
        if fill_with is not None and number >= with_extra:
            column.append(fill_with)
        yield column
        start = end


def do_items(value: Any) -> Iterator[tuple]:
    if type(value) is not dict:
        if isinstance(value, Undefined):
            return
        if not isinstance(value, abc.Mapping):
            raise TypeError("Can only get item pairs from a mapping.")
    yield from value.items()


# What a for loop over `d | items` walks of a dict: the same pairs, as the dict's own view, whose
# length is known (the loop charged up front, no generator resumed per pair). Only where the
# filter's value is iterated at once: elsewhere it is the generator Jinja2's is.
do_items.loop_form = dict.items


# ---------------------------------------------------------------------------- ordering


@pass_environment
def do_sort(env: Any, value: Any, reverse: bool = False, case_sensitive: bool = False,
            attribute: Any = None) -> list:
    key = make_multi_attrgetter(env, attribute, None if case_sensitive else ignore_case)
    items = list(value)
    metering.charge_sort(items)
    return sorted(items, key=key, reverse=reverse)


def do_dictsort(value: Any, case_sensitive: bool = False, by: str = "key",
                reverse: bool = False) -> list:
    if by == "key":
        position = 0
    elif by == "value":
        position = 1
    else:
        raise FilterArgumentError('You can only sort by either "key" or "value"')
    items = list(value.items())
    metering.charge_sort([item[position] for item in items])  # what the sort compares
    items.sort(key=itemgetter(position) if case_sensitive else _IGNORING_CASE[position],
               reverse=reverse)
    return items


def _key_ignoring_case(item: tuple) -> Any:
    key = item[0]  # ignore_case written out: one call per item, the sort's only Python step
    return key.lower() if isinstance(key, str) else key


def _value_ignoring_case(item: tuple) -> Any:
    value = item[1]
    return value.lower() if isinstance(value, str) else value


_IGNORING_CASE = (_key_ignoring_case, _value_ignoring_case)


@pass_environment
def do_unique(env: Any, value: Any, case_sensitive: bool = False,
              attribute: Any = None) -> Iterator[Any]:
    key = make_attrgetter(env, attribute, None if case_sensitive else ignore_case)
    seen = set()
    for item in metering.each(value):
        k = key(item)
        metering.charge_walk(k)  # hashed
        if k not in seen:
            seen.add(k)
            yield item


class GroupTuple(tuple):
    """One group of `groupby`: `(grouper, list)`, also readable as `.grouper` and `.list`."""

    jinja_type_name = "_GroupTuple"

    def __new__(cls, grouper: Any, items: list) -> "GroupTuple":
        return super().__new__(cls, (grouper, items))

    @property
    def grouper(self) -> Any:
        return self[0]

    @property
    def list(self) -> list:
        return self[1]

    def jinja_attribute(self, name: str) -> Any:
        if name == "grouper":
            return self[0]
        if name == "list":
            return self[1]
        raise KeyError(name)

    def __repr__(self) -> str:
        return tuple.__repr__(self)

    __str__ = __repr__


@pass_environment
def do_groupby(env: Any, value: Any, attribute: Any, default: Any = None,
               case_sensitive: bool = False) -> list:
    """Groups of equal `attribute`, sorted by it; without case_sensitive, 'CA' and 'ca' are one
    group, named as its first item has it."""
    key = make_attrgetter(env, attribute, None if case_sensitive else ignore_case, default)
    value = list(value)
    metering.charge_sort(value)
    groups = [GroupTuple(k, list(items)) for k, items in groupby(sorted(value, key=key), key)]
    if not case_sensitive:
        name_of = make_attrgetter(env, attribute, default=default)
        groups = [GroupTuple(name_of(items[0]), items) for _, items in groups]
    return groups


# ---------------------------------------------------------------------------- map and select


def _mapper(env: Any, args: tuple, kwargs: dict) -> Callable[[Any], Any]:
    if not args and "attribute" in kwargs:
        attribute = kwargs.pop("attribute")
        default = kwargs.pop("default", None)
        if kwargs:
            raise FilterArgumentError(f"Unexpected keyword argument {next(iter(kwargs))!r}")
        return make_attrgetter(env, attribute, default=default)
    if not args:
        raise FilterArgumentError("map requires a filter argument")
    name, rest = args[0], args[1:]
    return lambda item: env.call_filter(name, item, rest, kwargs)


@pass_environment
def do_map(env: Any, value: Any, *args: Any, **kwargs: Any) -> Iterator[Any]:
    if value:
        func = _mapper(env, args, kwargs)
        for item in metering.each(value):
            yield func(item)


def _selector(env: Any, args: tuple, kwargs: dict, by_attribute: bool) -> Callable[[Any], Any]:
    """The test of select/reject (of an attribute, for the *attr ones); truth when none named."""
    get: Optional[Callable] = None
    if by_attribute:
        if not args:
            raise FilterArgumentError("Missing parameter for attribute name")
        get, args = make_attrgetter(env, args[0]), args[1:]
    if args:
        name, rest = args[0], args[1:]
        fn = env.tests.get(name)
        if _builtin_test(fn):  # called as env.call_test calls it, without its round per item
            test: Callable = lambda item: fn(item, *rest, **kwargs)  # noqa: E731
        else:
            test = lambda item: env.call_test(name, item, rest, kwargs)  # noqa: E731
    else:
        test = bool
    return test if get is None else lambda item: test(get(item))


def _builtin_test(fn: Any) -> bool:
    """A builtin test taking only its arguments (env.call_test charges none of them a walk)."""
    try:
        return fn in BUILTIN_TESTS and pass_arg_of(fn) is None
    except TypeError:  # an unhashable callable object: the host's own
        return False


def _select_or_reject(env: Any, value: Any, args: tuple, kwargs: dict, keep: bool,
                      by_attribute: bool) -> Iterator[Any]:
    if value:
        test = _selector(env, args, kwargs, by_attribute)
        for item in metering.each(value):
            if bool(test(item)) is keep:
                yield item


@pass_environment
def do_select(env: Any, value: Any, *args: Any, **kwargs: Any) -> Iterator[Any]:
    return _select_or_reject(env, value, args, kwargs, True, False)


@pass_environment
def do_reject(env: Any, value: Any, *args: Any, **kwargs: Any) -> Iterator[Any]:
    return _select_or_reject(env, value, args, kwargs, False, False)


@pass_environment
def do_selectattr(env: Any, value: Any, *args: Any, **kwargs: Any) -> Iterator[Any]:
    return _select_or_reject(env, value, args, kwargs, True, True)


@pass_environment
def do_rejectattr(env: Any, value: Any, *args: Any, **kwargs: Any) -> Iterator[Any]:
    return _select_or_reject(env, value, args, kwargs, False, True)
