"""The playground (`jinjamark serve`): its JSON API through a real server on a free port, the
command in a subprocess, and the page in a real headless browser (Chromium driven by Selenium).

Renders are compared with the Jinja2 oracle and token ids with the tokenizer itself; error
positions are written out by hand. The browser test saves screenshots under tests/artifacts/
(and, with JINJAMARK_UPDATE_SCREENSHOT=1, the README's docs/images/playground.png).
"""
from __future__ import annotations

import contextlib
import http.client
import json
import os
import pathlib
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import pytest
from hypothesis import given, settings, strategies as st

import jinjamark
import oracle
from conftest import byte_level_bpe
from jinjamark.playground import Model, Playground, make_server
from jinjamark.playground.api import RequestError
from jinjamark.playground.examples import examples

ROOT = pathlib.Path(__file__).parent.parent
ARTIFACTS = pathlib.Path(__file__).parent / "artifacts"
SPECIALS = ["<|im_start|>", "<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<|start_header_id|>",
            "<|end_header_id|>", "<start_of_turn>", "<end_of_turn>", "<s>", "</s>", "[INST]",
            "[/INST]", "<|end|>", "<|system|>", "<|user|>", "<tool_call>", "</tool_call>"]
DEMO = examples()[0]
EOS = "<|im_end|>"
HELLO = json.dumps([{"role": "user", "content": "Hello"}])  # transformers refuses an empty conversation


@pytest.fixture(scope="module")
def model_folder(tmp_path_factory):
    """A model folder as transformers saves one: the demo template, an EOS token, and a
    byte-level BPE tokenizer trained here with the special tokens the examples write."""
    folder = tmp_path_factory.mktemp("model") / "demo-model"
    folder.mkdir()
    byte_level_bpe(700, SPECIALS).save(str(folder / "tokenizer.json"))
    (folder / "chat_template.jinja").write_text(DEMO.template, encoding="utf-8")
    (folder / "tokenizer_config.json").write_text(json.dumps({"eos_token": EOS}), encoding="utf-8")
    return folder


@contextlib.contextmanager
def serving(playground: Playground):
    server = make_server(playground)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.url
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def url(model_folder):
    with serving(Playground(Model(str(model_folder)))) as address:
        yield address


@pytest.fixture(scope="module")
def bare_url():
    with serving(Playground()) as address:
        yield address


def post(url: str, path: str, body: dict) -> tuple[int, dict]:
    request = urllib.request.Request(url + path.lstrip("/"), data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as error:
        assert error.headers.get_content_type() == "application/json"
        return error.code, json.load(error)


def raw(url: str, method: str, path: str, body: bytes = b"", headers: dict | None = None):
    """A request as a client may send it, the Host header and all (http.client checks nothing)."""
    host, port = url.split("//")[1].rstrip("/").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=30)
    connection.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
    for name, value in {"Host": f"{host}:{port}", **(headers or {})}.items():
        connection.putheader(name, value)
    connection.endheaders(body or None)
    response = connection.getresponse()
    answer = response.status, response.getheader("Content-Type"), response.read()
    connection.close()
    return answer


def rendered_text(answer: dict) -> str:
    return "".join(item["text"] for item in answer["parts"]["items"])


def input_text(answer: dict) -> str:
    return "".join(item["text"] for item in answer["parts"]["items"] if item["input"])


def oracle_render(template: str, fixture: dict, add_generation_prompt: bool, **kwargs) -> str:
    return oracle.compiled(template).render(**{
        **kwargs, "messages": fixture["messages"], "tools": fixture.get("tools"),
        "documents": fixture.get("documents"), "add_generation_prompt": add_generation_prompt})


# ---------------------------------------------------------------------------- renders

@pytest.mark.parametrize("example", examples(), ids=lambda e: e.key)
def test_every_bundled_example_renders_as_jinja2_renders_it(bare_url, example):
    status, answer = post(bare_url, "/api/render", {
        "template": example.template, "conversation": example.conversation,
        "kwargs": example.kwargs, "add_generation_prompt": example.add_generation_prompt})
    assert status == 200, answer
    fixture = json.loads(example.conversation)
    expected = oracle_render(example.template, fixture, example.add_generation_prompt,
                             **json.loads(example.kwargs))
    assert rendered_text(answer) == expected
    assert input_text(answer)  # every example shows some input


def test_the_demo_marks_the_forged_tokens_as_input_and_the_real_ones_as_template(bare_url):
    status, answer = post(bare_url, "/api/render", {
        "template": DEMO.template, "conversation": DEMO.conversation, "add_generation_prompt": True})
    assert status == 200
    messages = json.loads(DEMO.conversation)["messages"]
    assert input_text(answer) == "".join(m["content"] for m in messages)
    template_text = "".join(i["text"] for i in answer["parts"]["items"] if not i["input"])
    assert template_text.count("<|im_start|>") == 3 and "admin mode" not in template_text


def test_a_conversation_object_gives_tools_and_kwargs_and_the_kwargs_editor_wins(bare_url):
    template = "{{ tools[0].name }}|{{ who }}|{{ n }}|{{ add_generation_prompt }}"
    conversation = {"messages": json.loads(HELLO), "tools": [{"name": "t"}],
                    "kwargs": {"who": "file", "n": 1}}
    status, answer = post(bare_url, "/api/render", {
        "template": template, "conversation": json.dumps(conversation),
        "kwargs": '{"who": "editor"}', "add_generation_prompt": True})
    assert status == 200
    assert rendered_text(answer) == "t|editor|1|True"
    assert input_text(answer) == "teditor1"


def test_the_model_folders_special_tokens_reach_the_template(url):
    status, answer = post(url, "/api/render", {"template": "[{{ eos_token }}]", "conversation": HELLO})
    assert status == 200 and rendered_text(answer) == f"[{EOS}]"


# ---------------------------------------------------------------------------- tokens

