"""Starting fast without changing a result: the one-pass parse, the AST records, the parser tables.

- The one-pass parse (grammar/onepass.py) must build exactly the AST the two-pass parse (Lark's
  tree, then the transformer) builds, spans included, and leave every failure to the two-pass
  parse: compared over the corpus, in several environments (extensions, delimiters, whitespace
  options), and over generated templates, valid and not.
- The AST classes are records (grammar/records.py) that behave as frozen dataclasses to the
  outside: `dataclasses` functions, an extension's dataclass subclass, equality, hashing, repr,
  pickling.
"""
from __future__ import annotations

import dataclasses
import os
import pickle
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jinjamark
from conftest import chat_templates, run_python
from jinjamark.grammar import ast
from jinjamark.grammar.parser import _without_trailing_newline


def two_pass(env, source: str):
    """The AST as Lark's two passes build it (a tree, then the transformer), or the error."""
    from jinjamark.grammar.larktables import lark_transformer
    parser = env._parser
    text = source if env.options.keep_trailing_newline else _without_trailing_newline(source)
    try:
        builder = lark_transformer(parser.builder)(text, env.options, parser._custom)
        return builder.transform(parser.lark.parse(text))
    except Exception as e:  # noqa: BLE001 - compared by type with the one-pass outcome
        return e


def one_pass(env, source: str, max_depth: int = 200):
    """The one-pass AST, or None where it leaves the template to the two-pass parse."""
    parser = env._parser
    assert parser._one_pass is not None, "the one-pass parse is not in use for this grammar"
    text = source if env.options.keep_trailing_newline else _without_trailing_newline(source)
    return parser._one_pass.parse(text, parser.builder(text, env.options, parser._custom), max_depth)


ENVIRONMENTS = {
    "chat": lambda: jinjamark.chat_environment(),
    "plain": lambda: jinjamark.Environment(),
    "do+loopcontrols": lambda: jinjamark.Environment(extensions=["do", "loopcontrols"]),
    "keep newline, no trim": lambda: jinjamark.Environment(keep_trailing_newline=True),
    "custom delimiters": lambda: jinjamark.Environment(
        block_start_string="<%", block_end_string="%>", variable_start_string="<<",
        variable_end_string=">>", comment_start_string="<#", comment_end_string="#>",
        line_statement_prefix="%%", line_comment_prefix="##"),
}


@pytest.mark.parametrize("kind", ENVIRONMENTS)
def test_one_pass_builds_the_two_pass_ast_for_every_corpus_template(kind):
    env = ENVIRONMENTS[kind]()
    compared = 0
    for name, source in chat_templates():
        expected = two_pass(env, source)
        got = one_pass(env, source)
        if isinstance(expected, Exception):
            assert got is None, f"{name}: one pass built what two passes refuse ({expected!r})"
            continue
        assert got == expected, name
        compared += 1
    assert compared > (0 if kind == "custom delimiters" else 150)  # most of them parse


PIECES = [
    "text ", "\n", "  ", "{{ x }}", "{{- x -}}", "{{ x.y[0]|upper }}", "{{ (a + b) * c }}",
    "{{ a if b else c }}", "{{ f(1, k=2, *r, **s) }}", "{{ [1, 2,] }}", "{{ {'a': (1,)} }}",
    "{{ x is not defined }}", "{{ not a and b or c }}", "{{ a ~ b ~ c }}", "{{ x[1:2:3] }}",
    "{{ 'a' 'b' }}", "{{ -x ** 2 }}", "{{ a < b <= c in d }}", "{{ ns.x }}", "{{ x|attr('a')() }}",
    "{% if a %}", "{% elif b %}", "{% else %}", "{% endif %}", "{% for a, b in c if d recursive %}",
    "{% endfor %}", "{% set x = 1 %}", "{% set x %}", "{% endset %}", "{% macro m(a, b=1) %}",
    "{% endmacro %}", "{% call(x) m(1) %}", "{% endcall %}", "{% filter upper %}",
    "{% endfilter %}", "{% with a = 1 %}", "{% endwith %}", "{% raw %}{{ x }}{% endraw %}",
    "{# comment #}", "{%- if a -%}", "{% break %}", "{% continue %}", "{% do x.append(1) %}",
    "{% generation %}", "{% endgeneration %}", "{% include 'a' ignore missing %}",
    "{% from 'a' import b as c %}", "{% block b scoped %}", "{% endblock %}", "{{", "}}", "{%",
    "%}", "(", ")", "[", "]", "x", "'", "1.5e3", "é", "{% set loop = 1 %}", "{% if %}",
]


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.sampled_from(PIECES), max_size=12))
def test_one_pass_matches_two_passes_on_generated_templates(pieces):
    env = _chat()
    source = "".join(pieces)
    expected = two_pass(env, source)
    got = one_pass(env, source)
    if isinstance(expected, Exception):
        assert got is None
    else:
        assert got == expected


