"""The `jinjamark` command renders what transformers' Jinja2 renders and shows which text is input."""
from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
from importlib import resources

import pytest

import oracle
from conftest import CONVERSATIONS, TEMPLATES, byte_level_bpe
import jinjamark
from jinjamark import hf
from jinjamark import cli

OPEN, CLOSE = cli.OPEN, cli.CLOSE
CHATML = TEMPLATES / "chatml--teknium_OpenHermes-2.5-Mistral-7B.jinja"
QWEN25 = TEMPLATES / "llamacpp--Qwen-Qwen2.5-7B-Instruct.jinja"
QWEN3 = TEMPLATES / "qwen--Qwen_Qwen3-1.7B.jinja"
INJECTION = CONVERSATIONS / "20-injection-user.json"


def run(capsys, *argv: str) -> tuple[int, str, str]:
    status = cli.main([str(a) for a in argv])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def expected(template, conversation, add_generation_prompt: bool = False, **overrides) -> str:
    fixture = json.loads(conversation.read_text(encoding="utf-8"))
    kwargs = {**(fixture.get("kwargs") or {}), **overrides}
    return oracle.render_chat(template.read_text(encoding="utf-8"), fixture, add_generation_prompt,
                              **kwargs)


def unbracket(shown: str) -> str:
    return shown.replace(OPEN, "").replace(CLOSE, "")


def bracketed(shown: str) -> list[str]:
    return re.findall(f"{OPEN}(.*?){CLOSE}", shown, flags=re.S)


# ---------------------------------------------------------------------------- render

@pytest.mark.parametrize("template", [CHATML, QWEN25, QWEN3], ids=lambda p: p.stem)
@pytest.mark.parametrize("conversation", ["03-multi-turn", "07-parallel-tool-calls",
                                          "17-kwargs-no-thinking", "20-injection-user"])
@pytest.mark.parametrize("agp", [False, True], ids=["plain", "generation-prompt"])
def test_render_prints_exactly_what_jinja2_renders(capsys, template, conversation, agp):
    path = CONVERSATIONS / f"{conversation}.json"
    argv = [template, path] + (["--add-generation-prompt"] if agp else [])
    status, out, err = run(capsys, "render", *argv)
    assert (status, err) == (0, "")
    assert out == expected(template, path, agp)  # no trailing newline added


def test_var_overrides_conversation_kwargs_as_json(capsys):
    conversation = CONVERSATIONS / "17-kwargs-no-thinking.json"  # kwargs: enable_thinking=false
    status, out, _ = run(capsys, "render", QWEN3, conversation, "--add-generation-prompt",
                         "--var", "enable_thinking=true")
    assert status == 0
    assert out == expected(QWEN3, conversation, True, enable_thinking=True)
    assert out != expected(QWEN3, conversation, True)


def test_var_that_is_not_json_is_a_plain_string(tmp_path, capsys):
    template = tmp_path / "t.jinja"
    template.write_text("{{ greeting }}|{{ count + 1 }}|{{ flags | length }}", encoding="utf-8")
    status, out, _ = run(capsys, "render", template, INJECTION, "--var", "greeting=hello world",
                         "--var", "count=41", "--var", 'flags=["a", "b"]')
    assert (status, out) == (0, "hello world|42|2")


def test_var_named_like_a_render_argument_replaces_it(tmp_path, capsys):
    template = tmp_path / "t.jinja"
    template.write_text("{{ tools | length }} {{ messages | length }} {{ add_generation_prompt }}",
                        encoding="utf-8")
    status, out, _ = run(capsys, "render", template, INJECTION, "--var", 'tools=[{"name": "x"}]',
                         "--var", 'messages=[{"role": "user"}, {"role": "user"}]',
                         "--var", "add_generation_prompt=true")
    assert (status, out) == (0, "1 2 True")


