"""Encoding sessions: a server that receives the whole conversation on every request tokenizes
only what is new.

`ChatTemplate.session(tokenizer, ...)` keeps the previous request's text, input marks and ids.
Each `encode` renders the conversation (marked, as `encode` does) and finds where its text and
marks stop agreeing with the previous one's. The ids are kept up to the last **safe boundary**
before that point: the end of a control token the template wrote. A tokenizer cuts its input at
added tokens before anything else (normalizer, pre-tokenizer, model), so what follows such a
token is tokenized as if nothing came before it; the rest is encoded after that very token,
whose id is then dropped (a tokenizer that marks the start of a text, such as SentencePiece's
prepended '▁', would otherwise mark it there; one that swallows whitespace after it, `rstrip`,
swallows it there too). A token whose characters are more than its text (it swallowed the
whitespace before it, `lstrip`) is no boundary. Without one, or with a tokenizer that gives no offsets, the whole
text is encoded, as `encode` does.

Every step over the whole request is made in C (comparing its parts with the previous request's,
copying the kept ids), so that what a request costs in Python grows with its new text, not with
the conversation.

A session belongs to one conversation (one cache); its calls are serialised by a lock, so a
session shared by threads stays consistent, but interleaving two conversations in one session
just re-encodes.
"""
from __future__ import annotations

import threading
from bisect import bisect_right
from itertools import accumulate, islice
from operator import itemgetter
from typing import TYPE_CHECKING, Any, NamedTuple, Optional, Sequence

from ..evaluation.output import Part
from .encoding import InputRuns, backend_of, encode_runs
from .prefixes import common_prefix

if TYPE_CHECKING:
    from .template import ChatTemplate


class SessionEncoding(NamedTuple):
    """One request's ids (equal to a fresh `encode`); `reused`: how many leading ids equal the
    previous request's (what a KV cache can keep); `tokenized`: how many characters were
    encoded for this request (the new text, from the last safe boundary on)."""
    input_ids: list[int]
    reused: int
    tokenized: int


class _Request(NamedTuple):
    """A rendered request as the session keeps it: its parts, and where each ends."""
    parts: list[Part]
    ends: list[int]

    @property
    def length(self) -> int:
        return self.ends[-1] if self.ends else 0


class _Previous(NamedTuple):
    request: _Request
    ids: list[int]
    boundaries: list[tuple[int, int]]  # (character where a safe boundary is, ids before it), sorted


