"""Macros and call blocks: a macro value is made once per definition run; calling it binds
the arguments by Jinja2's calling convention and renders the body in a new scope whose parent
is the scope the macro was defined in (macros see it as it is when they are called)."""
from __future__ import annotations

from typing import Any, Callable

from .autoescape import autoescaping
from .compiling import code_of
from ..values.markup import _wrap
from ..values.marks import concat
from ..grammar import ast
from ..values.runtime import Macro
from .scope import Scope
from ..values.undefined import MISSING


def make_macro(ev: Any, node: ast.Macro | ast.CallBlock, name: str | None,
               closure: Scope) -> Macro:
    facts = ev.memo.get(id(node))  # the template keeps `node` alive, so its id is stable
    if facts is None:
        facts = ev.memo[id(node)] = _macro_facts(node.params, node.body)
        # the names a call binds in the body's own frame, for the body's generated code
        # (codegen.fixed_parameters: those the body never binds again are read once a call)
        ev.memo.setdefault(PARAMETERS, {})[id(node.body)] = tuple(p.name for p in node.params)
    catch_kwargs, catch_varargs, caller, ordered = facts
    # autoescaping as where the macro is defined (Jinja2 compiles the body there)
    invoke = _macro_invoker(ev, node.body, closure, ordered, ev.autoescape,
                            not (caller or catch_kwargs or catch_varargs))
    return Macro(name, node.params, invoke, catch_kwargs, catch_varargs, caller)


PARAMETERS = "macro parameters"  # the memo's key: id(a macro's body) -> its parameters' names


def _macro_facts(params: tuple, body: tuple) -> tuple[bool, bool, bool, bool]:
    """Whether the body reads `kwargs`, `varargs` (unless they are parameters: then they are
    ordinary ones, as in Jinja2), `caller`, and whether a default reads the name of a
    parameter (see bind_arguments)."""
    used = {n.name for stmt in body for n in ast.walk(stmt) if type(n) is ast.Name}
    names = {p.name for p in params}
    read = {n.name for p in params if p.default is not None
            for n in ast.walk(p.default) if type(n) is ast.Name}
    return ("kwargs" in used and "kwargs" not in names, "varargs" in used and "varargs" not in names,
            "caller" in used, bool(names & read))


def _macro_invoker(ev: Any, body: tuple, closure: Scope, ordered: bool,
                   autoescape: bool, simple: bool) -> Callable:
    """The function a macro value calls. `simple`: the body reads no `caller`, `kwargs` or
    `varargs`, so a call giving every parameter in order binds them at once."""
    budget = ev.budget
    # the evaluator's own capture, written out below (one macro call per message or per key of
    # a tool's schema: two frames fewer); a subclass's (span tracking) is called
    plain_capture = getattr(type(ev), "capture", None) is PLAIN_CAPTURE

    def invoke(macro: Macro, args: tuple, kwargs: dict, call_autoescape: Any = None) -> str:
        """The body escapes as where the macro was defined; the result is safe when the
        caller autoescapes (as in Jinja2), or, called from Python, as where it was defined."""
        if simple and not kwargs and len(args) == len(macro.params):
            scope = Scope(closure, dict(zip(macro.arguments, args)))  # each parameter given, in order
        else:
            scope = Scope(closure)
            bind_arguments(ev, macro, args, dict(kwargs), scope, ordered)
        budget.enter()
        try:
            if autoescape != ev.autoescape:
                with autoescaping(ev, autoescape):
                    text = ev.capture(body, scope)
            elif plain_capture:  # the common case: nothing to switch
                saved, ev.out = ev.out, []
                try:
                    code_of(ev.code, body)(ev, scope)
                    text = concat(ev.out)
                finally:
                    ev.out = saved
            else:
                text = ev.capture(body, scope)
        finally:
            budget.leave()
        safe = autoescape if call_autoescape is None else call_autoescape
        return _wrap(text) if safe else text
    return invoke


PLAIN_CAPTURE: Any = None  # Evaluator.capture, set by evaluator.py (which imports this module)


def bind_arguments(ev: Any, macro: Macro, args: tuple, kwargs: dict, scope: Scope,
                   ordered: bool = False) -> None:
    """Jinja2's macro calling convention: positional, then by name, then `caller`, `kwargs` and
    `varargs`, and only then, in order, the defaults of the parameters not given: a default sees
    all that and the defaults before it. `ordered`: some default reads a parameter's name, so
    one not given is undefined until its own default is evaluated, not looked up outside."""
    count = len(macro.params)
    missing = []
    for i, param in enumerate(macro.params):
        value = args[i] if i < len(args) else kwargs.pop(param.name, MISSING)
        if value is not MISSING:
            scope.vars[param.name] = value
        else:
            missing.append(param)
            if ordered:  # declared, unassigned: undefined to a default that reads it
                scope.vars[param.name] = MISSING
    if macro.caller and "caller" not in macro.arguments:  # a parameter is bound as any other
        caller = kwargs.pop("caller", None)
        scope.vars["caller"] = caller if caller is not None else ev.undefined("No caller defined", name="caller")
    if macro.catch_kwargs:
        scope.vars["kwargs"] = kwargs
    elif kwargs:
        if "caller" in kwargs:
            raise TypeError(f"macro {macro.name!r} was invoked with two values for the special"
                            " caller argument. This is most likely a bug.")
        raise TypeError(f"macro {macro.name!r} takes no keyword argument {next(iter(kwargs))!r}")
    if macro.catch_varargs:
        scope.vars["varargs"] = tuple(args[count:])
    elif len(args) > count:
        raise TypeError(f"macro {macro.name!r} takes not more than {count} argument(s)")
    for param in missing:
        if param.default is not None:
            scope.vars[param.name] = ev.eval(param.default, scope)
        else:
            scope.vars[param.name] = ev.undefined(f"parameter {param.name!r} was not provided",
                                                  name=param.name)
