"""Source to AST in one pass: the LALR loop over the parser's tables builds AST nodes as it reduces.

Lark's own way is two passes: the parse builds a tree of `Tree`s with positions propagated
through every level, then a transformer walks that tree again to build the AST. Lark cannot apply
a transformer during an LALR parse when its methods want positions (`v_args(meta=True)`), which
ours all do. So this module runs the LALR loop itself, over the parse table, rules and contextual
lexer of Lark's parser as plain data (grammar/larktables.py; shipped in the package for the
default grammars, so that no Lark is imported), and at each reduction does what Lark's tree
builder and the transformer would do together, in the same order:

- positions as Lark's `propagate_positions` gives them: a rule starts where its first child
  with a position starts and ends where its last ends, counting the tokens the tree leaves out
  (brackets, keywords), and a rule with no such child has an empty `meta`;
- the children Lark's tree would keep: filtered tokens left out, `_rule`s spliced in, `None`
  for each `[optional]` part that is absent (`maybe_placeholders`), a `?rule` with one child
  replaced by that child;
- the builder method named after the rule (its alias first), called with that `meta` and those
  children; a rule with no method makes a `Tree`, as the transformer's default does;
- the tree's height as `check_depth` counts it, so that a template nested too deep is refused.

It only ever succeeds as the two-pass parse would: on any failure (a syntax error, a builder's
error, a template nested too deep), `Parser.parse` runs the two-pass parse, whose errors the
suite pins down (positions, messages, which error wins), and raises what it raises. The
tests compare the two passes' ASTs, spans included, over the corpus and generated templates.
"""
from __future__ import annotations

from types import FunctionType
from typing import Any, Callable, Mapping, Optional

from .scanning import GroupedLexer
from .tokens import Spliced


class Unsupported(Exception):
    """This grammar or builder cannot be run in one pass; the two-pass parse is used for it."""


class Meta:
    """A rule's positions, as Lark's `Meta`; also what the loop keeps for every value on its
    stack (a shifted token is its own). `height` is the tree height `check_depth` counts."""
    __slots__ = ("line", "column", "start_pos", "end_line", "end_column", "end_pos", "empty",
                 "height")


def _meta(extents: list, height: int) -> Meta:
    """The positions of a rule whose children have `extents`: from the first positioned one
    to the last (an empty rule, or one of empty rules only, has none: `empty`)."""
    meta = Meta()
    meta.height = height
    first = last = None
    for extent in extents:
        if type(extent) is not Meta or not extent.empty:
            first = extent
            break
    if first is None:
        meta.empty = True
        return meta
    for extent in reversed(extents):
        if type(extent) is not Meta or not extent.empty:
            last = extent
            break
    meta.empty = False
    meta.line, meta.column, meta.start_pos = first.line, first.column, first.start_pos
    meta.end_line, meta.end_column, meta.end_pos = last.end_line, last.end_column, last.end_pos
    return meta


def _height(extent: Any) -> int:
    return extent.height if type(extent) is Meta else 0


class Reduction:
    """What one grammar rule does when the loop reduces it (see the module docstring); made from
    the plain tables' rule (grammar/larktables.py `_rule`)."""
    __slots__ = ("size", "origin", "keep", "nones_after", "expand1", "passthrough", "splice",
                 "method", "name")

    def __init__(self, rule: tuple, builder_class: type) -> None:
        (self.size, self.origin, self.name, self.expand1, self.keep, self.nones_after,
         self.passthrough, self.splice) = rule
        self.method = None if self.splice else _method(builder_class, self.name)


def _method(builder_class: type, name: str) -> Optional[Callable]:
    """The plain function behind the builder's method for `name` (called as
    `function(builder, meta, children)`), or None when the builder has none (a Lark `Tree`
    then, as the transformer's default makes)."""
    for klass in builder_class.__mro__:
        if name in klass.__dict__:
            found = klass.__dict__[name]
            break
    else:
        return None
    if type(found) is FunctionType:
        return found
    raise Unsupported(f"builder method {name} is not a plain method")


class _Position:
    """What Lark's contextual lexer reads of the parser: the state it is in."""
    __slots__ = ("position",)


