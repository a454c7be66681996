"""For loops and assignment targets: what both tiers' loops call (the iterator and its length,
`for ... if`, a recursive loop's `loop(items)`, unpacking), and `LoopSignal`, the protocol by
which loop-control extensions end an iteration or a loop."""
from __future__ import annotations

from types import GeneratorType
from typing import Any, Callable

from ..grammar import ast
from ..errors import TemplateRuntimeError
from .autoescape import rendered
from ..values.marks import concat
from ..values.runtime import Namespace
from .scope import Scope


class LoopSignal(Exception):
    """Raised by a statement to end the current loop iteration; `stop` ends the whole loop.

    This is the protocol loop-control extensions use; the core knows no `break` tag.
    """

    def __init__(self, stop: bool) -> None:
        super().__init__("loop signal outside of a loop")
        self.stop = stop


def recursion(ev: Any, scope: Scope, run: Callable[[Any, Scope, Any, int], None]
              ) -> Callable[[Any, int], str]:
    """`loop(items)` in a recursive loop: the loop's `run` over `items`, one level deeper,
    rendered to a value (a nested render, for the limits)."""
    def recurse(inner: Any, depth: int) -> str:
        saved, ev.out = ev.out, []
        ev.budget.enter()
        try:
            run(ev, scope, inner, depth)
            return rendered(ev, concat(ev.out))
        finally:
            ev.out = saved
            ev.budget.leave()
    return recurse


def filtered(ev: Any, node: ast.For, scope: Scope, items: Any) -> Any:
    """The items that pass `for ... if condition`, lazily. As Jinja2's generator does, an item
    unpacked into a tuple target comes out as a tuple of its parts (a list becomes a tuple)."""
    for item in items:
        inner = Scope(scope)
        assign(ev, node.target, item, inner)
        if ev.eval(node.condition, inner):
            yield _rebuilt(node.target, inner) if type(node.target) is ast.TupleTarget else item


def _rebuilt(target: Any, scope: Scope) -> Any:
    if type(target) is ast.TupleTarget:
        return tuple(_rebuilt(sub, scope) for sub in target.items)
    return scope.vars[target.name]


def loop_iterator(iterable: Any) -> tuple[Any, Any]:
    """An iterator over what a for loop walks, and its length when known without walking it."""
    if isinstance(iterable, str):
        return iter(iterable), len(iterable)  # a Marked string yields marked characters
    if iterable is None:
        raise TypeError("'NoneType' object is not iterable")
    if type(iterable) is GeneratorType:  # `|items`, `|map(...)`: no length to ask for
        return iterable, None
    iterator = iter(iterable)
    try:
        return iterator, len(iterable)
    except TypeError:
        return iterator, None


# What a loop may walk with its length known and fixed: Python's own containers, exactly (a host
# object's __len__ may say less than its __iter__ gives), when the template cannot change them
# (in an environment whose sandbox lets a template call list.append, it can).
FIXED_LENGTH = frozenset((list, tuple, dict, str, range,
                           type({}.items()), type({}.keys()), type({}.values())))  # a dict's views


def charged_up_front(ev: Any, iterable: Any, length: Any, cost: int) -> bool:
    """Charge a whole loop before its first iteration (its iterations, and `cost` steps for
    each) when its length is known and fixed and no deadline needs the clock looked at as it
    runs; whether it did. The same totals as charging each iteration, without two counters
    to update per iteration; a loop whose body may end it early (an extension's node, as
    `break`) is charged per iteration instead (the caller's choice), so as not to overcharge."""
    if (length is None or ev.mutable or type(iterable) not in FIXED_LENGTH
            or ev.budget.deadline is not None):
        return False
    budget = ev.budget
    budget.iterations -= length
    if budget.iterations < 0:
        budget.iterate(0)  # raises LimitExceeded
    ev.steps -= cost * length
    if ev.steps <= 0:
        ev.steps = budget.refuel(ev.steps)
    return True


def loop_items(iterable: Any) -> list:
    if isinstance(iterable, dict):
        return list(iterable)
    if isinstance(iterable, str):
        return list(iter(iterable))
    if iterable is None:
        raise TypeError("'NoneType' object is not iterable")
    return list(iterable)


def assign(ev: Any, target: Any, value: Any, scope: Scope) -> None:
    if type(target) is ast.NameTarget:
        scope.vars[target.name] = value
    elif type(target) is ast.TupleTarget:
        if type(value) is tuple and len(value) == len(target.items):  # `for k, v in d|items`
            variables = scope.vars
            for sub, item in zip(target.items, value):
                if type(sub) is ast.NameTarget:
                    variables[sub.name] = item
                else:
                    assign(ev, sub, item, scope)
            return
        values = list(loop_items(value))
        if len(values) != len(target.items):  # Python's words, which Jinja2 gives
            expected = len(target.items)
            raise TemplateRuntimeError(f"too many values to unpack (expected {expected})"
                                       if len(values) > expected else
                                       f"not enough values to unpack (expected {expected}, got {len(values)})")
        for sub, item in zip(target.items, values):
            assign(ev, sub, item, scope)
    else:
        namespace = scope.lookup(target.name)
        if not isinstance(namespace, Namespace):
            raise TemplateRuntimeError("cannot assign attribute on non-namespace object")
        namespace.attrs[target.attr] = value
