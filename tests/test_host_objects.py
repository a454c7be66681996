"""Host objects (issue 14): what an embedder passes that is not plain data (a dataclass, a named
tuple, a date, an object of its own) is read as Jinja2's SandboxedEnvironment reads it. Every
case renders on jinjamark and on Jinja2 (ImmutableSandboxedEnvironment for `immutable=True`)
and compares; the differences jinjamark keeps on purpose (COMPATIBILITY.md) have tests of their
own below."""
from __future__ import annotations

import collections
import dataclasses
import datetime
import re
import types
from typing import Any

import jinja2
import jinja2.sandbox
import pytest
from hypothesis import given, settings, strategies as st

import jinjamark
from jinjamark import mark_input


# ---------------------------------------------------------------------------- the host's objects

@dataclasses.dataclass
class User:
    name: str
    age: int
    _secret: str = "hidden"

    def greet(self, who: str = "you") -> str:
        return f"hi {who}, I am {self.name}"


class Plain:
    kind = "plain"

    def __init__(self) -> None:
        self.title = "Dr"
        self._private = "p"

    @property
    def upper(self) -> str:
        return self.title.upper()

    def method(self) -> str:
        return "m"

    @jinjamark.unsafe
    def dangerous(self) -> str:
        return "boom"

    def delete(self) -> str:  # Django's convention, which Jinja2's sandbox honours
        return "deleted"
    delete.alters_data = True  # type: ignore[attr-defined]


Point = collections.namedtuple("Point", "x y")


class Shown:
    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        return f"<<{self.text}>>"


class Bag:
    def __getitem__(self, key: Any) -> str:
        if key == "missing":
            raise KeyError(key)
        return f"bag[{key!r}]"


class Seq:
    def __init__(self, n: int) -> None:
        self.n = n

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self) -> int:
        return self.n

    def __contains__(self, item: Any) -> bool:
        return item == "in"


class Html:
    def __html__(self) -> str:
        return "<b>safe</b>"

    def __str__(self) -> str:
        return "<b>plain</b>"


class Dynamic:
    def __getattr__(self, name: str) -> str:
        return f"dyn-{name}"


class DictSub(dict):
    extra = "attr"


class ListSub(list):
    note = "n"


def context() -> dict:
    """A fresh context per render: some cases change their objects."""
    return dict(u=User("ada", 36), us=[User("bo", 20), User("ada", 36), User("cy", 20)],
                p=Plain(), pt=Point(1, 2), pts=[Point(3, 1), Point(1, 2), Point(3, 0)],
                d=datetime.date(2024, 5, 6), dt=datetime.datetime(2024, 5, 6, 7, 8, 9),
                s=Shown("x"), bag=Bag(), seq=Seq(3), h=Html(), g=Dynamic(),
                sub=DictSub(a=1), ls=ListSub([3, 1]), dq=collections.deque([1, 2]),
                f=lambda: 1, cls=User, gen=(i for i in range(2)))


def ours(immutable: bool = False, **options: Any) -> jinjamark.Environment:
    return jinjamark.Environment(immutable=immutable, **options)


def theirs(immutable: bool = False, **options: Any) -> jinja2.Environment:
    kind = (jinja2.sandbox.ImmutableSandboxedEnvironment if immutable
            else jinja2.sandbox.SandboxedEnvironment)
    return kind(**options)


def outcome(env: Any, source: str, **extra: Any) -> tuple:
    """('ok', output) or ('error', kind): SecurityError and UndefinedError by name; any other
    error is 'error' (ours is a TemplateError where Jinja2 lets Python's escape)."""
    try:
        return "ok", env.from_string(source).render(context(), **extra)
    except (jinja2.exceptions.SecurityError, jinjamark.SecurityError):
        return "error", "SecurityError"
    except (jinja2.exceptions.UndefinedError, jinjamark.UndefinedError):
        return "error", "UndefinedError"
    except Exception:  # noqa: BLE001 - only that both raise is compared
        return "error", "other"


def assert_same(source: str, immutable: bool = False, **options: Any) -> tuple:
    mine = outcome(ours(immutable, **options), source)
    jinja = outcome(theirs(immutable, **options), source)
    assert mine == jinja, f"{source!r}: jinjamark {mine!r}, Jinja2 {jinja!r}"
    return mine


# ---------------------------------------------------------------------------- reading, printing

