"""Control tokens a template builds from input and its own text together.

`'<|' + message['role'] + '|>'` (Phi-3, GLM-4, Jamba) writes a turn token whose middle is the
message's role. jinjamark recognises a control token only where every character is the
template's, so such a token is spelled out as characters whenever its input part is marked (a
role outside `trusted_roles`): no injection, but the model sees no turn token either. The host
should know: `analyze()` and `jinjamark check` list these tokens, found by an origin render of a
small conversation whose roles are input.
"""
from __future__ import annotations

import re
from typing import Any, Mapping, NamedTuple, Optional

# What a control token looks like: `<|name|>`, `<name>`, `[NAME]`, `<｜name｜>`
TOKEN_SHAPE = re.compile(r"<[|\uff5c]?/?[A-Za-z_][\w.\- ]{0,40}[|\uff5c]?>|\[/?[A-Z_]{2,20}\]")
PROBE = [{"role": "system", "content": "S"}, {"role": "user", "content": "U"},
         {"role": "assistant", "content": "A"}, {"role": "user", "content": "V"}]


class AssembledToken(NamedTuple):
    """A control-token-shaped text the template wrote from its own text and input together:
    the text, the input fields that went in, and the template line that wrote it."""
    text: str
    fields: tuple
    line: Optional[int]


def assembled_tokens(source: str, special_tokens: Optional[Mapping[str, Any]] = None) -> tuple:
    """The control-token-shaped texts a render of a small conversation (roles as input)
    assembles from template text and input, each once; () when the probe cannot render."""
    from .template import ChatTemplate  # noqa: PLC0415 - template.py imports the analysis
    chat = ChatTemplate(source, special_tokens=special_tokens, trusted_roles=())
    try:
        parts = chat.render_parts(PROBE, add_generation_prompt=True, origins=True)
    except Exception:  # noqa: BLE001 - a template that refuses the probe: nothing to report
        return ()
    return tuple(_found(parts))


def _found(parts: list) -> list[AssembledToken]:
    text = "".join(p.text for p in parts)
    owner = []
    for part in parts:
        owner.extend([part] * len(part.text))
    seen, out = set(), []
    for match in TOKEN_SHAPE.finditer(text):
        inside = {id(p): p for p in owner[match.start():match.end()]}.values()
        inputs = [p for p in inside if p.is_input]
        if not inputs or len(inputs) == len(inside) or match.group(0) in seen:
            continue
        seen.add(match.group(0))
        fields = tuple(sorted({p.field for p in inputs if p.field}))
        line = next((p.line for p in inside if not p.is_input), None)
        out.append(AssembledToken(match.group(0), fields, line))
    return out
