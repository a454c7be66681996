"""Run Jinja2's own test suite (3.1.6) against jinjamark, through a thin name mapping.

Not part of jinjamark's test suite, and never run by it: it needs Jinja2's source distribution,
which the suite must not download. Get it once, then run this script:

    pip download --no-deps --no-binary :all: jinja2==3.1.6 -d /tmp/j2src
    tar xzf /tmp/j2src/jinja2-3.1.6.tar.gz -C /tmp/j2src
    python benchmarks/jinja2_suite.py /tmp/j2src/jinja2-3.1.6 [-v] [pytest args...]

How: a `jinja2` package made of shim modules (written to a temporary directory put first on
sys.path) maps Jinja2's public names to jinjamark's (`jinja2.Environment` is
`jinjamark.Environment`, `jinja2.sandbox.SandboxedEnvironment` too, since ours is sandboxed; a
name jinjamark lacks imports as a stand-in that fails where it is used, so the tests that need
it fail, they are not left out). The tests are copied next to the shim and run by pytest in a
child process.

jinjamark is always sandboxed, and Jinja2's tests use its unsandboxed `Environment`: a few fail
here the same way they fail under Jinja2's own `SandboxedEnvironment`. COMPATIBILITY.md
("Embedding API") has the last measure and what each remaining failure is.

In scope: the tests of the public language and API. Left out, as whole files: async, i18n and
Jinja2's parser-code extension API (test_ext.py: jinjamark replaces it by grammar extensions),
native types, the compiler and its identifier tracking, nodes, the bytecode cache and debug
tracebacks; and, by name (`OUT_OF_SCOPE` below), the tests of the lexer's token stream and of
Jinja2's private helpers in jinja2.utils. Prints passed / in scope and the failures.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

FILES = ["test_api.py", "test_core_tags.py", "test_filters.py", "test_imports.py",
         "test_inheritance.py", "test_lexnparse.py", "test_loader.py", "test_pickle.py",
         "test_regression.py", "test_runtime.py", "test_security.py", "test_tests.py",
         "test_utils.py"]

# node-id prefixes given to pytest's --deselect, each with why it is out of scope
OUT_OF_SCOPE = {
    "test_lexnparse.py::TestTokenStream": "the lexer's token stream (internal)",
    "test_lexnparse.py::TestLexer::test_operators": "jinja2.lexer's operator table and tokens",
    "test_lexnparse.py::TestLexer::test_lineno_with_strip": "Environment.lex (the lexer's tokens)",
    "test_lexnparse.py::TestSyntax::test_neg_filter_priority": "Jinja2's parse-tree node classes",
    "test_utils.py::TestLRUCache": "jinja2.utils.LRUCache (internal)",
    "test_utils.py::TestHelpers::test_object_type_repr": "jinja2.utils.object_type_repr (internal)",
    "test_utils.py::TestEscapeUrlizeTarget": "jinja2.utils.urlize, called directly",
    "test_utils.py::TestLoremIpsum": "jinja2.utils.generate_lorem_ipsum, called directly",
    "test_utils.py::test_missing": "jinja2.utils.missing (internal marker)",
    "test_utils.py::test_consume": "jinja2.utils.consume (internal)",
    "test_utils.py::test_pickle_missing": "jinja2.utils.missing (internal marker)",
    "test_utils.py::test_copy_missing": "jinja2.utils.missing (internal marker)",
    "test_runtime.py::test_loopcontext": "constructs jinja2.runtime.LoopContext by hand (internal)",
    "test_regression.py::TestBug::test_grouper_repr": "jinja2.filters._GroupTuple (private)",
    "test_api.py::TestLowLevel": "a custom CodeGenerator (compiler)",
    "test_api.py::test_overlay_enable_async": "async",
    "test_loader.py::TestModuleLoader": "compiled-module loader (compiler)",
    "test_loader.py::TestLoaders::test_limited_size_cache": "the keys of Jinja2's template cache",
}
SHIM = {
    "__init__.py": """
        from jinjamark import *
        from jinjamark import Environment, Template, meta
        from jinjamark import loaders
        from jinjamark.values.undefined import is_undefined
        from jinjamark.values.sandbox import unsafe
        from jinjamark.environment_tools import pass_context, pass_environment, pass_eval_context
        from markupsafe import Markup, escape
        from . import nodes, sandbox, runtime, utils, exceptions
    """,
    "environment.py": "from jinjamark.environment import *\nfrom jinjamark import Environment, Template\n",
    "loaders.py": "from jinjamark.loaders import *\nfrom jinjamark.loaders import split_template_path\n",
    "exceptions.py": "from jinjamark.errors import *\nfrom jinjamark.loaders import TemplateNotFound, TemplatesNotFound\n",
    "meta.py": "from jinjamark.meta import *\n",
    "ext.py": "from jinjamark.ext import *\n",
    "sandbox.py": """
        from jinjamark.values.sandbox import *
        from jinjamark.sandbox import SandboxedEnvironment, ImmutableSandboxedEnvironment
    """,
    "runtime.py": """
        from jinjamark.values.undefined import *
        from jinjamark.evaluation.contexts import Context
        from jinjamark.values.runtime import LoopContext, Macro
    """,
    "utils.py": """
        from jinjamark.environment_tools import pass_context, pass_environment, pass_eval_context
        from jinjamark.evaluation.autoescape import select_autoescape
        from jinjamark.values.runtime import Cycler, Joiner
        from markupsafe import Markup, escape
    """,
    "nodes.py": "from jinjamark.environment import RenderContext as EvalContext\n",
    "lexer.py": "from collections import namedtuple\nToken = namedtuple('Token', 'lineno type value')\n",
    "compiler.py": "",
}


# A name jinjamark lacks imports as a stand-in that fails where it is used: a test module
# importing it still runs its other tests.
MISSING = """
class _Missing:
    def __init__(self, name):
        self._name = name
    def __call__(self, *args, **kwargs):
        raise NotImplementedError(f"jinjamark has no {self._name}")
    def __getattr__(self, attr):
        return _Missing(f"{self._name}.{attr}")