@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.sampled_from(PIECES), max_size=12))
def test_a_template_parses_to_the_same_ast_or_error_as_before(pieces):
    """The parser (the one-pass AST, or the two-pass parse's error) succeeds where the two-pass
    parse alone does, with its AST, and fails where it fails."""
    env = _chat()
    source = "".join(pieces)
    expected = two_pass(env, source)
    try:
        got = env._parser.parse(source, None, env.options)
    except jinjamark.TemplateError:
        assert isinstance(expected, Exception)
        return
    assert got == expected


_ENV = []


def _chat():
    if not _ENV:
        _ENV.append(jinjamark.chat_environment())
    return _ENV[0]


def test_a_template_nested_too_deep_is_refused_at_the_same_place():
    env = jinjamark.Environment()
    source = "{{ " + "(" * 150 + "x" + ")" * 150 + " }}\n{{ " + "[" * 300 + "]" * 300 + " }}"
    assert one_pass(env, source) is None
    with pytest.raises(jinjamark.TemplateError) as raised:
        env.from_string(source)
    assert "nests deeper than" in str(raised.value) and raised.value.lineno == 2
    shallow = "{{ " + "[" * 40 + "]" * 40 + " }}"
    assert one_pass(env, shallow) == two_pass(env, shallow)


# ---------------------------------------------------------------------------- records

def test_ast_nodes_are_dataclasses_to_the_outside():
    node = ast.Test(ast.Span(1, 2, 3, 4), ast.Name(ast.NO_SPAN, "x"), "odd", ast.NO_ARGUMENTS)
    assert dataclasses.is_dataclass(node)
    assert [f.name for f in dataclasses.fields(node)] == ["span", "value", "name", "arguments", "negated"]
    assert node.negated is False  # a default
    changed = dataclasses.replace(node, name="even")
    assert changed.name == "even" and changed.value is node.value and node.name == "odd"
    assert ast.Test.__match_args__ == ("span", "value", "name", "arguments", "negated")


def test_ast_nodes_compare_hash_and_print_as_frozen_dataclasses_do():
    @dataclasses.dataclass(frozen=True)
    class Test:  # the real thing, for its repr
        span: ast.Span
        value: ast.Name
        name: str
        arguments: ast.Arguments
        negated: bool = False

    a = ast.Test(ast.Span(1, 2, 3, 4), ast.Name(ast.NO_SPAN, "x"), "odd", ast.NO_ARGUMENTS)
    b = ast.Test(ast.Span(1, 2, 3, 4), ast.Name(ast.NO_SPAN, "x"), "odd", ast.NO_ARGUMENTS)
    assert a == b and hash(a) == hash(b) and a != dataclasses.replace(b, span=ast.NO_SPAN)
    assert a != ast.Name(ast.NO_SPAN, "x") and (a == 1) is False
    real = Test(a.span, a.value, a.name, a.arguments)
    shown = repr(real)
    assert repr(a) == "Test" + shown[shown.index("("):]
    assert repr(a).startswith("Test(span=Span(line=1, column=2, start=3, end=4), value=Name(")


