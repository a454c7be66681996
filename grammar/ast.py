"""The template language as data: one small record class per construct.

Read this module as a catalogue of the language. Every node carries a `Span` so that an
error raised while evaluating it can point at the source. Children are tuples, never lists,
so a parsed template can be shared between threads and renders; nodes are not changed after
the parser builds them.

The classes are dataclasses to the outside (`dataclasses.fields`, `is_dataclass`, `replace`,
and an extension's `@dataclass(frozen=True, slots=True)` subclass all work, and the field table
`__dataclass_fields__` lists `span` first), but they are made by `records.Record`, not by
`@dataclass`: a frozen, slotted dataclass costs about a millisecond to define (some forty of them
were a tenth of the package's import time) and its frozen `__init__` makes every node three
times dearer to create, and a parse creates thousands.
"""
from __future__ import annotations

from operator import attrgetter
from typing import Any, Optional

from . import records
from .records import Record
from .spans import Span, pack_span, unpack_span

records.MODULES.add(__name__)


records.PACKED["span"] = records.Packed("span", pack_span, unpack_span)  # see grammar/spans.py


NO_SPAN = Span(1, 1, 0, 0)


class Node(Record):
    span: Span


# ---------------------------------------------------------------------------- expressions

class Expr(Node):
    pass


class Const(Expr):
    """A literal: string, int, float, bool or none."""
    value: Any


class Name(Expr):
    name: str


class ListLiteral(Expr):
    items: tuple[Expr, ...]


class TupleLiteral(Expr):
    items: tuple[Expr, ...]


class DictLiteral(Expr):
    pairs: tuple[tuple[Expr, Expr], ...]


class GetAttr(Expr):
    """`obj.attr` (and `obj.0`): attribute first, then item, as Jinja2 does."""
    obj: Expr
    attr: Any


class GetItem(Expr):
    """`obj[key]`: item first, then attribute."""
    obj: Expr
    key: Expr


class Slice(Expr):
    """`start:stop:step` inside a subscript; missing parts are None."""
    start: Optional[Expr]
    stop: Optional[Expr]
    step: Optional[Expr]


class Arguments(Record):
    """The arguments of a call, filter or test: `(a, k=v, *rest, **more)`."""
    args: tuple[Expr, ...] = ()
    kwargs: tuple[tuple[str, Expr], ...] = ()
    star: Optional[Expr] = None
    dstar: Optional[Expr] = None


NO_ARGUMENTS = Arguments()


class Call(Expr):
    func: Expr
    arguments: Arguments


class Filter(Expr):
    """`value | name(arguments)`; `value` is None inside `{% filter %}` and block `set`."""
    value: Optional[Expr]
    name: str
    arguments: Arguments


class Test(Expr):
    """`value is [not] name arguments`."""
    value: Expr
    name: str
    arguments: Arguments
    negated: bool = False


class Unary(Expr):
    """`-x`, `+x`, `not x`."""
    op: str
    operand: Expr


class Binary(Expr):
    """Arithmetic: `+ - * / // % **`."""
    op: str
    left: Expr
    right: Expr


class Logical(Expr):
    """Short-circuit `and` / `or`, returning an operand as Python does."""
    op: str
    left: Expr
    right: Expr


class Concat(Expr):
    """`a ~ b ~ c`: every operand converted to a string, then joined."""
    items: tuple[Expr, ...]


class Compare(Expr):
    """A comparison chain `a < b <= c` (also `in`, `not in`)."""
    first: Expr
    ops: tuple[tuple[str, Expr], ...]


class CondExpr(Expr):
    """`then if test else otherwise`; `otherwise` None means undefined."""
    test: Expr
    then: Expr
    otherwise: Optional[Expr]


# ---------------------------------------------------------------------------- assignment targets

class NameTarget(Node):
    name: str


class TupleTarget(Node):
    items: tuple[Node, ...]


class NamespaceTarget(Node):
    """`ns.attr` on the left of `set`: the way to carry a value out of a loop."""
    name: str
    attr: str


# ---------------------------------------------------------------------------- statements

class Stmt(Node):
    pass


class Text(Stmt):
    """Template text, already trimmed by the whitespace rules."""
    text: str


class Output(Stmt):
    """`{{ expression }}`."""
    expr: Expr


class If(Stmt):
    """`if`/`elif` branches in order, then the `else` body (possibly empty)."""
    branches: tuple[tuple[Expr, tuple[Stmt, ...]], ...]
    otherwise: tuple[Stmt, ...]


class For(Stmt):
    target: Node
    iter: Expr
    body: tuple[Stmt, ...]
    otherwise: tuple[Stmt, ...]
    condition: Optional[Expr]
    recursive: bool


class Assign(Stmt):
    """`{% set target = expr %}`."""
    target: Node
    expr: Expr