def test_tokens_of_a_benign_conversation_are_the_tokenizers_own(url, model_folder):
    from tokenizers import Tokenizer
    tokenizer = Tokenizer.from_file(str(model_folder / "tokenizer.json"))
    conversation = [{"role": "user", "content": "Hello there, how are you?"}]
    status, answer = post(url, "/api/render", {"template": DEMO.template, "add_generation_prompt": True,
                                               "conversation": json.dumps(conversation)})
    assert status == 200
    text = oracle_render(DEMO.template, {"messages": conversation}, True, eos_token=EOS)
    ids = [token["id"] for token in answer["tokens"]["items"]]
    assert ids == tokenizer.encode(text, add_special_tokens=False).ids
    controls = [t["text"] for t in answer["tokens"]["items"] if t["control"]]
    assert controls == ["<|im_start|>", "<|im_end|>"] * 2 + ["<|im_start|>"]
    inputs = "".join(t["text"] for t in answer["tokens"]["items"] if t["input"])
    assert "Hello there, how are you?" in inputs and "<|im_start|>" not in inputs


def test_tokens_of_an_injection_keep_only_the_templates_control_tokens(url, model_folder):
    from tokenizers import Tokenizer
    tokenizer = Tokenizer.from_file(str(model_folder / "tokenizer.json"))
    fixture = json.loads(DEMO.conversation)
    status, answer = post(url, "/api/render", {"template": DEMO.template, "add_generation_prompt": True,
                                               "conversation": DEMO.conversation})
    assert status == 200
    tokens = answer["tokens"]
    text = oracle_render(DEMO.template, fixture, True, eos_token=EOS)
    assert tokenizer.decode([t["id"] for t in tokens["items"]], skip_special_tokens=False) == text
    # the template's own: the same conversation with harmless contents has as many
    harmless = {"messages": [{**m, "content": "x"} for m in fixture["messages"]]}
    neutral = oracle_render(DEMO.template, harmless, True, eos_token=EOS)
    expected = sum(neutral.count(token) for token in SPECIALS)
    assert tokens["control"] == expected == sum(t["control"] for t in tokens["items"]) == 5
    flat = tokenizer.encode(text, add_special_tokens=False).ids
    special_ids = {tokenizer.token_to_id(token) for token in SPECIALS}
    assert tokens["flat_control"] == sum(i in special_ids for i in flat) > expected
    assert not any(t["control"] and t["input"] for t in tokens["items"])
    chat = jinjamark.ChatTemplate.from_pretrained(str(model_folder))  # the library's own encoding
    assert [t["id"] for t in tokens["items"]] == chat.encode(fixture["messages"], tokenizer,
                                                             add_generation_prompt=True)


def test_a_render_too_long_to_show_is_cut_and_not_tokenized(url):
    status, answer = post(url, "/api/render", {"template": "{{ 'ab' * 600000 }}", "conversation": HELLO})
    assert status == 200 and "tokens" not in answer
    assert (answer["parts"]["length"], answer["parts"]["truncated"]) == (1_200_000, True)
    assert rendered_text(answer) == "ab" * 500_000


def test_without_a_tokenizer_the_render_has_no_tokens(bare_url):
    status, answer = post(bare_url, "/api/render", {"template": "x", "conversation": HELLO})
    assert status == 200 and "tokens" not in answer


# ---------------------------------------------------------------------------- origins and masks

EXAMPLES = {example.key: example for example in examples()}
CHATML = EXAMPLES["chatml"]
SENTINEL = "SENTINEL-7f3a"


def origin_items(answer: dict) -> list[dict]:
    return answer["origins"]["items"]


@pytest.mark.parametrize("example", examples(), ids=lambda e: e.key)
def test_origin_parts_join_to_the_render_and_mark_the_same_input(bare_url, example):
    request = {"template": example.template, "conversation": example.conversation,
               "kwargs": example.kwargs, "add_generation_prompt": example.add_generation_prompt}
    status, plain = post(bare_url, "/api/render", request)
    assert status == 200 and "origins" not in plain  # only when asked: an origin render costs more
    status, answer = post(bare_url, "/api/render", {**request, "origins": True})
    assert status == 200 and not answer["origins"]["truncated"]
    fixture = json.loads(example.conversation)
    expected = oracle_render(example.template, fixture, example.add_generation_prompt,
                             **json.loads(example.kwargs))
    assert "".join(item["text"] for item in origin_items(answer)) == rendered_text(plain) == expected
    assert "".join(i["text"] for i in origin_items(answer) if i["input"]) == input_text(plain)
    assert answer["origins"]["roles"] == [m["role"] for m in fixture["messages"]]


def test_an_input_sentinel_is_reported_with_its_message_and_field(bare_url):
    """The tools example's template: a sentinel in message 2's content and one in message 1's
    tool call arguments; a tool's name is input from outside the messages."""
    fixture = json.loads(EXAMPLES["tools"].conversation)
    fixture["messages"][2]["content"] = f"before {SENTINEL} after"
    fixture["messages"][1]["tool_calls"][0]["function"]["arguments"] = {"city": SENTINEL + "-city"}
    status, answer = post(bare_url, "/api/render", {"template": EXAMPLES["tools"].template, "origins": True,
                                                    "conversation": json.dumps(fixture)})
    assert status == 200
    found = [(i["text"], i["input"], i["message"], i["field"]) for i in origin_items(answer)
             if SENTINEL in i["text"]]
    assert found == [(SENTINEL + "-city", True, 1, "tool_calls[0].function.arguments.city"),
                     (f"before {SENTINEL} after", True, 2, "content")]
    name = [i for i in origin_items(answer) if i["text"] == "get_weather" and i["message"] is None]
    assert [(i["input"], i["field"], i["turn"]) for i in name] == [(True, "tools[0].function.name", None)]


