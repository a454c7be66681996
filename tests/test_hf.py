"""`jinjamark.hf.apply_chat_template` against the tokenizer's own `apply_chat_template`
(transformers 5, a byte-level BPE tokenizer trained here with the special tokens of several
families): ids, attention masks, assistant masks, batches with padding on either side,
truncation, tensors, continue_final_message, errors, and `patch`."""
from __future__ import annotations

import copy
import pathlib
import re
import sys

import numpy as np
import pytest
from transformers import BatchEncoding, PreTrainedTokenizerFast

import jinjamark
from conftest import byte_level_bpe, fixture, run_python, source_of
from jinjamark import hf

CORPUS = pathlib.Path(__file__).parent / "corpus"
SPECIALS = ["<|im_start|>", "<|im_end|>", "<|endoftext|>", "<|begin_of_text|>",
            "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>", "<start_of_turn>",
            "<end_of_turn>", "<s>", "</s>", "[INST]", "[/INST]", "<|end|>", "<|system|>",
            "<|user|>", "<|assistant|>", "<|START_OF_TURN_TOKEN|>", "<|END_OF_TURN_TOKEN|>"]
ALL = sorted(p.name for p in (CORPUS / "templates").glob("*.jinja"))
SAMPLE = ALL[::6]  # every family of the corpus, about 37 templates
GENERATION = [t for t in ALL if re.search(r"\{%-?\s*generation\s*-?%\}", (CORPUS / "templates" / t).read_text())]
BENIGN = ["01-single-user", "02-system-user", "03-multi-turn", "04-no-system-multi-turn",
          "05-tool-call-object-args", "06-tool-call-string-args", "07-parallel-tool-calls",
          "08-tools-no-call", "11-unicode", "13-long-conversation"]




@pytest.fixture(scope="module")
def tokenizer() -> PreTrainedTokenizerFast:
    raw = byte_level_bpe(900, SPECIALS)
    raw.add_tokens(["<tool_call>", "</tool_call>", "<think>", "</think>"])
    tok = PreTrainedTokenizerFast(tokenizer_object=raw, bos_token="<s>", eos_token="</s>",
                                  pad_token="<|endoftext|>")
    tok.chat_template = source_of("chatml--teknium_OpenHermes-2.5-Mistral-7B.jinja")
    return tok


def call(function, *args, **kwargs):
    """The result, or what was raised: an error raised while rendering as such (jinja2 raises
    its own or Python's, we raise a TemplateError, which must be catchable as ValueError, as
    servers catch jinja2's), any other error by type and message."""
    try:
        return plain(function(*args, **kwargs))
    except jinjamark.TemplateError as e:
        assert isinstance(e, ValueError)
        return "template error"
    except Exception as e:  # noqa: BLE001 - the comparison is the point
        return type(e), str(e)[:200]


def same(ours, theirs) -> bool:
    if ours == "template error" and isinstance(theirs, tuple) and isinstance(theirs[0], type):
        return True  # both raise while rendering
    return ours == theirs


def plain(value):
    """A result as comparable data: a BatchEncoding's type, keys and values (arrays as lists with
    their shape and dtype)."""
    if isinstance(value, BatchEncoding):
        return ("BatchEncoding", {key: plain(item) for key, item in value.items()})
    if isinstance(value, np.ndarray):
        return ("ndarray", value.shape, str(value.dtype), value.tolist())
    return value


def both(tokenizer, conversation, **options):
    theirs = call(tokenizer.apply_chat_template, conversation, **options)
    ours = call(hf.apply_chat_template, tokenizer, conversation, **options)
    return theirs, ours


def cases(templates, fixtures):
    for template in templates:
        for name in fixtures:
            fx = fixture(name)
            yield template, name, fx["messages"], {"tools": fx.get("tools"), "documents": fx.get("documents"),
                                                   "chat_template": source_of(template), **(fx.get("kwargs") or {})}