def test_ast_nodes_have_slots_and_survive_pickle_and_deepcopy():
    import copy
    node = jinjamark.Environment().parse("{% for x in y %}{{ x.a|upper }}{% endfor %}")
    assert not hasattr(node, "__dict__") and not hasattr(node.body[0], "__dict__")
    assert pickle.loads(pickle.dumps(node)) == node
    assert copy.deepcopy(node) == node


def test_extension_syntax_and_delimiters_are_records_that_keep_their_dataclass_behaviour():
    """Extension, Syntax and Delimiters are records (cheaper to define than dataclasses): a new
    dict per default factory, __post_init__'s checks, cached properties, the field tables,
    equality, hashing, replace and pickling as before."""
    from jinjamark.ext.api import Extension
    from jinjamark.grammar.delimiters import DEFAULT, Delimiters
    from jinjamark.grammar.parser import Syntax
    one, two = Extension(name="x"), Extension(name="x")
    assert one == two and one.filters == {} and one.filters is not two.filters
    assert [f.name for f in dataclasses.fields(Extension)][:3] == ["name", "grammar", "rules"]
    assert dataclasses.replace(one, grammar="").name == "x" and one.syntax is None
    assert Syntax("s", "g").rules == {} and Syntax("s", "g").rules is not Syntax("s", "g").rules
    assert Delimiters() == DEFAULT and hash(Delimiters()) == hash(DEFAULT) and DEFAULT.is_default
    with pytest.raises(ValueError, match="must be different"):
        Delimiters(block_start_string="{{")
    with pytest.raises(ValueError, match="must be different"):
        dataclasses.replace(DEFAULT, comment_start_string="{%")
    angle = Delimiters(block_start_string="<%", block_end_string="%>")
    assert angle.openers == Delimiters(block_start_string="<%", block_end_string="%>").openers
    assert pickle.loads(pickle.dumps(angle)) == angle and not angle.is_default
    assert repr(DEFAULT).startswith("Delimiters(block_start_string='{%', ")


def test_an_extension_node_may_be_a_frozen_slotted_dataclass_of_its_own():
    @dataclasses.dataclass(frozen=True, slots=True)
    class Shout(ast.Stmt):
        body: tuple

    node = Shout(ast.Span(1, 1, 0, 5), ())
    assert [f.name for f in dataclasses.fields(node)] == ["span", "body"]
    assert node == Shout(ast.Span(1, 1, 0, 5), ()) and hash(node) == hash(Shout(ast.Span(1, 1, 0, 5), ()))
    with pytest.raises(dataclasses.FrozenInstanceError):
        node.body = (1,)  # type: ignore[misc]
    assert list(ast.children(node)) == [] and isinstance(node, ast.Node)


# ---------------------------------------------------------------------------- shipped tables

def test_a_compiled_template_shares_what_is_equal_and_keeps_no_ids_it_cannot_use():
    """What a compiled template keeps (benchmarks/memory.py measures it): one object per distinct
    string literal, the one empty argument list for `f()`, no guarded ids where nothing extends."""
    from jinjamark.evaluation.printer import GUARDED
    env = jinjamark.chat_environment()
    template = env.from_string("{% for m in messages %}{% if m['role'] == 'user' %}{{ m['role'] }}"
                               "{{ f() }}{% endif %}{% endfor %}")
    literals = [n.value for n in ast.walk(template.tree) if type(n) is ast.Const]
    assert literals == ["role", "user", "role"] and literals[0] is literals[2]
    # name characters only: interned, as CPython's compiler does
    assert literals[1] is sys.intern("".join(["us", "er"]))
    spaced = env.from_string("{{ 'a b' ~ 'a b' }}").tree.body[0].expr.items
    assert spaced[0].value is spaced[1].value and spaced[0].value is not sys.intern("a b")
    call = next(n for n in ast.walk(template.tree) if type(n) is ast.Call)
    assert call.arguments is ast.NO_ARGUMENTS
    assert template.render(messages=[{"role": "user"}], f=lambda: "!") == "user!"
    assert template.memo[GUARDED] == frozenset()
    env.loader = jinjamark.DictLoader({"base": "[{% block b %}{% endblock %}]"})
    child = env.from_string("{% extends 'base' %}dropped{% block b %}kept{% endblock %}")
    assert len(child.memo[GUARDED]) == 1 and child.render() == "[kept]"


