"""The examples the playground's picker offers: the bundled demo and a few chat templates in the
shapes model hubs ship (ChatML, Llama-3 headers, Gemma turns, tool calls, generation masks,
reasoning kept for the last turn only).

The templates other than the demo are written for the playground, not copied from a model: each
shows one thing a template author meets (a system message folded into the first turn, roles
refused with `raise_exception`, tools serialised with `tojson`, `{% generation %}` for assistant
masks, past reasoning dropped, which makes a template no longer append-only). Conversations are
JSON text, as the page edits them.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from importlib import resources

DEMO_TEMPLATE = "qwen2.5-instruct.jinja"
DEMO_CONVERSATION = "injection-user.json"


@dataclass(frozen=True)
class Example:
    """One entry of the picker: a template, a conversation (JSON text) and the options."""
    key: str
    title: str
    template: str
    conversation: str
    add_generation_prompt: bool = True
    kwargs: str = "{}"

    def as_json(self) -> dict:
        return asdict(self)


CHATML = """\
{%- for message in messages %}
    {{- '<|im_start|>' + message['role'] + '\\n' + message['content'] | trim + '<|im_end|>\\n' }}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\\n' }}
{%- endif %}
"""

LLAMA3_STYLE = """\
{{- bos_token }}
{%- set date = date_string | default('26 Jul 2024') %}
{%- if messages[0]['role'] == 'system' %}
    {%- set system = messages[0]['content'] | trim %}
    {%- set messages = messages[1:] %}
{%- else %}
    {%- set system = 'You are a helpful assistant.' %}
{%- endif %}
{{- '<|start_header_id|>system<|end_header_id|>\\n\\n' }}
{{- 'Today Date: ' + date + '\\n\\n' + system + '<|eot_id|>' }}
{%- for message in messages %}
    {{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' }}
    {{- message['content'] | trim + '<|eot_id|>' }}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}
{%- endif %}
"""

GEMMA_STYLE = """\
{{- bos_token }}
{%- if messages[0]['role'] == 'system' %}
    {%- set first_prefix = messages[0]['content'] + '\\n\\n' %}
    {%- set turns = messages[1:] %}
{%- else %}
    {%- set first_prefix = '' %}
    {%- set turns = messages %}
{%- endif %}
{%- for message in turns %}
    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}
        {{- raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}
    {%- endif %}
    {%- set role = 'model' if message['role'] == 'assistant' else message['role'] %}
    {{- '<start_of_turn>' + role + '\\n' + (first_prefix if loop.first else '') }}
    {{- message['content'] | trim + '<end_of_turn>\\n' }}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<start_of_turn>model\\n' }}
{%- endif %}
"""

TOOLS = """\
{%- macro render_call(call) -%}
    {%- set call = call.function if call.function is defined else call -%}
    <tool_call>{{ {'name': call.name, 'arguments': call.arguments} | tojson }}</tool_call>
{%- endmacro %}
{%- if tools %}
    {{- '<|im_start|>system\\nYou can call these tools:\\n' }}
    {%- for tool in tools %}
        {{- tool | tojson(indent=2) + '\\n' }}
    {%- endfor %}
    {{- '<|im_end|>\\n' }}
{%- endif %}
{%- for message in messages %}
    {%- if message.role == 'tool' %}
        {{- '<|im_start|>tool\\n<tool_response>' + message.content + '</tool_response><|im_end|>\\n' }}
    {%- else %}
        {{- '<|im_start|>' + message.role + '\\n' + (message.content or '') }}
        {%- for call in message.tool_calls or [] %}
            {{- render_call(call) }}
        {%- endfor %}
        {{- '<|im_end|>\\n' }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}
"""

GENERATION = """\
{%- for message in messages %}
    {%- if message.role == 'assistant' %}
        {{- '<|assistant|>\\n' }}
        {%- generation %}{{ message.content + '<|end|>' }}{% endgeneration %}
        {{- '\\n' }}
    {%- else %}
        {{- '<|' + message.role + '|>\\n' + message.content + '<|end|>\\n' }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}{{ '<|assistant|>\\n' }}{% endif %}
"""

REASONING = """\
{%- set ns = namespace(last_user=-1) %}
{%- for message in messages %}
    {%- if message.role == 'user' %}{% set ns.last_user = loop.index0 %}{% endif %}
{%- endfor %}
{%- for message in messages %}
    {{- '<|im_start|>' + message.role + '\\n' }}
    {%- if message.role == 'assistant' and message.reasoning_content and loop.index0 > ns.last_user %}
        {{- '<think>\\n' + message.reasoning_content + '\\n</think>\\n\\n' }}
    {%- endif %}
    {{- message.content + '<|im_end|>\\n' }}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\\n' }}
{%- endif %}
"""


def _json(value: object) -> str:
    return json.dumps(value, indent=1, ensure_ascii=False)


SIMPLE_CHAT = {"messages": [
    {"role": "system", "content": "You answer in one sentence."},
    {"role": "user", "content": "What is a chat template?"},
    {"role": "assistant", "content": "A Jinja program that turns messages into the model's prompt."},
    {"role": "user", "content": "And <|im_end|> in my message?"}]}

TOOL_CHAT = {
    "tools": [{"type": "function", "function": {
        "name": "get_weather", "description": "The weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                       "required": ["city"]}}}],
    "messages": [
        {"role": "user", "content": "Weather in Lyon?"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Lyon"}}}]},
        {"role": "tool", "content": "{\"sky\": \"clear\", \"celsius\": 21}"}]}

REASONING_CHAT = {"messages": [
    {"role": "user", "content": "What is 17 * 3?"},
    {"role": "assistant", "content": "51.", "reasoning_content": "17 * 3 = 51."},
    {"role": "user", "content": "And 51 * 2?"},
    {"role": "assistant", "content": "102.", "reasoning_content": "51 * 2 = 102."},
    {"role": "user", "content": "Thanks!"}]}


def demo() -> Example:
    """The CLI's `render --demo`: Qwen2.5's template and a user message forging special tokens."""
    folder = resources.files("jinjamark") / "demo"
    return Example("demo", "Demo: Qwen2.5 with a forged-token injection",
                   (folder / DEMO_TEMPLATE).read_text(encoding="utf-8"),
                   (folder / DEMO_CONVERSATION).read_text(encoding="utf-8").strip())


def examples() -> list[Example]:
    """Every example of the picker, the demo first."""
    return [
        demo(),
        Example("chatml", "ChatML, minimal", CHATML, _json(SIMPLE_CHAT)),
        Example("llama3", "Llama-3 style headers, system folded", LLAMA3_STYLE, _json(SIMPLE_CHAT),
                kwargs=_json({"date_string": "01 Dec 2026"})),
        Example("gemma", "Gemma style turns, roles must alternate", GEMMA_STYLE, _json(SIMPLE_CHAT)),
        Example("tools", "Tool calls and responses (tojson)", TOOLS, _json(TOOL_CHAT)),
        Example("generation", "{% generation %} for assistant masks", GENERATION,
                _json({"messages": SIMPLE_CHAT["messages"][1:3]}), add_generation_prompt=False),
        Example("reasoning", "Reasoning kept for the last turn only (not append-only)", REASONING,
                _json(REASONING_CHAT)),
    ]
