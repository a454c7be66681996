"""`ChatTemplate.render_parts(origins=True)`: the render of `apply_chat_template`, each character
with its origin.

The data is cleaned as for any render (normalize.py, the plain walk), then marked with origins
(values/sourced.py): message `i`'s fields as `Source(i, 'content')`, `Source(i,
'tool_calls[0].function.arguments')`; tools, documents and keyword arguments under their names
(`Source(None, 'tools[0].function.name')`). A role the chat APIs define stays template text, as in
every `render_parts`. The template runs on the origin render (evaluation/origins.py), which
attributes template text to the turn a loop over the messages was at and to the generation
prompt. The text is the same as `render`'s.
"""
from __future__ import annotations

from typing import Any, Optional, Union

from ..evaluation import origins as engine
from ..evaluation.origins import OriginPart
from ..values.marks import Mixed, mark
from ..values.sources import Source
from ..values.sourced import source_of, traced
from .loading import select_template
from .normalize import REASONING_FIELDS, check_documents, check_tools, normalize_messages, plain, split_batch
# template.py imports this module only inside its methods: it is loaded whole by then
from .template import ChatTemplate, _Render, refuse_consumed, trust


def render_runs(chat: "ChatTemplate", messages: Any, tools: Any = None, documents: Any = None,
                add_generation_prompt: Any = False, template_name: Optional[str] = None,
                _parts: bool = False, **kwargs: Any) -> tuple[list[engine.Run], list[dict]]:
    """One conversation rendered with origins: the runs (`_parts`: the origin parts), and the
    messages as normalised (so that run `turn`s and `Source.message`s index them)."""
    refuse_consumed(kwargs)
    if "messages" in kwargs:
        raise TypeError("render() got multiple values for keyword argument 'messages'")
    source = select_template(chat.templates, template_name if template_name is not None
                             else chat.template_name, tools)
    traced_messages = _flat_conversation(messages, chat.trusted_roles)
    # a flat conversation is its own normalised and walked form (normalize.flat_messages)
    normalised = list(messages) if traced_messages is not None else normalize_messages(messages)
    template = chat.compiled(source)
    render = _Render(chat, template, source, check_tools(tools), check_documents(documents),
                     add_generation_prompt, kwargs, False)
    walked = normalised if traced_messages is not None else render.messages(normalised, plain)
    context = render.context(normalised, False, walked)
    if traced_messages is None:
        traced_messages = [_message(m, given, i, chat.trusted_roles)
                           for i, (m, given) in enumerate(zip(walked, normalised))]
    if "messages" in context:
        context["messages"] = traced_messages
    for name in kwargs:
        if name in context:
            context[name] = traced(context[name], None, name)
    for name in ("tools", "documents"):
        if context.get(name) is not None:
            context[name] = traced(context[name], None, name)
    if chat.trusted_fields:
        trust(context, chat.trusted_fields)
    if type(add_generation_prompt) is not bool:
        context["add_generation_prompt"] = traced(context["add_generation_prompt"], None,
                                                  "add_generation_prompt")
    runs = engine.render(template, context, chat.overlay, traced_messages,
                         bool(add_generation_prompt), _parts)
    return runs, normalised


def _message(message: Any, given: Any, index: int, trusted_roles: frozenset) -> Any:
    """A walked message marked with origins; `given`, the message as the caller gave it: the
    reasoning transformers copies under its other names keeps the name it was given under."""
    marked = _flat(message, index, trusted_roles) if message is given else None
    if marked is not None:
        return marked
    marked = traced(message, index, "")
    if type(marked) is not dict:
        return marked
    role = message.get("role")
    if type(role) is str and role in trusted_roles:
        marked["role"] = role
    given_keys = given.keys() if isinstance(given, dict) else ()
    source = next((key for key in REASONING_FIELDS if key in given_keys), None)
    for key in REASONING_FIELDS if source is not None else ():
        if key in marked and key not in given_keys:  # a copy transformers made
            marked[key] = marked[source]
    return marked


