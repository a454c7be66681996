"""Expression compilers: each returns a closure computing the expression with Jinja2's semantics.

The common shapes get direct code: a name walks the scope chain inline, `message['role']` reads
a plain dict at once, `x.strip()` calls the string method without making a bound method, a
constant operand is no call at all. Everything else goes through the same helpers the rest of
the engine uses (values.get_attribute, expressions.binary, call_value, the environment's
filter and test calls), so there is one meaning of each operation.
"""
from __future__ import annotations

from typing import Any, Optional

from ..contexts import NOTHING, call_passing, context_if_wanted
from ..environment_tools import pass_arg_of
from ..hostcalls import keeps_marks_declared
from ..expressions import (BINARY, COMPARE, OWN_CALLABLES, binary, call_value, cheap_to_compare,
                           is_constant, join_printed, slice_value)
from ..grammar import ast
from ..markup import is_safe
from ..marks import Input, Mixed, concat
from ..metering import charge_compare, charge_walk
from ..methods import DICT_METHODS, MUTATING_METHODS, STR_METHODS
from ..runtime import Macro
from ..builtin_tests import TESTS, test_defined, test_undefined
from ..undefined import MISSING, Undefined
from ..values import get_attribute, get_item
from .core import Code, compile_node, compiles

_ABSENT: Any = object()
# The names that mean something else than an item on a plain dict (methods, refused mutators).
DICT_ATTRIBUTES = frozenset(DICT_METHODS).union(*(names for _, names in MUTATING_METHODS))


def constant(node: Any) -> tuple[bool, Any]:
    """(True, value) for a literal, else (False, its code): an operand that costs no call."""
    if type(node) is ast.Const:
        return True, node.value
    return False, compile_node(node)


@compiles(ast.Const)
def compile_const(node: ast.Const) -> Code:
    value = node.value
    return lambda ev, scope: value


@compiles(ast.Name)
def compile_name(node: ast.Name) -> Code:
    name = node.name

    def lookup(ev: Any, scope: Any) -> Any:
        while scope is not None:
            value = scope.vars.get(name, _ABSENT)
            if value is not _ABSENT:
                if value is MISSING:  # owned by this frame, not assigned yet
                    return ev.lookup_missing(name)
                return value
            scope = scope.parent
        return ev.lookup_missing(name)
    return lookup


@compiles(ast.ListLiteral)
def compile_list(node: ast.ListLiteral) -> Code:
    items = tuple(compile_node(item) for item in node.items)
    return lambda ev, scope: [item(ev, scope) for item in items]


@compiles(ast.TupleLiteral)
def compile_tuple(node: ast.TupleLiteral) -> Code:
    items = tuple(compile_node(item) for item in node.items)
    return lambda ev, scope: tuple([item(ev, scope) for item in items])


@compiles(ast.DictLiteral)
def compile_dict(node: ast.DictLiteral) -> Code:
    pairs = tuple((compile_node(k), compile_node(v)) for k, v in node.pairs)

    def build(ev: Any, scope: Any) -> dict:
        result = {}
        for key_code, value_code in pairs:
            key = key_code(ev, scope)
            if type(key) is tuple:  # hashing a tuple walks all of it
                charge_walk(key)
            result[key] = value_code(ev, scope)
        return result
    return located(build, node)


def located(code: Code, node: Any) -> Code:
    """`code`, its failures raised at `node` (for closures that call what may raise)."""
    def run(ev: Any, scope: Any) -> Any:
        try:
            return code(ev, scope)
        except Exception as e:
            ev.fail(e, node)
    return run


# ---------------------------------------------------------------------------- access

