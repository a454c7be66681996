"""Tokenization that honours the marks: control tokens are recognised in template text only.

Control tokens are what transformers' `sanitize_control_tokens` calls so: the tokenizer's special
tokens, plus `tokenizer.chat_control_tokens` when it is set, else the added tokens (not
whitespace) that the template's own text and string constants contain. That covers a Qwen-style
tokenizer, whose `<tool_call>` and `<think>` are added tokens not flagged special. A control token
counts only where every one of its characters came from the template; in input it is ordinary
text. Other added tokens are matched as the tokenizer matches them in any text. Where no input
holds a control token, the ids are those of encoding the whole string (see `encoding`).

Works with a `tokenizers.Tokenizer` and with a transformers tokenizer (fast or slow); needs the
optional extra `hf` (from a checkout, `pip install '.[hf]'`). Neither library is imported by jinjamark itself.
"""
from __future__ import annotations

import functools
from typing import Any, Mapping, Optional, Sequence

from ..grammar import ast
from ..evaluation.output import Part
from .encoding import InputRuns, backend_of, encode_runs, require_tokenizer


def encode(parts: Sequence[Part], tokenizer: Any, *, template: Any = None,
           control: Optional[Mapping[str, int]] = None) -> list[int]:
    """Token ids for rendered parts; control tokens are only parsed in template parts.

    Give the `template` (a jinjamark `Template`, `ChatTemplate` or template source) so that the
    control tokens are transformers' (the added tokens its text contains); without it every
    added token is one. `control` gives them outright (content -> id)."""
    if control is None:
        control = control_tokens(tokenizer, template)
    return encode_runs([InputRuns(parts)], tokenizer, control)[0].ids


def added_tokens(tokenizer: Any) -> dict[int, Any]:
    """The tokenizer's added tokens (`AddedToken`s, special or not), by id."""
    backend = backend_of(tokenizer)
    if backend is not None and backend is tokenizer:
        return backend.get_added_tokens_decoder()
    return dict(tokenizer.added_tokens_decoder)


def special_tokens(tokenizer: Any) -> dict[str, int]:
    """The special tokens of a tokenizer: content -> id."""
    found = {tok.content: i for i, tok in added_tokens(tokenizer).items() if getattr(tok, "special", False)}
    for content in getattr(tokenizer, "all_special_tokens", ()) or ():
        if content not in found:
            found[content] = tokenizer.convert_tokens_to_ids(content)
    return found


def control_tokens(tokenizer: Any, template: Any = None) -> dict[str, int]:
    """transformers' `_get_control_tokens`: the special tokens, plus the added tokens named in
    `tokenizer.chat_control_tokens`, or when that is not set, the added tokens (not whitespace)
    found in the template's literal text. Without a template, every added token (not
    whitespace) counts: a token we cannot tell is the template's is kept out of input.

    Found once per tokenizer state and template: reading a tokenizer's added tokens costs more
    than encoding a short prompt. The key holds what can change them (the vocabulary's size,
    the special tokens, `chat_control_tokens`); a tokenizer without a backend is not cached."""
    require_tokenizer(tokenizer)
    named = getattr(tokenizer, "chat_control_tokens", None)
    literal = literal_text(template) if template is not None and named is None else None
    key = _cache_key(tokenizer, named, literal)
    if key is not None:
        found = _control_cache.get(key)
        if found is not None and found[0] is tokenizer:
            return found[1]
    control = special_tokens(tokenizer)
    if named is not None:
        chosen = set(named)
        wanted = lambda content: content in chosen  # noqa: E731
    elif literal is None:
        wanted = lambda content: not content.isspace()  # noqa: E731
    else:
        wanted = lambda content: content in literal and not content.isspace()  # noqa: E731
    for token_id, token in added_tokens(tokenizer).items():
        if token.content not in control and wanted(token.content):
            control[token.content] = token_id
    if key is not None:
        if len(_control_cache) >= 64:
            _control_cache.clear()
        _control_cache[key] = (tokenizer, control)
    return control


_control_cache: dict[tuple, tuple[Any, dict[str, int]]] = {}


def _cache_key(tokenizer: Any, named: Any, literal: Optional[str]) -> Optional[tuple]:
    backend = backend_of(tokenizer)
    if backend is None:
        return None
    specials = tuple(getattr(tokenizer, "all_special_tokens", None) or ())
    if backend is tokenizer:  # a bare tokenizers.Tokenizer: its special flags are in the decoder
        specials = tuple(t.content for t in backend.get_added_tokens_decoder().values() if t.special)
    return (id(tokenizer), backend.get_vocab_size(True), specials,
            None if named is None else tuple(named), literal)


def literal_text(template: Any) -> str:
    """The template's text and string constants, joined by NUL so that no token is found
    across two of them (transformers' `_get_template_literal_text`, on our syntax tree)."""
    if isinstance(template, str):
        return _literal_text_of_source(template)
    template = getattr(template, "template", template)  # a ChatTemplate's compiled template
    found = template.memo.get(LITERAL_TEXT)  # the template's facts, found once
    if found is None:
        found = template.memo[LITERAL_TEXT] = _literal_text_of_tree(template.tree)
    return found


LITERAL_TEXT = "literal text"  # the key of a compiled template's memo


@functools.lru_cache(maxsize=64)
def _literal_text_of_source(source: str) -> str:
    from .profile import shared_environment
    return _literal_text_of_tree(shared_environment().from_string(source).tree)


def _literal_text_of_tree(tree: ast.Template) -> str:
    literals = set()
    for node in ast.walk(tree):
        kind = type(node)
        if kind is ast.Text:
            literals.add(node.text)
        elif kind is ast.Const and isinstance(node.value, str):
            literals.add(node.value)
    return "\0".join(literals)
