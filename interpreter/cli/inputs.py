"""What the `jinjamark` commands read: templates, model folders, conversations, `--var`s, limits.

Every mistake in them is a `UsageError` (one line on stderr, exit status 2), never a traceback:
a missing file, bad JSON, JSON nested deeper than Python's parser can go, a conversation that is
not a `{"messages": [...]}` object, a model folder without a template.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from importlib import resources
from typing import Any, Callable, Optional

from ..chat import ChatTemplate, chat_environment
from ..errors import TemplateError
from ..limits import DEFAULT_LIMITS, Limits

STDIN = "-"
BOM = "\ufeff"  # editors on Windows save JSON with it; json.loads refuses it, so it is dropped

# The help text of each limit option (`--max-output` sets Limits.max_output, ...).
LIMIT_HELP = {
    "max_template_size": "characters of template source",
    "max_nesting": "how deeply the template's constructs may nest",
    "max_output": "characters one render may write",
    "max_fuel": "evaluation steps of one render",
    "max_loop_iterations": "loop iterations of one render, all loops together",
    "max_recursion": "nested macro calls plus recursive-loop depth",
    "max_range": "items of one range()",
    "max_repeat": "items made by one repetition ('ab' * n) or list sum",
    "max_power_bits": "bits of an integer made by ** or *",
    "max_format_width": "widths and precisions of %%, format, center, indent",
    "max_work": "work of builtins per render, in units of about 1 ns",
    "deadline": "seconds of wall clock per render",
}


class UsageError(Exception):
    """A wrong command line or input file: one line on stderr, exit status 2."""


# ---------------------------------------------------------------------------- options

def add_input_options(command: argparse.ArgumentParser, generation_prompt: bool = True) -> None:
    """The options every command that renders a conversation takes."""
    if generation_prompt:
        command.add_argument("--add-generation-prompt", action="store_true",
                             help="end with the prompt that starts the assistant's turn")
    command.add_argument("--var", action="append", default=[], metavar="NAME=JSON",
                         help="add or override a template variable (JSON, else a plain string); "
                              "repeatable")
    add_model_options(command)


def add_model_options(command: argparse.ArgumentParser) -> None:
    command.add_argument("--template-name", metavar="NAME",
                         help="which of a model's named templates (default, tool_use, rag, ...); "
                              "default: tool_use when the conversation has tools, else default")
    command.add_argument("--bos", metavar="TOKEN",
                         help="bos_token (default: the model folder's; with a template file, none: "
                              "bos_token is undefined and prints as nothing)")
    command.add_argument("--eos", metavar="TOKEN", help="eos_token (default: as --bos)")
    add_limit_options(command)


PARSE_LIMITS = ("max_template_size", "max_nesting")  # the limits that hold while parsing


def add_limit_options(command: argparse.ArgumentParser, only: Optional[tuple[str, ...]] = None) -> None:
    """`--max-output N` and friends: one option per field of `jinjamark.Limits`, or per field
    named in `only` (a command that parses and never renders takes the PARSE_LIMITS)."""
    bounds = "the parser's bounds" if only == PARSE_LIMITS else "the engine's bounds"
    group = command.add_argument_group("limits", f"raise (or lower) {bounds}; "
                                                 "the defaults suit real chat templates")
    for field in dataclasses.fields(Limits):
        if only is not None and field.name not in only:
            continue
        default = getattr(DEFAULT_LIMITS, field.name)
        kind = float if field.name == "deadline" else int
        shown = "none" if default is None else f"{default:,}"
        group.add_argument("--" + field.name.replace("_", "-"), type=kind, metavar="N",
                           dest=field.name, default=None,
                           help=f"{LIMIT_HELP.get(field.name, field.name)} (default {shown})")


def limits_of(args: argparse.Namespace) -> Optional[Limits]:
    """The Limits the options ask for, or None for the defaults."""
    given = {field.name: getattr(args, field.name, None) for field in dataclasses.fields(Limits)}
    given = {name: value for name, value in given.items() if value is not None}
    for name, value in given.items():
        if value <= 0:
            raise UsageError(f"--{name.replace('_', '-')} must be positive, got {value}")
    return Limits(**given) if given else None


# ---------------------------------------------------------------------------- templates

def load_template(args: argparse.Namespace, path: str, source: Optional[str] = None) -> ChatTemplate:
    """The ChatTemplate of PATH: a model folder's templates and special tokens, or a file's
    template (`-`: standard input); --bos/--eos override the special tokens."""
    overrides = {key: value for key, value in (("bos_token", args.bos), ("eos_token", args.eos))
                 if value is not None}
    limits = limits_of(args)
    options: dict[str, Any] = {"special_tokens": overrides}
    if limits is not None:
        options["environment"] = chat_environment(limits=limits)
    if source is None and path != STDIN and os.path.isdir(path):
        try:
            return ChatTemplate.from_pretrained(path, name=args.template_name, **options)
        except (OSError, ValueError) as error:
            if isinstance(error, TemplateError):
                raise
            raise UsageError(f"cannot load the model folder {path}: {error}") from None
    if args.template_name is not None:
        raise UsageError("--template-name needs a model folder, not a template file")
    if source is None:
        source = read_text(path)
    return ChatTemplate(source, name="<stdin>" if path == STDIN else path, **options)


def refuse_two_stdins(*paths: Optional[str]) -> None:
    if sum(path == STDIN for path in paths) > 1:
        raise UsageError("only one of the files can be standard input (-)")


def read_text(path: str) -> str:
    try:
        if path == STDIN:
            return sys.stdin.read()
        with open(path, encoding="utf-8", newline="") as handle:  # keep the source byte for byte
            return handle.read()
    except (OSError, UnicodeDecodeError) as error:
        shown = "standard input" if path == STDIN else path
        raise UsageError(f"cannot read {shown}: {getattr(error, 'strerror', None) or error}") from None


# ---------------------------------------------------------------------------- conversations

def load_conversation(path: str) -> dict:
    return parse_conversation(read_text(path), "standard input" if path == STDIN else path)


def parse_json(text: str, what: str) -> Any:
    try:
        return json.loads(text[1:] if text.startswith(BOM) else text, parse_int=_json_int)
    except UsageError as error:  # a number longer than Python reads
        raise UsageError(f"{what} {error}") from None
    except RecursionError:
        raise UsageError(f"{what} is nested too deeply to read") from None
    except ValueError as error:
        raise UsageError(f"{what} is not valid JSON: {error}") from None


def _json_int(digits: str) -> int:
    """A JSON integer; one longer than Python's int_max_str_digits limit is refused in the
    command's terms (the limit holds again where a template prints the number, so reading it
    with a raised limit would only move the error into the render)."""
    try:
        return int(digits)
    except ValueError:
        count = len(digits.lstrip("-"))
        limit = getattr(sys, "get_int_max_str_digits", lambda: 0)()
        raise UsageError(
            f"has a number of {count:,} digits ({digits[:12]}...), longer than the {limit:,} digits "
            "Python converts between text and integers (also where a template prints one): "
            'write it as a string ("...") to pass it as text, or lift the limit for the run: '
            "PYTHONINTMAXSTRDIGITS=0 jinjamark ...") from None


def parse_conversation(text: str, path: str) -> dict:
    fixture = parse_json(text, path)
    if not isinstance(fixture, dict) or not isinstance(fixture.get("messages"), list):
        raise UsageError(f'{path} must be a JSON object with a "messages" list')
    if not isinstance(fixture.get("kwargs") or {}, dict):
        raise UsageError(f'{path}: "kwargs" must be a JSON object')
    return fixture


def load_tokenizer(path: Any, template: str, command: str) -> Any:
    """The `tokenizers.Tokenizer` of a tokenizer.json, or of the one in a folder (by default the
    model folder TEMPLATE), for `command`."""
    try:
        from tokenizers import Tokenizer
    except ImportError:
        raise UsageError(f"the {command} command needs the tokenizers package: "
                         "pip install '.[hf]' in a jinjamark checkout") from None
    if path is None:
        if template == STDIN or not os.path.isfile(os.path.join(template, "tokenizer.json")):
            raise UsageError(f"{command} needs --tokenizer TOKENIZER.json (or a model folder with "
                             "tokenizer.json)")
        path = template
    if os.path.isdir(path):
        path = os.path.join(path, "tokenizer.json")
    try:
        return Tokenizer.from_file(path)
    except Exception as error:  # tokenizers raises its own Exception type for bad files
        raise UsageError(f"cannot load {path}: {error}") from None


def chat_arguments(fixture: dict, args: argparse.Namespace) -> tuple[Any, dict]:
    """The conversation's messages and ChatTemplate.render's keyword arguments.

    `kwargs` from the file, then `--var`s; a variable named like an argument of `render`
    (`messages`, `tools`, `documents`, `add_generation_prompt`) replaces that argument.
    """
    variables = dict(fixture.get("kwargs") or {})
    variables.update(parse_var(item) for item in args.var)
    messages = variables.pop("messages", fixture["messages"])
    options = {"tools": variables.pop("tools", fixture.get("tools")),
               "documents": variables.pop("documents", fixture.get("documents")),
               "add_generation_prompt": variables.pop("add_generation_prompt",
                                                      getattr(args, "add_generation_prompt", False))}
    return messages, {**options, **variables}


def parse_var(item: str) -> tuple[str, Any]:
    """`NAME=JSON`; a value that is not JSON is taken as a plain string."""
    name, sep, text = item.partition("=")
    if not sep or not name.isidentifier():
        raise UsageError(f"--var expects NAME=VALUE, got {item!r}")
    try:
        return name, json.loads(text)
    except RecursionError:
        raise UsageError(f"--var {name} is nested too deeply to read") from None
    except ValueError:
        return name, text


def render_chat(template: ChatTemplate, messages: Any, options: dict, parts: bool) -> Any:
    """Render, with the conversation's own mistakes (an empty one, a message that is not an
    object, no default template for it) reported as a wrong input file."""
    return as_input_errors(template.render_parts if parts else template.render, messages, **options)


def as_input_errors(call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """`call(*args, **kwargs)`, a ValueError or TypeError of the data a UsageError (a template's
    own errors pass as they are)."""
    try:
        return call(*args, **kwargs)
    except TemplateError:
        raise
    except (ValueError, TypeError) as error:
        raise UsageError(str(error)) from None


# ---------------------------------------------------------------------------- the demo

DEMO_TEMPLATE = "qwen2.5-instruct.jinja"
DEMO_CONVERSATION = "injection-user.json"


def demo_files() -> tuple[str, str, dict]:
    """The bundled template and conversation (package data under jinjamark/demo/)."""
    folder = resources.files("jinjamark") / "demo"
    source = (folder / DEMO_TEMPLATE).read_text(encoding="utf-8")
    fixture = parse_conversation((folder / DEMO_CONVERSATION).read_text(encoding="utf-8"),
                                 DEMO_CONVERSATION)
    return source, f"demo/{DEMO_TEMPLATE}", fixture
