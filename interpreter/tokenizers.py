"""The public name of the tokenizer step: see `jinjamark.chat.tokenization`."""
from .chat.tokenization import encode, special_tokens

__all__ = ["encode", "special_tokens"]
