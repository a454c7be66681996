"""The built-in tests (`x is odd`, `x is divisibleby 3`): every test of Jinja2 3.1.

A test is `t(value, *args)` returning a truth value; `filter` and `test` take the environment
first (`pass_environment`) to look the name up.
"""
from __future__ import annotations

import operator
from collections import abc
from numbers import Number
from typing import Any, Callable

from .. import metering
from ..environment_tools import pass_environment
from ..values.undefined import Undefined


def test_odd(value: Any) -> bool:
    return value % 2 == 1


def test_even(value: Any) -> bool:
    return value % 2 == 0


def test_divisibleby(value: Any, num: Any) -> bool:
    return value % num == 0


def test_defined(value: Any) -> bool:
    return not isinstance(value, Undefined)


def test_undefined(value: Any) -> bool:
    return isinstance(value, Undefined)


@pass_environment
def test_filter(env: Any, value: Any) -> bool:
    return value in env.filters


@pass_environment
def test_test(env: Any, value: Any) -> bool:
    return value in env.tests


def test_none(value: Any) -> bool:
    return value is None


def test_boolean(value: Any) -> bool:
    return value is True or value is False


def test_false(value: Any) -> bool:
    return value is False


def test_true(value: Any) -> bool:
    return value is True


def test_integer(value: Any) -> bool:
    """An int that is not a bool (`number` takes both, and floats)."""
    return isinstance(value, int) and value is not True and value is not False


def test_float(value: Any) -> bool:
    return isinstance(value, float)


def test_lower(value: Any) -> bool:
    return str(value).islower()


def test_upper(value: Any) -> bool:
    return str(value).isupper()


def test_string(value: Any) -> bool:
    return isinstance(value, str)


def test_mapping(value: Any) -> bool:
    """A dict (or other Mapping); a namespace is not one, as in Jinja2."""
    return isinstance(value, abc.Mapping)


def test_number(value: Any) -> bool:
    return isinstance(value, Number)


def test_sequence(value: Any) -> bool:
    """Has a length and can be indexed: strings, lists, tuples, dicts (Jinja2's definition)."""
    try:
        len(value)
        value.__getitem__  # noqa: B018 - the attribute's existence is the test
    except Exception:  # noqa: BLE001 - whatever fails, it is not a sequence
        return False
    return True


def test_iterable(value: Any) -> bool:
    try:
        iter(value)
    except TypeError:
        return False
    return True


def test_callable(value: Any) -> bool:
    return callable(value)


def test_sameas(value: Any, other: Any) -> bool:
    return value is other


def test_escaped(value: Any) -> bool:
    return hasattr(value, "__html__")


def test_in(value: Any, seq: Any) -> bool:
    return value in seq


TESTS: dict[str, Callable] = {
    "odd": test_odd,
    "even": test_even,
    "divisibleby": test_divisibleby,
    "defined": test_defined,
    "undefined": test_undefined,
    "filter": test_filter,
    "test": test_test,
    "none": test_none,
    "boolean": test_boolean,
    "false": test_false,
    "true": test_true,
    "integer": test_integer,
    "float": test_float,
    "lower": test_lower,
    "upper": test_upper,
    "string": test_string,
    "mapping": test_mapping,
    "number": test_number,
    "sequence": test_sequence,
    "iterable": test_iterable,
    "callable": test_callable,
    "sameas": test_sameas,
    "escaped": test_escaped,
    "in": test_in,
    "==": operator.eq,
    "eq": operator.eq,
    "equalto": operator.eq,
    "!=": operator.ne,
    "ne": operator.ne,
    ">": operator.gt,
    "gt": operator.gt,
    "greaterthan": operator.gt,
    ">=": operator.ge,
    "ge": operator.ge,
    "<": operator.lt,
    "lt": operator.lt,
    "lessthan": operator.lt,
    "<=": operator.le,
    "le": operator.le,
}


# The comparing tests walk what they compare (a shared structure of 2^40 leaves, a string of
# millions of characters): that is charged to the render's work before they run (metering.py).
for _name in ("in", "==", "eq", "equalto", "!=", "ne", ">", "gt", "greaterthan", ">=", "ge", "<",
              "lt", "lessthan", "<=", "le"):
    TESTS[_name] = metering.metered(TESTS[_name], 0, 0)

BUILTIN_TESTS = frozenset(TESTS.values())  # what env.call_test charges no walk for
