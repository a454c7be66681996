"""`jinjamark check --append-only`: for each conversation, the turns whose prompt is not a prefix
of the whole conversation's render (chat/prefixes.py), each with its cause and a caret under the
template line that wrote the differing text."""
from __future__ import annotations

import dataclasses
from typing import Any, Optional

from ..chat import ChatTemplate
from ..chat.loading import select_template
from .show import clip, on_terminal

EXCERPT_WIDTH = 120  # characters of the template line shown at a break


def append_only_report(template: ChatTemplate, path: str, messages: Any, options: dict) -> dict:
    """One conversation's finding, JSON-ready: its breaks, each with the template line."""
    options = dict(options)
    found = template.check_append_only(messages, **options)
    source = select_template(template.templates, template.template_name, options.get("tools"))
    lines = source.splitlines()
    breaks = []
    for found_break in found.breaks:
        shown = dataclasses.asdict(found_break)
        line = found_break.line
        shown["source_line"] = lines[line - 1] if line is not None and 0 < line <= len(lines) else None
        breaks.append(shown)
    return {"conversation": path, "checked": found.checked, "append_only": found.append_only,
            "breaks": breaks}


def append_only_text(report: dict) -> list[str]:
    """The finding as a person reads it: a line per break, what each side has there, and the
    template line with a caret."""
    if report["append_only"]:
        return [f"append-only: {report['conversation']} ({report['checked']} prompts, each a "
                "prefix of the next)"]
    count = len(report["breaks"])
    out = [f"not append-only: {report['conversation']} ({count} of {report['checked']} prompts "
           "are no prefix of the whole render)"]
    for found in report["breaks"]:
        where = "" if found["offset"] is None else f" at character {found['offset']}"
        message = "" if found["message"] is None else f", message {found['message']}"
        out.append(f"  turn {found['turn']}{where}{message}: {found['cause']}")
        if found["offset"] is not None:
            out.append(f"    prompt has: {found['prompt']!r}")
            out.append(f"    whole has:  {found['whole']!r}")
        else:
            out.append(f"    {found['prompt']}")
        out += _caret(found["line"], found["column"], found["source_line"])
    return out


def _caret(line: Optional[int], column: Optional[int], text: Optional[str]) -> list[str]:
    if line is None or text is None:
        return []
    start = max(0, (column or 1) - 1 - EXCERPT_WIDTH // 2)
    shown = clip(text[start:], EXCERPT_WIDTH)
    out = [f"    template line {line}" + (f", column {column}" if column else ""), f"      {on_terminal(shown)}"]
    if column:
        out.append("      " + " " * (column - 1 - start) + "^")
    return out
