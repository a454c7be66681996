"""Extensions: new syntax from a grammar fragment, AST classes and handlers.

An `Extension` bundles the grammar side (a Lark fragment composed into the core with
`%extend`, and a builder per rule that returns AST nodes) with the evaluator side (a handler
per node class) and optional filters, tests and globals. The optional tags Jinja2 ships
(loopcontrols, do) and transformers' `generation` are built here on this same public path.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from .grammar import ast
from .grammar.errors import TemplateSyntaxError
from .grammar.parser import Syntax, extension_grammar
from .grammar.transform import meta_span
from .evaluator import LoopSignal


@dataclass(frozen=True)
class Extension:
    """Optional syntax and behaviour, enabled per environment.

    name:     how users ask for it (`Environment(extensions=["do"])`); `aliases` adds more
              names, such as Jinja2's dotted ones.
    grammar:  a Lark fragment; `%extend _statement: my_stmt` adds a statement.
    rules:    rule name -> `builder(meta, children)` returning an AST node.
    handlers: AST node class -> `handler(evaluator, node, scope)`.
    operators: binary operator symbol -> `function(left, right)`, for `ast.Binary` nodes the
              extension's rules build with that symbol as `op`.
    validate: called with each parsed template; raises TemplateSyntaxError to refuse it.
    """
    name: str
    grammar: str = ""
    rules: Mapping[str, Callable] = field(default_factory=dict)
    handlers: Mapping[type, Callable] = field(default_factory=dict)
    operators: Mapping[str, Callable] = field(default_factory=dict)
    filters: Mapping[str, Callable] = field(default_factory=dict)
    tests: Mapping[str, Callable] = field(default_factory=dict)
    globals: Mapping[str, Any] = field(default_factory=dict)
    aliases: tuple[str, ...] = ()
    validate: Callable[[ast.Template], None] | None = None

    @property
    def syntax(self) -> Syntax | None:
        return Syntax(self.name, self.grammar, self.rules) if self.grammar else None


# ---------------------------------------------------------------------------- loopcontrols

@dataclass(frozen=True, slots=True)
class Break(ast.Stmt):
    """`{% break %}`."""


@dataclass(frozen=True, slots=True)
class Continue(ast.Stmt):
    """`{% continue %}`."""


def _break(ev, node, scope):
    raise LoopSignal(stop=True)


def _continue(ev, node, scope):
    raise LoopSignal(stop=False)


# Bodies that Jinja2 compiles into functions of their own: a loop outside them does not count.
FUNCTION_BODIES = {ast.Macro: "body", ast.CallBlock: "body"}


def _check_loop_controls(tree: ast.Template) -> None:
    """`break` and `continue` only inside a for loop's body, as Jinja2's compiled Python demands."""
    stack: list[tuple[Any, bool]] = [(tree, False)]
    while stack:
        node, in_loop = stack.pop()
        kind = type(node)
        if kind in (Break, Continue) and not in_loop:
            word = "break" if kind is Break else "continue"
            raise TemplateSyntaxError(f"'{word}' is only allowed inside a for loop",
                                      lineno=node.span.line, column=node.span.column)
        function_body = FUNCTION_BODIES.get(kind) or getattr(kind, "jinja_function_field", None)
        for name in getattr(kind, "__dataclass_fields__", ()):
            if name == "span":
                continue
            inner = (in_loop or (kind is ast.For and name == "body")) and name != function_body
            stack.extend((child, inner) for child in ast.nodes_in(getattr(node, name)))


LOOPCONTROLS = Extension(
    name="loopcontrols",
    grammar=extension_grammar("loopcontrols.lark"),
    rules={"break_stmt": lambda meta, children: Break(meta_span(meta)),
           "continue_stmt": lambda meta, children: Continue(meta_span(meta))},
    handlers={Break: _break, Continue: _continue},
    aliases=("jinja2.ext.loopcontrols",),
    validate=_check_loop_controls,
)


# ---------------------------------------------------------------------------- do

@dataclass(frozen=True, slots=True)
class Do(ast.Stmt):
    """`{% do expression %}`: evaluate, print nothing."""
    expr: ast.Expr


DO = Extension(
    name="do",
    grammar=extension_grammar("do.lark"),
    rules={"do_stmt": lambda meta, children: Do(meta_span(meta), children[0])},
    handlers={Do: lambda ev, node, scope: ev.eval(node.expr, scope) and None},
    aliases=("jinja2.ext.do",),
)


# ---------------------------------------------------------------------------- generation

@dataclass(frozen=True, slots=True)
class Generation(ast.Stmt):
    """`{% generation %}body{% endgeneration %}`: renders its body unchanged."""
    body: tuple
    jinja_inner_fields = ("body",)  # a call block in Jinja2: its body is a new frame ...
    jinja_function_field = "body"   # ... and a function of its own


GENERATION = Extension(
    name="generation",
    grammar=extension_grammar("generation.lark"),
    rules={"generation_stmt": lambda meta, children: Generation(meta_span(meta), children[0])},
    handlers={Generation: lambda ev, node, scope: ev.run(node.body, scope)},
)

SHIPPED = {ext.name: ext for ext in (LOOPCONTROLS, DO, GENERATION)}
for _ext in list(SHIPPED.values()):
    for _alias in _ext.aliases:
        SHIPPED[_alias] = _ext


def resolve(extensions) -> tuple[Extension, ...]:
    """Extension objects and names to a deterministic tuple (ordered by name, no repeats)."""
    found: dict[str, Extension] = {}
    for item in extensions:
        if isinstance(item, str):
            if item not in SHIPPED:
                raise ValueError(f"unknown extension {item!r}; known: {sorted(SHIPPED)}")
            item = SHIPPED[item]
        if not isinstance(item, Extension):
            raise TypeError(f"not an Extension: {item!r}")
        found[item.name] = item
    return tuple(found[name] for name in sorted(found))
