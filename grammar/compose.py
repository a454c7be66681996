"""Composes extension grammars with the core, and says which extension is at fault when that fails.

`compose(syntaxes)` checks each fragment before Lark sees it (no `%import` or `%override`, no
rule, terminal or tag defined twice, tag openers in the core's style), builds the parser through
`get_parser` (cached per extension set), and turns every failure into an `ExtensionError`
naming the extensions involved: Lark's own messages name rules and terminals, not extensions.
After a build it checks that every tree the grammar can make has a builder, so that no Lark
`Tree` can reach the AST.
"""
from __future__ import annotations

import functools
import importlib.util
import re
import weakref
from typing import Iterable, Mapping, Optional, Sequence

from .errors import TemplateError
from .parser import Parser, Syntax, core_grammar, get_parser, has_shipped_tables

# Patterns, not compiled ones: `re` compiles them when a fragment is first read (and keeps
# them), which the default grammars never need (their fragments were checked when their
# shipped tables were made); compiled at import they were half a millisecond of every start.
# A tag opener in the core's style: one terminal per keyword, named after it, `-`/`+` folded in.
OPENER = r"^\s*/\\\{%\[-\+\]\?\\s\*(\w+)\(\?!\\w\)/\s*$"
DEFINITION = r"(?m)^[ \t]*[?!]?([A-Za-z_]\w*)(?:\{[^}]*\})?(?:\.-?\d+)?[ \t]*:(.*)$"
DIRECTIVE = r"(?m)^[ \t]*%(\w+)"
REFUSED = {"import": "compose with %extend and define the terminals it needs (Lark's %import "
                     "renames the rules it brings in)",
           "override": "extensions add syntax; they never replace a rule of the core or of another "
                       "extension"}
CORE_TAGS = ("raw", "endraw")  # inside the RAW terminal, which has no opener of its own


class ExtensionError(TemplateError):
    """An extension cannot be used: its grammar does not compose with the core grammar or with
    another extension, or its parts do not fit together. `extensions` names those involved."""

    def __init__(self, message: str, extensions: Sequence[str] = (), **position) -> None:
        super().__init__(message, **position)
        self.extensions = tuple(extensions)


def compose(syntaxes: tuple[Syntax, ...], strict: bool = False, **options) -> Parser:
    """The parser for the core plus `syntaxes` (in the order given), or an `ExtensionError`."""
    if not strict and has_shipped_tables(syntaxes, **options):
        check_rules(syntaxes)  # the fragments were checked when their tables were made
    else:
        check_fragments(syntaxes)
    if strict and importlib.util.find_spec("interegular") is None:
        raise ExtensionError("strict grammar checks need the 'interegular' package "
                             "(pip install interegular)", [s.name for s in syntaxes])
    try:
        parser = get_parser(syntaxes, strict=strict, **options)
    except Exception as e:  # noqa: BLE001 - Lark raises GrammarError, LexError, re.error, ...
        if not syntaxes:
            raise  # the core grammar alone: no extension to blame
        raise blame(syntaxes, strict, e, options) from None
    if parser not in _checked:
        check_builders(parser, syntaxes)
        _checked.add(parser)
    return parser


_checked: "weakref.WeakSet[Parser]" = weakref.WeakSet()


# ---------------------------------------------------------------------------- before Lark

def check_fragments(syntaxes: Iterable[Syntax]) -> None:
    """What can be refused by reading the fragments: refused directives, tags, rules, terminals
    or terminal patterns defined twice, tag openers not in the core's style, builders that
    shadow the core's."""
    tags, owners, patterns = (dict.fromkeys(names) for names in _core_names())
    builders: dict[str, str] = {}
    for s in syntaxes:
        for word in re.findall(DIRECTIVE, s.grammar):
            if word in REFUSED:
                raise ExtensionError(f"extension {s.name!r} uses %{word}: {REFUSED[word]}",
                                     [s.name])
        for tag in tag_keywords(s.grammar, s.name):
            _claim(tags, tag, s.name, f"the tag {tag!r}")
        for name in definitions(s.grammar):
            _claim(owners, name, s.name, f"the {'rule' if _is_rule(name) else 'terminal'} {name!r}")
        for name, pattern in terminal_patterns(s.grammar).items():
            _claim(patterns, pattern, s.name, f"a terminal matching {pattern} ({name})")
        _check_rules(s, builders)


