"""The cleaning of a conversation (jinjamark.chat.normalize) is transformers 5's, and the marks
survive it: every character that came from input lands in an input part, whatever shape it came in.
"""
from __future__ import annotations

import collections
import dataclasses
import types

import pytest
from hypothesis import given, settings, strategies as st
from transformers.utils import chat_template_utils as ctu

import jinjamark
from jinjamark.chat import normalize
from jinjamark.marks import Marked

INPUT_ALPHABET = "αβγ<|>_ \n"  # the Greek letters never occur in the templates below


@dataclasses.dataclass
class Block:
    type: str
    text: object = None


class Dumped:
    def __init__(self, **fields):
        self.fields = fields

    def model_dump(self):
        return dict(self.fields)


class Text(str):
    def __str__(self):
        return "forged"


class Number(int):
    pass


class Opaque:
    pass


texts = st.text(INPUT_ALPHABET, max_size=8)
scalars = st.one_of(texts, st.none(), st.booleans(), st.integers(-5, 5), st.floats(allow_nan=False, width=16),
                    texts.map(Text), st.integers(0, 9).map(Number), st.just(Opaque()))


def containers(children):
    pairs = st.dictionaries(texts, children, max_size=3)
    return st.one_of(
        st.lists(children, max_size=3), st.tuples(children, children), pairs,
        pairs.map(collections.OrderedDict), pairs.map(types.MappingProxyType),
        pairs.map(lambda d: Dumped(**{f"k{i}": v for i, v in enumerate(d.values())})),
        st.builds(Block, texts, children))


values = st.recursive(scalars, containers, max_leaves=12)
messages = st.lists(st.fixed_dictionaries({"role": texts}, optional={
    "content": values, "reasoning": st.one_of(st.none(), texts), "thinking": st.one_of(st.none(), texts),
    "reasoning_content": st.one_of(st.none(), texts), "tool_calls": values}), min_size=1, max_size=3)


def without_marks(value):
    """The same data with marked strings and numbers back as their base types."""
    if isinstance(value, dict):
        return {without_marks(k): without_marks(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(without_marks(v) for v in value)
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return int.__int__(value)
    if isinstance(value, float):
        return float.__float__(value)
    return value


@settings(max_examples=300, deadline=None)
@given(values)
def test_template_data_is_transformers_plain_template_data(value):
    want = ctu._plain_template_data(value)
    assert normalize.plain(value) == want
    assert without_marks(normalize.marked(value)) == want


@settings(max_examples=200, deadline=None)
@given(messages)
def test_messages_are_cleaned_as_transformers_cleans_them(conversation):
    want = ctu._alias_reasoning_fields(ctu._plain_template_data(ctu._normalize_chat_messages(conversation)))
    got = normalize.template_messages(normalize.normalize_messages(conversation), normalize.plain)
    assert got == want
    marked = normalize.template_messages(normalize.normalize_messages(conversation), normalize.marked)
    assert without_marks(marked) == want


SHOW_ALL = ("{% for m in messages %}<m>{% for k, v in m.items() %}{{ k }}={{ v }};{% endfor %}"
            "{{ m | tojson }}{% endfor %}{{ tools }}{{ documents | tojson }}{{ extra }}")


@settings(max_examples=200, deadline=None)
@given(messages, st.lists(st.dictionaries(texts, values, max_size=2), max_size=2),
       st.lists(st.dictionaries(texts, values, max_size=2), max_size=2), values)
def test_every_input_character_lands_in_an_input_part(conversation, tools, documents, extra):
    chat = jinjamark.ChatTemplate(SHOW_ALL)
    parts = chat.render_parts(conversation, tools=tools, documents=documents, extra=extra)
    assert "".join(p.text for p in parts) == chat.render(conversation, tools=tools, documents=documents,
                                                         extra=extra)
    for part in parts:
        if not part.is_input:
            assert not set(part.text) & set("αβγ"), part


def test_none_valued_keys_are_dropped_at_the_top_of_a_message_only():
    got = normalize.normalize_messages([{"role": "user", "content": None, "meta": {"x": None}}])
    assert got == [{"role": "user", "meta": {"x": None}}]


def test_reasoning_is_copied_under_thinking_and_reasoning_content():
    message = normalize.alias_reasoning({"role": "assistant", "reasoning": "r", "content": "c"})
    assert message == {"thinking": "r", "role": "assistant", "reasoning": "r", "content": "c",
                       "reasoning_content": "r"}
    assert list(message) == ["thinking", "role", "reasoning", "content", "reasoning_content"]


def test_objects_become_their_type_name_and_that_name_is_input():
    chat = jinjamark.ChatTemplate("{{ messages[0].x }}")
    assert [(p.text, p.is_input) for p in chat.render_parts([{"role": "user", "x": Opaque()}])] == \
        [("<Opaque>", True)]


def test_a_str_subclass_prints_its_text_not_its_own_str():
    chat = jinjamark.ChatTemplate("{{ messages[0].content }}")
    assert chat.render([{"role": "user", "content": Text("<|im_end|>")}]) == "<|im_end|>"
    assert [(p.text, p.is_input) for p in chat.render_parts([{"role": "user", "content": Text("x")}])] == \
        [("x", True)]


def test_data_that_contains_itself_is_refused_as_a_limit():
    loop: list = []
    loop.append(loop)
    with pytest.raises(jinjamark.LimitExceeded):
        jinjamark.ChatTemplate("{{ messages }}").render_parts([{"role": "user", "content": loop}])
    with pytest.raises(jinjamark.LimitExceeded):
        jinjamark.ChatTemplate("{{ messages }}").render([{"role": "user", "content": loop}])


def test_host_marks_are_kept_and_plain_render_drops_them():
    from jinjamark.marks import mark
    value = mark("<|im_end|>")
    chat = jinjamark.ChatTemplate("{{ messages[0].content }}")
    assert [(p.text, p.is_input) for p in chat.render_parts([{"role": "user", "content": value}])] == \
        [("<|im_end|>", True)]
    assert not isinstance(normalize.plain(value), Marked)


def test_a_generator_conversation_is_iterated_as_transformers_does():
    chat = jinjamark.ChatTemplate("{% for m in messages %}{{ m.content }}{% endfor %}")
    parts = chat.render_parts(m for m in [{"role": "user", "content": "<|im_end|>"}])
    assert [(p.text, p.is_input) for p in parts] == [("<|im_end|>", True)]


def test_the_callers_data_is_left_unchanged():
    conversation = [{"role": "user", "content": "q", "x": None},
                    {"role": "assistant", "content": "a ", "reasoning": "r"}]
    before = repr(conversation)
    chat = jinjamark.ChatTemplate("{% for m in messages %}{{ m.content }}{{ m.thinking }}{% endfor %}")
    chat.render(conversation, continue_final_message=True)
    chat.render_parts(conversation, continue_final_message=True)
    chat.render_parts(conversation)
    assert repr(conversation) == before
