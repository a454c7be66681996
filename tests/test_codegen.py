"""The second tier (interpreter/evaluation/compiling/codegen/, tiers.py): a body run `HOT` times becomes
one generated Python function. It must mean exactly what the closures mean.

Most templates in the other test files render once, so they test the closures. Here the same
differential suites run again with every body generated from its first run (`HOT = 1`): the
corpus against transformers' Jinja2, the shared vectors, the generated templates and expressions
(hypothesis), scoping, error positions and limits, and every test of input marking (injection,
leaks, parts, provenance). Then the tiering itself.
"""
from __future__ import annotations

import pytest

import jinjamark
import oracle
from jinjamark.evaluation.compiling import CODE, codegen, tiers


@pytest.fixture(autouse=True)
def every_body_generated(monkeypatch):
    monkeypatch.setattr(tiers, "HOT", 1)


# The differential suites, collected again here under the fixture above.
from test_chat_corpus import test_chat_template_renders_every_conversation_as_transformers  # noqa: E402,F401
from test_vectors import test_vector_renders_as_jinja2  # noqa: E402,F401
from test_differential import (  # noqa: E402,F401
    test_generated_expressions_evaluate_as_jinja2, test_generated_template_structure_and_whitespace_match_jinja2,
    test_generated_templates_render_as_jinja2, test_generated_templates_render_as_jinja2_with_autoescaping,
    test_input_marks_never_change_the_rendered_text, test_sums_with_safe_text_render_as_jinja2,
    test_whitespace_control_matches_jinja2_under_every_option)
from test_scoping import (  # noqa: E402,F401
    test_generated_chat_templates_scope_names_as_transformers, test_generated_templates_scope_names_as_jinja2,
    test_names_are_scoped_as_jinja2_scopes_them)
from test_errors import (  # noqa: E402,F401
    test_exception_in_a_filter_becomes_a_runtime_error_at_the_filter, test_raise_exception_reports_where_it_was_raised,
    test_runtime_errors_carry_name_line_column_and_caret, test_type_errors_in_operators_become_runtime_errors,
    test_undefined_error_uses_jinja2_message)


from test_limits import test_a_render_over_a_limit_raises_at_the_node_and_renders_once_raised  # noqa: E402,F401

# The guarantees of input marking, collected again: every test of these modules.
import test_injection  # noqa: E402
import test_leaks  # noqa: E402
import test_parts  # noqa: E402
import test_provenance  # noqa: E402

for _module in (test_injection, test_leaks, test_parts, test_provenance):
    globals().update({name: test for name, test in vars(_module).items() if name.startswith("test_")})


def generated_bodies(template) -> list:
    return [code for code, body in template.memo.get(CODE, {}).values()
            if type(body) is tuple and hasattr(code, "generated_from")]


def test_a_body_runs_as_closures_until_it_is_hot(monkeypatch):
    monkeypatch.setattr(tiers, "HOT", 3)
    template = jinjamark.chat_environment().from_string(
        "{% for m in messages %}{{ m.role }}:{{ m['content'] }};{% endfor %}")
    messages = [{"role": "user", "content": "hi"}]
    for _ in range(2):
        assert template.render(messages=messages) == "user:hi;"
        assert generated_bodies(template) == []
    assert template.render(messages=messages) == "user:hi;"
    [code] = generated_bodies(template)
    source = codegen.source_of(code.generated_from)
    assert "for " in source and "m.role" not in source  # the loop, written out
    assert template.render(messages=messages) == "user:hi;"


def test_the_closures_a_generated_body_replaces_are_not_kept(monkeypatch):
    # A template that serves many renders keeps its generated code, not both tiers: the
    # body's closure is dropped once its generated function runs it.
    import gc
    import weakref
    monkeypatch.setattr(tiers, "HOT", 2)
    template = jinjamark.chat_environment().from_string("{% for m in messages %}{{ m.content }}{% endfor %}")
    messages = [{"content": "x"}]
    assert template.render(messages=messages) == "x"
    [(tiered, body)] = [entry for entry in template.memo[CODE].values() if type(entry[1]) is tuple]
    [state] = [cell.cell_contents for cell in tiered.__closure__ if type(cell.cell_contents) is list]
    first_tier = weakref.ref(state[0])
    assert template.render(messages=messages) == "x"
    gc.collect()
    assert first_tier() is None
    assert generated_bodies(template) and template.render(messages=messages) == "x"



