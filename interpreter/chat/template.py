"""ChatTemplate: a model's chat template rendered as transformers 5's `apply_chat_template` renders it.

`render` gives the text of `apply_chat_template(..., tokenize=False)`; `render_parts` the same text
as parts, every character that came from the conversation, tools, documents or kwargs marked as
input. Loading is in `loading`, the cleaning of the caller's data in `normalize`, the prefill cut in
`continuation`.
"""
from __future__ import annotations

import functools
import os
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Optional, Sequence, Union

from ..environment import Environment, Template
from ..evaluation.output import Part, to_parts
from . import continuation
from .loading import (Templates, load_folder, select_template, special_tokens_of_tokenizer,
                      templates_of_tokenizer, token_text)
from .normalize import (TRUSTED_ROLES, check_documents, check_tools, marked, normalize_messages, plain,
                        marked_measured, plain_measured,
                        split_batch, start_conversation, template_messages, walk_conversation)
from .profile import shared_environment

if TYPE_CHECKING:  # for the annotations only: importing datetime costs a first call ~1.5 ms
    from datetime import datetime

    from .fitting import FitResult

# apply_chat_template's own parameters: never template variables here.
CONSUMED = ("tokenize", "padding", "truncation", "max_length", "return_tensors", "return_dict",
            "return_assistant_tokens_mask", "tokenizer_kwargs", "sanitize_control_tokens",
            "chat_template")
INCOMPATIBLE = ("continue_final_message and add_generation_prompt are not compatible. Use "
                "continue_final_message when you want the model to continue the final message, and "
                "add_generation_prompt when you want to add a header that will prompt it to start a "
                "new assistant message instead.")

Rendered = Union[str, list[Part]]


