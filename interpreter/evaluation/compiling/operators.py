"""Compilers of operators: arithmetic, `+` chains of text, `not`/`and`/`or`, `~`,
comparisons and the inline `if`. The work of each operator is expressions.binary (and friends),
shared with the rest of the engine; what is compiled here is the evaluation order, the
shortcuts, and where an error is located.
"""
from __future__ import annotations

from typing import Any

from ..contexts import Context
from ..expressions import COMPARE, SMALL_COPY, binary, cheap_to_compare, join_printed, safe_sum
from ...grammar import ast
from ...values.marks import Input, Mixed, concat
from ...values.markup import Markup
from ...metering import charge_compare
from ...values.undefined import Undefined
from .access import constant, located
from .calls import compile_test
from .core import Code, compile_node, compiles
from ..printer import print_output, write


@compiles(ast.Binary)
def compile_binary(node: ast.Binary) -> Code:
    if node.op == "+" and type(node.left) is ast.Binary and node.left.op == "+":
        return compile_sum(node)
    left_is_const, left = constant(node.left)  # a literal operand costs no call
    right_is_const, right = constant(node.right)
    op = node.op

    def binary_(ev: Any, scope: Any) -> Any:
        a = left if left_is_const else left(ev, scope)
        b = right if right_is_const else right(ev, scope)
        try:
            return operate(ev, scope, op, a, b)
        except Exception as e:
            ev.fail(e, node)
    return binary_


def operate(ev: Any, scope: Any, op: str, a: Any, b: Any) -> Any:
    """`a op b`: the one meaning of a binary operator, for both tiers (the generated code adds
    plain numbers and short texts inline first, codegen/expressions.py): through the sandbox's
    interception where it intercepts `op` (Jinja2's), else as expressions.binary computes it."""
    if ev.binops and op in ev.binops:
        return ev.env.call_binop(Context(ev, scope), op, a, b)
    return binary(ev, op, a, b)


def addends(expr: ast.Binary) -> tuple[list, list]:
    """`(a + b) + c` -> operands [a, b, c] and the `+` nodes that add b and c."""
    operands, adders = [], []
    while type(expr) is ast.Binary and expr.op == "+":
        operands.append(expr.right)
        adders.append(expr)
        expr = expr.left
    operands.append(expr)
    return operands[::-1], adders[::-1]


class Addends:
    """The addends of `a + b + c` compiled for collecting: the texts of the constant ones stand
    in `texts` already, the others are `(index, code)` filled in left to right."""

    __slots__ = ("texts", "codes", "dynamic", "adders", "size")

    def __init__(self, expr: ast.Binary) -> None:
        operands, adders = addends(expr)
        constants = [o.value if type(o) is ast.Const and type(o.value) is str else None
                     for o in operands]
        self.texts = constants
        self.size = sum(len(t) for t in constants if t is not None)
        self.codes = tuple(None if t is not None else compile_node(o)
                           for t, o in zip(constants, operands))
        self.dynamic = tuple((i, code) for i, code in enumerate(self.codes) if code is not None)
        self.adders = tuple(adders)


def compile_sum(node: ast.Binary, output: Any = None) -> Code:
    """`a + b + c`: the addends evaluated left to right and joined once while all are text.
    With `output` (the `{{ a + b + c }}` around it), the sum is printed: while the addends are
    text they are written one after the other, without building the joined string (nor, when
    some are input, its marks). One closure does the collecting, inline, for both uses: the
    commonest statement of chat templates pays no call for it."""
    sum_ = Addends(node)
    texts_of, size_of, dynamic = sum_.texts, sum_.size, sum_.dynamic

    def add(ev: Any, scope: Any) -> Any:
        if output is not None and not ev.fast:
            return print_output(ev, output, scope)
        if ev.binops and "+" in ev.binops:
            return _finish(ev, output, _intercepted_sum(ev, sum_, scope))
        texts = texts_of[:]
        size = size_of
        safe = False
        for i, code in dynamic:
            value = code(ev, scope)
            kind = type(value)
            if kind is str or kind is Input or kind is Mixed:
                texts[i] = value
                size += len(value)
                continue
            if kind is Markup:  # safe text: the sum is safe, and escapes the rest
                texts[i] = value
                size += len(value)
                safe = True
                continue
            # from the first addend that is not text on, added as the expression tree adds
            return _finish(ev, output, _add_rest(ev, sum_, scope, texts[:i], value))
        try:
            if safe:  # text and safe text: escaped as added (printed as a safe value prints)
                if size > SMALL_COPY:
                    ev.budget.limits.check_size(size)
                return _finish(ev, output, safe_sum(ev, texts))
            if output is None:
                if size > SMALL_COPY:  # as binary's `+`: a short join needs no check
                    ev.budget.limits.check_size(size)
                return concat(texts)
            budget = ev.budget
            budget.output -= size
            if budget.output < 0:
                budget.wrote(0)  # raises LimitExceeded
            ev.out.extend(texts)
        except Exception as e:
            ev.fail(e, node if output is None else output)
    return add


def _finish(ev: Any, output: Any, value: Any) -> Any:
    """The sum's value, or, for `{{ }}`, nothing once it is printed."""
    if output is None:
        return value
    try:
        write(ev, value)
    except Exception as e:
        ev.fail(e, output)


def _add_rest(ev: Any, sum_: Addends, scope: Any, texts: list, value: Any) -> Any:
    """The sum from the first addend that is not text (`value`, after `texts`: text and safe
    text, added as safe_sum adds them) on."""
    i, adders = len(texts), sum_.adders  # each addend before it was text
    if texts:
        try:
            ev.budget.limits.check_size(sum(map(len, texts)))
        except Exception as e:
            ev.fail(e, adders[i - 1])
        left = safe_sum(ev, texts) if Markup in map(type, texts) else concat(texts)
        value = _add(ev, adders[i - 1], left, value)
    for j in range(i + 1, len(sum_.codes)):
        code = sum_.codes[j]
        right = sum_.texts[j] if code is None else code(ev, scope)
        value = _add(ev, adders[j - 1], value, right)
    return value


