"""The token stream between Lark's lexer and parser, for grammars with custom delimiters.

Lark's contextual lexer knows the parser state but not which kind of tag it is in, nor how deep
in brackets: several tags share their expression states. Jinja2's lexer knows both, and so does
this stream, which sees every token in order:

- a line statement ends at a line break outside brackets (Jinja2's `\\s*(\\n|$)`), or at the end
  of the template: `_NL` tokens become `_LINE_END` there and are dropped as whitespace elsewhere;
  a block closer or a lone closing bracket inside a line statement is refused, as Jinja2 reads
  them as operators;
- a block end string of several closing brackets (`]]`) is lexed as brackets that the parser
  takes for the end; here they must touch, as one delimiter;
- an opener with no tag after it (`{%` then a number, `# ` alone) is refused, as in Jinja2;
- every TEXT token learns the delimiters around it (kind and `-`/`+` sign), which is what
  whitespace control needs (grammar/whitespace.py) and what a look at the source cannot tell
  when blocks and print statements end alike.
"""
from __future__ import annotations

from typing import Iterator, Optional

from lark import Token
from lark.lark import PostLex

from .delimiters import Delimiters, only_brackets
from .errors import TemplateSyntaxError, position
from .whitespace import (BLOCK, COMMENT, NOTHING, RAW_OPENED, VARIABLE_CLOSE, VARIABLE_OPEN,
                         Options, trim_between)

OPEN_BRACKETS = {"LPAR", "LSQB", "LBRACE"}
CLOSE_BRACKETS = {"RPAR", "RSQB", "RBRACE"}
CLOSERS = {"_BC", "VAR_CLOSE"}
REFUSED = "_REFUSED"  # a token type no rule accepts: a syntax error where Jinja2 has one


class TextToken(Token):
    """A TEXT token that knows the delimiter before it (`before`) and after it (`after`), each a
    (kind, sign) pair as grammar/whitespace.py reads them."""
    before: tuple[str, str] = (NOTHING, "")
    after: tuple[str, str] = (NOTHING, "")


class TagStream(PostLex):
    """Lark's `postlex` for a grammar generated for custom delimiters."""

    def __init__(self, delimiters: Delimiters, block_openers: set[str], line_openers: frozenset[str]) -> None:
        self.delimiters = delimiters
        self.block_openers = block_openers
        self.line_openers = line_openers
        self.always_accept = ("_NL",) if line_openers else ()

    def process(self, stream: Iterator[Token]) -> Iterator[Token]:
        return _Reader(self).read(stream)


