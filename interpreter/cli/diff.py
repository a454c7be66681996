"""`jinjamark diff A B CONVERSATION`: a unified diff of two renders, with input marked.

To port a template or review a change: B is a second template (or model folder), or the text A
should render (`--expected`, the default for a `.txt` file). Between two templates the lines are
compared with their input marks, so a change that turns input into template text (or back) shows
even where the characters are the same. Exit status: 0 the same, 1 different, 2 a wrong command
line or file; a template error is reported as `render` reports it (1).
"""
from __future__ import annotations

import argparse
import difflib
import sys
from typing import Any, Iterator, Sequence

from .inputs import (add_input_options, chat_arguments, load_conversation, load_template,
                     read_text, refuse_two_stdins, render_chat)
from .show import (Line, bracketed, is_terminal, marked_lines, on_terminal, plain, show_legend,
                   styled, wants_color)
from ..errors import TemplateError
from ..evaluation.output import Part

STYLES = {"-": "red", "+": "green", "@": "cyan", "\\": "dim"}


def add_diff(commands: argparse._SubParsersAction) -> None:
    diff = commands.add_parser(
        "diff", help="unified diff of two renders with input marked; exit 1 when they differ",
        description="Render CONVERSATION.json with template A and with template B (or compare A's "
                    "render with the expected text B) and print a unified diff; input is in "
                    "colour on a terminal with rich installed, else in \u27e6\u27e7 brackets.")
    diff.add_argument("a", metavar="A", help="a template file or model folder")
    diff.add_argument("b", metavar="B",
                      help="a second template file or model folder, or the text A should render "
                           "(a .txt file, or any file with --expected)")
    diff.add_argument("conversation", metavar="CONVERSATION.json",
                      help='JSON object with "messages" and optional "tools", "documents", '
                           "\"kwargs\" ('-' reads standard input)")
    diff.add_argument("--expected", action="store_true",
                      help="B is the expected output text, not a template (the default when B "
                           "ends in .txt)")
    diff.add_argument("-U", "--context", type=int, default=3, metavar="N",
                      help="lines of context around each change (default 3)")
    add_input_options(diff)
    diff.set_defaults(command=diff_command)


def diff_command(args: argparse.Namespace) -> int:
    refuse_two_stdins(args.a, args.b, args.conversation)
    messages, options = chat_arguments(load_conversation(args.conversation), args)
    left = rendered(args, args.a, messages, options)
    expected = args.expected or args.b.lower().endswith(".txt")
    if expected:
        right = marked_lines([Part(read_text(args.b), False)])
    else:
        right = rendered(args, args.b, messages, options)
    lines = list(unified(left, right, args.a, args.b, max(0, args.context), keyed=not expected))
    if not lines:
        return 0
    use_color = wants_color(sys.stdout)
    show(lines, use_color)
    sys.stdout.flush()
    show_legend(sys.stderr, use_color)
    return 1


def rendered(args: argparse.Namespace, path: str, messages: Any, options: dict) -> list[Line]:
    try:
        template = load_template(args, path)
        return marked_lines(render_chat(template, messages, options, parts=True))
    except TemplateError as error:
        if error.name is None:
            error.name = path
        raise


def unified(left: Sequence[Line], right: Sequence[Line], name_a: str, name_b: str,
            context: int, keyed: bool) -> Iterator[tuple[str, Any]]:
    """(prefix, line) pairs of a unified diff; a line is a `Line`, or a str for the headers.
    With `keyed`, lines are equal only when their input marks are too."""
    keys_a = list(left) if keyed else [plain(line) for line in left]
    keys_b = list(right) if keyed else [plain(line) for line in right]
    matcher = difflib.SequenceMatcher(None, keys_a, keys_b, autojunk=False)
    for number, group in enumerate(matcher.get_grouped_opcodes(context)):
        if number == 0:
            yield "---", f" {name_a}"
            yield "+++", f" {name_b}"
        first, last = group[0], group[-1]
        yield "@@", f" -{_range(first[1], last[2])} +{_range(first[3], last[4])} @@"
        for tag, a1, a2, b1, b2 in group:
            if tag == "equal":
                yield from ((" ", line) for line in left[a1:a2])
                continue
            yield from (("-", line) for line in left[a1:a2])
            yield from (("+", line) for line in right[b1:b2])


def _range(start: int, stop: int) -> str:
    """A hunk's line range as diff -u writes it."""
    length = stop - start
    if length == 1:
        return str(start + 1)
    return f"{start + 1 if length else start},{length}"


def show(lines: Sequence[tuple[str, Any]], use_color: bool) -> None:
    console = None
    if use_color:
        from rich.console import Console
        console = Console(file=sys.stdout, soft_wrap=True, highlight=False)
    for prefix, line in lines:
        style = STYLES.get(prefix[0])
        if isinstance(line, str):  # a header
            _write(console, prefix + on_terminal(line), style)
            continue
        if console is not None:
            text = styled(((prefix, False),) + line, style)
            console.print(text)
        else:
            print(prefix + on_terminal(bracketed(line)) if is_terminal(sys.stdout)
                  else prefix + bracketed(line))
        if not plain(line).endswith("\n"):
            _write(console, "\\ No newline at end of file", STYLES["\\"])


def _write(console: Any, text: str, style: Any) -> None:
    if console is None:
        print(text)
    else:
        from rich.text import Text
        console.print(Text(text, style=style or ""))
