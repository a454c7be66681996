"""Jinja2's delimiter options: `block_start_string` ... `comment_end_string`, `line_statement_prefix`
and `line_comment_prefix`, with Jinja2 3.1's semantics.

1. Generated templates (text, outputs, if/for/set/macro/call/filter/with/raw blocks, comments, line
   statements and line comments, every whitespace-control marker, trim_blocks / lstrip_blocks /
   keep_trailing_newline) render as Jinja2 renders them with the same delimiters, or both raise:
   ten delimiter sets, 1,600 templates plus 600 with deeper nesting per run (the same ones each
   run, see conftest.py; JINJAMARK_HYPOTHESIS=explore draws new ones).
2. Each option's documented behaviour, as examples (the expected text is Jinja2's, checked).
3. Syntax errors with custom delimiters have the template name, line, column and caret.
4. The shipped extensions work with custom delimiters.
5. The default delimiters leave the grammar's text as it was; invalid settings are refused.
"""
from __future__ import annotations

import os

import jinja2
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from jinja2.sandbox import ImmutableSandboxedEnvironment, SandboxedEnvironment

import jinjamark
from jinjamark.grammar.delimiters import Delimiters
from jinjamark.grammar.parser import Parser, Syntax, core_grammar, extension_grammar, get_parser
from conftest import chat_templates, conversations, outcome
from oracle import Generation, tojson
from test_differential import COMMENT_BODIES, RAW_BODIES, Choices, TemplateBuilder, assert_same_as_jinja2


def delimiters(block, variable, comment, line_statement=None, line_comment=None) -> dict:
    """Jinja2's keyword arguments for one set of delimiters."""
    return dict(block_start_string=block[0], block_end_string=block[1],
                variable_start_string=variable[0], variable_end_string=variable[1],
                comment_start_string=comment[0], comment_end_string=comment[1],
                line_statement_prefix=line_statement, line_comment_prefix=line_comment)


DEFAULT = (("{%", "%}"), ("{{", "}}"), ("{#", "#}"))
SETS = {
    "angle": delimiters(("<%", "%>"), ("<<", ">>"), ("<#", "#>")),
    "square": delimiters(("[%", "%]"), ("[[", "]]"), ("[#", "#]")),
    "dollar": delimiters(("{%", "%}"), ("${", "}"), ("{#", "#}")),
    "latex": delimiters(("\\BLOCK{", "}"), ("\\VAR{", "}"), ("\\#{", "}"), "%-", "%#"),
    "erb": delimiters(("<%", "%>"), ("<%=", "%>"), ("<%#", "%>")),  # shared closer, nested openers
    "hash_lines": delimiters(*DEFAULT, "#", "##"),
    "percent_lines": delimiters(*DEFAULT, "%", "//"),
    "angle_lines": delimiters(("<%", "%>"), ("<<", ">>"), ("<#", "#>"), "%", "#"),
    "parens": delimiters(("((*", "*))"), ("(((", ")))"), ("((=", "=))")),  # brackets as closers
    "php": delimiters(("<?", "?>"), ("<?=", "?>"), ("<!--", "-->")),  # a comment end with `-`
}
EXTENSIONS = ("jinja2.ext.loopcontrols", "jinja2.ext.do")
PHASES = tuple(Phase) if os.environ.get("JINJAMARK_SHRINK") == "1" else (Phase.explicit, Phase.reuse, Phase.generate)
BASE_TEXT = ["ab", "x", "Hi there", " ", "  ", "\t", "\n", "\n  ", " \n", "\n\n", "\t\n ", "\r\n", "é",
             "-", "+", ".", "  \n\t  "]


