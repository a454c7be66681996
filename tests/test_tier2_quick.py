"""The second tier in the quick profile: a slice of the differential suites with every body
generated from its first run, so that a bug in the generated code alone fails `pytest -m "not
slow"` (test_codegen.py runs the whole suites generated, in the slow profile).

The slice: every 10th corpus template against transformers' Jinja2 on four conversations, with
both values of add_generation_prompt, and every 5th of the peers' vectors. Each render is made in
an environment of its own, so no body was compiled before by another test at another `HOT`.
The last tests inject bugs into the generator (code that only the second tier runs) and check
that this slice fails on each, and that it does not when the same bugs are in place but the
bodies stay closures: the bugs are the second tier's alone, and the slice sees them.
"""
from __future__ import annotations

import copy

import pytest

import jinjamark
import oracle
from jinjamark.grammar import ast
from conftest import chat_templates, fixture
from jinjamark.evaluation.compiling import codegen, tiers
from jinjamark.evaluation.compiling.codegen import expressions as generated_expressions
from jinjamark.evaluation.compiling.codegen import statements as generated_statements
from test_chat_corpus import as_transformers_hands_it
from test_vectors import RUN, environment_for

TEMPLATES = chat_templates()[::10]
CONVERSATIONS = [fixture(name) for name in
                 ("03-multi-turn", "07-parallel-tool-calls", "09-reasoning", "21-injection-everywhere")]
VECTORS = RUN[::5]

_expected: dict = {}  # Jinja2's outputs, computed once (they do not depend on the tier)


def expected_chat(name: str, source: str, conversation: int, agp: bool):
    key = (name, conversation, agp)
    if key not in _expected:
        fx = CONVERSATIONS[conversation]
        try:
            _expected[key] = oracle.render_chat(source, as_transformers_hands_it(fx), agp,
                                                **(fx.get("kwargs") or {}))
        except Exception as e:  # noqa: BLE001 - Jinja2 refusing is a verdict too
            _expected[key] = e
    return _expected[key]


def chat_template(source: str):
    env = jinjamark.chat_environment()  # a fresh one: no body compiled before at another HOT
    return jinjamark.ChatTemplate(source, environment=env, special_tokens=dict(oracle.SPECIAL_TOKENS),
                                  now=lambda: oracle.FIXED_NOW)


def render_chat(ct, fx: dict, agp: bool) -> str:
    return ct.render(fx["messages"], tools=fx.get("tools"), documents=fx.get("documents"),
                     add_generation_prompt=agp, **(fx.get("kwargs") or {}))


def differences(first: bool = False) -> list[str]:
    """Every render of the slice that differs from Jinja2's (at the tier `HOT` sets now); with
    `first`, the first one only."""
    found = []
    for name, source in TEMPLATES:
        if first and found:
            return found
        ct = None
        for i, fx in enumerate(CONVERSATIONS):
            for agp in (False, True):
                want = expected_chat(name, source, i, agp)
                try:
                    ct = ct or chat_template(source)
                    got = render_chat(ct, fx, agp)
                except jinjamark.TemplateError as e:
                    if not isinstance(want, Exception):
                        found.append(f"{name} #{i} agp={agp}: jinjamark raised {e}")
                    continue
                if isinstance(want, Exception) or got != want:
                    found.append(f"{name} #{i} agp={agp}: output differs")
    for vid, v in VECTORS:
        try:
            template = environment_for(v).from_string(v["template"])
            got = template.render(**copy.deepcopy(v.get("context") or {}))
        except jinjamark.TemplateError:
            if not v.get("jinja2_error"):
                found.append(f"vector {vid}: jinjamark raised")
            continue
        if v.get("jinja2_error") or got != v["jinja2_expected"]:
            found.append(f"vector {vid}: output differs")
    return found


@pytest.fixture
def generated(monkeypatch):
    monkeypatch.setattr(tiers, "HOT", 1)


def test_the_slice_renders_as_jinja2_with_every_body_generated(generated):
    assert len(TEMPLATES) >= 20 and len(VECTORS) >= 40
    assert differences() == []


