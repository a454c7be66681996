"""`SandboxHooks`: the methods of Jinja2's `SandboxedEnvironment` an `Environment` subclass
overrides (`is_safe_attribute`, `call_binop`, ...), and the defaults with our limits."""
from __future__ import annotations

from typing import Any, Callable

from .values.sandbox import (DEFAULT_BINOP_TABLE, DEFAULT_UNOP_TABLE, default_is_safe_attribute,
                             default_is_safe_callable, modifies_known_mutable)
from .values.formatting import percent_format
from .values.markup import is_safe, markup_add, markup_mod
from .values.hostcalls import host_result
from .values.runtime import unsafe_attribute


def _intercepted(field: str) -> property:
    """`intercepted_binops` / `intercepted_unops`: empty by default; setting them clears the
    compiled templates the environment keeps, since a template compiled before would not route the operators (Jinja2
    compiles again at each `from_string`). A subclass may also set them as class attributes."""
    def get(env: Any) -> frozenset:
        return env.__dict__.get(field, frozenset())

    def put(env: Any, operators: Any) -> None:
        env.__dict__[field] = frozenset(operators)
        env.__dict__.pop("_interception", None)  # what renders read, found again (interception)
        for name in ("_cache", "_templates"):  # from_string's and the loader's
            cache = env.__dict__.get(name)
            if cache is not None:
                with env._lock:
                    cache.clear()
    return property(get, put)


class SandboxHooks:
    """Jinja2's `SandboxedEnvironment` API on `Environment`: the hooks a subclass may override
    and the operator interception (`intercepted_binops` names the operators whose every use the
    compiled template sends through `call_binop`; empty by default, as in Jinja2)."""

    sandboxed = True
    default_binop_table = DEFAULT_BINOP_TABLE
    default_unop_table = DEFAULT_UNOP_TABLE
    intercepted_binops = _intercepted("_intercepted_binops")
    intercepted_unops = _intercepted("_intercepted_unops")

    def interception(self) -> tuple:
        """(intercepted_binops, intercepted_unops), as each render reads them: kept once found
        (a property or a subclass's class attributes), found again when either is set."""
        found = self.__dict__.get("_interception")
        if found is None:
            found = self.__dict__["_interception"] = (getattr(self, "intercepted_binops", None),
                                                      getattr(self, "intercepted_unops", None))
        return found

    def is_safe_attribute(self, obj: Any, attr: str, value: Any) -> bool:
        """Whether a template may read `attr` (giving `value`) of the host object `obj`."""
        if not default_is_safe_attribute(obj, attr, value):
            return False
        return not (getattr(self, "immutable", False) and modifies_known_mutable(obj, attr))

    def is_safe_callable(self, obj: Any) -> bool:
        """Whether a template may call the host callable `obj`."""
        return default_is_safe_callable(obj)

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        """`left operator right` for an intercepted operator: `binop_table`'s function, under
        the render's limits when it is the default one."""
        fn = self.binop_table[operator]
        if fn is DEFAULT_BINOP_TABLE.get(operator):
            return _default_binop(self, operator, fn, left, right)
        return host_result(fn, fn(left, right), (left, right), None)

    def call_unop(self, context: Any, operator: str, arg: Any) -> Any:
        """`operator arg` for an intercepted unary operator (`+`, `-`)."""
        fn = self.unop_table[operator]
        if fn is DEFAULT_UNOP_TABLE.get(operator):
            return fn(arg)
        return host_result(fn, fn(arg), (arg,), None)

    def unsafe_undefined(self, obj: Any, attribute: str) -> Any:
        """What a refused attribute reads as: an undefined that is a SecurityError when used."""
        return unsafe_attribute(self.undefined, obj, attribute)


def _default_binop(env: Any, op: str, fn: Callable, left: Any, right: Any) -> Any:
    """Jinja2's default operator, with our limits and safe-text rules."""
    if op == "**":
        env.limits.check_power(left, right)
    elif op == "*":
        env.limits.check_repeat(left, right)
        env.limits.check_product(left, right)
    elif op == "+" and isinstance(left, (str, list, tuple)) and isinstance(right, (str, list, tuple)):
        env.limits.check_size(len(left) + len(right))
        if is_safe(left) or is_safe(right):
            return markup_add(left, right)
    elif op == "%" and isinstance(left, str):
        return markup_mod(left, right) if is_safe(left) else percent_format(left, right)
    return fn(left, right)
