"""`jinjamark fit`: a conversation cut to a token budget (`ChatTemplate.fit`), the kept
conversation as JSON on stdout (the input file's shape, ready for `render` or `tokens`), what was
dropped on stderr."""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from .inputs import (UsageError, add_input_options, as_input_errors, chat_arguments,
                     load_conversation, load_template, load_tokenizer, refuse_two_stdins)
from .render import CONVERSATION_HELP, TEMPLATE_HELP
from ..chat.fitting import MODES


def add_fit(commands: argparse._SubParsersAction) -> None:
    fit = commands.add_parser(
        "fit", help="cut a conversation to a token budget, dropping the oldest exchanges",
        description="Keep the system message and the last user message (serve) or the final "
                    "assistant turn (train), and drop whole exchanges, oldest first, until the "
                    "rendered prompt fits --max-tokens. Prints the kept conversation as JSON; "
                    "what was dropped goes to stderr.")
    fit.add_argument("template", metavar="TEMPLATE", help=TEMPLATE_HELP)
    fit.add_argument("conversation", metavar="CONVERSATION.json", help=CONVERSATION_HELP)
    fit.add_argument("--max-tokens", type=int, required=True, metavar="N",
                     help="the token budget of the rendered prompt")
    fit.add_argument("--tokenizer", metavar="TOKENIZER",
                     help="a tokenizers JSON file or a folder holding tokenizer.json (default: "
                          "the model folder's; needs the hf extra: pip install '.[hf]' in a checkout)")
    fit.add_argument("--mode", choices=MODES, default="serve",
                     help="serve: keep the last user message, count the generation prompt; "
                          "train: keep the final assistant turn, no generation prompt "
                          "(default: serve)")
    add_input_options(fit, generation_prompt=False)
    fit.set_defaults(command=fit_command)


def fit_command(args: argparse.Namespace) -> int:
    if args.max_tokens < 1:
        raise UsageError(f"--max-tokens must be positive, got {args.max_tokens}")
    refuse_two_stdins(args.template, args.conversation)
    tokenizer = load_tokenizer(args.tokenizer, args.template, "fit")
    fixture = load_conversation(args.conversation)
    messages, options = chat_arguments(fixture, args)
    options.pop("add_generation_prompt")  # the mode decides it
    template = load_template(args, args.template)
    result = as_input_errors(template.fit, messages, args.max_tokens, tokenizer, mode=args.mode,
                             **options)
    json.dump({**fixture, "messages": result.messages}, sys.stdout, ensure_ascii=False)
    sys.stdout.write("\n")
    sys.stdout.flush()
    print(summary(result, len(messages), args.max_tokens, args.mode), file=sys.stderr)
    return 0


def summary(result: Any, total: int, budget: int, mode: str) -> str:
    """One line: what was kept and dropped, by message index into the input."""
    kept = f"kept {len(result.messages)} of {total} messages, {result.n_tokens} of {budget} tokens ({mode})"
    if not result.dropped:
        return f"{kept}; dropped nothing"
    return f"{kept}; dropped {len(result.dropped)} messages: {_ranges(result.dropped)}"


def _ranges(indices: list[int]) -> str:
    """`1-6, 9`: consecutive indices as ranges."""
    groups: list[list[int]] = []
    for index in indices:
        if groups and index == groups[-1][1] + 1:
            groups[-1][1] = index
        else:
            groups.append([index, index])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in groups)