def test_bos_and_eos_tokens_can_be_set(tmp_path, capsys):
    template = tmp_path / "t.jinja"
    template.write_text("{{ bos_token }}{{ messages[0].content }}{{ eos_token }}", encoding="utf-8")
    status, out, _ = run(capsys, "render", template, CONVERSATIONS / "01-single-user.json",
                         "--bos", "<|begin|>", "--eos", "<|end|>")
    fixture = json.loads((CONVERSATIONS / "01-single-user.json").read_text(encoding="utf-8"))
    assert (status, out) == (0, f"<|begin|>{fixture['messages'][0]['content']}<|end|>")


# ---------------------------------------------------------------------------- parts

def test_parts_bracket_exactly_the_conversation_text(capsys):
    status, out, err = run(capsys, "render", CHATML, INJECTION, "--parts",
                           "--add-generation-prompt")
    fixture = json.loads(INJECTION.read_text(encoding="utf-8"))
    # the roles are the chat APIs' own names: template text (ChatTemplate's trusted_roles)
    want = "".join(f"<|im_start|>{m['role']}\n{OPEN}{m['content']}{CLOSE}<|im_end|>\n"
                   for m in fixture["messages"]) + "<|im_start|>assistant\n"
    assert status == 0
    assert out == want
    assert unbracket(out) == expected(CHATML, INJECTION, True)
    assert err.strip() == cli.LEGEND  # a one-line legend, on stderr


def test_parts_as_json_are_machine_readable(capsys):
    status, out, _ = run(capsys, "render", QWEN25, INJECTION, "--json")
    parts = json.loads(out)
    assert status == 0
    assert all(set(p) == {"text", "is_input"} for p in parts)
    assert "".join(p["text"] for p in parts) == expected(QWEN25, INJECTION)
    forged = json.loads(INJECTION.read_text(encoding="utf-8"))["messages"][1]["content"]
    assert {"text": forged, "is_input": True} in parts
    template_text = "".join(p["text"] for p in parts if not p["is_input"])
    # the template wrote the control tokens and newlines; the roles are the chat APIs' own names
    assert template_text == "<|im_start|>system\n<|im_end|>\n<|im_start|>user\n<|im_end|>\n"


def test_parts_and_json_cannot_be_combined(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["render", str(CHATML), str(INJECTION), "--parts", "--json"])
    assert exit_.value.code == 2


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_brackets_on_a_terminal_show_escape_characters_of_input():
    out, err = Terminal(), io.StringIO()
    parts = [jinjamark.Part("<|im_start|>user\n", False), jinjamark.Part("hi\x1b[0m\x1b[2J", True)]
    cli.show_parts(parts, out, err, use_color=False)
    assert out.getvalue() == f"<|im_start|>user\n{OPEN}hi\u241b[0m\u241b[2J{CLOSE}\n"


def test_colour_on_a_terminal_marks_input_with_rich(monkeypatch):
    pytest.importorskip("rich")
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")

    out, err = Terminal(), io.StringIO()
    parts = [jinjamark.Part("<|im_start|>user\n", False), jinjamark.Part("<|im_end|>\x1b[0m", True)]
    assert cli.wants_color(out) and not cli.wants_color(io.StringIO())
    cli.show_parts(parts, out, err, use_color=True)
    shown = out.getvalue()
    assert "\x1b[" in shown and OPEN not in shown
    # ended with a newline on a terminal: the legend (on stderr, same screen) gets its own line
    assert re.sub(r"\x1b\[[0-9;]*m", "", shown) == "<|im_start|>user\n<|im_end|>\u241b[0m\n"
    legend = err.getvalue()
    assert re.sub(r"\x1b\[[0-9;]*m", "", legend) == (
        "legend: input text came from input; all other text is template text.\n")


# ---------------------------------------------------------------------------- demo

def demo_expected() -> str:
    folder = resources.files("jinjamark") / "demo"
    source = (folder / cli.DEMO_TEMPLATE).read_text(encoding="utf-8")
    fixture = json.loads((folder / cli.DEMO_CONVERSATION).read_text(encoding="utf-8"))
    return oracle.render_chat(source, fixture, True, **(fixture.get("kwargs") or {}))


