"""What a chat template sees: the caller's conversation, tools, documents and kwargs cleaned as
transformers 5 cleans them, and (for `render_parts`) marked as input in the same walk.

transformers 5 (`apply_chat_template` and `render_jinja_template`) does, in this order:

1. a batch is a list whose first item is a list, a tuple or has `.messages`; an empty list or
   tuple is refused;
2. each conversation's messages become dicts (dataclasses and pydantic models included) whose
   keys with the value None are dropped; anything else is a TypeError;
3. everything the template can see is rebuilt out of plain JSON types (`_plain_template_data`):
   exact scalars kept, subclasses of str/int/float turned into the base type, mappings, lists and
   tuples walked, numpy scalars unwrapped, dataclasses and pydantic models turned into dicts, and
   any other object replaced by the string `"<TypeName>"`;
4. reasoning given as `reasoning_content`, `thinking` or `reasoning` is copied under the first two.

Step 3 is also where `render_parts` marks every string and number as input: one walk, one copy.
The walk is closed: whatever it does not know becomes the inert placeholder (as in transformers),
so no unknown object reaches a template, marked or not.
"""
from __future__ import annotations

import dataclasses
import sys
from collections.abc import Mapping
from inspect import isfunction, ismethod
from operator import is_
from typing import Any, Callable, Optional

from .. import limits
from ..errors import LimitExceeded
from ..values.inputs import MAX_INPUT_DEPTH as MAX_DEPTH, check_input, too_deep as _too_deep
from ..values.marks import Input, Marked
from ..values.numbers import InputFloat, InputInt, as_input

REASONING_FIELDS = ("reasoning_content", "thinking", "reasoning")
EMPTY_CONVERSATION = "Cannot apply chat template to an empty conversation. Provide at least one message."
BAD_TOOL = ("Tools should either be a JSON schema, or a callable function with type hints and a "
            "docstring suitable for auto-conversion to a schema.")
BAD_DOCUMENT = "Documents should be a list of dicts with 'title' and 'text' keys!"


def _bad_message(message: Any) -> TypeError:
    return TypeError(f"Chat messages should be dicts, dataclasses or pydantic models, but got {message!r}.")


# ---------------------------------------------------------------------------- conversations

def split_batch(conversation: Any) -> tuple[list, bool]:
    """(conversations, is_batched), as `apply_chat_template` tells a batch from one conversation."""
    if isinstance(conversation, (list, tuple)):
        if not conversation:
            raise ValueError(EMPTY_CONVERSATION)
        first = conversation[0]
        if isinstance(first, (list, tuple)) or hasattr(first, "messages"):
            return list(conversation), True
    return [conversation], False


def _as_dict(value: Any) -> Any:
    """A message object as a dict (one level), or the value itself when it is no such object."""
    if isinstance(value, Mapping):
        return value if type(value) is dict else dict(value.items())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return _as_dict(dump())
    return value


def normalize_messages(conversation: Any, shortcut: bool = True) -> list[dict]:
    """transformers' `_normalize_chat_messages`: message objects as dicts, None-valued keys dropped.

    Values inside a message are converted by the template-data walk later (one copy).
    `shortcut`: try `flat_messages` first (False: the caller found them not flat already)."""
    if shortcut and flat_messages(conversation, False) is not None:  # nothing to convert or drop
        return list(conversation)
    messages = conversation if type(conversation) is list else _as_dict(
        getattr(conversation, "messages", conversation))
    out = []
    for message in messages:
        if type(message) is not dict:
            message = _as_dict(message)
            if type(message) is not dict:
                raise _bad_message(message)
        for value in message.values():
            if value is None:  # copied only when there is a key to drop (the walk copies later)
                message = {k: v for k, v in message.items() if v is not None}
                break
        out.append(message)
    return out


