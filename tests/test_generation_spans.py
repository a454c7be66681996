"""`render_with(..., generation_spans=[])`: the offsets of every `{% generation %}` body in the
output, against transformers' own tracker (`render_jinja_template` with
`return_assistant_tokens_mask=True`) where transformers is right, and against offsets worked out
by hand where the body is rendered into a capture that lands elsewhere (transformers records the
length of the output yielded so far, not where the captured text finally goes)."""
from __future__ import annotations

import pathlib
import re

import pytest
from transformers.utils.chat_template_utils import _alias_reasoning_fields, render_jinja_template

import jinjamark
from conftest import fixture
from jinjamark.chat.profile import chat_environment, shared_environment

CORPUS = pathlib.Path(__file__).parent / "corpus"
GENERATION = re.compile(r"\{%-?\s*generation\s*-?%\}")
TEMPLATES = sorted(p.name for p in (CORPUS / "templates").glob("*.jinja")
                   if GENERATION.search(p.read_text(encoding="utf-8")))
FIXTURES = ["01-single-user", "02-system-user", "03-multi-turn", "04-no-system-multi-turn",
            "05-tool-call-object-args", "09-reasoning", "11-unicode", "13-long-conversation"]
SPECIALS = {"bos_token": "<s>", "eos_token": "</s>"}



def theirs(source: str, fx: dict, agp: bool):
    try:
        rendered, indices = render_jinja_template(
            [fx["messages"]], tools=fx.get("tools"), documents=fx.get("documents"),
            chat_template=source, return_assistant_tokens_mask=True, add_generation_prompt=agp,
            **SPECIALS, **(fx.get("kwargs") or {}))
    except Exception as e:  # some templates refuse some conversations: both must then raise
        return type(e)
    return rendered[0], sorted(indices[0])


def ours(source: str, fx: dict, agp: bool):
    chat = jinjamark.ChatTemplate(source, special_tokens=SPECIALS)
    # transformers' message normalisation (reasoning aliases), which the engine does not do
    context = chat.context(_alias_reasoning_fields(fx["messages"]), fx.get("tools"), fx.get("documents"), agp,
                           **(fx.get("kwargs") or {}))
    spans: list = []
    try:
        text = chat.template.render_with(context, chat.overlay, generation_spans=spans)
    except Exception as e:
        return type(e)
    parts_spans: list = []
    parts = chat.template.render_parts_with(context, chat.overlay, generation_spans=parts_spans)
    assert parts_spans == spans and "".join(p.text for p in parts) == text
    return text, sorted(spans)


@pytest.mark.parametrize("template", TEMPLATES)
def test_corpus_generation_spans_equal_transformers(template):
    source = (CORPUS / "templates" / template).read_text(encoding="utf-8")
    compared = 0
    for name in FIXTURES:
        for agp in (False, True):
            expected, got = theirs(source, fixture(name), agp), ours(source, fixture(name), agp)
            if isinstance(expected, type):
                assert isinstance(got, type), (name, agp)
                continue
            assert got == expected, (name, agp)
            compared += 1 if expected[1] else 0
    assert compared, "no fixture exercised the generation tag"


MESSAGES = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello there"},
            {"role": "user", "content": "more"}, {"role": "assistant", "content": "sure"}]

# Templates where transformers' offsets are right: the tag's text lands where it is rendered,
# or a macro / capture whose body starts with the tag is printed at once.
AGREEING = {
    "macro": "{% macro turn(m) %}{% generation %}{{ m.content }}<|im_end|>{% endgeneration %}{% endmacro %}"
             "{% for m in messages %}<|im_start|>{{ m.role }}\n"
             "{% if m.role == 'assistant' %}{{ turn(m) }}{% else %}{{ m.content }}<|im_end|>{% endif %}\n"
             "{% endfor %}",
    "set capture": "{% for m in messages %}<|im_start|>{{ m.role }}\n{% if m.role == 'assistant' %}"
                   "{% set body %}{% generation %}{{ m.content }}<|im_end|>{% endgeneration %}{% endset %}"
                   "{{ body }}{% else %}{{ m.content }}<|im_end|>{% endif %}\n{% endfor %}",
    "call block": "{% macro wrap() %}{{ caller() }}{% endmacro %}{% for m in messages %}[{{ m.role }}]"
                  "{% if m.role == 'assistant' %}{% call wrap() %}{% generation %}{{ m.content }}"
                  "{% endgeneration %}{% endcall %}{% else %}{{ m.content }}{% endif %}{% endfor %}",
}


