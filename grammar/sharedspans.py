"""The spans of a compiled template's nodes kept together, in one array, instead of one int
object per node.

A compiled template keeps its tree for as long as it lives, and a span per node was a quarter of
what it kept (an int object of 32 bytes each). Once the template is compiled, `share` moves the
spans of its nodes into one `array` of 8 bytes a node, and each node's span slot points at that
array's holder, `SharedSpans`. Reading `node.span` then finds the node's place in the tree: spans
are read for errors and reports, not while rendering, so the place is looked up only then (the
places of the last template asked are kept, for an error's way out through nested statements).
A span too wide for 64 bits stays with its node, and so does the span of a node a render reads
(`_read_while_rendering`; tests/test_memory.py renders the corpus and finds no look-up).
"""
from __future__ import annotations

from array import array
from typing import Any, Iterator

from . import ast
from .spans import Span

_SPAN_SLOT = "_span"


class SharedSpans:
    """The packed spans of the nodes under `root`, in the order `_owners` visits them."""

    __slots__ = ("root", "packed")

    def __init__(self, root: Any) -> None:
        self.root, self.packed = root, array("Q")

    def of(self, node: Any) -> Span:
        global _last
        table, places = _last
        if table is not self:
            places = {id(owner): place for place, owner in enumerate(_owners(self.root, self))}
            _last = (self, places)
        return int.__new__(Span, self.packed[places[id(node)]])


_last: tuple = (None, None)  # the table asked last, and its nodes' places


def _owners(root: Any, table: SharedSpans) -> Iterator[Any]:
    """The nodes under `root` whose span `table` keeps, each once, in the order share gave them."""
    seen: set[int] = set()
    for node in ast.walk(root):
        if isinstance(node, ast.Node) and id(node) not in seen and _kept(node) is table:
            seen.add(id(node))
            yield node


def _kept(node: Any) -> Any:
    """What the node's span slot holds (None for an extension's node that keeps its span in a
    field of its own)."""
    try:
        return object.__getattribute__(node, _SPAN_SLOT)
    except AttributeError:
        return None


def _read_while_rendering(node: Any) -> bool:
    """A node whose span a render reads without an error: `a if b` without `else`, whose
    undefined value names its line (compiled with its closure). It keeps its own."""
    return type(node) is ast.CondExpr and node.otherwise is None


def share(root: Any) -> list:
    """Move the spans of the nodes under `root` into one SharedSpans (see the module doc).
    Returns what it walked, every node and record under `root` in `ast.walk`'s order: the
    compile's other questions about the whole tree are asked of that list, not by a walk each."""
    table = SharedSpans(root)
    keep = table.packed.append
    walked = list(ast.walk(root))
    for node in walked:
        if not isinstance(node, ast.Node) or _read_while_rendering(node):
            continue
        value = _kept(node)
        if value.__class__ is int and 0 <= value < 1 << 64:
            keep(value)
            object.__setattr__(node, _SPAN_SLOT, table)
    return walked


__all__ = ["SharedSpans", "share"]
