"""`jinjamark check`, `diff`, `ast`, `serve` and `--version`, through the installed console script
(subprocesses) and in process, compared with Jinja2 and difflib where they have an answer."""
from __future__ import annotations

import argparse
import difflib
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys

import jinja2.meta
import pytest
from hypothesis import given, strategies as st

import oracle
from conftest import CONVERSATIONS, TEMPLATES, fixture, source_of
import jinjamark
from jinjamark import cli
from jinjamark.cli import diff as cli_diff, show as cli_show
from jinjamark.grammar import ast
from jinjamark.grammar.errors import position

OPEN, CLOSE = cli.OPEN, cli.CLOSE
CHATML = TEMPLATES / "chatml--teknium_OpenHermes-2.5-Mistral-7B.jinja"
QWEN25 = TEMPLATES / "llamacpp--Qwen-Qwen2.5-7B-Instruct.jinja"
QWEN3 = TEMPLATES / "qwen--Qwen_Qwen3-1.7B.jinja"
TOKENS = ["--bos", oracle.SPECIAL_TOKENS["bos_token"], "--eos", oracle.SPECIAL_TOKENS["eos_token"]]
TOKENS_KW = dict(oracle.SPECIAL_TOKENS)
SCRIPT = shutil.which("jinjamark", path=os.path.dirname(sys.executable)) or shutil.which("jinjamark")


def script(*argv, stdin: str | None = None) -> subprocess.CompletedProcess:
    """The installed console script, as a user runs it."""
    assert SCRIPT, "the jinjamark console script is not installed (pip install -e .)"
    return subprocess.run([SCRIPT, *map(str, argv)], input=stdin, capture_output=True,
                          text=True, encoding="utf-8", timeout=120)


def run(capsys, *argv) -> tuple[int, str, str]:
    status = cli.main([str(a) for a in argv])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def lines_of(text: str) -> list[str]:
    """Lines cut at "\\n" only (str.splitlines also cuts at \\r, \\x0b, \\u2028, ...)."""
    *whole, last = text.split("\n")
    return [line + "\n" for line in whole] + ([last] if last else [])


def unbracket(text: str) -> str:
    return text.replace(OPEN, "").replace(CLOSE, "")


# ---------------------------------------------------------------------------- --version, help

def test_version_is_the_installed_distributions():
    done = script("--version")
    assert done.returncode == 0
    assert done.stdout.strip() == f"jinjamark {jinjamark.__version__}"
    assert jinjamark.__version__ == importlib.metadata.version("jinjamark")


def test_every_option_of_every_command_has_help_text():
    parser = cli.build_parser(["serve"])  # with the playground's options, when it is there
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    missing = []
    for name, command in [("jinjamark", parser), *commands.choices.items()]:
        for action in command._actions:
            if action.dest != "rest" and not (action.help and action.help.strip()):
                missing.append(f"{name} {action.option_strings or action.dest}")
    assert missing == []
    assert set(commands.choices) >= {"render", "tokens", "check", "diff", "ast", "serve"}


@pytest.mark.parametrize("command", ["render", "tokens", "check", "diff", "ast"])
def test_help_of_each_command_runs(command):
    done = script(command, "--help")
    assert done.returncode == 0 and done.stderr == ""
    assert "--max-template-size" in done.stdout or command == "ast" and "--json" in done.stdout


# ---------------------------------------------------------------------------- check

def test_check_through_the_console_script_reports_ok_and_what_the_template_reads():
    done = script("check", QWEN3, CONVERSATIONS / "01-single-user.json",
                  CONVERSATIONS / "05-tool-call-object-args.json")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == f"{QWEN3}: ok"
    assert "variables: " in done.stdout and "enable_thinking" in done.stdout
    assert done.stdout.count("ok: ") == 4  # two conversations, without and with the prompt


CHECKED = [CHATML, QWEN25, QWEN3, TEMPLATES / "gemma--google_gemma-2-2b-it.jinja",
           TEMPLATES / "llama--meta-llama_Llama-2-7b-chat-hf.jinja"]
CHECKED = [path for path in CHECKED if path.exists()] + sorted(TEMPLATES.glob("mistral*.jinja"))[:2]
CHECK_CONVERSATIONS = ["02-system-user", "04-no-system-multi-turn", "07-parallel-tool-calls",
                       "09-reasoning", "14-assistant-prefill"]


