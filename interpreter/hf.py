"""`apply_chat_template` as transformers 5 has it, rendered by jinjamark: a drop-in.

    from jinjamark.hf import apply_chat_template
    ids = apply_chat_template(tokenizer, messages, add_generation_prompt=True)

The same parameters, return values and errors as the tokenizer's own method, with two
differences that are the point: the template runs in jinjamark's sandbox, and with `tokenize=True`
the control tokens (special tokens, plus `tokenizer.chat_control_tokens`, else the added tokens the
template's text contains) are recognised only where the template wrote them. A user who types
`<|im_end|>` or `<tool_call>` gets the ids of those characters. `patch` makes a tokenizer's own
method (or every tokenizer's) use this one.

Its errors are transformers' too (see `DropInError`): where the process has loaded jinja2 (code
that writes `except jinja2.TemplateError` has), a template's error is also the jinja2 exception
transformers would raise, its `str()` is the bare message, and `.located` gives jinjamark's text
with the caret.

Neither transformers nor jinja2 is imported here: the tokenizer is the caller's object, and we
use its methods; jinja2's exception classes are taken from `sys.modules`, never imported.
"""
from __future__ import annotations

import functools
import sys
from typing import Any, Optional, Union

from .chat.encoding import InputRuns, encode_runs
from .chat.loading import select_template, special_tokens_of_tokenizer, templates_of_tokenizer
from .chat.masks import assistant_mask, check_mask_source, from_origins
from .chat.origins import masked_render
from .chat.spans import message_spans
from .chat.normalize import split_batch
from .chat.template import ChatTemplate
from .chat.tokenization import control_tokens
from .errors import (SecurityError, TemplateAssertionError, TemplateError, TemplateRuntimeError,
                     TemplateSyntaxError, UndefinedError)

MASK_NEEDS_DICT = "`return_assistant_tokens_mask=True` requires `return_dict=True` and `tokenize=True`"
SPANS_NEED_DICT = "`return_message_spans=True` requires `return_dict=True` and `tokenize=True`"
MASK_AND_CONTINUE = "continue_final_message is not compatible with return_assistant_tokens_mask."
SANITIZE_NEEDS = ("`sanitize_control_tokens=True` requires `tokenize=True` and is not compatible with "
                  "`return_assistant_tokens_mask=True`.")
# tokenizer_kwargs we honour: those that shape what `tokenizer(text, ...)` returns here
TOKENIZER_KWARGS = ("pad_to_multiple_of", "padding_side", "return_attention_mask",
                    "return_token_type_ids", "verbose")


# ---------------------------------------------------------------------------- errors

class DropInError:
    """Mixed into every `TemplateError` that `apply_chat_template` raises, so that the code written
    around transformers' method catches it and prints what it printed:

    - where jinja2 is loaded, the error is also an instance of the jinja2 class transformers
      raises (`raise_exception` a `jinja2.TemplateError`, a syntax error a
      `jinja2.TemplateSyntaxError`, an undefined value a `jinja2.UndefinedError`, ...), and of the
      Python exception jinja2 lets through (`TypeError`, `ZeroDivisionError`) where that caused it;
    - `str(error)` is the bare message, as jinja2's under transformers;
    - it stays the jinjamark error (a `ValueError`, with `lineno`, `column`, `name`, `source`);
      `error.located` is jinjamark's text: the message, the file, line and column, and the caret.
    """

    message = ""  # shadows jinja2's read-only `message` property: the instance's own is kept

    def __str__(self) -> str:
        return str(self.message)

    @property
    def located(self) -> str:
        """The message with the template name, line, column, source line and caret."""
        return super().__str__()  # type: ignore[misc]  # the jinjamark class's

    def __reduce__(self) -> Any:
        jinjamark_class, python_class = type(self).__dict__["_made_of"]
        return _rebuilt, (jinjamark_class, python_class, self.args, dict(self.__dict__))


_JINJA2_NAMES = ((TemplateAssertionError, "TemplateAssertionError"),
                 (TemplateSyntaxError, "TemplateSyntaxError"), (UndefinedError, "UndefinedError"),
                 (SecurityError, "SecurityError"), (TemplateRuntimeError, "TemplateRuntimeError"),
                 (TemplateError, "TemplateError"))