def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    return _Missing(name)
"""


def write_shim(root: Path) -> None:
    package = root / "jinja2"
    package.mkdir()
    for name, text in SHIM.items():
        body = textwrap.dedent(text).strip() + "\n"
        # every import line is tried alone: a name jinjamark lacks fails only its users
        lines = []
        for line in body.splitlines():
            if line.startswith(("from ", "import ")):
                lines.append(f"try:\n    {line}\nexcept ImportError:\n    pass")
            else:
                lines.append(line)
        lines.append(MISSING)
        (package / name).write_text("\n".join(lines) + "\n")


def main(argv: list[str]) -> int:
    source = Path(argv[0])
    extra = argv[1:]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_shim(root)
        tests = root / "tests"
        tests.mkdir()
        shutil.copy(source / "tests" / "conftest.py", tests)
        shutil.copytree(source / "tests" / "res", tests / "res")
        for name in FILES:
            shutil.copy(source / "tests" / name, tests)
        deselect = [arg for key in OUT_OF_SCOPE for arg in ("--deselect", f"tests/{key}")]
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rf",
                   "--tb=short", "-o", "filterwarnings=ignore", *deselect,
                   *(f"tests/{name}" for name in FILES), *extra]
        run = subprocess.run(command, cwd=root, capture_output=True, text=True,
                             env={**os.environ,
                                  "PYTHONPATH": f"{root}:{tests}:{os.environ.get('PYTHONPATH', '')}"})
        print(run.stdout[-60000:])
        print(run.stderr[-3000:], file=sys.stderr)
        summary = run.stdout.strip().splitlines()[-1] if run.stdout.strip() else ""
        counts = {kind: int(n) for n, kind in re.findall(r"(\d+) (\w+)", summary)}
        passed = counts.get("passed", 0) + counts.get("xpassed", 0)
        total = passed + counts.get("failed", 0) + counts.get("error", 0) + counts.get("errors", 0)
        if total:
            print(f"\nJinja2 3.1.6 suite, in scope: {passed}/{total} passed "
                  f"({100 * passed / total:.1f}%)")
        return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
