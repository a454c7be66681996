"""The variables a template reads from its context, as `jinja2.meta.find_undeclared_variables`.

Servers use that set to decide which request keys are template variables (vLLM filters
`chat_template_kwargs` with it; transformers 5 tells template kwargs from processor kwargs).
Jinja2 answers it with its code generator's symbol tables: every frame the compiler enters
(the template, a loop body, its `else` and its `if` filter, a macro or call block, `with`,
`filter`, block `set`, `autoescape`, and each block, which starts afresh) records how each name
it mentions gets its value, and a name *resolved from the context* in any frame is a variable.
This module replays those tables on our AST, rule for rule:

- A name is resolved in a frame when no enclosing frame mentions it (in any way, anywhere in
  that frame) and, in this frame, it is loaded before it is stored, in Jinja2's visiting order.
- A name first stored inside an `if` branch is resolved too (Jinja2 reads it from the context
  on the paths that skip the branch), unless an enclosing frame mentions it.
- Parameters never are: a loop's target (and `loop` when the body reads it, or the loop is
  recursive), a macro's parameters (and `caller`, `kwargs`, `varargs` when its body reads them
  before storing them), `self` (and `super` in a block).
- Names that are globals of the environment are left out, as `TrackingCodeGenerator` leaves them.
"""
from __future__ import annotations

from typing import Any, Iterable, Iterator, Optional

from ..grammar import ast
from ..evaluation.scope import MACRO_SPECIALS, frame_fields

__all__ = ["undeclared_variables"]


def undeclared_variables(tree: ast.Template, globals_: Iterable[str] = ()) -> frozenset[str]:
    """The names `jinja2.meta.find_undeclared_variables` gives for the same template."""
    found: set[str] = set()
    roots = [(tree.body, ("self",))]
    roots += [(block.body, ("self", "super")) for block in ast.walk(tree)
              if type(block) is ast.Block]
    for body, specials in roots:  # each block is a frame of its own, outside the template's
        symbols = _Symbols(None)
        for name in _read_before_stored(body, specials):
            symbols.declare_parameter(name)
        _analyse_body(symbols, body)
        _enter(symbols, body, found)
    return frozenset(found.difference(globals_))


# ---------------------------------------------------------------------------- one frame's table

class _Symbols:
    """Jinja2's `Symbols` of one frame: which names it has a reference for, and how each is loaded
    ('param', 'alias' of an outer frame's, 'undefined' until stored, or 'resolve' from context)."""

    def __init__(self, parent: Optional["_Symbols"]) -> None:
        self.parent = parent
        self.loads: dict[str, str] = {}  # every name this frame references, and how
        self.stores: set[str] = set()

    def copy(self) -> "_Symbols":
        twin = _Symbols(self.parent)
        twin.loads, twin.stores = dict(self.loads), set(self.stores)
        return twin

    def outer_has(self, name: str) -> bool:
        scope = self.parent
        while scope is not None:
            if name in scope.loads:
                return True
            scope = scope.parent
        return False

    def has(self, name: str) -> bool:
        return name in self.loads or self.outer_has(name)

    def load(self, name: str) -> None:
        if not self.has(name):
            self.loads[name] = "resolve"

    def store(self, name: str) -> None:
        self.stores.add(name)
        if name not in self.loads:
            self.loads[name] = "alias" if self.outer_has(name) else "undefined"

    def declare_parameter(self, name: str) -> None:
        self.stores.add(name)
        self.loads[name] = "param"

    def merge_branches(self, branches: list["_Symbols"]) -> None:
        """After an `if`: what a branch stored first is read from outside on the other paths."""
        stored = set().union(*(branch.stores for branch in branches)) - self.stores
        for branch in branches:
            self.loads.update(branch.loads)
            self.stores |= branch.stores
        for name in stored:
            self.loads[name] = "alias" if self.outer_has(name) else "resolve"

    def resolved(self) -> Iterator[str]:
        return (name for name, how in self.loads.items() if how == "resolve")


# ---------------------------------------------------------------------------- analysing a frame

def _analyse_body(symbols: _Symbols, body: Iterable) -> None:
    for statement in body:
        _visit(symbols, statement)


def _load_all(symbols: _Symbols, node: Any) -> None:
    for inner in ast.walk(node):
        if type(inner) is ast.Name or type(inner) is ast.NamespaceTarget:
            symbols.load(inner.name)


