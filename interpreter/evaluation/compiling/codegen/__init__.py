"""The second tier: a body that keeps being run becomes one generated Python function.

A body (a template's, a macro's, a block's) first runs as closures (compiling/core.py), which
cost no Python compile: a template rendered once pays only for its parse. On its `HOT`-th run
(compiling/tiers.py) the body is written out as the source of one function, compiled by Python
and used from then on. What the commonest nodes do is written inline, without a call per node: text,
`{{ }}`, `if`/`elif`, `for`, `set`, names (a loop's variable a Python local where nothing sets
names in the loop), plain reads and paths, literals, comparisons, arithmetic, `~`, `and`/`or`/
`not`, the inline `if`, builtin filters and tests, method calls on text and dicts, calls of
macros (statements.py, expressions.py). Every other node is a call of its closure, made by the
same compilers as the first tier, so the two tiers mean the same: each inline form is its
closure's work written out, with the same fast paths, the same general path past them, the same
fuel and limits, failures raised at the same nodes. tests/test_codegen.py runs the differential
suites with every body generated.

A body Python cannot compile (nested deeper than it allows) keeps its closures.
"""
from __future__ import annotations

import builtins
import re
import sys
import warnings
from types import CodeType, FunctionType
from typing import Any

from .expressions import HELPERS
from .slots import shared_locals
from .statements import StatementWriter, bound_names, over_output
from ..calls import _PLAIN_FILTERS
from ..core import compile_node
from ...composition import composes
from ...macros import PARAMETERS
from ....grammar import ast
from .writer import RUNTIME, Deferred, Writer

# The helpers every generated function reads, and Python's builtins: one dict per process, each
# function's builtins (a name not among its constants is looked up there, as fast). Copied into
# every function's globals, they were a sixth of what a generated template keeps.
_SHARED = {**builtins.__dict__, **RUNTIME, **HELPERS, "over_output": over_output,
           "PLAIN_FILTERS": _PLAIN_FILTERS, "FunctionType": FunctionType}

# What Python says of a function nested deeper than it compiles (or a recursion past its limit).
_TOO_DEEP = re.compile(r"too many statically nested blocks|too many levels of indentation|"
                       r"recursion|too complex")


class GenerationWarning(RuntimeWarning):
    """The generated code of a body did not compile: a fault of the generator (the tests make
    it an error); the body keeps running as closures."""


def source_of(body: tuple) -> str:
    """The Python source generated for `body` (for a reader debugging a render: the generated
    function does not keep it, since it is several times the size of its code)."""
    return _written(body)[0]


def _written(body: tuple, free: frozenset = frozenset()) -> tuple[str, dict]:
    writer = StatementWriter(free)
    writer.body(body, "scope", {})
    # What stays the same while a body runs is read once: the budget, and the binary
    # operators the sandbox intercepts; the output list and whether it is written directly,
    # again after each statement run by its closure (a capture swaps and restores them).
    # `adding`: `{{ a + b }}` may collect its addends (written directly, `+` not intercepted).
    # The temporaries share locals (slots.py): a frame of dozens, not hundreds.
    lines = shared_locals(_prologue(writer) + _resolved(writer) + writer.lines)
    source = ("def body(ev, scope):\n    budget, binops, out, fast = ev.budget, ev.binops, ev.out, ev.fast\n"
              "    adding = fast and not (binops and '+' in binops)\n" + "\n".join(lines) + "\n")
    return source, writer.constants


def _prologue(writer: StatementWriter) -> list[str]:
    """The lines that find the function's filters and tests: the first call in a render looks
    them up and keeps them in the evaluator (`ev.looked`, keyed by a constant of the function);
    later calls (a macro's body, called per message) read them back at once."""
    if not writer.prologue:
        return []
    key = writer.constant(object())  # this function's own key
    found = [name for function, plain, _, _ in writer.prologue for name in (function, plain)]
    lines = [f"looked = ev.looked.get({key})", "if looked is None:",
             "    filters, tests = ev.env.filters, ev.env.tests"]
    for function, plain, table, name in writer.prologue:
        known = "PLAIN_TESTS" if table == "tests" else "PLAIN_FILTERS"
        lines.append(f"    {function} = {table}.get({name!r})")
        # plain_function's memo read first (a function is hashable): its call for the rest
        lines.append(f"    {plain} = {known}.get({function}) if type({function}) is FunctionType else None")
        lines.append(f"    if {plain} is None: {plain} = {function} is not None and "
                     f"plain_function({function}{', PLAIN_TESTS' if table == 'tests' else ''})")
    lines.append(f"    ev.looked[{key}] = {', '.join(found)},")
    lines.append(f"else: {', '.join(found)}, = looked")
    return [f"    {line}" for line in lines]


def _resolved(writer: StatementWriter) -> list[str]:
    """The lines that read each free name the function reads (free_names) once, at its start,
    as Jinja2 resolves a function's names: the scope chain walked; a missing one ABSENT, made
    undefined where it is read (a name read only where a branch is not taken costs no
    undefined)."""
    reader = Writer()  # its lines at the function's first level, as the prologue's
    for name, local in writer.resolved.items():
        reader.walked(local, name, "scope", "frame")
        reader.line(f"if {local} is MISSING: {local} = ABSENT")
    return reader.lines


