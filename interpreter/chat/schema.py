"""Tools given as Python functions: the JSON schema transformers' `get_json_schema` makes of them.

`apply_chat_template(tools=[some_function])` turns each function into
`{"type": "function", "function": {"name", "description", "parameters", ["return"]}}` from its
Google-style docstring and its type hints. A chat template prints that dict (often with `tojson`),
so the key order and every detail of the output matter: this module follows transformers 5
(`transformers.utils.chat_template_utils`) rule for rule, including its errors (same exception
names and messages). The two exception classes are also `ValueError`s, so that a server's
bad-request handler catches them; transformers' own derive from `Exception` only.
"""
from __future__ import annotations

import inspect
import json
import re
import types
from enum import Enum
from typing import Any, Callable, Literal, Optional, Union, get_args, get_origin, get_type_hints

__all__ = ["get_json_schema", "parse_google_format_docstring", "TypeHintParsingException",
           "DocstringParsingException"]


class TypeHintParsingException(ValueError):
    """A type hint that has no JSON schema equivalent (transformers' exception of this name)."""


class DocstringParsingException(ValueError):
    """A docstring without a description of the function or of one of its arguments."""


# ---------------------------------------------------------------------------- docstrings

# The description: everything before the first section header (or the end).
_DESCRIPTION = re.compile(r"^(.*?)[\n\s]*(Args:|Returns:|Raises:|\Z)", re.DOTALL)
# The body of the "Args:" section, up to the next section.
_ARGS_SECTION = re.compile(r"\n\s*Args:\n(.*?)[\n\s]*(Returns:|Raises:|\Z)", re.DOTALL)
# One argument: `name (type): description`, the description running on over lines indented
# deeper than the name, up to the next `name:` at the same indentation (or the end).
_ONE_ARG = re.compile(
    r"(?:^|\n)([ \t]*)(\w+)(?:[ \t]*\([^()\n]*\))?:\s*(.*?)\s*"
    r"(?=\n(?!\1[ \t])[ \t]*\w+(?:[ \t]*\([^()\n]*\))?:|\Z)",
    re.DOTALL)
_RETURNS_SECTION = re.compile(r"\n\s*Returns:\n\s*(.*?)[\n\s]*(Raises:|\Z)", re.DOTALL)
_CHOICES = re.compile(r"\(choices:\s*(.*?)\)\s*$", re.IGNORECASE)


def parse_google_format_docstring(docstring: str) -> tuple[Optional[str], dict, Optional[str]]:
    """(description, {argument: description}, returns description) of a Google-style docstring."""
    description = _DESCRIPTION.search(docstring)
    args = _ARGS_SECTION.search(docstring)
    returns = _RETURNS_SECTION.search(docstring)
    arguments: dict[str, str] = {}
    if args is not None:
        body = "\n".join(line for line in args.group(1).split("\n") if line.strip())
        for _, name, text in _ONE_ARG.findall(body):
            # a description over several lines becomes one line
            arguments[name] = re.sub(r"\s*\n+\s*", " ", text.strip())
    return (description.group(1).strip() if description else None, arguments,
            returns.group(1).strip() if returns else None)


# ---------------------------------------------------------------------------- type hints

# Python values a JSON schema "enum" can list, with the name of their JSON type.
_JSON_SCALARS: dict[type, str] = {int: "integer", float: "number", str: "string", bool: "boolean",
                                  type(None): "null"}
_BASIC: dict[Any, dict] = {int: {"type": "integer"}, float: {"type": "number"},
                           str: {"type": "string"}, bool: {"type": "boolean"},
                           type(None): {"type": "null"}, list: {"type": "array"},
                           tuple: {"type": "array"}, dict: {"type": "object"}, Any: {}}
# transformers maps these when their libraries are installed; they are recognised by name here so
# that neither is imported (a hint can only name them if the caller has the library).
_BY_NAME = {("PIL.Image", "Image"): {"type": "image"}, ("torch", "Tensor"): {"type": "audio"}}

_CUSTOM_CLASS = (
    "Couldn't convert the type hint {!r} to a JSON schema, likely because it is a custom class or "
    "object. Supported type hints are basic types like int, float, str and bool, Enum classes, "
    "typing.Literal, and list, tuple, dict and Union types containing those. If you need a more "
    "complex schema than that, you can write the JSON schema for your tool by hand and pass that "
    "instead of the function.")


def _enum(values: list) -> dict:
    """An "enum" schema whose "type" lists each JSON type of the values once, in order of first use."""
    kinds = list(dict.fromkeys(_JSON_SCALARS[type(value)] for value in values))
    return {"type": kinds[0] if len(kinds) == 1 else kinds, "enum": values}


def _basic_type(hint: Any) -> Optional[dict]:
    found = _BASIC.get(hint)  # an unhashable hint raises TypeError, as in transformers
    if found is None and isinstance(hint, type):
        found = _BY_NAME.get((hint.__module__, hint.__qualname__))
    return None if found is None else dict(found)  # a fresh dict: descriptions are added to it


def _enum_class(hint: type) -> dict:
    values = [member.value for member in hint]
    if not values:
        raise TypeHintParsingException(
            f"The Enum {hint.__name__} has no members, so no value could ever match it.")
    if any(type(value) not in _JSON_SCALARS for value in values):
        raise TypeHintParsingException(
            f"The Enum {hint.__name__} has member values that cannot be written as JSON scalars.\n"
            f"Values: {values}\n"
            "Enum member values must be int, float, str, bool or None to be converted to a JSON schema.")
    return _enum(values)


