"""The one-pass parse's lexer: Lark's contextual lexer, from plain tables, with two scanners where
Lark compiles dozens.

Lark's contextual lexer gives every parser state its own scanner, one regular expression over
the terminals that state accepts, compiled the first time the state is met: a typical chat
template meets about forty of them, and compiling them is more than half of its first parse in
a process. Here the states are put in two groups, those where template text may come next and
those inside a tag, and each group has one scanner over every terminal its states accept. A
token the group's scanner finds is the token the state's own scanner would find whenever the
state accepts it: both try the terminals in the same order (Lark sorts them by priority, then
length, then name), and the state's are a subset of the group's, so the first of them to match
is the same. When the state does not accept it (a keyword where a name is wanted, `-}}` where
a minus is), the state's own scanner decides, as in Lark. Any other failure is left to the
two-pass parse (grammar/onepass.py).

The scanners are described by plain data (grammar/larktables.py reads them from Lark's lexer)
and compiled here, each when first met, as Lark compiles them, so that no Lark is imported.
"""
from __future__ import annotations

import re
from typing import Any, Callable, Iterator, Mapping, Optional

from . import regexcode
from .tokens import Token


class Scanner:
    """One alternation of terminals, as Lark's `BasicLexer` scans: the first terminal in order
    that matches, then its keyword map (a NAME reading `in` is IN), then the user's callback
    for the terminal (a name must be an identifier)."""
    __slots__ = ("names", "regexps", "alternatives", "unless", "newline_types", "ignore_types",
                 "callbacks", "dropped")

    def __init__(self, spec: tuple, regexps: Mapping[str, str], callbacks: Mapping[str, Callable]) -> None:
        self.names, unless, self.newline_types, self.ignore_types = spec
        self.unless = {kind: dict(words) for kind, words in unless}
        self.regexps = regexps
        self.callbacks = callbacks
        # ignored terminals no callback looks at: dropped unread (Lark's way)
        self.dropped = frozenset(k for k in self.ignore_types if k not in callbacks and k not in self.unless)
        self.alternatives: Optional[tuple] = None

    def built(self) -> "Scanner":
        if self.alternatives is None:
            self.alternatives = tuple(_compile([(n, self.regexps[n]) for n in self.names]))
        return self

    def token(self, kind: str, value: str, pos: int, line: int, column: int, end_line: int,
              end_column: int, end_pos: int) -> Token:
        token = Token(kind, value, pos, line, column, end_line, end_column, end_pos)
        words = self.unless.get(kind)
        if words is not None:
            token.type = words.get(value, kind)
        callback = self.callbacks.get(kind)
        if callback is not None and token.type == kind:
            token = callback(token)
        return token


def _compile(terminals: list) -> list:
    """Lark's way: one expression over all the terminals, split where `re` refuses that many
    groups (older Pythons allowed 100). Whole, it may come compiled with the tables
    (grammar/regexcode.py)."""
    size = len(terminals)
    whole = True
    while True:
        try:
            compile_ = regexcode.compiled if whole else re.compile
            return [compile_(alternation(terminals[i:i + size]))
                    for i in range(0, len(terminals), size)]
        except AssertionError:
            size //= 2
            whole = False


def alternation(terminals: list) -> str:
    """The pattern of one scanner over `(name, regexp)` terminals, in order."""
    return "|".join(f"(?P<{n}>{r})" for n, r in terminals)


def group_patterns(tables: Mapping[str, Any]) -> list[str]:
    """The patterns of the scanners that the lexer's state groups use (every parse meets them)."""
    regexps, scanners = tables["regexps"], tables["scanners"]
    groups = sorted({group for group, _, _ in tables["lexer_states"].values()})
    return [alternation([(n, regexps[n]) for n in scanners[group][0]]) for group in groups]


class GroupedLexer:
    """Tokens of a text for the parser state that `position.position` names at each step."""

    def __init__(self, tables: Mapping[str, Any], callbacks: Mapping[str, Callable]) -> None:
        regexps = tables["regexps"]
        scanners = [Scanner(spec, regexps, callbacks) for spec in tables["scanners"]]
        self.by_state = {state: (scanners[group], accepted, scanners[own])
                         for state, (group, accepted, own) in tables["lexer_states"].items()}

    def lex(self, text: str, position: Any) -> Iterator[Token]:
        by_state, new = self.by_state, str.__new__
        pos, line, line_start, end = 0, 1, 0, len(text)
        while pos < end:
            group, accepted, own = by_state[position.position]
            if group.alternatives is None:
                group.built()
            for alternative in group.alternatives:
                found = alternative.match(text, pos)
                if found is not None:
                    break
            else:
                raise LookupError("no terminal matches")  # the two-pass parse says what is wrong
            value, kind = found[0], found.lastgroup
            size = len(value)
            newlines = value.count("\n") if kind in group.newline_types else 0
            if kind in group.dropped:
                token = None
            else:
                end_pos = pos + size
                end_start = text.rindex("\n", pos, end_pos) + 1 if newlines else line_start
                # Token(...) written out: a call less per token, the lexer's largest cost
                token = new(Token, value)
                token.value, token.start_pos, token.line = value, pos, line
                token.column, token.end_line = pos - line_start + 1, line + newlines
                token.end_column, token.end_pos = end_pos - end_start + 1, end_pos
                words = group.unless.get(kind)
                token.type = kind if words is None else words.get(value, kind)
                callback = group.callbacks.get(kind)
                if callback is not None and token.type == kind:
                    token = callback(token)
                if token.type not in accepted:  # the state's own scanner decides, as in Lark
                    token, size, newlines = _next(own, text, pos, line, line_start)
            if newlines:
                line += newlines
                line_start = text.rindex("\n", pos, pos + size) + 1
            pos += size
            if token is not None and token.type not in group.ignore_types:
                yield token


def _next(scanner: Scanner, text: str, pos: int, line: int, line_start: int) -> tuple:
    """(token or None, length, newlines) of what `scanner` reads at `pos`; a LookupError when it
    reads nothing (the two-pass parse then says what is wrong)."""
    for alternative in scanner.built().alternatives:
        found = alternative.match(text, pos)
        if found is not None:
            break
    else:
        raise LookupError("no terminal matches")
    value, kind = found.group(0), found.lastgroup
    size = len(value)
    newlines = value.count("\n") if kind in scanner.newline_types else 0
    if kind in scanner.dropped:
        return None, size, newlines
    end_pos = pos + size
    end_start = (text.rindex("\n", pos, end_pos) + 1) if newlines else line_start
    token = scanner.token(kind, value, pos, line, pos - line_start + 1, line + newlines,
                          end_pos - end_start + 1, end_pos)
    return token, size, newlines


__all__ = ["GroupedLexer", "Scanner"]