@compiles(ast.GetAttr)
def compile_getattr(node: ast.GetAttr) -> Code:
    obj_code, attr = compile_node(node.obj), node.attr
    plain = type(attr) is str and attr[:1] != "_" and attr not in DICT_ATTRIBUTES
    if type(node.obj) is ast.Name:
        return _variable_attribute(node, node.obj.name, plain)

    def getattr_(ev: Any, scope: Any) -> Any:
        obj = obj_code(ev, scope)
        try:
            if plain and type(obj) is dict:  # `message.content`: an item of plain data
                value = obj.get(attr, _ABSENT)
                if value is not _ABSENT:
                    return value
            return get_attribute(obj, attr, ev.undefined, ev.mutable)
        except Exception as e:
            ev.fail(e, node)
    return getattr_


@compiles(ast.GetItem)
def compile_getitem(node: ast.GetItem) -> Code:
    obj_code = compile_node(node.obj)
    if type(node.key) is ast.Slice and not is_constant(node.obj):
        key_code = compile_node(node.key)
        return located(lambda ev, scope: slice_value(obj_code(ev, scope), key_code(ev, scope)),
                       node)
    is_const, key = constant(node.key)
    if is_const and type(key) is not tuple and type(node.obj) is ast.Name:
        return _variable_item(node, node.obj.name, key)
    if is_const and type(key) is not tuple:
        def const_item(ev: Any, scope: Any) -> Any:
            obj = obj_code(ev, scope)
            try:
                if type(obj) is dict:  # `message['role']`
                    value = obj.get(key, _ABSENT)
                    if value is not _ABSENT:
                        return value
                return get_item(obj, key, ev.undefined, ev.mutable)
            except Exception as e:
                ev.fail(e, node)
        return const_item

    def item(ev: Any, scope: Any) -> Any:
        obj = obj_code(ev, scope)
        k = key if is_const else key(ev, scope)
        try:
            if type(k) is tuple:
                charge_walk(k)
            return get_item(obj, k, ev.undefined, ev.mutable)
        except Exception as e:
            ev.fail(e, node)
    return item


# `message['role']` and `message.content`, the most common expressions of chat templates: the
# variable is looked up in the same closure (compile_name's walk, inlined).

def _variable_item(node: ast.GetItem, name: str, key: Any) -> Code:
    def variable_item(ev: Any, scope: Any) -> Any:
        while scope is not None:
            obj = scope.vars.get(name, _ABSENT)
            if obj is not _ABSENT:
                break
            scope = scope.parent
        if obj is _ABSENT or obj is MISSING:
            obj = ev.lookup_missing(name)
        try:
            if type(obj) is dict:
                value = obj.get(key, _ABSENT)
                if value is not _ABSENT:
                    return value
            return get_item(obj, key, ev.undefined, ev.mutable)
        except Exception as e:
            ev.fail(e, node)
    return variable_item


def _variable_attribute(node: ast.GetAttr, name: str, plain: bool) -> Code:
    attr = node.attr

    def variable_attribute(ev: Any, scope: Any) -> Any:
        while scope is not None:
            obj = scope.vars.get(name, _ABSENT)
            if obj is not _ABSENT:
                break
            scope = scope.parent
        if obj is _ABSENT or obj is MISSING:
            obj = ev.lookup_missing(name)
        try:
            if plain and type(obj) is dict:
                value = obj.get(attr, _ABSENT)
                if value is not _ABSENT:
                    return value
            return get_attribute(obj, attr, ev.undefined, ev.mutable)
        except Exception as e:
            ev.fail(e, node)
    return variable_attribute


@compiles(ast.Slice)
def compile_slice(node: ast.Slice) -> Code:
    parts = tuple(None if n is None else compile_node(n) for n in (node.start, node.stop, node.step))
    start, stop, step = parts
    return lambda ev, scope: slice(start and start(ev, scope), stop and stop(ev, scope),
                                   step and step(ev, scope))


# ---------------------------------------------------------------------------- calls