def _flat_conversation(messages: Any, trusted_roles: frozenset) -> Optional[list]:
    """The conversation's messages marked with origins when every one is flat (`_flat`: most
    conversations), made in one pass that checks as it marks; else None."""
    if type(messages) is not list:
        return None
    out = []
    for index, message in enumerate(messages):
        marked = _flat(message, index, trusted_roles)
        if marked is None:
            return None
        out.append(marked)
    return out


def _flat(message: Any, index: int, trusted_roles: frozenset) -> Optional[dict]:
    """`traced` of a message of text fields with names for keys and no reasoning alias (most
    messages: normalising and walking give them back as they are), made at once; None for any
    other."""
    if type(message) is not dict:
        return None
    keys = _KEYS[index] if index < len(_KEYS) else _keys_at(index)
    out = {}
    for key, value in message.items():
        if type(value) is not str:
            return None
        known = keys.get(key)
        if known is None:
            if type(key) is not str or not key.isidentifier() or key in REASONING_FIELDS:
                return None
            known = _key_of(keys, index, key)
        if not value or (value in trusted_roles and key == "role"):
            out[known[0]] = value
        else:
            marked = Mixed(value)
            marked.spans = ((0, len(value), known[1]),)
            out[known[0]] = marked
    return out


# A message's keys are the same few names in every conversation: each (message, key) marked,
# and the Source of its value made, once for every render (both are immutable), up to a bound:
# _KEYS[i] holds message i's (the first _MESSAGES_KEPT messages, _KEYS_KEPT keys each).
_KEYS: list[dict[str, tuple[str, Source]]] = []
_MESSAGES_KEPT, _KEYS_KEPT = 1024, 32


def _keys_at(index: int) -> dict:
    """Message `index`'s known keys: a dict kept for later renders while under the bound."""
    if index < _MESSAGES_KEPT:
        while len(_KEYS) <= index:
            _KEYS.append({})
        return _KEYS[index]
    return {}


def _key_of(keys: dict, index: int, key: str) -> tuple[str, Source]:
    known = (mark(key, tuple.__new__(Source, (index, key, True))), source_of(index, key))
    if len(keys) < _KEYS_KEPT:
        keys[key] = known
    return known


def render_parts(chat: "ChatTemplate", conversation: Any, tools: Any, documents: Any,
                 add_generation_prompt: Any, continue_final_message: Union[bool, str],
                 kwargs: dict) -> Any:
    """`render_parts(..., origins=True)`: OriginParts (a list of such lists for a batch)."""
    conversations, batched = split_batch(conversation)
    results = []
    for messages in conversations:
        parts, _ = render_runs(chat, messages, tools, documents, add_generation_prompt,
                               _parts=True, **kwargs)
        if continue_final_message:
            parts = continued(chat, messages, parts, tools, documents, continue_final_message, kwargs)
        results.append(parts)
    return results if batched else results[0]


def continued(chat: "ChatTemplate", messages: Any, runs: list, tools: Any, documents: Any,
               continue_final_message: Union[bool, str], kwargs: dict) -> list:
    """The runs cut where `continue_final_message` cuts the text (a prefix of the whole render)."""
    text = chat.render(messages, tools, documents, continue_final_message=continue_final_message,
                       **kwargs)
    whole = "".join(run.text for run in runs)
    if not whole.startswith(text):
        raise ValueError("continue_final_message with origins=True needs the continued prompt to "
                         "be a prefix of the whole conversation's render, and this template's is not")
    return cut(runs, len(text))


def cut(runs: list, end: int) -> list:
    """The runs (or origin parts) of the first `end` characters."""
    out, pos = [], 0
    for run in runs:
        if pos >= end:
            break
        if pos + len(run.text) > end:
            run = run._replace(text=run.text[:end - pos])
        out.append(run)
        pos += len(run.text)
    return out


