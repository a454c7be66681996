"""The built-in filters: every filter of Jinja2 3.1, under the same names and arguments.

A filter is `f(value, *args, **kwargs)`; one marked with `pass_environment` is called
`f(env, value, *args, **kwargs)`. The filters live by subject in `filters_text`,
`filters_sequence` and `filters_html`; the few about numbers and values are here.
"""
from __future__ import annotations

import math
from typing import Any, Callable

from . import filters_html as html
from .. import metering
from ..values import sandbox, access as values
from . import filters_sequence as seq
from . import filters_text as txt
from ..environment_tools import pass_environment
from ..errors import TemplateError
from .filters_support import FilterArgumentError
from ..values.hostcalls import keeps_marks
from ..values.methods import is_unsafe_method, lookup_method
from ..values.numbers import derived
from ..values.undefined import Undefined


def do_default(value: Any, default_value: Any = "", boolean: bool = False) -> Any:
    if isinstance(value, Undefined) or (boolean and not value):
        return default_value
    return value


def do_length(value: Any) -> int:
    """`len(value)`; a count of items or characters from input is input (`derived`)."""
    return derived(len(value), value)


def do_int(value: Any, default: int = 0, base: int = 10) -> int:
    """An int, from a number or a string in `base` ('0x1f' with base 16); '42.5' gives 42;
    `default` when neither works. A number read from input is input."""
    return derived(_int(value, default, base), value)


def _int(value: Any, default: int, base: int) -> int:
    try:
        if isinstance(value, str):
            return int(value, base)
        return int(value)
    except TemplateError:  # a ValueError too, but a strict undefined must still raise
        raise
    except (TypeError, ValueError):
        try:
            return int(float(value))
        except TemplateError:
            raise
        except (TypeError, ValueError, OverflowError):
            return default


def do_float(value: Any, default: float = 0.0) -> float:
    try:
        return derived(float(value), value)
    except TemplateError:
        raise
    except (TypeError, ValueError):
        return default


def do_round(value: Any, precision: int = 0, method: str = "common") -> float:
    if method not in {"common", "ceil", "floor"}:
        raise FilterArgumentError("method must be common, ceil or floor")
    if method == "common":
        return derived(round(value, precision), value)
    step = getattr(math, method)
    return derived(step(value * (10 ** precision)) / (10 ** precision), value)


@pass_environment
def do_attr(env: Any, obj: Any, name: Any) -> Any:
    """`obj.name`, but undefined (never obj['name']) when `obj` has no such attribute."""
    if not isinstance(name, str):
        raise TypeError(f"attribute name must be string, not {type(name).__name__!r}")
    if isinstance(obj, Undefined):  # Jinja2 asks the undefined itself, which fails (or chains)
        return env.getattr(obj, name)
    if not _has_attribute(obj, name):  # never an item, underscore names included
        return env.undefined(obj=obj, name=name)
    return env.getattr(obj, name)


def _has_attribute(obj: Any, name: str) -> bool:
    if name.startswith("_"):  # Python's (refused when used), or none
        return values.has_python_attribute(obj, name)
    if lookup_method(obj, name) is not None or is_unsafe_method(obj, name):
        return True
    if sandbox.is_host_object(obj):  # read as Jinja2's sandbox reads it
        return sandbox.host_attribute(obj, name) is not None
    reader = getattr(type(obj), "jinja_attribute", None)
    if reader is None:
        return False
    try:
        reader(obj, name)
    except KeyError:
        return False
    return True


