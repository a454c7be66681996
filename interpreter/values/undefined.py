"""Undefined values, as Jinja2 has them: lenient (the default), strict and chainable.

An `Undefined` remembers why it exists (a missing variable, attribute or item) so that using it
where a value is needed raises an `UndefinedError` that says so.
"""
from __future__ import annotations

from typing import Any, NoReturn

from ..errors import UndefinedError

# one object; pickled as a reference to this module's MISSING, so undefined values pickle too
MISSING: Any = type("Missing", (), {"__repr__": lambda self: "missing",
                                    "__reduce__": lambda self: "MISSING"})()


def type_name(obj: Any) -> str:
    """How Jinja2 names a value's type in messages: 'dict object', 'None'."""
    if obj is None:
        return "None"
    cls = type(obj)
    name = getattr(cls, "jinja_type_name", None) or cls.__name__
    return f"{name} object"


def is_undefined(obj: Any) -> bool:
    """Whether `obj` is undefined (Jinja2's `is_undefined`, for filters and globals)."""
    return isinstance(obj, Undefined)


class Undefined:
    """The value of a missing name, attribute or item. Prints as '' and iterates as empty."""

    __slots__ = ("_hint", "_obj", "_name", "_exc")

    def __init__(self, hint: str | None = None, obj: Any = MISSING, name: str | None = None,
                 exc: type = UndefinedError) -> None:
        self._hint, self._obj, self._name, self._exc = hint, obj, name, exc

    @property
    def undefined_message(self) -> str:
        if self._hint:
            return self._hint
        if self._obj is MISSING:
            return f"{self._name!r} is undefined"
        if not isinstance(self._name, str):
            return f"{type_name(self._obj)} has no element {self._name!r}"
        return f"{type_name(self._obj)!r} has no attribute {self._name!r}"

    def fail(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise self._exc(self.undefined_message)

    # Jinja2's names for the same, for Python code written against Jinja2's Undefined
    _undefined_hint = property(lambda self: self._hint)
    _undefined_obj = property(lambda self: self._obj)
    _undefined_name = property(lambda self: self._name)
    _undefined_exception = property(lambda self: self._exc)
    _undefined_message = property(lambda self: self.undefined_message)
    _fail_with_undefined_error = fail

    # Everything that needs a value fails.
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = fail
    __truediv__ = __rtruediv__ = __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = fail
    __pos__ = __neg__ = __pow__ = __rpow__ = __call__ = __getitem__ = fail
    __lt__ = __le__ = __gt__ = __ge__ = __int__ = __float__ = __complex__ = fail

    def attribute(self, name: str) -> Any:
        """`undefined.name` in a template."""
        self.fail()

    def __getattr__(self, name: str) -> Any:
        """`getattr(undefined, name)` from Python fails as in a template (Jinja2's), but for
        Python's own double-underscore names, which `hasattr` and copying ask for."""
        if name[:2] == "__":
            raise AttributeError(name)
        return self.attribute(name)

    def __eq__(self, other: Any) -> bool:
        return type(self) is type(other)

    def __ne__(self, other: Any) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return id(type(self))

    def __str__(self) -> str:
        return ""

    def __len__(self) -> int:
        return 0

    def __iter__(self):
        return iter(())

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "Undefined"


class ChainableUndefined(Undefined):
    """Attribute and item access on it give itself, so `a.b.c` is undefined, not an error."""

    __slots__ = ()

    def attribute(self, name: str) -> Any:
        return self

    def __getattr__(self, name: str) -> Any:
        if name[:2] == "__":
            raise AttributeError(name)
        return self

    def __getitem__(self, key: Any) -> Any:
        return self

    def __html__(self) -> str:  # as Jinja2's: it counts as escaped text
        return str(self)

    def __hash__(self) -> int:
        return id(type(self))


class StrictUndefined(Undefined):
    """Fails on printing, iterating, testing for truth and comparing too."""

    __slots__ = ()
    __iter__ = __str__ = __len__ = __eq__ = __ne__ = __bool__ = __hash__ = __contains__ = Undefined.fail


class DebugUndefined(Undefined):
    """Prints what is missing, in braces: `{{ name }}`, so that a render shows its gaps."""

    __slots__ = ()

    def __str__(self) -> str:
        if self._hint:
            message = f"undefined value printed: {self._hint}"
        elif self._obj is MISSING:
            message = str(self._name)
        else:
            message = f"no such element: {type_name(self._obj)}[{self._name!r}]"
        return f"{{{{ {message} }}}}"


def make_logging_undefined(logger: Any = None, base: type = Undefined) -> type:
    """An undefined kind like `base` that also logs: a warning when it is printed, iterated
    or tested for truth, an error when it fails (Jinja2's helper). `logger`: anything with
    `warning` and `error` methods; by default a logger of this module writing to stderr."""
    if logger is None:
        import logging
        import sys
        logger = logging.getLogger(__name__)
        logger.addHandler(logging.StreamHandler(sys.stderr))

    def warn(undefined: Undefined) -> None:
        logger.warning("Template variable warning: %s", undefined.undefined_message)

    class LoggingUndefined(base):  # type: ignore[valid-type, misc]
        __slots__ = ()

        def fail(self, *args: Any, **kwargs: Any) -> NoReturn:
            try:
                base.fail(self, *args, **kwargs)
            except self._exc as e:
                logger.error("Template variable error: %s", e)
                raise

        def __str__(self) -> str:
            warn(self)
            return base.__str__(self)

        def __iter__(self):
            warn(self)
            return base.__iter__(self)

        def __bool__(self) -> bool:
            warn(self)
            return base.__bool__(self)

    # as in Jinja2, the base's operators stay the base's `fail`: they raise without logging
    return LoggingUndefined
