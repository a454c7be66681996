"""Token ids and character offsets of rendered parts, with control tokens from template text only.

The fast way, and the usual case: encode the whole rendered text in one call of the tokenizer,
exactly as transformers does, then look at the control-token ids it produced. When every one of
them stands on characters the template wrote, those are the ids (equal to transformers'). Only
when a control token touches input (an injection, or a token the template builds from input,
like `'<|' + role + '|>'`) is the text encoded again in pieces: cut at every control token, the
template's own become their ids, those touching input are encoded as plain text (no added token
matched, as transformers' `_encode_without_added_tokens`), and the text between is encoded as
usual (other added tokens are matched there, as transformers matches them).

Works with a `tokenizers.Tokenizer` or a transformers fast tokenizer (its `backend_tokenizer`);
a slow transformers tokenizer takes the piecewise way every time and gives no offsets.
"""
from __future__ import annotations

import re
import threading
from bisect import bisect_right
from typing import Any, Mapping, Optional, Sequence

from ..evaluation.output import Part

Offsets = list[tuple[int, int]]
_backend_lock = threading.Lock()


class Encoded:
    """The ids of one rendered text and, when the tokenizer gives them, each id's characters
    (asked only for assistant masks: taken from the tokenizer's encoding when first asked)."""

    __slots__ = ("ids", "_offsets", "_encoding")

    def __init__(self, ids: list[int], offsets: Optional[Offsets] = None, encoding: Any = None) -> None:
        self.ids = ids
        self._offsets = offsets
        self._encoding = encoding

    @property
    def offsets(self) -> Optional[Offsets]:
        if self._offsets is None and self._encoding is not None:
            self._offsets = self._encoding.offsets
        return self._offsets


class InputRuns:
    """The rendered text and where its input runs are, from the parts' boundaries (no
    per-character list)."""

    __slots__ = ("text", "starts", "ends")

    def __init__(self, parts: Sequence[Part]) -> None:
        self.text = "".join([p.text for p in parts])
        self.starts: list[int] = []
        self.ends: list[int] = []
        pos = 0
        for text, is_input in parts:
            end = pos + len(text)
            if is_input and end > pos:
                self.starts.append(pos)
                self.ends.append(end)
            pos = end

    def touches(self, start: int, end: int) -> bool:
        """Whether any character in [start, end) came from input."""
        i = bisect_right(self.ends, start)  # the first input run that ends after `start`
        return i < len(self.starts) and self.starts[i] < end


def backend_of(tokenizer: Any) -> Any:
    """The `tokenizers.Tokenizer` behind a tokenizer, if there is one. A transformers tokenizer's
    is asked for first: asking it for an attribute it lacks goes through its `__getattr__`,
    about 1 us each, and a whole call asks several times."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:
        return backend
    if hasattr(tokenizer, "encode_special_tokens") and hasattr(tokenizer, "get_added_tokens_decoder"):
        return tokenizer
    return None


def require_tokenizer(tokenizer: Any) -> None:
    """A `TypeError` naming what a tokenizer must be, for anything else (not an AttributeError
    from deep inside the encoding)."""
    if backend_of(tokenizer) is not None or (hasattr(tokenizer, "added_tokens_decoder")
                                             and hasattr(tokenizer, "encode")):
        return
    hint = (": load it first, with transformers.AutoTokenizer.from_pretrained(...) or "
            "tokenizers.Tokenizer.from_file(...)" if isinstance(tokenizer, (str, bytes)) or
            hasattr(tokenizer, "__fspath__") else "")
    raise TypeError("the tokenizer must be a tokenizers.Tokenizer or a transformers tokenizer "
                    f"(with added_tokens_decoder and encode), not {type(tokenizer).__name__}{hint}")


def encode_runs(batch: Sequence[InputRuns], tokenizer: Any, control: Mapping[str, int]) -> list[Encoded]:
    """Each text of `batch` encoded with `control` tokens recognised in template text only."""
    backend = backend_of(tokenizer)
    if backend is None:
        require_tokenizer(tokenizer)
        return [_encode_in_pieces(runs, tokenizer, None, control) for runs in batch]
    encodings = _backend_encode(backend, [runs.text for runs in batch])
    contents = _contents(control)
    out = []
    for runs, encoding in zip(batch, encodings):
        ids = encoding.ids
        if _all_from_template(runs, encoding, ids, contents):
            out.append(Encoded(ids, encoding=encoding))
        else:
            out.append(_encode_in_pieces(runs, tokenizer, backend, control))
    return out


def _all_from_template(runs: InputRuns, encoding: Any, ids: list[int], contents: dict[int, str]) -> bool:
    """Whether every control-token id the tokenizer produced stands on template characters.
    Only the control ids among the tokens that cover input runs are looked at (each occurrence
    found by `list.index`, in C), not every token. A token
    that strips whitespace beside it (lstrip/rstrip) spans that whitespace too: its own text is
    what must be the template's."""
    if not runs.starts:
        return True
    present = contents.keys() & ids
    if not present:
        return True
    # Only a control token among those that cover an input run can stand on input (tokens are
    # in the order of their characters): two look-ups a run, not three a control token.
    suspects: set = set()
    for start, end in zip(runs.starts, runs.ends):
        first, last = encoding.char_to_token(start), encoding.char_to_token(end - 1)
        if first is None or last is None:  # a character no token covers (a normalizer's)
            suspects = present
            break
        suspects.update(ids[first:last + 1])
    text = runs.text
    for token_id in present & suspects:
        content = contents[token_id]
        at = ids.index(token_id)
        while True:
            start, end = encoding.token_to_chars(at)
            found = text.find(content, start, end)
            if found < 0 or runs.touches(found, found + len(content)):
                return False  # input characters, or not the token's own text (a normalizer made it)
            try:
                at = ids.index(token_id, at + 1)
            except ValueError:
                break
    return True


