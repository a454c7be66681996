"""What an `Environment` keeps when it is pickled, so that `multiprocessing`, `datasets.map` and
Ray workers can take environments, templates and chat templates cheaply.

A pickled environment holds its options and only what differs from a new environment with the
same extensions: the filters, tests, globals, handlers and operators added, replaced or removed
(the builtins are not pickled: a worker has them already). Shipped extensions travel by name.
The parser, the template caches and the lock are made again on unpickling; the parser comes from
the process's cache (one per extension set), so a worker builds it once. What a user registers
pickles as pickle pickles it: a module-level function by reference, a lambda not at all (pickle's
own error names it; cloudpickle takes it by value).
"""
from __future__ import annotations

import dataclasses
import threading
from collections import OrderedDict
from types import SimpleNamespace
from typing import Any

from .ext.api import install
from .ext.names import resolve, shipped

# Rebuilt by Environment._prepare rather than pickled: a new cache, lock or derived table of
# the environment belongs here (tests/test_processes.py checks that no parser or lock is pickled).
DERIVED = frozenset({"opaque_nodes", "_parser", "_cache", "_templates", "_lock", "_interception",
                     "_quiet_eval_context"})
# The tables a new environment fills from the builtins and its extensions: pickled as changes.
TABLES = ("filters", "tests", "globals", "handlers", "operators")


class _Removed:
    """Marks a builtin entry that the environment no longer has (`del env.filters['x']`)."""

    def __reduce__(self) -> str:
        return "REMOVED"  # one object per process, pickled by reference


REMOVED = _Removed()


def environment_state(env: Any) -> dict:
    """The environment's attributes, with its tables as changes from the builtins'."""
    state = {key: value for key, value in env.__dict__.items()
             if key not in DERIVED and key not in TABLES}
    state["extensions"] = tuple(_by_name(ext) for ext in env.extensions)
    baseline = _tables(env.extensions)
    for table in TABLES:
        state[table] = _changes(getattr(baseline, table), getattr(env, table))
    return state


def restore_environment(env: Any, state: dict) -> None:
    """An environment from `environment_state`: the tables rebuilt, the parser and caches made."""
    env.__dict__.update((key, value) for key, value in state.items() if key not in TABLES)
    env.extensions = resolve(item.extension() if isinstance(item, ExtensionFields) else item
                             for item in state["extensions"])
    baseline = _tables(env.extensions)
    for table in TABLES:
        entries = getattr(baseline, table)
        for key, value in state[table].items():
            if value is REMOVED:
                entries.pop(key, None)
            else:
                entries[key] = value
        setattr(env, table, entries)
    env._prepare()
    env._parser = RememberingParser(env._parser)


class RememberingParser:
    """The process's parser, for an unpickled environment: it remembers the trees it made, so
    that a worker parses a template once however often it unpickles it (a pool sends a template
    with every chunk of work, each time with a new environment). A tree depends only on the
    parser, the source and the options, and is never changed after the parse, so environments
    share it; the environment still checks it (filters, tests, extensions' validation)."""

    def __init__(self, parser: Any) -> None:
        self.parser = parser

    def parse(self, source: str, name: Any = None, *options: Any) -> Any:
        key = (self.parser, source, options)
        with _trees_lock:
            tree = _trees.get(key)
            if tree is not None:
                _trees.move_to_end(key)
                return tree
        tree = self.parser.parse(source, name, *options)
        with _trees_lock:
            _trees[key] = tree
            if len(_trees) > TREES_KEPT:
                _trees.popitem(last=False)
        return tree

    def __getattr__(self, name: str) -> Any:
        return getattr(self.parser, name)


TREES_KEPT = 64
_trees: OrderedDict = OrderedDict()
_trees_lock = threading.Lock()


def _tables(extensions: tuple) -> SimpleNamespace:
    """The tables a new environment with these extensions starts with."""
    from .builtins.tests import TESTS
    from .evaluation.expressions import BINARY
    from .builtins.filters import FILTERS
    from .builtins.globals import GLOBALS
    tables = SimpleNamespace(filters=dict(FILTERS), tests=dict(TESTS), globals=dict(GLOBALS),
                             handlers={}, operators=dict(BINARY))
    install(tables, extensions)
    return tables


def _changes(baseline: dict, current: dict) -> dict:
    """The entries of `current` that are not the baseline's own object, and REMOVED for each
    baseline entry that `current` lacks."""
    changes = {key: value for key, value in current.items()
               if key not in baseline or baseline[key] is not value}
    changes.update((key, REMOVED) for key in baseline if key not in current)
    return changes


def _by_name(extension: Any) -> Any:
    """A shipped extension as its name (its rule builders are lambdas); any other as its class
    and fields, without the syntax it built (the builders wrapped in closures)."""
    try:
        if shipped(extension.name) is extension:
            return extension.name
    except ValueError:  # no shipped extension has that name
        pass
    return ExtensionFields(type(extension), {f.name: getattr(extension, f.name)
                                             for f in dataclasses.fields(extension)})


class ExtensionFields:
    """A user's extension in a pickle: made again from its fields. Its builders and handlers
    pickle as functions do (module-level ones by reference), and the same builders find the
    same parser in the process's cache."""

    def __init__(self, kind: type, fields: dict) -> None:
        self.kind, self.fields = kind, fields

    def extension(self) -> Any:
        return self.kind(**self.fields)
