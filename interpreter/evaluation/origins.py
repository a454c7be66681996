"""A render that records, for every output character, what the render was doing when it wrote it:
the statement, the message (turn) a loop was at, and whether it was the generation prompt.

Input characters carry their own origin in their spans (values/origins.py). Template text has
none to carry, so it is attributed by the render's state, never by searching the output:

- **turn**: a `for` loop whose item is one of the conversation's messages (by identity: slices,
  `loop_messages`, `selectattr` copies and reversed lists hold the same dicts) is at that
  message's turn while its body runs; a loop over a `range` whose body reads `seq[i]` with the
  loop variable is at the turn of `seq[i]`. When the loop ends, the turn is what it was before.
- **generation prompt**: the text written inside an `if` (or by a `{{ }}`) whose test reads
  `add_generation_prompt`, in a render where that variable is true.
- **statement**: the `{{ }}` or text node that wrote it (its line is shown; masks ask whether a
  statement also wrote the message's own data).

The template is rewritten once (a copy of its tree with zero-width marker nodes around loops
and generation-prompt tests) and rendered on an `OriginEvaluator`, whose text and output write a
marker naming their statement before what they write. Markers are empty strings of their own
type: every consumer of output pieces passes over them, and a captured body (a macro's, a
`{% set %}` block's) drops them, so its text is attributed where it is printed. An ordinary
render never sees any of this.
"""
from __future__ import annotations

import dataclasses
from contextvars import ContextVar
from typing import Any, NamedTuple, Optional

from ..grammar import ast, records
from .evaluator import Evaluator
from .tracking import Marker

records.MODULES.add(__name__)


# ---------------------------------------------------------------------------- markers

class TurnMarker(Marker):
    """From here on, the output is written for message `turn` (None: outside any turn)."""

    def __new__(cls, turn: Optional[int]) -> "TurnMarker":
        marker = super().__new__(cls, "")
        marker.turn = turn
        return marker


class StatementMarker(Marker):
    """What follows was written by this statement (until the next statement marker)."""

    def __new__(cls, line: int) -> "StatementMarker":
        marker = super().__new__(cls, "")
        marker.line = line
        return marker


PROMPT_START = Marker("")  # the generation prompt starts ...
PROMPT_END = Marker("")    # ... and ends; they nest as the tests do
OUTSIDE = TurnMarker(None)


class Recorder:
    """What one origin render knows: the conversation's messages by identity, whether
    add_generation_prompt is true, and the turn the render is at."""

    __slots__ = ("messages", "prompting", "turn", "markers", "statements")

    def __init__(self, messages: Any = None, prompting: bool = False) -> None:
        self.messages = {id(m): i for i, m in enumerate(messages)} if isinstance(messages, list) else {}
        self.prompting = prompting
        self.turn: Optional[int] = None
        self.markers: dict[int, TurnMarker] = {}
        self.statements: dict[int, StatementMarker] = {}

    def turn_marker(self, turn: Optional[int]) -> TurnMarker:
        if turn is None:
            return OUTSIDE
        marker = self.markers.get(turn)
        if marker is None:
            marker = self.markers[turn] = TurnMarker(turn)
        return marker

    def statement(self, node: Any) -> StatementMarker:
        marker = self.statements.get(id(node))
        if marker is None:
            marker = self.statements[id(node)] = StatementMarker(node.span.line)
        return marker


_RECORDER: ContextVar[Optional[Recorder]] = ContextVar("jinjamark_origin_recorder", default=None)


# ---------------------------------------------------------------------------- marker nodes

class LoopTurns(ast.Stmt):
    """A `for` loop (the one statement of `body`) after which the turn is what it was before."""
    body: tuple


class EnterItem(ast.Stmt):
    """First in a rewritten loop's body: the turn of the item the loop variable `name` holds,
    or, for a loop over a range, of `seq[name]`."""
    name: str
    seq: Optional[str]


class GenerationPrompt(ast.Stmt):
    """An `if` or `{{ }}` (the one statement of `body`) whose test reads add_generation_prompt."""
    body: tuple


def _loop_turns(ev: Any, node: LoopTurns, scope: Any) -> None:
    recorder = ev.recorder
    before = recorder.turn
    try:
        ev.run(node.body, scope)
    finally:
        if recorder.turn != before:
            recorder.turn = before
            ev.out.append(recorder.turn_marker(before))


