"""The polyfills themselves (see `polyfills`): one function per polyfill, named as it is, and
what they share (`Step`, `joined`, `call_json`).

Each takes the messages (walked: possibly marked, possibly shared with the caller's data, so a
message is copied before it is changed) and the render's `Step`, and returns the new messages
and the reason it applied, or None when it did not. What a step writes itself is plain `str`
(template text); what it moves, joins or parses keeps its marks.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Optional

from ..values.jsonmarks import dumps
from ..values.marks import Marked, join, plain as plain_text
from .normalize import REASONING_FIELDS, marked

Result = tuple[list[dict], Optional[str]]
TOOLS_PREAMBLE = "You can call the following tools. Their JSON schemas:"
CALL_PREAMBLE = "To call a tool, answer with:"


@dataclass
class Step:
    """What every step reads: the template's facts, whether the data is marked, the tools; and
    what a step keeps from the template: the names of context values (`tools`) the render must
    not pass, because the template fails on them and a step put their information elsewhere."""
    facts: Any  # polyfills._Facts
    marked: bool
    tools: Any
    withheld: set[str] = field(default_factory=set)

    def parsed(self, text: str) -> Any:
        """JSON text parsed; its strings and numbers marked when the text was input."""
        value = json.loads(plain_text(text))
        return marked(value) if isinstance(text, Marked) else value


def call_json(name: Any, arguments: Any) -> str:
    """One tool call as a JSON line: `{"name": ..., "arguments": ...}` (input stays input)."""
    return dumps({"name": name, "arguments": arguments}, ensure_ascii=False)


def joined(pieces: list[Any], separator: str = "\n") -> Any:
    """Contents joined: strings with `separator`; when any is a list of parts, one list of parts
    (a string becomes a text part; the separator is then the parts' own boundary)."""
    pieces = [p for p in pieces if p is not None and p != "" and p != []]
    if not pieces:
        return ""
    if all(isinstance(p, str) for p in pieces):
        return pieces[0] if len(pieces) == 1 else join(separator, pieces)
    parts: list = []
    for piece in pieces:
        parts.extend(piece if isinstance(piece, list) else [{"type": "text", "text": piece}])
    return parts


def _role(message: dict) -> Any:
    return message.get("role")


def _calls(message: dict) -> list:
    calls = message.get("tool_calls")
    return calls if isinstance(calls, list) else []


def _function(call: Any) -> dict:
    """A call's function: `call["function"]`, or the call itself when it is flat."""
    if isinstance(call, dict):
        inner = call.get("function")
        return inner if isinstance(inner, dict) else call
    return {}


def _text_parts(content: list) -> list:
    return [part.get("text") for part in content
            if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str)]


# ---------------------------------------------------------------------------- roles and content

def developer_role(messages: list[dict], step: Any) -> Result:
    if "developer" in step.facts.source or not any(_role(m) == "developer" for m in messages):
        return messages, None
    return ([{**m, "role": "system"} if _role(m) == "developer" else m for m in messages],
            "the template never names the developer role: developer messages sent as system")


def string_content(messages: list[dict], step: Any) -> Result:
    if step.facts.capabilities.requires_typed_content:
        return messages, None
    chosen = [isinstance(m.get("content"), list) for m in messages]
    if not any(chosen):
        return messages, None
    typed = step.facts.typed_roles()
    chosen = [c and _role(m) not in typed for m, c in zip(messages, chosen)]
    if not any(chosen):
        return messages, None
    out = [{**m, "content": joined(_text_parts(m["content"]))} if c else m
           for m, c in zip(messages, chosen)]
    return out, "the template does not render content parts: their texts joined with newlines"


def typed_content(messages: list[dict], step: Any) -> Result:
    if not step.facts.capabilities.requires_typed_content:
        return messages, None
    if not any(isinstance(m.get("content"), str) for m in messages):
        return messages, None
    out = [{**m, "content": [{"type": "text", "text": m["content"]}]}
           if isinstance(m.get("content"), str) else m for m in messages]
    return out, "the template renders typed content only: string content as one text part"


def reasoning_field(messages: list[dict], step: Any) -> Result:
    wanted = step.facts.capabilities.reasoning
    if not wanted:
        return messages, None
    out, changed = [], False
    for m in messages:
        given = next((m[k] for k in REASONING_FIELDS if m.get(k) is not None), None)
        if given is not None and wanted[0] not in m:
            m, changed = {**m, wanted[0]: given}, True
        out.append(m)
    return out, f"reasoning copied under {wanted[0]!r}, the name the template reads" if changed else None


