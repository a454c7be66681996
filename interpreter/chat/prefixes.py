"""Append-only analysis: does each prompt a server sends start with the next one?

A server renders `messages[:k]` (with the generation prompt when message k is the assistant's)
for each request, and its prefix cache (KV reuse) pays only when that prompt is a prefix of what
it renders later. `check_append_only` compares every such prompt with the render of the whole
conversation and explains each break from origin renders (chat/origins.py): the message whose
rendering changed, the template line that wrote the differing text, and a cause.

The plain renders find the breaks; an origin render is made only of a prompt that breaks (and
of the whole conversation, once), so a conversation that is append-only costs a render a turn.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, Iterator, Optional, Sequence

from .normalize import REASONING_FIELDS, normalize_messages

if TYPE_CHECKING:
    from .template import ChatTemplate

# What broke the prefix, as `Break.cause` says it.
PAST_REASONING = "past reasoning dropped"         # a turn's reasoning printed only while it is the last
GENERATION_PROMPT = "generation prompt not kept"  # the turn is written otherwise than its prompt began it
LAST_TURN = "last-turn marker"                    # the last message is written differently (`<|return|>`)
POSITION = "position-dependent text"              # text that depends on where it stands, or on later messages
DATA = "data printed differently"                 # a message's data printed otherwise once others follow
TOKENS = "tokens merge across the boundary"       # the text is a prefix, its tokens are not
REFUSED = "prompt refused"                        # the template raises for this prompt
UNEXPLAINED = "not explained"                     # the origin render that would explain it failed
CAUSES = (PAST_REASONING, GENERATION_PROMPT, LAST_TURN, POSITION, DATA, TOKENS, REFUSED, UNEXPLAINED)

EXCERPT = 40  # characters of each side shown at a break


@dataclass(frozen=True)
class Break:
    """The prompt of turn `turn` (`messages[:turn]`) is not a prefix of the whole render.

    `offset`: the first character where the two differ (for a token break, the end of the
    prompt; None when the prompt could not be rendered); `message`: the message whose
    rendering changed; `line`, `column`: the template statement that wrote the differing text
    of the prompt; `cause`: one of CAUSES; `prompt` and `whole`: what each side has from
    `offset` on (a few characters); `token`: for a token break, the first token that differs."""
    turn: int
    offset: Optional[int]
    message: Optional[int]
    line: Optional[int]
    column: Optional[int]
    cause: str
    prompt: str = ""
    whole: str = ""
    token: Optional[int] = None


@dataclass(frozen=True)
class AppendOnlyReport:
    """`check_append_only`'s finding: `checked` prompts compared, the `breaks` among them."""
    checked: int
    breaks: tuple[Break, ...]

    @property
    def append_only(self) -> bool:
        """Whether every prompt is a prefix of the whole conversation's render."""
        return not self.breaks


def check_append_only(chat: "ChatTemplate", messages: Sequence[Any], /, tools: Any = None,
                      documents: Any = None, tokenizer: Any = None,
                      add_generation_prompt: bool = False, **kwargs: Any) -> AppendOnlyReport:
    """Compare the prompt of every turn k (1 <= k < len(messages)), `render(messages[:k],
    add_generation_prompt=<message k is the assistant's>)`, with the whole conversation's render
    (`add_generation_prompt` as given); with a `tokenizer`, their token ids too (`encode`'s)."""
    messages = list(messages)
    options = dict(tools=tools, documents=documents, **kwargs)
    whole = chat.render(messages, add_generation_prompt=add_generation_prompt, **options)
    whole_ids = (chat.encode(messages, tokenizer, add_generation_prompt=add_generation_prompt,
                             **options) if tokenizer is not None else None)
    explained = _Explainer(chat, messages, whole, add_generation_prompt, options)
    breaks = []
    for turn, prompting, prompt in prompts(chat, messages, options):
        if isinstance(prompt, Exception):
            said = (getattr(prompt, "message", None) or str(prompt)).splitlines() or [""]
            breaks.append(Break(turn, None, turn - 1, getattr(prompt, "lineno", None),
                                getattr(prompt, "column", None), REFUSED, said[0][:EXCERPT * 2]))
            continue
        offset = common_prefix(prompt, whole)
        if offset < len(prompt):
            breaks.append(explained.text_break(turn, prompting, prompt, offset))
        elif whole_ids is not None:
            ids = chat.encode(messages[:turn], tokenizer, add_generation_prompt=prompting, **options)
            token = common_prefix(ids, whole_ids)
            if token < len(ids):
                breaks.append(explained.token_break(turn, prompting, prompt, token))
    return AppendOnlyReport(max(len(messages) - 1, 0), tuple(breaks))


