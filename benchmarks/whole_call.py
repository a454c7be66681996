"""The user's whole call: `jinjamark.hf.apply_chat_template(tok, ..., tokenize=True,
return_dict=True)` against transformers' own `tok.apply_chat_template(...)` (render, marks and
tokenization together), and `render_parts` + mark-aware encode against Jinja2's render + the
tokenizer's encode (issue 25).

    python benchmarks/whole_call.py [--quick]

The tokenizer is bench_encode.py's, trained here (no download). For every corpus template x every
benign conversation (add_generation_prompt=True) that both render, the ids are checked equal to
transformers' before anything is timed; a case where they differ (a control token typed in the
input, which jinjamark keeps text) is counted, not timed. Reports
the median per-case ratio and the ratio of the summed times.
"""
from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

from bench_encode import CORPUS, best_times, quick_run, tokenizer

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))


def cases(quick: bool) -> tuple[list, list]:
    templates = sorted((CORPUS / "templates").glob("*.jinja"))[:: 8 if quick else 1]
    conversations = [json.loads(p.read_text(encoding="utf-8"))
                     for p in sorted((CORPUS / "conversations").glob("*.json")) if "injection" not in p.name]
    return templates, conversations


def call_options(fx: dict) -> dict:
    return dict(tools=fx.get("tools"), documents=fx.get("documents"), add_generation_prompt=True,
                tokenize=True, return_dict=True, **(fx.get("kwargs") or {}))


def main() -> int:
    quick, repeat = quick_run(__doc__)
    import jinjamark
    import jinjamark.hf as hf
    import oracle
    from jinjamark.tokenizers import encode

    tok = tokenizer()
    whole: list[tuple[float, float]] = []
    split: list[tuple[float, float]] = []
    differ = 0
    templates, conversations = cases(quick)
    for path in templates:
        source = path.read_text(encoding="utf-8")
        tok.chat_template = source
        chat = jinjamark.ChatTemplate(source, special_tokens=tok.special_tokens_map)
        for fx in conversations:
            options = call_options(fx)
            try:
                theirs = tok.apply_chat_template(fx["messages"], **options)
            except Exception:  # noqa: BLE001 - a template refusing a conversation is no case
                continue
            try:
                ours = hf.apply_chat_template(tok, fx["messages"], **options)
            except Exception:  # noqa: BLE001 - counted: transformers rendered it
                differ += 1
                continue
            if list(ours["input_ids"]) != list(theirs["input_ids"]):
                differ += 1
                continue
            messages = fx["messages"]
            whole.append(tuple(best_times([lambda: hf.apply_chat_template(tok, messages, **options),
                                           lambda: tok.apply_chat_template(messages, **options)], repeat)))
            render = {k: v for k, v in options.items() if k not in ("tokenize", "return_dict")}
            context = chat.context(messages, **render)
            compiled = oracle.compiled(source)
            split.append(tuple(best_times([
                lambda: encode(chat.render_parts(messages, **render), tok, template=source),
                lambda: tok.encode(compiled.render(**context), add_special_tokens=False)], repeat)))
    # (where they differ, the input holds text that transformers tokenizes as a control token,
    # `<think>` in a message: jinjamark's defence keeps it text; COMPATIBILITY.md)
    print(f"{len(whole)} cases timed, {differ} with ids differing from transformers' (not timed)")
    for label, rows, base in (("hf.apply_chat_template(tokenize=True) / transformers'", whole, "transformers"),
                              ("render_parts + encode / Jinja2 render + encode", split, "Jinja2")):
        ours, theirs = zip(*rows)
        print(f"{label}: median per case {statistics.median(o / t for o, t in rows):.2f}x, "
              f"summed {sum(ours) / sum(theirs):.2f}x (median {statistics.median(ours) * 1e6:.0f} us "
              f"against {base}'s {statistics.median(theirs) * 1e6:.0f} us)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
