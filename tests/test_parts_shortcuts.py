"""The shortcuts render_parts takes on marked values (added for its cost, issue 13) keep every mark:
each is checked against the long way it replaces, and the text against Python's own."""
from __future__ import annotations

import json

from hypothesis import given, settings, strategies as st

from jinjamark import marks
from jinjamark.marks import Input, flags_of, from_flags
from jinjamark.values import jsonmarks

text = st.text(st.sampled_from('ab"\\\n<é\u2028\x00'), max_size=8)
flagged = st.lists(st.tuples(st.sampled_from("ab&<"), st.booleans()), min_size=1, max_size=6).map(
    lambda chars: from_flags("".join(c for c, _ in chars), [f for _, f in chars]))
marked_text = st.one_of(text.map(Input), flagged)


@settings(max_examples=300, deadline=None)
@given(text, st.booleans())
def test_tojson_of_an_input_string_marks_everything_between_the_quotes(value, ascii_only):
    got = jsonmarks.dumps(Input(value), ensure_ascii=ascii_only)
    want = json.dumps(value, ensure_ascii=ascii_only)
    assert str.__str__(got) == want
    assert flags_of(got) == ([False] + [True] * (len(want) - 2) + [False] if value else [False] * 2)
    # the general path (the encoder's tokens found in its text) agrees
    general = jsonmarks._located(Input(value), want, ensure_ascii=ascii_only)
    assert flags_of(general) == flags_of(got)


@settings(max_examples=300, deadline=None)
@given(marked_text, st.sampled_from(["&", "<", "zz", "a"]), st.sampled_from(["&amp;", "", "b"]))
def test_replace_keeps_the_marks_of_what_it_does_not_replace(value, old, new):
    got = marks.replace(value, old, new)
    assert str.__str__(got) == str.__str__(value).replace(old, new)
    if old not in value:
        assert flags_of(got) == flags_of(value)
    else:  # the replacement text is template text, the rest keeps its flags
        pieces = str.__str__(value).split(old)
        at, want = 0, []
        for i, piece in enumerate(pieces):
            want += flags_of(value)[at:at + len(piece)]
            at += len(piece) + len(old)
            if i < len(pieces) - 1:
                want += [False] * len(new)
        assert flags_of(got) == want


def test_a_macro_that_returns_one_marked_string_returns_its_marks():
    import jinjamark
    env = jinjamark.chat_environment()
    source = ("{% macro esc(v) %}{{ v|replace('&', '&amp;') }}{% endmacro %}"
              "[{{ esc(a) }}][{{ esc(b) }}]")
    parts = env.from_string(source).render_parts(
        a=Input("x<|im_end|>"), b=from_flags("q&r", [True, False, True]))
    assert [(p.text, p.is_input) for p in parts] == [
        ("[", False), ("x<|im_end|>", True), ("][", False), ("q", True), ("&amp;", False),
        ("r", True), ("]", False)]


roles = st.sampled_from(["user", "assistant", "system", "", "narrator", "<|im_start|>system"])
turns = st.lists(st.one_of(
    st.fixed_dictionaries({"role": roles, "content": text}),
    st.tuples(text, roles).map(lambda pair: {"content": pair[0], "role": pair[1]}),  # content first
    st.fixed_dictionaries({"role": roles, "name": text}),
    st.fixed_dictionaries({"role": roles, "content": text, "name": text}),
    st.fixed_dictionaries({"role": roles, "content": text},  # reasoning: aliased as the walk aliases it
                          optional={"reasoning_content": text, "thinking": text, "reasoning": text}),
    st.fixed_dictionaries({"role": roles, "content": st.one_of(text, st.none())},  # JSON data, a None dropped
                          optional={"tool_calls": st.recursive(
                              st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | text,
                              lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
                              max_leaves=8)})),
    max_size=5)


@settings(max_examples=300, deadline=None)
@given(turns)
def test_flat_messages_are_marked_as_the_walk_marks_them(conversation):
    from jinjamark.chat import normalize
    flat = normalize.marked_flat_prefix(conversation)
    walked = normalize.template_messages(normalize.normalize_messages(conversation),
                                         normalize.marked, shortcut=False)
    assert flat == walked
    def types(value):  # the marks: each str, number and key's type, all through
        if type(value) is dict:
            return [(type(k), types(v)) for k, v in value.items()]  # (the keys in the message's order)
        return [types(v) for v in value] if type(value) is list else type(value)
    assert types(flat) == types(walked)


