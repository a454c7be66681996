"""`jinjamark render --origins` and `jinjamark tokens --mask`: where each character came from,
and which tokens an assistant mask covers, in a terminal."""
from __future__ import annotations

import json
import sys
from typing import Any, Sequence, TextIO

from .show import INPUT_STYLE, LEGEND_STYLE, on_terminal

PROMPT_STYLE = "bold magenta"
MASK_OPEN, MASK_CLOSE = "\u2039", "\u203a"  # ‹ › around masked tokens without colour
MASK_STYLE = "underline"


def describe(part: Any) -> str:
    """What a part is: where input came from, or which turn template text was written for."""
    if part.is_input:
        return f"input    {part.origin}"
    where = "generation prompt" if part.generation_prompt else \
        "outside any turn" if part.turn is None else f"turn {part.turn}"
    return f"template {where}"


def show_origins(parts: Sequence[Any], out: TextIO, use_color: bool) -> None:
    """One line per part: the template line that wrote it, its origin, its text."""
    rows = [(f"{part.line or '-':>4}", describe(part), json.dumps(part.text, ensure_ascii=False))
            for part in parts]
    width = max((len(r[1]) for r in rows), default=0)
    if not use_color:
        for line, origin, text in rows:
            out.write(f"{line}  {origin:<{width}}  {on_terminal(text) if out.isatty() else text}\n")
        return
    from rich.console import Console
    from rich.text import Text
    console = Console(file=out, soft_wrap=True, highlight=False)
    for part, (line, origin, text) in zip(parts, rows):
        style = INPUT_STYLE if part.is_input else PROMPT_STYLE if part.generation_prompt else None
        shown = Text(f"{line}  ", style=LEGEND_STYLE)
        shown.append(f"{origin:<{width}}  ", style=style)
        shown.append(on_terminal(text), style=style)
        console.print(shown)


def origins_json(parts: Sequence[Any]) -> list[dict]:
    """`--origins --json`: each part as an object."""
    return [{"text": p.text, "is_input": p.is_input, "turn": p.turn,
             "generation_prompt": p.generation_prompt, "line": p.line,
             "message": p.message,
             "field": p.field} for p in parts]


def masked_pieces(pieces: list[tuple[str, str]], mask: list[int]) -> list:
    """The pieces of `token_pieces` (one per token) with `masked` added to each."""
    return [(*piece, bool(flag)) for piece, flag in zip(pieces, mask)]


def write_mask_legend(err: TextIO = sys.stderr) -> None:
    err.write(f"{MASK_OPEN}...{MASK_CLOSE} (underlined in colour) a token in the assistant mask.\n")
