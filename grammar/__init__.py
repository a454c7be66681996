"""Template source to AST. Nothing here knows the evaluator."""
from .errors import TemplateAssertionError, TemplateError, TemplateSyntaxError
from .parser import Parser, Syntax, get_parser
from .whitespace import Options

__all__ = ["TemplateAssertionError", "TemplateError", "TemplateSyntaxError", "Parser", "Syntax",
           "get_parser", "Options"]
