"""Template source to AST. Nothing here knows the evaluator."""
from .delimiters import Delimiters
from .errors import TemplateAssertionError, TemplateError, TemplateSyntaxError
from .parser import Parser, Syntax, get_parser
from .whitespace import Options

__all__ = ["Delimiters", "TemplateAssertionError", "TemplateError", "TemplateSyntaxError", "Parser",
           "Syntax", "get_parser", "Options"]
