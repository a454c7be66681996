"""What a server needs to know about a chat template before it renders one: `jinjamark.analyze`.

- `variables`: the names it reads from its context, equal to `jinja2.meta.find_undeclared_variables`
  (vLLM keeps only these keys of a request's `chat_template_kwargs`).
- `content_format`: 'openai' when the template loops over a message's content (it takes a list of
  typed parts), directly or through a macro's parameter, else 'string': the decision vLLM makes by
  walking Jinja2's AST.
- `has_generation`: it marks assistant text with `{% generation %}` (assistant masks work).
- `keys`: the attribute and key names it reads (`message.role`, `tool_call['id']`, `'x' in m`).
- `capabilities`: what it can render (system role, tools, tool calls, ...), see `capabilities`.
- `assembled_tokens`: control tokens it builds from its own text and input together
  (`'<|' + message['role'] + '|>'`), see `assembled`.
- `append_only`: whether each turn's prompt is a prefix of the next (what a prefix cache needs),
  why not, and which keyword arguments make it so (prefixes.py; probed when first read).

Everything but the capabilities comes from the AST alone; the capabilities are read from the AST
and confirmed by small probe renders.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Callable, Iterator, Literal, Mapping, Optional

from ..grammar import ast
from .assembled import assembled_tokens
from .capabilities import Capabilities, probe_capabilities
from .profile import shared_environment
from .variables import undeclared_variables

__all__ = ["Analysis", "Capabilities", "analyze", "content_format", "template_variables"]

ContentFormat = Literal["string", "openai"]
PROBE_TOKENS = {"bos_token": "<s>", "eos_token": "</s>"}


@dataclass(frozen=True)
class Analysis:
    """What `analyze` found in a chat template (see the module's documentation)."""
    variables: frozenset[str]
    content_format: ContentFormat
    has_generation: bool
    keys: frozenset[str]
    capabilities: Capabilities
    assembled_tokens: tuple = ()  # control tokens built from template text and input (assembled.py)
    source: Optional[str] = field(default=None, repr=False, compare=False)
    special_tokens: Optional[Mapping[str, Any]] = field(default=None, repr=False, compare=False)

    @cached_property
    def append_only(self) -> Any:
        """An `AppendOnlyAnalysis` (prefixes.py): probed when first read, as it renders the
        probe conversation's every prefix, a few times over."""
        from .prefixes import AppendOnlyAnalysis, analyse_append_only  # noqa: PLC0415
        if self.source is None:
            return AppendOnlyAnalysis(None)
        from .template import ChatTemplate  # noqa: PLC0415 - template.py imports analysis
        return analyse_append_only(ChatTemplate(self.source, special_tokens=self.special_tokens),
                                   self.variables)


def analyze(source: str, special_tokens: Optional[Mapping[str, Any]] = None) -> Analysis:
    """Analyse the chat template `source` (the transformers profile). The probe renders get
    `special_tokens` (default `<s>` and `</s>` as BOS and EOS). A template that does not parse
    raises its `TemplateSyntaxError`."""
    from ..ext.shipped import Generation  # the profile's tag; the core imports without it
    tree = _compiled(source)
    variables = undeclared_variables(tree, shared_environment().globals)
    keys = keys_read(tree)
    tokens = dict(PROBE_TOKENS if special_tokens is None else special_tokens)
    return Analysis(variables=variables, content_format=content_format(tree),
                    has_generation=any(type(node) is Generation for node in ast.walk(tree)),
                    keys=keys, capabilities=probe_capabilities(source, tokens, variables, keys),
                    assembled_tokens=assembled_tokens(source, tokens), source=source,
                    special_tokens=tokens)


def template_variables(source: str) -> frozenset[str]:
    """Only the `variables` of `analyze(source)` (no probe renders)."""
    return undeclared_variables(_compiled(source), shared_environment().globals)


def _compiled(source: str) -> ast.Template:
    """The template's AST, after the checks Jinja2's compiler makes (it refuses what they do)."""
    return shared_environment().from_string(source).tree


def keys_read(tree: ast.Template) -> frozenset[str]:
    """The constant names the template reads off values: `x.name`, `x['name']`, `x.get('name')`
    and `'name' in x` (also `'text' in x.content`: a superset). Methods called (`x.strip()`) and
    the loop's own attributes (`loop.last`) are left out."""
    nodes = list(ast.walk(tree))
    methods = {id(node.func) for node in nodes if type(node) is ast.Call}
    found = set()
    for node in nodes:
        kind = type(node)
        if kind is ast.GetAttr and isinstance(node.attr, str) and id(node) not in methods:
            if not (type(node.obj) is ast.Name and node.obj.name == "loop"):
                found.add(node.attr)
        elif kind is ast.GetItem and type(node.key) is ast.Const and isinstance(node.key.value, str):
            found.add(node.key.value)
        elif (kind is ast.Call and type(node.func) is ast.GetAttr and node.func.attr == "get"
              and node.arguments.args and type(node.arguments.args[0]) is ast.Const
              and isinstance(node.arguments.args[0].value, str)):
            found.add(node.arguments.args[0].value)
        elif kind is ast.Compare and type(node.first) is ast.Const and isinstance(node.first.value, str):
            if node.ops[0][0] in ("in", "not in"):
                found.add(node.first.value)
    return frozenset(found)


# ---------------------------------------------------------------------------- vLLM's content format

def content_format(tree: ast.Template) -> ContentFormat:
    """'openai' when some loop iterates over a message's content, as vLLM's walk finds one
    (`_iter_nodes_assign_content_item` in vllm/renderers/hf.py), else 'string'. A message is the
    target of a loop over `messages` (or a `set` alias of it, transitively); a loop is over its
    content when it iterates over

    - `message['content']` (or `.content`), through filters, tests and slices;
    - inside a macro, a parameter (a plain name) that some call of the macro fills with such
      content, by position or keyword (the innermost macro that has such parameters decides);
    - outside every macro, a variable named `content` (`{% set content = message.content %}`:
      vLLM goes by the name, not by where it was assigned).

    Where vLLM's walk fails (an alias or loop target that is not a plain name) it falls back to
    its default, 'string', and so does this."""
    try:
        return "openai" if next(_content_loops(tree), None) is not None else "string"
    except _NotAName:
        return "string"


class _NotAName(Exception):
    """A matching `set` or `for` whose target is not one name (vLLM's failed assertion)."""


def _reads(node: Any, name: str, key: Optional[str] = None) -> bool:
    """`name` (or `name.key`, `name['key']`) possibly under filters, a test, or a slice."""
    kind = type(node)
    if kind is ast.Filter:
        return node.value is not None and _reads(node.value, name, key)
    if kind is ast.Test:  # `x is not t` is a Not around a Test in Jinja2's AST: not matched
        return not node.negated and _reads(node.value, name, key)
    if kind is ast.GetItem and type(node.key) is ast.Slice:
        return _reads(node.obj, name, key)
    if key is None:
        return kind is ast.Name and node.name == name
    if kind is ast.GetItem:
        inner, matches = node.obj, type(node.key) is ast.Const and node.key.value == key
    elif kind is ast.GetAttr:
        inner, matches = node.obj, node.attr == key
    else:
        return False
    return matches and type(inner) is ast.Name and inner.name == name


def _target_name(target: Any) -> str:
    if type(target) is not ast.NameTarget:
        raise _NotAName()
    return target.name


def _aliases(tree: ast.Template, name: str) -> list[str]:
    """`name` and every name a `set` makes of it (or of such an alias), transitively."""
    found, queue = [name], deque([name])
    assigns = [node for node in ast.walk(tree) if type(node) is ast.Assign]
    while queue:
        current = queue.popleft()
        for node in assigns:
            if _reads(node.expr, current):
                alias = _target_name(node.target)
                if alias not in found:  # vLLM loops forever on `a = b` with `b = a`; we stop
                    found.append(alias)
                    queue.append(alias)
    return found


def _content_loops(tree: ast.Template) -> Iterator[ast.For]:
    loops = [node for node in ast.walk(tree) if type(node) is ast.For]
    messages = _aliases(tree, "messages")
    message_names = [_target_name(loop.target) for loop in loops
                     if any(_reads(loop.iter, name) for name in messages)]

    def is_content(node: Any) -> bool:
        return any(_reads(node, name, "content") for name in message_names)

    fed = _fed_parameters(tree, is_content)
    for loop in loops:
        if is_content(loop.iter) or _iterates_fed_name(loop, fed):
            _target_name(loop.target)
            yield loop


def _iterates_fed_name(loop: ast.For, fed: dict[int, frozenset[str]]) -> bool:
    """Whether `loop` iterates over a plain name that vLLM takes for a message's content: a
    parameter fed one (inside a macro), or `content` (outside every macro)."""
    if type(loop.iter) is not ast.Name:
        return False
    parameters = fed.get(id(loop))  # None: the loop is in no macro
    return loop.iter.name == "content" if parameters is None else loop.iter.name in parameters


def _fed_parameters(tree: ast.Template,
                    is_content: Callable[[Any], bool]) -> dict[int, frozenset[str]]:
    """For every loop inside a macro (by id): the parameters that calls fill with a message's
    content, of the innermost enclosing macro that has any (empty when none has)."""
    calls = [node for node in ast.walk(tree)
             if type(node) is ast.Call and type(node.func) is ast.Name]
    found: dict[int, frozenset[str]] = {}
    for macro in (node for node in ast.walk(tree) if type(node) is ast.Macro):
        parameters = _parameters_given_content(macro, calls, is_content)
        for node in ast.walk(macro.body):  # outer macros come first: an inner one overrides
            if type(node) is ast.For and (parameters or id(node) not in found):
                found[id(node)] = parameters
    return found


def _parameters_given_content(macro: ast.Macro, calls: list[ast.Call],
                              is_content: Callable[[Any], bool]) -> frozenset[str]:
    """The parameters of `macro` that some call by its name passes a message's content to."""
    names = [parameter.name for parameter in macro.params]
    given: set[str] = set()
    for call in calls:
        if call.func.name == macro.name:
            arguments = call.arguments
            given.update(name for name, value in zip(names, arguments.args) if is_content(value))
            given.update(key for key, value in arguments.kwargs if key in names and is_content(value))
    return frozenset(given)
