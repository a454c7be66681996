"""The first hour of a new user, scripted: every mistake and signal on the installed `jinjamark`
console script ends with a message and a documented exit status, never a traceback.

Exit statuses (interpreter/cli/__init__.py): 0 done, 1 a template error, 2 a wrong command line or input
file, 130 interrupted, 141 the reader of the output went away.
"""
from __future__ import annotations

import fnmatch
import json
import os
import pathlib
import pty
import re
import select
import shutil
import signal
import subprocess
import sys
import time

import pytest

import oracle
from conftest import CONVERSATIONS, TEMPLATES, fixture, source_of
from jinjamark import cli

SCRIPT = shutil.which("jinjamark", path=os.path.dirname(sys.executable)) or shutil.which("jinjamark")
CHATML = TEMPLATES / "chatml--teknium_OpenHermes-2.5-Mistral-7B.jinja"
INJECTION = CONVERSATIONS / "20-injection-user.json"
STYLE = re.compile(r"\x1b\[[0-9;]*m")


def script(*argv, stdin: str | None = None, **options) -> subprocess.CompletedProcess:
    assert SCRIPT, "the jinjamark console script is not installed (pip install -e .)"
    return subprocess.run([SCRIPT, *map(str, argv)], input=stdin, capture_output=True, text=True,
                          encoding="utf-8", timeout=120, **options)


def assert_clean(done: subprocess.CompletedProcess, status: int) -> None:
    """The status, and at most a short message: no traceback."""
    assert done.returncode == status, done.stderr[-2000:]
    assert "Traceback" not in done.stderr and "Error:" not in done.stderr.replace("error:", "")


@pytest.fixture
def long_render(tmp_path):
    """A template writing about 8 MB, in many lines."""
    template = tmp_path / "long.jinja"
    template.write_text("{% for i in range(100000) %}{{ i }}: {{ messages[0].content }} and some "
                        "more text to make the line long enough\n{% endfor %}", encoding="utf-8")
    return template


# ---------------------------------------------------------------------------- signals

