"""Expression handlers: `(evaluator, node, scope) -> value`, with Jinja2's semantics."""
from __future__ import annotations

import operator
from typing import Any, Callable

from . import marks
from .grammar import ast
from .errors import TemplateRuntimeError
from .formatting import percent_format
from .markup import is_safe, markup_add, markup_join, markup_mod
from .marks import Input, Mixed, concat
from .contexts import NOTHING, call_passing, context_if_wanted
from .hostcalls import host_result
from .metering import COPY, charge, charge_building, charge_compare, charge_walk
from .runtime import BlockReference, Function, Joiner, LoopContext, Macro, Method
from .undefined import Undefined
from .values import get_attribute, get_item, to_string


_SMALL = 256  # characters or items copied without metering: fuel bounds the steps that do it


def eval_const(ev, node: ast.Const, scope):
    return node.value


def eval_name(ev, node: ast.Name, scope):
    return ev.lookup(node.name, scope)


def eval_list(ev, node: ast.ListLiteral, scope):
    return [ev.eval(item, scope) for item in node.items]


def eval_tuple(ev, node: ast.TupleLiteral, scope):
    return tuple(ev.eval(item, scope) for item in node.items)


def eval_dict(ev, node: ast.DictLiteral, scope):
    result = {}
    for k, v in node.pairs:
        key = ev.eval(k, scope)
        if type(key) is tuple:  # hashing a tuple walks all of it
            charge_walk(key)
        result[key] = ev.eval(v, scope)
    return result


def eval_getattr(ev, node: ast.GetAttr, scope):
    return get_attribute(ev.eval(node.obj, scope), node.attr, ev.undefined, ev.mutable)


def eval_getitem(ev, node: ast.GetItem, scope):
    obj = ev.eval(node.obj, scope)
    if type(node.key) is ast.Slice and not is_constant(node.obj):
        # Jinja2 slices with plain Python subscription, except where its optimizer folded a
        # constant (then a failing slice is undefined, as any failing item access)
        key = ev.eval(node.key, scope)
        kind = type(obj)  # safe text (Markup, safe marked) slices itself: the slice stays safe
        result = marks.getitem(obj, key) if kind is str or kind is Input or kind is Mixed else obj[key]
        if isinstance(result, (str, list, tuple)) and len(result) > _SMALL:
            charge(len(result) * COPY)
        return result
    key = ev.eval(node.key, scope)
    if type(key) is tuple:
        charge_walk(key)
    return get_item(obj, key, ev.undefined, ev.mutable)


def eval_slice(ev, node: ast.Slice, scope):
    part = lambda n: None if n is None else ev.eval(n, scope)
    return slice(part(node.start), part(node.stop), part(node.step))


def is_constant(node: Any) -> bool:
    """Whether Jinja2's optimizer would fold `node` to a constant at compile time."""
    kind = type(node)
    if kind is ast.Const:
        return True
    if kind in (ast.ListLiteral, ast.TupleLiteral):
        return all(is_constant(item) for item in node.items)
    if kind is ast.DictLiteral:
        return all(is_constant(k) and is_constant(v) for k, v in node.pairs)
    if kind in (ast.Binary, ast.Logical):
        return is_constant(node.left) and is_constant(node.right)
    if kind is ast.Unary:
        return is_constant(node.operand)
    if kind is ast.Concat:
        return all(is_constant(item) for item in node.items)
    return False


# ---------------------------------------------------------------------------- calls

def evaluate_arguments(ev, arguments: ast.Arguments, scope) -> tuple[list, dict]:
    args = [ev.eval(a, scope) for a in arguments.args]
    kwargs = {name: ev.eval(value, scope) for name, value in arguments.kwargs}
    if arguments.star is not None:
        args.extend(ev.eval(arguments.star, scope))
    if arguments.dstar is not None:
        extra = ev.eval(arguments.dstar, scope)
        if not isinstance(extra, dict):
            raise TypeError("argument after ** must be a mapping")
        kwargs.update(extra)
    return args, kwargs


def call_value(func: Any, args: list, kwargs: dict, autoescape: Any = None) -> Any:
    """Call `func`. `autoescape`: whether the calling template autoescapes; a macro's result is
    safe when it does (Jinja2 passes macros the caller's eval context)."""
    if isinstance(func, Undefined):
        func.fail()
    if not callable(func):
        raise TypeError(f"{type(func).__name__!r} object is not callable")
    for key in kwargs:
        if not isinstance(key, str):
            raise TypeError("keywords must be strings")
    if type(func) is Macro:
        return func.invoke(func, tuple(args), kwargs, autoescape)
    if type(func) in _OWN_CALLABLES:  # they keep marks; the host's functions are taken fail safe
        return func(*args, **kwargs)
    from . import sandbox  # the environment's is_safe_callable (Jinja2's: no @unsafe callables)
    if not sandbox.is_safe_callable(func):
        from .errors import SecurityError
        name = getattr(func, "__name__", None)  # never its repr: no host repr reaches a template
        raise SecurityError(f"{name if isinstance(name, str) else type(func).__name__!r} is not "
                            "safely callable")
    charge_walk(*args, *kwargs.values())  # what a host function may print, compare or hash
    return host_result(func, func(*args, **kwargs), args, kwargs)