class ChatTemplate:
    """A model's chat template (or its named templates), rendered like `apply_chat_template`.

    `source` is a template, or a dict of named templates (`default`, `tool_use`, `rag`, ...) chosen
    per render as transformers chooses (`template_name` fixes the choice). `special_tokens` are
    the tokenizer's `special_tokens_map` (AddedToken dicts are taken by their content): prefer
    `ChatTemplate.from_pretrained`, which reads them from the model, so that no BOS goes missing.
    `trusted_roles`: the role names `render_parts` takes as template text (the chat APIs' own, see
    `normalize.TRUSTED_ROLES`); pass `()` to mark every role as input. `trusted_fields`: more
    data the host wrote itself, whose control tokens count: `(role, field)` pairs for the
    messages (`("system", "content")`: a system prompt the host wrote), or the names of other
    variables (`"tools"`, a keyword argument). Everything else the caller passes is input.
    """

    def __init__(self, source: Union[str, Mapping[str, str], None],
                 special_tokens: Optional[Mapping[str, Any]] = None,
                 now: Optional[Callable[[], datetime]] = None,
                 environment: Optional[Environment] = None, name: Optional[str] = None,
                 template_name: Optional[str] = None,
                 trusted_roles: Iterable[str] = TRUSTED_ROLES,
                 trusted_fields: Iterable[Any] = ()) -> None:
        self.environment = environment or shared_environment()
        self.templates: Templates = dict(source) if isinstance(source, Mapping) else source
        self.template_name = template_name
        self.name = name
        self.trusted_roles = frozenset(trusted_roles)
        self.trusted_fields = frozenset(trusted_fields)
        # as special_tokens_map: a token that is None is not there (undefined, not "None")
        self.special_tokens = {key: _token(value) for key, value in (special_tokens or {}).items()
                               if value is not None}
        self.overlay: dict[str, Any] = {}
        self._compiled: dict[str, Template] = {}
        self.now = now  # kept as given: it pickles if the caller's clock does (a lambda does not)
        if now is not None:
            self.overlay["strftime_now"] = functools.partial(_strftime_on, now)
        # A single template is compiled now, so that a broken one fails here rather than at the
        # first render; named templates when first used, as transformers compiles them (a broken
        # `rag` template does not stop a model's `default`).
        if isinstance(self.templates, str):
            self.compiled(self.templates)

    def __getstate__(self) -> dict:
        """The sources, tokens and options, no compiled template; the shared profile
        environment as None, so that a worker renders with its own (one parse per process)."""
        state = {key: value for key, value in self.__dict__.items() if key != "_compiled"}
        if state["environment"] is shared_environment():
            state["environment"] = None
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        if self.environment is None:
            self.environment = shared_environment()
        self._compiled = {}
        if isinstance(self.templates, str):  # compiled now, as the constructor compiles it
            self.compiled(self.templates)

    @classmethod
    def from_pretrained(cls, path_or_tokenizer: Any, name: Optional[str] = None,
                        **options: Any) -> "ChatTemplate":
        """The template(s) and special tokens of a model folder (as transformers saves it) or of a
        transformers tokenizer. `name` fixes one of the model's named templates; by default each
        render chooses (`tool_use` when tools are given, else `default`). `options` are the
        constructor's (`special_tokens` are added to the model's, overriding them)."""
        if isinstance(path_or_tokenizer, (str, os.PathLike)):
            templates, tokens = load_folder(path_or_tokenizer)
        else:
            templates = templates_of_tokenizer(path_or_tokenizer)
            tokens = special_tokens_of_tokenizer(path_or_tokenizer)
        tokens.update(options.pop("special_tokens", None) or {})
        if name is not None:
            names = sorted(templates) if isinstance(templates, dict) else ["default"] if templates else []
            if name not in names:
                raise ValueError(f"this model has no chat template named {name!r}; it has {names}")
            if not isinstance(templates, dict):
                name = None  # a single template is the model's default
        return cls(templates, special_tokens=tokens, template_name=name, **options)

    def compiled(self, source: str) -> Template:
        """The compiled template of a source (the model's own are kept here; others are cached
        by the environment)."""
        template = self._compiled.get(source)
        if template is None:
            template = self.environment.from_string(source, self.name)
            if len(self._compiled) < 16:
                self._compiled[source] = template
        return template

    @property
    def template(self) -> Template:
        """The template a render without tools uses."""
        return self.compiled(select_template(self.templates, self.template_name, None))

    # ------------------------------------------------------------------------ rendering

    def render(self, conversation: Any, /, tools: Any = None, documents: Any = None,
               add_generation_prompt: Any = False, continue_final_message: Union[bool, str] = False,
               polyfill: Union[bool, Iterable[str]] = False, return_polyfills: bool = False,
               **kwargs: Any) -> Any:
        """`apply_chat_template(conversation, ..., tokenize=False)`: the text, or a list of texts
        for a batch (a list of conversations).

        `polyfill`: reshape the data for what the template cannot render (True: every polyfill,
        or a set of names of `polyfills.POLYFILLS`; see `polyfills_for`); False (the default)
        renders as transformers does. With `return_polyfills`, the result is `(text, applied)`,
        `applied` the `Polyfill`s used (a list of such lists for a batch)."""
        if (self._one_plain_call(conversation) and not continue_final_message
                and polyfill is False and not return_polyfills):
            return self._render_one(conversation, tools, documents, add_generation_prompt, kwargs, False)
        return self._apply(conversation, tools, documents, add_generation_prompt,
                           continue_final_message, kwargs, False, polyfill, return_polyfills)

    def _one_plain_call(self, conversation: Any) -> bool:
        """A conversation of dict messages (no batch) for the model's one template."""
        return (type(conversation) is list and bool(conversation) and type(conversation[0]) is dict
                and type(self.templates) is str and self.template_name is None)

    def _render_one(self, messages: list, tools: Any, documents: Any, add_generation_prompt: Any,
                    kwargs: dict, parts: bool) -> Any:
        """`render` of the commonest call (one conversation of dicts, one template, no options
        beyond tools, documents, the generation prompt and template variables): render_batch's
        steps for it, without the batch's bookkeeping around them."""
        if kwargs:
            refuse_consumed(kwargs)
            if "messages" in kwargs:  # as render_batch (transformers' render(messages=..., **kwargs))
                raise TypeError("render() got multiple values for keyword argument 'messages'")
        template = self._compiled.get(self.templates)
        if template is None:
            template = self.compiled(self.templates)  # a syntax error first, as transformers
        # transformers' order: the messages normalised, then the tools and documents checked,
        # then the messages walked; a flat conversation (the commonest) is all done in the
        # first step, without the per-message walk (nor a call of each step that has no work).
        reads = template.names_read
        started = start_conversation(messages, parts, self.trusted_roles,
                                     reads is None or "messages" in reads)
        if tools is not None:
            tools = check_tools(tools)
        if documents is not None:
            documents = check_documents(documents)
        printed = {} if template.environment.immutable else None  # sizes measured as it cleans
        context = template_context(self, template, started[0] if started[1] is None
                                   else walk_conversation(*started), tools, documents,
                                   add_generation_prompt, kwargs, parts, printed=printed)
        pieces = template._render(context, self.overlay, printed=printed)  # the context is ours
        return to_parts(pieces) if parts else "".join(pieces)

    def render_parts(self, conversation: Any, /, tools: Any = None, documents: Any = None,
                     add_generation_prompt: Any = False, continue_final_message: Union[bool, str] = False,
                     polyfill: Union[bool, Iterable[str]] = False, return_polyfills: bool = False,
                     origins: bool = False, **kwargs: Any) -> Any:
        """As `render`, as parts: what came from the arguments (and kwargs) is input (also
        after a polyfill moved it; the words a polyfill adds are template text).

        `origins`: `OriginPart`s instead, which also say which message and field each input
        character came from, which message (turn) template text was written for and whether
        it is the generation prompt (chat/origins.py; docs/chat.md "Origins")."""
        if origins:
            if polyfill is not False or return_polyfills:
                raise TypeError("origins=True does not combine with polyfill= yet: render the "
                                "polyfilled conversation's origins without it")
            from .origins import render_parts as origin_parts
            return origin_parts(self, conversation, tools, documents, add_generation_prompt,
                                continue_final_message, kwargs)
        if (self._one_plain_call(conversation) and not continue_final_message
                and polyfill is False and not return_polyfills):
            return self._render_one(conversation, tools, documents, add_generation_prompt, kwargs, True)
        return self._apply(conversation, tools, documents, add_generation_prompt,
                           continue_final_message, kwargs, True, polyfill, return_polyfills)

    def polyfills_for(self, conversation: Any, tools: Any = None,
                      polyfill: Union[bool, Iterable[str]] = True) -> list:
        """The `Polyfill`s (name and reason) a render of this conversation (one, not a batch)
        with `polyfill=` would apply to the template chosen for `tools`."""
        from .polyfills import Polyfiller, selected_polyfills
        source = select_template(self.templates, self.template_name, tools)
        filler = Polyfiller(self, source, selected_polyfills(polyfill))
        walked = check_tools(tools)
        messages = template_messages(normalize_messages(conversation), plain)
        return filler.apply(messages, None if walked is None else plain(walked, 0), plain)[1]

    def check_append_only(self, messages: Any, /, tools: Any = None, documents: Any = None,
                          tokenizer: Any = None, add_generation_prompt: bool = False,
                          **kwargs: Any) -> Any:
        """Whether the prompt a server renders for each turn k, `render(messages[:k],
        add_generation_prompt=<message k is the assistant's>)`, is a prefix of the whole
        conversation's render (with a `tokenizer`, its token ids too): an `AppendOnlyReport`
        whose `breaks` name the turn, offset, message, template line and cause of each one
        that is not (chat/prefixes.py; docs/serving.md)."""
        from .prefixes import check_append_only
        return check_append_only(self, messages, tools, documents, tokenizer,
                                 add_generation_prompt, **kwargs)

    def session(self, tokenizer: Any, tools: Any = None, documents: Any = None,
                **kwargs: Any) -> Any:
        """An `EncodingSession` for one conversation a server receives whole on every request:
        `session.encode(messages, add_generation_prompt=True)` gives `encode`'s ids and how many
        lead with the previous request's (`reused`), tokenizing only the new text
        (chat/session.py; docs/serving.md)."""
        from .session import EncodingSession
        return EncodingSession(self, tokenizer, tools, documents, **kwargs)

    def encode(self, messages: Any, tokenizer: Any, tools: Any = None, documents: Any = None,
               add_generation_prompt: bool = False, *, return_assistant_tokens_mask: bool = False,
               assistant_mask_source: str = "auto", assistant_mask_options: Any = None,
               **kwargs: Any) -> Any:
        """Token ids of the rendered prompt; control tokens (special tokens, and the added tokens
        the template writes) are parsed in template text only.

        With `return_assistant_tokens_mask`, `(ids, mask)`: 1 for each token of an assistant turn,
        from the `{% generation %}` tags or, on a template without them (`"auto"`), from origins
        (`"origins"` always; chat/masks.py; `assistant_mask_options` a `MaskOptions` or its dict),
        as `jinjamark.hf.apply_chat_template` gives them."""
        if return_assistant_tokens_mask:
            return self._encode_masked(messages, tokenizer, tools, documents, add_generation_prompt,
                                       assistant_mask_source, assistant_mask_options, kwargs)
        from .tokenization import encode
        parts = self.render_parts(messages, tools, documents, add_generation_prompt, **kwargs)
        source = select_template(self.templates, self.template_name, tools)
        return encode(parts, tokenizer, template=self.compiled(source))

    def fit(self, messages: Any, max_tokens: int, tokenizer: Any, tools: Any = None,
            documents: Any = None, mode: str = "serve", **kwargs: Any) -> FitResult:
        """The conversation cut to `max_tokens`: the leading system message kept, and the last
        user message and what follows it (`mode="serve"`, counted with the generation prompt)
        or the final assistant turn and what it answers (`mode="train"`); whole exchanges (a user
        message and all up to the next: tool calls stay with their results) dropped oldest first,
        as few as fit. A `fitting.FitResult` (`.messages`, `.dropped` indices, `.n_tokens` as
        `encode` counts them); a `TokenBudgetError` (a ValueError) when what must be kept does
        not fit. One render estimates every candidate; a few exact encodes check (chat/fitting.py)."""
        from .fitting import fit
        return fit(self, messages, max_tokens, tokenizer, tools, documents, mode, **kwargs)

    def _encode_masked(self, messages: Any, tokenizer: Any, tools: Any, documents: Any,
                       add_generation_prompt: bool, source: str, options: Any,
                       kwargs: dict) -> tuple[list[int], list[int]]:
        from .encoding import InputRuns, encode_runs
        from .masks import assistant_mask
        from .origins import masked_render
        from .tokenization import control_tokens
        parts, spans = masked_render(self, messages, tools, documents, add_generation_prompt, False,
                                     source, options, **kwargs)
        template = self.compiled(select_template(self.templates, self.template_name, tools))
        encoded = encode_runs([InputRuns(parts)], tokenizer, control_tokens(tokenizer, template))[0]
        if encoded.offsets is None:
            raise ValueError("an assistant mask needs a tokenizer that gives character offsets")
        return encoded.ids, assistant_mask(encoded.offsets, spans)

    def _apply(self, conversation: Any, tools: Any, documents: Any, add_generation_prompt: Any,
               continue_final_message: Union[bool, str], kwargs: dict, marked: bool,
               polyfill: Union[bool, Iterable[str]] = False, return_polyfills: bool = False) -> Any:
        refuse_consumed(kwargs)
        if isinstance(self.templates, dict) or self.templates is None:  # transformers' first error
            select_template(self.templates, self.template_name, tools)
        conversations, batched = split_batch(conversation)
        applied: list[list] = []
        results = self.render_batch(
            conversations, tools=tools, documents=documents,
            add_generation_prompt=add_generation_prompt,
            continue_final_message=continue_final_message, marked=marked, kwargs=kwargs,
            polyfill=polyfill, applied=applied)
        rendered = [result for result, _ in results]
        if return_polyfills:
            return (rendered, applied) if batched else (rendered[0], applied[0])
        return rendered if batched else rendered[0]

    def render_batch(self, conversations: Sequence[Any], *, tools: Any = None, documents: Any = None,
                     add_generation_prompt: Any = False,
                     continue_final_message: Union[bool, str] = False,
                     chat_template: Optional[str] = None, marked: bool = True,
                     generation_spans: bool = False, kwargs: Optional[Mapping[str, Any]] = None,
                     polyfill: Union[bool, Iterable[str]] = False, applied: Optional[list] = None,
                     ) -> list[tuple[Rendered, Optional[list[tuple[int, int]]]]]:
        """Render each conversation of a batch: [(parts if `marked` else text, spans or None)].

        The lower level of `render`/`render_parts` for `jinjamark.hf.apply_chat_template`:
        `conversations` is already a batch (see `normalize.split_batch`); `chat_template` is a
        template name or source (as transformers' `get_chat_template` takes it; None: the model's
        choice for `tools`); with `generation_spans` the second item lists the (start, end)
        character offsets of every `{% generation %}` body's output. `polyfill` as in `render`;
        `applied`, when given, gets one list of the applied `Polyfill`s per conversation."""
        kwargs = dict(kwargs or {})
        if "messages" in kwargs:  # as transformers' render(messages=..., **kwargs)
            raise TypeError("render() got multiple values for keyword argument 'messages'")
        source = select_template(self.templates, chat_template if chat_template is not None
                                 else self.template_name, tools)
        chats = [normalize_messages(conversation) for conversation in conversations]
        if continue_final_message and add_generation_prompt:
            raise ValueError(INCOMPATIBLE)
        template = self.compiled(source)  # a syntax error before the arguments', as transformers
        tools = check_tools(tools)
        documents = check_documents(documents)
        render = _Render(self, template, source, tools, documents, add_generation_prompt, kwargs,
                         generation_spans)
        if polyfill is not False:
            from .polyfills import Polyfiller, selected_polyfills
            selected = selected_polyfills(polyfill)
            render.polyfiller = Polyfiller(self, source, selected) if selected else None
        results = [render.one(chat, continue_final_message, marked) for chat in chats]
        if applied is not None:
            applied.extend(render.applied)
        return results

    def context(self, messages: Any, tools: Any = None, documents: Any = None,
                add_generation_prompt: Any = False, marked: bool = False, **kwargs: Any) -> dict:
        """The context one conversation is rendered with: special tokens first, then kwargs, then
        the conversation, as transformers builds it; cleaned (and marked) as `render` does."""
        render = _Render(self, self.template, "", check_tools(tools), check_documents(documents),
                         add_generation_prompt, kwargs, False)
        return render.context(normalize_messages(messages), marked)