def test_the_shipped_tables_are_those_of_the_current_default_grammars():
    from jinjamark.grammar import tables
    from jinjamark.grammar.larktables import plain_tables
    for env in (jinjamark.Environment(), jinjamark.chat_environment()):
        parser = env._parser
        path = tables.path_for(parser.grammar, parser.lark_options)
        assert os.path.exists(path), ("the grammar changed: regenerate the shipped parser tables "
                                      "with `python tools/build_tables.py`")
        shipped = tables.load_plain(parser.grammar, parser.lark_options)
        assert shipped is not None, "regenerate the shipped tables: `python tools/build_tables.py`"
        # the plain tables as read from the Lark parser of the grammar now: the same
        assert shipped == plain_tables(parser.lark, frozenset(parser.lark_options["lexer_callbacks"]))


def test_the_lexers_large_patterns_are_shipped_compiled_and_equal_to_what_re_compiles():
    """The stored engine code (grammar/regexcode.py) gives patterns equal to re.compile's (text,
    flags, code), for the engine that made the shipped tables; the lexer's scanners use it."""
    import marshal
    import re

    from jinjamark.grammar import regexcode, tables
    from jinjamark.grammar.scanning import group_patterns
    for env in (jinjamark.Environment(), jinjamark.chat_environment()):
        parser = env._parser
        key = tables.plain_key(parser.grammar, parser.lark_options)
        with open(tables.plain_path(key), "rb") as f:
            saved = marshal.load(f)
        patterns = group_patterns(parser.tables)
        assert sorted(saved["regex"]["code"]) == sorted(patterns)
        made = saved["regex"]["engine"]
        assert made is not None  # made by CPython (regenerating on another Python moves it)
        if made == regexcode.engine():  # the running engine made them: they are used
            for pattern in patterns:
                stored = saved["regex"]["code"][pattern]
                assert regexcode._made(pattern, stored) == re.compile(pattern)
            group = parser._one_pass.grouped.by_state[parser.tables["start"]][0]
            assert group.built().alternatives == (re.compile(group_patterns(parser.tables)[0]),)


def test_stored_regex_code_the_engine_refuses_falls_back_to_re_compile():
    import re

    from jinjamark.grammar import regexcode
    pattern = "(?P<A>a+)|(?P<B>b)"
    regexcode.STORED[pattern] = (0, (1, 2, 3), 1, {"A": 1, "B": 2}, (None, "A", "B"))
    assert regexcode.compiled(pattern) == re.compile(pattern)
    assert pattern not in regexcode.STORED
    assert regexcode.remember({"engine": ("other",), "code": {pattern: ()}}) is None
    assert pattern not in regexcode.STORED  # another engine's code is not kept
    assert regexcode.code_of(pattern) is not None or regexcode.engine() is None


def test_a_grammar_of_its_own_is_built_not_loaded_from_the_shipped_tables():
    from jinjamark.grammar import tables
    parser = jinjamark.Environment(extensions=["do"])._parser
    assert not os.path.exists(tables.path_for(parser.grammar, parser.lark_options))
    other = jinjamark.Environment(variable_start_string="<<", variable_end_string=">>")._parser
    assert not os.path.exists(tables.path_for(other.grammar, other.lark_options))
    assert tables.load(parser.grammar + "\n", parser.lark_options) is None
    assert tables.load_plain(parser.grammar, parser.lark_options) is None
    assert tables.load_plain(parser.grammar + "\n", parser.lark_options) is None
    assert parser.tables is not None and parser._one_pass is not None  # read from its Lark parser


