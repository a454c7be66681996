"""Statements written out: text and `{{ }}` (the ones that follow each other written at once; a
`+` chain of reads collected inline, a `~` chain printed piece by piece), `if`/`elif` (an if/elif
chain on one read against text literals finds its branch in one dict look), `for` (its variable
a Python local where nothing sets names in the loop), `set` and block `set`, and the pieces of
`CONSTANT_PIECES` (markers). Each is the work of its closure in compiling/statements.py, written
out; any other statement is a call of its closure, after which the output list and the fast flag
are read again."""
from __future__ import annotations

from typing import Any, Optional

from ....grammar import ast
from ..core import CONSTANT_PIECES, scope_neutral, shared_steps, size
from ..statements import _loop_facts, _switch
from ..access import read_path
from .calls import _plain_arguments
from .expressions import ExpressionWriter, _plus
from .writer import Deferred

# Python refuses more than 20 nested blocks (loops, try) in one function: deeper loops stay
# calls of their closures.
_MOST_BLOCKS = 12


class StatementWriter(ExpressionWriter):
    """Writes a body's statements."""

    def body(self, body: tuple, scope: str, local: dict) -> None:
        self.charge(sum(map(size, body)))
        self.statements(body, scope, local)

    def statements(self, body: tuple, scope: str, local: dict) -> None:
        if not body:
            self.line("pass")
        i = 0
        while i < len(body):
            run = _print_run(body, i)
            if run:
                self.prints(run, scope, local)
            else:
                self.statement(body[i], scope, local)
            i += len(run) or 1

    def prints(self, run: tuple, scope: str, local: dict) -> None:
        """Text and `{{ }}`s, one or several one after the other (`<|im_start|>{{ role }}\n{{
        content }}`; compile_text's and compile_output's work): the values printed in order as
        to_string prints them, then metered and appended at once, as Jinja2 yields such a run
        as one string. `{{ a ~ b ~ c }}` prints its items one after the other rather than
        joined first (marks then need no joining), a failure to print them raised at the `~`
        as join_printed raises it. Where printing is not plain, each as its closure prints it.
        The output limit is found crossed where printing them one at a time finds it
        (over_output); an output that calls something ends a run (_calls)."""
        self.line("if not fast:")
        for node in run:
            kind = "text" if type(node) is ast.Text else "output"
            self.line(f"    print_{kind}(ev, {self.constant(node)}, {scope})")
        self.line("else:")
        self.depth += 1
        pieces, sizes, blamed = [], [], []
        for node in run:
            text = _constant_text(node)
            if text is not None:
                if text:
                    pieces.append(self.constant(text))
                    sizes.append(str(len(text)))
                    # text's overflow is raised unlocated, as compile_text's; `{{ 'x' }}`'s at it
                    blamed.append(None if type(node) is ast.Text else node)
                continue
            items = node.expr.items if type(node.expr) is ast.Concat else (node.expr,)
            values = [self.expr(item, scope, local) for item in items]
            texts = [self.temp() for _ in values]
            self.guarded([f"{t} = {_printed(v)}" for v, t in zip(values, texts)],
                         node if len(texts) == 1 else node.expr)
            pieces.extend(texts)
            sizes.append(" + ".join(f"len({t})" for t in texts))
            blamed.append(node)
        if not pieces:  # `{{ '' }}{{ '' }}`: nothing to write
            self.line("pass")
            self.depth -= 1
            return
        self.line(f"budget.output -= {' + '.join(sizes)}")
        self.line(f"if budget.output < 0: over_output(ev, ({', '.join(sizes)},), {self.constant(tuple(blamed))})")
        self.line(f"out.extend(({', '.join(pieces)},))" if len(pieces) > 1 else f"out.append({pieces[0]})")
        self.depth -= 1

    def statement(self, node: Any, scope: str, local: dict) -> None:
        kind = type(node)
        if kind is ast.Output and _plus(node.expr):
            self.output_sum(node, scope, local)
        elif kind is ast.Output:  # one that calls something: a run of its own
            self.prints((node,), scope, local)
        elif kind is ast.If:
            self.if_(node, scope, local)
        elif kind is ast.For and self.blocks < _MOST_BLOCKS and self.for_(node, scope, local):
            pass
        elif kind is ast.AssignBlock and type(node.target) is ast.NameTarget and not node.filters \
                and self.blocks < _MOST_BLOCKS:
            self.assign_block(node, scope, local)
        elif kind is ast.Assign and type(node.target) is ast.NameTarget:
            value = self.expr(node.expr, scope, local)
            self.line(f"{scope}.vars[{node.target.name!r}] = {value}")
            if node.target.name != "loop":  # read back from the local while nothing rebinds it
                local[node.target.name] = value
        elif kind in CONSTANT_PIECES:  # a marker: written as its closure writes it
            self.line(f"out.append({self.constant(CONSTANT_PIECES[kind](node))})")
        elif kind is ast.Assign:  # `ns.x = ...`, `a, b = ...` (statements' set_target)
            value = self.expr(node.expr, scope, local)
            self.line("try:")
            self.line(f"    assign(ev, {self.constant(node.target)}, {value}, {scope})")
            self.line("except Exception as e:")
            self.line(f"    ev.fail(e, {self.constant(node)})")
            _forget(local, node)
        else:
            self.line(self.closure(node, scope))
            self.line("out, fast = ev.out, ev.fast")  # as they are after any statement
            self.line("adding = fast and not (binops and '+' in binops)")
            _forget(local, node)

    def assign_block(self, node: ast.AssignBlock, scope: str, local: dict) -> None:
        """`{% set x %}body{% endset %}` (compile_assign_block, filtered_body and the evaluator's
        capture, written out): the body rendered into a list of its own in a frame of its own,
        joined with its marks, assigned. Where printing is not plain, or the template declares
        names before statements, its closure."""
        name, n = node.target.name, self.constant(node)
        value, saved, inner = self.temp(), self.temp(), self.temp()
        self.line("if not fast or ev.declared:")
        self.line(f"    {self.closure(node, scope)}")
        self.line(f"    {value} = {scope}.vars[{name!r}]")
        self.line("    out, fast = ev.out, ev.fast")
        self.line("    adding = fast and not (binops and '+' in binops)")
        self.line("else:")
        self.depth += 1
        self.line(f"{inner} = Scope({scope})")
        self.line(f"{saved} = out")
        self.line("out = ev.out = []")
        self.line("try:")
        self.depth += 1
        self.blocks += 1
        bound = bound_names(node.body)  # as a loop's body: what it never binds is still known
        self.body(node.body, inner, {} if bound is None else
                  {k: v for k, v in local.items() if k not in bound})
        self.line(f"{value} = concat(out)")
        self.blocks -= 1
        self.depth -= 1
        self.line("except Exception as e:")  # a loop's break or continue too: the output list
        self.line(f"    ev.out = out = {saved}")  # the loop goes on writing is the frame's
        self.line(f"    ev.fail(e, {n})")
        self.line(f"ev.out = out = {saved}")
        self.line(f"{scope}.vars[{name!r}] = {value}")
        self.depth -= 1
        if name != "loop":  # read back from the local while nothing rebinds it
            local[name] = value

    def output_sum(self, node: ast.Output, scope: str, local: dict) -> None:
        """compile_sum's `{{ a + b + c }}`: while the addends are text they are written one
        after the other (`collect`)."""
        self.line("if not adding:")
        self.line(f"    {self.constant(Deferred(node))}(ev, {scope})")  # compile_sum(expr, output=node)
        self.line("else:")
        self.indented(self.collect, node.expr, scope, local, node)

    def if_(self, node: ast.If, scope: str, local: dict) -> None:
        """compile_if: the first test that holds chooses the body; an if/elif chain on one
        plain read against text literals (_switch) finds its branch in one dict look."""
        branches = [body for _, body in node.branches] + [node.otherwise]
        if len(node.branches) == 1:  # compile_if's _if_else
            shared = shared_steps(node)
            taken = self.truth(self.expr(node.branches[0][0], scope, local), node)
            self.line(f"if {taken}:")
            self.indented(self.branch, branches[0], scope, local, shared)
            if branches[1]:
                self.line("else:")
                self.indented(self.branch, branches[1], scope, local, shared)
            _forget(local, node)
            return
        read, table, switched = _switch(node) if len(node.branches) > 1 else (None, {}, 0)
        chosen = self.temp()
        if switched:
            value, kind = self.temp(), self.temp()
            first = node.branches[0][0].first  # `m['role']`: the switch's read of plain data
            self.line(f"{value} = {self.path(first, read_path(first), scope, local, general=False)}")
            self.line(f"{kind} = type({value})")
            self.line(f"if {kind} is str or {kind} is Input:")
            self.line(f"    {chosen} = {self.constant(table)}.get({value}, -1)")
            self.line(f"    if {chosen} < 0: {chosen} = -{switched + 1}")
            self.line("else:")
            self.line(f"    {chosen} = -1")
            self.line(f"if {chosen} < 0:")
            self.depth += 1
            # -1: every test in turn; -(switched + 1): the tests after the switched ones
            self.tests(node, scope, local, chosen, skip=switched)
            self.depth -= 1
        else:
            self.tests(node, scope, local, chosen, skip=0)
        shared = shared_steps(node)
        for index, body in enumerate(branches):
            self.line(("if" if index == 0 else "elif") + f" {chosen} == {index}:")
            self.depth += 1
            self.branch(body, scope, local, shared)
            self.depth -= 1
        _forget(local, node)

    def branch(self, body: tuple, scope: str, local: dict, shared: int) -> None:
        """_run_branch: a body of an if/elif/else, its fuel first (what it costs beyond the
        `shared` steps every branch costs); what it sets is known in it only."""
        self.charge(sum(map(size, body)) - shared)
        self.statements(body, scope, dict(local))

    def tests(self, node: ast.If, scope: str, local: dict, chosen: str, skip: int) -> None:
        """The branch index into `chosen`: the tests tried in order (from `skip` on when
        `chosen` says the switched ones are known to fail), the else's index if none holds."""
        self.line("while True:")
        self.depth += 1
        for index, (test, _) in enumerate(node.branches):
            guarded = skip and index < skip
            if guarded:
                self.line(f"if {chosen} == -1:")
                self.depth += 1
            value = self.expr(test, scope, local)
            taken = self.truth(value, node)
            self.line(f"if {taken}:")
            self.line(f"    {chosen} = {index}")
            self.line("    break")
            if guarded:
                self.depth -= 1
        self.line(f"{chosen} = {len(node.branches)}")
        self.line("break")
        self.depth -= 1

    def unpacked(self, target: Any, item: str, inner: str, variables: Optional[str]) -> dict:
        """`for k, v in ...`'s names bound in the loop's frame: an exact tuple of as many names
        at once (loops.assign's first case), anything else by loops.assign; into the frame's
        dict `variables` when it is kept from one iteration to the next, else a new one.
        Returns the Python locals that hold the names' values (none for a nested target)."""
        names = _flat_names(target)
        if names is None:
            self.line(f"{inner}.vars = {{}}")
            self.line(f"assign(ev, {self.constant(target)}, {item}, {inner})")
            return {}
        values = [self.temp() for _ in names]
        held = dict(zip(names, values))  # a name given twice holds the last value
        self.line(f"if type({item}) is tuple and len({item}) == {len(values)}:")
        self.line(f"    {', '.join(values)}, = {item}")
        if variables is None:
            self.line(f"    {inner}.vars = {{{', '.join(f'{name!r}: {value}' for name, value in held.items())}}}")
        else:
            self.line(f"    {'; '.join(f'{variables}[{name!r}] = {value}' for name, value in held.items())}")
        self.line("else:")
        if variables is None:
            self.line(f"    {inner}.vars = {{}}")
        self.line(f"    assign(ev, {self.constant(target)}, {item}, {inner})")
        self.line(f"    {', '.join(held.values())}, = {', '.join(f'{inner}.vars[{name!r}]' for name in held)},")
        return held

    def for_(self, node: ast.For, scope: str, local: dict) -> bool:
        """compile_for and _iterate, written out: each iteration in a frame of its own, or the
        same frame with new variables (`reuse`), or the same frame and dict (`fixed`), where
        the variable is a Python local too and `loop` the LoopContext. A recursive loop is its
        closure's (False)."""
        if node.recursive:
            return False
        wants_loop, reuse, writes, extended = _loop_facts(node)
        target = node.target
        name = target.name if type(target) is ast.NameTarget else None
        names = [name] if name is not None else _flat_names(target)
        fixed = reuse and names is not None and not writes
        n = self.constant(node)
        iterable, iterator, length, items = self.temp(), self.temp(), self.temp(), self.temp()
        inner, variables, item, completed = self.temp(), self.temp(), self.temp(), self.temp()
        self.line(f"if ev.declared: ev.declare({n}, {scope})")
        walked = node.iter  # a filter's value walked at once may be a builtin's loop_form
        value = (self.call_plain(walked, walked.value, "filters", None, scope, local, iterated=True)
                 if type(walked) is ast.Filter and walked.value is not None and _plain_arguments(walked.arguments)
                 else self.expr(walked, scope, local))
        self.line(f"{iterable} = {value}")
        self.line(f"if type({iterable}) is list or type({iterable}) is tuple: "
                  f"{iterator}, {length} = iter({iterable}), len({iterable})")  # loop_iterator's
        self.line(f"elif type({iterable}) is dict or type({iterable}) is DICT_ITEMS: "
                  f"{iterator}, {length} = iter({iterable}), len({iterable})")
        self.line(f"elif type({iterable}) is GeneratorType: {iterator}, {length} = {iterable}, None")
        self.line("else:")
        self.line("    try:")
        self.line(f"        {iterator}, {length} = loop_iterator({iterable})")
        self.line("    except Exception as e:")
        self.line(f"        ev.fail(e, {n})")
        if node.condition is not None:
            self.line(f"{iterator}, {length} = filtered(ev, {n}, {scope}, {iterator}), None")
        if wants_loop:
            self.line(f"{items} = LoopContext({iterator}, {length}, 0, ev.undefined, None, {iterable})")
        else:
            self.line(f"{items} = {iterator}")
        if fixed:  # (a frame made with its dict: a third of the time of one given it after)
            declared = ", ".join([*(f"{n!r}: None" for n in dict.fromkeys(names)), *([f"'loop': {items}"] if wants_loop else [])])
            self.line(f"{variables} = {{{declared}}}")
            self.line(f"{inner} = Scope({scope}, {variables})")
        else:
            self.line(f"{inner} = Scope({scope})")
        self.line(f"{completed} = False")
        cost = sum(map(size, node.body)) + 1  # an iteration is a step even when its body is empty
        charged = self.temp()
        self.line("try:")
        if extended:
            self.line(f"    {charged} = False")
        else:  # loops.charged_up_front, written out: a call per loop cost a loop over a dict half again
            self.line(f"    if {length} is not None and not ev.mutable and type({iterable}) in FIXED_LENGTH "
                      "and budget.deadline is None:")
            self.line(f"        budget.iterations -= {length}")
            self.line("        if budget.iterations < 0: budget.iterate(0)")
            self.line(f"        ev.steps -= {cost} * {length}")
            self.line("        if ev.steps <= 0: ev.steps = budget.refuel(ev.steps)")
            self.line(f"        {charged} = True")
            self.line("    else:")
            self.line(f"        {charged} = False")
        self.line(f"    for {item} in {items}:")
        self.depth += 2
        self.blocks += 3
        self.line(f"if not {charged}:")
        self.depth += 1
        self.line("budget.iterations -= 1")
        self.line("if budget.iterations < 0: budget.iterate(0)")
        self.charge(cost)
        self.depth -= 1
        if fixed and name is not None:
            self.line(f"{variables}[{name!r}] = {item}")
            inside = {**local, name: item, "loop": items if wants_loop else None}
        elif fixed:
            inside = {**local, **self.unpacked(target, item, inner, variables),
                      "loop": items if wants_loop else None}
        else:
            unpacked = {}
            if name is not None:
                self.line(f"{inner} = Scope({scope}, {{{name!r}: {item}}})" if not reuse else
                          f"{inner}.vars = {{{name!r}: {item}}}")
            else:
                if not reuse:
                    self.line(f"{inner} = Scope({scope})")
                unpacked = self.unpacked(target, item, inner, None)
            if wants_loop:
                self.line(f"{inner}.vars['loop'] = {items}")
            # The body sets names in the frame: what it never binds (the variable, `loop`, an
            # outer loop's variable) is still known; every other name is read from the frame.
            bound = bound_names(node.body)
            inside = {} if bound is None else {k: v for k, v in local.items() if k not in bound}
            if bound is not None and name is not None and name not in bound:
                inside[name] = item
            if bound is not None:
                inside.update((k, v) for k, v in unpacked.items() if k not in bound)
            if bound is not None and "loop" not in bound:
                inside["loop"] = items if wants_loop else None
        self.line("try:")
        self.depth += 1
        self.statements(node.body, inner, inside)
        if node.otherwise:
            self.line(f"{completed} = True")
        self.depth -= 1
        self.line("except LoopSignal as signal:")
        self.line("    if signal.stop: break")
        self.depth -= 2
        self.blocks -= 3
        self.line("except LoopSignal:")
        self.line("    raise")
        self.line("except Exception as e:")
        self.line(f"    ev.fail(e, {n})")
        if node.otherwise:
            other = self.temp()
            self.line(f"if not {completed}:")
            self.depth += 1
            self.line(f"{other} = Scope({scope})")  # a frame of its own: what it sets stays there
            self.body(node.otherwise, other, {})
            self.depth -= 1
        return True


