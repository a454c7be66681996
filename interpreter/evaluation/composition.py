"""Template composition as Jinja2 runs it: `extends` and `block`, `include`, `import` and
`from ... import`.

One render may run several templates: the parents a template extends, the templates it includes
or imports. Each runs on an evaluator of its own (its name and source for errors, its
compile-time facts), all sharing the render's budget. An inheritance chain shares a `Chain`: the
definitions of each block, most derived first, and the top-level scope (the context), where the
top-level `set`s of the child and of its parents go and which every block sees.
"""
from __future__ import annotations

from typing import Any, Iterable, Optional

from .autoescape import autoescaping, initial, set_autoescape
from ..errors import LimitExceeded, TemplateAssertionError, TemplateRuntimeError
from ..grammar import ast
from ..loaders import TemplateNotFound
from ..values.markup import _wrap
from ..values.marks import concat
from ..values.runtime import BlockReference, TemplateModule, TemplateReference
from .scope import Scope
from ..values.undefined import MISSING
from .loops import LoopSignal
from .printer import reprint

TOPLEVEL_BLOCKS = "toplevel blocks"  # the memo's key: ids of the blocks outside loops and macros
MAX_CHAIN = 100  # parents in one inheritance chain (a template that extends itself never ends)


class Chain:
    """What the templates of one inheritance chain share while rendering."""

    __slots__ = ("name", "blocks", "top", "base", "out", "imported", "undefined")

    def __init__(self, name: Optional[str], top: Scope, base: Scope, out: list, undefined: type) -> None:
        self.name = name  # of the template rendered
        self.blocks: dict[str, list[tuple[ast.Block, Any]]] = {}  # (block, its template's evaluator)
        self.top = top            # the context: top-level names of every template in the chain
        self.base = base          # the globals, below the context ("without context" sees these)
        self.out = out            # the render's output
        self.imported: set[str] = set()  # top-level names bound by imports: not exported
        self.undefined = undefined


# ---------------------------------------------------------------------------- compile time

def analyse(tree: ast.Template) -> tuple[dict[str, ast.Block], frozenset[int], frozenset[int]]:
    """A template's blocks by name; which of them stand at its top level (the template's own
    body or `if`s in it: where `extends` may stand, and where a child's blocks replace its own);
    and the text and outputs that are not printed once the template has extended a parent (all
    but those in the bodies of macros, call blocks, blocks and block `set`s, which Jinja2
    compiles as functions of their own). Refuses what Jinja2's compiler refuses."""
    blocks: dict[str, ast.Block] = {}
    toplevel: set[int] = set()
    guarded: set[int] = set()
    stack: list[tuple[Any, bool, bool]] = [(node, True, True) for node in reversed(tree.body)]
    while stack:
        node, top, guard = stack.pop()
        kind = type(node)
        if guard and (kind is ast.Text or kind is ast.Output):
            guarded.add(id(node))
        if kind is ast.Block:
            if node.name in blocks:
                raise TemplateAssertionError(f"block {node.name!r} defined twice",
                                             lineno=node.span.line, column=node.span.column)
            blocks[node.name] = node
            if top:
                toplevel.add(id(node))
        elif kind is ast.Extends and not top:
            raise TemplateAssertionError("cannot use extend from a non top-level scope",
                                         lineno=node.span.line, column=node.span.column)
        inner = [child for child in ast.children(node) if isinstance(child, ast.Stmt)]
        guard_inner = guard and kind not in _FUNCTION_BODIES and not getattr(kind, "jinja_function_field", None)
        stack.extend((child, top and kind is ast.If, guard_inner) for child in reversed(inner))
    return blocks, frozenset(toplevel), frozenset(guarded)


_FUNCTION_BODIES = (ast.Macro, ast.CallBlock, ast.Block, ast.AssignBlock)


