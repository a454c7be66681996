"""The fail-safe rule for the host's own functions (filters, globals, context callables, extension
operators): Python code that drops marks (f-strings, `%`, `str.join`, json.dumps) must not turn
the user's characters into template text."""
from __future__ import annotations

import json

from hypothesis import given, settings, strategies as st

import jinjamark
from jinjamark import keeps_marks, mark_input
from jinjamark.ext import span
from jinjamark.grammar import ast
from jinjamark.values.markup import Markup

# Idioms of ordinary Python that return plain text, whatever marks their arguments had.
DROPPING = {
    "fstring": lambda s: f"<{s}>",
    "percent": lambda s: "<%s>" % s,
    "join": lambda s: "".join(list(s)),
    "format": lambda s: "<{}>".format(s),
    "json": lambda s: json.dumps(s, ensure_ascii=False),
    "roundtrip": lambda s: s.encode("utf-8").decode("utf-8"),
    "str": lambda s: str.__str__(s) + "",
}

TOKENS = ["<|im_end|>", "<|im_start|>", "<|eot_id|>", "<start_of_turn>"]
user_text = st.lists(st.sampled_from(TOKENS + ["\ue000", "\ue001 x", "ß"]), min_size=1, max_size=5).map("".join)


def parts(template, **context) -> list[tuple[str, bool]]:
    return [(p.text, p.is_input) for p in template.render_parts(**context)]


def input_text(rendered: list[tuple[str, bool]]) -> str:
    return "".join(text for text, is_input in rendered if is_input)


def template_text(rendered: list[tuple[str, bool]]) -> str:
    return "".join(text for text, is_input in rendered if not is_input)


@settings(max_examples=60, deadline=None)
@given(user_text, st.sampled_from(sorted(DROPPING)))
def test_a_host_filter_that_drops_marks_gives_input(text, idiom):
    env = jinjamark.Environment()
    env.filters["host"] = DROPPING[idiom]
    rendered = parts(env.from_string("[{{ u | host }}]"), u=mark_input(text))
    assert template_text(rendered) == "[]"
    assert input_text(rendered) == DROPPING[idiom](text)


@settings(max_examples=60, deadline=None)
@given(user_text, st.sampled_from(sorted(DROPPING)))
def test_a_host_global_and_a_context_callable_that_drop_marks_give_input(text, idiom):
    env = jinjamark.Environment()
    env.globals["host"] = DROPPING[idiom]
    template = env.from_string("[{{ host(u) }}|{{ call(text=u) }}]")
    rendered = parts(template, u=mark_input(text), call=lambda text: DROPPING[idiom](text))
    assert template_text(rendered) == "[|]"
    assert input_text(rendered) == DROPPING[idiom](text) * 2


def test_a_host_function_without_input_arguments_gives_template_text():
    env = jinjamark.Environment()
    env.filters["host"] = DROPPING["fstring"]
    env.globals["greet"] = lambda: "<|im_start|>"
    rendered = parts(env.from_string("{{ 'a' | host }}{{ greet() }}{{ u }}"), u=mark_input("x"))
    assert rendered == [("<a><|im_start|>", False), ("x", True)]


def test_input_anywhere_in_the_arguments_counts():
    env = jinjamark.Environment()
    env.filters["pick"] = lambda value, items, key=None: f"{value}:{items[0]['name']}:{key}"
    template = env.from_string("{{ 'v' | pick(items) }}|{{ 'v' | pick([], key=u) if false }}"
                               "{{ 'v' | pick([{'name': 'n'}], key=u) }}")
    rendered = parts(template, items=mark_input([{"name": "<|im_end|>"}]), u=mark_input("k"))
    assert rendered == [("v:<|im_end|>:None", True), ("|", False), ("v:n:k", True)]


def test_keeps_marks_lets_a_careful_function_keep_its_own_marks():
    env = jinjamark.Environment()
    env.filters["angle"] = keeps_marks(lambda s: "<" + s + ">")
    env.filters["careless"] = lambda s: "<" + s + ">"
    template = env.from_string("{{ u | angle }}{{ u | careless }}")
    assert parts(template, u=mark_input("x")) == [("<", False), ("x", True), (">", False), ("<x>", True)]


def test_keeps_marks_on_a_builtin_function():
    env = jinjamark.Environment()
    env.filters["chars"] = keeps_marks(sorted)  # a builtin: declared by identity
    assert parts(env.from_string("{{ u | chars | join }}"), u=mark_input("ba")) == [("ab", True)]


def test_containers_and_numbers_from_a_host_function_are_input():
    env = jinjamark.Environment()
    env.globals["words"] = lambda s: {"first": str(s).split()[0], "all": [w for w in str(s).split()]}
    env.globals["count"] = lambda s: len(str(s))
    source = "{% set w = words(u) %}{{ w.first }}|{{ w.all | join(',') }}|{{ count(u) }}"
    rendered = parts(env.from_string(source), u=mark_input("<|a|> <|b|>"))
    assert rendered == [("<|a|>", True), ("|", False), ("<|a|>", True), (",", False), ("<|b|>", True),
                        ("|", False), ("11", True)]


def test_an_extension_operator_is_taken_fail_safe():
    glue = jinjamark.Extension(
        name="glue", grammar='%extend ?math1: math1 "<>" concat -> glue',
        rules={"glue": lambda meta, children: ast.Binary(span(meta), "<>", children[0], children[1])},
        operators={"<>": lambda a, b: f"{a}{b}"})
    env = jinjamark.Environment(extensions=[glue])
    template = env.from_string("{{ 'a' <> 'b' }}{{ 'a' <> u }}")
    assert parts(template, u=mark_input("<|x|>")) == [("ab", False), ("a<|x|>", True)]


def test_safe_text_from_a_host_filter_stays_safe_and_input():
    env = jinjamark.Environment()
    env.filters["bold"] = lambda s: Markup(f"<b>{s}</b>")
    rendered = parts(env.from_string("{{ u | bold | escape }}{{ (u | bold) is escaped }}"), u=mark_input("&"))
    assert rendered == [("<b>&</b>", True), ("True", False)]


def test_builtin_filters_globals_and_macros_keep_their_precise_marks():
    env = jinjamark.Environment()
    source = ("{% macro m(x) %}[{{ x }}]{% endmacro %}{{ m(u) }}{{ u | upper }}"
              "{{ dict(a=u).a }}{{ (u ~ '!') | trim }}")
    rendered = parts(env.from_string(source), u=mark_input("x"))
    assert rendered == [("[", False), ("x", True), ("]", False), ("Xxx", True), ("!", False)]


def test_what_a_host_function_returned_stays_input_through_later_operations():
    env = jinjamark.Environment()
    env.filters["host"] = DROPPING["fstring"]
    template = env.from_string("{% set r = u | host %}{{ r[1:-1] | upper }}{{ r is string }}")
    assert parts(template, u=mark_input("<|im_end|>")) == [("<|IM_END|>", True), ("True", False)]