def _intercepted_sum(ev: Any, sum_: Addends, scope: Any) -> Any:
    """`a + b + c` with `+` intercepted: each addition through the environment's call_binop."""
    values = iter(zip(sum_.texts, sum_.codes))
    text, code = next(values)
    total = text if code is None else code(ev, scope)
    for adder, (text, code) in zip(sum_.adders, values):
        right = text if code is None else code(ev, scope)
        try:
            total = ev.env.call_binop(Context(ev, scope), "+", total, right)
        except Exception as e:
            ev.fail(e, adder)
    return total


def _add(ev: Any, node: ast.Binary, left: Any, right: Any) -> Any:
    try:
        return binary(ev, "+", left, right)
    except Exception as e:
        ev.fail(e, node)


@compiles(ast.Unary)
def compile_unary(node: ast.Unary) -> Code:
    if node.op == "not" and type(node.operand) is ast.Test:  # `not x is defined`: one test
        return compile_test(node.operand, not node.operand.negated)
    operand, op = compile_node(node.operand), node.op
    if op == "not":
        def not_(ev: Any, scope: Any) -> bool:
            value = operand(ev, scope)
            try:
                return False if value else True
            except Exception as e:  # a strict undefined refuses to be tested
                ev.fail(e, node)
        return not_

    def negate_(ev: Any, scope: Any) -> Any:
        value = operand(ev, scope)
        try:
            return negate(ev, scope, op, value)
        except Exception as e:
            ev.fail(e, node)
    return negate_


def negate(ev: Any, scope: Any, op: str, value: Any) -> Any:
    """`-x`, `+x` (both tiers): through the sandbox's interception where it intercepts `op`."""
    if ev.unops and op in ev.unops:
        return ev.env.call_unop(Context(ev, scope), op, value)
    return -value if op == "-" else +value


@compiles(ast.Logical)
def compile_logical(node: ast.Logical) -> Code:
    left, right = compile_node(node.left), compile_node(node.right)
    if node.op == "and":
        def and_(ev: Any, scope: Any) -> Any:
            value = left(ev, scope)
            try:
                if not value:
                    return value
            except Exception as e:  # a strict undefined refuses to be tested
                ev.fail(e, node)
            return right(ev, scope)
        return and_

    def or_(ev: Any, scope: Any) -> Any:
        value = left(ev, scope)
        try:
            if value:
                return value
        except Exception as e:
            ev.fail(e, node)
        return right(ev, scope)
    return or_


def truth(ev: Any, value: Any, node: Any) -> bool:
    """`bool(value)`, a failure (a strict undefined) raised at `node`."""
    try:
        return True if value else False
    except Exception as e:
        ev.fail(e, node)


@compiles(ast.Concat)
def compile_concat(node: ast.Concat) -> Code:
    items = tuple(compile_node(item) for item in node.items)
    return located(lambda ev, scope: join_printed(ev, [item(ev, scope) for item in items]), node)


@compiles(ast.Compare)
def compile_compare(node: ast.Compare) -> Code:
    """`a < b`, `a == b < c`: each comparison in turn (its right side evaluated only when the
    ones before it held), by `compare`."""
    first = compile_node(node.first)
    ops = tuple((op, constant(expr)) for op, expr in node.ops)

    def compare_(ev: Any, scope: Any) -> Any:
        left = first(ev, scope)
        result: Any = True
        for op, (is_const, right) in ops:
            if not is_const:
                right = right(ev, scope)
            try:
                result = compare(ev, op, left, right)
            except Exception as e:
                ev.fail(e, node)
            if not result:
                return result
            left = right
        return result
    return compare_


def compare(ev: Any, op: str, left: Any, right: Any) -> Any:
    """`left op right`: the one meaning of a comparison, for both tiers (the generated code
    compares plain numbers and short texts inline first): long strings and structures are
    charged for the scan (`'tool_calls' in message` is one hash of a short key); an operator
    an extension's rule builds takes the extension's function."""
    fn = COMPARE.get(op)
    if fn is None:
        fn = _extension_comparison(ev, op)
    if (op == "in" or op == "not in") and type(right) is dict and type(left) in HASHED_CHEAPLY:
        pass
    elif not cheap_to_compare(left, right):
        charge_compare(left, right)
    return fn(left, right)


# Keys whose hash costs Python one step.
HASHED_CHEAPLY = frozenset((int, float, bool, type(None), str, Input))


def _extension_comparison(ev: Any, op: str) -> Any:
    from ...errors import TemplateRuntimeError
    fn = ev.env.operators.get(op)
    if fn is None:
        raise TemplateRuntimeError(f"no operator {op!r}: a rule builds it, but no enabled "
                                   "extension defines it")
    return fn


@compiles(ast.CondExpr)
def compile_condexpr(node: ast.CondExpr) -> Code:
    test, then = compile_node(node.test), compile_node(node.then)
    if node.otherwise is None:  # always the lenient Undefined, whatever the environment's is
        message = (f"the inline if-expression on line {node.span.line} evaluated to false and "
                   "no else section was defined.")
        return lambda ev, scope: (then(ev, scope) if truth(ev, test(ev, scope), node)
                                  else Undefined(message))
    otherwise = compile_node(node.otherwise)
    return lambda ev, scope: (then(ev, scope) if truth(ev, test(ev, scope), node)
                              else otherwise(ev, scope))


__all__ = ["compare", "compile_sum", "negate", "operate", "truth"]
