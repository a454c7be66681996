"""Differential testing against Jinja2: generated templates render to the same text, or both raise.

Hypothesis builds templates from the whole language: text and tags under every whitespace-control
marker and every combination of trim_blocks / lstrip_blocks / keep_trailing_newline (and the
three kinds of Undefined); expressions over ints, floats, strings, lists and dicts with every
operator, filters, tests and methods; nested if / for / set / macro / call / filter / with blocks;
and a pool of corners where Jinja2 has a rule of its own (EDGE_SNIPPETS). The same source and
context go to `jinja2.sandbox.ImmutableSandboxedEnvironment(**options)` and
`jinjamark.Environment(**options)`. Per run: 2,000 whole templates, 1,000 deeply nested ones with
simple expressions, 1,000 lone expressions, 300 renders with the context marked as input.

Shrinking a failure of these big generated templates can take minutes, so it is off unless
JINJAMARK_SHRINK=1 is set; a failing example is saved and replayed first on the next run either way.

Names have one type each (ints `i`, `j`; strings `s1`, `s2`; ...), so a generated expression is
mostly well typed and renders; the ill-typed rest checks that both engines refuse it. Nothing is
generated whose Jinja2 output is not deterministic (`random`, `lipsum`, printed iterators).
"""
from __future__ import annotations

import copy
import os

import jinja2
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from jinja2.sandbox import ImmutableSandboxedEnvironment

import jinjamark
from conftest import Outcome, outcome

CONTEXT = {
    "n": 3, "m": -2, "big": 10 ** 20, "f": 2.5, "g": -0.1,
    "s": "Hello World", "t": "a,b,,c", "u8": "ünï cødé", "e": "", "html": "<b>x</b> &amp; y",
    "xs": [3, 1, 2], "ys": [], "ws": ["b", "A", "c", "a"], "mixed": [1, "a", None, True, 2.5],
    "d": {"a": 1, "b": 2, "c": None}, "pairs": [["x", 1], ["y", 2]],
    "users": [{"name": "ann", "age": 30}, {"name": "bob", "age": 25},
              {"name": "cy", "age": 30, "admin": True}],
    "tree": [{"name": "a", "children": [{"name": "b", "children": [{"name": "c", "children": []}]}]},
             {"name": "d", "children": []}],
    "yes": True, "no": False, "nothing": None,
}

OPTION_NAMES = ("trim_blocks", "lstrip_blocks", "keep_trailing_newline")
UNDEFINED_KINDS = ("Undefined", "Undefined", "Undefined", "StrictUndefined", "ChainableUndefined")
EXTENSION_SETS = ((), ("jinja2.ext.loopcontrols",), ("jinja2.ext.loopcontrols", "jinja2.ext.do"))

# ---------------------------------------------------------------------------- expression pieces

INT_LEAVES = ["0", "1", "2", "3", "7", "-4", "10", "1_000", "0x1F", "0o17", "0b101", "n", "m", "big",
              "xs|length", "s|length", "d|length", "xs[0]", "xs.1", "xs[-1]", "d.a", "d['b']",
              "users[0].age", "range(4)|sum", "xs|sum", "xs|max", "xs|min", "'42'|int", "3.7|int",
              "ws|count", "xs|last", "s.find('o')", "s.count('l')", "xs.index(2)", "pairs[1][1]"]
SMALL_INTS = ["0", "1", "2", "3", "-1", "n", "m"]
FLOAT_LEAVES = ["2.5", "1e3", "1.5e-2", "0.1", "2.5e+2", "1_000.5", "1E3", "f", "g", "'3.25'|float",
                "n|float", "7 / 2"]
STR_LEAVES = ["'abc'", '"it\'s"', r"'a\nb'", r"'tab\there'", r"'\u00e9t\u00e9'", r"'\x41'",
              r"'q\'uote'", "'%s-%s'", "'a' 'b'", "'a' \"b\" 'c'", "''", "'Hello {} {}'", "'ü'",
              "'  pad  '", "'a,b'", "'<i>'", r"'\\'", r"'\N{BULLET}'", r"'\101'", "s", "t", "u8", "e",
              "html", "ws[0]", "d|first", "users[1].name", "pairs[0][0]", "s[1:4]", "'%d%%' % n"]
LIST_LEAVES = ["[1, 2]", "[]", "xs", "ws", "ys", "pairs", "['a', 'b']", "(1,)", "(1, 2)", "[[1], [2, 3]]",
               "range(n)|list", "range(1, 10, 3)|list", "s.split()", "t.split(',')", "d.keys()|list",
               "d.values()|list", "'abc'|list", "xs[1:]", "xs[::-1]", "ws[:2]", "[n, f, 'x']"]
DICT_LEAVES = ["{'a': 1}", "{}", "d", "users[0]", "dict(k=1, v='x')", "{'k': [1, 2], 1: 'one'}",
               "{'a': {'b': 1}}", "tree[0]"]
ANY_LEAVES = ["nothing", "yes", "no", "mixed", "missing", "d.missing", "xs[10]", "users[1].admin",
              "range(3)", "d.items()", "true", "False", "none", "None", "(1, 'a')", "users"]

# Filters by the type they take; each entry says what it gives back.
STR_FILTERS = [("upper", "str"), ("lower", "str"), ("title", "str"), ("capitalize", "str"),
               ("trim", "str"), ("replace('o', '0')", "str"), ("replace('l', 'L', 1)", "str"),
               ("center(13)", "str"), ("indent(2)", "str"), ("indent(2, true)", "str"),
               ("indent(width=3, first=true, blank=true)", "str"), ("truncate(5)", "str"),
               ("truncate(9, true, '..', 0)", "str"), ("wordwrap(5)", "str"), ("striptags", "str"),
               ("escape", "str"), ("e", "str"), ("forceescape", "str"), ("urlencode", "str"),
               ("reverse|join", "str"), ("default('dflt')", "str"), ("d('dflt', true)", "str"),
               ("first", "str"), ("last", "str"), ("list|join('-')", "str"), ("length", "int"),
               ("count", "int"), ("wordcount", "int"), ("int", "int"), ("int(default=7)", "int"),
               ("float", "float"), ("string", "str"), ("tojson", "str"), ("pprint", "str"),
               ("format(1, 2)", "str"), ("trim('H')", "str")]
