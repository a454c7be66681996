"""The extensions jinjamark ships, built on the public `Extension` API like any user's.

`loopcontrols` and `do` are Jinja2's `jinja2.ext.loopcontrols` and `jinja2.ext.do`;
`generation` is the tag transformers adds for assistant masks. Nothing in the evaluator or the
environment names them: `ext.resolve` imports this module only when a name is asked for, and
tests/test_extensions.py checks that the core works with this module gone.
"""
from __future__ import annotations

from typing import Any

from ..grammar import ast, records
from ..grammar.errors import TemplateSyntaxError
from ..evaluation.loops import LoopSignal
from ..evaluation.scope import Scope
from .api import Extension, extension_grammar, span
from ..evaluation.tracking import END, START, tracking

# The node classes below are records (grammar/records.py), as the core's are: dataclasses to
# the outside, but `@dataclass(frozen=True, slots=True)` cost about half a millisecond each at
# every start (every chat environment imports this module). A user's extension is free to use
# the decorator (tests/test_startup.py).
records.MODULES.add(__name__)

# ---------------------------------------------------------------------------- loopcontrols


class Break(ast.Stmt):
    """`{% break %}`."""


class Continue(ast.Stmt):
    """`{% continue %}`."""


def _break(ev, node, scope):
    raise LoopSignal(stop=True)  # the core's loop protocol: run_loop stops on it


def _continue(ev, node, scope):
    raise LoopSignal(stop=False)


# Bodies that Jinja2 compiles into functions of their own: a loop outside them does not count.
FUNCTION_BODIES = {ast.Macro: "body", ast.CallBlock: "body"}


def _check_loop_controls(tree: ast.Template) -> None:
    """`break` and `continue` only inside a for loop's body, as Jinja2's compiled Python demands.

    Only statements are walked into: the core's expressions hold none (an extension's node, of
    whatever kind, is walked whole). Most of a template is expressions: this check was about a
    tenth of a compile when it looked into them."""
    stack: list[tuple[Any, bool]] = [(tree, False)]
    while stack:
        node, in_loop = stack.pop()
        kind = type(node)
        if (kind is Break or kind is Continue) and not in_loop:
            word = "break" if kind is Break else "continue"
            raise TemplateSyntaxError(f"'{word}' is only allowed inside a for loop",
                                      lineno=node.span.line, column=node.span.column)
        function_body = FUNCTION_BODIES.get(kind) or getattr(kind, "jinja_function_field", None)
        whole = kind.__module__ != _CORE
        for name in ast.child_fields(kind):
            value = getattr(node, name)
            if value is None or value == ():
                continue
            inner = (in_loop or (kind is ast.For and name == "body")) and name != function_body
            stack.extend((child, inner) for child in ast.nodes_in(value)
                         if whole or isinstance(child, ast.Stmt) or type(child).__module__ != _CORE)


_CORE = ast.__name__


LOOPCONTROLS = Extension(
    name="loopcontrols",
    grammar=extension_grammar("loopcontrols.lark"),
    rules={"break_stmt": lambda meta, children: Break(span(meta)),
           "continue_stmt": lambda meta, children: Continue(span(meta))},
    handlers={Break: _break, Continue: _continue},
    aliases=("jinja2.ext.loopcontrols",),
    validate=_check_loop_controls,
    names_from_expressions=True,
    scope_neutral=True,
)


# ---------------------------------------------------------------------------- do

class Do(ast.Stmt):
    """`{% do expression %}`: evaluate, print nothing."""
    expr: ast.Expr


DO = Extension(
    name="do",
    grammar=extension_grammar("do.lark"),
    rules={"do_stmt": lambda meta, children: Do(span(meta), children[0])},
    handlers={Do: lambda ev, node, scope: ev.eval(node.expr, scope) and None},
    aliases=("jinja2.ext.do",),
    names_from_expressions=True,
    scope_neutral=True,
)


# ---------------------------------------------------------------------------- generation

class Generation(ast.Stmt):
    """`{% generation %}body{% endgeneration %}`: renders its body unchanged."""
    body: tuple
    jinja_inner_fields = ("body",)  # a call block in Jinja2: its body is a new frame ...
    jinja_function_field = "body"   # ... and a function of its own


def _generation(ev, node, scope):
    """The body, in a frame of its own: transformers makes the tag a call block, whose body is
    a macro called with nothing (so `caller`, `kwargs` and `varargs` are its own there)."""
    if ev.declared:  # names the enclosing frame owns but has not assigned yet
        ev.declare(node, scope)
    specials = {"caller": ev.undefined("No caller defined", name="caller"), "kwargs": {},
                "varargs": ()}
    if not tracking(ev):
        ev.run(node.body, Scope(scope, specials))
        return
    # asked for the spans (render_with(generation_spans=...)): zero-width markers around the
    # body, resolved to offsets where its text finally lands (jinjamark.evaluation.tracking)
    ev.out.append(START)
    ev.run(node.body, Scope(scope, specials))
    ev.out.append(END)


GENERATION = Extension(
    name="generation",
    grammar=extension_grammar("generation.lark"),
    rules={"generation_stmt": lambda meta, children: Generation(span(meta), children[0])},
    handlers={Generation: _generation},
    names_from_expressions=True,
    scope_neutral=True,
)

SHIPPED: dict[str, Extension] = {ext.name: ext for ext in (LOOPCONTROLS, DO, GENERATION)}
for _ext in list(SHIPPED.values()):
    for _alias in _ext.aliases:
        SHIPPED[_alias] = _ext