def alias_reasoning(message: dict) -> dict:
    """transformers' `_alias_reasoning_fields` for one (already plain) message."""
    if "reasoning_content" not in message and "thinking" not in message and "reasoning" not in message:
        return message
    for key in REASONING_FIELDS:
        reasoning = message.get(key)
        if reasoning is not None:
            return {"thinking": reasoning, **message, "reasoning_content": reasoning}
    return message


def check_tools(tools: Any) -> Any:
    """Tools as transformers accepts them: dicts kept, functions and methods converted to a JSON
    schema as `get_json_schema` does, anything else refused."""
    if tools is None:
        return None
    schemas = []
    for tool in tools:
        if isinstance(tool, dict):
            schemas.append(tool)
        elif isfunction(tool) or ismethod(tool):
            from .schema import get_json_schema  # written alongside; only functions need it
            schemas.append(get_json_schema(tool))
        else:
            raise ValueError(BAD_TOOL)
    return schemas


def check_documents(documents: Any) -> Any:
    if documents is not None:
        for document in documents:
            if not isinstance(document, dict):
                raise TypeError(BAD_DOCUMENT)
    return documents


# ---------------------------------------------------------------------------- template data

_JSON_SCALARS = frozenset((str, int, float, bool, type(None)))


def plain(value: Any, depth: int = 0) -> Any:
    """transformers' `_plain_template_data`: the value rebuilt out of plain JSON types.

    What is plain already is shared, not copied: a template cannot change its data (the sandbox
    is immutable), so a copy would only cost time. Code that edits the result copies first.
    The one walk that finds out (`check_input`) also refuses data no walk could finish."""
    if type(value) in _JSON_SCALARS or check_input(value, depth):
        return value  # tools, typed content, tool calls: JSON as json.loads made it
    return _plain(value, depth)


def plain_measured(tools: Any, printed: dict) -> Any:
    """`plain(tools, 0)` of the tools, which templates print whole or one by one (`tools|tojson`,
    `tool|tojson`): when each tool is small JSON, the walk that finds that out is the one that
    measures what it prints as (limits.small_plain_size), and `printed`, the render's memo of
    sizes (limits.check_printable), gets each tool's and the list's: printing them walks
    nothing more. Else (a tool not JSON as json.loads makes it, or not small) `plain`'s walk."""
    if type(tools) is not list or len(tools) >= limits.REMEMBERED:
        return plain(tools, 0)
    total, items, measured = 2 * len(tools) + 2, len(tools) + 1, []
    for tool in tools:
        small = limits.small_plain_size(tool)
        # JSON of at most MAX_DEPTH items nests less deep than check_input refuses (each level
        # is a container of an item at least: two items)
        if small is None or not small[3] or small[1] > MAX_DEPTH:
            return plain(tools, 0)
        measured.append((tool, small))
        total += small[0]
        items += small[1]
    for tool, small in measured:
        printed[id(tool)] = (tool, small)
    if items <= limits.SMALL:  # what small_plain_size of the list counts (past it: the walker's)
        printed[id(tools)] = (tools, (total, items, False, True))
    return tools


def _plain(value: Any, depth: int) -> Any:
    t = type(value)
    if t in _JSON_SCALARS:
        return value
    if depth >= MAX_DEPTH:
        raise _too_deep()
    d = depth + 1
    if t is dict:
        return _plain_dict(value, d)
    if t is list:
        if _JSON_SCALARS.issuperset(map(type, value)):
            return value  # a list of strings (an enum, `required`): checked in C
        out = [v if type(v) in _JSON_SCALARS else _plain(v, d) for v in value]
        return value if all(map(is_, out, value)) else out
    return _other(value, depth, _plain, _plain_leaf)