def compile_arguments(arguments: ast.Arguments) -> Code:
    """A closure returning `(args, kwargs)`."""
    args = tuple(compile_node(a) for a in arguments.args)
    kwargs = tuple((name, compile_node(value)) for name, value in arguments.kwargs)
    star = None if arguments.star is None else compile_node(arguments.star)
    dstar = None if arguments.dstar is None else compile_node(arguments.dstar)
    if not kwargs and star is None and dstar is None:
        if not args:
            return lambda ev, scope: ([], {})
        return lambda ev, scope: ([a(ev, scope) for a in args], {})

    def evaluate(ev: Any, scope: Any) -> tuple[list, dict]:
        values = [a(ev, scope) for a in args]
        named = {name: value(ev, scope) for name, value in kwargs}
        if star is not None:
            values.extend(star(ev, scope))
        if dstar is not None:
            extra = dstar(ev, scope)
            if not isinstance(extra, dict):
                raise TypeError("argument after ** must be a mapping")
            named.update(extra)
        return values, named
    return evaluate


@compiles(ast.Call)
def compile_call(node: ast.Call) -> Code:
    arguments = compile_arguments(node.arguments)
    func = node.func
    if type(func) is ast.GetAttr and type(func.attr) is str and func.attr in STR_METHODS:
        return _string_method_call(node, func, arguments)
    func_code = compile_node(func)

    def call(ev: Any, scope: Any) -> Any:
        fn = func_code(ev, scope)
        args, kwargs = arguments(ev, scope)
        try:
            return call_function(ev, scope, fn, args, kwargs)
        except Exception as e:
            ev.fail(e, node)
    return call


def call_function(ev: Any, scope: Any, fn: Any, args: list, kwargs: dict) -> Any:
    """`fn(*args, **kwargs)` as a template calls it (eval_call's rules)."""
    kind = type(fn)
    try:
        if (kind not in OWN_CALLABLES and kind is not Macro and callable(fn)
                and not isinstance(fn, Undefined)):
            result = call_passing(fn, ev, scope, args, kwargs)  # pass_context and the like
            if result is not NOTHING:
                return result
        return call_value(fn, args, kwargs, ev.autoescape)
    except StopIteration:  # as Jinja2's Context.call: it would end a generator around the call
        return ev.undefined("value was undefined because a callable raised a StopIteration "
                            "exception")


def _string_method_call(node: ast.Call, func: ast.GetAttr, arguments: Code) -> Code:
    """`text.strip()`: when the receiver is a string, its method is called at once (the function
    get_attribute would wrap in a Method); any other receiver takes the general path."""
    receiver, attr = compile_node(func.obj), func.attr
    method = STR_METHODS[attr]

    def call(ev: Any, scope: Any) -> Any:
        obj = receiver(ev, scope)
        kind = type(obj)
        if kind is not str and kind is not Input and kind is not Mixed:
            try:
                fn = get_attribute(obj, attr, ev.undefined, ev.mutable)
            except Exception as e:
                ev.fail(e, func)
            args, kwargs = arguments(ev, scope)
            try:
                return call_function(ev, scope, fn, args, kwargs)
            except Exception as e:
                ev.fail(e, node)
        args, kwargs = arguments(ev, scope)
        try:
            return method(obj, *args, **kwargs)
        except StopIteration:
            return ev.undefined("value was undefined because a callable raised a StopIteration "
                                "exception")
        except Exception as e:
            ev.fail(e, node)
    return call


@compiles(ast.Filter)
def compile_filter(node: ast.Filter) -> Code:
    value_code, arguments, name = compile_node(node.value), compile_arguments(node.arguments), node.name

    def filter_(ev: Any, scope: Any) -> Any:
        value = value_code(ev, scope)
        args, kwargs = arguments(ev, scope)
        try:
            env = ev.env
            fn = env.filters.get(name)
            if fn is not None and plain_function(fn):  # a builtin filter: called as it is
                return fn(value, *args, **kwargs)
            context = context_if_wanted(fn, ev, scope)
            return env.call_filter(name, value, args, kwargs, context, ev.eval_ctx)
        except Exception as e:
            ev.fail(e, node)
    return filter_


@compiles(ast.Test)
def compile_test(node: ast.Test, negated: Optional[bool] = None) -> Code:
    """`value is name(args)`; `negated` given when a `not` around the test was folded into it."""
    negated = node.negated if negated is None else negated
    general = _test_closure(node, negated)
    if type(node.value) is ast.Name and node.name in _DEFINEDNESS and node.arguments == ast.NO_ARGUMENTS:
        return _definedness(node, negated, general)
    return general


