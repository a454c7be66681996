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


# ---------------------------------------------------------------------------- 5. each polyfill

LOOP = "{% for m in messages %}[{{ m.role }}]{{ m.content }}{% endfor %}"
USER = {"role": "user", "content": "Hi"}
WEATHER = {"type": "function", "function": {"name": "get_weather", "description": "Weather.",
                                            "parameters": {"type": "object", "properties": {}}}}


def call(arguments, call_id="call_1", name="get_weather") -> dict:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


CALLING = {"role": "assistant", "content": "", "tool_calls": [call({"city": "Paris"})]}
RESULT = {"role": "tool", "tool_call_id": "call_1", "content": "sunny"}
NO_SYSTEM = ("{% for m in messages %}{% if m.role == 'system' %}{{ raise_exception('no system') }}"
             "{% endif %}[{{ m.role }}]{{ m.content }}{% endfor %}")
USER_AND_ASSISTANT = ("{% for m in messages %}{% if m.role in ['user', 'assistant'] %}"
                      "[{{ m.role }}]{{ m.content }}{% endif %}{% endfor %}")

# name -> (template, messages, tools, the output with polyfill=True, the polyfills applied);
# outputs written by hand from what each polyfill does.
SINGLE = {
    "developer_role": (LOOP, [{"role": "developer", "content": "Be brief."}, USER], None,
                       "[system]Be brief.[user]Hi", ["developer_role"]),
    "string_content": ("{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}",
                       [{"role": "user", "content": [{"type": "text", "text": "Look:"},
                                                     {"type": "image", "url": "x.png"},
                                                     {"type": "text", "text": "what is it?"}]}],
                       None, "user: Look:\nwhat is it?\n", ["string_content"]),
    "typed_content": ("{% for m in messages %}{% for p in m.content %}{% if p.type == 'text' %}"
                      "{{ p.text }}{% endif %}{% endfor %};{% endfor %}", [USER], None, "Hi;",
                      ["typed_content"]),
    "reasoning_field": ("{% for m in messages %}{% if m.reasoning %}<think>{{ m.reasoning }}"
                        "</think>{% endif %}{{ m.content }}{% endfor %}",
                        [USER, {"role": "assistant", "content": "A", "reasoning_content": "R"}],
                        None, "Hi<think>R</think>A", ["reasoning_field"]),
    "object_arguments": ("{% for m in messages %}{{ m.content }}{% for c in m.tool_calls or [] %}"
                         "{% for k, v in c.function.arguments | items %}<{{ k }}={{ v }}>{% endfor %}"
                         "{% endfor %}{% endfor %}",
                         [USER, {**CALLING, "tool_calls": [call('{"city": "Paris"}')]}], None,
                         "Hi<city=Paris>", ["object_arguments"]),
    "string_arguments": ("{% for m in messages %}{{ m.content }}{% for c in m.tool_calls or [] %}"
                         "{{ c.function.name + '(' + c.function.arguments + ')' }}{% endfor %}{% endfor %}",
                         [USER, CALLING], None, 'Higet_weather({"city": "Paris"})',
                         ["string_arguments"]),
    "tool_call_content": ("{% for m in messages %}{{ m.content + '|' }}{% for c in m.tool_calls or [] %}"
                          "{{ c.function.name }}{{ c.function.arguments | tojson }}{% endfor %}{% endfor %}",
                          [USER, {"role": "assistant", "tool_calls": [call({"city": "Paris"})]}], None,
                          'Hi||get_weather{"city": "Paris"}', ["tool_call_content"]),
    "tool_call_ids": ("{% for m in messages %}{% for c in m.tool_calls or [] %}{% if c.id | length != 9 %}"
                      "{{ raise_exception('ids of nine') }}{% endif %}<{{ c.id }}:{{ c.function.name }}"
                      "{{ c.function.arguments | tojson }}>{% endfor %}{% if m.role == 'tool' %}"
                      "({{ m.tool_call_id }}:{{ m.content }}){% endif %}{% endfor %}",
                      [USER, CALLING, RESULT], None,
                      '<call00001:get_weather{"city": "Paris"}>(call00001:sunny)', ["tool_call_ids"]),
    "tool_response_names": ("{% for m in messages %}{% for c in m.tool_calls or [] %}<{{ c.function.name }}"
                            "{{ c.function.arguments | tojson }}>{% endfor %}{% if m.role == 'tool' %}"
                            "{% if m.name is not defined %}{{ raise_exception('name!') }}{% endif %}"
                            "({{ m.name }}:{{ m.content }}){% endif %}{% endfor %}",
                            [USER, CALLING, RESULT], None, '<get_weather{"city": "Paris"}>(get_weather:sunny)',
                            ["tool_response_names"]),
    "tool_calls": (LOOP, [USER, CALLING, {**RESULT}], None,
                   '[user]Hi[assistant]{"name": "get_weather", "arguments": {"city": "Paris"}}[tool]sunny',
                   ["tool_calls"]),
    "tool_responses": (USER_AND_ASSISTANT, [USER, {"role": "assistant", "content": "Calling."},
                                           RESULT, {**RESULT, "content": "windy"}], None,
                       "[user]Hi[assistant]Calling.[user]sunny\nwindy", ["tool_responses"]),
    "tools": (LOOP, [USER], [WEATHER],
              '[system]You can call the following tools. Their JSON schemas:\n{"type": "function", '
              '"function": {"name": "get_weather", "description": "Weather.", "parameters": '
              '{"type": "object", "properties": {}}}}\nTo call a tool, answer with:\n{"name": '
              '"tool_name", "arguments": {"argument": "value"}}[user]Hi', ["tools"]),
    "system_role": (NO_SYSTEM, [{"role": "system", "content": "Be brief."}, USER,
                                {"role": "assistant", "content": "Hello"}], None,
                    "[user]Be brief.\nHi[assistant]Hello", ["system_role"]),
}


