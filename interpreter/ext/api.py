"""Extensions: new syntax from a grammar fragment, AST classes and handlers, with no parser code.

An `Extension` bundles the grammar side (a Lark fragment composed into the core with `%extend`,
and a builder per rule that returns AST nodes) with the evaluator side (a handler per node class,
functions for binary operators) and optional filters, tests and globals. The optional tags that
jinjamark ships (loopcontrols, do, generation: `ext/shipped.py`) use this same public
path; the evaluator knows none of them. docs/extensions.md is the tutorial.

An `Environment` composes its extensions here: `resolve` orders them deterministically,
`install` merges their tables (refusing conflicts), `parser_for` builds the parser (one per
extension set, cached) and checks that every rule has a builder.
"""
from __future__ import annotations

import functools
from dataclasses import field
from typing import Any, Callable, Mapping, Optional

from ..grammar import ast, records
from ..grammar.compose import ExtensionError, compose
from ..grammar.errors import TemplateError, TemplateSyntaxError
from ..grammar.parser import Parser, Syntax, extension_grammar
from ..grammar.positions import meta_span, token_span
from ..evaluation.compiling.core import COMPILERS

Builder = Callable[[Any, list], Any]  # (meta, children) -> AST node or plain data
Handler = Callable[[Any, ast.Node, Any], Any]  # (evaluator, node, scope) -> value or None


records.MODULES.add(__name__)  # Extension is a record (grammar/records.py): cheaper to define


class Extension(records.Record):
    """Optional syntax and behaviour, enabled per environment.

    name:      how users ask for it (`Environment(extensions=["do"])`); `aliases` adds more
               names, such as Jinja2's dotted ones.
    grammar:   a Lark fragment composed into the core with `%extend` (never `%import`), e.g.
               `%extend _statement: my_stmt` adds a statement, `%extend ?atom: MY -> my_literal`
               an expression form, `%extend ?or_expr: or_expr "??" and_expr -> my_op` an operator.
    rules:     rule or alias name -> `builder(meta, children)` returning an AST node; `span(meta)`
               gives its `ast.Span`. Every tree the fragment makes needs one (checked).
    handlers:  AST node class -> `handler(evaluator, node, scope)`. Every `ast.Stmt` and
               `ast.Expr` subclass a builder makes needs one (checked when a template is parsed).
    operators: binary operator symbol -> `function(left, right)`, for `ast.Binary` nodes the
               extension's builders make with that symbol as `op` (both sides are evaluated).
    filters, tests, globals: added to the environment's tables.
    validate:  called with each parsed template; raises TemplateSyntaxError to refuse it.
    names_from_expressions: True when the handlers read variables only by evaluating their
               node's expressions (`evaluator.eval`), never by name from the scope. Then which
               variables a template reads is known from its names (`Template.names_read`), and
               `ChatTemplate.render_parts` need not copy, to mark it, data the template never
               reads. False (the safe default) makes that unknown for templates using the
               extension's nodes.
    scope_neutral: True when, besides, the handlers bind no names in the scope they are given
               and keep no reference to it once they return (bodies they run with
               `evaluator.run` are template statements, seen as such). Then a loop whose body
               holds the extension's nodes keeps every fast path of a loop of core statements
               (one frame for all iterations, no `loop` object unless a name reads it); the
               shipped tags use this flag. Implies `names_from_expressions`.
    """
    name: str
    grammar: str = ""
    rules: Mapping[str, Builder] = field(default_factory=dict)
    handlers: Mapping[type, Handler] = field(default_factory=dict)
    operators: Mapping[str, Callable[[Any, Any], Any]] = field(default_factory=dict)
    filters: Mapping[str, Callable] = field(default_factory=dict)
    tests: Mapping[str, Callable] = field(default_factory=dict)
    globals: Mapping[str, Any] = field(default_factory=dict)
    aliases: tuple[str, ...] = ()
    validate: Optional[Callable[[ast.Template], None]] = None
    names_from_expressions: bool = False
    scope_neutral: bool = False

    @functools.cached_property
    def syntax(self) -> Optional[Syntax]:
        """The grammar side, built once so that the same extension always finds the same parser."""
        if not self.grammar:
            if self.rules:
                raise ExtensionError(f"extension {self.name!r} has rule builders but no grammar",
                                     [self.name])
            return None
        rules = {rule: _located(self.name, rule, fn) for rule, fn in self.rules.items()}
        return Syntax(self.name, self.grammar, rules)