def jinja2_raises(source: str, conversation: str, generation_prompt: bool) -> bool:
    data = fixture(conversation)
    try:
        oracle.render_chat(source, data, generation_prompt, **(data.get("kwargs") or {}))
    except Exception:  # noqa: BLE001 - any failure of Jinja2's render is what check must report
        return True
    return False


@pytest.mark.parametrize("template", CHECKED, ids=lambda p: p.stem)
def test_check_reports_an_error_exactly_where_jinja2_raises(capsys, template):
    paths = [CONVERSATIONS / f"{name}.json" for name in CHECK_CONVERSATIONS]
    status, out, _ = run(capsys, "check", template, *paths, "--json", *TOKENS)
    report = json.loads(out)
    source = source_of(template.name)
    want = {(str(CONVERSATIONS / f"{name}.json"), agp) for name in CHECK_CONVERSATIONS
            for agp in (False, True) if jinja2_raises(source, name, agp)}
    got = {(e["conversation"], e["add_generation_prompt"]) for e in report["errors"]}
    assert got == want
    assert status == (1 if want else 0) and report["ok"] == (not want)
    assert report["variables"] == sorted(jinja2.meta.find_undeclared_variables(
        oracle.environment().parse(source)))
    for error in report["errors"]:
        assert error["message"] and error["type"]


def test_check_of_a_broken_template_exits_1_with_a_caret_and_renders_nothing(tmp_path):
    broken = tmp_path / "broken.jinja"
    broken.write_text("{% for m in messages %}\n{{ m.content }\n{% endfor %}", encoding="utf-8")
    done = script("check", broken, CONVERSATIONS / "01-single-user.json")
    assert done.returncode == 1 and "Traceback" not in done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert "line 2, column 14" in done.stdout
    caret = next(i for i, line in enumerate(lines) if line.strip() == "^")
    assert lines[caret - 1].strip() == "{{ m.content }"
    assert lines[caret].index("^") == lines[caret - 1].index("}")  # under the stray brace
    assert lines[-1] == f"{broken}: 1 error"

    done = script("check", broken, "--json")
    report = json.loads(done.stdout)
    assert done.returncode == 1 and report["ok"] is False and report["renders"] == []
    assert [(e["type"], e["line"], e["column"]) for e in report["errors"]] == [
        ("TemplateSyntaxError", 2, 14)]


def test_check_of_a_misspelled_end_tag_after_a_print_statement_points_at_the_tag(tmp_path, capsys):
    source = "{% for m in messages %}{{ m.content }}{% endfo %}"
    broken = tmp_path / "misspelled.jinja"
    broken.write_text(source, encoding="utf-8")
    status, out, _ = run(capsys, "check", broken)
    assert status == 1
    assert ("Encountered unknown tag 'endfo'. Jinja was looking for the following tags: 'endfor' or "
            "'else'. The innermost block that needs to be closed is 'for'.") in out
    assert "line 1, column 39" in out and "unexpected '}'" not in out
    lines = out.splitlines()
    caret = next(i for i, line in enumerate(lines) if line.strip() == "^")
    assert lines[caret - 1].strip() == source
    assert lines[caret - 1][lines[caret].index("^"):].startswith("{% endfo")

    status, out, _ = run(capsys, "check", broken, "--json")
    report = json.loads(out)
    assert [(e["type"], e["line"], e["column"]) for e in report["errors"]] == [
        ("TemplateSyntaxError", 1, 39)]


def test_check_reports_raise_exception_with_the_conversation_and_prompt(tmp_path, capsys):
    template = tmp_path / "strict.jinja"
    template.write_text("{% if add_generation_prompt %}{{ raise_exception('no prompt here') }}"
                        "{% endif %}{{ messages | length }}", encoding="utf-8")
    status, out, _ = run(capsys, "check", template, CONVERSATIONS / "01-single-user.json")
    assert status == 1
    assert "rendering" in out and "with the generation prompt" in out and "no prompt here" in out
    assert "ok: " in out  # the render without the prompt passed


def test_check_of_an_unreadable_conversation_is_a_usage_error(tmp_path):
    done = script("check", CHATML, tmp_path / "missing.json")
    assert done.returncode == 2 and done.stdout == ""
    assert len(done.stderr.strip().splitlines()) == 1 and "missing.json" in done.stderr


# ---------------------------------------------------------------------------- diff

def test_diff_of_a_template_with_itself_is_empty_and_exits_0():
    done = script("diff", CHATML, CHATML, CONVERSATIONS / "03-multi-turn.json")
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