def _enter_item(ev: Any, node: EnterItem, scope: Any) -> None:
    recorder = ev.recorder
    item = scope.lookup(node.name)
    if node.seq is not None:
        seq = scope.lookup(node.seq)
        index = item  # a number from input too (`range(messages | length)`)
        item = seq[index] if type(seq) is list and isinstance(index, int) and index is not True \
            and index is not False and -len(seq) <= index < len(seq) else None
    turn = recorder.messages.get(id(item))
    if turn is not None and type(item) is dict and turn != recorder.turn:
        recorder.turn = turn
        ev.out.append(recorder.turn_marker(turn))


def _generation_prompt(ev: Any, node: GenerationPrompt, scope: Any) -> None:
    if not ev.recorder.prompting:
        ev.run(node.body, scope)
        return
    ev.out.append(PROMPT_START)
    try:
        ev.run(node.body, scope)
    finally:
        ev.out.append(PROMPT_END)


HANDLERS = {LoopTurns: _loop_turns, EnterItem: _enter_item, GenerationPrompt: _generation_prompt}


# ---------------------------------------------------------------------------- the evaluator

class OriginEvaluator(Evaluator):
    """An evaluator whose text and output name their statement before they write (and whose
    sub-evaluators, made by `type(ev)`, do too)."""

    def __init__(self, environment: Any, handlers: dict, name: Optional[str], source: str,
                 memo: Optional[dict] = None) -> None:
        table = dict(handlers)
        table.update(HANDLERS)
        for kind in (ast.Text, ast.Output):
            table[kind] = _announced(handlers[kind])
        super().__init__(environment, table, name, source, memo)
        self.recorder = _RECORDER.get() or Recorder()


def _announced(handler: Any) -> Any:
    def write(ev: Any, node: Any, scope: Any) -> None:
        ev.out.append(ev.recorder.statement(node))
        handler(ev, node, scope)
    write.__name__ = getattr(handler, "__name__", "write")
    return write


def start_recording(recorder: Recorder) -> Any:
    return _RECORDER.set(recorder)


def stop_recording(token: Any) -> None:
    _RECORDER.reset(token)


# ---------------------------------------------------------------------------- the rewrite

def traced_tree(tree: ast.Template) -> ast.Template:
    """A copy of `tree` with marker nodes around loops and generation-prompt tests (the nodes
    that do not change are shared)."""
    return _rewrite(tree)


def _rewrite(node: Any) -> Any:
    changes = {}
    for name in ast.child_fields(type(node)):
        value = getattr(node, name)
        new = _rewrite_field(value)
        if new is not value:
            changes[name] = new
    rebuilt = dataclasses.replace(node, **changes) if changes else node
    if type(node) is ast.For and type(node.target) is ast.NameTarget:
        entry = EnterItem(node.span, node.target.name, _range_sequence(node))
        rebuilt = dataclasses.replace(rebuilt, body=(entry,) + tuple(rebuilt.body))
        return LoopTurns(node.span, (rebuilt,))
    if (type(node) is ast.If and any(_reads_prompt(test) for test, _ in node.branches)) \
            or (type(node) is ast.Output and _reads_prompt(node.expr)):
        return GenerationPrompt(node.span, (rebuilt,))
    return rebuilt


def _rewrite_field(value: Any) -> Any:
    if isinstance(value, ast.Stmt) or type(value) is ast.Template:
        return _rewrite(value)
    if type(value) is tuple and value:
        items = tuple(_rewrite_field(item) for item in value)
        return value if all(a is b for a, b in zip(items, value)) else items
    return value  # expressions and other records hold no statements


def _reads_prompt(expr: Any) -> bool:
    return any(type(n) is ast.Name and n.name == "add_generation_prompt" for n in ast.walk(expr))


def _range_sequence(node: ast.For) -> Optional[str]:
    """For `for i in range(...)`: the name `seq` the body reads `seq[i]` of, first."""
    it = node.iter
    if not (type(it) is ast.Call and type(it.func) is ast.Name and it.func.name == "range"):
        return None
    name = node.target.name
    for inner in ast.walk(node.body):
        if type(inner) is ast.GetItem and type(inner.obj) is ast.Name \
                and type(inner.key) is ast.Name and inner.key.name == name:
            return inner.obj.name
    return None


# ---------------------------------------------------------------------------- resolving

