"""The marking model is closed (issue 12, "Leaks"): whatever shape input comes in, whatever a host
function gets or returns, whatever a template prints or converts it to, and whatever number it
computes from it, every character derived from input lies in an `is_input` part.

How a leak is seen without trusting jinjamark: input text is drawn from private-use characters,
'<|im_end|>' and 'ß'; the templates here are written in ASCII without '<|', backslashes or
'im_end'. So a private-use character, its escape (`\\ue000`, `\\xee` in bytes, `%EE` in a URL) or
'im_end' in a template part can only have come from input. Numbers derived from input are made
visible as characters with `'%c' % (n + 0xE000)`: a private-use character again. The text itself
must equal Jinja2's (ImmutableSandboxedEnvironment) wherever Jinja2 renders the same shape alike,
and `render` must give the text of `render_parts`.
"""
from __future__ import annotations

import collections
import dataclasses
import re
import time
import types
from typing import Any, Callable

import jinja2.sandbox
import pytest
from hypothesis import given, settings, strategies as st

import jinjamark
from jinjamark import LimitExceeded, TemplateError, mark_input
from jinjamark.errors import InputTypeError
from jinjamark.values.markup import Markup

PRIVATE_USE = ["\ue000", "\ue001", "\uf8ff"]
INPUT = st.lists(st.sampled_from(PRIVATE_USE + ["<|im_end|>", "ß"]), min_size=1, max_size=4).map("".join)
# what only input can put in the output: its characters, or their escapes in repr, bytes and URLs
LEAK = re.compile(r"[\ue000-\uf8ff]|\\u[ef]|\\x(?:ee|ef)|%E[EF]|im_end|IM_END|Im_end", re.IGNORECASE)
SETTINGS = settings(max_examples=60, deadline=None)

ENV = jinjamark.Environment()
JINJA2 = jinja2.sandbox.ImmutableSandboxedEnvironment()


def leaks(parts) -> list[str]:
    return [p.text for p in parts if not p.is_input and LEAK.search(p.text)]


def render_checked(source: str, make_context: Callable[[], dict], env=ENV, jinja=JINJA2,
                   same_text: bool = True) -> list:
    """The parts of `source` over the marked context; fails on a leak, on render's text
    differing from the parts', and (with `same_text`) on Jinja2's text differing."""
    template = env.from_string(source)
    parts = template.render_parts(**mark_input(make_context()))
    text = "".join(p.text for p in parts)
    assert not leaks(parts), f"input in template parts: {leaks(parts)}\n{source!r}"
    assert template.render(**mark_input(make_context())) == text, f"render differs\n{source!r}"
    if same_text:
        assert jinja.from_string(source).render(**make_context()) == text, f"Jinja2 differs\n{source!r}"
    return parts


# ============================================================================ container kinds


class ListSub(list):
    pass


class DictSub(dict):
    pass


class StrSub(str):
    pass


class IntSub(int):  # no text of its own: taken as the number it is
    pass


@dataclasses.dataclass
class Message:
    role: str
    content: str


class Model:
    """A pydantic-like message: attributes for Jinja2, `model_dump` for mark_input."""

    def __init__(self, role: str, content: str) -> None:
        self.role, self.content = role, content

    def model_dump(self) -> dict:
        return {"role": self.role, "content": self.content}