def check_rules(syntaxes: Iterable[Syntax]) -> None:
    """The builders' part of `check_fragments`: none shadows the core's or another's."""
    builders: dict[str, str] = {}
    for s in syntaxes:
        _check_rules(s, builders)


def _check_rules(s: Syntax, builders: dict[str, str]) -> None:
    for rule in s.rules:
        if rule in _core_builders():
            raise ExtensionError(f"extension {s.name!r} has a builder for {rule!r}, which the "
                                 "core builds: give the rule or alias a name of its own", [s.name])
        _claim(builders, rule, s.name, f"a builder for {rule!r}")


def _core_builders() -> Mapping[str, object]:
    """The core's rule builders (grammar/transform.py, imported when first needed)."""
    from .transform import AstBuilder
    return AstBuilder.__dict__


@functools.lru_cache(maxsize=1)
def _core_names() -> tuple[tuple[str, ...], ...]:
    """The core grammar's tags, definitions and terminal patterns (owned by no extension)."""
    core = core_grammar()
    return ((*tag_keywords(core), *CORE_TAGS), tuple(definitions(core)),
            (*terminal_patterns(core).values(), *literals(core)))


def _claim(owners: dict, key: str, extension: str, what: str) -> None:
    """Record that `extension` defines `key` (described as `what`), unless someone already does."""
    if key not in owners:
        owners[key] = extension
        return
    other = owners[key]
    if other is None:
        raise ExtensionError(f"extension {extension!r} defines {what}, which the core grammar "
                             "already defines", [extension])
    if other == extension:
        raise ExtensionError(f"extension {extension!r} defines {what} twice", [extension])
    raise ExtensionError(f"extensions {other!r} and {extension!r} both define {what}",
                         [other, extension])


def definitions(grammar: str) -> list[str]:
    """The rules and terminals a grammar defines (`%extend` adds to a definition, not counted)."""
    return [m.group(1) for m in re.finditer(DEFINITION, _without_comments(grammar))]


def terminal_patterns(grammar: str) -> dict[str, str]:
    """Terminal name -> its pattern as written. Two terminals with one literal pattern are a
    collision that Lark does not report (it compares regular expressions only)."""
    found = re.finditer(DEFINITION, _without_comments(grammar))
    return {m.group(1): m.group(2).strip() for m in found
            if not _is_rule(m.group(1))}


def literals(grammar: str) -> set[str]:
    """The anonymous string terminals a grammar's rules use (`"in"`, `"|"`): a named terminal with
    the same text would take their place in the core's rules."""
    text = _without_comments(grammar)
    rules = [m.group(2) for m in re.finditer(DEFINITION, text) if _is_rule(m.group(1))]
    continued = re.findall(r"^[ \t]*\|(.*)$", text, re.M)
    return set(re.findall(r'"(?:[^"\\]|\\.)*"', "\n".join(rules + continued)))


def tag_keywords(grammar: str, extension: Optional[str] = None) -> list[str]:
    """The tag keywords of a grammar's opener terminals. For an extension, also check that each
    opener is in the core's style and named after its keyword: error messages find tags that way."""
    found = []
    for m in re.finditer(DEFINITION, _without_comments(grammar)):
        name, pattern = m.group(1), m.group(2)
        opener = re.match(OPENER, pattern)
        if opener:
            found.append(opener.group(1))
            expected = "_" + opener.group(1).upper()
            if extension is not None and name != expected:
                raise ExtensionError(f"extension {extension!r}: the opener of tag "
                                     f"{opener.group(1)!r} must be named {expected}, not {name}",
                                     [extension])
        elif extension is not None and "{%" in pattern.replace("\\", ""):
            raise ExtensionError(f"extension {extension!r}: write the tag opener {name} in the "
                                 r"core's style, /\{%[-+]?\s*keyword(?!\w)/ (one terminal per "
                                 "keyword)", [extension])
    return found


