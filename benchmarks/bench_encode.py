"""Encoding time of jinjamark's mark-aware tokenization against transformers' own.

    python benchmarks/bench_encode.py [--quick]

A byte-level BPE tokenizer is trained here (no download) on the corpus conversations, with the
special tokens of several families and Qwen-style non-special added tokens, and wrapped in
transformers' PreTrainedTokenizerFast. For every corpus template x every benign conversation
(add_generation_prompt=True) that renders, the parts are rendered once (not timed); then timed:
`jinjamark.tokenizers.encode(parts, tokenizer, template=source)` (the control tokens found per
call, as apply_chat_template finds them) against `tokenizer.encode(text, add_special_tokens=False)`
and `tokenizer(text, add_special_tokens=False)` on the same text. Reports the median per-case
ratio and the ratio of the summed times.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "corpus"
SPECIALS = ["<|im_start|>", "<|im_end|>", "<|endoftext|>", "<|begin_of_text|>",
            "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>", "<start_of_turn>",
            "<end_of_turn>", "<s>", "</s>", "[INST]", "[/INST]", "<|end|>", "<|system|>",
            "<|user|>", "<|assistant|>"]


def tokenizer() -> Any:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast
    raw = Tokenizer(models.BPE())
    raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    raw.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=4000, special_tokens=SPECIALS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    texts = [p.read_text(encoding="utf-8") for p in sorted(CORPUS.glob("*/*"))]
    raw.train_from_iterator(texts, trainer)
    raw.add_tokens(["<tool_call>", "</tool_call>", "<think>", "</think>"])
    return PreTrainedTokenizerFast(tokenizer_object=raw, bos_token="<s>", eos_token="</s>")


def best_times(fns: list[Callable[[], Any]], repeat: int, budget: float = 0.002) -> list[float]:
    """Seconds per call of each function: the best of `repeat` loops, each long enough to read
    the clock well; the functions take turns, so that a busy moment weighs on all of them."""
    number = 1
    while True:
        start = time.perf_counter()
        for _ in range(number):
            fns[0]()
        if time.perf_counter() - start >= budget:
            break
        number *= 2
    best = [float("inf")] * len(fns)
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            start = time.perf_counter()
            for _ in range(number):
                fn()
            best[i] = min(best[i], (time.perf_counter() - start) / number)
    return best


def cases(tok: Any, quick: bool) -> list[tuple[str, list, str]]:
    import jinjamark
    templates = sorted((CORPUS / "templates").glob("*.jinja"))[:: 8 if quick else 1]
    conversations = [json.loads(p.read_text(encoding="utf-8"))
                     for p in sorted((CORPUS / "conversations").glob("*.json")) if "injection" not in p.name]
    found = []
    for path in templates:
        source = path.read_text(encoding="utf-8")
        chat = jinjamark.ChatTemplate(source, special_tokens=tok.special_tokens_map)
        for fx in conversations:
            try:
                parts = chat.render_parts(fx["messages"], tools=fx.get("tools"),
                                          documents=fx.get("documents"), add_generation_prompt=True,
                                          **(fx.get("kwargs") or {}))
            except Exception:  # noqa: BLE001 - a template refusing a conversation is no case
                continue
            found.append((source, parts, "".join(p.text for p in parts)))
    return found


def quick_run(doc: str) -> tuple[bool, int]:
    """The command line of this and whole_call.py: (`--quick`, the repeats it means)."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="every 8th template, fewer repeats")
    quick = parser.parse_args().quick
    return quick, 3 if quick else 5


def main() -> int:
    quick, repeat = quick_run(__doc__)
    from jinjamark.tokenizers import encode
    tok = tokenizer()
    rows = []
    for source, parts, text in cases(tok, quick):
        rows.append((*best_times([lambda: encode(parts, tok, template=source),
                                  lambda: tok.encode(text, add_special_tokens=False),
                                  lambda: tok(text, add_special_tokens=False)], repeat), len(text)))
    ours, plain, called, sizes = zip(*rows)
    print(f"{len(rows)} cases, median text {statistics.median(sizes):.0f} characters")
    print(f"median per call: jinjamark encode {statistics.median(ours) * 1e6:.1f} us, "
          f"tokenizer.encode {statistics.median(plain) * 1e6:.1f} us, "
          f"tokenizer(...) {statistics.median(called) * 1e6:.1f} us")
    for name, base in (("tokenizer.encode", plain), ("tokenizer(...)", called)):
        per_case = statistics.median(o / b for o, b in zip(ours, base))
        print(f"jinjamark / {name}: median per case {per_case:.2f}x, summed {sum(ours) / sum(base):.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
