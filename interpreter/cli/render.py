"""`jinjamark render` and `jinjamark tokens`: a chat template with a conversation, as
transformers' apply_chat_template renders and tokenizes it, with the input shown."""
from __future__ import annotations

import argparse
import json
import sys
from contextlib import nullcontext
from typing import Callable, Optional, Sequence

from .inputs import (UsageError, add_input_options, as_input_errors, chat_arguments,
                     demo_files, load_conversation, load_template, load_tokenizer, refuse_two_stdins,
                     render_chat)
from .show import (CLOSE, INPUT_STYLE, LEGEND_STYLE, OPEN, is_terminal, on_terminal, show_parts,
                   wants_color)
from .origins import (MASK_CLOSE, MASK_OPEN, MASK_STYLE, masked_pieces, origins_json, show_origins,
                      write_mask_legend)
from ..chat.masks import MASK_SOURCES, assistant_mask
from ..errors import TemplateError
from ..evaluation.output import Part
from ..tracing import Step, tracing

CONTROL_OPEN, CONTROL_CLOSE = "\u27ea", "\u27eb"  # ⟪ ⟫ around control tokens without colour
CONTROL_STYLE = "bold green"
SEPARATOR = "\u00b7"  # · between tokens
TOKENS_LEGEND = (f"{CONTROL_OPEN}...{CONTROL_CLOSE} a control token, {OPEN}...{CLOSE} a token of input, "
                 f"{SEPARATOR} between tokens.")
DEMO_TITLE = "the chat template of Qwen/Qwen2.5-7B-Instruct, with a user message that forges special tokens"
TEMPLATE_HELP = ("a Jinja chat template file, or a model folder (chat_template.jinja, "
                 "tokenizer_config.json, ...); '-' reads standard input")
CONVERSATION_HELP = ('JSON object with "messages" and optional "tools", "documents", "kwargs" '
                     "('-' reads standard input)")


def add_render(commands: argparse._SubParsersAction) -> None:
    render = commands.add_parser(
        "render", help="render a chat template with a conversation",
        description="Render TEMPLATE like transformers' apply_chat_template(tokenize=False), with "
                    "the messages, tools, documents and kwargs of CONVERSATION.json.")
    render.add_argument("template", nargs="?", metavar="TEMPLATE", help=TEMPLATE_HELP)
    render.add_argument("conversation", nargs="?", metavar="CONVERSATION.json",
                        help=CONVERSATION_HELP)
    shown = render.add_mutually_exclusive_group()
    shown.add_argument("--parts", action="store_true",
                       help="show input parts: coloured on a terminal with rich installed, "
                            f"else in {OPEN}{CLOSE} brackets")
    shown.add_argument("--json", action="store_true",
                       help='print the parts as JSON: [{"text": ..., "is_input": ...}, ...]')
    render.add_argument("--origins", action="store_true",
                        help="show where each part came from: input's message and field, the turn "
                             "template text was written for, the generation prompt, the template "
                             "line (with --json: as objects)")
    render.add_argument("--trace", action="store_true",
                        help="print each statement to stderr as it runs: template, line, column, "
                             "the kind of statement and its source line")
    render.add_argument("--demo", action="store_true",
                        help="render a bundled real chat template (Qwen2.5-Instruct) with a "
                             "conversation that tries special-token injection, showing its parts")
    add_input_options(render)
    render.set_defaults(command=render_command)


def _step_printer(name: Optional[str]) -> Callable[[Step], None]:
    """`--trace`: one line on stderr per statement run: `name:line:column Kind` and its source."""
    def show(step: Step) -> None:
        where = step.template or name or "<template>"
        text = step.source_line[step.column - 1:].strip()  # the statement onwards
        print(f"{where}:{step.line}:{step.column} {step.statement:<7} {text[:80]}", file=sys.stderr)
    return show