CASES = [
    # a dataclass: attributes, items, methods, filters that take an attribute
    "{{ u.name }} {{ u['age'] }} {{ u.greet() }} {{ u.greet(who='x') }}",
    "{{ u }}|{{ us }}|{{ u ~ '' }}|{{ u|string }}",
    "{{ u.missing }}|{{ u['missing'] }}|{{ u.missing is defined }}|{{ u.name is defined }}",
    "{{ us|map(attribute='name')|join(',') }}",
    "{{ us|sort(attribute='age,name')|map(attribute='name')|list }}",
    "{{ us|sort(attribute='age', reverse=true)|map(attribute='name')|list }}",
    "{{ us|groupby('age') }}",
    "{% for age, group in us|groupby('age') %}{{ age }}:{{ group|map(attribute='name')|join('+') }};"
    "{% endfor %}",
    "{% for g in us|groupby('age') %}{{ g.grouper }}={{ g.list|length }};{% endfor %}",
    "{{ us|unique(attribute='age')|list }}",
    "{{ us|min(attribute='age') }}|{{ us|max(attribute='name') }}",
    "{{ us|selectattr('age', 'gt', 25)|list }}|{{ us|rejectattr('age', 'gt', 25)|map(attribute='name')|list }}",
    "{{ us|selectattr('name', 'equalto', 'cy')|first }}",
    "{{ us|sum(attribute='age') }}|{{ us|map(attribute='missing', default='d')|list }}",
    "{{ us|join(', ', attribute='name') }}",
    "{{ u|attr('name') }} {{ u|attr('greet')() }} {{ u|attr('missing') is defined }}",
    "{{ u.name|upper }} {{ u.age + 1 }} {{ u.name ~ u.age }} {{ u.name[0] }}",
    # a plain object: instance and class attributes, a property, methods
    "{{ p.title }} {{ p.kind }} {{ p.upper }} {{ p.method() }} {{ p['title'] }}",
    "{{ p.method is callable }} {{ p.dangerous is callable }} {{ p.title is string }}",
    # a named tuple
    "{{ pt }} {{ pt.x }} {{ pt[1] }} {{ pt.y + pt['x'] }} {{ pt|list }} {{ pt|length }}",
    "{{ pt.count(1) }} {{ pt.index(2) }} {{ pt|sum }} {{ pt|max }}",
    "{{ pts|sort(attribute='x') }}|{{ pts|sort(attribute='0') }}|{{ pts|sort(attribute='x,y') }}",
    "{{ pts|map(attribute='y')|sum }}|{{ pts|groupby('x')|list }}|{{ pts|groupby(1)|list }}",
    "{{ pts|unique(attribute='x')|list }}|{{ pts|max(attribute='y') }}|{{ pts|min(attribute='1') }}",
    # dates: printed with str(), their methods callable
    "{{ d }} {{ d.year }} {{ d.isoformat() }} {{ d.strftime('%Y/%m') }} {{ d.weekday() }}",
    "{{ dt }} {{ dt.hour }} {{ dt.date() }} {{ d.replace(year=2000) }} {{ [d] }}",
    "{{ d < dt.date() }} {{ d == d }} {{ [dt.date(), d]|max }}",
    # an object's own __str__, __getitem__, __iter__, __len__, __contains__, __getattr__
    "{{ s }} {{ s.text }} {{ s|string }} {{ s ~ '!' }} {{ '%s' % s }} {{ '{}'.format(s) }}",
    "{{ bag.x }} {{ bag['y'] }} {{ bag[1] }} {{ bag.missing }}|{{ bag['missing'] }}|{{ bag[1:2] }}",
    "{{ seq|list }} {{ seq|length }} {{ 'in' in seq }} {% for i in seq %}{{ loop.index }}/{{ loop.length }}{% endfor %}",
    "{{ seq|join('-') }} {{ seq|sum }} {{ seq|first }} {{ seq|map('string')|list }}",
    "{{ g.anything }} {{ g['x'] }} {{ g._hidden is defined }}",
    # __html__: safe when autoescaping (see the autoescape cases), str() when not
    "{{ h }} {{ h|string }} {{ h|safe }} {{ h|e }} {{ [h]|join }} {{ [h, s]|join(',') }}",
    # tests and filters on host objects
    "{{ u is mapping }} {{ u is sequence }} {{ u is iterable }} {{ seq is iterable }} {{ sub is mapping }} {{ pt is sequence }}",
    "{{ u is callable }} {{ u.greet is callable }} {{ cls is callable }} {{ u is sameas u }} {{ u == u }} {{ u != us[0] }}",
    "{{ seq|reverse|list }} {{ pts|reverse|list }} {{ seq|batch(2)|list }} {{ seq|slice(2)|list }} {{ seq|count }}",
    "{{ sub|dictsort }} {{ sub|items|list }} {{ sub|xmlattr }} {{ sub|tojson }}",
    "{{ s|upper }} {{ s|replace('x','y') }} {{ s|center(9) }} {{ s|wordcount }} {{ s|trim }} {{ s|escape }}",
    "{{ d|replace('-', '/') }} {{ '%s|%s' % (d, pt) }} {{ '%s' % (u,) }} {{ '{} {}'.format(d, pt) }}",
    "{{ us|map('attr', 'name')|list }} {{ us|selectattr('greet')|list|length }} {{ us|selectattr('_secret')|list|length }}",
    "{% for u in us if u.age > 25 %}{{ u.name }}{% endfor %}{% for x, y in pts %}{{ x }}-{{ y }};{% endfor %}",
    "{% set ns = namespace(u=u) %}{{ ns.u.name }}{% macro show(x) %}{{ x.name }}{% endmacro %}{{ show(u) }}",
    "{{ us|groupby('age')|map(attribute='grouper')|list }} {{ us|groupby('age')|map(attribute='list')|map('length')|list }}",
    "{{ u|default('x') }} {{ u.nope|default('dflt') }} {{ u._secret|default('dflt') }}",
    "{{ seq|min }} {{ seq|max }} {{ seq|unique|list }} {{ seq|sort|list }} {{ u.age is divisibleby 4 }}",
    # containers of the host's own kinds
    "{{ sub.a }} {{ sub.extra }} {{ sub['a'] }} {{ sub.items()|list }} {{ sub|length }}",
    "{{ ls.note }} {{ ls|sort }} {{ ls[0] }} {{ ls|length }}",
    "{{ dq.maxlen }} {{ dq|list }} {{ dq[0] }}",
    # what Jinja2's sandbox refuses: underscore names, internals, unsafe callables
    "{{ u._secret }}|{{ u['_secret'] }}|{{ u|attr('_secret') }}|{{ p._private }}",
    "{{ u.__class__ }}|{{ u.__dict__ }}|{{ u.greet.__func__ }}|{{ pt._fields }}",
    "{{ u.__class__.__mro__ }}",
    "{{ u.greet.__globals__ }}",
    "{{ p.dangerous() }}",
    "{{ p.delete() }}",
    "{{ pt._asdict() }}",
    "{{ f.__code__ }}|{{ f.func_code }}|{{ f.__name__ }}",
    "{{ cls.mro() }}",
    "{{ cls.__subclasses__() }}",
    "{{ (cls|attr('__subclasses__'))() }}",
    "{{ gen.gi_frame }}|{{ gen.gi_code }}|{{ gen.gi_frame is defined }}",
    "{{ gen.gi_frame.f_globals }}",
    "{{ us|map(attribute='_secret')|list }}",
    "{{ us|sort(attribute='__class__')|map(attribute='name')|list }}",
    "{{ us|map(attribute='__class__.__name__')|list }}",
    "{{ '{0.name}'.format(u) }}",
    # mutating methods of the host's containers: allowed here, refused with immutable=True
    "{{ ls.append(5) }}{{ ls }}",
    "{{ sub.update({'b': 2}) }}{{ sub|dictsort }}",
    "{{ dq.append(3) }}{{ dq|list }}",
    "{{ dq.append(3) }}{{ dq.pop() }}{{ dq|list }}",
]