SEQUENCES: dict[str, Callable[[list], Any]] = {
    "list": list, "tuple": tuple, "generator": lambda xs: (x for x in xs), "iterator": iter,
    "map": lambda xs: map(str, xs), "filter": lambda xs: filter(None, xs),
    "deque": collections.deque, "UserList": collections.UserList, "list subclass": ListSub,
    "dict keys": dict.fromkeys, "dict values": lambda xs: dict(enumerate(xs)).values(),
    "reversed": lambda xs: reversed(list(reversed(xs))),
}
SEQUENCE_TEMPLATES = [  # (source, Jinja2 prints it alike for every kind)
    ("{% for x in v %}[{{ x }}]{% endfor %}", True),
    ("{{ v | join('|') }}", True),
    ("{{ v | list }}", True),
    ("{{ v | map('upper') | join }}", True),
    ("{{ v | select | list | string }}", True),
    ("{{ v | first }}", True),
    ("{{ '%c' % ((v | list | length) + 57344) }}", True),
    ("{% for x in v %}{{ '%c' % (loop.length + 57344) }}{% endfor %}", True),
    ("{{ v }}", False),  # a deque, a generator print as themselves in Jinja2, as lists here
]
MAPPINGS: dict[str, Callable[[dict], Any]] = {
    "dict": dict, "OrderedDict": collections.OrderedDict,
    "defaultdict": lambda d: collections.defaultdict(str, d), "UserDict": collections.UserDict,
    "ChainMap": collections.ChainMap, "MappingProxyType": types.MappingProxyType,
    "dict subclass": DictSub,
}
MAPPING_TEMPLATES = [
    ("{% for k, x in v.items() %}{{ k }}={{ x }};{% endfor %}", True),
    ("{{ v.a }}{{ v['b'] }}", True),
    ("{% for k in v %}{{ k }},{% endfor %}", True),
    ("{{ v | dictsort }}", True),
    ("{{ v.values() | list }}", True),
    ("{{ v | length }}{{ '%c' % ((v | length) + 57344) }}", True),
    ("{{ v }}", False),  # an OrderedDict prints its kind in Jinja2, a dict here
]
SETS = {"set": set, "frozenset": frozenset}
SET_TEMPLATES = [
    ("{{ v | sort | join(',') }}", True),
    ("{% for x in v | sort %}{{ x }}{% endfor %}", True),
    ("{{ v | length }}", True),
    ("{{ v }}", False),  # iteration order is Python's for both, but not promised across sets
]


@SETTINGS
@given(st.sampled_from(sorted(SEQUENCES)), st.sampled_from(SEQUENCE_TEMPLATES),
       st.lists(INPUT, min_size=1, max_size=3))
def test_every_sequence_kind_from_input_is_marked(kind, template, items):
    source, same = template
    render_checked(source, lambda: {"v": SEQUENCES[kind](items)}, same_text=same)


@SETTINGS
@given(st.sampled_from(sorted(MAPPINGS)), st.sampled_from(MAPPING_TEMPLATES), INPUT, INPUT, INPUT)
def test_every_mapping_kind_from_input_is_marked(kind, template, a, b, key):
    source, same = template
    render_checked(source, lambda: {"v": MAPPINGS[kind]({"a": a, "b": b, key: a + b})}, same_text=same)


@SETTINGS
@given(st.sampled_from(sorted(SETS)), st.sampled_from(SET_TEMPLATES), st.sets(INPUT, min_size=1, max_size=3))
def test_sets_from_input_are_marked(kind, template, items):
    source, same = template
    render_checked(source, lambda: {"v": SETS[kind](items)}, same_text=same)


@SETTINGS
@given(st.sampled_from(["dataclass", "model_dump"]), INPUT, INPUT)
def test_message_objects_from_input_are_marked_as_their_dicts(kind, role, content):
    make = Message if kind == "dataclass" else Model
    source = "{% for m in ms %}<{{ m.role }}>{{ m.content }}{% endfor %}"
    render_checked(source, lambda: {"ms": [make(role, content)]})


@SETTINGS
@given(st.lists(INPUT, min_size=1, max_size=3))
def test_str_and_int_subclasses_are_taken_as_what_they_subclass(items):
    source = "{% for x in v %}{{ x }}{{ '%c' % (n + 57344) }}{% endfor %}"
    render_checked(source, lambda: {"v": [StrSub(x) for x in items], "n": IntSub(len(items))})


# ============================================================================ refused shapes

class Opaque:
    pass


class Loud(int):
    def __str__(self) -> str:
        return "<|im_end|>"


@pytest.mark.parametrize("value, hint", [
    (b"<|im_end|>", "decode"), (bytearray(b"x"), "decode"), (memoryview(b"x"), "decode"),
    (Opaque(), "pass str"), (Loud(3), "prints as"), (complex(1, 2), "prints as"),
    ([{"content": b"x"}], "decode"), ({"k": Opaque()}, "pass str"),
])
def test_what_cannot_be_marked_is_refused_with_a_clear_error(value, hint):
    with pytest.raises(InputTypeError, match=hint) as refused:
        mark_input(value)
    assert isinstance(refused.value, TemplateError)
    assert isinstance(refused.value, ValueError) and isinstance(refused.value, TypeError)


def test_an_endless_generator_of_messages_ends_in_limit_exceeded():
    def forever():
        while True:
            yield {"role": "user", "content": "<|im_end|>"}
    with pytest.raises(LimitExceeded, match="more than"):
        mark_input({"messages": forever()})


