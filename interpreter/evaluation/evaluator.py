"""The evaluator: one render of one template, running the template's compiled closures.

Each node is compiled once per template into a closure (compiling/): the core's statements and
expressions by their compilers, an extension's node to a call of its handler from the
evaluator's table, `handler(evaluator, node, scope)` (a node without one fails loudly).
Statements write to `Evaluator.out`; expressions return values. The functions here are the
core's rarer statements (block `set`, macros, call and filter blocks, `with`), compiled to direct
calls of them (`compiles_statement`); printing's general path is printer.py's.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable, NoReturn

from ..grammar import ast
from ..errors import LimitExceeded, TemplateError, TemplateRuntimeError
from ..limits import Budget
from .autoescape import exec_autoescape, rendered
from .composition import COMPOSITION, template_reference
from .compiling import code_of, code_table
from .compiling.core import compiles, compiles_statement
from .expressions import call_value, evaluate_arguments
from ..values.markup import Markup
from ..values.marks import concat
from . import macros
from .macros import make_macro
from .scope import Scope
from ..values.undefined import MISSING
from ..values.printing import to_string
from .contexts import context_if_wanted
from .loops import LoopSignal, assign

Handler = Callable[["Evaluator", Any, Scope], Any]
DECLARED = "declared"  # the memo's key for the template's scope.declarations


class Evaluator:
    """One render of one template."""

    # What every render starts with, kept here until a render changes it (instance attributes
    # from then on): a short render's setup is a few microseconds, and each store counted.
    # Template composition (composition.py): the inheritance chain this template renders in, the
    # parent it extended, and the template itself when another one runs it.
    chain: Any = None
    parent: Any = None
    template: Any = None
    # Autoescaping (autoescape.py): whether it is on, and what eval-context callables get.
    autoescape = False
    default_autoescape = False
    eval_ctx: Any = None
    # Printing (printer.py): whether this template has extended (its text is not printed).
    guarding = False
    tracks = False  # whether it carries generation spans (tracking.py's subclass does)

    def __init__(self, environment: Any, handlers: dict[type, Handler], name: str | None,
                 source: str, memo: dict | None = None) -> None:
        self.env = environment
        self.undefined = environment.undefined
        self.mutable = not environment.immutable
        self.handlers = handlers
        self.name = name
        self.source = source
        self.out: list[str] = []
        self.budget = Budget(environment.limits, environment)
        if environment.immutable:  # no container changes while it renders: sizes measured once
            self.budget.printed = {}
        self.steps = Budget.BATCH
        self.memo = {} if memo is None else memo  # per template: facts about its nodes
        self.looked: dict = {}  # per generated function: its filters and tests, found once
        # the operators the sandbox intercepts (Jinja2's intercepted_binops/unops; mostly none)
        self.binops, self.unops = environment.interception()
        self.code = code_table(self.memo)  # per template: each node's closure, compiled when reached
        # names to declare unassigned before some statements (scope.declarations), found
        # when the template was compiled; none for an expression evaluated on its own
        self.declared = self.memo.get(DECLARED)
        # `fast`: printing is plain, and compiled code writes text and values itself (reprint's
        # answer for a render starting: autoescaping and extending come later, if at all)
        self.fast = not self.tracks and environment.finalize is None

    # ------------------------------------------------------------------ dispatch
    def eval(self, node: Any, scope: Scope) -> Any:
        """The value of an expression, or the effect of a statement (handlers call this)."""
        self.steps -= 1
        if self.steps <= 0:
            self.steps = self.budget.refuel(self.steps)
        return code_of(self.code, node)(self, scope)

    def fail(self, e: Exception, node: Any) -> NoReturn:
        """Raise `e` as an error at `node`: a template error gets the node's position unless an
        inner node gave it one, too deep a recursion is LimitExceeded, any other exception a
        TemplateRuntimeError; loop signals pass."""
        try:
            if isinstance(e, LoopSignal):
                raise e
            if isinstance(e, TemplateError):
                e.locate(node.span.line, node.span.column, self.name, self.source)
                raise e
            if isinstance(e, RecursionError):
                error = LimitExceeded("maximum recursion depth exceeded")
                error.locate(node.span.line, node.span.column, self.name, self.source)
                raise error from None
            raise self.runtime_error(e, node) from e
        finally:  # the exception's traceback keeps this frame: a frame that kept the exception
            e = None  # too would be a cycle for the collector (a `break` raises one per loop)

    def runtime_error(self, e: Exception, node: Any) -> TemplateRuntimeError:
        message = str(e) if not isinstance(e, KeyError) else f"key {e}"
        error = TemplateRuntimeError(message or type(e).__name__)
        error.locate(node.span.line, node.span.column, self.name, self.source)
        return error

    def run(self, body: tuple, scope: Scope) -> None:
        code_of(self.code, body)(self, scope)

    def declare(self, node: Any, scope: Scope) -> None:
        """Before a statement whose inner frames may read names that this scope's frame owns
        but has not assigned yet: declare them there, unassigned (read as undefined)."""
        names = self.declared.get(id(node))
        if names:
            scope.vars.update(names)

    def capture(self, body: Iterable[Any], scope: Scope) -> str:
        """Render a body to a string (block set, macros, filter blocks, recursive loops)."""
        saved, self.out = self.out, []
        try:
            self.run(body, scope)
            return concat(self.out)
        finally:
            self.out = saved

    def write(self, value: Any) -> None:
        text = to_string(value)
        if text:
            self.budget.wrote(len(text))
            self.out.append(text)

    def lookup(self, name: str, scope: Scope) -> Any:
        value = scope.lookup(name)
        return self.lookup_missing(name) if value is MISSING else value

    def lookup_missing(self, name: str) -> Any:
        """What a name no scope holds (or holds unassigned) stands for."""
        if name == "self" and self.chain is not None:  # the blocks, unless a variable
            return template_reference(self.chain)
        return self.undefined(name=name)


macros.PLAIN_CAPTURE = Evaluator.capture  # a macro's call writes this capture out (macros.py)


# ---------------------------------------------------------------------------- statements

@compiles(ast.AssignBlock)
def compile_assign_block(node: ast.AssignBlock) -> Any:
    """`{% set x %}body{% endset %}` (often in a loop, once per message): the body rendered and
    filtered as a filter block's is (`filtered_body`), then assigned."""
    target = node.target

    def set_block(ev: Evaluator, scope: Scope) -> None:
        try:
            value = filtered_body(ev, node, scope)
            if ev.autoescape:  # Jinja2 makes the filtered value safe text too: `| length` gives Markup('3')
                value = Markup(value)
            assign(ev, target, value, scope)
        except Exception as e:
            ev.fail(e, node)
    return set_block


