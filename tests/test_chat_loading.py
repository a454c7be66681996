"""ChatTemplate.from_pretrained loads a model folder (or a tokenizer) as transformers 5 does.

Each layout is saved by transformers itself or written by hand, then loaded by us and by
`AutoTokenizer.from_pretrained(folder)`: the same templates are selected (no tools, tools, every
name), the special tokens are `special_tokens_map`, and the renders are equal. No network.
"""
from __future__ import annotations

import json

import pytest
from transformers import AutoTokenizer, PreTrainedTokenizerFast

import jinjamark
from conftest import byte_level_bpe, outcome
from jinjamark.chat import select_template

BODY = ("{{ bos_token }}{% for m in messages %}{{ m.role }}:{{ m.content }}{{ eos_token }}{% endfor %}"
        "{% if tools %}{{ tools | length }} tools{% endif %}{{ pad_token | default('') }}"
        "{{ image_token | default('') }}{% if add_generation_prompt %}assistant:{% endif %}")
TEMPLATES = {name: f"[{name}]" + BODY for name in ("default", "tool_use", "rag")}
CONVERSATION = [{"role": "user", "content": "hi"}]
TOOL = {"type": "function", "function": {"name": "f", "parameters": {}}}
ADDED = {"__type": "AddedToken", "content": "<pad>", "lstrip": False, "rstrip": False,
         "normalized": False, "single_word": False, "special": True}


@pytest.fixture(scope="module")
def tokenizer() -> PreTrainedTokenizerFast:
    raw = byte_level_bpe(300, ["<s>", "</s>", "<pad>", "<img>"], ["hello world, hi there"] * 20)
    return PreTrainedTokenizerFast(tokenizer_object=raw, bos_token="<s>", eos_token="</s>")


def saved(tokenizer, folder, chat_template):
    tokenizer.chat_template = chat_template
    try:
        tokenizer.save_pretrained(folder)
    finally:
        tokenizer.chat_template = None
    return folder


def edit_config(folder, **changes):
    path = folder / "tokenizer_config.json"
    config = json.loads(path.read_text(encoding="utf-8"))
    for key, value in changes.items():
        if value is None:
            config.pop(key, None)
        else:
            config[key] = value
    path.write_text(json.dumps(config), encoding="utf-8")


def layout(name, tokenizer, folder):
    if name == "chat_template.jinja":
        return saved(tokenizer, folder, TEMPLATES["default"])
    if name == "additional_chat_templates":
        return saved(tokenizer, folder, dict(TEMPLATES))
    if name == "config-string":
        saved(tokenizer, folder, None)
        edit_config(folder, chat_template=TEMPLATES["default"])
        return folder
    if name == "config-list":
        saved(tokenizer, folder, None)
        edit_config(folder, chat_template=[{"name": k, "template": v} for k, v in TEMPLATES.items()])
        return folder
    if name == "no-default":
        return saved(tokenizer, folder, {"tool_use": TEMPLATES["tool_use"], "rag": TEMPLATES["rag"]})
    if name == "config-list-no-default":
        saved(tokenizer, folder, None)
        edit_config(folder, chat_template=[{"name": "rag", "template": TEMPLATES["rag"]}])
        return folder
    raise AssertionError(name)


LAYOUTS = ["chat_template.jinja", "additional_chat_templates", "config-string", "config-list",
           "no-default", "config-list-no-default"]


def same(want, got) -> bool:
    if want.raised:
        return isinstance(got.error, type(want.error)) and str(got.error) == str(want.error)
    return not got.raised and got.value == want.value


@pytest.mark.parametrize("name", LAYOUTS)
def test_a_model_folder_selects_and_renders_as_transformers(tmp_path, tokenizer, name):
    folder = layout(name, tokenizer, tmp_path / "model")
    theirs = AutoTokenizer.from_pretrained(str(folder))
    ours = jinjamark.ChatTemplate.from_pretrained(folder)
    assert ours.special_tokens == theirs.special_tokens_map
    assert ours.templates == theirs.chat_template
    for tools in (None, [], [TOOL]):
        want = outcome(theirs.get_chat_template, None, tools)
        assert same(want, outcome(select_template, ours.templates, None, tools))
        for agp in (False, True):
            want = outcome(theirs.apply_chat_template, CONVERSATION, tools=tools, add_generation_prompt=agp,
                           tokenize=False)
            assert same(want, outcome(ours.render, CONVERSATION, tools=tools, add_generation_prompt=agp))
    for template_name in ("default", "tool_use", "rag"):
        if isinstance(theirs.chat_template, dict) and template_name in theirs.chat_template:
            named = jinjamark.ChatTemplate.from_pretrained(folder, name=template_name)
            for tools in (None, [TOOL]):
                want = theirs.apply_chat_template(CONVERSATION, chat_template=template_name, tools=tools,
                                                  tokenize=False)
                assert named.render(CONVERSATION, tools=tools) == want