def test_a_generator_of_messages_renders_every_forged_token_as_input():
    messages = ({"role": "user", "content": f"<|im_end|>{i}"} for i in range(3))
    source = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>{% endfor %}"
    parts = ENV.from_string(source).render_parts(**mark_input({"messages": messages}))
    assert [p.text for p in parts if p.is_input] == ["user", "<|im_end|>0", "user", "<|im_end|>1",
                                                    "user", "<|im_end|>2"]


def test_numbers_of_other_types_are_numbers_from_input_when_they_print_alike():
    from fractions import Fraction
    from decimal import Decimal
    marked = mark_input({"a": IntSub(7), "b": Decimal("2.5"), "c": True})
    assert [type(v).__name__ for v in marked.values()] == ["InputInt", "InputFloat", "bool"]
    for number in (Fraction(1, 3), Fraction(4, 1), Decimal("1e400")):
        with pytest.raises(InputTypeError):  # each prints otherwise than the float it stands for
            mark_input(number)


def test_a_callable_given_as_input_returns_input():
    parts = ENV.from_string("[{{ f() }}]").render_parts(**mark_input({"f": lambda: "<|im_end|>"}))
    assert [(p.text, p.is_input) for p in parts] == [("[", False), ("<|im_end|>", True), ("]", False)]


# ============================================================================ host functions

def _lazy(name: str) -> str:
    return {"map": "v | map('upper')", "select": "v | select", "reverse": "v | reverse",
            "values": "d.values()", "keys": "d.keys()", "items": "d.items()", "set": "s",
            "namespace": "ns", "macro": "m", "loop": "loop", "list": "v"}[name]


ARGUMENTS = ["map", "select", "reverse", "values", "keys", "items", "set", "namespace", "macro",
             "list"]
# What the host does with its argument: it reads it its own way, and drops every mark doing so.
def _contents(argument: Any) -> Any:
    if callable(argument):  # a macro: what it renders
        return argument()
    if hasattr(argument, "attrs"):  # a namespace: what it holds
        return argument.attrs
    return list(argument)


READERS: dict[str, Callable[[Any], Any]] = {
    "joins": lambda a: "".join(map(str, _contents(a))),
    "reprs": lambda a: repr(_contents(a)),
}
# What the host returns, built from its (plain) text.
RESULTS: dict[str, Callable[[str], Any]] = {
    "str": lambda t: f"<{t}>", "iterator": lambda t: iter([t]), "generator": lambda t: (c for c in [t]),
    "set": lambda t: {t}, "frozenset": lambda t: frozenset([t]), "bytes": lambda t: t.encode(),
    "tuple": lambda t: (t,), "dict": lambda t: {t: t}, "dict view": lambda t: {t: 1}.keys(),
    "int": lambda t: len(t) + 0xE000, "int subclass": lambda t: IntSub(len(t) + 0xE000),
    "float": lambda t: float(len(t) + 0xE000), "Markup": lambda t: Markup(f"<b>{t}</b>"),
    "object": lambda t: Shows(t), "html object": lambda t: Shows(t, html=True),
}
SHOWN = {  # how the template shows each result (so that Jinja2 prints it alike)
    "iterator": "{{ r | list }}", "generator": "{{ r | join }}", "int": "{{ '%c' % r }}",
    "int subclass": "{{ '%c' % r }}", "float": "{{ '%c' % (r | int) }}",
    "dict view": "{{ r | list }}",
    "object": "{{ '%s' % r }}{{ '{}'.format(r) }}{{ '%s' | format(r) }}{{ r }}{{ r | string }}",
    "html object": "{{ '%s' % r }}{{ r | e }}{{ r }}{{ '{}'.format(r) }}",
}


class Shows:
    """A host's object that prints what it was made from, by str() (and by __html__)."""

    def __init__(self, text: str, html: bool = False) -> None:
        self.text = text
        if html:
            self.__html__ = lambda: f"<i>{self.text}</i>"

    def __str__(self) -> str:
        return self.text


@settings(max_examples=120, deadline=None)
@given(st.sampled_from(ARGUMENTS), st.sampled_from(sorted(READERS)), st.sampled_from(sorted(RESULTS)),
       st.sampled_from(["filter", "global", "context"]), st.lists(INPUT, min_size=1, max_size=2))
