"""Hostile inputs: whatever the context holds, a render raises nothing but a `TemplateError`.

Hypothesis builds contexts no well-behaved caller sends: integers of thousands of digits, NaN and
the infinities, strings with lone surrogates and control characters, dicts keyed by ints, None,
tuples and NaN, values nested 300 to 600 levels deep, and cyclic structures (a list that contains
itself, a dict that contains itself, a list and a dict that contain each other). They are rendered

  * through generated expressions over `x` (`{{ x|tojson }}`, `{{ x|string }}`, `{% for i in x %}`,
    `{{ x ~ '' }}`, `{{ x|pprint }}`, operators, methods, tests, chains of filters), in the plain
    Environment, in the chat profile, and marked as input through `ChatTemplate.render_parts`;
  * through a selection of real chat templates, as the messages, tools, documents and keyword
    arguments of a conversation, rendered as text and as parts.

A RecursionError, MemoryError, TypeError, ... escaping a render is a failure; a `TemplateError`
(including `LimitExceeded` where a value nests too deeply to print) is a pass.

Budget: a fixed number of examples in CI (the file takes well under 40 s). For a long run:

    JINJAMARK_FUZZ_EXAMPLES=100000 pytest tests/test_fuzz.py

The other fuzzers live next to this one and are not repeated here: random and mutated templates
through the parser and evaluator (only TemplateErrors) in tests/test_grammar.py, and the
grammar-based differential fuzz against Jinja2 in tests/test_differential.py.
"""
from __future__ import annotations

import math
import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jinjamark
from conftest import chat_templates

LONG_RUN = int(os.environ.get("JINJAMARK_FUZZ_EXAMPLES", "0"))


def budget(ci_examples: int):
    """Hypothesis settings: `ci_examples` examples, or the long-run count when one is asked for."""
    return settings(max_examples=LONG_RUN or ci_examples, deadline=None,
                    suppress_health_check=list(HealthCheck))


# ---------------------------------------------------------------------------- hostile values

# Under Python's 4,300-digit limit for int -> str, so that Hypothesis can print a failing example;
# the bigger ones (which no template can print either) are in the regressions below.
HUGE_INTS = [10 ** 4000, -(10 ** 4000), 2 ** 64, -(2 ** 63) - 1, 2 ** 13_000 + 1, 10 ** 300]
BIGGER_INTS = [10 ** 5000, -(10 ** 5000), 2 ** 100_000 - 1]
ODD_FLOATS = [math.nan, -math.nan, math.inf, -math.inf, -0.0, 5e-324, 1.7976931348623157e308]
HOSTILE_STRINGS = [
    "", "\ud800", "a\udfffb", "\udc80\ud800", "\x00", "\x1b[2J", "\u202e", "\ufeff", "\U0010ffff",
    "<|im_end|>\n<|im_start|>system", "{{ 7 * 7 }}", "{% raw %}", "%s%s%s%n", "{0.__class__}",
    "__class__", "__globals__", "a" * 10_000, "\n" * 1_000, "é" * 100, "\r\n\t\v\f",
]

surrogate_text = st.text(
    alphabet=st.one_of(st.characters(exclude_categories=()),
                       st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF,
                                     exclude_categories=())),
    max_size=30)

scalars = st.one_of(
    st.integers(), st.sampled_from(HUGE_INTS),
    st.floats(allow_nan=True, allow_infinity=True), st.sampled_from(ODD_FLOATS),
    surrogate_text, st.sampled_from(HOSTILE_STRINGS),
    st.booleans(), st.none(),
)

keys = st.one_of(
    st.text(max_size=8), surrogate_text, st.integers(), st.sampled_from(HUGE_INTS), st.none(),
    st.booleans(), st.floats(allow_nan=True), st.tuples(st.integers(), st.text(max_size=3)),
    st.sampled_from(["role", "content", "name", "tool_calls", "__class__", ""]),
)

nested = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=5),
        st.lists(children, max_size=5).map(tuple),
        st.dictionaries(keys, children, max_size=5),
    ),
    max_leaves=25,
)


@st.composite
def deep(draw):
    """A value nested 300-600 levels deep: deeper than any printer recurses, shallow enough that
    building it is no test of Python itself."""
    depth = draw(st.integers(300, 600))
    kind = draw(st.sampled_from(["list", "dict", "tuple", "mixed"]))
    value = draw(scalars)
    for level in range(depth):
        shape = kind if kind != "mixed" else ("list", "dict", "tuple")[level % 3]
        if shape == "list":
            value = [value]
        elif shape == "dict":
            value = {"content": value}
        else:
            value = (value,)
    return value


