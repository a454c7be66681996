"""One environment, many threads: the same outputs as serial rendering, and failures that leave
nothing behind.

An `Environment` (and a `chat_environment()`) is shared by 8 threads rendering different corpus
templates with different conversations, as text and as parts; every output must equal the one
a serial render gives. A render that fails (a syntax error, `raise_exception`, a SecurityError, a
`LimitExceeded` under a tiny limit) leaves the environment, its template cache and its limits as
they were: the next render, in this thread or another, is unaffected.
"""
from __future__ import annotations

import random
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

import jinjamark
import oracle
from conftest import chat_templates, conversations

THREADS = 8
TEMPLATES = chat_templates()[::5]  # every fifth corpus template: about 45, all families
CONVERSATIONS = conversations()


@pytest.fixture(autouse=True)
def frequent_thread_switches():
    """Switch threads every microsecond, so that renders interleave inside each other."""
    saved = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(saved)


def outcome_of(fn, *args, **kwargs):
    """A comparable result: ('ok', value) or ('error', class name, first line of the message)."""
    try:
        return ("ok", fn(*args, **kwargs))
    except jinjamark.TemplateError as e:
        return ("error", type(e).__name__, str(e).splitlines()[0] if str(e) else "")


def run_threads(jobs: list, work) -> list:
    """Run `work(job)` for every job on THREADS threads, all starting together; results in order."""
    barrier = threading.Barrier(THREADS)

    def first_waits(job_and_index):
        index, job = job_and_index
        if index < THREADS:
            barrier.wait(timeout=30)
        return work(job)

    with ThreadPoolExecutor(max_workers=THREADS) as pool:
        return list(pool.map(first_waits, enumerate(jobs)))


def chat_jobs() -> list[tuple]:
    jobs = []
    for i, (name, source) in enumerate(TEMPLATES):
        for j, (fname, fixture) in enumerate(CONVERSATIONS):
            if (i + j) % 5 == 0:  # a fifth of the pairs, spread over all of both
                jobs.append((name, source, fname, fixture, (i + j) % 2 == 0))
    return jobs


def render_chat_job(env: jinjamark.Environment, job: tuple, parts: bool):
    name, source, fname, fixture, agp = job

    def render():
        chat = jinjamark.ChatTemplate(source, special_tokens=dict(oracle.SPECIAL_TOKENS),
                                      now=lambda: oracle.FIXED_NOW, environment=env, name=name)
        method = chat.render_parts if parts else chat.render
        out = method(fixture["messages"], tools=fixture.get("tools"),
                     documents=fixture.get("documents"), add_generation_prompt=agp,
                     **(fixture.get("kwargs") or {}))
        return [(p.text, p.is_input) for p in out] if parts else out
    return outcome_of(render)


@pytest.mark.parametrize("parts", [False, True], ids=["text", "parts"])
def test_a_shared_chat_environment_renders_as_serially_on_eight_threads(parts):
    jobs = chat_jobs()
    alone = jinjamark.chat_environment()
    serial = [render_chat_job(alone, job, parts) for job in jobs]
    assert sum(1 for o in serial if o[0] == "ok") > len(jobs) // 2

    shared = jinjamark.chat_environment()
    order = list(range(len(jobs))) * 2  # every job twice: once parsing, once from the cache
    random.Random(4).shuffle(order)
    results = run_threads(order, lambda i: (i, render_chat_job(shared, jobs[i], parts)))
    for i, got in results:
        assert got == serial[i], f"{jobs[i][0]} x {jobs[i][2]} differs under threads"


PLAIN_TEMPLATES = [
    # stateful runtime objects are made per render: threads must not share them
    ("{% set c = cycler('a', 'b', 'c') %}{% for i in range(n) %}{{ c.next() }}{% endfor %}",
     lambda n: "".join("abc"[i % 3] for i in range(n))),
    ("{% set ns = namespace(total=0) %}{% for i in range(n) %}{% set ns.total = ns.total + i %}"
     "{% endfor %}{{ ns.total }}", lambda n: str(sum(range(n)))),
    ("{% set j = joiner('+') %}{% for i in range(n) %}{{ j() }}{{ i }}{% endfor %}",
     lambda n: "+".join(str(i) for i in range(n))),
    ("{% macro m(k) %}{% if k %}{{ k }}{{ m(k - 1) }}{% endif %}{% endmacro %}{{ m(n % 20) }}",
     lambda n: "".join(str(k) for k in range(n % 20, 0, -1))),
    ("{% for i in range(n) %}{% if loop.changed(i // 3) %}|{% endif %}{{ loop.index }}"
     "{% endfor %}", lambda n: "".join(("|" if i % 3 == 0 else "") + str(i + 1) for i in range(n))),
    ("{{ range(n)|map('string')|join(',') }}", lambda n: ",".join(str(i) for i in range(n))),
    ("{{ '%05d'|format(n) }}-{{ '{:>6}'.format(n) }}", lambda n: f"{n:05d}-{n:>6}"),
]


