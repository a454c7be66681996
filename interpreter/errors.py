"""The errors a render can raise. All are `TemplateError`s with a name, line, column and caret."""
from __future__ import annotations

from .grammar.errors import TemplateAssertionError, TemplateError, TemplateSyntaxError


class TemplateRuntimeError(TemplateError):
    """Something went wrong while rendering: a type error, a failing filter, a host exception."""


class UndefinedError(TemplateRuntimeError):
    """An undefined value was used in a way that needs a value."""


class SecurityError(TemplateRuntimeError):
    """The template tried to reach something the sandbox does not allow."""


class LimitExceeded(TemplateRuntimeError):
    """The render went past one of the environment's limits."""


__all__ = ["TemplateError", "TemplateSyntaxError", "TemplateAssertionError", "TemplateRuntimeError",
           "UndefinedError", "SecurityError", "LimitExceeded"]