def add_tokens(commands: argparse._SubParsersAction) -> None:
    tokens = commands.add_parser(
        "tokens", help="render and tokenize, parsing special tokens in template text only",
        description="Render TEMPLATE with CONVERSATION.json and print the token ids as JSON. "
                    "Special tokens are recognised only where the template wrote them; "
                    "the same text typed by a user is encoded as ordinary characters.")
    tokens.add_argument("template", metavar="TEMPLATE", help=TEMPLATE_HELP)
    tokens.add_argument("conversation", metavar="CONVERSATION.json", help=CONVERSATION_HELP)
    tokens.add_argument("--tokenizer", metavar="TOKENIZER.json",
                        help="a tokenizers JSON file (default: the model folder's tokenizer.json; "
                             "needs the hf extra: pip install '.[hf]' in a checkout)")
    tokens.add_argument("--mask", action="store_true",
                        help="the assistant mask too: with --show, masked tokens in "
                             "\u2039\u203a (underlined in colour); else JSON with input_ids and "
                             "assistant_masks. From {%% generation %%} tags, else from origins")
    tokens.add_argument("--mask-source", choices=MASK_SOURCES, default="auto",
                        help="where the mask comes from (default: the tags when the template has "
                             "them, else origins)")
    tokens.add_argument("--show", action="store_true",
                        help="print the tokens as text instead of ids: control tokens in "
                             f"{CONTROL_OPEN}{CONTROL_CLOSE}, input tokens in {OPEN}{CLOSE} (in colour "
                             "on a terminal with rich), a middle dot between tokens")
    add_input_options(tokens)
    tokens.set_defaults(command=tokens_command)


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
        refuse_two_stdins(args.template, args.conversation)
        source, name = None, args.template
        fixture = load_conversation(args.conversation)

    messages, options = chat_arguments(fixture, args)
    try:
        template = load_template(args, name, source)
        with tracing(_step_printer(name)) if args.trace else nullcontext():
            if args.origins:
                parts = render_chat(template, messages, {**options, "origins": True}, parts=True)
            elif args.parts or args.json:
                parts = render_chat(template, messages, options, parts=True)
            else:
                text = render_chat(template, messages, options, parts=False)
        if not (args.parts or args.json or args.origins):
            sys.stdout.write(text)
            return 0
    except TemplateError as error:
        if error.name is None:  # ChatTemplate compiles without a name: say which file it was
            error.name = name
        raise

    if args.origins and not args.json:
        show_origins(parts, sys.stdout, use_color=wants_color(sys.stdout))
    elif args.json:
        shown = origins_json(parts) if args.origins else \
            [{"text": p.text, "is_input": p.is_input} for p in parts]
        json.dump(shown, sys.stdout, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        show_parts(parts, sys.stdout, sys.stderr, use_color=wants_color(sys.stdout))
    return 0


def tokens_command(args: argparse.Namespace) -> int:
    from ..chat.encoding import InputRuns, encode_runs
    from ..chat.tokenization import control_tokens
    refuse_two_stdins(args.template, args.conversation)
    tokenizer = load_tokenizer(args.tokenizer, args.template, "tokens")
    messages, options = chat_arguments(load_conversation(args.conversation), args)
    template = load_template(args, args.template)
    spans = None
    if args.mask:
        from ..chat.origins import masked_render
        parts, spans = as_input_errors(masked_render, template, messages,
                                       assistant_mask_source=args.mask_source,
                                       **options)
    else:
        parts = render_chat(template, messages, options, parts=True)
    control = control_tokens(tokenizer, template.template)
    encoded = encode_runs([InputRuns(parts)], tokenizer, control)[0]
    ids, controls = encoded.ids, set(control.values())
    mask = assistant_mask(encoded.offsets, spans) if spans is not None else None
    plain = tokenizer.encode("".join(p.text for p in parts), add_special_tokens=False).ids
    if args.show:
        use_color = wants_color(sys.stdout)
        pieces = token_pieces(parts, ids, encoded.offsets, controls,
                              lambda group: tokenizer.decode(group, skip_special_tokens=False))
        if mask is not None:
            pieces = masked_pieces(pieces, mask)
        show_tokens(pieces, use_color)
        sys.stdout.flush()
        show_tokens_legend(use_color)
        if mask is not None:
            write_mask_legend()
    else:
        json.dump(ids if mask is None else {"input_ids": ids, "assistant_masks": mask}, sys.stdout)
        sys.stdout.write("\n")
    sys.stdout.flush()
    print(f"{len(ids)} tokens, {sum(i in controls for i in ids)} control tokens "
          f"(encoding the flat string would give {sum(i in controls for i in plain)})",
          file=sys.stderr)
    return 0


def token_pieces(parts: Sequence[Part], ids: list[int], offsets: Optional[list], controls: set,
                 decode: Optional[Callable[[list[int]], str]] = None) -> list[tuple[str, str]]:
    """(text, kind) per token, one piece per id as the playground shows them; kind 'control',
    'input' or 'template'. A token is input when any of its characters is; a control id is shown
    as control wherever it stands (on input it would be the injection this command exists to show).

    Tokens the tokenizer gives the same characters (input text that spells a control token,
    encoded as ordinary tokens, or the bytes of one character) are told apart by `decode`: each
    shows the text it adds, and a token that ends inside a character shows nothing (the character
    is on the token that completes it). Without `decode`, or where decoding does not give back
    the characters, the first of them shows the characters and the others nothing."""
    if offsets is None:
        raise UsageError("--show needs a tokenizer that reports character offsets")
    text = "".join(p.text for p in parts)
    from_input = bytearray(len(text))
    at = 0
    for part in parts:
        if part.is_input:
            from_input[at:at + len(part.text)] = b"\x01" * len(part.text)
        at += len(part.text)
    pieces: list[tuple[str, str]] = []
    index = 0
    while index < len(ids):
        start, end = offsets[index]
        after = index + 1
        while after < len(ids) and tuple(offsets[after]) == (start, end):
            after += 1
        group = ids[index:after]
        on_input = any(from_input[start:end])
        for token_id, piece in zip(group, _shared_text(text[start:end], group, decode)):
            kind = "control" if token_id in controls else "input" if on_input else "template"
            pieces.append((piece, kind))
        index = after
    return pieces


def _shared_text(chars: str, group: list[int], decode: Optional[Callable[[list[int]], str]]) -> list[str]:
    """`chars` cut among the tokens of `group`, which all stand on them (see token_pieces)."""
    fallback = [chars] + [""] * (len(group) - 1)
    if len(group) == 1 or decode is None:
        return fallback
    shown, done = [], ""
    for count in range(1, len(group) + 1):
        now = decode(group[:count])
        if now.endswith("\ufffd") and count < len(group):  # the token ends inside a character
            shown.append("")
            continue
        if not now.startswith(done):
            return fallback
        shown.append(now[len(done):])
        done = now
    return shown if done == chars else fallback


def show_tokens(pieces: list[tuple], use_color: bool) -> None:
    """The pieces of `token_pieces` (with a third item, masked, from `masked_pieces`)."""
    if use_color:
        from rich.console import Console
        from rich.text import Text
        shown = Text()
        for number, (piece, kind, *masked) in enumerate(pieces):
            if number:
                shown.append(SEPARATOR, style=LEGEND_STYLE)
            style = {"control": CONTROL_STYLE, "input": INPUT_STYLE}.get(kind)
            if masked and masked[0]:
                style = f"{style} {MASK_STYLE}" if style else MASK_STYLE
            shown.append(on_terminal(piece), style=style)
        Console(file=sys.stdout, soft_wrap=True, highlight=False).print(shown)
        return
    marks = {"control": (CONTROL_OPEN, CONTROL_CLOSE), "input": (OPEN, CLOSE), "template": ("", "")}
    shown = SEPARATOR.join((MASK_OPEN if masked and masked[0] else "") + marks[kind][0] + piece
                           + marks[kind][1] + (MASK_CLOSE if masked and masked[0] else "")
                           for piece, kind, *masked in pieces)
    sys.stdout.write((on_terminal(shown) if is_terminal(sys.stdout) else shown) + "\n")


def show_tokens_legend(use_color: bool) -> None:
    if not use_color:
        print(TOKENS_LEGEND, file=sys.stderr)
        return
    from rich.console import Console
    from rich.text import Text
    legend = Text("legend: ", style=LEGEND_STYLE)
    legend.append("control", style=CONTROL_STYLE)
    legend.append(" a control token, ", style=LEGEND_STYLE)
    legend.append("input", style=INPUT_STYLE)
    legend.append(f" a token of input, {SEPARATOR} between tokens.", style=LEGEND_STYLE)
    Console(file=sys.stderr, soft_wrap=True, highlight=False).print(legend)
