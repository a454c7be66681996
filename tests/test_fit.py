"""`ChatTemplate.fit`: a conversation cut to a token budget, checked by exact encodes.

For every case: within budget (`n_tokens` is `len(encode(result.messages))`), the system
message and the mode's last exchange kept, whole exchanges dropped oldest first (the kept
messages are the system message and a suffix of the exchanges), a tool call never parted from
its results, and maximal (the most recently dropped exchange put back does not fit); a budget
too small for what must be kept raises TokenBudgetError. Generated conversations (plain, tool
calls and results, reasoning) through corpus templates, a tokenizer trained here.
"""
from __future__ import annotations

import json

import pytest
from hypothesis import given, settings, strategies as st

from conftest import TEMPLATES, byte_level_bpe, chat_templates, source_of
from jinjamark import ChatTemplate, cli
from jinjamark.chat import origins
from jinjamark.chat.fitting import FitResult, TokenBudgetError

SPECIALS = ["<|im_start|>", "<|im_end|>", "<|endoftext|>", "<|begin_of_text|>",
            "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>", "<start_of_turn>",
            "<end_of_turn>", "<s>", "</s>", "[INST]", "[/INST]", "<|end|>", "<|system|>",
            "<|user|>", "<|assistant|>", "<|start|>", "<|message|>", "<|channel|>",
            "<|return|>", "<|call|>"]
TOKENS = {"bos_token": "<s>", "eos_token": "</s>"}
CHATML = "chatml--teknium_OpenHermes-2.5-Mistral-7B.jinja"
QUICK = [CHATML,
         "qwen--Qwen_Qwen3-1.7B.jinja",                       # reasoning kept after the last query only
         "llamacpp--meta-llama-Llama-3.1-8B-Instruct.jinja",  # tools in the first user message
         "llamacpp--openai-gpt-oss-120b.jinja",               # past reasoning dropped, channels
         "llamacpp--google-gemma-2-2b-it.jinja",              # no system role: folded in or refused
         "hfjs--deepseek-ai__DeepSeek-R1.jinja"]
TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "The weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]}}}]
KINDS = ("plain", "tool", "reasoning")


@pytest.fixture(scope="module")
def tokenizer():
    raw = byte_level_bpe(600, SPECIALS)
    raw.add_tokens(["<tool_call>", "</tool_call>", "<think>", "</think>"])
    return raw


_CHATS: dict[str, ChatTemplate] = {}


def chat_of(name: str) -> ChatTemplate:
    if name not in _CHATS:
        _CHATS[name] = ChatTemplate(source_of(name), special_tokens=TOKENS, name=name)
    return _CHATS[name]


# ---------------------------------------------------------------------------- conversations

def exchange(kind: str, number: int, words: int, final: bool = False,
             string_arguments: bool = False) -> list[dict]:
    """One exchange: a user message and the answer (a tool call and its result first, or
    reasoning); with `final` in a tool exchange, it stops at the result (an agent loop waiting
    for the model). `string_arguments`: the call's arguments as a JSON string (some templates
    take only that)."""
    text = " ".join(f"w{(number * 7 + i) % 13}" for i in range(words))
    out = [{"role": "user", "content": f"Question {number}: {text}?"}]
    if kind == "tool":
        call_id = f"call_{number}"
        arguments = {"city": f"City{number}"}
        out.append({"role": "assistant", "content": "", "tool_calls": [{
            "id": call_id, "type": "function", "function": {
                "name": "get_weather",
                "arguments": json.dumps(arguments) if string_arguments else arguments}}]})
        out.append({"role": "tool", "tool_call_id": call_id, "name": "get_weather",
                    "content": json.dumps({"temperature": number % 30, "sky": text[:20]})})
        if final:
            return out
    answer = {"role": "assistant", "content": f"Answer {number}: {text}."}
    if kind == "reasoning":
        answer["reasoning_content"] = f"Thinking about {number}: {text}"
    out.append(answer)
    return out


