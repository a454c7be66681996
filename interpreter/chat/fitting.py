"""`ChatTemplate.fit`: the most recent part of a conversation that fits a token budget.

A conversation is cut into *exchanges*: a user message and everything up to the next user
message (the assistant's answer, its tool calls and their results). The leading system (or
developer) messages are always kept, and so is the exchange the mode needs: the last user
message and what follows it when serving, the last assistant message and what it answers when
training. Whole exchanges are dropped oldest first, as few as the budget allows.

Finding how many to drop by rendering and encoding every candidate costs one full encode per
exchange dropped (quadratic over a long agent run). Instead, one origin render of the whole
conversation says where each message's tokens are (chat/spans.py); dropping the first `d`
exchanges is estimated to save the tokens from the first exchange's first token to the first
token of exchange `d`. The estimate is inexact (the template's fixed text, a header that moves
to the first kept message, tokens merged across a boundary), so every answer is checked by an
exact encode of the candidate, and the search narrows a bracket [fails, fits] until the two are
neighbours: typically two exact encodes, one when nothing needs dropping.
"""
from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Optional, Sequence

from .normalize import normalize_messages

if TYPE_CHECKING:
    from .template import ChatTemplate

MODES = ("serve", "train")
HEAD_ROLES = frozenset({"system", "developer"})  # leading messages of these roles are kept
TOOL_ROLES = frozenset({"tool", "ipython", "function"})  # results of the call before them
GUIDED_PROBES = 3  # exact encodes guided by the estimates before the search bisects instead


class TokenBudgetError(ValueError):
    """The budget cannot hold what `fit` must keep (the system message and the last user
    message, or the final assistant turn). `required`: the tokens that takes; `max_tokens`: the
    budget given. A ValueError, so servers answer "bad request"."""

    def __init__(self, message: str, required: int, max_tokens: int) -> None:
        super().__init__(message)
        self.required = required
        self.max_tokens = max_tokens


@dataclass(frozen=True)
class FitResult:
    """What `ChatTemplate.fit` kept. `messages`: the kept messages (the objects given, in order);
    `dropped`: the indices, into the conversation given, of the messages left out;
    `dropped_messages`: those messages; `n_tokens`: the exact token count of `messages` as
    `ChatTemplate.encode` gives it (with the generation prompt in serve mode); `encodes`: the
    exact encodes the search made beyond the one estimating render (diagnostics)."""
    messages: list
    dropped: list[int]
    dropped_messages: list
    n_tokens: int
    encodes: int = field(default=0, compare=False)


@dataclass(frozen=True)
class Exchanges:
    """How a conversation of `total` messages divides: `messages[:head]` are always kept;
    exchange `e` starts at message `starts[e]` and runs to the next start; the exchanges from
    `required` on are kept (so 0 ... required - 1 may be dropped)."""
    head: int
    starts: list[int]
    required: int
    total: int

    def kept(self, dropped: int) -> list[int]:
        """The indices of the messages kept when the first `dropped` exchanges are left out."""
        return list(range(self.head)) + list(range(self.starts[dropped], self.total))


def fit(chat: "ChatTemplate", messages: Sequence[Any], max_tokens: int, tokenizer: Any,
        tools: Any = None, documents: Any = None, mode: str = "serve",
        **kwargs: Any) -> FitResult:
    """`ChatTemplate.fit`: see the module's docstring and the method's."""
    _check_call(max_tokens, mode, kwargs)
    given = list(messages)
    exchanges = divide(normalize_messages(given), mode)
    prompt = mode == "serve"
    estimates, whole = estimate(chat, given, exchanges, tokenizer, tools, documents, prompt, kwargs)

    def count(dropped: int) -> int:
        kept = [given[i] for i in exchanges.kept(dropped)]
        return len(chat.encode(kept, tokenizer, tools, documents, add_generation_prompt=prompt,
                               **kwargs))
    exact = _Exact(count, {0: whole})
    dropped = search(estimates, exact, max_tokens, exchanges.required)
    if dropped is None:
        required = exact.known[exchanges.required]
        raise TokenBudgetError(_too_small(required, max_tokens, mode), required, max_tokens)
    kept = exchanges.kept(dropped)
    left_out = sorted(set(range(len(given))).difference(kept))
    return FitResult([given[i] for i in kept], left_out, [given[i] for i in left_out],
                     exact.known[dropped], exact.encodes)


def _check_call(max_tokens: Any, mode: str, kwargs: dict) -> None:
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    if type(max_tokens) is not int or max_tokens < 1:
        raise ValueError(f"max_tokens must be a positive int, got {max_tokens!r}")
    if "add_generation_prompt" in kwargs:
        raise TypeError("fit() takes no 'add_generation_prompt': mode='serve' adds the generation "
                        "prompt, mode='train' does not")
    if "continue_final_message" in kwargs:
        raise TypeError("fit() takes no 'continue_final_message': fit the conversation, then "
                        "render the kept messages with it")


def _too_small(required: int, max_tokens: int, mode: str) -> str:
    kept = "the last user message" if mode == "serve" else "the final assistant turn"
    return (f"a budget of {max_tokens} tokens cannot hold what fit must keep: the system message "
            f"and {kept} ({mode} mode) take {required} tokens")


# ---------------------------------------------------------------------------- exchanges

