"""Shared helpers: where the corpus lives and how to load it, and how to capture an outcome.

The corpus is a copy inside tests/ so that a fresh clone is whole; nothing here reads ../shared.
"""
from __future__ import annotations

import json
import os
import pathlib
import shutil
import tempfile
from typing import Callable, NamedTuple

from hypothesis import settings

# The suite must give the same verdict on every run (CI lands nothing on a flaky failure), so the
# property tests draw the same examples each time. Exploring new examples is a separate, long
# run: JINJAMARK_HYPOTHESIS=explore pytest (random draws, failures saved in .hypothesis/).
settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("JINJAMARK_HYPOTHESIS", "ci"))

# Parser tables built by the suite (hundreds of grammars: delimiters, extensions) go to a folder
# of the run, not to the user's cache (grammar/parser.py, cache_folder).
if "JINJAMARK_CACHE_DIR" not in os.environ:
    _TABLES = os.environ["JINJAMARK_CACHE_DIR"] = tempfile.mkdtemp(prefix="jinjamark-tables-")

    def pytest_sessionfinish(session, exitstatus):
        shutil.rmtree(_TABLES, ignore_errors=True)

CORPUS = pathlib.Path(__file__).parent / "corpus"
TEMPLATES = CORPUS / "templates"
CONVERSATIONS = CORPUS / "conversations"
VECTORS = CORPUS / "vectors"


def chat_templates() -> list[tuple[str, str]]:
    """(stem, source) for every corpus chat template, sorted by name."""
    return [(p.stem, p.read_text(encoding="utf-8")) for p in sorted(TEMPLATES.glob("*.jinja"))]


def conversations() -> list[tuple[str, dict]]:
    """(stem, fixture) for every corpus conversation, sorted by name."""
    return [(p.stem, json.loads(p.read_text(encoding="utf-8")))
            for p in sorted(CONVERSATIONS.glob("*.json"))]


def fixture(name: str) -> dict:
    """One corpus conversation by its stem (`01-single-user`)."""
    return json.loads((CONVERSATIONS / f"{name}.json").read_text(encoding="utf-8"))


def source_of(template: str) -> str:
    """One corpus template's source by its file name (`chatml--....jinja`)."""
    return (TEMPLATES / template).read_text(encoding="utf-8")


def vectors() -> list[tuple[str, dict]]:
    """(id, vector) for every line of every vectors file; the id is `file/name`, unique."""
    out = []
    for path in sorted(VECTORS.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                v = json.loads(line)
                out.append((f"{path.stem}/{v['name']}", v))
    ids = [i for i, _ in out]
    assert len(ids) == len(set(ids)), "vector ids must be unique"
    return out


class Outcome(NamedTuple):
    """What calling something produced: its value, or the exception it raised."""
    value: object = None
    error: BaseException | None = None

    @property
    def raised(self) -> bool:
        return self.error is not None

    def describe(self) -> str:
        if self.error is not None:
            return f"{type(self.error).__module__}.{type(self.error).__name__}: {self.error}"
        return repr(self.value)


def outcome(fn: Callable, *args, **kwargs) -> Outcome:
    try:
        return Outcome(fn(*args, **kwargs))
    except Exception as e:  # noqa: BLE001 - the caller judges what was raised
        return Outcome(error=e)


def byte_level_bpe(vocab_size: int, special_tokens: list[str], texts=None):
    """A byte-level BPE `tokenizers.Tokenizer` trained here (no download, no progress bar) on
    `texts`, by default the corpus conversations, with `special_tokens` added."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    raw = Tokenizer(models.BPE())
    raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    raw.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=special_tokens,
                                  show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    if texts is None:
        texts = [p.read_text(encoding="utf-8") for p in sorted(CONVERSATIONS.glob("*.json"))]
    raw.train_from_iterator(texts, trainer)
    return raw
