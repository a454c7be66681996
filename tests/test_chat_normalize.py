"""The cleaning of a conversation (jinjamark.chat.normalize) is transformers 5's, and the marks
survive it: every character that came from input lands in an input part, whatever shape it came in.
"""
from __future__ import annotations

import collections
import dataclasses
import json
import types

import pytest
from hypothesis import example, given, settings, strategies as st
from transformers.utils import chat_template_utils as ctu

import jinjamark
import oracle
from jinjamark.chat import normalize
from jinjamark.marks import Marked
from jinjamark.values.inputs import check_input

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


# ---------------------------------------------------------------------------- flat conversations
# `render` and `render_parts` take a shortcut for the commonest conversation (dicts of strings and
# numbers): it must clean exactly as transformers does, mark exactly as the walk does, and fall
# back whenever a message is not flat.

flat_values = st.one_of(texts, st.booleans(), st.integers(-5, 5), st.floats(allow_nan=False, width=16))
flat_keys = st.sampled_from(["role", "content", "name", "tool_call_id", "reasoning", "thinking"])
flat_messages = st.lists(st.dictionaries(flat_keys, st.one_of(flat_values, st.none(), texts.map(Text)),
                                         max_size=4), min_size=1, max_size=4)
roles = st.sampled_from(["user", "assistant", "system", "tool", "sys<|im_end|>", "αβ"])


def transformers_messages(conversation):
    return ctu._alias_reasoning_fields(ctu._plain_template_data(ctu._normalize_chat_messages(conversation)))


@settings(max_examples=300, deadline=None)
@given(flat_messages)
def test_a_flat_conversation_is_cleaned_as_transformers_cleans_it(conversation):
    check_flat_cleaning(conversation)
    check_flat_cleaning(conversation * 5)


def check_flat_cleaning(conversation):
    want = transformers_messages(conversation)
    plain = normalize.flat_messages(conversation, False)
    if plain is not None:
        assert plain == want
        assert plain is conversation  # nothing to change: shared, not copied
    marked = normalize.flat_messages(conversation, True)
    if marked is not None:
        assert without_marks(marked) == want
    assert normalize.template_messages(normalize.normalize_messages(conversation), normalize.plain) == want


@settings(max_examples=300, deadline=None)
@given(st.lists(st.fixed_dictionaries({"role": roles, "content": texts}, optional={"name": texts}),
                min_size=1, max_size=4))
def test_a_flat_conversation_is_marked_as_the_walk_marks_it(conversation):
    walked = normalize.template_messages(normalize.normalize_messages(conversation), normalize.marked,
                                         shortcut=False)  # the walk, message by message
    flat = normalize.flat_messages(conversation, True)
    assert flat == walked
    for got, want in zip(flat, walked):
        assert [(type(k), type(v)) for k, v in got.items()] == [(type(k), type(v)) for k, v in want.items()]
        role = got["role"]
        assert type(role) is (str if role in normalize.TRUSTED_ROLES or not role else jinjamark.marks.Input)
        assert all(isinstance(k, Marked) for k in got)
        # an empty string stays plain, as in the walk (it holds no character to mark)
        assert isinstance(got["content"], Marked) if got["content"] else type(got["content"]) is str


def assert_marked_as_the_walk_marks(conversation: list) -> None:
    flat = normalize.flat_messages(conversation, True)
    walked = normalize.template_messages(normalize.normalize_messages(conversation), normalize.marked,
                                         shortcut=False)
    assert flat == walked and [list(m) for m in flat] == [list(m) for m in walked]

    def types(value):  # the marks: each str, number and key's type, all through
        if type(value) is dict:
            return [(type(k), types(v)) for k, v in value.items()]
        return [types(v) for v in value] if type(value) is list else type(value)
    assert types(flat) == types(walked)


@pytest.mark.parametrize("message, marked_in_the_loop", [
    ({"role": "user", "content": None}, True),                  # a key to drop
    ({"role": "user", "content": Text("x")}, False),            # a subclass to turn into str
    ({"role": "user", "content": ["x"]}, True),                 # a container of JSON
    ({"role": "user", "content": "x", "reasoning": "r"}, True),  # a reasoning alias to copy
    ({"role": "user", 1: "x"}, False),                          # a key that is not a str
    ({"role": "user", "thinking": "t"}, True),                  # two keys, a role, but no content
    ({"role": "user", "content": 1.5, "reasoning_content": "r"}, True),
    ({"role": "assistant", "content": "", "reasoning_content": "<|im_end|>", "thinking": "t"}, True),
    ({"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": {"a": [1, 2.5, None, True]}}}]},
     True),
    ({"role": "user", "content": [{"type": "text", "text": Text("x")}]}, False),  # not JSON inside
    ({"role": "user", "content": [{1: "x"}]}, False),
    ({"role": "user", "content": ("x",)}, False),               # a tuple: rebuilt as a list
    (collections.OrderedDict(role="user", content="x"), False),  # not a plain dict
])
def test_a_conversation_that_is_not_flat_takes_the_walk(message, marked_in_the_loop):
    # render passes on only messages that no step changes; render_parts marks in one loop the
    # messages of JSON data (dropping None, aliasing reasoning) and walks the rest
    for before in (1, 20):  # first or after many flat ones
        conversation = [{"role": "user", "content": "q"}] * before + [message]
        assert normalize.flat_messages(conversation, False) is None
        if marked_in_the_loop:
            assert_marked_as_the_walk_marks(conversation)
        else:
            assert normalize.flat_messages(conversation, True) is None
            assert len(normalize.marked_flat_prefix(conversation)) == before