@pytest.mark.parametrize("name", BENIGN)
def test_ids_and_masks_equal_transformers(tokenizer, name):
    rendered = 0
    for template, _, messages, options in cases(SAMPLE, [name]):
        for agp in (False, True):
            for extra in ({}, {"return_dict": False}, {"tokenize": False}):
                theirs, ours = both(tokenizer, messages, add_generation_prompt=agp, **options, **extra)
                assert same(ours, theirs), (template, agp, extra)
                rendered += ours != "template error"
    assert rendered >= 6 * 5  # every benign conversation renders with some of the sample


@pytest.mark.parametrize("template", GENERATION)
def test_assistant_masks_equal_transformers(tokenizer, template):
    masked = 0
    for _, name, messages, options in cases([template], BENIGN):
        for agp in (False, True):
            theirs, ours = both(tokenizer, messages, add_generation_prompt=agp,
                                return_assistant_tokens_mask=True, **options)
            assert same(ours, theirs), (name, agp)
            masked += theirs[0] == "BatchEncoding" and 1 in theirs[1]["assistant_masks"]
    assert masked


BATCH = [fixture("03-multi-turn")["messages"], fixture("01-single-user")["messages"],
         fixture("11-unicode")["messages"]]


@pytest.mark.parametrize("side", ["left", "right"])
@pytest.mark.parametrize("options", [
    {"padding": True}, {"padding": "longest", "return_tensors": "np"},
    {"padding": "max_length", "max_length": 400}, {"padding": True, "truncation": True, "max_length": 30},
    {"truncation": True, "max_length": 25}, {"padding": True, "tokenizer_kwargs": {"pad_to_multiple_of": 64}},
    {"padding": True, "return_dict": False}, {"padding": True, "add_generation_prompt": True},
])
@pytest.mark.parametrize("template", ["chatml--teknium_OpenHermes-2.5-Mistral-7B.jinja", *GENERATION[:4]])
def test_batches_with_padding_and_truncation_equal_transformers(tokenizer, side, options, template):
    tokenizer.padding_side = tokenizer.truncation_side = side
    try:
        masks = {"return_assistant_tokens_mask": True} if template in GENERATION and \
            options.get("return_dict", True) else {}
        theirs, ours = both(tokenizer, BATCH, chat_template=source_of(template), **options, **masks)
        assert same(ours, theirs)
        theirs, ours = both(tokenizer, BATCH[0], chat_template=source_of(template), **options, **masks)
        assert same(ours, theirs)
    finally:
        tokenizer.padding_side = tokenizer.truncation_side = "right"


@pytest.mark.parametrize("template", SAMPLE[:20])
@pytest.mark.parametrize("field", [True, "content"])
def test_continue_final_message_equal_transformers(tokenizer, template, field):
    prefill = fixture("14-assistant-prefill")["messages"]
    for tokenize in (True, False):
        theirs, ours = both(tokenizer, prefill, chat_template=source_of(template),
                            continue_final_message=field, tokenize=tokenize)
        assert same(ours, theirs)


MACRO = ("{% macro turn(m) %}{% generation %}{{ m.content }}<|im_end|>{% endgeneration %}{% endmacro %}"
         "{% for m in messages %}<|im_start|>{{ m.role }}\n"
         "{% if m.role == 'assistant' %}{{ turn(m) }}{% else %}{{ m.content }}<|im_end|>{% endif %}\n"
         "{% endfor %}")
CAPTURE = ("{% for m in messages %}<|im_start|>{{ m.role }}\n{% if m.role == 'assistant' %}"
           "{% set body %}{% generation %}{{ m.content }}<|im_end|>{% endgeneration %}{% endset %}"
           "{{ body }}{% else %}{{ m.content }}<|im_end|>{% endif %}\n{% endfor %}")


@pytest.mark.parametrize("source", [MACRO, CAPTURE], ids=["macro", "set capture"])
def test_generation_in_a_macro_or_capture_masks_equal_transformers(tokenizer, source):
    for name in ("03-multi-turn", "13-long-conversation"):
        theirs, ours = both(tokenizer, fixture(name)["messages"], chat_template=source,
                            return_assistant_tokens_mask=True)
        assert same(ours, theirs) and 1 in theirs[1]["assistant_masks"]


