"""What Jinja2 refuses when it compiles a template, checked on our tree when it is parsed:
unknown filters and tests (except where Jinja2 never compiles them), nodes and operators that no
enabled extension handles."""
from __future__ import annotations

from typing import Any, Optional

from .errors import TemplateAssertionError
from .evaluation.evaluator import Evaluator
from .evaluation.expressions import COMPARE
from .grammar import ast
from .evaluation.compiling.core import COMPILERS
from .evaluation.scope import Scope, frame_fields


def check(env: Any, tree: ast.Template, name: Optional[str], source: str) -> None:
    """What Jinja2 refuses at compile time: unknown filters and tests, unhandled nodes.

    As in Jinja2, an unknown filter or test inside an `if` or an inline `if` (and not in a
    loop, macro or block nested there) is only an error if it is reached at render time.
    """
    stack: list[tuple[Any, bool]] = [(tree, False)]
    handled: dict[type, bool] = {}  # per node class: whether something runs its nodes
    while stack:
        node, soft = stack.pop()
        kind = type(node)
        runs = handled.get(kind)
        if runs is None:
            runs = handled[kind] = not issubclass(kind, _RUN) or kind in env.handlers or kind in COMPILERS
        if kind is ast.Filter and node.name not in env.filters and not soft:
            _refuse(f"No filter named {node.name!r}.", node, name, source)
        elif kind is ast.Test and node.name not in env.tests and not soft:
            _refuse(f"No test named {node.name!r}.", node, name, source)
        elif not runs:
            _refuse(f"no handler for {kind.__name__} nodes: a rule builds them, but no "
                         "enabled extension has a handler for them", node, name, source)
        elif kind is ast.Binary and node.op not in env.operators:
            _refuse(f"no operator {node.op!r}: a rule builds it, but no enabled "
                         "extension defines it", node, name, source)
        elif kind is ast.Compare:
            for op, _ in node.ops:
                if op not in COMPARE and op not in env.operators:
                    _refuse(f"no operator {op!r}: a rule builds it, but no enabled "
                                 "extension defines it", node, name, source)
        if kind is ast.Logical and _refuses(env, node.right) and _short_circuits(env, node):
            continue  # `none and x`: Jinja2 folds the constant away and never compiles x
        soft = soft or kind is ast.If or kind is ast.CondExpr
        inner = frame_fields(kind) if soft else ()  # run in a new frame: no longer "soft" there
        if not inner:  # every child as soft as this node (most nodes: one call for all children)
            stack.extend([(child, soft) for child in ast.children(node)])
            continue
        for field in ast.child_fields(kind):
            value = getattr(node, field)
            stack.extend((child, field not in inner) for child in ast.nodes_in(value))


_RUN = (ast.Stmt, ast.Expr)  # the nodes a handler or compiler must run


def _refuses(env: Any, node: ast.Node) -> bool:
    """Whether `node` names a filter or test the environment does not have: only then does
    the constant before it need evaluating now (a host filter there would run twice)."""
    return any((type(n) is ast.Filter and n.name not in env.filters)
               or (type(n) is ast.Test and n.name not in env.tests) for n in ast.walk(node))

def _short_circuits(env: Any, node: ast.Logical) -> bool:
    """Whether the left operand is a constant (as Jinja2's optimizer folds constants, filters
    and tests included) that decides the `and`/`or` without the right operand."""
    if not _foldable(node.left, env.filters, env.tests):
        return False
    try:
        value = Evaluator(env, env.handlers, None, "").eval(node.left, Scope())
    except Exception:  # noqa: BLE001 - a failing constant is not folded by Jinja2 either
        return False
    return bool(value) == (node.op == "or")

def _refuse(message: str, node: ast.Node, name: Optional[str], source: str) -> None:
    raise TemplateAssertionError(message, name=name, lineno=node.span.line,
                                 column=node.span.column, source=source)


def _foldable(node: Any, filters: dict, tests: dict) -> bool:
    """Whether every part of an expression is constant for Jinja2's optimizer."""
    for part in ast.walk(node):
        kind = type(part)
        if kind is ast.Filter:
            fn = filters.get(part.name)
            passed = getattr(getattr(fn, "jinja_pass_arg", None), "name", getattr(fn, "jinja_pass_arg", None))
            if fn is None or passed == "context" or part.value is None:
                return False
        elif kind is ast.Test:
            if part.name not in tests:
                return False
        elif kind not in _FOLDABLE:
            return False
    return True


_FOLDABLE = {ast.Const, ast.ListLiteral, ast.TupleLiteral, ast.DictLiteral, ast.Binary, ast.Unary,
             ast.Logical, ast.Concat, ast.Compare, ast.CondExpr, ast.GetAttr, ast.GetItem, ast.Slice,
             ast.Arguments}