FILTERS: dict[str, Callable] = {
    "abs": abs,
    "attr": do_attr,
    "batch": seq.do_batch,
    "capitalize": txt.do_capitalize,
    "center": txt.do_center,
    "count": do_length,
    "d": do_default,
    "default": do_default,
    "dictsort": seq.do_dictsort,
    "e": html.do_escape,
    "escape": html.do_escape,
    "filesizeformat": txt.do_filesizeformat,
    "first": seq.do_first,
    "float": do_float,
    "forceescape": html.do_forceescape,
    "format": txt.do_format,
    "groupby": seq.do_groupby,
    "indent": txt.do_indent,
    "int": do_int,
    "items": seq.do_items,
    "join": seq.do_join,
    "last": seq.do_last,
    "length": do_length,
    "list": seq.do_list,
    "lower": txt.do_lower,
    "map": seq.do_map,
    "max": seq.do_max,
    "min": seq.do_min,
    "pprint": txt.do_pprint,
    "random": seq.do_random,
    "reject": seq.do_reject,
    "rejectattr": seq.do_rejectattr,
    "replace": txt.do_replace,
    "reverse": seq.do_reverse,
    "round": do_round,
    "safe": html.do_mark_safe,
    "select": seq.do_select,
    "selectattr": seq.do_selectattr,
    "slice": seq.do_slice,
    "sort": seq.do_sort,
    "string": txt.do_string,
    "striptags": html.do_striptags,
    "sum": seq.do_sum,
    "title": txt.do_title,
    "tojson": html.do_tojson,
    "trim": txt.do_trim,
    "truncate": txt.do_truncate,
    "unique": seq.do_unique,
    "upper": txt.do_upper,
    "urlencode": html.do_urlencode,
    "urlize": html.do_urlize,
    "wordcount": txt.do_wordcount,
    "wordwrap": txt.do_wordwrap,
    "xmlattr": html.do_xmlattr,
}

# The work each filter does, per character or item of its arguments, charged before it runs
# (metering.py); what it builds is charged per character or item of its result. Comparing and
# hashing filters walk their items (sort, max, unique: in filters_sequence), lazy ones charge
# per item taken (map, select, batch); `length` and friends do no work worth metering.
_S, _C, _T, _R, _I = metering.SCAN, metering.COPY, metering.TEXT, metering.REGEX, metering.ITEM
_JOIN = 250  # an item printed and joined (Python steps per item for numbers and values)
_COSTS: dict[str, float] = {
    "capitalize": _T, "center": _C, "e": _T, "escape": _T, "forceescape": _T, "format": _C,
    "indent": _C, "join": _JOIN, "list": _I, "lower": _C, "replace": _C, "reverse": _I,
    "safe": _C, "string": _C, "striptags": _R, "sum": _I, "title": metering.TITLE, "tojson": _T,
    "trim": _S, "truncate": _C, "upper": _C, "urlencode": _T, "urlize": metering.LINKS, "wordcount": _R,
    "wordwrap": metering.WRAP, "xmlattr": _T, "items": _I, "pprint": _T, "filesizeformat": 0,
    "first": 0, "last": 0, "random": 0, "dictsort": 0, "groupby": 0, "max": 0, "min": 0,
    "sort": 0, "unique": 0, "map": 0, "select": 0, "reject": 0, "selectattr": 0,
    "rejectattr": 0, "batch": 0, "slice": _I,
}
# Units a call costs whatever its input, for the filters that take microseconds each (measured:
# setting up a text wrapper, a sort, a generator, a JSON encoder).
_BASE: dict[str, float] = {
    "wordwrap": 20_000, "urlize": 20_000, "groupby": 20_000, "sort": 10_000, "dictsort": 10_000,
    "pprint": 10_000, "selectattr": 5_000, "rejectattr": 5_000, "select": 3_000, "reject": 3_000,
    "map": 3_000, "unique": 3_000, "batch": 3_000, "slice": 3_000, "max": 3_000, "min": 3_000,
    "tojson": 3_000, "title": 3_000, "format": 3_000, "xmlattr": 3_000, "urlencode": 3_000,
    "filesizeformat": 2_000,  # and `string` of what is not text: metering.PRINT_BASE
}
FILTERS.update({name: metering.metered(FILTERS[name], cost, base=_BASE.get(name, 0))
                for name, cost in _COSTS.items()})

for _fn in FILTERS.values():  # each keeps marks through the operations of `marks`
    keeps_marks(_fn)
