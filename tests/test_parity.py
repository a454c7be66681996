"""Broken templates get Jinja2's verdict: the same error type, message and line number.

Jinja2 is the oracle (tests only). Each section pins one kind of mistake: a tag that takes no
argument given one, blocks left open or closed in the wrong order (with a property test over
random nestings, text, comments, whitespace control, line endings and delimiter sets), mistakes
inside a tag, trailing commas where Jinja2 takes none, and names, whose characters are Jinja2's
exactly (checked over every code point, and with random names).
"""
from __future__ import annotations

import re
import sys

import jinja2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jinja2._identifier import pattern as jinja2_name  # test-only: the oracle's table

import jinjamark
from jinjamark.grammar.parser import get_parser
from oracle import Generation
from test_delimiters import SETS

OURS = ("loopcontrols", "do", "generation")
THEIRS = (Generation, "jinja2.ext.loopcontrols", "jinja2.ext.do")


def verdict(engine, source: str, context: dict = None, render: bool = False, **options):
    """("ok", output) or (error type, message, line) for one engine (jinja2 or jinjamark)."""
    extensions = THEIRS if engine is jinja2 else OURS
    try:
        template = engine.Environment(extensions=extensions, **options).from_string(source)
        return ("ok", template.render(context or {}) if render else "")
    except engine.TemplateSyntaxError as e:
        return ("TemplateSyntaxError", e.message, e.lineno)


def assert_jinja2_verdict(source: str, context: dict = None, render: bool = False, **options):
    theirs = verdict(jinja2, source, context, render, **options)
    if theirs[0] == "ok":  # a bound method prints without its address (COMPATIBILITY.md, Output)
        theirs = ("ok", re.sub(r" at 0x[0-9a-f]+>", ">", theirs[1]))
    assert verdict(jinjamark, source, context, render, **options) == theirs, source


# ---------------------------------------------------------------------------- 1. loop controls
# Jinja2's `break` and `continue` take nothing: what follows is "expected token 'end of
# statement block', got ..." on the line of that token.

@pytest.mark.parametrize("source", [
    "{% for x in y %}{% break x %}{% endfor %}",
    "{% for x in y %}{% continue x %}{% endfor %}",
    "{% for x in y %}{% break 1 %}{% endfor %}",
    "{% for x in y %}{% break 2.5 %}{% endfor %}",
    "{% for x in y %}{% continue 'label' %}{% endfor %}",
    "{% for x in y %}{% break (x) %}{% endfor %}",
    "{% for x in y %}{% break - %}{% endfor %}",
    "{% for x in y %}\n{% continue\n\nx %}{% endfor %}",
    "{% for x in y %}{% break %}{% break; %}{% endfor %}",
    "{% for x in y %}{% break",
    "{% for x in y %}{% break }}{% endfor %}",
    "{% for x in y %}{%- break x -%}{% endfor %}",
    "{% for x in y %}{% break x",
])
def test_loop_controls_refuse_an_argument_in_jinja2_words(source):
    assert_jinja2_verdict(source)


# ---------------------------------------------------------------------------- 2. open blocks
# At the end of the template Jinja2 reports the line of the last token its parser read, which is
# never a comment, a raw block's delimiters or text that whitespace control emptied; an end tag
# for another block is reported on the line of its name.

UNCLOSED = [
    "{% if x %}abc", "{% if x %}abc\n", "{% if x %}\n\n", "{% if x %}\n\n\n",
    "{% for a in b %}\n\n{% if c %}x{% endfor %}", "{% macro m() %}", "{% macro m() %}\n",
    "{% if a %}\n{% for b in c %}\n\n", "a\n{% if x %}\n\n\n", "{% if x %}\n{% endfor %}\n\n",
    "{% if x %}\n{# c #}\n", "{% if x -%}\n\n{# c #}", "{% if x %}{# a #}\n\n{#- c #}",
    "{% if x %}\n{% raw %}{% endraw %}\n{# c #}", "{% if x %}\n{% raw %}\nq\n{% endraw %}",
    "{% for a in b %}{%\nendif %}", "{% for a in b %}\n{%-\n\n  endif %}",
    "{% if x %}\n{{ y }}\n\n", "{% if x %}{{ y }}", "{% with %}\r\n\r\n", "{% if x %}\r\nq\r\n",
    "{% call m() -%}\n\n  ", "{% filter upper %}\n{% set v %}\n{% endfilter %}",
    "{% generation %}\n\n{% endfor %}\n", "{% if x %}\n{% else %}\n\n", "{% if x %}{% else %}{% else %}",
]


