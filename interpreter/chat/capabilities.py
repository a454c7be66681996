"""What a chat template can render, found by probing it as minja's capability probes do.

Each capability is first looked for in the AST (the variables and keys the template reads: a
template that never reads `tool_calls` cannot render a tool call) and then confirmed by rendering
small probe conversations that carry a sentinel, and looking for the sentinel in the output.
Every probe is independent: a probe whose renders all raise only turns its own flags off and is
listed in `failed_probes` (llama.cpp once turned every flag off when one probe raised).
A probe tries a few variants of its conversation (assistant content `None` or `""`, with or
without the tool list, ...) because templates differ in what they insist on.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Literal, Optional

from ..limits import Limits
from .profile import chat_environment

__all__ = ["Capabilities", "probe_capabilities", "REASONING_FIELDS"]

# The class the probes render with: `ChatTemplate`. It sits above this module (the polyfills it
# applies analyse templates, and the analysis probes them), so the chat package hands it down
# when it loads (chat/__init__.py), through `probe_with`.
_renderer: Any = None


def probe_with(chat_template_class: type) -> None:
    """Set the class the probes render a template with (`cls(source, special_tokens=...,
    environment=...)`, then `.render(messages, **kwargs)`)."""
    global _renderer
    _renderer = chat_template_class

REASONING_FIELDS = ("reasoning_content", "thinking", "reasoning")
Arguments = Literal["object", "string", "either"]


@dataclass(frozen=True)
class Capabilities:
    """What the probes rendered.

    - `system_role`: a system message's text reaches the prompt (folded into the first user turn
      counts; a template that refuses the role does not).
    - `tools`: the tool list given as `tools=` reaches the prompt.
    - `tool_calls`: an assistant message's `tool_calls` reach the prompt (their arguments).
    - `parallel_tool_calls`: two tool calls in one message both reach it.
    - `tool_responses`: the content of a `role: tool` message reaches it.
    - `tool_call_ids`: a tool call's `id` (or a response's `tool_call_id`) reaches it.
    - `arguments`: how tool-call arguments must be given: 'object' (a dict, which the template
      serialises), 'string' (JSON text, printed as given), 'either', or None (no tool calls).
    - `requires_typed_content`: a plain string content is lost, a list of typed parts
      (`[{"type": "text", "text": ...}]`) is rendered.
    - `reasoning`: the message fields whose text is rendered as reasoning, among
      `reasoning_content`, `thinking` and `reasoning`.
    - `enable_thinking`: the template reads the `enable_thinking` variable and the generation
      prompt changes with it.
    - `failed_probes`: probes whose every render raised (their flags are False).
    """
    system_role: bool = False
    tools: bool = False
    tool_calls: bool = False
    parallel_tool_calls: bool = False
    tool_responses: bool = False
    tool_call_ids: bool = False
    arguments: Optional[Arguments] = None
    requires_typed_content: bool = False
    reasoning: tuple[str, ...] = ()
    enable_thinking: bool = False
    failed_probes: tuple[str, ...] = field(default=())


# ---------------------------------------------------------------------------- the sentinels

USER, SYSTEM, ANSWER = "jmUserNeedle", "jmSystemNeedle", "jmAnswerNeedle"
TOOL_NAME, ARG_KEY, ARG_VALUE, SECOND_VALUE = "jm_probe_tool", "jm_arg", "jmArgValue", "jmSecondValue"
CALL_ID, SECOND_ID = "jmcallid1", "jmcallid2"  # nine letters and digits: what Mistral insists on
RESPONSE, REASONING = "jmToolResponse", "jmReasoningNeedle"
TOOL = {"type": "function", "function": {
    "name": TOOL_NAME, "description": "A probe tool.",
    "parameters": {"type": "object", "properties": {ARG_KEY: {"type": "string",
                                                              "description": "An argument."}},
                   "required": [ARG_KEY]}}}
STRING_ARGUMENTS = json.dumps({ARG_KEY: ARG_VALUE})
REPR_ARGUMENTS = repr({ARG_KEY: ARG_VALUE})  # an object printed as Python: the template wanted text


def _user(content: Any = USER) -> dict:
    return {"role": "user", "content": content}


def _call(value: str, call_id: str, as_object: bool) -> dict:
    arguments = {ARG_KEY: value} if as_object else json.dumps({ARG_KEY: value})
    return {"id": call_id, "type": "function",
            "function": {"name": TOOL_NAME, "arguments": arguments}}


def _response(call_id: str = CALL_ID) -> dict:
    return {"role": "tool", "tool_call_id": call_id, "name": TOOL_NAME, "content": RESPONSE}


class _Prober:
    """Renders probe variants; remembers which probes raised in every variant."""

    def __init__(self, source: str, special_tokens: dict) -> None:
        self.template = _renderer(source, special_tokens=special_tokens,
                                     environment=_probing_environment())
        self.failed: list[str] = []
        self.typed = False  # the template needs typed content: probe messages carry it so

    def render(self, messages: list, **kwargs: Any) -> Optional[str]:
        if self.typed:
            messages = [_typed(message) for message in messages]
        try:
            return self.template.render(messages, **kwargs)
        except Exception:  # any failure of one render is that variant's answer, nothing more
            return None

    def first(self, name: str, variants: Iterable[tuple[list, dict]],
              accept: Callable[[str], bool]) -> Optional[str]:
        """The first variant's output that `accept`s; None when none does."""
        rendered = False
        for messages, kwargs in variants:
            out = self.render(messages, **kwargs)
            if out is not None:
                rendered = True
                if accept(out):
                    return out
        if not rendered:
            self.failed.append(name)
        return None