@pytest.mark.parametrize("name", sorted(AGREEING))
def test_generation_in_macros_and_captures_equal_transformers(name):
    fx = {"messages": MESSAGES}
    expected = theirs(AGREEING[name], fx, False)
    assert expected[1], "the case must record spans"
    assert ours(AGREEING[name], fx, False) == expected


# Where the captured text lands elsewhere than where it was rendered: offsets worked out by hand.
BY_HAND = [
    # a macro writes text before the tag: the body starts 5 characters into the macro's text
    ("{% macro m(t) %}pre: {% generation %}{{ t }}{% endgeneration %}!{% endmacro %}AB{{ m(x) }}",
     "ABpre: XY!", [(7, 9)]),
    # a capture printed later, twice, after other text
    ("{% set c %}({% generation %}{{ x }}{% endgeneration %}){% endset %}123{{ c }}-{{ c }}",
     "123(XY)-(XY)", [(4, 6), (9, 11)]),
    # a capture never printed: no span
    ("{% set c %}{% generation %}{{ x }}{% endgeneration %}{% endset %}abc", "abc", []),
    # a macro's text captured by a set, then printed
    ("{% macro m() %}a{% generation %}b{% endgeneration %}{% endmacro %}"
     "{% set s %}xx{{ m() }}{% endset %}----{{ s }}", "----xxab", [(7, 8)]),
    # a capture transformed by a filter has no character map: its span is dropped
    ("{% set c %}{% generation %}{{ x }}{% endgeneration %}{% endset %}{{ c | lower }}", "xy", []),
    # an included template's tag, inside the includer's loop
    ("{% for i in range(2) %}<{% include 'gen' %}>{% endfor %}", "<[XY]><[XY]>", [(2, 4), (8, 10)]),
    # nested tags (transformers puts the inner one at the outer one's start)
    ("{% for i in 'ab' %}{% generation %}<{% generation %}{{ i }}{% endgeneration %}>"
     "{% endgeneration %}{% endfor %}", "<a><b>", [(0, 3), (1, 2), (3, 6), (4, 5)]),
]


@pytest.mark.parametrize("source, text, spans", BY_HAND)
def test_generation_spans_follow_captured_text(source, text, spans):
    env = chat_environment(
        loader=jinjamark.DictLoader({"gen": "[{% generation %}{{ x }}{% endgeneration %}]"}))
    template = env.from_string(source)
    got: list = []
    assert template.render_with({"x": "XY"}, None, generation_spans=got) == text
    assert sorted(got) == spans


def test_no_spans_asked_renders_on_the_plain_evaluator():
    template = shared_environment().from_string("{% generation %}x{% endgeneration %}")
    assert template.render_with({}) == "x"
    assert template.render_parts_with({}) == [jinjamark.Part("x", False)]


@pytest.mark.parametrize("name", ["03-multi-turn", "05-tool-call-object-args"])
def test_recording_spans_changes_no_output(name):
    """Every corpus template renders the same text and parts with spans recorded as without."""
    fx, rendered = fixture(name), 0
    for template in sorted((CORPUS / "templates").glob("*.jinja")):
        chat = jinjamark.ChatTemplate(template.read_text(encoding="utf-8"), special_tokens=SPECIALS)
        try:
            context = chat.context(fx["messages"], fx.get("tools"), None, True)
            text = chat.template.render_with(context, chat.overlay)
        except jinjamark.TemplateError:
            continue
        spans: list = []
        assert chat.template.render_with(context, chat.overlay, generation_spans=spans) == text
        marked = chat.context(fx["messages"], fx.get("tools"), None, True, marked=True)
        assert chat.template.render_parts_with(marked, chat.overlay, generation_spans=[]) == \
            chat.template.render_parts_with(marked, chat.overlay)
        assert not spans or GENERATION.search(template.read_text(encoding="utf-8"))  # spans only from the tag
        rendered += 1
    assert rendered > 150
