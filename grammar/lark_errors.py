"""Lark's parse errors in Jinja2's words, on Jinja2's lines.

Jinja2 reads a template with a recursive-descent parser over the tokens of its own lexer. Where
the LALR grammar gets stuck, this module says what Jinja2 says there:

- between tags, a tag that closes no open block ("Encountered unknown tag 'endfor'. You probably
  made a nesting mistake. ..."), on the line of the tag's name; or the blocks left open when the
  text ends, on the line of the last token Jinja2's parser read (comments, the delimiters of a
  raw block and text that whitespace control empties are not tokens to it);
- inside a tag, what the construct being read expected ("expected token 'end of statement
  block', got 'x'"), that an expression is missing or cannot start with a token, or the error
  Jinja2's lexer raises first (a bracket that closes nothing, a character it cannot read).

Lark's interactive parser, replayed up to the failing token (`Parser.read_until`), tells what
the grammar accepts there and which tag and brackets are open. Where Jinja2 accepts more than
the grammar before it refuses (any expression after `call`, a list as an assignment target),
the message may still differ: COMPATIBILITY.md.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Optional

from lark import Token
from lark.exceptions import UnexpectedToken

from .delimiters import DEFAULT, Delimiters
from .errors import TemplateSyntaxError, position
from .whitespace import BLOCK, COMMENT, RAW_OPENED, Options, trim, trim_between
from .whitespace import _closer_before as closer_before  # the delimiter before a text run

# What Jinja2 reads in a tag: operators (longest first), numbers (floats first), strings.
OPERATORS = sorted("+ - / // * % ** ~ [ ] ( ) { } == != > >= < <= = . : | , ;".split(), key=len, reverse=True)
FLOAT = re.compile(r"(?:\d+_)*\d+(?:(?:\.(?:\d+_)*\d+)?[eE][+\-]?(?:\d+_)*\d+|\.(?:\d+_)*\d+)")
INTEGER = re.compile(r"0[bB](?:_?[01])+|0[oO](?:_?[0-7])+|0[xX](?:_?[0-9a-fA-F])+|[1-9](?:_?\d)*|0(?:_?0)*")
STRING = re.compile(r"'[^'\\]*(?:\\.[^'\\]*)*'|\"[^\"\\]*(?:\\.[^\"\\]*)*\"", re.S)
CLOSING = {")": "(", "]": "[", "}": "{"}
OPENING = {v: k for k, v in CLOSING.items()}

# Grammar terminals, by what they tell about the place where the parser stopped.
VALUES = {"NAME", "STRING", "INT", "FLOAT", "RPAR", "RSQB", "RBRACE"}  # before `(`: a call
TARGET_STARTS = {"NAME", "LPAR", "_BC", "_LINE_END"}                # where a target begins
TUPLE_ENDS = ("end of statement block", "end of print statement", ")")
TUPLE_AFTER = ("if", "elif", "do", "for", "set")    # tags whose first part is a tuple
CONTINUES = {"+", "-", "*", "/", "//", "%", "**", "~", "|", "==", "!=", "<", ">", "<=", ">=",
             "and", "or", "in", "is", "if", "not", "."}  # an expression goes on in Jinja2
# The order in which Jinja2 lists the tags that may continue or close each block.
CLOSERS = {"if": ("elif", "else", "endif"), "for": ("endfor", "else")}
TAG = re.compile(r"\{%[-+]?\s*(\w+)(.*?)[-+]?%\}|\{#.*?#\}|\{%[-+]?\s*raw\s*[-+]?%\}.*?endraw\s*[-+]?%\}", re.S)


def from_lark(exc, text: str, tags: dict, name: Optional[str], source: str,
              delimiters: Optional[Delimiters] = None, options: Options = Options(),
              read_until: Optional[Callable[[int], tuple]] = None,
              name_run: Optional[re.Pattern] = None) -> TemplateSyntaxError:
    """Turn a Lark parse error into the message Jinja2 would give, on the line Jinja2 gives.

    `text` is what was parsed (`source` less a trailing newline); `tags` maps opener terminals
    to their keywords; `delimiters` are custom ones, or None for Jinja2's. `read_until(offset)`
    gives the tokens the parser reads before `offset` and its interactive parser in the state
    they leave; `name_run` is the grammar's NAME pattern."""
    failure = Failure(text, tags, delimiters, options, read_until, name_run)
    message, (line, column) = failure.explain(exc)
    return TemplateSyntaxError(message, name=name, lineno=line, column=column, source=source)


