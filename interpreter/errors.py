"""The errors a render can raise. All are `TemplateError`s with a name, line, column and caret."""
from __future__ import annotations

from .grammar.compose import ExtensionError
from .grammar.errors import (LimitExceeded, TemplateAssertionError, TemplateError,
                             TemplateRuntimeError, TemplateSyntaxError, TemplateTooLarge)


class UndefinedError(TemplateRuntimeError):
    """An undefined value was used in a way that needs a value."""


class SecurityError(TemplateRuntimeError):
    """The template tried to reach something the sandbox does not allow."""


__all__ = ["TemplateError", "TemplateSyntaxError", "TemplateAssertionError", "TemplateRuntimeError",
           "UndefinedError", "SecurityError", "LimitExceeded", "TemplateTooLarge", "ExtensionError"]
