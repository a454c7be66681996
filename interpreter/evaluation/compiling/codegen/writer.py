"""The generated code's writer: lines, indentation, the constants the code refers to (nodes,
closures, literals), temporaries, and the pieces every writer uses (fuel, truth, a failure
located at a node, a node's closure as a fallback)."""
from __future__ import annotations

import sys
from typing import Any

from ....values.marks import Input, Mixed
from ....values.markup import is_safe
from ....values.printing import to_string
from ....values.runtime import LoopContext, Macro, Namespace
from ....values.undefined import MISSING, Undefined
from ...loops import FIXED_LENGTH, LoopSignal, assign, filtered, loop_iterator
from ...printer import print_output, print_text
from ...scope import Scope

# Names the generated code uses besides its constants (codegen/__init__.py adds the helpers of
# expressions.py).
RUNTIME = {"MISSING": MISSING, "Input": Input, "Mixed": Mixed, "str": str, "int": int,
           "bool": bool, "dict": dict, "type": type, "len": len, "to_string": to_string,
           "is_safe": is_safe, "LoopContext": LoopContext, "Namespace": Namespace, "Macro": Macro,
           "Undefined": Undefined, "LoopSignal": LoopSignal, "Scope": Scope, "assign": assign,
           "filtered": filtered, "loop_iterator": loop_iterator, "FIXED_LENGTH": FIXED_LENGTH,
           "Exception": Exception, "StopIteration": StopIteration, "print_text": print_text, "print_output": print_output}


class Deferred:
    """A constant standing for `node`'s closure, which generate() compiles on its first call."""

    __slots__ = ("node",)

    def __init__(self, node: Any) -> None:
        self.node = node


class Writer:
    """Writes Python lines at the current indentation (`depth`); `blocks` counts the nested
    loops and try blocks around them (Python compiles at most 20)."""

    def __init__(self, free: frozenset = frozenset()) -> None:
        self.free = free  # the template's free names (codegen.free_names)
        self.resolved: dict[str, str] = {}  # each free name read, and the local it is read into
        self.lines: list[str] = []
        self.constants: dict[str, Any] = {}
        self.depth = 1  # indentation
        self.blocks = 0  # nested loops and try blocks
        self.count = 0
        self.booleans: set[str] = set()  # locals that surely hold a bool
        # constants and locals that surely hold a plain int or float (a literal, `loop.index0`):
        # the fast paths test the type of the others only
        self.numbers: set[str] = set()
        # the filters and tests the function calls: (local of the function, local of whether
        # it is called plainly, table, name), looked up once per render (codegen's _prologue)
        self.prologue: list[tuple[str, str, str, str]] = []
        self.functions: dict[tuple, tuple[str, str]] = {}

    def line(self, text: str) -> None:
        self.lines.append("    " * self.depth + text)

    def constant(self, value: Any) -> str:
        self.count += 1
        # interned, as Python interns the names in the compiled code: the globals' key and
        # the code's name are then one string, not two per constant
        name = sys.intern(f"k{self.count}")
        self.constants[name] = value
        return name

    def function(self, table: str, name: str) -> tuple[str, str]:
        """Locals holding the environment's filter (`table` "filters") or test ("tests") of this
        name and whether it is called plainly (calls.plain_function): looked up once per
        render, as Jinja2 looks a template's filters up when its render starts."""
        key = (table, name)
        if key not in self.functions:
            function, plain = self.temp(), self.temp()
            self.prologue.append((function, plain, table, name))
            self.functions[key] = function, plain
        return self.functions[key]

    def temp(self) -> str:
        self.count += 1
        return f"t{self.count}"

    def closure(self, node: Any, scope: str) -> str:
        """A call of the node's closure (the first tier's code for it), compiled when first
        called (codegen's `_OnFirstCall`)."""
        return f"{self.constant(Deferred(node))}(ev, {scope})"

    def indented(self, write: Any, *args: Any) -> None:
        self.depth += 1
        write(*args)
        self.depth -= 1

    def charge(self, cost: int) -> None:
        """Fuel for a body about to run (compile_body's)."""
        if cost:
            self.line(f"ev.steps -= {cost}")
            self.line("if ev.steps <= 0: ev.steps = budget.refuel(ev.steps)")

    def truth(self, value: str, node: Any) -> str:
        """`bool(value)`, a strict undefined's refusal raised at `node` (a value known to be a
        bool, a `not`'s, is its own truth)."""
        if value in self.booleans:
            return value
        return self.located(f"True if {value} else False", node)

    def of_types(self, values: tuple, types: str) -> list[str]:
        """The tests that each of `values` is of the `types` (a set of types holding int and
        float: NUMBERS, ANY_NUMBERS, COMPARED_AT_ONCE), but for those known to be a plain int or
        float."""
        return [f"type({value}) in {types}" for value in values if value not in self.numbers]

    def fallback(self, node: Any, scope: str) -> str:
        result = self.temp()
        self.line(f"{result} = {self.closure(node, scope)}")
        return result

    def either(self, test: str, fast: str, general: str, node: Any) -> str:
        """A local holding `fast` where `test` holds, else `general`, its failure raised at
        `node`: a closure's fast path and its general path, written out."""
        result = self.temp()
        self.line(f"if {test}:")
        self.line(f"    {result} = {fast}")
        self.line("else:")
        self.depth += 1
        self.line(f"{result} = {self.located(general, node)}")
        self.depth -= 1
        return result

    def located(self, expression: str, node: Any) -> str:
        """`expression`'s value, a failure raised at `node`."""
        result = self.temp()
        self.guarded([f"{result} = {expression}"], node)
        return result

    def walked(self, result: str, name: str, scope: str, frame: str) -> None:
        """compile_name's lookup written out: `result` the value of `name` in the first frame of
        the chain from `scope` that holds it, else ABSENT (`frame` walks the chain)."""
        self.line(f"{result} = ABSENT")
        self.line(f"{frame} = {scope}")
        self.line(f"while {frame} is not None:")
        self.line(f"    {result} = {frame}.vars.get({name!r}, ABSENT)")
        self.line(f"    if {result} is not ABSENT: break")
        self.line(f"    {frame} = {frame}.parent")

    def dict_item(self, result: str, obj: str, key: Any, missing: str) -> None:
        """`result` = the plain dict `obj`'s literal `key`, indexed (a third cheaper than .get,
        the key most often there), `missing` where it has none; the caller writes what follows
        for any other `obj` (an `elif` or `else`)."""
        self.line(f"if type({obj}) is dict:")
        self.line("    try:")
        self.line(f"        {result} = {obj}[{self.constant(key)}]")
        self.line("    except KeyError:")
        self.line(f"        {result} = {missing}")

    def guarded(self, lines: list[str], node: Any) -> None:
        """`lines` (each at one level deeper than the `try`) run with a failure raised at `node`."""
        self.line("try:")
        for line in lines:
            self.line("    " + line)
        self.line("except Exception as e:")
        self.line(f"    ev.fail(e, {self.constant(node)})")