def prompts(chat: "ChatTemplate", messages: list, options: dict) -> Iterator[tuple[int, bool, Any]]:
    """(k, whether it has the generation prompt, the prompt's text or the error rendering it
    raised) for each turn k of the conversation: the requests a server renders."""
    roles = [m.get("role") if isinstance(m, dict) else None for m in normalize_messages(messages)]
    for turn in range(1, len(messages)):
        prompting = roles[turn] == "assistant"
        try:
            yield turn, prompting, chat.render(messages[:turn], add_generation_prompt=prompting,
                                               **options)
        except (ValueError, TypeError) as error:  # a TemplateError is a ValueError
            yield turn, prompting, error


def common_prefix(a: Sequence[Any], b: Sequence[Any]) -> int:
    """The length of the longest common prefix of two strings (or lists): by halving, each
    step one comparison made in C, not a Python step per character."""
    low, high = 0, min(len(a), len(b))
    if a[:high] == b[:high]:
        return high
    # from here on a[:low] == b[:low] and a[:high] != b[:high]
    while high - low > 1:
        middle = (low + high) // 2
        if a[low:middle] == b[low:middle]:
            low = middle
        else:
            high = middle
    return low


class _Explainer:
    """Origin renders of the whole conversation (made once, when a first break needs it) and
    of the prompts that break, and the rule that names a break's message, line and cause."""

    def __init__(self, chat: "ChatTemplate", messages: list, whole: str,
                 add_generation_prompt: bool, options: dict) -> None:
        self.chat, self.messages, self.whole, self.options = chat, messages, whole, options
        self.add_generation_prompt = add_generation_prompt

    def runs(self, messages: list, prompting: bool) -> list:
        from .origins import render_runs  # noqa: PLC0415 - only a break needs origins
        return render_runs(self.chat, messages, add_generation_prompt=prompting, **self.options)[0]

    @cached_property
    def whole_runs(self) -> list:
        return self.runs(self.messages, self.add_generation_prompt)

    def text_break(self, turn: int, prompting: bool, prompt: str, offset: int) -> Break:
        try:
            mine, theirs = self.runs(self.messages[:turn], prompting), self.whole_runs
        except Exception:  # noqa: BLE001 - the plain renders found the break: it stays reported
            return Break(turn, offset, turn - 1, None, None, UNEXPLAINED,
                         prompt[offset:offset + EXCERPT], self.whole[offset:offset + EXCERPT])
        at, there = run_at(mine, offset), run_at(theirs, offset)  # `at`: the prompt goes on there
        message = _owner(mine, at, turn)
        if message is None and there is not None:
            message = _owner(theirs, there, turn)
        written = mine[at]
        cause = _cause(turn, message, written, theirs[there] if there is not None else None,
                       mine, theirs)
        return Break(turn, offset, message, *_position(written), cause,
                     prompt[offset:offset + EXCERPT], self.whole[offset:offset + EXCERPT])

    def token_break(self, turn: int, prompting: bool, prompt: str, token: int) -> Break:
        try:
            mine = self.runs(self.messages[:turn], prompting)
        except Exception:  # noqa: BLE001 - as text_break
            mine = []
        last = len(mine) - 1 if mine else None
        message = _owner(mine, last, turn) if last is not None else turn - 1
        end = len(prompt)
        return Break(turn, end, message, *_position(mine[last] if mine else None), TOKENS,
                     prompt[-EXCERPT:], self.whole[max(0, end - EXCERPT):end + EXCERPT], token)


def run_at(runs: list, offset: int) -> Optional[int]:
    """The index of the run holding character `offset` (None past the end)."""
    pos = 0
    for index, run in enumerate(runs):
        pos += len(run.text)
        if offset < pos:
            return index
    return None


def _message_of(run: Any, turn: int) -> Optional[int]:
    """The message a run was written for: its turn, the message its data came from, or, for
    the generation prompt, the message it begins (`turn`, the one the prompt is for)."""
    if run.prompt:
        return turn
    if run.turn is not None:
        return run.turn
    return getattr(run.source, "message", None)


def _owner(runs: list, index: int, turn: int) -> Optional[int]:
    """The message of runs[index], or of the nearest run after it (text outside any turn, such
    as a header, belongs to the message it precedes), else before it."""
    for i in list(range(index, len(runs))) + list(range(index - 1, -1, -1)):
        message = _message_of(runs[i], turn)
        if message is not None:
            return message
    return None


