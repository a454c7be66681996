"""Calls written out: a macro or function called by name, a string's or dict's method, a
builtin filter or test (the work of compiling/calls.py's closures, with their fast paths), and
the light calls of metered builtins on text. A mixin of ExpressionWriter (expressions.py), whose
`expr`, `name` and `located` it uses."""
from __future__ import annotations

from typing import Any

from ....builtins.filters import FILTERS
from ....builtins.tests import test_defined, test_undefined
from ....grammar import ast
from ....grammar.ast import NO_ARGUMENTS
from ....metering import FIND
from ....values.methods import DICT_METHODS, STR_METHODS
from ..access import DICT_ATTRIBUTES
from ..calls import _PASSING_BUILTINS, filter_value, plain_function, test_value
from .writer import Writer


# What the calls' code calls besides the writer's RUNTIME (expressions.py's HELPERS adds them).
CALL_HELPERS = {"filter_value": filter_value, "test_value": test_value}


class CallWriter(Writer):
    """Writes calls (see the module's doc)."""

    def method_call(self, node: ast.Call, scope: str, local: dict) -> str:
        """`text.strip()`, `message.get('x')` (calls._method_call): a string's or plain dict's
        method called at once; any other receiver's attribute got and called in general (the
        arguments evaluated after the attribute, as there)."""
        func, result = node.func, self.temp()
        receiver, kind, method = self.expr(func.obj, scope, local), self.temp(), self.temp()
        string_method, dict_method = STR_METHODS.get(func.attr), DICT_METHODS.get(func.attr)
        self.line(f"{kind} = type({receiver})")
        units = _light_units(string_method, node.arguments, receiver)
        if units is not None:  # `text.strip()`, `text.startswith('<think>')` of text, marked or not
            own = getattr(string_method, "same_as", None)
            unmetered = self.constant(string_method.unmetered)
            arguments = _passed(*self.evaluated(node.arguments, scope, local))
            if own:  # plain text's own method is str's, in C
                self.line(f"if {kind} is str:")
                self.depth += 1
                own_method = self.constant(getattr(str, own))
                self.light_call(units, f"{own_method}({receiver}{arguments})", result, node)
                self.depth -= 1
            self.line(f"elif {kind} is Input or {kind} is Mixed:" if own
                      else f"if {kind} is str or {kind} is Input or {kind} is Mixed:")
            self.depth += 1
            self.light_call(units, f"{unmetered}({receiver}{arguments})", result, node)
            self.depth -= 1
            self.line("else:")
            self.depth += 1
        self.line(f"if {kind} is str or {kind} is Input or {kind} is Mixed: "
                  f"{method} = {self.constant(string_method)}")
        self.line(f"elif {kind} is dict: {method} = {self.constant(dict_method)}")
        self.line(f"else: {method} = None")
        self.line(f"if {method} is not None:")
        self.depth += 1
        arguments = _passed(*self.evaluated(node.arguments, scope, local))
        self.line("try:")
        self.line(f"    {result} = {method}({receiver}{arguments})")
        self.line("except StopIteration:")
        self.line(f"    {result} = ev.undefined('value was undefined because a callable raised a "
                  "StopIteration exception')")
        self.line("except Exception as e:")
        self.line(f"    ev.fail(e, {self.constant(node)})")
        self.depth -= 1
        self.line("else:")
        self.depth += 1
        function = self.located(f"get_attribute({receiver}, {func.attr!r}, ev.undefined, ev.mutable)",
                                func)
        collected = _collected(*self.evaluated(node.arguments, scope, local))
        self.line(f"{result} = "
                  f"{self.located(f'call_function(ev, {scope}, {function}, {collected})', node)}")
        self.depth -= 1
        if units is not None:
            self.depth -= 1
        return result

    def light_call(self, units: str, call: str, result: str, node: Any) -> None:
        """A metered builtin called itself, charging what its metered call charges (`units`,
        before it runs, when not small; then a large result): one call, not three."""
        self.guarded([f"{result} = {units}",  # the charges fail at the call too, as the metered call's
                      f"if {result} >= SMALL_WORK: charge({result})",
                      f"{result} = {call}",
                      f"if isinstance({result}, RESULTS) and len({result}) * COPY >= SMALL_WORK: "
                      f"charge(len({result}) * COPY)"], node)

    def evaluated(self, arguments: Any, scope: str, local: dict) -> tuple[list, list]:
        """The arguments evaluated in order: the positional ones' locals, (name, local) pairs."""
        return ([self.expr(a, scope, local) for a in arguments.args],
                [(name, self.expr(value, scope, local)) for name, value in arguments.kwargs])

    def call(self, node: ast.Call, scope: str, local: dict) -> str:
        """`f(a, k=b)` of a name (calls.compile_call and call_function): a macro invoked at
        once, any other function through call_function; the function read, then the
        arguments, in order."""
        function, result = self.name(node.func.name, scope, local), self.temp()
        args, kwargs = self.evaluated(node.arguments, scope, local)
        arguments, named = self.temp(), self.temp()
        self.line(f"{arguments}, {named} = {_collected(args, kwargs)}")
        self.line("try:")
        self.line(f"    if type({function}) is Macro:")
        self.line(f"        {result} = {function}.invoke({function}, tuple({arguments}), {named}, ev.autoescape)")
        self.line("    else:")
        self.line(f"        {result} = call_function(ev, {scope}, {function}, {arguments}, {named})")
        self.line("except StopIteration:")
        self.line(f"    {result} = ev.undefined('value was undefined because a callable raised a "
                  "StopIteration exception')")
        self.line("except Exception as e:")
        self.line(f"    ev.fail(e, {self.constant(node)})")
        return result

    def call_plain(self, node: Any, value_node: Any, table: str, negated: Any, scope: str,
                   local: dict, site: Any = None, iterated: bool = False) -> str:
        """`x | trim`, `x is string` (calls.compile_filter and _test_closure): the value, then
        the arguments; a builtin called with them at once, any other function as the
        environment calls it (filtered or tested in general). `negated` None for a filter;
        `site` the test node when a `not` was folded into it; `iterated`: a for loop walks the
        filter's value at once (`for k, v in d | items`)."""
        site = node if site is None else site
        result = self.temp()
        function, plain = self.function(table, site.name)
        missing = _missing_key(value_node) if negated is not None else None
        if missing is not None and site.name in _DEFINED_TESTS and site.arguments == NO_ARGUMENTS:
            value = self.key_or_absent(value_node, missing, function, site.name, scope, local)
        else:
            value, missing = self.expr(value_node, scope, local), None
        args, kwargs = self.evaluated(site.arguments, scope, local)
        builtin = FILTERS.get(site.name) if negated is None else None
        opened = builtin is not None and self.light_calls(builtin, site, value, args, kwargs, function,
                                                          result, iterated)
        if opened:
            self.line("else:")
            self.depth += 1
        self.line("try:")
        if missing is not None:  # a plain dict without the key: the builtin test's answer at once
            self.line(f"    if {value} is ABSENT:")
            self.line(f"        {result} = {site.name == 'undefined'}")
            self.line(f"    elif {plain}:")
        else:
            self.line(f"    if {plain}:")
        call = f"{function}({value}{_passed(args, kwargs)})"
        general = (f"{'filter_value' if negated is None else 'test_value'}(ev, {scope}, {site.name!r}, {value}, "
                   f"{_collected(args, kwargs)})")
        if negated is None:
            self.line(f"        {result} = {call}")
            self.line("    else:")
            self.line(f"        {result} = {general}")
        else:
            self.line(f"        {result} = True if {call} else False")
            self.line("    else:")
            self.line(f"        {result} = {general}")
            if negated:
                self.line(f"    {result} = not {result}")
        self.line("except Exception as e:")
        self.line(f"    ev.fail(e, {self.constant(site)})")
        if opened:
            self.depth -= 1
        return result

    def light_calls(self, builtin: Any, site: Any, value: str, args: list, kwargs: list,
                    function: str, result: str, iterated: bool = False) -> bool:
        """The builtin filter called by the generated code itself where the environment's filter
        of the name is that builtin, charging what its metered call charges (light_call): of
        text, marked or not (`text | trim`: its text form, or str's own method for plain text);
        of a dict, list or tuple (`message | items`, `tool | string`, `messages |
        selectattr(...)`: metered counts a container by its length as it counts text), called as
        filter_value calls it, the environment first for those that take it, where the metered
        call walks none of the value. Where a loop walks the value at once (`iterated`), a
        builtin's `loop_form` of a dict (`d | items`: the dict's own items view) stands for
        the generator it makes. Writes the `if`/`elif` branches; whether it wrote any."""
        text_form = getattr(getattr(builtin, "unmetered", None), "text_form", None)
        loop_form = getattr(getattr(builtin, "unmetered", None), "loop_form", None) if iterated else None
        called_plainly = plain_function(builtin)
        passing = _PASSING_BUILTINS.get(builtin)
        if not (text_form or called_plainly or passing == "environment"):
            return False
        units = _light_units(builtin, site.arguments, value)
        if units is None:
            return False
        opened = False
        if loop_form is not None and called_plainly:
            self.line(f"if {function} is {self.constant(builtin)} and type({value}) is dict:")
            self.indented(self.light_call, units, f"{self.constant(loop_form)}({value})", result, site)
            opened = True
        if text_form or called_plainly:
            own = getattr(builtin.unmetered, "same_as", None)  # plain text's: str's own, in C
            called = self.constant(text_form or builtin.unmetered)
            if own:
                called = f"({self.constant(getattr(str, own))} if type({value}) is str else {called})"
            self.line(f"{'elif' if opened else 'if'} {function} is {self.constant(builtin)} "
                      f"and type({value}) in TEXTS:")
            self.indented(self.light_call, units, f"{called}({value}{_passed(args, kwargs)})", result, site)
            opened = True
        container_form = getattr(builtin.unmetered, "container_form", None)
        first = "" if called_plainly and builtin.walk != 0 else \
            "ev.env, " if passing == "environment" and builtin.walk is None else None
        if container_form is not None:  # (`tool | string`: the print itself, the environment not asked)
            call = f"{self.constant(container_form)}({value})"
        elif first is not None:
            call = f"{self.constant(builtin.unmetered)}({first}{value}{_passed(args, kwargs)})"
        else:
            return opened
        self.line(f"{'elif' if opened else 'if'} {function} is {self.constant(builtin)} "
                  f"and type({value}) in CONTAINERS:")
        self.indented(self.light_call, units, call, result, site)
        return True

    def key_or_absent(self, node: Any, key: str, function: str, name: str, scope: str,
                      local: dict) -> str:
        """`x.key is defined` (and `undefined`, `x['key']`): ABSENT where `x` is a plain dict
        without the key and the test is the builtin one, which then answers without the
        Undefined the read would make (`message.tool_calls is defined`, once per message);
        else the value, read as the node reads it."""
        container, value = self.expr(node.obj, scope, local), self.temp()
        self.line(f"{value} = {container}.get({self.constant(key)}, ABSENT) "
                  f"if type({container}) is dict else ABSENT")
        self.line(f"if {value} is ABSENT and not ({function} is {self.constant(_DEFINED_TESTS[name])} "
                  f"and type({container}) is dict):")
        self.depth += 1
        self.line(f"{value} = {self.closure(node, scope)}")
        self.depth -= 1
        return value


