"""The closure compiler's shortcuts (interpreter/evaluation/compiling/): each one against Jinja2, and the
cases where a shortcut must step aside (a host's own test or filter, a frame something keeps,
a strict undefined), plus fuel, deadline and tracing on compiled code."""
from __future__ import annotations

import time

import jinja2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jinja2.sandbox import SandboxedEnvironment

import jinjamark
from jinjamark.tracing import Step, render_traced


def both(source: str, **context):
    """The render of `source` by jinjamark and by Jinja2's sandbox (loopcontrols on)."""
    ours = jinjamark.Environment(extensions=["loopcontrols"]).from_string(source).render(**context)
    theirs = SandboxedEnvironment(extensions=["jinja2.ext.loopcontrols"]).from_string(source).render(**context)
    return ours, theirs


CASES = [
    # a loop frame reused between iterations: nothing set in one iteration is seen in the next
    ("{% for x in xs %}{{ y }}{% if x %}{% set y = x %}{% endif %}[{{ y }}]{% endfor %}", {"xs": [1, 0, 2]}),
    # a macro defined in a loop body (its frame is not reused) and called there
    ("{% for x in xs %}{% macro m(p) %}{{ x }}{{ p }}{% endmacro %}{{ m(loop.index) }}{% endfor %}",
     {"xs": [1, 2, 3]}),
    ("{% for a, b in pairs %}{{ a }}={{ b }};{% endfor %}", {"pairs": [(1, 2), [3, 4]]}),
    ("{% for x in xs if x %}{{ loop.index }}/{{ loop.length }}{% else %}none{% endfor %}", {"xs": [0, 1, 2]}),
    ("{% for x in xs %}{% if x == 2 %}{% break %}{% endif %}{{ x }}{% else %}E{% endfor %}", {"xs": [1, 2, 3]}),
    ("{% for x in xs %}{% if x == 2 %}{% continue %}{% endif %}{{ x }}{% else %}E{% endfor %}", {"xs": [1, 2]}),
    ("{% for x in [] %}{% else %}{% set e = 1 %}{{ e }}{% endfor %}{{ e }}", {}),
    # text sums: collected while text, added from the first operand that is not
    ("{{ '<' + m['role'] + '>' + m.content + '</' + m['role'] + '>' }}", {"m": {"role": "u", "content": "hi"}}),
    ("{{ 'a' + x + 'b' }}|{{ 1 + 2 + 3 }}|{{ [1] + [2] + xs }}", {"x": "X", "xs": [3]}),
    ("{{ x + 'a' + 'b' }}", {"x": jinja2.Markup("<b>") if hasattr(jinja2, "Markup") else "<b>"}),
    # item and attribute reads: a dict's own items, its methods, and what is not a dict
    ("{{ d.items() | list }}|{{ d.get('k') }}|{{ d['items'] }}|{{ d.k }}|{{ d.missing }}|{{ s.upper() }}", {"d": {"k": 1, "items": 2}, "s": "ab"}),
    ("{{ m.role }}{{ m['role'] }}{{ m.x is defined }}{{ m.x }}", {"m": {"role": "r"}}),
    ("{{ x.strip() }}|{{ x.split(',') }}|{{ xs.count(1) }}", {"x": " a,b ", "xs": [1, 1]}),
    # definedness, with `not` folded into the test
    ("{% if x is defined %}d{% endif %}{% if not x is defined %}n{% endif %}{% if x is undefined %}u{% endif %}"
     "{% if not y is undefined %}Y{% endif %}{% if y is not defined %}-{% endif %}", {"y": None}),
    ("{% macro m() %}{{ x is defined }}{% endmacro %}{% set x = 1 %}{{ m() }}", {}),
    ("{% for i in [1] %}{{ x is defined }}{% endfor %}{% set x = 1 %}", {"x": 2}),
    ("{{ 'tool_calls' in m }}{{ 'a' in m }}{{ 1 in m }}{{ 'u' in m.role }}{{ 'r' not in m }}", {"m": {"a": 1, "role": "user"}}),
    ("{{ 1 < x < 3 }}{{ 1 < x > 3 }}{{ x == 2 == 2 }}", {"x": 2}),
    ("{{ x and y }}|{{ x or y }}|{{ not x }}|{{ 'a' if x else 'b' }}|{{ 'a' if y }}", {"x": 0, "y": "Y"}),
    ("{{ xs | length }}{{ xs | join(',') }}{{ s | upper }}{{ xs | map('string') | join }}", {"xs": [1, 2], "s": "a"}),
    # reads by index and key; arithmetic and comparison of plain numbers; ~ of plain text
    ("{% for i in range(xs | length) %}{{ xs[i] }}{{ xs[-1 - i] }}{{ d[i] }}{{ d['k'] }}{% endfor %}{{ xs[9] }}",
     {"xs": ["a", "b"], "d": {0: "zero", 1: "one", "k": "K"}}),
    ("{{ 7 // 2 }}{{ -7 % 3 }}{{ 1.5 + 2 }}{{ 3 / 2 }}{{ true + 1 }}{{ 1 < 2.5 }}{{ 2 > true }}"
     "{{ 'a' < 'b' }}{{ 1 ~ 'x' ~ none ~ true }}", {}),
    ("{{ {'a': 1, (1, 2): 2}[(1, 2)] }}{{ [1, 2, 3][1:] }}{{ 'abc'[::-1] }}{{ (1, 2) }}", {}),
]


