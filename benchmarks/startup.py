"""First call in a fresh process: import, parser, compile and one render, jinjamark next to Jinja2.

    python benchmarks/startup.py [--runs 10] [--cache warm|cold|both] [--compile]

What a CLI, a serverless worker or a `multiprocessing` child pays before its first prompt. Each
run is a new Python process (`python -c`, site and interpreter start not timed); inside it the
clock starts before `import` and stops after the first render. Modules load from bytecode (written
by a first untimed run of each engine), as they do from an installed package. jinjamark:
`import jinjamark` + `ChatTemplate(source).render(...)`; Jinja2: `import jinja2` +
`ImmutableSandboxedEnvironment(trim_blocks, lstrip_blocks, loopcontrols)` + `from_string` +
`render`. Engines alternate run by run; the report gives the median wall and CPU time of each
and their ratio.

Cache states for jinjamark's parser tables: `warm` keeps a user cache folder between runs (the
second process on a machine and after); `cold` gives every run an empty one (the very first
process on a machine: the tables shipped in the package, or a build when they are stale).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEMPLATES = ["chatml--teknium_OpenHermes-2.5-Mistral-7B", "llamacpp--meta-llama-Llama-3.1-8B-Instruct",
             "qwen--Qwen_Qwen3-1.7B"]
CONVERSATION = "03-multi-turn"

_CLOCK = """
import json, sys, time
t0, c0 = time.perf_counter(), time.process_time()
source, messages = json.loads(sys.stdin.read())
"""
_REPORT = """
print(json.dumps([time.perf_counter() - t0, time.process_time() - c0]))
"""
SNIPPETS = {
    "jinjamark": """
import jinjamark
jinjamark.ChatTemplate(source, special_tokens={"bos_token": "<s>", "eos_token": "</s>"}).render(
    messages, add_generation_prompt=True)
""",
    "jinja2": """
import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment
env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                   extensions=["jinja2.ext.loopcontrols"])
env.globals["raise_exception"] = lambda m: 1 / 0
env.from_string(source).render(messages=messages, bos_token="<s>", eos_token="</s>",
                               add_generation_prompt=True)
""",
}


BYTECODE = tempfile.mkdtemp(prefix="startup-pyc-")


def run_once(engine: str, payload: str, cache: str | None) -> tuple[float, float]:
    env = dict(os.environ)
    # Modules load from bytecode, as in an installed package (pip writes it), even where the
    # shell sets PYTHONDONTWRITEBYTECODE; kept in a folder of its own, out of the checkout.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = BYTECODE
    if cache is not None:
        env["JINJAMARK_CACHE_DIR"] = cache
    code = _CLOCK + SNIPPETS[engine] + _REPORT
    done = subprocess.run([sys.executable, "-c", code], input=payload, capture_output=True,
                          text=True, env=env, check=True)
    wall, cpu = json.loads(done.stdout.strip().splitlines()[-1])
    return wall, cpu


def measure(name: str, runs: int, cache_state: str) -> dict:
    folder = ROOT / "tests" / "corpus"
    source = (folder / "templates" / f"{name}.jinja").read_text(encoding="utf-8")
    messages = json.loads((folder / "conversations" / f"{CONVERSATION}.json").read_text())["messages"]
    payload = json.dumps([source, messages])
    times: dict[str, list] = {"jinjamark": [], "jinja2": []}
    with tempfile.TemporaryDirectory() as kept:
        for engine in times:  # bytecode written, the user cache filled: not timed
            run_once(engine, payload, kept)
        for _ in range(runs):
            for engine in times:
                if cache_state == "cold":
                    with tempfile.TemporaryDirectory() as empty:
                        times[engine].append(run_once(engine, payload, empty))
                else:
                    times[engine].append(run_once(engine, payload, kept))
    return {engine: (statistics.median(w for w, _ in got), statistics.median(c for _, c in got))
            for engine, got in times.items()}


def compile_ratios(repeat: int = 3) -> None:
    """Compile in a warm process over the corpus: jinjamark's parse (source to checked AST:
    `Environment.parse`) and whole `from_string` (plus the compiler), against Jinja2's
    `from_string`; best CPU time of `repeat` each, median of per-template ratios."""
    import time
    sys.path.insert(0, str(ROOT / "tests"))
    import oracle  # tests/oracle.py: Jinja2 as transformers configures it

    import jinjamark
    ours, theirs = jinjamark.chat_environment(), oracle.environment()

    def best(fn) -> float:
        times = []
        for _ in range(repeat):
            start = time.process_time()
            fn()
            times.append(time.process_time() - start)
        return min(times)

    parse, whole = [], []
    for i, path in enumerate(sorted((ROOT / "tests" / "corpus" / "templates").glob("*.jinja"))):
        source = path.read_text(encoding="utf-8")
        try:
            ours.from_string(source, name="warm-up")
            theirs.from_string(source)
        except Exception:  # noqa: BLE001 - a template one engine refuses is left out
            continue
        names = iter(range(repeat))
        t_theirs = best(lambda: theirs.from_string(source))
        parse.append(best(lambda: ours.parse(source)) / t_theirs)
        whole.append(best(lambda: ours.from_string(source, name=f"{i}-{next(names)}")) / t_theirs)
    print(f"compile over {len(parse)} corpus templates, median of per-template ratios to Jinja2's "
          f"from_string: parse {statistics.median(parse):.2f}x, from_string "
          f"{statistics.median(whole):.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--cache", choices=["warm", "cold", "both"], default="both")
    parser.add_argument("--compile", action="store_true", help="also the warm compile over the corpus")
    args = parser.parse_args()
    if args.compile:
        compile_ratios()
    states = ["warm", "cold"] if args.cache == "both" else [args.cache]
    print(f"first call in a fresh process, median of {args.runs} runs each; conversation {CONVERSATION}")
    print(f"{'template':<45} {'cache':<5} {'jinjamark ms':>13} {'jinja2 ms':>10} {'ratio':>6}"
          f" {'(cpu ms)':>16} {'ratio':>6}")
    for state in states:
        for name in TEMPLATES:
            got = measure(name, args.runs, state)
            (w_ours, c_ours), (w_theirs, c_theirs) = got["jinjamark"], got["jinja2"]
            print(f"{name[:45]:<45} {state:<5} {w_ours * 1e3:>13.1f} {w_theirs * 1e3:>10.1f}"
                  f" {w_ours / w_theirs:>6.2f} {c_ours * 1e3:>7.1f} {c_theirs * 1e3:>7.1f}"
                  f" {c_ours / c_theirs:>6.2f}", flush=True)


if __name__ == "__main__":
    main()
