"""Parse tree to AST: one small method per grammar rule, run without recursion.

Lark `Token`s and `Meta` stop here: nodes get plain `str` values and `Span`s.
"""
from __future__ import annotations

import re
import sys
import warnings
from typing import Any, Callable, Optional

from . import ast
from .delimiters import Delimiters
from .errors import TemplateAssertionError, TemplateSyntaxError, position
from .positions import meta_span, token_span  # noqa: F401 - imported from here too
from .tokens import Token
from .whitespace import Options, normalize_newlines, trim

CONSTANT_NAMES = {"true": True, "True": True, "false": False, "False": False,
                  "none": None, "None": None}
# A pattern, compiled by `re` when a template first has a raw block (not at every start)
RAW_PARTS = r"(?s)\{%[-+]?\s*raw\s*-?%\}(.*?)\{%[-+]?\s*endraw\s*[-+]?%\}"


def _check_keyword_ends(source: str, start: int, keyword: str) -> None:
    """A keyword the lexer matched at the front of a longer name (`for x ins`: the lexer, in a
    state where no name can follow the target, reads `in` then `s`) is the name, as Jinja2
    reads it. `start` is where the node after the keyword begins."""
    if 0 < start < len(source) and _WORD.match(source, start) and _WORD.match(source, start - 1):
        word = _WORD_RUN.match(source, start - len(keyword)).group(0)
        line = source.count("\n", 0, start) + 1
        column = start - len(keyword) - source.rfind("\n", 0, start)
        raise TemplateSyntaxError(f"expected token {keyword!r}, got {word!r}", lineno=line,
                                  column=column)


def _context_mode(parts: list, default: bool) -> bool:
    """Whether an include or import passes the context: `with context`, `without context`."""
    return next((part[1] for part in parts if type(part) is tuple and part[:1] == ("context",)), default)


def _word(tok: str) -> str:
    """A name, attribute, operator or keyword as the node keeps it: one shared string per word
    (a template reads `message` or `content` dozens of times; the nodes keep one copy)."""
    return sys.intern(str(tok))


_WORD = re.compile(r"\w")
_WORD_RUN = re.compile(r"\w+")


def decode_string(tok: Token, newline: str = "\n") -> str:
    """A string literal's value, with Python escapes, as Jinja2 decodes it.

    Non-ASCII characters are protected with backslashreplace before `unicode_escape`, which
    would otherwise read them as Latin-1 bytes.
    """
    body = normalize_newlines(tok[1:-1])
    if newline != "\n":  # the environment's newline_sequence; an escaped \n stays a \n
        body = body.replace("\n", newline)
    if "\\" not in body:
        return body
    try:
        with warnings.catch_warnings():  # Python warns about unknown escapes; Jinja2 keeps them
            warnings.simplefilter("ignore", DeprecationWarning)
            return body.encode("ascii", "backslashreplace").decode("unicode-escape")
    except UnicodeDecodeError as e:
        raise TemplateSyntaxError(f"invalid escape in string literal: {e.reason}",
                                  lineno=tok.line, column=tok.column) from None


def decode_int(text: str) -> int:
    return int(text.replace("_", ""), 0) if text[:2].lower() in ("0b", "0o", "0x") else int(text.replace("_", ""))


def _refuse_loop_targets(nodes: list, checked: set) -> None:
    """A for loop's target and any `set` in it may not name `loop` (Jinja2's check, in its
    order: the first in the source). A loop inside that was checked when it was built (its id
    in `checked`) is not walked again: nested loops made this walk quadratic."""
    nodes.reverse()
    pop, push = nodes.pop, nodes.extend
    while nodes:
        node = pop()
        kind = type(node)
        if kind is ast.NameTarget and node.name == "loop":
            raise TemplateAssertionError("Can't assign to special loop variable in for-loop "
                                         "target", lineno=node.span.line, column=node.span.column)
        if kind is not ast.For or id(node) not in checked:
            inner = ast.children(node)
            if inner:
                inner.reverse()
                push(inner)


