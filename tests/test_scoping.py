"""Variable scoping as Jinja2 has it: which frame a name belongs to, and what reading it gives.

Jinja2 decides at compile time where every name lives (jinja2/idtracking.py). The template, a
loop body, a loop's `else`, a macro or call block body, a filter block, `with` and a block `set`
body are frames. A frame reads a name from the nearest frame that mentions it, as that frame's
variable is when read; a name no frame mentions comes from the render context. A frame whose
first mention of a name is a plain `set` outside any `if` owns it from its start, unassigned: the
frames nested in it see it undefined until the `set` runs, even when the context has the name.

1. A differential property test: small generated templates that mix top-level and nested `set`
   (plain, tuple, block, namespace attribute), `for` (with `else`, a condition, `loop.*`,
   recursive), `if`, `macro` and `call`, `with` and `filter` blocks, all over a pool of four
   names (x, y, ns, m), some of which the context also has. `jinjamark.Environment()` renders
   what `jinja2.Environment()` renders, or both raise.
2. Regression tests, one per difference found, each checked against Jinja2 as well.
"""
from __future__ import annotations

import os

import jinja2
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import jinjamark
from conftest import outcome
from test_differential import Choices

PHASES = tuple(Phase) if os.environ.get("JINJAMARK_SHRINK") == "1" else (Phase.explicit, Phase.reuse, Phase.generate)
JINJA2 = jinja2.Environment()
JINJAMARK = jinjamark.Environment()

# Data every render gets, then the pool's names some renders also get from the context.
BASE = {"items": [3, 4], "tree": [{"v": 1, "c": [{"v": 2, "c": []}]}, {"v": 3, "c": []}]}
CONTEXTS = ({}, {"x": 1}, {"x": 1, "y": "Y"}, {"y": "Y", "m": "M"},
            {"x": 1, "y": "Y", "ns": {"a": "ctx"}, "m": "M"})


def assert_same_as_jinja2(source: str, context: dict, oracle_env=JINJA2, env=JINJAMARK) -> None:
    """The same text as Jinja2, or both raise (what Jinja2 cannot compile, jinjamark refuses)."""
    compiled = outcome(oracle_env.from_string, source)
    want = compiled if compiled.raised else outcome(compiled.value.render, **context)
    got = outcome(lambda: env.from_string(source).render(**context))
    if want.raised:
        assert isinstance(got.error, jinjamark.TemplateError), \
            f"Jinja2 raised {want.describe()}; jinjamark gave {got.describe()}\n{source}"
    else:
        assert not got.raised, f"Jinja2 renders {want.value!r}; jinjamark: {got.describe()}\n{source}"
        assert got.value == want.value, source


# ---------------------------------------------------------------------------- 1. generated

