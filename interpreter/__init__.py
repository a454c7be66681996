"""jinjamark: a Jinja engine for LLM chat templates that knows which characters came from input."""
from .evaluation.autoescape import select_autoescape
from .chat import ChatTemplate, chat_environment
from .environment import Environment, RenderContext, Template
from .environment_tools import pass_context, pass_environment, pass_eval_context
from .errors import (ExtensionError, InputTypeError, LimitExceeded, SecurityError,
                     TemplateAssertionError, TemplateError, TemplateRuntimeError, TemplateSyntaxError,
                     UndefinedError)
from .ext.api import Extension
from .values.hostcalls import keeps_marks
from .limits import Limits
from .loaders import (BaseLoader, ChoiceLoader, DictLoader, FileSystemLoader, FunctionLoader,
                      PackageLoader, PrefixLoader, TemplateNotFound, TemplatesNotFound)
from .marks import Marked  # and `jinjamark.marks`, the documented module
from .evaluation.output import Part
from .values.sandbox import unsafe
from .values.undefined import (ChainableUndefined, DebugUndefined, StrictUndefined, Undefined,
                               make_logging_undefined)
from .values.access import mark_input

from .version import __version__  # noqa: F401 - the one version source; pyproject.toml reads it too


def __getattr__(name: str):
    """`analyze` and `Analysis`, imported on first use: a render does not need the analysis.
    `jinjamark.hf` too (README's `import jinjamark; jinjamark.hf.patch()`): it imports neither
    transformers nor jinja2."""
    if name in ("analyze", "Analysis"):
        from .chat import analysis
        return getattr(analysis, name)
    if name == "hf":
        import importlib
        return importlib.import_module(".hf", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = [
    "analyze", "Analysis",
    "ChatTemplate", "chat_environment", "Environment", "RenderContext", "Template",
    "pass_context", "pass_environment", "pass_eval_context",
    "ExtensionError", "InputTypeError", "LimitExceeded", "SecurityError", "TemplateAssertionError", "TemplateError",
    "TemplateRuntimeError", "TemplateSyntaxError", "UndefinedError",
    "Extension", "Limits", "Marked", "Part", "ChainableUndefined", "StrictUndefined", "Undefined",
    "DebugUndefined", "make_logging_undefined",
    "keeps_marks", "mark_input", "unsafe",
    "BaseLoader", "ChoiceLoader", "DictLoader", "FileSystemLoader", "FunctionLoader",
    "PackageLoader", "PrefixLoader", "TemplateNotFound", "TemplatesNotFound", "select_autoescape",
]