class EncodingSession:
    """See the module. Made by `ChatTemplate.session`."""

    def __init__(self, chat: "ChatTemplate", tokenizer: Any, tools: Any = None,
                 documents: Any = None, **kwargs: Any) -> None:
        from .loading import select_template  # noqa: PLC0415
        from .tokenization import control_tokens  # noqa: PLC0415
        self.chat, self.tokenizer = chat, tokenizer
        self.options = dict(tools=tools, documents=documents, **kwargs)
        template = chat.compiled(select_template(chat.templates, chat.template_name, tools))
        self.control = control_tokens(tokenizer, template)
        self.content = {token_id: content for content, token_id in self.control.items()}
        self.incremental = backend_of(tokenizer) is not None  # offsets are needed to find boundaries
        self._previous: Optional[_Previous] = None
        self._lock = threading.Lock()

    def encode(self, messages: Any, add_generation_prompt: bool = True) -> SessionEncoding:
        """The ids of `messages` rendered (as `ChatTemplate.encode` gives them), tokenizing only
        what follows the last safe boundary the previous request shares."""
        return self.encode_parts(self.chat.render_parts(
            messages, add_generation_prompt=add_generation_prompt, **self.options))

    def encode_parts(self, parts: Sequence[Part]) -> SessionEncoding:
        """`encode` of a request already rendered (`render_parts`' parts, input marked): the
        tokenizing step alone (what the benchmark times)."""
        with self._lock:
            previous = self._previous
            request, shared = _compared(list(parts), previous.request if previous else None)
            start, kept = self._boundary(previous, shared) if previous is not None else (0, 0)
            found = self._encode_after(request, previous, start, kept) if start else None
            if found is None:  # the first request, no shared boundary, or no clean cut
                ids, boundaries, tokenized = self._encode_whole(parts, request)
                reused = common_prefix(previous.ids, ids) if previous is not None else 0
            else:
                ids, boundaries, tokenized, reused = found
            self._previous = _Previous(request, ids, boundaries)
            return SessionEncoding(list(ids), reused, tokenized)  # a copy: the caller may change it

    def reset(self) -> None:
        """Forget the previous request (the next one is encoded whole)."""
        with self._lock:
            self._previous = None

    # ------------------------------------------------------------------------ steps

    def _boundary(self, previous: _Previous, shared: int) -> tuple[int, int]:
        """(character, ids before it) of the last safe boundary within the `shared` characters
        (text and marks both); (0, 0) when there is none."""
        if not self.incremental:
            return 0, 0
        at = bisect_right(previous.boundaries, (shared, len(previous.ids)))
        return previous.boundaries[at - 1] if at else (0, 0)

    def _encode_whole(self, parts: Sequence[Part], request: _Request) -> tuple[list[int], list, int]:
        runs = InputRuns(parts)
        encoded = encode_runs([runs], self.tokenizer, self.control)[0]
        return encoded.ids, self._boundaries_in(encoded, 0, 0, runs), request.length

    def _encode_after(self, request: _Request, previous: _Previous, start: int, kept: int) -> Optional[tuple[list[int], list, int, int]]:
        """The ids: the previous ones before the boundary at `start`, the rest encoded after
        the control token that ends there (template text: its id comes first, and is dropped);
        None when that token does not come out first (no clean cut)."""
        token_id = previous.ids[kept - 1]
        token = self.content[token_id]
        tail = InputRuns([Part(token, False), *_parts_from(request, start)])
        encoded = encode_runs([tail], self.tokenizer, self.control)[0]
        if not encoded.ids or encoded.ids[0] != token_id:
            return None
        new = encoded.ids[1:]
        reused = kept + common_prefix(previous.ids[kept:], new)
        ids = previous.ids  # the session's own list (callers get copies): changed in place
        del ids[kept:]
        ids.extend(new)
        boundaries = previous.boundaries[:bisect_right(previous.boundaries, (start, kept))]
        after = self._boundaries_in(encoded, start - len(token), kept - 1, tail)
        boundaries.extend(b for b in after if b[0] > start)
        return ids, boundaries, request.length - start, reused

    def _boundaries_in(self, encoded: Any, shift: int, first_id: int,
                       runs: InputRuns) -> list[tuple[int, int]]:
        """The safe boundaries of an encoding: after each control token the template wrote
        (characters and id positions moved to the whole text's)."""
        offsets = encoded.offsets if self.incremental else None
        if offsets is None:
            return []
        out = []
        content = self.content  # the control tokens: a boundary is after one
        for index, token_id in enumerate(encoded.ids):
            if token_id in content:
                begin, end = offsets[index]
                if end - begin == len(content[token_id]) and not runs.touches(begin, end):
                    out.append((end + shift, first_id + index + 1))
        return out


def _compared(parts: list[Part], previous: Optional[_Request]) -> tuple[_Request, int]:
    """The request, and how many of its characters agree with the previous one's, text and
    input marks both (the same text may be the template's in one and input in the other, and
    then its tokens differ). Parts are compared as they are, in C; the ends of those the two
    share are the previous request's, so that only the new parts are measured in Python."""
    if previous is None:
        return _Request(parts, list(accumulate(map(len, map(_TEXT, parts))))), 0
    same = _shared_parts(previous.parts, parts)
    begin = previous.ends[same - 1] if same else 0
    ends = previous.ends[:same]
    ends.extend(islice(accumulate(map(len, map(_TEXT, parts[same:])), initial=begin), 1, None))
    shared = begin
    if same < len(parts) and same < len(previous.parts) \
            and parts[same].is_input == previous.parts[same].is_input:  # one part longer
        shared += common_prefix(previous.parts[same].text, parts[same].text)
    return _Request(parts, ends), shared


_TEXT = itemgetter(0)


def _shared_parts(a: list, b: list) -> int:
    """How many leading parts two requests share: all of the previous one's, or all but its
    last (a prompt the next request extends) at the cost of one comparison, else by halving."""
    n = len(a)
    if b[:n] == a:
        return n
    if n and b[:n - 1] == a[:n - 1]:
        return n - 1
    return common_prefix(a, b)


def _parts_from(request: _Request, start: int) -> list[Part]:
    """The parts of the characters from `start` on (found by bisection on their ends)."""
    parts, ends = request.parts, request.ends
    first = bisect_right(ends, start)
    if first >= len(parts):
        return []
    head = parts[first]
    begin = ends[first] - len(head.text)
    out = [head if begin >= start else Part(head.text[start - begin:], head.is_input)]
    out.extend(parts[first + 1:])
    return out