def template_context(chat: ChatTemplate, template: Template, walked: Optional[list], tools: Any,
                     documents: Any, add_generation_prompt: Any, kwargs: Mapping[str, Any],
                     marked_data: bool, withheld: frozenset = frozenset(),
                     printed: Optional[dict] = None) -> dict:
    """The variables of a render: the special tokens, the template variables, the `walked`
    messages, the tools and documents walked (marked, or made plain data), the generation
    prompt; `withheld`: what the polyfills keep from the template. `printed`: the render's memo
    of printed sizes, where the walk of the tools records them (plain_measured, marked_measured)."""
    walk = marked if marked_data else plain
    # Data the template cannot read cannot reach its output: it is left out rather than
    # copied (to be marked, or made plain data).
    reads = template.names_read
    context = dict(chat.special_tokens)
    for name, value in kwargs.items():
        if reads is None or name in reads:
            context[name] = walk(value, 1)
    if reads is None or "messages" in reads:
        context["messages"] = walked
    if reads is None or "tools" in reads:  # (messages first: their polyfills may withhold tools)
        context["tools"] = None if tools is None or "tools" in withheld else (
            walk(tools, 0) if printed is None else
            marked_measured(tools, printed) if marked_data else plain_measured(tools, printed))
    if reads is None or "documents" in reads:
        context["documents"] = None if documents is None else walk(documents, 0)
    # a value from a file is input; a bool is the caller's
    context["add_generation_prompt"] = add_generation_prompt if type(add_generation_prompt) is bool \
        else walk(add_generation_prompt, 0)
    if marked_data and chat.trusted_fields:
        trust(context, chat.trusted_fields)
    return context