def _store_target(symbols: _Symbols, target: Any, as_parameter: bool = False) -> None:
    for inner in ast.walk(target):
        if type(inner) is ast.NameTarget:
            (symbols.declare_parameter if as_parameter else symbols.store)(inner.name)
        elif type(inner) is ast.NamespaceTarget:  # `ns.attr`: reads ns
            symbols.load(inner.name)


def _visit(symbols: _Symbols, node: Any) -> None:
    """One statement of a frame, as Jinja2's FrameSymbolVisitor sees it: the parts that run in
    this frame only; statements opening frames of their own stop at their outer parts."""
    kind = type(node)
    if kind is ast.Text or kind is ast.Block or kind is ast.AutoEscape:
        return  # autoescape is a Scope in Jinja2: even its value is read inside
    if kind is ast.If:
        _visit_if(symbols, node.branches, node.otherwise)
    elif kind is ast.Assign:
        _load_all(symbols, node.expr)  # the value first: `set x = x` reads x
        _store_target(symbols, node.target)
    elif kind is ast.AssignBlock:
        _store_target(symbols, node.target)
    elif kind is ast.Macro:
        symbols.store(node.name)
    elif kind is ast.Import:
        _load_all(symbols, node.template)
        symbols.store(node.target)
    elif kind is ast.FromImport:
        _load_all(symbols, node.template)
        for _, alias in node.names:
            symbols.store(alias)
    elif kind in _OUTER_PARTS:
        _load_all(symbols, getattr(node, _OUTER_PARTS[kind]))
    elif kind is ast.With:
        _load_all(symbols, tuple(value for _, value in node.targets))
    elif frame_fields(kind):  # an extension's statement with frames (generation: a call block)
        inner = frame_fields(kind)
        _load_all(symbols, tuple(getattr(node, name) for name in _fields(kind) if name not in inner))
    else:  # output, include, extends, an extension's statement without frames (do, break)
        for child in ast.children(node):
            if isinstance(child, ast.Stmt):
                _visit(symbols, child)
            else:
                _load_all(symbols, child)


# What of these statements runs in the enclosing frame; the rest is in frames of their own.
_OUTER_PARTS = {ast.For: "iter", ast.CallBlock: "call", ast.FilterBlock: "filters"}


def _visit_if(symbols: _Symbols, branches: tuple, otherwise: tuple) -> None:
    """Jinja2's If is `test, body, elif_ (a list of Ifs), else_`, each branch in a copy of the
    table; the `elif`s share one copy, each merging its own branch into it."""
    (test, body), elifs = branches[0], branches[1:]
    _load_all(symbols, test)
    first = symbols.copy()
    _analyse_body(first, body)
    shared = symbols.copy()
    for elif_test, elif_body in elifs:
        _load_all(shared, elif_test)
        branch = shared.copy()
        _analyse_body(branch, elif_body)
        shared.merge_branches([branch, shared.copy(), shared.copy()])
    last = symbols.copy()
    _analyse_body(last, otherwise)
    symbols.merge_branches([first, shared, last])


def _fields(kind: type) -> tuple[str, ...]:
    return tuple(name for name in kind.__dataclass_fields__ if name != "span")


# ---------------------------------------------------------------------------- the frames entered

def _enter(symbols: _Symbols, body: Iterable, found: set[str]) -> None:
    """Record this frame's resolved names, then enter the frames its statements open (an `if`
    opens none: its branches' statements are this frame's)."""
    found.update(symbols.resolved())
    for node in _openers(body):
        for inner, statements in _inner_frames(node, symbols):
            _enter(inner, statements, found)


def _openers(body: Iterable) -> Iterator[Any]:
    for node in body:
        kind = type(node)
        if kind is ast.If:
            for _, branch in node.branches:
                yield from _openers(branch)
            yield from _openers(node.otherwise)
        elif kind is ast.Block:
            continue  # entered afresh, from the template
        elif kind in _FRAMED or frame_fields(kind):
            yield node
        else:  # an extension's statement without frames runs its statements in this one
            yield from _openers(child for child in ast.children(node) if isinstance(child, ast.Stmt))


_FRAMED = (ast.For, ast.Macro, ast.CallBlock, ast.FilterBlock, ast.With, ast.AssignBlock,
           ast.AutoEscape)