def composes(nodes: Iterable[Any]) -> bool:
    """Whether rendering a template of these nodes (all of its tree's) needs a chain: blocks,
    composition tags, or `self`."""
    return any(type(node) in _COMPOSING or (type(node) is ast.Name and node.name == "self")
               for node in nodes)


_COMPOSING = (ast.Block, ast.Extends, ast.Include, ast.Import, ast.FromImport)


# ---------------------------------------------------------------------------- running

def run_template(ev: Any, template: Any, top: Scope, base: Scope) -> list:
    """Run `template` on `ev` in the top-level scope `top`, then the parents it extends; the
    output written, in order."""
    chain = Chain(template.name, top, base, ev.out, ev.undefined)
    ev.chain = chain
    for name, block in template.blocks.items():
        chain.blocks[name] = [(block, ev)]
    ev.run(template.tree.body, top)
    current, depth = ev, 0
    while current.parent is not None:
        current, depth = current.parent, depth + 1
        if depth > MAX_CHAIN:
            raise LimitExceeded(f"more than {MAX_CHAIN} templates extend one another")
        current.out = chain.out
        current.run(current.template.tree.body, top)
    return chain.out


def evaluator_for(ev: Any, template: Any) -> Any:
    """An evaluator for another template of the same render: the same budget."""
    sub = type(ev)(template.environment, template.environment.handlers, template.name,
                   template.source, template.memo)
    sub.budget = ev.budget
    sub.template = template
    if sub.env.autoescape:
        sub.default_autoescape = initial(sub.env, template.name)
        set_autoescape(sub, sub.default_autoescape)
    return sub


def run_nested(ev: Any, template: Any, top: Scope) -> tuple[list, Any]:
    """Render an included or imported template: its output, and the top-level names its own
    imports bound (which a module does not export)."""
    sub = evaluator_for(ev, template)
    ev.budget.enter()
    try:
        if template.composes:
            return run_template(sub, template, top, ev.chain.base), sub.chain.imported
        sub.run(template.tree.body, top)  # no blocks, no imports: no chain needed
        return sub.out, ()
    except LoopSignal:
        raise TemplateRuntimeError("break or continue outside of a loop") from None
    finally:
        ev.budget.leave()


def load(ev: Any, value: Any, select: bool = False) -> Any:
    """The template a name (or a template; with `select`, also a list of them) stands for."""
    if select:
        return ev.env.get_or_select_template(value, ev.name)
    return ev.env.get_template(value, ev.name)


# ---------------------------------------------------------------------------- blocks

def render_block(chain: Chain, name: str, index: int, outer: Scope, target: list) -> None:
    """Write the `index`-th definition of block `name` (0: the most derived) into `target`."""
    block, owner = chain.blocks[name][index]
    names = {"super": _super(chain, name, index, outer)}
    saved, owner.out = owner.out, target
    owner.budget.enter()
    try:  # a block is compiled at its template's top level: that template's autoescaping
        with autoescaping(owner, owner.default_autoescape):
            owner.run(block.body, Scope(outer, names))
    finally:
        owner.out = saved
        owner.budget.leave()


def block_reference(chain: Chain, name: str, index: int, outer: Optional[Scope] = None
                    ) -> BlockReference:
    """The `index`-th definition of block `name`, rendered in `outer` (by default the top
    level; `super()` in a scoped block passes the block's scope, loop variables included)."""
    where = chain.top if outer is None else outer

    def render() -> str:
        out: list = []
        render_block(chain, name, index, where, out)
        text = concat(out)
        return _wrap(text) if chain.blocks[name][index][1].default_autoescape else text
    return BlockReference(name, render, lambda: _super(chain, name, index, where))


def _super(chain: Chain, name: str, index: int, outer: Optional[Scope] = None) -> Any:
    """What `super` is in the `index`-th definition of a block: the next one up (rendered in
    the same scope as this one, as Jinja2 passes the block's context), or undefined."""
    if index + 1 < len(chain.blocks[name]):
        return block_reference(chain, name, index + 1, outer)
    return chain.undefined(f"there is no parent block called {name!r}.", name="super")


