"""Compilers of calls, filters and tests.

A call gets its function and calls it by `call_function` (a string's method through
get_attribute's `Method`: the generated code calls it at once); a builtin filter or test is
called as it is; `name is defined` searches the scope without making an undefined. A host's
own function takes the environment's general call (what to pass first, metering, the fail-safe
rule for marks): expressions.call_value, Environment.call_filter / call_test.
"""
from __future__ import annotations

from typing import Any, Optional

from ...builtins.filters import FILTERS
from ...builtins.tests import BUILTIN_TESTS, test_defined, test_undefined
from ..contexts import NOTHING, call_passing, context_if_wanted, quiet_context
from ...environment_tools import pass_arg_of
from ..expressions import OWN_CALLABLES, call_value
from ...grammar import ast
from ...values.hostcalls import keeps_marks_declared
from ...values.runtime import Macro
from ...values.undefined import MISSING, Undefined
from .access import ABSENT as _ABSENT
from .core import Code, compile_node, compiles


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
    func = node.func  # `text.strip()`: get_attribute's Method, called (generated code calls
    func_code = compile_node(func)  # a str's or dict's method at once: codegen/calls.py)

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


@compiles(ast.Filter)
def compile_filter(node: ast.Filter) -> Code:
    value_code, arguments, name = compile_node(node.value), compile_arguments(node.arguments), node.name
    bare = node.arguments == ast.NO_ARGUMENTS  # `|trim`
    seen = [(None, False)]  # the filter last met here, and whether it is plain_function

    def filter_(ev: Any, scope: Any) -> Any:
        value = value_code(ev, scope)
        args, kwargs = ([], {}) if bare else arguments(ev, scope)
        try:
            env = ev.env
            fn = env.filters.get(name)
            last, plain = seen[0]
            if fn is not last:
                plain = fn is not None and plain_function(fn)
                seen[0] = fn, plain
            if plain:  # a builtin filter: called as it is
                return fn(value) if bare else fn(value, *args, **kwargs)
            return filter_value(ev, scope, name, value, args, kwargs)
        except Exception as e:
            ev.fail(e, node)
    return filter_


def filter_value(ev: Any, scope: Any, name: str, value: Any, args: list, kwargs: dict) -> Any:
    """`value | name(...)` through the environment (both tiers, past a builtin's direct call):
    what the filter asks to be passed first, the fail-safe rule for marks, host metering. A
    builtin that takes the environment or the eval context first (`replace`, `join`, `string`,
    `selectattr`) is called with it at once: it keeps marks and meters itself, so the general
    call would only pass the same first argument and return its result as it is."""
    env = ev.env
    fn = env.filters.get(name)
    try:
        passed = _PASSING_BUILTINS.get(fn)
    except TypeError:  # an unhashable callable object: the host's own
        passed = None
    if passed is not None:
        first = env if passed == "environment" else ev.eval_ctx or quiet_context(env)
        return fn(first, value, *args, **kwargs)
    context = context_if_wanted(fn, ev, scope)
    return env.call_filter(name, value, args, kwargs, context, ev.eval_ctx)


def test_value(ev: Any, scope: Any, name: str, value: Any, args: list, kwargs: dict) -> bool:
    """`value is name(...)` through the environment (both tiers, past a builtin's direct call)."""
    env = ev.env
    context = context_if_wanted(env.tests.get(name), ev, scope)
    return bool(env.call_test(name, value, args, kwargs, context, ev.eval_ctx))


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
    bare = node.arguments == ast.NO_ARGUMENTS  # `is string`
    seen = [(None, False)]  # the test last met here, and whether it is plain_function

    def test(ev: Any, scope: Any) -> bool:
        value = value_code(ev, scope)
        args, kwargs = ([], {}) if bare else arguments(ev, scope)
        try:
            env = ev.env
            fn = env.tests.get(name)
            last, plain = seen[0]
            if fn is not last:
                plain = fn is not None and plain_function(fn, _PLAIN_TESTS)
                seen[0] = fn, plain
            if plain:
                result = True if (fn(value) if bare else fn(value, *args, **kwargs)) else False
            else:
                result = test_value(ev, scope, name, value, args, kwargs)
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
        plain = pass_arg_of(fn) is None and (fn in BUILTIN_TESTS if table is _PLAIN_TESTS
                                             else keeps_marks_declared(fn))
        if len(table) < 4096:
            table[fn] = plain
    return plain


_PLAIN_FILTERS: dict = {}
_PASSING_BUILTINS = {fn: pass_arg_of(fn) for fn in FILTERS.values()
                     if pass_arg_of(fn) in ("environment", "eval_context") and keeps_marks_declared(fn)}
_PLAIN_TESTS: dict = {}


__all__ = ["call_function", "compile_arguments", "compile_test", "filter_value", "plain_function", "test_value"]