class _Render:
    """One render call's shared data, rendering the conversations of a batch one by one."""

    def __init__(self, chat: ChatTemplate, template: Template, source: str, tools: Any,
                 documents: Any, add_generation_prompt: Any, kwargs: Mapping[str, Any],
                 generation_spans: bool) -> None:
        self.chat, self.template, self.source = chat, template, source
        self.tools, self.documents, self.kwargs = tools, documents, kwargs
        self.add_generation_prompt = add_generation_prompt
        self.spans = generation_spans
        self.polyfiller: Any = None  # a polyfills.Polyfiller when the render asked for polyfills
        self.applied: list[list] = []  # the polyfills applied, per conversation
        # context values the polyfills of the messages last made keep from the template (`tools`
        # for one that fails on them); the same for every conversation, as the tools are
        self.withheld: frozenset[str] = frozenset()

    def messages(self, messages: list, walk: Callable[[Any, int], Any], first: bool = True) -> list:
        """The messages as the template sees them: walked, then polyfilled when asked (the first
        walk of a conversation records what applied)."""
        walked = template_messages(messages, walk, self.chat.trusted_roles)
        if self.polyfiller is None:
            if first:
                self.applied.append([])
            return walked
        tools = None if self.tools is None else walk(self.tools, 0)
        walked, applied = self.polyfiller.apply(walked, tools, walk)
        self.withheld = frozenset(name for polyfill in applied for name in polyfill.withheld)
        if first:
            self.applied.append(applied)
        return walked

    def context(self, messages: list, marked_data: bool, walked: Optional[list] = None) -> dict:
        reads = self.template.names_read
        if walked is None and (reads is None or "messages" in reads):
            walked = self.messages(messages, marked if marked_data else plain)
        return template_context(self.chat, self.template, walked, self.tools, self.documents,
                                self.add_generation_prompt, self.kwargs, marked_data, self.withheld)

    def run(self, context: dict, parts: bool) -> tuple[Rendered, Optional[list]]:
        spans: Optional[list] = [] if self.spans else None
        extra = {} if spans is None else {"generation_spans": spans}
        if parts:
            return self.template.render_parts_with(context, self.chat.overlay, **extra), spans
        return self.template.render_with(context, self.chat.overlay, **extra), spans

    def one(self, messages: list, continue_final_message: Union[bool, str],
            marked_data: bool) -> tuple[Rendered, Optional[list]]:
        recorded = len(self.applied)
        result = self._one(messages, continue_final_message, marked_data)
        if len(self.applied) == recorded:  # a template that never reads `messages`
            self.applied.append([])
        return result

    def _one(self, messages: list, continue_final_message: Union[bool, str],
             marked_data: bool) -> tuple[Rendered, Optional[list]]:
        if not continue_final_message:
            return self.run(self.context(messages, marked_data), marked_data)
        # Find where the final message ends: render with only it marked.
        walked = self.messages(messages, plain)
        cont = continuation.prepare(walked, continue_final_message, self.source)
        tagged = not cont.final.strip()
        continuation.mark_targets(cont, tagged)
        located, spans = self.run(self.context(messages, False, walked), True)
        where = continuation.locate(located, cont, tagged)
        if marked_data:
            walked = self.messages(messages, marked, first=False)
            if tagged:
                continuation.mark_targets(
                    continuation.prepare(walked, continue_final_message, self.source), True)
            located, spans = self.run(self.context(messages, True, walked), True)
        result = continuation.cut(located, where, cont, tagged)
        if spans is not None:
            spans = [(a, min(b, where.end)) for a, b in spans if a < where.end]
        if marked_data:
            return result, spans
        return "".join(p.text for p in result), spans