class ScopingBuilder:
    """Draws one template over the name pool. Values of x and y are strings and numbers only,
    so everything printed prints alike in both engines. Macros are called only outside macro
    and call bodies (no endless recursion) and never stored away (see COMPATIBILITY.md)."""

    VALUES = ["'a'", "x ~ 'x'", "y ~ 1", "2", "x is defined", "y|default('d')", "i|default(0) + 1"]
    SHOWN = ["x", "y", "x ~ '|' ~ y", "x is defined", "y is defined", "ns.a if ns is defined",
             "loop.index if loop is defined", "m is defined", "m() if m is defined and m is callable"]
    LOOPS = ["i in [1, 2]", "x in [7, 8]", "i in items", "x, y in [(5, 6)]", "i in []",
             "i in [1, 2, 3] if i > 1", "y in [1, 2] if x is defined", "i in [] if y"]
    PARAMS = ["", "p", "p=x", "p, q=p", "x=y", "p=q, q=1", "y"]

    def __init__(self, choices: Choices) -> None:
        self.choices = choices
        self.loops = 0      # loop bodies around the current point
        self.in_macro = 0   # macro and call bodies around it
        self.statements = 0
        self.made: set[str] = set()  # "macro", "namespace": made somewhere before this point

    def pick(self, options):
        return options[self.choices.index(len(options))]

    def chance(self, percent: int) -> bool:
        return self.choices.index(100) < percent

    def body(self, depth: int, most: int = 4) -> str:
        return "".join(self.item(depth) for _ in range(1 + self.choices.index(most)))

    def item(self, depth: int) -> str:
        kinds = ["output", "output", "set", "set"]
        if depth > 0 and self.statements < 10:
            kinds += ["if", "for", "for", "macro", "call", "with", "filter", "block_set",
                      "namespace", "tuple_set"]
        kind = self.pick(kinds)
        self.statements += kind != "output"
        return getattr(self, f"make_{kind}")(depth - 1)

    def value(self) -> str:
        extra = ["loop.index", "i"] if self.loops else []
        return self.pick(self.VALUES + extra)

    def make_output(self, depth: int) -> str:
        shown = self.SHOWN if not self.in_macro else self.SHOWN[:-1] + ["p", "caller() if caller is defined"]
        shown = shown + (["loop.index", "i"] if self.loops else [])
        return "[{{ " + self.pick(shown) + " }}]"

    def make_set(self, depth: int) -> str:
        return "{% set " + self.pick(["x", "x", "y", "m", "i"]) + " = " + self.value() + " %}"

    def make_tuple_set(self, depth: int) -> str:
        return "{% set x, y = " + self.pick(["y, x", "'ab'", "[y, 1]"]) + " %}"

    def make_namespace(self, depth: int) -> str:
        if "namespace" not in self.made or self.chance(30):
            self.made.add("namespace")
            return "{% set ns = namespace(a=" + self.value() + ") %}"
        return "{% set ns.a = " + self.value() + " %}"

    def make_block_set(self, depth: int) -> str:
        target = self.pick(["x", "y", "ns"])
        filters = self.pick(["", "", " | upper", " | replace('a', y|string)", " | replace('1', x|string)"])
        return "{% set " + target + filters + " %}" + self.body(depth, 3) + "{% endset %}"

    def make_if(self, depth: int) -> str:
        test = lambda: self.pick(["true", "false", "x is defined", "y", "ns is defined"])
        out = "{% if " + test() + " %}" + self.body(depth, 3)
        if self.chance(30):
            out += "{% elif " + test() + " %}" + self.body(depth, 2)
        if self.chance(40):
            out += "{% else %}" + self.body(depth, 2)
        return out + "{% endif %}"

    def make_for(self, depth: int) -> str:
        if self.chance(15):
            return self.recursive_for(depth)
        self.loops += 1
        try:
            out = "{% for " + self.pick(self.LOOPS) + " %}" + self.body(depth, 3)
        finally:
            self.loops -= 1
        if self.chance(40):
            out += "{% else %}" + self.body(depth, 3)
        return out + "{% endfor %}"

    def recursive_for(self, depth: int) -> str:
        self.loops += 1
        try:
            inner = self.body(depth, 2)
        finally:
            self.loops -= 1
        return ("{% for i in tree recursive %}<{{ i.v }}" + inner
                + "{% if i.c %}{{ loop(i.c) }}{% endif %}>{% endfor %}")

    def make_macro(self, depth: int) -> str:
        params = self.pick(self.PARAMS)
        self.in_macro += 1
        try:
            body = self.body(depth, 3)
        finally:
            self.in_macro -= 1
        if self.chance(50):
            body += "{{ caller() if caller is defined }}"
        self.made.add("macro")
        return "{% macro m(" + params + ") %}" + body + "{% endmacro %}"

    def make_call(self, depth: int) -> str:
        if self.in_macro or "macro" not in self.made:
            return self.make_output(depth)
        if self.chance(40):
            return "[{{ " + self.pick(["m()", "m(1)", "m(x)", "m(p=y)"]) + " if m is defined and m is callable }}]"
        head = self.pick(["call", "call(p)", "call(p=x)"])
        self.in_macro += 1
        try:
            body = self.body(depth, 2)
        finally:
            self.in_macro -= 1
        return "{% " + head + " m(" + self.pick(["", "1"]) + ") %}" + body + "{% endcall %}"

    def make_with(self, depth: int) -> str:
        targets = self.pick(["", "x = y ~ 'w'", "y = 1, x = y", "ns = namespace(a=x)"])
        return "{% with " + targets + " %}" + self.body(depth, 3) + "{% endwith %}"

    def make_filter(self, depth: int) -> str:
        filters = self.pick(["upper", "replace('1', 'one')", "replace('Y', x|string)", "trim|lower"])
        return "{% filter " + filters + " %}" + self.body(depth, 3) + "{% endfilter %}"