@pytest.mark.parametrize("other", [CHATML, QWEN3], ids=lambda p: p.stem.split("--")[0])
@pytest.mark.parametrize("conversation", ["03-multi-turn", "04-no-system-multi-turn",
                                          "07-parallel-tool-calls", "20-injection-user"])
def test_diff_against_expected_text_is_difflibs_unified_diff_of_jinja2s_renders(tmp_path, capsys,
                                                                              conversation, other):
    path = CONVERSATIONS / f"{conversation}.json"
    data = fixture(conversation)
    ours = oracle.render_chat(source_of(QWEN25.name), data, False, **TOKENS_KW)
    theirs = oracle.render_chat(source_of(other.name), data, False, **TOKENS_KW)
    expected = tmp_path / "expected.txt"
    expected.write_text(theirs, encoding="utf-8", newline="")
    status, out, err = run(capsys, "diff", QWEN25, expected, path, *TOKENS)
    if ours == theirs:  # Qwen2.5 is ChatML when the conversation has a system message
        assert (status, out, err) == (0, "", "")
        return
    want = list(difflib.unified_diff(lines_of(ours), lines_of(theirs), str(QWEN25), str(expected)))
    want = [line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
            for line in want]
    want[:2] = [f"--- {QWEN25}\n", f"+++ {expected}\n"]
    assert status == 1 and err.strip() == cli.LEGEND
    assert unbracket(out) == "".join(want)
    # the expected text has no marks (the template's lines do: see the test below)
    added = "".join(line for line in out.splitlines(keepends=True) if line.startswith("+"))
    assert OPEN not in added


def test_diff_between_templates_shows_a_change_of_provenance_alone(tmp_path):
    """The same text, but B writes the user's message as a constant: the line differs in marks."""
    a, b = tmp_path / "a.jinja", tmp_path / "b.jinja"
    a.write_text("{% for m in messages %}{{ m.content }}\n{% endfor %}", encoding="utf-8")
    content = fixture("01-single-user")["messages"][0]["content"]
    b.write_text("{% for m in messages %}{{ " + json.dumps(content) + " }}\n{% endfor %}",
                 encoding="utf-8")
    done = script("diff", a, b, CONVERSATIONS / "01-single-user.json")
    assert done.returncode == 1
    assert done.stdout.splitlines()[3:] == [f"-{OPEN}{content}{CLOSE}", f"+{content}"]


def test_diff_reads_the_conversation_from_stdin(tmp_path):
    a, b = tmp_path / "a.jinja", tmp_path / "b.jinja"
    a.write_text("{{ messages[0].content }}!", encoding="utf-8")
    b.write_text("{{ messages[0].content }}?", encoding="utf-8")
    done = script("diff", a, b, "-", stdin=json.dumps({"messages": [{"role": "user", "content": "hi"}]}))
    assert done.returncode == 1
    assert done.stdout.splitlines()[2:] == ["@@ -1 +1 @@", f"-{OPEN}hi{CLOSE}!",
                                            "\\ No newline at end of file",
                                            f"+{OPEN}hi{CLOSE}?", "\\ No newline at end of file"]


# ---------------------------------------------------------------------------- ast

def test_ast_through_the_console_script_shows_node_kinds_and_spans(tmp_path):
    template = tmp_path / "t.jinja"
    template.write_text("{% for m in messages %}\n{{ m.content | trim }}\n{% endfor %}",
                        encoding="utf-8")
    done = script("ast", template)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "Template 1:1-3:13"
    assert re.search(r"^ +For 1:1-3:13 ", done.stdout, re.M)
    assert re.search(r"^ +expr: Filter 2:4-2:20 name='trim'$", done.stdout, re.M)
    assert re.search(r"^ +value: GetAttr 2:4-2:13 attr='content'$", done.stdout, re.M)


def nodes_of(tree: dict):
    stack = [tree]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            if "node" in value:
                yield value
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)