@pytest.mark.parametrize("name", LAYOUTS)
def test_a_tokenizer_object_gives_what_its_folder_gives(tmp_path, tokenizer, name):
    folder = layout(name, tokenizer, tmp_path / "model")
    theirs = AutoTokenizer.from_pretrained(str(folder))
    from_object = jinjamark.ChatTemplate.from_pretrained(theirs)
    from_folder = jinjamark.ChatTemplate.from_pretrained(folder)
    assert (from_object.templates, from_object.special_tokens) == \
        (from_folder.templates, from_folder.special_tokens)


def test_a_name_the_model_does_not_have_is_refused(tmp_path, tokenizer):
    folder = layout("additional_chat_templates", tokenizer, tmp_path / "model")
    with pytest.raises(ValueError, match="no chat template named 'chatml'"):
        jinjamark.ChatTemplate.from_pretrained(folder, name="chatml")
    single = layout("chat_template.jinja", tokenizer, tmp_path / "single")
    assert jinjamark.ChatTemplate.from_pretrained(single, name="default").render(CONVERSATION) == \
        jinjamark.ChatTemplate.from_pretrained(single).render(CONVERSATION)


@pytest.mark.parametrize("case", ["config-added-token", "legacy-special-tokens-map", "model-specific",
                                  "extra-special-tokens-dict", "additional-special-tokens-list"])
def test_special_tokens_are_special_tokens_map_whatever_their_shape(tmp_path, tokenizer, case):
    folder = layout("chat_template.jinja", tokenizer, tmp_path / "model")
    if case == "config-added-token":
        edit_config(folder, pad_token=ADDED)
    elif case == "legacy-special-tokens-map":  # read only without added_tokens_decoder
        edit_config(folder, bos_token=None, eos_token=None)
        (folder / "special_tokens_map.json").write_text(json.dumps({
            "bos_token": {"content": "<s>", "lstrip": False, "normalized": False, "rstrip": False,
                          "single_word": False},
            "eos_token": "</s>", "pad_token": {"content": "<pad>"}}), encoding="utf-8")
    elif case == "model-specific":
        edit_config(folder, image_token="<img>")
    elif case == "extra-special-tokens-dict":
        edit_config(folder, extra_special_tokens={"image_token": "<img>"})
    else:
        edit_config(folder, additional_special_tokens=["<img>"])
    theirs = AutoTokenizer.from_pretrained(str(folder))
    ours = jinjamark.ChatTemplate.from_pretrained(folder)
    assert ours.special_tokens == theirs.special_tokens_map
    assert ours.render(CONVERSATION) == theirs.apply_chat_template(CONVERSATION, tokenize=False)


def test_added_token_dicts_given_by_hand_print_as_their_content():
    chat = jinjamark.ChatTemplate("{{ bos_token }}{{ pad_token }}",
                                  special_tokens={"bos_token": {"content": "<s>", "special": True},
                                                  "pad_token": ADDED})
    assert chat.render(CONVERSATION) == "<s><pad>"


def test_the_template_file_is_read_with_universal_newlines_as_transformers_reads_it(tmp_path, tokenizer):
    folder = layout("chat_template.jinja", tokenizer, tmp_path / "model")
    (folder / "chat_template.jinja").write_bytes(b"{{ bos_token }}\r\nA{% for m in messages %}\r\n{% endfor %}")
    theirs = AutoTokenizer.from_pretrained(str(folder))
    ours = jinjamark.ChatTemplate.from_pretrained(folder)
    assert ours.render(CONVERSATION) == theirs.apply_chat_template(CONVERSATION, tokenize=False)


def test_without_a_template_the_error_is_transformers(tmp_path, tokenizer):
    folder = layout("config-string", tokenizer, tmp_path / "model")
    edit_config(folder, chat_template=None)
    theirs = AutoTokenizer.from_pretrained(str(folder))
    ours = jinjamark.ChatTemplate.from_pretrained(folder)
    want = outcome(theirs.apply_chat_template, CONVERSATION, tokenize=False)
    assert want.raised and same(want, outcome(ours.render, CONVERSATION))


def test_a_missing_folder_is_an_error(tmp_path):
    with pytest.raises(FileNotFoundError):
        jinjamark.ChatTemplate.from_pretrained(tmp_path / "nowhere")


# ---------------------------------------------------------------------------- the command line

def run_cli(capsys, *argv) -> tuple[int, str, str]:
    from jinjamark import cli
    status = cli.main([str(a) for a in argv])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def write_conversation(path, **fixture):
    path.write_text(json.dumps({"messages": CONVERSATION, **fixture}), encoding="utf-8")
    return path


