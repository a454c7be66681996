"""The Python methods templates may call, as Jinja2's ImmutableSandboxedEnvironment allows them.

Strings get every public `str` method; lists, tuples, dicts, sets and numbers their methods that
change nothing. Methods that would change a list, dict or set are known by name so that using
one is a `SecurityError` ("access to attribute 'append' of 'list' object is unsafe."), not a
missing attribute. Everything else a template cannot reach: `values.get_attribute` asks only here.

A method is a function of `(receiver, *args, **kwargs)`. String methods keep marks: the marked
string's own methods where the receiver is marked, the mark-aware helpers where text from the
arguments enters the result (join, replace, padding, format).
"""
from __future__ import annotations

from typing import Any, Callable, Optional

from ..limits import check_size, check_width
from . import marks
from .. import metering
from .formatting import format_string
from .markup import Markup, SafeMixed, format_markup
from .sandbox import MUTATING, modifies_known_mutable

# ---------------------------------------------------------------------------- strings


def _same_method(name: str) -> Callable:
    """The receiver's own method: Marked's keeps marks, Markup's keeps safety, str's is str's."""
    def call(receiver: str, *args: Any, **kwargs: Any) -> Any:
        if kwargs and marks.is_marked(receiver):
            _check_arguments(name, args, kwargs)
        return getattr(receiver, name)(*args, **kwargs)
    call.__name__ = call.same_as = name  # codegen calls str's own method on plain text
    return call


def _check_arguments(name: str, args: tuple, kwargs: dict) -> None:
    """Refuse what str's method refuses (Marked's methods also take keywords: `strip(chars=)`)."""
    getattr(str, name)("", *args, **kwargs)


def _str_format(receiver: str, *args: Any, **kwargs: Any) -> str:
    if hasattr(receiver, "__html__"):  # Markup, or safe marked text
        return format_markup(receiver, args, kwargs)
    return format_string(receiver, args, kwargs)


def _str_format_map(receiver: str, *args: Any, **kwargs: Any) -> str:
    if kwargs:
        raise TypeError("format_map() takes no keyword arguments")
    if len(args) != 1:
        raise TypeError(f"format_map() takes exactly one argument ({len(args)} given)")
    if hasattr(receiver, "__html__"):
        return format_markup(receiver, (), args[0])
    return format_string(receiver, (), args[0])


def _str_join(receiver: str, iterable: Any, /) -> str:
    if hasattr(receiver, "__html__"):
        return receiver.join(iterable)
    return marks.join(receiver, iterable)


def str_replace(receiver: str, old: str, new: str, count: int = -1, /) -> str:
    """`str.replace` keeping marks (a Markup receiver escapes what it is given); the `replace`
    filter's own work too, which charges it as a filter."""
    if isinstance(receiver, Markup):
        return receiver.replace(old, new, count)
    str.replace("", old, new, count)  # Python's own argument checks
    return marks.replace(receiver, old, new, count)


def _padding(left_of: Callable[[int, int], int], name: str) -> Callable:
    """center/ljust/rjust: the receiver sits unchanged between runs of the fill character."""
    def pad(receiver: str, width: int, fillchar: str = " ", /) -> str:
        check_width(width)
        if isinstance(receiver, Markup):
            return getattr(receiver, name)(width, fillchar)
        text = getattr(str, name)(marks.plain(receiver), width, fillchar)
        if not (marks.is_marked(receiver) or marks.is_marked(fillchar)):
            return text
        margin = len(text) - len(receiver)
        left = left_of(margin, width)
        return marks.concat((fillchar * left, receiver, fillchar * (margin - left)))
    pad.__name__ = name
    return pad


def _str_translate(receiver: str, table: Any, /) -> str:
    if isinstance(receiver, Markup):
        return receiver.translate(table)
    return marks.taint(str.translate(marks.plain(receiver), table), receiver, table)


