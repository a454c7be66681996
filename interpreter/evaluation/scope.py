"""The scope chain, with Jinja2's rules.

`if` makes no scope; the template, every loop iteration, a loop's `else`, every macro call, `with`,
call block, filter block and block `set` body has a scope of its own (Jinja2's frames).
Assignments go to the innermost scope, so nothing set inside a loop is seen after it:
`namespace()` is the way out. Macros see the scope they were defined in, as it is when called.

A name is looked up from the innermost scope outwards, and the render context is the outermost
one. Jinja2 decides at compile time which frame a name belongs to: a frame that assigns a name
with a plain `set` (or `macro`, or block `set`) before anything else in it mentions the name, and
which no enclosing frame mentions, owns the name from its start, unassigned (see `declarations`).
Until the `set` runs, the frames nested in it read the name as undefined, never from an outer
scope or the context: the name is in the frame's scope with the value MISSING, which ends the
lookup there.
"""
from __future__ import annotations

from typing import Any, Iterable, Optional

from ..grammar import ast
from ..grammar.errors import TemplateAssertionError
from ..values.undefined import MISSING


class Scope:
    __slots__ = ("vars", "parent")

    def __init__(self, parent: Optional["Scope"] = None, variables: Optional[dict] = None) -> None:
        self.parent = parent
        self.vars: dict[str, Any] = {} if variables is None else variables

    def lookup(self, name: str) -> Any:
        """The value of `name`, or MISSING: not found, or found unassigned."""
        scope: Optional[Scope] = self
        while scope is not None:
            value = scope.vars.get(name, _ABSENT)
            if value is not _ABSENT:
                return value
            scope = scope.parent
        return MISSING

    def set(self, name: str, value: Any) -> None:
        self.vars[name] = value

    def child(self) -> "Scope":
        return Scope(self)


_ABSENT: Any = object()


# ---------------------------------------------------------------------------- names frames own

# The parts of a statement that Jinja2 runs in frames of their own; the statement's other parts
# (a loop's iterable, a call block's call, the filters of a filter block, the values of `with`,
# the target of a block `set`) are read in the frame where the statement stands.
FRAME_FIELDS: dict[type, tuple[str, ...]] = {
    ast.For: ("condition", "body", "otherwise"),
    ast.Macro: ("params", "body"),
    ast.CallBlock: ("params", "body"),
    ast.FilterBlock: ("filters", "body"),
    ast.With: ("body",),
    ast.AssignBlock: ("filters", "body"),
    ast.Block: ("body",),
    ast.AutoEscape: ("body",),
}

# What a macro (or call block) body can read without defining it: Jinja2 passes them in.
MACRO_SPECIALS = ("caller", "kwargs", "varargs")


def frame_fields(kind: type) -> tuple[str, ...]:
    """The fields of a statement run in frames of their own: the core's, or what an extension's
    node class declares in `jinja_inner_fields` (as `generation`, a call block in Jinja2)."""
    return FRAME_FIELDS.get(kind) or getattr(kind, "jinja_inner_fields", ())


def declarations(body: tuple) -> dict[int, dict[str, Any]]:
    """For the template `body`: id(statement) -> the names (each mapped to MISSING) to declare,
    unassigned, in the scope where the statement runs, just before it runs.

    A frame owns a name unassigned from its start when, in Jinja2's order of visiting (the
    statements of the frame itself, not of the frames nested in it), the first mention of the
    name is a plain assignment outside any `if`, and no enclosing frame mentions it. Only the
    frames nested in statements up to that assignment can see it unassigned, so only statements
    that open such frames, and read the name there, are listed: most templates list nothing.
    """
    found: dict[int, dict[str, Any]] = {}
    # (statements of a frame, names its enclosing frames mention, its parameters, its opener)
    stack: list[tuple[tuple, frozenset, tuple, Any]] = [(body, frozenset(), (), None)]
    while stack:
        statements, outer, params, owner = stack.pop()
        frame = _Frame(params)
        for index, statement in enumerate(statements):
            frame.visit(statement, index, False)
        mentioned = outer | frozenset(frame.first)
        if type(owner) is ast.AssignBlock:
            _check_block_set_filters(owner, mentioned)
        unassigned = {name: at for name, at in frame.first.items()
                      if at is not None and name not in outer}
        stack.extend((block.body, frozenset(), (), block) for block in frame.blocks)
        for index, node in frame.openers:
            # a macro's body runs only when called, so after the macro's own name is assigned
            seen = {name for name, at in unassigned.items() if index < at
                    or (index == at and not (type(node) is ast.Macro and node.name == name))}
            names = sorted(seen & _reads(node)) if seen else ()
            if names:
                found[id(node)] = dict.fromkeys(names, MISSING)
            stack.extend((inner, mentioned, inner_params, node)
                         for inner, inner_params in _inner_frames(node))
    return found


