"""Template source to AST. Nothing here knows the evaluator."""
import sys

from ._lark_import import import_lark

import_lark()
from .delimiters import Delimiters
from .errors import TemplateAssertionError, TemplateError, TemplateSyntaxError
from .parser import Parser, Syntax, get_parser
from .whitespace import Options

__all__ = ["Delimiters", "TemplateAssertionError", "TemplateError", "TemplateSyntaxError", "Parser",
           "Syntax", "get_parser", "Options"]