def test_a_generated_function_keeps_its_constants_and_no_line_table():
    # What a template in service keeps: its generated function's globals are its own constants
    # (the helpers are one dict per process, its builtins), each named by the string its code
    # names it by, and no line table (`source_of` writes the source again for a reader).
    template = jinjamark.chat_environment().from_string(
        "{% for m in messages %}{{ m.role | upper }}: {{ m.content }}\n{% endfor %}")
    messages = [{"role": "user", "content": "hi"}]
    assert template.render(messages=messages) == "USER: hi\n"
    [code] = generated_bodies(template)
    names = {name: name for name in code.__code__.co_names}
    own = [name for name in code.__globals__ if name not in ("__builtins__", "body")]
    assert own and all(name.startswith("k") and names.get(name) is name for name in own)
    assert code.__globals__["__builtins__"] is codegen._SHARED and "len" in codegen._SHARED
    if codegen._LINES_DROPPABLE:
        assert {line for *_, line in code.__code__.co_lines()} == {None}
        assert len(code.__code__.co_linetable) * 4 <= len(code.__code__.co_code)
    assert template.render(messages=messages * 2) == "USER: hi\n" * 2


def test_a_failure_inside_generated_code_is_located_as_the_closures_locate_it(monkeypatch):
    # without its line table, generated code still fails at the template node, as the first tier
    source = "{% for m in messages %}\n{{ m.content }}{{ 1 // m.n }}{% endfor %}"
    located = []
    for hot in (1, 10**9):
        monkeypatch.setattr(tiers, "HOT", hot)
        template = jinjamark.chat_environment().from_string(source)  # a new environment: compiled again
        assert template.render(messages=[{"content": "a", "n": 1}]) == "a1"
        assert bool(generated_bodies(template)) == (hot == 1)
        with pytest.raises(jinjamark.TemplateRuntimeError) as caught:
            template.render(messages=[{"content": "a", "n": 0}])
        located.append((caught.value.lineno, caught.value.column, str(caught.value)))
    assert located[0] == located[1] and located[0][0] == 2


class Message:
    """A message that is no dict: the generated code's general path reads it."""

    def __init__(self, content):
        self.content = content


def test_a_general_path_of_generated_code_is_compiled_when_first_taken():
    # The closures of general paths (a message that is no dict) are made when first called,
    # then called directly; plain data never makes them.
    from jinjamark.evaluation.compiling.codegen import _OnFirstCall
    source = "{% for m in messages %}{{ m.content }};{% endfor %}"
    template = jinjamark.chat_environment().from_string(source)
    assert template.render(messages=[{"content": "a"}]) == "a;"
    [code] = generated_bodies(template)
    waiting = [name for name, value in code.__globals__.items() if type(value) is _OnFirstCall]
    assert waiting
    expected = oracle.compiled(source).render(messages=[Message("b"), {"content": "c"}])
    assert template.render(messages=[Message("b"), {"content": "c"}]) == expected == "b;c;"
    assert [name for name in waiting if type(code.__globals__[name]) is _OnFirstCall] != waiting
    assert template.render(messages=[Message("d")]) == "d;"


DEFINED_SOURCES = [
    "{% for m in messages %}{{ m.tool_calls is defined }},{{ m['x'] is not defined }},"
    "{{ m.items is defined }},{{ m._hidden is defined }},{{ m.x is undefined }},"
    "{{ not m.x is defined }};{% endfor %}",
    "{% for m in messages if m.tool_calls %}{{ m.tool_calls.y is defined }}{% endfor %}",
]


class WithToolCalls:
    tool_calls = {"y": 1}
    _hidden = 2


