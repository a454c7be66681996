"""Polyfills: a request's system message, tools, tool calls, tool results and typed content
reshaped, before rendering, into what a chat template can render (issue 16).

Each polyfill rewrites the conversation data only (never the template or the engine), and only
when the template lacks the capability (`jinjamark.analyze(source).capabilities`) and the request
needs it. They run on the data the normalisation walk produced, so marks survive: a string that
came from input stays input (moved, joined or parsed as JSON, its characters keep their marks),
and the words a polyfill adds (separators, the tool-list preamble, JSON punctuation) are template
text, plain `str`. Off by default: `polyfill=False` renders byte-identical to transformers.

The polyfills, in the order they run (a later one sees what an earlier one made: the tool list
becomes a system message, which the system polyfill then folds into a user turn):

- `developer_role`: `developer` messages become `system` when the template never names the role.
- `string_content`: typed content (`[{"type": "text", ...}]`) becomes its text parts joined with
  newlines, in the messages of roles whose parts the template does not render (a probe render).
- `reasoning_field`: reasoning given under one name is copied under the name the template reads.
- `object_arguments` / `string_arguments`: tool-call arguments as the template wants them (a
  JSON string parsed to an object, or an object written as JSON text).
- `tool_call_content`: an empty content for an assistant tool-call message without one, for a
  template that cannot render it missing.
- `tool_call_ids`: call ids renumbered `call00001`, ... (nine letters and digits, in calls and
  results alike) for a template that refuses others (Mistral's).
- `tool_response_names`: a tool result without `name` gets the name of the call it answers, for
  a template that refuses it without one.
- `tool_calls`: tool calls the template does not render (or, for a template that renders one
  call per message, every call of a message with several) written as JSON lines in the content.
- `tool_responses`: `tool` messages become `user` messages (consecutive ones joined); also the
  results of calls the `tool_calls` polyfill wrote into the content, where the template refuses
  a result that follows no call.

Use: `ChatTemplate.render(..., polyfill=True, return_polyfills=True)` gives the text and the
`Polyfill`s applied; `ChatTemplate.polyfills_for(conversation, tools)` only says which would.
- `tools`: the tool list, for a template that never prints it, as a system message listing the
  tools as JSON, with an example call rendered by the template itself when it can render one.
  When the template fails on `tools=` (its probe raised), the render no longer passes it the
  tools at all (`Polyfill.withheld`), and the probes of the other polyfills render without them.
- `system_role`: system messages merged into the next user message (newline-separated).
- `typed_content`: string content as one typed text part, for a template that needs parts.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Optional, Union

from . import polyfill_steps
from .analysis import Analysis, analyze
from .normalize import marked
from .polyfill_steps import Step, call_json

__all__ = ["POLYFILLS", "Polyfill", "Polyfiller", "facts_of", "selected_polyfills"]

POLYFILLS = ("developer_role", "string_content", "reasoning_field", "object_arguments",
             "string_arguments", "tool_call_content", "tool_call_ids", "tool_response_names",
             "tool_calls", "tool_responses", "tools", "system_role", "typed_content")
EXAMPLE_NAME, EXAMPLE_ARGUMENTS = "tool_name", {"argument": "value"}
EXAMPLE_TOOL = {"type": "function", "function": {
    "name": EXAMPLE_NAME, "description": "An example tool.",
    "parameters": {"type": "object", "properties": {"argument": {"type": "string"}},
                   "required": ["argument"]}}}


@dataclass(frozen=True)
class Polyfill:
    """One polyfill that applied (or would apply) to a render, and why; `withheld` names the
    context values the render then keeps from the template (`('tools',)`: it fails on them)."""
    name: str
    reason: str
    withheld: tuple[str, ...] = ()


def selected_polyfills(polyfill: Union[bool, Iterable[str]]) -> frozenset[str]:
    """The names `polyfill=` selects: none for False, all for True, else the names given."""
    if polyfill is False or polyfill is None:
        return frozenset()
    if polyfill is True:
        return frozenset(POLYFILLS)
    names = frozenset([polyfill] if isinstance(polyfill, str) else polyfill)
    unknown = sorted(names - set(POLYFILLS))
    if unknown:
        raise ValueError(f"unknown polyfill(s) {unknown}; the polyfills are {list(POLYFILLS)}")
    return names


# ---------------------------------------------------------------------------- what a template can do

class _Facts:
    """What the polyfills need to know about one template: its analysis, and two renders made
    only when a request needs them (an example tool call; whether a call needs a content)."""

    def __init__(self, chat: Any, source: str) -> None:
        self.source = source
        self.analysis: Analysis = analyze(source, chat.special_tokens or None)
        self.capabilities = self.analysis.capabilities
        # the same class as the template being polyfilled (not imported: it imports this module)
        self.renderer = type(chat)(source, special_tokens=chat.special_tokens or None)
        self._example: Optional[str] = None
        self._refuses: dict[str, bool] = {}
        self._system_alone: Optional[bool] = None
        self._typed_roles: Optional[frozenset] = None
        # The probes below give tools only to a template that can take them: one that raises on
        # `tools=` would fail each probe, which would then answer for the tools, not its question.
        self.probe_tools = None if "tools" in self.capabilities.failed_probes else [EXAMPLE_TOOL]

    def _render(self, messages: list, **kwargs: Any) -> Optional[str]:
        try:
            return self.renderer.render(messages, **kwargs)
        except Exception:  # noqa: BLE001 - a probe that raises answers "cannot"
            return None

    def example_call(self) -> str:
        """An example tool call as this template writes one (found as the difference between an
        assistant turn with and without a call), else the JSON the `tool_calls` polyfill writes."""
        if self._example is None:
            self._example = self._rendered_example() or call_json(EXAMPLE_NAME, EXAMPLE_ARGUMENTS)
        return self._example

    def _rendered_example(self) -> Optional[str]:
        caps = self.capabilities
        if not caps.tool_calls:
            return None
        call = self._call()
        for content in ("", None):
            turn = {"role": "assistant", "content": content}
            without = self._render([{"role": "user", "content": "Hi"}, turn], tools=self.probe_tools)
            with_call = self._render([{"role": "user", "content": "Hi"}, {**turn, "tool_calls": [call]}],
                                     tools=self.probe_tools)
            if without is not None and with_call is not None:
                found = _difference(without, with_call).strip()
                if EXAMPLE_NAME in found and "value" in found:
                    return found
        return None

    def _call(self, call_id: str = "call00001") -> dict:
        """An example call with its arguments in the form the template takes."""
        arguments: Any = (json.dumps(EXAMPLE_ARGUMENTS) if self.capabilities.arguments == "string"
                          else EXAMPLE_ARGUMENTS)
        return {"id": call_id, "type": "function",
                "function": {"name": EXAMPLE_NAME, "arguments": arguments}}

    def _exchange(self, content: Any = "", call_id: str = "call00001", name: bool = True,
                  calls: bool = True) -> Optional[str]:
        """[user, assistant calling the example tool, its result] rendered, or None."""
        turn: dict = {"role": "assistant", "tool_calls": [self._call(call_id)]} if calls else {
            "role": "assistant"}
        if content is not None:
            turn["content"] = content
        result = {"role": "tool", "tool_call_id": call_id, "content": "42"}
        if name:
            result["name"] = EXAMPLE_NAME
        return self._render([{"role": "user", "content": "Hi"}, turn, result], tools=self.probe_tools)

    def refuses(self, question: str) -> bool:
        """Whether the template refuses a detail of a tool exchange that it renders otherwise:
        'content' (a call without content), 'ids' (ids that are not 9 letters and digits, as
        Mistral's templates insist), 'names' (a tool result without the tool's name), 'orphans'
        (a result after an assistant message without calls, as gpt-oss's refuses)."""
        if question not in self._refuses:
            variant = {"content": dict(content=None), "ids": dict(call_id="call_1"),
                       "names": dict(name=False), "orphans": dict(calls=False)}[question]
            self._refuses[question] = self._exchange(**variant) is None and self._exchange() is not None
        return self._refuses[question]

    def typed_roles(self) -> frozenset:
        """The roles whose typed text parts the template renders as text (not as a printed list
        of dicts): vLLM's content format misses some templates that loop over parts in a macro
        (one handed `message.get('content')`, as Kimi K3's is)."""
        if self._typed_roles is None:
            self._typed_roles = frozenset()
            for roles in (("system", "user", "assistant", "user"), ("user", "assistant", "user")):
                needles = [f"jmPart{i}Needle" for i in range(len(roles))]
                messages = [{"role": role, "content": [{"type": "text", "text": needle}]}
                            for role, needle in zip(roles, needles)]
                out = self._render(messages, add_generation_prompt=True)
                if out is not None and all(n in out for n in needles) and not _printed_part(out):
                    self._typed_roles = frozenset(roles)
                    break
        return self._typed_roles

    def system_without_tools(self) -> bool:
        """Whether a system message reaches the output without tools too (a template that
        prints it only beside the tool list passes the analysis probe, which tries both)."""
        if self._system_alone is None:
            out = self._render([{"role": "system", "content": "jmSystemNeedle"},
                                {"role": "user", "content": "Hi"}], add_generation_prompt=True)
            self._system_alone = out is not None and "jmSystemNeedle" in out
        return self._system_alone


def _printed_part(out: str) -> bool:
    """A part printed as a dict (by `{{ content }}` or `tojson`), not as its text."""
    return "'type': 'text'" in out or '"type": "text"' in out or '"type":"text"' in out


def _difference(a: str, b: str) -> str:
    """What `b` has where it differs from `a`: cut by their common prefix and suffix, widened to
    whole tokens (`<|tool_calls_begin|>` and `<|Assistant|>` share `<|`: not cut there)."""
    start = 0
    while start < min(len(a), len(b)) and a[start] == b[start]:
        start += 1
    end = 0
    while end < min(len(a), len(b)) - start and a[-1 - end] == b[-1 - end]:
        end += 1
    stop = len(b) - end
    while not _boundary(b, start):
        start -= 1
    while not _boundary(b, stop):
        stop += 1
    return b[start:stop]


def _boundary(text: str, i: int) -> bool:
    """Between two tokens: at an end, after a closing bracket or space, before an opening one."""
    return i <= 0 or i >= len(text) or text[i - 1] in " \n>]}" or text[i] in " \n<[{"


_FACTS: dict[tuple, _Facts] = {}


def facts_of(chat: Any, source: str) -> _Facts:
    """The facts of a template with a chat's special tokens, kept for later renders (bounded)."""
    key = (source, repr(sorted(chat.special_tokens.items())))
    facts = _FACTS.get(key)
    if facts is None:
        facts = _Facts(chat, source)
        if len(_FACTS) < 64:
            _FACTS[key] = facts
    return facts


# ---------------------------------------------------------------------------- applying them

class Polyfiller:
    """The selected polyfills of one render of one template: `apply` reshapes a conversation."""

    def __init__(self, chat: Any, source: str, selected: frozenset[str]) -> None:
        self.selected = selected
        self.facts = facts_of(chat, source)

    def apply(self, messages: list[dict], tools: Any, walk: Callable[[Any, int], Any],
              ) -> tuple[list[dict], list[Polyfill]]:
        """The messages (as `template_messages` made them, walked by `walk`) with the polyfills
        that apply; and those polyfills. `tools` are walked by the same walk."""
        step = Step(self.facts, walk is marked, tools)
        applied: list[Polyfill] = []
        for name in POLYFILLS:
            if name in self.selected:
                before = set(step.withheld)
                messages, reason = getattr(polyfill_steps, name)(messages, step)
                if reason is not None:
                    applied.append(Polyfill(name, reason, tuple(sorted(step.withheld - before))))
        return messages, applied