def _position(run: Any) -> tuple[Optional[int], Optional[int]]:
    statement = getattr(run, "statement", None)
    if statement is None:
        return None, None
    return statement.line, getattr(statement, "column", None)


def _cause(turn: int, message: Optional[int], mine: Any, theirs: Any, mine_runs: list,
           their_runs: list) -> str:
    """Why the prompt's text at the break is not the whole render's (`mine`, `theirs`: the runs
    there, `theirs` None when the whole render ends first)."""
    if mine.prompt:
        return GENERATION_PROMPT
    if message is not None and _lost_reasoning(message, mine_runs, their_runs):
        return PAST_REASONING
    if mine.source is not None or (theirs is not None and theirs.source is not None):
        return DATA
    if message == turn - 1:
        return LAST_TURN
    return POSITION


def _lost_reasoning(message: int, mine: list, theirs: list) -> bool:
    """Whether the prompt prints reasoning of `message` the whole render leaves out: a reasoning
    field, or content that carries its reasoning in think tags."""
    def printed(runs: list) -> dict:
        texts: dict = {}
        for run in runs:
            if getattr(run.source, "message", None) == message:
                field = run.source.field.split(".")[0].split("[")[0]
                texts[field] = texts.get(field, "") + run.text
        return texts
    before, after = printed(mine), printed(theirs)
    if any(field in REASONING_FIELDS and len(after.get(field, "")) < len(text)
           for field, text in before.items()):
        return True
    content, kept = before.get("content", ""), after.get("content", "")
    return len(kept) < len(content) and "</think>" in content and "</think>" not in kept


# ---------------------------------------------------------------------------- analyze()

# The probe of `analyze().append_only`: past turns with reasoning, so that a template that drops
# it shows; its own words, so that a break cannot hide in text the template writes.
PROBE = ({"role": "system", "content": "Probe system prompt."},
         {"role": "user", "content": "First probe question."},
         {"role": "assistant", "content": "First probe answer.", "reasoning_content": "First probe thought."},
         {"role": "user", "content": "Second probe question."},
         {"role": "assistant", "content": "Second probe answer.", "reasoning_content": "Second probe thought."},
         {"role": "user", "content": "Third probe question."})
SWITCHES_TRIED = 8  # keyword arguments tried one at a time, each as True and as False


@dataclass(frozen=True)
class AppendOnlyAnalysis:
    """Whether a template is append-only on a probe conversation (`analyze().append_only`).

    `append_only`: with the template's defaults (None: the probe could not be rendered);
    `causes`: the causes of its breaks; `settings`: the keyword arguments (`enable_thinking`,
    a keep-reasoning switch), each set on its own, with which it is."""
    append_only: Optional[bool]
    causes: tuple[str, ...] = ()
    settings: tuple[tuple[str, Any], ...] = ()


def analyse_append_only(chat: "ChatTemplate", variables: frozenset) -> AppendOnlyAnalysis:
    """The probe conversation (without its system prompt, for a template that refuses one)
    checked with the defaults, then with each keyword argument the template reads (beyond the
    chat API's own) set to True and to False."""
    found = None
    for messages in ([dict(m) for m in PROBE], [dict(m) for m in PROBE[1:]]):
        try:
            found = check_append_only(chat, messages)
            break
        except (ValueError, TypeError):
            continue
    if found is None:
        return AppendOnlyAnalysis(None)
    if found.append_only:
        return AppendOnlyAnalysis(True)
    causes = tuple(dict.fromkeys(b.cause for b in found.breaks))
    settings = []
    for name in sorted(variables - _CHAT_NAMES - set(chat.special_tokens))[:SWITCHES_TRIED]:
        for value in (True, False):
            if _holds(chat, messages, {name: value}):
                settings.append((name, value))
    return AppendOnlyAnalysis(False, causes, tuple(settings))


_CHAT_NAMES = frozenset({"messages", "tools", "documents", "add_generation_prompt", "custom_tools",
                         "bos_token", "eos_token", "unk_token", "pad_token"})


def _holds(chat: "ChatTemplate", messages: list, options: dict) -> bool:
    """Whether every prompt of the conversation is a prefix of its whole render (text only)."""
    try:
        whole = chat.render(messages, **options)
    except (ValueError, TypeError):
        return False
    return all(not isinstance(prompt, Exception) and whole.startswith(prompt)
               for _, _, prompt in prompts(chat, messages, options))