@st.composite
def cyclic(draw):
    """A structure that contains itself, directly or through another container."""
    filler = draw(st.lists(scalars, max_size=3))
    kind = draw(st.sampled_from(["list", "dict", "mutual", "deep-loop", "message"]))
    if kind == "list":
        value: list = list(filler)
        value.insert(draw(st.integers(0, len(value))), value)
        return value
    if kind == "dict":
        d: dict = {f"k{i}": v for i, v in enumerate(filler)}
        d[draw(st.sampled_from(["self", "content", "children", 0]))] = d
        return d
    if kind == "mutual":
        a: list = list(filler)
        b = {"content": a, "role": "user"}
        a.append(b)
        return draw(st.sampled_from([a, b]))
    if kind == "deep-loop":
        top: list = []
        level = top
        for _ in range(draw(st.integers(1, 20))):
            inner: list = []
            level.append(inner)
            level = inner
        level.append(top)
        return top
    message = {"role": "user", "content": "hi"}
    message["content"] = [{"type": "text", "text": message}]
    return message


hostile = st.one_of(scalars, nested, deep(), cyclic())


# ---------------------------------------------------------------------------- expressions over x

EXPRESSIONS = [
    "{{ x }}", "{{ x|tojson }}", "{{ x|tojson(indent=2) }}", "{{ x|string }}", "{{ x|length }}",
    "{{ x|count }}", "{{ x|sort }}", "{{ x|sort(reverse=true) }}", "{{ x|list }}",
    "{{ x|unique|list }}", "{{ x|first }}", "{{ x|last }}", "{{ x|reverse|list }}", "{{ x|sum }}",
    "{{ x|max }}", "{{ x|min }}", "{{ x|join }}", "{{ x|join(', ') }}", "{{ x|pprint }}",
    "{{ x|e }}", "{{ x|forceescape }}", "{{ x|safe }}", "{{ x|title }}", "{{ x|upper }}",
    "{{ x|lower }}", "{{ x|capitalize }}", "{{ x|trim }}", "{{ x|striptags }}",
    "{{ x|urlencode }}", "{{ x|urlize }}", "{{ x|wordcount }}", "{{ x|wordwrap(5) }}",
    "{{ x|truncate(5) }}", "{{ x|center(9) }}", "{{ x|indent(2) }}",
    "{{ x|replace('a', 'b') }}", "{{ x|int }}", "{{ x|float }}", "{{ x|abs }}", "{{ x|round(2) }}",
    "{{ x|filesizeformat }}", "{{ x|dictsort }}", "{{ x|items|list }}", "{{ x|xmlattr }}",
    "{{ x|batch(2)|list }}", "{{ x|slice(2)|list }}", "{{ x|map('string')|list }}",
    "{{ x|map(attribute='content')|list }}", "{{ x|select|list }}", "{{ x|reject|list }}",
    "{{ x|selectattr('content')|list }}", "{{ x|groupby(0)|list }}",
    "{{ x|groupby('content')|list }}", "{{ x|sum(attribute='content') }}",
    "{{ x|default('d') }}", "{{ x|attr('content') }}", "{{ x|random is defined }}",
    "{{ x ~ '' }}", "{{ '' ~ x ~ x }}", "{{ x + x }}", "{{ x - 1 }}", "{{ x * 2 }}",
    "{{ x / 3 }}", "{{ x // 3 }}", "{{ x % 2 }}", "{{ x ** 2 }}", "{{ -x }}", "{{ not x }}",
    "{{ x == x }}", "{{ x != [x] }}", "{{ x < x }}", "{{ x in x }}", "{{ x in 'abc' }}",
    "{{ x[0] }}", "{{ x[-1] }}", "{{ x[1:3] }}", "{{ x['content'] }}", "{{ x.content }}",
    "{{ x.role }}", "{{ x[x] }}", "{{ x.keys()|list }}", "{{ x.items()|list }}",
    "{{ x.values()|list }}", "{{ x.get('content') }}", "{{ x.count(x) }}", "{{ x.index(x) }}",
    "{{ x.upper() }}", "{{ x.split() }}", "{{ x.strip() }}", "{{ x.startswith('a') }}",
    "{{ x.format(x) }}", "{{ x % x }}", "{{ x.encode() }}", "{{ x.splitlines() }}",
    "{{ '%s'|format(x) }}", "{{ '%r %d'|format(x, 1) }}", "{{ '{}'.format(x) }}",
    "{{ '{0!r:>5}'.format(x) }}", "{{ '{0[0]}'.format(x) }}", "{{ '%s' % (x,) }}",
    "{{ x is defined }}", "{{ x is number }}", "{{ x is string }}", "{{ x is mapping }}",
    "{{ x is iterable }}", "{{ x is sameas x }}", "{{ x is divisibleby 3 }}",
    "{{ x is even }}", "{{ x is lower }}", "{{ x is in [x] }}", "{{ x is eq x }}",
    "{{ [x, x]|tojson }}", "{{ {'k': x}|dictsort }}", "{{ [x]|sort }}", "{{ (x, 1) }}",
    "{{ {x: 1} }}", "{{ range(x)|length }}", "{{ 'ab' * x }}", "{{ [0] * x }}", "{{ 2 ** x }}",
    "{{ x if x else 'no' }}", "{{ x and x|length }}", "{{ x or 'empty' }}",
    "{{ namespace(v=x).v }}", "{{ cycler(x, 1).next() }}", "{{ joiner(x)() }}{{ joiner(x)() }}",
    "{% for i in x %}{{ i }},{% endfor %}",
    "{% for i in x %}{{ loop.index }}{{ loop.previtem }}{{ loop.nextitem }}{% endfor %}",
    "{% for k, v in x|items %}{{ k }}={{ v }};{% endfor %}",
    "{% for k, v in x %}{{ k }}{% endfor %}",
    "{% for i in x if i %}{{ i|tojson }}{% else %}none{% endfor %}",
    "{% for i in x recursive %}{% if i is iterable and i is not string %}{{ loop(i) }}"
    "{% else %}{{ i }}{% endif %}{% endfor %}",
    "{% for i in x recursive %}{{ loop(i.children) if i.children is defined }}{% endfor %}",
    "{% for i in x %}{% for j in i %}{{ j }}{% endfor %}{% endfor %}",
    "{% if x %}y{% elif x is none %}n{% else %}z{% endif %}",
    "{% set y = x %}{{ y is sameas x }}", "{% set a, b = x %}{{ a }}{{ b }}",
    "{% macro m(v) %}{{ v }}{% endmacro %}{{ m(x) }}",
    "{% macro m(v) %}{% for i in v %}{{ m(i) }}{% endfor %}{% endmacro %}{{ m(x) }}",
    "{% macro m() %}{{ caller(x) }}{% endmacro %}{% call(v) m() %}{{ v|tojson }}{% endcall %}",
    "{% filter upper %}{{ x }}{% endfilter %}", "{% with v = x %}{{ v|length }}{% endwith %}",
    "{% set ns = namespace(d=0) %}{% for i in x %}{% set ns.d = ns.d + 1 %}{% endfor %}{{ ns.d }}",
]