def test_the_slice_runs_the_generated_code():
    # Each body of the slice is generated from its first run, where HOT is 1: every template
    # compiled runs its top-level body, so the generator makes a function for each at least
    # (counted where the tiers ask for them; macros and blocks add theirs).
    made, compiled = [], []
    real_generate, real_from_string = codegen.generate, jinjamark.Environment.from_string

    def generating(body, *free):
        function = real_generate(body, *free)
        if function is not None:
            made.append(function)
        return function

    def compiling(env, *args, **kwargs):
        template = real_from_string(env, *args, **kwargs)
        compiled.append(template)
        return template
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tiers, "HOT", 1)
        patch.setattr(codegen, "generate", generating)
        patch.setattr(jinjamark.Environment, "from_string", compiling)
        differences()
    tops = {id(template.tree.body) for template in compiled}
    assert len(compiled) > 100 and tops <= {id(function.generated_from) for function in made}


def _wrong_loop_first(self, loop, attribute, node, real=generated_expressions.ExpressionWriter.loop_attribute):
    """`loop.first` true on the second iteration instead of the first."""
    if attribute == "first":
        result = self.temp()
        self.line(f"{result} = {loop}.index0 == 1")
        return result
    return real(self, loop, attribute, node)


def _text_written_twice(self, run, scope, local, real=generated_statements.StatementWriter.prints):
    """Template text of a generated body written twice when it is a newline."""
    real(self, run, scope, local)
    if type(run[0]) is ast.Text and run[0].text == "\n":
        real(self, run[:1], scope, local)


@pytest.mark.parametrize("mutation", [
    ("ExpressionWriter", generated_expressions.ExpressionWriter, "loop_attribute", _wrong_loop_first),
    ("StatementWriter", generated_statements.StatementWriter, "prints", _text_written_twice),
], ids=["loop.first", "text"])
def test_a_bug_in_the_generated_code_alone_fails_the_slice(monkeypatch, mutation):
    _, cls, method, wrong = mutation
    monkeypatch.setattr(cls, method, wrong)
    monkeypatch.setattr(tiers, "HOT", 10 ** 9)  # closures only: the bug is not theirs
    assert differences() == []
    monkeypatch.setattr(tiers, "HOT", 1)  # every body generated: the slice sees it
    assert differences(first=True) != []


def test_a_limit_a_generated_light_call_reaches_fails_at_the_call(generated):
    # A regression: the generated code charged a string method's work outside the call's try,
    # so the limit was raised at the loop around it (line 1), not at `s.count('b')` (line 2).
    source = "{% set s = 'a' * 100000 %}{% for i in range(100) %}\n{{ s.count('b') }}{% endfor %}"
    env = jinjamark.Environment(limits=jinjamark.Limits(max_work=1_000_000))
    with pytest.raises(jinjamark.LimitExceeded) as caught:
        env.from_string(source).render()
    assert (caught.value.lineno, caught.value.column) == (2, 4)


# A `set` makes its name a Python local of the generated code for the statements after it, until
# a statement that may rebind it (a branch that sets it, a block set, an unpacking, a macro).
READ_BACK = [
    "{% set t = '<a>' %}{{ t + 'x' }}{{ t }}",  # a regression: the sum's literal was added to t's
    "{% set t = '<a>' %}{{ 'x' + t + 'y' + t }}{{ t ~ t }}",
    "{% set x = 1 %}{% if true %}{% set x = 2 %}{% endif %}{{ x }}",
    "{% set x = 1 %}{% if false %}{% set x = 2 %}{% else %}{{ x }}{% set x = 3 %}{{ x }}{% endif %}{{ x }}",
    "{% set x = 1 %}{% if false %}{% elif true %}{% set x = 2 %}{% else %}{% endif %}{{ x }}",
    "{% for m in [1, 2] %}{{ c }}{% set c = m %}{{ c }}{% endfor %}{{ c }}",
    "{% set x = 'a' %}{% for i in [1] %}{{ x }}{% set x = 'b' %}{{ x }}{% endfor %}{{ x }}",
    "{% set x = 'a' %}{% set x %}b{% endset %}{{ x }}",
    "{% set x = 'a' %}{% set x, y = 'b', 'c' %}{{ x }}{{ y }}",
    "{% set x = 'a' %}{% macro x() %}m{% endmacro %}{{ x() }}",
    "{% set loop = 'l' %}{% for i in [1] %}{{ loop.index }}{% endfor %}{{ loop }}",
    "{% set ns = namespace(v='a') %}{% set v = ns.v %}{% set ns.v = 'b' %}{{ v }}{{ ns.v }}",
]


