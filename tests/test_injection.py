"""Special-token injection, end to end over the corpus: every corpus template x the injection
conversations (20-*, 21-*), rendered by `ChatTemplate.render_parts` with add_generation_prompt.

The truth about which output characters a user wrote comes from Jinja2, not from jinjamark: the
conversation is rendered twice by the oracle, as it is and *neutralised* (every user string
replaced by one of the same length: ASCII characters by '~', other characters by 'ж'; spaces,
quotes and backslashes kept so that trim, JSON and repr escapes give the same lengths). Where the
two renders differ, the character came from a user string; where they agree, it did not come from
one. Role and `type` values, and the `required` lists of tool schemas, are left as they are:
templates branch on them. Then, on jinjamark's parts:

(a) every character that differs is in an `is_input` part, and every occurrence of a special
    token a user wrote (as is, stripped, inside JSON: wherever its characters land) is wholly
    inside input;
(b) every special token the template wrote is wholly outside input: the BOS/EOS strings, and the
    special-token-like strings of the template's own source where the neutralised render has them
    too. Tokens a template builds around the role (`'<|' + message['role'] + '|>'`) are partly
    input by design (docs/input-marking.md, tests/test_token_building.py) and are counted apart.

Run with `-s` to see the counts.
"""
from __future__ import annotations

import difflib
import functools
import json
import re
from dataclasses import dataclass, field

import jinja2

import jinjamark
import oracle
from conftest import chat_templates, conversations

SPECIAL_TOKENS = {"bos_token": "<|bos-7f3a|>", "eos_token": "<|eos-7f3a|>"}
INJECTIONS = [(name, fx) for name, fx in conversations() if name.startswith(("20-", "21-"))]
TEMPLATES = chat_templates()

# Special-token-like strings: <|...|>, <｜...｜>, [INST]-style, [|...|], <<SYS>>, <s>, and the
# angle-bracket tokens of Gemma and the tool-calling formats.
TOKEN = re.compile(r"<\|[^\s<>|]{1,40}\|>|<｜[^\s<>｜]{1,40}｜>|\[/?[A-Z_]{2,30}\]|\[\|[a-z_]+\|\]"
                   r"|<</?SYS>>|</?s>|</?(?:start_of_turn|end_of_turn|tool_call|tool_response)>")
# A template that builds a token around an expression: '<|' + role + '|>', "<|{{ role }}|>", ...
BUILDS_TOKEN = re.compile(r"""(?:['"](?:<\||\[\||<｜)['"]\s*[+~])|(?:(?:<\||\[\|)\{\{)""")

# Strings templates branch on: left as they are by the neutralisation.
KEPT_KEYS = {"role", "type", "required"}


def _neutral_char(ch: str, keep: str) -> str:
    if ch.isspace() or ch in keep:
        return ch
    return "~" if ch.isascii() else "ж"


def neutralise(value, keep: str = "\"\\'", key=None):
    """The conversation with every user string replaced, character by character."""
    if isinstance(value, str):
        return value if key in KEPT_KEYS else "".join(_neutral_char(c, keep) for c in value)
    if isinstance(value, list):
        return [neutralise(v, keep, key if key == "required" else None) for v in value]
    if isinstance(value, dict):
        return {k: neutralise(v, keep, k) for k, v in value.items()}
    return value


def user_strings(value, key=None):
    if isinstance(value, str):
        if key not in KEPT_KEYS:
            yield value
    elif isinstance(value, list):
        for v in value:
            yield from user_strings(v, key if key == "required" else None)
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from user_strings(v, k)


def user_derived(injected: str, neutral_of) -> tuple[list[bool], str]:
    """Per character of `injected`: whether it came from a user string, and how that was found.

    Same length: position by position. When a template HTML-escapes user text (`Markup + str`)
    the lengths differ; '<', '>' and '&' are then kept by the neutralisation too. As a last resort
    the renders are aligned with difflib (counted and reported).
    """
    for how, keep in (("by position", "\"\\'"), ("by position, <>& kept", "\"\\'<>&")):
        neutral = neutral_of(keep)
        if len(neutral) == len(injected):
            return [a != b for a, b in zip(injected, neutral)], how
    matcher = difflib.SequenceMatcher(None, injected, neutral, autojunk=False)
    derived = [True] * len(injected)
    for block in matcher.get_matching_blocks():
        derived[block.a:block.a + block.size] = [False] * block.size
    return derived, "aligned by difflib"


def input_flags(parts) -> list[bool]:
    return [p.is_input for p in parts for _ in p.text]


@dataclass
class Report:
    renders: int = 0
    refused: list = field(default_factory=list)      # raise_exception, as Jinja2 does
    cannot_render: list = field(default_factory=list)  # other template errors, as Jinja2 has
    how: dict = field(default_factory=dict)
    injected_checked: int = 0
    injected_characters: int = 0
    leaks: list = field(default_factory=list)
    template_tokens_checked: int = 0
    template_tokens_marked: list = field(default_factory=list)
    role_built_tokens: int = 0
    disagreements: list = field(default_factory=list)

    def summary(self) -> str:
        return (f"renders {self.renders} (+{len(self.refused)} refused by raise_exception, "
                f"+{len(self.cannot_render)} that Jinja2 cannot render either; "
                f"{', '.join(f'{n} {k}' for k, n in sorted(self.how.items()))}); "
                f"injected special-token occurrences checked {self.injected_checked}, "
                f"user-derived characters checked {self.injected_characters}, "
                f"leaks {len(self.leaks)}; template tokens checked {self.template_tokens_checked}, "
                f"template tokens marked input {len(self.template_tokens_marked)}; "
                f"role-built tokens (partly input by design) {self.role_built_tokens}")