@pytest.mark.parametrize("immutable", [False, True], ids=["sandboxed", "immutable"])
@pytest.mark.parametrize("source", CASES)
def test_host_objects_read_as_in_jinja2s_sandbox(source, immutable):
    assert_same(source, immutable)


@pytest.mark.parametrize("source", [
    "{{ h }}|{{ h|e }}|{{ h|safe }}|{{ h|string }}|{{ [h]|join(',') }}|{{ [h, '<']|join }}",
    "{{ s }}|{{ u }}|{{ u.name }}|{{ d }}|{{ pt }}",
])
def test_host_objects_under_autoescaping(source):
    assert_same(source, autoescape=True)


def test_the_cases_meet_every_refusal():
    refused = [case for case in CASES if assert_same(case)[0] == "error"]
    assert len(refused) >= 9  # each of them also a SecurityError or UndefinedError by name
    assert all(assert_same(case)[1] in ("SecurityError", "UndefinedError") for case in refused)


# ---------------------------------------------------------------------------- generated access

OBJECTS = ["u", "p", "pt", "d", "s", "bag", "g", "sub", "ls", "dq", "f", "cls", "gen", "seq", "h"]
NAMES = ["name", "title", "kind", "upper", "x", "year", "text", "extra", "note", "maxlen",
         "missing", "greet", "method", "dangerous", "delete", "append", "pop", "update", "count",
         "mro", "gi_frame", "gi_code", "func_code", "_secret", "_private", "_fields", "_x",
         "__class__", "__dict__", "__init__", "__globals__", "__subclasses__", "__len__"]