def _drop_in_class(jinjamark_class: type, python_class: Optional[type]) -> type:
    """`jinjamark_class` with `DropInError`, the jinja2 classes it stands for (those of the
    jinja2 the process has loaded, if any: jinja2 is never imported at run time) and
    `python_class`."""
    return _made_class(jinjamark_class, python_class, sys.modules.get("jinja2.exceptions"))


@functools.lru_cache(maxsize=None)
def _made_class(jinjamark_class: type, python_class: Optional[type], jinja2_exceptions: Any) -> type:
    """`_drop_in_class`, made once per pair and loaded jinja2 (one loaded later gets its own)."""
    bases: list[type] = [DropInError, jinjamark_class]
    for ours, name in _JINJA2_NAMES if jinja2_exceptions is not None else ():
        theirs = getattr(jinja2_exceptions, name)
        if issubclass(jinjamark_class, ours) and not any(issubclass(b, theirs) for b in bases):
            bases.append(theirs)
    if python_class is not None and not issubclass(jinjamark_class, python_class):
        bases.append(python_class)
    made = type(jinjamark_class.__name__, tuple(bases),
                {"__module__": __name__, "__doc__": jinjamark_class.__doc__,
                 "_made_of": (jinjamark_class, python_class)})
    return made


def _python_class(error: TemplateError) -> Optional[type]:
    """The built-in exception class that caused `error` (jinja2 would have let it through)."""
    cause = error.__cause__
    if cause is None or isinstance(cause, TemplateError) or type(cause).__module__ != "builtins":
        return None
    return type(cause)


def _as_transformers_error(error: TemplateError) -> None:
    """Give `error` its drop-in class in place (its traceback, cause and fields stay), and the
    location as a note, which a traceback prints after the bare message (Python 3.11+)."""
    if isinstance(error, DropInError):
        return
    for python_class in (_python_class(error), None):
        try:
            error.__class__ = _drop_in_class(type(error), python_class)
            break
        except TypeError:  # a class that cannot be mixed or assigned (another instance layout)
            continue
    else:
        return
    where = error.located[len(str(error)):].lstrip("\n")  # type: ignore[attr-defined]
    if where and hasattr(error, "add_note"):
        error.add_note(where)


def _rebuilt(jinjamark_class: type, python_class: Optional[type], args: tuple, state: dict) -> Any:
    """Unpickling a `DropInError`: the class is made again in this process."""
    cls = _drop_in_class(jinjamark_class, python_class)
    error = cls.__new__(cls, *args)
    error.args = args
    error.__dict__.update(state)
    return error


def _raises_as_transformers(function: Any) -> Any:
    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except TemplateError as error:
            _as_transformers_error(error)
            raise
    return wrapper