@pytest.mark.parametrize("source", READ_BACK)
def test_a_name_set_is_read_back_as_jinja2_reads_it(generated, source):
    got = jinjamark.chat_environment().from_string(source).render()
    assert got == oracle.compiled(source).render()


# In an if/elif/else of simple branches, the steps every branch costs are charged with the `if`
# (once per loop iteration) and a branch charges only the rest (compiling/core.shared_steps): the
# same fuel in all as charging each branch in full when taken, in both tiers. Fuel is read
# exactly here (a batch of one step), and compared with the sharing turned off.
SHARED = ("{% for m in messages %}{% if m.role == 'user' %}U{{ m.content }}{% elif m.role == "
          "'assistant' %}A{% set n = m.content %}{% else %}{{ m.content ~ m.role }}{% endif %}"
          "{% if m.content %}{% if loop.first %}F{% endif %}{% endif %}{% endfor %}")
MESSAGES = [{"role": ("user", "assistant", "system")[i % 3], "content": "c"} for i in range(60)]


def least_fuel(source: str) -> tuple:
    """The least max_fuel that renders `source`, and where one step less runs out."""
    def outcome(fuel):
        env = jinjamark.chat_environment(limits=jinjamark.Limits(max_fuel=fuel))
        try:
            env.from_string(source).render(messages=MESSAGES)
        except jinjamark.LimitExceeded as exceeded:
            return exceeded.lineno, exceeded.column
        return None
    low, high = 0, 100_000  # low runs out, high renders
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if outcome(middle) is None else (middle, high)
    return high, outcome(low)


def test_branches_cost_what_they_cost_charged_in_full_in_both_tiers(monkeypatch):
    from jinjamark.evaluation.compiling import core, statements
    from jinjamark.limits import Budget
    monkeypatch.setattr(Budget, "BATCH", 1)
    found = {}
    for sharing in (True, False):
        if not sharing:
            for module in (core, statements, generated_statements):
                monkeypatch.setattr(module, "shared_steps", lambda node: 0)
        for hot in (10 ** 9, 1):
            monkeypatch.setattr(tiers, "HOT", hot)
            found[sharing, hot] = least_fuel(SHARED)
    assert len(set(found.values())) == 1, found
    switch = jinjamark.Environment().from_string(SHARED).tree.body[0].body[0]
    assert type(switch).__name__ == "If"
    monkeypatch.undo()
    assert core.shared_steps(switch) > 0  # the construct measured shares its branches' steps


# A loop over a list, tuple, dict, string or range is charged its iterations and their steps
# before it starts (loops.charged_up_front), when the template cannot change what it walks and
# no deadline needs the clock looked at as it runs: the same totals as charging each iteration,
# in both tiers. A loop with `break` (an extension's node) and a filtered one are charged per
# iteration, as is whatever a host object says of its own length.
LOOPS = ("{% for m in messages %}{{ m.role }}{% for ch in m.content %}{{ ch }}{% endfor %}"
         "{% for k in m %}{{ k }}{% if k == 'role' %}{% break %}{% endif %}{% endfor %}"
         "{% for i in range(3) if i %}{{ i }}{% endfor %}{% else %}none{% endfor %}"
         "{% for k, v in {'a': 1, 'b': 2}.items() %}{{ k }}{% endfor %}"
         "{% for m in messages %}{% for k, v in m | items %}{{ v }}{% endfor %}{% endfor %}")