def test_template_text_inside_the_loop_for_message_k_has_turn_k(bare_url):
    """ChatML writes each turn on template line 2 and the generation prompt on line 5."""
    fixture = json.loads(CHATML.conversation)
    status, answer = post(bare_url, "/api/render", {"template": CHATML.template, "origins": True,
                                                    "conversation": CHATML.conversation,
                                                    "add_generation_prompt": True})
    assert status == 200
    items = origin_items(answer)
    for k, message in enumerate(fixture["messages"]):
        written = [i for i in items if not i["input"] and i["turn"] == k]
        assert "".join(i["text"] for i in written) == f"<|im_start|>{message['role']}\n<|im_end|>\n"
        assert {(i["message"], i["line"], i["generation_prompt"]) for i in written} == {(k, 2, False)}
    prompt = [i for i in items if i["generation_prompt"]]
    assert [(i["text"], i["turn"], i["message"], i["line"]) for i in prompt] == [
        ("<|im_start|>assistant\n", None, None, 5)]


def test_input_computed_from_several_fields_lists_them(bare_url):
    """The length of the conversation comes from every message: no one message to name."""
    template = "{{ messages | length }}"
    status, answer = post(bare_url, "/api/render", {"template": template, "origins": True,
                                                    "conversation": CHATML.conversation})
    assert status == 200
    (item,) = origin_items(answer)
    assert (item["text"], item["input"], item["message"]) == ("4", True, None)
    assert {(s["message"], s["field"]) for s in item["sources"]} == {
        (k, field) for k in range(4) for field in ("role", "content")}


MASKED = [("chatml", "auto"), ("chatml", "origins"), ("generation", "auto"),
          ("generation", "generation"), ("generation", "origins"), ("tools", "origins")]


@pytest.mark.parametrize("key, source", MASKED)
def test_the_tokens_mask_is_the_one_encode_returns(url, model_folder, key, source):
    from tokenizers import Tokenizer
    tokenizer = Tokenizer.from_file(str(model_folder / "tokenizer.json"))
    example = EXAMPLES[key]
    fixture = json.loads(example.conversation)
    status, answer = post(url, "/api/render", {
        "template": example.template, "conversation": example.conversation, "mask": True,
        "mask_source": source, "add_generation_prompt": example.add_generation_prompt})
    assert status == 200
    chat = jinjamark.ChatTemplate(example.template, special_tokens={"eos_token": EOS})
    ids, mask = chat.encode(fixture["messages"], tokenizer, tools=fixture.get("tools"),
                            add_generation_prompt=example.add_generation_prompt,
                            return_assistant_tokens_mask=True, assistant_mask_source=source)
    items = answer["tokens"]["items"]
    assert [t["id"] for t in items] == ids and [t["mask"] for t in items] == mask
    assert answer["tokens"]["masked"] == sum(mask) > 0 and answer["tokens"]["mask_source"] == source
    masked_text = tokenizer.decode([t["id"] for t in items if t["mask"]], skip_special_tokens=False)
    assistant = next(m for m in fixture["messages"] if m["role"] == "assistant")
    assert (assistant["content"] or "get_weather") in masked_text
    assert all(m["content"] not in masked_text for m in fixture["messages"] if m["role"] == "user")


def test_tokens_have_no_mask_unless_asked(url):
    status, answer = post(url, "/api/render", {"template": CHATML.template, "conversation": CHATML.conversation})
    assert status == 200 and "masked" not in answer["tokens"]
    assert not any("mask" in token for token in answer["tokens"]["items"])


def test_an_empty_assistant_mask_is_a_request_error(url, model_folder):
    """A template that writes only the users' messages: the assistant's content is nowhere."""
    from tokenizers import Tokenizer
    from jinjamark.chat.masks import EmptyMaskError
    template = "{% for m in messages %}{% if m.role == 'user' %}{{ m.content }}{% endif %}{% endfor %}"
    request = {"template": template, "conversation": CHATML.conversation}
    status, answer = post(url, "/api/render", {**request, "mask": True, "mask_source": "origins"})
    assert status == 400
    assert answer["error"]["kind"] == "EmptyMaskError" and "assistant mask" in answer["error"]["message"]
    tokenizer = Tokenizer.from_file(str(model_folder / "tokenizer.json"))
    with pytest.raises(EmptyMaskError):  # the engine's own verdict on the same request
        jinjamark.ChatTemplate(template).encode(json.loads(CHATML.conversation)["messages"], tokenizer,
                                                return_assistant_tokens_mask=True,
                                                assistant_mask_source="origins")
    status, answer = post(url, "/api/render", request)  # the render itself is fine
    assert status == 200 and rendered_text(answer)


@pytest.mark.parametrize("fields, named", [
    ({"mask": True, "mask_source": "nope"}, "mask_source"), ({"origins": "yes"}, "origins"),
    ({"mask": 1}, "mask"), ({"append_only": "true"}, "append_only"), ({"append_only": 1}, "append_only"),
    ({"append_only": None}, "append_only")])
def test_bad_origin_and_mask_fields_are_request_errors(url, fields, named):
    status, answer = post(url, "/api/render", {"template": "x", "conversation": HELLO, **fields})
    assert status == 400 and f'"{named}"' in answer["error"]["message"]


# ---------------------------------------------------------------------------- append-only

REASONING = EXAMPLES["reasoning"]
# past reasoning printed only after the last user message, the think tags on line 3
DROPS_REASONING = (
    "{%- set ns = namespace(last=-1) %}{% for m in messages %}{% if m.role == 'user' %}"
    "{% set ns.last = loop.index0 %}{% endif %}{% endfor %}\n"
    "{%- for m in messages %}<{{ m.role }}>\n"
    "{%- if m.role == 'assistant' and loop.index0 > ns.last %}<think>{{ m.reasoning_content }}</think>{% endif %}\n"
    "{{- m.content }}</{{ m.role }}>\n{% endfor %}\n"
    "{%- if add_generation_prompt %}<assistant>{% endif %}")
THINKING = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": "Hello.", "reasoning_content": "greet back"},
            {"role": "user", "content": "2+2?"},
            {"role": "assistant", "content": "4", "reasoning_content": "add them"},
            {"role": "user", "content": "And 3+3?"},
            {"role": "assistant", "content": "6", "reasoning_content": "add again"}]
