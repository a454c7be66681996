"""Printing a container checks its size first (limits.check_printable): small plain data takes a
walk without a walker (`_small_plain_size`), which must count exactly as the walker does. Its
repr with marks finds the spans of data all of whose strings are input as it writes the text
(`_input_repr_into`), which must give what the pieces and their `concat` give."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from jinjamark import limits, mark_input
from jinjamark.marks import concat
from jinjamark.values import printing

# plain leaves, and marked ones (what render_parts prints: strings and numbers from input)
LEAVES = st.one_of(st.text(max_size=8), st.integers(), st.floats(allow_nan=False), st.booleans(), st.none(),
                   st.text(max_size=8).map(mark_input), st.integers().map(mark_input))
PLAIN = st.recursive(LEAVES, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.tuples(inner, inner),
    st.dictionaries(st.text(max_size=4), inner, max_size=4)), max_leaves=20)


def walker_size(value) -> tuple[int, int, bool]:
    printed = limits._Printed(10 ** 9)
    return printed.size(value), printed.walked, printed.subclassed


@settings(max_examples=300, deadline=None)
@given(PLAIN)
def test_the_small_walk_counts_as_the_walker(value):
    small = limits._small_plain_size(value)
    if isinstance(value, str):
        return  # check_printable answers strings before either walk
    if small is None:  # more than _SMALL items: the walker's
        return
    assert small == walker_size(value)


def test_what_the_small_walk_leaves_to_the_walker():
    assert limits._small_plain_size(list(range(1000))) is None  # more items than it takes on
    tools = [{"type": "function", "function": {"name": f"f{i}", "parameters": {
        "type": "object", "properties": {"x": {"type": "string", "description": "d" * i}}}}} for i in range(12)]
    assert limits._small_plain_size(tools) == walker_size(tools)  # a dozen tools: its own
    loop: list = []
    loop.append(loop)
    assert limits._small_plain_size(loop) is None  # a list inside itself: counted past the bound
    assert limits._small_plain_size([object()]) is None  # a host object
    assert limits._small_plain_size([{"type": "text", "text": "hi"}]) == walker_size([{"type": "text", "text": "hi"}])


# keys and texts all input (what render_parts makes of typed content and tools), with
# characters repr() escapes, and plain ones mixed in
INPUT_TEXT = st.text(alphabet=st.sampled_from("ab'\"\\\n\x00é€😀 "), max_size=6)
MARKED = st.recursive(
    st.one_of(INPUT_TEXT.map(mark_input), st.text(max_size=4), st.integers(), st.none(),
              st.booleans(), st.integers().map(mark_input)),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.tuples(inner), st.tuples(inner, inner),
                            st.dictionaries(INPUT_TEXT.map(mark_input), inner, max_size=4)),
    max_leaves=20)


@settings(max_examples=400, deadline=None)
@given(MARKED)
def test_the_repr_of_input_data_marks_what_the_pieces_mark(value):
    pieces: list = []
    printing._repr_into(value, pieces, 0)
    want = concat(pieces)
    got = printing.repr_value(value)
    assert got == want == repr(value)
    assert type(got) is type(want) and getattr(got, "spans", None) == getattr(want, "spans", None)