LIST_FILTERS = [("sort", "list"), ("sort(reverse=true)", "list"), ("unique|list", "list"),
                ("reverse|list", "list"), ("map('string')|list", "list"), ("select('odd')|list", "list"),
                ("reject('even')|list", "list"), ("batch(2)|list", "list"), ("batch(2, 'x')|list", "list"),
                ("slice(2)|list", "list"), ("list", "list"), ("length", "int"), ("sum", "int"),
                ("max", "int"), ("min", "int"), ("first", "any"), ("last", "any"),
                ("sum(start=10)", "int"), ("join", "str"), ("join(', ')", "str"), ("tojson", "str"),
                ("string", "str"), ("select|list", "list"), ("map('upper')|list", "list"),
                ("default([0])", "list"), ("selectattr('0')|list", "list")]
USERS_FILTERS = ["map(attribute='name')|join(',')", "selectattr('admin')|list|length",
                 "rejectattr('age', 'gt', 26)|map(attribute='name')|list",
                 "sort(attribute='age')|map(attribute='name')|list", "groupby('age')|list",
                 "sum(attribute='age')", "max(attribute='age')", "unique(attribute='age')|list",
                 "selectattr('age', 'equalto', 30)|list", "map(attribute='missing', default='?')|list",
                 "sort(attribute='age,name', reverse=true)|map(attribute='name')|join", "tojson",
                 "groupby('age')|map(attribute='grouper')|list", "join(attribute='name')"]
DICT_FILTERS = [("dictsort", "list"), ("dictsort(by='value')", "list"), ("dictsort(true, 'key', true)", "list"),
                ("items|list", "list"), ("tojson", "str"), ("length", "int"), ("list", "list"),
                ("first", "any"), ("string", "str"), ("xmlattr", "str"), ("pprint", "str")]
NUM_FILTERS = [("abs", "num"), ("round", "float"), ("round(2)", "float"), ("round(1, 'floor')", "float"),
               ("round(0, 'ceil')", "float"), ("int", "int"), ("float", "float"), ("string", "str"),
               ("filesizeformat", "str"), ("filesizeformat(true)", "str"), ("default(5)", "num")]
STR_METHODS = ["upper()", "lower()", "strip()", "strip('H')", "split()", "split(',')", "startswith('H')",
               "endswith('d')", "replace('o', '0')", "title()", "lstrip()", "rstrip('d')", "center(15, '*')",
               "isdigit()", "splitlines()", "partition(' ')", "capitalize()", "format(1, 'b')",
               "join(['x', 'y'])", "zfill(8)", "rsplit(' ', 1)", "casefold()", "swapcase()"]
DICT_METHODS = ["get('a')", "get('z', 0)", "get('z')", "keys()", "values()", "items()"]
TESTS = ["defined", "undefined", "none", "number", "string", "mapping", "sequence", "iterable", "even",
         "odd", "divisibleby 3", "divisibleby(2)", "eq 3", "ne(2)", "lt 5", "gt(1)", "in xs",
         "in 'Hello'", "sameas none", "true", "false", "boolean", "integer", "float", "lower", "upper",
         "callable", "filter", "test", "escaped", "ge 2", "ne('a')", "equalto 1", "greaterthan(0)"]
COMPARISONS = ["==", "!=", "<", "<=", ">", ">="]
LOOP_ATTRS_INT = ["loop.index", "loop.index0", "loop.revindex", "loop.revindex0", "loop.length",
                  "loop.depth", "loop.depth0"]
LOOP_ATTRS_ANY = ["loop.first", "loop.last", "loop.previtem", "loop.nextitem", "loop.cycle('odd', 'even')",
                  "loop.changed(loop.index // 2)", "loop.cycle(1, 2, 3)"]
TEXT_PIECES = ["ab", "x", "Hi there", " ", "  ", "\t", "\n", "\n  ", " \n", "\n\n", "\t\n ", "\r\n", "é",
               "}", "%", "#", "-", "+", ".", "  \n\t  "]
COMMENT_BODIES = ["c", " note ", " {{ x }} ", "\n", " {% if %} ", "-", " # "]
RAW_BODIES = ["{{ x }}", "{% if %}", " a ", "\n{# c #}\n", ""]

# Safe text from a filter inside a `+` chain: the chain is safe, and what is added before and
# after it is escaped (collected at once by the sums' fast paths, in both tiers).
SAFE_SUMS = [
    "{{ '<f>'|safe + html + '</f>' + d|tojson }}", "{{ html + s|safe + html }}", "{{ s + d|tojson + html }}",
    "{% set z = html + d|tojson + '<' %}{{ z }}{{ z is escaped }}{{ z|length }}", "{{ html|e + html + 1 }}",
    "{% for u in users %}{{ '<'|safe + u.name + '>'|safe + u|tojson }}{% endfor %}", "{{ html|e + xs + s }}",
]