class DelimitedBuilder(TemplateBuilder):
    """The differential test's template generator, writing the tags with other delimiters: line
    statements and line comments where they are enabled, pieces of the delimiters in the text."""

    def __init__(self, choices: Choices, opts: dict, depth_of_expressions: int = 4) -> None:
        super().__init__(choices, EXTENSIONS, edges=False, expr_depth=depth_of_expressions)
        self.o = opts
        vs, ve = opts["variable_start_string"], opts["variable_end_string"]
        self.MACRO_EXTRAS = [x.replace("{{ ", vs + " ").replace(" }}", " " + ve)
                             for x in TemplateBuilder.MACRO_EXTRAS]
        strings = [v for k, v in opts.items() if k.endswith("_string")]
        self.pieces = BASE_TEXT + sorted({s[0] for s in strings} | {s[-1] for s in strings}
                                         | {s[:-1] for s in strings if len(s) > 2})

    def tag(self, inner: str) -> str:
        prefix = self.o["line_statement_prefix"]
        if prefix and self.chance(35):  # the line break after it belongs to the statement
            sign, indent = self.pick(["", "", "-", "+"]), self.pick(["", "", "  ", "\t"])
            if "'" not in inner and '"' not in inner and self.chance(20):
                inner = inner.replace(", ", ",\n  ", 1)  # inside brackets a line break is space
            return f"\n{indent}{prefix}{sign} {inner}{self.pick(['', ' ', '  '])}\n"
        return self.block_tag(inner)

    def block_tag(self, inner: str) -> str:
        left, right = self.pick(["", "", "", "-", "+"]), self.pick(["", "", "", "-", "+"])
        pad_l, pad_r = self.pick([" ", " ", "", "  "]), self.pick([" ", " ", "", "  "])
        return f"{self.o['block_start_string']}{left}{pad_l}{inner}{pad_r}{right}{self.o['block_end_string']}"

    def output(self, expr: str) -> str:
        left = self.pick(["", "", "", "-", "+"][: 4 if self.chance(95) else 5])
        right = self.pick(["", "", "", "-"])
        return f"{self.o['variable_start_string']}{left} {expr} {right}{self.o['variable_end_string']}"

    def text(self) -> str:
        return "".join(self.pick(self.pieces) for _ in range(self.between(1, 4)))

    def comment(self) -> str:
        prefix = self.o["line_comment_prefix"]
        if prefix and self.chance(40):
            pad, sign = self.pick(["", " ", "  \t"]), self.pick(["", "", "-", "+"])
            return f"{pad}{prefix}{sign}{self.pick(COMMENT_BODIES)}\n"
        left, right = self.pick(["", "-", "+"]), self.pick(["", "-"])
        body = self.pick(COMMENT_BODIES)
        return f"{self.o['comment_start_string']}{left}{body}{right}{self.o['comment_end_string']}"

    def raw(self) -> str:
        left, right = self.pick(["", "-", "+"]), self.pick(["", "", "-", "+"] if self.chance(10) else ["", "-"])
        bs, be = self.o["block_start_string"], self.o["block_end_string"]
        return f"{bs}{left} raw {right}{be}" + self.pick(RAW_BODIES) + self.block_tag("endraw")


@st.composite
def delimited_cases(draw, depth: int = 3, expr_depth: int = 4):
    """(source, options): a delimiter set, Jinja2's whitespace options, a template written with them."""
    opts = dict(SETS[draw(st.sampled_from(sorted(SETS)))])
    opts.update({name: draw(st.booleans()) for name in ("trim_blocks", "lstrip_blocks", "keep_trailing_newline")})
    opts["extensions"] = EXTENSIONS
    choices = Choices(draw(st.binary(min_size=120, max_size=600)))
    source = DelimitedBuilder(choices, opts, expr_depth).body(depth, 5)
    if source.endswith(tuple(opts["comment_start_string"] + sign for sign in ("", "-", "+"))):
        source += "."  # Jinja2 lets a comment opener end the template (COMPATIBILITY.md, Errors)
    return source, opts


# ---------------------------------------------------------------------------- 1. differential

@pytest.mark.filterwarnings("ignore::SyntaxWarning")  # Jinja2's generated code for `1[0]` and the like
@settings(max_examples=1600, deadline=None, suppress_health_check=list(HealthCheck), phases=PHASES)
@given(case=delimited_cases())
def test_generated_templates_with_custom_delimiters_render_as_jinja2(case):
    assert_same_as_jinja2(*case)