def generation_prompt(chat: "ChatTemplate", messages: list, before: int, tools: Any = None,
                      documents: Any = None, **kwargs: Any) -> str:
    """The text the template's generation prompt writes after `messages[:before]` (when that
    prefix is empty, after the whole conversation); '' when it writes none, or the prefix
    cannot be rendered."""
    try:
        runs, _ = render_runs(chat, messages[:before] if before else messages, tools, documents,
                              True, **kwargs)
    except Exception:  # noqa: BLE001 - a template may refuse the prefix: no prompt then
        return ""
    return "".join(run.text for run in runs[trailing(runs):])


def trailing(runs: list) -> int:
    """Where the template text after the last turn starts: the runs from there on are outside
    any turn, or the generation prompt (which some templates write without being asked)."""
    start = len(runs)
    while start and runs[start - 1].source is None and (runs[start - 1].prompt
                                                        or runs[start - 1].turn is None):
        start -= 1
    return start


def assistant_spans(chat: "ChatTemplate", messages: Any, tools: Any = None, documents: Any = None,
                    add_generation_prompt: Any = False,
                    continue_final_message: Union[bool, str] = False,
                    assistant_mask_options: Any = None, **kwargs: Any) -> tuple[list, list]:
    """One conversation rendered with origins: its runs and the character spans of its masked
    turns (chat/masks.py: TRL's convention); an EmptyMaskError when nothing is masked of a
    conversation whose masked messages carry content."""
    from .masks import EmptyMaskError, MaskOptions, has_assistant_content, origin_spans  # noqa: PLC0415
    options = assistant_mask_options if assistant_mask_options is not None else MaskOptions()
    runs, normalised = render_runs(chat, messages, tools, documents, add_generation_prompt, **kwargs)
    if continue_final_message:
        runs = continued(chat, messages, runs, tools, documents, continue_final_message, kwargs)
    # each turn's header is what the generation prompt writes after the messages before it
    # (a turn of another role than the assistant's, masked on request: all its leading text)
    prompts = {i: generation_prompt(chat, normalised, i, tools, documents, **kwargs)
               if m.get("role") == "assistant" else None
               for i, m in enumerate(normalised) if options.masked(i, m)}
    spans = origin_spans(runs, normalised, prompts, options)
    if not spans and has_assistant_content(normalised, options):
        raise EmptyMaskError(
            "the assistant mask from origins is empty although the conversation has assistant "
            "content: this template writes none of it where a turn can be found")
    return runs, spans


def masked_render(chat: "ChatTemplate", messages: Any, tools: Any = None, documents: Any = None,
                  add_generation_prompt: Any = False,
                  continue_final_message: Union[bool, str] = False,
                  assistant_mask_source: str = "auto", assistant_mask_options: Any = None,
                  **kwargs: Any) -> tuple[list, list]:
    """One conversation as (parts, spans of its assistant turns): from the `{% generation %}`
    tags (`assistant_mask_source="generation"`, or `"auto"` on a template that has them), else
    from origins. The options are named as `apply_chat_template`'s, never a template's variable."""
    from ..evaluation.output import Part  # noqa: PLC0415
    from .masks import MaskOptions, from_origins  # noqa: PLC0415
    if not from_origins(chat.compiled(select_template(chat.templates, chat.template_name, tools)),
                        assistant_mask_source):
        (parts, spans), = chat.render_batch([messages], tools=tools, documents=documents,
                                            add_generation_prompt=add_generation_prompt,
                                            continue_final_message=continue_final_message,
                                            generation_spans=True, kwargs=kwargs)
        return parts, spans
    options = assistant_mask_options
    if isinstance(options, dict):
        options = MaskOptions(**options)
    runs, spans = assistant_spans(chat, messages, tools, documents, add_generation_prompt,
                                  continue_final_message, options, **kwargs)
    return [Part(run.text, run.source is not None) for run in runs], spans


__all__ = ["OriginPart", "assistant_spans", "masked_render", "generation_prompt", "render_parts", "render_runs"]