@pytest.mark.parametrize("template", [CHATML, QWEN25, QWEN3], ids=lambda p: p.stem)
def test_ast_json_spans_point_at_the_source(capsys, template):
    status, out, _ = run(capsys, "ast", template, "--json")
    tree, source = json.loads(out), source_of(template.name)
    assert status == 0 and tree["node"] == "Template"
    found = list(nodes_of(tree))
    assert len(found) == sum(1 for _ in ast.walk(jinjamark.ChatTemplate(source).template.tree))
    for node in found:
        span = node.get("span")
        if span is None:  # argument lists and parameters have no span of their own
            assert node["node"] in ("Arguments", "Parameter")
            continue
        assert position(source, span["start"]) == (span["line"], span["column"])
        assert position(source, span["end"]) == (span["end_line"], span["end_column"])
        if node["node"] == "Name":  # a name's span is exactly its text
            assert source[span["start"]:span["end"]] == node["name"]
    status, text, _ = run(capsys, "ast", template)
    assert status == 0 and len(text.splitlines()) >= len(found)


def test_ast_of_a_broken_template_is_a_template_error(tmp_path, capsys):
    template = tmp_path / "t.jinja"
    template.write_text("{% if x %}", encoding="utf-8")
    status, out, err = run(capsys, "ast", template)
    assert (status, out) == (1, "") and "t.jinja" in err and "endif" in err


# ---------------------------------------------------------------------------- serve

def test_serve_without_the_playground_says_so(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "jinjamark.playground", None)  # the import then fails
    status, out, err = run(capsys, "serve", "--port", "0")
    assert (status, out) == (2, "")
    assert err.strip() == f"jinjamark: error: {cli.PLAYGROUND_MISSING}"


def test_serve_help_comes_from_the_playground():
    from jinjamark import playground
    assert callable(getattr(playground, "add_arguments", None)), "helper B's playground API"
    done = script("serve", "--help")
    assert done.returncode == 0 and "usage: jinjamark serve" in done.stdout


# ---------------------------------------------------------------------------- properties

TEXTS = st.lists(st.sampled_from(["a\n", "b\n", "c\n", "\n", "a", "b ", "\u00e9\n"]),
                 max_size=25).map("".join)


@given(TEXTS, TEXTS, st.integers(0, 4))
def test_unified_diff_of_text_is_difflibs(left, right, context):
    lines = list(cli_diff.unified(cli_show.marked_lines([jinjamark.Part(left, False)]),
                                  cli_show.marked_lines([jinjamark.Part(right, False)]),
                                  "a", "b", context, keyed=False))
    ours = [prefix + (line if isinstance(line, str) else cli_show.plain(line))
            for prefix, line in lines]
    want = list(difflib.unified_diff(lines_of(left), lines_of(right), "a", "b", n=context))
    assert [line.rstrip("\n") for line in ours] == [line.rstrip("\n") for line in want]


@given(st.text(alphabet="xy\t{}", max_size=400), st.data())
def test_the_error_window_keeps_the_caret_on_its_character(line, data):
    column = data.draw(st.integers(0, len(line)))
    excerpt, caret = cli_show.window(line, column)
    assert len(excerpt) <= 2 * cli_show.WINDOW + 6
    if column < len(line):
        assert excerpt[caret] == line[column]
    else:
        assert caret == len(excerpt) - (3 if excerpt.endswith("...") else 0)


# ---------------------------------------------------------------------------- render --trace

def test_render_trace_lists_each_statement_as_it_runs_and_leaves_the_output_alone(tmp_path, capsys):
    template = tmp_path / "t.jinja"
    template.write_text("{% for m in messages %}\n{{ m['content'] }}{% if loop.last %}!{% endif %}\n"
                        "{% endfor %}{% set done = true %}")
    conversation = tmp_path / "c.json"
    conversation.write_text(json.dumps({"messages": [{"role": "user", "content": "a"},
                                                     {"role": "user", "content": "b"}]}))
    status, plain, _ = run(capsys, "render", template, conversation)
    status_traced, traced, err = run(capsys, "render", "--trace", template, conversation)
    assert status == status_traced == 0 and traced == plain
    steps = [line.split()[:2] for line in err.splitlines()]
    name = str(template)
    # the chat profile trims the newlines after block tags: no text statements for them
    assert steps == [[f"{name}:1:1", "For"],
                     [f"{name}:2:1", "Output"], [f"{name}:2:19", "If"],
                     [f"{name}:2:1", "Output"], [f"{name}:2:19", "If"], [f"{name}:2:37", "Text"],
                     [f"{name}:3:13", "Assign"]]
    assert err.splitlines()[1].endswith("{{ m['content'] }}{% if loop.last %}!{% endif %}")
    done = script("render", "--trace", template, conversation)  # the installed command too
    assert done.returncode == 0 and done.stdout == plain and done.stderr == err