@pytest.mark.parametrize("source", UNCLOSED)
@pytest.mark.parametrize("options", [{}, {"trim_blocks": True, "lstrip_blocks": True},
                                     {"keep_trailing_newline": True}])
def test_blocks_left_open_are_reported_where_jinja2_reports_them(source, options):
    assert_jinja2_verdict(source, **options)


OPENERS = {"if": "if x", "for": "for a in b", "macro": "macro m()", "call": "call m()",
           "filter": "filter upper", "set": "set v", "with": "with", "generation": "generation"}
DELIMITERS = [{}, SETS["angle"], SETS["hash_lines"], SETS["latex"], SETS["parens"]]


@st.composite
def nestings(draw):
    """A random run of block tags (opened, closed, closed wrongly, continued with else,
    misspelled), text, comments, print statements and raw blocks, in one delimiter set, often
    left unclosed."""
    d = draw(st.sampled_from(DELIMITERS))
    bs, be = d.get("block_start_string", "{%"), d.get("block_end_string", "%}")
    vs, ve = d.get("variable_start_string", "{{"), d.get("variable_end_string", "}}")
    cs, ce = d.get("comment_start_string", "{#"), d.get("comment_end_string", "#}")
    line = d.get("line_statement_prefix")
    sign, space = st.sampled_from(["", "-", "+"]), st.sampled_from([" ", " ", "\n", "  "])

    def tag(body: str) -> str:
        if line and draw(st.booleans()):
            return f"\n{line} {body}\n"
        return f"{bs}{draw(sign)}{draw(space)}{body}{draw(space)}{draw(sign)}{be}"

    pieces, stack = [], []
    for action in draw(st.lists(st.sampled_from(["open", "open", "close", "close", "wrong", "else",
                                                 "text", "text", "other", "unknown"]),
                                min_size=1, max_size=10)):
        if action == "open":
            block = draw(st.sampled_from(sorted(OPENERS)))
            pieces.append(tag(OPENERS[block]))
            stack.append(block)
        elif action == "close" and stack:
            pieces.append(tag("end" + stack.pop()))
        elif action == "wrong":
            pieces.append(tag("end" + draw(st.sampled_from(sorted(OPENERS)))))
        elif action == "unknown":  # a misspelled tag, often right after a print statement
            before = draw(st.sampled_from(["", f"{vs} v {ve}", f"{vs} v -{ve}"]))
            pieces.append(before + tag(draw(st.sampled_from(["endfo", "endiff", "bogus", "els"]))))
        elif action == "else" and stack and stack[-1] in ("if", "for"):
            pieces.append(tag(draw(st.sampled_from(["else", "elif y"]))))
        elif action == "other":
            pieces.append(draw(st.sampled_from([
                f"{cs} c {ce}", f"{cs}- c -{ce}", f"{cs}\n{ce}", f"{vs} v {ve}", f"{vs}- v -{ve}",
                f"{bs} raw {be}{bs} endraw {be}", f"{bs} raw {be}\nq{bs} endraw {be}"])))
        else:
            pieces.append("".join(draw(st.lists(st.sampled_from(["a", " ", "\t", "\n", "\r\n", "b c"]),
                                                 max_size=5))))
    source = "".join(pieces) + draw(st.sampled_from(["", "\n", "\n\n", "\r\n", " "]))
    options = draw(st.sampled_from([{}, {"trim_blocks": True, "lstrip_blocks": True},
                                    {"keep_trailing_newline": True}]))
    return source, {**d, **options}


@settings(max_examples=600, deadline=None, suppress_health_check=list(HealthCheck))
@given(nestings())
def test_random_open_and_misclosed_blocks_get_jinja2s_message_and_line(case):
    source, options = case
    assert_jinja2_verdict(source, **options)


# ---------------------------------------------------------------------------- 3. inside a tag