def test_a_shared_plain_environment_renders_as_serially_on_eight_threads():
    env = jinjamark.Environment()
    jobs = [(k, n) for n in range(1, 60) for k in range(len(PLAIN_TEMPLATES))]
    random.Random(7).shuffle(jobs)

    def work(job):
        k, n = job
        source, _ = PLAIN_TEMPLATES[k]
        return env.from_string(source).render(n=n)

    results = run_threads(jobs, work)
    for (k, n), got in zip(jobs, results):
        assert got == PLAIN_TEMPLATES[k][1](n), (PLAIN_TEMPLATES[k][0], n)


def test_one_template_object_rendered_by_eight_threads_at_once():
    env = jinjamark.chat_environment()
    template = env.from_string("{% for m in messages %}{{ loop.index }}:{{ m.content }}"
                               "{% if not loop.last %}|{% endif %}{% endfor %}")
    jobs = list(range(200))

    def work(n):
        messages = [{"role": "user", "content": f"t{n}-{i}"} for i in range(n % 17)]
        return n, template.render(messages=messages)

    for n, got in run_threads(jobs, work):
        assert got == "|".join(f"{i + 1}:t{n}-{i}" for i in range(n % 17))


# ---------------------------------------------------------------------------- limits stay per render

def test_limits_of_one_environment_never_reach_another_thread():
    tight = jinjamark.Environment(limits=jinjamark.Limits(max_range=10, max_format_width=5))
    loose = jinjamark.Environment()
    source = "{{ range(50)|length }}{{ '%20s'|format('x')|length }}{{ 'x'|center(30)|length }}"
    jobs = [i % 2 == 0 for i in range(400)]

    def work(use_tight):
        return outcome_of((tight if use_tight else loose).from_string(source).render)

    for use_tight, got in zip(jobs, run_threads(jobs, work)):
        if use_tight:
            # range's refusal is a LimitExceeded of its own kind (an OverflowError too, as Jinja2's)
            assert got[0] == "error" and got[1] in ("LimitExceeded", "RangeTooBig"), got
        else:
            assert got == ("ok", "502030"), got


def test_a_render_inside_a_render_restores_the_outer_limits():
    """An embedder's callable may render another environment's template mid-render."""
    inner_env = jinjamark.Environment()
    outer_env = jinjamark.Environment(limits=jinjamark.Limits(max_range=10))
    outer_env.globals["inner"] = lambda: inner_env.from_string("{{ range(50)|length }}").render()
    assert outer_env.from_string("{{ inner() }};{{ range(5)|length }}").render() == "50;5"
    template = outer_env.from_string("{{ inner() }};\n{{ range(20)|length }}")
    with pytest.raises(jinjamark.LimitExceeded) as caught:
        template.render()
    assert caught.value.lineno == 2, "the outer template's own range is refused, after inner()"


# ---------------------------------------------------------------------------- recovery from failures

GOOD = "{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}"
MESSAGES = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
EXPECTED = "<user>hi<assistant>hello"

FAILURES = [
    ("syntax-error", "{% for m in messages %}{{ m.content }", jinjamark.TemplateSyntaxError),
    ("unknown-filter", "{{ messages|no_such_filter }}", jinjamark.TemplateAssertionError),
    ("raise-exception", "{{ raise_exception('refused: ' ~ messages|length) }}",
     jinjamark.TemplateError),
    ("security-error", "{{ messages.append(1) }}", jinjamark.SecurityError),
    ("dunder", "{{ messages.__class__.__mro__ }}", jinjamark.SecurityError),
    ("undefined-call", "{{ nothing() }}", jinjamark.UndefinedError),
    ("type-error", "{{ messages + 1 }}", jinjamark.TemplateRuntimeError),
    ("recursion", "{% macro m() %}{{ m() }}{% endmacro %}{{ m() }}", jinjamark.LimitExceeded),
    ("range", "{{ range(10**9)|length }}", jinjamark.LimitExceeded),
    ("repeat", "{{ 'a' * 10**12 }}", jinjamark.LimitExceeded),
    ("failure-mid-loop", "{% for m in messages %}{{ m.content }}{% if loop.last %}"
                         "{{ raise_exception('late') }}{% endif %}{% endfor %}",
     jinjamark.TemplateError),
    ("failure-in-macro", "{% macro m() %}x{{ 1 // 0 }}{% endmacro %}{{ m() }}",
     jinjamark.TemplateRuntimeError),
    ("failure-in-set-block", "{% set x %}{{ 'a' * 10**12 }}{% endset %}{{ x }}",
     jinjamark.LimitExceeded),
]


