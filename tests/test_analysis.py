"""jinjamark.analyze: what a server learns about a chat template before rendering it.

1. `variables` against transformers' `_get_template_variables` (`jinja2.meta.find_undeclared_variables`
   on transformers' environment, what vLLM filters `chat_template_kwargs` with): every corpus
   template, generated templates, and hand-written scoping cases.
2. `content_format`: vLLM's decision, from hand-written expectations (its walk read from its source),
   and against a port of that walk over Jinja2's own AST on every corpus template.
3. `has_generation`, `keys`.
4. `capabilities`: hand-written expectations for corpus templates of many families, written by
   reading each template; one probe that raises leaves the other flags alone.
"""
from __future__ import annotations

import dataclasses
import functools
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


@functools.lru_cache(maxsize=None)
def analysis_of(name: str) -> Analysis:
    """analyze() of a corpus template, once per run (several tests read it)."""
    return jinjamark.analyze(corpus(name))


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
    assert_same_variables(corpus(name), lambda source: analysis_of(name).variables)


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
    # a macro's parameter that a call fills with a message's content (vLLM PR 53824: MiMo-V2.5,
    # Qwen3.5), by position or keyword, also from a `{% call %}`
    "{% macro f(content) %}{% for c in content %}{% endfor %}{% endmacro %}"
    "{% for m in messages %}{{ f(m.content) }}{% endfor %}": "openai",
    "{% macro f(x, parts) %}{% for c in parts %}{% endfor %}{% endmacro %}"
    "{% for m in messages %}{{ f(1, parts=m['content']) }}{% endfor %}": "openai",
    "{% macro f(parts) %}{% for c in parts %}{% endfor %}{% endmacro %}"
    "{% for m in messages %}{% call f(m.content | list) %}{% endcall %}{% endfor %}": "openai",
    # outside every macro, vLLM takes any variable named `content` for a message's content
    "{% for m in messages %}{% set content = m.content %}{% for c in content %}{% endfor %}{% endfor %}":
        "openai",
    "{% for c in content %}{% endfor %}": "openai",
    # what vLLM's walk does not follow
    "{% for m in messages %}{{ m.content }}{% endfor %}": "string",
    "{% for m in messages %}{% set parts = m.content %}{% for c in parts %}{% endfor %}{% endfor %}":
        "string",
    "{% for m in messages %}{% set content = m.content %}{% for c in content | list %}{% endfor %}"
    "{% endfor %}": "string",
    "{% macro f(parts) %}{% for c in parts %}{% endfor %}{% endmacro %}"
    "{% for m in messages %}{{ f(m.role) }}{% endfor %}": "string",
    "{% macro f(parts) %}{% for c in parts | list %}{% endfor %}{% endmacro %}"
    "{% for m in messages %}{{ f(m.content) }}{% endfor %}": "string",
    "{% macro f(parts) %}{% for c in parts %}{% endfor %}{% endmacro %}"
    "{% for m in messages %}{{ f(x=m.content) }}{% endfor %}": "string",  # no such parameter
    # inside a macro, only its fed parameters count, not the name `content` (Kimi-K3's shape:
    # `message.get('content')` is not a read of the content for vLLM)
    "{% macro f(content) %}{% for c in content %}{% endfor %}{% endmacro %}"
    "{% for m in messages %}{{ f(m.get('content')) }}{% endfor %}": "string",
    "{% macro f(content) %}{% for c in content %}{% endfor %}{% endmacro %}": "string",
    # the innermost macro that has fed parameters decides
    "{% macro outer(parts) %}{% macro inner(y) %}{% for c in parts %}{% endfor %}{% endmacro %}"
    "{% endmacro %}{% for m in messages %}{{ outer(m.content) }}{{ inner(m.content) }}{% endfor %}":
        "string",
    "{% macro outer(parts) %}{% macro inner(y) %}{% for c in parts %}{% endfor %}{% endmacro %}"
    "{% endmacro %}{% for m in messages %}{{ outer(m.content) }}{% endfor %}": "openai",
    "{% for m in messages[0] %}{% for c in m.content %}{% endfor %}{% endfor %}": "string",
    "{% for m in messages %}{% for c in m.parts %}{% endfor %}{% endfor %}": "string",
    "{% for m in messages %}{% for c in (m.content is not string) %}{% endfor %}{% endfor %}": "string",
    "{% for m in messages %}{% for c in (m.content is iterable) %}{% endfor %}{% endfor %}": "openai",
    "{% for m in messages %}{% for c in m.content ~ '' %}{% endfor %}{% endfor %}": "string",
    # a `set` or loop target that is not one name fails vLLM's walk: its default, 'string'
    "{% set ns = namespace() %}{% set ns.m = messages %}{% for m in messages %}{% for c in m.content %}"
    "{% endfor %}{% endfor %}": "string",
    "{% for i, m in messages %}{% endfor %}{% for m in messages %}{% for c in m.content %}"
    "{% endfor %}{% endfor %}": "string",
    "{% for m in messages %}{% for a, b in m.content %}{% endfor %}{% endfor %}": "string",
    "{% macro f(parts) %}{% for a, b in parts %}{% endfor %}{% endmacro %}"
    "{% for m in messages %}{{ f(m.content) }}{% endfor %}": "string",
    "{% for m in messages %}{% for c in m.content %}{% endfor %}{% for a, b in m.content %}"
    "{% endfor %}{% endfor %}": "openai",  # the first match decides
}