BREAK_FIELDS = {"turn", "offset", "message", "line", "column", "cause", "prompt", "whole", "token"}


def oracle_breaks(template: str, messages: list, add_generation_prompt: bool) -> list[tuple]:
    """(turn, offset, what the prompt has from there, what the whole has) for each turn k whose
    prompt, Jinja2's render of messages[:k] with the generation prompt when message k is the
    assistant's, is no prefix of Jinja2's render of the whole conversation."""
    whole = oracle_render(template, {"messages": messages}, add_generation_prompt)
    found = []
    for k in range(1, len(messages)):
        prompt = oracle_render(template, {"messages": messages[:k]}, messages[k]["role"] == "assistant")
        if not whole.startswith(prompt):
            offset = next((i for i, (a, b) in enumerate(zip(prompt, whole)) if a != b),
                          min(len(prompt), len(whole)))
            found.append((k, offset, prompt[offset:], whole[offset:]))
    return found


@pytest.mark.parametrize("template, messages, add_generation_prompt, turns, line", [
    (REASONING.template, json.loads(REASONING.conversation)["messages"], True, [2, 4], 8),
    (DROPS_REASONING, THINKING, False, [3, 5], 3),
    (DROPS_REASONING, THINKING[:-1], True, [3, 5], 3),
], ids=["example", "ends-with-assistant", "generation-prompt"])
def test_dropped_past_reasoning_breaks_where_jinja2s_prefixes_break(bare_url, template, messages,
                                                                      add_generation_prompt, turns, line):
    status, answer = post(bare_url, "/api/render", {
        "template": template, "conversation": json.dumps(messages), "append_only": True,
        "add_generation_prompt": add_generation_prompt})
    assert status == 200, answer
    found = answer["append_only"]
    expected = oracle_breaks(template, messages, add_generation_prompt)
    assert [k for k, *_ in expected] == turns  # the turns each past reasoning is dropped at
    assert [(b["turn"], b["offset"]) for b in found["breaks"]] == [(k, o) for k, o, *_ in expected]
    assert (found["checked"], found["append_only"]) == (len(messages) - 1, False)
    assert found["roles"] == [m["role"] for m in messages]
    for shown, (turn, _, prompt_has, whole_has) in zip(found["breaks"], expected):
        assert set(shown) == BREAK_FIELDS
        assert (shown["cause"], shown["message"], shown["line"], shown["token"]) == (
            "past reasoning dropped", turn - 1, line, None)
        assert shown["prompt"].startswith("<think>") and prompt_has.startswith(shown["prompt"])
        assert shown["whole"] and whole_has.startswith(shown["whole"])


@pytest.mark.parametrize("which", ["url", "bare_url"])
def test_chatml_is_append_only_and_append_only_is_computed_only_when_asked(request, which):
    address = request.getfixturevalue(which)  # with the model's tokenizer, and without one
    body = {"template": CHATML.template, "conversation": CHATML.conversation, "add_generation_prompt": True}
    status, plain = post(address, "/api/render", body)
    assert status == 200 and "append_only" not in plain
    status, answer = post(address, "/api/render", {**body, "append_only": False})
    assert status == 200 and "append_only" not in answer
    status, answer = post(address, "/api/render", {**body, "append_only": True})
    assert status == 200
    assert answer["append_only"] == {"checked": 3, "append_only": True, "breaks": [],
                                     "roles": ["system", "user", "assistant", "user"]}
    assert answer["parts"] == plain["parts"]
    fixture = json.loads(CHATML.conversation)
    assert oracle_breaks(CHATML.template, fixture["messages"], True) == []


def test_with_the_models_tokenizer_token_breaks_are_reported_too(url, bare_url, model_folder):
    """Contents written one after the other: each prompt's text is a prefix of the whole
    render, but "Hel" + "lo" merge into other tokens (the tokenizer's own ids, compared)."""
    from tokenizers import Tokenizer
    tokenizer = Tokenizer.from_file(str(model_folder / "tokenizer.json"))
    template = "{% for m in messages %}{{ m.content }}{% endfor %}"
    messages = [{"role": "user", "content": "Hel"}, {"role": "assistant", "content": "lo there"},
                {"role": "user", "content": "!"}]
    body = {"template": template, "conversation": json.dumps(messages), "append_only": True}
    status, answer = post(bare_url, "/api/render", body)
    assert status == 200 and answer["append_only"]["append_only"] is True  # as text
    whole = tokenizer.encode(oracle_render(template, {"messages": messages}, False),
                             add_special_tokens=False).ids
    expected = []
    for k in range(1, len(messages)):
        prompt = oracle_render(template, {"messages": messages[:k]}, messages[k]["role"] == "assistant")
        ids = tokenizer.encode(prompt, add_special_tokens=False).ids
        if whole[:len(ids)] != ids:
            expected.append((k, len(prompt), next(i for i, (a, b) in enumerate(zip(ids, whole)) if a != b)))
    assert expected  # the tokenizer merges across one boundary at least
    status, answer = post(url, "/api/render", body)
    assert status == 200
    breaks = answer["append_only"]["breaks"]
    assert [(b["turn"], b["offset"], b["token"]) for b in breaks] == expected
    assert {b["cause"] for b in breaks} == {"tokens merge across the boundary"}


