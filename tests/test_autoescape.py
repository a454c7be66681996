"""Autoescaping as Jinja2 3.1 has it: `Environment(autoescape=...)`, `select_autoescape`, the
`{% autoescape %}` tag, and what is safe where (macros, caller, block set, filter blocks, `~`,
join / replace / xmlattr / urlize), compared with Jinja2's SandboxedEnvironment; and input marks
through escaping (an entity is input where the character it stands for was)."""
from __future__ import annotations

import jinja2
import pytest
from hypothesis import given, settings, strategies as st
from jinja2.sandbox import SandboxedEnvironment

import jinjamark
from conftest import outcome

CONTEXT = {"s": "<a&'\">", "xs": ["<", "b"], "flag": True, "off": 0}

CASES = {
    "print": "{{ s }}|{{ s|safe }}|{{ s|e }}|{{ 1 }}|{{ none }}|{{ [s] }}|{{ undefined_name }}",
    "tag on": "{% autoescape true %}{{ s }}{% endautoescape %}{{ s }}",
    "tag off": "{% autoescape false %}{{ s }}{% endautoescape %}{{ s }}",
    "tag from a variable": "{% autoescape flag %}{{ s }}{% endautoescape %}{% autoescape off %}{{ s }}{% endautoescape %}",
    "tag is a frame": "{% autoescape true %}{% set q = 1 %}{% endautoescape %}{{ q }}",
    "nested tags": "{% autoescape true %}{{ s }}{% autoescape false %}{{ s }}{% endautoescape %}{{ s }}{% endautoescape %}",
    "macro": "{% macro m(x) %}<b>{{ x }}</b>{% endmacro %}{{ m(s) }}|{{ m(s)|upper }}|{% set y = m(s) %}{{ y }}",
    "macro defined in the tag": "{% autoescape true %}{% macro k() %}{{ s }}{% endmacro %}"
                                "{% autoescape false %}{{ k() }}{{ k() + '<' }}{% endautoescape %}{% endautoescape %}",
    "macro result added to text": "{% macro m() %}<{% endmacro %}{{ m() + '<' }}|{{ m() ~ '<' }}",
    "block set": "{% set x %}<i>{{ s }}</i>{% endset %}{{ x }}|{{ x|length }}",
    "block set with a filter": "{% set x | upper %}<i>{{ s }}</i>{% endset %}{{ x }}",
    "block set filtered to a number": "{% set j | length %}abc{% endset %}{{ j }}|{{ j ~ 1 }}|{{ j is string }}",
    "safe input operations": "{{ (s|e) * 2 }}|{{ ((s|e) * 2)|e }}|{{ (s|e).upper() }}|{{ (s|e)[0:3] }}"
                             "|{{ (s|e).split('&')|join(',') }}|{{ (s|e).unescape() }}|{{ (s|e).striptags() }}",
    "tilde": "{{ s ~ '<' }}|{{ (s|safe) ~ '<' }}|{% set z = (s|safe) ~ s %}{{ z }}|{% set w = s ~ s %}{{ w }}",
    "plus": "{{ s + '<' }}|{{ (s|safe) + s }}|{{ '<' + (s|safe) }}",
    "filter block": "{% filter upper %}{{ s }}<{% endfilter %}",
    "join": "{{ xs|join('<br>') }}|{{ xs|join('<br>'|safe) }}|{{ [s|safe, s]|join(',') }}",
    "replace": "{{ s|replace('<', '[') }}|{{ s|replace('<', '<em>'|safe) }}|{{ (s|safe)|replace('a', '<') }}",
    "xmlattr and urlize": "{{ {'a': s}|xmlattr }}|{{ 'see http://x.org/<' | urlize }}",
    "recursive loop": "{% for i in [[1], 2] recursive %}<{% if i is iterable %}{{ loop(i) }}{% else %}{{ s }}{% endif %}{% endfor %}",
    "caller": "{% macro w() %}[{{ caller() }}]{% endmacro %}{% call w() %}{{ s }}<{% endcall %}",
    "other filters": "{{ s|striptags }}|{{ s|forceescape }}|{{ '%s'|format(s) }}|{{ s|center(9) }}|{{ s|indent(2) }}",
    "more filters": "{{ s|tojson }}|{{ s|string }}|{{ s|list|first }}|{{ s|truncate(3) }}|{{ s|wordwrap(2) }}",
    "methods": "{% set ns = namespace(v=s) %}{{ ns.v }}|{{ s.upper() }}|{{ s[0] }}|{{ s|title }}|{{ s.format() }}",
    "safe methods": "{{ (s|safe).upper() }}|{{ ('<%s>'|safe) % s }}|{{ ('{}'|safe).format(s) }}",
}


def render(lib, source: str, autoescape) -> object:
    env = SandboxedEnvironment(autoescape=autoescape) if lib is jinja2 else jinjamark.Environment(autoescape=autoescape)
    return outcome(lambda: env.from_string(source).render(**CONTEXT))