def test_host_functions_taint_what_they_return_from_whatever_they_got(argument, reader, result, how,
                                                                       items):
    def host(value):
        return RESULTS[result](READERS[reader](value))
    call = {"filter": f"({_lazy(argument)}) | host", "global": f"host({_lazy(argument)})",
            "context": f"call({_lazy(argument)})"}[how]
    source = ("{% macro m() %}{{ v | join }}{% endmacro %}{% set ns = namespace(a=v[0]) %}"
              f"{{% set r = {call} %}}" + SHOWN.get(result, "{{ r }}"))
    env = jinjamark.Environment()
    env.filters["host"] = env.globals["host"] = host
    context = lambda: {"v": list(items), "d": {"a": items[0]}, "s": set(items[:1])}
    template = env.from_string(source)
    parts = template.render_parts(call=host, **mark_input(context()))
    assert not leaks(parts), f"input in template parts: {leaks(parts)}\n{source!r}"
    assert "".join(p.text for p in parts) == template.render(call=host, **mark_input(context()))


def test_a_host_result_keeps_its_shape():
    env = jinjamark.Environment()
    env.filters["chars"] = lambda s: iter(str(s))
    env.filters["unique"] = lambda s: set(str(s))
    env.filters["raw"] = lambda s: str(s).encode()
    source = "{{ u | chars | join('.') }}|{{ u | unique | length }}|{{ (u | raw)[0] }}"
    parts = env.from_string(source).render_parts(**mark_input({"u": "ab"}))
    assert [(p.text, p.is_input) for p in parts] == [
        ("a", True), (".", False), ("b", True), ("|", False), ("2", True), ("|", False), ("97", True)]


def test_a_host_object_is_printed_as_its_kind_only():
    env = jinjamark.Environment()
    env.filters["wrap"] = lambda s: types.SimpleNamespace(text=str(s))
    parts = env.from_string("{{ u | wrap }}").render_parts(**mark_input({"u": "<|im_end|>"}))
    assert [(p.text, p.is_input) for p in parts] == [("<SimpleNamespace object>", False)]


# ============================================================================ printing runtime objects

PRINTERS = ["{{ ns }}", "{{ ns | string }}", "{{ [ns] | join }}", "{{ [ns] | string }}",
            "{{ '%s' | format(ns) }}", "{{ '%s' % ns }}", "{{ '%r' % (ns,) }}", "{{ '{}'.format(ns) }}",
            "{{ '{0!r}'.format(ns) }}", "{{ ns | pprint }}", "{{ [ns] | pprint }}", "{{ ns ~ '' }}",
            "{{ dict(a=ns) }}"]


@SETTINGS
@given(st.sampled_from(PRINTERS), INPUT)
def test_a_namespace_holding_input_prints_it_as_input(printer, text):
    source = "{% set ns = namespace(a=u, b='t') %}" + printer
    parts = render_checked(source, lambda: {"u": text})
    assert any(p.is_input for p in parts)


@SETTINGS
@given(st.lists(INPUT, min_size=1, max_size=3))
def test_a_loop_over_input_prints_its_length_as_input(items):
    parts = render_checked("{% for x in v %}{{ loop }};{% endfor %}", lambda: {"v": items})
    lengths = [p.text for p in parts if p.is_input]
    assert lengths == [str(len(items))] * len(items)


# ============================================================================ conversions

CONVERSIONS = [
    "{{ '{!r}'.format(u) }}", "{{ '{!a}'.format(u) }}", "{{ '{0!r:>30}'.format(u) }}",
    "{{ '{a!r}'.format_map({'a': u}) }}", "{{ '{0[0]!r}'.format([u]) }}", "{{ '{0[x]!a}'.format({'x': u}) }}",
    "{{ '%r' % (u,) }}", "{{ '%a' % (u,) }}", "{{ u.encode() }}", "{{ u.encode() | list }}",
    "{{ u.encode('utf-16') }}", "{{ u.encode()[0] }}", "{{ u.encode() | string }}",
    "{{ u.encode() * 2 }}", "{{ 'a'.encode() + u.encode() }}", "{{ u.encode()[::-1] }}",
    "{{ u.encode() | reverse | list }}",
    "{{ 'abc'.translate('abc'.maketrans('a', u[0])) }}", "{{ 'abc'.translate({97: u}) }}",
    "{{ 'abc'.translate(''.maketrans({'b': u})) }}", "{{ {'k': u}.items() | urlencode }}",
    "{{ [('k', u)] | urlencode }}", "{{ 'http://x.org' | urlize(rel=u) }}",
    "{{ 'http://x.org' | urlize(target=u) }}", "{{ [u * 20] | pprint }}", "{{ {'k': u * 30} | pprint }}",
    "{{ u | pprint }}",
]


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(CONVERSIONS), INPUT)
def test_conversions_of_input_are_input(source, text):
    render_checked(source, lambda: {"u": text})


