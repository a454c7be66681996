"""jinjamark.analyze: what a server learns about a chat template before rendering it.

1. `variables` against transformers' `_get_template_variables` (`jinja2.meta.find_undeclared_variables`
   on transformers' environment, what vLLM filters `chat_template_kwargs` with): every corpus
   template, generated templates, and hand-written scoping cases.
2. `content_format`: vLLM's decision, from hand-written expectations (its walk read from its source).
3. `has_generation`, `keys`.
4. `capabilities`: hand-written expectations for corpus templates of many families, written by
   reading each template; one probe that raises leaves the other flags alone.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jinjamark
from jinjamark.chat.analysis import Analysis, content_format, template_variables
from jinjamark.chat.capabilities import Capabilities
from test_differential import Choices
from test_scoping import PHASES, ChatScopingBuilder

transformers_utils = pytest.importorskip("transformers.utils.chat_template_utils")

TEMPLATES = Path(__file__).parent / "corpus" / "templates"
CORPUS = sorted(path.name for path in TEMPLATES.glob("*.jinja"))


def corpus(name: str) -> str:
    return (TEMPLATES / name).read_text()


def transformers_variables(source: str):
    """frozenset of names, or the class name of what Jinja2's compiler raised."""
    try:
        return transformers_utils._get_template_variables(source)
    except Exception as error:  # the comparison is of whether both refuse
        return type(error).__name__


def assert_same_variables(source: str, ours=template_variables) -> None:
    theirs = transformers_variables(source)
    if isinstance(theirs, str):
        with pytest.raises(jinjamark.TemplateError):
            ours(source)
    else:
        assert ours(source) == theirs, source


# ---------------------------------------------------------------------------- 1. variables

def test_the_corpus_is_whole():
    assert len(CORPUS) == 223


@pytest.mark.parametrize("name", CORPUS)
def test_analyze_finds_the_variables_jinja2_meta_finds_on_every_corpus_template(name):
    assert_same_variables(corpus(name), lambda source: jinjamark.analyze(source).variables)


class VariablesBuilder(ChatScopingBuilder):
    """The scoping generator's templates, plus what only the variable analysis cares about:
    blocks (frames of their own), `caller`/`kwargs`/`varargs`/`self`/`super`/`loop` read or
    stored where they are and are not special, imports and includes, autoescape, globals."""

    EXTRA = ["{{ caller }}", "{{ kwargs }}", "{{ varargs }}", "{{ self }}", "{{ super() }}",
             "{{ loop }}", "{% set caller = caller %}", "{% set kwargs = x %}", "[{{ varargs }}]",
             "{% import x as y %}", "{% from y import a as x, b %}", "{% include y %}",
             "{{ range(2) ~ namespace ~ raise_exception ~ strftime_now ~ dict ~ cycler }}",
             "{% set ns.a = z %}", "{{ z if y else w }}", "{% set x, z = y %}"]

    def __init__(self, choices: Choices) -> None:
        super().__init__(choices)
        self.blocks = 0

    def item(self, depth: int) -> str:
        if self.chance(15):
            return self.pick(self.EXTRA)
        if depth > 0 and self.statements < 10 and self.chance(12):
            self.statements += 1
            return self.pick([self.make_block, self.make_autoescape, self.make_loop_edges])(depth - 1)
        return super().item(depth)

    def make_block(self, depth: int) -> str:
        self.blocks += 1
        scoped = self.pick(["", " scoped"])
        return f"{{% block b{self.blocks}{scoped} %}}" + self.body(depth, 3) + "{% endblock %}"

    def make_autoescape(self, depth: int) -> str:
        return "{% autoescape " + self.pick(["true", "x", "z"]) + " %}" + self.body(depth, 2) + \
            "{% endautoescape %}"

    def make_loop_edges(self, depth: int) -> str:
        """`loop` in a loop's `if` filter and `else` is not the loop's: it is resolved outside."""
        head = self.pick(["i in items if loop", "i in items if i", "i in loop", "(a, b) in y"])
        return "{% for " + head + " %}" + self.body(depth, 2) + "{% else %}" + \
            self.pick(["{{ loop }}", "{{ i }}", "{% set loop_seen = loop %}"]) + "{% endfor %}"