@pytest.mark.parametrize("autoescape", [False, True], ids=["off", "on"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_as_jinja2(case, autoescape):
    want, got = render(jinja2, CASES[case], autoescape), render(jinjamark, CASES[case], autoescape)
    assert not want.raised, want.describe()
    assert got.value == want.value, got.describe()


TEMPLATES = {
    "base.html": "<p>{% block b %}{{ s }}{% endblock %}</p>{{ s }}",
    "child.html": "{% extends 'base.html' %}{% block b %}[{{ super() }}|{{ s }}]{% endblock %}",
    "inc.txt": "{{ s }}",
    "page.html": "{% include 'inc.txt' %}|{% import 'm.txt' as m %}{{ m.f(s) }}|{{ m }}|"
                 "{% from 'm.html' import g %}{{ g(s) }}",
    "plain.txt": "{% from 'm.html' import g %}{{ g(s) }}|{{ g(s) + '<' }}",
    "m.txt": "{% macro f(x) %}<{{ x }}>{% endmacro %}M{{ s }}",
    "m.html": "{% macro g(x) %}<{{ x }}>{% endmacro %}",
    "self.html": "{% block a %}{{ s }}{% endblock %}|{{ self.a() }}|"
                 "{% autoescape false %}{{ self.a() }}{{ s }}{% endautoescape %}",
    "txt.txt": "{% autoescape true %}{% include 'inc.txt' %}{{ s }}{% endautoescape %}",
}


@pytest.mark.parametrize("setting", ["select", "on", "off"])
@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_across_templates_as_jinja2(name, setting):
    """Each template escapes as its own name says (select_autoescape: .html yes, .txt no); a
    macro's body as where it is defined, its result is safe where the caller escapes."""
    settings = {"select": (jinja2.select_autoescape(), jinjamark.select_autoescape()),
                "on": (True, True), "off": (False, False)}
    j_setting, m_setting = settings[setting]
    j_env = SandboxedEnvironment(loader=jinja2.DictLoader(TEMPLATES), autoescape=j_setting)
    m_env = jinjamark.Environment(loader=jinjamark.DictLoader(TEMPLATES), autoescape=m_setting)
    want = outcome(lambda: j_env.get_template(name).render(**CONTEXT))
    got = outcome(lambda: m_env.get_template(name).render(**CONTEXT))
    assert not want.raised, want.describe()
    assert got.value == want.value, got.describe()


@pytest.mark.parametrize("name", [None, "a.html", "a.HTM", "a.xml", "a.txt", "a", "a.html.txt"])
@pytest.mark.parametrize("options", [{}, {"disabled_extensions": ["txt"], "default": True},
                                     {"enabled_extensions": [".txt"], "default_for_string": False}])
def test_select_autoescape_as_jinja2(name, options):
    assert jinjamark.select_autoescape(**options)(name) == jinja2.select_autoescape(**options)(name)


def test_operations_on_safe_input_keep_it_safe_and_input():
    """`(u|e) * 2`, `.upper()`, slicing: safe as Markup's would be, and still input."""
    env = jinjamark.Environment()
    source = "{{ ((u|e) * 2)|e }}|{{ (u|e).upper()|e }}|{{ (u|e)[1:3]|e }}"
    parts = env.from_string(source).render_parts(u=jinjamark.mark_input("<b>"))
    assert [(p.text, p.is_input) for p in parts] == [
        ("&lt;b&gt;&lt;b&gt;", True), ("|", False), ("&LT;B&GT;", True), ("|", False), ("lt", True)]
    assert "".join(p.text for p in parts) == SandboxedEnvironment().from_string(source).render(u="<b>")


def test_escaped_input_stays_input_and_template_text_is_never_escaped():
    env = jinjamark.Environment(autoescape=True)
    parts = env.from_string("<{{ u }}>{{ u|safe }}{% macro m(x) %}<b>{{ x }}</b>{% endmacro %}{{ m(u) }}") \
        .render_parts(u=jinjamark.mark_input("<|x|>&"))
    assert [(p.text, p.is_input) for p in parts] == [
        ("<", False), ("&lt;|x|&gt;&amp;", True), (">", False), ("<|x|>&", True), ("<b>", False),
        ("&lt;|x|&gt;&amp;", True), ("</b>", False)]



_ENTITIES = {"&": "&amp;", ">": "&gt;", "<": "&lt;", "'": "&#39;", '"': "&#34;"}


@given(st.lists(st.tuples(st.text(alphabet="ab&<>'\"é\n", max_size=6), st.booleans()), max_size=8))
@settings(max_examples=300, deadline=None)
def test_escaping_marked_text_escapes_each_character_with_its_own_flag(runs):
    # the reference, one character at a time: its entity (or itself) keeps the character's flag
    from jinjamark.values import marks
    from jinjamark.values.markup import escape
    value = marks.concat([jinjamark.mark_input(text) if flag else text for text, flag in runs])
    want = [(_ENTITIES.get(c, c), flag) for text, flag in runs for c in text]
    got = escape(value)
    assert str.__str__(got) == "".join(text for text, _ in want)
    flags = [flag for text, flag in want for _ in text]
    spans = marks.spans_of(got)  # each input run once: disjoint, in order, none touching
    assert [any(a <= i < b for a, b in spans) for i in range(len(got))] == flags
    assert all(b < a for (_, b), (a, _) in zip(spans, spans[1:]))
    assert hasattr(got, "__html__")


def test_off_by_default_and_in_the_chat_profile():
    assert jinjamark.Environment().from_string("{{ '<' }}").render() == "<"
    assert jinjamark.chat_environment().from_string("{{ '<' }}").render() == "<"
    assert jinjamark.chat_environment().autoescape is False


def test_an_unclosed_tag_is_jinja2_s_syntax_error():
    source = "{% autoescape true %}{{ x }}"
    with pytest.raises(jinja2.TemplateSyntaxError) as want:
        jinja2.Environment().from_string(source)
    with pytest.raises(jinjamark.TemplateSyntaxError) as got:
        jinjamark.Environment().from_string(source)
    assert got.value.message == want.value.message