def _plain_dict(value: dict, d: int) -> dict:
    """`plain` of a dict whose items are at depth `d`: the dict itself while nothing in it
    changes (the common case: messages, tool schemas), a copy from the first change on."""
    scalars = _JSON_SCALARS
    if scalars.issuperset(map(type, value.values())) and scalars.issuperset(map(type, value)):
        return value  # string keys and values: checked in C
    items = value.items()
    out: Optional[dict] = None
    for k, v in items:
        key = k if type(k) in scalars else _plain(k, d)
        item = v if type(v) in scalars else _plain(v, d)
        if out is None:
            if key is k and item is v:
                continue
            out = {}
            for earlier, kept in items:  # the items before this one, unchanged
                if earlier is k:
                    break
                out[earlier] = kept
        out[key] = item
    return value if out is None else out


def _plain_leaf(value: Any) -> Any:
    return value


# Short strings (roles, keys, "type": "string" in a schema) repeat from dict to dict and render to
# render: each is marked once and shared (an Input is immutable). Bounded: they are input.
_SHORT: dict[str, Input] = {}


def _mark_str(value: str) -> Any:
    if not value:
        return value
    if len(value) > 16:  # hashing a long string would cost more than the copy
        return Input(value)
    found = _SHORT.get(value)
    if found is None:
        found = Input(value)
        if len(_SHORT) < 10_000:
            _SHORT[value] = found
    return found


def marked(value: Any, depth: int = 0, left: Optional[list] = None) -> Any:
    """`plain(value)` with every string (keys too) and number marked as input. `left`: the
    containers still marked on trust (below), shared by the messages of a conversation."""
    try:
        return _marked(value, depth, [_TRUSTED] if left is None else left)
    except _Large:
        check_input(value, depth)  # refuses what no walk could finish
        return _marked(value, depth, [_UNBOUNDED])


# Marking copies what it meets, so data shared into 2**40 paths (`a = [a, a]` forty times) would
# be copied forever. It is marked on trust up to _TRUSTED containers (`left` counts them down, a
# shared one each time it is met): past that, the walk stops and check_input, which walks fast
# and copies nothing, looks at the whole value first; what it lets through is marked unbounded.
_TRUSTED = 10_000
_UNBOUNDED = 1 << 62


class _Large(Exception):
    """Marking met more than _TRUSTED containers."""


def _marked(value: Any, depth: int, left: list) -> Any:
    t = type(value)
    if t is str:
        return _mark_str(value)
    if value is None or t is bool:
        return value
    if depth >= MAX_DEPTH:
        raise _too_deep()
    if t is not dict and t is not list:
        if t is int:
            return InputInt(value)
        if t is float:
            return InputFloat(value)
        if t is Input or t is InputInt or t is InputFloat or isinstance(value, Marked):
            return value  # marked by the host already: its marks are kept
    left[0] -= 1  # a container (or an object made one): met once more
    if left[0] < 0:
        raise _Large
    d = depth + 1
    if t is dict:
        return _marked_dict(value, d, left)
    if t is list:
        return [_mark_str(v) if type(v) is str else _marked(v, d, left) for v in value]
    return _other(value, depth, lambda item, at: _marked(item, at, left), _mark_leaf)


def _marked_dict(value: dict, d: int, left: list) -> dict:
    """`marked` of a dict whose items are at depth `d`: the common leaves inline (this loop runs
    for every message, tool call and schema of every render_parts)."""
    out = {}
    short = _SHORT.get
    for k, v in value.items():
        key = (short(k) or _mark_str(k)) if type(k) is str else _marked(k, d, left)
        tv = type(v)
        if tv is str:
            out[key] = (short(v) or _mark_str(v)) if 0 < len(v) <= 16 else Input(v) if v else v
        elif v is None or tv is bool:
            out[key] = v
        else:
            out[key] = _marked(v, d, left)
    return out


class _NotJSON(Exception):
    """_marked_json met a value json.loads does not make, or too much of them."""


