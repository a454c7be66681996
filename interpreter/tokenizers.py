"""The public name of the tokenizer step: see `jinjamark.chat.tokenization`."""
from .chat.tokenization import encode, segments, special_tokens

__all__ = ["encode", "segments", "special_tokens"]