class AstBuilder:
    """Builds `ast` nodes: each public method is a rule's, called with the rule's positions (a
    Lark-shaped `meta`) and its children. Extensions add methods for their own rules (see
    grammar.parser). The one-pass parse calls them as it reduces (grammar/onepass.py); the
    two-pass parse through a Lark transformer made from this class (grammar/larktables.py)."""

    def __init__(self, source: str, options: Options, delimiters: Optional[Delimiters] = None) -> None:
        self.source = source
        self.options = options
        self.delimiters = delimiters  # None: the defaults, read from the source around each text
        self._bare_tests: set[int] = set()  # ids of `x is name` tests with no arguments at all
        self._checked_loops: set[int] = set()  # ids of the for loops built here (for_stmt)
        self._loop_targets = 0  # targets named `loop` built so far (name_target: the only maker)
        # one object per distinct string literal (`'role'`, `'content'` come back many times):
        # a compiled template keeps a copy of each otherwise
        self._strings: dict[str, str] = {}

    # ------------------------------------------------------------------ structure
    def start(self, meta, children):
        return ast.Template(meta_span(meta), children[0])

    def body(self, meta, children):
        nodes = []
        for child in children:
            if isinstance(child, Token):
                child = self._token_node(child)
                if child is None:
                    continue
            if isinstance(child, tuple):  # a statement that stands for several (`print a, b`)
                nodes.extend(child)
            else:
                nodes.append(child)
        return tuple(nodes)

    def _token_node(self, tok: Token):
        if self.delimiters is not None:  # custom: the tag stream said what surrounds each text
            from .tagstream import trimmed  # imports Lark, which custom delimiters parse with
            text = trimmed(tok, self.source, self.options, self.delimiters)
        elif tok.type == "TEXT":
            text = trim(self.source, tok.start_pos, tok.end_pos, self.options)
        elif tok.type == "RAW":
            m = re.match(RAW_PARTS, tok)
            start = tok.start_pos + m.start(1)
            text = trim(self.source, start, start + len(m.group(1)), self.options, after_raw_open=True)
        else:
            return None  # COMMENT
        if text and self.options.newline_sequence != "\n":
            text = text.replace("\n", self.options.newline_sequence)
        return ast.Text(token_span(tok), text) if text else None

    def output(self, meta, children):
        # VAR_OPEN expr RBRACE RBRACE: the braces must touch (so must any closer's brackets)
        self._check_touching(children[2:])
        if self.delimiters is not None:
            from .tagstream import check_variable_end  # imports Lark, as custom delimiters do
            check_variable_end(children[2:], self.delimiters, self.source)
        return ast.Output(meta_span(meta), children[1])

    def _check_touching(self, tokens: list) -> None:
        for first, second in zip(tokens, tokens[1:]):
            if second.start_pos != first.end_pos:
                line, column = position(self.source, first.start_pos)
                raise TemplateSyntaxError(f"unexpected '{first}'", lineno=line, column=column)

    # ------------------------------------------------------------------ statements
    def if_stmt(self, meta, children):
        test, body, *rest = children
        branches = [(test, body)]
        otherwise: tuple = ()
        for clause in rest:
            if clause[0] == "elif":
                branches.append(clause[1:])
            else:
                otherwise = clause[1]
        return ast.If(meta_span(meta), tuple(branches), otherwise)

    def elif_clause(self, meta, children):
        return ("elif", children[0], children[1])

    def if_else(self, meta, children):
        return ("else", children[0])

    for_else = if_else

    def for_stmt(self, meta, children):
        target, iterable, *rest = children
        _check_keyword_ends(self.source, iterable.span.start, "in")
        if self._loop_targets:  # a target named `loop` was built: is it in this loop?
            inside = [target] + [part for part in rest if isinstance(part, (tuple, ast.Node))]
            _refuse_loop_targets(ast.nodes_in(tuple(inside)), self._checked_loops)
        condition, recursive, otherwise = None, False, ()
        body = None
        for part in rest:
            if isinstance(part, tuple) and part and part[0] == "for_condition":
                condition = part[1]
            elif part == "recursive":
                recursive = True
            elif isinstance(part, tuple) and part and part[0] == "else":
                otherwise = part[1]
            else:
                body = part
        loop = ast.For(meta_span(meta), target, iterable, body, otherwise, condition, recursive)
        self._checked_loops.add(id(loop))
        return loop

    def for_condition(self, meta, children):
        return ("for_condition", children[0])

    def recursive(self, meta, children):
        return "recursive"

    def set_stmt(self, meta, children):
        return ast.Assign(meta_span(meta), children[0], children[1])

    def set_block(self, meta, children):
        target, *filters, body = children
        return ast.AssignBlock(meta_span(meta), target, tuple(filters), body)

    def name_target(self, meta, children):
        name = children[0]
        if name in CONSTANT_NAMES:  # Jinja2 reads them as constants, then refuses the target
            raise TemplateSyntaxError("can't assign to 'const'", lineno=meta.line, column=meta.column)
        if name == "loop":
            self._loop_targets += 1
        return ast.NameTarget(meta_span(meta), _word(name))

    def tuple_target(self, meta, children):
        return ast.TupleTarget(meta_span(meta), tuple(children))

    def namespace_target(self, meta, children):
        return ast.NamespaceTarget(meta_span(meta), _word(children[0]), _word(children[1]))

    def print_stmt(self, meta, children):
        return tuple(ast.Output(expr.span, expr) for expr in children)

    def macro_stmt(self, meta, children):
        name, *params, body = children
        return ast.Macro(meta_span(meta), _word(name), check_params(params, meta, body), body)

    def param(self, meta, children):
        return ast.Parameter(_word(children[0]), children[1] if len(children) > 1 else None)

    def call_stmt(self, meta, children):
        params: tuple = ()
        if isinstance(children[0], list):
            params = check_params(children.pop(0), meta, children[-1])
        call, body = children
        return ast.CallBlock(meta_span(meta), call, params, body)

    def callee(self, meta, children):
        return ast.Call(meta_span(meta), children[0], children[1])

    def call_params(self, meta, children):
        return list(children)

    def filter_stmt(self, meta, children):
        *filters, body = children
        return ast.FilterBlock(meta_span(meta), tuple(filters), body)

    def filter_item(self, meta, children):
        args = children[1] if len(children) > 1 else ast.NO_ARGUMENTS
        return ast.Filter(meta_span(meta), None, children[0], args)

    def with_stmt(self, meta, children):
        *assigns, body = children
        return ast.With(meta_span(meta), tuple(assigns), body)

    def with_assign(self, meta, children):
        return (children[0], children[1])

    def autoescape_stmt(self, meta, children):
        return ast.AutoEscape(meta_span(meta), children[0], children[1])

    # ------------------------------------------------------------------ composition
    def extends_stmt(self, meta, children):
        return ast.Extends(meta_span(meta), children[0])

    def block_stmt(self, meta, children):
        name, *rest = children
        flags = {part[1] for part in rest if type(part) is tuple and part[:1] == ("flag",)}
        body = next(part for part in rest if type(part) is tuple and part[:1] != ("flag",))
        end = rest[-1] if isinstance(rest[-1], Token) else None
        if end is not None and end != name:  # Jinja2 skips only the block's own name there
            raise TemplateSyntaxError(f"expected token 'end of statement block', got {str(end)!r}",
                                      lineno=end.line, column=end.column)
        if "required" in flags and any(type(n) is not ast.Text or not n.text.isspace() for n in body):
            raise TemplateSyntaxError("Required blocks can only contain comments or whitespace",
                                      lineno=meta.end_line, column=meta.end_column)
        return ast.Block(meta_span(meta), _word(name), body, "scoped" in flags, "required" in flags)

    def block_scoped(self, meta, children):
        return ("flag", "scoped")

    def block_required(self, meta, children):
        return ("flag", "required")

    def include_stmt(self, meta, children):
        template, *rest = children
        ignore_missing = ("flag", "ignore missing") in rest
        return ast.Include(meta_span(meta), template, ignore_missing, _context_mode(rest, True))

    def ignore_missing(self, meta, children):
        return ("flag", "ignore missing")

    def with_context(self, meta, children):
        return ("context", True)

    def without_context(self, meta, children):
        return ("context", False)

    def import_stmt(self, meta, children):
        template, target, *rest = children
        return ast.Import(meta_span(meta), template, _word(target), _context_mode(rest, False))

    def from_stmt(self, meta, children):
        template, *rest = children
        names = tuple(part for part in rest if type(part) is tuple and part[:1] == ("name",))
        return ast.FromImport(meta_span(meta), template, tuple(n[1:] for n in names),
                              _context_mode(rest, False))

    def import_keyword(self, meta, children):
        return children[0]  # the keyword's token: a name here

    def import_name(self, meta, children):
        name = children[0]
        if name.startswith("_"):
            raise TemplateAssertionError("names starting with an underline can not be imported",
                                         lineno=name.line, column=name.column)
        return ("name", _word(name), _word(children[-1]))

    # ------------------------------------------------------------------ expressions
    def tuple(self, meta, children):
        return ast.TupleLiteral(meta_span(meta), tuple(children))

    def paren(self, meta, children):
        self._bare_tests.discard(id(children[0]))  # `(x is a) is b` is fine
        return children[0]

    def empty_tuple(self, meta, children):
        return ast.TupleLiteral(meta_span(meta), ())

    def condexpr(self, meta, children):
        then, test = children[0], children[1]
        otherwise = children[2] if len(children) > 2 else None
        return ast.CondExpr(meta_span(meta), test, then, otherwise)

    def or_(self, meta, children):
        return ast.Logical(meta_span(meta), "or", children[0], children[1])

    def and_(self, meta, children):
        return ast.Logical(meta_span(meta), "and", children[0], children[1])

    def unary(self, meta, children):
        op, operand = children
        return ast.Unary(meta_span(meta), "not" if op.type == "NOT" else _word(op), operand)

    def compare(self, meta, children):
        first, rest = children[0], children[1:]
        ops = tuple((rest[i], rest[i + 1]) for i in range(0, len(rest), 2))
        return ast.Compare(meta_span(meta), first, ops)

    def comp_op(self, meta, children):
        # the operator's text: `not in` is two tokens; an extension's (`%extend comp_op: MATCH`)
        # is evaluated with its function in Extension.operators, and chains like the core's
        return " ".join(children)

    def binary(self, meta, children):
        left, op, right = children
        return ast.Binary(meta_span(meta), _word(op), left, right)

    def concat(self, meta, children):
        left, right = children
        items = left.items if isinstance(left, ast.Concat) else (left,)
        return ast.Concat(meta_span(meta), items + (right,))

    def filter(self, meta, children):
        value, name = children[0], children[1]
        args = children[2] if len(children) > 2 else ast.NO_ARGUMENTS
        return ast.Filter(meta_span(meta), value, name, args)

    def filter_call(self, meta, children):
        """`x|attr('upper')()`: a filter with arguments whose result is called."""
        value, name, args, call_args = children
        span = meta_span(meta)
        return ast.Call(span, ast.Filter(span, value, name, args), call_args)

    def test(self, meta, children):
        value, *rest = children
        negated = isinstance(rest[0], Token) and rest[0].type == "NOT"
        if negated:
            rest = rest[1:]
        name = rest[0]
        if id(value) in self._bare_tests:
            raise TemplateSyntaxError("You cannot chain multiple tests with is",
                                      lineno=meta.line, column=meta.column)
        args = ast.NO_ARGUMENTS
        if len(rest) > 1:
            args = rest[1] if isinstance(rest[1], ast.Arguments) else ast.Arguments(args=(rest[1],))
        node = ast.Test(meta_span(meta), value, name, args, negated)
        if len(rest) == 1:
            self._bare_tests.add(id(node))
        return node

    def dotted_name(self, meta, children):
        return _word(".".join(children))

    def getattr(self, meta, children):
        obj, attr = children
        key = decode_int(attr) if attr.type == "INT" else _word(attr)
        return ast.GetAttr(meta_span(meta), obj, key)

    def getitem(self, meta, children):
        return ast.GetItem(meta_span(meta), children[0], children[1])

    def subscripts(self, meta, children):
        if len(children) == 1:
            return children[0]
        return ast.TupleLiteral(meta_span(meta), tuple(children))

    def slice(self, meta, children):
        start, stop = children[0], children[1]
        step = children[2] if len(children) > 2 else None
        return ast.Slice(meta_span(meta), start, stop, step)

    def call(self, meta, children):
        return ast.Call(meta_span(meta), children[0], children[1])

    def call_args(self, meta, children):
        args, kwargs, star, dstar = [], [], None, None
        for kind, value in children:
            if kind == "positional":
                if kwargs or star is not None or dstar is not None:
                    raise TemplateSyntaxError("invalid syntax for function call expression",
                                              lineno=meta.line, column=meta.column)
                args.append(value)
            elif kind == "keyword":
                if value[0] in (k for k, _ in kwargs):
                    raise TemplateSyntaxError(f"keyword argument repeated: {value[0]}",
                                              lineno=meta.line, column=meta.column)
                if dstar is not None:
                    raise TemplateSyntaxError("invalid syntax for function call expression",
                                              lineno=meta.line, column=meta.column)
                kwargs.append(value)
            elif kind == "star":
                if star is not None or dstar is not None:
                    raise TemplateSyntaxError("invalid syntax for function call expression",
                                              lineno=meta.line, column=meta.column)
                star = value
            else:
                if dstar is not None:
                    raise TemplateSyntaxError("invalid syntax for function call expression",
                                              lineno=meta.line, column=meta.column)
                dstar = value
        if not children:  # `f()`: the one shared empty list (a record no one changes)
            return ast.NO_ARGUMENTS
        return ast.Arguments(tuple(args), tuple(kwargs), star, dstar)

    def arg_positional(self, meta, children):
        return ("positional", children[0])

    def arg_keyword(self, meta, children):
        return ("keyword", (_word(children[0]), children[1]))

    def arg_star(self, meta, children):
        return ("star", children[1])

    def arg_dstar(self, meta, children):
        return ("dstar", children[1])

    def name(self, meta, children):
        name = _word(children[0])
        if name in CONSTANT_NAMES:
            return ast.Const(meta_span(meta), CONSTANT_NAMES[name])
        return ast.Name(meta_span(meta), name)

    def string(self, meta, children):
        text = "".join(decode_string(t, self.options.newline_sequence) for t in children)
        if text.isascii() and text.replace("_", "a").isalnum():
            # CPython's compiler interns the string constants made of name characters only
            # (`'role'`, `'user'`), so Jinja2's generated code shares them between templates:
            # the same here, for the same strings
            text = sys.intern(text)
        return ast.Const(meta_span(meta), self._strings.setdefault(text, text))

    def integer(self, meta, children):
        return ast.Const(meta_span(meta), decode_int(children[0]))

    def float(self, meta, children):
        text = children[0]
        if not text.isascii():  # `٣.5`: Python's float() reads it, Jinja2's literal_eval does not
            char = next(c for c in text if not c.isascii())
            raise TemplateSyntaxError(f"invalid character {char!r} (U+{ord(char):04X})",
                                      lineno=meta.line, column=meta.column)
        return ast.Const(meta_span(meta), float(text.replace("_", "")))

    def list(self, meta, children):
        return ast.ListLiteral(meta_span(meta), tuple(children))

    def dict(self, meta, children):
        pairs = tuple(c for c in children if not isinstance(c, Token))
        return ast.DictLiteral(meta_span(meta), pairs)

    def pair(self, meta, children):
        return (children[0], children[1])