def _marked_json(value: Any, depth: int, left: list) -> Any:
    """`_marked(value, depth, left)` of data as json.loads makes it (exact str, int, float, bool,
    None, lists, dicts of str keys), which runs no code of the caller's; _NotJSON for anything
    else, too deep or past the containers marked on trust (the walk says what of it)."""
    t = type(value)
    if t is str:
        return _mark_str(value)
    if t is not dict and t is not list:
        return _json_leaf(value, t)
    left[0] -= 1
    if depth >= MAX_DEPTH or left[0] < 0:
        raise _NotJSON
    d = depth + 1
    if t is list:
        return [_mark_str(v) if type(v) is str else _marked_json(v, d, left) for v in value]
    out = {}
    short = _SHORT.get
    for k, v in value.items():
        if type(k) is not str:
            raise _NotJSON
        key = short(k) or _mark_str(k)
        if type(v) is str:  # as _marked_dict marks it
            out[key] = (short(v) or _mark_str(v)) if 0 < len(v) <= 16 else Input(v) if v else v
        else:
            out[key] = _marked_json(v, d, left)
    return out


def _json_leaf(value: Any, t: type) -> Any:
    """A leaf of data as json.loads makes it (not a string), marked as `_marked` marks it: None
    and booleans as they are, numbers as input; _NotJSON for a value of any other type."""
    if value is None or t is bool:
        return value
    if t is int:
        return InputInt(value)
    if t is float:
        return InputFloat(value)
    raise _NotJSON


def marked_measured(tools: Any, printed: dict) -> Any:
    """`marked(tools, 0)` of the tools, as plain_measured for render_parts: when each tool is
    small JSON, the walk that marks it also counts what limits.small_plain_size counts of the
    marked copy, and `printed` gets each marked tool's size and the list's; printing them (a
    marked tool walks slower than a plain one) walks nothing more. Else `marked`'s walk."""
    if type(tools) is not list or len(tools) >= limits.REMEMBERED:
        return marked(tools, 0)
    out, left, inside = [], [_TRUSTED], False
    total, items = 2 * len(tools) + 2, len(tools) + 1
    for tool in tools:
        size = [0, 0]
        try:
            copy = _marked_sized(tool, 1, left, size)
        except _NotJSON:
            return marked(tools, 0)
        if size[1] > limits.SMALL:  # as small_plain_size: past it, the walker's count
            return marked(tools, 0)
        # a marked key inside (a tool is a dict of named fields), else the marked copy looked at
        subclassed = (type(copy) is dict and any(copy)) or limits.small_plain_size(copy)[2]
        printed[id(copy)] = (copy, (size[0], size[1], subclassed, False))
        out.append(copy)
        total += size[0]
        items += size[1]
        inside = inside or subclassed
    if items <= limits.SMALL:
        printed[id(out)] = (out, (total, items, inside, False))
    return out


def _marked_sized(value: Any, depth: int, left: list, size: list) -> Any:
    """`_marked_json(value, depth, left)`, adding to `size` ([characters, items]) what
    limits.small_plain_size counts of the result: a container's brackets and separators and its
    items, a string's length and quotes, 8 for any other leaf."""
    t = type(value)
    if t is str:
        size[0] += len(value) + 4
        return _mark_str(value)
    if t is not dict and t is not list:
        size[0] += 8
        return _json_leaf(value, t)
    left[0] -= 1
    if depth >= MAX_DEPTH or left[0] < 0:
        raise _NotJSON
    n = len(value)
    size[1] += n + 1
    d = depth + 1
    if t is list:
        size[0] += 2 * n + 2
        return [_marked_sized(v, d, left, size) for v in value]
    out = {}
    short = _SHORT.get
    chars = 2 * n + 2
    for k, v in value.items():
        if type(k) is not str:
            raise _NotJSON
        key = short(k) or _mark_str(k)
        if type(v) is str:  # (the commonest leaf inline, as _marked_json marks it)
            m = len(v)
            chars += len(k) + m + 8
            out[key] = (short(v) or _mark_str(v)) if 0 < m <= 16 else Input(v) if v else v
        else:
            chars += len(k) + 4
            out[key] = _marked_sized(v, d, left, size)
    size[0] += chars
    return out