@_raises_as_transformers
def apply_chat_template(tokenizer: Any, conversation: Any, tools: Optional[list] = None,
                        documents: Optional[list] = None, chat_template: Optional[str] = None,
                        add_generation_prompt: bool = False,
                        continue_final_message: Union[bool, str] = False, tokenize: bool = True,
                        sanitize_control_tokens: bool = False, padding: Any = False,
                        truncation: bool = False, max_length: Optional[int] = None,
                        return_tensors: Any = None, return_dict: bool = True,
                        return_assistant_tokens_mask: bool = False,
                        tokenizer_kwargs: Optional[dict] = None, **kwargs: Any) -> Any:
    """transformers' `tokenizer.apply_chat_template(conversation, ...)`, rendered by jinjamark.

    Returns the text (a list of texts for a batch) with `tokenize=False`; else a `BatchEncoding`
    (`input_ids`, `attention_mask`, and `assistant_masks` when asked) or, with
    `return_dict=False`, the ids. Assistant masks come from `{% generation %}`, right also where
    the tag sits in a macro or a `{% set %}` capture.

    `sanitize_control_tokens` is accepted for compatibility and changes nothing: jinjamark's
    defence is always on, needs no markers in the text and also covers what transformers'
    cannot (dict keys, tokens a template builds from input). It raises where transformers
    raises (with `tokenize=False` or `return_assistant_tokens_mask=True`), so code that passes
    it behaves the same on both.

    `polyfill=` (jinjamark's own, taken out of `kwargs` so that the signature stays
    transformers'; False by default): as `ChatTemplate.render`'s, reshape the conversation for
    what the template cannot render (True, or a set of polyfill names).
    """
    polyfill = kwargs.pop("polyfill", False)
    mask_source = kwargs.pop("assistant_mask_source", "auto")
    check_mask_source(mask_source)
    mask_options = kwargs.pop("assistant_mask_options", None)
    message_spans = kwargs.pop("return_message_spans", False)
    if not tokenize:
        return_dict = False
    if return_assistant_tokens_mask and not (return_dict and tokenize):
        raise ValueError(MASK_NEEDS_DICT)
    if message_spans and not (return_dict and tokenize):
        raise ValueError(SPANS_NEED_DICT)
    tokenizer_kwargs = dict(tokenizer_kwargs or {})
    source = _chat_template(tokenizer, chat_template, tools)
    conversations, batched = split_batch(conversation)
    if continue_final_message and return_assistant_tokens_mask and not add_generation_prompt:
        raise ValueError(MASK_AND_CONTINUE)
    if sanitize_control_tokens and (not tokenize or return_assistant_tokens_mask):
        raise ValueError(SANITIZE_NEEDS)
    chat = _chat_for(tokenizer, source)
    if return_assistant_tokens_mask and tokenize and from_origins(chat.template, mask_source):
        if polyfill is not False:
            raise TypeError("assistant masks from origins do not combine with polyfill= yet")
        rendered = [masked_render(chat, messages, tools, documents, add_generation_prompt,
                                  continue_final_message, "origins", mask_options, **kwargs)
                    for messages in conversations]
    else:
        rendered = chat.render_batch(conversations, tools=tools, documents=documents,
                                 add_generation_prompt=add_generation_prompt,
                                     continue_final_message=continue_final_message, marked=tokenize,
                                     generation_spans=return_assistant_tokens_mask, kwargs=kwargs,
                                     polyfill=polyfill)
    if not tokenize:
        texts = [text for text, _ in rendered]
        return texts if batched else texts[0]
    control = control_tokens(tokenizer, source)
    encoded = encode_runs([InputRuns(parts) for parts, _ in rendered], tokenizer, control)
    spans = [s for _, s in rendered] if return_assistant_tokens_mask else None
    out = _batch_encoding(tokenizer, encoded, spans, batched, padding, truncation, max_length,
                          return_tensors, tokenizer_kwargs)
    if message_spans:
        found = [_message_spans(chat, messages, e, tools, documents, add_generation_prompt,
                                continue_final_message, kwargs) for messages, e in zip(conversations, encoded)]
        out["message_spans"] = found if batched else found[0]
    return out if return_dict else out["input_ids"]


def _message_spans(chat: ChatTemplate, messages: Any, encoded: Any, tools: Any, documents: Any,
                   add_generation_prompt: Any, continue_final_message: Any, kwargs: dict) -> list:
    """`return_message_spans`: each message's characters and tokens (indices into the ids
    before padding and truncation), as dicts."""
    from .chat.origins import continued, render_runs
    runs, _ = render_runs(chat, messages, tools, documents, add_generation_prompt, **kwargs)
    if continue_final_message:
        runs = continued(chat, messages, runs, tools, documents, continue_final_message, kwargs)
    return [span._asdict() for span in message_spans(runs, encoded.offsets)]


def _chat_for(tokenizer: Any, source: str) -> ChatTemplate:
    """The ChatTemplate of `source` with the tokenizer's special tokens as they are now: kept
    for the next call while they stay the same (a render's whole fixed cost is a few times
    what making one costs)."""
    tokens = special_tokens_of_tokenizer(tokenizer)
    kept = _CHATS.get((id(tokenizer), source))
    if kept is not None and kept[0] is tokenizer and kept[1] == tokens:
        return kept[2]
    chat = ChatTemplate(source, special_tokens=tokens)
    if len(_CHATS) >= 16:
        _CHATS.clear()
    _CHATS[(id(tokenizer), source)] = (tokenizer, tokens, chat)
    return chat


_CHATS: dict[tuple[int, str], tuple[Any, dict, ChatTemplate]] = {}


def _chat_template(tokenizer: Any, chat_template: Optional[str], tools: Any) -> str:
    """The template source, as the tokenizer's `get_chat_template` picks it (its errors too)."""
    pick = getattr(tokenizer, "get_chat_template", None)
    if pick is not None:
        return pick(chat_template, tools)
    return select_template(templates_of_tokenizer(tokenizer), chat_template, tools)