def test_generation_where_a_captured_text_lands_later(tokenizer):
    """The body printed after other text: transformers masks the tokens where the capture was
    made; we mask the body's own tokens."""
    source = ("{% for m in messages %}{% set body %}{% generation %}{{ m.content }}{% endgeneration %}"
              "{% endset %}<|im_start|>{{ m.role }}\n{{ body }}<|im_end|>\n{% endfor %}")
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    out = hf.apply_chat_template(tokenizer, messages, chat_template=source, return_assistant_tokens_mask=True)
    masked = [i for i, m in zip(out["input_ids"], out["assistant_masks"]) if m]
    assert tokenizer.decode(masked) == "hihello"


@pytest.mark.parametrize("options", [
    {"return_assistant_tokens_mask": True, "return_dict": False},
    {"return_assistant_tokens_mask": True, "tokenize": False},
    {"continue_final_message": True, "add_generation_prompt": True},
    {"continue_final_message": True, "return_assistant_tokens_mask": True},
    {"sanitize_control_tokens": True, "tokenize": False},
    {"sanitize_control_tokens": True, "return_assistant_tokens_mask": True},
    {"chat_template": "{{ raise_exception('no') }}"},
    {"chat_template": "{{ messages[0].content | nofilter }}"},
])
def test_errors_equal_transformers(tokenizer, options):
    theirs, ours = both(tokenizer, fixture("14-assistant-prefill")["messages"], **options)
    assert same(ours, theirs) and theirs != plain(None)


def test_empty_conversation_and_no_template_raise_as_transformers(tokenizer):
    assert both(tokenizer, [])[0] == both(tokenizer, [])[1]
    saved, tokenizer.chat_template = tokenizer.chat_template, None
    try:
        theirs, ours = both(tokenizer, fixture("01-single-user")["messages"])
        assert same(ours, theirs) and theirs[0] is ValueError
    finally:
        tokenizer.chat_template = saved


def test_sanitize_control_tokens_is_accepted(tokenizer):
    messages = fixture("03-multi-turn")["messages"]
    theirs, ours = both(tokenizer, messages, sanitize_control_tokens=True)
    assert same(ours, theirs)


def test_injection_is_text_where_transformers_makes_it_a_token(tokenizer):
    messages = fixture("20-injection-user")["messages"]
    end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    ours = hf.apply_chat_template(tokenizer, messages, return_dict=False)
    theirs = tokenizer.apply_chat_template(messages, return_dict=False)
    assert ours.count(end) == 2 and theirs.count(end) > 2
    assert tokenizer.decode(ours) == tokenizer.apply_chat_template(messages, tokenize=False)


def test_patch_and_unpatch(tokenizer):
    messages = fixture("20-injection-user")["messages"]
    own = tokenizer.apply_chat_template(messages, return_dict=False)
    ours = hf.apply_chat_template(tokenizer, messages, return_dict=False)
    assert own != ours
    hf.patch(tokenizer)
    try:
        assert tokenizer.apply_chat_template(messages, return_dict=False) == ours
    finally:
        hf.unpatch(tokenizer)
    assert tokenizer.apply_chat_template(messages, return_dict=False) == own
    hf.patch()
    try:
        assert tokenizer.apply_chat_template(messages, return_dict=False) == ours
    finally:
        hf.unpatch()
    assert tokenizer.apply_chat_template(messages, return_dict=False) == own


def test_parameters_in_transformers_order(tokenizer):
    import inspect
    theirs = list(inspect.signature(type(tokenizer).apply_chat_template).parameters)[1:]
    ours = list(inspect.signature(hf.apply_chat_template).parameters)[1:]
    assert ours == theirs


def test_masks_from_the_tags_only_are_zeros_without_a_tag_as_in_transformers(tokenizer):
    theirs = call(tokenizer.apply_chat_template, BATCH, padding=True, return_assistant_tokens_mask=True)
    ours = call(hf.apply_chat_template, tokenizer, BATCH, padding=True,
                return_assistant_tokens_mask=True, assistant_mask_source="generation")
    assert same(ours, theirs) and not any(1 in row for row in theirs[1]["assistant_masks"])


