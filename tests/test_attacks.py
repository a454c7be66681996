"""Resource attacks: templates built to make one render run long or grow large. Each one ends in
`LimitExceeded`, fast, without the memory to match.

Every attack runs in a child process of its own (a missing bound must not take the test run, or
the machine, with it): first under the default limits, where it must raise `LimitExceeded`
within 2 s, then under `Limits(deadline=0.5)`, where it must stop within 1 s. The child reports
its peak memory (`resource.getrusage`), which must stay under 500 MB; an address-space cap of
2 GB turns a missing bound into a clean failure instead of a machine out of memory. Children run
two at a time (this machine has two cores).

The attacks are the classes of issue 12: one step walking a structure of 2^40 leaves built by
sharing (`[x, x]` doubled 40 times), `lipsum` and `str.format` / `%` building past the output
limit, and cheap loops of steps that each process ten million characters or items.
"""
from __future__ import annotations

import concurrent.futures
import json
import subprocess
import sys

import pytest

DEFAULT_BOUND = 2.0    # seconds of CPU under the default limits
DEADLINE = 0.5         # Limits(deadline=...) in the second run
DEADLINE_BOUND = 1.0   # seconds with that deadline
MEMORY_BOUND = 500     # MB of peak resident memory of the child
CHILD_TIMEOUT = 20     # seconds: a child past this is a hang

# Structures of 2^40 leaves that take 40 list (or tuple, dict) cells each: x, and y equal to x
# but not the same object (so that comparing them cannot stop at identity).
SHARED = ("{% set ns = namespace(x=[1], y=[1], t=(1,), u=(1,), d={}, e={}) %}"
          "{% for i in range(40) %}{% set ns.x = [ns.x, ns.x] %}{% set ns.y = [ns.y, ns.y] %}"
          "{% set ns.t = (ns.t, ns.t) %}{% set ns.u = (ns.u, ns.u) %}"
          "{% set ns.d = {'a': ns.d, 'b': ns.d} %}{% set ns.e = {'a': ns.e, 'b': ns.e} %}"
          "{% endfor %}")
# Ten million characters (the largest `'a' * n` the defaults allow), stepped over 100,000 times.
BIG = "{% set s = 'a' * 10000000 %}{% set t = 'a' * 9999999 ~ 'a' %}"
LOOP = "{% for i in range(100000) %}"
BIG_LIST = "{% set l = [0] * 10000000 %}"

