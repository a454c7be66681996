"""Constructs alone: each shape real chat templates are made of, in a loop over 200 messages,
rendered warm by each engine (the template's `render` with the same context: no chat cleaning),
so that a regression in one shape shows even where the corpus median hides it (issue 25's table).
Every engine's text is checked against Jinja2's before it is timed.
"""
from __future__ import annotations

from typing import Any

import jinjamark
from engines import minijinja, minijinja_environment, oracle
from timing import round_ratio, rounds

MESSAGES = [{"role": ("user", "assistant")[i % 2], "content": f"  message {i}, some text  "}
            for i in range(200)]
TOOL_CALLS = [{"role": "assistant", "content": "",
               "tool_calls": [{"type": "function", "function": {"name": f"f{i}", "arguments": {"x": i}}}]}
              for i in range(200)]
TYPED = [{"role": ("user", "assistant")[i % 2], "content": [{"type": "text", "text": f"message {i}"}]}
         for i in range(200)]
TOOLS = [{"type": "function", "function": {"name": f"f{i}", "description": "what it does", "parameters": {
    "type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]}}} for i in range(200)]

# label: (source, the messages it loops over)
CONSTRUCTS: dict[str, tuple[str, list]] = {
    "set of a + chain with the trim filter, printed": (
        "{% for m in messages %}{% set content = '<h>' + m['role'] + '\\n\\n' + m['content'] | trim"
        " + '<e>' %}{{ content }}{% endfor %}", MESSAGES),
    "set of a + chain, printed": (
        "{% for m in messages %}{% set content = '<h>' + m['role'] + '\\n\\n' + m['content'] + '<e>' %}"
        "{{ content }}{% endfor %}", MESSAGES),
    "printed + chain with the trim filter": (
        "{% for m in messages %}{{ '<h>' + m['role'] + '\\n\\n' + m['content'] | trim + '<e>' }}{% endfor %}",
        MESSAGES),
    "printed + chain": (
        "{% for m in messages %}{{ '<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>\\n' }}"
        "{% endfor %}", MESSAGES),
    "if/elif on the role": (
        "{% for m in messages %}{% if m['role'] == 'user' %}U{% elif m['role'] == 'assistant' %}A"
        "{% else %}S{% endif %}{% endfor %}", MESSAGES),
    "block set in a loop": (
        "{% for m in messages %}{% set c %}{{ m.content }}{% endset %}{{ c }}{% endfor %}", MESSAGES),
    "namespace flag": (
        "{% set ns = namespace(n=0) %}{% for m in messages %}{% if m.role == 'user' %}"
        "{% set ns.n = ns.n + 1 %}{% endif %}{% endfor %}{{ ns.n }}", MESSAGES),
    "loop.first / loop.last": (
        "{% for m in messages %}{% if loop.first %}[{% endif %}{{ m.content }}{% if not loop.last %},"
        "{% endif %}{% endfor %}]", MESSAGES),
    "tool calls: tojson of arguments": (
        "{% for m in messages %}{% for tc in m.tool_calls %}{{ tc.function.name }}"
        "{{ tc.function.arguments | tojson }}{% endfor %}{% endfor %}", TOOL_CALLS),
    "is string / is mapping tests": (
        "{% for m in messages %}{% if m.content is string %}s{% elif m.content is mapping %}m"
        "{% endif %}{% endfor %}", MESSAGES),
    "text and outputs in a run": (
        "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}",
        MESSAGES),
    "loop over a message's items": (
        "{% for m in messages %}{% for k, v in m | items %}{{ k }}={{ v }};{% endfor %}{% endfor %}", MESSAGES),
    "loop over a message's dictsort": (
        "{% for m in messages %}{% for k, v in m | dictsort %}{{ k }}={{ v }};{% endfor %}{% endfor %}",
        MESSAGES),
    "selectattr prologue, compared per message": (
        "{% set users = messages | selectattr('role', 'equalto', 'user') | list %}{% for m in messages %}"
        "{% if m == users[-1] %}L{% endif %}{{ m.content }}{% endfor %}", MESSAGES),
    "typed content printed": ("{% for m in messages %}{{ m.content }}{% endfor %}", TYPED),
    "string filter of a tool": ("{% for t in messages %}{{ t | string }}\n{% endfor %}", TOOLS),
    "tojson filter of a tool": ("{% for t in messages %}{{ t | tojson }}\n{% endfor %}", TOOLS),
    "is defined prologue": (
        "{% for m in messages %}{% if tools is defined and tools %}T{% endif %}"
        "{% if m.tool_calls is defined %}C{% endif %}{{ m.content }}{% endfor %}", MESSAGES),
}


def run(count: int, budget: float) -> dict[str, Any]:
    env = jinjamark.chat_environment()
    results: dict[str, Any] = {}
    for label, (source, messages) in CONSTRUCTS.items():
        context = {"messages": messages}
        ours, theirs = env.from_string(source), oracle.compiled(source)
        expected = theirs.render(**context)
        if ours.render(**context) != expected:
            results[label] = {"error": "jinjamark's text differs from Jinja2's"}
            continue
        fns = {"jinjamark": lambda: ours.render(**context), "jinja2": lambda: theirs.render(**context)}
        if minijinja is not None:
            mini = minijinja_environment()
            try:
                if mini.render_str(source, **context) == expected:
                    fns["minijinja"] = lambda: mini.render_str(source, **context)
            except Exception:  # noqa: BLE001 - a construct minijinja lacks is left out
                pass
        times = rounds(fns, count, budget)
        results[label] = {"jinjamark/jinja2": round_ratio(times, "jinjamark", "jinja2"),
                          "jinjamark/minijinja": round_ratio(times, "jinjamark", "minijinja")
                          if "minijinja" in times else None,
                          "seconds": {name: min(values) for name, values in times.items()}}
    return results


def table(results: dict[str, Any]) -> list[str]:
    lines = ["| construct, alone, 200 messages | bound | jinjamark / Jinja2 | jinjamark / minijinja | |",
             "|---|---|---|---|---|"]
    for label, row in results.items():
        if "error" in row:
            lines.append(f"| {label} | <= 2.00 | {row['error']} | | NOT met |")
            continue
        ratio, mini = row["jinjamark/jinja2"], row["jinjamark/minijinja"]
        lines.append(f"| {label} | <= 2.00 | {ratio:.2f}x | {'' if mini is None else f'{mini:.2f}x'} | "
                     f"{'met' if ratio <= 2.0 else 'NOT met'} |")
    return lines
