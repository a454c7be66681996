"""Jinja2's Template API beyond rendering to a string: streams, modules, `finalize`.

`Template.stream()` gives a `TemplateStream` over the output's pieces; `Template.module` and
`make_module` the names a template exports, as `{% import %}` sees them; an environment's
`finalize` is applied to every `{{ }}` value before it is printed.
"""
from __future__ import annotations

from typing import IO, Any, Callable, Iterator, Optional, Union

from . import limits
from .evaluation.contexts import ASSIGNED, assigned_names
from .evaluation.evaluator import Evaluator
from .grammar import ast
from .values.marks import concat
from .values.runtime import TemplateModule
from .evaluation.scope import Scope
from .errors import TemplateSyntaxError
from .values.undefined import MISSING, Undefined


class TemplateStream:
    """The output of a render as an iterator of strings, one per piece the template wrote
    (Jinja2's: `enable_buffering(size)` joins `size` non-empty pieces at a time)."""

    def __init__(self, gen: Iterator[str]) -> None:
        self._gen = gen
        self._next: Callable[[], str] = gen.__next__
        self.buffered = False

    def disable_buffering(self) -> None:
        self._next = self._gen.__next__
        self.buffered = False

    def enable_buffering(self, size: int = 5) -> None:
        if size <= 1:
            raise ValueError("buffer size too small")
        self._next = _buffered(self._gen, size).__next__
        self.buffered = True

    def dump(self, fp: Union[str, IO[Any]], encoding: Optional[str] = None,
             errors: Optional[str] = "strict") -> None:
        """Write the whole output to a file (a path or a file object), encoded if asked."""
        close = isinstance(fp, str)
        real: IO[Any] = open(fp, "wb" if encoding else "w") if close else fp  # noqa: SIM115
        try:
            for piece in self:
                real.write(piece.encode(encoding, errors or "strict") if encoding else piece)
        finally:
            if close:
                real.close()

    def __iter__(self) -> "TemplateStream":
        return self

    def __next__(self) -> str:
        return self._next()


def _buffered(gen: Iterator[str], size: int) -> Iterator[str]:
    buffer: list[str] = []
    count = 0
    for piece in gen:
        buffer.append(piece)
        count += bool(piece)
        if count >= size:
            yield "".join(buffer)
            buffer, count = [], 0
    if count:
        yield "".join(buffer)


def module_of(template: Any, variables: dict) -> TemplateModule:
    """`template` rendered with `variables` as a module: the names its top level set (not
    those starting with '_', nor those its own imports bound), and its output."""
    env = template.environment
    ev = Evaluator(env, env.handlers, template.name, template.source, template.memo)
    top: dict = {}
    out = template._start(ev, top, variables)
    imported = ev.chain.imported if ev.chain is not None else ()
    exports = {name: value for name, value in top.items()
               if name[:1] != "_" and value is not MISSING and name not in imported}
    return TemplateModule(template.name, exports, concat(out))


# ---------------------------------------------------------------------------- expressions

class TemplateExpression:
    """An expression compiled on its own (`Environment.compile_expression`): call it with
    variables for its value, an undefined one as None when `undefined_to_none`."""

    def __init__(self, template: Any, undefined_to_none: bool) -> None:
        self._template = template
        self._undefined_to_none = undefined_to_none

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        template = self._template
        env = template.environment
        ev = Evaluator(env, env.handlers, None, template.source, template.memo)
        top = Scope(template.base_scope(), dict(*args, **kwargs))
        ev.top = top
        token = limits.activate(ev.budget)
        try:
            value = ev.eval(template.tree.body[0].expr, top)
        finally:
            limits.deactivate(token)
        if self._undefined_to_none and isinstance(value, Undefined):
            return None
        return value


def compile_expression(environment: Any, source: str, undefined_to_none: bool = True
                       ) -> TemplateExpression:
    """`source` parsed as one expression, as `{{ }}` holds it (a TemplateSyntaxError if it is
    not one)."""
    d = environment.delimiters
    wrapped = f"{d.variable_start_string} {source} {d.variable_end_string}"
    template = environment.from_string(wrapped)
    body = template.tree.body
    if len(body) != 1 or type(body[0]) is not ast.Output:
        raise TemplateSyntaxError("chunk after expression", lineno=1, column=1, source=source)
    return TemplateExpression(template, undefined_to_none)


class Memo(dict):
    """A template's memo, facts about its nodes found once (the evaluator's, the compiler's).
    The names `set` assigns (contexts.ASSIGNED) are found when first asked for (`memo[ASSIGNED]`;
    `get` is dict's own, which the evaluator calls for every render): only a host callable that
    takes the context needs them, and few templates call one."""
    __slots__ = ("_tree",)

    def __init__(self, tree: ast.Template, found: dict) -> None:
        super().__init__(found)
        self._tree = tree

    @property
    def tree(self) -> ast.Template:
        return self._tree

    def __missing__(self, key: Any) -> Any:
        if key != ASSIGNED:
            raise KeyError(key)
        found = self[ASSIGNED] = assigned_names(self._tree)
        return found
