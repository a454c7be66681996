"""Expressions written out: each gives a Python expression (a constant or a local) holding
the node's value, the lines computing it written before. Each form is the work of a closure
(compiling/access.py, calls.py, operators.py), written out, with that closure's fast paths and,
past them, its general path on the values already read; a node of any other form is a call of
its closure. `scope` names the variable holding the current frame; `local` maps template names
to the Python locals that hold them (a kept loop frame's variable and `loop`)."""
from __future__ import annotations

from types import GeneratorType
from typing import Any

from ....grammar import ast
from ....metering import _RESULTS, COPY, SMALL_WORK, charge
from ....values.access import get_attribute
from ....values.marks import Input, Mixed, concat, concat2
from ....values.methods import DICT_METHODS, STR_METHODS
from ....values.numbers import INPUT_NUMBERS, InputFloat, InputInt, derived
from ...expressions import SHORT_TEXT, SMALL_COPY, join_printed, safe_sum
from ...printer import write
from ....values.markup import Markup
from ..access import (_DICT_KEYS, _INDICES, ABSENT, DICT_ATTRIBUTES, LOOP_PROPERTIES, item_of, plain_read,
                      read_path)
from ..calls import _PLAIN_TESTS, call_function, plain_function
from ..operators import HASHED_CHEAPLY, Addends, _add_rest, _finish, addends, compare, negate, operate
from .calls import _DEFINED_TESTS, CALL_HELPERS, CallWriter, _plain_arguments
from ....grammar.ast import NO_ARGUMENTS

METHOD_NAMES = frozenset(STR_METHODS).union(DICT_METHODS)  # calls.compile_call's method calls


# The fast paths' facts. Operators on plain int and float (not bool, not numbers from input)
# that cannot grow a value past what limits check (`*` and `**` can: operate checks them).
_ARITHMETIC = frozenset(("+", "-", "/", "//", "%"))
_NUMBERS = frozenset((int, float))
# Numbers plain or from input: compared at once (`idx > 1` for an idx in `range(messages|length)`;
# comparing gives a bool, which is not input), and added, subtracted, divided at once when one is
# from input, the result marked as binary() marks it (`messages|length - 1 - loop.index0`).
_ANY_NUMBERS = _NUMBERS | INPUT_NUMBERS
# Values compared at once: numbers plain or from input, and booleans (comparisons compared again:
# `(m.role == 'user') != (loop.index0 % 2 == 0)`).
_COMPARED_AT_ONCE = _ANY_NUMBERS | {bool}
# Values whose == with a literal of these types costs Python one step (a str compares lengths,
# then at most the literal's characters; a container against a literal gives False at once).
_EQUALLY_CHEAP = frozenset((int, float, bool, type(None), str))
_COMPARED_CHEAPLY = frozenset((int, float, bool, type(None), str, Input, Mixed, list, dict, tuple,
                               InputInt, InputFloat))


def _literal_texts(node: ast.Compare) -> Any:
    """The texts of `x in ['a', 'b']` (or `not in`, a tuple) as a set, else None."""
    if len(node.ops) != 1 or node.ops[0][0] not in ("in", "not in"):
        return None
    right = node.ops[0][1]
    if type(right) not in (ast.ListLiteral, ast.TupleLiteral) or not right.items or not all(
            type(item) is ast.Const and type(item.value) is str for item in right.items):
        return None
    return frozenset(item.value for item in right.items)


def _literal_other_than_a_number(node: Any) -> bool:
    """A literal of no numeric type (text, none, a boolean), which binary()'s fast paths never take."""
    return type(node) is ast.Const and type(node.value) is not int and type(node.value) is not float


def _definedness_of_name(node: ast.Test) -> bool:
    """`name is defined` / `undefined` of a variable, no arguments (calls._definedness)."""
    return (type(node.value) is ast.Name and node.name in _DEFINED_TESTS
            and node.arguments == NO_ARGUMENTS)


def add_rest(ev: Any, output: Any, terms: Any, scope: Any, texts: list, value: Any) -> Any:
    """`a + b + c` from its first addend that is not text (`value`, after `texts`): the rest
    added as the expression tree adds it (compile_sum's way); printed for `{{ }}` (`output`),
    else the value."""
    return _finish(ev, output, _add_rest(ev, terms, scope, texts, value))