def masked_text(tokenizer, out) -> list[str]:
    """The text of each conversation's masked tokens."""
    return [tokenizer.decode([i for i, m in zip(ids, mask) if m])
            for ids, mask in zip(out["input_ids"], out["assistant_masks"])]


def test_by_default_a_template_without_tags_gets_masks_from_origins(tokenizer):
    theirs = tokenizer.apply_chat_template(BATCH, padding=True, return_assistant_tokens_mask=True)
    ours = hf.apply_chat_template(tokenizer, BATCH, padding=True, return_assistant_tokens_mask=True)
    assert ours["input_ids"] == theirs["input_ids"]  # the same ids; masks where theirs are zeros
    replies = [" ".join(m["content"] for m in c if m["role"] == "assistant") for c in BATCH]
    for text, reply in zip(masked_text(tokenizer, ours), replies):
        assert text.replace("<|im_end|>\n", " ").split() == reply.split()


QWEN3_TRAINING = source_of("qwen--trl-qwen3_training.jinja")
REASONED = [{"role": "user", "content": "2+2?"},
            {"role": "assistant", "content": "4", "reasoning_content": "Add them."}]


def masked_with(tokenizer, **options) -> str:
    out = hf.apply_chat_template(tokenizer, REASONED, chat_template=QWEN3_TRAINING.replace(
        "{%- generation %}", "{%- if true %}").replace("{%- endgeneration %}", "{%- endif %}"),
        return_assistant_tokens_mask=True, **options)
    return masked_text(tokenizer, {k: [v] for k, v in out.items()})[0]


def test_mask_options_leave_reasoning_or_the_prompts_own_text_out(tokenizer):
    assert masked_with(tokenizer) == "<think>\nAdd them.\n</think>\n\n4<|im_end|>\n"
    assert masked_with(tokenizer, assistant_mask_options={"reasoning": False}) == \
        "<think>\n\n</think>\n\n4<|im_end|>\n"
    no_thinking = {"enable_thinking": False}
    reasoning_free = [REASONED[0], {"role": "assistant", "content": "4"}]
    out = hf.apply_chat_template(tokenizer, reasoning_free, chat_template=QWEN3_TRAINING,
                                 return_assistant_tokens_mask=True, assistant_mask_source="origins",
                                 assistant_mask_options={"prompt_text": False}, **no_thinking)
    assert masked_text(tokenizer, {k: [v] for k, v in out.items()}) == ["4<|im_end|>\n"]


def test_masks_by_role_or_by_turn(tokenizer):
    assert masked_with(tokenizer, assistant_mask_options={"roles": ("user",)}) == "2+2?<|im_end|>\n"
    assert masked_with(tokenizer, assistant_mask_options={"turns": (0,)}) == "2+2?<|im_end|>\n"


def test_an_empty_mask_from_origins_raises_instead_of_training_on_nothing(tokenizer):
    users_only = "{% for m in messages %}{% if m.role == 'user' %}{{ m.content }}{% endif %}{% endfor %}"
    with pytest.raises(jinjamark.chat.masks.EmptyMaskError):
        hf.apply_chat_template(tokenizer, BATCH[0], chat_template=users_only,
                               return_assistant_tokens_mask=True)
    with pytest.raises(ValueError, match="assistant_mask_source"):
        hf.apply_chat_template(tokenizer, BATCH[0], return_assistant_tokens_mask=True,
                               assistant_mask_source="tags")


def test_chat_template_encode_gives_the_same_mask(tokenizer):
    chat = jinjamark.ChatTemplate(tokenizer.chat_template)
    ids, mask = chat.encode(BATCH[0], tokenizer, return_assistant_tokens_mask=True)
    out = hf.apply_chat_template(tokenizer, BATCH[0], return_assistant_tokens_mask=True)
    assert (ids, mask) == (out["input_ids"], out["assistant_masks"]) and 1 in mask


