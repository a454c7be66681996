"""The compiler's frame: a node becomes a closure `code(evaluator, scope)`, once per template.

Each node class has a compiler (a handler run once, at the first render that reaches the node)
that returns the closure doing that node's work; a render then calls closures, which call their
children's closures directly: no table lookup, no per-node bookkeeping. A node class without a
compiler (an extension's) compiles to a closure that calls its handler from
`Evaluator.handlers`, so extensions keep the `handler(evaluator, node, scope)` protocol; the
core's own statements are all compiled (the rarer ones to a direct call of their function,
`compiles_statement`), and `Environment.handlers` holds only extensions' handlers.

Errors keep their exact positions: each closure that can fail catches the exception where it
stands and raises it located at its node (`Evaluator.fail`); Python's try costs nothing until
something is raised. Fuel is charged per body run, the size of the body's statements counted
once at compile time, and output per write.
"""
from __future__ import annotations

from contextvars import ContextVar
from typing import Any, Callable, Optional

from ...errors import TemplateRuntimeError
from ...grammar import ast

Code = Callable[[Any, Any], Any]
Compiler = Callable[[Any], Code]

COMPILERS: dict[type, Compiler] = {}  # node class -> its compiler (access, calls, operators, statements)

# Node classes from outside the core whose running touches the scope only through their
# expressions and nested bodies: they read no name by themselves (not `loop`), bind none and
# keep no reference to a frame once they return (`Extension.scope_neutral`, and the origin
# markers). A loop whose body holds them keeps the fast paths of a core-only body.
SCOPE_NEUTRAL: set[type] = set()

# Node classes whose running appends one constant piece to the output and does nothing else
# (the origin render's statement markers, evaluation/origins.py): class -> the piece a node
# writes. Generated code appends the piece itself, where any other statement is a call of its
# closure. They are scope-neutral too.
CONSTANT_PIECES: dict[type, Callable[[Any], Any]] = {}


def core_node(kind: type) -> bool:
    """Whether nodes of this class are the core's own (grammar/ast.py), not an extension's."""
    return kind.__module__ == ast.__name__


def scope_neutral(kind: type) -> bool:
    """Whether nodes of this class are the core's own or declared scope-neutral; any other
    node class (an extension's handler) may read, bind or keep the frame it runs in."""
    return core_node(kind) or kind in SCOPE_NEUTRAL


def compiles(*kinds: type) -> Callable[[Compiler], Compiler]:
    """Register a compiler for these node classes."""
    def register(compiler: Compiler) -> Compiler:
        for kind in kinds:
            COMPILERS[kind] = compiler
        return compiler
    return register


def compile_node(node: Any) -> Code:
    compiler = COMPILERS.get(type(node))
    return compiler(node) if compiler is not None else by_handler(node)


def compiles_statement(kind: type, statement: Callable[[Any, Any, Any], None]) -> None:
    """Compile nodes of `kind` to a direct call of `statement(evaluator, node, scope)`: the core's
    rarer statements (block `set`, macros, call and filter blocks, `with`, autoescape, composition),
    written as functions of their node but compiled like the rest, without a table lookup."""
    def compile_statement(node: Any) -> Code:
        def run(ev: Any, scope: Any) -> Any:
            try:
                return statement(ev, node, scope)
            except Exception as e:
                ev.fail(e, node)
        return run
    COMPILERS[kind] = compile_statement


def by_handler(node: Any) -> Code:
    """A node run by its handler at render time: an extension's."""
    kind = type(node)

    def run(ev: Any, scope: Any) -> Any:
        handler = ev.handlers.get(kind)
        if handler is None:
            raise TemplateRuntimeError(f"no handler for {kind.__name__} nodes")
        try:
            return handler(ev, node, scope)
        except Exception as e:
            ev.fail(e, node)
    return run


def compile_statements(body: tuple) -> tuple[tuple, int]:
    """The closures of a body's statements, and their size in fuel. Compiled for a traced render
    (tracing.py), each statement reports itself before it runs."""
    codes = tuple(compile_node(statement) for statement in body)
    if TRACER.get() is not None:
        codes = tuple(traced(code, statement) for code, statement in zip(codes, body))
    return codes, sum(map(size, body))


# The callback of a traced render: set while it runs, so that what it compiles is traced (its
# closures are kept apart from the untraced ones: Evaluator.code).
TRACER: ContextVar[Optional[Callable[[Any, Any], None]]] = ContextVar("jinjamark_tracer",
                                                                       default=None)


def traced(code: Code, statement: Any) -> Code:
    def run(ev: Any, scope: Any) -> Any:
        tracer = TRACER.get()
        if tracer is not None:
            tracer(ev, statement)
        return code(ev, scope)
    return run


def compile_body(body: tuple) -> Code:
    """The statements of a body as one closure that charges their size in fuel, then runs them."""
    codes, cost = compile_statements(body)
    if not codes:
        return _nothing
    if len(codes) == 1:
        only = codes[0]

        def run_one(ev: Any, scope: Any) -> None:
            ev.steps -= cost
            if ev.steps <= 0:
                ev.steps = ev.budget.refuel(ev.steps)
            only(ev, scope)
        return run_one

    def run(ev: Any, scope: Any) -> None:
        ev.steps -= cost
        if ev.steps <= 0:
            ev.steps = ev.budget.refuel(ev.steps)
        for code in codes:
            code(ev, scope)
    return run


def _nothing(ev: Any, scope: Any) -> None:
    return None


def size(statement: Any) -> int:
    """The steps a statement costs each time it runs: its node and its expressions', each by
    what it costs to run (`WEIGHTS`), not the bodies nested in it (each charges for itself when
    it runs), except the steps every branch of an `if` costs (shared_steps)."""
    count = 0
    stack = [statement]
    while stack:
        node = stack.pop()
        count += WEIGHTS.get(type(node), 1)
        for child in ast.children(node):
            if not isinstance(child, ast.Stmt):
                stack.append(child)
    if type(statement) is ast.If:
        count += shared_steps(statement)
    return count


def shared_steps(node: Any) -> int:
    """The steps every branch of an if/elif/else costs, when each is a body of statements
    without bodies of their own (text, `{{ }}`, `set`): whichever branch runs costs at least the
    cheapest one's, so that much is charged with the body around the `if` (once per iteration,
    in a loop) and a branch charges only what it costs beyond it (the same steps in all; an
    if/elif/else of alike branches charges nothing when it picks one). 0 for an `if` without
    `else` or with a branch that has bodies inside (sizing those would walk all of them at
    compile time, where a render sizes only the branches it takes)."""
    if not node.otherwise:
        return 0
    bodies = [body for _, body in node.branches] + [node.otherwise]
    if any(isinstance(child, ast.Stmt) for body in bodies for statement in body
           for child in ast.children(statement)):
        return 0
    return min(sum(map(size, body)) for body in bodies)


# Steps by node class, in about 80 ns of this engine's time each, so that the fuel limit bounds
# the time a render takes whatever it does: a call (a method, a macro, a host function) and a
# filter go through Python-level calls and metering, an operator through its checks, a print
# through its conversion to text and the output's accounting; a name,
# a literal, an item read cost one. Measured with loops of each kind (issue 12's cheap steps).
WEIGHTS: dict[type, int] = {ast.Call: 10, ast.Filter: 6, ast.Test: 2, ast.Binary: 3, ast.Concat: 3,
                            ast.Output: 2, ast.NamespaceTarget: 3}