# A probe renders a conversation of a few short messages: a real template does that in well under
# 100,000 steps. These limits keep a template that loops to the default limits (as a hostile
# one can) from making analyze() take a minute over its twenty-odd probes: such a render fails,
# which only turns off that probe's flags.
PROBE_LIMITS = Limits(max_fuel=500_000, max_loop_iterations=100_000, deadline=0.5)


def _probing_environment() -> Any:
    global _PROBING
    if _PROBING is None:
        _PROBING = chat_environment(limits=PROBE_LIMITS)
    return _PROBING


_PROBING: Any = None


def _typed(message: dict) -> dict:
    """The message with its text content (also an empty or missing one) as one typed part."""
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        return message
    return {**message, "content": [{"type": "text", "text": content or ""}]}


def _tool_variants(calls: list, response: bool) -> Iterable[tuple[list, dict]]:
    """[user, assistant with `calls`(, tool response)], content None or "", tools or not."""
    for content in (None, ""):
        for tools in (None, [TOOL]):
            messages = [_user("Hi"), {"role": "assistant", "content": content, "tool_calls": calls}]
            if response:
                messages.append(_response())
            yield messages, {"tools": tools}


# ---------------------------------------------------------------------------- the probes

def probe_capabilities(source: str, special_tokens: dict, variables: frozenset,
                       keys: frozenset) -> Capabilities:
    """The capabilities of `source`, from what it reads (`variables`, `keys`) and probe renders."""
    prober = _Prober(source, special_tokens)
    found: dict[str, Any] = {}
    # some templates cannot render without tools (`for tool in tools` over None): try with them too
    plain = [{"add_generation_prompt": True}, {"add_generation_prompt": False}]
    if "tools" in variables:
        plain += [{"add_generation_prompt": True, "tools": [TOOL]}]
    string_ok = prober.first("string_content", [([_user()], kw) for kw in plain],
                             lambda out: USER in out) is not None
    typed = [_user([{"type": "text", "text": USER}])]
    typed_ok = prober.first("typed_content", [(typed, kw) for kw in plain],
                            lambda out: USER in out) is not None
    found["requires_typed_content"] = prober.typed = typed_ok and not string_ok
    system = [{"role": "system", "content": SYSTEM}, _user()]
    found["system_role"] = prober.first("system_role", [(system, kw) for kw in plain],
                                        lambda out: SYSTEM in out) is not None
    if "tools" in variables:
        found["tools"] = prober.first("tools", [([_user("Hi")], {"tools": [TOOL],
                                                                 "add_generation_prompt": True})],
                                      lambda out: TOOL_NAME in out) is not None
    outputs = _tool_probes(prober, found, keys)
    if "id" in keys or "tool_call_id" in keys:
        found["tool_call_ids"] = any(CALL_ID in out for out in outputs)
    found["reasoning"] = tuple(name for name in REASONING_FIELDS if name in keys
                               and _renders_reasoning(prober, name))
    if "enable_thinking" in variables:
        found["enable_thinking"] = _thinking_switch(prober)
    return Capabilities(**found, failed_probes=tuple(prober.failed))


def _tool_probes(prober: _Prober, found: dict, keys: frozenset) -> list[str]:
    """Tool calls (and their argument form), parallel calls and tool responses; the outputs
    that rendered, for the call-id check."""
    outputs: list[str] = []
    as_object = True
    if "tool_calls" in keys:
        def accepts_object(out: str) -> bool:
            return ARG_VALUE in out and REPR_ARGUMENTS not in out
        objects = prober.first("object_arguments", _tool_variants([_call(ARG_VALUE, CALL_ID, True)], False),
                               accepts_object)
        strings = prober.first("string_arguments",
                               _tool_variants([_call(ARG_VALUE, CALL_ID, False)], False),
                               lambda out: STRING_ARGUMENTS in out)
        outputs += [out for out in (objects, strings) if out is not None]
        found["tool_calls"] = objects is not None or strings is not None
        if found["tool_calls"]:
            found["arguments"] = ("either" if objects and strings else
                                  "object" if objects else "string")
            as_object = objects is not None
            calls = [_call(ARG_VALUE, CALL_ID, as_object), _call(SECOND_VALUE, SECOND_ID, as_object)]
            found["parallel_tool_calls"] = prober.first(
                "parallel_tool_calls", _tool_variants(calls, False),
                lambda out: ARG_VALUE in out and SECOND_VALUE in out) is not None
    response = prober.first("tool_responses",
                            _tool_variants([_call(ARG_VALUE, CALL_ID, as_object)], True),
                            lambda out: RESPONSE in out)
    found["tool_responses"] = response is not None
    if response is not None:
        outputs.append(response)
    return outputs


def _renders_reasoning(prober: _Prober, name: str) -> bool:
    """Some templates print reasoning only in the last turn, some only beside tool calls."""
    message = {"role": "assistant", "content": ANSWER, name: REASONING}
    calling = [{**message, "tool_calls": [_call(ARG_VALUE, CALL_ID, as_object)]}
               for as_object in (True, False)]
    variants = [([_user("Hi"), message], {}),
                ([_user("Hi"), message, _user("Again")], {"add_generation_prompt": True})]
    variants += [([_user("Hi"), turn], {"tools": [TOOL]}) for turn in calling]
    return prober.first(f"reasoning:{name}", variants, lambda out: REASONING in out) is not None


def _thinking_switch(prober: _Prober) -> bool:
    """Whether the generation prompt differs between enable_thinking True and False."""
    on, off = (prober.render([_user("Hi")], add_generation_prompt=True, enable_thinking=value)
               for value in (True, False))
    if on is None and off is None:
        prober.failed.append("enable_thinking")
    return on is not None and off is not None and on != off
