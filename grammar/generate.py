"""The grammar for a set of delimiters: the core grammar and extension fragments, rewritten.

The core grammar (jinja.lark) is written for Jinja2's default delimiters, and so are extension
fragments (tag openers in the core's style, `/\\{%[-+]?\\s*keyword(?!\\w)/`). With the defaults
the text is used as it is, byte for byte. Otherwise the delimiter-dependent terminals are
replaced, line for line (so that Lark's line numbers in a fragment stay true), and what custom
delimiters need is appended at the end:

- openers (tags, `{{`, comments, raw blocks, text) are rebuilt from the escaped strings, each
  with lookaheads that give a position to the opener Jinja2 tries first, at priority 3: they
  must win over ignored whitespace where an opener starts with it (line statements);
- closers get priority 3, because Jinja2 tries the end of a tag before any other token, and
  with `-` they take the whitespace after them, as Jinja2's do; a closer made of closing
  brackets only (`}`, `]]`) is lexed as brackets instead, so that the parser tells it from a
  bracket closing a literal, as Jinja2's balancing lexer does;
- tags close with the rule `_bc` (the block closer, or the end of a line statement);
- where text stops but no opener matches, STRAY_OPENER (refused by the tag stream) makes the
  syntax error;
- with line statements every tag opener gets a line form `_X__LINE`, and the rule `_tag_x`
  takes either; line ends and statement modes are the business of grammar/tagstream.py.
"""
from __future__ import annotations

import re
from typing import Optional

from . import records
from .delimiters import (BLOCK, COMMENT, LINE_COMMENT, LINE_STATEMENT, VARIABLE, Delimiters,
                         escape, only_brackets)

# A tag opener in the core's style: `_IF: /\{%[-+]?\s*if(?!\w)/`.
# (patterns `re` compiles when first used: the default delimiters need neither at start)
OPENER = r"^[ \t]*(_[A-Z][A-Z0-9_]*)[ \t]*:[ \t]*/\\\{%\[-\+\]\?\\s\*(\w+)\(\?!\\w\)/[ \t]*$"
TERMINAL_LINE = r"^[ \t]*_?[A-Z][A-Z0-9_]*(?:\.-?\d+)?[ \t]*:"
PRIORITY = 3
LINE_SUFFIX = "__LINE"


records.MODULES.add(__name__)  # Generated is a record (grammar/records.py): cheaper to define


class Generated(records.Record):
    """A grammar's text and what the parser needs to know about it."""
    text: str
    tags: Optional[dict[str, str]]                           # opener terminal -> tag keyword
    # (None for the default delimiters: Parser.tags reads them from the text when first asked)
    line_openers: frozenset[str] = frozenset()               # the `_X__LINE` terminals


def grammar_text(core: str, fragments: list[str], delimiters: Delimiters) -> Generated:
    """The composed grammar: the core plus fragments, for these delimiters."""
    if delimiters.is_default:  # the tags are read when an error message first asks (opener_tags)
        return Generated("\n".join([core] + fragments), None)
    tags = opener_tags("\n".join([core] + fragments))
    # Rules first: the generated definitions below name `_BC` itself, not `_bc`.
    body = _rewrite_rules("\n".join([core] + fragments), tags, delimiters)
    body = _rewrite_openers(_core_terminals(body, delimiters), delimiters)
    extra = _closers(delimiters) + _line_syntax(tags, delimiters)
    line_openers = frozenset(name + LINE_SUFFIX for name in tags) \
        if delimiters.line_statement_prefix is not None else frozenset()
    all_tags = dict(tags, **{name + LINE_SUFFIX: word for name, word in tags.items()
                             if name + LINE_SUFFIX in line_openers})
    text = body + "\n\n// ---- generated for custom delimiters\n" + "\n".join(extra) + "\n"
    return Generated(text, all_tags, line_openers)


def _replace_line(text: str, name: str, new: str) -> str:
    """Replace the one-line definition of `name` (a rule or terminal) with `new`."""
    pattern = re.compile(rf"^{re.escape(name)}(?:\.\d+)?[ \t]*:.*$", re.M)
    result, count = pattern.subn(lambda m: new, text)
    if count != 1:
        raise ValueError(f"the core grammar must define {name} on exactly one line")
    return result


def _core_terminals(core: str, d: Delimiters) -> str:
    """The core with its delimiter-dependent definitions replaced, one line for one line."""
    bs, be = escape(d.block_start_string), escape(d.block_end_string)
    ce = escape(d.comment_end_string)
    text = _replace_line(core, "TEXT", f"TEXT.3: /{d.text_regex()}/")
    # Jinja2 reads the opener's `-`/`+` before it looks for the end: `<!---->` is unterminated.
    text = _replace_line(text, "COMMENT",
                         rf"COMMENT.3: /{d.guarded(COMMENT)}(?:[-+]|(?![-+])).*?(?:-{ce}\s*|\+{ce}|{ce})/s")
    text = _replace_line(text, "RAW", rf"RAW.4: /{bs}[-+]?\s*raw\s*-?{be}.*?{bs}[-+]?\s*endraw\s*"
                                      rf"(?:-{be}\s*|\+?{be})/s")
    text = _replace_line(text, "VAR_OPEN", f"VAR_OPEN.{PRIORITY}: /{d.guarded(VARIABLE)}[-+]?/")
    text = _replace_line(text, "output", _output_rule(d))
    text = _replace_line(text, "VAR_CLOSE_MINUS", _variable_closer(d))
    return _replace_line(text, "_BC", _block_closer(d))