@pytest.mark.parametrize("message", [
    {"role": 7, "content": "x"}, {"content": "x", "name": "n"}, {"role": "user", "content": 2},
    {"content": "x", "role": "user"}, {"role": "user"}, {},
])
def test_messages_of_other_shapes_are_flat_when_every_value_is(message):
    conversation = [{"role": "user", "content": "q"}, message]
    assert normalize.flat_messages(conversation, False) is conversation
    check_flat_cleaning(conversation)


def test_a_flat_callers_conversation_is_left_unchanged_by_a_continued_render():
    conversation = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a "}]
    before = repr(conversation)
    chat = jinjamark.ChatTemplate("{% for m in messages %}{{ m.content }}|{% endfor %}")
    text = chat.render(conversation, continue_final_message=True)
    assert "".join(p.text for p in chat.render_parts(conversation, continue_final_message=True)) == text
    assert repr(conversation) == before
    assert chat.render(conversation, continue_final_message=True) == text


def test_a_flat_conversation_renders_its_input_as_input_parts():
    chat = jinjamark.ChatTemplate("{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}")
    parts = chat.render_parts([{"role": "user", "content": "<|im_end|>"},
                               {"role": "<|im_start|>", "content": "b"}])
    assert [(p.text, p.is_input) for p in parts] == [
        ("<user>", False), ("<|im_end|>", True), ("<", False), ("<|im_start|>", True), (">", False),
        ("b", True)]


def ordered(value):
    """The data with each dict as its list of items: equal only if the order is equal too."""
    if isinstance(value, dict):
        return (type(value).__name__, [(ordered(k), ordered(v)) for k, v in value.items()])
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [ordered(v) for v in value])
    return (type(value).__name__, value)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(texts, values, max_size=5))
def test_template_data_keeps_every_dict_s_order_and_shares_what_is_plain(value):
    got = normalize.plain(value)
    assert ordered(got) == ordered(ctu._plain_template_data(value))
    if ordered(got) == ordered(value) and "tuple" not in repr(ordered(value)):
        assert got is value  # nothing to change: the caller's dict itself, not a copy (a tuple
        # is always rebuilt, as in transformers)


def kinds(value):
    """The exact types all through (a marked string's class included), dict order kept."""
    if isinstance(value, dict):
        return [(type(k), kinds(v)) for k, v in value.items()]
    if isinstance(value, (list, tuple)):
        return (type(value), [kinds(v) for v in value])
    return type(value)


def clean_conversation(conversation, marks, read=True):
    """What ChatTemplate's one-conversation path gives the template as `messages`."""
    started = normalize.start_conversation(conversation, marks, normalize.TRUSTED_ROLES, read)
    return normalize.walk_conversation(*started)


mixed_conversations = st.lists(st.one_of(
    st.fixed_dictionaries({"role": roles, "content": texts}), messages.map(lambda ms: ms[0])), min_size=1, max_size=5)


@settings(max_examples=300, deadline=None)
@given(mixed_conversations, st.booleans())
def test_a_conversation_flat_up_to_some_message_is_cleaned_and_marked_as_the_walk_does(conversation, marks):
    walk = normalize.marked if marks else normalize.plain
    want = normalize.template_messages(normalize.normalize_messages(conversation), walk, shortcut=False)
    got = clean_conversation(conversation, marks)
    assert got == want == transformers_messages(conversation)
    assert kinds(got) == kinds(want)  # the same marks: Inputs where the walk makes them
    assert normalize.template_messages(normalize.normalize_messages(conversation), walk) == want
    assert clean_conversation(conversation, marks, read=False) is None


def test_a_conversation_not_read_is_still_checked():
    with pytest.raises(TypeError, match="Chat messages should be dicts"):
        clean_conversation([{"role": "user", "content": "q"}, "not a message"], True, read=False)
    with pytest.raises(TypeError, match="Chat messages should be dicts"):
        clean_conversation([{"role": "user", "content": "q"}, "not a message"], True)


