"""The tree is clean by its linter, and its layering rules hold (CONTRIBUTING.md): `grammar/`
never imports the interpreter, and no module outside `grammar/` imports Lark."""
from __future__ import annotations

import ast
import pathlib
import subprocess
import sys


ROOT = pathlib.Path(__file__).resolve().parent.parent


def imports_of(path: pathlib.Path) -> list[tuple[int, str, int]]:
    """(level, module, line) of every import in a file: level 0 for absolute imports."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.extend((0, alias.name, node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            found.append((node.level, node.module or "", node.lineno))
    return found


def test_ruff_finds_nothing():
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise",
                           str(ROOT)], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_grammar_package_never_imports_the_interpreter():
    offences = []
    for path in sorted((ROOT / "grammar").rglob("*.py")):
        for level, module, line in imports_of(path):
            # `from ..x import y` climbs out of grammar/ into the interpreter; `jinjamark.x` too
            climbs = level >= 2 or (level == 0 and module.split(".")[0] == "jinjamark"
                                    and not module.startswith("jinjamark.grammar"))
            if climbs:
                offences.append(f"{path.relative_to(ROOT)}:{line} imports {'.' * level}{module}")
    assert offences == []


def test_only_the_grammar_package_imports_lark():
    offences = []
    for path in sorted((ROOT / "interpreter").rglob("*.py")):
        for level, module, line in imports_of(path):
            if level == 0 and module.split(".")[0] == "lark":
                offences.append(f"{path.relative_to(ROOT)}:{line} imports {module}")
    assert offences == []


def test_the_rules_are_checked_on_real_imports():
    # the checks above read what they should: grammar/ has relative imports of its own, and
    # the interpreter imports the grammar package
    assert any(level == 1 for path in (ROOT / "grammar").glob("*.py") for level, _, _ in imports_of(path))
    assert any(module.startswith("grammar") for level, module, _ in imports_of(ROOT / "interpreter" / "environment.py")
               if level == 1)