def span(item: Any) -> ast.Span:
    """The source span of a rule builder's `meta`, or of a token among its `children`."""
    return token_span(item) if isinstance(item, str) else meta_span(item)


def _located(extension: str, rule: str, build: Builder) -> Builder:
    """A builder whose failures are syntax errors at the rule's position. Memoised, so that the
    same builder always gets the same wrapper and the parser cache recognises it."""
    key = (extension, rule, build)
    try:
        return _wrappers[key]
    except KeyError:
        wrapper = _wrappers[key] = _wrap(extension, rule, build)
        return wrapper
    except TypeError:  # an unhashable callable: not memoised
        return _wrap(extension, rule, build)


_wrappers: dict[tuple, Builder] = {}


def _wrap(extension: str, rule: str, build: Builder) -> Builder:
    def located(meta: Any, children: list) -> Any:
        try:
            return build(meta, children)
        except TemplateError:
            raise
        except Exception as e:  # noqa: BLE001 - a builder's bug must not escape a parse as itself
            error = TemplateSyntaxError(f"{e} (while building {rule!r} of extension {extension!r})")
            if not getattr(meta, "empty", True):  # else the parser places it at the tree
                error.lineno, error.column = meta.line, meta.column
            raise error from e
    located.__name__ = rule
    return located


# ---------------------------------------------------------------------------- composing


def install(environment: Any, extensions: tuple[Extension, ...]) -> None:
    """Merge the extensions' tables into the environment's. Two extensions may not define the
    same handler, operator, filter, test or global, and none may replace a core handler or
    operator (the meaning of the core language); core filters, tests and globals may be replaced."""
    tables = (("handler for", environment.handlers, "handlers", True),
              ("operator", environment.operators, "operators", True),
              ("filter", environment.filters, "filters", False),
              ("test", environment.tests, "tests", False),
              ("global", environment.globals, "globals", False))
    for kind, table, attribute, core_is_fixed in tables:
        owners: dict[Any, str] = {}
        for ext in extensions:
            for key, value in getattr(ext, attribute).items():
                in_core = key in table or attribute == "handlers" and key in COMPILERS
                _check_entry(kind, key, ext.name, owners, core_is_fixed and in_core)
                owners[key] = ext.name
                table[key] = value


def _check_entry(kind: str, key: Any, extension: str, owners: dict, in_core: bool) -> None:
    label = key.__name__ if isinstance(key, type) else repr(key)
    if kind == "handler for" and not (isinstance(key, type) and issubclass(key, ast.Node)):
        raise ExtensionError(f"extension {extension!r}: handlers are keyed by AST node classes, "
                             f"not {key!r}", [extension])
    if key in owners:
        raise ExtensionError(f"extensions {owners[key]!r} and {extension!r} both define the "
                             f"{kind} {label}", [owners[key], extension])
    if in_core:
        raise ExtensionError(f"extension {extension!r} redefines the core's {kind} {label}: "
                             "extensions add to the language, they do not change it", [extension])


def parser_for(extensions: tuple[Extension, ...], strict: bool = False, **options: Any) -> Parser:
    """The parser for the core plus these extensions; `strict` builds it with Lark's strict mode
    (grammar conflicts and colliding terminals are errors, not silently resolved)."""
    syntaxes = tuple(ext.syntax for ext in extensions if ext.syntax is not None)
    return compose(syntaxes, strict=strict, **options)


__all__ = ["Extension", "ExtensionError", "span", "install", "parser_for",
           "extension_grammar"]