@pytest.mark.parametrize("source", sorted(CONTENT_FORMAT_CASES))
def test_content_format_is_vllms_decision(source):
    assert fmt(source) == CONTENT_FORMAT_CASES[source]


def vllm_walk_on_jinja2(source: str) -> str:
    """vLLM's content-format walk (`_detect_content_format` and `_iter_nodes_assign_content_item`
    in vllm/renderers/hf.py, with the macro parameters of PR 53824), restated over Jinja2's own
    AST (transformers' environment): the same decision made on the other engine's tree, to check
    that ours is read alike."""
    from jinja2 import nodes

    def reads(node, name, key=None):
        if isinstance(node, nodes.Filter):
            return node.node is not None and reads(node.node, name, key)
        if isinstance(node, nodes.Test):
            return reads(node.node, name, key)
        if isinstance(node, nodes.Getitem) and isinstance(node.arg, nodes.Slice):
            return reads(node.node, name, key)
        if key is None:
            return isinstance(node, nodes.Name) and node.ctx == "load" and node.name == name
        if isinstance(node, nodes.Getitem):
            hit = isinstance(node.arg, nodes.Const) and node.arg.value == key
        elif isinstance(node, nodes.Getattr):
            hit = node.attr == key
        else:
            return False
        return hit and reads(node.node, name)

    tree = transformers_utils._compile_jinja_template(source).environment.parse(source)
    try:
        aliases = ["messages"]
        for name in aliases:  # grows while it is walked
            for assign in tree.find_all(nodes.Assign):
                if reads(assign.node, name):
                    assert isinstance(assign.target, nodes.Name)
                    if assign.target.name not in aliases:
                        aliases.append(assign.target.name)
        loops = list(tree.find_all(nodes.For))
        message_names = []
        for loop in loops:
            if any(reads(loop.iter, name) for name in aliases):
                assert isinstance(loop.target, nodes.Name)
                message_names.append(loop.target.name)

        def is_content(node):
            return any(reads(node, name, "content") for name in message_names)

        # loop -> the fed parameters of the innermost macro around it that has some
        in_macro = {}
        for macro in tree.find_all(nodes.Macro):  # outer before inner
            params = [arg.name for arg in macro.args]
            fed = set()
            for call in tree.find_all(nodes.Call):
                if isinstance(call.node, nodes.Name) and call.node.name == macro.name:
                    fed |= {params[i] for i, arg in enumerate(call.args)
                            if i < len(params) and is_content(arg)}
                    fed |= {kw.key for kw in call.kwargs if kw.key in params and is_content(kw.value)}
            for loop in macro.find_all(nodes.For):
                if fed or id(loop) not in in_macro:
                    in_macro[id(loop)] = fed
        for loop in loops:
            plain = isinstance(loop.iter, nodes.Name)
            if id(loop) in in_macro:
                named = plain and loop.iter.name in in_macro[id(loop)]
            else:
                named = plain and loop.iter.name == "content"
            if is_content(loop.iter) or named:
                assert isinstance(loop.target, nodes.Name)
                return "openai"
        return "string"
    except AssertionError:
        return "string"


