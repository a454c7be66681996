"""`ChatTemplate.check_append_only`: each turn's prompt against the whole conversation's render.

The breaks and their offsets are checked against renders by transformers itself (the prefix a
server renders, `apply_chat_template(messages[:k], add_generation_prompt=...)`), and the token
breaks against its token ids, over every corpus template and generated long conversations (slow); the causes, messages and template lines on
small templates written here, where they are known by hand.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime

import pytest

import jinjamark
import oracle
from conftest import chat_templates
from jinjamark.chat.prefixes import (DATA, GENERATION_PROMPT, LAST_TURN, PAST_REASONING, POSITION,
                                     REFUSED, TOKENS, common_prefix)

FIXED_NOW = datetime(2026, 3, 14, 15, 9, 26)
SPECIALS = {"bos_token": "<s>", "eos_token": "</s>"}


def conversation(turns: int = 3, reasoning: bool = False) -> list[dict]:
    messages = [{"role": "system", "content": "Be brief."}]
    for i in range(turns):
        messages.append({"role": "user", "content": f"Question {i}?"})
        answer = {"role": "assistant", "content": f"Answer {i}."}
        if reasoning:
            answer["reasoning_content"] = f"Thinking about {i}."
        messages.append(answer)
    return messages


def tool_conversation(rounds: int = 3) -> list[dict]:
    messages = [{"role": "system", "content": "You can call tools."}]
    for i in range(rounds):
        messages += [
            {"role": "user", "content": f"Weather in city {i}?"},
            {"role": "assistant", "content": "", "tool_calls": [{
                "id": f"call{i}", "type": "function",
                "function": {"name": "get_weather", "arguments": {"city": f"City{i}"}}}]},
            {"role": "tool", "tool_call_id": f"call{i}", "name": "get_weather", "content": f"{20 + i} C"},
            {"role": "assistant", "content": f"It is {20 + i} C in city {i}."}]
    return messages


TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "The weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]

# a template that writes the last message's end otherwise than a past one's (as gpt-oss does)
LAST_TURN_MARKER = ("{% for m in messages %}{{ m.role }}: {{ m.content }}"
                    "{% if loop.last %}<|return|>{% else %}<|end|>{% endif %}\n{% endfor %}")
CHATML = ("{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
          "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


def chat(source: str) -> jinjamark.ChatTemplate:
    return jinjamark.ChatTemplate(source, special_tokens=SPECIALS, now=lambda: FIXED_NOW)


def expected_breaks(source: str, messages: list) -> dict:
    """turn -> the first differing character, from prefix renders by the Jinja2 oracle."""
    def render(messages, add_generation_prompt):
        return oracle.compiled(source).render(messages=messages, add_generation_prompt=add_generation_prompt,
                                              **SPECIALS)
    whole = render(messages, False)
    found = {}
    for k in range(1, len(messages)):
        prompt = render(messages[:k], messages[k]["role"] == "assistant")
        if not whole.startswith(prompt):
            found[k] = next(i for i, (a, b) in enumerate(zip(prompt + "\0", whole + "\1")) if a != b)
    return found


# ---------------------------------------------------------------------------- by hand

def test_chatml_is_append_only():
    report = chat(CHATML).check_append_only(conversation(4))
    assert report.append_only and report.breaks == () and report.checked == 8


def test_dropped_past_reasoning_names_its_message_and_line():
    source = ("{% for m in messages %}<|im_start|>{{ m.role }}\n"
              "{% if m.role == 'assistant' and loop.index0 > ns.last_user %}"
              "<think>{{ m.reasoning_content }}</think>\n{% endif %}"
              "{{ m.content }}<|im_end|>\n{% endfor %}")
    source = ("{% set ns = namespace(last_user=0) %}{% for m in messages %}{% if m.role == 'user' %}"
              "{% set ns.last_user = loop.index0 %}{% endif %}{% endfor %}\n" + source)
    messages = conversation(3, reasoning=True)
    template = chat(source)
    report = template.check_append_only(messages)
    assert {b.turn: b.offset for b in report.breaks} == expected_breaks(source, messages)
    assert [b.turn for b in report.breaks] == [3, 5]
    for found in report.breaks:
        assert found.cause == PAST_REASONING
        assert found.message == found.turn - 1  # the assistant answer before the new question
        assert found.line == 3 and found.prompt.startswith("<think>Thinking about")  # after `{{ m.role }}\n`
        assert found.whole.startswith("Answer")


def test_last_turn_marker():
    source = LAST_TURN_MARKER
    messages = conversation(2)
    template = chat(source)
    report = template.check_append_only(messages)
    assert {b.turn: b.offset for b in report.breaks} == expected_breaks(source, messages)
    assert len(report.breaks) == 4  # every prompt ends with the marker the next one changes
    assert all(b.cause == LAST_TURN and b.message == b.turn - 1 and b.line == 1
               for b in report.breaks)
    # the first differing character: after the `<|` both markers share
    assert all(b.prompt.startswith("return|>") and b.whole.startswith("end|>") for b in report.breaks)


def test_position_dependent_header():
    source = "Turns: {{ messages | length }}\n" + CHATML
    messages = conversation(1)
    template = chat(source)
    report = template.check_append_only(messages)
    assert {b.turn: b.offset for b in report.breaks} == {1: 7, 2: 7}
    assert all(b.cause in (POSITION, DATA) and b.line == 1 for b in report.breaks)
    assert all(b.message is not None for b in report.breaks)


def test_data_printed_differently():
    source = ("{% for m in messages %}{% if loop.last %}{{ m.content }}{% else %}{{ m.content[:3] }}"
              "{% endif %}|{% endfor %}")
    messages = [{"role": "user", "content": "first"}, {"role": "assistant", "content": "second"}]
    report = chat(source).check_append_only(messages)
    (found,) = report.breaks
    assert (found.turn, found.offset, found.message, found.cause) == (1, 3, 0, DATA)
    assert found.prompt == "st|" and found.whole == "|second|"


def test_generation_prompt_not_kept():
    source = CHATML.replace("<|im_start|>assistant\n{% endif %}", "<|im_start|>assistant\n<think>\n{% endif %}")
    messages = conversation(2)
    template = chat(source)
    report = template.check_append_only(messages)
    assert {b.turn: b.offset for b in report.breaks} == expected_breaks(source, messages)
    assert [b.turn for b in report.breaks] == [2, 4]
    assert all(b.cause == GENERATION_PROMPT and b.message == b.turn and b.prompt == "<think>\n"
               for b in report.breaks)


def test_refused_prompt_is_a_break():
    source = "{% if messages[-1].role == 'system' %}{{ raise_exception('no user') }}{% endif %}" + CHATML
    report = chat(source).check_append_only(conversation(1))
    (found,) = report.breaks
    assert (found.turn, found.offset, found.cause, found.message, found.line) == (1, None, REFUSED, 0, 1)
    assert "no user" in found.prompt


def test_common_prefix():
    assert common_prefix("abcdef", "abcxef") == 3
    assert common_prefix("abc", "abcdef") == 3
    assert common_prefix("abcdef", "abc") == 3
    assert common_prefix("", "x") == 0 and common_prefix("x", "") == 0
    assert common_prefix([1, 2, 3], [1, 2, 4]) == 2


def test_token_break_when_text_is_a_prefix():
    """The prompt's text is a prefix, but the whole render merges its last token with the next
    character: the ids are no prefix, and a server's cache would miss."""
    from tokenizers import Tokenizer, models
    tokenizer = Tokenizer(models.BPE({"x": 0, "a": 1, "b": 2, "ab": 3, "|": 4}, [("a", "b")]))
    source = "{% for m in messages %}{{ m.content }}{% endfor %}{% if add_generation_prompt %}a{% endif %}"
    messages = [{"role": "user", "content": "x|"}, {"role": "assistant", "content": "ab"}]
    template = chat(source)
    assert template.check_append_only(messages).append_only  # as text
    report = template.check_append_only(messages, tokenizer=tokenizer)
    (found,) = report.breaks
    assert (found.turn, found.cause, found.offset, found.token, found.message) == (1, TOKENS, 3, 2, 1)


