"""The public API: Template and Environment, registries, Undefined kinds, the chat profile, the CLI."""
from __future__ import annotations

import json
import subprocess
import sys
from datetime import datetime

import jinja2
import pytest
from jinja2.sandbox import ImmutableSandboxedEnvironment

import jinjamark
import oracle
from conftest import CONVERSATIONS, TEMPLATES, outcome, vectors


def same_outcome(ours, theirs) -> None:
    """Both render the same text, or both raise (ours a TemplateError)."""
    got, want = outcome(ours), outcome(theirs)
    if want.raised:
        assert isinstance(got.error, jinjamark.TemplateError), f"Jinja2: {want.describe()}; ours: {got.describe()}"
    else:
        assert not got.raised, got.describe()
        assert got.value == want.value


# ---------------------------------------------------------------------------- Template, render

def test_template_takes_environment_options():
    source = "  {% if x %}\n  a\n  {% endif %}\n"
    opts = dict(trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    assert jinjamark.Template(source, **opts).render(x=1) == jinja2.Template(source, **opts).render(x=1) == "  a\n"
    assert jinjamark.Template(source).render(x=1) == jinja2.Template(source).render(x=1)


def test_template_equals_environment_from_string():
    source = "{% for i in range(3) %}{{ i }}{% endfor %}"
    assert jinjamark.Template(source).render() == jinjamark.Environment().from_string(source).render() == "012"


def test_render_takes_a_mapping_or_keywords():
    t = jinjamark.Environment().from_string("{{ a }}-{{ b }}")
    assert t.render({"a": 1, "b": 2}) == "1-2"
    assert t.render(a=1, b=2) == "1-2"
    assert t.render({"a": 1, "b": 2}, b=3) == "1-3"


def test_render_parts_takes_a_mapping_or_keywords():
    t = jinjamark.Environment().from_string("{{ a }}")
    assert [p.text for p in t.render_parts({"a": "x"})] == [p.text for p in t.render_parts(a="x")] == ["x"]


def test_keep_trailing_newline_matches_jinja2():
    for keep in (False, True):
        for source in ["a\n", "a\n\n", "a", "a\r\n", "{{ x }}\n"]:
            ours = jinjamark.Environment(keep_trailing_newline=keep).from_string(source).render(x=1)
            theirs = jinja2.Environment(keep_trailing_newline=keep).from_string(source).render(x=1)
            assert ours == theirs, (keep, source)


def test_name_is_carried_by_the_template():
    with pytest.raises(jinjamark.TemplateError) as caught:
        jinjamark.Environment().from_string("{{ x.y }}", name="greeting.jinja").render()
    assert caught.value.name == "greeting.jinja"


# ---------------------------------------------------------------------------- registries

def test_registered_filter_is_called_with_value_and_arguments():
    env = jinjamark.Environment()
    env.filters["wrap"] = lambda value, left="[", right="]": f"{left}{value}{right}"
    assert env.from_string("{{ 'a'|wrap }}{{ 'b'|wrap('<', right='>') }}").render() == "[a]<b>"


def test_registered_test_is_used_by_is():
    env = jinjamark.Environment()
    env.tests["long"] = lambda value, n=3: len(value) > n
    assert env.from_string("{{ 'abcd' is long }} {{ 'ab' is long }} {{ 'ab' is long 1 }}").render() == \
        "True False True"


def test_registered_global_is_visible_and_context_overrides_it():
    env = jinjamark.Environment()
    env.globals["site"] = "jm"
    env.globals["shout"] = lambda s: s.upper() + "!"
    t = env.from_string("{{ site }} {{ shout('hi') }}")
    assert t.render() == "jm HI!"
    assert t.render(site="ctx") == "ctx HI!"


def test_registries_belong_to_their_environment():
    a, b = jinjamark.Environment(), jinjamark.Environment()
    a.filters["twice"] = lambda v: v * 2
    assert a.from_string("{{ 2|twice }}").render() == "4"
    assert "twice" not in b.filters


HOST_CALLABLES = {
    "NUMBERS": {"add": lambda x, y: x + y},
    "FUNCTIONS": {"func": lambda *args: len(args)},
    "OBJ_METHODS": {"obj": {"x": lambda *args: "".join(args), "z": {"A": lambda *args: "_".join(args)}}},
    "IS_OPERATOR_4": {"func": lambda: None},
}
CALLABLE_VECTORS = [(vid, v) for vid, v in vectors() if v.get("callables") and v["name"] in HOST_CALLABLES]


@pytest.mark.parametrize("vid,v", CALLABLE_VECTORS, ids=[vid for vid, _ in CALLABLE_VECTORS])
def test_host_callables_in_the_context_are_called_as_jinja2_calls_them(vid, v):
    # The vectors set aside for their JavaScript callables, with Python ones in their place.
    assert len(CALLABLE_VECTORS) == len(HOST_CALLABLES)
    context = {k: val for k, val in v["context"].items() if not isinstance(val, dict) or "__callable__" not in val}
    context.update(HOST_CALLABLES[v["name"]])
    same_outcome(lambda: jinjamark.Environment().from_string(v["template"]).render(context),
                 lambda: ImmutableSandboxedEnvironment().from_string(v["template"]).render(context))


# ---------------------------------------------------------------------------- Undefined kinds

UNDEFINED_SNIPPETS = [
    "{{ missing }}", "{{ missing is defined }}", "{% if missing %}y{% else %}n{% endif %}",
    "{{ missing|default('x') }}", "{{ missing.attr }}", "{{ missing.a.b }}", "{{ missing['k'] }}",
    "{% for x in missing %}{{ x }}{% endfor %}", "{{ missing ~ 'a' }}", "{{ missing + 1 }}",
    "{{ missing|length }}", "{{ missing|string }}", "{{ d.nokey }}", "{{ d.nokey.deeper }}",
    "{{ missing == none }}", "{{ missing is none }}", "{{ not missing }}", "{{ missing|list }}",
    "{{ missing() }}", "{{ missing|upper }}", "{{ missing and 1 }}", "{{ [missing] }}",
    "{{ missing|join }}", "{{ missing is undefined }}", "{{ missing|d(1) }}", "{{ missing.a|default(2) }}",
    "{{ missing in [1] }}", "{{ missing or 'x' }}", "{{ missing|lower|default('z') }}",
    "{{ d.nokey|default('dflt') }}", "{{ xs[5] }}", "{{ xs[5].a }}",
]
UNDEFINED_KINDS = [(jinjamark.Undefined, jinja2.Undefined), (jinjamark.StrictUndefined, jinja2.StrictUndefined),
                   (jinjamark.ChainableUndefined, jinja2.ChainableUndefined)]


@pytest.mark.parametrize("ours,theirs", UNDEFINED_KINDS, ids=lambda k: k.__name__)
@pytest.mark.parametrize("source", UNDEFINED_SNIPPETS)
def test_undefined_kind_behaves_as_jinja2s(source, ours, theirs):
    context = {"d": {}, "xs": [1]}
    same_outcome(lambda: jinjamark.Environment(undefined=ours).from_string(source).render(context),
                 lambda: ImmutableSandboxedEnvironment(undefined=theirs).from_string(source).render(context))


def test_strict_undefined_raises_undefined_error_naming_the_variable():
    with pytest.raises(jinjamark.UndefinedError) as caught:
        jinjamark.Environment(undefined=jinjamark.StrictUndefined).from_string("{{ who }}").render()
    assert caught.value.message == "'who' is undefined"


# ---------------------------------------------------------------------------- the profile

LOOP = "{% for x in [1, 2, 3, 4] %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 4 %}{% break %}{% endif %}{{ x }}{% endfor %}"


def test_chat_environment_has_loopcontrols_and_generation_but_not_do():
    env = jinjamark.chat_environment()
    assert env.from_string(LOOP).render() == "13"
    assert env.from_string("a{% generation %}b{{ 1 }}{% endgeneration %}c").render() == "ab1c"
    with pytest.raises(jinjamark.TemplateSyntaxError):
        env.from_string("{% do [1].count(1) %}")


def test_chat_environment_defaults_to_trim_and_lstrip_blocks():
    source = "x\n  {% if true %}\n  y\n  {% endif %}\nz"
    assert jinjamark.chat_environment().from_string(source).render() == oracle.environment().from_string(source).render()
    plain = jinjamark.chat_environment(trim_blocks=False, lstrip_blocks=False).from_string(source).render()
    assert plain == jinja2.Environment().from_string(source).render()


@pytest.mark.parametrize("tag", ["{% break %}", "{% continue %}", "{% do 1 %}", "{% generation %}{% endgeneration %}"])
def test_optional_tags_are_unknown_in_a_plain_environment(tag):
    with pytest.raises(jinjamark.TemplateSyntaxError) as caught:
        jinjamark.Environment().from_string("{% for x in [1] %}" + tag + "{% endfor %}")
    assert caught.value.message.startswith("Encountered unknown tag")


@pytest.mark.parametrize("names", [["loopcontrols", "do", "generation"], ["jinja2.ext.loopcontrols", "jinja2.ext.do", "generation"]])
def test_optional_tags_are_enabled_by_name(names):
    env = jinjamark.Environment(extensions=names)
    assert env.from_string(LOOP).render() == "13"
    assert env.from_string("{% do [1, 2]|sum %}{% generation %}g{% endgeneration %}").render() == "g"


def test_chat_tojson_is_json_dumps_with_transformers_arguments():
    env = jinjamark.chat_environment()
    data = {"b": "é", "a": [1, None, True, 2.5]}
    assert env.from_string("{{ data|tojson }}").render(data=data) == json.dumps(data, ensure_ascii=False)
    assert env.from_string("{{ data|tojson(indent=2) }}").render(data=data) == json.dumps(data, ensure_ascii=False, indent=2)
    source = "{{ data|tojson }}{{ data|tojson(indent=2, sort_keys=true) }}"
    assert env.from_string(source).render(data=data) == oracle.environment().from_string(source).render(data=data)


@pytest.mark.parametrize("options", [
    "", "indent=2", "sort_keys=true", "ensure_ascii=true", "separators=(',', ':')",
    "separators=[',', ':']", "indent='--', sort_keys=true", "indent=2, separators=(',', ': ')",
    "nonsense=1",
])
def test_chat_tojson_of_each_option_set_is_transformers(options):
    # an encoder is kept per set of options (values/jsonmarks._encoded): each set writes its own
    # text, render after render, and what json.dumps refuses is refused
    env, theirs = jinjamark.chat_environment(), oracle.environment()
    data = {"b": "é", "a": [1, None, True, 2.5, {"k": "<v>"}]}
    source = f"{{{{ data|tojson({options}) }}}}|{{{{ data|tojson }}}}|{{{{ 'x'|tojson({options}) }}}}"
    try:
        want = theirs.from_string(source).render(data=data)
    except TypeError as error:
        with pytest.raises(jinjamark.TemplateError, match="nonsense"):
            env.from_string(source).render(data=data)
        assert "nonsense" in str(error)
        return
    for _ in range(2):
        assert env.from_string(source).render(data=data) == want


def test_plain_environment_tojson_is_jinja2s():
    source = "{{ data|tojson }}"
    data = {"b": "<é>", "a": "'&'"}
    assert jinjamark.Environment().from_string(source).render(data=data) == \
        jinja2.Environment().from_string(source).render(data=data)


# ---------------------------------------------------------------------------- ChatTemplate

def test_chat_template_context_order_is_transformers():
    source = "{{ bos_token }}|{{ eos_token }}|{{ messages|length }}|{{ tools }}|{{ documents }}|{{ add_generation_prompt }}|{{ extra }}"
    ct = jinjamark.ChatTemplate(source, special_tokens=dict(oracle.SPECIAL_TOKENS))
    fixture = {"messages": [{"role": "user", "content": "x"}]}
    for kwargs in ({}, {"extra": 1}, {"bos_token": "<B>"}):
        assert ct.render(fixture["messages"], add_generation_prompt=True, **kwargs) == \
            oracle.render_chat(source, fixture, True, **kwargs)


def test_chat_template_now_pins_strftime_now():
    source = "{{ strftime_now('%d %b %Y %H:%M') }}"
    assert jinjamark.ChatTemplate(source, now=lambda: oracle.FIXED_NOW).render([{"role": "user"}]) == "14 Mar 2026 15:09"


def test_chat_template_without_now_uses_the_clock():
    got = jinjamark.ChatTemplate("{{ strftime_now('%Y-%m-%d') }}").render([{"role": "user"}])
    assert got in {datetime.now().strftime("%Y-%m-%d"), datetime.fromordinal(datetime.now().toordinal() - 1).strftime("%Y-%m-%d")}


def test_raise_exception_is_a_chat_global():
    with pytest.raises(jinjamark.TemplateError) as caught:
        jinjamark.ChatTemplate("{{ raise_exception('no system role') }}").render([{"role": "user"}])
    assert caught.value.message == "no system role"


# ---------------------------------------------------------------------------- command line

def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "jinjamark", *args], capture_output=True, text=True,
                          timeout=60)


def test_cli_help_runs():
    done = run_cli("--help")
    assert done.returncode == 0, done.stderr
    assert "render" in done.stdout


def test_cli_renders_a_chat_template_as_transformers():
    template = TEMPLATES / "chatml--teknium_OpenHermes-2.5-Mistral-7B.jinja"
    conversation = CONVERSATIONS / "03-multi-turn.json"
    done = run_cli("render", str(template), str(conversation), "--add-generation-prompt")
    assert done.returncode == 0, done.stderr
    fixture = json.loads(conversation.read_text(encoding="utf-8"))
    expected = oracle.render_chat(template.read_text(encoding="utf-8"), fixture, True)
    assert done.stdout.rstrip("\n") == expected.rstrip("\n")


def test_cli_error_prints_the_caret_message_and_exits_1(tmp_path):
    bad = tmp_path / "bad.jinja"
    bad.write_text("hello\n{% foo %}\n", encoding="utf-8")
    conversation = CONVERSATIONS / "01-single-user.json"
    done = run_cli("render", str(bad), str(conversation))
    assert done.returncode == 1
    assert "Encountered unknown tag 'foo'." in done.stdout + done.stderr
    assert "^" in done.stdout + done.stderr
