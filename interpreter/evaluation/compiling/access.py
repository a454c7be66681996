"""Compilers of literals, names, and item and attribute access.

A name walks the scope chain inline; `message['role']` and `message.content`, the commonest
expressions of chat templates, look the variable up in the same closure; every read goes through
values.get_attribute / get_item, the one meaning of access (the generated code reads plain dicts
and lists inline first, codegen/expressions.py).
"""
from __future__ import annotations

from typing import Any

from ..expressions import is_constant, slice_value
from ...grammar import ast
from ...metering import charge_walk
from ...values.marks import Input
from ...values.numbers import InputInt
from ...values.methods import DICT_METHODS, MUTATING_METHODS
from ...values.runtime import LoopContext
from ...values.undefined import MISSING
from ...values.access import get_attribute, get_item
from .core import Code, compile_node, compiles

ABSENT: Any = object()
_ABSENT = ABSENT
# The names that mean something else than an item on a plain dict (methods, refused mutators).
DICT_ATTRIBUTES = frozenset(DICT_METHODS).union(*(names for _, names in MUTATING_METHODS))
# The loop variable's attributes that are values (its methods, cycle and changed, are not).
LOOP_PROPERTIES = frozenset(LoopContext.jinja_attributes - {"cycle", "changed"})


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

@compiles(ast.GetAttr, ast.GetItem)
def compile_access(node: Any) -> Code:
    """`a.b` and `a[b]`, each step read in general (a path of plain reads, `messages[i]['role']`,
    is walked inline by the generated code: codegen/expressions.py's `path`)."""
    return _compile_getattr(node) if type(node) is ast.GetAttr else _compile_getitem(node)


def _compile_getattr(node: ast.GetAttr) -> Code:
    attr = node.attr
    if type(node.obj) is ast.Name:
        return _variable_read(node, node.obj.name, attr, get_attribute)
    obj_code = compile_node(node.obj)

    def getattr_(ev: Any, scope: Any) -> Any:
        obj = obj_code(ev, scope)
        try:
            return get_attribute(obj, attr, ev.undefined, ev.mutable)
        except Exception as e:
            ev.fail(e, node)
    return getattr_


def _compile_getitem(node: ast.GetItem) -> Code:
    if type(node.key) is ast.Slice and not is_constant(node.obj):
        obj_code, key_code = compile_node(node.obj), compile_node(node.key)
        return located(lambda ev, scope: slice_value(obj_code(ev, scope), key_code(ev, scope)),
                       node)
    is_const, key = constant(node.key)
    if is_const and type(key) is not tuple and type(node.obj) is ast.Name:
        return _variable_read(node, node.obj.name, key, get_item)
    obj_code = compile_node(node.obj)

    def item(ev: Any, scope: Any) -> Any:
        obj = obj_code(ev, scope)
        k = key if is_const else key(ev, scope)
        try:
            return item_of(ev, obj, k)
        except Exception as e:
            ev.fail(e, node)
    return item


def item_of(ev: Any, obj: Any, key: Any) -> Any:
    """`obj[key]`: a list's index or a plain dict's item at once, anything else by get_item."""
    kind = type(key)
    if (kind is int or kind is InputInt) and type(obj) is list and -len(obj) <= key < len(obj):
        return obj[key]  # `messages[i]` (a count of input messages is input: InputInt)
    if kind is tuple:
        charge_walk(key)  # hashing a tuple walks all of it
    elif type(obj) is dict and (kind is str or kind is int):
        value = obj.get(key, _ABSENT)
        if value is not _ABSENT:
            return value
    return get_item(obj, key, ev.undefined, ev.mutable)


# `message['role']` and `message.content`, the most common expressions of chat templates: the
# variable is looked up in the same closure (compile_name's walk, inlined).

def _variable_read(node: Any, name: str, key: Any, read: Any) -> Code:
    """`name[key]` (`read` is get_item) or `name.key` (get_attribute): the variable looked up
    in the same closure, then read in general (the generated code reads plain data inline
    first: codegen/expressions.py's `item`)."""

    def variable_read(ev: Any, scope: Any) -> Any:
        while scope is not None:
            obj = scope.vars.get(name, _ABSENT)
            if obj is not _ABSENT:
                break
            scope = scope.parent
        if obj is _ABSENT or obj is MISSING:
            obj = ev.lookup_missing(name)
        try:
            return read(obj, key, ev.undefined, ev.mutable)
        except Exception as e:
            ev.fail(e, node)
    return variable_read


