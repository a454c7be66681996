"""ChatTemplate: a model's chat template rendered as transformers' `apply_chat_template` renders it."""
from __future__ import annotations

from datetime import datetime
from typing import Any, Callable, Optional

from ..environment import Environment
from ..output import Part
from ..values import mark_input
from .profile import shared_environment


class ChatTemplate:
    """A model's chat template, rendered like transformers' `apply_chat_template`.

    `render_parts` marks every string of `messages`, `tools`, `documents` and extra keyword
    arguments as input; special tokens and template text are never input.
    """

    def __init__(self, source: str, special_tokens: Optional[dict[str, Any]] = None,
                 now: Optional[Callable[[], datetime]] = None,
                 environment: Optional[Environment] = None, name: Optional[str] = None) -> None:
        self.environment = environment or shared_environment()
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
        from .tokenization import encode
        parts = self.render_parts(messages, tools, documents, add_generation_prompt, **kwargs)
        return encode(parts, tokenizer)

    def render_parts(self, messages: Any, tools: Any = None, documents: Any = None,
                     add_generation_prompt: bool = False, **kwargs: Any) -> list[Part]:
        ctx = self.context(messages, tools, documents, add_generation_prompt, marked=True, **kwargs)
        return self.template.render_parts_with(ctx, self.overlay)