def test_analyze_finds_the_switch_that_keeps_reasoning():
    source = ("{% for m in messages %}<|im_start|>{{ m.role }}\n"
              "{% if m.role == 'assistant' and (keep_reasoning or loop.last) %}"
              "<think>{{ m.reasoning_content }}</think>{% endif %}{{ m.content }}<|im_end|>\n{% endfor %}")
    found = jinjamark.analyze(source).append_only
    assert found.append_only is False and PAST_REASONING in found.causes
    assert ("keep_reasoning", True) in found.settings and ("keep_reasoning", False) not in found.settings
    assert jinjamark.analyze(CHATML).append_only.append_only is True


def test_cli_check_append_only(tmp_path):
    template = tmp_path / "t.jinja"
    template.write_text(LAST_TURN_MARKER)
    conv = tmp_path / "c.json"
    conv.write_text(json.dumps({"messages": conversation(1)}))
    run = subprocess.run([sys.executable, "-m", "jinjamark", "check", "--append-only", str(template), str(conv)],
                         capture_output=True, text=True, env={**os.environ, "NO_COLOR": "1"})
    assert run.returncode == 1, run.stderr
    offset = len("system: Be brief.<|")
    assert f"turn 1 at character {offset}, message 0: last-turn marker" in run.stdout
    lines = run.stdout.splitlines()
    caret = next(i for i, line in enumerate(lines) if line.strip() == "^")
    assert "template line 1, column" in lines[caret - 2]
    shown = lines[caret - 1]
    assert shown[lines[caret].index("^"):].startswith("<|return|>")
    run = subprocess.run([sys.executable, "-m", "jinjamark", "check", "--append-only", "--json",
                          str(template), str(conv)], capture_output=True, text=True)
    report = json.loads(run.stdout)
    assert [b["turn"] for b in report["append_only"][0]["breaks"]] == [1, 2]
    template.write_text(CHATML)
    run = subprocess.run([sys.executable, "-m", "jinjamark", "check", "--append-only", str(template), str(conv)],
                         capture_output=True, text=True)
    assert run.returncode == 0 and "append-only: " in run.stdout


