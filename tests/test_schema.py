"""Tools as Python functions: jinjamark.chat.schema.get_json_schema against transformers' own.

Functions are built with exec from generated signatures and docstrings; both must give the same
schema (key order included: templates print it with tojson) or raise the same exception (same class
name and message)."""
from __future__ import annotations

import enum
import json
import textwrap
import typing

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from jinjamark.chat.schema import (DocstringParsingException, TypeHintParsingException,
                                   get_json_schema)

transformers_utils = pytest.importorskip("transformers.utils.chat_template_utils")


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Mixed(enum.Enum):
    A = 1
    B = "b"
    C = None


class Empty(enum.Enum):
    pass


class Odd(enum.Enum):
    A = (1, 2)


class Custom:
    pass


NAMESPACE = {name: getattr(typing, name) for name in
             ("Any", "Optional", "Union", "Literal", "List", "Dict", "Tuple", "Set")}
NAMESPACE.update(Color=Color, Level=Level, Mixed=Mixed, Empty=Empty, Odd=Odd, Custom=Custom)


def outcome(function, func) -> tuple:
    """('ok', the schema as JSON text, key order kept) or ('raised', class name, message)."""
    try:
        return "ok", json.dumps(function(func))
    except Exception as error:  # the comparison is of what each raises
        return "raised", type(error).__name__, str(error)


def assert_same(func) -> None:
    ours = outcome(get_json_schema, func)
    theirs = outcome(transformers_utils.get_json_schema, func)
    assert ours == theirs


def build(source: str):
    namespace = dict(NAMESPACE)
    exec(source, namespace)
    return namespace["tool"]


# ---------------------------------------------------------------------------- generated functions

# valid hints often, the ones transformers refuses now and then
SCALARS = ["int", "float", "str", "bool", "None", "Any", "list", "dict", "tuple", "Color", "Level",
           "Mixed", "List", "Dict", "Tuple"] * 4 + ["Empty", "Odd", "Custom", "set", "bytes"]
LITERAL_VALUES = ["'a'", "'b c'", "1", "2.5", "True", "None"] * 4 + ["b'x'"]


def hints(depth: int = 2):
    base = st.sampled_from(SCALARS)
    if depth == 0:
        return base
    inner = hints(depth - 1)
    several = st.lists(inner, min_size=2, max_size=3)
    wrapped = st.sampled_from(["list[{}]", "List[{}]", "Optional[{}]", "dict[str, {}]"] * 3
                              + ["tuple[{}]", "tuple[{}, ...]"])
    return st.one_of(
        base,
        st.tuples(wrapped, inner).map(lambda pair: pair[0].format(pair[1])),
        several.map(lambda hs: f"tuple[{', '.join(hs)}]"),
        several.map(lambda hs: f"Union[{', '.join(hs)}]"),
        several.map(" | ".join),
        st.lists(st.sampled_from(LITERAL_VALUES), min_size=1, max_size=3)
        .map(lambda vs: f"Literal[{', '.join(vs)}]"),
    )


NAMES = st.sampled_from(["x", "y", "city", "unit", "n_items", "data", "flag"])
DESCRIPTIONS = st.sampled_from(["The city.", "A value", "first line\n        second line",
                                "Pick one (choices: [\"tea\", \"coffee\"])",
                                "Pick (choices: [1, 2.5, null])", "Bad (choices: [tea])",
                                "With: a colon inside", "(x) odd start", ""])


@st.composite
def functions(draw) -> str:
    params = draw(st.lists(NAMES, unique=True, max_size=4))
    method = draw(st.booleans())
    signature = ["self"] if method else []
    with_default = False
    for name in params:
        hint = None if draw(st.integers(0, 15)) == 0 else draw(hints())
        text = name if hint is None else f"{name}: {hint}"
        with_default = with_default or draw(st.booleans())
        signature.append(text + (" = None" if with_default else ""))
    returns = draw(st.one_of(st.none(), hints(1)))
    head = f"def tool({', '.join(signature)})" + (f" -> {returns}" if returns else "") + ":"
    return head + "\n" + textwrap.indent(f"'''{draw(docstrings(params))}'''", "    ")


