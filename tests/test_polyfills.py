"""Polyfills (issue 16): the conversation reshaped for what a template cannot render.

1. Every corpus template x the fixtures with system messages, tools, tool calls (object and
   string arguments, parallel), tool results, typed content and names: with `polyfill=True` no
   render fails for want of a capability, and every system text, tool name, call name, argument
   value, tool result and text part appears in the output. A failure is accepted only where the
   template refuses the conversation's bare shape too (user and assistant turns with text, no
   system, no tools: alternation, ShareGPT fields, a tool list it cannot do without), or is
   listed in REFUSALS with the reason read in the template, and checked to still raise so.
2. `polyfill=False` renders as transformers' `apply_chat_template` does (differential); with
   `polyfill=True`, a conversation no polyfill applies to renders the same too.
3. Marks: over the injection fixtures with `polyfill=True`, every character a user wrote (found
   by neutralising the user strings, as tests/test_injection.py does) is in an input part.
4. The polyfills applied to fixture 05 for 30 templates of many families, written by hand from
   their capabilities (tests/test_analysis.py's table, checked there against each template).
5. Each polyfill on its own, on small templates, with the exact output.
Run with `-s` to see the counts.
"""
from __future__ import annotations

import functools
import json

import pytest
from transformers import PreTrainedTokenizerFast
from tokenizers import Tokenizer, models

import jinjamark
from conftest import chat_templates, conversations
from jinjamark.chat.polyfills import POLYFILLS, Polyfill
from test_injection import neutralise, user_derived, input_flags, user_strings, TOKEN

TEMPLATES = chat_templates()
FIXTURES = dict(conversations())
SURVIVAL = ["02-system-user", "05-tool-call-object-args", "06-tool-call-string-args",
            "07-parallel-tool-calls", "08-tools-no-call", "10-typed-content", "16-names-and-ids"]
TOKENS = {"bos_token": "<s>", "eos_token": "</s>"}

# (template, fixture) -> what the template raises with, read in the template: not a capability
# a polyfill provides, and not a shape the bare conversation has.
REFUSALS = {
    # "Prompting with images is incompatible with system messages": an image part is not text
    ("llama3--axolotl-llama3_2_vision", "10-typed-content"): "incompatible with system messages",
}
for _fixture in ("05-tool-call-object-args", "06-tool-call-string-args", "07-parallel-tool-calls",
                 "08-tools-no-call"):
    # `tools | map(attribute='function') | tojson`: a generator Jinja2 cannot serialise either
    REFUSALS[("llamacpp--llama-cpp-deepseek-r1", _fixture)] = "not JSON serializable"


def chat(source: str) -> jinjamark.ChatTemplate:
    return jinjamark.ChatTemplate(source, special_tokens=TOKENS)


def options(fixture: dict) -> dict:
    return dict(tools=fixture.get("tools"), add_generation_prompt=True)


def needles(fixture: dict) -> list[str]:
    """What must survive: system texts, tool names, call names and argument values, tool
    results, text parts."""
    found = [tool["function"]["name"] for tool in fixture.get("tools") or []]
    for message in fixture["messages"]:
        content = message.get("content")
        if isinstance(content, list):
            found += [part["text"] for part in content if part.get("type") == "text"]
        elif message["role"] in ("system", "tool"):
            found.append(content)
        for call in message.get("tool_calls") or []:
            arguments = call["function"]["arguments"]
            arguments = json.loads(arguments) if isinstance(arguments, str) else arguments
            found += [call["function"]["name"]] + [str(v) for v in arguments.values()]
    return found


def survives(text: str, out: str) -> bool:
    """As is, JSON-escaped (a template that `tojson`s a result), or, for JSON text a template
    parsed, every value of it."""
    if text in out or json.dumps(text)[1:-1] in out or json.dumps(text, ensure_ascii=False)[1:-1] in out:
        return True
    try:
        value = json.loads(text)
    except ValueError:
        return False
    return isinstance(value, dict) and all(survives(str(v), out) for v in value.values())


def bare(fixture: dict) -> dict:
    """The conversation's shape without what polyfills stand in for: user and assistant turns
    with their text only; no system, tool results, tool calls or tools."""
    messages = []
    for message in fixture["messages"]:
        if message["role"] in ("user", "assistant"):
            content = message.get("content") or ""
            if isinstance(content, list):
                content = "\n".join(p["text"] for p in content if p.get("type") == "text")
            messages.append({"role": message["role"], "content": content})
    return {"messages": messages}


# ---------------------------------------------------------------------------- 1. survival

@functools.lru_cache(maxsize=1)
def survey() -> dict:
    counts = {"renders": 0, "needles": 0, "refused_bare": [], "refused_listed": 0}
    failures = []
    for stem, source in TEMPLATES:
        template = chat(source)
        for name in SURVIVAL:
            fixture = FIXTURES[name]
            try:
                out = template.render(fixture["messages"], polyfill=True, **options(fixture))
            except jinjamark.TemplateError as error:
                failures.extend(_judged(template, stem, name, error, counts))
                continue
            counts["renders"] += 1
            for needle in needles(fixture):
                counts["needles"] += 1
                if not survives(needle, out):
                    failures.append(f"{stem} x {name}: {needle!r} lost")
    counts["failures"] = failures
    return counts