@pytest.mark.parametrize("source", DEFINED_SOURCES)
def test_is_defined_of_a_missing_key_answers_as_jinja2(source):
    # `x.key is defined` on a plain dict without the key answers without reading it in
    # general; every other shape (an object, a key holding None, a dict method's name, a
    # private name, a path) reads as before.
    messages = [{}, {"tool_calls": None, "x": 2, "_hidden": 1}, {"tool_calls": {"y": 0}}, WithToolCalls(),
                {"items": 1}]
    expected = oracle.compiled(source).render(messages=messages)
    template = jinjamark.chat_environment().from_string(source)
    assert template.render(messages=messages) == expected
    assert generated_bodies(template) and template.render(messages=messages) == expected


def test_is_defined_of_a_missing_key_keeps_a_test_the_environment_replaced():
    env = jinjamark.chat_environment()
    env.tests["defined"] = lambda value: "replaced"
    template = env.from_string("{% for m in messages %}{{ m.x is defined }}{% endfor %}")
    assert template.render(messages=[{}, {"x": 1}]) == "TrueTrue"
    assert generated_bodies(template)


# `name is defined` (and `undefined`, `not` folded in), written out: the scope chain searched
# without making an undefined, as the closures' _definedness does.
NAME_DEFINED_SOURCES = [
    "{{ x is defined }}{{ x is undefined }}{{ not x is defined }}{{ not x is undefined }}",
    "{{ missing is defined }}{{ missing is undefined }}{{ not missing is defined }}",
    "{% if not date is defined %}{% set date = 'today' %}{% endif %}{{ date }}{{ date is defined }}",
    "{% for m in ms %}{{ m is defined }}{{ not m is undefined }}{{ later is defined }}{% set later = 1 %}"
    "{{ later is defined }}{% endfor %}{{ later is defined }}",
    "{% macro f(a, b) %}{{ a is defined }}{{ b is defined }}{{ c is defined }}{% endmacro %}{{ f(1) }}{{ f(1, 2) }}",
    "{{ self is defined }}{{ range is defined }}{{ u is defined }}",
]


@pytest.mark.parametrize("source", NAME_DEFINED_SOURCES)
def test_is_defined_of_a_name_answers_as_jinja2(source):
    context = {"x": 1, "ms": [1, None], "u": jinjamark.Undefined(name="u")}
    j2_context = {**context, "u": oracle.compiled("{{ u }}").environment.undefined(name="u")}
    expected = oracle.compiled(source).render(**j2_context)
    template = jinjamark.chat_environment().from_string(source)
    assert template.render(**context) == expected
    assert generated_bodies(template) and template.render(**context) == expected


def test_is_defined_of_a_name_keeps_a_test_the_environment_replaced():
    env = jinjamark.chat_environment()
    env.tests["defined"] = lambda value: value == 2
    template = env.from_string("{% for m in ms %}{{ m is defined }}{{ not m is defined }}{% endfor %}")
    for _ in range(2):
        assert template.render(ms=[1, 2]) == "FalseTrueTrueFalse"
    assert generated_bodies(template)


NESTED_LOOPS = "".join("{%% for x%d in xs %%}" % i for i in range(12)) + "{{ x11 }}" + \
    "{% endfor %}" * 12


def test_a_body_nested_deeper_than_python_compiles_still_renders_as_jinja2():
    # 12 loops are 36 nested blocks written out: the deeper ones stay calls of their closures.
    context = {"xs": [1, 2]}
    template = jinjamark.chat_environment().from_string(NESTED_LOOPS)
    assert template.render(context) == oracle.compiled(NESTED_LOOPS).render(context)
    assert generated_bodies(template)


@pytest.mark.parametrize("source,limits", [
    ("{% for i in range(100) %}{% for j in range(100) %}{{ i }}{% endfor %}{% endfor %}",
     jinjamark.Limits(max_loop_iterations=5_000)),
    ("{% for i in range(10000) %}{{ 'x' * 50 }}{% endfor %}", jinjamark.Limits(max_output=100_000)),
    ("{% for i in range(50000) %}{% if i == -1 %}{% endif %}{% endfor %}", jinjamark.Limits(max_fuel=50_000)),
])
def test_generated_code_keeps_the_limits(source, limits):
    template = jinjamark.chat_environment(limits=limits).from_string(source)
    with pytest.raises(jinjamark.LimitExceeded):
        template.render()
    assert generated_bodies(template)


