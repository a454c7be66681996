"""`ChatTemplate.fit` against the naive loop that fits a conversation to a token budget.

    python benchmarks/fit.py [--quick] [--exchanges N]

The naive loop drops the oldest exchange, renders and encodes what is left, and repeats until
it fits: one full encode per exchange dropped. `fit` renders once with origins to estimate every
candidate and checks its answer with a few exact encodes. Over a long generated conversation (a
system message, then exchanges cycling plain, tool call and result, reasoning; serve mode, a last
user question) through a few corpus templates, for budgets that drop about 10%, 50% and 90% of
the exchanges: the time of each (best of a few runs), the encodes each made, their ratio, and a
check that both keep the same messages. The tokenizer is bench_encode.py's (trained here, no
download, wrapped in transformers' PreTrainedTokenizerFast).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any, Callable

from bench_encode import tokenizer

ROOT = Path(__file__).resolve().parent.parent
TEMPLATES = ROOT / "tests" / "corpus" / "templates"
CASES = ["chatml--teknium_OpenHermes-2.5-Mistral-7B.jinja",
         "llamacpp--meta-llama-Llama-3.1-8B-Instruct.jinja",
         "qwen--Qwen_Qwen3-1.7B.jinja",
         "llamacpp--openai-gpt-oss-120b.jinja"]
DROPPED = (0.1, 0.5, 0.9)  # the share of the exchanges each budget drops, about
TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "The weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]}}}]


def conversation(exchanges: int) -> list[dict]:
    messages = [{"role": "system", "content": "You are a helpful assistant."}]
    for n in range(exchanges):
        text = " ".join(f"word{(n * 7 + i) % 31}" for i in range(8 + n % 9))
        messages.append({"role": "user", "content": f"Question {n}: {text}?"})
        if n % 3 == 1:
            call = {"id": f"call_{n}", "type": "function",
                    "function": {"name": "get_weather", "arguments": {"city": f"City{n}"}}}
            messages.append({"role": "assistant", "content": "", "tool_calls": [call]})
            messages.append({"role": "tool", "tool_call_id": f"call_{n}", "name": "get_weather",
                             "content": json.dumps({"temperature": n % 30, "sky": text[:24]})})
        answer = {"role": "assistant", "content": f"Answer {n}: {text}."}
        if n % 3 == 2:
            answer["reasoning_content"] = f"Thinking about {n}: {text}"
        messages.append(answer)
    messages.append({"role": "user", "content": "And now, in one line?"})
    return messages


class Counted:
    """A ChatTemplate's `encode`, counting its calls."""

    def __init__(self, chat: Any) -> None:
        self.calls, self._encode = 0, chat.encode
        chat.encode = self

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        return self._encode(*args, **kwargs)


def naive(chat: Any, messages: list, budget: int, tok: Any) -> list:
    """Drop the oldest exchange, re-render and re-encode, until it fits."""
    from jinjamark.chat.fitting import divide
    from jinjamark.chat.normalize import normalize_messages
    exchanges = divide(normalize_messages(messages), "serve")
    for dropped in range(exchanges.required + 1):
        kept = [messages[i] for i in exchanges.kept(dropped)]
        if len(chat.encode(kept, tok, tools=TOOLS, add_generation_prompt=True)) <= budget:
            return kept
    raise ValueError("does not fit")


def best(fn: Callable[[], Any], runs: int) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(runs):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return min(times), result


def budget_for(chat: Any, messages: list, tok: Any, share: float) -> int:
    """A budget that drops about `share` of the exchanges: the count of the conversation with
    that share gone (the naive loop's answer then drops exactly that many)."""
    from jinjamark.chat.fitting import divide
    from jinjamark.chat.normalize import normalize_messages
    exchanges = divide(normalize_messages(messages), "serve")
    kept = [messages[i] for i in exchanges.kept(round(exchanges.required * share))]
    return len(chat.encode(kept, tok, tools=TOOLS, add_generation_prompt=True)) + 3


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100 exchanges, one naive run")
    parser.add_argument("--exchanges", type=int, default=None, help="exchanges (default 300)")
    args = parser.parse_args()
    import jinjamark
    tok = tokenizer()
    exchanges = args.exchanges or (100 if args.quick else 300)
    messages = conversation(exchanges)
    print(f"{exchanges} exchanges, {len(messages)} messages; times are the best of "
          f"{1 if args.quick else 2} naive / 5 fit runs")
    print(f"{'template':<50} {'tokens':>6} {'budget':>6} {'dropped':>7} {'naive':>8} {'enc':>4} "
          f"{'fit':>8} {'enc':>4} {'ratio':>7}  same")
    for name in CASES:
        chat = jinjamark.ChatTemplate((TEMPLATES / name).read_text(encoding="utf-8"),
                                      special_tokens=tok.special_tokens_map)
        whole = len(chat.encode(messages, tok, tools=TOOLS, add_generation_prompt=True))
        for share in DROPPED:
            budget = budget_for(chat, messages, tok, share)
            counted = Counted(chat)
            slow, kept = best(lambda: naive(chat, messages, budget, tok), 1 if args.quick else 2)
            naive_encodes = counted.calls // (1 if args.quick else 2)
            counted.calls = 0
            fast, result = best(lambda: chat.fit(messages, budget, tok, tools=TOOLS), 5)
            fit_encodes = counted.calls // 5
            del chat.encode  # the method again
            print(f"{name[:50]:<50} {whole:>6} {budget:>6} {naive_encodes - 1:>7} "
                  f"{slow * 1e3:>6.0f}ms {naive_encodes:>4} {fast * 1e3:>6.1f}ms "
                  f"{fit_encodes:>2}+1 {slow / fast:>6.1f}x  {result.messages == kept}")
    print("tokens: the whole conversation's; dropped: exchanges; enc: encodes of a candidate "
          "(fit: its exact checks + the one origin render and encode that estimates)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
