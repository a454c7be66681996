"""The objects a template can hold besides plain data: loop, namespace, macro, cycler, joiner,
and what template composition gives (an imported module, `self`, a block for `super()`).

Each exposes to templates exactly the attributes in its `jinja_attributes`; nothing else of the
Python object is reachable (see values.get_attribute).
"""
from __future__ import annotations

from typing import Any, Callable, Iterator, Optional

from .. import metering
from ..environment_tools import RenderContext
from ..errors import TemplateRuntimeError
from .numbers import derived
from .undefined import Undefined


@metering.prints_its_attributes
class Namespace:
    """`namespace(a=1)`: the one object `{% set ns.attr = ... %}` may change."""

    jinja_type_name = "Namespace"

    def __init__(self, /, *args: Any, **kwargs: Any) -> None:  # namespace(self=...) too
        self.attrs: dict[str, Any] = dict(*args, **kwargs)

    def jinja_attribute(self, name: str) -> Any:
        return self.attrs[name]

    def jinja_holds_input(self, check: Callable[[Any], bool]) -> bool:
        return check(self.attrs)

    def __repr__(self) -> str:  # what templates print is values.repr_value's, with marks
        return f"<Namespace {self.attrs!r}>"


class LoopContext:
    """The `loop` variable of a for loop."""

    jinja_type_name = "LoopContext"
    jinja_attributes = frozenset({"index", "index0", "revindex", "revindex0", "first", "last",
                                  "length", "previtem", "nextitem", "depth", "depth0", "cycle",
                                  "changed"})

    def __init__(self, iterator: Iterator, length: Optional[int], depth0: int, undefined: type,
                 recurse: Optional[Callable[[Any, int], str]] = None, source: Any = None) -> None:
        # `source`: what the loop walks, looked at only when a template asks for the length
        # Lazy, as Jinja2's: an item is produced only when the loop reaches it, or when
        # `last`/`nextitem` peek one ahead, or when `length`/`revindex` need them all.
        self._iterator = iterator
        self._length = length
        self._after: Any = _NOTHING   # the item peeked at, not yet reached
        self._before: Any = _NOTHING
        self._current: Any = _NOTHING
        self.index0 = -1
        self.depth0 = depth0
        self.undefined = undefined
        self.recurse = recurse
        self._last_changed: Any = _NOTHING
        self._source = source  # what the loop walks: its length is input when it holds input

    def __iter__(self) -> "LoopContext":
        return self

    def __next__(self) -> Any:
        if self._after is not _NOTHING:
            item, self._after = self._after, _NOTHING
        else:
            item = next(self._iterator)
        self.index0 += 1
        self._before, self._current = self._current, item
        return item

    def _peek(self) -> Any:
        if self._after is _NOTHING:
            self._after = next(self._iterator, _NOTHING)
        return self._after

    @property
    def length(self) -> int:
        rest: list = []
        if self._length is None:
            rest = list(self._iterator)
            self._iterator = iter(rest)
            self._length = len(rest) + self.index0 + 1 + (self._after is not _NOTHING)
        if self._source is not _NOTHING:  # once: a count of items from input is input
            seen = [item for item in (self._current, self._after) if item is not _NOTHING]
            self._length = derived(self._length, self._source, seen, rest)
            self._source = _NOTHING
        return self._length

    @property
    def index(self) -> int:
        return self.index0 + 1

    @property
    def revindex0(self) -> int:
        return self.length - self.index0 - 1

    @property
    def revindex(self) -> int:
        return self.length - self.index0

    @property
    def first(self) -> bool:
        return self.index0 == 0

    @property
    def last(self) -> bool:
        return self._peek() is _NOTHING

    @property
    def depth(self) -> int:
        return self.depth0 + 1

    @property
    def previtem(self) -> Any:
        if self.index0 == 0:
            return self.undefined("there is no previous item")
        return self._before

    @property
    def nextitem(self) -> Any:
        item = self._peek()
        if item is _NOTHING:
            return self.undefined("there is no next item")
        return item

    def cycle(self, *args: Any) -> Any:
        if not args:
            raise TypeError("no items for cycling given")
        return args[self.index0 % len(args)]

    def changed(self, *value: Any) -> bool:
        metering.charge_compare(self._last_changed, value)  # a walk of both, metered
        if self._last_changed != value:
            self._last_changed = value
            return True
        return False

    def jinja_attribute(self, name: str) -> Any:
        if name in self.jinja_attributes:
            return _exposed(self, name)
        raise KeyError(name)

    def jinja_holds_input(self, check: Callable[[Any], bool]) -> bool:
        return True  # its items (previtem, nextitem), its length: fail safe

    def __call__(self, iterable: Any) -> str:
        if self.recurse is None:
            raise TypeError("The loop must have the 'recursive' marker to be called recursively.")
        return self.recurse(iterable, self.depth0 + 1)

    def __repr__(self) -> str:
        return f"<LoopContext {self.index}/{self.length}>"