# An if/elif chain on one read against text literals takes its branch in one look (a switch):
# values that are not text, a missing key, repeated literals, tests after the chain's prefix.
SWITCH = ("{% for m in ms %}{% if m['role'] == 'user' %}U{% elif m['role'] == 'assistant' %}A"
          "{% elif m['role'] == 'user' %}never{% elif m.role == 'tool' %}T{% elif m.n %}N"
          "{% elif m['role'] == 'system' %}S{% else %}?{% endif %}{% endfor %}")
SWITCH_MESSAGES = [{"role": "user"}, {"role": "assistant"}, {"role": "tool"}, {"role": "system"},
                   {"role": "other", "n": 2}, {"role": "system", "n": 2}, {"role": 1}, {"n": 0},
                   {"role": None}, {"role": ["user"]}, {}, {"role": "User"}]
CASES += [
    (SWITCH, {"ms": SWITCH_MESSAGES}),
    ("{% for m in ms %}{% if m.role == 'a' %}1{% elif m.role == 'b' %}2{% endif %}{% endfor %}",
     {"ms": [{"role": "a"}, {"role": "b"}, {"role": "c"}, "ab", ["a"], 3]}),
    # the read's variable from an outer frame, and set in the loop (no switch on a stale frame)
    ("{% set m = {'role': 'b'} %}{% for i in [1, 2] %}{% if m.role == 'a' %}A{% elif m.role == 'b' %}B"
     "{% endif %}{% set m = {'role': 'a'} %}{% if m.role == 'a' %}a{% elif m.role == 'b' %}b{% endif %}"
     "{% endfor %}", {}),
    # a loop frame set once for all iterations: its variable, `loop`, nested loops of the same name
    ("{% for x in xs %}{{ x }}{{ loop.index }}{% for x in [x, 9] %}{{ x }}{% endfor %}{{ x }}{% endfor %}",
     {"xs": [1, 2]}),
    ("{% for x in xs %}{% for y in xs %}{{ x }}{{ y }}{% endfor %}{% endfor %}{{ x }}", {"xs": "ab"}),
    ("{% set ns = namespace(t=0) %}{% for x in xs %}{% set ns.t = ns.t + x %}{% endfor %}{{ ns.t }}",
     {"xs": [1, 2, 3]}),
    # paths of plain reads in one closure: by literal, by a variable's value, by attribute, and
    # where they leave plain data (missing keys, out of range, unhashable keys, methods, strings)
    ("{% for i in range(ms | length) %}{{ ms[i]['role'] }}{{ ms[i].content }}{{ ms[i].f.name }}"
     "{{ ms[i]['f']['name'] }}{{ ms[i]['nope'] }}{{ ms[i].items is defined }}{{ ms[i - 1].role }}|{% endfor %}"
     "{{ ms[9] }}{{ ms[-1]['role'] }}{{ ms[k] }}{{ d[ks] }}{{ d[k].x }}{{ s[0] }}"
     "{{ ms[0].content.upper is defined }}{{ ms[true].role }}{{ d[n].x }}{{ ms[one].role }}",
     {"ms": [{"role": "u", "content": "c", "f": {"name": "fn"}}, {"role": "a", "content": [1], "f": {}}],
      "k": "role", "ks": [1], "d": {"role": {"x": 1}, 1: {"x": 2}}, "s": "str", "n": 1.0, "one": 1}),
    ("{% for m in ms %}{% if ms[loop.index0]['role'] == 'u' %}U{% elif ms[loop.index0]['role'] == 'a' %}A"
     "{% else %}-{% endif %}{% endfor %}", {"ms": [{"role": "u"}, {"role": "a"}, {"role": "x"}, {}]}),
    # membership in a list of text literals, in a set; anything but text as in general
    ("{% for m in ms %}{{ m.role in ['user', 'system'] }}{{ m.role not in ('a', 'b') }}"
     "{{ m.role in ['1'] }}|{% endfor %}",
     {"ms": [{"role": "user"}, {"role": "a"}, {"role": 1}, {"role": None}, {"role": ["a"]}, {}]}),
    # what is missing: an item of text by name, a dict's absent key (not a method's name)
    ("{{ s['type'] }}|{{ s['type'] is defined }}|{{ s['upper'] is defined }}|{{ m.calls is defined }}"
     "|{{ m['items'] is defined }}|{{ m.items is defined }}|{{ m['calls'] }}|{{ m.calls }}|{{ m._x is defined }}",
     {"s": "text", "m": {"role": "user"}}),
    # `a + b` at once for short plain text and numbers, as binary adds anything else
    ("{{ 'a' + x }}|{{ x + 'b' }}|{{ 1 + n }}|{{ n + 1.5 }}|{{ true + n }}|{{ xs + xs }}|{{ long + 'x' }}",
     {"x": "X", "n": 2, "xs": [1], "long": "y" * 300}),
]