# Corners where Jinja2 has a rule of its own (mostly refusals at compile time): each is dropped
# into generated templates now and then, under the surrounding whitespace control and options.
EDGE_SNIPPETS = [
    "{{ 1 is not none is not sameas none }}", "{% for loop in xs %}{% endfor %}",
    "{% for x in xs %}{% set loop = 1 %}{% endfor %}", "{% macro dup(a, a) %}{% endmacro %}",
    "{{ dict(a=1, a=2) }}", "{% macro late(a=1, b) %}{% endmacro %}", "{% set 1 = 2 %}",
    "{{ f(*xs, 1) }}", "{{ dict(**d, e=1) }}", "{{ dict(e=1, **d) }}", "{{ range(*xs)|list }}",
    "{{ {'a': 1, 'a': 2} }}", "{{ 1 if 2 if 3 else 4 else 5 }}", "{{ x[::0] }}", "{{ xs[::0] }}",
    "{{ 'abcabc'.replace('a', 'x', count=1) }}", "{{ (d|items)[1:] }}", "{{ xs.1.2 }}", "{{ 1.e3 }}",
    "{{ .5 }}", "{{ 1. }}", "{{ 0777 }}", "{{ 1__0 }}", "{{ 1_ }}", "{{ }}", "{%%}", "{{ 'x' }",
    "{% for x in xs %}{{ loop(xs) }}{% endfor %}", "{% macro m3() %}{{ caller() }}{% endmacro %}{{ m3() }}",
    "{% set x.y = 1 %}", "{{ x is defined(1) }}", "{% for a, b in d %}{% endfor %}",
    "{% for x in xs %}{{ loop.cycle() }}{% endfor %}", "{{ xs[1.5] }}", "{{ 'abc'.0 }}", "{{ xs|map('int')|list }}",
    "{% filter nosuch %}x{% endfilter %}", "{{ 1 if false else x|nosuch }}", "{% if false %}{{ x|nosuch }}{% endif %}",
    "{% if false %}{{ x is nosuch }}{% endif %}", "{{ x|nosuch if false }}", "{% for x in [] %}{{ x|nosuch }}{% endfor %}",
    "{% for x in xs %}{% break %}{% else %}E{% endfor %}", "{% for x in xs %}{% continue %}{% else %}E{% endfor %}",
    "{% for x in xs if x > 5 %}{% else %}none{% endfor %}", "{{ varargs }}",
    "{% set a, b = 1 %}", "{% set (a, b), c = [1, 2], 3 %}{{ a }}{{ c }}", "{% for (a, b), c in [([1, 2], 3)] %}{{ b }}{% endfor %}",
    "{{ 'a' 'b' 'c' }}", "{{ 'x' ~ }}", "{{ not }}", "{{ -'a' }}", "{{ 2 ** 0.5 }}", "{{ (-8) ** (1/3) }}",
    "{{ 1 // 0.0 }}", "{{ 5 % 0 }}", "{{ 'abc' * -1 }}", "{{ [1, 2] + (3,) }}", "{{ (1, 2) + (3,) }}",
    "{{ ['a', 'b'] ~ 1 }}", "{{ {'a': 1} ~ '' }}", "{{ true + true }}", "{{ none ~ '' }}", "{{ 1 in 'abc' }}",
    "{{ 'a' < 1 }}", "{{ [1] < [2] }}", "{{ (1, 2) == [1, 2] }}", "{{ 1 == 1 == 1 }}", "{{ 1 < 2 > 0 }}",
    "{{ s.__class__ }}", "{{ s._private }}", "{{ s.mro }}",
    "{{ namespace(a=1).a }}", "{{ namespace(d, b=2).a }}", "{{ joiner(',')() }}{{ joiner(',')() }}",
    "{% set j = joiner('|') %}{% for x in xs %}{{ j() }}{{ x }}{% endfor %}", "{{ range(3, 0, -1)|list }}",
    "{{ range(0) }}", "{{ lipsum is callable }}", "{{ dict() }}", "{{ dict(d) }}",
    "{{ 2[1:] }}", "{{ none[1:] }}", "{{ (1 + 1)[1:] }}", "{{ n[1:] }}", "{{ d[1:] }}", "{{ range(3)[::0] }}",
    "{% macro mm(a, b=1) %}{{ varargs }}{% endmacro %}{{ mm.name }}{{ mm.arguments }}{{ mm.catch_varargs }}"
    "{{ mm.catch_kwargs }}{{ mm.caller }}", "{% macro rec(k) %}{{ rec(k) }}{% endmacro %}{{ rec(1) }}",
    "{{ range(100001)|length }}", "{{ range(100000)|length }}", "{% for x in xs %}{{ loop.changed() }}{% endfor %}",
    "{% for k, v in pairs if k %}{{ loop.previtem }}{{ loop.nextitem }}{% endfor %}",
    # Markup (`|e`, `|safe`) keeps Jinja2's escaping through operators and methods.
    "{{ html|e ~ '<' }}", "{{ html|safe + '<' }}", "{{ (html|safe).upper() }}", "{{ '%s'|safe % html }}",
    "{{ html|e|e }}", "{{ [html]|join|e }}", "{{ (html|e)[0] }}", "{{ (html|safe)[1] }}", "{{ (html|e)[1:5] }}",
    "{{ (html|e).split(';') }}", "{{ [html|e, '>'] }}", "{{ {'<': html|e} }}", "{{ html|e|tojson }}",
    "{{ (html|e) * 2 }}", "{{ html|e|center(30) }}", "{{ html|e|striptags }}", "{{ [html|e]|join('&') }}",
    "{{ html|e is escaped }}", "{{ (html|safe).format(html) }}", "{{ html|e|replace('&', '+') }}",
    *SAFE_SUMS,
]

TYPED_NAMES = {"int": ["i", "j"], "str": ["s1", "s2"], "list": ["l1"], "dict": ["dd"]}


class Choices:
    """Decisions read from a byte string that Hypothesis draws once per example.

    One draw per template instead of one per decision keeps generation cheap, and shrinking
    still works: Hypothesis shortens and zeroes the bytes, and choice 0 is always the simplest
    option (a missing byte reads as 0).
    """

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def index(self, size: int) -> int:
        if size <= 1:
            return 0
        width = 1 if size <= 256 else 2
        chunk = self.data[self.pos:self.pos + width]
        self.pos += width
        return int.from_bytes(chunk, "big") % size if chunk else 0