def _mark_leaf(value: Any) -> Any:
    return _mark_str(value) if type(value) is str else as_input(value)


def _other(value: Any, depth: int, walk: Callable[[Any, int], Any], leaf: Callable[[Any], Any]) -> Any:
    """The rarer shapes of `_plain_template_data`, in its order of checks."""
    d = depth + 1
    if isinstance(value, str):
        return leaf(str.__str__(value))
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return leaf(int.__int__(value))
    if isinstance(value, float):
        return leaf(float.__float__(value))
    if isinstance(value, Mapping):
        return {walk(k, d): walk(v, d) for k, v in value.items()}
    if isinstance(value, list):
        return [walk(v, d) for v in value]
    if isinstance(value, tuple):
        return tuple([walk(v, d) for v in value])
    numpy = sys.modules.get("numpy")  # a numpy scalar exists only if numpy was imported
    if numpy is not None and isinstance(value, numpy.generic):
        return walk(value.item(), d)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {walk(f.name, d): walk(getattr(value, f.name), d) for f in dataclasses.fields(value)}
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return walk(dump(), d)
    return leaf(f"<{type(value).__name__}>")


# The role names of the chat APIs. A message's role that is exactly one of these is template text,
# not input: templates build their turn tokens from it (`'<|' + message['role'] + '|>'` in Phi-3,
# GLM-4, Jamba), and marked, those tokens would be spelled out as characters for every benign
# prompt. Such a word cannot hold a control token itself; any other role stays input.
TRUSTED_ROLES = frozenset(("system", "user", "assistant", "tool", "developer", "function", "ipython"))


def template_messages(messages: list[dict], walk: Callable[[Any, int], Any],
                      trusted_roles: frozenset = TRUSTED_ROLES, shortcut: bool = True) -> list[dict]:
    """Normalised messages as the template sees them: walked, reasoning aliased; with marks, a
    role named in `trusted_roles` left unmarked. Always a new list (continuation edits it).
    `shortcut`: try `flat_messages` first (False: the caller found them not flat already)."""
    out: list = []
    if walk is plain:
        flat = flat_messages(messages, False) if shortcut else None
        return list(flat) if flat is not None else _plain_messages(messages)
    if shortcut and walk is marked:
        out = marked_flat_prefix(messages, trusted_roles)
        if out:
            messages = messages[len(out):]
    add = out.append
    left = [_TRUSTED]  # the containers marked on trust, for the whole conversation
    for message in messages:
        m = marked(message, 1, left) if walk is marked else walk(message, 1)
        if walk is marked:
            role = message.get("role")
            if type(role) is str and role in trusted_roles:
                m["role"] = role
        if "reasoning_content" in m or "thinking" in m or "reasoning" in m:
            m = alias_reasoning(m)
        add(m)
    return out


def _plain_messages(messages: list) -> list[dict]:
    """`template_messages(messages, plain)` of messages not all flat: each message as it is
    while it is JSON as json.loads makes it (a role and a text at two looks, other text messages
    at one, typed content at two, tool calls by one walk), else rebuilt; reasoning aliased."""
    out: list = []
    add = out.append
    for message in messages:
        if not (type(message) is dict and len(message) == 2 and type(message.get("role")) is str
                and type(message.get("content")) is str):  # else a role and a text: as it is
            if not (_flat_message(message) or _typed_message(message) or check_input(message, 1)):
                message = _plain_dict(message, 2)
            if "reasoning_content" in message or "thinking" in message or "reasoning" in message:
                message = alias_reasoning(message)
        add(message)
    return out


# ---------------------------------------------------------------------------- flat conversations
# Most conversations are lists of dicts of a few strings, which every step above leaves as they
# are: `render` recognises them in one loop (a role and a text, the commonest message, at two
# looks written inline: a call of _flat_message per message cost a fifth more) and passes them
# on unchanged; `render_parts` marks them in one loop that checks as it goes, and hands the walk
# only what follows the first message that is not flat.