@pytest.mark.parametrize("source", [
    # the tag cannot go on: what Jinja2's parser expected there
    "{% if x y %}{% endif %}", "{{ x y }}", "{{ 1 2 }}", "{% for x in y z %}{% endfor %}",
    "{% if x %}{% endif x %}", "{% if x %}{% else x %}{% endif %}", "{% set x = 1 2 %}",
    "{{ x.1a }}", "{{ x if y z }}", "{{ [1 2] }}", "{{ x[1 2] }}", "{{ {'a' 2} }}",
    "{{ {1: 2 3} }}", "{{ f(1 2) }}", "{{ x|f(1 2) }}", "{{ x is f(1 2) }}", "{{ (1 2) }}",
    "{{ x(a=1 2) }}", "{% macro m(a b) %}{% endmacro %}", "{% call(a b) m() %}{% endcall %}",
    "{% with a = 1 b %}{% endwith %}", "{% for x y %}{% endfor %}", "{% with a %}{% endwith %}",
    "{{ x is }}", "{{ x | }}", "{% macro m(1) %}{% endmacro %}", "{% if x %}{% endif %",
    # the template ends inside a tag
    "{% if x", "{{ x", "{% for x in", "{% for x in y", "{% for x", "{% for", "{{", "{{ x +",
    "{{ x |", "{{ x(", "{{ [1", "{{ {", "{% set x =", "{% set x", "{% macro m(", "{% macro m()",
    "{% if x %}{% else", "{% if x %}{% elif", "{% call m()", "{{ x.", "{{ x is", "{% with a",
    "{% for x in y %}{% break", "{{ x }", "{{ x\n\n", "{% if x\n+\n",
    # an expression is missing, or cannot start with this
    "{{ }}", "{% if %}{% endif %}", "{% for x in %}{% endfor %}", "{% set x = %}", "{% set %}",
    "{% for %}{% endfor %}", "{% if x %}{% elif %}{% endif %}", "{% do %}", "{{ x + }}",
    "{{ x if y else }}", "{{ x if }}", "{% with a = %}{% endwith %}", "{{ f(a=) }}",
    "{% for x in y if %}{% endfor %}", "{{ x. }}", "{{ x.+ }}", "{% with , %}{% endwith %}",
    # brackets: Jinja2's lexer refuses one that closes nothing, or the wrong one
    "{{ ( }}", "{{ [ }}", "{{ x[ }}", "{{ {1: }} }}", "{{ (1, }}", "{{ x ) }}", "{{ x ] }}",
    "{{ (x] }}", "{% if x }}", "{{ x %}", "{{ {'a': 1 }}", "{% if (x %}", "{{ (x %}",
    "{{ x $ }}", "x\r\n{{ x $ }}", "{{ x ² }}", "{{ x² }}",
    # assignment targets and calls
    "{% set true = 1 %}", "{% for none in x %}{% endfor %}", "{% set 1 = 2 %}",
    "{% for 'a' 'b' in x %}{% endfor %}", "{% with 1 = 2 %}{% endwith %}",
    "{% call x + y %}{% endcall %}", "{% call\nx + y %}{% endcall %}", "{% call x %}{% endcall %}",
    "{% call y %}{% endif %}", "{% call 's' %}{% endcall %}",
    # Jinja2 stops before: `not` not followed by `in`, an operator its lexer reads longer
    "{% if 's' not , x %}{% endif %}", "{{ x not y }}", "{% if x not %}{% endif %}", "{{ x not",
    "{% set x == 1 %}", "{% with x == 1 %}{% endwith %}", "{% set x <= 1 %}",
    # the tag's name
    "{%\nendif %}", "{%\n%}", "{% if x %}{%\n %}", "a\n{%- \n\nfrob %}",
])
def test_mistakes_inside_a_tag_get_jinja2s_message_and_line(source):
    assert_jinja2_verdict(source)