@st.composite
def docstrings(draw, params: list) -> str:
    lines = [draw(st.sampled_from(["Get the weather.", "", "Multi\nline summary.",
                                   "Summary: with a colon"]))]
    if params or draw(st.booleans()):
        lines += ["", "Args:"]
        described = list(params)
        if params and draw(st.integers(0, 5)) == 0:  # now and then an argument left undescribed
            described = draw(st.lists(st.sampled_from(params), unique=True))
        for name in described:
            typed = draw(st.sampled_from(["", " (int)", " (list[str], optional)"]))
            lines.append(f"    {name}{typed}: {draw(DESCRIPTIONS)}")
            if draw(st.integers(0, 4)) == 0:
                lines.append("")
    if draw(st.booleans()):
        lines += ["", "Returns:", "    " + draw(st.sampled_from(["The result.", "a\n    b", ""]))]
    if draw(st.booleans()):
        lines += ["", "Raises:", "    ValueError: never"]
    return "\n".join(lines)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(functions())
def test_generated_functions_give_transformers_schema(source):
    assert_same(build(source))


# ---------------------------------------------------------------------------- hand-written cases

CASES = {
    "plain": '''
def tool(x: float, y: float):
    """
    A function that multiplies two numbers

    Args:
        x: The first number to multiply
        y: The second number to multiply
    """''',
    "choices_at_end_of_line": '''
def tool(beverage: str):
    """A function that drinks a beverage

    Args:
        beverage: The beverage to drink (choices: ["tea", "coffee"])
    """''',
    "no_docstring": "def tool(x: int): pass",
    "missing_argument_description": '''
def tool(x: int, y: int):
    """Adds.

    Args:
        x: first
    """''',
    "missing_type_hint": '''
def tool(x, y: int):
    """Adds.

    Args:
        x: first
        y: second
    """''',
    "method_receiver_skipped": '''
def tool(self, x: int = 3) -> None:
    """Uses self.

    Args:
        x: a number

    Returns:
        nothing
    """''',
    "hinted_self_is_an_argument": '''
def tool(self: int):
    """Odd.

    Args:
        self: a number
    """''',
    "return_without_schema_is_left_out": '''
def tool(x: int) -> Custom:
    """Returns a custom object.

    Args:
        x: a number
    """''',
    "enum_and_literal": '''
def tool(color: Color, level: Level, mixed: Mixed, mode: Literal["a", None, 3]):
    """Enums.

    Args:
        color: a color
        level: a level
        mixed: mixed values
        mode: a mode
    """''',
    "empty_enum": '''
def tool(e: Empty):
    """Empty.

    Args:
        e: nothing
    """''',
    "unions": '''
def tool(a: int | str, b: Union[list[int], None], c: Optional[Any], d: list | tuple, e: int | None):
    """Unions.

    Args:
        a: a
        b: b
        c: c
        d: d
        e: e
    """''',
    "tuples": '''
def tool(a: tuple[int, str], b: tuple):
    """Tuples.

    Args:
        a: pair
        b: any tuple
    """''',
    "single_tuple": '''
def tool(a: tuple[int]):
    """Tuple.

    Args:
        a: one
    """''',
    "ellipsis_tuple": '''
def tool(a: tuple[int, ...]):
    """Tuple.

    Args:
        a: many
    """''',
    "set_is_custom": '''
def tool(a: set[int]):
    """Set.

    Args:
        a: many
    """''',
    "nested_description_lines": '''
def tool(query: str, limit: int = 10):
    """Search the web.

    Longer explanation of the search
    over two lines.

    Args:
        query (str): What to search for,
            possibly long.
        limit: How many results
            (choices: [5, 10])

    Returns:
        The results, as a list
        of strings.

    Raises:
        ValueError: on a bad query
    """''',
    "string_annotations": '''
def tool(a: "int", b: "list[str]"):
    """Forward references.

    Args:
        a: a
        b: b
    """''',
    "bad_choices_json": '''
def tool(a: str):
    """Bad.

    Args:
        a: x (choices: [tea, coffee])
    """''',
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_hand_written_function_gives_transformers_schema(name):
    assert_same(build(CASES[name]))


def test_errors_are_value_errors_with_transformers_names():
    with pytest.raises(DocstringParsingException, match="has no docstring"):
        get_json_schema(build(CASES["no_docstring"]))
    with pytest.raises(ValueError):
        get_json_schema(build(CASES["set_is_custom"]))
    assert TypeHintParsingException.__name__ == transformers_utils.TypeHintParsingException.__name__
    assert (DocstringParsingException.__name__
            == transformers_utils.DocstringParsingException.__name__)


def test_builtin_and_lambda_without_name_or_doc():
    assert_same(lambda x: x)
    assert_same(len)


def test_descriptions_are_fresh_dicts_per_call():
    func = build(CASES["plain"])
    first = get_json_schema(func)
    first["function"]["parameters"]["properties"]["x"]["type"] = "changed"
    assert get_json_schema(func)["function"]["parameters"]["properties"]["x"]["type"] == "number"