def _output_rule(d: Delimiters) -> str:
    """`{{ expr }}`. With the block's end string the closer is shared, and kept (`!`) so that
    the builder can refuse a `+`, which only blocks have."""
    ve, shared = d.variable_end_string, d.variable_end_string == d.block_end_string
    signed = "_BC" if shared else "VAR_CLOSE"
    if only_brackets(ve):
        brackets = " ".join(f'"{ch}"' for ch in ve)
        return f"!output: VAR_OPEN tuple_expr ({brackets} | {signed})"
    return f"{'!' if shared else ''}output: VAR_OPEN tuple_expr {signed}"


# A closer with `-` takes the whitespace after it, as in Jinja2 (`\-%}\s*`): a line statement or
# line comment right after that whitespace is then not at the start of a line, nor after a
# non-space, and Jinja2 reads it as text. Bracket closers' unsigned forms are brackets.

def _variable_closer(d: Delimiters) -> str:
    ve = escape(d.variable_end_string)
    if d.variable_end_string == d.block_end_string:
        return "// the variable end string is the block end string: `_BC` closes both"
    if only_brackets(d.variable_end_string):
        return rf"VAR_CLOSE.{PRIORITY}: /-{ve}\s*/"
    return rf"VAR_CLOSE.{PRIORITY}: /-{ve}\s*|{ve}/"


def _block_closer(d: Delimiters) -> str:
    be = escape(d.block_end_string)
    if only_brackets(d.block_end_string):
        return rf"_BC.{PRIORITY}: /-{be}\s*|\+{be}/"
    return rf"_BC.{PRIORITY}: /-{be}\s*|\+?{be}/"


def opener_tags(grammar: str) -> dict[str, str]:
    """Opener terminal -> tag keyword, for the openers in the core's style in `grammar`."""
    return {m.group(1): m.group(2) for m in map(_opener_match, grammar.splitlines()) if m}


def _opener_match(line: str) -> Optional[re.Match]:
    return re.match(OPENER, line)


def _rewrite_openers(text: str, d: Delimiters) -> str:
    """Tag openers in the core's style, with the block start string (and priority)."""
    def opener(m: re.Match) -> str:
        name, word = m.group(1), m.group(2)
        return rf"{name}.{PRIORITY}: /{d.guarded(BLOCK)}[-+]?\s*{word}(?!\w)/"
    return "\n".join(_sub_match(OPENER, line, opener) for line in text.splitlines())


def _sub_match(pattern: str, line: str, replace) -> str:
    m = re.match(pattern, line)
    return replace(m) if m else line


def _rewrite_rules(text: str, tags: dict[str, str], d: Delimiters) -> str:
    """In rules (not terminal definitions): tags close with `_bc`, and open with `_tag_x` when
    they may also be line statements."""
    names = ["_BC"] + (list(tags) if d.line_statement_prefix is not None else [])
    word = re.compile(r"(?<![\w])(" + "|".join(map(re.escape, names)) + r")(?![\w])")

    def rename(m: re.Match) -> str:
        return "_bc" if m.group(1) == "_BC" else "_tag" + m.group(1).lower()
    lines = text.splitlines()
    return "\n".join(line if re.match(TERMINAL_LINE, line) else word.sub(rename, line)
                     for line in lines)


def _closers(d: Delimiters) -> list[str]:
    """`_bc`, what closes a block tag: the closer terminal, or brackets, or a line's end."""
    ways = ["_BC"]
    if only_brackets(d.block_end_string):  # several brackets must touch: tagstream.py checks
        ways.append(" ".join(f'"{ch}"' for ch in d.block_end_string))
    if d.line_statement_prefix is not None:
        ways.append("_LINE_END")
    return [f"_bc: {' | '.join(ways)}"]


def _line_syntax(tags: dict[str, str], d: Delimiters) -> list[str]:
    # Where text stops but no opener follows (`{%` with no tag name, `# 1`, an unterminated
    # comment): a token that the tag stream refuses, so that ignored whitespace cannot take a
    # line statement's indentation and let the text go on. Only in bodies.
    lines = [f"STRAY_OPENER.1: /{'|'.join(d.openers.values())}/", "%extend _item: STRAY_OPENER"]
    if d.line_comment_prefix is not None:
        lines += [f"LINE_COMMENT.{PRIORITY}: /{d.guarded(LINE_COMMENT)}[^\\n\\r]*/",
                  "%extend _item: LINE_COMMENT"]
    if d.line_statement_prefix is None:
        return lines
    line = d.guarded(LINE_STATEMENT)
    for name, word in tags.items():
        # No line break between the prefix and the keyword: a line break ends the statement.
        lines.append(rf"{name}{LINE_SUFFIX}.{PRIORITY}: /{line}[-+]?[^\S\n\r]*{word}(?!\w)/")
        lines.append(f"_tag{name.lower()}: {name} | {name}{LINE_SUFFIX}")
    # A run of whitespace through its last line break (or to the end): Jinja2's `\s*(\n|$)`.
    # tagstream.py makes it the end of a line statement, or drops it as whitespace.
    lines += [r"_NL.2: /\s+$|\s*(?:\r\n|\r|\n)/", "%declare _LINE_END"]
    return lines


__all__ = ["Generated", "grammar_text", "opener_tags", "OPENER", "LINE_SUFFIX"]