def _test_closure(node: ast.Test, negated: bool) -> Code:
    value_code, arguments, name = compile_node(node.value), compile_arguments(node.arguments), node.name

    def test(ev: Any, scope: Any) -> bool:
        value = value_code(ev, scope)
        args, kwargs = arguments(ev, scope)
        try:
            env = ev.env
            fn = env.tests.get(name)
            if fn is not None and plain_function(fn, _PLAIN_TESTS):
                result = True if fn(value, *args, **kwargs) else False
            else:
                context = context_if_wanted(fn, ev, scope)
                result = bool(env.call_test(name, value, args, kwargs, context, ev.eval_ctx))
        except Exception as e:
            ev.fail(e, node)
        return not result if negated else result
    return test


_DEFINEDNESS = {"defined": test_defined, "undefined": test_undefined}


def _definedness(node: ast.Test, negated: bool, general: Code) -> Code:
    """`name is defined` (or `undefined`), the guard chat templates open with: the scope is
    searched without making an undefined for a missing name. Only while the environment's test
    is the builtin one; a test of the embedder's own takes the general path."""
    name, test_name, builtin = node.value.name, node.name, _DEFINEDNESS[node.name]
    wanted = (test_name == "defined") != negated  # the result when the name is defined

    def definedness(ev: Any, scope: Any) -> bool:
        if ev.env.tests.get(test_name) is not builtin:
            return general(ev, scope)
        while scope is not None:
            value = scope.vars.get(name, _ABSENT)
            if value is not _ABSENT:
                if value is MISSING:  # owned by the frame, not assigned yet: undefined
                    break
                return wanted if not isinstance(value, Undefined) else not wanted
            scope = scope.parent
        if name == "self" and ev.chain is not None:  # the template's blocks
            return wanted
        return not wanted
    return definedness


def plain_function(fn: Any, known: Optional[dict] = None) -> bool:
    """Whether a filter is called with its arguments only and keeps marks itself (the
    builtins): then the environment's general call (what to pass first, the fail-safe rule
    and the metering of host functions) has nothing to do. With `_PLAIN_TESTS`: whether a test
    is a builtin one called with its arguments only. Known by identity, once per function."""
    table = _PLAIN_FILTERS if known is None else known
    try:
        plain = table.get(fn)
    except TypeError:  # an unhashable callable object
        return False
    if plain is None:
        plain = pass_arg_of(fn) is None and (fn in _BUILTIN_TESTS if table is _PLAIN_TESTS
                                             else keeps_marks_declared(fn))
        if len(table) < 4096:
            table[fn] = plain
    return plain


_PLAIN_FILTERS: dict = {}
_PLAIN_TESTS: dict = {}
_BUILTIN_TESTS = frozenset(TESTS.values())


# ---------------------------------------------------------------------------- operators

@compiles(ast.Binary)
def compile_binary(node: ast.Binary) -> Code:
    if node.op == "+" and type(node.left) is ast.Binary and node.left.op == "+":
        return compile_sum(node)
    left, right, op = compile_node(node.left), compile_node(node.right), node.op

    def operate(ev: Any, scope: Any) -> Any:
        a = left(ev, scope)
        b = right(ev, scope)
        try:
            return binary(ev, op, a, b)
        except Exception as e:
            ev.fail(e, node)
    return operate


def addends(expr: ast.Binary) -> tuple[list, list]:
    """`(a + b) + c` -> operands [a, b, c] and the `+` nodes that add b and c."""
    operands, adders = [], []
    while type(expr) is ast.Binary and expr.op == "+":
        operands.append(expr.right)
        adders.append(expr)
        expr = expr.left
    operands.append(expr)
    return operands[::-1], adders[::-1]


def compile_addends(expr: ast.Binary) -> "Addends":
    return Addends(expr)


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


