"""The local web playground (`jinjamark serve`): edit a chat template and a conversation in the
browser, and see the render with its input parts highlighted, the tokens with control tokens
marked (with a model folder that has a tokenizer), the template's analysis, and errors located in
the editors.

A standard-library HTTP server (`server`) serves the page (`static/`, no CDN: it works offline)
and a JSON API (`api`). The command line's `serve` command calls `add_arguments` and `run`;
`python -m jinjamark.playground` runs the same on its own.
"""
from __future__ import annotations

import argparse
import sys
import webbrowser
from typing import Optional, Sequence

from ..errors import TemplateError
from .api import Model, Playground
from .server import make_server

__all__ = ["add_arguments", "run", "main", "Model", "Playground", "make_server"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `serve`, added to `parser`."""
    parser.add_argument("--host", default="127.0.0.1",
                        help="the address to listen on (default 127.0.0.1: this machine only; "
                             "another address lets anyone who reaches it render templates here)")
    parser.add_argument("--port", type=int, default=0,
                        help="the port to listen on (default 0: a free one; the URL is printed)")
    parser.add_argument("--model", metavar="FOLDER",
                        help="a model folder as transformers saves it: its chat templates and "
                             "special tokens, and its tokenizer.json (the tokens view needs the "
                             "tokenizers package)")
    parser.add_argument("--template", metavar="FILE",
                        help="a chat template file the editor starts with")
    parser.add_argument("--open", action="store_true", help="open the page in a web browser")
    parser.add_argument("--verbose", action="store_true", help="log every request on stderr")


def run(args: argparse.Namespace) -> int:
    """Serve until interrupted. Exit status 0, or 2 when the model or template cannot be loaded
    or the address cannot be bound."""
    try:
        model = Model(args.model, args.template)
    except (OSError, UnicodeDecodeError, ValueError, TemplateError) as error:
        what = f"the model folder {args.model}" if args.model else f"the template {args.template}"
        print(f"jinjamark serve: error: cannot load {what}: {error}", file=sys.stderr)
        return 2
    try:
        server = make_server(Playground(model), args.host, args.port, quiet=not args.verbose)
    except (OSError, OverflowError) as error:
        print(f"jinjamark serve: error: cannot listen on {args.host}:{args.port}: {error}", file=sys.stderr)
        return 2
    print(f"jinjamark playground on {server.url} (Ctrl-C stops it)", flush=True)
    if not server.loopback:
        print(f"jinjamark serve: warning: listening on {args.host}: anyone who reaches this address "
              "can render templates here", file=sys.stderr)
    if args.model and model.tokenizer is None:
        print("jinjamark serve: no tokens view: the model folder has no tokenizer.json, or the "
              "tokenizers package is not installed", file=sys.stderr)
    if args.open:
        webbrowser.open(server.url)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    """`python -m jinjamark.playground [options]`: the `serve` command on its own."""
    parser = argparse.ArgumentParser(prog="python -m jinjamark.playground",
                                     description="The jinjamark playground: a local web page to "
                                                 "edit, render and tokenize chat templates.")
    add_arguments(parser)
    return run(parser.parse_args(argv))