# ---------------------------------------------------------------------------- tool calls

def _with_arguments(messages: list[dict], convert: Any) -> tuple[list[dict], bool]:
    """Messages whose calls' arguments `convert` changed (it returns None to leave one alone)."""
    out, changed = [], False
    for m in messages:
        calls = _calls(m)
        new_calls = []
        for call in calls:
            function = _function(call)
            arguments = convert(function.get("arguments"))
            if arguments is not None and isinstance(call, dict):
                function = {**function, "arguments": arguments}
                call = {**call, "function": function} if "function" in call else function
                changed = True
            new_calls.append(call)
        out.append({**m, "tool_calls": new_calls} if calls and new_calls != calls else m)
    return out, changed


def object_arguments(messages: list[dict], step: Any) -> Result:
    if step.facts.capabilities.arguments != "object":
        return messages, None

    def parse(arguments: Any) -> Any:
        if not isinstance(arguments, str):
            return None
        try:
            value = step.parsed(arguments)
        except ValueError:
            return None
        return value if isinstance(value, dict) else None
    out, changed = _with_arguments(messages, parse)
    return out, "the template serialises argument objects: JSON-string arguments parsed" if changed else None


def string_arguments(messages: list[dict], step: Any) -> Result:
    if step.facts.capabilities.arguments != "string":
        return messages, None

    def write(arguments: Any) -> Any:
        return dumps(arguments, ensure_ascii=False) if isinstance(arguments, dict) else None
    out, changed = _with_arguments(messages, write)
    return out, "the template prints arguments as given: argument objects written as JSON" if changed else None


def tool_call_content(messages: list[dict], step: Any) -> Result:
    if not step.facts.capabilities.tool_calls:
        return messages, None
    missing = [m for m in messages if _calls(m) and m.get("content") is None]
    if not missing or not step.facts.refuses("content"):
        return messages, None
    return ([{**m, "content": ""} if _calls(m) and m.get("content") is None else m for m in messages],
            "the template cannot render a tool-call message without content: content set to \"\"")


def _as_json_lines(message: dict, step: Any) -> dict:
    lines = []
    for call in _calls(message):
        function = _function(call)
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            try:
                arguments = step.parsed(arguments)
            except ValueError:
                pass  # not JSON: kept as the string it is
        lines.append(call_json(function.get("name"), arguments))
    rest = {k: v for k, v in message.items() if k != "tool_calls"}
    rest["content"] = joined([message.get("content"), join("\n", lines)])
    return rest


def tool_call_ids(messages: list[dict], step: Any) -> Result:
    if not any(_calls(m) for m in messages) or not step.facts.refuses("ids"):
        return messages, None
    ids: dict[str, str] = {}

    def new_id(old: Any) -> str:  # template text: made here, no character of the old id
        return ids.setdefault(str(old), f"call{len(ids) + 1:05d}")
    out = []
    for m in messages:
        if _calls(m):
            m = {**m, "tool_calls": [{**c, "id": new_id(c.get("id"))} if isinstance(c, dict) else c
                                     for c in _calls(m)]}
        elif _role(m) == "tool" and "tool_call_id" in m:
            m = {**m, "tool_call_id": new_id(m["tool_call_id"])}
        out.append(m)
    return out, "the template takes only nine-character ids: calls and results renumbered"


def tool_response_names(messages: list[dict], step: Any) -> Result:
    nameless = [m for m in messages if _role(m) == "tool" and m.get("name") is None]
    if not nameless or not step.facts.refuses("names"):
        return messages, None
    out, names, last = [], {}, []
    for m in messages:
        if _calls(m):
            last = [_function(c).get("name") for c in _calls(m)]
            names.update({str(c.get("id")): _function(c).get("name") for c in _calls(m)
                          if isinstance(c, dict) and "id" in c})
        elif _role(m) == "tool" and m.get("name") is None:
            name = names.get(str(m.get("tool_call_id"))) or (last[0] if last else None)
            last = last[1:]
            if name is not None:
                m = {**m, "name": name}
        out.append(m)
    return out, "the template needs the tool's name on a result: taken from the call it answers"


