"""`jinjamark check`: does a chat template parse and render these conversations, and what does
it read and render? Every error is reported with its caret; the exit status and `--json` are made
for CI (0 no error, 1 an error, 2 a wrong command line or unreadable file)."""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from typing import Any, Optional

from ..chat import ChatTemplate
from ..chat.analysis import analyze
from ..chat.loading import select_template
from .append_only import append_only_report, append_only_text
from .inputs import (STDIN, add_input_options, chat_arguments, load_conversation, load_template,
                     refuse_two_stdins)
from .show import describe_error
from ..errors import TemplateError


def add_check(commands: argparse._SubParsersAction) -> None:
    check = commands.add_parser(
        "check", help="parse a template and render conversations with it; exit 1 on any error",
        description="Parse TEMPLATE, render every CONVERSATION.json without and with the "
                    "generation prompt, and report each error with its caret, then what the "
                    "template reads and can render. Exit status: 0 no error, 1 an error, "
                    "2 a wrong command line or unreadable file.")
    check.add_argument("template", metavar="TEMPLATE",
                       help="a Jinja chat template file, or a model folder; '-' reads standard input")
    check.add_argument("conversations", nargs="*", metavar="CONVERSATION.json",
                       help="conversations to render ('-' reads one from standard input)")
    check.add_argument("--json", action="store_true",
                       help="print the report as one JSON object (for CI)")
    check.add_argument("--append-only", action="store_true",
                       help="also check that the prompt of every turn of each conversation is a "
                            "prefix of its whole render (what a prefix cache needs); each break "
                            "is an error, shown with its cause and template line")
    add_input_options(check, generation_prompt=False)
    check.set_defaults(command=check_command)


def check_command(args: argparse.Namespace) -> int:
    refuse_two_stdins(args.template, *args.conversations)
    fixtures = [(path, load_conversation(path)) for path in args.conversations]
    report: dict[str, Any] = {"template": args.template, "ok": True, "errors": [], "renders": [],
                              "append_only": []}
    try:
        template = load_template(args, args.template)
        report.update(analysis_report(template))
    except TemplateError as error:  # it does not parse: nothing to render
        report["errors"].append(error_report(error, args.template, None, None))
        return finish(report, args.json)
    for path, fixture in fixtures:
        for generation_prompt in (False, True):
            args.add_generation_prompt = generation_prompt
            messages, options = chat_arguments(fixture, args)
            try:
                text = template.render(messages, **options)
            except (TemplateError, ValueError, TypeError) as error:
                report["errors"].append(error_report(error, args.template, path, generation_prompt))
            else:
                report["renders"].append({"conversation": path,
                                          "add_generation_prompt": generation_prompt,
                                          "characters": len(text)})
        if args.append_only:
            args.add_generation_prompt = False
            messages, options = chat_arguments(fixture, args)
            try:
                report["append_only"].append(append_only_report(template, path, messages, options))
            except (TemplateError, ValueError, TypeError) as error:  # the whole render failed
                report["errors"].append(error_report(error, args.template, path, False))
    return finish(report, args.json)


def analysis_report(template: ChatTemplate) -> dict[str, Any]:
    """What `analyze` finds in the template a render without tools uses."""
    try:
        source = select_template(template.templates, template.template_name, None)
    except ValueError as error:  # a model with named templates and no default
        return {"analysis_error": str(error)}
    found = analyze(source, template.special_tokens or None)
    capabilities = dataclasses.asdict(found.capabilities)
    return {"variables": sorted(found.variables), "content_format": found.content_format,
            "has_generation": found.has_generation, "keys": sorted(found.keys),
            "capabilities": {key: list(value) if isinstance(value, tuple) else value
                             for key, value in capabilities.items()},
            "assembled_tokens": [token._asdict() for token in found.assembled_tokens],
            "append_only_probe": {"append_only": found.append_only.append_only,
                                  "causes": list(found.append_only.causes),
                                  "settings": [list(s) for s in found.append_only.settings]}}


def error_report(error: Exception, template: str, conversation: Optional[str],
                 generation_prompt: Optional[bool]) -> dict[str, Any]:
    if isinstance(error, TemplateError):
        if error.name is None:
            error.name = "<stdin>" if template == STDIN else template
        shown = describe_error(error)
        where = {"line": error.lineno, "column": error.column}
    else:  # the conversation's own mistake, as transformers reports it
        shown, where = f"{type(error).__name__}: {error}", {"line": None, "column": None}
    return {"conversation": conversation, "add_generation_prompt": generation_prompt,
            "type": type(error).__name__, "message": shown.splitlines()[0] if shown else "",
            **where, "shown": shown}


def finish(report: dict[str, Any], as_json: bool) -> int:
    report["ok"] = not report["errors"] and all(found["append_only"]
                                                for found in report.get("append_only", ()))
    if as_json:
        json.dump(report, sys.stdout, ensure_ascii=False, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(check_text(report))
    return 0 if report["ok"] else 1


def check_text(report: dict[str, Any]) -> str:
    lines = []
    for error in report["errors"]:
        context = ""
        if error["conversation"] is not None:
            prompt = "with" if error["add_generation_prompt"] else "without"
            context = f" (rendering {error['conversation']} {prompt} the generation prompt)"
        lines.append(f"error{context}:")
        lines += ["  " + line for line in error["shown"].splitlines()]
    if "variables" in report:
        lines.append("variables: " + (", ".join(report["variables"]) or "none"))
        lines.append(f"content format: {report['content_format']}; generation tags: "
                     f"{'yes' if report['has_generation'] else 'no'}")
        capabilities = report["capabilities"]
        can = [name.replace("_", " ") for name, value in capabilities.items()
               if value is True]
        lines.append("can render: " + (", ".join(can) or "nothing the probes look for"))
        if capabilities.get("arguments"):
            lines.append(f"tool-call arguments: {capabilities['arguments']}")
        if capabilities.get("reasoning"):
            lines.append("reasoning fields: " + ", ".join(capabilities["reasoning"]))
        probe = report.get("append_only_probe")
        if probe is not None and probe["append_only"] is not None:
            said = "yes" if probe["append_only"] else "no (" + ", ".join(probe["causes"]) + ")"
            settings = ", ".join(f"{name}={json.dumps(value)}" for name, value in probe["settings"])
            lines.append(f"append-only on the probe conversation: {said}"
                         + (f"; yes with {settings}" if settings else ""))
        for token in report.get("assembled_tokens", ()):
            lines.append(f"control token built from input: {token['text']} (line {token['line']}, "
                         f"from {', '.join(token['fields'])}): a control token only where the "
                         "input is trusted (trusted_roles)")
    elif "analysis_error" in report:
        lines.append(f"analysis: {report['analysis_error']}")
    for render in report["renders"]:
        prompt = "with" if render["add_generation_prompt"] else "without"
        lines.append(f"ok: {render['conversation']} {prompt} the generation prompt "
                     f"({render['characters']:,} characters)")
    for found in report.get("append_only", ()):
        lines += append_only_text(found)
    count = len(report["errors"]) + sum(not found["append_only"]
                                        for found in report.get("append_only", ()))
    lines.append(f"{report['template']}: " + ("ok" if not count else
                                               f"{count} error{'s' if count > 1 else ''}"))
    return "\n".join(lines) + "\n"

