"""Token hashes and character spans of a text (origin detection and alignment).

Origin detection and passage alignment need, per document, the 64-bit hash of every token
(the text stage's tokens for a :class:`~neardup.text.TextConfig`, hashed by
:func:`neardup.shingles.hash_forms`) and each token's character span (to report results as
offsets into the text): :func:`neardup.shingles.token_hashes_and_spans`, one compiled scan of
any text, equal to ``tokenize`` + ``hash_forms`` (tested).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from neardup.shingles import token_hashes_and_spans
from neardup.text import TextConfig

__all__ = ["DocumentTokens", "document_tokens"]

I64 = npt.NDArray[np.int64]
U64 = npt.NDArray[np.uint64]


class DocumentTokens:
    """Token hashes with the ``[starts[i], ends[i])`` character span of each token."""

    __slots__ = ("ends", "hashes", "starts")

    def __init__(self, hashes: U64, starts: I64, ends: I64) -> None:
        self.hashes = hashes
        self.starts = starts
        self.ends = ends

    def __len__(self) -> int:
        return int(self.hashes.shape[0])


def document_tokens(text: str, config: TextConfig, seed: int) -> DocumentTokens:
    """Token hashes and spans of ``text`` (see the module doc); ``text`` must be a str."""
    return DocumentTokens(*token_hashes_and_spans(text, config, seed))