def _is_rule(name: str) -> bool:
    """Lark's convention: rules are lower case, terminals upper case (either may start with _)."""
    return name.lstrip("_")[:1].islower()


def _without_comments(grammar: str) -> str:
    return re.sub(r"^[ \t]*//.*$", "", grammar, flags=re.M)


# ---------------------------------------------------------------------------- after a failed build

def blame(syntaxes: tuple[Syntax, ...], strict: bool, error: Exception,
          options: Optional[dict] = None) -> ExtensionError:
    """The extensions whose grammar fails to build: alone with the core, else in pairs."""
    options = options or {}
    for s in syntaxes:
        alone = _failure((s,), strict, options)
        if alone is not None:
            return ExtensionError(f"extension {s.name!r} does not compose with the core grammar: "
                                  f"{_fragment_message(alone, s)}", [s.name])
    for i, first in enumerate(syntaxes):
        for second in syntaxes[i + 1:]:
            both = _failure((first, second), strict, options)
            if both is not None:
                return ExtensionError(f"extensions {first.name!r} and {second.name!r} conflict: "
                                      f"{_describe(both)}", [first.name, second.name])
    names = [s.name for s in syntaxes]
    return ExtensionError(f"extensions {', '.join(map(repr, names))} conflict together: "
                          f"{_describe(error)}", names)


def _failure(syntaxes: tuple[Syntax, ...], strict: bool, options: dict) -> Optional[Exception]:
    try:
        Parser(syntaxes, strict, **options)  # not get_parser: nothing worth caching on this path
    except Exception as e:  # noqa: BLE001
        return e
    return None


def _fragment_message(error: Exception, syntax: Syntax) -> str:
    """Lark counts lines in the composed grammar; say where in the fragment instead."""
    offset = core_grammar().count("\n") + 1
    fragment_lines = syntax.grammar.count("\n") + 1

    def relative(m: re.Match) -> str:
        line = int(m.group(1)) - offset
        if not 1 <= line <= fragment_lines:
            return m.group(0)
        return f"at line {line}, column {m.group(2)} of its grammar"
    return re.sub(r"at line (\d+) column (\d+)", relative, _describe(error), count=1)


def _describe(error: Exception, most: int = 8) -> str:
    lines = str(error).strip().splitlines()
    if len(lines) > most:  # Lark lists every colliding lookahead: the first few say it
        lines = lines[:most] + [f"... ({len(lines) - most} more lines)"]
    text = "\n".join(lines)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


# ---------------------------------------------------------------------------- after a good build

def check_builders(parser: Parser, syntaxes: tuple[Syntax, ...]) -> None:
    """Every tree the grammar can make has a builder, and every builder has a tree to build."""
    made = tree_names(parser)
    for s in syntaxes:
        for rule in s.rules:
            if rule not in made:
                raise ExtensionError(f"extension {s.name!r} has a builder for {rule!r}, but no rule "
                                     "or alias of the grammar has that name", [s.name])
    built = {rule for s in syntaxes for rule in s.rules}
    for name in sorted(made):
        if name not in built and name not in _core_builders():
            owners = [s.name for s in syntaxes if re.search(rf"\b{re.escape(name)}\b", s.grammar)]
            raise ExtensionError(f"the rule {name!r} makes a tree but has no builder: add "
                                 f"rules={{{name!r}: builder}} to extension "
                                 f"{' or '.join(map(repr, owners)) or '?'}", owners)


def tree_names(parser: Parser) -> set[str]:
    """The names of the trees the grammar can make (the transformer needs a method for each):
    kept in the parser's plain tables, else read from its Lark parser (grammar/larktables.py)."""
    if parser.tables is not None:
        return set(parser.tables["tree_names"])
    from .larktables import tree_names as from_lark
    return from_lark(parser.lark)


__all__ = ["ExtensionError", "compose", "check_fragments", "check_builders", "tree_names"]
