"""The `jinjamark` command: render a chat template with a conversation, and show the input.

    jinjamark render TEMPLATE CONVERSATION.json [--add-generation-prompt] [--var NAME=JSON]...
                     [--parts | --json] [--template-name NAME] [--bos TOKEN] [--eos TOKEN]
    jinjamark render --demo

TEMPLATE is a template file or a model folder as transformers saves it (its chat templates and
special tokens are read from it).

Exit status: 0 rendered, 1 the template raised a `TemplateError` (its caret message goes to
stderr), 2 the command line or an input file is wrong.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from importlib import resources
from typing import Any, Optional, Sequence, TextIO

from .chat import ChatTemplate
from .errors import TemplateError
from .output import Part

DEMO_TEMPLATE = "qwen2.5-instruct.jinja"
DEMO_CONVERSATION = "injection-user.json"
DEMO_TITLE = "the chat template of Qwen/Qwen2.5-7B-Instruct, with a user message that forges special tokens"
INPUT_STYLE = "reverse red"  # how rich shows input parts on a terminal
OPEN, CLOSE = "\u27e6", "\u27e7"  # ⟦ ⟧: brackets around input parts when there is no colour
LEGEND = f"{OPEN}...{CLOSE} encloses text that came from input; all other text is template text."


class UsageError(Exception):
    """A wrong command line or input file: one line on stderr, exit status 2."""


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.command(args)
    except UsageError as error:
        print(f"jinjamark: error: {error}", file=sys.stderr)
        return 2
    except TemplateError as error:
        print(str(error), file=sys.stderr)
        return 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="jinjamark",
        description="Render Jinja chat templates and see which characters came from input.")
    commands = parser.add_subparsers(dest="command_name", required=True, metavar="COMMAND")
    render = commands.add_parser(
        "render", help="render a chat template with a conversation",
        description="Render TEMPLATE like transformers' apply_chat_template(tokenize=False), with "
                    "the messages, tools, documents and kwargs of CONVERSATION.json.")
    render.add_argument("template", nargs="?", metavar="TEMPLATE",
                        help="a Jinja chat template file, or a model folder (chat_template.jinja, "
                             "tokenizer_config.json, ...)")
    render.add_argument("conversation", nargs="?", metavar="CONVERSATION.json",
                        help='JSON object with "messages" and optional "tools", "documents", '
                             '"kwargs" ("-" reads standard input)')
    render.add_argument("--add-generation-prompt", action="store_true",
                        help="end with the prompt that starts the assistant's turn")
    render.add_argument("--var", action="append", default=[], metavar="NAME=JSON",
                        help="add or override a template variable (JSON, else a plain string); "
                             "repeatable")
    shown = render.add_mutually_exclusive_group()
    shown.add_argument("--parts", action="store_true",
                       help="show input parts: coloured on a terminal with rich installed, "
                            f"else in {OPEN}{CLOSE} brackets")
    shown.add_argument("--json", action="store_true",
                       help='print the parts as JSON: [{"text": ..., "is_input": ...}, ...]')
    add_model_options(render)
    render.add_argument("--demo", action="store_true",
                        help="render a bundled real chat template (Qwen2.5-Instruct) with a "
                             "conversation that tries special-token injection, showing its parts")
    render.set_defaults(command=render_command)

    tokens = commands.add_parser(
        "tokens", help="render and tokenize, parsing special tokens in template text only",
        description="Render TEMPLATE with CONVERSATION.json and print the token ids as JSON. "
                    "Special tokens are recognised only where the template wrote them; "
                    "the same text typed by a user is encoded as ordinary characters.")
    tokens.add_argument("template", metavar="TEMPLATE",
                        help="a Jinja chat template file, or a model folder")
    tokens.add_argument("conversation", metavar="CONVERSATION.json",
                        help='JSON object with "messages" and optional "tools", "documents", "kwargs"')
    tokens.add_argument("--tokenizer", metavar="TOKENIZER.json",
                        help="a tokenizers JSON file (default: the model folder's tokenizer.json; "
                             "needs: pip install 'jinjamark[hf]')")
    tokens.add_argument("--add-generation-prompt", action="store_true")
    tokens.add_argument("--var", action="append", default=[], metavar="NAME=JSON")
    add_model_options(tokens)
    tokens.set_defaults(command=tokens_command)
    return parser


def add_model_options(command: argparse.ArgumentParser) -> None:
    command.add_argument("--template-name", metavar="NAME",
                         help="which of a model's named templates (default, tool_use, rag, ...); "
                              "default: tool_use when the conversation has tools, else default")
    command.add_argument("--bos", metavar="TOKEN",
                         help="bos_token (default: the model folder's; with a template file, none: "
                              "bos_token is undefined and prints as nothing)")
    command.add_argument("--eos", metavar="TOKEN", help="eos_token (default: as --bos)")


def load_template(args: argparse.Namespace, source: Optional[str] = None) -> ChatTemplate:
    """The ChatTemplate of TEMPLATE: a model folder's templates and special tokens, or a file's
    template; --bos/--eos override the special tokens."""
    overrides = {key: value for key, value in (("bos_token", args.bos), ("eos_token", args.eos))
                 if value is not None}
    if source is None and os.path.isdir(args.template):
        try:
            return ChatTemplate.from_pretrained(args.template, name=args.template_name,
                                                special_tokens=overrides)
        except (OSError, ValueError) as error:
            if isinstance(error, TemplateError):
                raise
            raise UsageError(f"cannot load the model folder {args.template}: {error}") from None
    if args.template_name is not None:
        raise UsageError("--template-name needs a model folder, not a template file")
    if source is None:
        source = read_text(args.template)
    return ChatTemplate(source, special_tokens=overrides, name=args.template)


def render_chat(template: ChatTemplate, messages: Any, options: dict, parts: bool) -> Any:
    """Render, with the conversation's own mistakes (an empty one, a message that is not an
    object, no default template for it) reported as a wrong input file."""
    try:
        if parts:
            return template.render_parts(messages, **options)
        return template.render(messages, **options)
    except TemplateError:
        raise
    except (ValueError, TypeError) as error:
        raise UsageError(str(error)) from None


def tokens_command(args: argparse.Namespace) -> int:
    try:
        from tokenizers import Tokenizer
    except ImportError:
        raise UsageError("the tokens command needs the tokenizers package: "
                         "pip install 'jinjamark[hf]'") from None
    from .chat.tokenization import control_tokens, encode
    path = args.tokenizer
    if path is None:
        path = os.path.join(args.template, "tokenizer.json")
        if not os.path.isfile(path):
            raise UsageError("tokens needs --tokenizer TOKENIZER.json (or a model folder with tokenizer.json)")
    try:
        tokenizer = Tokenizer.from_file(path)
    except Exception as error:  # tokenizers raises its own Exception type for bad files
        raise UsageError(f"cannot load {path}: {error}") from None
    messages, options = chat_arguments(load_conversation(args.conversation), args)
    template = load_template(args)
    parts = render_chat(template, messages, options, parts=True)
    control = control_tokens(tokenizer, template.template)
    ids = encode(parts, tokenizer, control=control)
    controls = set(control.values())
    plain = tokenizer.encode("".join(p.text for p in parts), add_special_tokens=False).ids
    json.dump(ids, sys.stdout)
    sys.stdout.write("\n")
    print(f"{len(ids)} tokens, {sum(i in controls for i in ids)} control tokens "
          f"(encoding the flat string would give {sum(i in controls for i in plain)})",
          file=sys.stderr)
    return 0


# ---------------------------------------------------------------------------- render

def render_command(args: argparse.Namespace) -> int:
    if args.demo:
        if args.template or args.conversation:
            raise UsageError("--demo takes no TEMPLATE or CONVERSATION.json")
        source, name, fixture = demo_files()
        args.add_generation_prompt = True
        args.parts = args.parts or not args.json
        print(f"jinjamark demo: {DEMO_TITLE}", file=sys.stderr)
    else:
        if not (args.template and args.conversation):
            raise UsageError("render needs TEMPLATE and CONVERSATION.json (or --demo)")
        source, name = None, args.template
        fixture = load_conversation(args.conversation)

    messages, options = chat_arguments(fixture, args)
    try:
        template = load_template(args, source)
        if args.parts or args.json:
            parts = render_chat(template, messages, options, parts=True)
        else:
            sys.stdout.write(render_chat(template, messages, options, parts=False))
            return 0
    except TemplateError as error:
        if error.name is None:  # ChatTemplate compiles without a name: say which file it was
            error.name = name
        raise

    if args.json:
        json.dump([{"text": p.text, "is_input": p.is_input} for p in parts], sys.stdout,
                  ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        show_parts(parts, sys.stdout, sys.stderr, use_color=wants_color(sys.stdout))
    return 0


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
                                                      args.add_generation_prompt)}
    return messages, {**options, **variables}


def parse_var(item: str) -> tuple[str, Any]:
    """`NAME=JSON`; a value that is not JSON is taken as a plain string."""
    name, sep, text = item.partition("=")
    if not sep or not name.isidentifier():
        raise UsageError(f"--var expects NAME=VALUE, got {item!r}")
    try:
        return name, json.loads(text)
    except ValueError:
        return name, text


def read_text(path: str) -> str:
    try:
        if path == "-":
            return sys.stdin.read()
        with open(path, encoding="utf-8", newline="") as handle:  # keep the source byte for byte
            return handle.read()
    except (OSError, UnicodeDecodeError) as error:
        raise UsageError(f"cannot read {path}: {getattr(error, 'strerror', None) or error}") from None


def load_conversation(path: str) -> dict:
    return parse_conversation(read_text(path), path)


def parse_conversation(text: str, path: str) -> dict:
    try:
        fixture = json.loads(text)
    except ValueError as error:
        raise UsageError(f"{path} is not valid JSON: {error}") from None
    if not isinstance(fixture, dict) or not isinstance(fixture.get("messages"), list):
        raise UsageError(f'{path} must be a JSON object with a "messages" list')
    if not isinstance(fixture.get("kwargs") or {}, dict):
        raise UsageError(f'{path}: "kwargs" must be a JSON object')
    return fixture


def demo_files() -> tuple[str, str, dict]:
    """The bundled template and conversation (package data under jinjamark/demo/)."""
    folder = resources.files("jinjamark") / "demo"
    source = (folder / DEMO_TEMPLATE).read_text(encoding="utf-8")
    fixture = parse_conversation((folder / DEMO_CONVERSATION).read_text(encoding="utf-8"),
                                 DEMO_CONVERSATION)
    return source, f"demo/{DEMO_TEMPLATE}", fixture


# ---------------------------------------------------------------------------- showing parts

def is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


def wants_color(stream: TextIO) -> bool:
    """Colour only on a terminal, and only with the optional `rich` package installed."""
    if not is_terminal(stream):
        return False
    try:
        import rich  # noqa: F401  (optional: pip install 'jinjamark[color]')
    except ImportError:
        return False
    return True


def on_terminal(text: str) -> str:
    """Show ESC as a symbol: input with escape sequences must not restyle or clear the terminal."""
    return text.replace("\x1b", "\u241b")


def show_parts(parts: Sequence[Part], out: TextIO, err: TextIO, use_color: bool) -> None:
    if use_color:
        from rich.console import Console
        from rich.text import Text

        text = Text()
        for part in parts:
            text.append(on_terminal(part.text), style=INPUT_STYLE if part.is_input else None)
        Console(file=out, soft_wrap=True, highlight=False).print(text, end="")
        legend = Text("input", style=INPUT_STYLE)
        legend.append(" text came from input; all other text is template text.", style=None)
        Console(file=err, soft_wrap=True, highlight=False).print(legend)
    else:
        shown = "".join(f"{OPEN}{p.text}{CLOSE}" if p.is_input else p.text for p in parts)
        if is_terminal(out):
            shown = on_terminal(shown)
            if shown and not shown.endswith("\n"):
                shown += "\n"  # keep the legend off the last line of the prompt
        out.write(shown)
        print(LEGEND, file=err)