@pytest.mark.parametrize("name", CORPUS)
def test_content_format_agrees_with_the_walk_over_jinja2s_tree(name):
    assert analysis_of(name).content_format == vllm_walk_on_jinja2(corpus(name))


def test_content_format_cases_agree_with_the_walk_over_jinja2s_tree():
    for source, expected in CONTENT_FORMAT_CASES.items():
        assert vllm_walk_on_jinja2(source) == expected, source


NAMES = ["messages", "messages", "m", "a", "b", "c", "content", "parts"]
READS = ["{}", "{}", "{}[1:]", "{}|list", "{}|reverse|list", "({} is iterable)",
         "({} is not string)", "{}.content", "{}['content']", "{}.content[1:]",
         "{}['content']|select", "{}[0]", "{}.parts", "{} ~ ''"]
TARGETS = ["m", "m", "m", "c", "c", "a", "i, m"]


@st.composite
def content_walk_cases(draw) -> str:
    """Templates of `set` aliases and nested loops over messages, their content and aliases, and
    macros (nested too) whose parameters calls fill by position or keyword."""
    def expression():
        return draw(st.sampled_from(READS)).format(draw(st.sampled_from(NAMES)))

    def macro(depth):
        params = draw(st.lists(st.sampled_from(["content", "parts", "x"]), min_size=1, max_size=2,
                               unique=True))
        name = draw(st.sampled_from(["f", "g"]))
        return f"{{% macro {name}({', '.join(params)}) %}}{body(depth - 1)}{{% endmacro %}}"

    def call():
        name, shape = draw(st.sampled_from(["f", "g"])), draw(st.sampled_from(["1", "2", "kw", "block"]))
        if shape == "kw":
            return f"{{{{ {name}({draw(st.sampled_from(['content', 'parts', 'x']))}={expression()}) }}}}"
        arguments = ", ".join(expression() for _ in range(2 if shape == "2" else 1))
        if shape == "block":
            return f"{{% call {name}({arguments}) %}}{{% endcall %}}"
        return f"{{{{ {name}({arguments}) }}}}"

    def body(depth):
        parts = []
        for _ in range(draw(st.integers(1, 3))):
            kind = draw(st.sampled_from(["set", "for", "for", "text", "macro", "call"] if depth
                                        else ["set", "text", "call"]))
            if kind == "set":
                target = draw(st.sampled_from(["a", "b", "a", "b", "ns.x", "a, b"]))
                parts.append(f"{{% set {target} = {expression()} %}}")
            elif kind == "macro":
                parts.append(macro(depth))
            elif kind == "call":
                parts.append(call())
            elif kind == "for":
                source = draw(st.sampled_from(["messages", "a", "m.content", "m['content'][1:]",
                                               "c.content", "m.content|list", "content", "parts",
                                               "x", "expression"]))
                source = expression() if source == "expression" else source
                head = f"{draw(st.sampled_from(TARGETS))} in {source}"
                parts.append(f"{{% for {head} %}}{body(depth - 1)}{{% endfor %}}")
            else:
                parts.append("{{ " + expression() + " }}")
        return "".join(parts)

    return body(3)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck), phases=PHASES)
@given(source=content_walk_cases())
def test_generated_templates_get_the_content_format_of_the_walk_over_jinja2s_tree(source):
    assert content_format(_tree(source)) == vllm_walk_on_jinja2(source), source


def _tree(source: str):
    return jinjamark.chat.shared_environment().from_string(source).tree


