"""Assistant masks: which tokens a `{% generation %}` body's characters became.

transformers marks every token whose characters overlap a generation span (so a span cut by
truncation keeps its remaining tokens), in one pass over tokens and spans in order. We take the
same spans (from the engine's `generation_spans`, where the text finally lands) and the same
token offsets, and mark the same way, so the masks are equal wherever the spans are.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Optional, Sequence

from .normalize import REASONING_FIELDS

Span = tuple[int, int]


def assistant_mask(offsets: Sequence[Span], spans: Sequence[Span]) -> list[int]:
    """1 for each token whose characters overlap a span, else 0."""
    mask = [0] * len(offsets)
    index, count = 0, len(spans)
    for token, (start, end) in enumerate(offsets):
        while index < count and start >= spans[index][1]:
            index += 1
        if index == count:
            break
        if end > spans[index][0]:
            mask[token] = 1
    return mask


# ---------------------------------------------------------------------------- masks from origins
# For any template, tags or not: which characters an assistant turn wrote, from an origin render
# (chat/origins.py). The convention is TRL's curated one (its `*_training.jinja` templates): for
# each assistant turn, everything the template writes for it after the turn's header, through its
# end-of-turn text (reasoning, content, tool calls, the closing token and what follows it in that
# turn). The header is the text the generation prompt writes after the messages before the turn,
# as far as the turn writes it first:
#
# - it is template text (or the message's role), the same characters as the prompt's there;
# - it is made of whole statements: `'<|im_start|>assistant'` then `'\n' + content` keeps that
#   `\n` in the mask, as TRL's Qwen2.5 template does; only when the turn's first statement already
#   writes content (`'<|im_start|>' + role + '\n' + content`) is the header the characters of that
#   statement the prompt shares.
#
# The template text a template writes after its loop closes the last turn (an end-of-sequence
# token). A turn of another role, masked on request, loses all its leading template text.
# Option `prompt_text=False` leaves out all the generation prompt writes, as far as the turn
# writes the same (`<think>\n\n</think>\n\n` on hybrid reasoning templates), statements or not.

REASONING = REASONING_FIELDS
GENERATED = ("content", "tool_calls") + REASONING  # the fields a model writes
MASK_SOURCES = ("auto", "generation", "origins")  # where a mask comes from (`assistant_mask_source`)


class EmptyMaskError(ValueError):
    """A mask from origins that masks nothing, for a conversation with assistant content: the
    template does not write that content where a turn can be found (training on it would
    silently train on nothing)."""


@dataclass(frozen=True)
class MaskOptions:
    """What an assistant mask covers. `roles`: the roles of the turns masked; `turns`: or these
    message indices instead; `reasoning`: keep the reasoning in the mask; `prompt_text`: keep the
    text the generation prompt writes beyond the role header (False: leave out all of it)."""
    roles: tuple = ("assistant",)
    turns: Optional[tuple] = None
    reasoning: bool = True
    prompt_text: bool = True

    def masked(self, index: int, message: Any) -> bool:
        if self.turns is not None:
            return index in self.turns
        return isinstance(message, dict) and message.get("role") in self.roles


def origin_spans(runs: list, messages: list, prompts: dict, options: MaskOptions = MaskOptions(),
                 ) -> list[Span]:
    """The (start, end) character spans of the masked turns in the output of `runs` (an origin
    render of `messages`); `prompts`: for each masked turn, the text the template's generation
    prompt writes after the messages before it (None: the turn is not the assistant's, and its
    header is all the template text it writes before the message's data)."""
    masked = {i for i, m in enumerate(messages) if options.masked(i, m)}
    header = _headers(runs, masked, prompts, options.prompt_text)
    tail = _tail(runs, masked)
    spans: list[Span] = []
    pos = 0
    for index, run in enumerate(runs):
        end = pos + len(run.text)
        start = pos + header.get(index, 0)
        if start < end and (index >= tail or _in_mask(run, masked, options)):
            if spans and spans[-1][1] == start:
                spans[-1] = (spans[-1][0], end)
            else:
                spans.append((start, end))
        pos = end
    return spans


def _tail(runs: list, masked: set) -> int:
    """Where the template text that ends the last turn starts, when that turn is masked: what
    a template writes after its loop over the messages (an end-of-sequence token) closes the last
    turn. Nothing (len(runs)) otherwise."""
    end = len(runs)
    while end and runs[end - 1].source is None and runs[end - 1].turn is None \
            and not runs[end - 1].prompt:
        end -= 1
    last = runs[end - 1] if end else None
    if last is None or last.prompt:
        return len(runs)
    turn = last.turn if last.turn is not None else getattr(last.source, "message", None)
    return end if turn in masked else len(runs)


def _in_mask(run: Any, masked: set, options: MaskOptions) -> bool:
    source = run.source
    if source is None:  # template text: of a masked turn, not of the generation prompt
        return run.turn in masked and not run.prompt
    sources = getattr(source, "sources", None) or (source,)
    if not all(s.message in masked for s in sources):  # another message's data: never
        return False
    if not options.reasoning and any(_field(s) in REASONING for s in sources):
        return False
    return run.turn in masked or all(_field(s) in GENERATED for s in sources)


def _field(source: Any) -> str:
    return source.field.split(".", 1)[0].split("[", 1)[0]


def _headers(runs: list, masked: set, prompts: dict, by_statement: bool) -> dict[int, int]:
    """For the runs that open a masked turn: how many of their characters are its header."""
    cut: dict[int, int] = {}
    index = 0
    while index < len(runs):
        turn = runs[index].turn
        if turn not in masked or (index and runs[index - 1].turn == turn):
            index += 1
            continue
        end = index
        while end < len(runs) and runs[end].turn == turn:
            end += 1
        _header(runs, index, end, turn, prompts.get(turn), by_statement, cut)
        index = end
    return cut


def _header(runs: list, start: int, end: int, turn: int, prompt: Optional[str], by_statement: bool,
            cut: dict) -> None:
    """Mark in `cut` the header among runs[start:end] (one turn): the statements, whole, whose
    text is the generation prompt's from where the one before ended; when the first is not, the
    characters it shares with the prompt (the header and content in one statement). Without
    `by_statement`, the characters shared with the prompt, statements or not."""
    matched = 0
    index = start
    while index < end and (prompt is None or matched < len(prompt)):
        group = index + 1  # the runs written by one statement
        while group < end and runs[group].statement is runs[index].statement:
            group += 1
        found = {}
        whole = True
        at = matched
        for i in range(index, group):
            run = runs[i]
            if run.prompt or not (run.source is None or _is_role(run.source, turn)):
                whole = False
                break
            same = _common(run.text, prompt, at)
            if same:
                found[i] = same
                at += same
            if same < len(run.text):
                whole = False
                break
        if whole or not by_statement or not matched:
            cut.update(found)
            matched = at
        if not whole:
            return
        index = group


def _is_role(source: Any, turn: int) -> bool:
    return getattr(source, "message", None) == turn and source.field == "role"


def _common(text: str, prompt: str, at: int) -> int:
    """How many characters of `text` equal `prompt`'s from `at` on (all: no prompt to match)."""
    if prompt is None:
        return len(text)
    n = 0
    for a, b in zip(text, prompt[at:]):
        if a != b:
            break
        n += 1
    return n


def has_assistant_content(messages: Iterable[Any], options: MaskOptions = MaskOptions()) -> bool:
    """Whether a masked message carries content, reasoning or tool calls."""
    return any(options.masked(i, m) and any(m.get(f) for f in GENERATED)
               for i, m in enumerate(messages) if isinstance(m, dict))


def from_origins(template: Any, source: str) -> bool:
    """Whether a template's masks come from origins for `assistant_mask_source=source`: asked
    for, or (`auto`) on a template without `{% generation %}` tags, where transformers' masks
    are all zeros. A source not in MASK_SOURCES is a ValueError."""
    check_mask_source(source)
    return source == "origins" or (source == "auto" and not has_generation_tags(template))


def check_mask_source(source: str) -> None:
    if source not in MASK_SOURCES:
        raise ValueError(f"assistant_mask_source must be one of {MASK_SOURCES}, not {source!r}")


def has_generation_tags(template: Any) -> bool:
    """Whether a compiled template has `{% generation %}` tags (found once per template)."""
    found = template.memo.get(GENERATION_TAGS)
    if found is None:
        from ..ext.shipped import Generation  # noqa: PLC0415 - the tag is an extension's
        from ..grammar import ast  # noqa: PLC0415
        found = template.memo[GENERATION_TAGS] = any(type(n) is Generation for n in ast.walk(template.tree))
    return found


GENERATION_TAGS = "generation tags"  # the key of a compiled template's memo