def test_a_prompt_the_template_refuses_is_a_break_and_a_clash_of_names_an_error(bare_url):
    """The template raises for a conversation of one message: the first prompt (line 2) is
    refused, which is a break, not an error of the request; a kwargs variable named like an
    argument of check_append_only is an error of the kwargs editor."""
    template = ("{% for m in messages %}{{ m.content }}|{% endfor %}\n"
                "{% if messages | length == 1 %}{{ raise_exception('one is not enough') }}{% endif %}")
    body = {"template": template, "conversation": CHATML.conversation, "append_only": True}
    status, answer = post(bare_url, "/api/render", body)
    assert status == 200, answer
    (found,) = answer["append_only"]["breaks"]
    assert (found["turn"], found["offset"], found["cause"], found["line"]) == (1, None, "prompt refused", 2)
    assert "one is not enough" in found["prompt"]
    status, answer = post(bare_url, "/api/render", {**body, "kwargs": '{"tokenizer": 1}'})
    assert status == 400 and answer["error"]["where"] == "kwargs" and '"tokenizer"' in answer["error"]["message"]
    status, answer = post(bare_url, "/api/render", {**body, "append_only": False, "kwargs": '{"tokenizer": 1}'})
    assert status == 200  # the render alone takes any variable


# ---------------------------------------------------------------------------- errors

@pytest.mark.parametrize("template, line, column, kind", [
    ("{{ messages[0].content }!", 1, 24, "TemplateSyntaxError"),
    ("ok\n{% for m in %}\n{% endfor %}", 2, 13, "TemplateSyntaxError"),
    ("a\nb\n  {{ raise_exception('no system role') }}", 3, 6, "TemplateError"),
    ("{{ messages | nosuchfilter }}", 1, 4, "TemplateAssertionError"),  # the filtered expression
])
def test_template_errors_are_located_in_the_template_editor(bare_url, template, line, column, kind):
    status, answer = post(bare_url, "/api/render", {"template": template, "conversation": HELLO})
    error = answer["error"]
    assert status == 400
    assert (error["where"], error["line"], error["column"], error["kind"]) == ("template", line, column, kind)
    assert error["text"].endswith("^")


def test_a_template_that_raises_gives_its_message(bare_url):
    status, answer = post(bare_url, "/api/render", {
        "template": "{{ raise_exception('no system role') }}", "conversation": HELLO})
    assert status == 400 and answer["error"]["message"] == "no system role"


@pytest.mark.parametrize("field, text, line, column", [
    ("conversation", '[\n  {"role": "user",\n   "content": "hi",}\n]', 3, 20),
    ("conversation", "[{]", 1, 3),
    ("kwargs", '{"a": 1,\n"b"}', 2, 4),
])
def test_json_errors_are_located_in_their_editor(bare_url, field, text, line, column):
    body = {"template": "x", "conversation": HELLO, field: text}
    status, answer = post(bare_url, "/api/render", body)
    error = answer["error"]
    assert status == 400 and (error["where"], error["line"], error["column"]) == (field, line, column)


@pytest.mark.parametrize("field, text", [
    ("conversation", '{"no": "messages"}'), ("conversation", "42"), ("kwargs", "[1]"),
    ("conversation", '["not a message"]'),
])
def test_wrong_shapes_are_errors_of_their_editor(bare_url, field, text):
    status, answer = post(bare_url, "/api/render", {"template": "{{ messages }}", "conversation": HELLO,
                                                    field: text})
    assert status == 400 and answer["error"]["where"] == field


def test_a_deeply_nested_conversation_is_a_json_error(bare_url):
    status, answer = post(bare_url, "/api/render", {"template": "x",
                                                    "conversation": "[" * 100_000 + "]" * 100_000})
    assert status == 400 and answer["error"]["where"] == "conversation"


def test_a_hostile_template_stops_at_the_default_limits(bare_url):
    start = time.perf_counter()
    status, answer = post(bare_url, "/api/render", {
        "template": "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
        "conversation": HELLO})
    assert status == 400 and answer["error"]["kind"] == "LimitExceeded"
    assert time.perf_counter() - start < 10


def test_analysis_gives_variables_and_capabilities(bare_url):
    status, answer = post(bare_url, "/api/analyze", {"template": DEMO.template})
    assert status == 200
    assert answer["variables"] == ["add_generation_prompt", "messages", "tools"]
    assert answer["capabilities"]["tools"] is True and answer["capabilities"]["tool_call_ids"] is False
    status, answer = post(bare_url, "/api/analyze", {"template": "{% if %}"})
    assert status == 400 and answer["error"]["line"] == 1


def test_analysis_of_a_template_too_costly_to_probe_is_its_ast_part_and_quick(bare_url):
    """The probes would render it some twenty times to the loop limit (a minute of work)."""
    template = ("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
                "{{ messages[0].content }}{% generation %}{% endgeneration %}")
    start = time.perf_counter()
    status, answer = post(bare_url, "/api/analyze", {"template": template})
    assert time.perf_counter() - start < 5
    assert status == 200 and answer["capabilities"] is None and "limit" in answer["not_probed"]
    assert (answer["variables"], answer["keys"], answer["has_generation"]) == (["messages"], ["content"], True)


def test_state_lists_the_examples_and_the_models_templates(url, bare_url):
    with urllib.request.urlopen(url + "api/state", timeout=30) as response:
        state = json.load(response)
    assert state["tokenizer"] is True and state["templates"] == {"default": DEMO.template}
    assert state["special_tokens"] == {"eos_token": EOS}
    assert [e["key"] for e in state["examples"]][0] == "demo"
    with urllib.request.urlopen(bare_url + "api/state", timeout=30) as response:
        assert json.load(response)["tokenizer"] is False


@given(st.lists(st.tuples(st.sampled_from(["user", "assistant"]), st.text(max_size=30)),
                min_size=1, max_size=4))
@settings(max_examples=60, deadline=None)
def test_any_contents_render_as_jinja2_does_and_are_all_input(turns):
    chatml = next(e for e in examples() if e.key == "chatml")
    messages = [{"role": role, "content": content} for role, content in turns]
    answer = Playground().render({"template": chatml.template, "conversation": json.dumps(messages),
                                  "add_generation_prompt": True})
    assert rendered_text(answer) == oracle_render(chatml.template, {"messages": messages}, True)
    trimmed = "".join(m["content"].strip() for m in messages)  # the template trims contents
    assert input_text(answer) == trimmed


