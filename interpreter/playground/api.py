"""What the playground's JSON API answers: renders, tokens and analyses, and errors as data.

Everything here takes the request's decoded JSON object and returns a JSON-ready dict; nothing
touches HTTP (see `server`). A user's mistake (a template that does not parse or raises, a
conversation that is not JSON) becomes a `RequestError` carrying a location in one of the page's
editors (`where`: template, conversation or kwargs), which the page marks. Templates are rendered
with the chat profile's default limits: a template pasted into the page is as hostile as one
downloaded from a hub.
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import os
from typing import Any, Iterator, Optional

from ..ext.shipped import Generation
from ..chat import ChatTemplate, chat_environment, shared_environment
from ..chat.analysis import analyze, content_format, keys_read, template_variables
from ..chat.masks import MASK_SOURCES, EmptyMaskError
from ..environment import Environment
from ..errors import LimitExceeded, TemplateError, TemplateRuntimeError
from ..grammar import ast
from ..limits import Limits
from ..evaluation.origins import OriginPart
from ..evaluation.output import Part
from .examples import Example, examples

MAX_SHOWN_CHARACTERS = 1_000_000  # of a render, sent to the page (a browser chokes on more)
MAX_SHOWN_TOKENS = 50_000


class RequestError(Exception):
    """A request the user can fix: answered with status 400 and `as_json()` as the error."""

    def __init__(self, message: str, where: Optional[str] = None, line: Optional[int] = None,
                 column: Optional[int] = None, kind: str = "RequestError", text: str = "") -> None:
        super().__init__(message)
        self.message, self.where, self.line, self.column = message, where, line, column
        self.kind, self.text = kind, text or message

    def as_json(self) -> dict:
        return {"kind": self.kind, "message": self.message, "where": self.where,
                "line": self.line, "column": self.column, "text": self.text}

    @classmethod
    def of_template(cls, error: TemplateError) -> "RequestError":
        """A template's error, located in the template editor (when it has a line)."""
        return cls(error.message, "template", error.lineno, error.column, type(error).__name__,
                   str(error))


class Model:
    """What `--model FOLDER` and `--template FILE` give the page: the model's templates (the
    template editor starts with one), its special tokens and, where it has one, its tokenizer."""

    def __init__(self, folder: Optional[str] = None, template_file: Optional[str] = None) -> None:
        self.name: Optional[str] = None
        self.templates: dict[str, str] = {}
        self.special_tokens: dict[str, Any] = {}
        self.tokenizer: Any = None
        if folder is not None:
            self._load_folder(folder)
        if template_file is not None:
            with open(template_file, encoding="utf-8", newline="") as handle:
                self.templates = {"file": handle.read(), **self.templates}
            self.name = self.name or os.path.basename(template_file)

    def _load_folder(self, folder: str) -> None:
        chat = ChatTemplate.from_pretrained(folder)
        templates = chat.templates
        self.templates = dict(templates) if isinstance(templates, dict) else (
            {"default": templates} if templates else {})
        self.special_tokens = dict(chat.special_tokens)
        self.name = os.path.basename(os.path.normpath(folder))
        path = os.path.join(folder, "tokenizer.json")
        if os.path.isfile(path):
            try:
                from tokenizers import Tokenizer
            except ImportError:  # the page says that tokens need the tokenizers package
                return
            self.tokenizer = Tokenizer.from_file(path)