def test_message_spans_give_each_messages_characters_and_tokens(tokenizer):
    messages = fixture("03-multi-turn")["messages"]
    out = hf.apply_chat_template(tokenizer, messages, return_message_spans=True)
    text = hf.apply_chat_template(tokenizer, messages, tokenize=False)
    spans = out["message_spans"]
    assert [s["message"] for s in spans] == list(range(len(messages)))
    for span, message in zip(spans, messages):
        assert message["content"] in text[span["start"]:span["end"]]
        assert text[span["start"]:span["end"]].startswith("<|im_start|>" + message["role"])
        ids = out["input_ids"][span["token_start"]:span["token_end"]]
        assert message["content"] in tokenizer.decode(ids)
    assert [s["end"] for s in spans[:-1]] == [s["start"] for s in spans[1:]]  # back to back
    with pytest.raises(ValueError, match="return_message_spans"):
        hf.apply_chat_template(tokenizer, messages, tokenize=False, return_message_spans=True)


def test_a_token_merged_across_two_messages_is_reported_not_given_to_one():
    from jinjamark.chat.spans import message_spans
    from jinjamark.evaluation.origins import Run
    runs = [Run("ab", None, 0, False, None), Run("cd", None, 1, False, None)]
    spans = message_spans(runs, [(0, 1), (1, 3), (3, 4)])  # the middle token holds 'b' and 'c'
    assert [(s.token_start, s.token_end, s.straddling) for s in spans] == [(0, 2, (1,)), (1, 3, (1,))]


def test_template_variables_named_like_the_mask_helpers_parameters_reach_the_template(tokenizer):
    """A variable called `source` or `options` is the template's (regression: the origin mask
    took them for its own parameters and raised TypeError)."""
    source = ("{{ source }}|{{ options }}|{% for m in messages %}{{ m.role }}:{{ m.content }}\n"
              "{% endfor %}")
    chat = jinjamark.ChatTemplate(source)
    ids, mask = chat.encode(BATCH[0], tokenizer, return_assistant_tokens_mask=True,
                            source="S", options="O")
    assert tokenizer.decode(ids).startswith("S|O|") and 1 in mask
    out = hf.apply_chat_template(tokenizer, BATCH[0], chat_template=source,
                                 return_assistant_tokens_mask=True, source="S", options="O")
    assert (out["input_ids"], out["assistant_masks"]) == (ids, mask)


TRANSFORMERS_ERRORS = {
    "raise_exception": "{{ raise_exception('no system message') }}",
    "syntax error": "{% for m in messages %}\n{% if %}{% endif %}{% endfor %}",
    "undefined": "{{ x.y }}",
    "missing key": "{{ messages[0].nope.x }}",
    "unknown filter": "{{ messages[0].content | nofilter }}",
    "type error": "{{ 1 + 'a' }}",
    "division by zero": "{{ 1 / 0 }}",
}


@pytest.mark.parametrize("source", TRANSFORMERS_ERRORS.values(), ids=TRANSFORMERS_ERRORS.keys())
def test_errors_are_caught_by_transformers_except_clauses_and_print_as_its(tokenizer, source):
    """The except clause that catches transformers' error catches ours, `str()` is the same
    bare message, and jinjamark's fields and located text stay."""
    messages = fixture("01-single-user")["messages"]
    with pytest.raises(Exception) as theirs:
        tokenizer.apply_chat_template(messages, chat_template=source)
    with pytest.raises(type(theirs.value)) as ours:
        hf.apply_chat_template(tokenizer, messages, chat_template=source)
    error = ours.value
    assert str(error) == str(theirs.value)
    assert isinstance(error, jinjamark.TemplateError)  # a ValueError too, as before
    assert error.lineno == (2 if "\n" in source else 1) and error.column
    assert error.located.startswith(str(error) + "\n") and error.located.endswith("^")
    assert error.located == jinjamark.TemplateError.__str__(error)