def check_params(params: list, meta: Any, body: tuple = ()) -> tuple:
    if any(p.name == "caller" and p.default is None for p in params) and _reads_caller(body):
        raise TemplateAssertionError('When defining macros or call blocks the special "caller" '
                                     "argument must be omitted or be given a default.",
                                     lineno=meta.line, column=meta.column)
    seen_default = False
    names = [p.name for p in params]
    for name in names:
        if names.count(name) > 1:
            raise TemplateSyntaxError(f"duplicate argument {name!r} in a macro or call signature",
                                      lineno=meta.line, column=meta.column)
    for p in params:
        if p.default is not None:
            seen_default = True
        elif seen_default:
            raise TemplateSyntaxError("non-default argument follows default argument",
                                      lineno=meta.line, column=meta.column)
    return tuple(params)


def _reads_caller(body: tuple) -> bool:
    """Whether `caller` is read in `body`, outside blocks (where Jinja2 does not look)."""
    stack = list(ast.nodes_in(body))
    while stack:
        node = stack.pop()
        if type(node) is ast.Name and node.name == "caller":
            return True
        if type(node) is not ast.Block:
            stack.extend(ast.children(node))
    return False


def builder_class(extra_rules: dict[str, Callable]) -> type:
    """An AstBuilder that also knows the rules of the enabled extensions."""
    if not extra_rules:
        return AstBuilder
    methods = {name: _as_method(fn) for name, fn in extra_rules.items()}
    return type("ExtendedAstBuilder", (AstBuilder,), methods)


def _as_method(fn: Callable) -> Callable:
    def method(self, meta, children):
        return fn(meta, children)
    method.__name__ = getattr(fn, "__name__", "rule")
    return method