def template_tokens(source: str) -> set[str]:
    return set(TOKEN.findall(source)) | set(SPECIAL_TOKENS.values())


def check_render(report: Report, label: str, source: str, fixture: dict) -> None:
    context = dict(tools=fixture.get("tools"), documents=fixture.get("documents"),
                   add_generation_prompt=True, **(fixture.get("kwargs") or {}))
    try:
        injected = oracle.render_chat(source, fixture, True, **SPECIAL_TOKENS)
    except Exception as e:  # noqa: BLE001 - raise_exception, or a Python error inside Jinja2
        refused = type(e) is jinja2.exceptions.TemplateError
        (report.refused if refused else report.cannot_render).append(label)
        try:
            jinjamark.ChatTemplate(source, special_tokens=SPECIAL_TOKENS).render_parts(
                fixture["messages"], **context)
        except jinjamark.TemplateError:
            return
        report.disagreements.append(f"{label}: Jinja2 raised {e!r}, jinjamark rendered")
        return
    chat = jinjamark.ChatTemplate(source, special_tokens=SPECIAL_TOKENS,
                                  now=lambda: oracle.FIXED_NOW)
    try:
        parts = chat.render_parts(fixture["messages"], **context)
        plain = chat.render(fixture["messages"], **context)
    except jinjamark.TemplateError as e:
        report.disagreements.append(f"{label}: jinjamark raised {e}")
        return
    text = "".join(p.text for p in parts)
    if text != injected or plain != injected:
        report.disagreements.append(f"{label}: text differs from Jinja2's")
        return
    report.renders += 1
    flags = input_flags(parts)
    derived, how = user_derived(
        injected, lambda keep: oracle.render_chat(source, neutralise(fixture, keep), True, **SPECIAL_TOKENS))
    report.how[how] = report.how.get(how, 0) + 1

    # (a) what a user wrote is input, character by character and token by token
    for i, (d, f) in enumerate(zip(derived, flags)):
        if d:
            report.injected_characters += 1
            if not f:
                report.leaks.append(f"{label}: user character {injected[i]!r} at {i} outside input: "
                                    f"...{injected[max(0, i - 30):i + 30]!r}...")
    user_tokens = {t for s in user_strings(fixture) for t in TOKEN.findall(s)}
    # the forms a template may copy a token in: as is (also after strip), and JSON-escaped with
    # and without ensure_ascii ('<｜Assistant｜>' -> '<\\uff5cAssistant\\uff5c>')
    forms = {form for t in user_tokens
             for form in (t, json.dumps(t)[1:-1], json.dumps(t, ensure_ascii=False)[1:-1])}
    for token in forms:
        for m in re.finditer(re.escape(token), injected):
            if any(derived[m.start():m.end()]):
                report.injected_checked += 1
                if not all(flags[m.start():m.end()]):
                    report.leaks.append(f"{label}: user-written {token!r} at {m.start()} not wholly input")

    # (b) what the template wrote is not input
    roles = {m["role"] for m in fixture["messages"]}
    builds = BUILDS_TOKEN.search(source) is not None
    for token in template_tokens(source):
        for m in re.finditer(re.escape(token), injected):
            if any(derived[m.start():m.end()]):
                continue  # a user wrote this one
            if builds and any(role in token for role in roles):
                report.role_built_tokens += 1
                continue
            report.template_tokens_checked += 1
            if any(flags[m.start():m.end()]):
                report.template_tokens_marked.append(
                    f"{label}: template token {token!r} at {m.start()} marked input")


@functools.lru_cache(maxsize=1)
def report() -> Report:
    rep = Report()
    for name, source in TEMPLATES:
        for cname, fixture in INJECTIONS:
            check_render(rep, f"{name} x {cname}", source, fixture)
    print("\n[injection] " + rep.summary())
    return rep


def _listing(items: list, limit: int = 30) -> str:
    return "\n".join(items[:limit]) + (f"\n... and {len(items) - limit} more" if len(items) > limit else "")


def test_injection_corpus_is_rendered_whole_and_as_jinja2_renders_it():
    rep = report()
    assert len(INJECTIONS) == 2 and len(TEMPLATES) == 223
    accounted = rep.renders + len(rep.refused) + len(rep.cannot_render) + len(rep.disagreements)
    assert accounted == len(TEMPLATES) * len(INJECTIONS), rep.summary()
    assert not rep.disagreements, f"{rep.summary()}\n{_listing(rep.disagreements)}"
    assert rep.renders >= 300, rep.summary()


def test_no_special_token_a_user_wrote_lies_outside_an_input_part():
    rep = report()
    assert rep.injected_checked > 1000, rep.summary()
    assert not rep.leaks, f"{rep.summary()}\n{_listing(rep.leaks)}"


def test_no_special_token_the_template_wrote_lies_inside_an_input_part():
    rep = report()
    assert rep.template_tokens_checked > 1000, rep.summary()
    assert not rep.template_tokens_marked, f"{rep.summary()}\n{_listing(rep.template_tokens_marked)}"


def test_bos_and_eos_are_never_input():
    source = "{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}{{ eos_token }}"
    parts = jinjamark.ChatTemplate(source, special_tokens=SPECIAL_TOKENS).render_parts(
        [{"role": "user", "content": "<|bos-7f3a|>"}])
    assert [(p.text, p.is_input) for p in parts] == [
        ("<|bos-7f3a|>", False), ("<|bos-7f3a|>", True), ("<|eos-7f3a|>", False)]
