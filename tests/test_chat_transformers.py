"""ChatTemplate renders what transformers 5's `apply_chat_template(..., tokenize=False)` renders.

The reference is the real method, called as users call it: the corpus fixtures' messages as given
(None-valued keys, reasoning under several names), their kwargs as keyword arguments, on a
PreTrainedTokenizerFast built here (bos `<s>`, eos `</s>`). Both raising counts as agreeing;
ours must then be catchable as the exception transformers raised (a template's own error: as
ValueError). Both clocks are pinned to the same moment.
"""
from __future__ import annotations

import dataclasses
from datetime import datetime

import pytest
from transformers import PreTrainedTokenizerFast
from transformers.utils import chat_template_utils

import jinjamark
from conftest import byte_level_bpe, chat_templates, conversations, outcome

TEMPLATES = chat_templates()
CONVERSATIONS = conversations()
FIXED_NOW = datetime(2026, 3, 14, 15, 9, 26)
CHATML = ("{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
          "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


class _FixedClock(datetime):
    @classmethod
    def now(cls, tz=None):
        return FIXED_NOW


@pytest.fixture(autouse=True)
def pinned_clock(monkeypatch):
    """transformers' strftime_now reads the module's `datetime` when called."""
    monkeypatch.setattr(chat_template_utils, "datetime", _FixedClock)


@pytest.fixture(scope="module")
def tokenizer() -> PreTrainedTokenizerFast:
    raw = byte_level_bpe(400, ["<s>", "</s>", "<|im_end|>"])
    return PreTrainedTokenizerFast(tokenizer_object=raw, bos_token="<s>", eos_token="</s>")


def theirs(tok, source, conversation, **options):
    return tok.apply_chat_template(conversation, tokenize=False, chat_template=source, **options)


def ours(tok, source, conversation, method="render", **options):
    chat = jinjamark.ChatTemplate(source, special_tokens=tok.special_tokens_map, now=lambda: FIXED_NOW)
    return getattr(chat, method)(conversation, **options)


def agree(want, got) -> str | None:
    """None when both gave the same text, or both raised (ours as catchable as theirs)."""
    if want.raised:
        # a template's own error is ours as a ValueError; a refused argument, transformers' type
        if not (isinstance(got.error, ValueError) or type(got.error) is type(want.error)):
            return f"transformers raised {want.describe()[:200]}; jinjamark gave {got.describe()[:200]}"
        return None
    if got.raised:
        return f"jinjamark raised {got.describe()[:300]}"
    if got.value != want.value:
        i = next((i for i, (a, b) in enumerate(zip(want.value, got.value)) if a != b),
                 min(len(want.value), len(got.value)))
        return f"differs at {i}: {want.value[max(0, i - 40):i + 40]!r} vs {got.value[max(0, i - 40):i + 40]!r}"
    return None


def joined(parts) -> str:
    return "".join(p.text for p in parts)


def options_of(fixture: dict, agp) -> dict:
    return dict(tools=fixture.get("tools"), documents=fixture.get("documents"),
                add_generation_prompt=agp, **(fixture.get("kwargs") or {}))


@pytest.mark.parametrize("name,source", TEMPLATES, ids=[n for n, _ in TEMPLATES])
def test_every_fixture_renders_as_apply_chat_template(tokenizer, name, source):
    misses = []
    for fname, fixture in CONVERSATIONS:
        for agp in (False, True):
            options = options_of(fixture, agp)
            want = outcome(theirs, tokenizer, source, fixture["messages"], **options)
            got = outcome(ours, tokenizer, source, fixture["messages"], **options)
            miss = agree(want, got)
            if miss is None and not got.raised:
                parts = outcome(ours, tokenizer, source, fixture["messages"], "render_parts", **options)
                if parts.raised or joined(parts.value) != got.value:
                    miss = f"render_parts differs from render: {parts.describe()[:200]}"
            if miss:
                misses.append(f"{fname} agp={agp}: {miss}")
    assert not misses, f"{len(misses)} renders differ:\n" + "\n".join(misses)


@pytest.mark.parametrize("name,source", TEMPLATES, ids=[n for n, _ in TEMPLATES])
def test_continue_final_message_cuts_where_transformers_cuts(tokenizer, name, source):
    """Every fixture, continued at its final message's content: both raise or give the same."""
    misses = []
    for fname, fixture in CONVERSATIONS:
        options = options_of(fixture, False)
        want = outcome(theirs, tokenizer, source, fixture["messages"], continue_final_message=True, **options)
        got = outcome(ours, tokenizer, source, fixture["messages"], continue_final_message=True, **options)
        miss = agree(want, got)
        if miss is None and not got.raised:
            parts = outcome(ours, tokenizer, source, fixture["messages"], "render_parts",
                            continue_final_message=True, **options)
            if parts.raised or joined(parts.value) != got.value:
                miss = f"render_parts differs from render: {parts.describe()[:200]}"
        if miss:
            misses.append(f"{fname}: {miss}")
    assert not misses, f"{len(misses)} renders differ:\n" + "\n".join(misses)


# ---------------------------------------------------------------------------- shapes of input

SHOW = ("{% for m in messages %}[{{ m.role }}|{{ m | tojson }}|"
        "{% if m.content is none %}none{% elif m.content is defined %}{{ m.content }}{% endif %}]"
        "{% endfor %}{{ tools | tojson }}{{ documents | tojson }}{{ extra | default(none) | tojson }}"
        "{% if add_generation_prompt %}<gen>{% endif %}")


@dataclasses.dataclass
class Message:
    role: str
    content: str | None = None
    reasoning: str | None = None


@dataclasses.dataclass
class Call:
    name: str
    arguments: dict


class Pydantic:
    """The part of a pydantic model transformers uses: model_dump()."""

    def __init__(self, **fields):
        self.fields = fields

    def model_dump(self):
        return dict(self.fields)


class Role(str):
    pass


class Count(int):
    def __str__(self):
        return "forged"


class Opaque:
    def __str__(self):
        return "<|im_end|>"


class Conversation:
    def __init__(self, messages):
        self.messages = messages


SHAPES = {
    "none-valued-keys": [{"role": "user", "content": "hi", "name": None},
                         {"role": "assistant", "content": None, "tool_calls": [{"id": None}]}],
    "reasoning-alias": [{"role": "user", "content": "q"},
                        {"role": "assistant", "content": "a", "reasoning": "r"},
                        {"role": "assistant", "content": "b", "thinking": "t", "reasoning_content": None}],
    "dataclasses": [Message("user", "hi"), Message("assistant", None, "why"),
                    {"role": "assistant", "content": "x", "tool_calls": [Call("f", {"a": 1})]}],
    "pydantic-like": [Pydantic(role="user", content="hi", name=None),
                      {"role": "assistant", "content": [Pydantic(type="text", text="t")]}],
    "subclasses-and-objects": [{"role": Role("user"), "content": "n", "n": Count(3),
                                "x": Opaque(), "s": {1, 2}, "b": b"x", "t": (1, "a")}],
    "conversation-object": Conversation([{"role": "user", "content": "hi"}]),
    "tuple-conversation": ({"role": "user", "content": "hi"},),
}


@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("agp", [False, True])
def test_message_shapes_render_as_transformers_cleans_them(tokenizer, shape, agp):
    options = dict(tools=[{"name": Role("t"), "n": Count(1)}], documents=[{"text": Opaque()}],
                   add_generation_prompt=agp, extra={"k": [Message("user", "x")], "o": Opaque()})
    want = outcome(theirs, tokenizer, SHOW, SHAPES[shape], **options)
    got = outcome(ours, tokenizer, SHOW, SHAPES[shape], **options)
    assert not want.raised, want.describe()
    assert agree(want, got) is None, agree(want, got)
    parts = ours(tokenizer, SHOW, SHAPES[shape], "render_parts", **options)
    assert joined(parts) == got.value


def test_numpy_scalars_are_unwrapped_as_transformers_does(tokenizer):
    numpy = pytest.importorskip("numpy")
    conversation = [{"role": "user", "content": "x", "flag": numpy.bool_(False), "n": numpy.int64(7),
                     "f": numpy.float32(0.5), "a": numpy.zeros(2)}]
    want = theirs(tokenizer, SHOW, conversation)
    assert ours(tokenizer, SHOW, conversation) == want
    assert joined(ours(tokenizer, SHOW, conversation, "render_parts")) == want


def test_a_batch_gives_one_render_per_conversation(tokenizer):
    batch = [[{"role": "user", "content": "a"}], [{"role": "user", "content": "b"},
                                                 {"role": "assistant", "content": "c", "x": None}],
             Conversation([{"role": "user", "content": "d"}])]
    for agp in (False, True):
        want = theirs(tokenizer, SHOW, batch, add_generation_prompt=agp)
        assert isinstance(want, list) and len(want) == 3
        assert ours(tokenizer, SHOW, batch, add_generation_prompt=agp) == want
        assert [joined(p) for p in ours(tokenizer, SHOW, batch, "render_parts",
                                        add_generation_prompt=agp)] == want
    batch = [[{"role": "user", "content": "a"}, {"role": "assistant", "content": "pre "}]] * 2
    assert ours(tokenizer, CHATML, batch, continue_final_message=True) == \
        theirs(tokenizer, CHATML, batch, continue_final_message=True)


def test_tools_given_as_functions_are_converted_as_transformers_converts_them(tokenizer):
    def get_weather(city: str, unit: str = "celsius"):
        """Get the weather.

        Args:
            city: The city.
            unit: The unit.
        """

    class Host:
        def lookup(self, key: int) -> str:
            """Look a key up.

            Args:
                key: The key.
            """
    tools = [get_weather, Host().lookup, {"type": "function", "function": {"name": "x"}}]
    want = theirs(tokenizer, SHOW, [{"role": "user", "content": "hi"}], tools=tools)
    assert ours(tokenizer, SHOW, [{"role": "user", "content": "hi"}], tools=tools) == want


# ---------------------------------------------------------------------------- errors

ERRORS = {
    "empty-conversation": ([], {}),
    "empty-tuple": ((), {}),
    "message-not-a-dict": (["hi"], {}),
    "message-list": ([[]], {}),  # a batch of one empty conversation: not an error in transformers
    "conversation-a-dict": ({"role": "user", "content": "x"}, {}),
    "tool-not-a-function": ([{"role": "user", "content": "x"}], {"tools": ["get_weather"]}),
    "tool-a-class": ([{"role": "user", "content": "x"}], {"tools": [Message]}),
    "document-not-a-dict": ([{"role": "user", "content": "x"}], {"documents": ["text"]}),
    "agp-with-continue": ([{"role": "user", "content": "x"}],
                          {"add_generation_prompt": True, "continue_final_message": True}),
    "continue-missing-field": ([{"role": "user", "content": "x"}], {"continue_final_message": "reasoning"}),
    "continue-field-not-in-template": ([{"role": "user", "content": "x", "other": "y"}],
                                       {"continue_final_message": "other"}),
    "continue-not-printed": ([{"role": "user", "content": "x"}, {"role": "tool", "content": "y"}],
                             {"continue_final_message": True}),
    "continue-blocks-without-text": ([{"role": "user", "content": [{"type": "image"}]}],
                                     {"continue_final_message": True}),
    "continue-not-text": ([{"role": "user", "content": 5}], {"continue_final_message": True}),
    "messages-as-kwarg": ([{"role": "user", "content": "x"}], {"messages": []}),
}
ONLY_USER = "{% for m in messages %}{% if m.role == 'user' %}{{ m.content }}{% endif %}{% endfor %}"


@pytest.mark.parametrize("case", list(ERRORS))
def test_refusals_are_transformers_refusals(tokenizer, case):
    conversation, options = ERRORS[case]
    want = outcome(theirs, tokenizer, ONLY_USER, conversation, **options)
    got = outcome(ours, tokenizer, ONLY_USER, conversation, **options)
    assert agree(want, got) is None, agree(want, got)
    if want.raised:
        assert type(got.error) is type(want.error) or isinstance(got.error, ValueError)
        if case != "messages-as-kwarg":  # Jinja2 names its own method there
            assert str(got.error) == str(want.error)
    parts = outcome(ours, tokenizer, ONLY_USER, conversation, "render_parts", **options)
    assert parts.raised == want.raised


@pytest.mark.parametrize("name", ["tokenize", "padding", "truncation", "max_length", "return_tensors",
                                  "return_dict", "return_assistant_tokens_mask", "tokenizer_kwargs",
                                  "sanitize_control_tokens", "chat_template"])
def test_apply_chat_template_parameters_are_never_template_variables(name):
    chat = jinjamark.ChatTemplate("{{ " + name + " }}")
    for method in (chat.render, chat.render_parts):
        with pytest.raises(TypeError, match="jinjamark.hf.apply_chat_template"):
            method([{"role": "user", "content": "x"}], **{name: True})


def test_kwargs_named_like_render_parameters_are_template_variables():
    chat = jinjamark.ChatTemplate("{{ self }}{{ marked }}{{ conversation }}")
    assert chat.render([{"role": "user"}], self="a", marked="b", conversation="c") == "abc"
    assert [(p.text, p.is_input) for p in chat.render_parts([{"role": "user"}], self="a", marked="b",
                                                            conversation="c")] == [("abc", True)]


def test_add_generation_prompt_from_input_is_input_unless_a_bool():
    chat = jinjamark.ChatTemplate("{{ add_generation_prompt }}")
    assert [(p.text, p.is_input) for p in chat.render_parts([{"role": "user"}],
                                                            add_generation_prompt="<|im_end|>")] == \
        [("<|im_end|>", True)]
    assert [(p.text, p.is_input) for p in chat.render_parts([{"role": "user"}],
                                                            add_generation_prompt=True)] == [("True", False)]


# ---------------------------------------------------------------------------- continue_final_message

CONTINUED = {
    "verbatim": "{% for m in messages %}<{{ m.role }}>{{ m.content }}</s>{% endfor %}",
    "trimmed": "{% for m in messages %}<{{ m.role }}>{{ m.content | trim }}</s>{% endfor %}",
    "trimmed-then-space": "{% for m in messages %}<{{ m.role }}>{{ m.content | trim }} </s>{% endfor %}",
    "trimmed-then-newline": "{% for m in messages %}<{{ m.role }}> {{ m.content | trim }}\n{% endfor %}",
    "printed-twice": "{% for m in messages %}{{ m.content }}|{{ m.content }}</s>{% endfor %}",
    "json": "{{ messages | tojson }}",
    "reasoning": "{% for m in messages %}{{ m.reasoning_content }}/{{ m.content }}</s>{% endfor %}",
    "thinking": "{% for m in messages %}<t>{{ m.thinking }}</t>{{ m.content }}</s>{% endfor %}",
    "blocks": "{% for m in messages %}{% for b in m.content %}{{ b.text }};{% endfor %}</s>{% endfor %}",
    "blank-trimmed": "{% for m in messages %}<{{ m.role }}>\n{{ m.content | trim }}</s>{% endfor %}",
}
FINALS = ["Hi", "Hi  ", "  Hi \n", "", " ", "a CONTINUE_FINAL_MESSAGE_TAG b", "<|im_end|>"]


@pytest.mark.parametrize("template", list(CONTINUED))
@pytest.mark.parametrize("final", FINALS, ids=[repr(f) for f in FINALS])
def test_continue_final_message_edge_cases(tokenizer, template, final):
    source = CONTINUED[template]
    field = True
    last = {"role": "assistant", "content": final}
    if template in ("reasoning", "thinking"):
        last = {"role": "assistant", "content": "c", "reasoning": final}
        field = "reasoning_content" if template == "reasoning" else "thinking"
    if template == "blocks":
        last = {"role": "assistant", "content": [{"type": "text", "text": "first"},
                                                 {"type": "text", "text": final}, {"type": "image"}]}
    conversation = [{"role": "user", "content": "q"}, last]
    want = outcome(theirs, tokenizer, source, conversation, continue_final_message=field)
    got = outcome(ours, tokenizer, source, conversation, continue_final_message=field)
    if want.raised or "CONTINUE_FINAL_MESSAGE_TAG" in final:
        # transformers cuts at the user's copy of its tag: we cut where the message ends
        assert want.raised or not got.raised
        return
    if template == "printed-twice":  # transformers leaves its tag in the first copy; we do not
        want = want._replace(value=want.value.replace("CONTINUE_FINAL_MESSAGE_TAG ", ""))
    assert agree(want, got) is None, agree(want, got)
    parts = ours(tokenizer, source, conversation, "render_parts", continue_final_message=field)
    assert joined(parts) == got.value
    assert all(p.is_input for p in parts if p.text in (final, final.strip()) and p.text)


def test_continue_final_message_is_not_fooled_by_the_tag_in_the_message():
    chat = jinjamark.ChatTemplate(CONTINUED["verbatim"])
    final = "x CONTINUE_FINAL_MESSAGE_TAG y"
    got = chat.render([{"role": "user", "content": "q"}, {"role": "assistant", "content": final}],
                      continue_final_message=True)
    assert got == f"<user>q</s><assistant>{final}"


def test_continue_final_message_keeps_the_marks():
    chat = jinjamark.ChatTemplate(CHATML)
    parts = chat.render_parts([{"role": "user", "content": "<|im_end|>"},
                               {"role": "assistant", "content": "Sure <|im_start|>"}],
                              continue_final_message=True)
    assert [(p.text, p.is_input) for p in parts] == [  # the roles are the chat APIs' names
        ("<|im_start|>user\n", False), ("<|im_end|>", True),
        ("<|im_end|>\n<|im_start|>assistant\n", False), ("Sure <|im_start|>", True)]


@pytest.mark.parametrize("shape", [list, tuple])
def test_continue_final_message_in_content_blocks_leaves_the_callers_blocks_alone(tokenizer, shape):
    blocks = shape([{"type": "text", "text": "a"}, {"type": "text", "text": "b "}, {"type": "image"}])
    conversation = [{"role": "user", "content": "q"}, {"role": "assistant", "content": blocks}]
    source = "{% for m in messages %}{{ m.content }}{% endfor %}"  # the blocks' repr: list or tuple
    before = repr(conversation)
    want = theirs(tokenizer, source, conversation, continue_final_message=True)
    assert ours(tokenizer, source, conversation, continue_final_message=True) == want
    assert joined(ours(tokenizer, source, conversation, "render_parts", continue_final_message=True)) == want
    assert repr(conversation) == before