@dataclass
class Failure:
    """One failed parse, with what it takes to say what went wrong."""
    text: str
    tags: dict
    delimiters: Optional[Delimiters]
    options: Options
    read_until: Optional[Callable[[int], tuple]]
    name_run: Optional[re.Pattern]

    def explain(self, exc) -> tuple[str, tuple[int, int]]:
        history = getattr(exc, "token_history", None) or ()
        last = history[-1] if history else None
        if self.stray_brace(last):  # `{{ x }` then something else
            return "unexpected '}'", position(self.text, last.start_pos)
        if isinstance(exc, UnexpectedToken) and exc.token.type == "$END":
            return self.early_end()
        message, offset = self.unexpected(exc)
        return message, position(self.text, offset)

    # ------------------------------------------------------------------ between tags
    def early_end(self) -> tuple[str, tuple[int, int]]:
        """A template that ends too early: in a tag, what the tag needed; between tags, the
        blocks left open."""
        text = self.text
        tokens, parser = self.read_until(len(text) + 1) if self.read_until else ([], None)
        stack = parser.parser_state.value_stack if parser is not None else []
        if stack and self.lone_brace(stack[-1], stack[-2] if len(stack) > 1 else None):
            return "unexpected '}'", position(text, stack[-1].start_pos)  # `{{ {'a': 1 }}`
        accepts = set(parser.accepts()) if parser is not None else set()
        if not accepts or "TEXT" in accepts or accepts & self.tags.keys():
            message = "Unexpected end of template." + self.looking_for(len(text))
        else:
            message, _ = self.inside_tag(parser, accepts, len(text))
        return message, self.end_of_template(tokens)

    def unexpected(self, exc) -> tuple[str, int]:
        """A token or text the grammar cannot take, and where Jinja2 reports it."""
        if isinstance(exc, UnexpectedToken):
            tok, offset = exc.token, exc.token.start_pos
            if tok.type in self.tags:
                word = self.tags[tok.type]
                return (f"Encountered unknown tag '{word}'." + self.looking_for(offset, word),
                        self.on_the_line_of(offset, tok.end_pos - len(word)))
        else:
            offset = exc.pos_in_stream
        if self.opener_at(offset)[0] or self.read_until is None:
            return self.unexpected_text(offset)
        _, parser = self.read_until(offset)
        return self.inside_tag(parser, set(parser.accepts()), offset)

    def opener_at(self, offset: int) -> tuple[str, int]:
        """('comment', 'block', 'line' or '', where the opener ends) for the text at `offset`."""
        text = self.text
        if self.delimiters is None:
            return {"{#": "comment", "{%": "block"}.get(text[offset:offset + 2], ""), offset + 2
        name, end = self.delimiters.opener_at(text, offset)
        return {"comment_begin": "comment", "block_begin": "block",
                "linestatement_begin": "line"}.get(name, ""), end

    def unexpected_text(self, offset: int) -> tuple[str, int]:
        """Text at a tag's opener that the grammar cannot read, or at a place no terminal fits."""
        text = self.text
        kind, after = self.opener_at(offset)
        if kind == "comment":
            return "Missing end of comment tag", offset
        if kind:
            rest = text[after:].lstrip("-+").lstrip()
            word_at = len(text) - len(rest)  # Jinja2's next token after the opener: the tag's name
            word = re.match(r"\w*", rest).group()
            if word == "raw" and kind == "block":  # a raw block is never a line statement
                return "Missing end of raw directive", offset
            if not word:
                return "tag name expected", self.on_the_line_of(offset, word_at)
            return (f"Encountered unknown tag '{word}'." + self.looking_for(offset, word),
                    self.on_the_line_of(offset, word_at))
        if offset >= len(text):
            return "Unexpected end of template." + self.looking_for(offset), offset
        return self.lexer_error(offset), offset

    def lexer_error(self, offset: int) -> str:
        jinja_offset = offset - self.text.count("\r\n", 0, offset)  # Jinja2 reads "\r\n" as "\n"
        return f"unexpected char {self.text[offset]!r} at {jinja_offset}"

    def on_the_line_of(self, offset: int, word_at: int) -> int:
        """Where to report a tag that starts at `offset`: there, unless its name (at `word_at`)
        is on a later line, which is the line Jinja2 reports."""
        return word_at if "\n" in self.text[offset:word_at] else offset

    def looking_for(self, offset: int, tag: Optional[str] = None) -> str:
        """Jinja2's hint: what the innermost block needs, and whether `tag` closes an outer one."""
        stack = self.open_blocks(offset)
        if not stack:
            return ""
        block, closers = stack[-1]
        listed = " or ".join(f"'{n}'" for n in closers)
        if tag is not None and any(tag in expected for _, expected in stack):
            hint = ("You probably made a nesting mistake. Jinja is expecting this tag, but currently "
                    f"looking for {listed}.")
        else:
            hint = f"Jinja was looking for the following tags: {listed}."
        return f" {hint} The innermost block that needs to be closed is '{block}'."

    def open_blocks(self, offset: int) -> list[tuple[str, tuple[str, ...]]]:
        """The blocks still open at `offset`, innermost last, each with the tags that may continue
        or close it (after its `else`, only its end tag), by scanning the tags before `offset`."""
        names = set(self.tags.values())
        stack: list[tuple[str, tuple[str, ...]]] = []
        for word, rest in self.tags_before(offset):
            if word.startswith("end") and stack and stack[-1][0] == word[3:]:
                stack.pop()
            elif word == "else" and stack and stack[-1][0] in CLOSERS:
                stack[-1] = (stack[-1][0], ("end" + stack[-1][0],))
            elif "end" + word in names and not (word == "set" and "=" in rest):
                stack.append((word, CLOSERS.get(word, ("end" + word,))))
        return stack

    def tags_before(self, offset: int):
        """(name, rest) of each tag before `offset`."""
        if self.delimiters is not None:
            yield from self.delimiters.tags_before(self.text, offset)
            return
        for m in TAG.finditer(self.text, 0, offset):
            if m.group(1) is not None:
                yield m.group(1), m.group(2) or ""

    def end_of_template(self, tokens: list) -> tuple[int, int]:
        """Where Jinja2 says a template ended too early: on the line of the last token its
        parser read; the caret after that token, on that line."""
        for tok in reversed(tokens):
            if tok.type in self.tags:  # an opener: Jinja2's token is the tag's name
                start, end = tok.end_pos - len(self.tags[tok.type]), tok.end_pos
            elif tok.type in ("TEXT", "RAW"):
                data = self.data(tok)
                if data is None:
                    continue
                start, end = data
            elif tok.type in ("COMMENT", "LINE_COMMENT"):
                continue
            else:
                start, end = tok.start_pos, tok.end_pos
            line_end = self.text.find("\n", start)
            return position(self.text, end if line_end < 0 else min(end, line_end))
        return position(self.text, len(self.text))

    def data(self, tok: Token) -> Optional[tuple[int, int]]:
        """Where Jinja2's data token for a TEXT or RAW token starts and ends, after what the
        delimiter before it consumed (all whitespace after `-`, one line break with trim_blocks);
        None when whitespace control leaves no text."""
        text, options = self.text, self.options
        if tok.type == "RAW":
            m = (self.delimiters or DEFAULT).raw_parts.match(tok)
            start, end = tok.start_pos + m.start(3), tok.start_pos + m.end(3)
            kind, sign = RAW_OPENED, m.group(2)
            kept = trim_between(text, start, end, options, (kind, sign), (BLOCK, m.group(4)))
        elif self.delimiters is None:
            start, end = tok.start_pos, tok.end_pos
            kind, sign = closer_before(text, start)
            kept = trim(text, start, end, options)
        else:
            start, end = tok.start_pos, tok.end_pos
            kind, sign = tok.before
            kept = trim_between(text, start, end, options, tok.before, tok.after)
        if not kept:
            return None
        body = text[start:end]
        if sign == "-":
            start = end - len(body.lstrip())
        elif kind in (BLOCK, COMMENT) and sign != "+" and options.trim_blocks and body[:1] in ("\r", "\n"):
            start += 2 if body.startswith("\r\n") else 1
        return start, end

    def stray_brace(self, last: Any) -> bool:
        """Whether `last`, the token before one the lexer could not read, is a lone `}`. Lark
        gives no token before it: the parser, replayed up to it, tells whether it is the second
        half of a print statement's end (`{{ x }}{% bogus %}`: the tag is what is wrong)."""
        if not self.lone_brace(last, None) or self.read_until is None:
            return self.lone_brace(last, None)  # without a replay, the text alone decides
        _, parser = self.read_until(last.end_pos)
        stack = parser.parser_state.value_stack
        return bool(stack) and self.lone_brace(stack[-1], stack[-2] if len(stack) > 1 else None)

    def lone_brace(self, last: Any, before: Any) -> bool:
        """A `}` that Lark read as the first half of a print statement's end, with no second
        half after it: Jinja2's lexer refuses it ("unexpected '}'")."""
        pair = isinstance(before, Token) and before.type == "RBRACE" and before.end_pos == last.start_pos
        return (self.delimiters is None and isinstance(last, Token) and last.type == "RBRACE"
                and not pair and not self.text.startswith("}", last.end_pos))

    # ------------------------------------------------------------------ inside a tag
    def inside_tag(self, parser, accepts: set, offset: int) -> tuple[str, int]:
        """A token inside a tag (at `offset`; at the end of the text, none) that the grammar
        cannot take, in the words of Jinja2's recursive-descent parser, and where it reports it.
        `parser`: Lark's interactive parser before the token; `accepts`: what it takes there."""
        stack = parser.parser_state.value_stack
        last = stack[-1] if stack and isinstance(stack[-1], Token) else None
        if last is not None and (last.type == "NOT" and accepts == {"IN"} or self.split(last, offset)):
            # Jinja2 stopped at the token before: `x not y` (`not` is a comparison only before
            # `in`), `set x == 1` (its lexer reads `==` where the grammar's read `=`)
            _, parser = self.read_until(last.start_pos)
            return self.inside_tag(parser, set(parser.accepts()) - {"NOT"}, last.start_pos)
        opener, brackets = open_tag(stack, self.tags)
        keyword = self.tags.get(opener.type, "") if opener is not None else ""
        got, lexer_error = self.jinja_token(offset, keyword, brackets, "MOD" in accepts)
        if lexer_error:
            return lexer_error, offset
        if keyword == "call" and not brackets and self.not_a_call(stack, accepts, got):
            # Jinja2 reads any expression after `call`, then refuses it if it is not a call
            return "expected call", opener.end_pos - len(keyword)
        if got in ("integer", "float", "string") and {"NAME", "LPAR"} <= accepts <= TARGET_STARTS:
            # Jinja2 reads the literal (strings: all that follow) as a target, then refuses it,
            # unless its lexer fails on the next token first
            after = self.after_literal(offset)
            _, lexer_error = self.jinja_token(after, keyword, brackets, False)
            return (lexer_error, after) if lexer_error else ("can't assign to 'const'", offset)
        if accepts == {"NAME", "INT"}:
            return "expected name or number", offset  # after a dot
        wanted = expected_there(accepts, keyword, brackets)
        if wanted and got == "end of template":
            return f"unexpected end of template, expected {wanted!r}.", offset
        if wanted:
            return f"expected token {wanted!r}, got {got!r}", offset
        if got in TUPLE_ENDS and tuple_starts(stack, self.tags):
            return f"Expected an expression, got {got!r}", offset
        return f"unexpected {got!r}", offset

    def split(self, tok: Token, offset: int) -> bool:
        """Whether the operator `tok`, just before `offset`, is the start of a longer one to
        Jinja2's lexer, which takes the longest operator wherever it is."""
        if tok.end_pos != offset or str(tok) not in OPERATORS:
            return False
        return next(op for op in OPERATORS if self.text.startswith(op, tok.start_pos)) != str(tok)

    @staticmethod
    def not_a_call(stack: list, accepts: set, got: str) -> bool:
        """After `{% call`, whether Jinja2 has read an expression that is not a call: one the
        grammar could only go on with a call's suffix, or one that an operator continues."""
        last = stack[-1] if stack else None
        read = last is not None and (not isinstance(last, Token) or last.type in VALUES)
        if not read or "DOT" not in accepts:
            return False
        return "_BC" not in accepts or got in CONTINUES

    def after_literal(self, offset: int) -> int:
        """Where the token after the number, or the run of strings, at `offset` starts."""
        text, space = self.text, re.compile(r"\s*")
        m = FLOAT.match(text, offset) or INTEGER.match(text, offset)
        if m:
            return space.match(text, m.end()).end()
        while STRING.match(text, offset):
            offset = space.match(text, STRING.match(text, offset).end()).end()
        return offset

    def jinja_token(self, offset: int, keyword: str, brackets: list,
                    operator_goes_on: bool) -> tuple[str, str]:
        """How Jinja2 names the token at `offset` in a tag (a name by its text), or the error its
        lexer raises there: a closing bracket that closes nothing open, a character it cannot
        read, a name that is not an identifier. Inside brackets, and in the other kind of tag, a
        tag's end is operators to Jinja2's lexer: `%}` is `%` and `}`. `keyword`: the tag's
        ("" in a print statement)."""
        rest = self.text[offset:]
        if not rest:
            return "end of template", ""
        d = self.delimiters
        if d is not None:
            end, name = ((d.block_end_string, "end of statement block") if keyword else
                         (d.variable_end_string, "end of print statement"))
            if rest.lstrip("-+").startswith(end) or (keyword and rest[0] in "\r\n"):
                return name, ""  # a line statement ends at its line break
        elif not brackets and keyword and rest.lstrip("-+").startswith("%}"):
            return "end of statement block", ""
        elif not brackets and not keyword and rest.lstrip("-").startswith("}}"):
            return "end of print statement", ""
        elif rest.startswith("%}") and operator_goes_on:
            rest, offset = rest[1:], offset + 1  # `%` is read; the lexer stops at the brace
        if rest[0] in CLOSING and (not brackets or brackets[-1][0] != CLOSING[rest[0]]):
            wanted = f", expected {OPENING[brackets[-1][0]]!r}" if brackets else ""
            return "", f"unexpected {rest[0]!r}{wanted}"
        if FLOAT.match(rest) or INTEGER.match(rest):
            return "float" if FLOAT.match(rest) else "integer", ""
        if STRING.match(rest):
            return "string", ""
        name = self.name_run.match(rest) if self.name_run is not None else re.match(r"\w+", rest)
        if name:  # Jinja2's lexer refuses a name that is not an identifier
            run = name.group()
            return (run, "") if run.isidentifier() else ("", "Invalid character in identifier")
        operator = next((op for op in OPERATORS if rest.startswith(op)), "")
        return (operator, "") if operator else ("", self.lexer_error(offset))


