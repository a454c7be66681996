"""The value model: how templates reach into values (printing them is printing.py's).

Templates hold plain data (str and marked str, int, float, bool, None, list, tuple, dict), the
objects of `runtime`, `Undefined`s, and callables an embedder registered. Attribute and item
access go through `get_attribute` / `get_item` only: no Python attribute of a value is ever
reachable, which is what makes the sandbox hold by construction. A host object (any other
value the embedder passes: a dataclass, a named tuple, a date) is read as Jinja2's sandbox reads
it, under the environment's `is_safe_attribute` (sandbox.py).
"""
from __future__ import annotations

from typing import Any

from . import formatting, marks
from .sandbox import REFUSED, host_attribute, is_host_object
from .marks import Input, Marked, Mixed
from .methods import DICT_METHODS, MUTATING_METHODS, STR_METHODS, lookup_method, is_unsafe_method
from .inputs import MAX_INPUT_DEPTH, check_input, mark_other, too_deep as _too_deep
from .numbers import InputRange, as_input
from .runtime import (BlockReference, Cycler, Function, Joiner, LoopContext, Macro, Method, Namespace,
                      TemplateModule, TemplateReference, unsafe_attribute)
from .undefined import Undefined


# ---------------------------------------------------------------------------- access

def get_attribute(obj: Any, name: Any, undefined: type, mutable: bool = False) -> Any:
    """`obj.name`: a method or runtime attribute first, then an item, as Jinja2 does.

    `mutable` lets templates call list and dict methods that change their receiver (Jinja2's
    SandboxedEnvironment); without it they are a SecurityError (ImmutableSandboxedEnvironment).
    """
    t = type(obj)
    if type(name) is str and name[:1] != "_":  # the common cases first, as the rules below decide
        if t is dict:
            if name not in _DICT_ATTRIBUTES:  # `message.content`: no method of that name
                try:
                    return obj[name]
                except KeyError:
                    return undefined(obj=obj, name=name)
        elif t is str or t is Input or t is Mixed:  # `content.strip`
            fn = STR_METHODS.get(name)
            if fn is not None:
                return Method(obj, name, fn)
        elif t in _RUNTIME:  # `loop.index`, `ns.found`: neither methods nor items
            try:
                return t.jinja_attribute(obj, name)
            except KeyError:
                return undefined(obj=obj, name=name)
    if isinstance(obj, Undefined):
        return obj.attribute(name)
    if isinstance(name, str):
        if name.startswith("_") and has_python_attribute(obj, name):
            # A Python internal (`__class__`, `__init__`): as Jinja2's sandbox, an undefined
            # that raises SecurityError when used. Its value is never looked at.
            return unsafe_attribute(undefined, obj, name)
        found = _ABSENT if name.startswith("_") else _attribute(obj, name, undefined, mutable)
        if found is not _ABSENT:
            return found
    try:
        return _item(obj, name)
    except (LookupError, TypeError):
        return undefined(obj=obj, name=name)


def get_item(obj: Any, key: Any, undefined: type, mutable: bool = False) -> Any:
    """`obj[key]`: an item first, then (for string keys) an attribute."""
    t = type(obj)
    if (t is str or t is Input or t is Mixed) and type(key) is str and key[:1] != "_" \
            and key not in STR_METHODS:  # `content['type']` of text content: no item, no method
        return undefined(obj=obj, name=key)
    if isinstance(obj, Undefined):
        return obj[key]
    try:
        return _item(obj, key)
    except (LookupError, TypeError):
        pass
    if isinstance(key, str) and key.startswith("_") and has_python_attribute(obj, key):
        return unsafe_attribute(undefined, obj, key)
    if isinstance(key, str) and not key.startswith("_"):
        found = _attribute(obj, key, undefined, mutable)
        if found is not _ABSENT:
            return found
    return undefined(obj=obj, name=key)


_ABSENT = object()
# The runtime objects: what they show templates is their `jinja_attribute`, nothing else.
_RUNTIME = frozenset({Namespace, LoopContext, Macro, Cycler, Joiner, Function, Method, TemplateModule,
                      TemplateReference, BlockReference})
# The names `get_attribute` resolves to something else than an item on a plain dict.
_DICT_ATTRIBUTES = frozenset(DICT_METHODS).union(*(names for _, names in MUTATING_METHODS))


def has_python_attribute(obj: Any, name: str) -> bool:
    """Whether Python would find `name` on `obj` (as Jinja2's sandbox asks before refusing it).
    Only the type is asked, never the value; a global function is asked about what it wraps,
    a namespace about what it holds (Jinja2's are attributes)."""
    if type(obj) is Namespace:
        return name in obj.attrs or hasattr(Namespace, name)
    if type(obj) is Function:
        return hasattr(type(obj.fn), name) or hasattr(obj.fn, name) and name.startswith("__")
    if is_host_object(obj):  # its own attributes too, as Jinja2 asks getattr
        try:
            return hasattr(obj, name)
        except Exception:
            return True
    return hasattr(type(obj), name)


def _attribute(obj: Any, name: str, undefined: type, mutable: bool) -> Any:
    fn = lookup_method(obj, name)
    if fn is not None:
        return Method(obj, name, fn)
    if is_unsafe_method(obj, name):
        if mutable and isinstance(obj, (list, dict)):
            return Method(obj, name, getattr(type(obj), name))
        if mutable and is_host_object(obj):  # a deque, a set subclass: Jinja2's sandbox calls them
            return _host_attribute(obj, name, undefined)
        return unsafe_attribute(undefined, obj, name)
    reader = getattr(type(obj), "jinja_attribute", None)
    if reader is not None:
        try:
            return reader(obj, name)
        except KeyError:
            return _ABSENT
    if is_host_object(obj):
        return _host_attribute(obj, name, undefined)
    return _ABSENT


