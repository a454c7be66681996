"""Jinja2's `jinja2.sandbox` names: `SandboxedEnvironment`, `ImmutableSandboxedEnvironment`,
`unsafe` and the attribute rules (which live in values/sandbox.py)."""
from __future__ import annotations

from typing import Any

from .values.sandbox import (MAX_RANGE, UNSAFE_ASYNC_GENERATOR_ATTRIBUTES,
                             UNSAFE_COROUTINE_ATTRIBUTES, UNSAFE_FUNCTION_ATTRIBUTES,
                             UNSAFE_GENERATOR_ATTRIBUTES, UNSAFE_METHOD_ATTRIBUTES,
                             default_is_safe_attribute, default_is_safe_callable,
                             is_internal_attribute, modifies_known_mutable, unsafe)
from .sandbox_hooks import SandboxHooks

__all__ = ["MAX_RANGE", "UNSAFE_ASYNC_GENERATOR_ATTRIBUTES", "UNSAFE_COROUTINE_ATTRIBUTES",
           "UNSAFE_FUNCTION_ATTRIBUTES", "UNSAFE_GENERATOR_ATTRIBUTES", "UNSAFE_METHOD_ATTRIBUTES",
           "SandboxHooks",
           "default_is_safe_attribute", "default_is_safe_callable", "is_internal_attribute",
           "modifies_known_mutable", "unsafe"]


_CLASSES: dict[str, type] = {}


def __getattr__(name: str) -> type:
    """`SandboxedEnvironment` (every jinjamark `Environment` is one) and
    `ImmutableSandboxedEnvironment` (`immutable=True` by default), by Jinja2's names, so that
    `from jinjamark.sandbox import SandboxedEnvironment` reads as Jinja2's import did. Made when
    first asked."""
    if name not in ("SandboxedEnvironment", "ImmutableSandboxedEnvironment"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if not _CLASSES:
        from .environment import Environment

        class ImmutableSandboxedEnvironment(Environment):
            """An `Environment` whose templates may not change lists, dicts, sets or deques."""

            def __init__(self, *args: Any, **options: Any) -> None:
                options.setdefault("immutable", True)
                super().__init__(*args, **options)

        ImmutableSandboxedEnvironment.__module__ = __name__  # pickled by this name
        ImmutableSandboxedEnvironment.__qualname__ = "ImmutableSandboxedEnvironment"
        _CLASSES.update(SandboxedEnvironment=Environment,
                        ImmutableSandboxedEnvironment=ImmutableSandboxedEnvironment)
    return _CLASSES[name]