_FLAT = frozenset((str, int, float, bool))  # exact JSON scalars that no step changes (not None)


def flat_messages(conversation: Any, marks: bool,
                  trusted_roles: frozenset = TRUSTED_ROLES) -> Optional[list]:
    """The messages as the template sees them when the conversation is flat, else None.

    Flat: a list of plain dicts with str keys, no reasoning alias among them, and values that are
    exact str, int, float or bool (not None: that key would be dropped). transformers' cleaning
    gives such a conversation back equal to itself, so without `marks` it is returned as it is
    (shared: a template cannot change its data). With `marks`, flat needs every value a str
    (marked as `marked` marks it); the result is a new list of new dicts."""
    if marks:
        done = marked_flat_prefix(conversation, trusted_roles)
        return done if type(conversation) is list and len(done) == len(conversation) else None
    if type(conversation) is not list:
        return None
    for message in conversation:  # most messages are a role and a text: two looks at them
        if not (type(message) is dict and len(message) == 2 and type(message.get("role")) is str
                and type(message.get("content")) is str) and not _flat_message(message):
            return None
    return conversation


def plain_conversation(conversation: Any) -> Optional[list]:
    """`template_messages(normalize_messages(conversation), plain)` in one loop, for a list of
    dict messages each flat but for reasoning (`reasoning_content`, `thinking`, `reasoning`:
    aliased as transformers aliases them), of typed content, or else JSON as json.loads makes
    it (tool calls: check_input's walk); None for any other (an object, a None value to drop,
    data to rebuild or to refuse: the general steps, in transformers' order). Nothing of these
    messages is rebuilt but the aliased ones."""
    if type(conversation) is not list:
        return None
    out: list = []
    add = out.append
    for message in conversation:
        if type(message) is not dict:
            return None
        if not (len(message) == 2 and type(message.get("role")) is str
                and type(message.get("content")) is str):  # else a role and a text: as it is
            if not (_flat_values(message) or _typed_message(message) or _json_message(message)):
                return None
            if "reasoning_content" in message or "thinking" in message or "reasoning" in message:
                message = alias_reasoning(message)
        add(message)
    return out


def _flat_values(message: dict) -> bool:
    """str keys and exact str, int, float or bool values, reasoning fields among them (which
    `_flat_message` leaves to the walk: flat_messages passes flat messages on unaliased)."""
    for k, v in message.items():
        if type(v) not in _FLAT or type(k) is not str:
            return False
    return True


def _json_message(message: dict) -> bool:
    """A message with no None to drop that is JSON as json.loads makes it (check_input), False
    too for one check_input refuses: the general steps refuse it where transformers does."""
    for value in message.values():
        if value is None:  # (not `None in`: a host object's == would run)
            return False
    try:
        return check_input(message, 1)
    except LimitExceeded:
        return False


def _flat_message(message: Any) -> bool:
    """A plain dict of str keys (no reasoning alias) and exact str, int, float or bool values."""
    if type(message) is not dict:
        return False
    if len(message) == 2 and type(message.get("role")) is str and type(message.get("content")) is str:
        return True  # a role and a text, the commonest message: two looks
    for k, v in message.items():
        if type(v) not in _FLAT or type(k) is not str or k in REASONING_FIELDS:
            return False
    return True


def _typed_message(message: Any) -> bool:
    """A plain dict of str keys (no reasoning alias) whose values are exact str, int, float or
    bool, or lists of such dicts (typed content: `[{"type": "text", "text": ...}]`): what
    check_input accepts of them, without its walk level by level (half the time)."""
    if type(message) is not dict:
        return False
    for k, v in message.items():
        if type(k) is not str or k in REASONING_FIELDS:
            return False
        kind = type(v)
        if kind in _FLAT:
            continue
        if kind is not list:
            return False
        for part in v:
            if type(part) is not dict:
                return False
            for key, value in part.items():
                if type(key) is not str or type(value) not in _FLAT:
                    return False
    return True


