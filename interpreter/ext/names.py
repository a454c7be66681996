"""Extensions by name: the shipped ones (`loopcontrols`, `do`, `generation`) are imported
when a name is first asked for, so that the core runs without them."""
from __future__ import annotations

from typing import Iterable

from ..grammar.compose import ExtensionError
from .api import Extension


def resolve(extensions: Iterable[Extension | str]) -> tuple[Extension, ...]:
    """Extension objects and names to a deterministic tuple (ordered by name, no repeats)."""
    found: dict[str, Extension] = {}
    for item in extensions:
        if isinstance(item, str):
            item = shipped(item)
        if not isinstance(item, Extension):
            raise TypeError(f"not an Extension: {item!r}")
        other = found.get(item.name)
        if other is not None and other is not item and other != item:
            raise ExtensionError(f"two different extensions are named {item.name!r}", [item.name])
        found[item.name] = item
    return tuple(found[name] for name in sorted(found))


def shipped(name: str) -> Extension:
    """A shipped extension by name or alias. Imported here, late: the core does not need them."""
    from .shipped import SHIPPED
    if name not in SHIPPED:
        raise ValueError(f"unknown extension {name!r}; known: {sorted(SHIPPED)}")
    return SHIPPED[name]