@pytest.mark.parametrize("name, expected", [
    ("chatml--teknium_OpenHermes-2.5-Mistral-7B.jinja", "string"),
    ("llamacpp--meta-llama-Llama-3.1-8B-Instruct.jinja", "string"),
    ("llamacpp--Qwen-Qwen3-0.6B.jinja", "string"),
    ("hfjs--meta-llama__Llama-3.2-11B-Vision-Instruct.jinja", "openai"),
    ("hfjs--Qwen__Qwen2.5-VL-7B-Instruct.jinja", "openai"),
    ("gemma--axolotl-gemma3.jinja", "openai"),
    ("smollm--trl-idefics3_training.jinja", "openai"),
    ("llamacpp--Mistral-Small-3.2-24B-Instruct-2506.jinja", "openai"),
    # content handed to a macro's parameter, which the macro loops over (vLLM PR 53824)
    ("hfjs--Qwen__Qwen3.5-4B.jinja", "openai"),
    ("llamacpp--Qwen3.5-4B.jinja", "openai"),
    ("hfjs--LiquidAI__LFM2.5-VL-450M.jinja", "openai"),
    ("llamacpp--LFM2.5-8B-A1B.jinja", "openai"),
    ("llamacpp--Reka-Edge.jinja", "openai"),
    ("llamacpp--StepFun3.5-Flash.jinja", "openai"),
    ("llamacpp--muse-glimmer.jinja", "openai"),
    ("llamacpp--tencent-Hy3.jinja", "openai"),
    ("qwen--trl-qwen3_5_think_training.jinja", "openai"),
    ("qwen--trl-qwen3_6_training.jinja", "openai"),
    # its macro loops over `content`, but is handed `message.get('content')`, a call vLLM's
    # walk does not read as the content
    ("llamacpp--Kimi-K3.jinja", "string"),
])
def test_content_format_of_corpus_templates(name, expected):
    assert analysis_of(name).content_format == expected


# ---------------------------------------------------------------------------- 3. generation, keys

def test_has_generation_finds_the_tag_also_inside_macros_and_branches():
    assert jinjamark.analyze("{% generation %}x{% endgeneration %}").has_generation
    assert jinjamark.analyze("{% macro m() %}{% if a %}{% generation %}{% endgeneration %}"
                             "{% endif %}{% endmacro %}").has_generation
    assert not jinjamark.analyze("{{ add_generation_prompt }}{{ 'generation' }}").has_generation


@pytest.mark.parametrize("name", ["qwen--trl-qwen3_training.jinja", "llama3--trl-llama3_training.jinja",
                                  "smollm--trl-idefics3_training.jinja"])
def test_training_templates_have_generation(name):
    assert analysis_of(name).has_generation


def test_keys_are_the_names_read_off_values():
    keys = jinjamark.analyze("{{ m.role }}{{ m['content'] }}{{ m.get('name') }}{% if 'thinking' in m %}"
                             "{% endif %}{{ m[0] }}{{ m.0 }}{{ m[k] }}{{ m.text.strip() }}"
                             "{% for x in y %}{{ loop.last }}{% endfor %}").keys
    assert keys == {"role", "content", "name", "thinking", "text"}


def test_analysis_is_a_frozen_typed_record():
    analysis = jinjamark.analyze("{{ messages }}")
    assert isinstance(analysis, Analysis) and isinstance(analysis.capabilities, Capabilities)
    with pytest.raises(AttributeError):
        analysis.variables = frozenset()  # type: ignore[misc]
    assert analysis.variables == {"messages"} and isinstance(analysis.variables, frozenset)


# ---------------------------------------------------------------------------- 4. capabilities

def caps(**flags) -> Capabilities:
    return Capabilities(**flags)


