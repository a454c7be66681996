"""The spans of a compiled template's nodes kept together, in one array, instead of one int
object per node.

A compiled template keeps its tree for as long as it lives, and a span per node was a quarter of
what it kept (an int object of 32 bytes each). Once the template is compiled, `share` moves the
spans of its nodes into one `array` of 8 bytes a node, and each node's span slot points at that
array's holder, `SharedSpans`. Reading `node.span` then finds the node's place in the tree: spans
are read for errors and reports, not while rendering, so the place is looked up only then (the
places of the last template asked are kept, for an error's way out through nested statements).
A span too wide for 64 bits stays with its node, and so does the span of a node a render reads
(see `share`; tests/test_memory.py renders the corpus and finds no look-up).
"""
from __future__ import annotations

from array import array
from weakref import ref
from typing import Any, Iterator

from . import ast
from .spans import Span


class SharedSpans:
    """The packed spans of the nodes under `root`, in the order `_owners` visits them."""

    __slots__ = ("root", "packed", "__weakref__")

    def __init__(self, root: Any) -> None:
        self.root, self.packed = root, array("Q")

    def of(self, node: Any) -> Span:
        global _last
        table, places = _last
        if table() is not self:
            places = {id(owner): place for place, owner in enumerate(_owners(self.root, self))}
            _last = (ref(self), places)
        return int.__new__(Span, self.packed[places[id(node)]])


# The table asked last, by a weak reference (a template dropped after an error is freed, tree
# and all), and its nodes' places; to start with, a reference that is already dead.
_last: tuple = (lambda: None, None)


def _owners(root: Any, table: SharedSpans) -> Iterator[Any]:
    """The nodes under `root` whose span `table` keeps, each once, in the order share gave them."""
    seen: set[int] = set()
    for node in ast.walk(root):
        if _keeps_span(node.__class__) and id(node) not in seen and _SLOT.__get__(node) is table:
            seen.add(id(node))
            yield node


_SLOT = ast.Node._span  # the slot a node's span is kept in (records.Packed)
_SPAN = ast.Node.span   # the property reading it
_KEEPS: dict[type, bool] = {}


def _keeps_span(kind: type) -> bool:
    """Whether nodes of `kind` keep their span in the slot (not a record that is no node, nor
    an extension's node that keeps it in a field of its own)."""
    keeps = _KEEPS.get(kind)
    if keeps is None:
        keeps = _KEEPS[kind] = issubclass(kind, ast.Node) and getattr(kind, "span", None) is _SPAN
    return keeps


def share(root: Any) -> list:
    """Move the spans of the nodes under `root` into one SharedSpans (see the module doc).
    Returns what it walked, every node and record under `root` in `ast.walk`'s order: the
    compile's other questions about the whole tree are asked of that list, not by a walk each.
    A node a render reads the span of keeps its own: `a if b` without `else`, whose undefined
    value names its line (compiled with its closure)."""
    table = SharedSpans(root)
    keep, read, write = table.packed.append, _SLOT.__get__, _SLOT.__set__
    condition = ast.CondExpr
    walked = list(ast.walk(root))
    for node in walked:
        kind = node.__class__
        if not _keeps_span(kind) or (kind is condition and node.otherwise is None):
            continue
        value = read(node)
        if value.__class__ is int and 0 <= value < _WIDEST:
            keep(value)
            write(node, table)
    return walked


_WIDEST = 1 << 64  # what one item of the array holds


__all__ = ["SharedSpans", "share"]