_CONSUMED = frozenset(CONSUMED)


def trust(context: dict, trusted: frozenset) -> None:
    """The fields and variables in `trusted` (see ChatTemplate) made template text again."""
    from ..values.marks import unmarked
    fields: dict = {}
    for entry in trusted:
        if isinstance(entry, tuple):
            fields.setdefault(entry[0], []).append(entry[1])
        elif entry in context:
            context[entry] = unmarked(context[entry])
    for message in context.get("messages") or ():
        role = message.get("role") if type(message) is dict else None
        for field in fields.get(str(role) if role is not None else None, ()):
            if field in message:
                message[field] = unmarked(message[field])


def refuse_consumed(kwargs: Mapping[str, Any]) -> None:
    """apply_chat_template's own parameters are not template variables: say where they belong."""
    if not kwargs or _CONSUMED.isdisjoint(kwargs):
        return
    for name in CONSUMED:
        if name in kwargs:
            raise TypeError(f"{name!r} is a parameter of apply_chat_template, not a template variable: "
                            "use jinjamark.hf.apply_chat_template(tokenizer, conversation, ...) for it")


def _strftime_on(now: Callable[[], datetime], fmt: str) -> str:
    """`strftime_now` on the caller's clock: a module function, so that it pickles by reference."""
    return now().strftime(fmt)


def _token(value: Any) -> Any:
    text = token_text(value)
    return value if text is None else text