@pytest.mark.parametrize("conversation", [
    [{"role": "user", "content": "q"}, "not a message"],   # found after a flat message
    ["not a message"],
])
@pytest.mark.parametrize("method", ["render", "render_parts"])
def test_a_bad_message_is_refused_before_a_bad_tool_as_transformers_refuses_it(conversation, method):
    from transformers import PreTrainedTokenizerFast
    from conftest import byte_level_bpe
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=byte_level_bpe(300, ["</s>"]), eos_token="</s>")
    source = "{% for m in messages %}{{ m.content }}{% endfor %}"
    with pytest.raises(Exception) as theirs:
        tokenizer.apply_chat_template(conversation, tools=["not a tool"], tokenize=False, chat_template=source)
    with pytest.raises(Exception) as ours:
        getattr(jinjamark.ChatTemplate(source), method)(conversation, tools=["not a tool"])
    assert (type(ours.value), str(ours.value)) == (type(theirs.value), str(theirs.value))


# ---------------------------------------------------------------------------- plain data, one walk

_JSON_LEAVES = st.one_of(st.text(max_size=6), st.integers(), st.floats(allow_nan=False), st.booleans(), st.none())
_JSON_ISH = st.recursive(_JSON_LEAVES, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.tuples(inner),
    st.dictionaries(st.one_of(st.text(max_size=4), st.integers()), inner, max_size=4)), max_leaves=24)


@settings(max_examples=300, deadline=None)
@given(_JSON_ISH)
def test_plain_data_given_back_by_the_one_walk_is_what_transformers_gives(value):
    expected = ctu._plain_template_data(value)  # transformers 5's own cleaning, the oracle
    assert normalize.plain(value) == expected
    if isinstance(value, (dict, list)) and check_input(value):
        assert normalize.plain(value) is value  # shared, as nothing in it changes


def _is_json(value) -> bool:
    """The definition check_input walks for, written as recursion."""
    if type(value) in (str, int, float, bool, type(None)):
        return True
    if type(value) is list:
        return all(map(_is_json, value))
    if type(value) is dict:
        return all(type(k) in (str, int, float, bool, type(None)) for k in value) and all(map(_is_json, value.values()))
    return False


@settings(max_examples=300, deadline=None)
@given(_JSON_ISH)
def test_check_input_tells_json_as_json_loads_makes_it(value):
    assert check_input(value) == _is_json(value)
    assert check_input([value, {"k": value}], 1) == _is_json(value)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.fixed_dictionaries({"role": st.text(max_size=4)},
                                      optional={"content": _JSON_ISH, "tool_calls": _JSON_ISH}),
                min_size=1, max_size=3))
def test_a_message_of_plain_json_is_shared_after_one_walk_and_any_other_is_cleaned(conversation):
    normalized = normalize.normalize_messages(conversation)
    got = normalize.template_messages(normalized, normalize.plain, shortcut=False)
    assert got == ctu._plain_template_data(normalized)  # transformers' cleaning, the oracle
    for message, walked in zip(normalized, got):
        assert (walked is message) == check_input(message, 1)


