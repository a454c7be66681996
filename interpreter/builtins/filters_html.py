"""Built-in filters that make or read HTML, URLs and JSON: escape, safe, striptags, urlize,
urlencode, xmlattr, tojson. Output is what Jinja2 gives without autoescaping."""
from __future__ import annotations

import functools
import re
from collections import abc
from typing import Any, Iterable, Optional
from urllib.parse import quote_from_bytes

from ..values import jsonmarks
from ..values import marks
from ..environment_tools import pass_environment, pass_eval_context
from .filters_support import FilterArgumentError, text
from ..limits import check_printable
from ..values.markup import Markup, _wrap, escape, safe_marked
from ..values.undefined import Undefined

do_escape = escape


def do_forceescape(value: Any) -> str:
    """Escape even what is already safe (so `&amp;` becomes `&amp;amp;`)."""
    if hasattr(value, "__html__"):
        value = value.__html__()
    value = text(value)
    return escape(marks.make(marks.plain(value), marks.spans_of(value)))


def do_mark_safe(value: Any) -> str:
    return Markup(value)


def do_striptags(value: Any) -> str:
    if hasattr(value, "__html__"):
        value = value.__html__()
    return marks.taint(Markup(marks.plain(text(value))).striptags(), value)


# ---------------------------------------------------------------------------- urls

def url_quote(value: Any, for_qs: bool = False) -> str:
    """Percent-encode the UTF-8 of str(value); in a query string '/' too and spaces as '+'."""
    if not isinstance(value, bytes):
        check_printable(value)  # str() of a structure: refused past the output limit first
        value = str(value).encode("utf-8")
    quoted = quote_from_bytes(value, b"" if for_qs else b"/")
    return quoted.replace("%20", "+") if for_qs else quoted


def do_urlencode(value: Any) -> str:
    if isinstance(value, str) or not isinstance(value, abc.Iterable):
        return marks.taint(url_quote(value), value)
    items = value.items() if isinstance(value, dict) else value
    pairs = [f"{url_quote(k, True)}={url_quote(v, True)}" for k, v in items]
    return marks.taint("&".join(pairs), value)


_HOST = r"(?:(?:[\w%-]+\.)+)?(?:[a-z]{2,63}|xn--[\w%]{2,59})"
_BASIC_DOMAIN = r"(?:[\w%-]{2,63}\.)+(?:com|net|int|edu|gov|org|info|mil)"
_IP = r"(?:\d{1,3}(?:\.\d{1,3}){3}|\[(?:[\da-f]{0,4}:){2}(?:[\da-f]{0,4}:?){1,6}\])"
# urlize's patterns, compiled when first used (about 2 ms at import otherwise, for a filter
# few templates call)
_PATTERNS = {
    "url": (rf"^(?:(?:https?://|www\.){_HOST}|{_BASIC_DOMAIN}|https?://{_IP})"
            r"(?::\d{1,5})?(?:[/?#]\S*)?$", re.IGNORECASE),
    "email": (r"^\S+@\w[\w.-]*\.\w+$", 0),
    "scheme": (r"^([\w.+-]{2,}:(/){0,2})$", 0),
    "lead": (r"^(?:[(<]|&lt;)+", 0),
    "trail": (r"(?:[)>.,\n]|&gt;)+$", 0),
}


@functools.cache
def _pattern(name: str) -> re.Pattern:
    return re.compile(*_PATTERNS[name])
_PAIRS = (("(", ")"), ("<", ">"), ("&lt;", "&gt;"))


def _split_punctuation(word: str) -> tuple[str, str, str]:
    """Leading brackets and trailing punctuation apart from the word, closers that balance an
    opener inside the word given back to it."""
    head, middle, tail = "", word, ""
    lead = _pattern("lead").match(middle)
    if lead:
        head, middle = lead.group(), middle[lead.end():]
    if middle.endswith((")", ">", ".", ",", "\n", "&gt;")):
        trail = _pattern("trail").search(middle)
        if trail:
            tail, middle = trail.group(), middle[:trail.start()]
    for opener, closer in _PAIRS:
        openers = middle.count(opener)
        if openers <= middle.count(closer):
            continue
        for _ in range(min(openers, tail.count(closer))):
            cut = tail.index(closer) + len(closer)
            middle, tail = middle + tail[:cut], tail[cut:]
    return head, middle, tail