class _Reader:
    """One pass over one template's tokens."""

    def __init__(self, owner: TagStream) -> None:
        self.d = owner.delimiters
        self.block_openers = owner.block_openers
        self.line_openers = owner.line_openers
        self.mode = ""           # the tag we are in: "variable", "block" or "line"
        self.depth = 0           # brackets open in a line statement, or a block tag
        self.closing: Optional[tuple[str, int]] = None  # the rest of a bracket end string, where
        self.bracket_end = self.d.block_end_string if only_brackets(self.d.block_end_string) else ""
        self.text: Optional[TextToken] = None  # the TEXT token waiting for what follows it
        self.last: Optional[Token] = None
        self.last_mode = ""

    def read(self, stream: Iterator[Token]) -> Iterator[Token]:
        for tok in stream:
            tok = self.see(tok)
            if tok is not None:
                self.last, self.last_mode = tok, self.mode
                yield tok
        if self.mode == "line" and self.depth == 0 and self.last is not None:
            yield self._line_end(self.last)  # Jinja2's `$`: the template ends the statement

    def see(self, tok: Token) -> Optional[Token]:
        kind = tok.type
        if kind == "_NL":
            if self.mode != "line" or self.depth:
                return None
            self.mode = ""
            return Token.new_borrow_pos("_LINE_END", tok.value, tok)
        if kind == "STRAY_OPENER":  # an opener without a tag: Jinja2's syntax error
            return Token.new_borrow_pos(REFUSED, tok.value, tok)
        if kind == "TEXT":
            text = TextToken.new_borrow_pos("TEXT", tok.value, tok)
            text.before = self.closer(self.last, self.last_mode)
            self.text = text
            return text
        if self.text is not None:
            self.text.after = self.opener(tok)
            self.text = None
        if kind == "VAR_OPEN":
            self.mode = "variable"
        elif kind in self.line_openers:
            self.mode, self.depth = "line", 0
        elif kind in self.block_openers:
            self.mode, self.depth, self.closing = "block", 0, None
        elif self.mode == "line":
            return self._in_line(tok)
        elif self.mode == "block" and len(self.bracket_end) > 1:
            return self._in_block(tok)
        return tok

    def _in_block(self, tok: Token) -> Token:
        """A block end string of several closing brackets (`]]`) is lexed as brackets, and the
        parser takes them for the end: here, they must touch, and open none of their own."""
        kind = tok.type
        if self.closing is not None:
            rest, end = self.closing
            if str(tok) != rest[0] or tok.start_pos != end:
                return Token.new_borrow_pos(REFUSED, tok.value, tok)
            self.closing = (rest[1:], tok.end_pos) if len(rest) > 1 else None
        elif kind in OPEN_BRACKETS:
            self.depth += 1
        elif kind in CLOSE_BRACKETS:
            if self.depth:
                self.depth -= 1
            elif str(tok) == self.bracket_end[0]:  # outside brackets: the start of the end
                self.closing = (self.bracket_end[1:], tok.end_pos)
        return tok

    def _in_line(self, tok: Token) -> Token:
        """Brackets are counted; a block closer, or a closing bracket with none open, is what
        Jinja2 reads as a stray operator in a line statement: an error."""
        kind = tok.type
        if kind in OPEN_BRACKETS:
            self.depth += 1
        elif kind in CLOSE_BRACKETS:
            if self.depth == 0:
                return Token.new_borrow_pos(REFUSED, tok.value, tok)
            self.depth -= 1
        elif kind in CLOSERS:
            return Token.new_borrow_pos(REFUSED, tok.value, tok)
        return tok

    @staticmethod
    def _line_end(last: Token) -> Token:
        return Token("_LINE_END", "", last.end_pos, last.end_line, last.end_column,
                     last.end_line, last.end_column, last.end_pos)

    # ------------------------------------------------------------------ whitespace facts
    def opener(self, tok: Token) -> tuple[str, str]:
        """(kind, sign) of the delimiter that starts with `tok`."""
        d, kind, value = self.d, tok.type, str(tok)
        if kind == "VAR_OPEN":
            return VARIABLE_OPEN, _sign_at(value, len(d.variable_start_string))
        if kind in self.block_openers:
            return BLOCK, _sign_at(value, len(d.block_start_string))
        if kind in self.line_openers:
            return BLOCK, d.line_opener.match(value).group(1)
        if kind == "COMMENT":
            return COMMENT, _sign_at(value, len(d.comment_start_string))
        if kind == "RAW":
            return BLOCK, d.raw_parts.match(value).group(1)
        if kind == "LINE_COMMENT":
            return COMMENT, d.line_comment_opener.match(value).group(1)
        return NOTHING, ""

    def closer(self, tok: Optional[Token], mode: str) -> tuple[str, str]:
        """(kind, sign) of the delimiter that ends with `tok`, read in tag mode `mode`."""
        if tok is None:
            return NOTHING, ""
        d, kind, value = self.d, tok.type, str(tok)
        if kind == "COMMENT":
            return COMMENT, _comment_end_sign(value, d)
        if kind == "RAW":
            return BLOCK, d.raw_parts.match(value).group(5)
        if kind in ("_LINE_END", "LINE_COMMENT"):
            return NOTHING, ""
        if mode == "variable":
            return VARIABLE_CLOSE, _sign_before(value, d.variable_end_string)
        return BLOCK, _sign_before(value, d.block_end_string)


def _sign_at(value: str, index: int) -> str:
    sign = value[index:index + 1]
    return sign if sign in ("-", "+") else ""


def _sign_before(value: str, end: str) -> str:
    """The sign of a closer token (`-%>` and the whitespace after it, `+%>`); a bracket token
    of a bracket closer has none."""
    return value[0] if value[:1] in ("-", "+") and value[1:].startswith(end) else ""


def _comment_end_sign(value: str, d: Delimiters) -> str:
    """Jinja2 takes the opener's sign first: in `{#-#}` the `-` is the opener's."""
    if not value.endswith(d.comment_end_string):
        return "-"  # `-#}` and the whitespace after it
    start = len(d.comment_start_string)
    start += len(_sign_at(value, start))
    end = len(value) - len(d.comment_end_string)
    return value[end - 1] if end - 1 >= start and value[end - 1] in "-+" else ""


# ---------------------------------------------------------------------------- for the builder

def trimmed(tok: Token, source: str, options: Options, d: Delimiters) -> str:
    """The text a TEXT or RAW token renders, after whitespace control ("" for comments)."""
    if tok.type == "TEXT":
        return trim_between(source, tok.start_pos, tok.end_pos, options, tok.before, tok.after)
    if tok.type == "RAW":
        m = d.raw_parts.match(tok)
        start = tok.start_pos + m.start(3)
        return trim_between(source, start, start + len(m.group(3)), options,
                            (RAW_OPENED, m.group(2)), (BLOCK, m.group(4)))
    return ""


def check_variable_end(closers: list, d: Delimiters, source: str) -> None:
    """With one end string for blocks and print statements, the parser takes either's closer:
    only a block's may carry `+` (in `{{ x +}}` Jinja2 reads a stray operator)."""
    tok = closers[0] if closers else None
    if tok is not None and _sign_before(tok, d.variable_end_string) == "+":
        line, column = position(source, tok.start_pos)
        raise TemplateSyntaxError("unexpected 'end of print statement'", lineno=line, column=column)


__all__ = ["TagStream", "TextToken", "trimmed", "check_variable_end"]