def _str_maketrans(receiver: str, *args: Any) -> dict:
    """A table built from input is input: its code points and replacements (fail safe)."""
    return marks.taint(str.maketrans(*args), args)


def _width_checked(name: str) -> Callable:
    """zfill/expandtabs: their size argument is a width (see Limits.max_format_width)."""
    same = _same_method(name)

    def call(receiver: str, *args: Any, **kwargs: Any) -> Any:
        for width in (*args[:1], *kwargs.values()):
            check_width(width)
        if name == "expandtabs" and isinstance(receiver, str):  # each tab may become `width`
            widths = [w for w in (*args[:1], *kwargs.values()) if isinstance(w, int)] or [8]
            check_size(len(receiver) + receiver.count("\t") * max(widths[0], 0))
        return same(receiver, *args, **kwargs)
    call.__name__ = name
    return call


def _partitioner(name: str, find: Callable) -> Callable:
    """partition/rpartition: all three pieces are the receiver's own characters (Python hands
    back the separator argument itself, which would carry the argument's marks instead)."""
    def call(receiver: str, sep: str, /) -> tuple:
        if isinstance(receiver, Markup):
            return getattr(receiver, name)(sep)
        getattr(str, name)("", sep)  # Python's own argument checks
        return marks.partition(receiver, sep, find)
    call.__name__ = name
    return call