_OWN_CALLABLES = frozenset({Method, Function, LoopContext, Joiner, BlockReference})  # macros: above


def eval_call(ev, node: ast.Call, scope):
    func = ev.eval(node.func, scope)
    args, kwargs = evaluate_arguments(ev, node.arguments, scope)
    try:
        if (type(func) not in _OWN_CALLABLES and type(func) is not Macro and callable(func)
                and not isinstance(func, Undefined)):
            result = call_passing(func, ev, scope, args, kwargs)  # pass_context and the like
            if result is not NOTHING:
                return result
        return call_value(func, args, kwargs, ev.autoescape)
    except StopIteration:  # as Jinja2's Context.call: it would end a generator around the call
        return ev.undefined("value was undefined because a callable raised a StopIteration "
                            "exception")


def eval_filter(ev, node: ast.Filter, scope):
    value = ev.eval(node.value, scope)
    args, kwargs = evaluate_arguments(ev, node.arguments, scope)
    context = context_if_wanted(ev.env.filters.get(node.name), ev, scope)
    return ev.env.call_filter(node.name, value, args, kwargs, context, ev.eval_ctx)


def eval_test(ev, node: ast.Test, scope):
    value = ev.eval(node.value, scope)
    args, kwargs = evaluate_arguments(ev, node.arguments, scope)
    context = context_if_wanted(ev.env.tests.get(node.name), ev, scope)
    result = bool(ev.env.call_test(node.name, value, args, kwargs, context, ev.eval_ctx))
    return not result if node.negated else result


# ---------------------------------------------------------------------------- operators


BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
    "//": operator.floordiv,
    "%": operator.mod,
    "**": operator.pow,
}


_CORE_OPERATORS = frozenset(BINARY.values())


def eval_binary(ev, node: ast.Binary, scope):
    if node.op == "+" and type(node.left) is ast.Binary and node.left.op == "+":
        texts, value = add_up(ev, node, scope)  # a + b + c: joined once when all are text
        if value is not ALL_TEXT:
            return value
        ev.budget.limits.check_size(sum(map(len, texts)))
        return concat(texts)
    left = ev.eval(node.left, scope)
    return binary(ev, node.op, left, ev.eval(node.right, scope))


ALL_TEXT = object()


def add_up(ev, expr: ast.Binary, scope) -> tuple[list, Any]:
    """`a + b + c`, its addends evaluated left to right. While they are text (not safe text,
    which escapes what is added to it), they are collected instead of added: `(texts, ALL_TEXT)`
    when all are. From the first addend that is not text on, the rest are added as the
    expression tree adds them, in the same order: `([], sum)`."""
    operands, adders = _addends(ev, expr)
    texts: list[str] = []
    for i, operand in enumerate(operands):
        value = ev.eval(operand, scope)
        kind = type(value)
        if kind is str or kind is Input or kind is Mixed and not is_safe(value):
            texts.append(value)
            continue
        if texts:
            ev.budget.limits.check_size(sum(map(len, texts)))
            value = _add(ev, adders[i - 1], concat(texts), value)
        for j in range(i + 1, len(operands)):
            value = _add(ev, adders[j - 1], value, ev.eval(operands[j], scope))
        return [], value
    return texts, ALL_TEXT


def _addends(ev, expr: ast.Binary) -> tuple[list, list]:
    """`(a + b) + c` -> operands [a, b, c] and the `+` nodes that add b and c."""
    key = id(expr)
    found = ev.memo.get(key)
    if found is None:
        operands, adders = [], []
        while type(expr) is ast.Binary and expr.op == "+":
            operands.append(expr.right)
            adders.append(expr)
            expr = expr.left
        operands.append(expr)
        found = ev.memo[key] = (operands[::-1], adders[::-1])
    return found


def _add(ev, node: ast.Binary, left: Any, right: Any) -> Any:
    try:
        return binary(ev, "+", left, right)
    except Exception as e:
        ev.fail(e, node)