def test_every_polyfill_has_its_own_case():
    assert sorted(SINGLE) == sorted(POLYFILLS)


@pytest.mark.parametrize("name", sorted(SINGLE))
def test_each_polyfill_reshapes_the_data_as_documented(name):
    source, messages, tools, want, names = SINGLE[name]
    template = chat(source)
    out, applied = template.render(messages, tools=tools, polyfill=True, return_polyfills=True)
    assert out == want
    assert [p.name for p in applied] == names
    only, applied_alone = template.render(messages, tools=tools, polyfill={name}, return_polyfills=True)
    assert (only, [p.name for p in applied_alone]) == (want, names)
    without = [p for p in POLYFILLS if p != name]
    _, others = template.render(messages, tools=tools, polyfill=without, return_polyfills=True) \
        if _renders(template, messages, tools, without) else (None, [])
    assert name not in [p.name for p in others]


def _renders(template, messages, tools, selection) -> bool:
    try:
        template.render(messages, tools=tools, polyfill=selection)
    except jinjamark.TemplateError:
        return False
    return True


def test_the_words_a_polyfill_adds_are_template_text_and_what_it_moves_stays_input():
    template = chat(NO_SYSTEM)
    parts = template.render_parts([{"role": "system", "content": "<|sys|>"}, USER], polyfill=True)
    assert [(p.text, p.is_input) for p in parts] == [("[user]", False), ("<|sys|>", True),
                                                      ("\n", False), ("Hi", True)]
    tools = chat(LOOP).render_parts([USER], tools=[WEATHER], polyfill=True)
    preamble = [p for p in tools if "You can call" in p.text]
    assert preamble and not any(p.is_input for p in preamble)
    assert any(p.is_input and p.text == "get_weather" for p in tools)


def test_the_example_call_is_rendered_by_the_template_itself():
    """A template that renders calls but not the tool list: the example is its own call format."""
    source = ("{% for m in messages %}[{{ m.role }}]{{ m.content }}{% for c in m.tool_calls or [] %}"
              "<call>{{ c.function.name }} {{ c.function.arguments | tojson }}</call>{% endfor %}{% endfor %}")
    out = chat(source).render([USER], tools=[WEATHER], polyfill=True)
    assert out.endswith('To call a tool, answer with:\n<call>tool_name {"argument": "value"}</call>[user]Hi')


def test_a_probe_that_fails_does_not_turn_unrelated_polyfills_on():
    """A template that refuses the system role and renders everything else: only system_role."""
    source = ("{% if messages[0].role == 'system' %}{{ raise_exception('no system') }}{% endif %}"
              "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{% for c in m.tool_calls or [] %}"
              "[{{ c.id }}:{{ c.function.arguments | tojson }}]{% endfor %}{% endfor %}"
              "{% if tools %}{{ tools | tojson }}{% endif %}")
    fixture = FIXTURES["05-tool-call-object-args"]
    said = chat(source).polyfills_for(fixture["messages"], fixture["tools"])
    assert [p.name for p in said] == ["system_role"]


