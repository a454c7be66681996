"""Chat templates as transformers renders them: the profile, loading, rendering and tokenization.

`profile` is the environment transformers configures; `template` is `ChatTemplate`;
`tokenization` turns marked parts into token ids with control tokens parsed in template text only.
"""
from .profile import (PROFILE_EXTENSIONS, chat_environment, raise_exception, shared_environment,
                      strftime_now, tojson)
from .template import ChatTemplate
from .loading import select_template  # noqa: F401  (transformers' get_chat_template)
from .capabilities import probe_with

probe_with(ChatTemplate)  # the analysis renders its probes as ChatTemplates (capabilities.py)

__all__ = ["ChatTemplate", "chat_environment", "PROFILE_EXTENSIONS", "raise_exception", "shared_environment",
           "strftime_now", "tojson"]