def conversation(kinds: list[str], mode: str, system: bool = True, words: int = 4,
                 string_arguments: bool = False) -> tuple[list[dict], list[int], int]:
    """(messages, the first message of each exchange, the leading system messages): each kind an
    exchange; in serve mode a last user question (or a pending tool call) ends it."""
    messages = [{"role": "system", "content": "You are a helpful assistant."}] if system else []
    head = len(messages)
    starts = []
    for number, kind in enumerate(kinds):
        starts.append(len(messages))
        messages += exchange(kind, number, words + number % 5, string_arguments=string_arguments)
    if mode == "serve":
        starts.append(len(messages))
        pending = kinds[-1] == "tool" if kinds else False
        messages += exchange("tool", len(kinds), words, True, string_arguments) if pending else \
            [{"role": "user", "content": "And now?"}]
    return messages, starts, head


def uses_tools(messages: list[dict]) -> bool:
    return any(m.get("tool_calls") for m in messages)


# ---------------------------------------------------------------------------- the check

class Oracle:
    """Exact counts of candidate conversations (`encode`, one per candidate, remembered)."""

    def __init__(self, chat, messages, starts, head, tokenizer, mode):
        self.chat, self.messages, self.starts, self.head = chat, messages, starts, head
        self.tokenizer, self.prompt = tokenizer, mode == "serve"
        self.tools = TOOLS if uses_tools(messages) else None
        last = "user" if self.prompt else "assistant"
        anchor = max(i for i, m in enumerate(messages) if m["role"] == last)
        self.required = max(e for e, start in enumerate(starts) if start <= anchor)
        self.counts: dict[int, int] = {}

    def kept(self, dropped: int) -> list[dict]:
        return self.messages[:self.head] + self.messages[self.starts[dropped]:]

    def count(self, dropped: int) -> int:
        if dropped not in self.counts:
            self.counts[dropped] = len(self.chat.encode(
                self.kept(dropped), self.tokenizer, tools=self.tools,
                add_generation_prompt=self.prompt))
        return self.counts[dropped]


def check_fit(oracle: Oracle, budget: int, mode: str) -> None:
    chat, messages = oracle.chat, oracle.messages
    try:
        result = chat.fit(messages, budget, oracle.tokenizer, tools=oracle.tools, mode=mode)
    except TokenBudgetError as error:
        assert isinstance(error, ValueError)
        assert error.required == oracle.count(oracle.required) > budget == error.max_tokens
        return
    assert isinstance(result, FitResult)
    # the system message and a suffix of the exchanges, the mode's last exchange among them
    suffixes = [d for d in range(len(oracle.starts)) if oracle.kept(d) == result.messages]
    assert suffixes, "not the system message and a suffix of the exchanges"
    dropped = suffixes[0]
    assert dropped <= oracle.required, "dropped the last user message or final assistant turn"
    assert result.dropped == list(range(oracle.head, oracle.starts[dropped]))
    assert result.dropped_messages == [messages[i] for i in result.dropped]
    # within budget, counted exactly as encode counts
    assert result.n_tokens == oracle.count(dropped) <= budget
    assert result.n_tokens == len(chat.encode(result.messages, oracle.tokenizer, tools=oracle.tools,
                                              add_generation_prompt=mode == "serve"))
    # maximal: the most recently dropped exchange back in does not fit
    if dropped:
        assert oracle.count(dropped - 1) > budget
    # a tool result never without its call (the nearest assistant message with tool calls)
    kept = set(range(len(messages))) - set(result.dropped)
    for i in kept:
        if messages[i]["role"] == "tool":
            call = max(j for j in range(i) if messages[j].get("tool_calls"))
            assert call in kept
    if oracle.head:
        assert result.messages[0] is messages[0]


def case(chat: ChatTemplate, kinds: list[str], mode: str, tokenizer, system: bool = True):
    """The Oracle of a generated conversation the template takes (with a system message if
    asked, else or failing that without one; tool arguments as objects, else as strings), or
    None."""
    for with_system in dict.fromkeys((system, False)):
        for string_arguments in (False, True):
            messages, starts, head = conversation(kinds, mode, with_system,
                                                  string_arguments=string_arguments)
            if renders(chat, messages, tokenizer, mode):
                return Oracle(chat, messages, starts, head, tokenizer, mode)
    return None


