"""The transformers profile: templates rendered as `apply_chat_template(..., tokenize=False)` does.

That is Jinja2's ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True) with
loopcontrols and a transparent `{% generation %}`, `tojson` as `json.dumps` with transformers'
keyword arguments, and the globals `raise_exception` and `strftime_now`.
"""
from __future__ import annotations

import threading
from typing import Any

from ..environment import Environment
from ..errors import TemplateError
from ..values.hostcalls import keeps_marks
from ..values import jsonmarks

PROFILE_EXTENSIONS = ("loopcontrols", "generation")


@keeps_marks
def tojson(value: Any, ensure_ascii: bool = False, indent: Any = None, separators: Any = None,
           sort_keys: bool = False) -> str:
    """transformers' tojson: json.dumps with exactly these keyword arguments."""
    return jsonmarks.dumps(value, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                           sort_keys=sort_keys)


def raise_exception(message: Any) -> None:
    raise TemplateError(str(message))


def strftime_now(fmt: str) -> str:
    from datetime import datetime  # here: 2 ms at every start, for templates that ask the date
    return datetime.now().strftime(fmt)


def chat_environment(trim_blocks: bool = True, lstrip_blocks: bool = True, **options: Any) -> Environment:
    """An Environment with the transformers profile."""
    extensions = tuple(options.pop("extensions", ())) + PROFILE_EXTENSIONS
    options.setdefault("immutable", True)
    env = Environment(trim_blocks=trim_blocks, lstrip_blocks=lstrip_blocks, extensions=extensions,
                      **options)
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


_shared: dict[tuple, Environment] = {}
_shared_lock = threading.Lock()


def shared_environment() -> Environment:
    """One profile environment per process, so that templates are parsed once."""
    with _shared_lock:
        env = _shared.get(())
        if env is None:
            env = _shared[()] = chat_environment()
        return env