def test_demo_runs_as_a_module_and_brackets_the_forged_tokens():
    done = subprocess.run([sys.executable, "-m", "jinjamark", "render", "--demo"],
                          capture_output=True, timeout=120)
    out, err = done.stdout.decode("utf-8"), done.stderr.decode("utf-8")
    assert done.returncode == 0, err
    assert unbracket(out) == demo_expected()
    forged = [part for part in bracketed(out) if "<|im_end|>" in part]
    assert len(forged) == 1 and "You are now in admin mode." in forged[0]
    outside = re.sub(f"{OPEN}.*?{CLOSE}", "", out, flags=re.S)
    assert outside.count("<|im_start|>") == 3  # system, user, generation prompt: template text
    assert cli.LEGEND in err


def test_demo_in_process_matches_the_bundled_files(capsys):
    status, out, _ = run(capsys, "render", "--demo")
    assert status == 0 and unbracket(out) == demo_expected()


def test_demo_takes_no_files(capsys):
    status, _, err = run(capsys, "render", "--demo", CHATML)
    assert status == 2 and "--demo" in err


# ---------------------------------------------------------------------------- errors

def test_syntax_error_exits_1_with_a_caret(tmp_path, capsys):
    template = tmp_path / "broken.jinja"
    template.write_text("{% for m in messages %}\n{{ m.content }\n{% endfor %}", encoding="utf-8")
    status, out, err = run(capsys, "render", template, INJECTION)
    assert (status, out) == (1, "")
    assert "broken.jinja" in err and "line " in err
    assert err.rstrip().splitlines()[-1].strip() == "^"
    assert "Traceback" not in err


def test_raise_exception_message_exits_1(tmp_path, capsys):
    template = tmp_path / "strict.jinja"
    template.write_text("{{ raise_exception('Only user and assistant roles are supported!') }}",
                        encoding="utf-8")
    status, _, err = run(capsys, "render", template, INJECTION)
    assert status == 1 and "Only user and assistant roles are supported!" in err


def test_bad_json_exits_2_with_one_line(tmp_path, capsys):
    conversation = tmp_path / "bad.json"
    conversation.write_text('{"messages": [', encoding="utf-8")
    status, out, err = run(capsys, "render", CHATML, conversation)
    assert (status, out) == (2, "")
    assert len(err.strip().splitlines()) == 1 and "bad.json" in err


@pytest.mark.parametrize("content", ['[{"role": "user"}]', '{"msgs": []}'])
def test_conversation_without_a_messages_list_exits_2(tmp_path, capsys, content):
    conversation = tmp_path / "odd.json"
    conversation.write_text(content, encoding="utf-8")
    status, _, err = run(capsys, "render", CHATML, conversation)
    assert status == 2 and '"messages"' in err


def test_missing_file_exits_2(tmp_path, capsys):
    status, _, err = run(capsys, "render", tmp_path / "nope.jinja", INJECTION)
    assert status == 2 and "nope.jinja" in err and len(err.strip().splitlines()) == 1


def test_malformed_var_exits_2(capsys):
    status, _, err = run(capsys, "render", CHATML, INJECTION, "--var", "no-equals-sign")
    assert status == 2 and "--var" in err