TOOLS_OBJECT = dict(tools=True, tool_calls=True, arguments="object", tool_responses=True)
# Written by reading each template (what it prints, what it refuses), not by running analyze.
EXPECTED_CAPABILITIES = {
    # ChatML: any role printed as is; tool calls never read; content None cannot be concatenated
    "chatml--teknium_OpenHermes-2.5-Mistral-7B.jinja": caps(system_role=True, tool_responses=True),
    # Llama 3: roles must alternate (a tool turn breaks it)
    "llama3--chujiezheng-llama-3-instruct.jinja": caps(system_role=True),
    # Llama 3.1 / 3.2: one tool call per message, arguments through tojson, tool content tojson'd
    "llamacpp--meta-llama-Llama-3.1-8B-Instruct.jinja": caps(system_role=True, **TOOLS_OBJECT),
    "llamacpp--meta-llama-Llama-3.2-3B-Instruct.jinja": caps(system_role=True, **TOOLS_OBJECT),
    "hfjs--meta-llama__Llama-3.2-11B-Vision-Instruct.jinja": caps(system_role=True, **TOOLS_OBJECT),
    # Llama 2: the system text folded into the first [INST]; alternation enforced
    "llama2--codellama_CodeLlama-34b-Instruct-hf.jinja": caps(system_role=True),
    # Mistral v0.1: user/assistant only, alternating
    "hfjs--TheBloke__Mistral-7B-Instruct-v0.1-GPTQ.jinja": caps(),
    # Mistral v0.3 / Nemo: [TOOL_CALLS] with the function tojson'd and 9-character ids
    "mistral--mistralai_Mistral-7B-Instruct-v0.3.jinja": caps(
        system_role=True, parallel_tool_calls=True, tool_call_ids=True, **TOOLS_OBJECT),
    "llamacpp--mistralai-Mistral-Nemo-Instruct-2407.jinja": caps(
        system_role=True, parallel_tool_calls=True, tool_call_ids=True, **TOOLS_OBJECT),
    # Gemma 1 / 2 refuse a system role and enforce alternation; Gemma 3 folds the system text
    "gemma--google_gemma-7b-it.jinja": caps(),
    "llamacpp--google-gemma-2-2b-it.jinja": caps(),
    "gemma--axolotl-gemma3.jinja": caps(system_role=True),
    # Phi-3 mini prints user and assistant only; Phi-4 also system
    "phi--microsoft_Phi-3-mini-4k-instruct.jinja": caps(),
    "phi--microsoft_phi-4.jinja": caps(system_role=True),
    # Qwen 2.5: arguments tojson'd; Qwen 3 prints a string as is; both loop over the calls
    "llamacpp--Qwen-Qwen2.5-7B-Instruct.jinja": caps(system_role=True, parallel_tool_calls=True,
                                                    **TOOLS_OBJECT),
    "llamacpp--Qwen-Qwen3-0.6B.jinja": caps(
        system_role=True, tools=True, tool_calls=True, arguments="either", parallel_tool_calls=True,
        tool_responses=True, reasoning=("reasoning_content",), enable_thinking=True),
    # Qwen3-Coder: arguments | items into <parameter=...> blocks: an object only
    "llamacpp--Qwen3-Coder.jinja": caps(system_role=True, parallel_tool_calls=True, **TOOLS_OBJECT),
    # DeepSeek R1 / V3: arguments concatenated as text; no tool list; V3.1 tojson's them
    "hfjs--deepseek-ai__DeepSeek-R1.jinja": caps(
        system_role=True, tool_calls=True, arguments="string", parallel_tool_calls=True,
        tool_responses=True),
    "deepseek--axolotl-deepseek_v3.jinja": caps(
        system_role=True, tool_calls=True, arguments="string", parallel_tool_calls=True,
        tool_responses=True),
    "llamacpp--deepseek-ai-DeepSeek-V3.1.jinja": caps(
        system_role=True, tool_calls=True, arguments="object", parallel_tool_calls=True,
        tool_responses=True, enable_thinking=True),
    # Command R7B: ids mapped to counters (never printed); reasoning only beside tool calls
    "llamacpp--CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja": caps(
        system_role=True, parallel_tool_calls=True, reasoning=("reasoning_content",),
        enable_thinking=True, **TOOLS_OBJECT),
    # Command-R v01 tool_use: Cohere's own tool format (tool.name at the top) and no render
    # without tools: every probe raises
    "hfjs--CohereForAI__c4ai-command-r-v01.jinja": caps(),
    # Granite 3.3: tools listed, tool calls never read, any role printed
    "llamacpp--ibm-granite-granite-3.3-2B-Instruct.jinja": caps(system_role=True, tools=True,
                                                               tool_responses=True),
    # Hermes 2 Pro: needs tools to render at all; string arguments printed as is
    "llamacpp--NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja": caps(
        system_role=True, tools=True, tool_calls=True, arguments="either", parallel_tool_calls=True,
        tool_responses=True),
    # Functionary v3.2: arguments concatenated as text
    "llamacpp--meetkai-functionary-medium-v3.2.jinja": caps(
        system_role=True, tools=True, tool_calls=True, arguments="string", parallel_tool_calls=True,
        tool_responses=True),
    # gpt-oss: the first tool call only; `thinking` rendered on the last assistant turn
    "llamacpp--openai-gpt-oss-120b.jinja": caps(system_role=True, reasoning=("thinking",),
                                                **TOOLS_OBJECT),
    # SmolLM3: /think or /no_think from enable_thinking; tool results as user turns
    "llamacpp--HuggingFaceTB-SmolLM3-3B.jinja": caps(system_role=True, tool_responses=True,
                                                     enable_thinking=True),
    # Zephyr: user, system, assistant only
    "hfjs--HuggingFaceH4__zephyr-7b-beta.jinja": caps(system_role=True),
    # Vicuna: every role that is not system or user is printed as ASSISTANT
    "vicuna--Orca-Vicuna.jinja": caps(system_role=True, tool_responses=True),
    # Alpaca: alternation enforced
    "alpaca--chujiezheng-alpaca.jinja": caps(system_role=True),
    # Idefics3: content must be a list of typed parts; any role printed
    "smollm--trl-idefics3_training.jinja": caps(requires_typed_content=True, system_role=True,
                                                tool_responses=True),
}