ACCESS = ["{o}.{n}", "{o}['{n}']", "{o}|attr('{n}')", "[{o}]|map(attribute='{n}')|first",
          "[{o}]|selectattr('{n}')|list|length"]


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(OBJECTS), st.sampled_from(NAMES), st.sampled_from(ACCESS), st.booleans())
def test_generated_attribute_reads_agree_with_jinja2(obj, name, access, immutable):
    """Whatever is read, both engines agree on whether it is there, callable, refused, and on
    its text when it is a string or a number (objects print without addresses here)."""
    expr = access.format(o=obj, n=name)
    source = (f"{{% set v = {expr} %}}{{{{ v is defined }}}}|{{{{ v is callable }}}}|"
              "{{ v if v is string or v is number else '-' }}")
    assert_same(source, immutable)


FILTERS = ["sort(attribute='{a}')", "map(attribute='{a}')|list", "groupby('{a}')|list",
           "unique(attribute='{a}')|list", "min(attribute='{a}')", "max(attribute='{a}')",
           "selectattr('{a}')|list", "rejectattr('{a}')|list", "sum(attribute='{a}')",
           "map(attribute='{a}', default=0)|list", "join(',', attribute='{a}')"]
FIELDS = ["name", "age", "x", "y", "0", "name.0", "missing", "_secret", "__class__", "greet"]
HOSTS = st.one_of(
    st.builds(User, st.sampled_from(["ada", "bo", "Cy", ""]), st.integers(-3, 3)),
    st.builds(Point, st.integers(-2, 2), st.integers(-2, 2)))


@settings(max_examples=150, deadline=None)
@given(st.lists(HOSTS, max_size=4), st.lists(st.sampled_from(FILTERS), min_size=1, max_size=2),
       st.sampled_from(FIELDS))
def test_generated_filter_chains_over_host_objects_agree_with_jinja2(items, filters, field):
    source = "{{ items|" + "|".join(f.format(a=field) for f in filters) + " }}"
    mine = outcome(ours(), source, items=items)
    jinja = outcome(theirs(), source, items=items)
    assert mine == jinja, f"{source!r} on {items!r}: jinjamark {mine!r}, Jinja2 {jinja!r}"


# ---------------------------------------------------------------------------- the hooks

class _Refusing:
    """An environment subclass's own policy: no `age`, nothing named `greet` callable."""

    def is_safe_attribute(self, obj, attr, value):
        return attr != "age" and super().is_safe_attribute(obj, attr, value)

    def is_safe_callable(self, obj):
        return getattr(obj, "__name__", "") != "greet" and super().is_safe_callable(obj)


class OurRefusing(_Refusing, jinjamark.Environment):
    pass


class TheirRefusing(_Refusing, jinja2.sandbox.SandboxedEnvironment):
    pass


@pytest.mark.parametrize("source", [
    "{{ u.name }}|{{ u.age }}|{{ u.age is defined }}",
    "{{ u.age + 1 }}",
    "{{ us|map(attribute='age')|list }}",
    "{{ u.greet() }}",
    "{{ u.greet is callable }}",
    "{{ p.method() }}",
])
def test_is_safe_attribute_and_is_safe_callable_can_be_overridden(source):
    assert outcome(OurRefusing(), source) == outcome(TheirRefusing(), source)