_NOTHING = object()


class Macro:
    """A macro (or the `caller` of a call block): calling it renders its body to a string."""

    jinja_type_name = "Macro"
    jinja_attributes = frozenset({"name", "arguments", "catch_kwargs", "catch_varargs", "caller"})

    def __init__(self, name: Optional[str], params: tuple, invoke: Callable[..., str],
                 catch_kwargs: bool, catch_varargs: bool, caller: bool) -> None:
        self.name = name
        self.params = params
        self.arguments = tuple(p.name for p in params)
        self.invoke = invoke
        self.catch_kwargs = catch_kwargs
        self.catch_varargs = catch_varargs
        self.caller = caller

    def __call__(self, /, *args: Any, **kwargs: Any) -> str:
        if args and type(args[0]) is RenderContext:
            # from Python with an eval context first (Jinja2's macros take one): it says
            # whether the result is safe, and is no argument of the macro
            return self.invoke(self, args[1:], kwargs, args[0].autoescape)
        return self.invoke(self, args, kwargs)

    def jinja_attribute(self, name: str) -> Any:
        if name in self.jinja_attributes:
            return getattr(self, name)
        raise KeyError(name)

    def __repr__(self) -> str:
        return f"<Macro {'anonymous' if self.name is None else repr(self.name)}>"


class Cycler:
    """`cycler(a, b, c)`: `.next()` goes round the items; `.current`; `.reset()`."""

    jinja_type_name = "Cycler"
    jinja_attributes = frozenset({"next", "reset", "current", "items"})

    def __init__(self, *items: Any) -> None:
        if not items:
            raise TemplateRuntimeError("at least one item has to be provided")
        self.items = items
        self.pos = 0

    @property
    def current(self) -> Any:
        return self.items[self.pos]

    def next(self) -> Any:
        value = self.current
        self.pos = (self.pos + 1) % len(self.items)
        return value

    def reset(self) -> None:
        self.pos = 0

    __next__ = next  # Python's next(cycler), as Jinja2's

    def jinja_holds_input(self, check: Callable[[Any], bool]) -> bool:
        return check(self.items)

    def jinja_attribute(self, name: str) -> Any:
        if name in self.jinja_attributes:
            return _exposed(self, name)
        raise KeyError(name)

    def __repr__(self) -> str:
        return "<Cycler>"


class Joiner:
    """`joiner(', ')`: returns '' the first time it is called, the separator after."""

    jinja_type_name = "Joiner"
    jinja_attributes = frozenset()

    def __init__(self, sep: str = ", ") -> None:
        self.sep = sep
        self.used = False

    def __call__(self) -> str:
        if not self.used:
            self.used = True
            return ""
        return self.sep

    def jinja_attribute(self, name: str) -> Any:
        raise KeyError(name)

    def jinja_holds_input(self, check: Callable[[Any], bool]) -> bool:
        return check(self.sep)

    def __repr__(self) -> str:
        return "<Joiner>"