def test_capability_expectations_cover_many_families():
    assert len(EXPECTED_CAPABILITIES) >= 25
    families = {name.split("--")[1].split("-")[0].split("_")[0] for name in EXPECTED_CAPABILITIES}
    assert len(families) >= 15


@pytest.mark.parametrize("name", sorted(EXPECTED_CAPABILITIES))
def test_capabilities_match_what_the_template_says(name):
    found = analysis_of(name).capabilities
    assert dataclasses.replace(found, failed_probes=()) == EXPECTED_CAPABILITIES[name]


ANY_ROLE = ("{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{% for c in m.tool_calls or [] %}"
            "[{{ c.id }}:{{ c.function.arguments | tojson }}]{% endfor %}{% endfor %}"
            "{% if tools %}{{ tools | tojson }}{% endif %}")


def test_one_probe_that_raises_turns_off_only_its_own_flag():
    """llama.cpp's bug 28786: one failing probe turned every capability off."""
    refuses_system = ("{% if messages[0].role == 'system' %}{{ raise_exception('no system') }}"
                      "{% endif %}" + ANY_ROLE)
    found = jinjamark.analyze(refuses_system).capabilities
    assert found.failed_probes == ("system_role",)
    assert dataclasses.replace(found, failed_probes=()) == caps(
        tools=True, tool_calls=True, arguments="object", parallel_tool_calls=True,
        tool_responses=True, tool_call_ids=True)
    assert jinjamark.analyze(ANY_ROLE).capabilities.system_role


def test_a_template_raising_on_tools_keeps_its_other_flags():
    refuses_tools = "{% if tools %}{{ raise_exception('no tools') }}{% endif %}" + ANY_ROLE
    found = jinjamark.analyze(refuses_tools).capabilities
    assert found.failed_probes == ("tools",)
    assert found.system_role and found.tool_calls and found.tool_responses and not found.tools


def test_a_template_raising_on_typed_content_does_not_require_it():
    found = jinjamark.analyze("{% for m in messages %}{{ m.content + '.' }}{% endfor %}").capabilities
    assert "typed_content" in found.failed_probes
    assert not found.requires_typed_content and found.system_role and found.tool_responses


def test_a_template_that_never_renders_has_no_capabilities_and_says_which_probes_failed():
    found = jinjamark.analyze("{{ raise_exception('never') }}{{ tools }}{{ enable_thinking }}").capabilities
    assert dataclasses.replace(found, failed_probes=()) == caps()
    assert {"system_role", "tools", "tool_responses", "enable_thinking"} <= set(found.failed_probes)


def test_analyze_takes_the_special_tokens_the_probes_render_with():
    source = ("{% if bos_token is not defined %}{{ raise_exception('no BOS') }}{% endif %}"
              "{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}")
    assert jinjamark.analyze(source).capabilities.system_role  # <s> and </s> by default
    assert jinjamark.analyze(source, special_tokens={"bos_token": "[B]"}).capabilities.system_role
    assert not jinjamark.analyze(source, special_tokens={}).capabilities.system_role


def test_analyzing_a_template_that_loops_to_the_limits_takes_a_second_not_a_minute():
    """The capability probes render a few short messages; a template that loops to the default
    limits fails each probe fast (PROBE_LIMITS) instead of running each to the limits."""
    import time
    source = ("{% for i in range(100000) %}{% for j in range(100000) %}{{ messages[0].content }}"
              "{% endfor %}{% endfor %}")
    started = time.process_time()
    analysis = jinjamark.analyze(source)
    assert time.process_time() - started < 10
    assert "string_content" in analysis.capabilities.failed_probes