def test_getattr_and_getitem_called_from_python_ask_the_environments_hooks():
    for env in (OurRefusing(), TheirRefusing()):
        user = User("ada", 36)
        assert env.getattr(user, "name") == "ada" and env.getitem(user, "name") == "ada"
        assert not env.getattr(user, "age")  # an unsafe undefined
        with pytest.raises((jinjamark.SecurityError, jinja2.exceptions.SecurityError)):
            str(env.getitem(user, "age") + 1)


@pytest.mark.parametrize("expression", ["u.age", "u.name", "u.age is defined", "us|map(attribute='age')|join(',')",
                                        "u.greet()", "u.greet is callable"])
def test_a_compiled_expression_asks_the_environments_hooks(expression):
    # (a compiled expression ran under the default policy, not its environment's, until the render's
    # policy moved onto its meter)
    def result(env: Any) -> tuple:
        try:
            return "ok", env.compile_expression(expression)(**context())
        except (jinja2.exceptions.SecurityError, jinjamark.SecurityError):
            return "error", "SecurityError"
    assert result(OurRefusing()) == result(TheirRefusing())


def test_the_hooks_are_jinja2s_defaults():
    for env in (jinjamark.Environment(), jinja2.sandbox.SandboxedEnvironment()):
        assert env.sandboxed is True
        assert env.is_safe_attribute(User("a", 1), "name", "a")
        assert not env.is_safe_attribute(User("a", 1), "_secret", "hidden")
        assert not env.is_safe_attribute(int, "mro", int.mro)
        assert not env.is_safe_callable(Plain().dangerous)
        assert not env.is_safe_callable(Plain().delete)
        assert env.is_safe_callable(Plain().method)
        assert env.intercepted_binops == frozenset() and env.intercepted_unops == frozenset()
    immutable = jinjamark.Environment(immutable=True)
    assert not immutable.is_safe_attribute([], "append", [].append)
    assert not immutable.is_safe_attribute(collections.deque(), "append", None)
    assert immutable.is_safe_attribute([], "index", [].index)


def test_jinja2s_sandbox_class_names_are_there():
    import pickle

    from jinjamark.sandbox import ImmutableSandboxedEnvironment, SandboxedEnvironment
    assert SandboxedEnvironment is jinjamark.Environment
    env = ImmutableSandboxedEnvironment(trim_blocks=True)
    assert env.immutable and env.trim_blocks and isinstance(env, jinjamark.Environment)
    assert pickle.loads(pickle.dumps(env)).immutable
    assert outcome(env, "{{ ls.append(1) }}") == outcome(theirs(immutable=True), "{{ ls.append(1) }}")


def test_unsafe_is_jinja2s_marker():
    @jinjamark.unsafe
    def f():
        return 1

    assert f.unsafe_callable is True
    assert not jinja2.sandbox.SandboxedEnvironment().is_safe_callable(f)  # Jinja2 agrees
    assert outcome(ours(), "{{ f() }}", f=f) == ("error", "SecurityError")
    assert outcome(theirs(), "{{ f() }}", f=f) == ("error", "SecurityError")


def test_an_unsafe_callable_is_refused_without_showing_its_repr():
    class Odd:
        def __getattr__(self, name):  # answers every name, unsafe_callable included
            return object()

        def __call__(self):
            return 0

    with pytest.raises(jinjamark.SecurityError) as caught:
        ours().from_string("{{ c() }}").render(c=Odd())
    assert "0x" not in str(caught.value) and "object at" not in str(caught.value)


# ---------------------------------------------------------------------------- operators

@pytest.mark.parametrize("op, left, right", [("+", 1, 2), ("-", 5, 7), ("*", "ab", 3),
                                              ("/", 7, 2), ("//", 7, 2), ("%", 7, 3),
                                              ("**", 2, 10), ("+", [1], [2]),
                                              ("%", "a%sb", "x")])
def test_call_binop_applies_the_default_table(op, left, right):
    assert ours().call_binop(None, op, left, right) == theirs().call_binop(None, op, left, right)


@pytest.mark.parametrize("op, value", [("-", 3), ("+", -2), ("-", 2.5)])
def test_call_unop_applies_the_default_table(op, value):
    assert ours().call_unop(None, op, value) == theirs().call_unop(None, op, value)


