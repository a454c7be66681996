"""Origins and assistant masks over the whole corpus: origin renders give render's text; every
input character names the message and field it came from (a sentinel in every field); masks
from origins equal the `{% generation %}` tags' on TRL's training templates, token for token;
and on every template, masks cover assistant content and nothing of anyone else's."""
from __future__ import annotations

import functools
import re

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import jinjamark
from conftest import byte_level_bpe, chat_templates, conversations, source_of
from jinjamark import hf
from jinjamark.chat.masks import GENERATED, EmptyMaskError
from jinjamark.chat.origins import assistant_spans, render_runs

TOKENS = {"bos_token": "<s>", "eos_token": "</s>"}
TEMPLATES = chat_templates()
FIXTURES = conversations()


def chat_of(source: str):
    try:
        return jinjamark.ChatTemplate(source, special_tokens=TOKENS)
    except jinjamark.TemplateError:
        return None


def options_of(fx: dict) -> dict:
    return {"tools": fx.get("tools"), "documents": fx.get("documents"), **(fx.get("kwargs") or {})}


# ---------------------------------------------------------------------------- sentinels

SENTINEL = re.compile(r"~~(-?\d+)\|([\w.\[\]]+)~~")
KEPT = frozenset({"role", "type"})  # what templates branch on: left as it is


def sentinels(value, message, path=""):
    """`value` with every string (but roles and types) replaced by a sentinel naming its
    message and field path, as `Source` names them."""
    if isinstance(value, str):
        return f"~~{message}|{path}~~"
    if isinstance(value, dict):
        return {k: v if k in KEPT else sentinels(v, message, f"{path}.{k}" if path else k)
                for k, v in value.items()}
    if isinstance(value, list):
        return [sentinels(v, message, f"{path}[{i}]") for i, v in enumerate(value)]
    return value


def with_sentinels(fx: dict) -> tuple[list, dict]:
    messages = [sentinels(m, i) for i, m in enumerate(fx["messages"])]
    options = options_of(fx)
    for name in ("tools", "documents"):
        if options.get(name) is not None:
            options[name] = sentinels(options[name], -1, name)
    return messages, options


def named(origin, message, field) -> bool:
    sources = getattr(origin, "sources", None) or (origin,)
    want = None if message == -1 else message
    return any(s.message == want and s.field == field for s in sources)


@functools.cache
def sentinels_checked(name: str, source: str) -> int:
    """How many sentinels the template printed verbatim, each checked to lie in input parts
    that name its message and field (an AssertionError otherwise)."""
    chat = chat_of(source)
    if chat is None:
        return 0
    checked = 0
    for _, fx in FIXTURES:
        messages, options = with_sentinels(fx)
        try:
            text = chat.render(messages, **options)
        except Exception:  # noqa: BLE001 - the data does not suit this template
            continue
        parts = chat.render_parts(messages, origins=True, **options)
        assert "".join(p.text for p in parts) == text
        owner = []  # the part of each character
        for part in parts:
            owner.extend([part] * len(part.text))
        for found in SENTINEL.finditer(text):
            message, field = int(found.group(1)), found.group(2)
            for part in {id(p): p for p in owner[found.start():found.end()]}.values():
                assert part.is_input and named(part.origin, message, field), (found.group(0), part)
            checked += 1
    return checked


@pytest.mark.parametrize("name,source", TEMPLATES, ids=[n for n, _ in TEMPLATES])
def test_every_input_character_names_its_message_and_field(name, source):
    sentinels_checked(name, source)


def test_the_sentinels_checked_cover_the_corpus():
    counts = [sentinels_checked(name, source) for name, source in TEMPLATES]
    assert sum(1 for c in counts if c) >= 0.9 * len(TEMPLATES) and sum(counts) >= 10_000


# ---------------------------------------------------------------------------- TRL's convention

SPECIALS = ["<|im_start|>", "<|im_end|>", "<|endoftext|>", "<|begin_of_text|>", "<|start_header_id|>",
            "<|end_header_id|>", "<|eot_id|>", "<start_of_turn>", "<end_of_turn>", "<s>", "</s>",
            "<|START_OF_TURN_TOKEN|>", "<|END_OF_TURN_TOKEN|>", "<|START_RESPONSE|>", "<|END_RESPONSE|>"]
TRL = [n for n, s in TEMPLATES if "trl-" in n and n.endswith("_training") and "generation %}" in s]


@pytest.fixture(scope="module")
def tokenizer():
    from transformers import PreTrainedTokenizerFast
    raw = byte_level_bpe(900, SPECIALS)
    raw.add_tokens(["<tool_call>", "</tool_call>", "<think>", "</think>"])
    return PreTrainedTokenizerFast(tokenizer_object=raw, bos_token="<s>", eos_token="</s>",
                                   pad_token="<|endoftext|>")


def untagged(source: str) -> str:
    """The template with its generation tags written as plain `{% if true %}` blocks."""
    source = re.sub(r"\{%(-?)\s*generation\s*(-?)%\}", r"{%\1 if true \2%}", source)
    return re.sub(r"\{%(-?)\s*endgeneration\s*(-?)%\}", r"{%\1 endif \2%}", source)


def test_trl_templates_are_all_checked():
    assert len(TRL) >= 10