# What the expressions' code calls besides the writer's RUNTIME.
HELPERS = {"ABSENT": ABSENT, "operate": operate, "compare": compare,
           "item_of": item_of, "concat2": concat2, "concat": concat, "add_rest": add_rest, "negate": negate, **CALL_HELPERS,
           "safe_sum": safe_sum, "write": write, "Markup": Markup,
           "join_printed": join_printed, "get_attribute": get_attribute, "call_function": call_function,
           "plain_function": plain_function, "PLAIN_TESTS": _PLAIN_TESTS, "SMALL_COPY": SMALL_COPY,
           "NUMBERS": _NUMBERS, "ANY_NUMBERS": _ANY_NUMBERS,
           "COMPARED_AT_ONCE": _COMPARED_AT_ONCE, "derived": derived, "HASHED_CHEAPLY": HASHED_CHEAPLY,
           "TEXTS": frozenset((str, Input, Mixed)), "CONTAINERS": frozenset((dict, list, tuple)),
           "GeneratorType": GeneratorType, "DICT_ITEMS": type({}.items()), "COMPARED_CHEAPLY": _COMPARED_CHEAPLY,
           "RESULTS": _RESULTS, "COPY": COPY, "SMALL_WORK": SMALL_WORK, "charge": charge,
           "DICT_KEYS": _DICT_KEYS, "INDICES": _INDICES}


