"""Printing a container checks its size first (limits.check_printable): small plain data takes a
walk without a walker (`small_plain_size`), which must count exactly as the walker does. Its
repr with marks finds the spans of data all of whose strings are input as it writes the text
(`_input_repr_into`), which must give what the pieces and their `concat` give."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import oracle
from jinjamark import limits, mark_input
from jinjamark.marks import concat
from jinjamark.values import printing
from jinjamark.values.inputs import check_input

# plain leaves, and marked ones (what render_parts prints: strings and numbers from input)
LEAVES = st.one_of(st.text(max_size=8), st.integers(), st.floats(allow_nan=False), st.booleans(), st.none(),
                   st.text(max_size=8).map(mark_input), st.integers().map(mark_input))
PLAIN = st.recursive(LEAVES, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.tuples(inner, inner),
    st.dictionaries(st.one_of(st.text(max_size=4), st.text(max_size=4).map(mark_input)), inner, max_size=4)),
    max_leaves=20)  # (keys from input too: render_parts' tools and typed content)


def small_size(value):
    """What the small walk counts, as the walker says it: its items as walk units."""
    small = limits.small_plain_size(value)
    return None if small is None else (small[0], small[1] * limits._PRINT_WALK, small[2])


def walker_size(value) -> tuple[int, int, bool]:
    printed = limits._Printed(10 ** 9)
    return printed.size(value), printed.walked, printed.subclassed


@settings(max_examples=300, deadline=None)
@given(PLAIN)
def test_the_small_walk_counts_as_the_walker(value):
    small = small_size(value)
    if isinstance(value, str):
        return  # check_printable answers strings before either walk
    if small is None:  # more than _SMALL items: the walker's
        return
    assert small == walker_size(value)
    # and it says what the cleaning walk says: JSON as json.loads makes it, or not
    assert limits.small_plain_size(value)[3] is check_input(value)


def test_what_the_small_walk_leaves_to_the_walker():
    assert small_size(list(range(1000))) is None  # more items than it takes on
    tools = [{"type": "function", "function": {"name": f"f{i}", "parameters": {
        "type": "object", "properties": {"x": {"type": "string", "description": "d" * i}}}}} for i in range(12)]
    assert small_size(tools) == walker_size(tools)  # a dozen tools: its own
    loop: list = []
    loop.append(loop)
    assert small_size(loop) is None  # a list inside itself: counted past the bound
    assert small_size([object()]) is None  # a host object
    assert small_size([{"type": "text", "text": "hi"}]) == walker_size([{"type": "text", "text": "hi"}])


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


TOOLS = [{"type": "function", "function": {"name": f"f{i}", "description": "<d>" * i, "parameters": {
    "type": "object", "properties": {"x": {"type": "string", "enum": ["a", "b"]}}}}} for i in range(3)]


def test_the_tools_are_measured_by_the_walk_that_cleans_them():
    from jinjamark.chat.normalize import plain, plain_measured
    printed: dict = {}
    assert plain_measured(TOOLS, printed) is TOOLS  # JSON already: shared, not copied
    for value in (TOOLS, *TOOLS):  # the list and each tool, as check_printable would count them
        assert printed[id(value)] == (value, limits.small_plain_size(value))
    odd = [{"name": "f", "required": ("x",)}]  # a tuple: not as json.loads makes it, the cleaning walk's
    printed = {}
    assert plain_measured(odd, printed) == plain(odd) and printed == {}


@pytest.fixture
def walked(monkeypatch) -> list:
    """The values the small size walk is asked about, in order."""
    asked: list = []
    small_plain_size = limits.small_plain_size
    monkeypatch.setattr(limits, "small_plain_size", lambda value: asked.append(value) or small_plain_size(value))
    return asked


def test_tools_printed_by_a_chat_template_are_not_walked_again(walked):
    import jinjamark
    chat = jinjamark.ChatTemplate("{{ tools|tojson }}{% for t in tools %}{{ t|string }}{{ t|tojson }}{% endfor %}"
                                  "{{ tools|string }}{{ messages[0]|tojson }}")
    messages = [{"role": "user", "content": "hi"}]
    assert chat.render(messages, tools=TOOLS) == oracle.compiled(chat.templates).render(
        messages=messages, tools=TOOLS, add_generation_prompt=False, bos_token="", eos_token="")
    assert [id(v) for v in walked] == [id(v) for v in TOOLS] + [id(messages[0])]  # while cleaning, and the message


def test_a_size_measured_once_is_charged_each_time_it_is_printed():
    # the render's memo (immutable environments) saves the walk, not its charge: a render does
    # the same work by the meter, and is refused at the same point, with the memo or without
    import jinjamark
    left = []
    for immutable in (True, False):
        env = jinjamark.Environment(immutable=immutable)
        env.globals["left"] = lambda: left.append(limits.metering.meter().left) or ""
        env.from_string("{% for i in range(50) %}{{ tools|tojson }}{{ tools[1]|string }}{% endfor %}"
                        "{{ left() }}").render(tools=TOOLS)
    assert left[0] == left[1] < limits.Limits().max_work


# Tools as json.loads makes them, with what marking treats apart: empty strings and keys (left
# plain), numbers (marked), booleans and None (never marked).
JSON_LEAF = st.one_of(st.text(alphabet="ab é", max_size=20), st.integers(), st.floats(allow_nan=False),
                      st.booleans(), st.none())
JSON_DATA = st.recursive(JSON_LEAF, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(alphabet="ab", max_size=3), inner, max_size=4)),
    max_leaves=24)


def _typed(value):
    """`value` with each item's type, to compare two copies of data kind by kind."""
    if isinstance(value, dict):
        return [(type(k), k, _typed(v)) for k, v in value.items()]
    if isinstance(value, list):
        return [_typed(v) for v in value]
    return type(value), value


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.dictionaries(st.text(alphabet="ab", max_size=3), JSON_DATA, max_size=4),
                          JSON_DATA), max_size=5))