class TemplateBuilder:
    """Draws one template; `scopes` tracks which generated names are defined here."""

    def __init__(self, choices: Choices, extensions=(), parenthesize: int = 75, edges: bool = True,
                 expr_depth: int = 4):
        self.choices = choices
        self.expr_depth = expr_depth  # 0: only leaves, for tests of the template structure
        self.extensions = extensions
        self.edges = edges
        self.parenthesize = parenthesize  # percent of operands put in parentheses
        self.scopes: list[dict[str, str]] = [{}]
        self.loop_depth = 0
        self.in_macro = False
        self.macros: list[str] = []
        self.statements = 0

    # -------------------------------------------------------------- drawing helpers
    def pick(self, options):
        return options[self.choices.index(len(options))]

    def between(self, low: int, high: int) -> int:
        return low + self.choices.index(high - low + 1)

    def chance(self, percent: int) -> bool:
        return self.choices.index(100) < percent

    def names(self, kind: str) -> list[str]:
        """Names of `kind` defined in the enclosing scopes (generated sets, loops, macro params)."""
        return sorted({n for scope in self.scopes for n, k in scope.items() if k == kind})

    def define(self, name: str, kind: str) -> None:
        self.scopes[-1][name] = kind

    def scoped(self, body, bindings: dict[str, str] | None = None):
        """Run `body` (a generator of source) in a new scope of generated names."""
        self.scopes.append(dict(bindings or {}))
        try:
            return body()
        finally:
            self.scopes.pop()

    def wrap(self, expr: str) -> str:
        """Parenthesize an operand, mostly: unparenthesized ones test precedence."""
        return f"({expr})" if self.chance(self.parenthesize) else expr

    def receiver(self, kind: str, depth: int) -> str:
        """The object of `.attribute` or `.method()`, always parenthesized: after an unparenthesized
        `x|f` the dot would extend the filter's name (`f.method`), an unknown filter that Jinja2's
        constant folding sometimes drops unseen (`{{ 1 or 2|f.m() }}`), an optimizer artifact."""
        return f"({self.expr(kind, depth)})"

    # -------------------------------------------------------------- typed expressions
    def leaf(self, kind: str) -> str:
        pool = {"int": INT_LEAVES, "float": FLOAT_LEAVES, "str": STR_LEAVES, "list": LIST_LEAVES,
                "dict": DICT_LEAVES}[kind] + self.names(kind)
        if kind == "int" and self.loop_depth:
            pool = pool + LOOP_ATTRS_INT
        if kind == "str" and self.macros and not self.in_macro:  # no recursion: Jinja2 overflows
            pool = pool + [f"{self.pick(self.macros)}({self.pick(['', '1', repr('z')])})"]
        if self.chance(5):  # a generated name that may well be undefined here
            return self.pick(TYPED_NAMES.get(kind, ["i"]))
        return self.pick(pool)

    def expr(self, kind: str, depth: int) -> str:
        depth = min(depth, self.expr_depth)
        if kind == "bool":
            return self.bool_expr(depth)
        if kind == "any":
            return self.any_expr(depth)
        if depth <= 0 or self.chance(30):
            return self.leaf(kind)
        make = {"int": self.int_expr, "float": self.float_expr, "str": self.str_expr,
                "list": self.list_expr, "dict": self.dict_expr}[kind]
        return make(depth - 1)

    def common(self, kind: str, depth: int) -> str | None:
        """Forms valid for every type: conditionals, parentheses."""
        choice = self.between(0, 9)
        if choice == 0:
            return f"{self.wrap(self.expr(kind, depth))} if {self.bool_expr(depth)} else {self.wrap(self.expr(kind, depth))}"
        if choice == 1:
            return f"({self.expr(kind, depth)} if {self.bool_expr(depth)})"
        if choice == 2:
            return f"({self.expr(kind, depth)})"
        return None

    def int_expr(self, depth: int) -> str:
        if (c := self.common("int", depth)) is not None:
            return c
        form = self.between(0, 6)
        if form <= 2:
            op = self.pick(["+", "-", "*", "//", "%", "+", "-"])
            return f"{self.wrap(self.expr('int', depth))} {op} {self.wrap(self.expr('int', depth))}"
        if form == 3:
            return f"{self.pick(['-', '+', '- ', '--'])}{self.wrap(self.expr('int', depth))}"
        if form == 4:
            return f"{self.pick(SMALL_INTS)} ** {self.pick(['0', '1', '2', '3'])}"
        if form == 5:
            src = self.pick(["str", "list", "dict"])
            return f"{self.wrap(self.expr(src, depth))}|length"
        f, out = self.pick([x for x in NUM_FILTERS if x[1] in ("num", "int")])
        return f"{self.wrap(self.expr('int', depth))}|{f}"

    def float_expr(self, depth: int) -> str:
        if (c := self.common("float", depth)) is not None:
            return c
        form = self.between(0, 3)
        if form <= 1:
            left, right = self.pick(["float", "int"]), self.pick(["float", "int"])
            op = self.pick(["+", "-", "*", "/", "//", "%", "/"])
            return f"{self.wrap(self.expr(left, depth))} {op} {self.wrap(self.expr(right, depth))}"
        if form == 2:
            return f"{self.pick(['2.5', 'f', '0.5', '1e1'])} ** {self.pick(['0', '2', '-1', '0.5'])}"
        f, _ = self.pick(NUM_FILTERS[:6])
        return f"{self.wrap(self.expr('float', depth))}|{f}"

    def str_expr(self, depth: int) -> str:
        if (c := self.common("str", depth)) is not None:
            return c
        form = self.between(0, 9)
        if form == 0:
            return f"{self.wrap(self.expr('str', depth))} ~ {self.wrap(self.any_expr(depth))}"
        if form == 1:
            return f"{self.wrap(self.expr('str', depth))} + {self.wrap(self.expr('str', depth))}"
        if form == 2:
            return f"{self.wrap(self.expr('str', depth))} * {self.pick(['0', '2', '3', '-1'])}"
        if form == 3:
            start, stop, step = (self.pick(["", "1", "-2", "n", "0"]) for _ in range(3))
            sl = self.pick([f"{start}:{stop}", f"{start}:{stop}:{step or '2'}", f"::{step or '-1'}", start or "0"])
            return f"{self.wrap(self.expr('str', depth))}[{sl}]"
        if form in (4, 5):
            f, out = self.pick(STR_FILTERS)
            base = f"{self.wrap(self.expr('str', depth))}|{f}"
            return base if out == "str" else f"{base}|string"
        if form == 6:
            m = self.pick(STR_METHODS)
            return f"{self.receiver('str', depth)}.{m}|string"
        if form == 7:
            args = ", ".join(self.expr(self.pick(["int", "str", "float"]), depth) for _ in range(2))
            fmt = self.pick(["'%s-%s'", "'%s=%r'", "'{}+{}'", "'%s/%.2f'"])
            return self.pick([f"{fmt}|format({args})", f"{fmt} % ({args})", f"{fmt}.format({args})"])
        if form == 8:
            src = self.pick(["list", "dict", "int", "float", "any"])
            f, _ = self.pick([x for x in (LIST_FILTERS if src == "list" else DICT_FILTERS if src == "dict"
                                          else NUM_FILTERS) if x[1] == "str"] or [("string", "str")])
            return f"{self.wrap(self.expr(src, depth))}|{f}"
        return f"users|{self.pick(USERS_FILTERS)}|string"

    def list_expr(self, depth: int) -> str:
        if (c := self.common("list", depth)) is not None:
            return c
        form = self.between(0, 5)
        if form == 0:
            return f"{self.wrap(self.expr('list', depth))} + {self.wrap(self.expr('list', depth))}"
        if form == 1:
            items = [self.expr(self.pick(["int", "str", "float", "any"]), depth)
                     for _ in range(self.between(0, 3))]
            return self.pick([f"[{', '.join(items)}]", f"({', '.join(items)}{',' if len(items) == 1 else ''})"])
        if form == 2:
            return f"{self.wrap(self.expr('list', depth))}[{self.pick(['1:', ':2', '::-1', '-2:', '1::2'])}]"
        if form == 3:
            return f"{self.wrap(self.expr('list', depth))} * {self.pick(['0', '2'])}"
        f, out = self.pick([x for x in LIST_FILTERS if x[1] == "list"])
        return f"{self.wrap(self.expr('list', depth))}|{f}"

    def dict_expr(self, depth: int) -> str:
        if (c := self.common("dict", depth)) is not None:
            return c
        if self.chance(50):
            keys = [self.pick(["'a'", "'k'", "'b'", "1", "'x y'"]) for _ in range(self.between(0, 3))]
            return "{" + ", ".join(f"{k}: {self.expr(self.pick(['int', 'str', 'list', 'any']), depth)}"
                                   for k in keys) + "}"
        return f"dict({self.pick(['a', 'q'])}={self.expr('int', depth)}, z={self.expr('str', depth)})"

    def bool_expr(self, depth: int) -> str:
        depth = min(depth, self.expr_depth)
        form = self.between(0, 7)
        if depth <= 0 or form == 0:
            return self.pick(["yes", "no", "true", "false", "n > 2", "s", "e", "xs", "ys", "missing",
                              "nothing", "loop.first" if self.loop_depth else "d"])
        if form == 1:
            kind = self.pick(["int", "str", "int", "float"])
            ops = [self.pick(COMPARISONS) for _ in range(self.between(1, 2))]
            parts = [self.wrap(self.expr(kind, depth - 1)) for _ in range(len(ops) + 1)]
            return "".join(p + (f" {o} " if i < len(ops) else "") for i, (p, o) in
                           enumerate(zip(parts, ops + [""])))
        if form == 2:
            kind = self.pick(["int", "str"])
            container = self.pick(["list", "str", "dict"]) if kind == "str" else "list"
            return f"{self.wrap(self.expr(kind, depth - 1))} {self.pick(['in', 'not in'])} " \
                   f"{self.wrap(self.expr(container, depth - 1))}"
        if form == 3:
            return f"{self.wrap(self.bool_expr(depth - 1))} {self.pick(['and', 'or'])} {self.wrap(self.any_expr(depth - 1))}"
        if form == 4:
            return f"not {self.wrap(self.bool_expr(depth - 1))}"
        if form == 5:
            return f"{self.wrap(self.any_expr(depth - 1))} {self.pick(['is', 'is not'])} {self.pick(TESTS)}"
        if form == 6:
            return f"{self.receiver('str', depth - 1)}.{self.pick(['startswith', 'endswith'])}('a')"
        return f"{self.wrap(self.any_expr(depth - 1))} {self.pick(['and', 'or'])} {self.wrap(self.any_expr(depth - 1))}"

    def any_expr(self, depth: int) -> str:
        depth = min(depth, self.expr_depth)
        if depth <= 0 or self.chance(15):
            pool = ANY_LEAVES + self.names("any")
            if self.loop_depth:
                pool = pool + LOOP_ATTRS_ANY
            return self.pick(pool)
        kind = self.pick(["int", "float", "str", "list", "dict", "bool", "int", "str"])
        if kind == "dict" and self.chance(30):
            return f"{self.receiver('dict', depth - 1)}.{self.pick(DICT_METHODS)}"
        if kind == "dict" and self.chance(30):
            f, _ = self.pick(DICT_FILTERS)
            return f"{self.wrap(self.expr('dict', depth - 1))}|{f}"
        if kind == "dict" and self.chance(30):
            return f"{self.receiver('dict', depth - 1)}{self.pick(['.a', '.k', '[1]', '.b', '.missing'])}"
        return self.expr(kind, depth)

    # -------------------------------------------------------------- tags and text
    def tag(self, inner: str) -> str:
        left = self.pick(["", "", "", "-", "+"])
        right = self.pick(["", "", "", "-", "+"])
        pad_l, pad_r = self.pick([" ", " ", "", "  "]), self.pick([" ", " ", "", "  "])
        return f"{{%{left}{pad_l}{inner}{pad_r}{right}%}}"

    def output(self, expr: str) -> str:
        left = self.pick(["", "", "", "-", "+"][: 4 if self.chance(95) else 5])
        right = self.pick(["", "", "", "-"])
        return f"{{{{{left} {expr} {right}}}}}"

    def text(self) -> str:
        return "".join(self.pick(TEXT_PIECES) for _ in range(self.between(1, 4)))

    def comment(self) -> str:
        left, right = self.pick(["", "-", "+"]), self.pick(["", "-"])
        return f"{{#{left}{self.pick(COMMENT_BODIES)}{right}#}}"

    def raw(self) -> str:
        # `{% raw +%}` is a syntax error in Jinja2 (its raw opener knows only `-`): seldom.
        left, right = self.pick(["", "-", "+"]), self.pick(["", "", "-", "+"] if self.chance(10) else ["", "-"])
        return f"{{%{left} raw {right}%}}" + self.pick(RAW_BODIES) + self.tag("endraw")

    # -------------------------------------------------------------- statements
    def body(self, depth: int, max_items: int = 4) -> str:
        count = self.between(0 if depth < 3 else 1, max_items)
        return "".join(self.item(depth) for _ in range(count))

    def item(self, depth: int) -> str:
        kinds = ["text", "text", "text", "output", "output", "output", "comment"]
        if depth > 0 and self.statements < 8:
            kinds += ["if", "for", "set", "set", "block_set", "macro", "filter", "with", "namespace"]
            if self.macros and not self.in_macro:
                kinds += ["call_macro", "call_block"]
            if self.loop_depth and ("jinja2.ext.loopcontrols" in self.extensions or self.chance(5)):
                kinds += ["loopcontrol"]
            if "jinja2.ext.do" in self.extensions or self.chance(5):
                kinds += ["do"]
            kinds += ["raw", "edge"] if self.edges else ["raw"]
        kind = self.pick(kinds)
        if kind not in ("text", "output", "comment"):
            self.statements += 1
        return getattr(self, f"make_{kind}")(depth)

    def make_text(self, depth):
        return self.text()

    def make_comment(self, depth):
        return self.comment()

    def make_raw(self, depth):
        return self.raw()

    def make_output(self, depth):
        return self.output(self.expr(self.pick(["int", "float", "str", "list", "dict", "bool", "any", "str"]),
                                     self.between(0, 3)))

    def make_if(self, depth):
        out = self.tag(f"if {self.bool_expr(2)}") + self.scoped(lambda: self.body(depth - 1))
        for _ in range(self.between(0, 2)):
            out += self.tag(f"elif {self.bool_expr(2)}") + self.scoped(lambda: self.body(depth - 1))
        if self.chance(50):
            out += self.tag("else") + self.scoped(lambda: self.body(depth - 1))
        return out + self.tag("endif")

    LOOPS = [("x", "xs", {"x": "int"}), ("x", "[3, 1, 2]", {"x": "int"}), ("x", "range(3)", {"x": "int"}),
             ("x", "range(1, 10, 3)", {"x": "int"}), ("x", "ys", {"x": "int"}), ("w", "ws", {"w": "str"}),
             ("w", "s", {"w": "str"}), ("w", "d", {"w": "str"}), ("w", "'abc'", {"w": "str"}),
             ("user", "users", {"user": "any"}), ("k, v", "d.items()", {"k": "str", "v": "any"}),
             ("k, v", "pairs", {"k": "str", "v": "int"}), ("(k, v)", "d|dictsort", {"k": "str", "v": "any"}),
             ("x", "xs|sort", {"x": "int"}), ("w", "ws|reverse", {"w": "str"}), ("x", "nothing", {"x": "int"}),
             ("k, v", "[[1, 2], [3, 4], [5]]", {"k": "int", "v": "int"}), ("x", "missing", {"x": "int"})]

    def make_for(self, depth):
        if self.chance(15):
            return self.recursive_for(depth)
        target, iterable, bindings = self.pick(self.LOOPS)
        head = f"for {target} in {iterable}"
        if self.chance(20):
            var = next(iter(bindings))
            head += self.pick([f" if {var}", " if loop is undefined", f" if {var} != 1"])
        self.loop_depth += 1
        try:
            out = self.tag(head) + self.scoped(lambda: self.loop_body(depth - 1, bindings), bindings)
        finally:
            self.loop_depth -= 1
        if self.chance(30):
            out += self.tag("else") + self.scoped(lambda: self.body(depth - 1))
        return out + self.tag("endfor")

    def loop_body(self, depth, bindings):
        out = self.body(depth, 3)
        for name, kind in bindings.items():
            if self.chance(50):
                out += self.output(name if kind != "any" else f"{name}{self.pick(['', '.name', '.age', '|string'])}")
        if self.chance(40):
            out += self.output(self.pick(LOOP_ATTRS_INT + LOOP_ATTRS_ANY))
        return out

    def recursive_for(self, depth):
        self.loop_depth += 1
        try:
            inner = self.scoped(lambda: self.body(depth - 1, 2), {"node": "any"})
        finally:
            self.loop_depth -= 1
        call = self.output("loop(node.children)")
        shown = self.output(self.pick(["node.name", "loop.depth", "loop.depth0 ~ node.name", "loop.index"]))
        return (self.tag("for node in tree recursive") + shown + inner
                + self.tag("if node.children") + call + self.tag("endif") + self.tag("endfor"))

    def make_set(self, depth):
        if self.chance(20):
            value = self.pick(["1, 2", "(n, m)", "[1, 2, 3]", "pairs|map('last')|list", "xs[:2]", "[4]"])
            self.define("i", "int")
            self.define("j", "int")
            return self.tag(f"set {self.pick(['i, j', '(i, j)'])} = {value}")
        kind = self.pick(["int", "str", "list", "dict"])
        name = self.pick(TYPED_NAMES[kind])
        out = self.tag(f"set {name} = {self.expr(kind, 2)}")
        self.define(name, kind)
        return out

    def make_block_set(self, depth):
        filt = self.pick(["", "", " | upper", " | replace('a', 'X') | trim", " | length", " | indent(2)"])
        kind = "int" if "length" in filt else "str"
        name = self.pick(TYPED_NAMES[kind])
        body = self.scoped(lambda: self.body(depth - 1, 3))
        self.define(name, kind)
        return self.tag(f"set {name}{filt}") + body + self.tag("endset")

    def make_namespace(self, depth):
        if "ns" not in {n for s in self.scopes for n in s}:
            self.define("ns", "ns")
            return self.tag(f"set ns = namespace(total={self.expr('int', 1)}, text='')")
        field = self.pick(["total", "text"])
        value = f"ns.total + {self.expr('int', 1)}" if field == "total" else f"ns.text ~ {self.expr('str', 1)}"
        return self.tag(f"set ns.{field} = {value}") + self.output(f"ns.{field}")

    MACRO_PARAMS = ["", "p", "p, q=2", "p='d', q=none", "p, q=p", "p=[1, 2]", "p, q, r='r'"]
    MACRO_EXTRAS = ["{{ varargs }}", "{{ kwargs }}", "{{ caller() }}", "{{ caller(p) }}", "{{ p|length }}",
                    "{{ q ~ p }}", "{{ n }}", "{{ varargs|length }}", "{{ kwargs.extra }}"]

    def make_macro(self, depth):
        name = self.pick(["m1", "m2"])
        params = self.pick(self.MACRO_PARAMS)
        bindings = {p.split("=")[0].strip(): "any" for p in params.split(",") if p.strip()}
        self.in_macro, was = True, self.in_macro
        try:
            body = self.scoped(lambda: self.body(depth - 1, 3), bindings)
        finally:
            self.in_macro = was
        extras = "".join(self.pick(self.MACRO_EXTRAS) for _ in range(self.between(0, 2)))
        if name not in self.macros:
            self.macros.append(name)
        return self.tag(f"macro {name}({params})") + body + extras + self.tag("endmacro")

    CALL_ARGS = ["", "1", "'a', 2", "1, 2, 3", "p=5", "1, q='z'", "1, extra=3", "*xs", "**{'p': 1}",
                 "'x', 'y', 'z', 'w'", "q=1"]

    def make_call_macro(self, depth):
        return self.output(f"{self.pick(self.macros)}({self.pick(self.CALL_ARGS)})")

    def make_call_block(self, depth):
        name, args = self.pick(self.macros), self.pick(self.CALL_ARGS)
        if self.chance(50):
            body = self.scoped(lambda: self.body(depth - 1, 2) + self.output("c"), {"c": "any"})
            return self.tag(f"call(c) {name}({args})") + body + self.tag("endcall")
        return self.tag(f"call {name}({args})") + self.scoped(lambda: self.body(depth - 1, 2)) + self.tag("endcall")

    def make_filter(self, depth):
        # Not `length`: Jinja2's filter block cannot output a non-string (a TypeError quirk).
        filt = self.pick(["upper", "replace('a', 'X')|trim", "indent(2, true)", "center(20)", "title",
                          "striptags", "lower|reverse|join", "e"])
        return self.tag(f"filter {filt}") + self.scoped(lambda: self.body(depth - 1, 3)) + self.tag("endfilter")

    def make_with(self, depth):
        if self.chance(25):
            return self.tag("with") + self.scoped(lambda: self.body(depth - 1, 3)) + self.tag("endwith")
        count = self.between(1, 2)
        kinds = [self.pick(["int", "str"]) for _ in range(count)]
        names = [TYPED_NAMES[k][i % 2] for i, k in enumerate(kinds)]
        assigns = ", ".join(f"{nm} = {self.expr(k, 1)}" for nm, k in zip(names, kinds))
        return (self.tag(f"with {assigns}") + self.scoped(lambda: self.body(depth - 1, 3), dict(zip(names, kinds)))
                + self.tag("endwith"))

    def make_loopcontrol(self, depth):
        word = self.pick(["break", "continue"])
        if self.chance(60):
            return self.tag(f"if {self.bool_expr(1)}") + self.tag(word) + self.tag("endif")
        return self.tag(word)

    def make_edge(self, depth):
        return self.pick(EDGE_SNIPPETS)

    def make_do(self, depth):
        return self.tag(f"do {self.pick(['xs|sum', 'd.get(1)', 'n + 1', 'd.a'])}")