_inverses: dict[int, tuple[Mapping[str, int], dict[int, str]]] = {}


def _contents(control: Mapping[str, int]) -> dict[int, str]:
    """id -> content of the control tokens; kept for the control dicts `control_tokens` caches."""
    found = _inverses.get(id(control))
    if found is not None and found[0] is control:
        return found[1]
    inverse = {token_id: content for content, token_id in control.items()}
    if len(_inverses) >= 64:
        _inverses.clear()
    _inverses[id(control)] = (control, inverse)
    return inverse


def _backend_encode(backend: Any, texts: list[str]) -> list[Any]:
    """The backend's encodings of `texts` as transformers gets them: added tokens (special too)
    matched, nothing added, no truncation or padding set on the backend."""
    if not backend.encode_special_tokens and backend.truncation is None and backend.padding is None:
        return _one_or_batch(backend, texts)
    with _backend_lock:  # settings of the tokenizer object: changed for this call only
        saved = backend.encode_special_tokens, backend.truncation, backend.padding
        backend.encode_special_tokens = False
        backend.no_truncation()
        backend.no_padding()
        try:
            return _one_or_batch(backend, texts)
        finally:
            backend.encode_special_tokens = saved[0]
            if saved[1] is not None:
                backend.enable_truncation(**saved[1])
            if saved[2] is not None:
                backend.enable_padding(**saved[2])


def _one_or_batch(backend: Any, texts: list[str]) -> list[Any]:
    if len(texts) == 1:
        return [backend.encode(texts[0], add_special_tokens=False)]
    return backend.encode_batch(texts, add_special_tokens=False)


# ---------------------------------------------------------------------------- in pieces

def _encode_in_pieces(runs: InputRuns, tokenizer: Any, backend: Any,
                      control: Mapping[str, int]) -> Encoded:
    """Cut at every control token: the template's become their ids, those touching input are
    plain text; the stretches between are encoded as usual (in one batch call)."""
    text = runs.text
    pieces: list[tuple[str, int, int, Optional[int]]] = []  # (kind, start, end, id)
    pos = 0
    for m in control_pattern(control).finditer(text):
        start, end = m.span()
        if start > pos:
            pieces.append(("text", pos, start, None))
        if runs.touches(start, end):
            pieces.append(("plain", start, end, None))
        else:
            pieces.append(("token", start, end, control[m.group()]))
        pos = end
    if pos < len(text):
        pieces.append(("text", pos, len(text), None))
    stretches = [(a, text[a:b]) for kind, a, b, _ in pieces if kind == "text"]
    encoded = iter(_encode_stretches(stretches, tokenizer, backend, control))
    ids: list[int] = []
    offsets: Optional[Offsets] = [] if backend is not None else None
    for kind, start, end, token_id in pieces:
        if kind == "token":
            part_ids, part_offsets = [token_id], [(0, end - start)]
        elif kind == "plain":
            part_ids = plain_ids(tokenizer, backend, text[start:end], control, start > 0)
            part_offsets = [(0, end - start)] * len(part_ids)
        else:
            part_ids, part_offsets = next(encoded)
        ids.extend(part_ids)
        if offsets is not None:
            offsets.extend((start + a, start + b) for a, b in part_offsets)
    return Encoded(ids, offsets)