class Playground:
    """The API's state: the model given on the command line (if any) and the examples."""

    def __init__(self, model: Optional[Model] = None) -> None:
        self.model = model or Model()
        self.examples: list[Example] = examples()

    def state(self) -> dict:
        """What the page loads first: the examples, the model's templates, whether tokens can be shown."""
        model = self.model
        return {"model": model.name, "templates": model.templates,
                "special_tokens": {k: v for k, v in model.special_tokens.items() if isinstance(v, str)},
                "tokenizer": model.tokenizer is not None,
                "examples": [example.as_json() for example in self.examples]}

    def render(self, request: dict) -> dict:
        """The render as parts (input marked), and its tokens when the model has a tokenizer.
        Asked for (each costs an origin render): `"origins": true` adds the render's origin
        parts; `"mask": true` adds each token's assistant mask, from `"mask_source"`;
        `"append_only": true` (a render a turn) adds the turns whose prompt is no prefix of the
        whole render (`append_only`)."""
        source = text_field(request, "template")
        messages, options = chat_arguments(request)
        with_origins = bool_field(request, "origins")
        with_append_only = bool_field(request, "append_only")
        mask_source = text_field(request, "mask_source", "auto") if bool_field(request, "mask") else None
        if mask_source is not None and mask_source not in MASK_SOURCES:
            raise RequestError(f'"mask_source" must be one of: {", ".join(MASK_SOURCES)}')
        with user_errors():
            chat = ChatTemplate(source, special_tokens=self.model.special_tokens)
            parts = chat.render_parts(messages, **options)
            origins = chat.render_parts(messages, origins=True, **options) if with_origins else None
        answer: dict[str, Any] = {"parts": shown_parts(parts)}
        if origins is not None:
            answer["origins"] = shown_origins(origins, messages)
        if with_append_only:  # token breaks too, with the tokenizer (not of a render too long)
            tokenizer = None if answer["parts"]["truncated"] else self.model.tokenizer
            answer["append_only"] = append_only(chat, messages, options, tokenizer)
        if self.model.tokenizer is not None and not answer["parts"]["truncated"]:
            answer["tokens"] = self.tokens(chat, parts, messages, options, mask_source)
        return answer  # (no tokens of a render too long to show)

    def tokens(self, chat: ChatTemplate, parts: list[Part], messages: Any, options: dict,
               mask_source: Optional[str]) -> dict:
        """`tokens` of the render; with a mask, of the parts and spans `ChatTemplate.encode`
        masks with (`masked_render`), so that the ids and the mask are the ones it returns."""
        if mask_source is None:
            return tokens(parts, self.model.tokenizer, chat)
        from ..chat.origins import masked_render
        with user_errors():
            parts, spans = masked_render(chat, messages, assistant_mask_source=mask_source, **options)
        return {**tokens(parts, self.model.tokenizer, chat, spans), "mask_source": mask_source}

    def analyze(self, request: dict) -> dict:
        """`jinjamark.analyze` of the template: variables, content format, capabilities."""
        source = text_field(request, "template")
        tokens = tuple(sorted((k, v) for k, v in self.model.special_tokens.items() if isinstance(v, str)))
        try:
            return analysis(source, tokens or None)
        except TemplateError as error:
            raise RequestError.of_template(error) from None


@contextlib.contextmanager
def user_errors() -> Iterator[None]:
    """The errors a render meets that the user can fix, as RequestErrors: the template's
    (located in its editor), an empty assistant mask, the conversation's shape."""
    try:
        yield
    except TemplateError as error:
        raise RequestError.of_template(error) from None
    except EmptyMaskError as error:  # the template writes no assistant turn the mask can find
        raise RequestError(str(error), kind="EmptyMaskError") from None
    except (ValueError, TypeError) as error:  # the conversation's shape, as transformers says
        raise RequestError(str(error), "conversation", kind=type(error).__name__) from None


@functools.lru_cache(maxsize=32)  # the page asks again after every edit of the conversation
def analysis(source: str, tokens: Optional[tuple]) -> dict:
    """`analyze`, or only its AST part when one render of a one-message conversation takes
    longer than PROBE_DEADLINE: the capability probes render the template about twenty times
    with the default limits, a minute of work for a template that loops to its limits."""
    special = dict(tokens) if tokens is not None else None
    too_costly = costly_render(source, special)
    if too_costly is not None:
        tree = shared_environment().from_string(source).tree
        return {"variables": sorted(template_variables(source)), "keys": sorted(keys_read(tree)),
                "content_format": content_format(tree),
                "has_generation": any(type(node) is Generation for node in ast.walk(tree)),
                "capabilities": None, "not_probed": too_costly}
    found = analyze(source, special)
    capabilities = found.capabilities
    return {"variables": sorted(found.variables), "keys": sorted(found.keys),
            "content_format": found.content_format, "has_generation": found.has_generation,
            "capabilities": {name: list(value) if isinstance(value, tuple) else value
                             for name, value in vars(capabilities).items()}}