LOOP_MESSAGES = [{"role": "user", "content": "abc"}, {"role": "assistant", "content": ""}] * 5


def least_limit(source: str, limit: str, high: int = 100_000) -> int:
    """The least value of a limit (max_fuel, max_loop_iterations, max_work) under which
    `source` renders (it renders under `high`)."""
    def renders(value):
        env = jinjamark.chat_environment(limits=jinjamark.Limits(**{limit: value}))
        try:
            env.from_string(source).render(messages=LOOP_MESSAGES)
        except jinjamark.LimitExceeded:
            return False
        return True
    low = 0  # low runs out, high renders
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if renders(middle) else (middle, high)
    return high


def test_loops_charged_up_front_cost_what_they_cost_per_iteration_in_both_tiers(monkeypatch):
    from jinjamark.evaluation import loops
    from jinjamark.limits import Budget
    monkeypatch.setattr(Budget, "BATCH", 1)
    found = {}
    for up_front in (True, False):
        if not up_front:  # the closures' loops.charged_up_front, the generated code's copy of it
            monkeypatch.setattr(loops, "FIXED_LENGTH", frozenset())
            monkeypatch.setitem(codegen._SHARED, "FIXED_LENGTH", frozenset())
        for hot in (10 ** 9, 1):
            monkeypatch.setattr(tiers, "HOT", hot)
            found[up_front, hot] = (least_limit(LOOPS, "max_fuel"),
                                    least_limit(LOOPS, "max_loop_iterations"))
    assert len(set(found.values())) == 1, found
    # messages, characters, keys up to the break, the filtered range's items, the dict's items;
    # messages again, and each one's items (the generated code walks the dict's items view)
    assert found[True, 1][1] == 10 + 15 + 10 + 20 + 2 + 10 + 20


# Filters the generated code calls itself on text with literal arguments (codegen's light
# calls: `string` and `replace` by their text forms, `trim` by str's own method) charge the work
# their metered call charges, and so do `dictsort` and the loops over what it gives: the least
# max_work that renders is the same in both tiers.
LIGHT = ("{% for m in messages %}{{ m.content|string|replace('b', '&amp;')|replace('c', 'xyz', 1) }}"
         "{{ m.role|trim|replace('s', 'S') }}{{ m|string|replace('r', 'R') }}"
         "{% for k, v in m|dictsort %}{{ k|replace(k, v) }}{% endfor %}{% endfor %}")


def test_light_filter_calls_cost_what_the_filters_cost_in_both_tiers(monkeypatch):
    from jinjamark import metering
    monkeypatch.setattr(metering, "CLOCK", 0)  # the work left looked at after every charge
    found = {}
    for hot in (10 ** 9, 1):
        monkeypatch.setattr(tiers, "HOT", hot)
        found[hot] = least_limit(LIGHT, "max_work", high=10 ** 9)
    assert found[1] == found[10 ** 9], found
    assert found[1] > 100_000  # the work measured is the filters' (dictsort: 10,000 units a call)


# The same of builtin filters called on a dict, list or tuple (codegen's light calls of
# containers, the environment passed first to those that take it): counted by their length as
# the metered call counts them; and of the builtins that charge a base per call (batch,
# dictsort, format, title, urlencode), of text too.
LIGHT_CONTAINERS = ("{% set xs = range(300)|list %}{% for m in messages %}{{ xs|length }}{{ xs|first }}"
                    "{{ xs|last }}{{ xs|list|length }}{% for k, v in m|items %}{{ k }}{% endfor %}"
                    "{{ (xs|reverse|list)[0] }}{{ xs|batch(50)|list|length }}{{ m|list|join }}"
                    "{{ (xs, 1)|first|length }}{{ m.content|title }}{{ m.content|urlencode }}"
                    "{{ '%s-%s'|format(m.role, 'x') }}{{ m.content|batch(3)|list|length }}"
                    "{{ m.role|slice(2)|list|length }}{{ m|string }}{{ xs|unique|list|length }}"
                    "{{ messages|selectattr('role', 'equalto', 'user')|list|length }}{{ xs|sum }}"
                    "{{ xs|min }}{{ xs|max }}{{ messages|map(attribute='role')|first }}"
                    "{{ xs|sort(reverse=true)|first }}{{ messages|groupby('role')|length }}{% endfor %}")