@st.composite
def expressions(draw):
    """`{{ expression }}`: deeper expressions, fewer parentheses, so precedence is exercised."""
    builder = TemplateBuilder(Choices(draw(st.binary(min_size=40, max_size=200))), parenthesize=35)
    kind = builder.pick(["any", "int", "float", "str", "list", "bool", "dict"])
    return "{{ " + builder.expr(kind, 4) + " }}"


@st.composite
def cases(draw, depth: int = 3, edges: bool = True, expr_depth: int = 4):
    """(template source, environment options): the options first, so that tags can follow them."""
    opts = {name: draw(st.booleans()) for name in OPTION_NAMES}
    opts["extensions"] = draw(st.sampled_from(EXTENSION_SETS))
    opts["undefined"] = draw(st.sampled_from(UNDEFINED_KINDS))  # by name: both engines have each
    choices = Choices(draw(st.binary(min_size=120, max_size=600)))
    return TemplateBuilder(choices, opts["extensions"], edges=edges, expr_depth=expr_depth).body(depth, 5), opts


# ---------------------------------------------------------------------------- both engines

_jinja2_envs: dict = {}
_jinjamark_envs: dict = {}


def _key(opts):
    return tuple(sorted((k, tuple(v) if isinstance(v, tuple) else v) for k, v in opts.items()))