def test_drop_in_errors_are_jinja2s_and_pickle(tokenizer):
    import pickle
    import jinja2
    messages = fixture("01-single-user")["messages"]
    for source, caught in (("{% if %}", jinja2.exceptions.TemplateSyntaxError),
                           ("{{ x.y }}", jinja2.UndefinedError), ("{{ raise_exception('no') }}", jinja2.TemplateError)):
        with pytest.raises(caught) as raised:
            hf.apply_chat_template(tokenizer, messages, chat_template=source)
        assert isinstance(raised.value, jinja2.TemplateError)
        again = pickle.loads(pickle.dumps(raised.value))
        assert type(again) is type(raised.value) and str(again) == str(raised.value)
        assert again.located == raised.value.located
    with pytest.raises(jinjamark.UndefinedError):  # the engine's own errors are unchanged
        jinjamark.ChatTemplate("{{ x.y }}").render(messages)


def test_without_jinja2_the_drop_in_errors_still_print_as_transformers(tokenizer, monkeypatch):
    monkeypatch.setitem(sys.modules, "jinja2", None)
    monkeypatch.setitem(sys.modules, "jinja2.exceptions", None)
    with pytest.raises(jinjamark.UndefinedError) as raised:
        hf.apply_chat_template(tokenizer, fixture("01-single-user")["messages"], chat_template="{{ x.y }}")
    assert str(raised.value) == "'x' is undefined" and "^" in raised.value.located
    assert [c.__module__.split(".")[0] for c in type(raised.value).__mro__].count("jinja2") == 0


def test_a_drop_in_error_never_imports_jinja2_and_is_its_class_once_it_is_loaded():
    """jinja2 is not imported at run time: a process that has not loaded it gets jinjamark's
    classes; one that has (it writes `except jinja2.TemplateError`) gets jinja2's too."""
    code = (
        "import sys, jinjamark.hf as hf\n"
        "class Tok:\n"
        "    chat_template = '{{ raise_exception(\\'no\\') }}'\n"
        "    special_tokens_map = {}\n"
        "def failed():\n"
        "    try:\n"
        "        hf.apply_chat_template(Tok(), [{'role': 'user', 'content': 'x'}], tokenize=False)\n"
        "    except Exception as error:\n"
        "        return error\n"
        "first = failed()\n"
        "print('jinja2' in sys.modules, str(first))\n"
        "import jinja2\n"
        "print(isinstance(failed(), jinja2.TemplateError), isinstance(first, jinja2.TemplateError))\n")
    assert run_python(code).splitlines() == ["False no", "True False"]


@pytest.mark.parametrize("code", ["import jinjamark.hf", "import jinjamark; jinjamark.hf.patch",
                                  "import jinjamark; assert 'jinjamark.hf' not in sys.modules"])
def test_the_drop_in_is_reachable_as_readme_uses_it_and_imports_neither_jinja2_nor_transformers(code):
    """README's `import jinjamark` then `jinjamark.hf.patch(...)`: the module is imported on
    first use, and neither it nor `import jinjamark` imports transformers or jinja2."""
    code = f"import sys; {code}; print(sorted({{'jinja2', 'transformers'}} & set(sys.modules)))"
    assert run_python(code) == "[]"


def test_a_tokenizer_whose_special_tokens_or_template_change_renders_as_transformers(tokenizer):
    # hf keeps the ChatTemplate of a tokenizer and template between calls: what the tokenizer
    # says now must still be what renders
    tok = copy.deepcopy(tokenizer)
    tok.chat_template = "{{ bos_token }}{% for m in messages %}{{ m.content }}{{ eos_token }}{% endfor %}"
    conversation = [{"role": "user", "content": "hi"}]
    for change in (None, {"bos_token": "<|im_start|>"}, {"eos_token": "<|im_end|>"}):
        if change:
            tok.add_special_tokens(change)
        for tokenize in (False, True):
            theirs, ours = both(tok, conversation, tokenize=tokenize)
            assert same(ours, theirs), change
    tok.chat_template = "[{{ messages[0].content }}]{{ bos_token }}"
    theirs, ours = both(tok, conversation, tokenize=False)
    assert ours == theirs == "[hi]<|im_start|>"