# A piece from the middle of a text is encoded after a newline, whose ids are then dropped (as
# transformers encodes its sanitised pieces): a tokenizer that marks the start of a text (a
# SentencePiece '▁' prepended to the first word) must not mark the start of every piece.
NEWLINE = "\n"


def _encode_stretches(stretches: list[tuple[int, str]], tokenizer: Any, backend: Any,
                      control: Mapping[str, int]) -> list[tuple[list[int], Offsets]]:
    """Text holding no control token, encoded as usual; should the tokenizer still find one
    there (a token the cut did not see), that stretch is encoded as plain text."""
    control_ids = frozenset(control.values())
    out = []
    if backend is None:
        encode = lambda t: list(tokenizer.encode(t, add_special_tokens=False))  # noqa: E731
        for start, stretch in stretches:
            ids = _in_the_middle(encode, stretch) if start else encode(stretch)
            if not control_ids.isdisjoint(ids):
                ids = plain_ids(tokenizer, None, stretch, control, start > 0)
            out.append((ids, []))
        return out
    texts = [NEWLINE + stretch if start else stretch for start, stretch in stretches]
    newline = _backend_encode(backend, [NEWLINE])[0].ids
    for (start, stretch), encoding in zip(stretches, _backend_encode(backend, texts) if texts else ()):
        ids, offsets = encoding.ids, encoding.offsets
        if start and ids[:len(newline)] == newline:
            ids, offsets = ids[len(newline):], [(max(a - 1, 0), b - 1) for a, b in offsets[len(newline):]]
        elif start:
            alone = _backend_encode(backend, [stretch])[0]
            ids, offsets = alone.ids, alone.offsets
        if not control_ids.isdisjoint(ids):
            ids = plain_ids(tokenizer, backend, stretch, control, start > 0)
            offsets = [(0, len(stretch))] * len(ids)
        out.append((ids, offsets))
    return out


def plain_ids(tokenizer: Any, backend: Any, text: str, control: Mapping[str, int],
              middle: bool = False) -> list[int]:
    """`text` as plain characters: the tokenizer's pipeline without its added tokens (what
    transformers' `_encode_without_added_tokens` does), from the `middle` of a text or not.
    Refused, as transformers refuses it, when even that gives a control token's id (the model's
    vocabulary holds it as text)."""
    if backend is None:
        without = getattr(tokenizer, "_encode_without_added_tokens", None)
        encode = without or (lambda t: tokenizer.encode(t, add_special_tokens=False,  # noqa: E731
                                                        split_special_tokens=True))
    else:
        encode = lambda t: _pipeline(backend, t)  # noqa: E731
    ids = _in_the_middle(encode, text) if middle else list(encode(text))
    if text in control and control[text] in ids:
        raise ValueError(f"Can't sanitize {text!r}: the tokenizer produces it from plain text")
    return ids


def _pipeline(backend: Any, text: str) -> list[int]:
    """The backend's normalizer, pre-tokenizer and model, without its added tokens."""
    normalized = backend.normalizer.normalize_str(text) if backend.normalizer else text
    splits = ([s for s, _ in backend.pre_tokenizer.pre_tokenize_str(normalized)]
              if backend.pre_tokenizer else [normalized])
    return [token.id for split in splits for token in backend.model.tokenize(split)]


def _in_the_middle(encode: Any, text: str) -> list[int]:
    newline, ids = list(encode(NEWLINE)), list(encode(NEWLINE + text))
    return ids[len(newline):] if ids[:len(newline)] == newline else list(encode(text))


_patterns: dict[frozenset, re.Pattern] = {}


def control_pattern(control: Mapping[str, int]) -> re.Pattern:
    """A regex of the control tokens, longest first (a token wins over those it contains)."""
    key = frozenset(control)
    pattern = _patterns.get(key)
    if pattern is None:
        alternatives = "|".join(re.escape(t) for t in sorted(control, key=len, reverse=True))
        pattern = re.compile(alternatives or "(?!)")
        if len(_patterns) < 64:
            _patterns[key] = pattern
    return pattern