def test_light_filter_calls_of_containers_cost_what_the_filters_cost_in_both_tiers(monkeypatch):
    from jinjamark import metering
    monkeypatch.setattr(metering, "CLOCK", 0)
    assert jinjamark.chat_environment().from_string(LIGHT_CONTAINERS).render(messages=LOOP_MESSAGES) \
        == oracle.compiled(LIGHT_CONTAINERS).render(messages=LOOP_MESSAGES)
    found = {}
    for hot in (10 ** 9, 1):
        monkeypatch.setattr(tiers, "HOT", hot)
        found[hot] = least_limit(LIGHT_CONTAINERS, "max_work", high=10 ** 9)
    assert found[1] == found[10 ** 9], found
    assert found[1] > 100_000


class Lying:
    """A host object whose length says one item and whose iteration never ends."""
    def __len__(self):
        return 1

    def __iter__(self):
        while True:
            yield "x"


@pytest.mark.parametrize("hot", [10 ** 9, 1])
def test_a_loop_is_charged_per_iteration_where_its_length_may_not_hold(monkeypatch, hot):
    monkeypatch.setattr(tiers, "HOT", hot)
    limits = jinjamark.Limits(max_loop_iterations=1000)
    with pytest.raises(jinjamark.LimitExceeded, match="iterations"):  # a host object's own length
        jinjamark.chat_environment(limits=limits).from_string(
            "{% for x in items %}{{ x }}{% endfor %}").render(items=Lying())
    grows = jinjamark.Environment(limits=limits).from_string(  # a list the template appends to
        "{% set items = [1] %}{% for x in items %}{{ items.append(x) }}{% endfor %}")
    with pytest.raises(jinjamark.LimitExceeded, match="iterations"):
        grows.render()
    env = jinjamark.chat_environment(limits=jinjamark.Limits(max_loop_iterations=5))
    with pytest.raises(jinjamark.LimitExceeded) as caught:  # charged up front: before the body
        env.from_string("{{ 'a' }}\n  {% for x in range(6) %}{{ raise_exception('body') }}"
                        "{% endfor %}").render()
    assert (caught.value.lineno, caught.value.column) == (2, 3)
    with pytest.raises(jinjamark.TemplateError, match="body"):  # per iteration: the body first
        env.from_string("{% for x in items %}{{ raise_exception('body') }}{% endfor %}"
                        ).render(items=Lying())


# `replace` and `string` of text with literal arguments, written as the generated code calls them
# (their text forms), against Jinja2: marks kept, numbers as arguments, a count, autoescaping.
REPLACING = [
    "{% for x in xs %}{{ x|string|replace('a', 5)|replace(1, 'b') }}|{{ x|replace('o', '0', 1) }}{% endfor %}",
    "{% for x in xs %}{{ x|replace('', '-') }}{{ x|replace('o', x) }}{{ x|replace('a', '<b>') }}{% endfor %}",
    "{% for x in xs %}{{ x|replace('o', 'O', none) }}{{ x|string|replace('a', 'A', 0) }}{% endfor %}",
    "{% for x in xs %}{{ x|replace('o', 'O', 'x') }}{% endfor %}",
]


