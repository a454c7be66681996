"""The polyfills themselves (see `polyfills`): one function per polyfill, named as it is.

Each takes the messages (walked: possibly marked, possibly shared with the caller's data, so a
message is copied before it is changed) and the render's `_Step`, and returns the new messages
and the reason it applied, or None when it did not. What a step writes itself is plain `str`
(template text); what it moves, joins or parses keeps its marks.
"""
from __future__ import annotations

from typing import Any, Optional

from ..jsonmarks import dumps
from ..marks import join
from .normalize import REASONING_FIELDS
from .polyfills import CALL_PREAMBLE, TOOLS_PREAMBLE, _call_json, joined

Result = tuple[list[dict], Optional[str]]


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
    if step.facts.analysis.content_format != "string" or step.facts.capabilities.requires_typed_content:
        return messages, None
    if not any(isinstance(m.get("content"), list) for m in messages):
        return messages, None
    out = [{**m, "content": joined(_text_parts(m["content"]))} if isinstance(m.get("content"), list)
           else m for m in messages]
    return out, "the template does not loop over content parts: their texts joined with newlines"


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
    if not missing or not step.facts.needs_content():
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
        lines.append(_call_json(function.get("name"), arguments))
    rest = {k: v for k, v in message.items() if k != "tool_calls"}
    rest["content"] = joined([message.get("content"), join("\n", lines)])
    return rest


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
    if step.facts.capabilities.tool_responses or not any(_role(m) == "tool" for m in messages):
        return messages, None
    out: list[dict] = []
    previous_tool = False
    for m in messages:
        if _role(m) != "tool":
            out.append(m)
        elif previous_tool:  # consecutive results: one user turn (templates enforce alternation)
            out[-1]["content"] = joined([out[-1]["content"], m.get("content")])
        else:
            out.append({"role": "user", "content": joined([m.get("content")])})
        previous_tool = _role(m) == "tool"
    return out, "the template never renders tool messages: tool results sent as user messages"


# ---------------------------------------------------------------------------- tools and system

def tools(messages: list[dict], step: Any) -> Result:
    if not step.tools or step.facts.capabilities.tools:
        return messages, None
    listing = join("\n", [dumps(tool, ensure_ascii=False) for tool in step.tools])
    text = joined([TOOLS_PREAMBLE, listing, CALL_PREAMBLE, step.facts.example_call()])
    if messages and _role(messages[0]) == "system":
        first = {**messages[0], "content": joined([messages[0].get("content"), text], "\n\n")}
        out = [first] + messages[1:]
    else:
        out = [{"role": "system", "content": text}] + messages
    return out, "the template never prints the tool list: listed as JSON in a system message"


def system_role(messages: list[dict], step: Any) -> Result:
    if step.facts.capabilities.system_role or not any(_role(m) == "system" for m in messages):
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


__all__ = ["developer_role", "string_content", "reasoning_field", "object_arguments",
           "string_arguments", "tool_call_content", "tool_calls", "tool_responses", "tools",
           "system_role", "typed_content"]