def test_call_binop_uses_a_replaced_table_entry():
    for env in (ours(), theirs()):
        env.binop_table["+"] = lambda a, b: f"{a}&{b}"
        env.unop_table["-"] = lambda a: f"neg {a}"
        assert env.call_binop(None, "+", 1, 2) == "1&2"
        assert env.call_unop(None, "-", 1) == "neg 1"
        assert env.from_string("{{ 1 + 2 }}|{{ -a }}").render(a=2) == "3|-2"  # not intercepted


def test_call_binop_keeps_the_limits():
    with pytest.raises(jinjamark.LimitExceeded):
        ours().call_binop(None, "*", "x", 10 ** 9)
    with pytest.raises(jinjamark.LimitExceeded):
        ours().call_binop(None, "**", 10, 10 ** 9)


def test_call_binop_keeps_marks():
    left = jinjamark.marks.mark("<|im_end|>")
    result = ours().call_binop(None, "+", left, "!")
    assert result == "<|im_end|>!" and result.spans == ((0, 10),)


def test_setting_intercepted_operators_recompiles_templates():
    env = ours()
    before = env.from_string("{{ 1 + 2 }}")
    env.intercepted_binops = {"+"}
    assert env.intercepted_binops == frozenset({"+"})
    assert env.from_string("{{ 1 + 2 }}") is not before  # compiled again, as Jinja2 does
    loaded = ours(loader=jinjamark.DictLoader({"t": "{{ -1 }}"}))
    first = loaded.get_template("t")
    loaded.intercepted_unops = {"-"}
    assert loaded.get_template("t") is not first


def test_intercepted_operators_can_be_set_on_a_subclass():
    class Intercepting(jinjamark.Environment):
        intercepted_unops = frozenset({"-"})

    assert Intercepting().intercepted_unops == frozenset({"-"})
    assert Intercepting().intercepted_binops == frozenset()


@pytest.mark.parametrize("source, values", [("{{ 1 + 2 }}", {}), ("{{ a + 2 }}", {"a": 2}),
                                            ("{{ -a }}", {"a": 2}), ("{{ -1 }}", {})])
def test_intercepted_operators_call_the_environment(source, values):
    outputs = []
    for env in (ours(), theirs()):
        env.intercepted_binops = frozenset({"+"})
        env.intercepted_unops = frozenset({"-"})
        env.binop_table["+"] = lambda a, b: f"{a} plus {b}"
        env.unop_table["-"] = lambda a: f"minus {a}"
        outputs.append(env.from_string(source).render(values))
    assert outputs[0] == outputs[1]


# ---------------------------------------------------------------------------- what jinjamark keeps

HOST_REPR = re.compile(r"0x[0-9a-f]+|<(bound method|function|class|module) |test_host_objects\.")


@pytest.mark.parametrize("source", ["{{ p }}", "{{ [p, s] }}", "{{ p.method }}", "{{ cls.greet }}",
                                    "{{ u.greet }}", "{{ f }}", "{{ cls }}", "{{ gen }}"])
def test_objects_without_text_of_their_own_print_without_an_address(source):
    output = ours().from_string(source).render(context())
    assert not HOST_REPR.search(output), output
    assert output  # printed as their kind, e.g. <Plain object>, <callable greet>


CHAIN_NAMES = NAMES + ["__func__", "__self__", "__code__", "__builtins__", "__mro__", "f_globals",
                      "tb_frame", "os", "path", "system", "__getattribute__", "__reduce_ex__"]


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(OBJECTS), st.lists(st.sampled_from(CHAIN_NAMES), min_size=1, max_size=3),
       st.sampled_from(["{{ %s }}", "{{ %s() }}", "{{ %s|string }}", "{{ [%s]|list }}"]),
       st.booleans())
def test_no_attribute_chain_on_a_host_object_shows_python_internals(obj, names, shape, immutable):
    """Whatever a template chains onto a host object, it renders without a host repr (class,
    function, frame, address) or fails with a TemplateError."""
    source = shape % ".".join([obj, *names])
    try:
        output = ours(immutable).from_string(source).render(context())
    except jinjamark.TemplateError:
        return
    assert not re.search(r"0x[0-9a-f]{6,}|<class |<function |<frame |<code |<module |<bound ",
                         output), (source, output)


