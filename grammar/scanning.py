"""The one-pass parse's lexer: Lark's contextual lexer, with two scanners where it compiles dozens.

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
"""
from __future__ import annotations

from copy import copy
from typing import Any, Iterator, Optional

from lark import Token
from lark.lexer import BasicLexer
from lark.utils import TextSlice


class _Group:
    """One group's scanner: Lark's `BasicLexer` over the group's terminals, and what the loop
    reads of it once it is built (its compiled alternatives, callbacks, newline and ignored
    terminals), so that a token costs one regular expression match and no Lark call."""
    __slots__ = ("lexer", "alternatives", "callbacks", "newline_types", "ignore_types")

    def __init__(self, lexer: BasicLexer) -> None:
        self.lexer = lexer
        self.alternatives: Optional[tuple] = None

    def built(self) -> "_Group":
        if self.alternatives is None:
            scanner = self.lexer.scanner  # compiled here, the first time the group is met
            self.callbacks = self.lexer.callback
            self.newline_types = self.lexer.newline_types
            self.ignore_types = self.lexer.ignore_types
            self.alternatives = tuple(scanner._mres)
        return self


class GroupedLexer:
    """Tokens of a text for the parser state that `position.position` names at each step."""

    def __init__(self, contextual: Any, lexer_conf: Any) -> None:
        accepted: dict[int, frozenset] = {}
        groups: dict[bool, dict] = {True: {}, False: {}}
        for lexer in {id(lexer): lexer for lexer in contextual.lexers.values()}.values():
            names = frozenset(t.name for t in lexer.terminals)
            accepted[id(lexer)] = names
            groups["TEXT" in names].update((t.name, t) for t in lexer.terminals)
        scanners = {}
        for has_text, terminals in groups.items():
            conf = copy(lexer_conf)
            conf.terminals = list(terminals.values())
            conf.skip_validation = True
            scanners[has_text] = _Group(BasicLexer(conf))
        self.by_state = {state: (scanners["TEXT" in accepted[id(lexer)]], accepted[id(lexer)], lexer)
                         for state, lexer in contextual.lexers.items()}

    def lex(self, text: str, position: Any) -> Iterator[Token]:
        by_state = self.by_state
        pos, line, line_start, end = 0, 1, 0, len(text)
        whole = TextSlice.cast_from(text)  # what Lark's own scanners match in
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
            value, kind = found.group(0), found.lastgroup
            size = len(value)
            newlines = value.count("\n") if kind in group.newline_types else 0
            callback = group.callbacks.get(kind)
            if kind in group.ignore_types and callback is None:
                token = None
            else:
                end_pos = pos + size
                end_start = text.rindex("\n", pos, end_pos) + 1 if newlines else line_start
                token = Token(kind, value, pos, line, pos - line_start + 1, line + newlines,
                              end_pos - end_start + 1, end_pos)
                if callback is not None:
                    token = callback(token)
                if token.type not in accepted:  # the state's own scanner decides, as in Lark
                    token, _, size, newlines = _next(own, whole, pos, line, line_start)
            if newlines:
                line += newlines
                line_start = text.rindex("\n", pos, pos + size) + 1
            pos += size
            if token is not None and token.type not in group.ignore_types:
                yield token


def _next(lexer: BasicLexer, whole: TextSlice, pos: int, line: int, line_start: int) -> tuple:
    """(token or None, ignored, length, newlines) of what `lexer` reads at `pos`; a LookupError
    when it reads nothing (the two-pass parse then says what is wrong)."""
    found = lexer.match(whole, pos)
    if found is None:
        raise LookupError("no terminal matches")
    value, kind = found
    size = len(value)
    newlines = value.count("\n") if kind in lexer.newline_types else 0
    ignored = kind in lexer.ignore_types
    callback = lexer.callback.get(kind)
    if ignored and callback is None:
        return None, True, size, newlines
    end_line = line + newlines
    end_pos = pos + size
    end_start = (whole.text.rindex("\n", pos, end_pos) + 1) if newlines else line_start
    token = Token(kind, value, pos, line, pos - line_start + 1, end_line, end_pos - end_start + 1, end_pos)
    if callback is not None:
        token = callback(token)
    return token, ignored, size, newlines


__all__ = ["GroupedLexer"]
