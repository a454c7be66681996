"""The `jinjamark` command: render chat templates and see which characters came from input.

    jinjamark render TEMPLATE CONVERSATION.json [--add-generation-prompt] [--var NAME=JSON]...
                     [--parts | --json] [--template-name NAME] [--bos TOKEN] [--eos TOKEN]
    jinjamark render --demo
    jinjamark tokens TEMPLATE CONVERSATION.json [--tokenizer TOKENIZER.json]
    jinjamark fit TEMPLATE CONVERSATION.json --max-tokens N [--tokenizer T] [--mode serve|train]
    jinjamark check TEMPLATE [CONVERSATION.json...] [--json]
    jinjamark diff A B CONVERSATION.json [--expected]
    jinjamark ast TEMPLATE [--json]
    jinjamark serve ...            (the local playground, when installed)
    jinjamark --version

TEMPLATE is a template file or a model folder as transformers saves it (its chat templates and
special tokens are read from it); `-` for one file reads standard input. Every command that
renders takes `--max-output N` and the other limits of `jinjamark.Limits`.

Exit status: 0 done, 1 a template error (its message and caret go to stderr), a failed `check`
or a `diff` that found differences, 2 a wrong command line or input file, or an output
encoding that cannot hold the text (one line on stderr),
130 interrupted (Ctrl-C), 141 the reader of the output went away (a closed pipe, `| head`).
No mistake and no signal ends in a Python traceback.
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Optional, Sequence

from .inputs import DEMO_CONVERSATION, DEMO_TEMPLATE, UsageError  # noqa: F401  (re-exported)
from .show import (CLOSE, INPUT_STYLE, LEGEND, OPEN, describe_error, on_terminal,  # noqa: F401
                   show_parts, wants_color)  # (re-exported: the marks' legend and writer)
from ..errors import TemplateError
from ..version import __version__

EXIT_INTERRUPTED = 130      # 128 + SIGINT, as shells report it
EXIT_CLOSED_PIPE = 141      # 128 + SIGPIPE
PLAYGROUND_MISSING = "the playground is not available"


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run one command; every failure a user can cause becomes a message and an exit status."""
    try:
        status = _run(list(sys.argv[1:] if argv is None else argv))
        sys.stdout.flush()  # a closed pipe shows here, inside the handlers
        return status
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_CLOSED_PIPE
    except KeyboardInterrupt:
        print("jinjamark: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def _run(argv: list[str]) -> int:
    parser = build_parser(argv)
    args, unknown = parser.parse_known_args(argv)
    if unknown and args.command is not _no_playground:  # serve's options are unknown without it
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    try:
        return args.command(args)
    except UsageError as error:
        print(f"jinjamark: error: {on_terminal(str(error))}", file=sys.stderr)
        return 2
    except TemplateError as error:
        print(describe_error(error), file=sys.stderr)
        return 1
    except RecursionError:  # a value nested deeper than Python's stack, inside a render
        print("jinjamark: error: the input is nested too deeply", file=sys.stderr)
        return 2
    except UnicodeEncodeError as error:  # a terminal or pipe whose encoding is not UTF-8
        encoding = getattr(sys.stdout, "encoding", None) or "?"
        print(f"jinjamark: error: the output has characters that {encoding} cannot encode "
              f"({error.reason}); set PYTHONIOENCODING=utf-8", file=sys.stderr)
        return 2
    except MemoryError:
        print("jinjamark: error: out of memory (lower the limits, e.g. --max-output)",
              file=sys.stderr)
        return 2


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so that the flush at exit does not fail on the closed pipe."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


def build_parser(argv: Sequence[str] = ()) -> argparse.ArgumentParser:
    """The command line; `serve` asks the playground for its options only when it is the
    command, so that the others never import it."""
    from .ast import add_ast
    from .check import add_check
    from .diff import add_diff
    from .fit import add_fit
    from .render import add_render, add_tokens

    parser = argparse.ArgumentParser(
        prog="jinjamark",
        description="Render Jinja chat templates and see which characters came from input.")
    parser.add_argument("--version", action="version", version=f"jinjamark {__version__}",
                        help="print the version and exit")
    commands = parser.add_subparsers(dest="command_name", required=True, metavar="COMMAND",
                                     help="what to do ('jinjamark COMMAND --help' for its options)")
    for add in (add_render, add_tokens, add_fit, add_check, add_diff, add_ast):
        add(commands)
    add_serve(commands, serving="serve" in [a for a in argv if not a.startswith("-")][:1])
    return parser


def add_serve(commands: argparse._SubParsersAction, serving: bool) -> None:
    serve = commands.add_parser(
        "serve", help="start the local web playground (edit a template, see its input parts)",
        description="A local web playground: edit a template and a conversation, see the render "
                    "with input highlighted, tokens and errors. Works offline.")
    run = None
    if serving:
        try:
            from ..playground import add_arguments, run  # type: ignore[attr-defined]
        except ImportError:
            run = None
        else:
            add_arguments(serve)
    if run is None:
        serve.add_argument("rest", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
        serve.set_defaults(command=_no_playground)
    else:
        serve.set_defaults(command=run)


def _no_playground(args: argparse.Namespace) -> int:
    raise UsageError(PLAYGROUND_MISSING)
