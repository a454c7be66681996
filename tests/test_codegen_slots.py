"""The generated code's temporaries share locals (codegen/slots.py): a renamed function must do
what it did, over drawn programs with loops, branches and values carried round a loop, and a
generated body keeps a frame of a few dozen locals however long its template is."""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

import jinjamark
import oracle
from jinjamark.evaluation.compiling import tiers
from jinjamark.evaluation.compiling.codegen.slots import shared_locals
from test_codegen import generated_bodies


@st.composite
def programs(draw: st.DrawFn) -> list[str]:
    """The lines of a function body as the writers write them: temporaries `t<n>` read only
    where surely assigned, loops (`for`, `while`) whose bodies update temporaries of the lines
    around them, branches, and literals and comments that name temporaries."""
    lines: list[str] = []
    made = [0]

    def new() -> str:
        made[0] += 1
        return f"t{made[0]}"

    def value(known: list[str]) -> str:
        if not known or draw(st.booleans()):
            return str(draw(st.integers(0, 9)))
        return f"({draw(st.sampled_from(known))} * {draw(st.integers(1, 3))} + {draw(st.integers(0, 5))}) % 97"

    def block(depth: int, known: list[str]) -> None:
        pad = "    " * depth
        for _ in range(draw(st.integers(1, 4))):
            kinds = ["set", "set", "update", "print", "literal"] + (["for", "while", "if"] if depth < 4 else [])
            kind = draw(st.sampled_from(kinds))
            if kind == "set" or not known and kind in ("update", "print"):
                name = new()
                lines.append(f"{pad}{name} = {value(known)}")
                known = known + [name]
            elif kind == "update":
                name = draw(st.sampled_from(known))
                lines.append(f"{pad}{name} = ({name} + {value(known)}) % 97")
            elif kind == "print":
                lines.append(f"{pad}out.append({draw(st.sampled_from(known))})")
            elif kind == "literal":
                lines.append(f"{pad}out.append('t{draw(st.integers(1, 9))}')  # t1's 't2'")
            elif kind == "for":
                item = new()
                lines.append(f"{pad}for {item} in range({draw(st.integers(0, 3))}):")
                block(depth + 1, known + [item])
            elif kind == "while":
                count = new()
                lines.append(f"{pad}{count} = 0")
                lines.append(f"{pad}while {count} < {draw(st.integers(0, 3))} and fuel():")
                lines.append(f"{pad}    {count} = {count} + 1")
                block(depth + 1, known + [count])
                known = known + [count]
            else:
                lines.append(f"{pad}if {value(known)} > 4:")
                block(depth + 1, known)
                lines.append(f"{pad}else:")
                block(depth + 1, known)
    block(1, [])
    return lines


def run(lines: list[str]) -> tuple[list, list[str]]:
    """What the function writes, and its temporaries' names. A `while` whose count a wrong
    sharing resets runs out of fuel, rather than for ever."""
    rounds = iter(range(10_000))
    namespace: dict = {"fuel": lambda: next(rounds, None) is not None or _out_of_fuel()}
    exec("def f(out):\n" + "\n".join(lines) + "\n", namespace)
    out: list = []
    namespace["f"](out)
    return out, namespace["f"].__code__.co_varnames


def _out_of_fuel() -> bool:
    raise RuntimeError("a while loop ran out of fuel")


@settings(max_examples=300, deadline=None)
@given(programs())
def test_temporaries_sharing_locals_leave_what_a_function_does_unchanged(lines):
    written, names = run(lines)
    shared_written, shared_names = run(shared_locals(lines))
    assert shared_written == written
    assert len(shared_names) <= len(names)


def test_temporaries_live_round_a_loop_keep_their_local():
    # t1 is read on the next round after its last line: t3, made after that line, must not take it
    lines = ["    t1 = 0",
             "    for t2 in range(3):",
             "        out.append(t1)",
             "        t1 = t2",
             "        t3 = t2 * 10",
             "        out.append(t3)",
             "    t4 = 5",
             "    out.append(t4)"]
    renamed = shared_locals(lines)
    assert run(renamed)[0] == run(lines)[0] == [0, 0, 0, 10, 1, 20, 5]
    assert len(run(renamed)[1]) == 4  # out and three locals: t4 takes one the loop freed


MESSAGES = [{"role": ("user", "assistant")[i % 2], "content": f"m{i}"} for i in range(4)]
# many statements, each with its own temporaries (a long chat template's shape)
LONG = "".join(f"{{% set c = messages[{i % 4}].content | trim %}}{{% if messages[{i % 4}].role == 'user' %}}"
               f"{{{{ c ~ '{i}' }}}}{{% elif c is defined %}}{{{{ c | upper }}}}{{% endif %}}" for i in range(150))
# a recursive macro printing JSON (Kimi-K3's shape), its temporaries named as template names
RECURSIVE = """{%- macro show(t1) -%}
{%- if t1 is mapping -%}{ {%- for t2, t3 in t1 | dictsort -%}{{ t2 | tojson }}: {{ show(t3) }},{%- endfor -%} }
{%- elif t1 is string or t1 is number -%}{{ t1 | tojson }}
{%- else -%}[ {%- for t4 in t1 -%}{{ show(t4) }},{%- endfor -%} ]{%- endif -%}
{%- endmacro -%}{% set t5 = 't6' %}{{ t5 }}{{ show(tools) }}"""
TOOLS = [{"name": "f", "parameters": {"type": "object", "properties": {"x": {"type": ["string", 1]}}}}]


@pytest.mark.parametrize("source, most", [(LONG, 40), (RECURSIVE, 40)], ids=["long", "recursive"])
def test_a_generated_body_has_a_few_dozen_locals_and_renders_as_jinja2(monkeypatch, source, most):
    monkeypatch.setattr(tiers, "HOT", 1)
    template = jinjamark.chat_environment().from_string(source)
    context = {"messages": MESSAGES, "tools": TOOLS}
    assert template.render(**context) == oracle.compiled(source).render(**context)
    bodies = generated_bodies(template)
    assert bodies and max(body.__code__.co_nlocals for body in bodies) <= most