def tool_calls(messages: list[dict], step: Any) -> Result:
    caps = step.facts.capabilities
    if not caps.tool_calls:
        reason = "the template never renders tool calls: written as JSON in the assistant content"
    elif not caps.parallel_tool_calls:
        reason = "the template renders one tool call per message: several written as JSON in the content"
    else:
        return messages, None
    chosen = [not caps.tool_calls and bool(_calls(m)) or len(_calls(m)) > 1 for m in messages]
    if not any(chosen):
        return messages, None
    return [_as_json_lines(m, step) if c else m for m, c in zip(messages, chosen)], reason


def tool_responses(messages: list[dict], step: Any) -> Result:
    """Results become user turns when the template never renders them, or when the calls they
    answer are no longer calls (the `tool_calls` polyfill wrote them into the content) and the
    template refuses a result that follows no call."""
    if not any(_role(m) == "tool" for m in messages):
        return messages, None
    every = not step.facts.capabilities.tool_responses
    if not every and not step.facts.refuses("orphans"):
        return messages, None
    out: list[dict] = []
    answered = False  # whether the closest assistant message before has calls
    moved = False
    for m in messages:
        if _role(m) == "assistant":
            answered = bool(_calls(m))
        if _role(m) == "tool" and (every or not answered):
            out.extend(tool_responses_as_user([m], out))
            moved = True
        else:
            out.append(m)
    if not moved:
        return messages, None
    return _cleaned(out), ("the template never renders tool messages: tool results sent as user messages"
                           if every else "results of calls written into the content sent as user messages")


_RESULT_TURN = "_jm_tool_results"  # marks, while a step runs, a user turn it made of results
_MADE = object()  # the marker's value: no caller's message can hold it


def _cleaned(messages: list[dict]) -> list[dict]:
    for m in messages:
        if m.get(_RESULT_TURN) is _MADE:  # only the dicts made here: the caller's stay as given
            del m[_RESULT_TURN]
    return messages


def tool_responses_as_user(results: list[dict], before: list[dict]) -> list[dict]:
    """Tool results as one user message, joined to the previous one when that one was made of
    results too (consecutive results: one user turn, as templates enforce alternation). The
    step then takes the marker key off again (`_cleaned`)."""
    contents = [m.get("content") for m in results]
    if before and before[-1].get(_RESULT_TURN) is _MADE:
        before[-1]["content"] = joined([before[-1]["content"]] + contents)
        return []
    return [{"role": "user", "content": joined(contents), _RESULT_TURN: _MADE}]


# ---------------------------------------------------------------------------- tools and system

def tools(messages: list[dict], step: Any) -> Result:
    caps = step.facts.capabilities
    if not step.tools or caps.tools:
        return messages, None
    listing = join("\n", [dumps(tool, ensure_ascii=False) for tool in step.tools])
    text = joined([TOOLS_PREAMBLE, listing, CALL_PREAMBLE, step.facts.example_call()])
    if messages and _role(messages[0]) == "system":
        first = {**messages[0], "content": joined([messages[0].get("content"), text], "\n\n")}
        out = [first] + messages[1:]
    else:
        out = [{"role": "system", "content": text}] + messages
    if "tools" in caps.failed_probes:
        # Listing the tools does not help a template that raises on `tools=`: it must not get them
        step.withheld.add("tools")
        return out, ("the template fails on the tool list: listed as JSON in a system message, "
                     "and not passed to the template as tools")
    return out, "the template never prints the tool list: listed as JSON in a system message"


def system_role(messages: list[dict], step: Any) -> Result:
    if not any(_role(m) == "system" for m in messages):
        return messages, None
    if step.facts.capabilities.system_role and (step.tools or step.facts.system_without_tools()):
        return messages, None
    out: list[dict] = []
    pending: list = []
    for m in messages:
        if _role(m) == "system":
            pending.append(m.get("content"))
        elif _role(m) == "user" and pending:
            out.append({**m, "content": joined(pending + [m.get("content")])})
            pending = []
        else:
            out.append(m)
    if pending:
        out.append({"role": "user", "content": joined(pending)})
    return out, "the template cannot render a system message: merged into the next user message"


__all__ = ["Step", "call_json", "joined", "developer_role", "string_content", "reasoning_field", "object_arguments",
           "string_arguments", "tool_call_content", "tool_calls", "tool_responses", "tools",
           "system_role", "typed_content"]