def _forget(local: dict, node: Any) -> None:
    """After `node`, the names it may bind in this frame are no longer known as locals (a `set`
    makes its name known to the statements after it: `local`)."""
    if not local:  # nothing known, nothing to walk the node for
        return
    bound = bound_names((node,))
    if bound is None:
        local.clear()
    else:
        for name in bound & local.keys():
            del local[name]


def bound_names(body: tuple) -> Any:
    """Every name some statement in `body` (nested ones too) may bind: assignment and loop
    targets, macros and their parameters, imports; None when an extension's node is there
    (it may bind anything)."""
    names: set = set()
    for node in ast.walk(body):
        kind = type(node)
        if kind is ast.NameTarget or kind is ast.Macro or kind is ast.Parameter:
            names.add(node.name)
        elif kind is ast.Import:
            names.add(node.target)
        elif kind is ast.FromImport:
            names.update(local for _, local in node.names)
        elif not scope_neutral(kind):
            return None
    return names


def _printed(value: str) -> str:
    """to_string of the local `value`: plain text is itself (to_string's first case, inline)."""
    return f"{value} if type({value}) is str else to_string({value})"


def _flat_names(target: Any) -> Optional[list]:
    """The names of `for a, b in ...`'s target when each item is a name, else None."""
    if type(target) is ast.TupleTarget and all(type(sub) is ast.NameTarget for sub in target.items):
        return [sub.name for sub in target.items]
    return None


