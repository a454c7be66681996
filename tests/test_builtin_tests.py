"""The built-in tests against Jinja2: every test, over every kind of value a template holds."""
from __future__ import annotations

import jinja2.tests
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jinjamark
from jinjamark import marks
from jinjamark.builtins.tests import TESTS
from jinjamark.values.runtime import Cycler, Joiner, LoopContext, Method, Namespace
from test_filters import OURS, assert_same

CONTEXT = {"i": 7, "z": 0, "neg": -4, "fl": 2.0, "half": 2.5, "s": "abc", "up": "ABC",
           "mixed": "aBc", "digits": "123", "e": "", "l": [1, 2], "el": [], "d": {"a": 1},
           "ed": {}, "t": (1,), "n": None, "yes": True, "no": False}

# Values as templates write them; each is tested with every one-argument test below.
VALUES = ["i", "z", "neg", "fl", "half", "s", "up", "mixed", "digits", "e", "l", "el", "d", "ed",
          "t", "n", "yes", "no", "missing", "d.missing", "42", "4.0", "'x'", "[1]", "{'k': 1}",
          "(1, 2)", "true", "none", "range(3)", "d.items()", "d.keys()", "'<'|e", "'x'|safe",
          "s.upper", "l|map('string')", "lipsum", "dict", "cycler(1)", "joiner()", "namespace()",
          "('a' ~ 'b')", "(1 + 1.5)", "(i // 2)", "d.a"]
UNARY = ["boolean", "callable", "defined", "escaped", "false", "float", "integer", "iterable",
         "lower", "mapping", "none", "number", "odd", "even", "sequence", "string", "true",
         "undefined", "upper", "filter", "test"]


def test_every_jinja2_test_exists_under_the_same_name():
    assert set(TESTS) == set(jinja2.tests.TESTS)


@pytest.mark.parametrize("test", UNARY)
@pytest.mark.parametrize("value", VALUES)
def test_unary_test_answers_as_jinja2(value, test):
    assert_same(f"{{{{ {value} is {test} }}}}|{{{{ {value} is not {test} }}}}", CONTEXT)


BINARY = [
    "i is divisibleby 7", "i is divisibleby 2", "half is divisibleby 0.5", "i is divisibleby 0",
    "s is divisibleby 2", "i is eq 7", "i is equalto 7.0", "s is == 'abc'", "i is ne 7",
    "i is != 8", "i is gt 6", "i is greaterthan 7", "i is > 7", "i is ge 7", "i is >= 8",
    "i is lt 8", "i is lessthan 7", "i is < 7", "i is le 7", "i is <= 6", "s is lt 'b'",
    "s is gt 1", "l is eq [1, 2]", "d is eq {'a': 1}", "n is eq none", "missing is eq missing",
    "1 is in l", "3 is in l", "'a' is in s", "'a' is in d", "'b' is in d", "1 is in 5",
    "missing is in l", "'x' is in missing", "n is sameas none", "yes is sameas true",
    "no is sameas false", "l is sameas l", "l is sameas [1, 2]", "1 is sameas true",
    "'upper' is filter", "'nope' is filter", "'odd' is test", "'upper' is test", "1 is filter",
    "l|select('in', [2, 3])|list == [2]", "[1, 2, 3]|select('divisibleby', 2)|list",
    "[1, 'a', none]|reject('string')|list", "[1, 2, 3]|select('ge', 2)|list",
    "[[], [1], '']|select('sequence')|list", "['A', 'b', 'C']|select('upper')|list",
    "['x', 1, none]|select('defined')|list", "[1, 2]|select('sameas', 1)|list",
    "i is odd(3)", "i is undefined(1)", "i is eq", "i is nope",
]


@pytest.mark.parametrize("expression", BINARY)
def test_test_with_arguments_answers_as_jinja2(expression):
    assert_same(f"{{{{ {expression} }}}}", CONTEXT)


@pytest.mark.parametrize("source", [
    "{% macro m() %}{% endmacro %}{{ m is callable }}",
    "{% for x in [1] %}{{ loop is callable }}{{ loop.cycle is callable }}{% endfor %}",
    "{% for x in [1] %}{{ loop is sequence }}{{ loop is mapping }}{% endfor %}",
    "{% set ns = namespace(a=1) %}{{ ns is mapping }}{{ ns is callable }}{{ ns is sequence }}",
    "{% set ns = namespace(a=1) %}{{ ns is iterable }}{{ ns is defined }}",
    "{{ cycler(1) is iterable }}{{ joiner() is callable }}{{ cycler(1).next is callable }}",
    "{% macro m() %}{% endmacro %}{{ m is iterable }}{{ m is sequence }}",
    "{{ 'x' is string }}{{ ('x'|e) is string }}{{ ('x'|tojson) is escaped }}",
])
def test_test_of_a_runtime_object_answers_as_jinja2(source):
    assert_same(source, CONTEXT)


@settings(max_examples=200, deadline=None)
@given(value=st.one_of(st.integers(-1000, 1000), st.floats(allow_nan=False, width=32),
                       st.text(max_size=6), st.booleans(), st.none(),
                       st.lists(st.integers(), max_size=3)),
       test=st.sampled_from(UNARY[:-2] + ["sameas none", "eq 1", "lt 3", "in [1, 'a']"]))
def test_test_of_random_data_answers_as_jinja2(value, test):
    assert_same(f"{{{{ v is {test} }}}}", {"v": value})


def test_tests_see_marked_strings_as_strings():
    value = marks.mark("Abc")
    assert OURS.call_test("string", value) and OURS.call_test("sequence", value)
    assert not OURS.call_test("lower", value) and not OURS.call_test("upper", value)
    assert OURS.call_test("eq", value, ("Abc",)) and OURS.call_test("in", "b", (value,))
    assert OURS.call_test("lower", marks.mark("abc"))


def test_runtime_objects_answer_type_tests_by_what_they_are():
    loop = LoopContext(iter([1, 2]), 2, 0, jinjamark.Undefined)
    assert TESTS["callable"](Method("x", "upper", str.upper)) and TESTS["callable"](loop)
    assert TESTS["callable"](Joiner()) and not TESTS["callable"](Cycler(1))
    assert not TESTS["mapping"](Namespace(a=1)) and not TESTS["sequence"](Namespace())
    assert TESTS["defined"](Namespace()) and not TESTS["undefined"](loop)
    assert TESTS["undefined"](jinjamark.StrictUndefined())
    assert TESTS["escaped"](jinjamark.values.markup.Markup("x"))