class ExpressionWriter(CallWriter):
    """Writes expressions (see the module's doc)."""

    def expr(self, node: Any, scope: str, local: dict) -> str:
        """A Python expression (a literal's constant or a local) holding the node's value,
        the lines computing it written before."""
        kind = type(node)
        if kind is ast.Const:
            literal = self.constant(node.value)
            if type(node.value) is int or type(node.value) is float:
                self.numbers.add(literal)
            return literal
        if kind is ast.Name:
            return self.name(node.name, scope, local)
        if kind is ast.GetAttr and type(node.obj) is ast.Name and node.obj.name == "loop" \
                and local.get("loop") is not None and node.attr in LOOP_PROPERTIES:
            return self.loop_attribute(local["loop"], node.attr, node)
        if kind in (ast.GetItem, ast.GetAttr):
            variable, key = plain_read(node)
            if variable is not None and (kind is ast.GetItem or key not in DICT_ATTRIBUTES):
                return self.item(node, variable, key, scope, local)
            path = read_path(node)
            if path is not None:
                return self.path(node, path, scope, local)
        elif kind is ast.Compare:
            return self.compare(node, scope, local)
        elif kind is ast.Logical:
            return self.logical(node, scope, local)
        elif kind is ast.GetItem and type(node.key) is not ast.Slice:
            return self.any_item(node, scope, local)
        elif kind is ast.GetAttr and type(node.attr) is str:
            return self.any_attribute(node, scope, local)
        elif kind is ast.ListLiteral or kind is ast.TupleLiteral:  # compile_list, compile_tuple
            items = ", ".join(self.expr(item, scope, local) for item in node.items)
            return self.value(f"[{items}]" if kind is ast.ListLiteral else f"({items}{',' if node.items else ''})")
        elif kind is ast.Filter and _plain_arguments(node.arguments):
            return self.call_plain(node, node.value, "filters", None, scope, local)
        elif kind is ast.Test and _definedness_of_name(node):
            return self.definedness(node, node.negated, scope, local)
        elif kind is ast.Test and _plain_arguments(node.arguments):
            return self.call_plain(node, node.value, "tests", node.negated, scope, local)
        elif kind is ast.Unary and node.op == "not" and type(node.operand) is ast.Test:
            test = node.operand  # compile_unary folds the `not` into the test
            if _definedness_of_name(test):
                return self.definedness(test, not test.negated, scope, local, node)
            if _plain_arguments(test.arguments):
                return self.call_plain(node, test.value, "tests", not test.negated, scope, local, test)
        elif kind is ast.Unary and node.op in ("-", "+"):  # compile_unary's negate
            value, result = self.expr(node.operand, scope, local), self.temp()
            self.line("if ev.unops:")
            self.depth += 1
            self.line(f"{result} = {self.located(f'negate(ev, {scope}, {node.op!r}, {value})', node)}")
            self.depth -= 1
            self.line("else:")
            self.depth += 1
            self.line(f"{result} = {self.located(f'{node.op}{value}', node)}")
            self.depth -= 1
            return result
        elif kind is ast.Call and type(node.func) is ast.Name and node.arguments.star is None \
                and node.arguments.dstar is None:
            return self.call(node, scope, local)
        elif kind is ast.Binary and not _sum(node):
            return self.binary(node, scope, local)
        elif kind is ast.Binary:  # `a + b + c`, as a value (`set x = ...`)
            return self.sum_value(node, scope, local)
        elif kind is ast.Concat:
            items = [self.expr(item, scope, local) for item in node.items]
            return self.located(f"join_printed(ev, [{', '.join(items)}])", node)
        elif kind is ast.CondExpr:
            return self.condition(node, scope, local)
        elif kind is ast.Call and type(node.func) is ast.GetAttr and node.func.attr in METHOD_NAMES \
                and node.arguments.star is None and node.arguments.dstar is None:
            return self.method_call(node, scope, local)
        elif kind is ast.Unary and node.op == "not":
            value = self.expr(node.operand, scope, local)
            result = self.temp()
            self.line("try:")
            self.line(f"    {result} = False if {value} else True")
            self.line("except Exception as e:")
            self.line(f"    ev.fail(e, {self.constant(node)})")
            self.booleans.add(result)
            return result
        return self.fallback(node, scope)

    def binary(self, node: ast.Binary, scope: str, local: dict) -> str:
        """operators' `operate` and `_plus`: plain numbers (and, for `+`, two short texts)
        at once; the rest as binary() does it, or through the sandbox's interception."""
        a, b = self.expr(node.left, scope, local), self.expr(node.right, scope, local)
        result, op = self.temp(), node.op
        if op != "+" and (_literal_other_than_a_number(node.left) or _literal_other_than_a_number(node.right)):
            # (`loop.index - 'x'`, `x * true`: no fast path can take it; `+` adds text too)
            self.line(f"{result} = {self.located(f'operate(ev, {scope}, {op!r}, {a}, {b})', node)}")
            return result
        if op == "+" and a in self.numbers and b in self.numbers:  # `loop.index0 + 1`
            self.line("if not binops:")
            self.line(f"    {result} = {a} + {b}")
        elif op == "+":
            kind = self.temp()
            self.line(f"{kind} = type({a})")
            self.line(f"if {kind} is type({b}) and not binops and ({kind} is str and "
                      f"len({a}) + len({b}) <= SMALL_COPY or {kind} is int or {kind} is float):")
            self.line(f"    {result} = {a} + {b}")
            # text and input (binary()'s first case, without its calls): marks joined at once
            self.line(f"elif ({kind} is str or {kind} is Input) and (type({b}) is str or type({b}) is Input) "
                      f"and not binops and len({a}) + len({b}) <= SMALL_COPY:")
            self.line(f"    {result} = concat2({a}, {b})")
            self.line(f"elif {kind} in ANY_NUMBERS and type({b}) in ANY_NUMBERS and not binops:")
            self.line(f"    {result} = derived({a} + {b}, {a}, {b})")
        elif op in _ARITHMETIC:
            plain = self.of_types((a, b), "NUMBERS")
            self.line(f"if {' and '.join(plain + ['not binops'])}:")
            self.line("    try:")
            self.line(f"        {result} = {a} {op} {b}")
            self.line("    except Exception as e:")
            self.line(f"        ev.fail(e, {self.constant(node)})")
            if plain:  # (else only the sandbox's interception is left)
                self.line(f"elif {' and '.join(self.of_types((a, b), 'ANY_NUMBERS') + ['not binops'])}:")
                self.line("    try:")
                self.line(f"        {result} = derived({a} {op} {b}, {a}, {b})")
                self.line("    except Exception as e:")
                self.line(f"        ev.fail(e, {self.constant(node)})")
        else:  # `*`, `**`: they can grow a value past the limits, binary() checks
            self.line(f"{result} = {self.located(f'operate(ev, {scope}, {op!r}, {a}, {b})', node)}")
            return result
        self.line("else:")
        self.depth += 1
        self.line(f"{result} = {self.located(f'operate(ev, {scope}, {op!r}, {a}, {b})', node)}")
        self.depth -= 1
        return result

    def sum_value(self, node: ast.Binary, scope: str, local: dict) -> str:
        """compile_sum's `a + b + c` as a value: the addends collected while they are text and
        joined once (`collect`); its closure where the sandbox intercepts `+`."""
        result = self.temp()
        self.line("if binops and '+' in binops:")
        self.line(f"    {result} = {self.closure(node, scope)}")
        self.line("else:")
        self.indented(self.collect, node, scope, local, None, result)
        return result

    def collect(self, expr: ast.Binary, scope: str, local: dict, output: Any, result: str = "") -> None:
        """compile_sum's collecting, for both of its uses: the addends evaluated left to right
        while they are text (marked or not; safe text is added as Markup adds); from the first
        that is not, the rest is added as the expression tree adds it (operators' _add_rest,
        which evaluates the addends after it). With `output` (the `{{ }}` around the sum) the
        texts are written one after the other; else `result` gets them joined once."""
        terms = self.constant(Addends(expr))
        site = self.constant(output if output is not None else expr)
        rest = f"add_rest(ev, {self.constant(output)}, {terms}, {scope}, [{{}}], {{}})"
        operands, pieces, values, before, size = addends(expr)[0], [], [], [], 0
        kinds = []  # the types of the dynamic addends: all str, the join needs no marks
        filtered = []  # the types of the addends that are filters: safe text makes a safe sum
        literals = set()  # the constants of this sum's literal pieces (others may be shared)
        for operand in operands:
            if type(operand) is ast.Const and type(operand.value) is str:
                size += len(operand.value)
                before.append(self.constant(operand.value))
                if pieces and pieces[-1] in literals:
                    self.constants[pieces[-1]] += operand.value  # adjacent literals, one piece
                else:
                    pieces.append(self.constant(operand.value))
                    literals.add(pieces[-1])
                continue
            value, kind = self.expr(operand, scope, local), self.temp()
            self.line(f"{kind} = type({value})")
            # A filter may give safe text (`|safe`, `|tojson`): collected too, the sum is safe
            # (compile_sum's). Other addends rarely are: they pay no look for it.
            safe = f" and {kind} is not Markup" if type(operand) is ast.Filter else ""
            self.line(f"if not ({kind} is str or {kind} is Input or {kind} is Mixed){safe}:")
            added = rest.format(", ".join(before), value)
            self.line(f"    {added}" if output is not None else f"    {result} = {added}")
            self.line("else:")
            self.depth += 1
            before.append(value)
            pieces.append(value)
            values.append(value)
            kinds.append(kind)
            if safe:
                filtered.append(kind)
        lengths = "".join(f" + len({value})" for value in values)
        joined = ", ".join(pieces)
        if filtered:
            self.line(f"if {' or '.join(f'{kind} is Markup' for kind in filtered)}:")
            self.depth += 1
            if output is not None:
                self.guarded([f"write(ev, safe_sum(ev, ({joined},)))"], output)
            else:
                self.guarded([f"if {size}{lengths} > SMALL_COPY: budget.limits.check_size({size}{lengths})",
                              f"{result} = safe_sum(ev, ({joined},))"], expr)
            self.depth -= 1
            self.line("else:")
            self.depth += 1
        self.line("try:")
        if output is not None:
            self.line(f"    budget.output -= {size}{lengths}")
            self.line("    if budget.output < 0: budget.wrote(0)")
            self.line(f"    out.extend(({joined},))")
        else:
            total = self.temp()
            self.line(f"    {total} = {size}{lengths}")
            self.line(f"    if {total} > SMALL_COPY: budget.limits.check_size({total})")
            plain = " and ".join(f"{kind} is str" for kind in kinds) or "True"
            self.line(f"    {result} = ''.join(({joined},)) if {plain} else concat(({joined},))")
        self.line("except Exception as e:")
        self.line(f"    ev.fail(e, {site})")
        self.depth -= len(values) + bool(filtered)

    def compare_one(self, node: ast.Compare, scope: str, local: dict) -> str:
        """One comparison (operators' _compare, and `among` for `x in ['a', 'b']`): numbers at
        once; text in a set of literal texts; the rest through compare."""
        (op, right_node), = node.ops
        left, result = self.expr(node.first, scope, local), self.temp()
        texts = _literal_texts(node)
        if texts is not None:
            kind = self.temp()
            self.line(f"{kind} = type({left})")
            self.line(f"if {kind} is str or {kind} is Input:")
            self.line(f"    {result} = ({left} in {self.constant(texts)}) is {op == 'in'}")
            self.line("else:")
            self.depth += 1
            right = self.expr(right_node, scope, local)
            self.line(f"{result} = {self.located(f'compare(ev, {op!r}, {left}, {right})', node)}")
            self.depth -= 1
            return result
        right = self.expr(right_node, scope, local)
        if op in ("in", "not in"):  # a short key in a dict, short text in short text: at once
            test = (f"type({right}) is dict and type({left}) in HASHED_CHEAPLY or type({right}) in TEXTS "
                    f"and type({left}) in TEXTS and len({right}) <= {SHORT_TEXT} "
                    f"and len({left}) <= {SHORT_TEXT}")
            return self.either(test, f"{left} {op} {right}",
                               f"compare(ev, {op!r}, {left}, {right})", node)
        numbers = self.of_types(tuple(value for value in (left, right) if value not in self.booleans),
                                "COMPARED_AT_ONCE")
        if not numbers:  # two plain numbers (or booleans) compare at once, and cannot fail
            self.line(f"{result} = {left} {op} {right}")
            self.booleans.add(result)
            return result
        return self.either(" and ".join(numbers), f"{left} {op} {right}",
                           f"compare(ev, {op!r}, {left}, {right})", node)

    def condition(self, node: ast.CondExpr, scope: str, local: dict) -> str:
        """`a if test else b` (compile_condexpr): without `else`, the lenient Undefined."""
        result = self.temp()
        taken = self.truth(self.expr(node.test, scope, local), node)
        self.line(f"if {taken}:")
        self.depth += 1
        self.line(f"{result} = {self.expr(node.then, scope, local)}")
        self.depth -= 1
        self.line("else:")
        self.depth += 1
        if node.otherwise is None:
            message = (f"the inline if-expression on line {node.span.line} evaluated to false and "
                       "no else section was defined.")
            self.line(f"{result} = Undefined({self.constant(message)})")
        else:
            self.line(f"{result} = {self.expr(node.otherwise, scope, local)}")
        self.depth -= 1
        return result

    def name(self, name: str, scope: str, local: dict) -> str:
        """compile_name's lookup: the scope chain walked inline (a kept loop's variable is a
        local; `loop` in such a loop's body is read from its frame)."""
        held = local.get(name)
        if held is not None:
            return held
        if name in self.free:  # one value for the whole render: read once, at the start
            found = self.resolved.get(name)
            if found is None:
                found = self.resolved[name] = self.temp()
            self.line(f"if {found} is ABSENT: {found} = ev.lookup_missing({name!r})")
            return found
        result = self.temp()
        self.walked(result, name, scope, self.temp())
        self.line(f"if {result} is ABSENT or {result} is MISSING: {result} = ev.lookup_missing({name!r})")
        return result

    def definedness(self, node: ast.Test, negated: bool, scope: str, local: dict, site: Any = None) -> str:
        """`name is defined` (or `undefined`, `not` folded in: calls._definedness, the guard chat
        templates open with): the scope chain searched inline without making an undefined for a
        missing name, while the environment's test is the builtin one; else its closure."""
        name, result, frame, value = node.value.name, self.temp(), self.temp(), self.temp()
        wanted = (node.name == "defined") != negated  # the result when the name is defined
        function, _ = self.function("tests", node.name)
        held = local.get(name)  # a kept loop's variable: defined unless it holds an undefined
        self.line(f"if {function} is {self.constant(_DEFINED_TESTS[node.name])}:")
        self.depth += 1
        if held is not None:
            self.line(f"{result} = {wanted} if not isinstance({held}, Undefined) else {not wanted}")
        else:
            self.line(f"{result} = {not wanted}")
            if name == "self":  # the template's blocks, where it extends or is extended
                self.line(f"if ev.chain is not None: {result} = {wanted}")
            self.line(f"{frame} = {scope}")
            self.line(f"while {frame} is not None:")
            self.line(f"    {value} = {frame}.vars.get({name!r}, ABSENT)")
            self.line(f"    if {value} is not ABSENT:")
            self.line(f"        if {value} is not MISSING:  # (owned by the frame, unassigned: undefined)")
            self.line(f"            {result} = {wanted} if not isinstance({value}, Undefined) else {not wanted}")
            self.line("        break")
            self.line(f"    {frame} = {frame}.parent")
        self.depth -= 1
        self.line("else:")
        self.line(f"    {result} = {self.closure(node if site is None else site, scope)}")
        return result

    def loop_attribute(self, loop: str, attribute: str, node: Any) -> str:
        """`loop.index` where `loop` is a LoopContext (variable_read's and _loop_counter's
        reads of it): the count at once; what looks ahead (`last`) may fail, at `node`."""
        result = self.temp()
        if attribute == "index":
            self.line(f"{result} = {loop}.index0 + 1")
            self.numbers.add(result)
        elif attribute == "first":
            self.line(f"{result} = {loop}.index0 == 0")
            self.booleans.add(result)
        elif attribute == "index0":
            self.line(f"{result} = {loop}.index0")
            self.numbers.add(result)
        else:
            self.line("try:")
            self.line(f"    {result} = {loop}.{attribute}")
            self.line("except Exception as e:")
            self.line(f"    ev.fail(e, {self.constant(node)})")
        return result

    def item(self, node: Any, variable: str, key: Any, scope: str, local: dict) -> str:
        """`m['role']` / `m.role` (compile_access's variable read): a plain dict's item at once,
        anything else by the node's closure (reading a variable again is unseen)."""
        obj = self.name(variable, scope, local)
        result, general = self.temp(), self.closure(node, scope)
        # `m.tool_calls` where there are none: no item and no method, undefined at once
        undefined = type(key) is str and key[:1] != "_" and key not in DICT_ATTRIBUTES
        self.dict_item(result, obj, key, f"ev.undefined(obj={obj}, name={self.constant(key)})"
                       if undefined else general)
        if type(node) is ast.GetItem and type(key) is int:  # `messages[0]`
            bound = f"len({obj}) >= {-key}" if key < 0 else f"len({obj}) > {key}"
            self.line(f"elif (type({obj}) is list or type({obj}) is tuple) and {bound}:")
            self.line(f"    {result} = {obj}[{key!r}]")
        if key in LOOP_PROPERTIES:  # `loop.index` (a loop's; anything else called `loop` in general)
            self.line(f"elif type({obj}) is LoopContext:")
            self.depth += 1
            self.line(f"{result} = {self.loop_attribute(obj, key, node)}")
            self.depth -= 1
        elif type(node) is ast.GetAttr and key[:1] != "_":  # `ns.found`
            self.line(f"elif type({obj}) is Namespace:")
            self.line(f"    {result} = {obj}.attrs.get({self.constant(key)}, ABSENT)")
            self.line(f"    if {result} is ABSENT: {result} = {general}")
        self.line("else:")
        self.line(f"    {result} = {general}")
        return result

    def path(self, node: Any, path: tuple, scope: str, local: dict, general: bool = True) -> str:
        """`messages[i]['role']` (access.path_code): walked while it meets plain dicts and
        lists; anything else on the way, the node's closure reads from the start (without
        `general`: ABSENT stands for "not plain data all the way")."""
        variable, steps = path
        result = self.temp()
        self.line(f"{result} = {self.name(variable, scope, local)}")
        opened = 0
        for key, by_name in steps:
            if opened:
                self.line(f"if {result} is not ABSENT:")
                self.depth += 1
            opened += 1
            if by_name:
                key = self.name(key, scope, local)
                kind = self.temp()
                self.line(f"{kind} = type({key})")
                self.line(f"if type({result}) is dict and {kind} in DICT_KEYS: "
                          f"{result} = {result}.get({key}, ABSENT)")
                self.line(f"elif (type({result}) is list or type({result}) is tuple) and {kind} in INDICES "
                          f"and -len({result}) <= {key} < len({result}): {result} = {result}[{key}]")
                self.line(f"else: {result} = ABSENT")
            elif type(key) is str:
                self.dict_item(result, result, key, "ABSENT")
                self.line(f"else: {result} = ABSENT")
            else:
                self.line(f"if type({result}) is dict: {result} = {result}.get({key!r}, ABSENT)")
                self.line(f"elif (type({result}) is list or type({result}) is tuple) and len({result}) >= {-key}: "
                          f"{result} = {result}[{key!r}]" if key < 0 else
                          f"elif (type({result}) is list or type({result}) is tuple) and {key} < len({result}): "
                          f"{result} = {result}[{key!r}]")
                self.line(f"else: {result} = ABSENT")
        self.depth -= opened - 1
        if general:
            self.line(f"if {result} is ABSENT: {result} = {self.closure(node, scope)}")
        return result

    def value(self, expression: str) -> str:
        """A local holding `expression`, which cannot fail."""
        result = self.temp()
        self.line(f"{result} = {expression}")
        return result

    def any_item(self, node: ast.GetItem, scope: str, local: dict) -> str:
        """`obj[key]` of any object and key (access._compile_getitem's item): a list's index, a
        plain dict's item at once, anything else through get_item."""
        obj, key = self.expr(node.obj, scope, local), self.expr(node.key, scope, local)
        return self.located(f"item_of(ev, {obj}, {key})", node)

    def any_attribute(self, node: ast.GetAttr, scope: str, local: dict) -> str:
        """`obj.attr` of any object (access._compile_getattr): a plain dict's item, when the
        name is no dict method's, at once; anything else through get_attribute."""
        obj, attr = self.expr(node.obj, scope, local), node.attr
        general = f"get_attribute({obj}, {attr!r}, ev.undefined, ev.mutable)"
        if attr[:1] == "_" or attr in DICT_ATTRIBUTES:
            return self.located(general, node)
        result = self.temp()
        self.dict_item(result, obj, attr, "ABSENT")
        self.line(f"else: {result} = ABSENT")
        self.line(f"if {result} is ABSENT:")
        self.depth += 1
        self.line(f"{result} = {self.located(general, node)}")
        self.depth -= 1
        return result

    def compare(self, node: ast.Compare, scope: str, local: dict) -> str:
        """`x == 'literal'` (operators' _equals_constant): plain data compared at once; one
        comparison of any other form by compare_one; a chain (`a < b < c`) by its closure."""
        if len(node.ops) != 1:
            return self.fallback(node, scope)
        (op, right), = node.ops
        value = right.value if type(right) is ast.Const else None
        if op not in ("==", "!=") or type(right) is not ast.Const or type(value) not in _EQUALLY_CHEAP \
                or type(value) is str and len(value) > SHORT_TEXT:
            return self.compare_one(node, scope, local)
        left, literal = self.expr(node.first, scope, local), self.constant(value)
        return self.either(f"type({left}) in COMPARED_CHEAPLY", f"{left} {op} {literal}",
                           f"compare(ev, {op!r}, {left}, {literal})", node)

    def logical(self, node: ast.Logical, scope: str, local: dict) -> str:
        """compile_logical: the right side only when the left does not decide."""
        result = self.temp()
        left = self.expr(node.left, scope, local)
        self.line(f"{result} = {left}")
        taken = self.truth(result, node)
        self.line(f"if {'' if node.op == 'and' else 'not '}{taken}:")
        self.depth += 1
        right = self.expr(node.right, scope, local)
        self.line(f"{result} = {right}")
        self.depth -= 1
        return result


def _plus(expr: Any) -> bool:
    """`a + b`, `a + b + c`, ...: a sum of two addends or more."""
    return type(expr) is ast.Binary and expr.op == "+"


def _sum(expr: Any) -> bool:
    """`{{ a + b + c }}`: compile_output gives it to compile_sum, one closure."""
    return type(expr) is ast.Binary and expr.op == "+" and type(expr.left) is ast.Binary \
        and expr.left.op == "+"