def _print_run(body: tuple, i: int) -> tuple:
    """The text and outputs from `body[i]` on that `prints` writes together (not a `+` sum:
    output_sum collects its addends itself); empty when `body[i]` is neither."""
    end = i
    while end < len(body) and (type(body[end]) is ast.Text or type(body[end]) is ast.Output
                               and not _plus(body[end].expr) and not _calls(body[end].expr)):
        end += 1
    return body[i:end]


def _calls(expr: Any) -> bool:
    """Whether `expr` calls something (a macro writes output as it runs: printed in a run, it
    would write before the text ahead of it is metered, and an output limit crossed would be
    found inside the macro rather than at that text)."""
    return any(type(node) is ast.Call for node in ast.walk(expr))


def _constant_text(node: Any) -> Optional[str]:
    """What a text node or `{{ 'literal' }}` writes; None for an output of anything else."""
    if type(node) is ast.Text:
        return node.text
    if type(node.expr) is ast.Const and type(node.expr.value) is str:
        return node.expr.value
    return None


def over_output(ev: Any, sizes: tuple, blamed: tuple) -> None:
    """A run of prints (StatementWriter.prints) went past the output limit: the charge given
    back and taken again piece by piece, so that the error is raised at the output that
    crossed it (text's unlocated), as printing them one at a time raises it."""
    budget = ev.budget
    budget.output += sum(sizes)
    for written, node in zip(sizes, blamed):
        budget.output -= written
        if budget.output < 0 and node is None:
            budget.wrote(0)  # raises, unlocated
        elif budget.output < 0:
            try:
                budget.wrote(0)
            except Exception as e:
                ev.fail(e, node)