_STR_SPECIAL: dict[str, Callable] = {
    "partition": _partitioner("partition", str.find),
    "rpartition": _partitioner("rpartition", str.rfind),
    "zfill": _width_checked("zfill"),
    "expandtabs": _width_checked("expandtabs"),
    "format": _str_format,
    "format_map": _str_format_map,
    "join": _str_join,
    "replace": str_replace,
    # Python centers with the extra fill character on the left when margin and width are odd
    "center": _padding(lambda margin, width: margin // 2 + (margin & width & 1), "center"),
    "ljust": _padding(lambda margin, width: 0, "ljust"),
    "rjust": _padding(lambda margin, width: margin, "rjust"),
    "translate": _str_translate,
    "maketrans": _str_maketrans,
}


def _strict(name: str, method: Callable) -> Callable:
    """`method` refusing keyword arguments exactly where str's own method refuses them."""
    def call(receiver: str, *args: Any, **kwargs: Any) -> Any:
        if kwargs:
            _check_arguments(name, args, kwargs)
        return method(receiver, *args, **kwargs)
    call.__name__ = name
    return call


def _derived(method: Callable) -> Callable:
    """A method whose result is computed from its receiver and arguments without a character
    map (a count, a position, `float.hex`): input when any of them holds input (fail safe)."""
    def call(receiver: Any, *args: Any, **kwargs: Any) -> Any:
        return marks.taint(method(receiver, *args, **kwargs), receiver, args, kwargs)
    call.__name__ = method.__name__
    return call


_COUNTING = frozenset({"count", "find", "rfind", "index", "rindex"})

STR_METHODS: dict[str, Callable] = {
    name: _strict(name, _STR_SPECIAL[name]) if name in _STR_SPECIAL
    else _derived(_same_method(name)) if name in _COUNTING else _same_method(name)
    for name in dir(str) if not name.startswith("_")
}
MARKUP_METHODS: dict[str, Callable] = {
    **STR_METHODS, **{name: _same_method(name) for name in ("unescape", "striptags", "escape")}}

# ---------------------------------------------------------------------------- containers


def _copy(receiver: Any) -> Any:
    return receiver.copy()


def _fromkeys(receiver: dict, *args: Any) -> dict:
    return dict.fromkeys(*args)


def _methods(*names: str, **special: Callable) -> dict[str, Callable]:
    table = {name: _same_method(name) for name in names}
    table.update(special)
    return table


LIST_METHODS = _methods(copy=_copy, index=_derived(_same_method("index")),
                        count=_derived(_same_method("count")))
TUPLE_METHODS = _methods(index=_derived(_same_method("index")), count=_derived(_same_method("count")))
DICT_METHODS = _methods("items", "keys", "values", "get", copy=_copy, fromkeys=_fromkeys)
SET_METHODS = _methods("difference", "intersection", "isdisjoint", "issubset", "issuperset",
                       "symmetric_difference", "union", copy=_copy)
INT_METHODS = {name: _derived(_same_method(name))
               for name in ("bit_length", "bit_count", "conjugate", "as_integer_ratio")}
FLOAT_METHODS = {name: _derived(_same_method(name))
                 for name in ("is_integer", "hex", "conjugate", "as_integer_ratio")}


def _meter_table(table: dict[str, Callable], default: float, costs: dict[str, float],
                 walks: dict[str, int]) -> None:
    """Each method charging its work before it runs (metering.py): `costs` per character or item
    of receiver and arguments, and what comparing or hashing the arguments from `walks` walks."""
    for name, fn in table.items():
        table[name] = metering.metered(fn, costs.get(name, default), walks.get(name),
                                       _BASE.get(name, 0))


_BASE = {"format": 5_000, "format_map": 5_000}  # units a call: the formatter is Python code


_FINDING = ("find", "rfind", "index", "rindex", "startswith", "endswith", "partition",
            "rpartition", "removeprefix", "removesuffix", "isascii")
_SCANNING = ("count", "strip", "lstrip", "rstrip", "isalnum", "isalpha", "isdecimal", "isdigit",
             "isidentifier", "islower", "isnumeric", "isprintable", "isspace", "istitle",
             "isupper")
_STR_COSTS = {**dict.fromkeys(_FINDING, metering.FIND), **dict.fromkeys(_SCANNING, metering.SCAN),
              "format": 0, "format_map": 0,
              **dict.fromkeys(("split", "rsplit", "splitlines"), metering.SPLIT),
              **dict.fromkeys(("title", "capitalize", "swapcase", "casefold", "expandtabs",
                               "translate"), metering.TEXT), "title": metering.TITLE,
              "join": metering.ITEM}
for _table_of_str in (STR_METHODS, MARKUP_METHODS):
    _meter_table(_table_of_str, metering.COPY, _STR_COSTS, {})
_meter_table(LIST_METHODS, metering.ITEM, {}, {"index": 0, "count": 0})
_meter_table(TUPLE_METHODS, metering.ITEM, {}, {"index": 0, "count": 0})
_meter_table(DICT_METHODS, 0, {"copy": metering.ITEM, "fromkeys": metering.ITEM},
             {"get": 1, "fromkeys": 1})
_meter_table(SET_METHODS, metering.ITEM, {}, dict.fromkeys(SET_METHODS, 1))

# What would change a builtin container (the sandbox's table, Jinja2's list and a few more).
MUTATING_METHODS = MUTATING


def _table(obj: Any) -> Optional[dict[str, Callable]]:
    if isinstance(obj, str):
        return MARKUP_METHODS if isinstance(obj, (Markup, SafeMixed)) else STR_METHODS
    if isinstance(obj, list):
        return LIST_METHODS
    if isinstance(obj, tuple):
        return TUPLE_METHODS
    if isinstance(obj, dict):
        return DICT_METHODS
    if isinstance(obj, (set, frozenset)):
        return SET_METHODS
    if isinstance(obj, int):
        return INT_METHODS
    if isinstance(obj, float):
        return FLOAT_METHODS
    return None


def lookup_method(obj: Any, name: Any) -> Optional[Callable]:
    """The method `name` of `obj` a template may call, as a function of (receiver, *args)."""
    if not isinstance(name, str) or name.startswith("_"):
        return None
    table = _table(obj)
    return table.get(name) if table is not None else None


# Whether `name` is a method of `obj` that would change it (forbidden in the immutable sandbox).
is_unsafe_method = modifies_known_mutable
