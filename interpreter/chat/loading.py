"""Where a chat template comes from: a model folder or a transformers tokenizer, and which of a
model's named templates a render uses.

We read a folder the way transformers 5 reads it (`PreTrainedTokenizerBase.from_pretrained`), so
that `ChatTemplate.from_pretrained(folder)` renders what `AutoTokenizer.from_pretrained(folder)`
renders, without importing transformers:

- templates: `chat_template.jinja` (named `default`) and `additional_chat_templates/*.jinja` (named
  by file stem) win over `tokenizer_config.json`'s `chat_template`, a string or a list of
  `{"name", "template"}`. One template named `default` is the plain string. (transformers' tokenizer
  does not read `chat_template.json`, which belongs to processors; neither do we.)
- special tokens: what `tokenizer.special_tokens_map` holds, i.e. the named tokens (bos, eos, unk,
  sep, pad, cls, mask) and the model-specific `*_token` entries, from `tokenizer_config.json` and,
  only when that file has no `added_tokens_decoder` (the legacy layout), `special_tokens_map.json`.
  AddedToken dicts (`{"content": "<s>", ...}`) become their content.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Mapping, Optional, Union

Templates = Union[str, dict[str, str], None]

# transformers' SPECIAL_TOKENS_ATTRIBUTES, in its order (the order of special_tokens_map)
NAMED_TOKENS = ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token",
                "mask_token")

NO_TEMPLATE = ("Cannot use chat template functions because tokenizer.chat_template is not set and no "
               "template argument was passed! For information about writing templates and setting the "
               "tokenizer.chat_template attribute, please see the documentation at "
               "https://huggingface.co/docs/transformers/main/en/chat_templating")


def select_template(templates: Templates, chat_template: Optional[str], tools: Any) -> str:
    """The template source a render uses, as transformers' `get_chat_template(chat_template, tools)`.

    `templates` is the model's (`tokenizer.chat_template`: a source, a dict name -> source, or
    None); `chat_template` is the caller's choice: a name of the dict, or a template source, or
    None for the model's own (`tool_use` when tools are given, else `default`).
    """
    if isinstance(templates, dict):
        if chat_template is not None and chat_template in templates:
            return templates[chat_template]
        if chat_template is None:
            if tools is not None and "tool_use" in templates:
                return templates["tool_use"]
            if "default" in templates:
                return templates["default"]
            raise ValueError(
                "This model has multiple chat templates with no default specified! Please either pass a "
                "chat template or the name of the template you wish to use to the `chat_template` "
                f"argument. Available template names are {sorted(templates.keys())}.")
    elif chat_template is None:
        if templates is None:
            raise ValueError(NO_TEMPLATE)
        return templates
    return chat_template


def token_text(value: Any) -> Optional[str]:
    """A special token as the template sees it: a string, an AddedToken's content, or None."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, Mapping):  # an AddedToken as saved in JSON
        content = value.get("content")
        return content if isinstance(content, str) else None
    content = getattr(value, "content", None)  # a tokenizers.AddedToken
    return content if isinstance(content, str) else None


def special_tokens_of(config: Mapping[str, Any]) -> dict[str, str]:
    """`special_tokens_map` of a tokenizer built from this (merged) configuration."""
    tokens: dict[str, str] = {}
    for key in NAMED_TOKENS:
        text = token_text(config.get(key))
        if text is not None:
            tokens[key] = text
    for key, value in config.items():
        if key.endswith("_token") and key not in tokens and key not in NAMED_TOKENS:
            text = token_text(value)
            if text is not None:
                tokens[key] = text
    extra = config.get("extra_special_tokens") or config.get("additional_special_tokens")
    if isinstance(extra, Mapping):  # named extra tokens join the map; a plain list does not
        for key, value in extra.items():
            text = token_text(value)
            if text is not None:
                tokens[key] = text
    return tokens


def templates_of_tokenizer(tokenizer: Any) -> Templates:
    templates = getattr(tokenizer, "chat_template", None)
    return dict(templates) if isinstance(templates, Mapping) else templates


def special_tokens_of_tokenizer(tokenizer: Any) -> dict[str, str]:
    tokens = getattr(tokenizer, "special_tokens_map", None) or {}
    return {key: text for key, value in tokens.items() if (text := token_text(value)) is not None}


def load_folder(folder: Union[str, os.PathLike]) -> tuple[Templates, dict[str, str]]:
    """(templates, special tokens) of a model folder as transformers saves it."""
    root = Path(folder)
    if not root.is_dir():
        raise FileNotFoundError(f"{folder}: not a model folder")
    config = _read_json(root / "tokenizer_config.json")
    if "added_tokens_decoder" not in config:  # legacy layout: special_tokens_map.json counts
        for key, value in _read_json(root / "special_tokens_map.json").items():
            config[key] = value
    return _folder_templates(root, config), special_tokens_of(config)


def _folder_templates(root: Path, config: Mapping[str, Any]) -> Templates:
    files: dict[str, str] = {}
    if (root / "chat_template.jinja").is_file():
        files["default"] = _read_text(root / "chat_template.jinja")
    extra = root / "additional_chat_templates"
    if extra.is_dir():
        for path in sorted(extra.glob("*.jinja")):
            files[path.name[:-len(".jinja")]] = _read_text(path)
    if files:
        return files["default"] if list(files) == ["default"] else files
    stored = config.get("chat_template")
    if isinstance(stored, (list, tuple)):
        return {entry["name"]: entry["template"] for entry in stored}
    return stored


def _read_json(path: Path) -> dict:
    if not path.is_file():
        return {}
    with open(path, encoding="utf-8") as handle:
        data = json.load(handle)
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a JSON object")
    return data


def _read_text(path: Path) -> str:
    with open(path, encoding="utf-8") as handle:  # universal newlines, as transformers reads it
        return handle.read()