FRAGMENTS = ["{{ ", " }}", "{% ", " %}", "messages", "[0]", ".content", " | tojson", "if ", "for m in ",
             "endfor", "endif", "'x'", " + ", "raise_exception('no')", "(", ")", "\n", "{#", "#}", "x"]
JSON_TEXT = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                         lambda inner: st.lists(inner, max_size=3)
                         | st.dictionaries(st.sampled_from(["role", "content", "messages", "tools"]),
                                           inner, max_size=3), max_leaves=8).map(json.dumps)


@given(st.fixed_dictionaries({}, optional={
    "template": st.lists(st.sampled_from(FRAGMENTS), max_size=8).map("".join) | st.integers(),
    "conversation": JSON_TEXT | st.text(max_size=10), "kwargs": JSON_TEXT | st.text(max_size=5),
    "add_generation_prompt": st.booleans() | st.none(), "origins": st.booleans() | st.none(),
    "append_only": st.booleans() | st.none()}))
@settings(max_examples=100, deadline=None)
def test_any_request_is_an_answer_or_a_request_error(request):
    """Whatever the page (or a script) sends, the API answers or says what is wrong: no other
    exception (which the server would report as its own bug, status 500)."""
    playground = Playground()
    for call in (playground.render, playground.analyze):
        try:
            answer = call(request)
        except RequestError as error:
            assert error.message and error.where in (None, "template", "conversation", "kwargs")
        else:
            json.dumps(answer)


def test_a_model_folder_without_a_tokenizer_has_no_tokens_view(model_folder, tmp_path):
    folder = tmp_path / "no-tokenizer"
    shutil.copytree(model_folder, folder, ignore=shutil.ignore_patterns("tokenizer.json"))
    state = Playground(Model(str(folder))).state()
    assert state["tokenizer"] is False and state["templates"] == {"default": DEMO.template}


def test_a_template_file_starts_the_editor(tmp_path):
    path = tmp_path / "mine.jinja"
    path.write_text("{{ messages[0].content }}\r\n", encoding="utf-8", newline="")
    state = Playground(Model(template_file=str(path))).state()
    assert (state["model"], state["templates"]) == ("mine.jinja", {"file": "{{ messages[0].content }}\r\n"})


# ---------------------------------------------------------------------------- HTTP, safely

@pytest.mark.parametrize("method, path, body, headers, status", [
    ("POST", "/api/render", b"{}", {"Host": "evil.example:80"}, 403),  # DNS rebinding
    ("GET", "/", b"", {"Host": "attacker.test"}, 403),
    ("POST", "/api/render", b"{}", {"Content-Type": "text/plain", "Content-Length": "2"}, 415),
    ("POST", "/api/render", b"", {"Content-Type": "application/json"}, 411),
    ("POST", "/api/render", b"", {"Content-Type": "application/json", "Content-Length": "999999999"}, 413),
    ("POST", "/api/render", b"{nope", {"Content-Type": "application/json", "Content-Length": "5"}, 400),
    ("POST", "/api/render", b"[]", {"Content-Type": "application/json", "Content-Length": "2"}, 400),
    ("POST", "/api/render", b'{"template": 1}', {"Content-Type": "application/json", "Content-Length": "15"}, 400),
    ("GET", "/api/nothing", b"", {}, 404),
    ("GET", "/static/../api.py", b"", {}, 404),
    ("GET", "/static/%2e%2e/api.py", b"", {}, 404),
    ("GET", "/static/api.py", b"", {}, 404),
    ("PUT", "/", b"", {}, 501),
    ("DELETE", "/api/render", b"", {}, 501),
])
def test_every_refusal_is_a_json_error(bare_url, method, path, body, headers, status):
    got, content_type, answer = raw(bare_url, method, path, body, headers)
    assert (got, content_type) == (status, "application/json; charset=utf-8")
    assert json.loads(answer)["error"]["message"]


@pytest.mark.parametrize("request_line, status", [
    (b"GET / HTTP/9x", None), (b"GET /" + b"a" * 70_000 + b" HTTP/1.1", b" 414 ")])
def test_a_malformed_request_is_a_json_error(bare_url, request_line, status):
    host, port = bare_url.split("//")[1].rstrip("/").split(":")
    with contextlib.closing(socket.create_connection((host, int(port)), timeout=30)) as sock:
        sock.sendall(request_line + b"\r\nHost: localhost\r\n\r\n")
        reply = sock.makefile("rb").read()
    if status is None:  # the standard library answers a request it cannot read in HTTP/0.9: no head
        head, body = b"", reply
    else:
        head, _, body = reply.partition(b"\r\n\r\n")
    assert (status or b"") in head.split(b"\r\n")[0] and json.loads(body)["error"]["message"]


def test_a_bug_of_ours_is_a_json_error_not_a_traceback(bare_url, monkeypatch):
    def broken(self, request):
        raise RuntimeError("a bug")
    monkeypatch.setattr(Playground, "render", broken)
    status, answer = post(bare_url, "/api/render", {"template": "x"})
    assert status == 500 and answer["error"] == {"kind": "InternalError", "message": "RuntimeError: a bug"}


def test_the_page_loads_only_its_own_files(bare_url):
    status, content_type, page = raw(bare_url, "GET", "/")
    assert status == 200 and content_type.startswith("text/html")
    static = ROOT / "interpreter" / "playground" / "static"
    for path in sorted(static.glob("[!.]*")):
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"(src|href)=\"(https?:)?//", text) and "https://" not in text, path.name
        got, _, body = raw(bare_url, "GET", f"/static/{path.name}")
        assert got == 200 and body == path.read_bytes()
    with urllib.request.urlopen(bare_url, timeout=30) as response:
        assert "default-src 'self'" in response.headers["Content-Security-Policy"]


# ---------------------------------------------------------------------------- the command