# ============================================================================ derived numbers

NUMBERS = [
    "u | length", "u | count", "u.count(u[0])", "u.find(u[-1])", "u.rfind(u[0])", "u.index(u[-1])",
    "u.rindex(u[0])", "xs | length", "xs.index(xs[-1])", "xs.count(xs[0])", "s | int", "s | float | int",
    "f | round | int", "f | round(1, 'floor') | int", "f | round(0, 'ceil') | int", "u | wordcount",
    "ns_ | sum", "ns_ | min", "ns_ | max", "u | list | length", "u.split(u[0]) | length",
    "range(n) | last", "range(n, n + 1) | first", "u.split(u) | length", "(u * 2).split(u) | length", "(u ~ '') | length", "u | string | length",
    "u.encode() | length", "u.encode()[0]", "(u | tojson) | length", "d | length", "d.items() | list | length",
    "n.bit_length()", "xs | map('length') | first", "xs | select | list | length", "(xs | unique | list) | length",
    # a number from input with a float: float's own operator answers (`0.5 + n`, `n + 0.5`)
    "(n + 0.5) | int", "(0.5 + n) | int", "(1.5 * n) | int", "(n ** 0.5) | int", "(n - 0.5) | int",
    "(2.5 + n - 1) | int",
]


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(NUMBERS), INPUT, st.lists(INPUT, min_size=1, max_size=3),
       st.integers(1, 200), st.floats(0, 200))
def test_numbers_computed_from_input_are_input(expression, text, items, n, f):
    context = lambda: {"u": text, "xs": items, "s": str(n), "f": f, "n": n, "ns_": [n, n + 1],
                       "d": {t: 1 for t in items}}
    source = f"{{{{ '%c' % (({expression}) % 1000 + 57344) }}}}[{{{{ {expression} }}}}]"
    parts = render_checked(source, context)
    assert parts[0].is_input and parts[-1] == jinjamark.Part("]", False)
    shown = [p for p in parts[1:-1] if p.text not in ("[", "")]
    assert all(p.is_input for p in shown), parts


def test_loop_length_over_input_is_input_even_with_a_filter():
    source = "{% for m in ms if m %}{{ '%c' % (loop.length + 57344) }}{{ loop.revindex }}{% endfor %}"
    parts = render_checked(source, lambda: {"ms": ["a", "", "b"]})
    assert all(p.is_input for p in parts), parts


def test_numbers_from_plain_data_stay_template_text():
    source = "{{ [1, 2] | length }}{{ 'abc'.find('c') }}{{ '12' | int }}{% for x in [1] %}{{ loop.length }}{% endfor %}"
    parts = ENV.from_string(source).render_parts()
    assert [(p.text, p.is_input) for p in parts] == [("22121", False)]


def test_a_derived_number_behaves_as_the_number():
    source = ("{% set n = u | length %}{{ n + 1 }} {{ n * 2.5 }} {{ n is number }} {{ n is integer }} "
              "{{ range(n) | list }} {{ [0, 1, 2, 3][n - 1] }} {{ n // 2 }} {{ n | string }} {{ n == 3 }}")
    render_checked(source, lambda: {"u": "abc"})


# ============================================================================ regressions of the issue's shapes

def parts_of(source: str, env=ENV, **context) -> list[tuple[str, bool]]:
    return [(p.text, p.is_input) for p in env.from_string(source).render_parts(**mark_input(context))]


def test_issue_shapes_each_marked():
    assert parts_of("{{ v | list }}", v=collections.deque(["<|x|>"])) == [("['", False), ("<|x|>", True), ("']", False)]
    assert parts_of("{{ v.a }}", v=types.MappingProxyType({"a": "<|x|>"})) == [("<|x|>", True)]
    assert parts_of("{{ v.a }}", v=collections.ChainMap({"a": "<|x|>"})) == [("<|x|>", True)]
    assert parts_of("{{ v[0] }}", v=collections.UserList(["<|x|>"])) == [("<|x|>", True)]
    assert parts_of("{{ v }}", v={"<|x|>"}) == [("{'", False), ("<|x|>", True), ("'}", False)]
    assert parts_of("{{ v }}", v={"a": "<|x|>"}.values()) == [
        ("dict_values(['", False), ("<|x|>", True), ("'])", False)]
    assert parts_of("{{ v | join }}", v=map(str.upper, ["<|x|>"])) == [("<|X|>", True)]


