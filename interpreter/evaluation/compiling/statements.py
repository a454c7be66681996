"""Statement compilers: text, `{{ }}`, `if`, `for` and `set` become closures writing to
`Evaluator.out`. The rarer statements (block `set`, macros, call and filter blocks, `with`,
autoescape, composition) are compiled in evaluation/evaluator.py and evaluation/composition.py,
most as direct calls of a function of their node (core.compiles_statement).

Output is written directly only on an evaluator whose `fast` flag is set: a plain render.
Autoescaping, `finalize`, a child template after `extends` and span tracking change printing,
and the closures then call printer.py's `print_text` and `print_output` instead.
"""
from __future__ import annotations

from typing import Any

from ...grammar import ast
from ...values.marks import Input
from ...values.runtime import LoopContext
from ..scope import Scope
from ..printer import print_output, print_text, write
from .access import path_code, read_path
from .core import (Code, compile_body, compile_node, compile_statements, compiles, core_node, scope_neutral,
                   shared_steps)
from .operators import compile_sum
from ..loops import LoopSignal, assign, charged_up_front, filtered, loop_iterator, recursion


@compiles(ast.Text)
def compile_text(node: ast.Text) -> Code:
    text, size = node.text, len(node.text)

    def write_text(ev: Any, scope: Any) -> None:
        if ev.fast:
            budget = ev.budget
            budget.output -= size
            if budget.output < 0:
                budget.wrote(0)  # raises LimitExceeded
            ev.out.append(text)
        else:
            print_text(ev, node, scope)
    return write_text


@compiles(ast.Output)
def compile_output(node: ast.Output) -> Code:
    expr = node.expr
    if type(expr) is ast.Binary and expr.op == "+" and type(expr.left) is ast.Binary \
            and expr.left.op == "+":
        return compile_sum(expr, output=node)
    code = compile_node(expr)

    def output(ev: Any, scope: Any) -> None:
        if not ev.fast:
            return print_output(ev, node, scope)
        value = code(ev, scope)
        try:
            write(ev, value)
        except Exception as e:
            ev.fail(e, node)
    return output


@compiles(ast.If)
def compile_if(node: ast.If) -> Code:
    tests = tuple(compile_node(test) for test, _ in node.branches)
    bodies = tuple(body for _, body in node.branches) + (node.otherwise,)
    compiled: list = [None] * len(bodies)  # (codes, cost) of each body, when it first runs
    shared = shared_steps(node)  # what every branch costs: the `if`'s size holds it
    if len(tests) == 1:
        return _if_else(node, tests[0], bodies, compiled, shared)
    read, table, switched = _switch(node)

    def if_(ev: Any, scope: Any) -> None:
        i = -1
        start = 0
        if switched:  # `m['role']` read once, its branch found by the literal it equals
            value = read(ev, scope)
            kind = type(value)
            if kind is str or kind is Input:
                i = table.get(value, -1)
                start = switched  # if none of those tests holds, the others are tried in turn
        if i < 0:
            i = start
            for test in tests[start:] if start else tests:
                value = test(ev, scope)
                try:
                    if value:
                        break
                except Exception as e:  # a strict undefined refuses to be tested
                    ev.fail(e, node)
                i += 1
        _run_branch(ev, scope, bodies, compiled, shared, i)
    return if_


def _run_branch(ev: Any, scope: Any, bodies: tuple, compiled: list, shared: int, i: int) -> None:
    """Run the `i`-th body of an if/elif/else, compiled when first taken; its fuel first (what
    it costs beyond the steps every branch costs: shared_steps)."""
    entry = compiled[i]
    if entry is None:
        codes, cost = compile_statements(bodies[i])
        entry = compiled[i] = codes, cost - shared
    codes, cost = entry
    if cost:
        ev.steps -= cost
        if ev.steps <= 0:
            ev.steps = ev.budget.refuel(ev.steps)
    for code in codes:
        code(ev, scope)


