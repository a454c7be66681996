"""The errors a render can raise. All are `TemplateError`s with a name, line, column and caret."""
from __future__ import annotations

from .grammar.compose import ExtensionError
from .grammar.errors import (LimitExceeded, TemplateAssertionError, TemplateError,
                             TemplateRuntimeError, TemplateSyntaxError, TemplateTooLarge)


class UndefinedError(TemplateRuntimeError):
    """An undefined value was used in a way that needs a value."""


class SecurityError(TemplateRuntimeError):
    """The template tried to reach something the sandbox does not allow."""


class InputTypeError(TemplateError, TypeError):
    """A value given as input (to `mark_input`, so to `render_parts` of a chat template) is of a
    kind that cannot be marked character by character (bytes, an arbitrary object): it is
    refused rather than passed through unmarked. A ValueError and a TypeError both, so servers
    answer "bad request"."""


__all__ = ["InputTypeError", "TemplateError", "TemplateSyntaxError", "TemplateAssertionError", "TemplateRuntimeError",
           "UndefinedError", "SecurityError", "LimitExceeded", "TemplateTooLarge", "ExtensionError"]
