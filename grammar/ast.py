"""The template language as data: one frozen, slotted dataclass per construct.

Read this module as a catalogue of the language. Every node carries a `Span` so that an
error raised while evaluating it can point at the source. Children are tuples, never lists,
so a parsed template is immutable and can be shared between threads and renders.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional


@dataclass(frozen=True, slots=True)
class Span:
    """Where a node came from: 1-based line and column, 0-based character offsets."""
    line: int
    column: int
    start: int
    end: int


NO_SPAN = Span(1, 1, 0, 0)


@dataclass(frozen=True, slots=True)
class Node:
    span: Span


# ---------------------------------------------------------------------------- expressions

@dataclass(frozen=True, slots=True)
class Expr(Node):
    pass


@dataclass(frozen=True, slots=True)
class Const(Expr):
    """A literal: string, int, float, bool or none."""
    value: Any


@dataclass(frozen=True, slots=True)
class Name(Expr):
    name: str


@dataclass(frozen=True, slots=True)
class ListLiteral(Expr):
    items: tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class TupleLiteral(Expr):
    items: tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class DictLiteral(Expr):
    pairs: tuple[tuple[Expr, Expr], ...]


@dataclass(frozen=True, slots=True)
class GetAttr(Expr):
    """`obj.attr` (and `obj.0`): attribute first, then item, as Jinja2 does."""
    obj: Expr
    attr: Any


@dataclass(frozen=True, slots=True)
class GetItem(Expr):
    """`obj[key]`: item first, then attribute."""
    obj: Expr
    key: Expr


@dataclass(frozen=True, slots=True)
class Slice(Expr):
    """`start:stop:step` inside a subscript; missing parts are None."""
    start: Optional[Expr]
    stop: Optional[Expr]
    step: Optional[Expr]


@dataclass(frozen=True, slots=True)
class Arguments:
    """The arguments of a call, filter or test: `(a, k=v, *rest, **more)`."""
    args: tuple[Expr, ...] = ()
    kwargs: tuple[tuple[str, Expr], ...] = ()
    star: Optional[Expr] = None
    dstar: Optional[Expr] = None


NO_ARGUMENTS = Arguments()


@dataclass(frozen=True, slots=True)
class Call(Expr):
    func: Expr
    arguments: Arguments


@dataclass(frozen=True, slots=True)
class Filter(Expr):
    """`value | name(arguments)`; `value` is None inside `{% filter %}` and block `set`."""
    value: Optional[Expr]
    name: str
    arguments: Arguments


@dataclass(frozen=True, slots=True)
class Test(Expr):
    """`value is [not] name arguments`."""
    value: Expr
    name: str
    arguments: Arguments
    negated: bool = False


@dataclass(frozen=True, slots=True)
class Unary(Expr):
    """`-x`, `+x`, `not x`."""
    op: str
    operand: Expr


@dataclass(frozen=True, slots=True)
class Binary(Expr):
    """Arithmetic: `+ - * / // % **`."""
    op: str
    left: Expr
    right: Expr


@dataclass(frozen=True, slots=True)
class Logical(Expr):
    """Short-circuit `and` / `or`, returning an operand as Python does."""
    op: str
    left: Expr
    right: Expr


@dataclass(frozen=True, slots=True)
class Concat(Expr):
    """`a ~ b ~ c`: every operand converted to a string, then joined."""
    items: tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class Compare(Expr):
    """A comparison chain `a < b <= c` (also `in`, `not in`)."""
    first: Expr
    ops: tuple[tuple[str, Expr], ...]


@dataclass(frozen=True, slots=True)
class CondExpr(Expr):
    """`then if test else otherwise`; `otherwise` None means undefined."""
    test: Expr
    then: Expr
    otherwise: Optional[Expr]


# ---------------------------------------------------------------------------- assignment targets

@dataclass(frozen=True, slots=True)
class NameTarget(Node):
    name: str


@dataclass(frozen=True, slots=True)
class TupleTarget(Node):
    items: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class NamespaceTarget(Node):
    """`ns.attr` on the left of `set`: the way to carry a value out of a loop."""
    name: str
    attr: str


# ---------------------------------------------------------------------------- statements

@dataclass(frozen=True, slots=True)
class Stmt(Node):
    pass


@dataclass(frozen=True, slots=True)
class Text(Stmt):
    """Template text, already trimmed by the whitespace rules."""
    text: str


@dataclass(frozen=True, slots=True)
class Output(Stmt):
    """`{{ expression }}`."""
    expr: Expr


@dataclass(frozen=True, slots=True)
class If(Stmt):
    """`if`/`elif` branches in order, then the `else` body (possibly empty)."""
    branches: tuple[tuple[Expr, tuple[Stmt, ...]], ...]
    otherwise: tuple[Stmt, ...]


@dataclass(frozen=True, slots=True)
class For(Stmt):
    target: Node
    iter: Expr
    body: tuple[Stmt, ...]
    otherwise: tuple[Stmt, ...]
    condition: Optional[Expr]
    recursive: bool


@dataclass(frozen=True, slots=True)
class Assign(Stmt):
    """`{% set target = expr %}`."""
    target: Node
    expr: Expr


@dataclass(frozen=True, slots=True)
class AssignBlock(Stmt):
    """`{% set target | filters %}body{% endset %}`."""
    target: Node
    filters: tuple[Filter, ...]
    body: tuple[Stmt, ...]


@dataclass(frozen=True, slots=True)
class Parameter:
    """A macro or call-block parameter with its optional default."""
    name: str
    default: Optional[Expr]


@dataclass(frozen=True, slots=True)
class Macro(Stmt):
    name: str
    params: tuple[Parameter, ...]
    body: tuple[Stmt, ...]


@dataclass(frozen=True, slots=True)
class CallBlock(Stmt):
    """`{% call(params) macro(args) %}body{% endcall %}`: body becomes `caller`."""
    call: Call
    params: tuple[Parameter, ...]
    body: tuple[Stmt, ...]


@dataclass(frozen=True, slots=True)
class FilterBlock(Stmt):
    """`{% filter a|b(x) %}body{% endfilter %}`."""
    filters: tuple[Filter, ...]
    body: tuple[Stmt, ...]


@dataclass(frozen=True, slots=True)
class With(Stmt):
    targets: tuple[tuple[Node, Expr], ...]
    body: tuple[Stmt, ...]


@dataclass(frozen=True, slots=True)
class AutoEscape(Stmt):
    """`{% autoescape value %}body{% endautoescape %}`: a frame with autoescaping set."""
    value: Expr
    body: tuple[Stmt, ...]


# ---------------------------------------------------------------------------- composition

@dataclass(frozen=True, slots=True)
class Extends(Stmt):
    """`{% extends expr %}`: render the parent template instead, with this one's blocks."""
    template: Expr