def test_the_first_process_on_a_machine_loads_the_shipped_tables_without_building(tmp_path):
    """No user cache (JINJAMARK_CACHE_DIR=''), Lark's grammar compiler made to fail: the chat
    profile and the plain environment still compile and render, from the shipped tables."""
    code = (
        "import lark.lark\n"
        "def refuse(*a, **k): raise AssertionError('the parser was built')\n"
        "lark.lark.load_grammar = refuse\n"
        "import jinjamark\n"
        "t = jinjamark.ChatTemplate(\"{% for m in messages %}{{ m['content'] }}{% endfor %}\")\n"
        "print(t.render([{'role': 'user', 'content': 'hi'}]))\n"
        "print(jinjamark.Environment().from_string('{{ 1 + 1 }}').render())\n")
    env = dict(os.environ, JINJAMARK_CACHE_DIR="")
    env.pop("JINJAMARK_NO_SHIPPED_TABLES", None)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["hi", "2"]


def test_shipped_tables_parse_as_built_tables_do():
    from jinjamark.grammar.parser import Parser
    shipped = jinjamark.chat_environment()._parser
    os.environ["JINJAMARK_NO_SHIPPED_TABLES"] = "1"
    try:
        built = Parser(shipped.syntaxes)
    finally:
        del os.environ["JINJAMARK_NO_SHIPPED_TABLES"]
    assert shipped.lark is not built.lark
    assert shipped.tables is not built.tables  # read from the freshly built parser (its states
    # are numbered differently from build to build): both parse every template alike
    options = jinjamark.chat_environment().options
    for name, source in chat_templates()[::4]:
        assert shipped.parse(source, name, options) == built.parse(source, name, options), name


# ---------------------------------------------------------------------------- imports

def test_importing_jinjamark_leaves_interegular_out_and_strict_mode_still_has_it():
    """Lark imports `interegular` when installed; only strict grammar builds use it."""
    pytest.importorskip("interegular")
    code = ("import sys, jinjamark\n"
            "print('interegular' in sys.modules)\n"
            "from jinjamark.grammar.parser import Parser, Syntax\n"
            "try:\n"
            "    Parser((Syntax('x', '%extend ?atom: FOO -> foo\\nFOO: /[a-z]+/'),), strict=True)\n"
            "except Exception as e:\n"
            "    print(type(e).__name__, 'FOO' in str(e) and 'NAME' in str(e))\n")
    assert run_python(code).split() == ["False", "LexError", "True"]


def test_importing_jinjamark_leaves_regex_out_and_lark_users_still_have_it():
    """Lark imports `regex` when installed (transformers brings it); another user of Lark in
    the process that asks for it (`regex=True`, Unicode categories) still gets it."""
    pytest.importorskip("regex")
    code = ("import sys, jinjamark\n"
            "jinjamark.chat_environment().from_string('{{ x }}').render(x=1)\n"
            "print('regex' in sys.modules)\n"
            "import lark\n"
            "parser = lark.Lark('start: /\\\\p{Lu}+/', parser='lalr', regex=True)\n"
            "print(parser.parse('AB').children[0], 'regex' in sys.modules)\n")
    assert run_python(code).split() == ["False", "AB", "True"]


def test_an_embedder_that_imported_lark_first_keeps_it_as_it_was():
    pytest.importorskip("regex")
    code = ("import lark, lark.lexer, sys\n"
            "before = lark.lexer.has_interegular, 'regex' in sys.modules\n"
            "import jinjamark\n"
            "jinjamark.Environment().from_string('{{ 1 }}').render()\n"
            "print(before == (lark.lexer.has_interegular, 'regex' in sys.modules))\n")
    assert run_python(code) == "True"


def test_the_grammar_files_read_from_the_folder_are_the_package_resources():
    from importlib import resources

    from jinjamark.grammar.parser import core_grammar, extension_grammar
    package = resources.files("jinjamark.grammar")
    assert core_grammar() == package.joinpath("jinja.lark").read_text(encoding="utf-8")
    assert extension_grammar("do.lark") == package.joinpath("extensions", "do.lark").read_text(
        encoding="utf-8")