@settings(max_examples=600, deadline=None, suppress_health_check=list(HealthCheck), phases=PHASES)
@given(case=delimited_cases(depth=4, expr_depth=0))
def test_nested_tags_and_whitespace_with_custom_delimiters_match_jinja2(case):
    assert_same_as_jinja2(*case)


# ---------------------------------------------------------------------------- 2. each option

LINES = dict(line_statement_prefix="#", line_comment_prefix="##")
ANGLE, LATEX, ERB = SETS["angle"], SETS["latex"], SETS["erb"]
# (source, options, Jinja2's output): each row pins one documented rule.
EXAMPLES = [
    # custom block, variable and comment strings
    ("<% for x in xs %><< x >><% endfor %><# note #>", ANGLE, "312"),
    ("<< {'a': {'b': 1}}['a'] >>", ANGLE, "{'b': 1}"),
    ("<< 7 >>> 1 >>", ANGLE, "7> 1 >>"),                      # the first `>>` ends the tag
    ("<%- if true -%>  x  <%- endif %>|", ANGLE, "x|"),
    ("[[ xs[0] ]][% if xs[1:] %]+[% endif %][# c #]", SETS["square"], "3+"),
    ("[[ [1, [2]] ]]", SETS["square"], "[1, [2]]"),           # `]]` closes brackets first
    ("${ n }${ {'a': 1}['a'] }{{ n }}", SETS["dollar"], "31{{ n }}"),
    ("\\VAR{ {'a': 1} }\\BLOCK{ if n }y\\BLOCK{ endif }\\#{ c }", LATEX, "{'a': 1}y"),
    ("\\VAR{ n } }", LATEX, "3 }"),
    ("<%= n %><% if n %>y<% endif %><%# c %>", ERB, "3y"),
    ("<%= n -%>  z", ERB, "3z"),
    # a longer start string wins where two match: `<%=` over `<%`
    ("<%=n%>", ERB, "3"),
    # trim_blocks and lstrip_blocks with custom delimiters
    ("a\n  <% if true %>\n  b\n  <% endif %>\nc", dict(ANGLE, trim_blocks=True, lstrip_blocks=True), "a\n  b\nc"),
    ("<< n >>\nx", dict(ANGLE, trim_blocks=True), "3\nx"),    # not after a print statement
    ("<%= n %>\n<% if n %>\ny<% endif %>", dict(ERB, trim_blocks=True), "3\ny"),
    ("  <%+ if true %>x<% endif +%>\ny", dict(ANGLE, trim_blocks=True, lstrip_blocks=True), "  x\ny"),
    # raw blocks use the block strings
    ("<% raw %><< n >><% if %><% endraw %>", ANGLE, "<< n >><% if %>"),
    ("a <%- raw -%>  b  <%- endraw -%> c", ANGLE, "abc"),
    # line statements: start of a line after spaces/tabs, end at the line break
    ("a\n# if n\nb\n# endif\nc", LINES, "a\nb\nc"),
    ("a\n  \t# for x in xs\n[{{ x }}]\n# endfor\n", LINES, "a\n[3]\n[1]\n[2]\n"),
    ("a\n# for x in [1,\n   2]\n{{ x }}\n# endfor", LINES, "a\n1\n2\n"),  # brackets span lines
    ("# set y = 2\n\n\n{{ y }}", LINES, "2"),               # the blank lines after it too
    ("a\n#- if n\nb\n# endif\nc", LINES, "ab\nc"),            # `-` strips before the statement
    ("a\n# if n\nb\n{% endif %}c", LINES, "a\nb\nc"),         # block tags still work
    ("a # not a statement", LINES, "a # not a statement"),
    ("a\r\n# if n\r\nb\r\n# endif\r\nc", LINES, "a\nb\nc"),
    ("# if n\n  b\n# endif\n", dict(LINES, trim_blocks=True, lstrip_blocks=True), "  b\n"),
    # line comments: the rest of the line and the spaces before it, not the line break
    ("a ## c\nb\n## d\ne", LINES, "a\nb\n\ne"),
    ("a\n  ##- c\n  b", LINES, "a\n  b"),
    ("a\n  ## c\n  b", dict(LINES, trim_blocks=True, lstrip_blocks=True), "a\n\n  b"),
    ("{{ 5 // 2 }} // c", dict(line_comment_prefix="//"), "2"),
    # the LaTeX profile people use: line statements `%-`, line comments `%#`
    ("\\VAR{ n }\n%- if n\nyes\n%- endif\n%# note\n", LATEX, "3\nyes\n"),
]