def _batch_encoding(tokenizer: Any, encoded: list, spans: Optional[list], batched: bool,
                    padding: Any, truncation: Any, max_length: Optional[int],
                    return_tensors: Any, options: dict) -> Any:
    """What `tokenizer(texts, padding=..., truncation=..., max_length=..., add_special_tokens=False,
    return_tensors=...)` returns, built from our ids: truncated on the tokenizer's side, padded by
    its own `pad`, with the assistant masks computed as transformers computes them."""
    unknown = sorted(set(options) - set(TOKENIZER_KWARGS))
    if unknown:
        raise TypeError(f"jinjamark.hf.apply_chat_template does not support tokenizer_kwargs {unknown}")
    padding_strategy, truncation_strategy, max_length, _ = tokenizer._get_padding_truncation_strategies(
        padding=padding, truncation=truncation, max_length=max_length,
        pad_to_multiple_of=options.get("pad_to_multiple_of"), verbose=options.get("verbose", True))
    ids = [e.ids for e in encoded]
    offsets = [e.offsets for e in encoded] if spans is not None else None
    if spans is not None and any(o is None for o in offsets):
        raise ValueError("return_assistant_tokens_mask=True needs a fast tokenizer (its offsets)")
    if truncation_strategy.value != "do_not_truncate" and max_length is not None:
        cut = _truncation(tokenizer.truncation_side, max_length)
        ids = [cut(i) for i in ids]
        offsets = [cut(o) for o in offsets] if offsets is not None else None
    features: dict[str, Any] = {"input_ids": ids}
    type_ids = options.get("return_token_type_ids")
    if type_ids or type_ids is None and "token_type_ids" in tokenizer.model_input_names:
        features["token_type_ids"] = [[0] * len(i) for i in ids]
    side = options.get("padding_side") or tokenizer.padding_side
    out = tokenizer.pad(features, padding=padding_strategy, max_length=max_length,
                        pad_to_multiple_of=options.get("pad_to_multiple_of"), padding_side=side,
                        return_attention_mask=options.get("return_attention_mask"),
                        verbose=options.get("verbose", True))
    if spans is not None:
        out["assistant_masks"] = [_padded(assistant_mask(o, s), len(p), side)
                                  for o, s, p in zip(offsets, spans, out["input_ids"])]
    if not batched and not return_tensors:
        out = type(out)({key: value[0] for key, value in out.items()})
    if return_tensors:
        out.convert_to_tensors(tensor_type=return_tensors)
    return out


def _truncation(side: str, max_length: int) -> Any:
    if side == "left":
        return lambda seq: seq[-max_length:] if len(seq) > max_length else seq
    return lambda seq: seq[:max_length]


def _padded(mask: list[int], length: int, side: str) -> list[int]:
    """Pad tokens overlap no span: 0, on the side the ids were padded."""
    extra = [0] * (length - len(mask))
    return extra + mask if side == "left" else mask + extra


# ---------------------------------------------------------------------------- patching

_PATCHED: dict[Any, Any] = {}  # the class whose method was replaced -> its own method


def patch(tokenizer: Any = None) -> None:
    """Make `tokenizer.apply_chat_template` this module's; without a tokenizer, every
    transformers tokenizer's (the base class's method). `unpatch` undoes it."""
    if tokenizer is not None:
        tokenizer.apply_chat_template = functools.partial(apply_chat_template, tokenizer)
        return
    from transformers.tokenization_utils_base import PreTrainedTokenizerBase
    if PreTrainedTokenizerBase not in _PATCHED:
        _PATCHED[PreTrainedTokenizerBase] = PreTrainedTokenizerBase.__dict__["apply_chat_template"]
        PreTrainedTokenizerBase.apply_chat_template = _as_method


def unpatch(tokenizer: Any = None) -> None:
    """Give back the tokenizer's (or every tokenizer's) own `apply_chat_template`."""
    if tokenizer is not None:
        tokenizer.__dict__.pop("apply_chat_template", None)
        return
    for cls, method in list(_PATCHED.items()):
        cls.apply_chat_template = method
        del _PATCHED[cls]


@functools.wraps(apply_chat_template)
def _as_method(self: Any, conversation: Any, *args: Any, **kwargs: Any) -> Any:
    return apply_chat_template(self, conversation, *args, **kwargs)