def plain_read(node: Any) -> tuple[Any, Any]:
    """(variable, key) when `node` reads a literal key of a variable (`m['role']`, `m.role`,
    the attribute not a dict method's name), else (None, None)."""
    kind = type(node)
    if kind is ast.GetItem and type(node.obj) is ast.Name and type(node.key) is ast.Const \
            and type(node.key.value) in (str, int):
        return node.obj.name, node.key.value
    if kind is ast.GetAttr and type(node.obj) is ast.Name and type(node.attr) is str \
            and node.attr[:1] != "_" and node.attr not in DICT_ATTRIBUTES:
        return node.obj.name, node.attr
    return None, None


def read_path(node: Any) -> Any:
    """`(variable, ((key, key_is_a_name), ...))` when `node` reads a chain of literal keys,
    variables' values as keys, or attributes that are not a dict method's name, from a
    variable (`messages[i]['role']`); else None."""
    steps = []
    while True:
        kind = type(node)
        if kind is ast.GetItem:
            key = node.key
            if type(key) is ast.Const and type(key.value) in (str, int):
                steps.append((key.value, False))
            elif type(key) is ast.Name:
                steps.append((key.name, True))
            else:
                return None
        elif kind is ast.GetAttr:
            attr = node.attr
            if type(attr) is not str or attr[:1] == "_" or attr in DICT_ATTRIBUTES:
                return None
            steps.append((attr, False))
        else:
            break
        node = node.obj
    if type(node) is not ast.Name or not steps:
        return None
    return node.name, tuple(reversed(steps))


_DICT_KEYS = frozenset((str, int, Input, InputInt))
_INDICES = frozenset((int, InputInt))


def path_code(path: tuple, general: Any) -> Code:
    """The closure reading `path` (read_path's) through plain dicts and lists; anything else
    on the way (a missing key, a host object, an undefined) is read by `general`, the node's
    code, from the start: reads of plain data have no effect, so reading again is unseen. With
    `general` None, ABSENT stands for "not plain data all the way"."""
    variable, steps = path
    if len(steps) == 1 and not steps[0][1]:
        return _item_code(variable, steps[0][0], general)

    def read_path(ev: Any, scope: Any) -> Any:
        frame, obj = scope, _ABSENT
        while frame is not None:
            obj = frame.vars.get(variable, _ABSENT)
            if obj is not _ABSENT:
                break
            frame = frame.parent
        for key, by_name in steps:
            if by_name:  # `messages[i]`: the key is the variable's value
                name, frame, key = key, scope, _ABSENT
                while frame is not None:
                    key = frame.vars.get(name, _ABSENT)
                    if key is not _ABSENT:
                        break
                    frame = frame.parent
            kind = type(obj)
            if kind is dict and type(key) in _DICT_KEYS:
                obj = obj.get(key, _ABSENT)
            elif kind is list and type(key) in _INDICES and -len(obj) <= key < len(obj):
                obj = obj[key]
            else:
                obj = _ABSENT
            if obj is _ABSENT:
                return _ABSENT if general is None else general(ev, scope)
        return obj
    return read_path


def _item_code(variable: str, key: Any, general: Any) -> Code:
    """path_code for `m['role']`: one variable, one literal key."""
    def read_item(ev: Any, scope: Any) -> Any:
        frame = scope
        while frame is not None:
            obj = frame.vars.get(variable, _ABSENT)
            if obj is not _ABSENT:
                if type(obj) is dict:
                    value = obj.get(key, _ABSENT)
                    if value is not _ABSENT:
                        return value
                break
            frame = frame.parent
        return _ABSENT if general is None else general(ev, scope)
    return read_item


@compiles(ast.Slice)
def compile_slice(node: ast.Slice) -> Code:
    parts = tuple(None if n is None else compile_node(n) for n in (node.start, node.stop, node.step))
    start, stop, step = parts
    return lambda ev, scope: slice(start and start(ev, scope), stop and stop(ev, scope),
                                   step and step(ev, scope))


__all__ = ["ABSENT", "constant", "item_of", "located"]