ATTACKS: list[tuple[str, str]] = [
    # one step over a structure of 2^40 leaves
    ("shared-print", SHARED + "{{ ns.x }}"),
    ("shared-escape", SHARED + "{{ ns.x|e }}"),
    ("shared-forceescape", SHARED + "{{ ns.x|forceescape }}"),
    ("shared-string", SHARED + "{{ ns.x|string }}"),
    ("shared-tojson", SHARED + "{{ ns.x|tojson }}"),
    ("shared-pprint", SHARED + "{{ ns.x|pprint }}"),
    ("shared-join", SHARED + "{{ ns.x|join }}"),
    ("shared-upper", SHARED + "{{ ns.x|upper }}"),
    ("shared-concat", SHARED + "{{ (ns.x ~ '')|length }}"),
    ("shared-eq", SHARED + "{{ ns.x == ns.y }}"),
    ("shared-lt", SHARED + "{{ ns.x < ns.y }}"),
    ("shared-in", SHARED + "{{ ns.x in [ns.y] }}"),
    ("shared-eq-test", SHARED + "{{ ns.x is eq ns.y }}"),
    ("shared-in-test", SHARED + "{{ ns.x is in [ns.y] }}"),
    ("shared-max", SHARED + "{{ [ns.x, ns.y]|max|length }}"),
    ("shared-min", SHARED + "{{ [ns.x, ns.y]|min|length }}"),
    ("shared-sort", SHARED + "{{ [ns.x, ns.y]|sort|length }}"),
    ("shared-index", SHARED + "{{ [ns.y].index(ns.x) }}"),
    ("shared-count", SHARED + "{{ [ns.y].count(ns.x) }}"),
    ("shared-select-eq", SHARED + "{{ [ns.y]|select('eq', ns.x)|list|length }}"),
    ("shared-changed", SHARED + "{% for v in [ns.x, ns.y] %}{{ loop.changed(v) }}{% endfor %}"),
    ("shared-dict-eq", SHARED + "{{ ns.d == ns.e }}"),
    ("shared-dictsort", SHARED + "{{ {'a': ns.x, 'b': ns.y}|dictsort(by='value')|length }}"),
    ("shared-tuple-unique", SHARED + "{{ [ns.t, ns.u]|unique|list|length }}"),
    ("shared-tuple-key", SHARED + "{{ {ns.t: 1}|length }}"),
    ("shared-percent", SHARED + "{{ '%s' % (ns.x,) }}"),
    ("shared-format-method", SHARED + "{{ '{}'.format(ns.x) }}"),
    ("shared-format-filter", SHARED + "{{ '%s'|format(ns.x) }}"),
    ("shared-raise-exception", SHARED + "{{ raise_exception(ns.x) }}"),
    # lipsum and formats that build past the output limit
    ("lipsum-paragraphs", "{{ lipsum(10**9)|length }}"),
    ("lipsum-words", "{{ lipsum(1, max=10**9)|length }}"),
    ("lipsum-loop", LOOP + "{{ lipsum(100)|length }}{% endfor %}"),
    ("format-repeated-field", BIG + "{{ ('{0}' * 1000).format(s)|length }}"),
    ("format-map-repeated-field", BIG + "{{ ('{a}' * 1000).format_map({'a': s})|length }}"),
    ("percent-repeated-key", BIG + "{{ (('%(a)s' * 1000) % {'a': s})|length }}"),
    ("expandtabs", "{{ ('\\t' * 10000000).expandtabs(8)|length }}"),
    # cheap loops of steps that each process ten million characters or items
    ("loop-in", BIG + LOOP + "{% if 'b' in s %}{% endif %}{% endfor %}"),
    ("loop-eq", BIG + LOOP + "{% if s == t %}{% endif %}{% endfor %}"),
    ("loop-count", BIG + LOOP + "{{ s.count('b') }}{% endfor %}"),
    ("loop-find", BIG + LOOP + "{{ s.find('b') }}{% endfor %}"),
    ("loop-upper", BIG + LOOP + "{{ s.upper()|length }}{% endfor %}"),
    ("loop-escape", BIG + LOOP + "{{ (s|e)|length }}{% endfor %}"),
    ("loop-replace", BIG + LOOP + "{{ s.replace('a', 'b')|length }}{% endfor %}"),
    ("loop-wordcount", BIG + LOOP + "{{ s|wordcount }}{% endfor %}"),
    ("loop-slice", BIG + LOOP + "{{ s[1:]|length }}{% endfor %}"),
    ("loop-concat", BIG + LOOP + "{{ (s ~ 'x')|length }}{% endfor %}"),
    ("loop-split", BIG + LOOP + "{{ s.split('a')|length }}{% endfor %}"),
    ("loop-tojson", BIG + LOOP + "{{ s|tojson|length }}{% endfor %}"),
    ("loop-striptags", BIG + LOOP + "{{ s|striptags|length }}{% endfor %}"),
    ("loop-list-in", BIG_LIST + LOOP + "{% if 5 in l %}{% endif %}{% endfor %}"),
    ("loop-list-max", BIG_LIST + LOOP + "{{ l|max }}{% endfor %}"),
    ("loop-list-join", BIG_LIST + LOOP + "{{ l|join|length }}{% endfor %}"),
    ("loop-list-sort", BIG_LIST + LOOP + "{{ l|sort|length }}{% endfor %}"),
    ("string-unique", BIG + "{{ s|unique|list|length }}"),
    ("string-map", BIG + "{{ s|map('upper')|list|length }}"),
    ("string-select", BIG + "{{ s|select|list|length }}"),
    ("string-batch", BIG + "{{ s|batch(1)|list|length }}"),
    ("string-list-sort", BIG + "{{ s|list|sort|length }}"),
    ("wordwrap", "{{ ('a ' * 5000000)|wordwrap(79)|length }}"),
    ("urlize", "{{ ('a.b ' * 2500000)|urlize|length }}"),
    ("title", BIG + LOOP + "{{ s|title|length }}{% endfor %}"),
    ("sum-quadratic", "{{ ([[0] * 10000] * 1000)|sum(start=[])|length }}"),
    ("list-concat-memory", BIG_LIST + "{{ (l + l + l + l + l)|length }}"),
    ("repeat-hoard", "{% set ns = namespace(l=[]) %}{% for i in range(100) %}"
                     "{% set ns.l = [ns.l, [0] * 10000000] %}{% endfor %}"),
    ("repeat-hoard-wide", "{% set ns = namespace(l=[]) %}{% for i in range(100) %}"
                          "{% set ns.l = [ns.l, '\U0001F600' * 10000000] %}{% endfor %}"),
    ("shared-namespace-print", SHARED + "{% set n = namespace(v=ns.x) %}{{ n }}"),
    ("shared-namespace-percent", SHARED + "{% set n = namespace(v=ns.x) %}{{ '%s' % n }}"),
    ("shared-namespace-raise", SHARED + "{% set n = namespace(v=ns.x) %}{{ raise_exception([n]) }}"),
    ("shared-set-view-print", SHARED + "{{ {'a': ns.x}.values() }}"),
    ("shared-urlencode", SHARED + "{{ {'a': ns.x}|urlencode }}"),
    ("shared-dict-global", SHARED + "{{ dict([(ns.t, 1)])|length }}"),
    ("range-scan", "{% set r = range(100000) %}" + LOOP + "{% if 'a' in r %}{% endif %}{% endfor %}"),
    ("percent-many-conversions", "{{ ('%%' * 5000000) % () }}"),
]