def test_a_module_passed_in_is_refused_beyond_jinja2():
    env = ours()
    assert env.from_string("{{ m.OrderedDict }}").render(m=collections) == ""
    with pytest.raises(jinjamark.SecurityError):
        env.from_string("{{ m.OrderedDict() }}").render(m=collections)
    with pytest.raises(jinjamark.SecurityError):
        env.from_string("{{ m.path.join('a', 'b') }}").render(m=__import__("os"))


@pytest.mark.parametrize("method", ["popleft()", "appendleft(0)", "rotate(1)", "extendleft([0])"])
def test_the_immutable_sandbox_also_refuses_a_deques_own_methods(method):
    """Jinja2 checks a deque as a MutableSequence first, so these four pass its immutable
    sandbox; they change the deque all the same."""
    source = "{{ dq.%s }}{{ dq|list }}" % method
    assert outcome(ours(immutable=True), source) == ("error", "SecurityError")
    assert outcome(theirs(immutable=True), source)[0] == "ok"
    assert outcome(ours(), source) == outcome(theirs(), source)


def test_a_refused_attribute_fails_loudly_under_strict_undefined():
    for env in (ours(undefined=jinjamark.StrictUndefined),
                theirs(undefined=jinja2.StrictUndefined)):
        with pytest.raises((jinjamark.SecurityError, jinja2.exceptions.SecurityError)):
            env.from_string("{{ u._secret }}").render(u=User("a", 1))


# ---------------------------------------------------------------------------- marks

def test_a_host_objects_text_is_host_data():
    parts = ours().from_string("{{ u.name }}|{{ s }}|{{ d }}").render_parts(context())
    assert all(not part.is_input for part in parts)


def test_a_host_object_holding_marked_text_keeps_its_marks():
    user = User(jinjamark.marks.mark("<|im_end|>"), 1)
    parts = ours().from_string("[{{ u.name }}]").render_parts(u=user)
    assert [(p.text, p.is_input) for p in parts] == [("[", False), ("<|im_end|>", True), ("]", False)]


def test_a_host_object_holding_marked_text_prints_as_input():
    """Its own __str__ or __repr__ builds the text without the marks: all of it is input."""
    marked = jinjamark.marks.mark("<|im_end|>")
    shown = [User(marked, 1), Shown(marked), Point(marked, 1), Point([marked], 0)]
    for value in shown:
        parts = ours().from_string("{{ v }}|{{ [v] }}").render_parts(v=value)
        assert all(p.is_input for p in parts if "<|im_end|>" in p.text), (value, parts)
        assert any(p.is_input for p in parts)
    plain = ours().from_string("{{ v }}").render_parts(v=User("<|im_end|>", 1))
    assert [p.is_input for p in plain] == [False]


def test_a_method_of_a_host_object_holding_marked_text_returns_input():
    user = User(jinjamark.marks.mark("<|im_end|>"), 1)
    parts = ours().from_string("{{ u.greet() }}").render_parts(u=user)
    assert [(p.text, p.is_input) for p in parts] == [("hi you, I am <|im_end|>", True)]
    plain = ours().from_string("{{ u.greet() }}").render_parts(u=User("<|im_end|>", 1))
    assert [p.is_input for p in plain] == [False]


def test_a_host_object_given_as_input_is_its_data():
    """mark_input (and so ChatTemplate) takes a dataclass as the dict of its fields."""
    data = mark_input({"u": User("<|im_end|>", 1)})
    parts = ours().from_string("{{ u.name }}").render_parts(data)
    assert [(p.text, p.is_input) for p in parts] == [("<|im_end|>", True)]


def test_an_object_a_host_function_makes_from_input_is_input_all_through():
    env = ours()
    env.filters["wrap"] = lambda text: types.SimpleNamespace(text=str(text), size=len(text),
                                                             parts=[str(text)])
    source = "{% set w = x | wrap %}{{ w.text }}|{{ w.size }}|{{ w.parts[0] }}|{{ w['text'] if false }}"
    parts = env.from_string(source).render_parts(mark_input({"x": "<|im_end|>"}))
    shown = [(p.text, p.is_input) for p in parts if p.text != "|"]
    assert shown == [("<|im_end|>", True), ("10", True), ("<|im_end|>", True)]
    refused = env.from_string("{{ (x | wrap).__class__ }}").render(mark_input({"x": "a"}))
    assert refused == ""