@st.composite
def scoping_cases(draw, builder=ScopingBuilder):
    """(source, context): a generated template and one of the contexts."""
    context = {**BASE, **draw(st.sampled_from(CONTEXTS))}
    choices = Choices(draw(st.binary(min_size=60, max_size=300)))
    return builder(choices).body(3, 5), context


@settings(max_examples=1500, deadline=None, suppress_health_check=list(HealthCheck), phases=PHASES)
@given(case=scoping_cases())
def test_generated_templates_scope_names_as_jinja2(case):
    assert_same_as_jinja2(*case)


class ChatScopingBuilder(ScopingBuilder):
    """The same, with `{% generation %}` blocks (a call block in transformers: a frame)."""

    def item(self, depth: int) -> str:
        if depth > 0 and self.statements < 10 and self.chance(12):
            self.statements += 1
            return "{% generation %}" + self.body(depth - 1, 3) + "{% endgeneration %}"
        return super().item(depth)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck), phases=PHASES)
@given(case=scoping_cases(ChatScopingBuilder))
def test_generated_chat_templates_scope_names_as_transformers(case):
    """The chat profile against transformers' set-up (tests/oracle.py), `generation` included."""
    import oracle
    assert_same_as_jinja2(*case, oracle.environment(), jinjamark.chat_environment())


# ---------------------------------------------------------------------------- 2. regressions

CTX = {"x": 1, "y": "Y"}
SCOPING_CASES = [
    # A frame that sets a name before mentioning it otherwise owns it from its start: what is
    # nested in it reads it undefined until the set runs, not from the context.
    ("{% for i in [1] %}{{ x }}{% endfor %}{% set x = 2 %}", ""),
    ("{% macro m() %}{{ x }}{% endmacro %}{{ m() }}{% set x = 2 %}{{ m() }}", "2"),
    ("{% macro c() %}{{ caller() }}{% endmacro %}{% call c() %}{{ x }}{% endcall %}{% set x = 2 %}", ""),
    ("{% with %}{{ x }}{% endwith %}{% set x = 2 %}{{ x }}", "2"),
    ("{% filter upper %}{% for i in [1] %}{{ y }}{% endfor %}{% set y = 2 %}{% endfilter %}", ""),
    ("{% for i in [1] %}{% for j in [1] %}{{ x }}{% endfor %}{% set x = 2 %}{% endfor %}", ""),
    ("{% macro m() %}{% for j in [1] %}{{ x }}{% endfor %}{% set x = 2 %}{{ x }}{% endmacro %}{{ m() }}", "2"),
    ("{% set x %}[{{ x }}]{% endset %}{{ x }}", "[]"),
    ("{% set x | upper %}{% for i in [1] %}{{ y }}{% endfor %}{% endset %}[{{ x }}]{% set y = 3 %}", "[]"),
    ("{% for i in [1, 2] if i > x %}{{ i }}{% endfor %}{% set x = 1 %}", jinja2.UndefinedError),
    # ... but not when something else mentions it first, in the frame or around it.
    ("{% if true %}{{ x }}{% endif %}{% set x = 2 %}", "1"),
    ("{{ x }}{% set x = 2 %}{{ x }}", "12"),
    ("{% for i in [1] %}{{ x }}{% endfor %}{% if true %}{% set x = 2 %}{% endif %}", "1"),
    ("{% set x = x + 1 %}{% for i in [1] %}{{ x }}{% endfor %}", "2"),
    ("{{ x }}{% for i in [1] %}{% for j in [1] %}{{ x }}{% endfor %}{% set x = 2 %}{% endfor %}", "11"),
    ("{% set x = 5 %}{% macro m() %}{{ x }}{% endmacro %}{% set x = 6 %}{{ m() }}", "6"),
    ("{% for i in [1, 2] %}{{ y }}{% set y = i %}{% endfor %}", "YY"),
    # A loop's else is a frame: what it sets (a macro too) stays there.
    ("{% for a in [] %}{% else %}{% for b in [] %}{% else %}{% macro m() %}M{% endmacro %}"
     "{% endfor %}{% endfor %}{{ m is defined }}", "False"),
    ("{% for a in [] %}{% else %}{% set y = 1 %}[{{ y }}]{% endfor %}{{ y }}", "[1]Y"),
    # The filters of a filter block and of a block set run in its body's frame.
    ("{% filter replace('a', y) %}{% set y = 'b' %}a{% endfilter %}", "b"),
    ("{% set z | replace('a', q) %}{% set q = 'Q' %}a{% endset %}{{ z }}{{ q is defined }}", "QFalse"),
    ("{{ y }}{% set z | replace('a', y) %}a{% endset %}{{ z }}", "YY"),
    # A macro's default sees the parameters before it and the special ones; one not given yet
    # is undefined to it, not read from the context.
    ("{% macro m(a=y, y=2) %}[{{ a }}]{% endmacro %}{{ m() }}{{ m(1) }}{{ m(y=5) }}", "[][1][5]"),
    ("{% macro m(x=x) %}[{{ x }}]{% endmacro %}{{ m() }}", "[]"),
    ("{% macro m(p, q=p) %}{{ q }}{% endmacro %}{{ m(3) }}{{ m(q=1) }}", "31"),
    ("{% macro m(a=varargs) %}{{ a }}{{ varargs }}{% endmacro %}{{ m() }}{{ m(1, 2) }}", "()()1(2,)"),
    ("{% macro m(a=kwargs) %}{{ a }}{{ kwargs }}{% endmacro %}{{ m(z=1) }}", "{'z': 1}{'z': 1}"),
    ("{% macro m(a=caller) %}{{ a is defined }}{{ caller() }}{% endmacro %}{% call m() %}C{% endcall %}",
     "TrueC"),
    # A macro reading its own name (recursion) reads the macro.
    ("{% macro m(n) %}{{ n }}{% if n %}{{ m(n - 1) }}{% endif %}{% endmacro %}{{ m(2) }}", "210"),
]