def jinja2_env(opts):
    key = _key(opts)
    if key not in _jinja2_envs:
        kind = getattr(jinja2, opts.get("undefined", "Undefined"))
        _jinja2_envs[key] = ImmutableSandboxedEnvironment(**{**opts, "undefined": kind})
    return _jinja2_envs[key]


def jinjamark_env(opts):
    key = _key(opts)
    if key not in _jinjamark_envs:
        kind = getattr(jinjamark, opts.get("undefined", "Undefined"))
        _jinjamark_envs[key] = jinjamark.Environment(**{**opts, "undefined": kind})
    return _jinjamark_envs[key]


def jinja2_outcome(source, opts, context):
    compiled = outcome(jinja2_env(opts).from_string, source)
    if compiled.raised:
        return "compile", compiled
    return "render", outcome(lambda: compiled.value.render(**copy.deepcopy(context)))


def is_template_error(result: Outcome, kind: type = jinjamark.TemplateError) -> bool:
    return isinstance(result.error, kind)


def assert_same_as_jinja2(source: str, opts: dict, context: dict = CONTEXT, marked: bool = False):
    """Same text as Jinja2, or both raise; what Jinja2 refuses to compile, jinjamark refuses too.

    marked: render the context marked as input, to parts, and compare the joined text.
    """
    stage, want = jinja2_outcome(source, opts, context)
    compiled = outcome(jinjamark_env(opts).from_string, source)
    if stage == "compile" and not isinstance(want.error, (jinja2.TemplateSyntaxError, SyntaxError)):
        # Jinja2's optimizer folds constant subexpressions while compiling, so with StrictUndefined
        # `{% elif {'k': 1}.a and x %}` fails to compile even in a branch never taken. That is an
        # artifact of its compiler, not the language: there is no verdict to compare with.
        return
    if stage == "compile":
        got = compiled if compiled.raised else outcome(compiled.value.render, copy.deepcopy(context))
        if type(want.error) is jinja2.TemplateSyntaxError:  # a syntax error proper: at parse time
            ok = is_template_error(compiled, jinjamark.TemplateSyntaxError)
        else:  # other compile-time refusals (assertions, Python's own): at parse or render time
            ok = is_template_error(got)
        assert ok, f"Jinja2 refuses to compile it ({want.describe()}); jinjamark: " + (
            f"from_string raised {compiled.describe()}" if compiled.raised else f"render gave {got.describe()}")
        return
    if compiled.raised:
        raise AssertionError(f"Jinja2 compiles this template; jinjamark: {compiled.describe()}") from compiled.error
    data = jinjamark.mark_input(copy.deepcopy(context)) if marked else copy.deepcopy(context)
    if marked:
        got = outcome(lambda: "".join(p.text for p in compiled.value.render_parts(data)))
    else:
        got = outcome(compiled.value.render, data)
    if want.raised:
        ok = is_template_error(got)
        assert ok, f"Jinja2 raised {want.describe()}; jinjamark gave {got.describe()}"
    elif got.raised:
        raise AssertionError(f"Jinja2 renders {want.value!r}; jinjamark raised") from got.error
    else:
        assert got.value == want.value