def _judged(template, stem: str, name: str, error: Exception, counts: dict) -> list[str]:
    listed = REFUSALS.get((stem, name))
    if listed is not None:
        counts["refused_listed"] += 1
        return [] if listed in str(error) else [f"{stem} x {name}: raised {error} (listed: {listed})"]
    try:
        template.render(bare(FIXTURES[name])["messages"], add_generation_prompt=True)
    except jinjamark.TemplateError:
        counts["refused_bare"].append(f"{stem} x {name}")
        return []
    return [f"{stem} x {name}: raised {error!r} with polyfill=True"]


def test_with_polyfills_every_render_works_and_keeps_the_information():
    counts = survey()
    print(f"\npolyfill=True: {counts['renders']} renders, {counts['needles']} pieces of information "
          f"checked; refused as the bare conversation is {len(counts['refused_bare'])}, "
          f"listed refusals {counts['refused_listed']}")
    assert not counts["failures"], "\n".join(counts["failures"][:40])
    assert counts["renders"] >= 1400 and counts["needles"] >= 6000


def test_what_polyfills_cannot_fix_fails_without_them_too():
    """A conversation whose bare shape the template refuses is refused without polyfills too:
    the polyfills never turn a render that worked into one that fails."""
    for label in survey()["refused_bare"]:
        stem, name = label.split(" x ")
        fixture = FIXTURES[name]
        with pytest.raises(jinjamark.TemplateError):
            chat(dict(TEMPLATES)[stem]).render(fixture["messages"], **options(fixture))


# ---------------------------------------------------------------------------- 2. unchanged

@pytest.fixture(scope="module")
def tokenizer() -> PreTrainedTokenizerFast:
    return PreTrainedTokenizerFast(tokenizer_object=Tokenizer(models.BPE()), bos_token="<s>",
                                   eos_token="</s>")


@pytest.mark.parametrize("stem, source", TEMPLATES[::3], ids=[s for s, _ in TEMPLATES[::3]])
def test_polyfill_false_renders_as_transformers(tokenizer, stem, source):
    template = chat(source)
    for name in SURVIVAL + ["09-reasoning", "14-assistant-prefill"]:
        fixture = FIXTURES[name]
        try:
            want = tokenizer.apply_chat_template(fixture["messages"], tokenize=False,
                                                 chat_template=source, **options(fixture))
        except Exception:  # noqa: BLE001 - then we raise too
            with pytest.raises(Exception):
                template.render(fixture["messages"], polyfill=False, **options(fixture))
            continue
        assert template.render(fixture["messages"], polyfill=False, **options(fixture)) == want
        out, applied = template.render(fixture["messages"], polyfill=True, return_polyfills=True,
                                       **options(fixture))
        if not applied:
            assert out == want, f"{stem} x {name}: no polyfill applied, yet the output changed"


# ---------------------------------------------------------------------------- 3. marks

INJECTIONS = [name for name in FIXTURES if name.startswith(("20-", "21-"))]


@functools.lru_cache(maxsize=1)
def marks_survey() -> dict:
    counts = {"renders": 0, "characters": 0, "tokens": 0, "leaks": []}
    for stem, source in TEMPLATES:
        template = chat(source)
        for name in INJECTIONS:
            fixture = FIXTURES[name]
            try:
                parts = template.render_parts(fixture["messages"], polyfill=True, **options(fixture))
            except jinjamark.TemplateError:
                continue
            _check_marks(template, stem, name, fixture, parts, counts)
    return counts


def _check_marks(template, stem: str, name: str, fixture: dict, parts: list, counts: dict) -> None:
    text = "".join(p.text for p in parts)
    flags = input_flags(parts)

    def neutral_of(keep: str) -> str:
        other = neutralise(fixture, keep)
        return template.render(other["messages"], polyfill=True, **options(other))
    derived, _ = user_derived(text, neutral_of)
    counts["renders"] += 1
    for i, (d, f) in enumerate(zip(derived, flags)):
        counts["characters"] += d
        if d and not f:
            counts["leaks"].append(f"{stem} x {name}: {text[i]!r} at {i}: ...{text[max(0, i - 30):i + 30]!r}")
    for token in {t for s in user_strings(fixture) for t in TOKEN.findall(s)}:
        start = text.find(token)
        while start >= 0:
            if any(derived[start:start + len(token)]):
                counts["tokens"] += 1
                if not all(flags[start:start + len(token)]):
                    counts["leaks"].append(f"{stem} x {name}: user-written {token!r} at {start}")
            start = text.find(token, start + 1)


def test_with_polyfills_no_user_character_lands_in_template_text():
    counts = marks_survey()
    print(f"\nmarks with polyfill=True: {counts['renders']} renders, {counts['characters']} user "
          f"characters and {counts['tokens']} user-written special tokens checked")
    assert not counts["leaks"], "\n".join(counts["leaks"][:30])
    assert counts["renders"] >= 350 and counts["tokens"] >= 3000


