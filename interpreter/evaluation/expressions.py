"""The operations expressions perform, with Jinja2's semantics: operators, calls, slices,
`~`. The compiled expressions (compiling/) call these; so do the handlers that
run at render time (call blocks, filter blocks) and extensions."""
from __future__ import annotations

import operator
from typing import Any, Callable

from ..values import marks
from ..grammar import ast
from ..values import sandbox
from ..errors import SecurityError
from ..values.formatting import percent_format
from ..values.markup import Markup, escape_text, is_safe, markup_add, markup_join, markup_mod
from ..values.marks import Input, Mixed, concat
from ..values.numbers import INPUT_NUMBERS, derived
from ..values.hostcalls import host_result
from ..metering import COPY, charge, charge_building, charge_walk
from ..values.runtime import BlockReference, Function, Joiner, LoopContext, Macro, Method
from ..values.undefined import Undefined
from ..values.printing import to_string


SMALL_COPY = 256  # characters or items copied without metering: fuel bounds the steps that do it


def slice_value(obj: Any, key: Any) -> Any:
    """`obj[a:b]` as Jinja2 compiles it (plain Python subscription; a failing slice raises).
    Safe text (Markup, safe marked) slices itself, so the slice stays safe."""
    kind = type(obj)
    result = marks.getitem(obj, key) if kind is str or kind is Input or kind is Mixed else obj[key]
    if isinstance(result, (str, list, tuple)) and len(result) > SMALL_COPY:
        charge(len(result) * COPY)
    return result


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
    if type(func) in OWN_CALLABLES:  # they keep marks; the host's functions are taken fail safe
        return func(*args, **kwargs)
    if not sandbox.is_safe_callable(func):  # the environment's (Jinja2's: no @unsafe callables)
        name = getattr(func, "__name__", None)  # never its repr: no host repr reaches a template
        raise SecurityError(f"{name if isinstance(name, str) else type(func).__name__!r} is not "
                            "safely callable")
    charge_walk(*args, *kwargs.values())  # what a host function may print, compare or hash
    return host_result(func, func(*args, **kwargs), args, kwargs)


OWN_CALLABLES = frozenset({Method, Function, LoopContext, Joiner, BlockReference})  # macros: above


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
_PLAIN_NUMBERS = frozenset((int, float))


def binary(ev, op: str, left: Any, right: Any) -> Any:
    """`left op right` with Jinja2's semantics and the environment's operator table."""
    if op == "+":  # the common cases: text and marked text, and plain safe text with text
        tl, tr = type(left), type(right)
        text = (tl is str or tl is Input or tl is Mixed) and (tr is str or tr is Input or tr is Mixed)
        if text or (tl is Markup and (tr is str or tr is Markup)) or (tr is Markup and tl is str):
            if len(left) + len(right) > SMALL_COPY:
                ev.budget.limits.check_size(len(left) + len(right))
                charge((len(left) + len(right)) * COPY)
            if not text:  # plain safe text and text (`"<x>"|safe + name`)
                return markup_add(left, right)
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
            charge_building(left, right, op)  # `*` and `+` build: what a render holds is bounded too
        result = fn(left, right)
        if type(result) in _PLAIN_NUMBERS and (type(left) in INPUT_NUMBERS or type(right) in INPUT_NUMBERS):
            # a number from input and a float (`n + 0.5`, `0.5 * n`): float's own operator
            # answered, and its result is input too (fail safe)
            return derived(result, left, right)
        return result
    return host_result(fn, fn(left, right), (left, right), None)  # an extension's operator


def safe_sum(ev: Any, pieces: Any) -> Any:
    """`a + b + c` of text and safe text, at least one piece safe (`'<x>'|safe + name`,
    `'<f>' + args|tojson + '</f>'`): what adding left to right gives, every piece that is not
    safe escaped (text added to safe text, or safe text added to it, is escaped, and what
    follows is safe). Plain pieces are escaped and joined at once; marked ones are added one by
    one, as binary adds them, for their marks."""
    if all(type(p) is str or type(p) is Markup for p in pieces):
        return str.__new__(Markup, "".join([p if type(p) is Markup else escape_text(p) for p in pieces]))
    value = pieces[0]
    for piece in pieces[1:]:
        value = binary(ev, "+", value, piece)
    return value


def join_printed(ev: Any, values: list) -> str:
    """`a ~ b ~ c`: each printed as `{{ }}` prints it, joined (escaping while autoescaping)."""
    pieces = [to_string(value) for value in values]
    size = sum(map(len, pieces))
    ev.budget.limits.check_size(size)
    if size > SMALL_COPY:
        charge(size * COPY)
    if ev.autoescape:
        return markup_join(pieces)
    return "".join(pieces) if all(type(p) is str for p in pieces) else concat(pieces)


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


SHORT_TEXT = 2048  # characters of text compared at once, what the fuel of a node pays for


def cheap_to_compare(left: Any, right: Any) -> bool:
    """Two numbers, or short text against anything (what fuel already pays for)."""
    tr = type(right)
    if tr is str or tr is Input or tr is Mixed:
        tl = type(left)
        texts = tl is str or tl is Input or tl is Mixed
        return len(right) <= SHORT_TEXT and (len(left) <= SHORT_TEXT if texts else True)
    return tr is int and type(left) is int


__all__ = ["BINARY", "COMPARE", "OWN_CALLABLES", "SHORT_TEXT", "binary", "call_value", "cheap_to_compare",
           "evaluate_arguments", "is_constant", "join_printed", "slice_value"]