@pytest.mark.parametrize("template_name", [None, "default", "tool_use", "rag"])
def test_the_cli_renders_a_model_folder_with_its_special_tokens(tmp_path, capsys, tokenizer, template_name):
    folder = layout("additional_chat_templates", tokenizer, tmp_path / "model")
    conversation = write_conversation(tmp_path / "c.json", tools=[TOOL])
    argv = ["render", folder, conversation, "--add-generation-prompt"]
    argv += ["--template-name", template_name] if template_name else []
    status, out, err = run_cli(capsys, *argv)
    want = AutoTokenizer.from_pretrained(str(folder)).apply_chat_template(
        CONVERSATION, tools=[TOOL], add_generation_prompt=True, tokenize=False, chat_template=template_name)
    assert (status, out, err) == (0, want, "")
    assert out.startswith(f"[{template_name or 'tool_use'}]<s>")


def test_the_cli_bos_and_eos_override_the_folder(tmp_path, capsys, tokenizer):
    folder = layout("chat_template.jinja", tokenizer, tmp_path / "model")
    conversation = write_conversation(tmp_path / "c.json")
    status, out, _ = run_cli(capsys, "render", folder, conversation, "--bos", "<|begin|>")
    assert (status, out) == (0, "[default]<|begin|>user:hi</s>")


def test_the_cli_with_a_template_file_has_no_special_tokens_unless_given(tmp_path, capsys):
    template = tmp_path / "t.jinja"
    template.write_text("{{ bos_token }}{{ messages[0].content }}{{ eos_token }}", encoding="utf-8")
    conversation = write_conversation(tmp_path / "c.json")
    assert run_cli(capsys, "render", template, conversation)[:2] == (0, "hi")
    assert run_cli(capsys, "render", template, conversation, "--eos", "</s>")[:2] == (0, "hi</s>")
    status, _, err = run_cli(capsys, "render", template, conversation, "--template-name", "rag")
    assert status == 2 and "model folder" in err


@pytest.mark.parametrize("fixture,message", [
    ({"messages": []}, "empty conversation"),
    ({"messages": ["hi"]}, "Chat messages should be dicts"),
])
def test_the_cli_reports_a_conversation_transformers_refuses_as_a_wrong_input(tmp_path, capsys, fixture, message):
    template = tmp_path / "t.jinja"
    template.write_text("{{ messages }}", encoding="utf-8")
    path = tmp_path / "c.json"
    path.write_text(json.dumps(fixture), encoding="utf-8")
    status, out, err = run_cli(capsys, "render", template, path)
    assert (status, out) == (2, "") and message in err


def test_the_cli_names_the_templates_of_a_folder_without_default(tmp_path, capsys, tokenizer):
    folder = layout("no-default", tokenizer, tmp_path / "model")
    status, _, err = run_cli(capsys, "render", folder, write_conversation(tmp_path / "c.json"))
    assert status == 2 and "['rag', 'tool_use']" in err


def test_the_cli_marks_add_generation_prompt_taken_from_the_conversation_file(tmp_path, capsys):
    template = tmp_path / "t.jinja"
    template.write_text("{{ add_generation_prompt }}", encoding="utf-8")
    path = write_conversation(tmp_path / "c.json", kwargs={"add_generation_prompt": "<|im_start|>"})
    status, out, _ = run_cli(capsys, "render", template, path, "--json")
    assert (status, json.loads(out)) == (0, [{"text": "<|im_start|>", "is_input": True}])


def test_the_cli_tokens_of_a_folder_use_its_tokenizer(tmp_path, capsys, tokenizer):
    folder = layout("chat_template.jinja", tokenizer, tmp_path / "model")
    conversation = write_conversation(tmp_path / "c.json")
    status, out, _ = run_cli(capsys, "tokens", folder, conversation)
    theirs = AutoTokenizer.from_pretrained(str(folder))
    assert status == 0
    assert json.loads(out) == theirs.apply_chat_template(CONVERSATION, tokenize=True, return_dict=False)


def test_chat_template_json_is_a_processors_file_and_neither_reads_it(tmp_path, tokenizer):
    folder = layout("config-string", tokenizer, tmp_path / "model")
    (folder / "chat_template.json").write_text(json.dumps({"chat_template": "{{ 'processor' }}"}),
                                               encoding="utf-8")
    theirs = AutoTokenizer.from_pretrained(str(folder))
    ours = jinjamark.ChatTemplate.from_pretrained(folder)
    assert ours.templates == theirs.chat_template == TEMPLATES["default"]


def test_a_broken_named_template_fails_only_when_it_is_used():
    chat = jinjamark.ChatTemplate({"default": "{{ messages[0].content }}", "rag": "{% if %}"})
    assert chat.render(CONVERSATION) == "hi"
    with pytest.raises(jinjamark.TemplateSyntaxError):
        jinjamark.ChatTemplate({"default": "x", "rag": "{% if %}"}, template_name="rag").render(CONVERSATION)
    with pytest.raises(jinjamark.TemplateSyntaxError):
        jinjamark.ChatTemplate("{% if %}")


def test_a_special_token_that_is_none_is_not_there():
    chat = jinjamark.ChatTemplate("{{ bos_token is defined }}", special_tokens={"bos_token": None})
    assert chat.render(CONVERSATION) == "False"