@pytest.mark.parametrize("source, expected", SCOPING_CASES)
def test_names_are_scoped_as_jinja2_scopes_them(source, expected):
    if isinstance(expected, type):
        with pytest.raises(expected):
            JINJA2.from_string(source).render(**CTX)
        with pytest.raises(jinjamark.TemplateError):
            JINJAMARK.from_string(source).render(**CTX)
    else:
        assert JINJA2.from_string(source).render(**CTX) == expected  # the oracle agrees
        assert JINJAMARK.from_string(source).render(**CTX) == expected


def test_a_block_set_filter_reading_a_name_nothing_else_mentions_is_refused_as_jinja2_does():
    source = "{% set z | replace('a', q) %}a{% endset %}{{ z }}"
    with pytest.raises(AssertionError, match="unknown to the frame"):
        JINJA2.from_string(source)
    with pytest.raises(jinjamark.TemplateAssertionError, match="'q'") as raised:
        JINJAMARK.from_string(source)  # when compiled, as in Jinja2
    assert (raised.value.lineno, raised.value.column) == (1, 25)


def test_which_frame_owns_which_name_is_found_once_per_template(monkeypatch):
    from jinjamark import environment
    calls = []
    monkeypatch.setattr(environment, "declarations", lambda body: calls.append(body) or {})
    template = jinjamark.Environment().from_string("{% set x = 2 %}{{ x }}")
    assert [template.render(x=1) for _ in range(3)] == ["2", "2", "2"]
    assert len(calls) == 1


def test_the_generation_tag_is_a_frame_of_its_own_as_in_transformers():
    import oracle
    source = ("{% generation %}[{{ x }}]{% set y = 2 %}{% endgeneration %}[{{ y }}]"
              "{% set x = 3 %}")
    want = oracle.environment().from_string(source).render(x=1, y=1)
    assert want == "[][1]"
    assert jinjamark.chat_environment().from_string(source).render(x=1, y=1) == want
