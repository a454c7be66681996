"""What the one-pass parse needs of a Lark parser, as plain data; and the builder as a Lark transformer.

`plain_tables(lark_parser)` reads a built (or loaded) Lark parser once: its LALR table, its rules
as the tree builder would treat them, and its contextual lexer's scanners, as dicts, tuples and
strings (grammar/onepass.py `Tables`). The default grammars' plain tables are shipped in the
package (grammar/tables.py), so that a process parses templates without importing Lark at all;
other grammars get theirs from the Lark parser they build. Everything here imports Lark.

`lark_transformer(builder_class)` is the same builder for the two-pass parse, which decides every
error: Lark's tree, then this transformer over it.
"""
from __future__ import annotations

import functools
import types
from copy import copy
from typing import Any

from ._lark_import import import_lark

import_lark()  # first, so that Lark is imported without its optional modules (see there)

from lark import Transformer_NonRecursive, v_args
from lark.lexer import BasicLexer, CallChain, ContextualLexer, PatternStr, UnlessCallback
from lark.parse_tree_builder import (ChildFilterLALR, ChildFilterLALR_NoPlaceholders,
                                     ExpandSingleChild, PropagatePositions)
from lark.parsers.lalr_analysis import Shift

from .tables import PLAIN_FORMAT as FORMAT  # noqa: E402


class Unsupported(Exception):
    """This grammar cannot be run in one pass; the two-pass parse is used for it."""


def plain_tables(lark_parser: Any, user_callbacks: frozenset = frozenset()) -> dict:
    """The one-pass parse's tables for `lark_parser` (see the module docstring); Unsupported when
    a rule, child filter or lexer callback is of a shape the one-pass parse does not know.
    `user_callbacks`: the terminals given `lexer_callbacks` (the caller hands the functions to
    the one-pass lexer itself)."""
    frontend = lark_parser.parser
    table = frontend.parser.parser.parse_table
    (start,) = lark_parser.options.start
    rules, index = [], {}
    chains = {id(rule): (rule, chain) for rule, chain in lark_parser._parse_tree_builder.rule_builders}
    keyed = {(r.origin.name, tuple(r.expansion), r.alias): c for r, c in chains.values()}
    states = {}
    for state, actions in table.states.items():
        row = {}
        for kind, (action, arg) in actions.items():
            if action is Shift:
                row[kind] = arg  # a state (a go-to, for a rule's name)
                continue
            key = (arg.origin.name, tuple(arg.expansion), arg.alias)
            if key not in index:
                index[key] = len(rules)
                rules.append(_rule(arg, keyed[key]))
            row[kind] = ~index[key]  # a reduction: negative
        states[state] = row
    tables = {"format": FORMAT, "start": table.start_states[start], "end": table.end_states[start],
              "states": states, "rules": tuple(rules), "tree_names": frozenset(tree_names(lark_parser))}
    lexer = frontend.lexer
    if type(lexer) is ContextualLexer:
        tables.update(_scanners(lexer, lark_parser.lexer_conf, user_callbacks))
    return tables


def _rule(rule: Any, chain: list) -> tuple:
    """(size, origin, name, expand1, keep, nones_after, passthrough, splice): see onepass.Rule."""
    size = len(rule.expansion)
    origin = rule.origin.name
    name = rule.alias or rule.options.template_source or origin
    expand1 = ExpandSingleChild in chain
    keep, nones_after = _kept_children(rule, chain)
    passthrough = expand1 and size == 1 and not rule.expansion[0].is_term and len(keep) == 1
    if not passthrough and PropagatePositions not in chain:
        raise Unsupported(f"rule {name} without positions")
    return (size, str(origin), str(name), expand1, keep, nones_after, passthrough,
            origin.startswith("_"))


def _kept_children(rule: Any, chain: list) -> tuple[tuple, int]:
    """Lark's child filter for the rule: (index, splice, Nones before it) per kept child, and
    the Nones after the last."""
    for wrapper in chain:
        func = getattr(wrapper, "func", None)
        if func is ChildFilterLALR:
            to_include, nones_after = wrapper.args
            return tuple(tuple(x) for x in to_include), nones_after
        if func is ChildFilterLALR_NoPlaceholders:
            (to_include,) = wrapper.args
            return tuple((i, expand, 0) for i, expand in to_include), 0
        if func is not None:
            raise Unsupported(f"child filter {func.__name__}")
    return tuple((i, False, 0) for i in range(len(rule.expansion))), 0