class AssignBlock(Stmt):
    """`{% set target | filters %}body{% endset %}`."""
    target: Node
    filters: tuple[Filter, ...]
    body: tuple[Stmt, ...]


class Parameter(Record):
    """A macro or call-block parameter with its optional default."""
    name: str
    default: Optional[Expr]


class Macro(Stmt):
    name: str
    params: tuple[Parameter, ...]
    body: tuple[Stmt, ...]


class CallBlock(Stmt):
    """`{% call(params) macro(args) %}body{% endcall %}`: body becomes `caller`."""
    call: Call
    params: tuple[Parameter, ...]
    body: tuple[Stmt, ...]


class FilterBlock(Stmt):
    """`{% filter a|b(x) %}body{% endfilter %}`."""
    filters: tuple[Filter, ...]
    body: tuple[Stmt, ...]


class With(Stmt):
    targets: tuple[tuple[Node, Expr], ...]
    body: tuple[Stmt, ...]


class AutoEscape(Stmt):
    """`{% autoescape value %}body{% endautoescape %}`: a frame with autoescaping set."""
    value: Expr
    body: tuple[Stmt, ...]


# ---------------------------------------------------------------------------- composition

class Extends(Stmt):
    """`{% extends expr %}`: render the parent template instead, with this one's blocks."""
    template: Expr


class Block(Stmt):
    """`{% block name [scoped] [required] %}body{% endblock %}`."""
    name: str
    body: tuple[Stmt, ...]
    scoped: bool
    required: bool


class Include(Stmt):
    """`{% include expr [ignore missing] [with context|without context] %}`."""
    template: Expr
    ignore_missing: bool
    with_context: bool


class Import(Stmt):
    """`{% import expr as target [with context] %}`: the template's exports as one module."""
    template: Expr
    target: str
    with_context: bool


class FromImport(Stmt):
    """`{% from expr import name [as alias], ... [with context] %}`."""
    template: Expr
    names: tuple[tuple[str, str], ...]  # (exported name, local name)
    with_context: bool


class Template(Node):
    body: tuple[Stmt, ...]


_HELD = (Node, Arguments, Parameter)  # what a field may hold, directly or in (nested) tuples
_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}


def child_fields(kind: type) -> tuple[str, ...]:
    """The fields of a node class that may hold nodes: every dataclass field but `span`."""
    found = _CHILD_FIELDS.get(kind)
    if found is None:
        found = _CHILD_FIELDS[kind] = tuple(name for name in getattr(kind, "__dataclass_fields__", ())
                                            if name != "span")
    return found


def children(node: object) -> list:
    """The nodes directly inside `node`, in source order (for analyses such as macro scans)."""
    found: list = []
    kind = type(node)
    getter = _GETTERS.get(kind)
    if getter is None:
        getter = _GETTERS[kind] = _getter(child_fields(kind))
    for value in getter(node):
        if value is None:
            continue
        held = _HELD_KINDS.get(value.__class__)
        if held is None:
            held = _HELD_KINDS[value.__class__] = isinstance(value, _HELD)
        if held:
            found.append(value)
        elif isinstance(value, tuple):
            _collect(value, found)
    return found


_GETTERS: dict[type, Any] = {}
# class -> whether its instances are held as nodes (isinstance of _HELD, asked once per class:
# the walks of the checks ask it for every field of every node)
_HELD_KINDS: dict[type, bool] = {}


def _getter(fields: tuple[str, ...]) -> Any:
    """A function giving a node's values of `fields`, as a tuple."""
    if not fields:
        return lambda node: ()
    if len(fields) == 1:
        (name,) = fields
        return lambda node: (getattr(node, name),)
    return attrgetter(*fields)


def nodes_in(value: object) -> list:
    """The nodes (and argument lists, parameters) held by one field's value, in order."""
    found: list = []
    _collect(value, found)
    return found


def _collect(value: object, found: list) -> None:
    # Lists, not generators: the checks run over every node of every template compiled, and
    # a chain of nested generators per field cost them more than the parse's lexer.
    if isinstance(value, _HELD):
        found.append(value)
    elif isinstance(value, tuple):
        for item in value:
            if item is None:
                continue
            held = _HELD_KINDS.get(item.__class__)
            if held is None:
                held = _HELD_KINDS[item.__class__] = isinstance(item, _HELD)
            if held:
                found.append(item)
            elif isinstance(item, tuple):
                _collect(item, found)


def walk(node: object):
    """Every node under `node` (itself included; a tuple of nodes works too), without recursion."""
    stack = nodes_in(node) if isinstance(node, tuple) else [node]
    stack.reverse()
    pop, push = stack.pop, stack.extend
    while stack:
        current = pop()
        yield current
        inside = children(current)
        if inside:
            inside.reverse()
            push(inside)
