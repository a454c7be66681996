"""The Extension API: `Extension`, `span`, `extension_grammar` and the rest, by their public
names (`jinjamark.ext.span`). The API is in api.py; names of the shipped extensions resolve in
names.py, which imports shipped.py only when a name is asked for."""
from .api import Extension, ExtensionError, extension_grammar, install, parser_for, span
from .names import resolve, shipped

__all__ = ["Extension", "ExtensionError", "span", "resolve", "install", "parser_for",
           "extension_grammar", "shipped"]