def compile_sum(node: ast.Binary) -> Code:
    """`a + b + c`: the addends evaluated left to right and joined once while all are text."""
    sum_ = Addends(node)

    def add(ev: Any, scope: Any) -> Any:
        texts, size, value = add_texts(ev, sum_, scope)
        if value is not ALL_TEXT:
            return value
        try:
            ev.budget.limits.check_size(size)
        except Exception as e:
            ev.fail(e, node)
        return concat(texts)
    return add


ALL_TEXT: Any = object()


def add_texts(ev: Any, sum_: Addends, scope: Any) -> tuple[list, int, Any]:
    """`a + b + c`, its addends evaluated left to right. While they are text (not safe text,
    which escapes what is added to it), they are collected instead of added: `(texts, size,
    ALL_TEXT)` when all are. From the first addend that is not text on, the rest are added as
    the expression tree adds them, in the same order: `([], 0, sum)`."""
    texts = sum_.texts[:]
    size = sum_.size
    for i, code in sum_.dynamic:
        value = code(ev, scope)
        kind = type(value)
        if kind is str or kind is Input or kind is Mixed and not is_safe(value):
            texts[i] = value
            size += len(value)
            continue
        return [], 0, _add_rest(ev, sum_, scope, texts[:i], value)
    return texts, size, ALL_TEXT


def _add_rest(ev: Any, sum_: Addends, scope: Any, texts: list, value: Any) -> Any:
    """The sum from the first addend that is not text (`value`, after `texts`) on."""
    i, adders = len(texts), sum_.adders  # each addend before it was text
    if texts:
        try:
            ev.budget.limits.check_size(sum(map(len, texts)))
        except Exception as e:
            ev.fail(e, adders[i - 1])
        value = _add(ev, adders[i - 1], concat(texts), value)
    for j in range(i + 1, len(sum_.codes)):
        code = sum_.codes[j]
        right = sum_.texts[j] if code is None else code(ev, scope)
        value = _add(ev, adders[j - 1], value, right)
    return value


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
        return lambda ev, scope: not truth(ev, operand(ev, scope), node)

    def negate(ev: Any, scope: Any) -> Any:
        value = operand(ev, scope)
        try:
            return -value if op == "-" else +value
        except Exception as e:
            ev.fail(e, node)
    return negate


@compiles(ast.Logical)
def compile_logical(node: ast.Logical) -> Code:
    left, right = compile_node(node.left), compile_node(node.right)
    if node.op == "and":
        def and_(ev: Any, scope: Any) -> Any:
            value = left(ev, scope)
            return right(ev, scope) if truth(ev, value, node) else value
        return and_

    def or_(ev: Any, scope: Any) -> Any:
        value = left(ev, scope)
        return value if truth(ev, value, node) else right(ev, scope)
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
    first = compile_node(node.first)
    ops = tuple((op, COMPARE.get(op), constant(expr), op == "in" or op == "not in")
                for op, expr in node.ops)

    def compare(ev: Any, scope: Any) -> Any:
        left = first(ev, scope)
        result: Any = True
        for op, fn, (is_const, right), membership in ops:
            if not is_const:
                right = right(ev, scope)
            try:
                if fn is None:
                    fn = _extension_comparison(ev, op)
                if membership and type(right) is dict and type(left) in _HASHED_CHEAPLY:
                    pass  # `'tool_calls' in message`: one hash of a short key
                elif not cheap_to_compare(left, right):
                    charge_compare(left, right)  # long strings scanned, structures walked
                result = fn(left, right)
            except Exception as e:
                ev.fail(e, node)
            if not result:
                return result
            left = right
        return result
    return compare


_HASHED_CHEAPLY = frozenset((int, float, bool, type(None), str, Input))


def _extension_comparison(ev: Any, op: str) -> Any:
    from ..errors import TemplateRuntimeError
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


__all__ = ["ALL_TEXT", "Addends", "BINARY", "add_texts", "call_function", "compile_arguments",
           "constant"]
