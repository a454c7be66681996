"""Tokenization that honours the marks: special tokens are recognised in template text only.

A tokenizer splits its input on special tokens before anything else. We do that split ourselves,
on the rendered parts: an occurrence of a special token counts only if every one of its characters
came from the template. The text between those occurrences is encoded with special-token matching
turned off, so a user who types `<|im_end|>` gets the ids of the characters, not the control token.
Where no input holds a special token, the ids are those of encoding the whole string.

Works with a `tokenizers.Tokenizer` and with a transformers tokenizer (fast or slow); needs the
optional extra `hf` (`pip install 'jinjamark[hf]'`). Neither library is imported by jinjamark itself.
"""
from __future__ import annotations

import re
import threading
from typing import Any, Iterable, Sequence

from ..output import Part

_flag_lock = threading.Lock()


def encode(parts: Sequence[Part], tokenizer: Any) -> list[int]:
    """Token ids for rendered parts; special tokens are only parsed in template parts."""
    specials = special_tokens(tokenizer)
    ids: list[int] = []
    for text, special in segments(parts, specials):
        if special:
            ids.append(specials[text])
        elif text:
            ids.extend(_encode_text(tokenizer, text))
    return ids


def segments(parts: Sequence[Part], specials: dict[str, int]) -> list[tuple[str, bool]]:
    """The text cut at every special token written wholly by the template: (text, is_special)."""
    text = "".join(p.text for p in parts)
    if not specials:
        return [(text, False)]
    flags = _input_flags(parts)
    pattern = re.compile("|".join(re.escape(s) for s in sorted(specials, key=len, reverse=True)))
    out: list[tuple[str, bool]] = []
    pos = 0
    for m in pattern.finditer(text):
        if any(flags[m.start():m.end()]):
            continue  # some of it came from input: it is text, never a control token
        out.append((text[pos:m.start()], False))
        out.append((m.group(), True))
        pos = m.end()
    out.append((text[pos:], False))
    return [(t, s) for t, s in out if t or s]


def _input_flags(parts: Iterable[Part]) -> list[bool]:
    flags: list[bool] = []
    for p in parts:
        flags.extend([p.is_input] * len(p.text))
    return flags


def special_tokens(tokenizer: Any) -> dict[str, int]:
    """The special added tokens of a tokenizer: content -> id."""
    backend = _backend(tokenizer)
    if backend is not None:
        decoder = backend.get_added_tokens_decoder()
    else:
        decoder = tokenizer.added_tokens_decoder
    found = {tok.content: i for i, tok in decoder.items() if getattr(tok, "special", False)}
    for content in getattr(tokenizer, "all_special_tokens", ()) or ():
        if content not in found:
            found[content] = tokenizer.convert_tokens_to_ids(content)
    return found


def _backend(tokenizer: Any) -> Any:
    """The `tokenizers.Tokenizer` behind a tokenizer, if there is one."""
    if hasattr(tokenizer, "encode_special_tokens") and hasattr(tokenizer, "get_added_tokens_decoder"):
        return tokenizer
    return getattr(tokenizer, "backend_tokenizer", None)


def _encode_text(tokenizer: Any, text: str) -> list[int]:
    """Ids of `text` with special tokens treated as ordinary characters."""
    if _backend(tokenizer) is tokenizer:
        with _flag_lock:  # the flag lives on the tokenizer: set it only for this call
            saved = tokenizer.encode_special_tokens
            tokenizer.encode_special_tokens = True
            try:
                return tokenizer.encode(text, add_special_tokens=False).ids
            finally:
                tokenizer.encode_special_tokens = saved
    return list(tokenizer.encode(text, add_special_tokens=False, split_special_tokens=True))
