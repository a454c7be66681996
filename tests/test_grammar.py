"""The grammar is conflict-free, and no input text makes parsing or rendering fail other than
with a `TemplateError`: not deep nesting, not random text, not mangled real templates."""
from __future__ import annotations

import os
import pathlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jinjamark
import jinjamark.grammar
from conftest import chat_templates, conversations
from jinjamark.grammar.parser import Parser, Syntax, extension_grammar

EXTENSION_FILES = sorted(p.name for p in
                         (pathlib.Path(jinjamark.grammar.__file__).parent / "extensions").glob("*.lark"))


def test_core_grammar_builds_in_lark_strict_mode():
    # strict=True turns every shift/reduce conflict and colliding terminal into an error.
    Parser(strict=True)


def test_grammar_with_every_extension_builds_in_lark_strict_mode():
    assert EXTENSION_FILES, "grammar/extensions/ holds the optional tags"
    syntaxes = tuple(Syntax(name.removesuffix(".lark"), extension_grammar(name)) for name in EXTENSION_FILES)
    Parser(syntaxes, strict=True)


DEEP = 10_000
NESTED = {
    "parentheses": "{{ " + "(" * DEEP + "1" + ")" * DEEP + " }}",
    "brackets": "{{ " + "[" * DEEP + "1" + "]" * DEEP + " }}",
    "dicts": "{{ " + "{'a': " * DEEP + "1" + "}" * DEEP + " }}",
    "unary minus": "{{ " + "-" * DEEP + "1 }}",
    "not": "{{ " + "not " * DEEP + "x }}",
    "unclosed parentheses": "{{ " + "(" * DEEP + " }}",
    "if blocks": "{% if x %}" * DEEP + "y" + "{% endif %}" * DEEP,
    "for blocks": "{% for x in y %}" * DEEP + "{% endfor %}" * DEEP,
    "unclosed if blocks": "{% if x %}" * DEEP,
}
LONG_CHAINS = {
    "filters": "{{ x" + "|upper" * DEEP + " }}",
    "attributes": "{{ x" + ".a" * DEEP + " }}",
    "calls": "{{ f" + "()" * DEEP + " }}",
    "concatenation": "{{ " + " ~ ".join(["'a'"] * DEEP) + " }}",
    "power": "{{ " + " ** ".join(["1"] * DEEP) + " }}",
}


@pytest.mark.parametrize("shape", list(NESTED))
def test_ten_thousand_levels_of_nesting_are_a_syntax_error_not_a_crash(shape):
    with pytest.raises(jinjamark.TemplateSyntaxError) as caught:
        jinjamark.Environment().from_string(NESTED[shape])
    assert caught.value.lineno == 1 and caught.value.column >= 1


@pytest.mark.parametrize("shape", list(LONG_CHAINS))
def test_ten_thousand_long_chains_render_or_raise_only_template_errors(shape):
    # Flat in the text but deep in the tree: refusing them is allowed, crashing is not.
    try:
        jinjamark.Environment().from_string(LONG_CHAINS[shape]).render(x="x", f=lambda: None)
    except jinjamark.TemplateError:
        pass


# ---------------------------------------------------------------------------- fuzzing

FRAGMENTS = ["{{", "}}", "{%", "%}", "{#", "#}", "{{-", "-}}", "{%-", "-%}", "{%+", "+%}", "{#-", "-#}",
             " if ", " endif ", " for ", " in ", " endfor ", " set ", " = ", " macro ", " endmacro ",
             " call ", " endcall ", " raw ", " endraw ", " filter ", " endfilter ", " with ",
             " endwith ", " else ", " elif ", " break ", " continue ", " do ", " generation ",
             " endgeneration ", " recursive ", " loop ", " is ", " not ", " and ", " or ", "|", ".",
             ",", ":", "(", ")", "[", "]", "{", "}", "'", '"', "\\", "x", "1", "1.5e3", "_", "-", "+",
             "*", "**", "/", "//", "%", "~", "==", "<", "\n", " ", "\t", "\r\n", "é", "\x00", "😀"]

random_text = st.one_of(
    st.text(max_size=200),
    st.lists(st.sampled_from(FRAGMENTS), max_size=40).map("".join),
    st.binary(max_size=200).map(lambda b: b.decode("latin-1")),
)