def test_marked_tools_are_measured_by_the_walk_that_marks_them(tools):
    from jinjamark.chat.normalize import marked, marked_measured
    printed: dict = {}
    got = marked_measured(tools, printed)
    assert _typed(got) == _typed(marked(tools, 0))  # marked as the general walk marks them
    for value in (got, *got):  # what check_printable would count of each, found while marking
        if isinstance(value, (list, dict)):
            total, items, subclassed, _ = limits.small_plain_size(value)
            assert printed[id(value)] == (value, (total, items, subclassed, False))


def test_tools_marked_in_a_render_are_not_walked_again(walked):
    import jinjamark
    chat = jinjamark.ChatTemplate("{{ tools|tojson }}{% for t in tools %}{{ t|string }}{{ t|tojson }}{% endfor %}"
                                  "{{ tools|string }}")
    messages = [{"role": "user", "content": "hi"}]
    parts = chat.render_parts(messages, tools=TOOLS)
    assert walked == []
    assert "".join(p.text for p in parts) == oracle.compiled(chat.templates).render(
        messages=messages, tools=TOOLS, add_generation_prompt=False, bos_token="", eos_token="")
    assert {p.text for p in parts if p.is_input} >= {"function", "f2", "<d><d>", "type"}
    # JSON's and repr()'s punctuation is template text (no tool's key or text holds any)
    assert not any(set(p.text) & set("{}[]:,'\"") for p in parts if p.is_input)


def test_tools_marking_leaves_what_it_cannot_measure_to_the_general_walk():
    from jinjamark.chat.normalize import marked, marked_measured
    for tools in ([{"name": "f", "required": ("x",)}],                   # a tuple
                  [{"items": list(range(limits.SMALL + 1))}],          # past the small walk
                  {"name": "f"}):                                        # not a list
        printed: dict = {}
        assert _typed(marked_measured(tools, printed)) == _typed(marked(tools, 0))
        assert printed == {}