LIGHT_CALLS = ("{% for m in messages %}{{ m.content.strip() }}{{ m.content | trim }}{{ m.content.split('x') | length }}"
               "{{ m.content.upper() }}{{ m.content.startswith('<t') }}{{ m.content | lower }}"
               "{{ m.content.strip('a') }}{% endfor %}")


def test_builtins_called_at_once_charge_what_their_metered_calls_charge(monkeypatch):
    # The generated code calls `text.strip()` and `text | trim` itself on plain text: it must
    # charge the same units, in the same order, as the metered call the closures make; and so
    # on marked text (render_parts), whose marks it keeps.
    from jinjamark import mark_input, metering
    messages = [{"content": text} for text in (" short ", "x" * 300, "a" * 5000 + "<t", "ß" * 400)]
    charged: dict = {}
    real = metering.Meter.charge
    for hot in (3, 1):  # the closures', then the generated code's
        monkeypatch.setattr(tiers, "HOT", hot)
        units: list = []
        monkeypatch.setattr(metering.Meter, "charge", lambda self, n: (units.append(n), real(self, n))[1])
        template = jinjamark.chat_environment().from_string(LIGHT_CALLS)
        text = template.render(messages=messages)
        parts = template.render_parts(messages=[{"content": mark_input(m["content"])} for m in messages])
        charged[hot] = (text, parts, units)
        assert bool(generated_bodies(template)) is (hot == 1)
    assert charged[1] == charged[3] and any(n >= metering.SMALL_WORK for n in charged[1][2])
    assert charged[1][0] == oracle.compiled(LIGHT_CALLS).render(messages=messages)
    text, parts, _ = charged[1]
    assert "".join(part.text for part in parts) == text and parts[:2] == [("shortshort1 SHORT ", True), ("False", False)]


def test_generated_code_raises_at_the_node_the_closures_raise_at(monkeypatch):
    source = "{% for m in messages %}\n{{ m.content + 1 }}{% endfor %}"
    errors = []
    for hot in (2, 1):  # the closures' error, then the generated code's
        monkeypatch.setattr(tiers, "HOT", hot)
        template = jinjamark.chat_environment().from_string(source)
        with pytest.raises(jinjamark.TemplateRuntimeError) as raised:
            template.render(messages=[{"content": "a"}])
        errors.append((raised.value.lineno, str(raised.value)))
    assert errors[0] == errors[1] and errors[0][0] == 2


@pytest.mark.parametrize("options", [{"finalize": lambda v: f"<{v}>"}, {"autoescape": True}, {}])
def test_printing_changed_by_finalize_or_autoescaping_is_kept_by_generated_code(options):
    # `{{ '' }}` prints nothing only where printing is not changed: finalize sees it too.
    import jinja2
    source = "{{ '' }}|{{ 'a' }}|{{ x }}|{% for i in [1, 2] %}{{ '' }}{{ i }}{{ x ~ i }}{% endfor %}"
    want = jinja2.Environment(**options).from_string(source).render(x="<b>")
    template = jinjamark.Environment(**options).from_string(source)
    assert template.render(x="<b>") == want
    assert generated_bodies(template)


def test_generated_code_that_does_not_compile_is_said_and_the_closures_run(monkeypatch):
    from jinjamark.evaluation.compiling.codegen import statements as written
    monkeypatch.setattr(written.StatementWriter, "prints", lambda self, run, scope, local: self.line("if True:"))
    template = jinjamark.chat_environment().from_string("{% if true %}a{% endif %}{{ 1 }}")
    with pytest.warns(codegen.GenerationWarning):
        assert template.render() == "a1"
    assert generated_bodies(template) == []


def test_a_template_with_generated_code_pickles_and_copies():
    import copy
    import pickle
    template = jinjamark.chat_environment().from_string("{% for m in messages %}{{ m.content }}{% endfor %}")
    template.render(messages=[{"content": "x"}])
    assert generated_bodies(template)
    for twin in (pickle.loads(pickle.dumps(template)), copy.deepcopy(template)):
        assert twin.render(messages=[{"content": "y"}]) == "y"