def _fail(env: jinjamark.Environment, source: str, expected: type) -> jinjamark.TemplateError:
    with pytest.raises(expected) as caught:
        env.from_string(source).render(messages=MESSAGES)
    return caught.value


@pytest.mark.parametrize("source,expected", [(s, e) for _, s, e in FAILURES],
                         ids=[i for i, _, _ in FAILURES])
def test_a_failed_render_leaves_the_environment_and_its_cache_usable(source, expected):
    env = jinjamark.chat_environment()
    good = env.from_string(GOOD)
    assert good.render(messages=MESSAGES) == EXPECTED
    first = _fail(env, source, expected)
    assert env.from_string(GOOD) is good, "the cached template survives"
    assert good.render(messages=MESSAGES) == EXPECTED
    assert env.from_string(GOOD).render_parts(messages=MESSAGES)
    again = _fail(env, source, expected)  # the failure is the same failure, every time
    assert type(again) is type(first) and str(again) == str(first)
    assert good.render(messages=MESSAGES) == EXPECTED


def test_a_limit_stopped_render_on_a_tiny_limit_environment_leaves_it_usable():
    tiny = jinjamark.chat_environment(limits=jinjamark.Limits(max_loop_iterations=5,
                                                              max_output=200))
    name, source = next((n, s) for n, s in chat_templates() if "chatml" in n)
    chat = jinjamark.ChatTemplate(source, environment=tiny)
    many = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"m{i}"} for i in range(9)]
    few = many[:3]
    expected_few = jinjamark.ChatTemplate(source).render(few)
    for _ in range(3):
        with pytest.raises(jinjamark.LimitExceeded):
            chat.render(many)
        with pytest.raises(jinjamark.LimitExceeded):
            chat.render_parts(many)
        assert chat.render(few) == expected_few
    assert tiny.from_string(source) is chat.template


def test_failing_renders_interleaved_with_good_ones_on_eight_threads():
    """Half the threads' renders fail, in every way above; the others' outputs are untouched."""
    env = jinjamark.chat_environment()
    tiny = jinjamark.chat_environment(limits=jinjamark.Limits(max_loop_iterations=1))
    jobs = [("good", None)] * 80 + [(kind, (s, e)) for kind, s, e in FAILURES] * 6
    jobs.append(("tiny-limit", None))
    jobs = jobs * 2
    random.Random(11).shuffle(jobs)

    def work(job):
        kind, case = job
        if kind == "good":
            return env.from_string(GOOD).render(messages=MESSAGES)
        if kind == "tiny-limit":
            return outcome_of(tiny.from_string(GOOD).render, messages=MESSAGES)
        source, expected = case
        try:
            env.from_string(source).render(messages=MESSAGES)
        except expected as e:
            return ("failed", type(e).__name__)
        return ("did not fail", source)

    for (kind, case), got in zip(jobs, run_threads(jobs, work)):
        if kind == "good":
            assert got == EXPECTED
        elif kind == "tiny-limit":
            assert got[:2] == ("error", "LimitExceeded")
        else:
            assert got[0] == "failed", got
    assert env.from_string(GOOD).render(messages=MESSAGES) == EXPECTED


def test_an_embedder_callable_that_raises_leaves_the_environment_usable():
    env = jinjamark.Environment()
    calls = []

    def flaky(n):
        calls.append(n)
        if n % 2:
            raise ValueError("odd")
        return n

    env.globals["flaky"] = flaky
    template = env.from_string("{{ flaky(n) }}")
    for n in range(6):
        if n % 2:
            with pytest.raises(jinjamark.TemplateRuntimeError):
                template.render(n=n)
        else:
            assert template.render(n=n) == str(n)
    assert calls == list(range(6))


def test_the_template_cache_stays_consistent_under_concurrent_parsing():
    """Many threads asking for the same sources at once get working templates; once cached, the
    same object comes back for a source."""
    env = jinjamark.Environment()
    sources = [f"{{{{ {i} + n }}}}" for i in range(50)]
    jobs = sources * 8
    random.Random(3).shuffle(jobs)
    results = run_threads(jobs, lambda s: (s, env.from_string(s).render(n=1)))
    for source, got in results:
        assert got == str(int(source[3:-7]) + 1)
    for source in sources:
        assert env.from_string(source) is env.from_string(source)
