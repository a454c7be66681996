"""A render that records, for every output character, what the render was doing when it wrote it:
the statement, the message (turn) a loop was at, and whether it was the generation prompt.

Input characters carry their own origin in their spans (values/origins.py). Template text has
none to carry, so it is attributed by the render's state, never by searching the output:

- **turn**: a `for` loop whose item is one of the conversation's messages (by identity: slices,
  `loop_messages`, `selectattr` copies and reversed lists hold the same dicts) is at that
  message's turn while its body runs (a loop that writes nothing is left as it is); a loop over a `range` whose body reads `seq[i]` with the
  loop variable is at the turn of `seq[i]`. When the loop ends, the turn is what it was before.
- **generation prompt**: the text written inside an `if` (or by a `{{ }}`) whose test reads
  `add_generation_prompt`, in a render where that variable is true.
- **statement**: the `{{ }}` or text node that wrote it (its line is shown; a mask's header is
  made of whole statements, chat/masks.py).

The template is rewritten once (a copy of its tree with zero-width marker statements before its
text and `{{ }}` and around its loops and generation-prompt tests) and rendered on the ordinary
evaluator, its fast paths and generated code included. Markers are empty strings of their own
type: every consumer of output pieces passes over them, and a captured body (a macro's, a
`{% set %}` block's) drops them, so its text is attributed where it is printed. An ordinary
render never sees any of this.
"""
from __future__ import annotations

import dataclasses
from contextvars import ContextVar
from itertools import repeat
from operator import add as add_tuples
from typing import Any, NamedTuple, Optional

from ..grammar import ast, records
from ..values.marks import Mixed
from ..values.origins import TRACING, label
from ..values.sources import UNKNOWN
from ..values.undefined import MISSING
from .compiling.core import CONSTANT_PIECES, SCOPE_NEUTRAL, compiles
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

    def __new__(cls, line: int, column: Optional[int] = None) -> "StatementMarker":
        marker = super().__new__(cls, "")
        marker.line, marker.column = line, column
        return marker


class StatementText(str):
    """A text statement's text in the rewritten tree, carrying the statement that writes it: it
    says where it comes from itself, without a marker before it (most output is such text).
    Joined into a larger string (a captured body), it is plain text again."""

    def __new__(cls, text: str, statement: StatementMarker) -> "StatementText":
        made = super().__new__(cls, text)
        made.statement = statement  # made once per statement, when the tree is rewritten
        return made


PROMPT_START = Marker("")  # the generation prompt starts ...
PROMPT_END = Marker("")    # ... and ends; they nest as the tests do
OUTSIDE = TurnMarker(None)
_TURNS: list[TurnMarker] = []


def turn_marker(turn: Optional[int]) -> TurnMarker:
    """The marker of `turn`: markers are immutable, one per turn number for every render."""
    if turn is None:
        return OUTSIDE
    if turn >= len(_TURNS):
        _TURNS.extend(TurnMarker(i) for i in range(len(_TURNS), turn + 1))
    return _TURNS[turn]


class Recorder:
    """What one origin render knows: the conversation's messages by identity, whether
    add_generation_prompt is true, and the turn the render is at."""

    __slots__ = ("messages", "prompting", "turn")

    def __init__(self, messages: Any = None, prompting: bool = False) -> None:
        self.messages = {id(m): i for i, m in enumerate(messages)} if isinstance(messages, list) else {}
        self.prompting = prompting
        self.turn: Optional[int] = None


_RECORDER: ContextVar[Optional[Recorder]] = ContextVar("jinjamark_origin_recorder", default=None)


# ---------------------------------------------------------------------------- marker nodes
# Compiled like the core's statements (a closure each, called directly, also from generated
# code), so that an origin render runs on the ordinary evaluator and its fast paths.

class StatementMark(ast.Stmt):
    """Before a `{{ }}` statement: what follows was written by it (`marker`: at its line)."""
    marker: StatementMarker


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


# They touch no frame: loops holding them keep the fast paths of the template's own loops.
SCOPE_NEUTRAL.update((StatementMark, LoopTurns, EnterItem, GenerationPrompt))
CONSTANT_PIECES[StatementMark] = lambda node: node.marker  # generated code appends it itself


@compiles(StatementMark)
def _compile_statement_mark(node: StatementMark) -> Any:
    marker = node.marker  # one per statement, made with the tree: runs tell statements apart by it
    return lambda ev, scope: ev.out.append(marker)


