"""Tokenization per request as a conversation grows: an encoding session against re-encoding.

    python benchmarks/session.py [--turns 500] [--template NAME ...]

A server receives the whole conversation on every request. For a generated conversation of
`--turns` user/assistant exchanges, the request at turn t is the conversation up to the t-th
user message, with the generation prompt. Every request is rendered beforehand (not timed: both
ways render the same); then timed, per request, best of 5, the tokenizing step alone:
- **full**: `encode_runs` of the whole request (what `ChatTemplate.encode` does every time);
- **session**: `EncodingSession.encode_parts` fed the requests in order, as a server meets them
  (only the new text is tokenized; its bookkeeping, the comparison with the previous request and the ids' copy
  included);
- **tokenizer**: of the session's time, the tokenizer's own call (`encode_runs` of the new text).
Both give the same ids (checked). The garbage collector is off while timing, as `timeit` has
it. Reported at a few turns, with the ratio of turn `--turns` to
turn 10 for each (the bound: session <= 2x; full grows with the conversation).
"""
from __future__ import annotations

import argparse
import contextlib
import gc
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT))

from bench_encode import tokenizer as make_tokenizer  # noqa: E402

DEFAULT_TEMPLATES = ["hfjs--Qwen__Qwen2.5-VL-7B-Instruct.jinja", "llamacpp--Qwen-Qwen3-0.6B.jinja",
                     "hfjs--meta-llama__Llama-3.2-11B-Vision-Instruct.jinja"]
SHOWN = (10, 50, 100, 250, 500)
ROUNDS = 5


def conversation(turns: int) -> list[dict]:
    messages = [{"role": "system", "content": "You are a helpful assistant. Keep answers short."}]
    for i in range(turns):
        messages.append({"role": "user", "content": f"Question number {i}: what comes after {i}?"})
        messages.append({"role": "assistant", "content": f"After {i} comes {i + 1}."})
    return messages


def timed(fn, rounds: int = ROUNDS) -> float:
    best = float("inf")
    for _ in range(rounds):
        with collector_off():
            start = time.perf_counter()
            fn()
            best = min(best, time.perf_counter() - start)
    return best


@contextlib.contextmanager
def collector_off():
    """The garbage collector off while a step is timed, as timeit has it (a collection the
    render's garbage started is not the step's), on between steps."""
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def run(name: str, turns: int, tok) -> dict:
    import jinjamark
    from jinjamark.chat import session as module
    from jinjamark.chat.encoding import InputRuns, encode_runs
    from jinjamark.chat.tokenization import control_tokens
    source = (ROOT / "tests" / "corpus" / "templates" / name).read_text(encoding="utf-8")
    chat = jinjamark.ChatTemplate(source, special_tokens={"bos_token": "<s>", "eos_token": "</s>"})
    messages = conversation(turns)
    requests = [chat.render_parts(messages[:2 * t + 2], add_generation_prompt=True) for t in range(turns)]
    control = control_tokens(tok, chat.template)
    shown = [t for t in SHOWN if t <= turns]
    full = {t: timed(lambda p=requests[t - 1]: encode_runs([InputRuns(p)], tok, control))
            for t in sorted(set(shown) | {10, turns})}
    spent = [0.0]

    def timed_encode(*args, **kwargs):  # the session's tokenizer calls, timed
        start = time.perf_counter()
        try:
            return encode_runs(*args, **kwargs)
        finally:
            spent[0] += time.perf_counter() - start
    session_times = [float("inf")] * turns
    tokenizer_times = [float("inf")] * turns
    module.encode_runs = timed_encode
    try:
        for _ in range(ROUNDS):  # each round replays the conversation in a fresh session
            session = chat.session(tok)
            for t, parts in enumerate(requests):
                spent[0] = 0.0
                with collector_off():
                    start = time.perf_counter()
                    got = session.encode_parts(parts)
                    session_times[t] = min(session_times[t], time.perf_counter() - start)
                tokenizer_times[t] = min(tokenizer_times[t], spent[0])
                if t in (9, turns - 1):
                    assert got.input_ids == encode_runs([InputRuns(parts)], tok, control)[0].ids, (name, t)
    finally:
        module.encode_runs = encode_runs
    return {"template": name, "turns": turns,
            "full_us": {t: round(full[t] * 1e6, 1) for t in shown},
            "session_us": {t: round(session_times[t - 1] * 1e6, 1) for t in shown},
            "tokenizer_us": {t: round(tokenizer_times[t - 1] * 1e6, 1) for t in shown},
            "tokenizer_last_over_10": round(tokenizer_times[turns - 1] / tokenizer_times[9], 2),
            "full_last_over_10": round(full[turns] / full[10], 2),
            "session_last_over_10": round(session_times[turns - 1] / session_times[9], 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=500)
    parser.add_argument("--template", action="append", help="corpus template file name(s)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.turns < 10:
        parser.error("--turns must be at least 10 (the curve is read against turn 10)")
    tok = make_tokenizer()
    results = [run(name, args.turns, tok) for name in (args.template or DEFAULT_TEMPLATES)]
    if args.json:
        print(json.dumps(results, indent=2))
        return
    for r in results:
        print(f"{r['template']} ({r['turns']} turns): tokenizing one request, microseconds")
        print("  turn      " + "".join(f"{t:>10}" for t in r["full_us"]))
        print("  full      " + "".join(f"{v:>10}" for v in r["full_us"].values()))
        print("  session   " + "".join(f"{v:>10}" for v in r["session_us"].values()))
        print("  tokenizer " + "".join(f"{v:>10}" for v in r["tokenizer_us"].values()))
        print(f"  turn {r['turns']} / turn 10: full {r['full_last_over_10']}x, "
              f"session {r['session_last_over_10']}x (bound 2x), "
              f"its tokenizer call {r['tokenizer_last_over_10']}x")


if __name__ == "__main__":
    main()