@pytest.mark.parametrize("source", [
    "{% for x, in y %}{% endfor %}", "{% for x, y, in z %}{% endfor %}", "{% set x, = 1, %}",
    "{% set x, y, = 1, 2 %}", "{% with a, = [1] %}{% endwith %}", "{% macro m(a,) %}{% endmacro %}",
    "{{ x[1,] }}", "{% call(a,) m() %}{% endcall %}",
    # where Jinja2 takes one
    "{% for (x,) in y %}{{ x }}{% endfor %}", "{% set (x,) = [1] %}{{ x }}", "{{ f(1,) }}",
    "{{ [1,] }}", "{{ (1,) }}", "{{ {1: 2,} }}", "{% for x in y, %}{{ x }}{% endfor %}",
    "{{ 1, }}", "{% set x = 1, %}{{ x }}", "{% set (a, b,) = (1, 2) %}{{ a }}{{ b }}",
])
def test_a_trailing_comma_is_taken_only_where_jinja2_takes_one(source):
    assert_jinja2_verdict(source, {"y": [(1,)], "z": [(1, 2)], "f": lambda *a: a}, render=True)


# ---------------------------------------------------------------------------- 4. names

def test_names_are_made_of_exactly_the_characters_jinja2_reads_as_names():
    # Jinja2's table: word characters and those that continue a Python identifier (Unicode 11)
    ours = re.compile(get_parser().lark.get_terminal("NAME").pattern.to_regexp())
    differ = [f"U+{cp:04X}" for cp in range(sys.maxunicode + 1)
              if bool(ours.fullmatch("a" + chr(cp))) != bool(jinja2_name.fullmatch("a" + chr(cp)))
              or (chr(cp) not in "0123456789"
                  and bool(ours.fullmatch(chr(cp))) != bool(jinja2_name.fullmatch(chr(cp))))]
    assert differ == []


MARKS = "\u0301\u0308\u0327\u093c\u0bcd\u200c\u200d\u00b7\u0387\u203f\u2118\u212e\ufe33\U000e0100"
NEWER_MARKS = "\u0898\u0b55\u0eba\u1abf\U0001e130"   # identifier characters after Unicode 11
NOT_IDENTIFIERS = "\u00b2\u00bd\u2160\u0662\u0967\u20dd\u00a0\u2003\u3000\u30fb\U0001f600\u00ab"
name_characters = st.one_of(
    st.sampled_from("abzAZ_019é名ﬁ"), st.sampled_from(MARKS), st.sampled_from(NEWER_MARKS),
    st.sampled_from(NOT_IDENTIFIERS),
    st.characters(blacklist_categories=("Cs", "Cc"),
                  blacklist_characters="".join(c for c in map(chr, range(128)) if not c.isalnum())))


@settings(max_examples=500, deadline=None, suppress_health_check=list(HealthCheck))
@given(name=st.text(name_characters, min_size=1, max_size=5))
def test_random_names_are_read_as_jinja2_reads_them(name):
    context = {name: "n"}
    for source in (f"{{{{ {name} }}}}", f"{{% set {name} = 'v' %}}{{{{ {name} }}}}",
                   f"{{{{ d.{name} }}}}", f"{{% for {name} in [1] %}}{{{{ {name} }}}}{{% endfor %}}"):
        assert_jinja2_verdict(source, {**context, "d": context}, render=True)


@pytest.mark.parametrize("source", [
    "{% set e\u0301 = 3 %}{{ e\u0301 }}", "{{ a·b }}", "{{ x\u20dd }}", "{{ \u0301 }}", "{{ ٢x }}",
    "{{ 1٢ }}", "{{ ٢ }}", "{{\u00a0x\u2003}}", "{{ x\u0898 }}", "{{ ℘ }}", "{{ a\u200db }}",
])
def test_names_with_marks_and_other_unicode_are_read_as_jinja2_reads_them(source):
    assert_jinja2_verdict(source, {"e\u0301": 1, "a·b": 2, "x": 3, "℘": 4, "a\u200db": 5}, render=True)


def test_a_float_with_other_digits_is_refused_where_jinja2_fails():
    # Jinja2's literal_eval raises Python's SyntaxError; jinjamark a TemplateSyntaxError
    with pytest.raises(SyntaxError, match="invalid character '٢'"):
        jinja2.Environment().from_string("{{ ٢.5 }}")
    with pytest.raises(jinjamark.TemplateSyntaxError, match="invalid character '٢'"):
        jinjamark.Environment().from_string("{{ ٢.5 }}")