@compiles(LoopTurns)
def _compile_loop_turns(node: LoopTurns) -> Any:
    body = node.body

    def loop_turns(ev: Any, scope: Any) -> None:
        recorder = _RECORDER.get()
        if recorder is None:  # the variant rendered on its own: the loop, nothing more
            return ev.run(body, scope)
        before = recorder.turn
        try:
            ev.run(body, scope)  # by the body's code: generated once it runs often
        finally:
            if recorder.turn != before:
                recorder.turn = before
                enter_turn(ev.out, before)
    return loop_turns


def enter_turn(out: list, turn: Optional[int]) -> None:
    """Write the marker of `turn`; one written just before it, with nothing between, is replaced
    (a loop over items that writes for few of them leaves one marker, not one an item)."""
    marker = turn_marker(turn)
    if out and type(out[-1]) is TurnMarker:
        out[-1] = marker
    else:
        out.append(marker)


@compiles(EnterItem)
def _compile_enter_item(node: EnterItem) -> Any:
    name, seq_name = node.name, node.seq

    def enter_item(ev: Any, scope: Any) -> None:
        recorder = _RECORDER.get()
        if recorder is None:
            return
        item = scope.vars.get(name, MISSING)  # the loop variable: in the loop's own frame
        if item is MISSING:
            item = scope.lookup(name)
        if seq_name is not None:
            seq, index = scope.lookup(seq_name), item  # a number from input too (`range(n)`)
            item = seq[index] if type(seq) is list and isinstance(index, int) and index is not True \
                and index is not False and -len(seq) <= index < len(seq) else None
        turn = recorder.messages.get(id(item))
        if turn is not None and turn != recorder.turn and type(item) is dict:
            recorder.turn = turn
            enter_turn(ev.out, turn)
    return enter_item


@compiles(GenerationPrompt)
def _compile_generation_prompt(node: GenerationPrompt) -> Any:
    body = node.body

    def generation_prompt(ev: Any, scope: Any) -> None:
        recorder = _RECORDER.get()
        if recorder is None or not recorder.prompting:
            return ev.run(body, scope)
        ev.out.append(PROMPT_START)
        try:
            ev.run(body, scope)
        finally:
            out = ev.out
            if out and out[-1] is PROMPT_START:  # it wrote nothing (`loop.last and add_generation_prompt`
                out.pop()                # tested at every turn): no markers to resolve
            else:
                out.append(PROMPT_END)
    return generation_prompt


# ---------------------------------------------------------------------------- the rewrite

def traced_tree(tree: ast.Template) -> ast.Template:
    """A copy of `tree` with marker nodes before its text and `{{ }}` statements and around its
    loops and generation-prompt tests (the nodes that do not change are shared)."""
    return _rewrite(tree)


def _rewrite(node: Any) -> Any:
    changes = {}
    for name in ast.child_fields(type(node)):
        value = getattr(node, name)
        new = _rewrite_field(value)
        if new is not value:
            changes[name] = new
    rebuilt = dataclasses.replace(node, **changes) if changes else node
    if type(node) is ast.For and type(node.target) is ast.NameTarget and writes(node.body + node.otherwise):
        entry = EnterItem(node.span, node.target.name, _range_sequence(node))
        rebuilt = dataclasses.replace(rebuilt, body=(entry,) + tuple(rebuilt.body))
        return LoopTurns(node.span, (rebuilt,))
    if (type(node) is ast.If and any(_reads_prompt(test) for test, _ in node.branches)) \
            or (type(node) is ast.Output and _reads_prompt(node.expr)):
        return GenerationPrompt(node.span, (rebuilt,))
    return rebuilt


def writes(statements: tuple) -> bool:
    """Whether running `statements` may write output. A loop that writes none (a scan that
    only sets variables, often nested over the conversation: `for j in range(i)`) needs no
    turn markers: they would cost a call an item and attribute nothing. Assignments, imports,
    and the bodies of macro definitions and `set` blocks (captured) write nothing; any other
    statement may, an extension's too."""
    for node in statements:
        kind = type(node)
        if kind in _SILENT:
            continue
        if kind is ast.If:
            if any(writes(body) for _, body in node.branches) or writes(node.otherwise):
                return True
        elif kind is ast.For:
            if writes(node.body) or writes(node.otherwise):
                return True
        else:
            return True
    return False


_SILENT = frozenset({ast.Assign, ast.AssignBlock, ast.Macro, ast.Import, ast.FromImport})


