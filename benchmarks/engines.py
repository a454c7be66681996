"""The three engines the benchmark compares, each configured as transformers renders chat templates.

jinjamark: `ChatTemplate` on a `chat_environment()` (its render includes cleaning the conversation
as transformers 5's apply_chat_template does). Jinja2: tests/oracle.py, the suite's oracle
(ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, loopcontrols, a transparent
{% generation %}, json.dumps as tojson, raise_exception, a pinned strftime_now). minijinja: the Rust
engine's Python binding with the same options and the same Python callables. Jinja2 and minijinja
render the context jinjamark's cleaning gives, made once per conversation and not timed.
"""
from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

try:
    import oracle  # tests/oracle.py: Jinja2 configured as transformers configures it
except ImportError as missing:
    sys.exit(f"the benchmark needs Jinja2 ({missing}): pip install -e '.[bench]'")

import jinjamark

try:
    import minijinja
except ImportError:
    minijinja = None


@dataclass(frozen=True)
class Engine:
    """fresh() -> environment; compile(env, source) -> what renders (for jinjamark a ChatTemplate);
    render(compiled, fixture) -> str; from_string(env, source): the engine's own compile step only."""

    name: str
    fresh: Callable[[], Any]
    compile: Callable[[Any, str], Any]
    render: Callable[[Any, dict], str]
    from_string: Callable[[Any, str], Any]


def corpus() -> Path:
    for folder in (ROOT / "tests" / "corpus", ROOT.parent / "shared" / "corpus"):
        if (folder / "templates").is_dir():
            return folder
    sys.exit("no corpus found in tests/corpus or ../shared/corpus")


def load_corpus(quick: bool) -> tuple[list[Path], list[dict]]:
    """The corpus templates and conversations; `quick`: every 8th template, every 4th conversation."""
    folder = corpus()
    templates = sorted((folder / "templates").glob("*.jinja"))
    conversations = []
    for path in sorted((folder / "conversations").glob("*.json")):
        fixture = json.loads(path.read_text(encoding="utf-8"))
        fixture["_name"] = path.stem
        conversations.append(fixture)
    if quick:
        templates, conversations = templates[::8], conversations[::4]
    return templates, conversations


# ---------------------------------------------------------------------------- contexts

_CLEANED: dict[int, tuple[dict, dict]] = {}


def context(fixture: dict) -> dict:
    """The fixture cleaned as transformers 5's apply_chat_template cleans it (as ChatTemplate.render
    does, whose time includes it), made once per fixture so Jinja2's and minijinja's do not."""
    found = _CLEANED.get(id(fixture))
    if found is None or found[0] is not fixture:
        kwargs = fixture.get("kwargs") or {}
        # ChatTemplate.context leaves out what its template does not read: this one reads every
        # name the fixture gives, so that Jinja2 and minijinja get the whole context.
        reads_all = "".join(f"{{{{ {name} }}}}" for name in ["messages", "tools", "documents", *kwargs])
        cleaner = jinjamark.ChatTemplate(reads_all, special_tokens=dict(oracle.SPECIAL_TOKENS))
        cleaned = cleaner.context(fixture["messages"], fixture.get("tools"),
                                  fixture.get("documents"), True, **kwargs)
        found = _CLEANED[id(fixture)] = (fixture, cleaned)  # the fixture kept: its id stays its own
    return found[1]


# ---------------------------------------------------------------------------- jinjamark

def jinjamark_compile(env, source: str):
    return jinjamark.ChatTemplate(source, special_tokens=dict(oracle.SPECIAL_TOKENS),
                                  now=lambda: oracle.FIXED_NOW, environment=env)


def jinjamark_render(template, fixture: dict) -> str:
    return template.render(fixture["messages"], tools=fixture.get("tools"),
                           documents=fixture.get("documents"), add_generation_prompt=True,
                           **(fixture.get("kwargs") or {}))


def jinjamark_parts(template, fixture: dict, origins: bool = False) -> list:
    return template.render_parts(fixture["messages"], tools=fixture.get("tools"),
                                 documents=fixture.get("documents"), add_generation_prompt=True,
                                 origins=origins, **(fixture.get("kwargs") or {}))


# ---------------------------------------------------------------------------- minijinja

def minijinja_environment():
    def raise_exception(message):
        raise minijinja.TemplateError(message)

    return minijinja.Environment(
        trim_blocks=True, lstrip_blocks=True, auto_escape_callback=lambda name: False,
        filters={"tojson": oracle.tojson},
        globals={"raise_exception": raise_exception,
                 "strftime_now": lambda fmt: oracle.FIXED_NOW.strftime(fmt)})


def minijinja_compile(env, source: str):
    env.add_template("chat", source)
    return env


def minijinja_render(env, fixture: dict) -> str:
    return env.render_template("chat", **context(fixture))


# ---------------------------------------------------------------------------- the table

ENGINES: dict[str, Engine] = {
    "jinjamark": Engine("jinjamark", jinjamark.chat_environment, jinjamark_compile, jinjamark_render,
                        lambda env, source: env.from_string(source)),
    "jinja2": Engine("jinja2", oracle.environment, lambda env, source: env.from_string(source),
                     lambda template, fixture: template.render(**context(fixture)),
                     lambda env, source: env.from_string(source)),
}
if minijinja is not None:
    ENGINES["minijinja"] = Engine("minijinja", minijinja_environment, minijinja_compile,
                                  minijinja_render, minijinja_compile)

OTHERS = [name for name in ENGINES if name != "jinjamark"]


def attempt(fn: Callable[[], Any]) -> tuple[Optional[Any], Optional[BaseException]]:
    try:
        return fn(), None
    except Exception as error:  # noqa: BLE001 - any failure makes the case unsupported
        return None, error