def _switch(node: ast.If) -> tuple[Any, dict, int]:
    """An if/elif chain that begins with tests of one read of plain data against text literals
    (`m['role'] == 'user'`, `elif m['role'] == 'assistant'`): (the read's code, giving ABSENT
    for anything but plain data, the index of the first branch for each literal, how many
    tests are of that form), else a count of 0. Reading plain data twice gives the same value,
    and text equals text exactly when a dict finds one by the other: for text the branch is
    found in one look."""
    table: dict = {}
    first = None
    for index, (test, _) in enumerate(node.branches):
        path = read_path(test.first) if type(test) is ast.Compare and len(test.ops) == 1 else None
        op, literal = test.ops[0] if path is not None else (None, None)
        if path is None or op != "==" or type(literal) is not ast.Const \
                or type(literal.value) is not str or (first is not None and path != first):
            break
        first = path
        table.setdefault(literal.value, index)
    else:
        index = len(node.branches)
    if index < 2:
        return None, {}, 0
    return path_code(first, None), table, index


def _if_else(node: ast.If, test: Code, bodies: tuple, compiled: list, shared: int) -> Code:
    """`{% if x %}...{% else %}...{% endif %}` (the else optional): compile_if's work without
    the walk over branches, the form most conditions in chat templates take."""
    otherwise = bool(bodies[1])

    def if_else(ev: Any, scope: Any) -> None:
        value = test(ev, scope)
        try:
            taken = 0 if value else 1
        except Exception as e:  # a strict undefined refuses to be tested
            ev.fail(e, node)
        if taken and not otherwise:  # most tests are false most of the time
            return
        _run_branch(ev, scope, bodies, compiled, shared, taken)
    return if_else


# ---------------------------------------------------------------------------- loops

@compiles(ast.For)
def compile_for(node: ast.For) -> Code:
    """A for loop: `for_` runs it over its iterable; a recursive loop's `loop(items)` runs the
    same `run` over `items`, one level deeper (loops.recursion)."""
    iterable_code = compile_node(node.iter)
    otherwise: list = []  # the `else` body's closure, compiled when it first runs
    wants_loop, reuse, writes, extended = _loop_facts(node)
    # One frame, one dict, for all iterations: nothing keeps the frame and nothing writes it
    fixed = reuse and type(node.target) is ast.NameTarget and not writes
    statements: list = []  # [codes, cost + 1], compiled at the first run

    def for_(ev: Any, scope: Any) -> None:
        if ev.declared:  # most templates have none
            ev.declare(node, scope)
        run(ev, scope, iterable_code(ev, scope), 0)

    def run(ev: Any, scope: Any, iterable: Any, depth0: int) -> None:
        try:
            iterator, length = loop_iterator(iterable)
        except Exception as e:
            ev.fail(e, node)
        if node.condition is not None:
            iterator, length = filtered(ev, node, scope, iterator), None
        recurse = recursion(ev, scope, run) if node.recursive else None
        loop = LoopContext(iterator, length, depth0, ev.undefined, recurse, iterable) \
            if wants_loop or recurse is not None else None
        if not statements:
            codes, cost = compile_statements(node.body)
            statements[:] = codes, cost + 1  # an iteration is a step even when its body is empty
        codes, cost = statements
        items = iterator if loop is None else loop
        try:
            charged = not extended and charged_up_front(ev, iterable, length, cost)
            completed = _iterate(ev, scope, items, loop, codes, 0 if charged else cost,
                                 node.target, reuse, fixed, LoopSignal, assign)
        except LoopSignal:
            raise
        except Exception as e:
            ev.fail(e, node)
        if not completed and node.otherwise:
            if not otherwise:
                otherwise.append(compile_body(node.otherwise))
            otherwise[0](ev, Scope(scope))  # a frame of its own: what it sets stays there
    return for_