SMALL_CONTEXT = {"x": "x", "y": [1, "a", None], "messages": [{"role": "user", "content": "hi"}],
                 "d": {"a": 1}, "n": 3}
ENVIRONMENTS = [jinjamark.Environment(), jinjamark.chat_environment(),
                jinjamark.Environment(trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
                                      extensions=["loopcontrols", "do", "generation"])]


def only_template_errors(source: str, context: dict) -> None:
    for env in ENVIRONMENTS:
        try:
            env.from_string(source).render(**context)
        except jinjamark.TemplateError:
            pass


@settings(max_examples=600, deadline=None, suppress_health_check=list(HealthCheck))
@given(source=random_text)
def test_random_text_only_ever_raises_template_errors(source):
    only_template_errors(source, SMALL_CONTEXT)


CORPUS = chat_templates()
FIXTURES = conversations()


@st.composite
def mutated_templates(draw):
    _, source = draw(st.sampled_from(CORPUS))
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(source)))
        j = draw(st.integers(i, min(len(source), i + 40)))
        action = draw(st.sampled_from(["delete", "insert", "duplicate"]))
        if action == "delete":
            source = source[:i] + source[j:]
        elif action == "insert":
            source = source[:i] + draw(st.sampled_from(FRAGMENTS)) + source[i:]
        else:
            source = source[:j] + source[i:j] + source[i:]
    return source


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(source=mutated_templates(), fixture=st.sampled_from(FIXTURES), agp=st.booleans())
def test_mutated_chat_templates_only_ever_raise_template_errors(source, fixture, agp):
    name, data = fixture
    context = {"bos_token": "<s>", "eos_token": "</s>", **(data.get("kwargs") or {}),
               "messages": data["messages"], "tools": data.get("tools"),
               "documents": data.get("documents"), "add_generation_prompt": agp}
    only_template_errors(source, context)


# ---------------------------------------------------------------------------- colons
# Jinja2 skips one colon before the end of a tag that opens a body ("for Python
# compatibility"); its documentation writes line statements that way.

COLON_CASES = [
    "{% if x: %}y{% elif z: %}e{% else: %}n{% endif %}",
    "{% for i in xs: %}{{ i }}{% else: %}none{% endfor %}",
    "{% for i in xs if i recursive: %}{{ i }}{% endfor %}",
    "{% set a: %}q{% endset %}{{ a }}",
    "{% macro m(a): %}{{ a }}{% endmacro %}{{ m(1) }}",
    "{% macro m(): %}{{ caller() }}{% endmacro %}{% call m(): %}c{% endcall %}",
    "{% filter upper: %}abc{% endfilter %}",
    "{% if x: -%}  y{% endif %}",
    "{% if {'a': 1}: %}y{% endif %}",
    # refused by both: a colon where no body opens, or two
    "{% with a=1: %}{{ a }}{% endwith %}",
    "{% if x %}{% endif: %}",
    "{% if x:: %}{% endif %}",
    "{% set a = 1: %}",
]


@pytest.mark.parametrize("source", COLON_CASES)
def test_a_colon_before_a_body_is_skipped_as_jinja2_does(source):
    import jinja2
    context = {"x": 1, "xs": [1, 2], "z": 0}
    try:
        want = jinja2.Environment().from_string(source).render(context)
    except jinja2.TemplateSyntaxError:
        with pytest.raises(jinjamark.TemplateSyntaxError):
            jinjamark.Environment().from_string(source)
        return
    assert jinjamark.Environment().from_string(source).render(context) == want


def test_line_statements_may_end_with_a_colon_as_jinja2_documents_them():
    import jinja2
    source = "# for item in seq:\n  <{{ item }}>\n# endfor\n"
    want = jinja2.Environment(line_statement_prefix="#").from_string(source).render(seq=[1, 2])
    got = jinjamark.Environment(line_statement_prefix="#").from_string(source).render(seq=[1, 2])
    assert got == want == "  <1>\n  <2>\n"


# ---------------------------------------------------------------------------- names

