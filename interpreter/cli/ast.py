"""`jinjamark ast TEMPLATE`: the typed AST a chat template parses to (as transformers' profile
parses it: trim_blocks, lstrip_blocks, its extensions), each node with its source span.

The text form is an indented tree, one node a line: `For 2:1-4:12 recursive=False`, the span
being start line:column to end line:column (the end is exclusive). `--json` gives the same tree
as nested objects (`"node"`: the class, `"span"`, then the fields).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from typing import Any, Iterator, Optional

from ..chat.loading import select_template
from .inputs import PARSE_LIMITS, UsageError, add_limit_options, load_template
from ..errors import TemplateError
from ..grammar import ast
from ..grammar.errors import position

SCALAR_WIDTH = 120  # characters of a literal shown in the text form


def add_ast(commands: argparse._SubParsersAction) -> None:
    command = commands.add_parser(
        "ast", help="print the typed AST of a template with line:column spans",
        description="Parse TEMPLATE as transformers' chat profile does and print its typed AST, "
                    "one node a line with its start and end line:column.")
    command.add_argument("template", metavar="TEMPLATE",
                         help="a Jinja chat template file, or a model folder; '-' reads standard input")
    command.add_argument("--json", action="store_true",
                         help="print the AST as JSON (each node: node, span, fields)")
    command.add_argument("--template-name", metavar="NAME",
                         help="which of a model's named templates (default: default)")
    command.set_defaults(command=ast_command, bos=None, eos=None)
    add_limit_options(command, PARSE_LIMITS)  # it parses, never renders


def ast_command(args: argparse.Namespace) -> int:
    try:
        template = load_template(args, args.template)
        source = select_template(template.templates, template.template_name, None)
        tree = template.compiled(source).tree
    except TemplateError as error:
        if error.name is None:
            error.name = args.template
        raise
    except ValueError as error:  # a model with named templates and no default
        raise UsageError(str(error)) from None
    if args.json:
        try:
            text = json.dumps(as_json(tree, source), ensure_ascii=False, indent=1)
        except RecursionError:
            raise UsageError("the template nests too deeply for --json; try the text form") from None
        sys.stdout.write(text + "\n")
    else:
        for line in tree_lines(tree, source):
            sys.stdout.write(line + "\n")
    return 0


def span_of(node: Any, source: str) -> Optional[dict[str, int]]:
    span = getattr(node, "span", None)
    if not isinstance(span, ast.Span):
        return None
    end_line, end_column = position(source, span.end)
    return {"line": span.line, "column": span.column, "end_line": end_line,
            "end_column": end_column, "start": span.start, "end": span.end}


def _is_node(value: Any) -> bool:
    return dataclasses.is_dataclass(value) and not isinstance(value, type)


def _is_scalar(value: Any) -> bool:
    """Shown inline: not a node, and not a tuple holding nodes or tuples."""
    if isinstance(value, tuple):
        return not any(_is_node(item) or isinstance(item, tuple) for item in value)
    return not _is_node(value)


def _fields(node: Any) -> Iterator[tuple[str, Any]]:
    for field in dataclasses.fields(node):
        if field.name != "span":
            yield field.name, getattr(node, field.name)


def tree_lines(tree: Any, source: str) -> Iterator[str]:
    """The indented text form, made without recursion (a tree may be hundreds of levels deep)."""
    stack: list[tuple[int, str, Any]] = [(0, "", tree)]
    while stack:
        depth, label, value = stack.pop()
        pad = "  " * depth
        if _is_node(value):
            span = span_of(value, source)
            where = f" {span['line']}:{span['column']}-{span['end_line']}:{span['end_column']}" if span else ""
            inline = "".join(f" {name}={_shown(item)}" for name, item in _fields(value) if _is_scalar(item))
            yield f"{pad}{label}{type(value).__name__}{where}{inline}"
            nested = [(depth + 1, f"{name}: ", item) for name, item in _fields(value)
                      if not _is_scalar(item)]
            stack.extend(reversed(nested))
        elif isinstance(value, tuple) and not _is_scalar(value):
            yield f"{pad}{label.rstrip()}" if label else f"{pad}-"
            stack.extend(reversed([(depth + 1, "", item) for item in value]))
        else:
            yield f"{pad}{label}{_shown(value)}"


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= SCALAR_WIDTH else text[:SCALAR_WIDTH] + "..."


def as_json(value: Any, source: str) -> Any:
    if _is_node(value):
        shown: dict[str, Any] = {"node": type(value).__name__}
        span = span_of(value, source)
        if span is not None:
            shown["span"] = span
        shown.update((name, as_json(item, source)) for name, item in _fields(value))
        return shown
    if isinstance(value, tuple):
        return [as_json(item, source) for item in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return repr(value)