def test_a_sum_with_a_filters_safe_text_is_collected_at_once(monkeypatch):
    # `'<f>'|safe + name + '</f>'` and `'<f=' + name + '>' + args|tojson` (tool-call templates):
    # the safe text of a filter is collected with the text around it, not added one addend at
    # a time past it (add_rest, the closures' way, several times slower).
    from jinjamark.evaluation.compiling import codegen as package

    def added_one_by_one(*args):
        raise AssertionError("the sum was added one addend at a time")
    monkeypatch.setitem(package._SHARED, "add_rest", added_one_by_one)
    source = ("{% for t in tools %}{{ '<f>'|safe + t.name + '</f>'|safe + t|tojson }}"
              "{% set x = '<f=' + t.name + '>' + t.args|tojson %}{{ x }}{% endfor %}")
    tools = [{"name": "a<b", "args": {"q": "<&>"}}]
    template = jinjamark.chat_environment().from_string(source)
    assert template.render(tools=tools) == oracle.compiled(source).render(tools=tools)
    assert generated_bodies(template)


def test_a_loop_over_a_dicts_items_walks_its_pairs_charged_before_it_starts():
    # `for k, v in d | items` walks the dict's own items view (the builtin's loop_form): its
    # length known, the loop is charged up front as a list's is, and no generator is made
    from jinjamark.limits import Limits
    seen: list = []
    env = jinjamark.Environment(immutable=True, limits=Limits(max_loop_iterations=3))
    env.globals["seen"] = lambda k: seen.append(k) or k
    template = env.from_string("{% for k, v in d | items %}{{ seen(k) }}{% endfor %}")
    with pytest.raises(jinjamark.LimitExceeded):
        template.render(d=dict.fromkeys("abcd", 1))
    assert seen == []  # refused before its first iteration (per iteration, it ran three)
    source = ("{% for k, v in d | items %}{{ k }}{{ v }}{{ loop.length }}{{ loop.last }}{% endfor %}"
              "{% set pairs = d | items %}{{ pairs | list }}{% for k in (d | items) | list %}{{ k }}{% endfor %}")
    for d in ({"a": 1, "b": [2]}, {}):
        assert jinjamark.chat_environment().from_string(source).render(d=d) == oracle.compiled(source).render(d=d)


@pytest.mark.parametrize("source,free", [
    ("{{ a }}{% for m in ms %}{{ b }}{{ m }}{{ loop.index }}{% endfor %}{% set c = 1 %}{{ c }}", {"a", "b", "ms"}),
    ("{% macro f(x) %}{{ x }}{{ y }}{{ caller }}{{ varargs }}{% endmacro %}{{ f(z) }}", {"y", "z"}),
    ("{% with w = 1 %}{{ w }}{{ v }}{% endwith %}{% set t %}{{ u }}{% endset %}", {"v", "u"}),
    ("{% if x is defined %}{{ x }}{% endif %}{% for k, v in d|items %}{{ k }}{% endfor %}", {"x", "d"}),
    ("{% include 'other' %}{{ a }}", set()),  # composes: names may come from elsewhere
    ("{{ self }}{{ a }}", set()),
])
def test_the_free_names_are_those_nothing_in_the_template_binds(source, free):
    from jinjamark.evaluation.compiling.codegen import free_names
    template = jinjamark.chat_environment().from_string(source)
    assert free_names(template.memo) == free


def test_free_names_are_read_once_at_a_functions_start_as_jinja2_resolves_them():
    # a free name read in a branch not taken, or only after the loop, is still the context's;
    # an undefined one read where it is not used raises nothing (strict undefined too)
    source = ("{% for m in ms %}{% if m > 1 %}{{ missing }}{% endif %}{{ g }}{{ m }}{% endfor %}"
              "{% macro f() %}{{ g }}{% endmacro %}{{ f() }}{{ f() }}")
    for undefined in ("Undefined", "StrictUndefined"):
        env = jinjamark.Environment(undefined=getattr(jinjamark, undefined))
        j2 = oracle.compiled(source).environment.overlay(undefined=getattr(__import__("jinja2"), undefined))
        template = env.from_string(source)
        for _ in range(2):
            got = outcome_of(lambda: template.render(ms=[0, 1], g="G"))
            assert got == outcome_of(lambda: j2.from_string(source).render(ms=[0, 1], g="G"))
        assert generated_bodies(template)