def _union(args: tuple) -> dict:
    options = [type_schema(arg) for arg in args if arg is not type(None)]
    if len(options) == 1:
        schema = options[0]
    elif all(option.keys() == {"type"} and isinstance(option["type"], str) for option in options):
        # plain types fold into a "type" list; anything more (items, enum, ...) needs anyOf
        names = sorted({option["type"] for option in options})
        schema = {"type": names[0] if len(names) == 1 else names}
    else:
        schema = {"anyOf": options}
    if type(None) in args:
        schema["nullable"] = True
    return schema


def _tuple(hint: Any, args: tuple) -> dict:
    if not args:
        return {"type": "array"}
    if len(args) == 1:
        raise TypeHintParsingException(
            f"The type hint {str(hint).replace('typing.', '')} is a Tuple with a single element, "
            "which we do not automatically convert to JSON schema as it is rarely necessary. If "
            "this input can contain more than one element, we recommend using a list[] type "
            "instead, or if it really is a single element, remove the tuple[] wrapper and just "
            "pass the element directly.")
    if ... in args:
        raise TypeHintParsingException(
            "Conversion of '...' is not supported in Tuple type hints. Use list[] types for "
            "variable-length inputs instead.")
    return {"type": "array", "prefixItems": [type_schema(arg) for arg in args]}


def type_schema(hint: Any) -> dict:
    """The JSON schema of one type hint, as transformers' `_parse_type_hint` makes it."""
    origin, args = get_origin(hint), get_args(hint)
    if origin is None:
        if isinstance(hint, type) and issubclass(hint, Enum):
            return _enum_class(hint)
        schema = _basic_type(hint)
        if schema is None:
            raise TypeHintParsingException(_CUSTOM_CLASS.format(hint))
        return schema
    if origin is Union or origin is types.UnionType:
        return _union(args)
    if origin is Literal and args:
        if any(type(arg) not in _JSON_SCALARS for arg in args):
            raise TypeHintParsingException(
                "Only the valid python literals can be listed in typing.Literal.")
        return _enum(list(args))
    if origin is list:
        return {"type": "array", "items": type_schema(args[0])} if args else {"type": "array"}
    if origin is tuple:
        return _tuple(hint, args)
    if origin is dict:
        schema: dict[str, Any] = {"type": "object"}
        if len(args) == 2:  # JSON keys are strings: only the values' type can be said
            schema["additionalProperties"] = type_schema(args[1])
        return schema
    raise TypeHintParsingException(
        "Couldn't parse this type hint, likely due to a custom class or object: ", hint)


def parameters_schema(func: Callable) -> dict:
    """`{"type": "object", "properties", ["required"]}` from the hints; a `return` property too."""
    hints = get_type_hints(func)
    parameters = inspect.signature(func).parameters
    name = getattr(func, "__name__", "operation")
    first = next(iter(parameters), None)
    # a method's receiver: `self` or `cls` first and without a hint
    receiver = first if (first in {"self", "cls"}
                         and parameters[first].annotation == inspect.Parameter.empty) else None
    required = []
    for param_name, param in parameters.items():
        if param_name == receiver:
            continue
        if param.annotation == inspect.Parameter.empty:
            raise TypeHintParsingException(
                f"Argument {param.name} is missing a type hint in function {name}")
        if param.default == inspect.Parameter.empty:
            required.append(param_name)
    properties = {}
    for param_name, hint in hints.items():
        if param_name == receiver:
            continue
        if param_name != "return":
            properties[param_name] = type_schema(hint)
            continue
        try:  # the model never writes the return value: a return hint without schema is left out
            properties[param_name] = type_schema(hint)
        except TypeHintParsingException:
            pass
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema


def get_json_schema(func: Callable) -> dict:
    """The tool schema of `func`, exactly as `transformers.utils.get_json_schema(func)` returns it.

    The docstring gives the description and one description per argument (Google style, with an
    optional `(choices: [...])` at the end of an argument's line, which becomes an "enum");
    the type hints give the types. Raises `DocstringParsingException` or
    `TypeHintParsingException` (both `ValueError`s) with transformers' messages."""
    doc = inspect.getdoc(func)
    name = getattr(func, "__name__", "operation")
    if not doc:
        raise DocstringParsingException(
            f"Cannot generate JSON schema for {name} because it has no docstring!")
    description, described, returns = parse_google_format_docstring(doc.strip())
    parameters = parameters_schema(func)
    returned = parameters["properties"].pop("return", None)
    if returned is not None and returns is not None:
        returned["description"] = returns
    for argument, schema in parameters["properties"].items():
        if argument not in described:
            raise DocstringParsingException(
                f"Cannot generate JSON schema for {name} because the docstring has no description "
                f"for the argument '{argument}'")
        text = described[argument]
        choices = _CHOICES.search(text)
        if choices:
            schema["enum"] = [c.strip() if isinstance(c, str) else c
                              for c in json.loads(choices.group(1))]
            text = text[:choices.start()].strip()
        schema["description"] = text
    function: dict[str, Any] = {"name": name, "description": description, "parameters": parameters}
    if returned is not None:
        function["return"] = returned
    return {"type": "function", "function": function}