def _rewrite_field(value: Any) -> Any:
    if isinstance(value, ast.Stmt) or type(value) is ast.Template:
        return _rewrite(value)
    if type(value) is tuple and value:
        items: list = []
        for item in value:
            if type(item) is ast.Text and item.text:  # its text says which statement wrote it
                marker = StatementMarker(item.span.line, item.span.column)
                items.append(dataclasses.replace(item, text=StatementText(item.text, marker)))
                continue
            if type(item) is ast.Text or type(item) is ast.Output:
                items.append(StatementMark(item.span, StatementMarker(item.span.line, item.span.column)))
            items.append(_rewrite_field(item))
        return value if len(items) == len(value) and all(a is b for a, b in zip(items, value)) \
            else tuple(items)
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
    """The runs of an origin render's output pieces, in order: markers resolved, neighbours
    of the same origin, state and statement merged (_resolve)."""
    return _resolve(pieces, False)


def origin_parts(pieces: list) -> list["OriginPart"]:
    """The origin parts of an origin render's output pieces: its runs, made in the same one
    pass, neighbours merged by line rather than by statement."""
    return _resolve(pieces, True)


def _resolve(pieces: list, by_line: bool) -> list:
    """One pass over an origin render's output pieces: runs (`by_line`: origin parts, merged by
    the statement's line rather than by the statement). The markers set the state (turn,
    generation prompt, statement); each stretch of text with one origin under it is a segment,
    merged into the run being made when they agree on everything it shows.

    Outside any turn, a statement that writes the data of one message writes for that message
    (`{{ '<|im_start|>system\n' + messages[0].content }}` before the loop; the last message kept
    in a namespace and printed after it): the segments one statement writes outside any turn
    are held until it ends, and its template text then takes the turn of the message whose data
    follows it (the last one's after it), so that a conversation gathered in a namespace and
    printed once (`{{ ns.out }}`) is split back into its turns. A statement that also writes
    inside a turn (before its text outside ends) keeps what it wrote outside as written.

    Most output is written inside a turn with nothing held: such a segment is merged in the
    loop itself, and a run is one state tuple compared; the runs are made at the end, their
    texts joined in one map (this pass is a good part of an origin render's cost; hence
    closures over locals, not methods, and no call a run)."""
    made = OriginPart if by_line else Run
    # each run as it is made: its state (whether input, source, turn, prompt, statement key: a
    # part's key is its statement's line, a run's its statement's id), its texts, its statement
    states: list = []
    bodies: list = []
    wrote: list = []
    last: Any = None   # the state of the run being made ...
    texts: list = []   # ... and its texts so far
    held: list = []    # the segments written outside any turn, held ...
    holder: Any = None  # ... while this statement writes them
    holder_key: Any = None
    kept: Any = None   # the statement whose text outside a turn stays as written

    def add(text: str, source: Any, turn: Optional[int], prompt: bool, key: Any,
            statement: Optional[StatementMarker]) -> None:
        nonlocal last, texts
        state = (source is not None, source, turn, prompt, key)
        if state == last:
            texts.append(text)
            return
        last, texts = state, [text]
        states.append(state)
        bodies.append(texts)
        wrote.append(statement)

    def segment(text: str, source: Any, turn: Optional[int], prompt: bool, key: Any,
                statement: Optional[StatementMarker]) -> None:
        nonlocal holder, holder_key, kept
        if kept is not None and statement is not kept:
            kept = None
        if turn is None and not prompt and statement is not kept:
            if held and statement is not holder:
                release(True)
            held.append((text, source))
            holder, holder_key = statement, key
            return
        if held:  # a statement that wrote outside a turn and now inside one keeps both
            same = statement is holder
            release(not same)
            if same:
                kept = statement
        add(text, source, turn, prompt, key, statement)

    def release(attribute: bool) -> None:
        """The held segments, their template text given the turn of the message whose data
        follows it (the last one's after it) when `attribute`."""
        segments = held[:]
        held.clear()
        owners = [_message_of(source) for _, source in segments] if attribute else ()
        following = next((o for o in reversed(owners) if o is not None), None)
        turns = [None] * len(segments)  # none of a message's data: template text, tools, as written
        if following is not None:
            for i in range(len(segments) - 1, -1, -1):
                following = owners[i] if owners[i] is not None else following
                turns[i] = following
        for (text, source), turn in zip(segments, turns):
            add(text, source, turn, False, holder_key, holder)

    turn: Optional[int] = None
    prompt = 0
    statement: Optional[StatementMarker] = None
    key: Any = None if by_line else id(None)
    # the types told apart, as locals (a piece costs a few steps: they count)
    text_type, mixed, statement_marker, turn_marker_type, statement_text = \
        str, Mixed, StatementMarker, TurnMarker, StatementText
    extend = False  # plain text written now joins the run being made (template text, and
    for piece in pieces:  # nothing has changed since): most pieces, one append each
        kind = type(piece)
        if kind is text_type:
            if extend:
                texts.append(piece)
                continue
            if not piece:
                continue
            text, source = piece, None
        elif kind is mixed:  # input: a field with its origin, or text around input
            text, spans = str.__str__(piece), piece.spans
            if len(spans) == 1 and spans[0][0] == 0 and spans[0][1] == len(text):
                source = label(spans[0]) or UNKNOWN
            else:
                extend = False
                _segments(segment, text, spans, turn, prompt > 0, key, statement)
                continue
        elif kind is statement_marker:
            statement, extend = piece, False
            key = piece.line if by_line else id(piece)
            continue
        elif kind is turn_marker_type:
            turn, extend = piece.turn, False
            continue
        elif kind is statement_text:  # a text statement's: its statement starts here
            statement = piece.statement
            key = statement.line if by_line else id(statement)
            text, source = piece, None
        elif piece is PROMPT_START:
            prompt, extend = prompt + 1, False
            continue
        elif piece is PROMPT_END:
            prompt, extend = prompt - 1, False
            continue
        elif piece and not isinstance(piece, Marker):  # another marked string (safe text)
            extend = False
            _segments(segment, str.__str__(piece), getattr(piece, "spans", ()), turn, prompt > 0,
                      key, statement)
            continue
        else:
            continue
        if (turn is None and not prompt) or held or kept is not None:
            segment(text, source, turn, prompt > 0, key, statement)
            extend = False
            continue
        add(text, source, turn, prompt > 0, key, statement)
        extend = source is None
    release(True)
    new = tuple.__new__
    joined = map("".join, bodies)
    if by_line:  # (text,) + state, made in C: a part costs no Python step here
        return list(map(new, repeat(made), map(add_tuples, zip(joined), states)))
    return [new(made, (text, state[1], state[2], state[3], statement))
            for text, state, statement in zip(joined, states, wrote)]