def outcome_of(render) -> str:
    try:
        return render()
    except Exception as error:  # noqa: BLE001 - both engines' refusals compared by kind
        return "raised " + ("undefined" if "undefined" in str(error) else type(error).__name__)


MACROS = [
    # parameters never bound again in the body: read once a call (fixed)
    ("{% macro show(v, d='-') %}{% if v is mapping %}{% for k, x in v|dictsort %}{{ k }}={{ show(x) }};"
     "{% endfor %}{% elif v is string %}{{ v }}{{ d }}{% else %}{% for x in v %}{{ show(x, d ~ '+') }}"
     "{% endfor %}{% endif %}{% endmacro %}{{ show(data) }}", {"v", "d"}),
    # bound again by a set, a loop's target, a nested macro's parameter: walked at each read
    ("{% macro f(a, b, c) %}{{ a }}{% set a = a ~ '!' %}{{ a }}{% for b in [1, 2] %}{{ b }}{% endfor %}"
     "{{ b }}{% macro g(c) %}{{ c }}{% endmacro %}{{ g(c ~ '?') }}{{ c }}{% endmacro %}"
     "{{ f('x', 'y', 'z') }}{{ f('p', 'q', 'r') }}", set()),
    # a default reading another parameter, a caller, keyword arguments
    ("{% macro h(a, b=a ~ '2') %}{{ a }}{{ b }}{{ caller() if caller else '' }}{% endmacro %}"
     "{% call h('c') %}[{{ data | length }}]{% endcall %}{{ h(b='k', a='j') }}", {"a", "b"}),
]


@pytest.mark.parametrize("source, fixed", MACROS, ids=["recursive", "bound-again", "defaults-caller"])
def test_a_macros_parameters_not_bound_again_are_read_once_a_call_as_jinja2_reads_them(source, fixed):
    from jinjamark.evaluation.compiling.codegen import fixed_parameters
    from jinjamark.grammar import ast
    data = {"b": ["x", {"c": "y"}], "a": "z"}
    template = jinjamark.chat_environment().from_string(source)
    for _ in range(3):
        assert template.render(data=data) == oracle.compiled(source).render(data=data)
    bodies = [node.body for node in ast.walk(template.tree.body)
              if type(node) in (ast.Macro, ast.CallBlock) and getattr(node, "name", "h") in ("show", "f", "h")]
    assert set().union(*(fixed_parameters(template.memo, body) for body in bodies)) == fixed
    assert generated_bodies(template)


KNOWN_NUMBERS = [
    # literals and the loop's counters are plain numbers: their types are not tested
    "{% for m in data %}{{ loop.index0 % 2 }},{{ loop.index * 2.5 }},{{ loop.index0 - 1 < 3 }},"
    "{{ 10 // loop.index }},{{ 7 % 3 - 0.5 }},{{ 1.5 > loop.index0 }}{% if loop.first %}F{% endif %};{% endfor %}",
    # beside them, values of any type keep their tests: input numbers, text, a failure
    "{% for m in data %}{{ m.n % 2 if m.n is number else m }}{{ loop.index0 < m.n if m.n is number else '' }}"
    "{% endfor %}",
    "{% for m in data %}{{ 2 / loop.index0 }}{% endfor %}",
    "{% for m in data %}{{ loop.index - 'x' }}{% endfor %}",
]