def open_tag(stack: list, tags: dict) -> tuple[Any, list[tuple[str, bool]]]:
    """The opener token of the tag the parser is in (VAR_OPEN for a print statement) and the
    brackets still open in it, innermost last, each with whether it follows a value (a call's
    or a signature's)."""
    brackets: list[tuple[str, bool]] = []
    closed = 0
    for i in range(len(stack) - 1, -1, -1):
        item = stack[i]
        if not isinstance(item, Token):
            continue
        if item.type in tags or item.type == "VAR_OPEN":
            return item, brackets[::-1]
        if item.type in ("RPAR", "RSQB", "RBRACE"):
            closed += 1
        elif item.type in ("LPAR", "LSQB", "LBRACE"):
            if closed:
                closed -= 1
                continue
            before = stack[i - 1] if i else None
            follows_value = not isinstance(before, Token) or before.type in VALUES or (
                tags.get(before.type) == "call")  # `{% call(a) m() %}`: a signature
            brackets.append((str(item), follows_value))
    return None, []


def expected_there(accepts: set, keyword: str, brackets: list[tuple[str, bool]]) -> str:
    """What Jinja2's parser expects where a token cannot go on, in its words, or ""."""
    if not accepts or accepts == {"NAME", "INT"}:
        return ""
    if accepts <= {"COMMA", "IN"}:
        return "in"  # after a for loop's target
    if accepts <= {"COMMA", "EQUAL"}:
        return "="
    if "NAME" in accepts and accepts <= {"NAME", "NOT", "RPAR"}:
        return "name"  # after `|` or `is`, in a macro's signature
    if keyword == "from" and "NAME" in accepts and not accepts & {"_BC", "_LINE_END"}:
        return "name"  # after a comma in `from x import a, `: a name (or the context)
    if brackets:
        bracket, follows_value = brackets[-1]
        if bracket == "{" and "COLON" in accepts:
            return ":"
        if "COMMA" in accepts:  # Jinja2 reads a list of items by asking for commas
            return ")" if bracket == "(" and not follows_value else ","
    if keyword in ("with", "print"):  # Jinja2 reads items until the tag ends, asking for commas
        return "," if "COMMA" in accepts else ""
    if accepts & {"_BC", "_LINE_END"}:
        return "end of statement block"
    if accepts & {"VAR_CLOSE_MINUS", "VAR_CLOSE"}:
        return "end of print statement"
    return ""


def tuple_starts(stack: list, tags: dict) -> bool:
    """Whether the parser is where Jinja2 reads a tuple that may not be empty: a print statement,
    an `if`/`elif`/`do` condition, a for loop's target and iterable, a `set`'s target and value."""
    last = stack[-1] if stack else None
    if not isinstance(last, Token):
        return False
    if last.type == "VAR_OPEN" or tags.get(last.type) in TUPLE_AFTER:
        return True
    third = stack[-3] if len(stack) >= 3 else None
    keyword = tags.get(getattr(third, "type", ""))
    return (last.type, keyword) in (("IN", "for"), ("EQUAL", "set"))


__all__ = ["from_lark"]