def renders(chat: ChatTemplate, messages: list, tokenizer, mode: str) -> bool:
    """Whether the template takes this conversation whole (some refuse a system message, tools,
    or a conversation ending with a tool result)."""
    try:
        chat.encode(messages, tokenizer, tools=TOOLS if uses_tools(messages) else None,
                    add_generation_prompt=mode == "serve")
    except Exception:  # noqa: BLE001 - a refusal of the template's own: no case then
        return False
    return True


# ---------------------------------------------------------------------------- properties

SHAPES = st.lists(st.sampled_from(KINDS), min_size=1, max_size=8)


@pytest.mark.parametrize("template", QUICK)
@settings(max_examples=25, deadline=None)
@given(kinds=SHAPES, mode=st.sampled_from(["serve", "train"]), system=st.booleans(),
       fraction=st.floats(0.0, 1.2))
def test_fit_is_within_budget_whole_exchange_oldest_first_and_maximal(
        tokenizer, template, kinds, mode, system, fraction):
    oracle = case(chat_of(template), kinds, mode, tokenizer, system)
    if oracle is not None:
        check_fit(oracle, max(1, int(oracle.count(0) * fraction)), mode)


@pytest.mark.parametrize("template", QUICK)
@pytest.mark.parametrize("mode", ["serve", "train"])
def test_every_threshold_budget(tokenizer, template, mode):
    """Each candidate's exact count as the budget, and one less: the boundaries where an
    off-by-one would show."""
    chat = chat_of(template)
    oracle = case(chat, ["plain", "tool", "reasoning"] * 3, mode, tokenizer) or \
        case(chat, ["plain", "reasoning"] * 4, mode, tokenizer)
    assert oracle is not None, "the quick templates are chosen to take these conversations"
    for dropped in range(oracle.required + 1):
        count = oracle.count(dropped)
        for budget in (count - 1, count, count + 1):
            check_fit(oracle, budget, mode)