def divide(messages: list[dict], mode: str) -> Exchanges:
    """The exchanges of a conversation (normalised messages) and which must be kept."""
    roles = [message.get("role") for message in messages]
    head = 0
    while head < len(roles) and roles[head] in HEAD_ROLES:
        head += 1
    held = _held_open(roles, messages)
    starts = [head] + [i for i in range(head + 1, len(roles)) if roles[i] == "user" and not held[i]]
    anchor_role = "user" if mode == "serve" else "assistant"
    anchor = next((i for i in range(len(roles) - 1, head - 1, -1) if roles[i] == anchor_role), None)
    if anchor is None:
        raise ValueError(f"fit in {mode} mode keeps the last {anchor_role} message, and this "
                         f"conversation has none after its system message")
    return Exchanges(head, starts, bisect_right(starts, anchor) - 1, len(messages))


def _held_open(roles: list, messages: list[dict]) -> list[bool]:
    """For each message, whether a cut before it would part a tool call from its results: some
    tool result at or after it answers a call before it (the nearest assistant message with
    tool calls before the result)."""
    n = len(roles)
    owner = [n] * n  # the call each tool result answers (n: none, no constraint)
    last_call = None
    for i, (role, message) in enumerate(zip(roles, messages)):
        if role == "assistant" and message.get("tool_calls"):
            last_call = i
        elif role in TOOL_ROLES and last_call is not None:
            owner[i] = last_call
    held, earliest = [False] * n, n
    for i in range(n - 1, -1, -1):  # the earliest call answered at or after i
        earliest = min(earliest, owner[i])
        held[i] = earliest < i
    return held


# ---------------------------------------------------------------------------- estimates

def estimate(chat: "ChatTemplate", messages: list, exchanges: Exchanges, tokenizer: Any,
             tools: Any, documents: Any, prompt: bool, kwargs: dict) -> tuple[list[int], int]:
    """The estimated token count of each candidate (`[d]`: the first `d` exchanges dropped, for
    d up to `required`), and the exact count of the whole conversation, from one origin render.

    The origin render has the text and marks of `render_parts` (masked_render encodes it the
    same way), so its ids are `encode`'s: the whole conversation's count is exact."""
    from ..evaluation.output import Part
    from .encoding import InputRuns, encode_runs
    from .loading import select_template
    from .origins import render_runs
    from .spans import message_spans
    from .tokenization import control_tokens
    runs, _ = render_runs(chat, messages, tools, documents, prompt, **kwargs)
    parts = [Part(run.text, run.source is not None) for run in runs]
    template = chat.compiled(select_template(chat.templates, chat.template_name, tools))
    encoded = encode_runs([InputRuns(parts)], tokenizer, control_tokens(tokenizer, template))[0]
    total = len(encoded.ids)
    first = _first_tokens(message_spans(runs, encoded.offsets), encoded.offsets, total,
                          sum(len(p.text) for p in parts))
    # where the kept suffix starts when exchange e is the first kept: the earliest token of any
    # message from there on (a template may print a message out of order)
    suffix = [total] * (len(messages) + 1)
    for i in range(len(messages) - 1, -1, -1):
        suffix[i] = min(suffix[i + 1], first.get(i, total))
    begin = [suffix[exchanges.starts[d]] for d in range(exchanges.required + 1)]
    return [total - (at - begin[0]) for at in begin], total


def _first_tokens(spans: list, offsets: Optional[Sequence], total: int, chars: int) -> dict[int, int]:
    """message -> the index of its first token; by its first character scaled to the average
    token length when the tokenizer gives no offsets (a slow tokenizer)."""
    if offsets is not None:
        return {s.message: s.token_start for s in spans if s.token_start is not None}
    return {s.message: s.start * total // max(chars, 1) for s in spans}


# ---------------------------------------------------------------------------- the search

class _Exact:
    """Exact token counts of candidates (by the number of exchanges dropped), each counted once;
    `encodes`: how many were counted (`known` may start with counts found otherwise)."""

    def __init__(self, count: Callable[[int], int], known: dict[int, int]) -> None:
        self.count, self.known = count, known
        self.encodes = 0

    def __call__(self, dropped: int) -> int:
        if dropped not in self.known:
            self.known[dropped] = self.count(dropped)
            self.encodes += 1
        return self.known[dropped]


def search(estimates: list[int], exact: _Exact, budget: int, most: int) -> Optional[int]:
    """The number of exchanges to drop: the `d` whose exact count fits while `d - 1`'s does not
    (or 0 when everything fits); None when even `most` does not fit.

    A bracket (fails, fits) over d, -1 and most + 1 standing for "nothing fails" and "nothing
    fits yet", narrowed by exact counts until the two are neighbours. Each probe is the first d
    in the bracket whose estimate, shifted by the last exact count's error, fits: with good
    estimates the first probe is the answer and the second proves d - 1 does not fit. After
    GUIDED_PROBES, bisection bounds the count by the logarithm of the exchanges."""
    fails, fits = -1, most + 1
    probe = next((d for d, n in enumerate(estimates) if n <= budget), most)
    probes = 0
    while True:
        count = exact(probe)
        probes += 1
        if count <= budget:
            fits = probe
        else:
            fails = probe
        if fits == fails + 1:
            return fits if fits <= most else None
        if probes >= GUIDED_PROBES:
            probe = (fails + fits) // 2
            continue
        error = count - estimates[probe]
        probe = next((d for d in range(fails + 1, fits) if estimates[d] + error <= budget), fits - 1)