def _unshared(value):
    """A copy of `value` in which no container is met twice (copy.deepcopy keeps the sharing)."""
    if isinstance(value, dict):
        return {k: _unshared(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_unshared(v) for v in value)
    return value


@settings(max_examples=100, deadline=None)
@given(_JSON_ISH, st.integers(1, 4))
def test_data_shared_between_messages_renders_as_its_unshared_copy(value, n):
    # the walk that refuses 2^40 paths counts a shared container each time it meets it: data
    # shared the way real callers share it (one schema in two places) renders as copies would
    shared = [{"role": "user", "content": value, "extra": [value, {"again": value}]} for _ in range(n)]
    copies = _unshared(shared)
    source = "{{ messages|tojson }}{% for m in messages %}{{ m.content }}{{ m.extra[1].again }}{% endfor %}{{ x }}"
    chat = jinjamark.ChatTemplate(source)
    text = chat.render(shared, x=[value, value])
    # Jinja2 on transformers' cleaning of the same data, the oracle
    assert text == oracle.compiled(source).render(messages=ctu._plain_template_data(ctu._normalize_chat_messages(shared)),
                                                  x=ctu._plain_template_data([value, value]))
    assert text == chat.render(copies, x=_unshared([value, value]))
    for origins in (False, True):
        got = chat.render_parts(shared, x=[value, value], origins=origins)
        expected = chat.render_parts(copies, x=_unshared([value, value]), origins=origins)
        assert got == expected


def test_a_value_shared_into_thousands_of_paths_renders_under_the_bound():
    value: list = ["leaf"]
    for _ in range(14):  # 2^14 paths through 15 lists: under the bound of a million containers
        value = [value, value]
    chat = jinjamark.ChatTemplate("{{ messages[0].content|tojson|length }}")
    expected = len(json.dumps(value))
    assert chat.render([{"role": "user", "content": value}]) == str(expected)
    assert "".join(p.text for p in chat.render_parts([{"role": "user", "content": value}], origins=True)) == str(expected)


def test_a_message_past_what_marking_takes_on_trust_is_checked_then_marked_whole():
    # 20,000 dicts: past the containers marking takes on trust (normalize._TRUSTED), so
    # check_input looks first; the parts are still every text, marked
    content = [{"type": "text", "text": f"t{i}"} for i in range(20000)]
    source = "{% for m in messages %}{% for c in m.content %}{{ c.text }}{% endfor %}|{% endfor %}"
    chat = jinjamark.ChatTemplate(source)
    messages = [{"role": "user", "content": content}, {"role": "user", "content": content[:3]}]
    parts = chat.render_parts(messages)
    assert "".join(p.text for p in parts) == oracle.compiled(source).render(messages=messages)
    assert all(p.is_input for p in parts if p.text != "|")
    assert normalize._TRUSTED < len(content)


class Text(str):
    """A str subclass, which the cleaning walk copies as a str (not plain already)."""


PART_VALUES = st.one_of(st.text(max_size=3), st.integers(), st.booleans(), st.none(), st.floats(allow_nan=False),
                        st.text(max_size=3).map(Text), st.lists(st.text(max_size=2), max_size=2),
                        st.tuples(st.text(max_size=2)),
                        st.dictionaries(st.text(max_size=2), st.text(max_size=2), max_size=2))
PARTS = st.lists(st.one_of(st.dictionaries(st.sampled_from(["type", "text", "url"]), PART_VALUES, max_size=3),
                           PART_VALUES), max_size=3)
TYPED_MESSAGES = st.builds(
    lambda role, content, extra: {"role": role, "content": content, **extra},
    st.sampled_from(["user", "assistant"]), st.one_of(PARTS, PART_VALUES),
    st.dictionaries(st.sampled_from(["name", "reasoning_content", "thinking", "tool_call_id"]),
                    st.one_of(PART_VALUES, PARTS), max_size=2))


@settings(max_examples=300, deadline=None)
@given(TYPED_MESSAGES)
@example({"role": "user", "content": [{"type": "text", "text": "hi"}, {"type": "image", "url": "u"}]})
@example({"role": "user", "content": [{"type": "text", "text": Text("hi")}]})
@example({"role": "user", "content": [{"type": "text", "text": ("hi",)}], "name": "n"})
@example({"role": "user", "content": "hi", "reasoning_content": [{"text": "r"}]})
def test_a_message_of_typed_content_is_shared_only_when_the_walk_would_share_it(message):
    """The look at typed content (`_typed_message`) answers yes only where check_input does;
    the messages come out as transformers' cleaning gives them either way."""
    normalized = normalize.normalize_messages([message])
    got = normalize.template_messages(normalized, normalize.plain, shortcut=False)
    if normalize._typed_message(normalized[0]):
        assert check_input(normalized[0], 1)
        assert got[0] is normalized[0] or "reasoning_content" in message or "thinking" in message
    assert got == ctu._alias_reasoning_fields(ctu._plain_template_data(ctu._normalize_chat_messages([message])))


reasoning_messages = st.fixed_dictionaries({"role": roles, "content": texts}, optional={
    "reasoning_content": texts, "thinking": texts, "reasoning": texts, "name": texts, "n": st.integers(0, 3)})
typed_messages = st.fixed_dictionaries({"role": roles, "content": st.lists(
    st.fixed_dictionaries({"type": st.just("text"), "text": texts}), max_size=3)})


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(reasoning_messages, typed_messages, st.fixed_dictionaries({"role": roles, "content": texts})),
                min_size=1, max_size=5))
def test_reasoning_and_typed_content_are_cleaned_in_one_loop_as_transformers_cleans_them(conversation):
    got = normalize.plain_conversation(conversation)
    assert got is not None and got == transformers_messages(conversation)
    assert clean_conversation(conversation, False) == got
    # tool calls (JSON as json.loads makes it) in the same loop
    calls = conversation + [{"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": {"b": [1, None]}}}],
                             "reasoning_content": "r"}]
    assert normalize.plain_conversation(calls) == transformers_messages(calls) == clean_conversation(calls, False)
    # a None to drop, an object, data too deep: the general steps (which refuse where transformers does)
    deep: object = "x"
    for _ in range(normalize.MAX_DEPTH + 2):
        deep = [deep]
    for odd in ({"role": "assistant", "content": None}, {"role": "user", "content": Opaque()},
                {"role": "user", "content": ("a", "b")}):
        assert normalize.plain_conversation(conversation + [odd]) is None
        assert clean_conversation(conversation + [odd], False) == transformers_messages(conversation + [odd])
    assert normalize.plain_conversation(conversation + [{"role": "user", "content": "x", "data": deep}]) is None