PROBE_DEADLINE = 0.5  # seconds


@functools.lru_cache(maxsize=1)
def probe_environment() -> Environment:
    """The chat profile with a deadline: it finds the templates too costly to probe."""
    return chat_environment(limits=Limits(deadline=PROBE_DEADLINE))


def costly_render(source: str, special_tokens: Optional[dict]) -> Optional[str]:
    """Why the template is too costly to probe (the limit a trial render hit), or None. Its
    syntax errors are raised (as `analyze` raises them); other errors are for the probes."""
    chat = ChatTemplate(source, special_tokens=special_tokens, environment=probe_environment())
    try:
        chat.render([{"role": "user", "content": "probe"}], add_generation_prompt=True)
    except LimitExceeded as error:
        return f"one render of a one-message conversation hit a limit: {error.message}"
    except (TemplateRuntimeError, ValueError, TypeError):
        pass  # a template that raises on this conversation: the probes try others
    return None


# ---------------------------------------------------------------------------- the request's fields

def text_field(request: dict, name: str, default: Optional[str] = None) -> str:
    value = request.get(name, default)
    if not isinstance(value, str):
        raise RequestError(f'"{name}" must be a string')
    return value


def bool_field(request: dict, name: str) -> bool:
    value = request.get(name, False)
    if not isinstance(value, bool):
        raise RequestError(f'"{name}" must be true or false')
    return value


def json_field(request: dict, name: str, default: str) -> Any:
    """A field holding JSON text (an editor's content), parsed; its errors located in that editor."""
    text = text_field(request, name, default)
    if not text.strip():
        text = default
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise RequestError(f"not valid JSON: {error.msg}", name, error.lineno, error.colno,
                           "JSONDecodeError") from None
    except RecursionError:  # json's decoder recurses once per nesting level
        raise RequestError("the JSON nests too deeply", name, kind="JSONDecodeError") from None


def chat_arguments(request: dict) -> tuple[Any, dict]:
    """The messages and `render_parts` options of a request, as the CLI's conversation files
    give them: the conversation is a list of messages or an object with `messages` and
    optionally `tools`, `documents`, `kwargs`; the kwargs editor's variables come last, and a
    variable named like a render argument replaces it."""
    conversation = json_field(request, "conversation", "[]")
    if isinstance(conversation, list):
        conversation = {"messages": conversation}
    if not isinstance(conversation, dict) or not isinstance(conversation.get("messages"), list):
        raise RequestError('the conversation must be a list of messages or an object with a '
                           '"messages" list', "conversation")
    variables = conversation.get("kwargs") or {}
    extra = json_field(request, "kwargs", "{}")
    if not isinstance(variables, dict) or not isinstance(extra, dict):
        raise RequestError("kwargs must be a JSON object", "kwargs" if not isinstance(extra, dict)
                           else "conversation")
    variables = {**variables, **extra}
    add = request.get("add_generation_prompt", False)
    if not isinstance(add, bool):
        raise RequestError('"add_generation_prompt" must be true or false')
    messages = variables.pop("messages", conversation["messages"])
    options = {"tools": variables.pop("tools", conversation.get("tools")),
               "documents": variables.pop("documents", conversation.get("documents")),
               "add_generation_prompt": variables.pop("add_generation_prompt", add)}
    return messages, {**options, **variables}


# ---------------------------------------------------------------------------- the answers

def shown_parts(parts: list[Part]) -> dict:
    """The parts, neighbours of the same kind merged, cut after MAX_SHOWN_CHARACTERS."""
    merged: list[list] = []
    size = 0
    for text, is_input in parts:
        if not text:
            continue
        text = text[:MAX_SHOWN_CHARACTERS - size]
        size += len(text)
        if merged and merged[-1][1] == is_input:
            merged[-1][0] += text
        else:
            merged.append([text, is_input])
        if size >= MAX_SHOWN_CHARACTERS:
            break
    total = sum(len(p.text) for p in parts)
    return {"items": [{"text": t, "input": i} for t, i in merged], "length": total,
            "truncated": total > size}