def _link(middle: str, attrs: str, trim: Optional[int], schemes: Iterable[str]) -> str:
    shown = middle if trim is None or len(middle) <= trim else f"{middle[:trim]}..."
    if _pattern("url").match(middle):
        scheme = "" if middle.startswith(("https://", "http://")) else "https://"
        return f'<a href="{scheme}{middle}"{attrs}>{shown}</a>'
    if middle.startswith("mailto:") and _pattern("email").match(middle[7:]):
        return f'<a href="{middle}">{middle[7:]}</a>'
    if ("@" in middle and not middle.startswith(("www.", "@")) and ":" not in middle
            and _pattern("email").match(middle)):
        return f'<a href="mailto:{middle}">{middle}</a>'
    for scheme in schemes:
        if middle != scheme and middle.startswith(scheme):
            middle = f'<a href="{middle}"{attrs}>{middle}</a>'
    return middle


@pass_eval_context
def do_urlize(eval_ctx: Any, value: Any, trim_url_limit: Optional[int] = None, nofollow: bool = False,
              target: Optional[str] = None, rel: Optional[str] = None,
              extra_schemes: Optional[Iterable[str]] = None) -> str:
    policies = eval_ctx.environment.policies
    given = (rel, target, extra_schemes)  # what the result is tainted by (rel is rebuilt below)
    rel_parts = set((rel or "").split())
    if nofollow:
        rel_parts.add("nofollow")
    rel_parts.update((policies.get("urlize.rel", "noopener") or "").split())
    rel = " ".join(sorted(rel_parts)) or None
    if target is None:
        target = policies.get("urlize.target")
    if extra_schemes is None:
        extra_schemes = policies.get("urlize.extra_schemes") or ()
    for scheme in extra_schemes:
        if _pattern("scheme").fullmatch(scheme) is None:
            raise FilterArgumentError(f"{scheme!r} is not a valid URI scheme prefix.")
    attrs = (f' rel="{marks.plain(escape(rel))}"' if rel else "") + \
        (f' target="{marks.plain(escape(target))}"' if target else "")
    words = re.split(r"(\s+)", marks.plain(escape(value)))
    for i, word in enumerate(words):
        head, middle, tail = _split_punctuation(word)
        words[i] = head + _link(middle, attrs, trim_url_limit, extra_schemes) + tail
    result = marks.taint("".join(words), value, *given)
    return _wrap(result) if eval_ctx.autoescape else result


# ---------------------------------------------------------------------------- xml, json

_ATTRIBUTE_KEY_STOP = re.compile(r"[\s/>=]", flags=re.ASCII)


@pass_eval_context
def do_xmlattr(eval_ctx: Any, d: Any, autospace: bool = True) -> str:
    """` key="value"` for each item whose value is not none or undefined; keys must be names."""
    items = []
    for key, value in d.items():
        if value is None or isinstance(value, Undefined):
            continue
        if _ATTRIBUTE_KEY_STOP.search(key) is not None:
            raise ValueError(f"Invalid character in attribute name: {key!r}")
        items.append(marks.concat((escape(key), '="', escape(value), '"')))
    result = marks.join(" ", items)
    result = marks.concat((" ", result)) if autospace and result else result
    return _wrap(result) if eval_ctx.autoescape else result


_JSON_HTML_ESCAPES = (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("'", "\\u0027"))


@pass_environment
def do_tojson(env: Any, value: Any, indent: Optional[int] = None) -> str:
    """JSON safe inside HTML and <script>: < > & ' as \\u escapes. Characters of input strings
    stay input inside their escapes (jsonmarks); JSON punctuation is template text."""
    dumps = env.policies.get("json.dumps_function") or jsonmarks.dumps
    kwargs = dict(env.policies.get("json.dumps_kwargs", {"sort_keys": True}))
    if indent is not None:
        kwargs["indent"] = indent
    result = dumps(value, **kwargs)
    if dumps is not jsonmarks.dumps:
        result = marks.taint(marks.plain(result), value)
    result = marks.escape_chars(result, dict(_JSON_HTML_ESCAPES))
    if marks.is_marked(result):
        return safe_marked(result)
    return Markup(result)