def filtered_body(ev: Evaluator, node: ast.AssignBlock | ast.FilterBlock, scope: Scope) -> Any:
    """A block `set`'s or filter block's body rendered in a frame of its own, then filtered."""
    if ev.declared:  # most templates have none
        ev.declare(node, scope)
    inner = Scope(scope)
    value: Any = rendered(ev, ev.capture(node.body, inner))
    for f in node.filters:  # in the body's scope: they see what it set
        value = apply_filter(ev, f, value, inner)
    return value


def exec_macro(ev: Evaluator, node: ast.Macro, scope: Scope) -> None:
    if ev.declared:  # most templates have none
        ev.declare(node, scope)
    scope.vars[node.name] = make_macro(ev, node, node.name, scope)


def exec_call_block(ev: Evaluator, node: ast.CallBlock, scope: Scope) -> None:
    if ev.declared:  # most templates have none
        ev.declare(node, scope)
    caller = make_macro(ev, node, None, scope)  # Jinja2's callers are anonymous
    call = node.call
    func = ev.eval(call.func, scope)
    args, kwargs = evaluate_arguments(ev, call.arguments, scope)
    kwargs["caller"] = caller
    ev.write(call_value(func, args, kwargs, ev.autoescape))


def exec_filter_block(ev: Evaluator, node: ast.FilterBlock, scope: Scope) -> None:
    ev.write(filtered_body(ev, node, scope))


def apply_filter(ev: Evaluator, node: ast.Filter, value: Any, scope: Scope) -> Any:
    args, kwargs = evaluate_arguments(ev, node.arguments, scope)
    try:
        context = context_if_wanted(ev.env.filters.get(node.name), ev, scope)
        return ev.env.call_filter(node.name, value, args, kwargs, context, ev.eval_ctx)
    except Exception as e:
        ev.fail(e, node)


def exec_with(ev: Evaluator, node: ast.With, scope: Scope) -> None:
    if ev.declared:  # most templates have none
        ev.declare(node, scope)
    values = [(target, ev.eval(expr, scope)) for target, expr in node.targets]
    inner = Scope(scope)
    for target, value in values:
        assign(ev, target, value, inner)
    ev.run(node.body, inner)


STATEMENTS: dict[type, Handler] = {
    ast.Macro: exec_macro,
    ast.CallBlock: exec_call_block,
    ast.FilterBlock: exec_filter_block,
    ast.With: exec_with,
}

# The core's rarer statements, each a function of its node, compiled to a direct call of it.
for _kind, _statement in {**STATEMENTS, ast.AutoEscape: exec_autoescape, **COMPOSITION}.items():
    compiles_statement(_kind, _statement)
