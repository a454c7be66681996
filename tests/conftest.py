"""Shared helpers: where the corpus lives and how to load it, and how to capture an outcome.

The corpus is a copy inside tests/ so that a fresh clone is whole; nothing here reads ../shared.
"""
from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
from typing import Callable, NamedTuple

import pytest
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

# The quick profile, `pytest -m "not slow"`, leaves out these files: each takes many seconds alone
# (measured one file at a time), together most of the suite's time. `pytest` runs everything, as
# CI does. A file named here that no longer exists is an error, so the profile cannot rot quietly.
SLOW_FILES = frozenset({
    # CPU seconds alone, measured 2026-12-01 (test_codegen 2026-12-02; the whole suite: about 650)
    "test_codegen.py",            # 116: the differential and marking suites again, generated
    "test_extensions.py",         # 80: strict grammars built per extension set
    "test_delimiters.py",         # 64: a grammar per delimiter set
    "test_analysis.py",           # 34: probe renders of every corpus template
    "test_attacks.py",            # 31: every attack runs to its limit
    "test_provenance.py",         # 27
    "test_differential.py",       # 26: hypothesis against Jinja2
    "test_limits.py",             # 25: every limit reached
    "test_control_tokens.py",     # 24
    "test_polyfills.py",          # 24
    "test_grammar.py",            # 24: strict builds, parser fuzzing
    "test_startup.py",            # 23: the corpus in five environments
    "test_chat_transformers.py",  # 23: transformers' own apply_chat_template as the oracle
    "test_playground.py",         # 23: a server and a real browser
    "test_scoping.py",            # 18
    "test_chat_corpus.py",        # 15: every corpus template x conversation
    "test_fuzz.py",               # 14
    "test_first_hour.py",         # 13: the console script in subprocesses
    "test_parity.py",             # 12
    "test_leaks.py",              # 10
    "test_injection.py",          # 9
    "test_hf.py",                 # 9
    "test_token_building.py",     # 9
    "test_generation_spans.py",   # 8
    "test_filters.py",            # 8
    "test_composition.py",        # 8
    "test_processes.py",          # 8: worker processes
    "test_ray.py",                # about 9 wall: a local Ray started, used and stopped
    "test_concurrency.py",        # 6: threads racing (kept out for a margin under a minute)
    "test_schema.py",             # 6
    "test_origins_corpus.py",     # origins and masks over every corpus template
})


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: a test in one of the slow files (SLOW_FILES in "
                                       "conftest.py); pytest -m 'not slow' is the quick profile")
    # generated code that does not compile is a fault of the generator, wherever a test meets it
    config.addinivalue_line("filterwarnings",
                            "error::jinjamark.evaluation.compiling.codegen.GenerationWarning")
    generate_after = os.environ.get("JINJAMARK_TEST_GENERATE_AFTER")
    if generate_after:  # run the suite with the second tier from the Nth run of a body (1: all)
        from jinjamark.evaluation.compiling import tiers
        tiers.HOT = int(generate_after)
    here = pathlib.Path(__file__).parent
    missing = sorted(name for name in SLOW_FILES if not (here / name).is_file())
    if missing:
        raise pytest.UsageError(f"conftest.SLOW_FILES names files that do not exist: {missing}")


def pytest_collection_modifyitems(config, items):
    slow = pytest.mark.slow
    for item in items:
        if item.path.name in SLOW_FILES:
            item.add_marker(slow)


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


def run_python(code: str, timeout: int = 120) -> str:
    """`code` run by this Python in a fresh process (what a first import sees): its standard
    output, stripped; a failure fails the test with the child's stderr."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()