@pytest.mark.parametrize("source, options, expected", EXAMPLES)
def test_each_delimiter_option_behaves_as_jinja2_documents(source, options, expected):
    want = jinja2.Environment(**options).from_string(source).render(n=3, xs=[3, 1, 2])
    assert want == expected  # the row says what Jinja2 does
    assert jinjamark.Environment(**options).from_string(source).render(n=3, xs=[3, 1, 2]) == expected


REFUSED_BY_BOTH = [
    ("<%= n +%>", ERB),                    # `+` only ends blocks; in a print statement it's an operator
    ("[[ xs[0] ] ]", SETS["square"]),       # a closer's brackets must touch
    ("a\n# if n %}\nb\n# endif", LINES),   # a line statement ends at the line break only
    ("a\n# if n }\nb\n# endif", LINES),
    ("# raw\nx\n# endraw", LINES),          # raw blocks have no line form
    ("<!---->x", dict(comment_start_string="<!--", comment_end_string="-->")),  # `-` is the opener's
    ("\\BLOCK{ if n }", LATEX),
]


@pytest.mark.parametrize("source, options", REFUSED_BY_BOTH)
def test_what_jinja2_refuses_with_custom_delimiters_is_a_syntax_error(source, options):
    with pytest.raises(jinja2.TemplateSyntaxError):
        jinja2.Environment(**options).from_string(source)
    with pytest.raises(jinjamark.TemplateSyntaxError):
        jinjamark.Environment(**options).from_string(source)


def test_options_pass_through_chat_environment():
    env = jinjamark.chat_environment(**SETS["angle"])
    assert env.from_string("<% for m in ms %><< m >>\n<% endfor %>").render(ms=[1, 2]) == "1\n2\n"
    assert env.delimiters.block_start_string == "<%"


def test_environments_with_other_delimiters_do_not_share_templates():
    source = "{{ 1 }}<< 2 >>"
    assert jinjamark.Environment().from_string(source).render() == "1<< 2 >>"
    assert jinjamark.Environment(**ANGLE).from_string(source).render() == "{{ 1 }}2"


# ---------------------------------------------------------------------------- 3. syntax errors

ERRORS = [
    # (source, options, message start, line, column)
    ("a\n<% if n %>\n<% endfor %>", ANGLE, "Encountered unknown tag 'endfor'", 3, 1),
    ("a\n<% frob %>", ANGLE, "Encountered unknown tag 'frob'", 2, 1),
    ("x\n  <# open", ANGLE, "Missing end of comment tag", 2, 3),
    ("<% raw %>x", ANGLE, "Missing end of raw directive", 1, 1),
    ("<< 1 + >>", ANGLE, "unexpected", 1, 8),
    ("a\n<% if n %>b", ANGLE, "Unexpected end of template. Jinja was looking for the following tags: "
                            "'elif' or 'else' or 'endif'", 2, 12),
    ("ok\n# if n\n# frob\n", LINES, "Encountered unknown tag 'frob'", 3, 1),
    ("ok\n# if n\nb", LINES, "Unexpected end of template. Jinja was looking for the following tags: "
                            "'elif' or 'else' or 'endif'", 3, 2),
    ("\\BLOCK{ for x in xs }\\BLOCK{ endif }", LATEX, "Encountered unknown tag 'endif'", 1, 22),
    ("<%= n +%>", ERB, "unexpected", 1, 7),
]