def _scanners(contextual: ContextualLexer, lexer_conf: Any, user_callbacks: frozenset) -> dict:
    """The contextual lexer as two group scanners (grammar/scanning.py says why) and each state's
    own scanner, each as the ordered terminal names of its alternation, its keyword map (Lark's
    `UnlessCallback`: a NAME that reads `in` is IN), its newline and ignored terminals."""
    if lexer_conf.g_regex_flags or lexer_conf.use_bytes:
        raise Unsupported("lexer flags")
    accepted: dict[int, frozenset] = {}
    groups: dict[bool, dict] = {True: {}, False: {}}
    for lexer in {id(lexer): lexer for lexer in contextual.lexers.values()}.values():
        names = frozenset(t.name for t in lexer.terminals)
        accepted[id(lexer)] = names
        groups["TEXT" in names].update((t.name, t) for t in lexer.terminals)
    scanners: list = []
    found: dict = {}

    def add(lexer: BasicLexer) -> int:
        spec = _scanner(lexer, user_callbacks)
        if spec not in found:
            found[spec] = len(scanners)
            scanners.append(spec)
        return found[spec]
    grouped = {}
    for has_text, terminals in groups.items():
        conf = copy(lexer_conf)
        conf.terminals = list(terminals.values())
        conf.skip_validation = True
        grouped[has_text] = add(BasicLexer(conf))
    lexer_states = {state: (grouped["TEXT" in accepted[id(lexer)]], accepted[id(lexer)], add(lexer))
                    for state, lexer in contextual.lexers.items()}
    regexps = {t.name: t.pattern.to_regexp() for t in lexer_conf.terminals}
    return {"scanners": tuple(scanners), "lexer_states": lexer_states, "regexps": regexps}


def _scanner(lexer: BasicLexer, user_callbacks: frozenset) -> tuple:
    scanner = lexer.scanner  # builds Lark's callbacks too
    unless = {}
    for kind, callback in lexer.callback.items():
        if type(callback) is CallChain:
            if kind not in user_callbacks:
                raise Unsupported(f"callback chain on {kind}")
            callback = callback.callback1
        elif kind in user_callbacks:
            continue
        if type(callback) is not UnlessCallback:
            raise Unsupported(f"lexer callback on {kind}")
        words: dict = {}
        for t in callback.scanner.terminals:
            if type(t.pattern) is not PatternStr or t.pattern.flags:
                raise Unsupported(f"keyword {t.name} with flags")
            words.setdefault(t.pattern.value, t.name)
        unless[kind] = tuple(sorted(words.items()))
    return (tuple(t.name for t in scanner.terminals), tuple(sorted(unless.items())),
            frozenset(lexer.newline_types), frozenset(lexer.ignore_types))


def tree_names(lark_parser: Any) -> set[str]:
    """The names of the trees the grammar can make (the transformer needs a method for each).

    A rule named `_x` is inlined; a `?x` rule is inlined when it has one child (counted only where
    sure, so that this never asks for a builder a rule does not need)."""
    names = set()
    for rule in lark_parser.rules:
        if rule.alias:
            names.add(str(rule.alias))
            continue
        origin = str(rule.origin.name)
        if origin.startswith("_"):
            continue
        if rule.options.expand1:
            if sum(map(_gives_a_child, rule.expansion)) < 2:
                continue
        names.add(origin)
    return names


def _gives_a_child(symbol) -> bool:
    """A terminal that is kept, or a rule that is not inlined (`_x` rules may give none)."""
    return not symbol.filter_out if symbol.is_term else not symbol.name.startswith("_")


@functools.lru_cache(maxsize=None)
def lark_transformer(builder_class: type) -> type:
    """`builder_class` as a Lark transformer: each public method a `v_args(meta=True)` rule
    method (errors it raises come wrapped in `VisitError`, with the tree they were raised at),
    Lark's tokens handed on as they are."""
    methods: dict[str, Any] = {"__visit_tokens__": False}
    for klass in reversed(builder_class.__mro__):
        for name, value in vars(klass).items():
            if not name.startswith("_") and isinstance(value, types.FunctionType):
                methods[name] = v_args(meta=True)(value)

    def __init__(self, *args, **kwargs):
        builder_class.__init__(self, *args, **kwargs)
    methods["__init__"] = __init__
    return type(f"Lark{builder_class.__name__}", (Transformer_NonRecursive, builder_class), methods)


__all__ = ["plain_tables", "lark_transformer", "tree_names", "Unsupported", "FORMAT"]