@pytest.mark.slow
@pytest.mark.parametrize("template", [name for name, _ in chat_templates()])
def test_corpus_sweep(tokenizer, template):
    """Every corpus template, each shape and mode, the threshold budgets of dropping none, half
    and all that may be dropped (test_every_threshold_budget takes every one, on fewer
    templates); a template that refuses every conversation makes fit refuse it too."""
    chat = chat_of(template + ".jinja")
    cases = 0
    for kinds in (["plain"] * 5, ["tool", "plain"] * 3, ["reasoning", "plain"] * 3):
        for mode in ("serve", "train"):
            oracle = case(chat, kinds, mode, tokenizer)
            if oracle is None:
                continue
            for dropped in sorted({0, oracle.required // 2, oracle.required}):
                count = oracle.count(dropped)
                for budget in (count - 1, count):
                    check_fit(oracle, max(1, budget), mode)
                    cases += 1
    if not cases:  # as encode refuses it: the template's own error, never a wrong answer
        messages, _, _ = conversation(["plain"] * 5, "serve")
        with pytest.raises((ValueError, TypeError)):
            chat.encode(messages, tokenizer, add_generation_prompt=True)
        with pytest.raises((ValueError, TypeError)):
            chat.fit(messages, 10_000, tokenizer)


# ---------------------------------------------------------------------------- behaviour

def test_a_budget_too_small_raises_a_catchable_error(tokenizer):
    chat = chat_of(CHATML)
    messages, _, _ = conversation(["plain"] * 4, "serve")
    with pytest.raises(TokenBudgetError, match="cannot hold what fit must keep") as caught:
        chat.fit(messages, 5, tokenizer)
    minimal = [messages[0], messages[-1]]
    assert caught.value.required == len(chat.encode(minimal, tokenizer, add_generation_prompt=True))
    assert caught.value.max_tokens == 5
    with pytest.raises(ValueError):  # servers catch ValueError
        chat.fit(messages, 5, tokenizer, mode="train")


def test_fits_whole_returns_everything_with_no_exact_encode(tokenizer, monkeypatch):
    chat = ChatTemplate(source_of(CHATML), special_tokens=TOKENS)
    messages, _, _ = conversation(["plain"] * 4, "serve")
    calls = count_calls(monkeypatch, chat)
    result = chat.fit(messages, 10_000, tokenizer)
    assert result.messages == messages and result.dropped == [] and result.dropped_messages == []
    assert calls == {"encode": 0, "render_runs": 1} and result.encodes == 0
    assert result.n_tokens == len(chat.encode(messages, tokenizer, add_generation_prompt=True))


def count_calls(monkeypatch, chat: ChatTemplate) -> dict:
    """Counts of `chat.encode` (fit's exact counts) and origin renders (its estimate)."""
    calls = {"encode": 0, "render_runs": 0}
    encode, render_runs = chat.encode, origins.render_runs

    def counted_encode(*args, **kwargs):
        calls["encode"] += 1
        return encode(*args, **kwargs)

    def counted_runs(*args, **kwargs):
        calls["render_runs"] += 1
        return render_runs(*args, **kwargs)
    monkeypatch.setattr(chat, "encode", counted_encode)
    monkeypatch.setattr(origins, "render_runs", counted_runs)
    return calls


@pytest.mark.parametrize("template", QUICK[:4])
@pytest.mark.parametrize("mode", ["serve", "train"])
def test_fit_makes_far_fewer_exact_encodes_than_exchanges_dropped(tokenizer, monkeypatch, template,
                                                                  mode):
    chat = ChatTemplate(source_of(template), special_tokens=TOKENS)
    messages, starts, head = conversation(list(KINDS) * 60, mode)
    tools = TOOLS
    whole = len(chat.encode(messages, tokenizer, tools=tools, add_generation_prompt=mode == "serve"))
    calls = count_calls(monkeypatch, chat)
    result = chat.fit(messages, whole // 3, tokenizer, tools=tools, mode=mode)
    exchanges_dropped = sum(start in result.dropped for start in starts)
    assert exchanges_dropped > 100
    assert calls["render_runs"] == 1 and calls["encode"] == result.encodes <= 3


def test_a_tool_call_and_its_results_are_one_exchange_even_across_a_user_message(tokenizer):
    """A user message between a call and its result is no place to cut."""
    chat = chat_of("qwen--Qwen_Qwen3-1.7B.jinja")
    call = exchange("tool", 1, 3)
    messages = [{"role": "system", "content": "Be brief."}, *exchange("plain", 0, 30),
                call[0], call[1], {"role": "user", "content": "hurry up"}, call[2], call[3],
                {"role": "user", "content": "thanks, and now?"}]
    whole = len(chat.encode(messages, tokenizer, tools=TOOLS, add_generation_prompt=True))
    for budget in range(whole, 0, -3):
        try:
            result = chat.fit(messages, budget, tokenizer, tools=TOOLS)
        except TokenBudgetError:
            break
        assert result.dropped in ([], [1, 2], [1, 2, 3, 4, 5, 6, 7])


def test_train_mode_keeps_the_final_assistant_turn_and_what_it_answers(tokenizer):
    chat = chat_of(CHATML)
    messages, starts, _ = conversation(["plain", "tool", "plain", "tool"], "train")
    minimal = messages[:1] + messages[starts[-1]:]
    count = len(chat.encode(minimal, tokenizer, tools=TOOLS))
    result = chat.fit(messages, count, tokenizer, tools=TOOLS, mode="train")
    assert result.messages == minimal and result.n_tokens == count
    assert [m["role"] for m in result.messages] == ["system", "user", "assistant", "tool", "assistant"]


def test_wrong_calls_are_refused(tokenizer):
    chat = chat_of(CHATML)
    messages, _, _ = conversation(["plain"], "serve")
    with pytest.raises(ValueError, match="mode"):
        chat.fit(messages, 100, tokenizer, mode="generate")
    with pytest.raises(ValueError, match="max_tokens"):
        chat.fit(messages, 0, tokenizer)
    with pytest.raises(TypeError, match="add_generation_prompt"):
        chat.fit(messages, 100, tokenizer, add_generation_prompt=True)
    with pytest.raises(ValueError, match="assistant"):
        chat.fit([{"role": "user", "content": "hi"}], 100, tokenizer, mode="train")


def test_fit_agrees_with_the_naive_loop(tokenizer):
    """Where dropping never adds tokens (ChatML), the naive loop's answer is the only one."""
    chat = chat_of(CHATML)
    messages, starts, head = conversation(list(KINDS) * 5, "serve")
    oracle = Oracle(chat, messages, starts, head, tokenizer, "serve")
    for budget in range(40, oracle.count(0) + 5, 37):
        naive = next((d for d in range(oracle.required + 1) if oracle.count(d) <= budget), None)
        if naive is None:
            with pytest.raises(TokenBudgetError):
                chat.fit(messages, budget, tokenizer, tools=TOOLS)
            continue
        assert chat.fit(messages, budget, tokenizer, tools=TOOLS).messages == oracle.kept(naive)


# ---------------------------------------------------------------------------- the command

def run(capsys, *argv) -> tuple[int, str, str]:
    status = cli.main([str(a) for a in argv])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


@pytest.fixture
def files(tmp_path, tokenizer):
    messages, _, _ = conversation(["plain", "tool", "plain"] * 3, "serve")
    path = tmp_path / "conversation.json"
    path.write_text(json.dumps({"messages": messages, "tools": TOOLS}), encoding="utf-8")
    tokenizer_path = tmp_path / "tokenizer.json"
    tokenizer.save(str(tokenizer_path))
    return path, tokenizer_path, messages


def test_the_fit_command_prints_the_kept_conversation(capsys, files, tokenizer):
    path, tokenizer_path, messages = files
    chat = ChatTemplate(source_of(CHATML))
    expected = chat.fit(messages, 200, tokenizer, tools=TOOLS)
    status, out, err = run(capsys, "fit", TEMPLATES / CHATML, path, "--max-tokens", 200,
                           "--tokenizer", tokenizer_path)
    assert status == 0, err
    assert json.loads(out) == {"messages": expected.messages, "tools": TOOLS}
    assert f"{expected.n_tokens} of 200 tokens" in err
    assert f"dropped {len(expected.dropped)} messages" in err
    assert expected.dropped and str(expected.dropped[0]) in err


def test_the_fit_command_reads_a_model_folders_tokenizer(capsys, files, tmp_path):
    path, tokenizer_path, messages = files
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "tokenizer.json").write_bytes(tokenizer_path.read_bytes())
    status, out, err = run(capsys, "fit", TEMPLATES / CHATML, path, "--max-tokens", 10_000,
                           "--tokenizer", folder, "--mode", "train")
    assert status == 0, err
    assert json.loads(out)["messages"] == messages
    assert "dropped nothing" in err


def test_the_fit_command_reports_errors_in_one_line(capsys, files, tmp_path):
    path, tokenizer_path, _ = files
    status, out, err = run(capsys, "fit", TEMPLATES / CHATML, path, "--max-tokens", 3,
                           "--tokenizer", tokenizer_path)
    assert (status, out) == (2, "") and err.startswith("jinjamark: error: a budget of 3 tokens")
    assert len(err.splitlines()) == 1
    status, out, err = run(capsys, "fit", TEMPLATES / CHATML, path, "--max-tokens", 100,
                           "--tokenizer", tmp_path / "missing.json")
    assert (status, out) == (2, "") and err.startswith("jinjamark: error: cannot load")
    status, out, err = run(capsys, "fit", TEMPLATES / CHATML, path, "--max-tokens", 0,
                           "--tokenizer", tokenizer_path)
    assert status == 2 and "--max-tokens" in err