def shown_origins(parts: list[OriginPart], messages: Any) -> dict:
    """The origin parts as JSON, cut after MAX_SHOWN_CHARACTERS, and the role of each message
    (when it is a string) for the page to name the messages that `message` indexes."""
    from ..chat.origins import cut
    shown = cut(parts, MAX_SHOWN_CHARACTERS)
    return {"items": [origin_item(part) for part in shown], "roles": message_roles(messages),
            "truncated": sum(len(part.text) for part in shown) < sum(len(part.text) for part in parts)}


def message_roles(messages: Any) -> list[Optional[str]]:
    """The role of each message, None where it is not a string."""
    if not isinstance(messages, list):
        return []
    return [m.get("role") if isinstance(m, dict) and isinstance(m.get("role"), str) else None
            for m in messages]


def origin_item(part: OriginPart) -> dict:
    """One origin part: its message (the one input came from, else the turn it was written
    for), the field input came from (`key`: the characters are the field's name); input
    computed from several fields (`Several`) lists them as `sources`."""
    item = {"text": part.text, "input": part.is_input, "message": part.message, "field": part.field,
            "key": bool(getattr(part.origin, "key", False)), "turn": part.turn,
            "generation_prompt": part.generation_prompt, "line": part.line}
    several = getattr(part.origin, "sources", None)
    if several is not None:
        item["sources"] = [{"message": s.message, "field": s.field, "key": s.key} for s in several]
    return item


APPEND_ONLY_ARGUMENTS = frozenset({"tokenizer"})  # check_append_only's own, beyond the render's


def append_only(chat: ChatTemplate, messages: Any, options: dict, tokenizer: Any) -> dict:
    """`ChatTemplate.check_append_only` of the conversation: the prompts checked, whether each
    is a prefix of the whole render, the breaks (`Break` as a dict) and the role of each message
    (as `shown_origins` gives them) for the page to name the message of a break."""
    taken = sorted(APPEND_ONLY_ARGUMENTS.intersection(options))
    if taken:  # check_append_only would take the variable for its own argument
        raise RequestError(f'a template variable named "{taken[0]}" cannot be checked for '
                           "append-only: check_append_only has an argument of that name", "kwargs")
    with user_errors():
        found = chat.check_append_only(messages, tokenizer=tokenizer, **options)
    return {"checked": found.checked, "append_only": found.append_only,
            "breaks": [dataclasses.asdict(found_break) for found_break in found.breaks],
            "roles": message_roles(messages)}


def tokens(parts: list[Part], tokenizer: Any, chat: ChatTemplate,
           mask_spans: Optional[list] = None) -> dict:
    """The ids as `ChatTemplate.encode` makes them, each with its text, whether it is a control
    token and whether it stands on input; and how many control tokens encoding the flat string
    would give (an injection makes that more). With `mask_spans` (the character spans of the
    masked turns), each token's `mask` as `encode(..., return_assistant_tokens_mask=True)`."""
    from ..chat.encoding import InputRuns, encode_runs
    from ..chat.masks import assistant_mask
    from ..chat.tokenization import control_tokens
    control = control_tokens(tokenizer, chat.template)
    runs = InputRuns(parts)
    encoded = encode_runs([runs], tokenizer, control)[0]
    if mask_spans is not None and encoded.offsets is None:
        raise RequestError("an assistant mask needs a tokenizer that gives character offsets")
    offsets = encoded.offsets or [(0, 0)] * len(encoded.ids)
    mask = assistant_mask(offsets, mask_spans) if mask_spans is not None else None
    controls = set(control.values())
    shown = []
    for index, (token_id, (start, end)) in enumerate(list(zip(encoded.ids, offsets))[:MAX_SHOWN_TOKENS]):
        item = {"id": token_id, "text": tokenizer.decode([token_id], skip_special_tokens=False),
                "control": token_id in controls, "input": runs.touches(start, end)}
        if mask is not None:
            item["mask"] = mask[index]
        shown.append(item)
    flat = tokenizer.encode(runs.text, add_special_tokens=False).ids
    answer = {"items": shown, "count": len(encoded.ids),
              "control": sum(token_id in controls for token_id in encoded.ids),
              "flat_control": sum(token_id in controls for token_id in flat)}
    if mask is not None:
        answer["masked"] = sum(mask)
    return answer
