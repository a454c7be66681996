"""The lexer's two large regular expressions, shipped compiled for the Python that made the tables.

The one-pass parse's lexer (grammar/scanning.py) scans with two alternations of every terminal,
about 1,300 and 2,000 characters of pattern. `re.compile` parses and compiles such a pattern in
pure Python: 3.5-4 ms of the first template compiled in each process, more than the rest of the
parse. What `re` hands its C engine in the end is a list of ints (the engine's code); this module
keeps that list in the shipped plain tables (grammar/tables.py) and gives it back to the engine
(`_sre.compile`, the call `re` itself ends with), which takes a tenth of a millisecond.

The code is only valid for the engine that made it, so it is stored with the engine's identity
(the interpreter, its version, the engine's MAGIC and code size) and used only where that is the
running one, for a pattern of exactly the same text; anywhere else `re.compile` runs as before.
The engine checks the code it is given (CPython validates it), and a pattern made this way is
equal (`==`: text, flags and code) to the one `re.compile` makes (tests/test_startup.py).
"""
from __future__ import annotations

import re
import sys
from typing import Any, Optional

# pattern text -> what `_sre.compile` takes besides it, for the running engine (filled from the
# shipped tables when they are read; a pattern's entry is dropped once it is compiled)
STORED: dict[str, tuple] = {}


def engine() -> Optional[tuple]:
    """Who can run stored code: None where `re` is not CPython's (then nothing is stored)."""
    try:
        import _sre
    except ImportError:  # pragma: no cover - every CPython has it
        return None
    if sys.implementation.name != "cpython":
        return None
    return (sys.implementation.name, tuple(sys.version_info[:2]), _sre.MAGIC, _sre.CODESIZE)


def code_of(pattern: str) -> Optional[tuple]:
    """What `re.compile(pattern)` hands the engine besides the text, as plain data (marshal
    writes it), or None where this `re` is not one this module knows."""
    try:
        from re import _compiler, _parser  # what re.compile runs (Python 3.11 and later)
        parsed = _parser.parse(pattern, 0)
        code = _compiler._code(parsed, 0)
        state = parsed.state
        names: list = [None] * state.groups
        for name, index in state.groupdict.items():
            names[index] = name
        stored = (int(state.flags), tuple(int(op) for op in code), state.groups - 1,
                  dict(state.groupdict), tuple(names))
        return stored if _made(pattern, stored) == re.compile(pattern) else None
    except Exception:  # noqa: BLE001 - another `re`: nothing is stored, re.compile runs
        return None


def remember(saved: Any) -> None:
    """Keep the stored code of a tables file (`{"engine": ..., "code": {pattern: ...}}`) if it
    was made by the running engine."""
    if type(saved) is dict and saved.get("engine") == engine() and type(saved.get("code")) is dict:
        STORED.update(saved["code"])


def compiled(pattern: str) -> re.Pattern:
    """`re.compile(pattern)`, from the stored code when there is some for this very text."""
    stored = STORED.pop(pattern, None)
    if stored is not None:
        try:
            return _made(pattern, stored)
        except Exception:  # noqa: BLE001 - refused by the engine: compile as re does
            pass
    return re.compile(pattern)


def _made(pattern: str, stored: tuple) -> re.Pattern:
    import _sre
    flags, code, groups, groupindex, indexgroup = stored
    return _sre.compile(pattern, flags, list(code), groups, groupindex, indexgroup)


__all__ = ["STORED", "engine", "code_of", "remember", "compiled"]