# ---------------------------------------------------------------------------- the tests

@pytest.mark.parametrize("marked", [False, True])
@pytest.mark.parametrize("source", SAFE_SUMS)
def test_sums_with_safe_text_render_as_jinja2(source, marked):
    assert_same_as_jinja2(source, {}, marked=marked)


PHASES = tuple(Phase) if os.environ.get("JINJAMARK_SHRINK") == "1" else (Phase.explicit, Phase.reuse, Phase.generate)

@pytest.mark.filterwarnings("ignore::SyntaxWarning")  # Jinja2's generated code for `1[0]` and the like
@settings(max_examples=2000, deadline=None, suppress_health_check=list(HealthCheck), phases=PHASES)
@given(case=cases())
def test_generated_templates_render_as_jinja2(case):
    assert_same_as_jinja2(*case)


@settings(max_examples=1000, deadline=None, suppress_health_check=list(HealthCheck), phases=PHASES)
@given(case=cases(depth=4, edges=False, expr_depth=0))
def test_generated_template_structure_and_whitespace_match_jinja2(case):
    # Simple expressions, deeper nesting of tags: whitespace control and scoping rules.
    assert_same_as_jinja2(*case)


@pytest.mark.filterwarnings("ignore::SyntaxWarning")
@settings(max_examples=1000, deadline=None, suppress_health_check=list(HealthCheck), phases=PHASES)
@given(source=expressions())
def test_generated_expressions_evaluate_as_jinja2(source):
    assert_same_as_jinja2(source, {})