class _Frame:
    """The names one frame mentions, in Jinja2's order: `first[name]` is the index of the
    statement whose plain assignment mentions it first, or None when something else does."""

    def __init__(self, params: Iterable[str]) -> None:
        self.first: dict[str, Optional[int]] = dict.fromkeys(params)
        self.openers: list[tuple[int, Any]] = []  # (index, statement opening inner frames)
        self.blocks: list[ast.Block] = []

    def visit(self, node: Any, index: int, in_branch: bool) -> None:
        kind = type(node)
        if kind is ast.Text:
            return
        if kind is ast.Output:
            self.read(node.expr)
        elif kind is ast.Assign:
            self.read(node.expr)  # the value first: `set x = x + 1` reads the outer x
            self.assign(node.target, None if in_branch else index)
        elif kind is ast.If:
            # Jinja2 merges the branches so that a name first assigned in one is read from
            # outside until assigned: it is never unassigned from the frame's start.
            for test, body in node.branches:
                self.read(test)
                self.visit_all(body, index)
            self.visit_all(node.otherwise, index)
        elif kind is ast.Block:  # a frame of its own that sees the context, not this frame
            self.blocks.append(node)
        elif kind is ast.Import:
            self.read(node.template)
            self.first.setdefault(node.target, None if in_branch else index)
        elif kind is ast.FromImport:
            self.read(node.template)
            for _, alias in node.names:
                self.first.setdefault(alias, None if in_branch else index)
        elif frame_fields(kind):
            self.opener(node, index, in_branch)
        else:
            self.extension(node, index)

    def extension(self, node: Any, index: int) -> None:
        """An extension's statement that opens no frame: its handler runs its parts in this
        frame's scope, so they count as an `if` branch would: what they assign is never
        unassigned from the start."""
        for child in ast.children(node):
            if isinstance(child, ast.Stmt):
                self.visit(child, index, True)
            else:
                self.read(child)

    def visit_all(self, body: tuple, index: int) -> None:
        for node in body:
            self.visit(node, index, True)

    def opener(self, node: Any, index: int, in_branch: bool) -> None:
        kind = type(node)
        if kind is ast.For:
            self.read(node.iter)
        elif kind is ast.CallBlock:
            self.read(node.call)
        elif kind is ast.FilterBlock:
            self.read(node.filters)
        elif kind is ast.With:
            self.read(tuple(value for _, value in node.targets))
        elif kind is ast.AutoEscape:
            self.read(node.value)
        elif kind is ast.AssignBlock:
            self.assign(node.target, None if in_branch else index)
        elif kind is ast.Macro:
            self.first.setdefault(node.name, None if in_branch else index)
        elif kind not in FRAME_FIELDS:  # an extension's: its other fields are read here
            inner = frame_fields(kind)
            self.read(tuple(getattr(node, name) for name in kind.__dataclass_fields__
                            if name != "span" and name not in inner))
        self.openers.append((index, node))

    def read(self, node: Any) -> None:
        for inner in ast.walk(node):
            if type(inner) in _NAMED:
                self.first.setdefault(inner.name, None)

    def assign(self, target: Any, at: Optional[int]) -> None:
        kind = type(target)
        if kind is ast.NameTarget:
            self.first.setdefault(target.name, at)
        elif kind is ast.TupleTarget:
            for item in target.items:
                self.assign(item, at)
        else:  # `ns.attr`: reads ns
            self.first.setdefault(target.name, None)


_NAMED = (ast.Name, ast.NameTarget, ast.NamespaceTarget)


def _reads(node: Any) -> set[str]:
    """The names mentioned in the inner frames of `node` (a superset of what they read here)."""
    return {inner.name for field in frame_fields(type(node))
            for inner in ast.walk(getattr(node, field) or ()) if type(inner) in _NAMED}


def _inner_frames(node: Any) -> list[tuple[tuple, tuple[str, ...]]]:
    """(statements, parameters) of each frame `node` opens that can hold statements."""
    kind = type(node)
    if kind is ast.For:
        return [(node.body, _target_names(node.target) + ("loop",)), (node.otherwise, ())]
    if kind is ast.Macro or kind is ast.CallBlock:
        # a default is read in the macro's frame, before its body
        defaults = tuple(n.name for p in node.params if p.default is not None
                         for n in ast.walk(p.default) if type(n) in _NAMED)
        return [(node.body, tuple(p.name for p in node.params) + defaults + MACRO_SPECIALS)]
    if kind is ast.With:  # its targets are assigned before its body runs
        return [(node.body, tuple(n for target, _ in node.targets for n in _target_names(target)))]
    if kind not in FRAME_FIELDS:  # an extension's; a function body gets what a macro's gets
        specials = MACRO_SPECIALS if getattr(kind, "jinja_function_field", None) else ()
        return [(getattr(node, name), specials) for name in frame_fields(kind)
                if isinstance(getattr(node, name), tuple)]
    return [(node.body, ())]


def _target_names(target: Any) -> tuple[str, ...]:
    return tuple(n.name for n in ast.walk(target) if type(n) is ast.NameTarget)


def _check_block_set_filters(node: ast.AssignBlock, mentioned: frozenset) -> None:
    """Jinja2 cannot compile a block `set` whose filters read a name that neither its body nor
    an enclosing frame mentions (its compiler looks the name up in the body's frame, where it
    was never recorded): refuse the template as it does. `mentioned`: what the body's frame
    and the frames around it mention."""
    for inner in ast.walk(node.filters):
        if type(inner) is ast.Name and inner.name not in mentioned:
            raise TemplateAssertionError(
                f"the filters of this block set read {inner.name!r}, which nothing else in its "
                "scope mentions: Jinja2 cannot compile that (mention the name before the block)",
                lineno=inner.span.line, column=inner.span.column)
