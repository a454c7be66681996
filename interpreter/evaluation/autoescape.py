"""Autoescaping, as Jinja2 has it: `Environment(autoescape=...)` and `{% autoescape expr %}`.

While autoescaping is on, what `{{ }}` prints is HTML-escaped unless it is safe (`Markup`, or
marked text flagged safe), and what templates render into values (macros, `caller()`, block
`set`s, filter blocks, recursive loops, blocks called as `self.x()` or `super()`) comes out safe,
so that printing it escapes nothing twice. Template text is never escaped. Each evaluator knows
whether it is on (`ev.autoescape`); switching decides its printing again (printer.py), so that
rendering with autoescaping off (the chat profile, Jinja2's default) pays nothing for it.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable, Optional

from ..environment_tools import RenderContext
from ..grammar import ast
from ..values.markup import _wrap
from .printer import reprint
from .scope import Scope


def select_autoescape(enabled_extensions: Iterable[str] = ("html", "htm", "xml"),
                      disabled_extensions: Iterable[str] = (), default_for_string: bool = True,
                      default: bool = False) -> Callable[[Optional[str]], bool]:
    """Jinja2's helper: autoescape templates by the extension of their name."""
    enabled = tuple(f".{e.lstrip('.').lower()}" for e in enabled_extensions)
    disabled = tuple(f".{e.lstrip('.').lower()}" for e in disabled_extensions)

    def autoescape(template_name: Optional[str]) -> bool:
        if template_name is None:
            return default_for_string
        name = template_name.lower()
        if name.endswith(enabled):
            return True
        if name.endswith(disabled):
            return False
        return default
    return autoescape


def initial(environment: Any, name: Optional[str]) -> bool:
    """Whether a template of this name starts with autoescaping on."""
    setting = environment.autoescape
    return bool(setting(name)) if callable(setting) else bool(setting)


def set_autoescape(ev: Any, on: bool) -> None:
    """Turn autoescaping on or off for what `ev` evaluates from now on."""
    if bool(on) == ev.autoescape:
        return
    ev.autoescape = bool(on)
    ev.eval_ctx = RenderContext(ev.env, True) if on else None
    reprint(ev)


def autoescaping(ev: Any, on: bool) -> "_Switch":
    """`with autoescaping(ev, on):` runs a body with autoescaping set, then sets it back."""
    return _Switch(ev, on)


class _Switch:
    __slots__ = ("ev", "on", "before")

    def __init__(self, ev: Any, on: bool) -> None:
        self.ev, self.on, self.before = ev, on, ev.autoescape

    def __enter__(self) -> None:
        set_autoescape(self.ev, self.on)

    def __exit__(self, *exc: Any) -> None:
        set_autoescape(self.ev, self.before)


def rendered(ev: Any, text: str) -> str:
    """What a template renders into a value: safe while autoescaping is on."""
    return _wrap(text) if ev.autoescape else text


def exec_autoescape(ev: Any, node: "ast.AutoEscape", scope: Scope) -> None:
    """`{% autoescape expr %}body{% endautoescape %}`: a frame of its own, as in Jinja2."""
    with autoescaping(ev, bool(ev.eval(node.value, scope))):
        ev.run(node.body, Scope(scope))