def _host_attribute(obj: Any, name: str, undefined: type) -> Any:
    """`obj.name` of a host object, or an undefined that refuses to be used."""
    found = host_attribute(obj, name)
    if found is None:
        return _ABSENT
    return unsafe_attribute(undefined, obj, name) if found[0] is REFUSED else found[0]


_INDEXED = (tuple, bytes, bytearray, range, InputRange)


def _item(obj: Any, key: Any) -> Any:
    t = type(obj)
    if t is dict:
        return obj[key]
    if t is list or isinstance(obj, _INDEXED):  # bytes from input index as numbers from input
        if isinstance(key, (slice, int)):
            return obj[key]
        raise TypeError("indices must be integers or slices")
    if isinstance(obj, str):
        if not isinstance(key, (slice, int)):
            raise TypeError("string indices must be integers")
        # Markup and other str subclasses index themselves; str and Marked keep their marks
        return marks.getitem(obj, key) if t is str or t is Input or t is Mixed else obj[key]
    if hasattr(t, "jinja_attribute"):
        if hasattr(t, "jinja_item"):  # an object read by key its own way (hostcalls.InputObject)
            return obj.jinja_item(key)
        if isinstance(key, str) and key[:1] != "_":  # a runtime object's items are its attributes:
            return t.jinja_attribute(obj, key)    # `_` ones are the sandbox's to refuse (get_item)
    elif hasattr(t, "__getitem__") and is_host_object(obj):  # its own __getitem__, as Jinja2
        return obj[key]
    raise TypeError(f"{t.__name__} is not subscriptable")


# ---------------------------------------------------------------------------- input data

# Marked dict keys and short values ("role", "user", "type": "string" in a tool's schema) repeat
# from dict to dict and render to render: each is made once and shared (an Input is immutable).
_KEYS: dict[str, Any] = {}


def _input_key(key: str) -> Any:
    marked = Input(key)
    if len(_KEYS) < 10_000 and len(key) <= 64:  # bounded: keys can be input too
        _KEYS[key] = marked
    return marked


_key = _KEYS.get


def _mark_dict(data: dict, d: int) -> dict:
    """`mark_input` of a dict whose items are at depth `d`. A loop, not a comprehension: in
    Python 3.11 a comprehension is a call of its own."""
    out: dict = {}
    for k, v in data.items():
        key = (_key(k) or _input_key(k)) if type(k) is str and k else mark_input(k, d)
        tv = type(v)
        if tv is str:  # long strings are not looked up: hashing one would cost more than a copy
            out[key] = (_key(v) or _input_key(v)) if 0 < len(v) <= 16 else Input(v) if v else v
        elif v is None:
            out[key] = v
        else:
            out[key] = mark_input(v, d)
    return out


def mark_input(data: Any, _depth: int = 0, *, origin: Any = None) -> Any:
    """JSON-like data with every string (keys too) and number marked as input; containers are
    copied, the caller's data is left as it was. Data nested deeper than MAX_INPUT_DEPTH (or
    containing itself) is refused with LimitExceeded, and so is data holding more than
    MAX_INPUT_ITEMS lists and dicts, a shared one counted each time (`inputs.check_input`).
    Other shapes (subclasses, mappings, sets, dict views, iterators, dataclasses, numbers of
    other types) are materialised as the plain data they stand for, or refused with
    InputTypeError (bytes, arbitrary objects): see `inputs.mark_other`. A lost mark would be
    an injection.

    `origin` (a name, or a `Source` of a message and a field) records where the data came from:
    a render with `origins=True` then says, for each input character, the path of its field
    under that name (`docs[0].text`)."""
    if origin is not None:
        from .sourced import traced  # noqa: PLC0415 - only for origins
        field = origin if isinstance(origin, str) else origin.field
        message = None if isinstance(origin, str) else origin.message
        return traced(mark_input(data), message, field)
    # Runs over every value of every render_parts: the common cases come first, the common
    # leaves (a non-empty str, None) are handled inline, and a list's dicts (messages, tool
    # calls, tools) are copied in the list's own loop: one call per list, not per message.
    t = type(data)
    if _depth == 0 and (t is dict or t is list or t is tuple):
        check_input(data)  # what no walk could finish is refused before this one starts
    if t is dict or t is list:
        if _depth >= MAX_INPUT_DEPTH:
            raise _too_deep()
        if t is dict:
            return _mark_dict(data, _depth + 1)
        d = _depth + 1
        out: list = []
        add = out.append
        for v in data:
            tv = type(v)
            if tv is dict:
                if d >= MAX_INPUT_DEPTH:
                    raise _too_deep()
                add(_mark_dict(v, d + 1))
            elif tv is str and v:
                add(Input(v))
            else:
                add(mark_input(v, d))
        return out
    if t is str:
        return Input(data) if data else data
    if data is None or t is bool:
        return data
    if t is tuple:
        if _depth >= MAX_INPUT_DEPTH:
            raise _too_deep()
        return tuple([mark_input(v, _depth + 1) for v in data])
    if t is int or t is float:
        return as_input(data)
    if isinstance(data, Marked):
        return data
    if _depth >= MAX_INPUT_DEPTH:
        raise _too_deep()
    # anything else is materialised as what templates see (a generator as a list, a mapping as a
    # dict), its items marked, or refused with an InputTypeError: nothing passes through unknown
    return mark_other(data, _depth, mark_input)


formatting.read_fields_with(get_attribute, get_item)  # `{0.name}` in str.format reads as templates do