def _segments(segment: Any, text: str, spans: tuple, turn: Optional[int], prompt: bool,
              key: Any, statement: Optional[StatementMarker]) -> None:
    """Hand `segment` each stretch of a marked string `text` with one origin under it."""
    pos = 0
    for span in spans:
        if span[0] > pos:
            segment(text[pos:span[0]], None, turn, prompt, key, statement)
        segment(text[span[0]:span[1]], label(span) or UNKNOWN, turn, prompt, key, statement)
        pos = span[1]
    if pos < len(text):
        segment(text[pos:], None, turn, prompt, key, statement)


def _message_of(source: Any) -> Optional[int]:
    """The one message input came from, or None (template text, data of no or several messages)."""
    return getattr(source, "message", None) if source is not None else None


# ---------------------------------------------------------------------------- parts

class OriginPart(NamedTuple):
    """A run of output characters with one origin (`render_parts(origins=True)`).

    `origin`: for input, where it came from (a `Source`: message index and field path, or
    `Several` when computed from more than one); for template text, None. `turn`: the message
    the render was writing for (the message a loop over the conversation was at; None outside
    any turn); `generation_prompt`: written by the generation prompt; `line`: the template line
    of the statement that wrote it."""
    text: str
    is_input: bool
    origin: Any
    turn: Optional[int]
    generation_prompt: bool
    line: Optional[int]

    @property
    def message(self) -> Optional[int]:
        """The message these characters belong to: the one input came from, else the turn."""
        if self.origin is not None and self.origin.message is not None:
            return self.origin.message
        return self.turn

    @property
    def field(self) -> Optional[str]:
        """The field input came from (`content`, `tool_calls[0].function.arguments`), or None."""
        return None if self.origin is None else self.origin.field


# ---------------------------------------------------------------------------- rendering

def render(template: Any, context: dict, overlay: Optional[dict] = None,
           messages: Any = None, prompting: Optional[bool] = None, parts: bool = False) -> list:
    """Render `template` (a Template) recording origins: its runs (`parts`: its origin parts).
    `messages`: the list whose dicts are the conversation's turns (default: the context's
    `messages`); `prompting`: whether add_generation_prompt is true (default: the context's, as
    a template tests it). `context` is the caller's to give away: emptied after the render, as
    Template._render empties its own (the cycles of macros and their scope are then freed at once)."""
    if messages is None:
        messages = context.get("messages")
    if prompting is None:
        prompting = bool(context.get("add_generation_prompt"))
    variant = template.origin_variant
    token, tracing = _RECORDER.set(Recorder(messages, prompting)), TRACING.set(True)
    try:
        ev = Evaluator(variant.environment, variant.environment.handlers, variant.name,
                       variant.source, variant.memo)
        pieces = variant._start(ev, context, overlay)
    finally:
        TRACING.reset(tracing)
        _RECORDER.reset(token)
        context.clear()
    return origin_parts(pieces) if parts else resolve(pieces)