# ---------------------------------------------------------------------------- 4. expectations

ALL_TOOLING = ["tool_calls", "tool_responses", "tools"]
# Fixture 05 (system, two tools, a call with object arguments and id "call_1", its result with
# the tool's name, an answer, a user turn). Written by hand from each template's capabilities
# (tests/test_analysis.py's EXPECTED_CAPABILITIES, read in the templates) and the order the
# polyfills run in: a template without tool calls gets the call as JSON in the content; one
# without tool messages gets the result as a user turn; one without the tool list gets it in a
# system message, which a template without the system role then gets in the first user turn.
EXPECTED_POLYFILLS = {
    "chatml--teknium_OpenHermes-2.5-Mistral-7B.jinja": ["tool_calls", "tools"],
    "llama3--chujiezheng-llama-3-instruct.jinja": ALL_TOOLING,
    "llamacpp--meta-llama-Llama-3.1-8B-Instruct.jinja": [],
    "llamacpp--meta-llama-Llama-3.2-3B-Instruct.jinja": [],
    "hfjs--meta-llama__Llama-3.2-11B-Vision-Instruct.jinja": [],
    "llama2--codellama_CodeLlama-34b-Instruct-hf.jinja": ALL_TOOLING,
    "hfjs--TheBloke__Mistral-7B-Instruct-v0.1-GPTQ.jinja": ALL_TOOLING + ["system_role"],
    # "call_1" is not nine letters and digits: Mistral's templates raise on it
    "mistral--mistralai_Mistral-7B-Instruct-v0.3.jinja": ["tool_call_ids"],
    "llamacpp--mistralai-Mistral-Nemo-Instruct-2407.jinja": ["tool_call_ids"],
    "gemma--google_gemma-7b-it.jinja": ALL_TOOLING + ["system_role"],
    "llamacpp--google-gemma-2-2b-it.jinja": ALL_TOOLING + ["system_role"],
    "gemma--axolotl-gemma3.jinja": ALL_TOOLING,
    "phi--microsoft_Phi-3-mini-4k-instruct.jinja": ALL_TOOLING + ["system_role"],
    "phi--microsoft_phi-4.jinja": ALL_TOOLING,
    "llamacpp--Qwen-Qwen2.5-7B-Instruct.jinja": [],
    "llamacpp--Qwen-Qwen3-0.6B.jinja": [],
    "llamacpp--Qwen3-Coder.jinja": [],
    # DeepSeek R1 / V3 concatenate arguments as text and never print the tool list
    "hfjs--deepseek-ai__DeepSeek-R1.jinja": ["string_arguments", "tools"],
    "deepseek--axolotl-deepseek_v3.jinja": ["string_arguments", "tools"],
    "llamacpp--deepseek-ai-DeepSeek-V3.1.jinja": ["tools"],
    "llamacpp--CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja": [],
    "llamacpp--ibm-granite-granite-3.3-2B-Instruct.jinja": ["tool_calls"],
    "llamacpp--NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja": [],
    "llamacpp--meetkai-functionary-medium-v3.2.jinja": ["string_arguments"],
    "llamacpp--openai-gpt-oss-120b.jinja": [],
    "llamacpp--HuggingFaceTB-SmolLM3-3B.jinja": ["tool_calls", "tools"],
    "hfjs--HuggingFaceH4__zephyr-7b-beta.jinja": ALL_TOOLING,
    "vicuna--Orca-Vicuna.jinja": ["tool_calls", "tools"],
    "alpaca--chujiezheng-alpaca.jinja": ALL_TOOLING,
    "smollm--trl-idefics3_training.jinja": ["tool_calls", "tools", "typed_content"],
}


def test_expectations_cover_many_families():
    assert len(EXPECTED_POLYFILLS) >= 25
    families = {name.split("--")[1].split("-")[0].split("_")[0] for name in EXPECTED_POLYFILLS}
    assert len(families) >= 15


@pytest.mark.parametrize("name", sorted(EXPECTED_POLYFILLS))
def test_the_polyfills_applied_are_those_the_capabilities_call_for(name):
    from test_analysis import EXPECTED_CAPABILITIES, corpus
    import dataclasses
    template = chat(corpus(name))
    found = jinjamark.analyze(corpus(name), TOKENS).capabilities
    assert dataclasses.replace(found, failed_probes=()) == EXPECTED_CAPABILITIES[name]
    fixture = FIXTURES["05-tool-call-object-args"]
    said = template.polyfills_for(fixture["messages"], fixture["tools"])
    out, applied = template.render(fixture["messages"], polyfill=True, return_polyfills=True,
                                   **options(fixture))
    assert [p.name for p in said] == EXPECTED_POLYFILLS[name]
    assert applied == said and all(isinstance(p, Polyfill) and p.reason for p in applied)
    assert all(survives(needle, out) for needle in needles(fixture))