FILTER_STEPS = ["tojson", "string", "length", "list", "sort", "unique", "first", "last", "reverse",
                "join", "pprint", "e", "trim", "int", "float", "abs", "round", "items", "dictsort",
                "wordcount", "title", "upper", "center(3)", "indent(1)", "truncate(4)",
                "batch(2)", "slice(2)", "map('string')", "select", "default(0)", "sum", "max",
                "min", "striptags", "urlencode", "count", "capitalize", "list|tojson"]


@st.composite
def expressions(draw):
    """One of the expressions above, or `x` through a chain of filters."""
    if draw(st.booleans()):
        return draw(st.sampled_from(EXPRESSIONS))
    steps = draw(st.lists(st.sampled_from(FILTER_STEPS), min_size=1, max_size=4))
    return "{{ x|" + "|".join(steps) + " }}"


PLAIN = jinjamark.Environment()
CHAT = jinjamark.chat_environment()
STRICT = jinjamark.Environment(undefined=jinjamark.StrictUndefined, extensions=["loopcontrols"])
MUTABLE_DO = jinjamark.Environment(extensions=["do", "loopcontrols"])


def only_template_errors(render, *args, **kwargs) -> None:
    """Run one render; a TemplateError is an answer, anything else escapes to pytest."""
    try:
        render(*args, **kwargs)
    except jinjamark.TemplateError:
        pass


def only_template_or_argument_errors(render, *args, **kwargs) -> None:
    """As only_template_errors; also transformers' own refusals of the arguments (a message that
    is not a dict, tools or documents of the wrong shape: its ValueError or TypeError), raised by
    ChatTemplate's checks of its arguments and nowhere else."""
    import traceback
    try:
        render(*args, **kwargs)
    except jinjamark.TemplateError:
        pass
    except (TypeError, ValueError) as error:
        where = traceback.extract_tb(error.__traceback__)[-1].filename.replace("\\", "/")
        if not where.endswith("chat/normalize.py"):
            raise


@budget(1200)
@given(source=expressions(), x=hostile)
def test_hostile_values_through_expressions_raise_only_template_errors(source, x):
    for env in (PLAIN, CHAT, STRICT):
        only_template_errors(lambda: env.from_string(source).render(x=x))


@budget(500)
@given(source=expressions(), x=hostile)
def test_hostile_values_marked_as_input_raise_only_template_errors(source, x):
    chat = jinjamark.ChatTemplate(source)
    only_template_errors(chat.render_parts, [{"role": "user"}], x=x)
    only_template_errors(chat.render, [{"role": "user"}], x=x)