_ROLE, _CONTENT = _mark_str("role"), _mark_str("content")  # the keys of most messages, marked


def marked_flat_prefix(conversation: Any, trusted_roles: frozenset = TRUSTED_ROLES) -> list[dict]:
    """`template_messages(..., marked)` of the conversation's longest prefix of plain dict
    messages with str keys and data as json.loads makes it (empty when the conversation is no
    list): each a new dict of Inputs (a trusted role and empty text plain), None values dropped
    as normalize_messages drops them, reasoning aliased. The checks run as it marks: cheaper than
    a scan first, and the work is kept when a later message is not such a message (an object,
    data of other types or too large: the general steps, in transformers' order)."""
    out: list[dict] = []
    if type(conversation) is not list:
        return out
    names: dict = {}  # each key's marked form, made once per conversation
    left = [_TRUSTED]  # the containers marked on trust, as the walk counts them
    add = out.append
    for message in conversation:
        if type(message) is not dict:
            return out
        role = message.get("role")
        if len(message) == 2 and type(role) is str:  # the commonest message: built at once
            content = message.get("content")
            if type(content) is str:
                role = role if role in trusted_roles or not role else Input(role)
                content = Input(content) if content else content
                for first in message:  # (the first key, without an iterator's call)
                    break
                add({_ROLE: role, _CONTENT: content} if first == "role" else {_CONTENT: content, _ROLE: role})
                continue
        if type(role) is not str or role not in trusted_roles:
            role = None  # marked as any other value
        m = {}
        for k, v in message.items():
            key = names.get(k)
            if key is None:
                if type(k) is not str:
                    return out
                key = names[k] = _mark_str(k)
            if type(v) is str:
                # a trusted role, and empty text (nothing to mark, as `marked` leaves it), stay plain
                m[key] = Input(v) if v and (v is not role or k != "role") else v
            elif v is not None:  # (a None is dropped)
                try:
                    m[key] = _marked_json(v, 2, left)
                except _NotJSON:
                    return out
        if "reasoning_content" in m or "thinking" in m or "reasoning" in m:
            m = alias_reasoning(m)  # as template_messages aliases the marked message
        add(m)
    return out


def start_conversation(conversation: Any, marks: bool, trusted_roles: frozenset = TRUSTED_ROLES,
                       read: bool = True) -> tuple:
    """`template_messages(normalize_messages(conversation), walk)` in two halves, the flat part
    without either step's per-message work. This first half is what transformers does before it
    compiles and checks the tools: the conversation normalised (raising its TypeError); it returns
    what `walk_conversation` takes: the messages of the flat prefix already as the template sees
    them (None when the template does not `read` the messages), the normalised messages that
    follow (None: nothing follows), and the walk options. The shortcut runs no code of the
    caller's objects and cannot fail."""
    if not read:
        normalize_messages(conversation)
        return None, None, marks, trusted_roles
    if not marks:
        flat = flat_messages(conversation, False)
        if flat is None:
            flat = plain_conversation(conversation)
        if flat is not None:
            return flat, None, marks, trusted_roles
        return [], normalize_messages(conversation, shortcut=False), marks, trusted_roles
    done = marked_flat_prefix(conversation, trusted_roles)
    if done and len(done) == len(conversation):
        return done, None, marks, trusted_roles
    rest = conversation[len(done):] if done else conversation  # the flat ones need no normalising
    return done, normalize_messages(rest), marks, trusted_roles


def walk_conversation(done: Optional[list], rest: Optional[list], marks: bool,
                      trusted_roles: frozenset) -> Optional[list]:
    """The second half of `start_conversation`: the normalised messages walked (marked or made
    plain data, which may raise for data too deep), after the flat prefix."""
    if rest is None:
        return done
    walked = template_messages(rest, marked if marks else plain, trusted_roles, shortcut=False)
    return done + walked if done else walked
