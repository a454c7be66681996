"""`continue_final_message`: the prompt ends inside the final message, so the model continues it.

transformers appends a tag to the final message, renders, and cuts the output at the tag's last
occurrence (stripping trailing whitespace where the template trimmed the tag's space). We need no
tag in the text: we render with only the continued value marked as input, and the last input
character of that render is where the final message ends. The cut reproduces transformers' result,
including the characters its tag kept from being trimmed (`{{ content | trim }}` with "Hi  "
followed by a space from the template gives "Hi  ", else "Hi"). What we cannot see is a value
printed with nothing left of it (an empty or blank message the template trims away): that is
refused with transformers' "does not appear" error.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence, Union

from ..values.marks import mark
from ..evaluation.output import Part
from .normalize import REASONING_FIELDS

TAG = "CONTINUE_FINAL_MESSAGE_TAG "  # transformers' tag: used for a blank final text only


@dataclass
class Continuation:
    """Which values of the final message are continued, and the text it ends with."""
    targets: list  # (container, key) pairs whose value is the continued text
    final: str


def prepare(chat: list, option: Union[bool, str], source: str) -> Continuation:
    """transformers' checks before rendering, on the template-visible (plain) messages."""
    if not chat:
        raise ValueError("continue_final_message is set but the conversation is empty!")
    field = option if isinstance(option, str) else "content"
    last = chat[-1] = dict(chat[-1])  # ours to edit: the walk shares what was plain already
    final = last.get(field)
    if final is None:
        raise ValueError(f'continue_final_message is set but the final message has no "{field}" to continue!')
    fields = [field]
    if field in REASONING_FIELDS:  # the reasoning is under several names: any of them counts
        fields = [name for name in REASONING_FIELDS if last.get(name) == final]
    if not any(name in source for name in fields):
        raise ValueError(f'continue_final_message is set to "{field}" but this is not an accepted '
                         "field in the chat_template")
    if isinstance(final, (list, tuple)):
        blocks = list(final)
        for i in range(len(blocks) - 1, -1, -1):
            if "text" in blocks[i]:
                text = blocks[i]["text"]
                _check_text(text)
                blocks[i] = target = dict(blocks[i])  # ours to edit, as the message
                copy = tuple(blocks) if isinstance(final, tuple) else blocks
                for key, value in list(last.items()):  # every name it is under (reasoning aliases)
                    if value is final:
                        last[key] = copy
                return Continuation([(target, "text")], text)
        raise ValueError("continue_final_message is set but we could not find any text to continue in "
                         "the final message!")
    _check_text(final)
    return Continuation([(last, name) for name in fields], final)


def _check_text(value: Any) -> None:
    if not isinstance(value, str):  # transformers adds its tag with +, which fails the same way
        raise TypeError(f"unsupported operand type(s) for +: '{type(value).__name__}' and 'str'")


def mark_targets(cont: Continuation, tagged: bool) -> None:
    """Mark the continued values as input (in a context whose other data is not marked); `tagged`
    appends transformers' tag, for a blank final text (see `locate`)."""
    for container, key in cont.targets:
        container[key] = mark(container[key] + TAG if tagged else container[key])


@dataclass
class Where:
    """Where transformers' cut falls in a render: at `end`, then trailing whitespace stripped or
    not; `tags` are the copies of its tag that an earlier print of a tagged text left, removed."""
    end: int
    strip: bool = False
    tags: tuple = ()


def locate(parts: Sequence[Part], cont: Continuation, tagged: bool) -> Where:
    """Where to cut a render that marked only the final text: after its last input character.

    A blank final text may print as nothing, and nothing cannot be found; for it (only) we render
    as transformers does, with its tag appended, and the marks find the tag wherever the template
    put it (a user's text holding the same words cannot move the cut). The tag never reaches the
    output: the cut is before it, and copies printed earlier are taken out."""
    text = "".join(p.text for p in parts)
    end = pos = 0
    runs = []
    for part in parts:
        if part.is_input:
            runs.append((pos, pos + len(part.text)))
            end = pos + len(part.text)
        pos += len(part.text)
    if end == 0 or cont.final.strip() not in text:
        raise ValueError(
            "continue_final_message is set but the final message does not appear in the chat after "
            "applying the chat template! This can happen if the chat template deletes portions of "
            "the final message. Please verify the chat template and final message in your chat to "
            "ensure they are compatible."
            f"Final message to continue: {cont.final.strip()}\nRendered chat:\n{text}")
    if not tagged:
        return Where(end)
    word = TAG.strip()
    start = text.rfind(word, 0, end)
    if start < 0:
        raise ValueError("continue_final_message is set but the final message does not appear in the "
                         f"chat after applying the chat template! Rendered chat:\n{text}")
    tags = []
    for a, b in runs:
        found = text.find(word, a, min(b, start))
        while found >= 0 and found + len(word) <= b:
            stop = found + len(word) + (text[found + len(word):found + len(TAG)] == " ")
            tags.append((found, min(stop, b)))
            found = text.find(word, stop, min(b, start))
    return Where(start, text[start:start + len(TAG)] != TAG, tuple(tags))


def cut(parts: Sequence[Part], where: Where, cont: Continuation, tagged: bool) -> list[Part]:
    """The parts up to the cut, as transformers' cut at its tag leaves them."""
    end, strip = where.end, where.strip
    out: list[Part] = []
    pos = 0
    for part in parts:
        if pos >= end:
            break
        piece = part.text[:end - pos]
        piece = _without(piece, pos, where.tags)
        out.append(part if len(piece) == len(part.text) else Part(piece, part.is_input))
        pos += len(part.text)
    out = _merged([p for p in out if p.text])
    if strip:
        while out and not out[-1].text.rstrip():
            out.pop()
        if out:
            out[-1] = Part(out[-1].text.rstrip(), out[-1].is_input)
    return out if tagged else _with_trimmed_whitespace(out, parts, end, cont)


def _with_trimmed_whitespace(out: list[Part], parts: Sequence[Part], end: int,
                             cont: Continuation) -> list[Part]:
    """Where the template trimmed the final text (its last printed character is not the text's
    last, whitespace), transformers' tag kept that whitespace from the trim, and keeps it in the
    result when the template's next character is a space (else its rstrip removes it again)."""
    after = "".join(p.text for p in parts)[end:end + 1]
    trailing = cont.final[len(cont.final.rstrip()):]
    last = out[-1].text[-1] if out and out[-1].text else ""
    if trailing and not last.isspace() and after == " ":
        if out and out[-1].is_input:
            out[-1] = Part(out[-1].text + trailing, True)
        else:
            out.append(Part(trailing, True))
    return out


def _without(text: str, offset: int, ranges: Sequence[tuple[int, int]]) -> str:
    """`text` (found at `offset` of the output) without the characters in `ranges`."""
    for a, b in reversed(ranges):
        a, b = max(a - offset, 0), min(b - offset, len(text))
        if a < b:
            text = text[:a] + text[b:]
    return text


def _merged(parts: list[Part]) -> list[Part]:
    """Neighbours with the same flag as one part (after a removal joined them)."""
    out: list[Part] = []
    for part in parts:
        if out and out[-1].is_input == part.is_input:
            out[-1] = Part(out[-1].text + part.text, part.is_input)
        else:
            out.append(part)
    return out
