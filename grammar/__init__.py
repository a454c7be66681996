"""Template source to AST. Nothing here knows the evaluator."""
import sys

if "lark" not in sys.modules and "interegular" not in sys.modules:
    # Lark imports `interegular` when it is installed, for the collision checks of a grammar
    # build, which only strict mode asks for here (grammar.parser._build gives it back to Lark
    # then): its import costs more than a tenth of jinjamark's.
    sys.modules["interegular"] = None  # type: ignore[assignment]  # the import fails fast
    try:
        import lark.lexer  # noqa: F401
    finally:
        del sys.modules["interegular"]
from .delimiters import Delimiters
from .errors import TemplateAssertionError, TemplateError, TemplateSyntaxError
from .parser import Parser, Syntax, get_parser
from .whitespace import Options

__all__ = ["Delimiters", "TemplateAssertionError", "TemplateError", "TemplateSyntaxError", "Parser",
           "Syntax", "get_parser", "Options"]