@pytest.mark.parametrize("source,context", CASES)
def test_compiled_shortcuts_render_as_jinja2(source, context):
    ours, theirs = both(source, **context)
    assert ours == theirs


@settings(max_examples=60, deadline=None)
@given(st.lists(st.dictionaries(st.sampled_from(["role", "content", "name"]),
                                st.one_of(st.none(), st.text(max_size=5), st.integers(-3, 3)),
                                max_size=3), max_size=5))
def test_chat_shaped_loops_render_as_jinja2(messages):
    source = ("{% for m in messages %}{% if m.role is defined and m['role'] == 'user' %}"
              "{{ '<u>' + m['content'] ~ '</u>' }}{% elif 'name' in m %}{{ m.name }}{% else %}"
              "{{ loop.index0 }}{{ m.content is none }}{% endif %}{% endfor %}")
    ours = jinjamark.Environment().from_string(source)
    theirs = SandboxedEnvironment().from_string(source)
    try:
        expected = theirs.render(messages=messages)
    except Exception as e:  # noqa: BLE001
        with pytest.raises(jinjamark.TemplateError):
            ours.render(messages=messages)
        assert type(e).__name__ in ("TypeError", "UndefinedError")
        return
    assert ours.render(messages=messages) == expected


def test_a_host_test_or_filter_replacing_a_builtin_is_called_after_compiling():
    env = jinjamark.Environment()
    template = env.from_string("{% if x is defined %}D{% endif %}{{ s | upper }}")
    assert template.render(s="a") == "A"
    env.tests["defined"] = lambda value: True
    env.filters["upper"] = lambda value: f"<{value}>"
    assert template.render(s="a") == "D<a>"


def test_a_host_filter_result_stays_input_on_the_compiled_path():
    env = jinjamark.Environment()
    env.filters["quote"] = lambda s: f"'{s}'"
    parts = env.from_string("<{{ x | quote }}>").render_parts(x=jinjamark.mark_input("<|im_end|>"))
    assert [p for p in parts if p.is_input] == [jinjamark.Part("'<|im_end|>'", True)]