def _inner_frames(node: Any, outer: _Symbols) -> list[tuple[_Symbols, tuple]]:
    """(analysed table, statements) of each frame `node` opens, in the order Jinja2 enters them."""
    kind = type(node)
    frame = _Symbols(outer)
    if kind is ast.For:
        return _loop_frames(node, outer)
    if kind is ast.Macro or kind is ast.CallBlock:
        return [(_function_frame(frame, node.params, node.body), node.body)]
    if kind is ast.With:
        for target, _ in node.targets:
            _store_target(frame, target)
    elif kind is ast.AutoEscape:
        _load_all(frame, node.value)
    elif kind is ast.FilterBlock:  # its body first, then its filters (already read outside)
        _analyse_body(frame, node.body)
        _load_all(frame, node.filters)
        return [(frame, node.body)]
    elif kind not in _FRAMED:  # an extension's: a function body gets what a call block's gets
        return [(_function_frame(_Symbols(outer), (), getattr(node, name)), getattr(node, name))
                for name in frame_fields(kind) if isinstance(getattr(node, name), tuple)]
    _analyse_body(frame, node.body)
    return [(frame, node.body)]


def _function_frame(frame: _Symbols, params: tuple, body: tuple) -> _Symbols:
    """A macro or call block: parameters, then their defaults, then the body; `caller`, `kwargs`
    and `varargs` become parameters when the body reads them before anything stores them."""
    for param in params:
        frame.declare_parameter(param.name)
    for param in params:
        if param.default is not None:
            _load_all(frame, param.default)
    _analyse_body(frame, body)
    own = {param.name for param in params}
    for name in _read_before_stored(body, MACRO_SPECIALS):
        if name not in own:
            frame.declare_parameter(name)
    return frame


def _loop_frames(node: ast.For, outer: _Symbols) -> list[tuple[_Symbols, tuple]]:
    frames = []
    if node.condition is not None:  # the `if` filter runs in a frame of its own, first
        test = _Symbols(outer)
        _store_target(test, node.target, as_parameter=True)
        _load_all(test, node.condition)
        frames.append((test, ()))
    body = _Symbols(outer)
    if (node.recursive or _read_before_stored(node.body, ("loop",))
            or any(type(n) is ast.Block and n.scoped for n in ast.walk(node))):
        body.declare_parameter("loop")
    _store_target(body, node.target, as_parameter=True)
    _analyse_body(body, node.body)
    frames.append((body, node.body))
    if node.otherwise:
        otherwise = _Symbols(outer)
        _analyse_body(otherwise, node.otherwise)
        frames.append((otherwise, node.otherwise))
    return frames


# ---------------------------------------------------------------------------- first mentions

def _read_before_stored(body: Iterable, names: Iterable[str]) -> set[str]:
    """Jinja2's `find_undeclared(body, names)`: those of `names` whose first mention, in its
    generic visiting order (not crossing blocks), is a read."""
    wanted, read = set(names), set()
    for name, is_read in _mentions(tuple(body)):
        if name in wanted:
            wanted.discard(name)
            if is_read:
                read.add(name)
    return read


def _mentions(node: Any) -> Iterator[tuple[str, bool]]:
    """(name, is_read) for every name in `node`, in the order of Jinja2's node fields."""
    kind = type(node)
    if isinstance(node, tuple):
        for item in node:
            yield from _mentions(item)
    elif kind is ast.Block:
        return
    elif kind is ast.Name:
        yield node.name, True
    elif kind is ast.NameTarget:
        yield node.name, False
    elif kind is ast.Parameter:
        yield node.name, False
    elif kind in _JINJA_ORDER:
        for part in _JINJA_ORDER[kind](node):
            yield from _mentions(part)
    else:
        for child in ast.children(node):
            yield from _mentions(child)


_JINJA_ORDER = {
    # Assign is (target, node) in Jinja2; For is (target, iter, body, else_, test)
    ast.Assign: lambda n: (n.target, n.expr),
    ast.For: lambda n: (n.target, n.iter, n.body, n.otherwise, n.condition or ()),
    # macros and call blocks list all parameters, then all defaults
    ast.Macro: lambda n: (n.params, tuple(p.default for p in n.params if p.default)) + (n.body,),
    ast.CallBlock: lambda n: (n.call, n.params, tuple(p.default for p in n.params if p.default),
                              n.body),
    ast.FilterBlock: lambda n: (n.body, n.filters),
    ast.With: lambda n: (tuple(t for t, _ in n.targets), tuple(v for _, v in n.targets), n.body),
}
