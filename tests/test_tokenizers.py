"""Tokenization that honours the marks, with real tokenizers built here (no network).

A byte-level BPE model is trained on the corpus conversations, with the special tokens of
ChatML, Llama-3, Gemma and Llama-2 added; we test it raw (`tokenizers.Tokenizer`) and wrapped in
a transformers `PreTrainedTokenizerFast`.
"""
from __future__ import annotations

import json
import pathlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer
from transformers import PreTrainedTokenizerFast

import jinjamark
from conftest import byte_level_bpe, fixture
from jinjamark.tokenizers import encode, special_tokens

CORPUS = pathlib.Path(__file__).parent / "corpus"
SPECIALS = ["<|im_start|>", "<|im_end|>", "<|endoftext|>", "<|begin_of_text|>",
            "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>", "<start_of_turn>",
            "<end_of_turn>", "<s>", "</s>", "[INST]", "[/INST]", "<|end|>", "<|system|>",
            "<|user|>", "<|assistant|>"]
TEMPLATES = {
    "chatml": "chatml--teknium_OpenHermes-2.5-Mistral-7B.jinja",
    "llama3": "llamacpp--meta-llama-Llama-3.1-8B-Instruct.jinja",
    "gemma": "gemma--google_gemma-7b-it.jinja",
    "llama2": "llama2--BramVanroy_Llama-2-13b-chat-dutch.jinja",
}
INJECTIONS = ["20-injection-user", "21-injection-everywhere"]
BENIGN = ["01-single-user", "02-system-user", "03-multi-turn", "11-unicode", "13-long-conversation"]


def plain_ids(tokenizer, text: str) -> list[int]:
    if isinstance(tokenizer, Tokenizer):
        return tokenizer.encode(text, add_special_tokens=False).ids
    return tokenizer.encode(text, add_special_tokens=False)


def chat(template: str) -> jinjamark.ChatTemplate:
    source = (CORPUS / "templates" / TEMPLATES[template]).read_text(encoding="utf-8")
    return jinjamark.ChatTemplate(source, special_tokens={"bos_token": "<s>", "eos_token": "</s>"})



def render_parts(template: str, name: str) -> list[jinjamark.Part]:
    fx = fixture(name)
    return chat(template).render_parts(fx["messages"], tools=fx.get("tools"),
                                       documents=fx.get("documents"), add_generation_prompt=True,
                                       **(fx.get("kwargs") or {}))


@pytest.fixture(scope="module")
def raw_tokenizer() -> Tokenizer:
    return byte_level_bpe(800, SPECIALS)


@pytest.fixture(scope="module", params=["tokenizers", "transformers"])
def tokenizer(request, raw_tokenizer):
    if request.param == "tokenizers":
        return raw_tokenizer
    return PreTrainedTokenizerFast(tokenizer_object=raw_tokenizer)


def renderable(names: list[str]) -> list[tuple[str, str]]:
    """(template, conversation) pairs the template accepts: some templates refuse, with
    raise_exception, a system message or a tool role; the chat corpus tests cover that."""
    pairs = []
    for template in sorted(TEMPLATES):
        for name in names:
            try:
                render_parts(template, name)
            except jinjamark.TemplateError:
                continue
            pairs.append((template, name))
    return pairs


BENIGN_CASES = renderable(BENIGN)
INJECTION_CASES = renderable(INJECTIONS)


def test_enough_cases_render():
    assert len(BENIGN_CASES) >= 15 and len(INJECTION_CASES) >= 5


@pytest.mark.parametrize("template,name", BENIGN_CASES)
def test_benign_conversations_encode_as_the_plain_string(tokenizer, template, name):
    parts = render_parts(template, name)
    text = "".join(p.text for p in parts)
    assert encode(parts, tokenizer) == plain_ids(tokenizer, text)