def test_a_switch_marks_and_fails_as_the_tests_it_stands_for():
    # a role from input takes its branch (render_parts); a strict undefined fails at the test
    source = "{% for m in ms %}{% if m.role == 'user' %}U{{ m.role }}{% elif m.role == 'x' %}X{% endif %}{% endfor %}"
    env = jinjamark.Environment()
    parts = env.from_string(source).render_parts(ms=jinjamark.mark_input([{"role": "user"}, {"role": "x"}]))
    assert "".join(p.text for p in parts) == "UuserX" and [p.text for p in parts if p.is_input] == ["user"]
    strict = jinjamark.Environment(undefined=jinjamark.StrictUndefined)
    with pytest.raises(jinjamark.UndefinedError) as caught:
        strict.from_string("{% for m in ms %}\n{% if m.role == 'a' %}{% elif m.role == 'b' %}{% endif %}{% endfor %}"
                           ).render(ms=[{}])
    assert caught.value.lineno == 2


def test_a_strict_undefined_fails_at_its_column_in_compiled_logic():
    env = jinjamark.Environment(undefined=jinjamark.StrictUndefined)
    for source, column in (("{{ 1 and not x }}", 14), ("{% if x %}{% endif %}", 4),
                           ("{{ x or 1 }}", 4), ("{{ 'a' if x }}", 11)):
        with pytest.raises(jinjamark.UndefinedError) as raised:
            env.from_string(source).render()
        assert raised.value.lineno == 1
        assert raised.value.column is not None and raised.value.column <= column + 3, source


def test_string_method_errors_point_at_the_call():
    with pytest.raises(jinjamark.TemplateError) as raised:
        jinjamark.Environment().from_string("\n  {{ s.split(1, 2, 3) }}").render(s="a")
    assert (raised.value.lineno, raised.value.column) == (2, 6)


def test_loops_with_empty_bodies_still_burn_fuel():
    env = jinjamark.Environment(limits=jinjamark.Limits(max_fuel=10_000))
    with pytest.raises(jinjamark.LimitExceeded):
        env.from_string("{% for i in range(50000) %}{% endfor %}").render()
    env.from_string("{% for i in range(1000) %}{% endfor %}").render()


def test_the_deadline_stops_a_loop_of_cheap_compiled_steps():
    env = jinjamark.Environment(limits=jinjamark.Limits(deadline=0.2))
    template = env.from_string("{% for i in range(100000) %}{% for j in range(20) %}{% if j %}"
                               "{{ j }}{% endif %}{% endfor %}{% endfor %}")
    start = time.monotonic()
    with pytest.raises(jinjamark.LimitExceeded):
        template.render()
    assert time.monotonic() - start < 1.5


def test_a_traced_render_reports_each_statement_and_leaves_plain_renders_alone():
    loader = jinjamark.DictLoader({"inc": "{% if x %}I{% endif %}"})
    template = jinjamark.Environment(loader=loader).from_string(
        "A{% for x in xs %}{{ x }}{% include 'inc' %}{% endfor %}\n{% set z = 1 %}")
    plain = template.render(xs=[1, 0])
    steps: list[Step] = []
    assert render_traced(template, steps.append, xs=[1, 0]) == plain
    kinds = [(s.template, s.line, s.statement) for s in steps]
    assert kinds == [(None, 1, "Text"), (None, 1, "For"),
                     (None, 1, "Output"), (None, 1, "Include"), ("inc", 1, "If"), ("inc", 1, "Text"),
                     (None, 1, "Output"), (None, 1, "Include"), ("inc", 1, "If"),
                     (None, 1, "Text"), (None, 2, "Assign")]
    assert template.render(xs=[1, 0]) == plain  # and nothing reported: no callback set