class TemplateModule:
    """What `{% import 'x' as m %}` binds: the template's exported names (its top-level `set`s
    and macros, not those starting with '_'), and its output when printed."""

    jinja_type_name = "TemplateModule"

    def __init__(self, name: Optional[str], exports: dict, body: str) -> None:
        self.name = name
        self.exports = exports
        self.body = body

    def jinja_attribute(self, name: str) -> Any:
        return self.exports[name]

    def __getattr__(self, name: str) -> Any:  # from Python, `template.module.macro(...)`
        try:
            return self.__dict__["exports"][name]
        except KeyError:
            raise AttributeError(name) from None

    def __str__(self) -> str:
        return self.body

    def __html__(self) -> str:  # printed while autoescaping: its output, not escaped again
        return self.body

    def __repr__(self) -> str:
        return f"<TemplateModule {self.name!r}>"


class BlockReference:
    """A block as `self.name` and `super()` give it: calling it renders the block."""

    jinja_type_name = "BlockReference"

    def __init__(self, name: str, render: Callable[[], str],
                 parent: Callable[[], Any]) -> None:
        self.name = name
        self._render = render
        self._parent = parent  # the next block up the inheritance chain, or an undefined

    def __call__(self) -> str:
        return self._render()

    def jinja_attribute(self, name: str) -> Any:
        if name == "super":
            return self._parent()
        raise KeyError(name)

    def __repr__(self) -> str:
        return f"<BlockReference {self.name!r}>"


class TemplateReference:
    """`self`: the blocks of the template being rendered, by name."""

    jinja_type_name = "TemplateReference"

    def __init__(self, name: Optional[str], block: Callable[[str], BlockReference]) -> None:
        self.name = name  # the template rendered
        self._block = block  # raises KeyError for a name that is no block

    def jinja_attribute(self, name: str) -> Any:
        return self._block(name)

    def __repr__(self) -> str:
        return f"<TemplateReference {self.name!r}>"


class Function:
    """A global function as templates see it: callable, with nothing else reachable."""

    jinja_type_name = "function"

    def __init__(self, name: str, fn: Callable) -> None:
        self.name = name
        self.fn = fn

    def __call__(self, /, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    def jinja_attribute(self, name: str) -> Any:
        raise KeyError(name)

    def jinja_holds_input(self, check: Callable[[Any], bool]) -> bool:
        return False  # a builtin global (range, dict, namespace): it returns what it is given

    def __repr__(self) -> str:
        return f"<builtin {self.name}>"


def _exposed(obj: Any, name: str) -> Any:
    """An attribute of a runtime object; a method comes out wrapped, never as a bound method."""
    value = getattr(obj, name)
    if callable(value) and hasattr(type(obj), name) and callable(getattr(type(obj), name)):
        return Method(obj, name, getattr(type(obj), name))
    return value


class Method:
    """A method of a str, list or dict bound to its receiver, as templates call it."""

    jinja_type_name = "builtin_function_or_method"

    def __init__(self, receiver: Any, name: str, fn: Callable) -> None:
        self.receiver = receiver
        self.name = name
        self.fn = fn

    def __call__(self, /, *args: Any, **kwargs: Any) -> Any:
        return self.fn(self.receiver, *args, **kwargs)

    def jinja_attribute(self, name: str) -> Any:
        raise KeyError(name)

    def jinja_holds_input(self, check: Callable[[Any], bool]) -> bool:
        return check(self.receiver)

    def __repr__(self) -> str:
        return f"<built-in method {self.name} of {type(self.receiver).__name__} object>"


def unsafe_attribute(undefined: type, obj: Any, name: str) -> Undefined:
    """What a mutating method resolves to in the immutable sandbox: calling it is a SecurityError."""
    from ..errors import SecurityError
    owner = type(obj).__name__
    return undefined(f"access to attribute {name!r} of {owner!r} object is unsafe.", obj, name,
                     exc=SecurityError)