@st.composite
def variable_cases(draw) -> str:
    return VariablesBuilder(Choices(draw(st.binary(min_size=60, max_size=300)))).body(3, 5)


@settings(max_examples=500, deadline=None, suppress_health_check=list(HealthCheck), phases=PHASES)
@given(source=variable_cases())
def test_generated_templates_have_the_variables_jinja2_meta_finds(source):
    assert_same_variables(source)


VARIABLE_CASES = [
    "{% set foo = 42 %}{{ bar + foo }}",
    "{{ x }}{% set x = 1 %}",
    "{% set x = x %}",
    "{% if c %}{% set y = 1 %}{% endif %}{{ y }}",              # set in a branch: read outside
    "{% set y = 0 %}{% if c %}{% set y = 1 %}{% endif %}{{ y }}",
    "{% if c %}{% set y = 1 %}{% endif %}{% set y = 2 %}",
    "{% if a %}{% elif b %}{% set e = 1 %}{% else %}{{ e }}{% endif %}",
    "{% for m in messages %}{% if c %}{% set x = 1 %}{% endif %}{% endfor %}",
    "{% set x = 0 %}{% for m in messages %}{% if c %}{% set x = 1 %}{% endif %}{% endfor %}",
    "{% for m in messages %}{{ loop.index }}{% else %}{{ loop }}{% endfor %}",
    "{% for m in messages if loop %}{% endfor %}",
    "{% for m in messages %}{% for n in m %}{{ loop.index }}{% endfor %}{% else %}{{ loop }}{% endfor %}",
    "{% macro f(a, b=c) %}{{ a }}{{ caller() }}{{ kwargs }}{{ varargs }}{{ d }}{% endmacro %}",
    "{% macro f() %}{% set caller = caller %}{% endmacro %}",
    "{% macro f(kwargs=1) %}{{ kwargs }}{% endmacro %}",
    "{{ caller }}{{ self }}{{ super }}",
    "{% block b %}{{ x }}{{ self }}{{ super() }}{% endblock %}{% set x = 1 %}",
    "{% for i in items %}{% block c scoped %}{{ i }}{{ loop }}{% endblock %}{% endfor %}",
    "{% call(p) f(q) %}{{ p }}{{ r }}{% endcall %}",
    "{% filter replace(a, b) %}{% set a = 1 %}{{ a }}{% endfilter %}",
    "{% with x = y %}{{ x }}{{ z }}{% endwith %}",
    "{% set x %}{{ y }}{% set y = 1 %}{% endset %}",
    "{% generation %}{{ caller }}{{ message }}{% endgeneration %}",
    "{% set ns = namespace(a=1) %}{% for m in ms %}{% set ns.a = m %}{% endfor %}{{ ns.a }}",
    "{% import 'a' as lib %}{{ lib.f() }}{% from b import c as d %}{{ d }}{% include e %}",
    "{% autoescape x %}{{ y }}{% set z = 1 %}{% endautoescape %}{{ z }}",
    "{{ range(3) }}{{ namespace() }}{{ raise_exception }}{{ strftime_now }}{{ dict }}{{ joiner }}",
    "{% extends parent %}{% block b %}{{ x }}{% endblock %}",
]


@pytest.mark.parametrize("source", VARIABLE_CASES)
def test_variables_follow_jinja2s_frames(source):
    assert_same_variables(source)


def test_what_jinja2s_compiler_refuses_analyze_refuses():
    for source in ["{% block a %}{% endblock %}{% block a %}{% endblock %}",
                   "{% set x | replace(q, '') %}a{% endset %}", "{% for x in y %}"]:
        assert isinstance(transformers_variables(source), str)
        with pytest.raises(jinjamark.TemplateError):
            jinjamark.analyze(source)