def _reference_nodes_in(value):
    """The catalogue's helpers as first written: recursive generators over the dataclass fields."""
    if isinstance(value, (ast.Node, ast.Arguments, ast.Parameter)):
        yield value
    elif isinstance(value, tuple):
        for item in value:
            yield from _reference_nodes_in(item)


def _reference_children(node):
    for name in node.__dataclass_fields__:
        if name != "span":
            yield from _reference_nodes_in(getattr(node, name))


def _reference_walk(node):
    yield node
    for child in _reference_children(node):
        yield from _reference_walk(child)


def test_walk_and_children_visit_every_node_in_source_order():
    env = jinjamark.chat_environment()
    for name, source in chat_templates()[::3]:
        tree = env.parse(source)
        assert [id(n) for n in ast.walk(tree)] == [id(n) for n in _reference_walk(tree)], name
        assert [id(n) for n in ast.walk(tree.body)] == [id(n) for n in tree.body for n in _reference_walk(n)]
        for node in ast.walk(tree):
            assert [id(n) for n in ast.children(node)] == [id(n) for n in _reference_children(node)]


def test_the_default_grammars_parse_without_lark_until_a_template_fails():
    """The shipped plain tables (grammar/larktables.py) run the one-pass parse with no Lark
    imported; the first template that fails to parse loads Lark for the two-pass parse, whose
    error is the one it always gave."""
    code = ("import sys, jinjamark\n"
            "print('lark' in sys.modules)\n"
            "jinjamark.Environment().from_string('{{ 1 }}').render()\n"
            "jinjamark.ChatTemplate('{% for m in messages %}{{ m.content }}{% endfor %}').render("
            "[{'role': 'user', 'content': 'hi'}])\n"
            "print('lark' in sys.modules)\n"
            "try:\n"
            "    jinjamark.chat_environment().from_string('{{ a + }}')\n"
            "except jinjamark.TemplateSyntaxError as e:\n"
            "    print(e.lineno, e.column, 'lark' in sys.modules)\n")
    assert run_python(code).split() == ["False", "False", "1", "8", "True"]


def test_a_grammar_without_shipped_tables_imports_lark_when_its_parser_is_made():
    code = ("import sys, jinjamark\n"
            "env = jinjamark.Environment(extensions=['do'])\n"
            "print('lark' in sys.modules, env.from_string('{% do x %}{{ 1 }}').render())\n")
    assert run_python(code).split() == ["True", "1"]


# ---------------------------------------------------------------------------- compact templates

@given(st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1),
       st.integers(0, 2**32 - 1))
@settings(max_examples=200, deadline=None)
def test_a_span_packed_in_an_int_gives_back_its_four_positions(line, column, start, end):
    span = ast.Span(line, column, start, end)
    assert (span.line, span.column, span.start, span.end) == (line, column, start, end)
    assert dataclasses.astuple(span) == (line, column, start, end)
    assert pickle.loads(pickle.dumps(span)) == span and dataclasses.replace(span) == span
    other = ast.Span(line, column, start, end ^ 1)
    assert other != span and (other == span) is False
    node = ast.Name(span, "x")
    assert node.span == span and type(node._span) is int  # what the node keeps: a plain int
    with pytest.raises(ValueError):
        ast.Span(line, column, start, -1)


def test_a_pass_context_callable_sees_the_names_set_assigned_as_in_jinja2():
    """The template's memo finds those names when first asked for (template_api.Memo)."""
    jinja2 = pytest.importorskip("jinja2")
    source = ("{% set a = 1 %}{% for x in [1] %}{% set b = 2 %}{{ show('b') }}{{ show('x') }}"
              "{% endfor %}{{ show('a') }}{{ show('b') }}{% macro m(p) %}{{ show('p') }}{% endmacro %}"
              "{{ m(3) }}")
    rendered = []
    for module in (jinja2, jinjamark):
        env = module.Environment()

        @module.pass_context
        def show(context, name):
            return context.get(name, "?")
        env.globals["show"] = show
        rendered.append(env.from_string(source).render())
    assert rendered[0] == rendered[1]