@pytest.mark.parametrize("source", KNOWN_NUMBERS, ids=["counters", "beside-input", "zero-division", "text"])
def test_literal_numbers_and_loop_counters_skip_their_type_tests_and_render_as_jinja2(source):
    from jinjamark.evaluation.compiling.codegen import _written
    data = [{"n": 3}, {"n": 4.5}, {"n": "x"}, {"n": True}]
    template = jinjamark.chat_environment().from_string(source)
    for parts in (False, True):
        try:
            got = template.render_parts(data=data) if parts else template.render(data=data)
            ours = ("ok", "".join(part.text for part in got) if parts else got)
        except jinjamark.TemplateRuntimeError as e:
            ours = ("error", e.lineno)
        try:
            theirs = ("ok", oracle.compiled(source).render(data=data))
        except Exception:  # noqa: BLE001 - Python's own error, ours a TemplateRuntimeError at its line
            theirs = ("error", 1)
        assert ours == theirs
    assert generated_bodies(template)
    code, constants = _written(template.tree.body)
    literals = [name for name, value in constants.items() if type(value) in (int, float, str)]
    assert literals and not any(f"type({name})" in code for name in literals)
    assert "type(t" in code  # the values of other types are still tested


def test_comparisons_of_comparisons_compare_at_once_and_render_as_jinja2(monkeypatch):
    from jinjamark.evaluation.compiling import codegen
    calls = []
    general = codegen._SHARED["compare"]
    monkeypatch.setitem(codegen._SHARED, "compare", lambda ev, op, a, b: calls.append(op) or general(ev, op, a, b))
    source = ("{% for m in data %}{{ (m.role == 'user') != (loop.index0 % 2 == 0) }},"
              "{{ (m.n > 1) == (loop.index0 < m.n) }},{{ (m.n > 1) < 2 }};{% endfor %}")
    data = [{"role": "user", "n": 2}, {"role": "assistant", "n": 0.5}, {"role": "user", "n": True}]
    template = jinjamark.chat_environment().from_string(source)
    assert template.render(data=data) == oracle.compiled(source).render(data=data)
    assert generated_bodies(template) and calls == []  # bools and numbers: no general comparison
    data.append({"role": "tool", "n": [1]})  # a list compared with a number: the general path's error
    with pytest.raises(jinjamark.TemplateRuntimeError):
        template.render(data=data)
    assert calls == [">"]


def test_a_text_literal_added_to_text_is_joined_at_once(monkeypatch):
    # (`+` of a text literal keeps its fast path; only other operators give such literals to operate)
    from jinjamark.evaluation.compiling import codegen
    calls = []
    general = codegen._SHARED["operate"]
    monkeypatch.setitem(codegen._SHARED, "operate", lambda ev, scope, op, a, b: calls.append(op) or general(ev, scope, op, a, b))
    source = "{% for m in data %}{% set x = '<' + m.content %}{{ x }}{{ (m.content + '>') | trim }}{% endfor %}"
    data = [{"content": "a "}, {"content": " b"}]
    template = jinjamark.chat_environment().from_string(source)
    assert template.render(data=data) == oracle.compiled(source).render(data=data)
    assert generated_bodies(template) and calls == []


def test_the_string_filter_of_data_charges_in_both_tiers_what_it_charges(monkeypatch):
    # `tool | string` of a dict, list or tuple: the generated code calls the print itself
    # (values.printing.data_string), with the charges of the closures' call, in their order
    from jinjamark import mark_input, metering
    source = "{% for m in messages %}{{ m | string }}|{{ m.x | string }}|{{ m.y | string }};{% endfor %}"
    messages = [{"x": [1, "a"], "y": ("b", {"c": None})}, {"x": {"k": "v" * 300}, "y": []}]
    real = metering.Meter.charge
    charged: dict = {}
    for hot in (3, 1):
        monkeypatch.setattr(tiers, "HOT", hot)
        units: list = []
        monkeypatch.setattr(metering.Meter, "charge", lambda self, n: (units.append(n), real(self, n))[1])
        template = jinjamark.chat_environment().from_string(source)
        text = template.render(messages=messages)
        parts = template.render_parts(messages=mark_input(messages))
        charged[hot] = (text, [tuple(p) for p in parts], units)
        assert bool(generated_bodies(template)) is (hot == 1)
    assert charged[1] == charged[3]
    assert charged[1][0] == oracle.compiled(source).render(messages=messages)
    assert "".join(p[0] for p in charged[1][1]) == charged[1][0] and any(p[1] for p in charged[1][1])
    from jinjamark.evaluation.compiling.codegen import _written
    from jinjamark.values.printing import data_string
    assert any(value is data_string for value in _written(template.tree.body)[1].values())