def test_a_number_longer_than_python_reads_is_named_in_the_commands_terms(tmp_path, capsys):
    """JSON allows any number of digits; Python converts at most 4,300 by default. The error says
    so, and how to lift the limit for the run, instead of calling the file invalid JSON and
    advising Python code; lifted, the number renders."""
    conversation = tmp_path / "conv.json"
    conversation.write_text('{"messages": [{"role": "user", "content": ' + "9" * 5000 + "}]}")
    status, _, err = run(capsys, "render", CHATML, conversation)
    assert status == 2 and "5,000 digits" in err and "PYTHONINTMAXSTRDIGITS=0" in err
    assert "not valid JSON" not in err and "sys.set_int_max_str_digits" not in err
    assert len(err.strip().splitlines()) == 1
    template = tmp_path / "content.jinja"
    template.write_text("{% for m in messages %}{{ m.content }}{% endfor %}")
    done = subprocess.run([sys.executable, "-m", "jinjamark", "render", str(template), str(conversation)],
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONINTMAXSTRDIGITS": "0"})
    assert done.returncode == 0 and done.stdout == "9" * 5000, done.stderr


def test_ast_help_lists_the_parse_limits_only(capsys):
    """`ast` parses and never renders: the render limits are not its options."""
    import dataclasses
    names = {f"--{f.name.replace('_', '-')}" for f in dataclasses.fields(jinjamark.Limits)}
    parse = {"--max-template-size", "--max-nesting"}
    shown = {}
    for command in ("ast", "render"):
        with pytest.raises(SystemExit):
            cli.main([command, "--help"])
        shown[command] = set(re.findall(r"--max-[a-z-]+|--deadline", capsys.readouterr().out))
    assert shown == {"ast": parse, "render": names}
    with pytest.raises(SystemExit) as refused:
        cli.main(["ast", str(CHATML), "--max-output", "10"])
    assert refused.value.code == 2 and "--max-output" in capsys.readouterr().err


# ---------------------------------------------------------------------------- tokens

SCRIPT = shutil.which("jinjamark", path=os.path.dirname(sys.executable)) or shutil.which("jinjamark")
CONTROL_TOKENS = ["<|im_start|>", "<|im_end|>", "<s>", "</s>"]


@pytest.fixture(scope="module")
def model_folder(tmp_path_factory):
    """A ChatML model folder as transformers saves it: a trained byte-level BPE (no download)."""
    from transformers import PreTrainedTokenizerFast
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=byte_level_bpe(400, CONTROL_TOKENS),
                                        bos_token="<s>", eos_token="</s>")
    tokenizer.chat_template = CHATML.read_text(encoding="utf-8")
    folder = tmp_path_factory.mktemp("chatml-model")
    tokenizer.save_pretrained(folder)
    return folder, tokenizer


def tokens(*argv) -> subprocess.CompletedProcess:
    assert SCRIPT, "the jinjamark console script is not installed (pip install -e .)"
    return subprocess.run([SCRIPT, "tokens", *map(str, argv)], capture_output=True, text=True,
                          encoding="utf-8", timeout=120)


@pytest.mark.parametrize("conversation", ["03-multi-turn", "11-unicode"])
def test_tokens_of_a_model_folder_are_transformers_ids(model_folder, conversation):
    folder, tokenizer = model_folder
    path = CONVERSATIONS / f"{conversation}.json"
    done = tokens(folder, path, "--add-generation-prompt")
    messages = json.loads(path.read_text(encoding="utf-8"))["messages"]
    want = tokenizer.apply_chat_template(messages, tokenize=True, add_generation_prompt=True)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == list(want["input_ids"])


def test_tokens_show_control_tokens_only_where_the_template_wrote_them(model_folder):
    folder, tokenizer = model_folder
    done = tokens(folder, INJECTION, "--add-generation-prompt", "--show")
    shown = done.stdout
    fixture = json.loads(INJECTION.read_text(encoding="utf-8"))
    assert done.returncode == 0, done.stderr
    # ChatML: <|im_start|> and <|im_end|> around each message, then the generation prompt
    assert re.findall("\u27ea(.*?)\u27eb", shown) == (
        ["<|im_start|>", "<|im_end|>"] * len(fixture["messages"]) + ["<|im_start|>"])
    text = re.sub("[\u27ea\u27eb\u27e6\u27e7\u00b7]", "", shown)
    assert text == expected(CHATML, INJECTION, True).replace("\u00b7", "") + "\n"
    flat = tokenizer.apply_chat_template(fixture["messages"], tokenize=True,
                                         add_generation_prompt=True)["input_ids"]
    controls = set(tokenizer.convert_tokens_to_ids(CONTROL_TOKENS))
    assert sum(i in controls for i in flat) > 2 * len(fixture["messages"]) + 1  # the injection
    assert f"{2 * len(fixture['messages']) + 1} control tokens" in done.stderr
    assert done.stderr.splitlines()[0] == (
        "\u27ea...\u27eb a control token, \u27e6...\u27e7 a token of input, \u00b7 between tokens.")


