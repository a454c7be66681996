"""What a compiled template keeps: its nodes' spans in one array (grammar/sharedspans.py).

The size itself is measured by benchmarks/memory.py (no byte counts are asserted here); these
tests hold the sharing to what it must keep: every span reads as the parser made it, errors
point where they pointed, and a render that raises nothing never looks a span up.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import jinjamark
from jinjamark.chat import ChatTemplate
from jinjamark.evaluation.compiling import tiers
from jinjamark.grammar import ast, sharedspans

CORPUS = Path(__file__).parent / "corpus"
TEMPLATES = sorted((CORPUS / "templates").glob("*.jinja"))
CONVERSATIONS = [json.loads(path.read_text("utf-8")) for path in sorted((CORPUS / "conversations").glob("*.json"))]


def spans(tree) -> list:
    return [(type(node).__name__, node.span) for node in ast.walk(tree) if isinstance(node, ast.Node)]


@pytest.mark.parametrize("path", TEMPLATES[::3], ids=lambda p: p.stem)
def test_every_span_of_a_compiled_template_reads_as_the_parser_made_it(path):
    source = path.read_text("utf-8")
    parsed = jinjamark.chat_environment().parse(source)  # its own spans, not shared
    compiled = jinjamark.chat_environment().from_string(source).tree
    nodes = [node for node in ast.walk(compiled) if isinstance(node, ast.Node)]
    assert any(type(object.__getattribute__(node, "_span")) is sharedspans.SharedSpans for node in nodes)
    assert spans(compiled) == spans(parsed)


ERRORS = [
    "{% macro m(x) %}\n  {{ x.a + 1 }}{% endmacro %}{{ m({'a': 1}) }}\n{{ m({'a': 'z'}) }}",
    "{% for m in messages %}{{ m.content + 1 if m.content is string else 'x' }}{% endfor %}",
    "{{ raise_exception('no') if c }}",
    "{% set ns = namespace(a=1) %}{{ ns.a ~ (ns.a / 0) }}",
]


@pytest.mark.parametrize("hot", [1, 2], ids=["generated", "closures"])
@pytest.mark.parametrize("source", ERRORS)
def test_errors_after_sharing_are_located_as_without_it(source, hot, monkeypatch):
    monkeypatch.setattr(tiers, "HOT", hot)

    def error(environment_share):
        monkeypatch.setattr("jinjamark.environment.share_spans", environment_share)
        template = jinjamark.chat_environment().from_string(source)
        with pytest.raises(jinjamark.TemplateError) as raised:
            template.render(messages=[{"content": "a"}], c=True)
        return raised.value.lineno, raised.value.column, str(raised.value)
    assert error(sharedspans.share) == error(lambda tree: list(ast.walk(tree)))  # spans kept per node


def test_a_render_that_raises_nothing_never_looks_a_span_up(monkeypatch):
    # Spans are looked up for errors: the corpus rendered (both tiers, and as parts) without one.
    looked_up = []
    real = sharedspans._owners
    monkeypatch.setattr(sharedspans, "_owners", lambda root, table: looked_up.append(root) or real(root, table))
    rendered = 0
    for path in TEMPLATES[::4]:
        chat = ChatTemplate(path.read_text("utf-8"))
        for conversation in CONVERSATIONS[::3]:
            options = dict(tools=conversation.get("tools"), documents=conversation.get("documents"),
                           add_generation_prompt=True, **conversation.get("kwargs", {}))
            for render in (chat.render, chat.render, chat.render_parts):
                before = len(looked_up)
                try:
                    render(conversation["messages"], **options)
                except (jinjamark.TemplateError, TypeError, ValueError):
                    continue  # a template that refuses the conversation: its error looked up
                rendered += 1
                assert len(looked_up) == before, path.stem
    assert rendered > 100


def test_the_memory_benchmark_counts_a_template_whose_render_raises():
    # benchmarks/memory.py once kept the error of a render that raised: its traceback held the
    # render's frames and they the template, which outlived its drop, so the figure read negative
    import sys
    sys.path.insert(0, str(Path(__file__).parent.parent / "benchmarks"))
    try:
        import memory
    finally:
        sys.path.pop(0)
    engine, compile_, render = memory.MEASURED["jinjamark"]
    text = "".join(f"line {i} of a template that refuses every conversation\n" for i in range(40))
    kept = {}
    for refuses in (True, False):
        source = text + ("{{ raise_exception('refused') }}" if refuses else "{{ 'accepted' }}")
        kept[refuses], after_render, _ = memory.retained(
            engine, compile_, lambda template: render(template, {"messages": []}), source)
        assert (after_render is None) == refuses
    assert kept[True] > len(text) and abs(kept[True] - kept[False]) < 1000


def test_a_template_dropped_after_an_error_is_freed():
    # the places of the last template whose spans were read are kept for an error's way out;
    # they must not keep that template alive once its user drops it
    import gc
    import weakref
    template = jinjamark.chat_environment().from_string("{% for m in messages %}\n{{ m.x.y }}{% endfor %}")
    with pytest.raises(jinjamark.UndefinedError):
        template.render(messages=[{}])
    [table] = {sharedspans._SLOT.__get__(node) for node in ast.walk(template.tree)
               if type(sharedspans._SLOT.__get__(node, None) if isinstance(node, ast.Node) else None)
               is sharedspans.SharedSpans}
    kept = weakref.ref(table)  # the tree's nodes hold it: it lives as long as they do
    del template, table  # and with the template its environment, whose cache held it
    gc.collect()
    assert kept() is None


# A render leaves no reference cycles behind for the garbage collector: the top-level scope,
# which holds the macros defined there (each refers back to it), is emptied when the render is
# done, and a loop's `break` (an exception) does not keep its frame's exception alive. The
# standard library's JSON encoder with `indent` makes cycles of its own (json.dumps does), so
# this template's tojson has none.
CYCLE_FREE = (
    "{% macro row(m) %}{{ m.role }}:{{ m.content }}{% endmacro %}"
    "{% macro wrap() %}[{{ caller() }}]{% endmacro %}"
    "{% set ns = namespace(n=0) %}"
    "{% for m in messages %}{% if loop.index > 2 %}{% break %}{% endif %}"
    "{% call wrap() %}{{ row(m) }}{% endcall %}{% set ns.n = ns.n + 1 %}{% endfor %}"
    "{{ ns.n }}{{ messages[0]|tojson }}")


@pytest.mark.parametrize("hot", [10 ** 9, 1])
def test_a_render_leaves_no_cycles_for_the_collector(monkeypatch, hot):
    import gc
    monkeypatch.setattr(tiers, "HOT", hot)
    chat = ChatTemplate(CYCLE_FREE)
    template = jinjamark.chat_environment().from_string(CYCLE_FREE)
    messages = [{"role": "user", "content": f"m{i}"} for i in range(4)]
    renders = {"render": lambda: chat.render(messages),
               "render_parts": lambda: chat.render_parts(messages),
               "origins": lambda: chat.render_parts(messages, origins=True),
               "Template.render": lambda: template.render(messages=messages)}
    for name, render in renders.items():
        assert render() == render()  # warm: the bodies generated, the origin variant compiled
        gc.collect()
        gc.disable()
        try:
            render()
            assert gc.collect() == 0, name
        finally:
            gc.enable()