def binary(ev, op: str, left: Any, right: Any) -> Any:
    """`left op right` with Jinja2's semantics and the environment's operator table."""
    if op == "+":  # the common case: text and marked text (not safe text: see markup_add)
        tl, tr = type(left), type(right)
        if ((tl is str or tl is Input or tl is Mixed and not is_safe(left))
                and (tr is str or tr is Input or tr is Mixed and not is_safe(right))):
            if len(left) + len(right) > _SMALL:
                ev.budget.limits.check_size(len(left) + len(right))
                charge((len(left) + len(right)) * COPY)
            return left + right if tl is str and tr is str else marks.concat2(left, right)
    if op == "+" and isinstance(left, (str, list, tuple)) and isinstance(right, (str, list, tuple)):
        ev.budget.limits.check_size(len(left) + len(right))
        if isinstance(left, (list, tuple)):
            ev.budget.limits.check_items(len(left) + len(right))
    if op == "+" and not isinstance(left, Undefined) and (is_safe(left) or is_safe(right)):
        return markup_add(left, right)  # safe text escapes what is added to it
    if op == "%" and isinstance(left, str):
        return markup_mod(left, right) if is_safe(left) else percent_format(left, right)
    if op == "**":
        ev.env.limits.check_power(left, right)
    elif op == "*":
        ev.env.limits.check_repeat(left, right)
        ev.env.limits.check_product(left, right)
    fn = ev.env.operators[op]
    if fn in _CORE_OPERATORS:
        if isinstance(left, (str, list, tuple)) or isinstance(right, (str, list, tuple)):
            charge_building(left, right)  # `*` and `+` build: what a render holds is bounded too
        return fn(left, right)
    return host_result(fn, fn(left, right), (left, right), None)  # an extension's operator


def eval_unary(ev, node: ast.Unary, scope):
    value = ev.eval(node.operand, scope)
    if node.op == "not":
        return not value
    return -value if node.op == "-" else +value


def eval_logical(ev, node: ast.Logical, scope):
    left = ev.eval(node.left, scope)
    if node.op == "and":
        return ev.eval(node.right, scope) if left else left
    return left if left else ev.eval(node.right, scope)


def eval_concat(ev, node: ast.Concat, scope):
    pieces = [to_string(ev.eval(item, scope)) for item in node.items]
    size = sum(map(len, pieces))
    ev.budget.limits.check_size(size)
    if size > _SMALL:
        charge(size * COPY)
    return markup_join(pieces) if ev.autoescape else concat(pieces)


COMPARE: dict[str, Callable[[Any, Any], Any]] = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "in": lambda a, b: a in b,
    "not in": lambda a, b: a not in b,
}


def eval_compare(ev, node: ast.Compare, scope):
    """`a < b < c` is `a < b and b < c` with `b` evaluated once, as in Python, to which Jinja2
    compiles it: the first false result, else the last. An extension's comparison operator
    (a terminal added to `comp_op`, its function in `Extension.operators`) chains the same way."""
    left = ev.eval(node.first, scope)
    result: Any = True
    for op, expr in node.ops:
        right = ev.eval(expr, scope)
        compare = COMPARE.get(op) or ev.env.operators.get(op)
        if compare is None:
            raise TemplateRuntimeError(f"no operator {op!r}: a rule builds it, but no enabled "
                                       "extension defines it")
        if not _cheap_to_compare(left, right):
            charge_compare(left, right)  # long strings scanned, structures walked: metered
        result = compare(left, right)
        if not result:
            return result
        left = right
    return result


def _cheap_to_compare(left: Any, right: Any) -> bool:
    """Two numbers, or short text against anything (what fuel already pays for)."""
    tr = type(right)
    if tr is str or tr is Input or tr is Mixed:
        tl = type(left)
        return len(right) <= 2048 and (len(left) <= 2048 if tl is str or tl is Input or tl is Mixed
                                       else True)
    return tr is int and type(left) is int


def eval_condexpr(ev, node: ast.CondExpr, scope):
    if ev.eval(node.test, scope):
        return ev.eval(node.then, scope)
    if node.otherwise is None:  # always the lenient Undefined, whatever the environment's is
        return Undefined("the inline if-expression on line "
                            f"{node.span.line} evaluated to false and no else section was defined.")
    return ev.eval(node.otherwise, scope)


EXPRESSIONS: dict[type, Callable] = {
    ast.Const: eval_const,
    ast.Name: eval_name,
    ast.ListLiteral: eval_list,
    ast.TupleLiteral: eval_tuple,
    ast.DictLiteral: eval_dict,
    ast.GetAttr: eval_getattr,
    ast.GetItem: eval_getitem,
    ast.Slice: eval_slice,
    ast.Call: eval_call,
    ast.Filter: eval_filter,
    ast.Test: eval_test,
    ast.Binary: eval_binary,
    ast.Unary: eval_unary,
    ast.Logical: eval_logical,
    ast.Concat: eval_concat,
    ast.Compare: eval_compare,
    ast.CondExpr: eval_condexpr,
}

__all__ = ["EXPRESSIONS", "binary", "call_value", "evaluate_arguments", "is_constant"]
