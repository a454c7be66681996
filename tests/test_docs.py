"""The guides stay true: the Python examples of docs/chat.md run in order, offline, and print
what the guide shows in the `# ` lines under them."""
from __future__ import annotations

import contextlib
import io
import pathlib
import re
import sys
import types

GUIDE = pathlib.Path(__file__).parent.parent / "docs" / "chat.md"


def test_chat_guide_examples_print_what_the_guide_shows(monkeypatch):
    blocks = re.findall(r"```python\n(.*?)```", GUIDE.read_text(encoding="utf-8"), re.S)
    assert len(blocks) >= 4
    module = types.ModuleType("chat_guide")  # one namespace: the examples build on each other
    monkeypatch.setitem(sys.modules, "chat_guide", module)
    for index, code in enumerate(blocks):
        shown = [line[2:] for line in code.splitlines() if line.startswith("# ")]
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(code, f"docs/chat.md block {index}", "exec"), module.__dict__)
        printed = [line for line in out.getvalue().splitlines() if line.strip()]
        assert printed == shown, f"block {index}"


def test_the_serving_guide_examples_print_what_they_show():
    """docs/serving.md: each Python example runs, offline, and prints its `# ` lines."""
    guide = (GUIDE.parent / "serving.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", guide, re.S)
    assert len(blocks) >= 3  # append-only, sessions, fitting
    for code in blocks:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(code, "docs/serving.md", "exec"), {})
        shown = [line[2:] for line in code.splitlines() if line.startswith("# ")]
        assert out.getvalue().splitlines() == shown