class Run(NamedTuple):
    """A stretch of output with one origin, as the render wrote it: `source` for input (an
    origin of values/origins.py, or None for template text), the turn and generation-prompt
    state, and the statement marker that wrote it (None: before any)."""
    text: str
    source: Any
    turn: Optional[int]
    prompt: bool
    statement: Optional[StatementMarker]


def resolve(pieces: list) -> list[Run]:
    """The runs of an origin render's output pieces, in order (markers resolved, neighbours of
    the same origin and statement merged)."""
    from ..values.origins import UNKNOWN  # noqa: PLC0415 - values below evaluation
    runs: list[Run] = []
    texts: list[str] = []  # the texts of the run being gathered, whose origin is `current`
    current: Any = None
    turn: Optional[int] = None
    prompt = 0
    statement: Optional[StatementMarker] = None

    def add(text: str, source: Any) -> None:
        nonlocal current, texts
        if not text:
            return
        state = (source, turn, prompt > 0, statement)
        # (markers are empty strings, equal to each other: statements are told apart by identity)
        if texts and (state[:3] != current[:3] or state[3] is not current[3]):
            runs.append(Run("".join(texts), *current))
            texts = []
        current = state
        texts.append(text)

    for piece in pieces:
        kind = type(piece)
        if kind is StatementMarker:
            statement = piece
        elif kind is TurnMarker:
            turn = piece.turn
        elif piece is PROMPT_START:
            prompt += 1
        elif piece is PROMPT_END:
            prompt -= 1
        elif isinstance(piece, Marker) or not piece:
            continue
        else:
            spans = getattr(piece, "spans", None) if kind is not str else None
            if not spans:
                add(str.__str__(piece), None)
                continue
            text, pos = str.__str__(piece), 0
            for span in spans:
                add(text[pos:span[0]], None)
                add(text[span[0]:span[1]], span[2] if len(span) > 2 else UNKNOWN)
                pos = span[1]
            add(text[pos:], None)
    if texts:
        runs.append(Run("".join(texts), *current))
    return _statement_turns(runs)


def _statement_turns(runs: list[Run]) -> list[Run]:
    """Outside any turn, a statement that writes the data of one message writes for that
    message (`{{ '<|im_start|>system\n' + messages[0].content }}` before the loop; the last
    message kept in a namespace and printed after it): its runs get that turn."""
    start = 0
    while start < len(runs):
        end = start + 1
        while end < len(runs) and runs[end].statement is runs[start].statement:
            end += 1
        group = runs[start:end]
        if all(run.turn is None and not run.prompt for run in group):
            runs[start:end] = _attributed(group)
        start = end
    return runs


def _attributed(group: list[Run]) -> list[Run]:
    """The runs of one statement written outside any turn, template text given the turn of
    the message whose data follows it (the last one's after it): a conversation gathered in a
    namespace and printed once (`{{ ns.out }}`) is split back into its turns."""
    owners = [_message_of(run.source) for run in group]
    if not any(owner is not None for owner in owners):
        return group
    out, following = [], None
    for run, owner in zip(reversed(group), reversed(owners)):
        if owner is not None:
            following = owner
        out.append(run._replace(turn=owner if owner is not None else following))
    last = next(owner for owner in reversed(owners) if owner is not None)
    out = [run if run.turn is not None else run._replace(turn=last) for run in out]
    return out[::-1]


def _message_of(source: Any) -> Optional[int]:
    """The one message input came from, or None (template text, data of no or several messages)."""
    return getattr(source, "message", None) if source is not None else None


# ---------------------------------------------------------------------------- rendering

def render(template: Any, context: dict, overlay: Optional[dict] = None,
           messages: Any = None, prompting: Optional[bool] = None) -> list[Run]:
    """Render `template` (a Template) recording origins: its runs. `messages`: the list whose
    dicts are the conversation's turns (default: the context's `messages`); `prompting`: whether
    add_generation_prompt is true (default: the context's, as a template tests it)."""
    from ..values.origins import TRACING  # noqa: PLC0415 - values below evaluation
    if messages is None:
        messages = context.get("messages")
    if prompting is None:
        prompting = bool(context.get("add_generation_prompt"))
    variant = template.origin_variant
    recorder = Recorder(messages, prompting)
    token, tracing = start_recording(recorder), TRACING.set(True)
    try:
        ev = OriginEvaluator(variant.environment, variant.environment.handlers, variant.name,
                             variant.source, variant.memo)
        pieces = variant._start(ev, context, overlay)
    finally:
        TRACING.reset(tracing)
        stop_recording(token)
    return resolve(pieces)
