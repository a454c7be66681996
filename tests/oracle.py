"""The ground truth: Jinja2 configured the way Hugging Face transformers renders chat templates.

Test-only (jinjamark never imports jinja2). ImmutableSandboxedEnvironment(trim_blocks=True,
lstrip_blocks=True) with loopcontrols and a transparent {% generation %} tag; tojson is json.dumps
with transformers' keyword arguments; raise_exception and strftime_now are globals, the clock pinned
so that outputs are reproducible.
"""
from __future__ import annotations

import json
from datetime import datetime
from functools import lru_cache

import jinja2
from jinja2 import nodes
from jinja2.ext import Extension
from jinja2.sandbox import ImmutableSandboxedEnvironment

FIXED_NOW = datetime(2026, 3, 14, 15, 9, 26)
SPECIAL_TOKENS = {"bos_token": "<s>", "eos_token": "</s>"}


class Generation(Extension):
    """`{% generation %}...{% endgeneration %}` renders its body unchanged."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return nodes.CallBlock(self.call_method("_render", []), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                      sort_keys=sort_keys)


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def environment(now: datetime = FIXED_NOW, trim_blocks: bool = True,
                lstrip_blocks: bool = True) -> jinja2.Environment:
    env = ImmutableSandboxedEnvironment(trim_blocks=trim_blocks, lstrip_blocks=lstrip_blocks,
                                       extensions=[Generation, "jinja2.ext.loopcontrols"])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: now.strftime(fmt)
    return env


_ENV = environment()


@lru_cache(maxsize=1024)
def compiled(source: str) -> jinja2.Template:
    return _ENV.from_string(source)


def chat_context(fixture: dict, add_generation_prompt: bool, **kwargs) -> dict:
    """apply_chat_template's context: special tokens, then caller kwargs, then the conversation."""
    ctx = dict(SPECIAL_TOKENS)
    ctx.update(kwargs)
    ctx.update(messages=fixture["messages"], tools=fixture.get("tools"),
               documents=fixture.get("documents"), add_generation_prompt=add_generation_prompt)
    return ctx


def render_chat(source: str, fixture: dict, add_generation_prompt: bool, **kwargs) -> str:
    """Render like apply_chat_template(tokenize=False)."""
    return compiled(source).render(**chat_context(fixture, add_generation_prompt, **kwargs))
