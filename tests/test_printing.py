"""Printing a container checks its size first (limits.check_printable): small plain data takes a
walk without a walker (`_small_plain_size`), which must count exactly as the walker does."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from jinjamark import limits, mark_input

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
    assert limits._small_plain_size(list(range(100))) is None  # more items than it takes on
    loop: list = []
    loop.append(loop)
    assert limits._small_plain_size(loop) is None  # a list inside itself: counted past the bound
    assert limits._small_plain_size([object()]) is None  # a host object
    assert limits._small_plain_size([{"type": "text", "text": "hi"}]) == walker_size([{"type": "text", "text": "hi"}])