def test_polyfill_selection_is_checked():
    with pytest.raises(ValueError, match="unknown polyfill"):
        chat(LOOP).render([USER], polyfill={"system"})
    assert chat(NO_SYSTEM).polyfills_for([{"role": "system", "content": "x"}, USER],
                                         polyfill={"tools"}) == []


def test_a_batch_returns_the_polyfills_of_each_conversation():
    template = chat(NO_SYSTEM)
    batch = [[{"role": "system", "content": "S"}, USER], [USER]]
    outs, applied = template.render(batch, polyfill=True, return_polyfills=True)
    assert outs == ["[user]S\nHi", "[user]Hi"]
    assert [[p.name for p in a] for a in applied] == [["system_role"], []]


def test_continue_final_message_cuts_the_polyfilled_conversation():
    template = chat(NO_SYSTEM + "<end>")
    messages = [{"role": "system", "content": "S"}, USER, {"role": "assistant", "content": "Hel"}]
    assert template.render(messages, continue_final_message=True, polyfill=True) == "[user]S\nHi[assistant]Hel"
    parts = template.render_parts(messages, continue_final_message=True, polyfill=True)
    assert "".join(p.text for p in parts) == "[user]S\nHi[assistant]Hel"


def test_hf_apply_chat_template_passes_polyfill_through(tokenizer):
    from jinjamark.hf import apply_chat_template
    messages = [{"role": "system", "content": "S"}, USER]
    tokenizer.chat_template = NO_SYSTEM
    assert apply_chat_template(tokenizer, messages, tokenize=False, polyfill=True) == "[user]S\nHi"
    with pytest.raises(jinjamark.TemplateError, match="no system"):
        apply_chat_template(tokenizer, messages, tokenize=False)
    ids = apply_chat_template(tokenizer, messages, polyfill=True, return_dict=False)
    assert isinstance(ids, list)


DEEPSEEK_R1 = "llamacpp--llama-cpp-deepseek-r1"


@pytest.mark.parametrize("fixture_name", ["05-tool-call-object-args", "06-tool-call-string-args",
                                          "07-parallel-tool-calls", "08-tools-no-call"])
def test_a_template_that_fails_on_tools_is_not_given_them_by_the_tools_polyfill(fixture_name):
    """llama.cpp's DeepSeek R1 template prints `tools | map(attribute='function') | tojson`, a
    generator that Jinja2 cannot serialise either: its tools probe fails. The tools polyfill
    lists the tools in a system message and then passes no `tools`, and says so."""
    template, fixture = chat(dict(TEMPLATES)[DEEPSEEK_R1]), FIXTURES[fixture_name]
    with pytest.raises(jinjamark.TemplateError, match="not JSON serializable"):
        template.render(fixture["messages"], **options(fixture))
    out, applied = template.render(fixture["messages"], polyfill=True, return_polyfills=True,
                                   **options(fixture))
    assert all(tool["function"]["name"] in out for tool in fixture["tools"])
    assert all(survives(needle, out) for needle in needles(fixture))
    (listed,) = [p for p in applied if p.name == "tools"]
    assert listed.withheld == ("tools",) and "not passed to the template" in listed.reason
    assert template.polyfills_for(fixture["messages"], fixture["tools"]) == applied
    parts = template.render_parts(fixture["messages"], polyfill=True, **options(fixture))
    assert "".join(p.text for p in parts) == out


def test_a_template_that_fails_on_tools_gets_its_own_call_format_as_the_example():
    """The probes behind the other polyfills (here the example call) render without tools for a
    template that fails on them, instead of failing for that reason."""
    out = chat(dict(TEMPLATES)[DEEPSEEK_R1]).render([USER], tools=[WEATHER], polyfill=True)
    assert "To call a tool, answer with:\n<｜tool▁call▁begin｜>function<｜tool▁sep｜>tool_name" in out


def test_a_template_that_can_render_tools_still_gets_them():
    printing = ("{% if tools %}<tools>{{ tools | tojson }}</tools>{% endif %}"
                "{% for m in messages %}[{{ m.role }}]{{ m.content }}{% endfor %}")
    out, applied = chat(printing).render([USER], tools=[WEATHER], polyfill=True, return_polyfills=True)
    assert applied == [] and out.startswith("<tools>[{") and out.count("get_weather") == 1
    # one that reads `tools` without printing them gets the listing and still the tools
    reading = "{% if tools %}<tools on>{% endif %}" + LOOP
    out, applied = chat(reading).render([USER], tools=[WEATHER], polyfill=True, return_polyfills=True)
    assert [(p.name, p.withheld) for p in applied] == [("tools", ())]
    assert out.startswith("<tools on>[system]You can call the following tools") and "get_weather" in out