CHILD = r"""
import gc, json, resource, sys, time
resource.setrlimit(resource.RLIMIT_AS, (2 << 30, resource.RLIM_INFINITY))
import jinjamark
from jinjamark.evaluation.compiling import tiers
source = sys.argv[1]
report = {}
for mode, limits in (("default", jinjamark.Limits()), ("deadline", jinjamark.Limits(deadline=%r)),
                     ("generated", jinjamark.Limits())):
    tiers.HOT = 1 if mode == "generated" else 2  # the second tier, as a template rendered often runs
    env = jinjamark.chat_environment(limits=limits)
    template = env.from_string(source)
    start = time.perf_counter() if mode == "deadline" else time.process_time()
    try:
        template.render()
        outcome = "rendered"
    except jinjamark.LimitExceeded as e:
        outcome = "LimitExceeded"
    except Exception as e:
        outcome = type(e).__name__ + ": " + str(e)[:200]
    # the deadline is wall clock; otherwise the CPU the render took (a busy machine cannot
    # make an attack look slow)
    report[mode] = (outcome, (time.perf_counter() if mode == "deadline" else time.process_time()) - start)
    gc.collect()  # a failed render's values are in cycles with its traceback: freed here
report["memory_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(report))
""" % DEADLINE


def run_attack(source: str) -> dict:
    try:
        done = subprocess.run([sys.executable, "-c", CHILD, source], capture_output=True,
                              text=True, timeout=CHILD_TIMEOUT)
    except subprocess.TimeoutExpired:
        return {"error": f"ran past {CHILD_TIMEOUT} s"}
    if done.returncode != 0:
        return {"error": f"exit {done.returncode}: {done.stderr[-1500:]}"}
    return json.loads(done.stdout.splitlines()[-1])


@pytest.fixture(scope="module")
def reports() -> dict[str, dict]:
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        futures = {name: pool.submit(run_attack, source) for name, source in ATTACKS}
        return {name: future.result() for name, future in futures.items()}


def test_there_are_at_least_forty_attacks():
    assert len(ATTACKS) >= 40
    assert len({name for name, _ in ATTACKS}) == len(ATTACKS)


@pytest.mark.parametrize("name", [name for name, _ in ATTACKS])
def test_an_attack_ends_in_limit_exceeded_fast_and_small(name, reports):
    report = reports[name]
    assert "error" not in report, report.get("error")
    outcome, elapsed = report["default"]
    assert outcome == "LimitExceeded", f"{name} under the default limits: {outcome}"
    assert elapsed < DEFAULT_BOUND, f"{name}: LimitExceeded after {elapsed:.2f} s"
    outcome, elapsed = report["deadline"]
    assert outcome == "LimitExceeded", f"{name} with a deadline: {outcome}"
    assert elapsed < DEADLINE_BOUND, f"{name}: stopped after {elapsed:.2f} s with a deadline"
    outcome, elapsed = report["generated"]
    assert outcome == "LimitExceeded", f"{name} as generated code: {outcome}"
    assert elapsed < DEFAULT_BOUND, f"{name} as generated code: LimitExceeded after {elapsed:.2f} s"
    assert report["memory_mb"] < MEMORY_BOUND, f"{name}: {report['memory_mb']:.0f} MB"