@pytest.mark.parametrize("template,name", INJECTION_CASES)
def test_no_special_token_id_comes_from_input(tokenizer, template, name):
    parts = render_parts(template, name)
    ids = encode(parts, tokenizer)
    specials = special_tokens(tokenizer)
    by_id = {i: s for s, i in specials.items()}
    # Every special id we emit must be one the template wrote: count them per token string.
    template_text = "".join(p.text for p in parts if not p.is_input)
    for token_id in set(ids) & set(by_id):
        assert ids.count(token_id) <= template_text.count(by_id[token_id])
    # And the injection is real: plain encoding of the same text has more special tokens.
    text = "".join(p.text for p in parts)
    plain = plain_ids(tokenizer, text)
    assert sum(i in by_id for i in plain) > sum(i in by_id for i in ids)


def test_ids_still_decode_to_the_rendered_text(raw_tokenizer):
    parts = render_parts("chatml", "21-injection-everywhere")
    ids = encode(parts, raw_tokenizer)
    assert raw_tokenizer.decode(ids, skip_special_tokens=False) == "".join(p.text for p in parts)


def test_a_special_token_half_from_input_is_text(raw_tokenizer):
    parts = [jinjamark.Part("<|im_", False), jinjamark.Part("end|>", True)]
    ids = encode(parts, raw_tokenizer)
    assert raw_tokenizer.token_to_id("<|im_end|>") not in ids


def test_encoding_leaves_the_tokenizer_as_it_was(raw_tokenizer):
    before = raw_tokenizer.encode_special_tokens
    encode([jinjamark.Part("<|im_end|>", True)], raw_tokenizer)
    assert raw_tokenizer.encode_special_tokens == before


def test_chat_template_encode_is_render_parts_then_encode(raw_tokenizer):
    fx = fixture("20-injection-user")
    ct = chat("chatml")
    assert ct.encode(fx["messages"], raw_tokenizer, add_generation_prompt=True) == \
        encode(ct.render_parts(fx["messages"], add_generation_prompt=True), raw_tokenizer)


def test_tokens_command_prints_ids(raw_tokenizer, tmp_path, capsys):
    from jinjamark.cli import main
    path = tmp_path / "tokenizer.json"
    raw_tokenizer.save(str(path))
    conversation = CORPUS / "conversations" / "20-injection-user.json"
    template = CORPUS / "templates" / TEMPLATES["chatml"]
    assert main(["tokens", str(template), str(conversation), "--tokenizer", str(path)]) == 0
    out, err = capsys.readouterr()
    fx = fixture("20-injection-user")
    assert json.loads(out) == chat("chatml").encode(fx["messages"], raw_tokenizer)
    assert "control tokens" in err


# The check that lets a whole-text encoding stand (chat/encoding.py's _all_from_template) looks
# only at control tokens among those covering an input run: it must answer as looking at every
# control token does, also for tokens that take the whitespace beside them (lstrip/rstrip).
PIECES = ["<|im_end|>", "<|im_start|>", "<|x|>", " ", "  ", "\n", "hi", "a b", "<|im_", "end|>", "x<|x|>y"]


def exact_from_template(runs, encoding, ids, contents) -> bool:
    """Every occurrence of every control id produced: its own text on template characters."""
    for token_id in contents.keys() & ids:
        content, at = contents[token_id], ids.index(token_id)
        while at is not None:
            start, end = encoding.token_to_chars(at)
            found = runs.text.find(content, start, end)
            if found < 0 or runs.touches(found, found + len(content)):
                return False
            at = ids.index(token_id, at + 1) if token_id in ids[at + 1:] else None
    return True


@pytest.fixture(scope="module")
def stripping_tokenizer() -> Tokenizer:
    from tokenizers import AddedToken
    raw = byte_level_bpe(400, SPECIALS)
    raw.add_special_tokens([AddedToken("<|x|>", lstrip=True, rstrip=True)])
    return raw


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(PIECES), st.booleans()), min_size=1, max_size=12))
def test_the_control_tokens_looked_at_answer_as_all_of_them(stripping_tokenizer, drawn):
    from jinjamark.chat.encoding import InputRuns, _all_from_template, _contents
    parts = [jinjamark.Part(text, is_input) for text, is_input in drawn]
    runs = InputRuns(parts)
    encoding = stripping_tokenizer.encode(runs.text, add_special_tokens=False)
    contents = _contents(special_tokens(stripping_tokenizer))
    assert _all_from_template(runs, encoding, encoding.ids, contents) == exact_from_template(
        runs, encoding, encoding.ids, contents)
