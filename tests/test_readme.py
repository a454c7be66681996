"""README stays true: every Python example in it runs, and the attack example prints what the
README says it prints."""
from __future__ import annotations

import contextlib
import io
import pathlib
import re
import sys
import types

import pytest

README = (pathlib.Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"```python\n(.*?)```", README, re.S)


def run_block(code: str, name: str, monkeypatch) -> None:
    """Run an example as a module of its own (dataclasses look their module up)."""
    module = types.ModuleType(name)
    monkeypatch.setitem(sys.modules, name, module)
    exec(compile(code, name, "exec"), module.__dict__)


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_python_example_runs(index, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run_block(BLOCKS[index], f"readme_block_{index}", monkeypatch)


def test_why_input_marking_prints_what_the_readme_shows(monkeypatch):
    section = README.split("## Why input marking", 1)[1].split("\n## ", 1)[0]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    shown = re.search(r"This prints \(real output\):\n\n```\n(.*?)```", section, re.S).group(1)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        run_block(code, "readme_why", monkeypatch)
    printed = [line for line in out.getvalue().splitlines() if line.strip()]
    assert printed == shown.strip().splitlines()
