"""Record classes for the AST: slotted classes that behave as frozen dataclasses from outside.

A class made by `Record` lists its fields as annotations, in the dataclass style; this module
turns them into `__slots__`, an `__init__` taking the fields in order (the bases' first),
`__eq__`, `__hash__` and `__repr__` over them, `__match_args__`, and the dataclass field table
(defaults may be `dataclasses.field(default_factory=...)`; `__post_init__` is called; a class
with a `functools.cached_property` gets a `__dict__` for it),
so that `dataclasses.fields`, `is_dataclass` and `replace` work and a subclass may itself be a
`@dataclass(frozen=True, slots=True)`. It does in one small step what `@dataclass` does in
many (why: grammar/ast.py). Assignment to a field is not refused, for creation speed: nothing
changes a node after the parser made it.
"""
from __future__ import annotations

import copy
import dataclasses
import functools
from operator import attrgetter
from typing import Any


@dataclasses.dataclass(frozen=True)
class _Model:
    """A real frozen dataclass, whose parameters and field are the models for records': the
    dataclasses module reads them from a base class when it makes a subclass."""
    model: Any = None


_PARAMS = _Model.__dataclass_params__
_FIELD = dataclasses.fields(_Model)[0]
_NO_DEFAULT = dataclasses.MISSING


def _field(name: str, annotation: Any, default: Any) -> dataclasses.Field:
    """The field table's entry; `default` may be a `dataclasses.field(default_factory=...)`."""
    made = copy.copy(_FIELD)
    made.name, made.type = name, annotation
    if isinstance(default, dataclasses.Field):
        made.default, made.default_factory = default.default, default.default_factory
    else:
        made.default = default
    return made


MODULES: set[str] = set()  # the modules whose classes are made records (grammar/ast.py adds itself)


class Packed:
    """A field kept in a slot of another name in a compact form (`pack`), and read back as its
    value (`unpack`, given the value and the node) through a property of the field's name:
    ast.Node's `span`."""

    def __init__(self, name: str, pack: Any, unpack: Any) -> None:
        self.name, self.slot, self.pack, self.unpack = name, f"_{name}", pack, unpack

    def attribute(self) -> property:
        slot, pack, unpack = self.slot, self.pack, self.unpack
        read = attrgetter(slot)

        def get(node: Any) -> Any:
            return unpack(read(node), node)

        def set_(node: Any, value: Any) -> None:
            object.__setattr__(node, slot, pack(value))  # past a frozen dataclass subclass's guard
        return property(get, set_, doc=f"the node's {self.name} (kept packed in `{slot}`)")


PACKED: dict[str, Packed] = {}  # field name -> how it is kept (grammar/ast.py registers `span`)


class _RecordType(type):
    """The metaclass: a class body in one of `MODULES` becomes a record. A subclass made
    elsewhere (an extension's node, which `@dataclass(slots=True)` must be free to remake) is an
    ordinary subclass, and so is a body that sets `__slots__` itself."""

    def __new__(mcs, name: str, bases: tuple, namespace: dict) -> type:
        if "__slots__" in namespace or namespace.get("__module__") not in MODULES:
            return super().__new__(mcs, name, bases, namespace)
        annotations = namespace.get("__annotations__", {})
        defaults = {field: namespace.pop(field) for field in annotations if field in namespace}
        namespace["__slots__"] = tuple(PACKED[f].slot if f in PACKED else f for f in annotations)
        if any(isinstance(value, functools.cached_property) for value in namespace.values()):
            namespace["__slots__"] += ("__dict__",)  # where a cached property keeps its value
        for field in annotations:
            if field in PACKED:
                namespace[field] = PACKED[field].attribute()
        cls = super().__new__(mcs, name, bases, namespace)
        fields = dict(getattr(cls, "__dataclass_fields__", {}))
        for field, annotation in annotations.items():
            fields[field] = _field(field, annotation, defaults.get(field, _NO_DEFAULT))
        cls.__dataclass_fields__ = fields
        cls.__dataclass_params__ = _PARAMS
        cls.__match_args__ = tuple(fields)
        cls.__init__ = _init_on_first_use(cls, fields)
        return cls


def _init_on_first_use(cls: type, fields: dict) -> Any:
    """An `__init__` that makes the class's own (`_make_init`) when the first node of the class
    is created, and puts it in its place: compiling one for each of the sixty-odd classes cost
    2-3 ms at every start, and a template uses a third of them."""
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        init = _make_init(cls, fields)
        if cls.__dict__.get("__init__") is __init__:
            cls.__init__ = init
        init(self, *args, **kwargs)
    __init__.__qualname__ = f"{cls.__qualname__}.__init__"
    return __init__


def _make_init(cls: type, fields: dict) -> Any:
    """`__init__(self, a, b=default)` setting each slot: written out and compiled, because a
    generic loop over the fields would make every node's creation several times slower."""
    if not fields:
        return object.__init__
    params, body, scope = [], [], {"_made": _NO_DEFAULT}
    for name, field in fields.items():
        value = name
        if field.default_factory is not _NO_DEFAULT:  # a new value per record, as dataclasses do
            scope[f"_factory_{name}"] = field.default_factory
            params.append(f"{name}=_made")
            value = f"_factory_{name}() if {name} is _made else {name}"
        elif field.default is _NO_DEFAULT:
            params.append(name)
        else:
            scope[f"_default_{name}"] = field.default
            params.append(f"{name}=_default_{name}")
        if name in PACKED:  # straight into its slot: no property call per node
            scope[f"_pack_{name}"] = PACKED[name].pack
            body.append(f"    self.{PACKED[name].slot} = _pack_{name}({value})")
        else:
            body.append(f"    self.{name} = {value}")
    if hasattr(cls, "__post_init__"):
        body.append("    self.__post_init__()")
    source = f"def __init__(self, {', '.join(params)}):\n" + "\n".join(body) + "\n"
    exec(compile(source, f"<record {cls.__qualname__}>", "exec"), scope)  # noqa: S102
    init = scope["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    return init


def as_record(cls: type, annotations: dict) -> None:
    """Give a class made otherwise (ast.Span, an int) the dataclass field table of a record with
    these fields, so that `dataclasses.fields`, `is_dataclass`, `asdict` and `replace` see one."""
    cls.__dataclass_fields__ = {name: _field(name, annotation, _NO_DEFAULT)
                                for name, annotation in annotations.items()}
    cls.__dataclass_params__ = _PARAMS


class Record(metaclass=_RecordType):
    """The base of every AST record; equality, hashing and repr are over the fields, in the
    order `__dataclass_fields__` lists them, as a frozen dataclass's are."""

    __slots__ = ()

    def _values(self) -> tuple:
        return tuple(getattr(self, name) for name in self.__dataclass_fields__)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__dataclass_fields__)
        return f"{type(self).__qualname__}({shown})"

    # Pickled by its fields' values, with any protocol (as a frozen slotted dataclass is)
    def __getstate__(self) -> tuple:
        return self._values()

    def __setstate__(self, state: tuple) -> None:
        for name, value in zip(self.__dataclass_fields__, state):
            object.__setattr__(self, name, value)


__all__ = ["Record", "as_record"]