# ---------------------------------------------------------------------------- hostile input
# The same structures given as input: a conversation, a keyword argument or tools whose data is
# 2^40 paths through 40 containers. Every walk that cleans or marks input copies what it meets,
# so each would take forever; they are refused with LimitExceeded once a million containers
# are met (values/inputs.py, check_input). Each shape runs in a child process of its own.

INPUT_CHILD = r"""
import dataclasses, json, resource, sys, time
resource.setrlimit(resource.RLIMIT_AS, (2 << 30, resource.RLIM_INFINITY))
import jinjamark

@dataclasses.dataclass
class Pair:
    left: object
    right: object

shape = sys.argv[1]
value = {"list": [], "tuple": (), "dict": {}, "dataclass": 0}[shape]
for _ in range(40):
    value = {"list": lambda: [value, value], "tuple": lambda: (value, value),
             "dict": lambda: {"a": value, "b": value}, "dataclass": lambda: Pair(value, value)}[shape]()
chat = jinjamark.ChatTemplate("{% for m in messages %}{{ m.content|length }}{% endfor %}{{ x is defined }}"
                              "{{ tools is defined }}")  # each walked only when read
user = [{"role": "user", "content": "hi"}]
tool = [{"type": "function", "function": {"name": "f", "parameters": value}}]
calls = {
    "render": lambda: chat.render([{"role": "user", "content": value}]),
    "render_parts": lambda: chat.render_parts([{"role": "user", "content": value}]),
    "origins": lambda: chat.render_parts([{"role": "user", "content": value}], origins=True),
    "tool_calls": lambda: chat.render([{"role": "assistant", "tool_calls": [value]}]),
    "kwarg": lambda: chat.render_parts(user, x=value),
    # a large message first spends what marking does on trust: the next is checked all the same
    "after_large": lambda: chat.render_parts([{"role": "user", "content": [{"type": "text", "text": "a"}] * 20000},
                                              {"role": "user", "content": value}]),
    "tools": lambda: chat.render_parts(user, tools=tool, origins=True),
    "mark_input": lambda: jinjamark.mark_input({"x": value}),
}
report = {}
for name, call in calls.items():
    start = time.process_time()
    try:
        call()
        outcome = "rendered"
    except jinjamark.LimitExceeded:
        outcome = "LimitExceeded"
    except Exception as e:
        outcome = type(e).__name__ + ": " + str(e)[:200]
    report[name] = (outcome, time.process_time() - start)
report["memory_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(report))
"""
INPUT_SHAPES = ("list", "tuple", "dict", "dataclass")
INPUT_CALLS = ("render", "render_parts", "origins", "tool_calls", "kwarg", "after_large", "tools", "mark_input")


@pytest.fixture(scope="module")
def input_reports() -> dict[str, dict]:
    def run(shape: str) -> dict:
        try:
            done = subprocess.run([sys.executable, "-c", INPUT_CHILD, shape], capture_output=True,
                                  text=True, timeout=CHILD_TIMEOUT * 4)
        except subprocess.TimeoutExpired:
            return {"error": f"ran past {CHILD_TIMEOUT * 4} s"}
        if done.returncode != 0:
            return {"error": f"exit {done.returncode}: {done.stderr[-1500:]}"}
        return json.loads(done.stdout.splitlines()[-1])
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        return dict(zip(INPUT_SHAPES, pool.map(run, INPUT_SHAPES)))


@pytest.mark.parametrize("shape", INPUT_SHAPES)
@pytest.mark.parametrize("call", INPUT_CALLS)
def test_input_shared_into_two_to_the_forty_paths_is_refused_fast_and_small(shape, call, input_reports):
    report = input_reports[shape]
    assert "error" not in report, report.get("error")
    outcome, elapsed = report[call]
    assert outcome == "LimitExceeded", f"{call} of a {shape} of 2^40 paths: {outcome}"
    assert elapsed < DEFAULT_BOUND, f"{call} of a {shape}: LimitExceeded after {elapsed:.2f} s"
    assert report["memory_mb"] < MEMORY_BOUND, f"{shape}: {report['memory_mb']:.0f} MB"
