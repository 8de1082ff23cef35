"""neardup: find near-duplicate and copied text in news, fast.

The public API is what ``__all__`` lists; everything else is internal and may change.
"""

from __future__ import annotations

__version__ = "0.1.0"

from neardup.errors import (
    ConfigError,
    InputError,
    NearDupError,
    NotFoundError,
    SchemeMismatchError,
)
from neardup.records import Article
from neardup.sketch import Signature, sign
from neardup.text import TextConfig, sentence_spans, tokenize

__all__ = [
    "Article",
    "ConfigError",
    "InputError",
    "NearDupError",
    "NotFoundError",
    "SchemeMismatchError",
    "Signature",
    "TextConfig",
    "__version__",
    "sentence_spans",
    "sign",
    "tokenize",
]