# Names the machinery binds in frames of its own, never through a statement of the template.
_SPECIAL = frozenset(("loop", "caller", "varargs", "kwargs", "self", "super"))
FREE = "free names"  # the memo's key for free_names


def free_names(memo: Any) -> frozenset:
    """The names a template reads that nothing in it can bind (no `set`, loop, macro, parameter,
    import or `with` names them), where it neither composes with other templates nor holds an
    extension's node: each stands for one value, the context's or a global's, for a whole
    render, and the generated code reads it once per function (Jinja2 resolves a function's
    names at its start). Found once per template, kept in its memo."""
    free = memo.get(FREE)
    if free is None:
        tree = getattr(memo, "tree", None)
        bound = None if tree is None or composes(ast.walk(tree.body)) else bound_names(tree.body)
        free = frozenset() if bound is None else frozenset(
            node.name for node in ast.walk(tree.body) if type(node) is ast.Name) - bound - _SPECIAL
        memo[FREE] = free
    return free


def fixed_parameters(memo: Any, body: tuple) -> frozenset:
    """When `body` is a macro's (or a call block's): its parameters that no statement in it
    binds again. A call binds them in the body's own frame before the body runs, so each
    stands for one value for the whole call, and the generated code reads it once, at the
    function's start, as it reads the free names (a recursive macro's parameter was walked for
    at each of its reads, a dozen times a call)."""
    parameters = memo.get(PARAMETERS, {}).get(id(body))
    if not parameters:
        return frozenset()
    bound = bound_names(body)
    return frozenset() if bound is None else frozenset(parameters) - bound


def generate(body: tuple, free: frozenset = frozenset()) -> Any:
    """The generated function of `body`, or None when Python cannot compile it; `free`: the
    template's free names (free_names), each read once at the function's start."""
    source, constants = _written(body, free)
    namespace = dict(constants, __builtins__=_SHARED)
    for name, value in constants.items():  # the closures of general paths, made when first run
        if type(value) is Deferred:
            namespace[name] = _OnFirstCall(namespace, name, value.node)
    try:
        exec(compile(source, "<jinjamark generated>", "exec"), namespace)
    except (SyntaxError, RecursionError, MemoryError) as error:  # the closures keep running it
        if not _TOO_DEEP.search(str(error)):  # a fault of the generator: said, not hidden
            warnings.warn(f"the generated code of a body did not compile ({error}); its closures "
                          "run it", GenerationWarning, stacklevel=2)
        return None
    function = namespace["body"]
    if _LINES_DROPPABLE:
        function.__code__ = _without_lines(function.__code__)
    function.generated_from = body  # what source_of takes
    return function


# A generated function's line table (which line of its source each instruction came from, with
# columns) was a third of its size; nothing reads it: a failure inside is raised again at its
# template node (ev.fail), and `source_of` writes the source again for a reader. The table is
# replaced by one that gives no instruction a line (Python 3.11's format, entries of up to
# eight code units marked "no location", as Python marks the instructions it adds itself;
# a traceback through the function shows `line None`).
_NO_LOCATION = 0x80 | 15 << 3


def _without_lines(code: CodeType) -> CodeType:
    units = len(code.co_code) // 2
    whole, rest = divmod(units, 8)
    table = bytes((_NO_LOCATION | 7,)) * whole + (bytes((_NO_LOCATION | rest - 1,)) if rest else b"")
    consts = tuple(_without_lines(c) if type(c) is CodeType else c for c in code.co_consts)
    return code.replace(co_linetable=table, co_consts=consts)


def _lines_droppable() -> bool:
    """Whether this Python reads line tables in that format (3.11's; 3.10's differs): tried on
    a small function, which must run and give no line."""
    if sys.version_info < (3, 11):
        return False
    try:
        def probe(values: list) -> int:
            return sum(v for v in values if v) + len([*values])
        stripped = _without_lines(probe.__code__)
        probe.__code__ = stripped
        return (probe([1, 2]) == 5 and all(line is None for *_, line in stripped.co_lines())
                and all(p == (None,) * 4 for p in stripped.co_positions()))
    except Exception:  # noqa: BLE001 - any doubt keeps the tables
        return False


_LINES_DROPPABLE = _lines_droppable()


class _OnFirstCall:
    """A node's closure in a generated function's globals until it is first called: then it is
    compiled and put in its place, so later calls are direct. Most are general paths that a
    render of plain data never takes (a message that is no dict, a sandboxed `+`); compiled
    up front they kept a second copy of the first tier's closures alive with every template."""

    __slots__ = ("namespace", "name", "node")

    def __init__(self, namespace: dict, name: str, node: Any) -> None:
        self.namespace, self.name, self.node = namespace, name, node

    def __call__(self, *args: Any) -> Any:
        code = self.namespace[self.name] = compile_node(self.node)
        return code(*args)


__all__ = ["GenerationWarning", "generate", "source_of"]
