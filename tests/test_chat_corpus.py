"""Real chat templates render byte for byte as transformers' Jinja2 renders them.

Every corpus template x every corpus conversation x add_generation_prompt in {False, True}, with
the oracle computed live. Where Jinja2 raises, jinjamark must raise a TemplateError too, and a
message from `raise_exception` must come through unchanged.
"""
from __future__ import annotations

import jinja2
import pytest

import jinjamark
import oracle
from conftest import TEMPLATES as TEMPLATES_DIR, Outcome, chat_templates, conversations, outcome

TEMPLATES = chat_templates()
CONVERSATIONS = conversations()


def as_transformers_hands_it(fixture: dict) -> dict:
    """The fixture as transformers 5 passes it to Jinja2 (None-valued keys dropped, reasoning
    aliased, plain data): ChatTemplate does the same cleaning, so the oracle renders the result."""
    from transformers.utils import chat_template_utils as ctu
    messages = ctu._alias_reasoning_fields(ctu._plain_template_data(
        ctu._normalize_chat_messages(fixture["messages"])))
    return {**fixture, "messages": messages}


def chat_template(source: str):
    return jinjamark.ChatTemplate(source, special_tokens=dict(oracle.SPECIAL_TOKENS),
                                  now=lambda: oracle.FIXED_NOW)


def render(ct, fixture: dict, agp: bool, method: str = "render"):
    return getattr(ct, method)(fixture["messages"], tools=fixture.get("tools"),
                               documents=fixture.get("documents"), add_generation_prompt=agp,
                               **(fixture.get("kwargs") or {}))


def verdict(want: Outcome, got: Outcome) -> str | None:
    """None when jinjamark agrees with the oracle, else what differs."""
    if want.raised:
        if not isinstance(got.error, jinjamark.TemplateError):
            return f"Jinja2 raised {want.describe()[:200]}; jinjamark gave {got.describe()[:200]}"
        if type(want.error) is jinja2.exceptions.TemplateError and str(want.error) not in str(got.error):
            return f"raise_exception message {str(want.error)!r} lost: {got.error}"
        return None
    if got.raised:
        return f"jinjamark raised {got.describe()[:300]}"
    if got.value != want.value:
        return f"output differs at {first_difference(want.value, got.value)}"
    return None


def first_difference(want: str, got: str, labels=("Jinja2", "jinjamark")) -> str:
    i = next((i for i, (a, b) in enumerate(zip(want, got)) if a != b), min(len(want), len(got)))
    return f"char {i}: {labels[0]} {want[max(0, i - 40):i + 40]!r} vs {labels[1]} {got[max(0, i - 40):i + 40]!r}"


@pytest.mark.parametrize("name,source", TEMPLATES, ids=[n for n, _ in TEMPLATES])
def test_chat_template_renders_every_conversation_as_transformers(name, source):
    built = outcome(chat_template, source)
    misses = []
    for fname, fixture in CONVERSATIONS:
        for agp in (False, True):
            want = outcome(oracle.render_chat, source, as_transformers_hands_it(fixture), agp,
                           **(fixture.get("kwargs") or {}))
            got = built if built.raised else outcome(render, built.value, fixture, agp)
            miss = verdict(want, got)
            if miss is None and not got.raised:
                parts = outcome(render, built.value, fixture, agp, "render_parts")
                if parts.raised:
                    miss = f"render_parts raised {parts.describe()[:300]}"
                elif (joined := "".join(p.text for p in parts.value)) != got.value:
                    miss = f"render_parts does not join to render(): {first_difference(got.value, joined, ('render', 'parts'))}"
            if miss:
                misses.append(f"{fname} agp={agp}: {miss}")
    assert not misses, f"{len(misses)}/{2 * len(CONVERSATIONS)} renders differ:\n" + "\n".join(misses)


def test_every_corpus_template_has_its_provenance_in_the_manifest():
    rows = (TEMPLATES_DIR / "MANIFEST.tsv").read_text(encoding="utf-8").splitlines()[1:]
    listed = {row.split("\t")[0] for row in rows if row.strip()}
    assert listed == {f"{name}.jinja" for name, _ in TEMPLATES}
    assert len(TEMPLATES) == 223 and len(CONVERSATIONS) == 19
