"""Methods templates call on values, against Jinja2's ImmutableSandboxedEnvironment, and the
marks string methods keep."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jinjamark
from jinjamark import marks
from jinjamark.values.markup import Markup
from jinjamark.marks import mark
from jinjamark.values.methods import STR_METHODS, is_unsafe_method, lookup_method
from jinjamark.values.runtime import Method
from test_filters import OURS, OURS_IMMUTABLE, TEXT, assert_same

CONTEXT = {"s": "Hello, World", "csv": "a,b,,c", "pad": "  x y  ", "l": [3, 1, 3], "t": (1, 2),
           "d": {"a": 1, "b": [2]}, "n": None, "i": 10, "f": 2.5, "html": "<b>&</b>",
           "tmpl": "{0} and {1}", "named": "{x}-{y}"}

STRING_CASES = [
    "{{ s.upper() }}", "{{ s.lower() }}", "{{ s.title() }}", "{{ s.swapcase() }}",
    "{{ s.casefold() }}", "{{ s.capitalize() }}", "{{ pad.strip() }}|", "{{ pad.lstrip() }}|",
    "{{ pad.rstrip() }}|", "{{ s.strip('Hd') }}", "{{ csv.split(',') }}", "{{ csv.split(',', 1) }}",
    "{{ pad.split() }}", "{{ csv.rsplit(',', 2) }}", "{{ 'a\nb\r\nc'.splitlines() }}",
    "{{ 'a\nb'.splitlines(true) }}", "{{ s.partition(', ') }}", "{{ s.rpartition('o') }}",
    "{{ s.partition('z') }}", "{{ s.replace('l', 'L') }}", "{{ s.replace('l', 'L', 2) }}",
    "{{ s.startswith('He') }}", "{{ s.endswith(('x', 'd')) }}", "{{ s.find('o') }}",
    "{{ s.rfind('o') }}", "{{ s.index('W') }}", "{{ s.index('z') }}", "{{ s.rindex('l') }}",
    "{{ s.count('l') }}", "{{ s.center(20, '*') }}", "{{ s.ljust(15, '.') }}",
    "{{ s.rjust(15) }}|", "{{ s.center(3) }}", "{{ 'ab'.center(5, 'xy') }}", "{{ '42'.zfill(5) }}",
    "{{ '-42'.zfill(6) }}", "{{ 'a\tb'.expandtabs(4) }}", "{{ ', '.join(['a', 'b']) }}",
    "{{ ''.join(csv.split(',')) }}", "{{ '-'.join([1, 2]) }}", "{{ '-'.join('abc') }}",
    "{{ s.removeprefix('Hello') }}", "{{ s.removesuffix('World') }}", "{{ s.isalpha() }}",
    "{{ 'abc'.isalpha() }}", "{{ '12'.isdigit() }}", "{{ '12'.isdecimal() }}",
    "{{ '½'.isnumeric() }}", "{{ 'a1'.isalnum() }}", "{{ ' '.isspace() }}", "{{ 'Ab Cd'.istitle() }}",
    "{{ 'abc'.islower() }}", "{{ 'ABC'.isupper() }}", "{{ 'é'.isascii() }}",
    "{{ 'x_1'.isidentifier() }}", "{{ 'a\x00'.isprintable() }}", "{{ s.encode() }}",
    "{{ s.translate({72: 'J', 111: none}) }}", "{{ 'abc'.maketrans('ab', 'xy') }}",
    "{{ 'abc'.translate('abc'.maketrans('ab', 'xy')) }}", "{{ s.split(none, 1) }}",
    "{{ s.nope() }}", "{{ s.nope }}|", "{{ s._private }}|", "{{ (s.upper|string)[:30] }}",
    # format and format_map
    "{{ tmpl.format(1, 'two') }}", "{{ named.format(x=1, y=s) }}", "{{ '{}|{}'.format('a', 2.5) }}",
    "{{ '{:>6}|{:<4}|{:^7}'.format('a', 'b', 'c') }}", "{{ '{:08.3f}'.format(3.14159) }}",
    "{{ '{!r} {!s} {!a}'.format('é', 1, 'é') }}", "{{ '{0[a]} {0[b][0]}'.format(d) }}",
    "{{ '{0.a}'.format(d) }}", "{{ '{0.missing}'.format(d) }}|", "{{ '{0.append}'.format(l) }}|",
    "{{ '{0.upper}'.format(s)[:27] }}", "{{ '{x[b]}'.format_map(d) }}",
    "{{ '{a}'.format_map(d) }}", "{{ '{}'.format() }}", "{{ '{0} {}'.format(1, 2) }}",
    "{{ '{z}'.format(x=1) }}", "{{ '{:{}}'.format('a', 4) }}|", "{{ '{{}} {}'.format(1) }}",
    "{{ '{a}'.format_map(d, 1) }}", "{{ '{a}'.format_map(x=1) }}", "{{ '{0:x}'.format(255) }}",
    "{{ '{}'.format(missing) }}|", "{{ '{}'.format(none) }}", "{{ '{}'.format([1, 'a']) }}",
    "{{ '{:%}'.format('x') }}", "{{ '{0[0]}'.format(l) }}", "{{ '{0[5]}'.format(l) }}|",
    "{{ html.format() }}", "{{ ('<i>{}</i>'|safe).format(html) }}",
    # keyword arguments only where str's methods take them
    "{{ csv.replace('a', 'x', count=1) }}", "{{ pad.strip(chars=' ') }}", "{{ csv.split(sep=',') }}",
    "{{ csv.rsplit(maxsplit=1, sep=',') }}", "{{ s.center(width=20) }}", "{{ ','.join(iterable=l) }}",
    "{{ s.startswith(prefix='H') }}", "{{ 'a\nb'.splitlines(keepends=true) }}",
    "{{ s.expandtabs(tabsize=2) }}", "{{ s.encode(encoding='ascii') }}", "{{ s.translate(table={}) }}",
]
CONTAINER_CASES = [
    "{{ l.index(1) }}", "{{ l.count(3) }}", "{{ l.copy() }}", "{{ l.index(9) }}",
    "{{ t.index(2) }}", "{{ t.count(1) }}", "{{ d.items() }}", "{{ d.keys() }}", "{{ d.values() }}",
    "{{ d.items()|list }}", "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}",
    "{{ d.get('a') }}", "{{ d.get('z') }}", "{{ d.get('z', 5) }}", "{{ d.copy() }}",
    "{{ d.fromkeys(['x', 'y'], 0) }}", "{{ d.keys()|list|length }}", "{{ 'a' in d.keys() }}",
    "{{ i.bit_length() }}", "{{ f.is_integer() }}", "{{ f.as_integer_ratio() }}",
    "{{ (2.0).is_integer() }}", "{{ (255).bit_length() }}", "{{ f.hex() }}",
    "{{ l.nope }}|", "{{ d.nope }}|", "{{ n.nope }}|", "{{ l.__len__ }}|",
]
MUTATING_CASES = [
    "{{ l.append(1) }}", "{{ l.append }}|", "{{ l.pop() }}", "{{ l.sort() }}", "{{ l.reverse() }}",
    "{{ l.extend([1]) }}", "{{ l.insert(0, 1) }}", "{{ l.remove(3) }}", "{{ l.clear() }}",
    "{{ d.pop('a') }}", "{{ d.popitem() }}", "{{ d.setdefault('z', 1) }}", "{{ d.update({}) }}",
    "{{ d.clear() }}", "{{ d.clear }}|", "{{ l }}{{ d }}",
]


@pytest.mark.parametrize("source", STRING_CASES)
def test_string_method_works_as_in_jinja2(source):
    assert_same(source, CONTEXT)


@pytest.mark.parametrize("source", CONTAINER_CASES)
def test_container_method_works_as_in_jinja2(source):
    assert_same(source, CONTEXT)


@pytest.mark.parametrize("source", MUTATING_CASES)
def test_mutating_method_is_refused_as_in_the_immutable_sandbox(source):
    assert_same(source, CONTEXT, ours=OURS_IMMUTABLE)


def test_mutating_method_error_says_what_was_refused():
    with pytest.raises(jinjamark.SecurityError, match="access to attribute 'append' of 'list' "
                                                     "object is unsafe."):
        OURS_IMMUTABLE.from_string("{{ l.append(1) }}").render(l=[])


@pytest.mark.parametrize("source", [
    "{{ '{0.__class__}'.format(1) }}", "{{ '{0._x}'.format(d) }}",
    "{{ '{0.__class__.__mro__}'.format(s) }}", "{{ '{x.__dict__}'.format_map({'x': d}) }}",
    "{{ '{0[a].__class__}'.format(d) }}"])
def test_format_refuses_python_attributes(source):
    # Jinja2's sandbox formats the unsafe attribute as an undefined (''): we refuse it outright.
    with pytest.raises(jinjamark.SecurityError, match="is unsafe"):
        OURS.from_string(source).render(**CONTEXT)


def test_every_public_str_method_is_callable_and_nothing_private():
    public = {name for name in dir(str) if not name.startswith("_")}
    assert set(STR_METHODS) == public
    for name in public:
        assert lookup_method("x", name) is not None
        assert lookup_method(mark("x"), name) is not None
    assert lookup_method("x", "__class__") is None and lookup_method("x", "_x") is None
    assert lookup_method("x", "nope") is None and lookup_method(object(), "upper") is None


def test_markup_has_markup_methods_too():
    assert lookup_method(Markup("<b>"), "striptags")(Markup("<b>a</b>")) == "a"
    assert lookup_method("x", "striptags") is None


@pytest.mark.parametrize("receiver,names", [
    ([], ("append", "clear", "pop", "reverse", "insert", "sort", "extend", "remove")),
    ({}, ("clear", "pop", "popitem", "setdefault", "update")),
    (set(), ("add", "clear", "difference_update", "discard", "pop", "remove",
             "symmetric_difference_update", "update", "intersection_update"))])
def test_mutating_methods_are_known_as_unsafe(receiver, names):
    for name in names:
        assert is_unsafe_method(receiver, name) and lookup_method(receiver, name) is None
    assert not is_unsafe_method(receiver, "copy") and lookup_method(receiver, "copy")
    assert not is_unsafe_method("x", "replace") and not is_unsafe_method((1,), "index")


def test_copy_of_a_list_is_a_new_list():
    original = [1]
    copied = lookup_method(original, "copy")(original)
    assert copied == original and copied is not original


# ---------------------------------------------------------------------------- marks

def method(receiver, name, *args, **kwargs):
    return Method(receiver, name, lookup_method(receiver, name))(*args, **kwargs)


def test_join_on_a_plain_separator_keeps_the_items_marks():
    result = method(", ", "join", [mark("a"), "b", mark("c")])
    assert (result, result.spans) == ("a, b, c", ((0, 1), (6, 7)))


def test_split_strip_partition_of_marked_text_keep_marks():
    s = marks.concat([" a,", mark("b,c"), " "])
    parts = method(s, "split", ",")
    assert parts == [" a", "b", "c "]
    assert [marks.spans_of(p) for p in parts] == [(), ((0, 1),), ((0, 1),)]
    stripped = method(s, "strip")
    assert (stripped, stripped.spans) == ("a,b,c", ((2, 5),))
    head, sep, tail = method(s, "partition", "b")
    assert (marks.spans_of(head), marks.spans_of(sep), marks.spans_of(tail)) == \
        ((), ((0, 1),), ((0, 2),))


def test_replace_and_padding_keep_marks_of_receiver_and_arguments():
    result = method("a-b", "replace", "-", mark("+"))
    assert (result, result.spans) == ("a+b", ((1, 2),))
    result = method(mark("ab"), "center", 5, "*")
    assert (result, result.spans) == ("**ab*", ((2, 4),))
    result = method("ab", "rjust", 4, mark("."))
    assert (result, result.spans) == ("..ab", ((0, 2),))
    result = method(mark("a"), "center", 4, "a")  # the fill is the receiver's own character
    assert (result, result.spans) == ("aaaa", ((1, 2),))


def test_format_marks_fields_from_input_only():
    result = method("<{}>: {x}", "format", mark("user"), x=mark("hi"))
    assert result == "<user>: hi"
    assert result.spans == ((1, 5), (8, 10))
    result = method("{0[name]}!", "format", {"name": mark("ann")})
    assert (result, result.spans) == ("ann!", ((0, 3),))
    result = method("{:>4}", "format", mark("a"))
    assert (result, result.spans) == ("   a", ((0, 4),))
    result = method("{} {}", "format", 1, "x")
    assert result == "1 x" and not marks.is_marked(result)
    result = method(mark("{}"), "format", "x")
    assert (result, result.spans) == ("x", ((0, 1),))


def test_printf_style_on_marked_values_keeps_marks():
    from jinjamark.values.formatting import percent_format
    result = percent_format("%s=%d%%", (mark("k"), 5))
    assert (result, result.spans) == ("k=5%", ((0, 1),))
    result = percent_format("%(a)s/%(b)s", {"a": "x", "b": mark("y")})
    assert (result, result.spans) == ("x/y", ((2, 3),))


@settings(max_examples=200, deadline=None)
@given(s=TEXT, t=TEXT, name=st.sampled_from(["upper", "lower", "strip", "split", "rsplit",
                                              "splitlines", "partition", "rpartition", "replace",
                                              "center", "ljust", "rjust", "zfill", "join",
                                              "title", "swapcase", "casefold", "capitalize",
                                              "expandtabs", "removeprefix", "removesuffix",
                                              "lstrip", "rstrip", "format"]))
def test_marked_receiver_gives_the_same_text_as_python(s, t, name):
    args = {"split": (t or None,), "rsplit": (t or None, 1), "partition": (t or "x",),
            "rpartition": (t or "x",), "replace": (t or "x", "§"), "center": (len(s) + 3, "~"),
            "ljust": (len(s) + 2,), "rjust": (len(s) + 2, "."), "zfill": (len(s) + 1,),
            "join": ([t, t],), "removeprefix": (t,), "removesuffix": (t,), "lstrip": (t,),
            "rstrip": (t or None,), "format": ()}.get(name, ())
    expected = getattr(str, name)(s, *args) if name != "format" else None
    for receiver in (s, mark(s), marks.concat([s[: len(s) // 2], mark(s[len(s) // 2:])])):
        try:
            result = method(receiver, name, *args)
        except (ValueError, IndexError, KeyError):
            assert name == "format"
            continue
        if name != "format":
            assert result == expected
        _assert_marks_are_in_range(result)


def _assert_marks_are_in_range(result):
    for piece in result if isinstance(result, (list, tuple)) else [result]:
        for a, b in marks.spans_of(piece):
            assert 0 <= a < b <= len(piece)