@pytest.mark.filterwarnings("ignore::SyntaxWarning")
@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck), phases=PHASES)
@given(case=cases(depth=2, edges=False))
def test_input_marks_never_change_the_rendered_text(case):
    # The context is marked as input and rendered to parts; joined, they are Jinja2's output.
    assert_same_as_jinja2(*case, marked=True)


WHITESPACE_CASES = [
    "a\n  {% if yes %}\n    b\n  {% endif %}\nc\n",
    "a  {%- if yes -%}  b  {%- endif -%}  c",
    "  {%+ if yes %}\nx\n  {%+ endif +%}\ny",
    "{% for x in xs %}\n  {{ x }}\n{% endfor %}\n",
    "  {# c #}\nx\n  {#- c -#}  y  {#+ c #}\n",
    "a\r\nb\r\n  {% if yes %}\r\nc\r\n  {% endif %}\r\n",
    "{{- ' a ' -}}  \n  {{ 'b' }}\n\n",
    "x  \t{% raw -%}  {{ y }}  {%- endraw %}\t\nz",
    "\n\n{% set s1 %}\n  q\n{% endset %}\n{{ s1 }}\n",
    "{% macro m1(p) -%}\n  [{{ p }}]\n{%- endmacro %}\n{{ m1(1) }}  {{ m1(2) }}\n",
]


@pytest.mark.parametrize("trim", [False, True])
@pytest.mark.parametrize("lstrip", [False, True])
@pytest.mark.parametrize("keep", [False, True])
@pytest.mark.parametrize("source", WHITESPACE_CASES)
def test_whitespace_control_matches_jinja2_under_every_option(source, trim, lstrip, keep):
    assert_same_as_jinja2(source, dict(trim_blocks=trim, lstrip_blocks=lstrip, keep_trailing_newline=keep))


@pytest.mark.filterwarnings("ignore::SyntaxWarning")
@settings(max_examples=500, deadline=None, suppress_health_check=list(HealthCheck), phases=PHASES)
@given(case=cases(depth=2))
def test_generated_templates_render_as_jinja2_with_autoescaping(case):
    """The generated templates again, with `autoescape=True`: every filter, test, method and
    operator on escaped and safe text (interpreter/evaluation/autoescape.py)."""
    source, opts = case
    assert_same_as_jinja2(source, {**opts, "autoescape": True})
    assert_same_as_jinja2(source, {**opts, "autoescape": True}, marked=True)  # escaping marked text