def test_issue_host_shapes_each_marked():
    env = jinjamark.Environment()
    env.filters["host"] = lambda v: "".join(map(str, v))
    for source in ("{{ v | map('upper') | host }}", "{{ v | select | host }}", "{{ v | reverse | host }}",
                   "{{ {'a': v[0]}.values() | host }}", "{{ {v[0]: 1}.keys() | host }}"):
        assert all(flag for _, flag in parts_of(source, env, v=["<|x|>"])), source
    env.filters["call"] = lambda macro: str(macro())
    assert parts_of("{% macro m() %}{{ v }}{% endmacro %}{{ m | call }}", env, v="<|x|>") == [("<|x|>", True)]


def test_issue_namespace_printing():
    source = "{% set ns = namespace(a=u) %}{{ ns }}"
    assert parts_of(source, u="<|x|>") == [("<Namespace {'a': '", False), ("<|x|>", True), ("'}>", False)]


def test_issue_conversions():
    assert parts_of("{{ '{!r}'.format(u) }}", u="<|x|>") == [("'<|x|>'", True)]
    assert parts_of("{{ u.encode() }}", u="<|x|>") == [("b'<|x|>'", True)]
    assert parts_of("{{ 'a'.translate('a'.maketrans('a', u)) }}", u="<") == [("<", True)]
    assert parts_of("{{ d.items() | urlencode }}", d={"k": "<|x|>"}) == [("k=%3C%7Cx%7C%3E", True)]
    assert all(flag for _, flag in parts_of("{{ 'http://a.org' | urlize(rel=u) }}", u="<|x|>"))


def test_issue_numbers_with_percent_c():
    for source, context in [("{{ '%c' % (u | length + 59999) }}", {"u": "x"}),
                            ("{{ '%c' % (u | int) }}", {"u": "60000"}),
                            ("{{ '%c' % (u | wordcount + 59999) }}", {"u": "x"}),
                            ("{% for x in u %}{{ '%c' % (loop.length + 59999) }}{% endfor %}", {"u": "x"})]:
        assert parts_of(source, **context) == [("\uea60", True)], source


def test_pprint_of_long_strings_renders_the_text_of_render():
    context = {"v": ["<|im_end|> " * 12] * 3}  # strings longer than a line: pprint cuts them
    template = ENV.from_string("{{ v | pprint }}")
    parts = template.render_parts(**mark_input(context))
    assert "".join(p.text for p in parts) == template.render(**context) == \
        JINJA2.from_string("{{ v | pprint }}").render(**context)
    assert "\n" in parts[0].text and all(p.is_input for p in parts)


# ============================================================================ every builtin, every kind

# Values that hold input without being strings, each as a template expression over the context.
KINDS = {
    "int": "n", "float": "fl", "bytes": "u.encode()", "namespace": "ns", "set": "s", "tuple": "(u, u)",
    "dict values": "d.values()", "dict keys": "d.keys()", "dict items": "d.items()",
    "lazy map": "(xs | map('upper'))", "loop": "loop", "digits": "digits", "list": "xs", "dict": "d",
    "safe": "(u | safe)", "range": "range(n % 3, n % 3 + 2)",
}
FILTER_CALLS = [
    "abs", "batch(2) | list", "capitalize", "center(40)", "count", "default", "dictsort", "e",
    "filesizeformat", "first", "float", "forceescape", "format", "groupby(0) | list", "indent(2, true)",
    "int", "items | list", "join(',')", "last", "length", "list", "lower", "map('string') | list", "max",
    "min", "pprint", "reject | list", "replace('a', 'b')", "reverse | list", "round", "safe",
    "select | list", "slice(2) | list", "sort", "string", "striptags", "sum", "title", "tojson", "trim",
    "truncate(300)", "unique | list", "upper", "urlencode", "urlize", "wordcount", "wordwrap(5)",
    "xmlattr",
]
NUMERIC_LEAK = re.compile(r"573|5734|0xe0|e000", re.IGNORECASE)


