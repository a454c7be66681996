"""Joining marked strings (marks.concat, the `+` of two strings): each character keeps the flag
it had in its piece, whatever mix of plain, all-input, partly-input, empty and safe pieces."""
from __future__ import annotations

from hypothesis import given, settings, strategies as st

from jinjamark import marks
from jinjamark.values.markup import Markup
from jinjamark.marks import Input, Marked


def flags(s: str) -> list[bool]:
    """One flag per character, from the spans (the model the joins must follow)."""
    return marks.flags_of(s)


words = st.text("ab<|>", max_size=4)
pieces = st.one_of(
    words,                                   # template text
    words.map(Input),                        # all input (also empty: a split's piece)
    st.lists(st.tuples(st.sampled_from("ab|"), st.booleans()), min_size=1, max_size=5).map(
        lambda chars: marks.from_flags("".join(c for c, _ in chars), [f for _, f in chars])),
    words.map(Markup),                       # safe template text: a str subclass, unmarked
)


def check_join(result: str, parts: list[str]) -> None:
    assert str.__str__(result) == "".join(str.__str__(p) for p in parts)
    want = [f for p in parts for f in flags(p)]
    assert flags(result) == want
    if not any(want):  # nothing from input: a plain str, as make gives (or an empty Input,
        assert type(result) is str or result == ""  # as two of a split's empty pieces give)
    else:
        spans = result.spans
        assert all(a < b for a, b in spans)  # no empty span
        assert all(b < c for (_, b), (c, _) in zip(spans, spans[1:]))  # disjoint, not adjacent


@settings(max_examples=500, deadline=None)
@given(st.lists(pieces, max_size=8))
def test_concat_keeps_each_character_s_flag(parts):
    check_join(marks.concat(parts), parts)
    check_join(marks.concat(tuple(parts)), parts)
    check_join(marks.concat(iter(parts)), parts)  # a generator of pieces, as the JSON encoder gives


@settings(max_examples=500, deadline=None)
@given(pieces, pieces)
def test_adding_two_strings_keeps_each_character_s_flag(a, b):
    check_join(marks.concat2(a, b), [a, b])
    if (isinstance(a, Marked) or isinstance(b, Marked)) and Markup not in (type(a), type(b)):
        check_join(a + b, [a, b])  # the operator on a marked string (safe text escapes the other)


def test_an_empty_input_string_added_to_a_partly_marked_one():
    # a split's empty piece joined to a partly marked string: once an IndexError
    mixed = marks.from_flags("ab", [True, False])
    assert flags(marks.concat2(Input(""), mixed)) == [True, False]
    assert flags(marks.concat2(mixed, Input(""))) == [True, False]


@settings(max_examples=500, deadline=None)
@given(st.lists(pieces, max_size=8), st.data())
def test_cutting_keeps_each_character_s_flag(parts, data):
    whole = marks.concat(parts)  # a string of many spans
    start = data.draw(st.integers(0, len(whole)))
    stop = data.draw(st.integers(start, len(whole)))
    piece = marks.sub(whole, start, stop)
    assert str.__str__(piece) == str.__str__(whole)[start:stop]
    assert flags(piece) == flags(whole)[start:stop]
    if not any(flags(piece)):
        assert type(piece) is str


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=40))
def test_the_characters_of_input_are_input_and_printed_as_themselves(text):
    # (iteration looks characters up in a bounded table of input characters, made when first met)
    chars = list(Input(text))
    assert [str.__str__(c) for c in chars] == list(text)
    assert all(type(c) is Input and flags(c) == [True] for c in chars)


def test_the_table_of_input_characters_stays_bounded():
    from jinjamark.values import marks as values_marks
    many = "".join(map(chr, range(0x4E00, 0x4E00 + 2 * values_marks._MOST)))
    chars = list(Input(many))
    assert "".join(chars) == many and all(type(c) is Input for c in chars)
    assert len(values_marks._character.__self__) <= values_marks._MOST