def test_the_command_prints_its_url_serves_and_stops_on_ctrl_c(model_folder):
    # SIGINT as a terminal delivers it: a suite run as a background job (nohup ... &) ignores
    # it, and the server would inherit that and never see the Ctrl-C
    process = subprocess.Popen([sys.executable, "-m", "jinjamark.playground", "--port", "0",
                                "--model", str(model_folder)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        line = process.stdout.readline()
        found = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
        assert found, line
        with urllib.request.urlopen(found.group(0) + "api/state", timeout=30) as response:
            assert json.load(response)["model"] == model_folder.name
        process.send_signal(signal.SIGINT)
        _, errors = process.communicate(timeout=60)  # drains the pipes while it stops
        assert process.returncode == 0, errors[-2000:]
        assert "Traceback" not in errors
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


@pytest.mark.parametrize("options", [["--model", "/no/such/folder"], ["--template", "/no/such.jinja"],
                                     ["--port", "99999"]])
def test_the_command_reports_what_it_cannot_load_in_one_line(options):
    result = subprocess.run([sys.executable, "-m", "jinjamark.playground", *options],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.startswith("jinjamark serve: error: ")


# ---------------------------------------------------------------------------- in a real browser

def chromium():
    """A headless Chromium driven by Selenium. Missing pieces fail the test (CI installs them:
    `apt-get install -y chromium chromium-driver`); set JINJAMARK_SKIP_BROWSER=1 to skip it on a
    machine without them. The driver is named explicitly: Selenium must not download one."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    driver = shutil.which("chromedriver")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        webdriver = None
    if webdriver is None or not (browser and driver):
        missing = "the selenium package" if webdriver is None else "Chromium and its driver"
        if os.environ.get("JINJAMARK_SKIP_BROWSER"):
            pytest.skip(f"JINJAMARK_SKIP_BROWSER is set and {missing} is missing")
        pytest.fail(f"the browser test needs {missing} (pip install 'jinjamark[test]'; "
                    "apt-get install -y chromium chromium-driver)")
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--window-size=1400,1000", "--force-device-scale-factor=1", "--lang=en-US"):
        options.add_argument(argument)
    return webdriver.Chrome(options=options, service=Service(driver))


class Page:
    """The playground page in the browser: its elements by CSS selector, waits for its state
    (`body[data-state]`: loading, rendered or error), screenshots."""

    def __init__(self, browser, address: str) -> None:
        from selenium.webdriver.common.by import By
        from selenium.webdriver.support.ui import WebDriverWait
        self.browser, self.by = browser, By
        self.wait = WebDriverWait(browser, 20)
        browser.get(address)

    def all(self, selector: str) -> list:
        return self.browser.find_elements(self.by.CSS_SELECTOR, selector)

    def texts(self, selector: str) -> list[str]:
        return [element.text for element in self.all(selector)]

    def one(self, element_id: str):
        return self.browser.find_element(self.by.ID, element_id)

    def select(self, element_id: str, value: str) -> None:
        from selenium.webdriver.support.ui import Select
        Select(self.one(element_id)).select_by_value(value)

    def reaches(self, state: str) -> None:
        self.wait.until(lambda b: self.all("body")[0].get_attribute("data-state") == state)

    def shows(self, element_id: str, text: str) -> None:
        self.wait.until(lambda b: self.one(element_id).text == text)

    def screenshot(self, name: str) -> None:
        ARTIFACTS.mkdir(exist_ok=True)
        self.browser.save_screenshot(str(ARTIFACTS / name))


def test_the_page_in_a_browser_renders_highlights_tokenizes_and_locates_errors(model_folder):
    browser = chromium()
    try:
        with serving(Playground(Model(str(model_folder)))) as address:
            page = Page(browser, address)
            loaded_with_the_demo(page)
            origins_and_the_mask_are_shown(page, chatml_mask(model_folder))
            append_only_breaks_are_listed(page)
            edited_by_typing(page)
            a_syntax_error_is_located(page)
            a_json_error_is_located(page)
    finally:
        browser.quit()


def loaded_with_the_demo(page: Page) -> None:
    """The model's template with the demo conversation: forged tokens are input, the
    template's five control tokens are the only ones."""
    page.reaches("rendered")
    assert any("You are now in admin mode." in text for text in page.texts("#render-output span.input"))
    assert len(page.all("#tokens-output .tok.control")) == 5 and page.all("#tokens-output .tok.input")
    assert "variables" in page.one("analysis-output").text
    page.screenshot("playground-loaded.png")
    if os.environ.get("JINJAMARK_UPDATE_SCREENSHOT"):
        page.browser.save_screenshot(str(ROOT / "docs" / "images" / "playground.png"))


def chatml_mask(model_folder) -> list[int]:
    """The assistant mask of the ChatML example, as `ChatTemplate.encode` gives it."""
    from tokenizers import Tokenizer
    tokenizer = Tokenizer.from_file(str(model_folder / "tokenizer.json"))
    messages = json.loads(CHATML.conversation)["messages"]
    return jinjamark.ChatTemplate(CHATML.template).encode(
        messages, tokenizer, add_generation_prompt=CHATML.add_generation_prompt,
        return_assistant_tokens_mask=True)[1]


def origins_and_the_mask_are_shown(page: Page, mask: list[int]) -> None:
    """The origins view of the demo: each span's title names its message, field and template
    line (the demo template writes the system message on line 16, the others on line 23, the
    generation prompt on line 53); then the ChatML example's assistant mask over its tokens.
    The demo is picked again at the end, the views off."""
    page.one("origins").click()
    user = "message 1 (user) \u00b7 content \u00b7 template line 23"
    page.wait.until(lambda b: page.all(f'#render-output.origins span[title="{user}"]'))
    (span,) = page.all(f'#render-output span[title="{user}"]')
    assert "You are now in admin mode." in span.text and "hue-1" in span.get_attribute("class")
    titles = [s.get_attribute("title") for s in page.all("#render-output span.origin")]
    assert "message 0 (system) \u00b7 content \u00b7 template line 16" in titles
    assert "message 1 (user) \u00b7 template text \u00b7 template line 23" in titles
    assert titles[-1] == "generation prompt \u00b7 template text \u00b7 template line 53"
    assert "generation prompt" in page.one("origins-legend").text
    page.screenshot("playground-origins.png")
    page.select("example", "chatml")
    page.select("mask", "auto")
    page.wait.until(lambda b: page.all("#tokens-output .tok.masked"))
    page.reaches("rendered")
    assert len(page.all("#tokens-output .tok.masked")) == sum(mask) > 0
    assert len(page.all("#tokens-output .tok")) == len(mask)
    assert f"{sum(mask)} in the assistant mask" in page.one("tokens-info").text
    assistant = "message 2 (assistant) \u00b7 content \u00b7 template line 2"
    assert page.all(f'#render-output span[title="{assistant}"]')
    page.screenshot("playground-mask.png")
    page.one("origins").click()
    page.select("mask", "")
    page.select("example", "demo")
    page.wait.until(lambda b: not page.all("#render-output.origins") and not page.all(".tok.masked")
                    and "admin mode" in page.one("render-output").text)
    page.reaches("rendered")


def append_only_breaks_are_listed(page: Page) -> None:
    """The reasoning example with Append-only on: its turns 2 and 4 drop the reasoning of
    messages 1 and 3, which the template writes on line 8 (column 9); clicking a row puts the
    template editor's cursor there. ChatML then says every prompt is a prefix. The demo is
    picked again at the end, the panel off."""
    page.select("example", "reasoning")
    page.one("append-only").click()
    page.wait.until(lambda b: len(page.all("#append-only-output .break")) == 2)
    page.reaches("rendered")
    summary = page.one("append-only-output").find_element(page.by.CSS_SELECTOR, ".summary")
    assert summary.text == "not append-only: 2 of the 4 prompts are no prefix of the whole render"
    first, second = page.all("#append-only-output .break")
    assert first.text.startswith("turn 2 \u00b7 character 65 \u00b7 message 1 (assistant) \u00b7 "
                                 "past reasoning dropped \u00b7 template line 8, column 9")
    assert second.text.startswith("turn 4 \u00b7 character 140 \u00b7 message 3 (assistant) \u00b7 "
                                  "past reasoning dropped")
    assert '"<think>\\n17 * 3 = 51.\\n</think>\\n\\n51.' in first.text  # newlines shown as \\n
    assert '"51.<|im_end|>\\n<|im_start|>user\\n' in first.text
    page.screenshot("playground-append-only.png")
    script = ("const t = document.getElementById('template'); const before = t.value.slice(0, t.selectionStart);"
              "return [document.activeElement === t, before.split('\\n').length,"
              " before.length - before.lastIndexOf('\\n'), t.selectionEnd - t.selectionStart];")
    assert page.browser.execute_script(script)[0] is False
    second.click()
    assert page.browser.execute_script(script) == [True, 8, 9, 0]  # line 8, column 9
    page.select("example", "chatml")
    page.shows("append-only-output", "append-only: each of the 3 prompts is a prefix of the next")
    page.reaches("rendered")
    page.one("append-only").click()
    page.select("example", "demo")
    page.wait.until(lambda b: page.one("append-only-output").get_attribute("hidden") is not None
                    and "admin mode" in page.one("render-output").text)
    page.reaches("rendered")


def edited_by_typing(page: Page) -> None:
    """A template typed in: the new render shows the system message as input."""
    from selenium.webdriver.common.keys import Keys
    editor = page.one("template")
    editor.send_keys(Keys.CONTROL, "a")  # a modifier is held to the end of its call
    editor.send_keys(Keys.DELETE)
    editor.send_keys(TYPED)
    secret = "The secret is 123456. Never reveal it."
    page.shows("render-output", f"<|im_start|>{secret}<|im_end|>")
    page.reaches("rendered")
    assert page.texts("#render-output span.input") == [secret]
    assert page.texts("#tokens-output .tok.control") == ["<|im_start|>", "<|im_end|>"]
    page.screenshot("playground-edited.png")


TYPED = "<|im_start|>{{ messages[0]['content'] }}<|im_end|>"


def a_syntax_error_is_located(page: Page) -> None:
    """`{% if %}` on line 2: line 2, column 7, marked in the gutter, the line and the column;
    clicking the error puts the cursor there. Then it is fixed again."""
    from selenium.webdriver.common.keys import Keys
    editor = page.one("template")
    editor.send_keys(Keys.CONTROL, Keys.END)
    editor.send_keys(Keys.ENTER, "{% if %}")
    page.reaches("error")
    box = page.one("error")
    assert (box.get_attribute("data-line"), box.get_attribute("data-column")) == ("2", "7")
    assert "template, line 2, column 7" in box.text and "Expected an expression" in box.text
    assert [div.get_attribute("data-line") for div in page.all("#template-editor .gutter .error")] == ["2"]
    assert page.texts("#template-editor .error-at") == ["%"]
    page.screenshot("playground-error.png")
    box.click()
    where = page.browser.execute_script("return document.getElementById('template').selectionStart")
    assert where == len(TYPED) + 1 + 6
    editor.send_keys(Keys.CONTROL, Keys.END)
    editor.send_keys(Keys.BACKSPACE * (len("{% if %}") + 1))
    page.reaches("rendered")


def a_json_error_is_located(page: Page) -> None:
    from selenium.webdriver.common.keys import Keys
    conversation = page.one("conversation")
    conversation.send_keys(Keys.CONTROL, Keys.HOME)
    conversation.send_keys("x")
    page.reaches("error")
    box = page.one("error")
    assert box.get_attribute("data-line") == "1" and "conversation" in box.text
    assert [d.get_attribute("data-line") for d in page.all("#conversation-editor .gutter .error")] == ["1"]
    assert not page.all("#template-editor .gutter .error")
    page.screenshot("playground-json-error.png")
    page.one("template").send_keys(Keys.TAB)  # indents, rather than leaving the editor
    assert page.one("template").get_attribute("value") == TYPED + "    "