@pytest.mark.parametrize("argv", [[], ["--parts"], ["--json"]], ids=["text", "parts", "json"])
def test_a_closed_pipe_ends_quietly_with_141(long_render, argv):
    process = subprocess.Popen([SCRIPT, "render", long_render, INJECTION, *argv],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    process.stdout.close()  # the reader went away before the output came, as `| head` does
    status = process.wait(timeout=120)
    error = process.stderr.read().decode("utf-8")
    process.stderr.close()
    assert (status, error) == (cli.EXIT_CLOSED_PIPE, "")


def test_piped_into_head_prints_no_traceback(long_render):
    done = subprocess.run(["bash", "-c", f'"{SCRIPT}" render "{long_render}" "{INJECTION}" | head -n 2'],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and len(done.stdout.splitlines()) == 2
    assert "Traceback" not in done.stderr and "Broken pipe" not in done.stderr


def test_ctrl_c_ends_with_130_and_one_line(tmp_path):
    """Interrupted while it waits for the conversation on standard input."""
    # SIGINT as a terminal delivers it: a shell's background job (nohup ... &) ignores it, and a
    # child would inherit that
    process = subprocess.Popen([SCRIPT, "render", CHATML, "-"], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    wait_until_idle(process.pid)
    process.send_signal(signal.SIGINT)
    status = process.wait(timeout=60)  # stdin stays open: only the signal can end the read
    out, err = process.stdout.read(), process.stderr.read().decode("utf-8")
    for stream in (process.stdin, process.stdout, process.stderr):
        stream.close()
    assert (status, out, err) == (cli.EXIT_INTERRUPTED, b"", "jinjamark: interrupted\n")


def wait_until_idle(pid: int, timeout: float = 60.0) -> None:
    """Until the process stops using CPU (it is blocked reading its input): the imports are done,
    so that the signal reaches the command, not the interpreter's start."""
    stat = f"/proc/{pid}/stat"

    def sample() -> tuple[str, int]:
        with open(stat) as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
        return fields[0], int(fields[11]) + int(fields[12])  # state; utime + stime

    deadline, last, still = time.monotonic() + timeout, -1, 0
    time.sleep(0.3)
    while time.monotonic() < deadline:
        state, now = sample()  # sleeping, not merely waiting for a busy CPU
        still = still + 1 if state == "S" and now == last else 0
        if still >= 4:
            return
        last = now
        time.sleep(0.1)
    raise AssertionError("the command never waited for its input")


# ---------------------------------------------------------------------------- input files

def deep(depth: int) -> str:
    return '{"messages": [{"role": "user", "content": ' + "[" * depth + "]" * depth + "}]}"


def test_a_100000_deep_json_conversation_is_a_clear_usage_error(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text(deep(100_000), encoding="utf-8")
    for done in (script("render", CHATML, path), script("render", CHATML, "-", stdin=deep(100_000)),
                 script("check", CHATML, path),
                 script("render", CHATML, INJECTION, "--var", "x=" + "[" * 30_000 + "]" * 30_000)):
        assert_clean(done, 2)
        assert done.stderr.count("\n") == 1 and "nested too deeply" in done.stderr


def test_deep_input_that_json_reads_is_a_template_error_in_the_render(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text(deep(900), encoding="utf-8")
    template = tmp_path / "t.jinja"
    template.write_text("{{ messages | tojson }}", encoding="utf-8")
    done = script("render", template, path)
    assert_clean(done, 1)


def test_json_with_a_byte_order_mark_is_read(tmp_path):
    path = tmp_path / "bom.json"
    path.write_bytes(b"\xef\xbb\xbf" + INJECTION.read_bytes())
    want = oracle.render_chat(source_of(CHATML.name), fixture(INJECTION.stem), False)
    assert script("render", CHATML, path).stdout == want
    done = script("render", CHATML, "-", stdin="\ufeff" + INJECTION.read_text(encoding="utf-8"))
    assert (done.returncode, done.stdout) == (0, want)


def test_render_from_standard_input_twice_is_refused():
    done = script("render", "-", "-", stdin="")
    assert_clean(done, 2)
    assert done.stderr == "jinjamark: error: only one of the files can be standard input (-)\n"


def test_the_template_can_come_from_standard_input():
    done = script("render", "-", INJECTION, stdin=source_of(CHATML.name))
    assert done.returncode == 0
    assert done.stdout == oracle.render_chat(source_of(CHATML.name), fixture(INJECTION.stem), False)


def test_an_output_encoding_without_the_characters_is_a_clear_error():
    conversation = CONVERSATIONS / "11-unicode.json"
    done = script("render", CHATML, conversation, env={**os.environ, "PYTHONIOENCODING": "ascii"})
    assert_clean(done, 2)
    assert "ascii cannot encode" in done.stderr and "PYTHONIOENCODING=utf-8" in done.stderr


# ---------------------------------------------------------------------------- big templates, limits

def test_a_5_mb_one_line_template_is_not_echoed(tmp_path):
    template = tmp_path / "big.jinja"
    template.write_text("x" * 5_000_000 + "{{ }", encoding="utf-8")
    refused = script("render", template, INJECTION)
    assert_clean(refused, 1)
    assert "more than 100000" in refused.stderr and len(refused.stderr) < 1000

    parsed = script("render", template, INJECTION, "--max-template-size", "6000000")
    assert_clean(parsed, 1)
    assert len(parsed.stderr) < 1000 and "line 1, column 5000004" in parsed.stderr
    excerpt, caret = parsed.stderr.splitlines()[-2:]
    assert excerpt.endswith("x{{ }") and excerpt.lstrip().startswith("...")
    assert excerpt[caret.index("^")] == "}"


def test_limit_options_raise_and_lower_the_engines_limits(tmp_path):
    template = tmp_path / "t.jinja"
    template.write_text("{% for m in messages %}{{ m.content }}{% endfor %}" + "{# pad #}" * 20_000,
                        encoding="utf-8")  # 180,000 characters: over the default size
    assert_clean(script("render", template, INJECTION), 1)
    done = script("render", template, INJECTION, "--max-template-size", "200000")
    assert done.returncode == 0
    assert done.stdout == "".join(m["content"] for m in fixture(INJECTION.stem)["messages"])

    lowered = script("render", template, INJECTION, "--max-template-size", "200000",
                     "--max-output", "10")
    assert_clean(lowered, 1)
    assert "longer than 10 characters" in lowered.stderr


@pytest.mark.parametrize("value", ["0", "-5", "many"])
def test_a_wrong_limit_is_a_usage_error(value):
    assert_clean(script("render", CHATML, INJECTION, "--max-output", value), 2)


# ---------------------------------------------------------------------------- colour on a terminal

def on_a_terminal(*argv, **environment: str) -> tuple[int, str]:
    """Run with stdout and stderr on one pseudo-terminal, as a user sees it; returns the status
    and everything the terminal showed."""
    main, child = pty.openpty()
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "200"}
    env.pop("NO_COLOR", None)
    env.update(environment)
    process = subprocess.Popen([SCRIPT, *map(str, argv)], stdin=subprocess.DEVNULL, stdout=child,
                               stderr=child, env=env, close_fds=True)
    os.close(child)
    shown = b""
    while True:
        ready, _, _ = select.select([main], [], [], 60)
        if not ready:
            break
        try:
            chunk = os.read(main, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        shown += chunk
    os.close(main)
    return process.wait(timeout=60), shown.decode("utf-8").replace("\r\n", "\n")


def test_parts_in_colour_keep_the_legend_on_its_own_styled_line(tmp_path):
    pytest.importorskip("rich")  # the test extra installs it: this runs in CI
    template = tmp_path / "t.jinja"  # a render that does not end with a newline
    template.write_text("<|im_start|>user\n{{ messages[0].content }}", encoding="utf-8")
    content = fixture("01-single-user")["messages"][0]["content"]
    status, shown = on_a_terminal("render", template, CONVERSATIONS / "01-single-user.json", "--parts")
    assert status == 0
    *render, legend = shown.splitlines()
    assert STYLE.sub("", legend) == "legend: input text came from input; all other text is template text."
    assert legend.startswith("\x1b[")  # styled as a legend
    assert STYLE.sub("", "\n".join(render)) == f"<|im_start|>user\n{content}"
    assert cli.OPEN not in shown and re.search(r"\x1b\[[0-9;]*m" + re.escape(content), shown)


@pytest.mark.parametrize("environment", [{"NO_COLOR": "1"}, {"TERM": "dumb"}], ids=["NO_COLOR", "dumb"])
def test_a_terminal_without_colour_gets_brackets_not_invisible_marks(environment):
    """rich draws no colour there: input shown in colour would look like template text."""
    status, shown = on_a_terminal("render", CHATML, INJECTION, "--parts", **environment)
    assert status == 0 and "\x1b[" not in shown
    contents = [m["content"] for m in fixture(INJECTION.stem)["messages"]]
    *render, legend = shown.splitlines()
    assert re.findall(f"{cli.OPEN}(.*?){cli.CLOSE}", "\n".join(render), re.S) == contents
    assert legend == cli.LEGEND


def test_diff_in_colour_styles_the_lines_the_input_and_the_legend(tmp_path):
    pytest.importorskip("rich")
    a, b = tmp_path / "a.jinja", tmp_path / "b.jinja"
    a.write_text("{{ messages[0].content }}!\n{% if true %}same\n{% endif %}", encoding="utf-8")
    b.write_text("{{ messages[0].content }}?\n{% if true %}same\n{% endif %}", encoding="utf-8")
    content = fixture("01-single-user")["messages"][0]["content"]
    status, shown = on_a_terminal("diff", a, b, CONVERSATIONS / "01-single-user.json")
    assert status == 1
    *lines, legend = shown.splitlines()
    assert [STYLE.sub("", line) for line in lines] == [
        f"--- {a}", f"+++ {b}", "@@ -1,2 +1,2 @@", f"-{content}!", f"+{content}?", " same"]
    assert all(line.startswith("\x1b[") for line in lines[:5])  # headers and changes in colour
    assert STYLE.sub("", legend).startswith("legend: input") and legend.startswith("\x1b[")
    assert cli.OPEN not in shown


# ---------------------------------------------------------------------------- the drop-in, tokens, odd inputs

@pytest.fixture(scope="module")
def chatml_tokenizer():
    from transformers import PreTrainedTokenizerFast
    from conftest import byte_level_bpe
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=byte_level_bpe(400, ["<|im_start|>", "<|im_end|>"]))
    tokenizer.chat_template = source_of(CHATML.name)
    return tokenizer


def test_the_drop_ins_errors_are_caught_and_printed_as_transformers(chatml_tokenizer):
    """The handler written around transformers' method catches the drop-in's error, which prints
    the same message; the caret is on `.located`."""
    import jinja2
    from jinjamark import hf
    messages = fixture("01-single-user")["messages"]
    for source in ("{{ raise_exception('no system turn') }}", "{% for m in messages %}{% if %}", "{{ x.y }}"):
        caught = []
        for apply in (chatml_tokenizer.apply_chat_template, lambda *a, **k: hf.apply_chat_template(chatml_tokenizer, *a, **k)):
            try:
                apply(messages, chat_template=source)
            except jinja2.TemplateError as error:
                caught.append(error)
        theirs, ours = caught
        assert isinstance(ours, type(theirs)) and str(ours) == str(theirs)
        assert ours.lineno == 1 and ours.located.endswith("^")


def test_readmes_import_jinjamark_then_jinjamark_hf_works_without_importing_transformers():
    code = ("import sys, jinjamark; jinjamark.hf.patch, jinjamark.hf.unpatch; "
            "print(sorted({'transformers', 'jinja2'} & set(sys.modules)))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (0, "[]\n"), done.stderr


def test_tokens_show_prints_a_piece_per_token_as_its_footer_counts(chatml_tokenizer, tmp_path):
    chatml_tokenizer.save_pretrained(tmp_path)
    done = script("tokens", tmp_path, INJECTION, "--show")
    assert_clean(done, 0)
    count = int(re.search(r"^(\d+) tokens", done.stderr, re.M).group(1))
    pieces = done.stdout[:-1].split("\u00b7")
    assert len(pieces) == count == len(json.loads(script("tokens", tmp_path, INJECTION).stdout))
    assert "\u27e6<|im_end|>\u27e7" not in pieces  # the user's forgery, as its ordinary tokens


def test_a_clone_named_jinjamark_shadows_the_install_from_its_parent_as_contributing_says(tmp_path):
    (tmp_path / "jinjamark" / "interpreter").mkdir(parents=True)  # a clone's layout: no __init__.py
    done = subprocess.run([sys.executable, "-c", "import jinjamark; jinjamark.ChatTemplate"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60)
    message = done.stderr.strip().splitlines()[-1]
    assert message == "AttributeError: module 'jinjamark' has no attribute 'ChatTemplate'"
    contributing = " ".join((ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8").split())
    assert "module 'jinjamark' has no attribute" in contributing and "namespace package" in contributing


def test_a_5000_digit_number_in_a_conversation_says_which_limit_it_hit(tmp_path):
    path = tmp_path / "conv.json"
    path.write_text('{"messages": [{"role": "user", "content": ' + "1" * 5000 + "}]}", encoding="utf-8")
    done = script("render", CHATML, path)
    assert_clean(done, 2)
    assert "5,000 digits" in done.stderr and "PYTHONINTMAXSTRDIGITS=0" in done.stderr
    assert "not valid JSON" not in done.stderr and "sys.set_int_max_str_digits" not in done.stderr


def test_encoding_with_something_else_than_a_tokenizer_says_what_a_tokenizer_is():
    import jinjamark
    with pytest.raises(TypeError, match="must be a tokenizers.Tokenizer or a transformers tokenizer"):
        jinjamark.ChatTemplate(source_of(CHATML.name)).encode(fixture("01-single-user")["messages"], object())


def test_ast_help_offers_the_parse_limits_only():
    done = script("ast", "--help")
    assert_clean(done, 0)
    assert set(re.findall(r"--max-[a-z-]+|--deadline", done.stdout)) == {"--max-template-size", "--max-nesting"}


def test_the_docs_say_what_the_code_prints(monkeypatch):
    """README's count of control tokens is that of the ids it prints; docs/extensions.md quotes
    the message strict mode gives without interegular; install advice works from a checkout."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    flat = json.loads(readme.split("This prints (real output):", 1)[1].split("```", 2)[1].splitlines()[4])
    words = {3: "three", 4: "four", 5: "five", 6: "six"}
    assert f"the prompt has {words[flat.count(0) + flat.count(1)]} control tokens" in readme
    import importlib.util
    import jinjamark
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "interegular" else real(name, *a))
    with pytest.raises(jinjamark.ExtensionError) as refused:
        jinjamark.Environment(extensions=["do"], strict_extensions=True)
    guide = " ".join((ROOT / "docs" / "extensions.md").read_text(encoding="utf-8").split())
    assert f'"{refused.value.message}"' in guide
    advice = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md")),
              *sorted((ROOT / "interpreter").rglob("*.py"))]
    assert [p.name for p in advice if "pip install 'jinjamark[" in p.read_text(encoding="utf-8")] == []


def test_no_test_prints_past_pytests_capture():
    """pytest -q shows only its dots: a test with something to report asserts it instead."""
    tests = sorted(pathlib.Path(__file__).parent.glob("test_*.py"))
    assert [t.name for t in tests if "capsys.disabled()" in t.read_text(encoding="utf-8")
            and t.name != pathlib.Path(__file__).name] == []


# ---------------------------------------------------------------------------- what a wheel holds

ROOT = TEMPLATES.parents[2]
FOLDERS = {"jinjamark": ROOT / "interpreter", "jinjamark.grammar": ROOT / "grammar"}


def project_table() -> dict:
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]


def test_every_package_and_data_file_goes_into_the_wheel():
    """A wheel holds only the listed packages and package data: a new subpackage or data file
    left out installs fine in editable mode and fails for everyone who installs the wheel."""
    setuptools = project_table()
    packages, data = set(setuptools["packages"]), setuptools["package-data"]
    missing_packages, missing_data = [], []
    for package, folder in FOLDERS.items():
        for path in sorted(folder.rglob("*")):
            if "__pycache__" in path.parts or path.name.startswith(".") or path.is_dir():
                continue
            parts = path.relative_to(folder).parent.parts
            if path.suffix == ".py":
                name = ".".join((package, *parts))
                if path.name == "__init__.py" and name not in packages:
                    missing_packages.append(name)
                continue
            owner = next((name for name in sorted(packages, key=len, reverse=True)
                          if path.is_relative_to(folder_of(name))), package)
            relative = path.relative_to(folder_of(owner)).as_posix()
            if not any(fnmatch.fnmatch(relative, pattern) for pattern in data.get(owner, ())):
                missing_data.append(f"{owner}: {relative}")
    assert (missing_packages, missing_data) == ([], [])


def folder_of(package: str):
    root = "jinjamark.grammar" if package.startswith("jinjamark.grammar") else "jinjamark"
    return FOLDERS[root].joinpath(*package[len(root):].split(".")[1:])


# ---------------------------------------------------------------------------- the docs' commands

def test_the_quick_start_demo_runs_through_the_console_script():
    done = script("render", "--demo")
    assert done.returncode == 0 and cli.OPEN in done.stdout
    assert cli.LEGEND in done.stderr


def test_python_dash_m_is_the_same_command():
    done = subprocess.run([sys.executable, "-m", "jinjamark", "--version"], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.startswith("jinjamark ")


def test_a_wrong_command_line_is_usage_with_status_2():
    for argv in ([], ["render"], ["render", CHATML], ["frobnicate"], ["render", CHATML, INJECTION, "--nope"]):
        assert_clean(script(*argv), 2)


def test_the_quick_start_test_command_is_the_script_ci_runs():
    """README's second command is tests/run.sh, and .ci/run runs exactly it (no second list of
    what the tests need)."""
    root = pathlib.Path(__file__).parent.parent
    readme = (root / "README.md").read_text(encoding="utf-8")
    block = readme.split("## Quick start", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    assert block.splitlines() == ["pip install . && jinjamark render --demo", "sh tests/run.sh"]
    assert "\nsh tests/run.sh\n" in (root / ".ci" / "run").read_text(encoding="utf-8")


def test_the_test_script_installs_the_extra_and_passes_its_arguments_to_pytest(tmp_path):
    """With a stand-in python that records how it is called, and a browser on PATH: the test
    extra installed in editable mode, then pytest with the arguments given."""
    log = tmp_path / "calls"
    fake = tmp_path / "python"
    fake.write_text(f'#!/bin/sh\necho "$@" >> {log}\n')
    fake.chmod(0o755)
    for name in ("chromium", "chromedriver"):
        (tmp_path / name).write_text("#!/bin/sh\n")
        (tmp_path / name).chmod(0o755)
    root = pathlib.Path(__file__).parent.parent
    done = subprocess.run(["sh", str(root / "tests" / "run.sh"), "-m", "not slow", "-x"],
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHON": str(fake),
                               "PATH": f"{tmp_path}{os.pathsep}{os.environ['PATH']}"})
    assert done.returncode == 0, done.stderr
    assert log.read_text().splitlines() == ["-m pip install -q -e .[test]", "-m pytest -m not slow -x"]
    assert "apt" not in done.stdout + done.stderr  # the browser is there: nothing to install


@pytest.mark.parametrize("source,tag", [("{% for m in messages %}{{ m.content }}{% endfo %}", "endfo"),
                                        ("{{ x }}{% bogus %}", "bogus"),
                                        ("{% if x %}{{ x }}{% endiff %}", "endiff")])
def test_a_misspelled_tag_is_named_where_it_is(tmp_path, source, tag):
    """A typo in a tag right after `}}`: `check` says the tag is unknown, with the caret at the
    tag (it once said "unexpected '}'" at the brace)."""
    path = tmp_path / "typo.jinja"
    path.write_text(source, encoding="utf-8")
    done = script("check", path)
    assert_clean(done, 1)
    assert f"Encountered unknown tag '{tag}'." in done.stdout
    shown, caret = next((line, after) for line, after in zip(done.stdout.splitlines(), done.stdout.splitlines()[1:])
                        if after.strip() == "^")
    assert re.match(r"\{%-?\s*" + tag, shown[caret.index("^"):])


def test_every_test_file_the_docs_and_ci_name_exists():
    """`.ci/run` once named a test file that did not exist."""
    root = pathlib.Path(__file__).parent.parent
    named = set()
    for doc in (".ci/run", "README.md", "CONTRIBUTING.md", "benchmarks/README.md", "docs/serving.md",
                "docs/chat.md", "docs/playground.md"):
        named |= set(re.findall(r"tests/[\w/]+\.(?:py|sh)", (root / doc).read_text(encoding="utf-8")))
    named.discard("tests/test_x.py")  # CONTRIBUTING's stand-in for "a test file"
    assert named and sorted(path for path in named if not (root / path).exists()) == []


def test_readme_says_the_quick_benchmark_is_a_sample():
    """Its verdicts near a bound can differ from the full run's the table states."""
    readme = (pathlib.Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")
    performance = readme.split("## Performance", 1)[1].split("\n## ", 1)[0]
    assert "`--quick` times a\nsample" in performance or "`--quick` times a sample" in performance