@pytest.mark.parametrize("autoescape", [False, True])
@pytest.mark.parametrize("hot", [10 ** 9, 1])
@pytest.mark.parametrize("source", REPLACING)
def test_replace_of_text_is_jinja2s(monkeypatch, hot, source, autoescape):
    monkeypatch.setattr(tiers, "HOT", hot)
    data = {"xs": ["foo a1", 3, "a<o&o", [1, "a"]]}
    theirs = oracle.environment()
    theirs.autoescape = autoescape
    try:
        want = ("text", theirs.from_string(source).render(**data))
    except Exception as error:  # noqa: BLE001 - the error is what is compared
        want = ("error", type(error).__name__)
    ours = jinjamark.chat_environment()
    ours.autoescape = autoescape
    try:
        template = ours.from_string(source)
        got = ("text", template.render(**data))
        parts = template.render_parts(xs=[jinjamark.mark_input(x) if isinstance(x, str) else x
                                          for x in data["xs"]])
        assert "".join(p.text for p in parts) == got[1]
    except jinjamark.TemplateError as error:
        got = ("error", "TypeError" if "TypeError" in repr(error.__cause__) or "must be" in str(error)
               else type(error).__name__)
    assert got == want


# Unpacking a loop's items (loops.assign): an exact tuple of the target's length is bound at
# once, anything else walked as Jinja2 walks it (lists, strings, nested targets, wrong lengths).
UNPACKING = [
    "{% for k, v in d|items %}{{ k }}={{ v }};{% endfor %}",
    "{% for k, v in d|dictsort %}{{ k }}{{ v }}{% endfor %}",
    "{% for (a, b), c in [((1, 2), 3), ([4, 5], 6)] %}{{ a }}{{ b }}{{ c }}{% endfor %}",
    "{% for a, (b, c) in [(1, (2, 3)), (4, 'xy')] %}{{ a }}{{ b }}{{ c }}{% endfor %}",
    "{% for a, b in ['xy', [1, 2], (3, 4)] %}{{ a }}{{ b }}{% endfor %}",
    "{% for a, b in [(1, 2, 3)] %}{{ a }}{% endfor %}",
    "{% for a, b in [(1,)] %}{{ a }}{% endfor %}",
    "{% for a, b in d|items if b %}{{ a }}{{ loop.index }}{% endfor %}",
    "{% for a, a in [(1, 2), 'xy'] %}{{ a }}{% endfor %}",  # the last name bound wins
    "{% for k, v in d|dictsort %}{{ k }}{% set v = k ~ v %}{{ v }}{% endfor %}",
    "{% for k, v in d|items %}{% for k, w in [(v, k)] %}{{ k }}{{ w }}{% endfor %}{{ k }}{% endfor %}",
]


@pytest.mark.parametrize("hot", [10 ** 9, 1])
@pytest.mark.parametrize("source", UNPACKING)
def test_loop_items_unpack_as_in_jinja2(monkeypatch, hot, source):
    monkeypatch.setattr(tiers, "HOT", hot)
    data = {"d": {"b": 2, "a": 1, "c": 0}}
    try:
        want = ("text", oracle.compiled(source).render(**data))
    except Exception as error:  # noqa: BLE001 - the error is what is compared
        want = ("error", str(error))
    try:
        got = ("text", jinjamark.chat_environment().from_string(source).render(**data))
    except jinjamark.TemplateError as error:
        got = ("error", str(error).split("\n")[0])
    assert got == want


@pytest.mark.parametrize("hot", [10 ** 9, 1])
def test_filters_and_tests_are_looked_up_once_per_render(monkeypatch, hot):
    """As Jinja2 looks a template's filters up when its render starts: a macro called per item
    finds them once per render (the generated code keeps them, and whether each is the builtin
    it calls directly, in the evaluator), and the next render sees the environment's filters
    and tests as they are then."""
    monkeypatch.setattr(tiers, "HOT", hot)
    env = jinjamark.Environment()
    source = ("{% macro m(x, n) %}{{ x|upper }}{{ '+' if n is odd }}{% endmacro %}"
              "{% for x in xs %}{{ m(x, loop.index) }}{% endfor %}")
    template = env.from_string(source)
    for _ in range(2):
        assert template.render(xs=["a", "b", "c"]) == "A+BC+"
    env.filters["upper"] = lambda value: value + "!"
    env.tests["odd"] = lambda value: value == 2
    assert template.render(xs=["a", "b", "c"]) == "a!b!+c!"
    del env.filters["upper"]
    with pytest.raises(jinjamark.TemplateError, match="upper"):
        template.render(xs=["a"])


