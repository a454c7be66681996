"""ChatTemplate renders what transformers 5's `apply_chat_template(..., tokenize=False)` renders.

The reference is the real method, called as users call it: the corpus fixtures' messages as given
(None-valued keys, reasoning under several names), their kwargs as keyword arguments, on a
PreTrainedTokenizerFast built here (bos `<s>`, eos `</s>`). Both raising counts as agreeing;
ours must then be catchable as the exception transformers raised (a template's own error: as
ValueError). Both clocks are pinned to the same moment.
"""
from __future__ import annotations

import dataclasses
import json
from datetime import datetime

import pytest
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast
from transformers.utils import chat_template_utils

import jinjamark
from conftest import CONVERSATIONS as CONVERSATIONS_DIR, chat_templates, conversations, outcome

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
    raw = Tokenizer(models.BPE())
    raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    raw.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=["<s>", "</s>", "<|im_end|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    raw.train_from_iterator([p.read_text(encoding="utf-8") for p in sorted(CONVERSATIONS_DIR.glob("*.json"))],
                            trainer)
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