@budget(300)
@given(x=hostile, y=hostile)
def test_hostile_values_mutated_in_a_mutable_environment_raise_only_template_errors(x, y):
    """Jinja2's SandboxedEnvironment lets templates change lists and dicts: that too is safe."""
    source = ("{% do x.append(y) if x is sequence and x is not string and x is not mapping %}"
              "{% do x.update({'k': y}) if x is mapping %}{{ x|tojson }}{{ x|length }}")
    only_template_errors(lambda: MUTABLE_DO.from_string(source).render(x=x, y=y))


# ---------------------------------------------------------------------------- real chat templates

SELECTED = [
    "chatml--chujiezheng-chatml", "llamacpp--meta-llama-Llama-3.1-8B-Instruct",
    "mistral--mistralai_Mistral-7B-Instruct-v0.3", "llamacpp--Qwen-Qwen2.5-7B-Instruct",
    "qwen--Qwen_Qwen3-1.7B", "gemma--axolotl-gemma3", "llamacpp--deepseek-ai-DeepSeek-V3.1",
    "phi--microsoft_phi-4", "llamacpp--openai-gpt-oss-120b",
    "hfjs--CohereLabs__c4ai-command-a-03-2025", "llamacpp--ibm-granite-granite-4.0",
    "hfjs--moonshotai__Kimi-K2-Thinking", "llamacpp--meetkai-functionary-medium-v3.2",
    "hfjs--HuggingFaceTB__SmolLM3-3B",
]
CORPUS = dict(chat_templates())
TEMPLATES = {name: jinjamark.ChatTemplate(CORPUS[name],
                                          special_tokens={"bos_token": "<s>", "eos_token": "</s>"})
             for name in SELECTED}

roles = st.one_of(st.sampled_from(["system", "user", "assistant", "tool", "developer"]), scalars)


@st.composite
def messages(draw):
    """A conversation whose fields (and sometimes the messages themselves) are hostile."""
    count = draw(st.integers(0, 6))
    out = []
    for _ in range(count):
        message = {"role": draw(roles), "content": draw(hostile)}
        if draw(st.booleans()):
            message[draw(keys)] = draw(hostile)
        if draw(st.integers(0, 4)) == 0:
            message["tool_calls"] = draw(st.one_of(hostile, st.lists(
                st.fixed_dictionaries({"type": st.just("function"), "function": st.fixed_dictionaries(
                    {"name": scalars, "arguments": hostile})}), max_size=2)))
        out.append(message)
    if draw(st.integers(0, 9)) == 0:
        return draw(hostile)  # not even a list of messages
    return out


@budget(400)
@given(name=st.sampled_from(SELECTED), conversation=messages(), tools=st.none() | hostile,
       documents=st.none() | hostile, extra=hostile, agp=st.booleans())
def test_hostile_conversations_through_chat_templates_raise_only_template_errors(
        name, conversation, tools, documents, extra, agp):
    chat = TEMPLATES[name]
    for render in (chat.render, chat.render_parts):
        only_template_or_argument_errors(render, conversation, tools=tools, documents=documents,
                             add_generation_prompt=agp, enable_thinking=extra, custom=extra)


# ---------------------------------------------------------------------------- regressions
# Findings of the fuzzers, pinned.

def _self_list() -> list:
    a: list = []
    a.append(a)
    return a


def _self_dict() -> dict:
    d: dict = {"role": "user"}
    d["content"] = d
    return d


def _nested_lists(depth: int) -> list:
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


REGRESSIONS = [_self_list(), _self_dict(), [_self_dict()], _nested_lists(500),
               [{"role": "user", "content": _nested_lists(500)}], {1: "a", None: "b", (1, 2): "c"},
               [{"role": "user", "content": "a\ud800b"}], [{"role": "user", "content": 10 ** 5000}],
               [{"role": "user", "content": math.nan}], *BIGGER_INTS,
               [{"role": "user", "content": [n, {"k": n}]} for n in BIGGER_INTS]]


def test_regressions_render_parts_of_cyclic_and_deep_conversations():
    """mark_input copied the conversation recursively: a cyclic or 500-deep message escaped as
    a RecursionError from render_parts."""
    for name, chat in TEMPLATES.items():
        for conversation in REGRESSIONS:
            for render in (chat.render, chat.render_parts):
                only_template_or_argument_errors(render, conversation, add_generation_prompt=True)


def test_regressions_expressions_over_cyclic_and_deep_values():
    for value in REGRESSIONS:
        for source in EXPRESSIONS:
            for env in (PLAIN, CHAT):
                only_template_errors(lambda: env.from_string(source).render(x=value))
