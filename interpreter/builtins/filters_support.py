"""What the built-in filters share: text conversion, attribute paths, the argument error."""
from __future__ import annotations

from typing import Any, Callable, Optional

from ..errors import TemplateRuntimeError
from ..values.undefined import Undefined
from ..values.printing import to_string


class FilterArgumentError(TemplateRuntimeError):
    """A filter was given arguments it cannot work with (Jinja2's own error of that name)."""


def text(value: Any) -> str:
    """A string as it is (marks, Markup kept); anything else as `{{ value }}` prints it."""
    return value if isinstance(value, str) else to_string(value)


def ignore_case(value: Any) -> Any:
    """The sort key of case-insensitive filters: strings lowered, anything else as it is."""
    return value.lower() if isinstance(value, str) else value


def attribute_path(attribute: Any) -> list:
    """'a.b.0' -> ['a', 'b', 0]: dots separate steps, all-digit steps are indexes."""
    if attribute is None:
        return []
    if isinstance(attribute, str):
        return [int(part) if part.isdigit() else part for part in attribute.split(".")]
    return [attribute]


def make_attrgetter(env: Any, attribute: Any, postprocess: Optional[Callable] = None,
                    default: Any = None) -> Callable[[Any], Any]:
    """A function reading `attribute` (a dotted path) of an item, the way templates subscript.
    A `default` (when not None) replaces an undefined step."""
    path = attribute_path(attribute)
    direct = getattr(type(env), "getitem", None) is BASE_GETITEM  # not a subclass's own

    def get(item: Any) -> Any:
        for step in path:
            # a plain dict's key (`selectattr('role', ...)` per message): what get_item finds
            # first, without the sandbox's round
            found = item.get(step, _ABSENT) if direct and type(item) is dict else _ABSENT
            item = env.getitem(item, step) if found is _ABSENT else found
            if default is not None and isinstance(item, Undefined):
                item = default
        return postprocess(item) if postprocess is not None else item
    return get


BASE_GETITEM: Any = None  # Environment.getitem, set by environment.py (which imports this module)
_ABSENT = object()


def make_multi_attrgetter(env: Any, attribute: Any,
                          postprocess: Optional[Callable] = None) -> Callable[[Any], list]:
    """Like `make_attrgetter`, for a comma separated list of paths: a list of values per item."""
    attributes = attribute.split(",") if isinstance(attribute, str) else [attribute]
    getters = [make_attrgetter(env, one, postprocess) for one in attributes]

    def get(item: Any) -> list:
        return [getter(item) for getter in getters]
    return get