_DEFINED_TESTS = {"defined": test_defined, "undefined": test_undefined}


def _light_units(builtin: Any, arguments: Any, text: str) -> Any:
    """The units metering.metered charges a call of `builtin` on the text in the local `text`
    with these arguments (literals only, none named), as an expression in the same terms and
    order as `metered` sums them (so the same charge, to the last bit); None for any other call."""
    if getattr(builtin, "unmetered", None) is None or arguments.kwargs \
            or not _plain_arguments(arguments):
        return None
    values = []
    for argument in arguments.args:
        if type(argument) is not ast.Const or type(argument.value) not in _LITERAL_ARGUMENTS:
            return None
        values.append(argument.value)
    size = sum(len(value) for value in values if type(value) is str)
    # base + cost * size, as `metered` sums it
    units = (f"{builtin.base!r} + " if builtin.base else "") + f"{builtin.cost!r} * " + \
        (f"(len({text}) + {size})" if size else f"len({text})")
    if builtin.walk is not None:  # the text (position 0) and the arguments from `walk` on
        for position, value in enumerate([None, *values]):
            if position >= builtin.walk and (position == 0 or type(value) is str):
                units += f" + {f'len({text})' if position == 0 else len(value)} * {FIND!r}"
    return units


_LITERAL_ARGUMENTS = frozenset((str, int, bool, type(None)))


def _missing_key(node: Any) -> Any:
    """The text key of `x.key` or `x['key']` when a plain dict without it makes the read
    undefined (a key no dict method or private name shadows), else None."""
    if type(node) is ast.GetAttr:
        key = node.attr
    elif type(node) is ast.GetItem and type(node.key) is ast.Const:
        key = node.key.value
    else:
        return None
    if type(key) is not str or key[:1] == "_" or key in DICT_ATTRIBUTES:
        return None
    return key


def _passed(args: list, kwargs: list) -> str:
    """`, a, b, k=v`: evaluated arguments as the rest of a call's text."""
    return "".join(f", {a}" for a in args) + "".join(f", {name}={value}" for name, value in kwargs)


def _collected(args: list, kwargs: list) -> str:
    """`[a, b], {'k': v}`: evaluated arguments as the list and dict call_function takes."""
    return f"[{', '.join(args)}], {{{', '.join(f'{name!r}: {value}' for name, value in kwargs)}}}"


def _plain_arguments(arguments: Any) -> bool:
    """Arguments without `*args` or `**kwargs`."""
    return arguments.star is None and arguments.dstar is None