# ---------------------------------------------------------------------------- against transformers

@pytest.fixture(scope="module")
def hf_tokenizer():
    from transformers import PreTrainedTokenizerFast
    from conftest import byte_level_bpe
    raw = byte_level_bpe(300, ["<s>", "</s>"])
    return PreTrainedTokenizerFast(tokenizer_object=raw, bos_token="<s>", eos_token="</s>")


CASES = {"plain": (conversation(10), None), "reasoning": (conversation(8, reasoning=True), None),
         "tools": (tool_conversation(4), TOOLS)}  # 21, 17 and 17 messages


@pytest.mark.slow
@pytest.mark.parametrize("name,source", chat_templates(), ids=[n for n, _ in chat_templates()])
def test_breaks_equal_transformers_prefix_renders(name, source, hf_tokenizer, monkeypatch):
    from transformers.utils import chat_template_utils

    class Clock(datetime):
        @classmethod
        def now(cls, tz=None):
            return FIXED_NOW
    monkeypatch.setattr(chat_template_utils, "datetime", Clock)

    def theirs(messages, **options):
        return hf_tokenizer.apply_chat_template(messages, tokenize=False, chat_template=source, **options)

    def ids(messages, **options):
        return hf_tokenizer.apply_chat_template(messages, tokenize=True, return_dict=False,
                                                chat_template=source, **options)

    template = chat(source)
    for case, (messages, tools) in CASES.items():
        try:
            theirs(messages, tools=tools)
        except Exception:  # noqa: BLE001 - transformers cannot render it: ours must raise too
            with pytest.raises((ValueError, TypeError)):
                template.check_append_only(messages, tools=tools)
            continue
        want, want_tokens, refused = {}, {}, set()
        whole = theirs(messages, tools=tools)
        whole_ids = ids(messages, tools=tools)
        for k in range(1, len(messages)):
            prompting = messages[k]["role"] == "assistant"
            try:
                prompt = theirs(messages[:k], tools=tools, add_generation_prompt=prompting)
            except Exception:  # noqa: BLE001
                refused.add(k)
                continue
            if not whole.startswith(prompt):
                want[k] = next(i for i, (a, b) in enumerate(zip(prompt, whole)) if a != b) \
                    if any(a != b for a, b in zip(prompt, whole)) else min(len(prompt), len(whole))
                continue
            prompt_ids = ids(messages[:k], tools=tools, add_generation_prompt=prompting)
            if whole_ids[:len(prompt_ids)] != prompt_ids:  # a text prefix whose tokens merge
                want_tokens[k] = next(i for i, (a, b) in enumerate(zip(prompt_ids, whole_ids)) if a != b)
        report = template.check_append_only(messages, tools=tools, tokenizer=hf_tokenizer)
        got = {b.turn: b.offset for b in report.breaks if b.cause not in (REFUSED, TOKENS)}
        assert got == want, f"{case}: breaks {got} != transformers' {want}"
        got_tokens = {b.turn: b.token for b in report.breaks if b.cause == TOKENS}
        assert got_tokens == want_tokens, f"{case}: token breaks {got_tokens} != {want_tokens}"
        assert {b.turn for b in report.breaks if b.cause == REFUSED} == refused, case
        for found in report.breaks:
            assert found.message is not None, (case, found)
            if found.cause != REFUSED:
                assert found.line is not None and found.cause in (PAST_REASONING, GENERATION_PROMPT,
                                                                  LAST_TURN, POSITION, DATA, TOKENS), (case, found)


@pytest.mark.slow
def test_the_corpus_table_in_the_serving_guide_is_what_the_script_computes():
    import importlib.util
    import pathlib
    root = pathlib.Path(__file__).parent.parent
    spec = importlib.util.spec_from_file_location("append_only_table", root / "tools" / "append_only_table.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    guide = (root / "docs" / "serving.md").read_text(encoding="utf-8")
    assert script.table(script.rows()) in guide


def test_template_variables_named_like_the_checks_own_parameters_reach_the_template():
    """`chat` and `messages` are positional: a template variable called `chat` is the template's."""
    report = chat("{{ chat }}|" + CHATML).check_append_only(conversation(1), chat="C")
    assert report.append_only and report.checked == 2


def test_a_break_stays_reported_when_the_render_explaining_it_fails(monkeypatch):
    from jinjamark.chat import origins, prefixes

    def failing(*args, **kwargs):
        raise RuntimeError("an origin render this template cannot make")
    monkeypatch.setattr(origins, "render_runs", failing)
    source = LAST_TURN_MARKER
    messages = conversation(1)
    template = chat(source)
    report = template.check_append_only(messages)
    assert {b.turn: b.offset for b in report.breaks} == expected_breaks(source, messages)
    assert all(b.cause == prefixes.UNEXPLAINED and b.message == b.turn - 1 for b in report.breaks)