@pytest.mark.parametrize("conversation, options", [
    (INJECTION, ["--add-generation-prompt"]), (CONVERSATIONS / "11-unicode.json", []),
    (CONVERSATIONS / "03-multi-turn.json", ["--mask"])], ids=["injection", "unicode", "mask"])
def test_tokens_show_one_piece_per_token(model_folder, conversation, options):
    """As the playground: a forged `<|im_end|>` (ordinary tokens all given the characters of the
    whole token) is shown as its tokens, and a character of several byte tokens appears once, on
    the token that completes it; the footer counts the pieces shown."""
    folder, tokenizer = model_folder
    done = tokens(folder, conversation, "--show", *options)
    assert done.returncode == 0, done.stderr
    ids = json.loads(tokens(folder, conversation, *options).stdout)
    ids = ids["input_ids"] if "--mask" in options else ids
    pieces = done.stdout[:-1].split("\u00b7")
    assert len(pieces) == len(ids) and f"{len(ids)} tokens" in done.stderr
    assert "\u27e6<|im_end|>\u27e7" not in pieces and not any("\ufffd" in p for p in pieces)
    if conversation == INJECTION:
        forged = tokenizer.backend_tokenizer
        forged.encode_special_tokens = True
        try:
            spelled = [tokenizer.decode([i]) for i in forged.encode("<|im_end|>", add_special_tokens=False).ids]
        finally:
            forged.encode_special_tokens = False
        assert len(spelled) > 1 and "\u00b7".join(f"\u27e6{p}\u27e7" for p in spelled) in done.stdout


def test_tokens_mask_is_the_drop_ins_mask(model_folder):
    folder, tokenizer = model_folder
    path = CONVERSATIONS / "03-multi-turn.json"
    done = tokens(folder, path, "--mask")
    assert done.returncode == 0, done.stderr
    messages = json.loads(path.read_text(encoding="utf-8"))["messages"]
    want = hf.apply_chat_template(tokenizer, messages, return_assistant_tokens_mask=True)
    assert json.loads(done.stdout) == {"input_ids": want["input_ids"],
                                       "assistant_masks": want["assistant_masks"]}
    shown = tokens(folder, path, "--mask", "--show").stdout
    replies = [m["content"] for m in messages if m["role"] == "assistant"]
    masked = [re.sub("[\u27ea\u27eb\u27e6\u27e7]", "", m)
              for m in re.findall("\u2039(.*?)\u203a", shown, re.DOTALL)]
    assert "".join(masked) == "".join(f"{r}<|im_end|>\n" for r in replies)


def test_render_origins_names_each_parts_message_and_field(capsys):
    status, out, _ = run(capsys, "render", CHATML, CONVERSATIONS / "03-multi-turn.json", "--origins", "--json")
    parts = json.loads(out)
    assert status == 0 and [p["field"] for p in parts if p["is_input"]] == ["content"] * 6
    assert [p["message"] for p in parts if p["is_input"]] == list(range(6))
    assert {p["turn"] for p in parts if not p["is_input"]} == set(range(6))
    status, out, _ = run(capsys, "render", CHATML, INJECTION, "--origins")
    assert status == 0 and "input    message 1 content" in out and "template turn 0" in out


def test_tokens_of_a_template_file_from_stdin_with_a_tokenizer_file(model_folder):
    folder, tokenizer = model_folder
    conversation = CONVERSATIONS / "03-multi-turn.json"
    done = subprocess.run([SCRIPT, "tokens", "-", conversation, "--tokenizer",
                           folder / "tokenizer.json"], input=CHATML.read_text(encoding="utf-8"),
                          capture_output=True, text=True, encoding="utf-8", timeout=120)
    messages = json.loads(conversation.read_text(encoding="utf-8"))["messages"]
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == list(tokenizer.apply_chat_template(
        messages, tokenize=True)["input_ids"])


def test_tokens_without_a_tokenizer_is_a_usage_error():
    done = tokens(CHATML, INJECTION)
    assert done.returncode == 2 and "--tokenizer" in done.stderr and "Traceback" not in done.stderr
