"""The first call in a fresh process: import, environment (parser), compile and one render.

What a CLI, a serverless worker or a `multiprocessing` child pays before its first prompt. Every run
is a new `python -c` process for one engine; inside it, CPU time is read before the engine's import
and after each step (`time.process_time`, the collector left on: a first call pays it). The template
and conversation come in a `marshal` file, read before the clock starts (marshal is built in, so
reading them imports nothing an engine would otherwise pay for). The parent also reads each child's
whole-process CPU time (interpreter start included) from `resource.getrusage(RUSAGE_CHILDREN)`.
One warm-up run per engine (it writes the bytecode caches: modules load from bytecode, as from an
installed package, in a folder of the run's own, whatever PYTHONDONTWRITEBYTECODE says), then runs
with the engines interleaved; the ratio is the median over runs of the same run's totals.

jinjamark's parser tables are read from its cache folder as a user's machine has them after a first
run; the `empty cache` row gives every run an empty JINJAMARK_CACHE_DIR (a machine's very first
process: the tables shipped in the package, or a build).
"""
from __future__ import annotations

import marshal
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from engines import ENGINES, ROOT, corpus, oracle

CASES = {  # label: (corpus template, corpus conversation)
    "ChatML": ("chatml--teknium_OpenHermes-2.5-Mistral-7B", "03-multi-turn"),
    "Llama-3.1": ("llamacpp--meta-llama-Llama-3.1-8B-Instruct", "03-multi-turn"),
    "Qwen3 with tools": ("qwen--Qwen_Qwen3-1.7B", "05-tool-call-object-args"),
}

_HEAD = """
import time
c0 = time.process_time()
import marshal, sys
with open(sys.argv[1], "rb") as f:
    source, fixture, special = marshal.load(f)
t = [time.process_time()]
"""
_STEPS = {
    "jinjamark": """
import jinjamark
t.append(time.process_time())
env = jinjamark.chat_environment()
t.append(time.process_time())
template = jinjamark.ChatTemplate(source, special_tokens=special, environment=env)
t.append(time.process_time())
text = template.render(fixture["messages"], tools=fixture.get("tools"),
                       documents=fixture.get("documents"), add_generation_prompt=True)
""",
    "jinja2": """
import jinja2, jinja2.sandbox, jinja2.ext
t.append(time.process_time())
sys.path.insert(0, sys.argv[2])
import oracle  # the transformers profile: its environment is made on import
t.append(time.process_time())
template = oracle._ENV.from_string(source)
t.append(time.process_time())
text = template.render(**oracle.chat_context(fixture, True))
""",
    "minijinja": """
import minijinja
t.append(time.process_time())
import json
def raise_exception(message):
    raise minijinja.TemplateError(message)
def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                      sort_keys=sort_keys)
env = minijinja.Environment(trim_blocks=True, lstrip_blocks=True,
                            auto_escape_callback=lambda name: False, filters={"tojson": tojson},
                            globals={"raise_exception": raise_exception})
t.append(time.process_time())
env.add_template("chat", source)
t.append(time.process_time())
text = env.render_template("chat", messages=fixture["messages"], tools=fixture.get("tools"),
                           documents=fixture.get("documents"), add_generation_prompt=True, **special)
""",
}
_TAIL = """
t.append(time.process_time())
import zlib  # after the clock: the check of the text is not part of the first call
print(repr(([b - a for a, b in zip(t, t[1:])], t[-1] - t[0], zlib.crc32(text.encode()))))
"""
STEPS = ("import", "environment", "compile", "render")


def child(engine: str, case_file: str, env: dict) -> dict:
    """One fresh process: its steps' CPU seconds, in-process total, whole-process CPU and wall."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run([sys.executable, "-c", _HEAD + _STEPS[engine] + _TAIL, case_file,
                           str(ROOT / "tests")], capture_output=True, text=True, env=env, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeError(f"{engine} first call failed: {done.stderr[-2000:]}")
    steps, total, digest = eval(done.stdout.strip().splitlines()[-1])  # our own child's repr
    whole = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"steps": dict(zip(STEPS, steps)), "total": total, "process": whole, "digest": digest}


def run(runs: int) -> dict:
    results = {}
    with tempfile.TemporaryDirectory() as scratch:
        for label, (stem, conversation) in CASES.items():
            results[label] = case(stem, conversation, runs, Path(scratch))
    return results


def case(stem: str, conversation: str, runs: int, scratch: Path) -> dict:
    import json
    source = (corpus() / "templates" / f"{stem}.jinja").read_text(encoding="utf-8")
    fixture = json.loads((corpus() / "conversations" / f"{conversation}.json").read_text("utf-8"))
    case_file = scratch / f"{stem}.marshal"
    case_file.write_bytes(marshal.dumps((source, fixture, dict(oracle.SPECIAL_TOKENS))))
    variants = {name: name for name in ENGINES}
    variants["jinjamark, empty cache"] = "jinjamark"
    samples: dict[str, list[dict]] = {v: [] for v in variants}
    for r in range(runs + 1):  # run 0 is the warm-up, not counted
        names = list(variants)
        for v in names[r % len(names):] + names[:r % len(names)]:
            env = dict(os.environ)
            # Modules load from bytecode, as from an installed package (pip writes it), even where
            # the shell sets PYTHONDONTWRITEBYTECODE: without it every process compiles every
            # module of an engine from source. Kept out of the checkout, written by the warm-up.
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["PYTHONPYCACHEPREFIX"] = str(scratch / "bytecode")
            if v.endswith("empty cache"):
                env["JINJAMARK_CACHE_DIR"] = tempfile.mkdtemp(dir=scratch)
            sample = child(variants[v], str(case_file), env)
            if r:
                samples[v].append(sample)
    digests = {v: s[0]["digest"] for v, s in samples.items()}
    return {"template": stem, "conversation": conversation, "runs": runs,
            "same_text": len(set(digests.values())) == 1,  # every engine rendered the same text
            "median": {v: summary(s) for v, s in samples.items()},
            "ratios": {f"{v}/{o}": same_run_ratio(samples[v], samples[o], "total")
                       for v in ("jinjamark", "jinjamark, empty cache") for o in ENGINES
                       if o != "jinjamark"},
            "process_ratios": {f"jinjamark/{o}": same_run_ratio(samples["jinjamark"], samples[o],
                                                                "process")
                               for o in ENGINES if o != "jinjamark"}}


def summary(samples: list[dict]) -> dict:
    return {"total": statistics.median(s["total"] for s in samples),
            "process": statistics.median(s["process"] for s in samples),
            **{step: statistics.median(s["steps"][step] for s in samples) for step in STEPS}}


def same_run_ratio(a: list[dict], b: list[dict], key: str) -> float:
    return statistics.median(x[key] / y[key] for x, y in zip(a, b) if y[key] > 0)