class OnePass:
    """The one-pass parse for one grammar's plain tables and one builder class."""

    def __init__(self, tables: Mapping[str, Any], builder_class: type,
                 callbacks: Mapping[str, Callable], lexer: Optional[Any] = None) -> None:
        """`tables`: grammar/larktables.py `plain_tables`; `callbacks`: the terminals' lexer
        callbacks; `lexer`: Lark's own lexer where the tables have no scanners (a postlex: custom
        delimiters), else the grouped scanners of the tables are used (no Lark)."""
        self.start_state = tables["start"]
        self.end_state = tables["end"]
        # state -> token kind -> the state to shift to (or go to, after a rule), or ~rule index
        self.states = tables["states"]
        self.units: dict = {}  # (state below, top state, token kind) -> state after unit rules
        self.reductions = [Reduction(rule, builder_class) for rule in tables["rules"]]
        self.grouped = GroupedLexer(tables, callbacks) if "scanners" in tables else None
        if self.grouped is None and lexer is None:
            raise Unsupported("no lexer")
        self.lexer = lexer

    def parse(self, text: str, builder: Any, max_depth: int) -> Any:
        """The AST of `text`, or None when the two-pass parse must decide (an error of any
        kind, or a tree deeper than `max_depth`)."""
        try:
            value, extent = self._run(text, builder)
        except Exception:  # noqa: BLE001 - every failure is decided by the two-pass parse
            return None
        if _height(extent) > max_depth:
            return None
        return value

    def _run(self, text: str, builder: Any) -> tuple[Any, Any]:
        states, reductions, units, build = self.states, self.reductions, self.units, self._build
        state_stack = [self.start_state]
        values: list = []
        extents: list = []
        position = _Position()
        position.position = self.start_state
        if self.grouped is not None:
            tokens = self.grouped.lex(text, position)
        else:
            from lark.lexer import LexerThread  # custom delimiters: Lark's lexer and postlex
            tokens = LexerThread.from_text(self.lexer, text).lex(position)
        for token in tokens:
            kind = token.type
            while True:
                arg = states[state_stack[-1]][kind]
                if arg >= 0:  # shift
                    state_stack.append(arg)
                    values.append(token)
                    extents.append(token)
                    position.position = arg
                    break
                r = reductions[~arg]
                if r.passthrough:  # most reductions: a chain of precedence levels, taken at once
                    below, top = state_stack[-2], state_stack[-1]
                    landing = units.get((below, top, kind))
                    if landing is None:
                        landing = units[(below, top, kind)] = self._units(below, top, kind)
                    state_stack[-1] = landing
                else:  # _reduce, written out: a call less per reduction
                    size = r.size
                    if size:
                        children, child_extents = values[-size:], extents[-size:]
                        del values[-size:], extents[-size:], state_stack[-size:]
                    else:
                        children, child_extents = [], []
                    value, extent = build(r, children, child_extents, builder)
                    state_stack.append(states[state_stack[-1]][r.origin])
                    values.append(value)
                    extents.append(extent)
        return self._finish(state_stack, values, extents, builder)

    def _finish(self, state_stack: list, values: list, extents: list, builder: Any) -> tuple[Any, Any]:
        """The reductions at the end of the text, up to the start rule's."""
        states, reductions, end_state = self.states, self.reductions, self.end_state
        while True:
            arg = states[state_stack[-1]]["$END"]
            if arg >= 0:
                raise Unsupported("shift at the end")
            r = reductions[~arg]
            if r.passthrough:
                state_stack[-1] = states[state_stack[-2]][r.origin]
            else:
                self._reduce(r, state_stack, values, extents, builder)
            if state_stack[-1] == end_state:
                return values[-1], extents[-1]

    def _units(self, below: Any, top: Any, kind: str) -> Any:
        """The state a chain of `?level: next_level` reductions from `top` (over `below`) ends
        in, before token `kind`: such reductions only replace the top state, so the chain
        depends on these three alone, and is followed once per parser."""
        states, reductions = self.states, self.reductions
        while True:
            arg = states[top][kind]
            if arg >= 0 or not reductions[~arg].passthrough:
                return top
            top = states[below][reductions[~arg].origin]

    def _reduce(self, r: Reduction, state_stack: list, values: list, extents: list,
                builder: Any) -> None:
        size = r.size
        if size:
            children = values[-size:]
            child_extents = extents[-size:]
            del values[-size:], extents[-size:], state_stack[-size:]
        else:
            children, child_extents = [], []
        value, extent = self._build(r, children, child_extents, builder)
        state_stack.append(self.states[state_stack[-1]][r.origin])
        values.append(value)
        extents.append(extent)

    @staticmethod
    def _build(r: Reduction, children: list, child_extents: list, builder: Any) -> tuple[Any, Any]:
        kept: list = []
        heights = 0
        for i, splice, nones in r.keep:
            if nones:
                kept += [None] * nones
            extent = child_extents[i]
            height = extent.height if type(extent) is Meta else 0
            if height > heights:
                heights = height
            if splice:
                if kept:
                    kept += children[i].children
                else:  # a repetition (`x*`) grows on the left: take its list, never copy it
                    kept = children[i].children
            else:
                kept.append(children[i])
        if r.nones_after:
            kept += [None] * r.nones_after
        if r.expand1 and len(kept) == 1:
            # Lark hands the one child on; a token keeps its own positions, a subtree gets the
            # rule's (its container's) and keeps its height
            (i, _, _), = r.keep if len(r.keep) == 1 else ((None, None, None),)
            if i is not None and type(child_extents[i]) is not Meta:
                return kept[0], child_extents[i]
            return kept[0], _meta(child_extents, _height(child_extents[i]) if i is not None else heights)
        if r.splice:
            return Spliced(kept), _meta(child_extents, heights)
        meta = _meta(child_extents, heights + 1)
        if r.method is None:
            from lark import Tree  # a rule with no builder (compose.check_builders refuses them)
            return Tree(r.name, kept, meta), meta
        return r.method(builder, meta, kept), meta


__all__ = ["OnePass", "Unsupported"]