def _iterate(ev: Any, scope: Any, items: Any, loop: Any, codes: tuple, cost: int, target: Any,
             reuse: bool, fixed: bool, LoopSignal: type, assign: Any) -> bool:
    """Run the body for each item; whether some iteration ran the body to its end (Jinja2 runs
    the loop's `else` otherwise). Each iteration has a frame of its own; or, when nothing in the
    body can keep a frame beyond the iteration (`reuse`), the same frame with new variables; or,
    when the body does not write its frame either (`fixed`), the same frame and dict, the item
    set in it. `cost`: the steps of an iteration, 0 when the loop was charged up front
    (loops.charged_up_front). (`LoopSignal` and `assign`, from loops.py, are passed in as locals.)"""
    name = target.name if type(target) is ast.NameTarget else None
    budget = ev.budget
    completed = False
    only = codes[0] if len(codes) == 1 else None  # a body of one statement: called directly
    inner = Scope(scope) if reuse else None
    if fixed:
        variables = inner.vars = {name: None} if loop is None else {name: None, "loop": loop}
    for item in items:
        if cost:
            budget.iterations -= 1
            if budget.iterations < 0:
                budget.iterate(0)  # raises LimitExceeded
            ev.steps -= cost
            if ev.steps <= 0:
                ev.steps = budget.refuel(ev.steps)
        if fixed:
            variables[name] = item
        else:
            if not reuse:
                inner = Scope(scope)
            if name is not None:
                inner.vars = {name: item}
            else:
                inner.vars = {}
                assign(ev, target, item, inner)
            if loop is not None:
                inner.vars["loop"] = loop
        try:
            if only is not None:
                only(ev, inner)
            else:
                for code in codes:
                    code(ev, inner)
            completed = True
        except LoopSignal as signal:
            if signal.stop:
                break
    return completed


# Statements after which nothing can hold on to the frame they ran in: everything but what makes
# a function of the frame (macros, call blocks, imported modules, blocks) and extensions' nodes.
_KEEPS_FRAME = frozenset({ast.Macro, ast.CallBlock, ast.Import, ast.FromImport, ast.Include,
                          ast.Block, ast.Extends})


# Statements that set names in the frame they run in (a loop's, a macro's, a with's own frame
# is its own; `ns.x = ...` changes the namespace, not the frame).
_WRITES_FRAME = frozenset({ast.Assign, ast.AssignBlock, ast.Macro, ast.Import, ast.FromImport})


def _loop_facts(node: ast.For) -> tuple[bool, bool, bool, bool]:
    """In one walk of a loop's bodies: whether they read `loop` (an extension's node may),
    whether nothing in the body can keep its frame beyond an iteration, whether the body
    sets names in its frame, and whether a node not the core's is in it (an extension's, even
    a scope-neutral one as `break`, may end the loop: loops.LoopSignal)."""
    reads_loop, stays_inside, writes, extended = False, True, False, False
    for inner in ast.walk(node.body):
        kind = type(inner)
        extended = extended or not core_node(kind)
        if not scope_neutral(kind):  # an extension's node may read `loop`, or keep its frame
            reads_loop, stays_inside = True, False
        elif kind is ast.Name:
            reads_loop = reads_loop or inner.name == "loop"
        elif kind in _KEEPS_FRAME or kind is ast.For and inner.recursive:
            stays_inside = False
        if kind in _WRITES_FRAME and not (kind is ast.Assign
                                          and type(inner.target) is ast.NamespaceTarget):
            writes = True
    if not reads_loop and node.otherwise:
        reads_loop = any(type(inner) is ast.Name and inner.name == "loop"
                         or not scope_neutral(type(inner))
                         for inner in ast.walk(node.otherwise))
    return reads_loop, stays_inside, writes, extended


# ---------------------------------------------------------------------------- assignment

@compiles(ast.Assign)
def compile_assign(node: ast.Assign) -> Code:
    code, target = compile_node(node.expr), node.target
    if type(target) is ast.NameTarget:
        name = target.name

        def set_name(ev: Any, scope: Any) -> None:
            scope.vars[name] = code(ev, scope)
        return set_name

    def set_target(ev: Any, scope: Any) -> None:
        value = code(ev, scope)
        try:
            assign(ev, target, value, scope)
        except Exception as e:
            ev.fail(e, node)
    return set_target
