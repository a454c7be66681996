"""How the `jinjamark` commands show things: parts with input marked, lines of a diff, errors.

Colour comes from the optional `rich` package, and only on a terminal; otherwise input is put in
⟦ ⟧ brackets, which survive a pipe, a file and a CI log. Text from input never reaches a terminal
with its escape characters: ESC is shown as a symbol, so input cannot restyle or clear the screen.
"""
from __future__ import annotations

import re
from typing import Iterable, Optional, Sequence, TextIO

from ..errors import TemplateError
from ..grammar.errors import source_line
from ..evaluation.output import Part

INPUT_STYLE = "reverse red"  # how rich shows input parts on a terminal
LEGEND_STYLE = "dim italic"
OPEN, CLOSE = "\u27e6", "\u27e7"  # ⟦ ⟧: brackets around input parts when there is no colour
LEGEND = f"{OPEN}...{CLOSE} encloses text that came from input; all other text is template text."
WINDOW = 60          # characters of a source line shown each side of an error's caret
MESSAGE_WIDTH = 300  # characters of one line of an error message (it may quote the source)
MESSAGE_LINES = 12

# A line of output as (text, is_input) segments; the newline, if any, ends the last segment.
Line = tuple[tuple[str, bool], ...]


def is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


def wants_color(stream: TextIO) -> bool:
    """Colour only on a terminal, only with the optional `rich` package installed, and only where
    rich will colour (not with NO_COLOR set or on a dumb terminal): input shown in a colour that is
    never drawn would look like template text, so brackets are used instead."""
    if not is_terminal(stream):
        return False
    try:
        from rich.console import Console  # optional: pip install '.[color]' in a checkout
    except ImportError:
        return False
    console = Console(file=stream)
    return console.color_system is not None and not console.no_color


def on_terminal(text: str) -> str:
    """Show ESC as a symbol: input with escape sequences must not restyle or clear the terminal."""
    return text.replace("\x1b", "\u241b")


def clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width] + f"... ({len(text) - width:,} more characters)"


# ---------------------------------------------------------------------------- errors

def describe_error(error: TemplateError) -> str:
    """The error as `TemplateError.__str__` shows it, with the source line cut to a window
    around the caret and the message's lines clipped: a template of megabytes on one line
    must not be echoed whole."""
    message = getattr(error, "message", None) or str(error)
    lines = [clip(line, MESSAGE_WIDTH) for line in message.splitlines()[:MESSAGE_LINES]] or [""]
    if error.lineno is not None:
        shown_name = getattr(error, "filename", None) or error.name or "<template>"
        where = f'  File "{clip(shown_name, MESSAGE_WIDTH)}", line {error.lineno}'
        if error.column is not None:
            where += f", column {error.column}"
        lines.append(where)
        line = source_line(error.source, error.lineno)
        if line is not None and error.column is not None:
            excerpt, caret = window(line.expandtabs(1), error.column - 1)
            lines += ["    " + excerpt, "    " + " " * caret + "^"]
    return on_terminal("\n".join(lines))


def window(line: str, column: int) -> tuple[str, int]:
    """The part of `line` around the 0-based `column`, and the caret's offset in it."""
    column = max(0, min(column, len(line)))
    start, end = max(0, column - WINDOW), min(len(line), column + WINDOW)
    head = "..." if start > 0 else ""
    tail = "..." if end < len(line) else ""
    return head + line[start:end] + tail, len(head) + column - start


# ---------------------------------------------------------------------------- parts

def show_parts(parts: Sequence[Part], out: TextIO, err: TextIO, use_color: bool) -> None:
    """The render on `out` with input marked, and a one-line legend on `err`. On a terminal the
    output is ended with a newline, so that the legend never shares the prompt's last line."""
    if use_color:
        from rich.console import Console
        from rich.text import Text

        text = Text()
        for part in parts:
            text.append(on_terminal(part.text), style=INPUT_STYLE if part.is_input else None)
        if text.plain and not text.plain.endswith("\n"):
            text.append("\n")
        Console(file=out, soft_wrap=True, highlight=False).print(text, end="")
        out.flush()
    else:
        shown = "".join(f"{OPEN}{p.text}{CLOSE}" if p.is_input else p.text for p in parts)
        if is_terminal(out):
            shown = on_terminal(shown)
            if shown and not shown.endswith("\n"):
                shown += "\n"  # keep the legend off the last line of the prompt
        out.write(shown)
        out.flush()
    show_legend(err, use_color)


def show_legend(err: TextIO, use_color: bool) -> None:
    """One line on `err` saying how input is shown: styled as a legend in colour."""
    if not use_color:
        print(LEGEND, file=err)
        return
    from rich.console import Console
    from rich.text import Text
    legend = Text("legend: ", style=LEGEND_STYLE)
    legend.append("input", style=INPUT_STYLE)
    legend.append(" text came from input; all other text is template text.", style=LEGEND_STYLE)
    Console(file=err, soft_wrap=True, highlight=False).print(legend)


# ---------------------------------------------------------------------------- lines

def marked_lines(parts: Iterable[Part]) -> list[Line]:
    """The output cut into lines at "\\n" (only there: a diff of prompts is a diff of their
    newlines), each line its segments, adjacent segments of the same kind merged."""
    lines: list[Line] = []
    current: list[tuple[str, bool]] = []
    for part in parts:
        for piece in re.findall(r"[^\n]*\n|[^\n]+", part.text):
            if current and current[-1][1] == part.is_input:
                current[-1] = (current[-1][0] + piece, part.is_input)
            else:
                current.append((piece, part.is_input))
            if piece.endswith("\n"):
                lines.append(tuple(current))
                current = []
    if current:
        lines.append(tuple(current))
    return lines


def plain(line: Line) -> str:
    return "".join(text for text, _ in line)


def bracketed(line: Line) -> str:
    """A line without its newline, input in ⟦ ⟧ brackets."""
    return "".join(f"{OPEN}{text}{CLOSE}" if is_input else text
                   for text, is_input in _without_newline(line))


def styled(line: Line, style: Optional[str]):
    """A line without its newline as rich Text: the line's style, input in INPUT_STYLE too."""
    from rich.text import Text
    text = Text(style=style or "")
    for piece, is_input in _without_newline(line):
        text.append(on_terminal(piece), style=INPUT_STYLE if is_input else None)
    return text


def _without_newline(line: Line) -> Line:
    if line and line[-1][0].endswith("\n"):
        text, is_input = line[-1]
        return line[:-1] + ((text[:-1], is_input),) if text[:-1] else line[:-1]
    return line
