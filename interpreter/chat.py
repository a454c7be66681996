"""The transformers profile: templates rendered as `apply_chat_template(..., tokenize=False)` does.

That is Jinja2's ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True) with
loopcontrols and a transparent `{% generation %}`, `tojson` as `json.dumps` with transformers'
keyword arguments, and the globals `raise_exception` and `strftime_now`.
"""
from __future__ import annotations

import threading
from datetime import datetime
from typing import Any, Callable, Optional

from .environment import Environment
from .hostcalls import keeps_marks
from .errors import TemplateError
from . import jsonmarks
from .output import Part
from .values import mark_input

PROFILE_EXTENSIONS = ("loopcontrols", "generation")


@keeps_marks
def tojson(value: Any, ensure_ascii: bool = False, indent: Any = None, separators: Any = None,
           sort_keys: bool = False) -> str:
    """transformers' tojson: json.dumps with exactly these keyword arguments."""
    return jsonmarks.dumps(value, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                           sort_keys=sort_keys)


def raise_exception(message: Any) -> None:
    raise TemplateError(str(message))


def strftime_now(fmt: str) -> str:
    return datetime.now().strftime(fmt)


def chat_environment(trim_blocks: bool = True, lstrip_blocks: bool = True, **options: Any) -> Environment:
    """An Environment with the transformers profile."""
    extensions = tuple(options.pop("extensions", ())) + PROFILE_EXTENSIONS
    options.setdefault("immutable", True)
    env = Environment(trim_blocks=trim_blocks, lstrip_blocks=lstrip_blocks, extensions=extensions,
                      **options)
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


_shared: dict[tuple, Environment] = {}
_shared_lock = threading.Lock()


def _shared_environment() -> Environment:
    """One profile environment per process, so that templates are parsed once."""
    with _shared_lock:
        env = _shared.get(())
        if env is None:
            env = _shared[()] = chat_environment()
        return env


class ChatTemplate:
    """A model's chat template, rendered like transformers' `apply_chat_template`.

    `render_parts` marks every string of `messages`, `tools`, `documents` and extra keyword
    arguments as input; special tokens and template text are never input.
    """

    def __init__(self, source: str, special_tokens: Optional[dict[str, Any]] = None,
                 now: Optional[Callable[[], datetime]] = None,
                 environment: Optional[Environment] = None, name: Optional[str] = None) -> None:
        self.environment = environment or _shared_environment()
        self.template = self.environment.from_string(source, name)
        self.special_tokens = dict(special_tokens or {})
        self.overlay: dict[str, Any] = {}
        if now is not None:
            self.overlay["strftime_now"] = lambda fmt: now().strftime(fmt)

    def context(self, messages: Any, tools: Any = None, documents: Any = None,
                add_generation_prompt: bool = False, marked: bool = False, **kwargs: Any) -> dict:
        """Special tokens first, then kwargs, then the conversation, as transformers builds it."""
        context = dict(self.special_tokens)
        if marked:  # the values; variable names are the host program's, not input
            # Data the template cannot read cannot reach its output: it is left out rather
            # than copied to be marked (so no unmarked input is ever in the context).
            reads = self.template.names_read
            for name, value in kwargs.items():
                if reads is None or name in reads:
                    context[name] = mark_input(value)
            # spelled out, not a loop over a dict: this runs once per render_parts
            if reads is None or "messages" in reads:
                context["messages"] = mark_input(messages)
            if reads is None or "tools" in reads:
                context["tools"] = None if tools is None else mark_input(tools)
            if reads is None or "documents" in reads:
                context["documents"] = None if documents is None else mark_input(documents)
        else:
            context.update(kwargs)
            context["messages"] = messages
            context["tools"] = tools
            context["documents"] = documents
        context["add_generation_prompt"] = add_generation_prompt
        return context

    def render(self, messages: Any, tools: Any = None, documents: Any = None,
               add_generation_prompt: bool = False, **kwargs: Any) -> str:
        ctx = self.context(messages, tools, documents, add_generation_prompt, **kwargs)
        return self.template.render_with(ctx, self.overlay)

    def encode(self, messages: Any, tokenizer: Any, tools: Any = None, documents: Any = None,
               add_generation_prompt: bool = False, **kwargs: Any) -> list[int]:
        """Token ids of the rendered prompt; special tokens are parsed in template text only."""
        from .tokenizers import encode
        parts = self.render_parts(messages, tools, documents, add_generation_prompt, **kwargs)
        return encode(parts, tokenizer)

    def render_parts(self, messages: Any, tools: Any = None, documents: Any = None,
                     add_generation_prompt: bool = False, **kwargs: Any) -> list[Part]:
        ctx = self.context(messages, tools, documents, add_generation_prompt, marked=True, **kwargs)
        return self.template.render_parts_with(ctx, self.overlay)