PRINT_RUNS = [
    "<|im_start|>{{ role }}\n{{ content }}<|im_end|>\n",
    "{% for m in ms %}[{{ m.a }}|{{ m.b ~ '!' ~ m.a }}]{{ '' }}{{ 'lit' }}{% endfor %}",
    "{% set x %}{{ '' }}{{ '' }}{% endset %}{{ x }}.{{ '' }}{{ '' }}",
    "{% macro m(v) %}<{{ v }}>{% endmacro %}a{{ m(role) }}b{{ m(content) }}c",
    "{{ ms[0] }}:{{ ms|length }}{{ missing }}/{{ ms[1].b|upper }}",
]


@pytest.mark.parametrize("source", PRINT_RUNS)
def test_a_run_of_prints_writes_and_fails_as_its_prints_do(monkeypatch, source):
    """Text and outputs one after the other are written at once by the generated code: the
    same text as Jinja2's, and under every output limit up to the text's length the same
    outcome as the closures' one print at a time (the error, its line and column)."""
    data = {"role": "user", "content": "hi there", "ms": [{"a": 1, "b": "x"}, {"a": 2, "b": "y"}]}
    assert jinjamark.chat_environment().from_string(source).render(**data) == \
        oracle.compiled(source).render(**data)

    def outcome(hot: int, limit: int) -> str:
        monkeypatch.setattr(tiers, "HOT", hot)
        env = jinjamark.chat_environment()
        env.limits = jinjamark.Limits(max_output=limit)
        template = env.from_string(source)
        try:
            for _ in range(2):  # the second render runs the generated code when hot is 1
                text = template.render(**data)
        except jinjamark.TemplateError as error:
            return f"error {error}"
        return text

    full = outcome(10 ** 9, 10 ** 6)
    for limit in range(len(full) + 1):
        assert outcome(1, limit) == outcome(10 ** 9, limit), limit


BLOCK_SETS = [
    "{% for m in ms %}{% set c %}<{{ m }}>{% endset %}{{ c }}{% endfor %}{{ c }}",
    "{% set c %}a{% set d = 1 %}{{ d }}{% endset %}{{ c }}{{ d }}",
    "{% for m in ms %}{% set c %}{% if m > 1 %}{{ m }}{% endif %}{% endset %}[{{ c }}]{% endfor %}",
    "{% macro f(x) %}{% set c %}({{ x }}){% endset %}{{ c ~ c }}{% endmacro %}{{ f(1) }}{{ f(2) }}",
    "{% set c %}{% for m in ms %}{{ loop.index }}{% endfor %}{% endset %}{{ c|length }}{{ c }}",
    "{% set x = 'o' %}{% set c %}{{ x }}{% set x = 'i' %}{{ x }}{% endset %}{{ c }}{{ x }}",
    "{% for m in ms %}{% set c %}{{ m }}{% if m == 2 %}{% continue %}{% endif %}!{% endset %}[{{ c }}]"
    "{% endfor %}end",
    "{% for m in ms %}{% set c %}{{ m }}{% if m == 2 %}{% break %}{% endif %}{% endset %}{{ c }}{% endfor %}.",
]


@pytest.mark.parametrize("hot", [10 ** 9, 1])
@pytest.mark.parametrize("source", BLOCK_SETS)
def test_a_block_set_renders_as_in_jinja2(monkeypatch, hot, source):
    """A block `set` written out by the generated code (its body into a list of its own, in a
    frame of its own): the text of Jinja2's, also where a loop's continue or break leaves it."""
    import jinja2
    monkeypatch.setattr(tiers, "HOT", hot)
    env = jinjamark.Environment(extensions=["jinja2.ext.loopcontrols"])
    template = env.from_string(source)
    want = jinja2.Environment(extensions=["jinja2.ext.loopcontrols"]).from_string(source).render(ms=[1, 2, 3])
    assert [template.render(ms=[1, 2, 3]) for _ in range(2)] == [want, want]