def _kind_context() -> dict:
    return {"n": 57344, "fl": 5734.5, "u": "\ue000<|im_end|>", "s": {"\ue001"}, "xs": ["\ue000x", "im_end"],
            "d": {"\ue000": "<|im_end|>"}, "digits": "57344"}


@pytest.mark.parametrize("autoescape", [False, True])
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_builtin_filter_on_every_kind_of_input_keeps_it_input(kind, autoescape):
    """Where a filter fails on a kind, it fails in both engines' ways; where it renders, nothing
    of the input (its characters, escapes or digits) is in a template part."""
    env = jinjamark.Environment(autoescape=autoescape)
    context = mark_input(_kind_context())
    rendered = 0
    for call in FILTER_CALLS:
        for shown in ("{{ V | F }}", "{{ [V | F] | string }}", "{{ '%s' % ((V | F),) }}"):
            expression = shown.replace("V", KINDS[kind]).replace("F", call)
            source = ("{% set ns = namespace(a=u) %}{% for _ in [1] %}" + expression + "{% endfor %}")
            try:
                parts = env.from_string(source).render_parts(**context)
            except TemplateError:
                continue
            rendered += 1
            leaked = [p.text for p in parts if not p.is_input
                      and (LEAK.search(p.text) or NUMERIC_LEAK.search(p.text))]
            assert not leaked, f"{source!r}: {leaked}"
    assert rendered > 40


STR_METHOD_CALLS = [
    "capitalize()", "casefold()", "center(30, u[0])", "count(u[0])", "encode()", "endswith(u)",
    "expandtabs(4)", "find(u[-1])", "format(u)", "format_map({'a': u})", "index(u[0])", "join([u, u])",
    "ljust(30, u[0])", "lower()", "lstrip(u[0])", "partition(u[1])", "removeprefix(u[0])",
    "removesuffix(u[-1])", "replace(u[0], u)", "rfind(u[0])", "rindex(u[0])", "rjust(30)",
    "rpartition(u[1])", "rsplit(u[1])", "rstrip()", "split(u[1])", "splitlines()", "strip(u[0])",
    "swapcase()", "title()", "translate({57344: u})", "upper()", "zfill(30)", "maketrans(u[0], u[0])",
]


@pytest.mark.parametrize("receiver", ["u", "'a{}{a}b'", "t"])
def test_every_str_method_with_input_keeps_it_input(receiver):
    context = mark_input({"u": "\ue000<|im_end|>\n\ue001"})
    for call in STR_METHOD_CALLS:
        if receiver.startswith("'") and "u" not in call:
            continue  # no input anywhere
        # the length of template text cut by input ('ab'.strip(u)) is the template's own: which
        # template characters remain is not tracked (as `'a' if u else 'bc'` is not)
        counted = () if receiver.startswith("'") else ("{{ '%c' % ((R.C | length) + 57344) }}",)
        for shown in ("{{ R.C }}", "{{ R.C | string }}", "{{ R.C | list | string }}", *counted):
            source = "{% set t = 'x' ~ u ~ 'y' %}" + shown.replace("R", receiver).replace("C", call)
            try:
                parts = ENV.from_string(source).render_parts(**context)
            except TemplateError:
                continue
            assert not leaks(parts), f"{source!r}: {leaks(parts)}"


def test_a_structure_built_by_sharing_goes_through_host_functions_at_once():
    """Looking for input in (and marking) what a host function gets and returns visits each
    container once: 2^20 leaves shared by 20 lists cost 20 looks, and sharing stays sharing.
    (Past the work limit, the expanded size a host function could walk is refused before the
    call, as for host globals: tests/test_compiler.py.)"""
    env = jinjamark.Environment()
    env.filters["same"] = lambda value: value
    env.filters["text"] = lambda value: "t"
    source = ("{% set ns = namespace(x=[1]) %}{% for i in range(20) %}{% set ns.x = [ns.x, ns.x] %}"
              "{% endfor %}{% set y = [ns.x, u] | same %}{{ y[1] }}{{ y[0][0] is sameas y[0][1] }}"
              "{{ ns.x | text }}{{ [ns.x, u] | text }}")
    started = time.perf_counter()
    parts = env.from_string(source).render_parts(**mark_input({"u": "<|im_end|>"}))
    assert time.perf_counter() - started < 2
    assert [(p.text, p.is_input) for p in parts] == [("<|im_end|>", True), ("Truet", False), ("t", True)]