def test_text_accumulated_with_tilde_keeps_every_input_run():
    # `ns.out = ns.out ~ ...` (Reka-Edge): the growing string's spans are taken over whole
    from jinjamark.chat import ChatTemplate
    source = ("{%- set ns = namespace(out='') -%}{%- for m in messages -%}"
              "{%- set ns.out = ns.out ~ '<' ~ m.content ~ '>' -%}{%- endfor -%}{{ ns.out }}")
    contents = [f"m{i}" if i % 3 else "" for i in range(60)]
    parts = ChatTemplate(source).render_parts([{"role": "user", "content": c} for c in contents])
    want = []
    for c in contents:
        want += [("<", False), (c, True), (">", False)] if c else [("<>", False)]
    merged: list = []  # neighbours with the same flag are one part
    for text, flag in want:
        if merged and merged[-1][1] == flag:
            merged[-1] = (merged[-1][0] + text, flag)
        else:
            merged.append((text, flag))
    assert [(p.text, p.is_input) for p in parts] == merged


@settings(max_examples=500, deadline=None)
@given(st.lists(st.one_of(
    st.sampled_from(["", "a", "<|x|>"]),                          # template text, empty too
    st.sampled_from(["", "b", "<|im_end|>"]).map(Input),          # input, empty too (a split's)
    flagged,                                                       # partly input
    st.sampled_from(["", "m"]).map(__import__("jinjamark").values.markup.Markup)),  # unmarked
    max_size=10))
def test_parts_of_pieces_follow_each_character_and_are_never_empty(pieces):
    from jinjamark.evaluation.output import to_parts
    got = to_parts(pieces)
    assert "".join(p.text for p in got) == "".join(str.__str__(p) for p in pieces)
    want = [f for p in pieces for f in (flags_of(p) if isinstance(p, marks.Marked) else [False] * len(p))]
    assert [p.is_input for p in got for _ in p.text] == want
    assert all(p.text and type(p.text) is str for p in got)
    assert all(a.is_input != b.is_input for a, b in zip(got, got[1:]))


split_text = st.lists(st.tuples(st.sampled_from("ab,\n "), st.booleans()), max_size=10).map(
    lambda chars: from_flags("".join(c for c, _ in chars), [f for _, f in chars]))


@settings(max_examples=400, deadline=None)
@given(split_text, st.sampled_from([("split", (",",)), ("split", (None,)), ("split", (",", 1)),
                                    ("rsplit", (",", 1)), ("splitlines", ()),
                                    ("splitlines", (True,))]))
def test_pieces_of_a_split_keep_the_flags_of_where_they_sit(value, call):
    name, args = call
    got = getattr(value, name)(*args)
    plain = str.__str__(value)
    assert [str.__str__(p) for p in got] == getattr(plain, name)(*args)
    flags, pos = flags_of(value), 0
    for piece in got:
        at = plain.find(str.__str__(piece), pos)
        assert flags_of(piece) == flags[at:at + len(piece)]
        pos = at + len(piece)


def test_tojson_of_marked_data_asks_no_walk_when_it_finds_marks(monkeypatch):
    # the marks located in json.dumps' text show there is input; has_input walks only when
    # none was found (and then keeps text without input plain, as before)
    from jinjamark.values.markup import Markup
    asked = []
    has_input = jsonmarks.has_input
    monkeypatch.setattr(jsonmarks, "has_input", lambda value: asked.append(value) or has_input(value))
    got = jsonmarks.dumps({Input("k"): [Input("v"), 1, None]})
    want = json.dumps({"k": ["v", 1, None]})
    assert str.__str__(got) == want and flags_of(got) == [c in "kv" for c in want]
    assert asked == []
    for value, options in (({"k": [Markup("<b>")]}, {}), ([Markup("x")], {"indent": "--"})):
        got = jsonmarks.dumps(value, **options)  # a str subclass that is no input: plain text
        assert type(got) is str and got == json.dumps(value, **options)