@pytest.mark.parametrize("source, options, message, line, column", ERRORS)
def test_syntax_errors_with_custom_delimiters_say_where(source, options, message, line, column):
    with pytest.raises(jinjamark.TemplateSyntaxError) as caught:
        jinjamark.Environment(**options).from_string(source, name="t.txt")
    error = caught.value
    assert error.message.startswith(message), error.message
    assert (error.name, error.lineno, error.column) == ("t.txt", line, column)
    shown = str(error).splitlines()
    assert shown[1] == f'  File "t.txt", line {line}, column {column}'
    assert shown[3] == "    " + " " * (column - 1) + "^"


@pytest.mark.parametrize("name", sorted(SETS))
@pytest.mark.parametrize("junk", ["", "x", "\n", "a\nb", ")", "]]", "}", "'", "%", "\\"])
def test_no_exception_but_template_errors_escape_with_custom_delimiters(name, junk):
    opts = SETS[name]
    env = jinjamark.Environment(**opts)
    pieces = [v for k, v in opts.items() if v and k.endswith(("string", "prefix"))]
    for a in pieces:
        for b in pieces:
            try:
                env.from_string(a + junk + b + junk + a).render()
            except jinjamark.TemplateError:
                pass


# ---------------------------------------------------------------------------- 4. extensions

@pytest.mark.parametrize("name", ["angle", "latex", "erb", "parens", "hash_lines"])
def test_shipped_extensions_work_with_custom_delimiters(name):
    opts = SETS[name]
    bs, be = opts["block_start_string"], opts["block_end_string"]
    vs, ve = opts["variable_start_string"], opts["variable_end_string"]
    source = (f"{bs} set ns = namespace(items=[]) {be}{bs} for x in xs {be}{bs} if x == 1 {be}"
              f"{bs} continue {be}{bs} endif {be}{bs} if x > 5 {be}{bs} break {be}{bs} endif {be}"
              f"{bs} do ns.items.append(x) {be}{bs} generation {be}[{vs} x {ve}]{bs} endgeneration {be}"
              f"{bs} endfor {be}{vs} ns.items|length {ve}")
    theirs = SandboxedEnvironment(extensions=[Generation, "jinja2.ext.loopcontrols", "jinja2.ext.do"], **opts)
    ours = jinjamark.Environment(extensions=["loopcontrols", "do", "generation"], **opts)
    assert theirs.from_string(source).render(xs=[3, 1, 2, 9, 4]) == "[3][2]2"
    assert ours.from_string(source).render(xs=[3, 1, 2, 9, 4]) == "[3][2]2"


def test_loop_controls_as_line_statements():
    source = "# for x in xs\n# if x == 1\n# continue\n# endif\n{{ x }}\n# if x > 5\n# break\n# endif\n# endfor\n"
    opts = dict(LINES, extensions=("jinja2.ext.loopcontrols",))
    want = jinja2.Environment(**opts).from_string(source).render(xs=[3, 1, 2, 9, 4])
    assert want == "3\n2\n9\n"
    assert jinjamark.Environment(**opts).from_string(source).render(xs=[3, 1, 2, 9, 4]) == want


def test_chat_profile_with_custom_delimiters_renders_as_transformers_would():
    opts = SETS["angle"]
    source = ("<% for m in messages %><|<< m.role >>|><< m.content >>\n<% endfor %>"
              "<% if add_generation_prompt %><% generation %><|assistant|><% endgeneration %><% endif %>"
              "<< messages|tojson >>")
    theirs = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                           extensions=[Generation, "jinja2.ext.loopcontrols"], **opts)
    theirs.filters["tojson"] = tojson
    context = dict(messages=[{"role": "user", "content": "hi <|x|>"}], add_generation_prompt=True)
    want = theirs.from_string(source).render(**context)
    template = jinjamark.chat_environment(**opts).from_string(source)
    assert template.render(jinjamark.mark_input(context)) == want
    parts = template.render_parts(jinjamark.mark_input(context))
    assert "".join(p.text for p in parts) == want
    assert [p.text for p in parts[:4]] == ["<|", "user", "|>", "hi <|x|>"]
    assert [p.is_input for p in parts[:4]] == [False, True, False, True]


