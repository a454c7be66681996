"""Parser tables shipped in the package, so that even the first process on a machine loads them.

Building Lark's LALR tables for a grammar costs 150-250 ms; loading built ones costs a few. A
user cache folder (grammar/parser.py `cache_folder`) keeps them between processes, but the first
process on a machine, a fresh container or a read-only home has none. So the tables of the
grammars an embedder gets by default (the plain `Environment()` and `chat_environment()`) are
built at development time and shipped in `grammar/tables/`, one file per grammar, named by a
digest of everything the tables depend on: the grammar's text, the Lark options that shape them
and Lark's version. A grammar that differs in any way (an edited `jinja.lark`, an extension,
other delimiters, another Lark) has another digest, finds no file, and is built (or found in the
user cache) as before. The files are only read, so a read-only install works.

Each default grammar also has its plain tables (`*.plain`: grammar/larktables.py, read with
`marshal`; not compressed: inflating them was a millisecond of every first call), which the
one-pass parse runs on without importing Lark; the Lark tables are loaded only for the two-pass
parse that reports errors. They hold only dicts, tuples, strings and ints (marshal reads those
alike across Python 3 versions); a file that cannot be read, or was made for another grammar, is
ignored, and the tables are read from the grammar's Lark parser instead. The file also keeps the
lexer's two large patterns compiled for the Python that wrote it (grammar/regexcode.py), used
only by that same regular expression engine.

Regenerate after changing the grammar (tests/test_startup.py fails until then):

    python tools/build_tables.py

(the builder lives in tools/: it asks the engine which grammars an embedder gets, and grammar/
never imports the interpreter)
"""
from __future__ import annotations

import os
import zlib
from typing import Any, Optional

from . import regexcode

FOLDER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tables")
SUFFIX = ".lark.z"
PLAIN_SUFFIX = ".plain"  # the one-pass parse's tables (grammar/larktables.py), read without Lark
# Options given when loading, not kept in the file: they are functions and objects
NOT_SAVED = ("postlex", "lexer_callbacks", "transformer", "_plugins", "edit_terminals")


def digest(grammar: str, options: dict) -> str:
    """What the tables of `grammar` built with `options` depend on, as a short name."""
    import hashlib

    import lark
    shaping = "".join(f"{k}={options[k]!r};" for k in sorted(options) if k not in NOT_SAVED
                      and k not in ("cache", "strict"))
    text = f"{grammar}\0{shaping}\0{lark.__version__}"
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:20]


def path_for(grammar: str, options: dict) -> str:
    return os.path.join(FOLDER, digest(grammar, options) + SUFFIX)


def load(grammar: str, options: dict) -> Optional[Any]:
    """The Lark parser for `grammar` from the shipped tables, or None when none are shipped for
    it (or they cannot be read: the caller builds the parser then)."""
    path = path_for(grammar, options)
    try:
        with open(path, "rb") as f:
            packed = f.read()
    except OSError:
        return None
    import pickle

    from lark import Lark
    try:
        saved = pickle.loads(zlib.decompress(packed))
        given = {k: v for k, v in options.items() if k in NOT_SAVED}
        return Lark._load_from_dict(saved["data"], saved["memo"], **given)
    except Exception:  # noqa: BLE001 - a damaged or foreign file: build instead
        return None


def save(parser: Any, grammar: str, options: dict, folder: str = FOLDER) -> str:
    """Write the tables of a built Lark `parser` for `grammar`; returns the file's path."""
    import io
    buffer = io.BytesIO()
    parser.save(buffer, exclude_options=NOT_SAVED)
    path = os.path.join(folder, digest(grammar, options) + SUFFIX)
    with open(path, "wb") as f:
        f.write(zlib.compress(buffer.getvalue(), 9))
    return path


def plain_key(grammar: str, options: dict) -> str:
    """What the plain tables of `grammar` depend on: its text and the Lark options that shape
    them (not Lark's version: the plain tables are read by this package, not by Lark)."""
    shaping = "".join(f"{k}={options[k]!r};" for k in sorted(options) if k not in NOT_SAVED
                      and k not in ("cache", "strict"))
    return f"plain-tables {PLAIN_FORMAT}\0{grammar}\0{shaping}"


PLAIN_FORMAT = 2  # of the plain tables (grammar/larktables.py): another format is another key


def plain_path(key: str, folder: str = FOLDER) -> str:
    data = key.encode("utf-8")
    return os.path.join(folder, f"{zlib.crc32(data):08x}{zlib.adler32(data):08x}{PLAIN_SUFFIX}")


def load_plain(grammar: str, options: dict) -> Optional[dict]:
    """The shipped plain tables of `grammar` (grammar/onepass.py), or None when none are shipped
    for it (or they cannot be read): read with `marshal`, no Lark imported."""
    import marshal
    key = plain_key(grammar, options)
    if key in _loaded:
        return _loaded[key]
    try:
        with open(plain_path(key), "rb") as f:
            saved = marshal.loads(f.read())
    except (OSError, ValueError, EOFError, TypeError):
        return None
    if type(saved) is not dict or saved.get("key") != key:  # another grammar, by a rare chance
        return None
    regexcode.remember(saved.get("regex"))
    _loaded[key] = saved["tables"]
    return saved["tables"]


_loaded: dict[str, dict] = {}  # key -> the tables read (the default grammars': two at most)


def save_plain(tables: dict, grammar: str, options: dict, folder: str = FOLDER) -> str:
    """Write the plain tables of `grammar`, with the code of the lexer's two large patterns for
    the Python running this (grammar/regexcode.py: other Pythons compile them)."""
    import marshal

    from .scanning import group_patterns
    key = plain_key(grammar, options)
    path = plain_path(key, folder)
    saved = {"key": key, "tables": tables}
    if "scanners" in tables:  # the lexer's large patterns, compiled for this Python (regexcode.py)
        code = {pattern: regexcode.code_of(pattern) for pattern in group_patterns(tables)}
        saved["regex"] = {"engine": regexcode.engine(),
                          "code": {p: c for p, c in code.items() if c is not None}}
    with open(path, "wb") as f:
        f.write(marshal.dumps(saved))
    return path