def template_reference(chain: Chain) -> TemplateReference:
    """`self`: `self.name()` renders the most derived definition of block `name`."""
    def block(name: str) -> BlockReference:
        if name not in chain.blocks:
            raise KeyError(name)
        return block_reference(chain, name, 0)
    return TemplateReference(chain.name, block)


# ---------------------------------------------------------------------------- handlers

def exec_extends(ev: Any, node: ast.Extends, scope: Scope) -> None:
    if ev.parent is not None:
        raise TemplateRuntimeError("extended multiple times")
    template = load(ev, ev.eval(node.template, scope))
    parent = evaluator_for(ev, template)
    for name, block in template.blocks.items():
        ev.chain.blocks.setdefault(name, []).append((block, parent))
    parent.chain = ev.chain
    ev.parent = parent
    # From here on the parent writes the page: this template's text and outputs are no longer
    # even evaluated (Jinja2 guards them), except in bodies that run as functions (macros).
    ev.guarding = True
    reprint(ev)


def exec_block(ev: Any, node: ast.Block, scope: Scope) -> None:
    if ev.parent is not None and id(node) in ev.memo[TOPLEVEL_BLOCKS]:
        return  # a child's block: its parent places it
    chain = ev.chain
    if node.required and len(chain.blocks[node.name]) <= 1:
        raise TemplateRuntimeError(f"Required block {node.name!r} not found")
    render_block(chain, node.name, 0, scope if node.scoped else chain.top, ev.out)


def exec_include(ev: Any, node: ast.Include, scope: Scope) -> None:
    try:
        template = load(ev, ev.eval(node.template, scope), select=True)
    except TemplateNotFound:
        if node.ignore_missing:
            return
        raise
    ev.out.extend(run_nested(ev, template, _context(ev, scope if node.with_context else None))[0])


def _context(ev: Any, scope: Optional[Scope]) -> Scope:
    """The top-level scope of an included or imported template: this template's names where it
    is rendered (but `loop`, as in Jinja2), or only the globals."""
    if scope is None:
        return Scope(ev.chain.base, {})
    return Scope(Scope(scope, {"loop": MISSING}), {})


def make_module(ev: Any, template: Any, scope: Optional[Scope]) -> TemplateModule:
    """Render `template` as a module: with `scope` as its context, or only the globals."""
    top = _context(ev, scope)
    out, imported = run_nested(ev, template, top)
    exports = {name: value for name, value in top.vars.items()
               if name[:1] != "_" and value is not MISSING and name not in imported}
    return TemplateModule(template.name, exports, concat(out))


def exec_import(ev: Any, node: ast.Import, scope: Scope) -> None:
    template = load(ev, ev.eval(node.template, scope))
    scope.vars[node.target] = make_module(ev, template, scope if node.with_context else None)
    if scope is ev.chain.top:
        ev.chain.imported.add(node.target)


def exec_from_import(ev: Any, node: ast.FromImport, scope: Scope) -> None:
    template = load(ev, ev.eval(node.template, scope))
    module = make_module(ev, template, scope if node.with_context else None)
    where = f"line {node.span.line}" + (f" in {ev.name!r}" if ev.name is not None else "")
    for name, alias in node.names:
        value = module.exports.get(name, MISSING)
        if value is MISSING:
            value = ev.undefined(f"the template {template.name!r} (imported on {where}) does not "
                                 f"export the requested name {name!r}", name=name)
        scope.vars[alias] = value
        if scope is ev.chain.top:
            ev.chain.imported.add(alias)


COMPOSITION = {
    ast.Extends: exec_extends,
    ast.Block: exec_block,
    ast.Include: exec_include,
    ast.Import: exec_import,
    ast.FromImport: exec_from_import,
}