# ---------------------------------------------------------------------------- 5. the grammar

def test_default_delimiters_leave_the_grammar_text_unchanged():
    shipped = tuple(Syntax(n, extension_grammar(n + ".lark")) for n in ("loopcontrols", "do", "generation"))
    assert Parser().grammar == core_grammar()
    assert Parser(shipped).grammar == "\n".join([core_grammar()] + [s.grammar for s in shipped])
    assert get_parser(shipped, delimiters=Delimiters()) is get_parser(shipped)


class DefaultStringsGenerated(Delimiters):
    """The default strings, sent down the path for custom delimiters."""
    is_default = property(lambda self: False)


def test_the_generated_path_with_the_default_strings_renders_the_corpus_as_the_shipped_grammar():
    # The rewritten grammar, the tag stream and its whitespace facts, checked on real templates.
    shipped = jinjamark.chat_environment()
    generated = jinjamark.chat_environment()
    generated._parser = Parser(shipped._parser.syntaxes, delimiters=DefaultStringsGenerated())
    fixtures = conversations()
    for i, (stem, source) in enumerate(chat_templates()[::3]):
        fixture = fixtures[i % len(fixtures)][1]
        context = dict(messages=fixture["messages"], tools=fixture.get("tools"),
                       add_generation_prompt=True, bos_token="<s>", eos_token="</s>")
        assert outcome(generated.from_string(source).render, context).describe() == \
            outcome(shipped.from_string(source).render, context).describe(), stem


def test_custom_delimiters_have_a_parser_of_their_own():
    angle = Delimiters(**ANGLE)
    assert get_parser(delimiters=angle) is get_parser(delimiters=Delimiters(**ANGLE))
    assert get_parser(delimiters=angle) is not get_parser()
    grammar = get_parser(delimiters=angle).grammar
    assert "<%" in grammar and "\\{%" not in grammar  # no opener regex for the defaults is left


@pytest.mark.parametrize("name", sorted(SETS))
def test_generated_grammars_build_in_lark_strict_mode(name):
    shipped = tuple(Syntax(n, extension_grammar(n + ".lark")) for n in ("loopcontrols", "do", "generation"))
    Parser(shipped, strict=True, delimiters=Delimiters(**SETS[name]))


INVALID = [
    (dict(block_start_string=""), ValueError, "must not be empty"),
    (dict(comment_end_string=""), ValueError, "must not be empty"),
    (dict(line_statement_prefix=""), ValueError, "must not be empty"),
    (dict(line_comment_prefix=""), ValueError, "must not be empty"),
    (dict(block_start_string="{{"), ValueError, "must be different"),
    (dict(comment_start_string="{%"), ValueError, "must be different"),
    (dict(variable_start_string="<%", block_start_string="<%"), ValueError, "must be different"),
    (dict(block_end_string="}"), ValueError, "neither may start with the other"),
    (dict(variable_end_string="%}}"), ValueError, "neither may start with the other"),
    (dict(block_end_string="%}\r"), ValueError, "must not contain"),
    (dict(line_statement_prefix="#\n"), ValueError, "must not contain a line break"),
    (dict(block_start_string=1), TypeError, "must be a string"),
    (dict(line_comment_prefix=b"#"), TypeError, "must be a string or None"),
]


@pytest.mark.parametrize("options, error, message", INVALID)
def test_unusable_delimiters_are_refused_when_the_environment_is_made(options, error, message):
    with pytest.raises(error, match=message):
        jinjamark.Environment(**options)

