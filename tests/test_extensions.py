"""Extensions: the public `jinjamark.Extension` path, the tutorial in docs/extensions.md, the core
without any extension, composition (deterministic, cached, checked), conflicts reported as
`ExtensionError`s naming the extensions, and Jinja2's "looking for" messages for extension tags."""
from __future__ import annotations

import ast as pyast
import json
import pathlib
import random
import re
import subprocess
import sys
import textwrap
import types
from dataclasses import dataclass

import jinja2
import pytest
from lark.exceptions import LarkError

import jinjamark
import jinjamark.ext.shipped as shipped
import jinjamark.evaluation.evaluator
import oracle
from conftest import chat_templates, conversations, outcome
from jinjamark import chat
from jinjamark.ext import span
from jinjamark.grammar import ast
from jinjamark.grammar.compose import tag_keywords
from jinjamark.grammar.parser import core_grammar

ROOT = pathlib.Path(__file__).parent.parent
TUTORIAL = (ROOT / "docs" / "extensions.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"```python\n(.*?)```", TUTORIAL, re.S)
SHIPPED_NODES = (shipped.Break, shipped.Continue, shipped.Do, shipped.Generation)


# ---------------------------------------------------------------------------- the tutorial

def run_block(code: str, name: str, monkeypatch) -> dict:
    """Run an example as a module of its own (dataclasses look their module up)."""
    module = types.ModuleType(name)
    monkeypatch.setitem(sys.modules, name, module)
    exec(compile(code, name, "exec"), module.__dict__)
    return module.__dict__


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_tutorial_python_example_runs(index, monkeypatch):
    run_block(BLOCKS[index], f"extensions_doc_block_{index}", monkeypatch)


@pytest.fixture(scope="module")
def tutorial():
    """The names the tutorial's examples define, all blocks run once."""
    names, modules = {}, {}
    for i, code in enumerate(BLOCKS):
        name = f"extensions_doc_names_{i}"
        modules[name] = sys.modules[name] = types.ModuleType(name)
        exec(compile(code, name, "exec"), modules[name].__dict__)
        names.update(modules[name].__dict__)
    yield names
    for name in modules:
        sys.modules.pop(name, None)


def test_tutorial_adds_a_block_tag_an_operator_and_a_literal(tutorial):
    assert len(BLOCKS) >= 3
    names = tutorial
    repeat, coalesce, duration = names["REPEAT"], names["COALESCE"], names["DURATION"]
    assert "%extend _statement" in repeat.grammar and repeat.handlers
    assert coalesce.operators and not coalesce.handlers
    assert "%extend ?atom" in duration.grammar
    env = jinjamark.Environment(extensions=[repeat, coalesce, duration], strict_extensions=True)
    source = "{% repeat 2 as i %}{{ d ?? 1m30s }},{% endrepeat %}"
    assert env.from_string(source).render() == "90,90,"


# ---------------------------------------------------------------------------- the core alone

CORE_TEMPLATES = [
    "{% for m in messages %}{{ loop.index }}:{{ m.role|upper }} {{ m.content }}\n{% endfor %}",
    "{% if x is defined and x > 1 %}big{% elif x %}small{% else %}none{% endif %}",
    "{% set ns = namespace(n=0) %}{% for i in range(5) if i is odd %}{% set ns.n = ns.n + i %}"
    "{% endfor %}{{ ns.n }}",
    "{% macro m(a, b='x') %}[{{ a }}{{ b }}{{ caller() if caller }}]{% endmacro %}{{ m(1) }}"
    "{% call m(2, 'y') %}body{% endcall %}",
    "{% filter upper %}text {{ 'and' ~ ' more' }}{% endfilter %}{% with a = 1, b = 2 %}{{ a + b }}{% endwith %}",
    "{% set block %}captured{% endset %}{{ block|length }} {{ [3, 1, 2]|sort|join(',') }}",
    "{{ {'a': [1, 2, {'b': none}]}|tojson }} {{ '%s-%d'|format('x', 3) }} {{ 7 // 2 }} {{ 2 ** 10 }}",
    "{% raw %}{% break %}{{ not parsed }}{% endraw %}{# {% do x %} #}",
    "{%- for x in items -%}\n  {{ x }}\n{%- else -%}empty{%- endfor %}",
    "{{ 'a' if false }}{{ (1, 2)[1] }}{{ 'abc'[::-1] }}{{ missing is undefined }}{{ [1, 2] + [3] }}",
]


def core_environment() -> jinjamark.Environment:
    """The transformers profile with every extension switched off."""
    env = jinjamark.Environment(trim_blocks=True, lstrip_blocks=True, immutable=True, extensions=[])
    env.filters["tojson"] = chat.tojson
    env.globals["raise_exception"] = chat.raise_exception
    env.globals["strftime_now"] = chat.strftime_now
    return env


@pytest.mark.parametrize("source", CORE_TEMPLATES)
def test_the_core_renders_as_jinja2_with_no_extension(source):
    context = {"messages": [{"role": "user", "content": "hi"}], "x": 2, "items": [1, 2]}
    assert jinjamark.Environment(extensions=[]).extensions == ()
    assert jinjamark.Environment(extensions=[]).from_string(source).render(**context) == \
        jinja2.Environment().from_string(source).render(**context)


OPTIONAL_TAG = re.compile(r"\{%-?\s*(break|continue|do|generation)\b")
CORE_CORPUS = [(n, s) for n, s in chat_templates() if not OPTIONAL_TAG.search(s)]


def test_the_core_renders_the_chat_corpus_with_no_extension():
    """Every corpus template that uses no optional tag renders as transformers renders it."""
    assert len(CORE_CORPUS) > 150
    env = core_environment()
    fixtures = [f for name, f in conversations() if name.startswith(("03", "05", "20"))]
    misses = []
    for name, source in CORE_CORPUS:
        template = jinjamark.ChatTemplate(source, dict(oracle.SPECIAL_TOKENS),
                                          now=lambda: oracle.FIXED_NOW, environment=env)
        for fixture in fixtures:
            kwargs = fixture.get("kwargs") or {}
            want = outcome(oracle.render_chat, source, fixture, True, **kwargs)
            got = outcome(template.render, fixture["messages"], fixture.get("tools"),
                          fixture.get("documents"), True, **kwargs)
            if want.raised != got.raised or (not want.raised and want.value != got.value):
                misses.append(f"{name}: {want.describe()[:80]} vs {got.describe()[:80]}")
    assert not misses, "\n".join(misses)


BLOCK_SHIPPED = """
import importlib.abc, json, sys

class NoShippedExtensions(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "jinjamark.ext.shipped":
            raise ImportError("the shipped extensions are removed")

sys.meta_path.insert(0, NoShippedExtensions())
import jinjamark
results = {}
for source in json.loads(sys.argv[1]):
    results[source] = jinjamark.Environment().from_string(source).render(x=2, items=[1, 2],
        messages=[{"role": "user", "content": "hi"}])
try:
    jinjamark.Environment().from_string("{% for x in y %}{% break %}{% endfor %}")
except jinjamark.TemplateSyntaxError as e:
    results["break"] = [e.message, e.lineno, e.column]
try:
    jinjamark.Environment(extensions=["do"])
except ImportError as e:
    results["do"] = str(e)
assert "jinjamark.ext.shipped" not in sys.modules
print(json.dumps(results))
"""


def test_the_core_works_with_the_shipped_extensions_removed():
    """With the module that defines loopcontrols, do and generation impossible to import, the
    core still renders everything; only asking for a shipped extension by name fails."""
    done = subprocess.run([sys.executable, "-c", BLOCK_SHIPPED, json.dumps(CORE_TEMPLATES)],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout)
    context = {"messages": [{"role": "user", "content": "hi"}], "x": 2, "items": [1, 2]}
    for source in CORE_TEMPLATES:
        assert results[source] == jinja2.Environment().from_string(source).render(**context)
    assert results["break"][0].startswith("Encountered unknown tag 'break'.")
    assert results["break"][1:] == [1, 17]
    assert "removed" in results["do"]


def identifiers(path: pathlib.Path) -> set[str]:
    """The names, attributes and imported modules a Python source file mentions."""
    found = set()
    for node in pyast.walk(pyast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, pyast.Name):
            found.add(node.id)
        elif isinstance(node, pyast.Attribute):
            found.add(node.attr)
        elif isinstance(node, (pyast.Import, pyast.ImportFrom)):
            found.update(a.name for a in node.names)
            found.add(getattr(node, "module", None) or "")
    return found


def test_the_evaluator_knows_none_of_the_shipped_extensions():
    from jinjamark.evaluation.compiling import COMPILERS
    assert not set(SHIPPED_NODES) & set(COMPILERS)  # they run by their handlers, as any extension's
    assert not set(SHIPPED_NODES) & set(jinjamark.Environment().handlers)  # only installed ones
    shipped_names = {cls.__name__ for cls in SHIPPED_NODES} | {
        "LOOPCONTROLS", "DO", "GENERATION", "SHIPPED", "builtin_extensions"}
    core_modules = [p for p in (ROOT / "interpreter").rglob("*.py")  # the engine, not ext/
                    if p.relative_to(ROOT / "interpreter").parts[0]
                    not in ("ext", "chat", "playground", "grammar")]
    assert any(p.name == "evaluator.py" for p in core_modules)
    for path in core_modules:
        assert not identifiers(path) & shipped_names, path.name
    assert not {"break", "continue", "do", "generation", "endgeneration"} & set(tag_keywords(core_grammar()))


def test_the_shipped_extensions_are_plain_extensions():
    for ext in (shipped.LOOPCONTROLS, shipped.DO, shipped.GENERATION):
        assert type(ext) is jinjamark.Extension
        assert ext.grammar.lstrip().startswith("//") and "%extend _statement" in ext.grammar
        assert set(ext.handlers) <= set(SHIPPED_NODES)


@pytest.mark.parametrize("tag,column", [("{% break %}", 17), ("{% continue %}", 17), ("{% do 1 %}", 17),
                                        ("{% generation %}{% endgeneration %}", 17)])
def test_switched_off_tags_are_syntax_errors_with_positions_in_jinja2_words(tag, column):
    source = "{% for x in y %}" + tag + "{% endfor %}"
    with pytest.raises(jinjamark.TemplateSyntaxError) as caught:
        jinjamark.Environment().from_string("\n" + source, name="t.jinja")
    e = caught.value
    assert (e.name, e.lineno, e.column) == ("t.jinja", 2, column)
    with pytest.raises(jinja2.TemplateSyntaxError) as want:
        jinja2.Environment().from_string("\n" + source)
    assert e.message == want.value.message
    assert e.message.startswith(f"Encountered unknown tag '{tag.split()[1]}'. Jinja was looking for")


# ---------------------------------------------------------------------------- switching on and off

LOOP = "{% for x in [1, 2, 3, 4] %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 4 %}{% break %}{% endif %}{{ x }}{% endfor %}"


def test_extensions_switch_on_and_off_per_environment():
    on = jinjamark.Environment(extensions=["loopcontrols"])
    off = jinjamark.Environment()
    assert on.from_string(LOOP).render() == "13"
    with pytest.raises(jinjamark.TemplateSyntaxError):
        off.from_string(LOOP)
    assert on.from_string(LOOP).render() == "13"  # the other environment changed nothing
    assert on._parser is not off._parser


def test_the_chat_profile_enables_exactly_what_transformers_enables():
    names = tuple(ext.name for ext in jinjamark.chat_environment().extensions)
    assert names == ("generation", "loopcontrols")
    transformers = {type(e).__name__ for e in oracle.environment().extensions.values()}
    assert transformers == {"Generation", "LoopControlExtension"}
    with pytest.raises(jinjamark.TemplateSyntaxError):
        jinjamark.chat_environment().from_string("{% do 1 %}")
    assert tuple(e.name for e in jinjamark.chat_environment(extensions=["do"]).extensions) == \
        ("do", "generation", "loopcontrols")


def test_composition_is_deterministic_and_cached_per_set():
    envs = [jinjamark.Environment(extensions=names) for names in
            (["loopcontrols", "do", "generation"], ["generation", "do", "loopcontrols"],
             ["jinja2.ext.do", "generation", "jinja2.ext.loopcontrols", "do"])]
    assert len({tuple(e.name for e in env.extensions) for env in envs}) == 1
    assert envs[0]._parser is envs[1]._parser is envs[2]._parser
    assert jinjamark.Environment(extensions=["do"])._parser is not envs[0]._parser


def test_a_name_must_be_an_extension():
    with pytest.raises(ValueError, match="unknown extension 'nope'"):
        jinjamark.Environment(extensions=["nope"])
    with pytest.raises(TypeError):
        jinjamark.Environment(extensions=[object()])


def test_the_shipped_tags_keep_marks():
    env = jinjamark.chat_environment()
    parts = env.from_string("a{% generation %}<{{ m }}>{% endgeneration %}b").render_parts(
        m=jinjamark.mark_input("x"))
    assert [(p.text, p.is_input) for p in parts] == [("a<", False), ("x", True), (">b", False)]


# ---------------------------------------------------------------------------- builders and handlers

@dataclass(frozen=True, slots=True)
class Shout(ast.Stmt):
    body: tuple


def shout_grammar(word: str = "shout", rule: str = "shout_stmt") -> str:
    return textwrap.dedent(rf"""
        %extend _statement: {rule}
        {rule}: _{word.upper()} _BC body _END{word.upper()} _BC
        _{word.upper()}: /\{{%[-+]?\s*{word}(?!\w)/
        _END{word.upper()}: /\{{%[-+]?\s*end{word}(?!\w)/
        """)


def build_shout(meta, children):
    return Shout(span(meta), children[0])


def run_shout(ev, node, scope):
    ev.write(ev.capture(node.body, scope).upper())


SHOUT = jinjamark.Extension("shout", shout_grammar(), rules={"shout_stmt": build_shout},
                            handlers={Shout: run_shout})


def test_a_user_extension_renders_and_keeps_marks():
    env = jinjamark.Environment(extensions=[SHOUT], strict_extensions=True)
    template = env.from_string("{% shout %}hi {{ n }}{% endshout %}!")
    assert template.render(n="ada") == "HI ADA!"
    parts = template.render_parts(n=jinjamark.mark_input("ada"))
    assert [(p.text, p.is_input) for p in parts] == [("HI ", False), ("ADA", True), ("!", False)]


def test_a_node_without_a_handler_is_refused_at_its_position_when_parsed():
    env = jinjamark.Environment(extensions=[jinjamark.Extension(
        "shout", shout_grammar(), rules={"shout_stmt": build_shout})])
    with pytest.raises(jinjamark.TemplateAssertionError) as caught:
        env.from_string("a\n  {% shout %}{% endshout %}", name="t.jinja")
    assert (caught.value.lineno, caught.value.column, caught.value.name) == (2, 3, "t.jinja")
    assert caught.value.message.startswith("no handler for Shout nodes")


def test_an_operator_without_a_function_is_refused_at_its_position_when_parsed():
    ext = jinjamark.Extension("at", '%extend ?math2: math2 "@" pow -> at_op',
                              rules={"at_op": lambda m, c: ast.Binary(span(m), "@", c[0], c[1])})
    env = jinjamark.Environment(extensions=[ext])
    with pytest.raises(jinjamark.TemplateAssertionError) as caught:
        env.from_string("{{ 1 }}{{ a @ b }}")
    assert (caught.value.lineno, caught.value.column) == (1, 11)
    assert caught.value.message.startswith("no operator '@'")


def test_a_failing_builder_is_a_syntax_error_at_its_rule():
    def broken(meta, children):
        raise ValueError("bad shout")
    env = jinjamark.Environment(extensions=[jinjamark.Extension(
        "shout", shout_grammar(), rules={"shout_stmt": broken}, handlers={Shout: run_shout})])
    with pytest.raises(jinjamark.TemplateSyntaxError) as caught:
        env.from_string("x\n {% shout %}{% endshout %}")
    assert (caught.value.lineno, caught.value.column) == (2, 2)
    assert caught.value.message == "bad shout (while building 'shout_stmt' of extension 'shout')"


def test_the_same_grammar_with_other_builders_gets_its_own_parser():
    @dataclass(frozen=True, slots=True)
    class Whisper(ast.Stmt):
        body: tuple
    whisper = jinjamark.Extension(
        "shout", shout_grammar(), rules={"shout_stmt": lambda m, c: Whisper(span(m), c[0])},
        handlers={Whisper: lambda ev, node, scope: ev.write(ev.capture(node.body, scope).lower())})
    source = "{% shout %}Hi{% endshout %}"
    assert jinjamark.Environment(extensions=[SHOUT]).from_string(source).render() == "HI"
    assert jinjamark.Environment(extensions=[whisper]).from_string(source).render() == "hi"


# ---------------------------------------------------------------------------- conflicts

def ext(name: str, grammar: str = "", **tables) -> jinjamark.Extension:
    return jinjamark.Extension(name, grammar, **tables)


def at_level(name: str, grammar: str, op: str = "??") -> jinjamark.Extension:
    alias = grammar.rsplit("->", 1)[1].strip()
    return ext(name, grammar, rules={alias: lambda m, c: ast.Binary(span(m), op, c[0], c[-1])},
               operators={op: lambda a, b: a})


BUILDS = {"shout_stmt": build_shout}
WORDS = "%extend ?atom: WORDS -> {0}_words\nWORDS: /{1}[a-z]+/"
CORE = "which the core grammar already defines"
NOT_COMPOSED = "extension 'a' does not compose with the core grammar: GrammarError: "
CONFLICTS = {  # case: (extensions, the names the error gives, how its message starts)
    "same tag": (
        [SHOUT, ext("yell", shout_grammar("shout", "yell_stmt"), rules={"yell_stmt": build_shout})],
        ("shout", "yell"), "extensions 'shout' and 'yell' both define the tag 'shout'"),
    "same rule": (
        [SHOUT, ext("yell", shout_grammar("yell", "shout_stmt"), rules=BUILDS)],
        ("shout", "yell"), "extensions 'shout' and 'yell' both define the rule 'shout_stmt'"),
    "same terminal": (
        [ext("a", WORDS.format("a", "~"), rules={"a_words": build_shout}),
         ext("b", WORDS.format("b", "%"), rules={"b_words": build_shout})],
        ("a", "b"), "extensions 'a' and 'b' both define the terminal 'WORDS'"),
    "same literal pattern": (
        [at_level("a", '%extend ?or_expr: or_expr QQ and_expr -> qq_a\nQQ: "??"'),
         at_level("b", '%extend ?and_expr: and_expr QQB not_expr -> qq_b\nQQB: "??"', "?!")],
        ("a", "b"), "extensions 'a' and 'b' both define a terminal matching \"??\" (QQB)"),
    "same builder": (
        [at_level("a", '%extend ?or_expr: or_expr "??" and_expr -> qq'),
         at_level("b", '%extend ?and_expr: and_expr "?!" not_expr -> qq', "?!")],
        ("a", "b"), "extensions 'a' and 'b' both define a builder for 'qq'"),
    "a core tag": (
        [ext("a", shout_grammar("for", "a_stmt"), rules={"a_stmt": build_shout})],
        ("a",), f"extension 'a' defines the tag 'for', {CORE}"),
    "a core terminal": (
        [ext("a", "%extend ?atom: NAME2 -> a\nNAME: /[a-z]+/", rules={"a": build_shout})],
        ("a",), f"extension 'a' defines the terminal 'NAME', {CORE}"),
    "a core keyword": (
        [at_level("a", '%extend ?or_expr: or_expr OR2 and_expr -> a_or\nOR2: "or"')],
        ("a",), f"extension 'a' defines a terminal matching \"or\" (OR2), {CORE}"),
    "a core builder": (
        [at_level("a", '%extend ?or_expr: or_expr "??" and_expr -> binary')],
        ("a",), "extension 'a' has a builder for 'binary', which the core builds"),
    "%import": (
        [ext("a", "%import common.WORD\n%extend ?atom: WORD -> a", rules={"a": build_shout})],
        ("a",), "extension 'a' uses %import"),
    "%override": (
        [ext("a", '%override pair: expression "=" expression')],
        ("a",), "extension 'a' uses %override"),
    "an opener named otherwise": (
        [ext("a", shout_grammar().replace("_SHOUT", "_SHOUT_TAG"), rules=BUILDS)],
        ("a",), "extension 'a': the opener of tag 'shout' must be named _SHOUT, not _SHOUT_TAG"),
    "an opener in another style": (
        [ext("a", shout_grammar().replace(r"/\{%[-+]?\s*shout(?!\w)/", '"{% shout"'), rules=BUILDS)],
        ("a",), "extension 'a': write the tag opener _SHOUT in the core's style"),
    "a malformed fragment": (
        [ext("a", "%extend _statement: a_stmt\na_stmt: _BC (\n", rules={"a_stmt": build_shout})],
        ("a",), NOT_COMPOSED + "Expecting a value"),
    "extending nothing": (
        [ext("a", "%extend nothing: NAME")],
        ("a",), NOT_COMPOSED + "Can't extend rule nothing"),
    "a reduce/reduce conflict": (
        [at_level("a", '%extend ?or_expr: or_expr "or" or_expr -> a_or')],
        ("a",), NOT_COMPOSED + "Reduce/Reduce collision"),
    "a rule without builder": (
        [ext("a", shout_grammar(), handlers={Shout: run_shout})],
        ("a",), "the rule 'shout_stmt' makes a tree but has no builder: add "
                "rules={'shout_stmt': builder} to extension 'a'"),
    "a builder without rule": (
        [ext("a", shout_grammar(), rules={**BUILDS, "shout_stm": build_shout})],
        ("a",), "extension 'a' has a builder for 'shout_stm', but no rule or alias of the grammar"),
    "builders without grammar": (
        [ext("a", rules=BUILDS)],
        ("a",), "extension 'a' has rule builders but no grammar"),
    "two extensions, one name": (
        [SHOUT, ext("shout", filters={"x": len})],
        ("shout",), "two different extensions are named 'shout'"),
    "the same filter": (
        [ext("a", filters={"f": len}), ext("b", filters={"f": len})],
        ("a", "b"), "extensions 'a' and 'b' both define the filter 'f'"),
    "the same test": (
        [ext("a", tests={"t": bool}), ext("b", tests={"t": bool})],
        ("a", "b"), "extensions 'a' and 'b' both define the test 't'"),
    "the same global": (
        [ext("a", globals={"g": 1}), ext("b", globals={"g": 2})],
        ("a", "b"), "extensions 'a' and 'b' both define the global 'g'"),
    "the same handler": (
        [SHOUT, ext("b", handlers={Shout: run_shout})],
        ("b", "shout"), "extensions 'b' and 'shout' both define the handler for Shout"),
    "the same operator": (
        [ext("a", operators={"??": max}), ext("b", operators={"??": min})],
        ("a", "b"), "extensions 'a' and 'b' both define the operator '??'"),
    "a core handler": (
        [ext("a", handlers={ast.For: run_shout})],
        ("a",), "extension 'a' redefines the core's handler for For"),
    "a core operator": (
        [ext("a", operators={"+": max})],
        ("a",), "extension 'a' redefines the core's operator '+'"),
    "a handler key that is no node class": (
        [ext("a", handlers={"Shout": run_shout})],
        ("a",), "extension 'a': handlers are keyed by AST node classes"),
}


@pytest.mark.parametrize("case", list(CONFLICTS))
def test_conflicts_are_extension_errors_naming_the_extensions(case):
    extensions, involved, message = CONFLICTS[case]
    with pytest.raises(jinjamark.ExtensionError) as caught:
        jinjamark.Environment(extensions=extensions)
    e = caught.value
    assert isinstance(e, jinjamark.TemplateError) and not isinstance(e, LarkError)
    assert e.extensions == involved
    assert e.message.startswith(message), e.message
    assert e.__cause__ is None and e.__suppress_context__ or e.__context__ is None


STRICT_ONLY = {
    "a shift/reduce conflict with the core": (
        [at_level("a", '%extend ?or_expr: or_expr "??" or_expr -> a_either')], ("a",),
        "extension 'a' does not compose with the core grammar: GrammarError: Shift/Reduce conflict"),
    "a terminal colliding with the core's": (
        [ext("a", "%extend ?atom: WORDS -> a_words\nWORDS: /[a-z]+!?/", rules={"a_words": build_shout})],
        ("a",), "extension 'a' does not compose with the core grammar: LexError: Collision between Terminals"),
    "two extensions in conflict": (
        [at_level("a", '%extend ?or_expr: or_expr "??" and_expr -> qq_a'),
         at_level("b", '%extend ?and_expr: and_expr "??" not_expr -> qq_b', "?!")], ("a", "b"),
        "extensions 'a' and 'b' conflict: GrammarError: Shift/Reduce conflict"),
}


@pytest.mark.parametrize("case", list(STRICT_ONLY))
def test_strict_extensions_turns_silent_grammar_conflicts_into_errors(case):
    extensions, involved, message = STRICT_ONLY[case]
    jinjamark.Environment(extensions=extensions)  # Lark alone resolves these silently
    with pytest.raises(jinjamark.ExtensionError) as caught:
        jinjamark.Environment(extensions=extensions, strict_extensions=True)
    assert caught.value.extensions == involved
    assert caught.value.message.startswith(message), caught.value.message


def test_a_malformed_fragment_is_reported_at_its_own_line():
    with pytest.raises(jinjamark.ExtensionError) as caught:
        jinjamark.Environment(extensions=CONFLICTS["a malformed fragment"][0])
    assert "at line 2, column 14 of its grammar" in caught.value.message


def test_the_shipped_extensions_and_the_tutorials_build_in_strict_mode(tutorial):
    extensions = ["loopcontrols", "do", "generation", SHOUT, tutorial["REPEAT"],
                  tutorial["COALESCE"], tutorial["DURATION"]]
    env = jinjamark.Environment(extensions=extensions, strict_extensions=True)
    assert env.from_string("{% for x in [1, 2] %}{% repeat x %}{{ y ?? 1s }}{% endrepeat %}"
                           "{% break %}{% endfor %}").render() == "1"


OPERATOR_LEVELS = [("or_expr", "and_expr"), ("and_expr", "not_expr"), ("math1", "concat"),
                   ("concat", "math2"), ("math2", "pow"), ("pow", "filtered")]


@pytest.mark.parametrize("level,tighter", OPERATOR_LEVELS)
def test_every_precedence_level_takes_a_new_left_associative_operator(level, tighter):
    env = jinjamark.Environment(extensions=[at_level(
        "op", f'%extend ?{level}: {level} "@@" {tighter} -> my_op', "@@")], strict_extensions=True)
    tree = env.parse("{{ a @@ b @@ c }}").body[0].expr
    assert (tree.op, tree.left.op, tree.right.name, tree.left.left.name) == ("@@", "@@", "c", "a")


def test_the_comparison_level_takes_a_new_operator_that_does_not_chain():
    env = jinjamark.Environment(extensions=[at_level(
        "op", '%extend ?compare: math1 "=~" math1 -> my_op', "=~")], strict_extensions=True)
    tree = env.parse("{{ a + 1 =~ b ~ c }}").body[0].expr
    assert (tree.op, tree.left.op, tree.right.items[0].name) == ("=~", "+", "b")
    with pytest.raises(jinjamark.TemplateSyntaxError):
        env.parse("{{ a =~ b =~ c }}")


MATCHES = jinjamark.Extension(
    "matches", '%extend comp_op: MATCHES\nMATCHES: "=~"',
    operators={"=~": lambda text, pattern: re.search(pattern, text) is not None})


@pytest.mark.parametrize("source,want", [
    ("{{ 'abc' =~ 'b' }}", "True"),
    ("{{ 'abc' =~ 'x' }}", "False"),
    ("{{ 'abc' =~ 'a' =~ 'a' }}", "True"),         # ('abc' =~ 'a') and ('a' =~ 'a')
    ("{{ 'abc' =~ 'a' =~ 'b' }}", "False"),
    ("{{ 'b' < 'c' =~ 'c' }}", "True"),             # mixes with the core's comparisons
    ("{{ 'c' < 'b' =~ 'b' }}", "False"),
    ("{{ 'a' ~ 'b' =~ 'ab' }}", "True"),            # `~` binds tighter, as for `==`
    ("{{ not 'a' =~ 'a' }}", "False"),              # `not` is looser, as for `==`
    ("{{ 'a' =~ 'a' and 1 < 2 < 3 }}", "True"),
])
def test_a_comparison_operator_added_to_comp_op_chains_like_the_cores(source, want):
    env = jinjamark.Environment(extensions=[MATCHES], strict_extensions=True)
    assert env.from_string(source).render() == want


def test_chained_comparisons_evaluate_each_operand_once_and_stop_at_the_first_false():
    env = jinjamark.Environment(extensions=[MATCHES])
    seen = []

    def v(x):
        seen.append(x)
        return x
    assert env.from_string("{{ v('b') =~ v('b') =~ v('x') =~ v('y') }}").render(v=v) == "False"
    assert seen == ["b", "b", "x"]
    tree = env.parse("{{ a =~ b < c }}").body[0].expr
    assert [op for op, _ in tree.ops] == ["=~", "<"]


def test_a_comparison_operator_without_a_function_is_refused_at_its_position_when_parsed():
    env = jinjamark.Environment(extensions=[jinjamark.Extension(
        "matches", '%extend comp_op: MATCHES\nMATCHES: "=~"')])
    with pytest.raises(jinjamark.TemplateAssertionError) as caught:
        env.from_string("{{ 1 }}{{ 'a' < 'b' =~ 'a' }}")
    assert (caught.value.lineno, caught.value.column) == (1, 11)
    assert caught.value.message.startswith("no operator '=~'")


# ---------------------------------------------------------------------------- "looking for"

TAGS = ["{% if x %}", "{% elif y %}", "{% else %}", "{% endif %}", "{% for a in b %}", "{% endfor %}",
        "{% macro m() %}", "{% endmacro %}", "{% set q %}", "{% endset %}", "{% break %}",
        "{% continue %}", "{% do 1 %}", "{% generation %}", "{% endgeneration %}", "x"]


def syntax_messages(source: str, ours: jinjamark.Environment, theirs: jinja2.Environment):
    try:
        theirs.from_string(source)
        want = None
    except jinja2.TemplateSyntaxError as e:
        want = e.message
    except SyntaxError:  # Jinja2's compiled Python refused it ('break' outside loop)
        return None
    try:
        ours.from_string(source)
        got = None
    except jinjamark.TemplateSyntaxError as e:
        got = e.message
    return want, got


@pytest.mark.parametrize("tags,theirs", [
    (("loopcontrols", "do"), lambda: jinja2.Environment(extensions=["jinja2.ext.loopcontrols", "jinja2.ext.do"])),
    (("loopcontrols", "generation"), oracle.environment),
])
def test_syntax_errors_in_extension_tags_are_jinja2s(tags, theirs):
    ours, theirs = jinjamark.Environment(extensions=tags), theirs()
    rng = random.Random(7)
    compared = 0
    for _ in range(1500):
        source = "\n".join(rng.choice(TAGS) for _ in range(rng.randint(1, 5)))
        result = syntax_messages(source, ours, theirs)
        if result is None or result[0] is None:
            continue
        want, got = result
        assert got == want, source
        compared += 1
    assert compared > 500


def test_an_unclosed_extension_block_names_its_end_tag():
    env = jinjamark.chat_environment()
    with pytest.raises(jinjamark.TemplateSyntaxError) as caught:
        env.from_string("{% for m in messages %}\n{% generation %}{{ m }}{% endfor %}")
    assert caught.value.message == (
        "Encountered unknown tag 'endfor'. You probably made a nesting mistake. Jinja is expecting "
        "this tag, but currently looking for 'endgeneration'. The innermost block that needs to be "
        "closed is 'generation'.")
    assert (caught.value.lineno, caught.value.column) == (2, 24)


# `break` and `continue` are checked where they stand: inside a loop's body (at any depth of
# `if`, `with`, `filter`, block `set`), not in its `else`, not in a macro or call block (their
# own functions in Jinja2), nor in an expression's reach. Refused when Jinja2's compile refuses.
LOOP_CONTROL_PLACES = [
    "{% break %}",
    "{% for x in y %}{% if x %}{% with a = 1 %}{% break %}{% endwith %}{% endif %}{% endfor %}",
    "{% for x in y %}{% else %}{% continue %}{% endfor %}",
    "{% for x in y %}{% macro m() %}{% break %}{% endmacro %}{% endfor %}",
    "{% for x in y %}{% call m() %}{% continue %}{% endcall %}{% endfor %}",
    "{% macro m() %}{% for x in y %}{% break %}{% endfor %}{% endmacro %}",
    "{% for x in y %}{% filter upper %}{% continue %}{% endfilter %}{% endfor %}",
    "{% for x in y %}{% set s %}{% break %}{% endset %}{% endfor %}",
    "{% if a %}{% for x in y %}{% endfor %}{% continue %}{% endif %}",
    "{% for x in y %}{% for z in x %}{% endfor %}{% break %}{% endfor %}",
]


@pytest.mark.parametrize("source", LOOP_CONTROL_PLACES)
def test_loop_controls_are_refused_where_jinja2_refuses_them(source):
    theirs = jinja2.Environment(extensions=["jinja2.ext.loopcontrols"])
    try:
        theirs.from_string(source)
        refused = False
    except (jinja2.TemplateSyntaxError, SyntaxError):
        refused = True
    env = jinjamark.Environment(extensions=["loopcontrols"])
    if refused:
        with pytest.raises(jinjamark.TemplateSyntaxError):
            env.from_string(source)
    else:
        env.from_string(source)