@pytest.mark.parametrize("source", [
    "{{ éab }}", "{% set 名前 = 1 %}{{ 名前 }}", "{{ d.é }}",
    "{% macro ü(ä) %}{{ ä }}{% endmacro %}{{ ü(2) }}",
    "{{ x² }}",                       # word characters, but not an identifier: refused
    "{% for w ins %}{% endfor %}",    # `in` at the front of a longer name is that name
    "x\n{% for w inside %}{% endfor %}",
    "{% for w in(s) %}{{ w }}{% endfor %}", "{% for w in\ns %}{{ w }}{% endfor %}",
])
def test_names_are_python_identifiers_as_in_jinja2(source):
    import jinja2
    context = {"éab": 3, "d": {"é": 4}, "s": "ab", "ins": []}
    try:
        want = jinja2.Environment().from_string(source).render(context)
    except jinja2.TemplateSyntaxError as error:
        with pytest.raises(jinjamark.TemplateSyntaxError) as ours:
            jinjamark.Environment().from_string(source)
        assert ours.value.message == error.message and ours.value.lineno == error.lineno
        return
    assert jinjamark.Environment().from_string(source).render(context) == want


# ---------------------------------------------------------------------------- parser tables on disk

def test_parser_tables_are_kept_in_the_cache_folder_and_loaded_by_the_next_process(tmp_path):
    import subprocess
    import sys
    env = {**os.environ, "JINJAMARK_CACHE_DIR": str(tmp_path / "tables")}
    # a grammar whose tables are not shipped in the package (grammar/tables.py)
    script = ("import jinjamark; print(jinjamark.Environment(extensions=['do'])"
              ".from_string('{{ x }}!').render(x=1))")
    for _ in range(2):  # the first process builds and writes, the second loads
        done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True)
        assert done.returncode == 0 and done.stdout == "1!\n", done.stderr
    assert len(list((tmp_path / "tables").glob("lark-*.cache"))) == 1


def test_a_damaged_table_file_is_rebuilt(tmp_path):
    import subprocess
    import sys
    env = {**os.environ, "JINJAMARK_CACHE_DIR": str(tmp_path)}
    script = ("import jinjamark; print(jinjamark.Environment(extensions=['do'])"
              ".from_string('{% if x %}y{% endif %}').render(x=1))")
    subprocess.run([sys.executable, "-c", script], env=env, check=True, capture_output=True)
    (table,) = tmp_path.glob("lark-*.cache")
    table.write_bytes(table.read_bytes()[:1000])  # a write cut short
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout == "y\n", done.stderr


def test_where_the_tables_go(tmp_path, monkeypatch):
    from jinjamark.grammar.parser import cache_folder
    monkeypatch.setenv("JINJAMARK_CACHE_DIR", "")
    assert cache_folder() is None                              # '' keeps nothing
    monkeypatch.delenv("JINJAMARK_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_folder() == str(tmp_path / "xdg" / "jinjamark") and (tmp_path / "xdg" / "jinjamark").is_dir()
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_folder() == str(tmp_path / "home" / ".cache" / "jinjamark")
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    monkeypatch.setenv("JINJAMARK_CACHE_DIR", str(blocked / "sub"))
    assert cache_folder() is None                              # cannot be made: nothing kept


# ---------------------------------------------------------------------------- assigning to `loop`

@pytest.mark.parametrize("source", [
    "{% for x in [1] %}\n\n{% set loop = 5 %}{{ loop }}{% endfor %}",
    "a\n{% for x in [1] %}\n{% for y in [1] %}\n  {% for loop in [2] %}{% endfor %}{% endfor %}{% endfor %}",
    "{% for x in [1] %}{% macro m() %}{% set loop = 1 %}{% endmacro %}{% endfor %}",
    "{% for x, loop in [(1, 2)] %}{% endfor %}",
    "{% for x in [1] %}\n{% set (a, loop) = (1, 2) %}{% endfor %}",
])
def test_assigning_to_loop_inside_a_for_loop_is_refused_where_jinja2_refuses_it(source):
    import jinja2
    with pytest.raises(jinja2.TemplateAssertionError) as theirs:
        jinja2.Environment().from_string(source)
    with pytest.raises(jinjamark.TemplateAssertionError) as ours:
        jinjamark.Environment().from_string(source)
    assert (ours.value.message, ours.value.lineno) == (theirs.value.message, theirs.value.lineno)