def test_the_callers_data_is_not_changed():
    messages = [{"role": "system", "content": "S"}, USER, CALLING, dict(RESULT)]
    before = json.dumps(messages)
    chat(USER_AND_ASSISTANT).render(messages, tools=[WEATHER], polyfill=True)
    chat(NO_SYSTEM).render_parts(messages, tools=[WEATHER], polyfill=True)
    assert json.dumps(messages) == before


# ---------------------------------------------------------------------------- 6. generated

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

PROPERTY_TEMPLATES = ["llamacpp--google-gemma-2-2b-it", "chatml--teknium_OpenHermes-2.5-Mistral-7B",
                      "llamacpp--meta-llama-Llama-3.1-8B-Instruct", "mistral--mistralai_Mistral-7B-Instruct-v0.3",
                      "hfjs--deepseek-ai__DeepSeek-R1", "llama3--chujiezheng-llama-3-instruct",
                      "llamacpp--openai-gpt-oss-120b", "smollm--trl-idefics3_training",
                      "phi--microsoft_Phi-3-mini-4k-instruct", "llamacpp--Qwen-Qwen3-0.6B"]
WORD = st.text("abcdefghijkmnpqrstuvwxyz", min_size=3, max_size=6).map(lambda w: "zq" + w)


@st.composite
def requests(draw) -> tuple[dict, list[str]]:
    """A conversation with a system message (maybe), turns whose content is a string or typed
    parts, tool calls (object or string arguments, one or two) with their results; and the
    unique words that must reach the output."""
    words: list[str] = []

    def word() -> str:
        w = draw(WORD) + str(len(words))
        words.append(w)
        return w

    def content() -> object:
        return word() if draw(st.booleans()) else [{"type": "text", "text": word()}]
    messages = [{"role": "system", "content": content()}] if draw(st.booleans()) else []
    tools = [{"type": "function", "function": {"name": word(), "description": "d", "parameters": {
        "type": "object", "properties": {"a": {"type": "string"}}}}}] if draw(st.booleans()) else None
    for turn in range(draw(st.integers(1, 3))):
        messages.append({"role": "user", "content": content()})
        if tools and draw(st.booleans()):
            calls = [{"id": f"c{turn}{i}", "type": "function", "function": {
                "name": tools[0]["function"]["name"],
                "arguments": {"a": word()} if draw(st.booleans()) else json.dumps({"a": word()})}}
                for i in range(draw(st.integers(1, 2)))]
            messages.append({"role": "assistant", "content": "", "tool_calls": calls})
            messages += [{"role": "tool", "tool_call_id": c["id"], "content": word()} for c in calls]
        messages.append({"role": "assistant", "content": content()})
    return {"messages": messages, "tools": tools}, words


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(request=requests(), which=st.sampled_from(PROPERTY_TEMPLATES))
def test_generated_requests_keep_every_word_as_input(request, which):
    fixture, words = request
    template = chat(dict(TEMPLATES)[which])
    try:
        parts = template.render_parts(fixture["messages"], polyfill=True, **options(fixture))
    except jinjamark.TemplateError:
        with pytest.raises(jinjamark.TemplateError):  # only a shape the template refuses anyway
            template.render(bare(fixture)["messages"], add_generation_prompt=True)
        return
    text = "".join(p.text for p in parts)
    assert text == template.render(fixture["messages"], polyfill=True, **options(fixture))
    flags = input_flags(parts)
    for w in words:
        assert w in text, f"{which}: {w!r} lost"
        at = text.index(w)
        assert all(flags[at:at + len(w)]), f"{which}: {w!r} not input"


def test_typed_content_a_template_renders_in_a_macro_is_left_alone():
    """vLLM's content format says 'string' for a template that loops over parts inside a macro
    it hands `m.get('content')` (Kimi K3's shape; a call is not a read of the content for vLLM):
    its parts render, so string_content does not apply."""
    source = ("{% macro text(c) %}{% if c is string %}{{ c }}{% else %}{% for p in c %}[{{ p.text }}]"
              "{% endfor %}{% endif %}{% endmacro %}"
              "{% for m in messages %}{{ text(m.get('content')) }};{% endfor %}")
    assert jinjamark.analyze(source).content_format == "string"
    messages = [{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}]
    out, applied = chat(source).render(messages, polyfill=True, return_polyfills=True)
    assert (out, applied) == ("[a][b];", [])