@dataclass(frozen=True, slots=True)
class Block(Stmt):
    """`{% block name [scoped] [required] %}body{% endblock %}`."""
    name: str
    body: tuple[Stmt, ...]
    scoped: bool
    required: bool


@dataclass(frozen=True, slots=True)
class Include(Stmt):
    """`{% include expr [ignore missing] [with context|without context] %}`."""
    template: Expr
    ignore_missing: bool
    with_context: bool


@dataclass(frozen=True, slots=True)
class Import(Stmt):
    """`{% import expr as target [with context] %}`: the template's exports as one module."""
    template: Expr
    target: str
    with_context: bool


@dataclass(frozen=True, slots=True)
class FromImport(Stmt):
    """`{% from expr import name [as alias], ... [with context] %}`."""
    template: Expr
    names: tuple[tuple[str, str], ...]  # (exported name, local name)
    with_context: bool


@dataclass(frozen=True, slots=True)
class Template(Node):
    body: tuple[Stmt, ...]


def children(node: object):
    """The nodes directly inside `node`, in source order (for analyses such as macro scans)."""
    for name in getattr(type(node), "__dataclass_fields__", ()):
        if name == "span":
            continue
        yield from nodes_in(getattr(node, name))


def nodes_in(value: object):
    """The nodes (and argument lists, parameters) held by one field's value."""
    if isinstance(value, (Node, Arguments, Parameter)):
        yield value
    elif isinstance(value, tuple):
        for item in value:
            yield from nodes_in(item)


def walk(node: object):
    """Every node under `node` (itself included; a tuple of nodes works too), without recursion."""
    stack = list(nodes_in(node)) if isinstance(node, tuple) else [node]
    stack.reverse()
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(list(children(current))))
