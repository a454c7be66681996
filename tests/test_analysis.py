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


# ---------------------------------------------------------------------------- 2. content format

def fmt(source: str) -> str:
    return jinjamark.analyze(source).content_format


LOOP = "{% for message in messages %}BODY{% endfor %}"
CONTENT_FORMAT_CASES = {
    # a loop over a message's content, however the message and the content are reached
    "{% for m in messages %}{% for c in m['content'] %}{{ c.text }}{% endfor %}{% endfor %}": "openai",
    "{% for m in messages %}{% for c in m.content %}{% endfor %}{% endfor %}": "openai",
    "{% for m in messages | rejectattr('role', 'equalto', 'x') %}{% for c in m.content | selectattr('type') %}"
    "{% endfor %}{% endfor %}": "openai",
    "{% for m in messages[1:] %}{% for c in m['content'][1:] %}{% endfor %}{% endfor %}": "openai",
    "{% set a = messages[1:] %}{% set b = a %}{% for m in b %}{% for c in m.content %}{% endfor %}{% endfor %}":
        "openai",
    "{% set messages = messages %}{% for m in messages %}{% for c in m.content if c %}{% endfor %}{% endfor %}":
        "openai",
    "{% for m in messages %}{% endfor %}{% for c in m.content %}{% endfor %}": "openai",  # no scopes
    "{% macro r(ms) %}{% for m in messages %}{% generation %}{% for c in m.content %}{% endfor %}"
    "{% endgeneration %}{% endfor %}{% endmacro %}": "openai",
    "{% set a = messages %}{% set b = a %}{% set a = b %}{% for m in a %}{% for c in m.content %}"
    "{% endfor %}{% endfor %}": "openai",  # aliases in a cycle: vLLM loops forever, we stop
    # what vLLM's walk does not follow
    "{% for m in messages %}{{ m.content }}{% endfor %}": "string",
    "{% for m in messages %}{% set content = m.content %}{% for c in content %}{% endfor %}{% endfor %}":
        "string",
    "{% for m in messages[0] %}{% for c in m.content %}{% endfor %}{% endfor %}": "string",
    "{% for m in messages %}{% for c in m.parts %}{% endfor %}{% endfor %}": "string",
    "{% for m in messages %}{% for c in (m.content is not string) %}{% endfor %}{% endfor %}": "string",
    "{% for m in messages %}{% for c in (m.content is iterable) %}{% endfor %}{% endfor %}": "openai",
    "{% for m in messages %}{% for c in m.content ~ '' %}{% endfor %}{% endfor %}": "string",
    "{% macro f(content) %}{% for c in content %}{% endfor %}{% endmacro %}"
    "{% for m in messages %}{{ f(m.content) }}{% endfor %}": "string",
    # a `set` or loop target that is not one name fails vLLM's walk: its default, 'string'
    "{% set ns = namespace() %}{% set ns.m = messages %}{% for m in messages %}{% for c in m.content %}"
    "{% endfor %}{% endfor %}": "string",
    "{% for i, m in messages %}{% endfor %}{% for m in messages %}{% for c in m.content %}"
    "{% endfor %}{% endfor %}": "string",
    "{% for m in messages %}{% for a, b in m.content %}{% endfor %}{% endfor %}": "string",
    "{% for m in messages %}{% for c in m.content %}{% endfor %}{% for a, b in m.content %}"
    "{% endfor %}{% endfor %}": "openai",  # the first match decides
}


@pytest.mark.parametrize("source", sorted(CONTENT_FORMAT_CASES))
def test_content_format_is_vllms_decision(source):
    assert fmt(source) == CONTENT_FORMAT_CASES[source]


@pytest.mark.parametrize("name, expected", [
    ("chatml--teknium_OpenHermes-2.5-Mistral-7B.jinja", "string"),
    ("llamacpp--meta-llama-Llama-3.1-8B-Instruct.jinja", "string"),
    ("llamacpp--Qwen-Qwen3-0.6B.jinja", "string"),
    ("hfjs--meta-llama__Llama-3.2-11B-Vision-Instruct.jinja", "openai"),
    ("hfjs--Qwen__Qwen2.5-VL-7B-Instruct.jinja", "openai"),
    ("gemma--axolotl-gemma3.jinja", "openai"),
    ("smollm--trl-idefics3_training.jinja", "openai"),
    ("llamacpp--Mistral-Small-3.2-24B-Instruct-2506.jinja", "openai"),
    # Qwen3.5 loops over content inside a macro's parameter: vLLM does not see it
    ("hfjs--Qwen__Qwen3.5-4B.jinja", "string"),
])
def test_content_format_of_corpus_templates(name, expected):
    assert fmt(corpus(name)) == expected


# ---------------------------------------------------------------------------- 3. generation, keys

def test_has_generation_finds_the_tag_also_inside_macros_and_branches():
    assert jinjamark.analyze("{% generation %}x{% endgeneration %}").has_generation
    assert jinjamark.analyze("{% macro m() %}{% if a %}{% generation %}{% endgeneration %}"
                             "{% endif %}{% endmacro %}").has_generation
    assert not jinjamark.analyze("{{ add_generation_prompt }}{{ 'generation' }}").has_generation


@pytest.mark.parametrize("name", ["qwen--trl-qwen3_training.jinja", "llama3--trl-llama3_training.jinja",
                                  "smollm--trl-idefics3_training.jinja"])
def test_training_templates_have_generation(name):
    assert jinjamark.analyze(corpus(name)).has_generation


def test_keys_are_the_names_read_off_values():
    keys = jinjamark.analyze("{{ m.role }}{{ m['content'] }}{{ m.get('name') }}{% if 'thinking' in m %}"
                             "{% endif %}{{ m[0] }}{{ m.0 }}{{ m[k] }}").keys
    assert keys == {"role", "content", "get", "name", "thinking"}


def test_analysis_is_a_frozen_typed_record():
    analysis = jinjamark.analyze("{{ messages }}")
    assert isinstance(analysis, Analysis) and isinstance(analysis.capabilities, Capabilities)
    with pytest.raises(AttributeError):
        analysis.variables = frozenset()  # type: ignore[misc]
    assert analysis.variables == {"messages"} and isinstance(analysis.variables, frozenset)