@pytest.mark.parametrize("name", TRL)
def test_masks_from_origins_equal_the_tags_masks_token_for_token(tokenizer, name):
    source = source_of(f"{name}.jinja")
    compared = 0
    for fixture_name, fx in FIXTURES:
        if not any(m.get("role") == "assistant" for m in fx["messages"]):
            continue
        options = options_of(fx)
        try:
            tags = hf.apply_chat_template(tokenizer, fx["messages"], chat_template=source,
                                          return_assistant_tokens_mask=True,
                                          assistant_mask_source="generation", **options)
        except Exception:  # noqa: BLE001 - the template refuses this conversation
            continue
        origins = hf.apply_chat_template(tokenizer, fx["messages"], chat_template=untagged(source),
                                         return_assistant_tokens_mask=True,
                                         assistant_mask_source="origins", **options)
        assert origins["input_ids"] == tags["input_ids"], fixture_name
        assert origins["assistant_masks"] == tags["assistant_masks"], fixture_name
        compared += 1 in tags["assistant_masks"]
    assert compared >= 3  # gemma refuses system turns: the fewest, 3 conversations


# ---------------------------------------------------------------------------- mask properties

text = st.text(alphabet="abc XYZ<>|\n", min_size=1, max_size=12)
arguments = st.one_of(text, st.dictionaries(st.sampled_from(["city", "n"]), text, max_size=2))
call = st.fixed_dictionaries({"type": st.just("function"), "function": st.fixed_dictionaries(
    {"name": st.sampled_from(["get_weather", "run"]), "arguments": arguments})})
assistant = st.one_of(
    st.fixed_dictionaries({"role": st.just("assistant"), "content": text}),
    st.fixed_dictionaries({"role": st.just("assistant"), "content": text, "reasoning_content": text}),
    st.fixed_dictionaries({"role": st.just("assistant"), "content": st.just(""),
                           "tool_calls": st.lists(call, min_size=1, max_size=2)}))
user = st.fixed_dictionaries({"role": st.just("user"), "content": text})
tool = st.fixed_dictionaries({"role": st.just("tool"), "content": text})


@st.composite
def conversation(draw):
    messages = [draw(st.fixed_dictionaries({"role": st.just("system"), "content": text}))] \
        if draw(st.booleans()) else []
    for _ in range(draw(st.integers(1, 3))):
        messages.append(draw(user))
        reply = draw(assistant)
        messages.append(reply)
        if "tool_calls" in reply:
            messages.append(draw(tool))
            messages.append(draw(st.fixed_dictionaries({"role": st.just("assistant"), "content": text})))
    return messages


def field_of(source) -> str:
    return source.field.split(".", 1)[0].split("[", 1)[0]


def sources_of(origin) -> tuple:
    """The message sources of an input origin (one, or each of a `Several`)."""
    if origin is None:
        return ()
    return tuple(s for s in getattr(origin, "sources", None) or (origin,) if s.message is not None)


def generated(source, messages) -> bool:
    """Whether `source` is a field an assistant message's model wrote (content, reasoning, calls)."""
    return messages[source.message]["role"] == "assistant" and field_of(source) in GENERATED


def check_masks(chat, messages) -> str:
    """The properties of one conversation's mask: what it checked ('skip' when the template
    refuses the conversation)."""
    try:
        chat.render(messages)
    except Exception:  # noqa: BLE001
        return "skip"
    try:
        runs, spans = assistant_spans(chat, messages)
    except EmptyMaskError:  # then no assistant content reaches the output at all
        runs, _ = render_runs(chat, messages)
        assert not any(generated(s, messages) for r in runs for s in sources_of(r.source))
        return "empty"
    size = sum(len(r.text) for r in runs)
    mask = bytearray(size)
    for a, b in spans:
        mask[a:b] = b"\1" * (b - a)
    pos = 0
    for run in runs:
        end = pos + len(run.text)
        sources = sources_of(run.source)
        for source in sources:
            role = messages[source.message]["role"]
            if len(sources) == 1 and generated(source, messages):
                assert all(mask[pos:end]), ("assistant content not masked", run)
            if role != "assistant":
                assert not any(mask[pos:end]), ("masked the data of a " + role, run)
        pos = end
    if messages[-1]["role"] == "assistant":
        try:
            prompt = chat.render(messages[:-1], add_generation_prompt=True)
        except Exception:  # noqa: BLE001
            return "masked"
        whole = "".join(r.text for r in runs)
        if whole.startswith(prompt):
            assert all(mask[len(prompt):]), ("the last turn is not wholly masked", whole[len(prompt):])
    return "masked"


@pytest.mark.parametrize("name,source", TEMPLATES, ids=[n for n, _ in TEMPLATES])
def test_masks_cover_assistant_content_and_nothing_else(name, source):
    chat = chat_of(source)
    if chat is None:
        return
    seen = []

    @settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
    @given(conversation())
    def run(messages):
        seen.append(check_masks(chat, messages))
    run()
    for _, fx in FIXTURES:  # and the corpus conversations with assistant turns
        if any(m.get("role") == "assistant" for m in fx["messages"]) and not fx.get("tools"):
            seen.append(check_masks(chat, fx["messages"]))
    assert seen