def test_a_host_filter_or_test_is_charged_for_the_arguments_it_could_walk():
    """As a host global: a loop handing a huge shared structure to a cheap host filter or test
    pays the walk of it each time (the host function may print, compare or hash all of it)."""
    env = jinjamark.Environment()
    env.filters["first"] = lambda value: 1
    env.tests["anything"] = lambda value: True
    big = [[0] * 1000] * 1000
    for source in ("{% for i in range(100000) %}{{ big | first }}{% endfor %}",
                   "{% for i in range(100000) %}{{ big is anything }}{% endfor %}"):
        with pytest.raises(jinjamark.LimitExceeded):
            env.from_string(source).render(big=big)
    assert env.from_string("{{ [1, 2] | first }}{{ 3 is anything }}").render() == "1True"


CHEAP_STEPS = {  # loops of cheap steps that stay inside every other limit
    "arithmetic": "{% set x = j + i * 2 - 1 %}",
    "method calls": "{{ ('ab' ~ j).upper().replace('A', 'b') }}",
    "macro calls": "{{ m(j) }}",
    "dict methods": "{{ d.get('role') }}{{ d['role'] }}",
    "loop attributes": "{{ loop.index }}{{ loop.first }}{{ loop.last }}",
    "namespace": "{% set ns.a = ns.a + j %}",
}


@pytest.mark.parametrize("body", CHEAP_STEPS.values(), ids=CHEAP_STEPS.keys())
def test_a_loop_of_cheap_steps_is_stopped_by_the_fuel_its_steps_weigh(body):
    """Steps are weighted by what a node costs (a call ten names): with a tenth of the default
    fuel, each of these loops (2.4M iterations allowed) ends in LimitExceeded within a fraction
    of what the default's 1-3 s would be."""
    source = ("{% macro m(a) %}{{ a }}{% endmacro %}{% set ns = namespace(a=0) %}"
              "{% for i in range(100000) %}{% for j in range(24) %}" + body + "{% endfor %}{% endfor %}")
    env = jinjamark.Environment(limits=jinjamark.Limits(max_fuel=1_500_000))
    started = time.process_time()
    with pytest.raises(jinjamark.LimitExceeded, match="steps"):
        env.from_string(source).render(d={"role": "user"})
    assert time.process_time() - started < 2.0


# ---------------------------------------------------------------------------- Extension.scope_neutral

from dataclasses import dataclass  # noqa: E402

from jinjamark.grammar import ast as _ast  # noqa: E402


@dataclass(frozen=True, slots=True)
class EvaluateNeutral(_ast.Stmt):
    expr: _ast.Expr


@dataclass(frozen=True, slots=True)
class EvaluateOpaque(_ast.Stmt):
    expr: _ast.Expr


def _evaluating_extension(name: str, neutral: bool):
    """`{% do expr %}`'s grammar with a node class and handler of its own."""
    from jinjamark.ext import extension_grammar, span
    node_class = EvaluateNeutral if neutral else EvaluateOpaque
    return node_class, jinjamark.Extension(
        name, extension_grammar("do.lark"), rules={"do_stmt": lambda meta, c: node_class(span(meta), c[0])},
        handlers={node_class: lambda ev, node, scope: ev.eval(node.expr, scope) and None},
        names_from_expressions=True, scope_neutral=neutral)


def test_a_scope_neutral_user_extension_keeps_the_loop_fast_paths():
    from jinjamark.evaluation.compiling.statements import _loop_facts
    from jinjamark.grammar import ast
    source = "{% for x in xs %}{% do x %}{{ x }},{% endfor %}"
    facts = {}
    for name, neutral in (("evalneutral", True), ("evalopaque", False)):
        _, ext = _evaluating_extension(name, neutral)
        template = jinjamark.Environment(extensions=[ext]).from_string(source)
        assert template.render(xs=[1, 2]) == "1,2,"
        [loop] = [node for node in ast.walk(template.tree.body) if type(node) is ast.For]
        facts[neutral] = _loop_facts(loop)
    # (reads `loop`, nothing keeps the frame, the body writes it): as a core-only loop's; but
    # as any extension's node it may end the loop, so the loop is charged per iteration
    assert facts[True] == (False, True, False, True)
    # an extension that did not say so may read `loop` or keep its frame
    assert facts[False][:2] == (True, False)
