"""Token hashes and character spans of a text, fast (origin detection and alignment).

Origin detection and passage alignment need, per document, the 64-bit hash of every token
(the text stage's tokens for a :class:`~neardup.text.TextConfig`, hashed by
:func:`neardup.shingles.hash_forms`) and each token's character span (to report results as
offsets into the text).  The general path is
``tokenize`` + ``hash_forms``.  For pure ASCII text, :func:`neardup.shingles.token_hashes`
computes the same hashes through the compiled scanner, and :func:`ascii_spans` finds the same
spans with the same compiled token rule (``neardup._kernels``); when the two disagree on the
number of tokens (a token without a form) the general path is taken.  Equal to the general
path (tested on Reuters and on generated text), several times faster.
"""

from __future__ import annotations

import numba
import numpy as np
import numpy.typing as npt

from neardup._kernels import _alnum, _token_end
from neardup.shingles import hash_forms, token_hashes
from neardup.text import TextConfig, tokenize

__all__ = ["DocumentTokens", "ascii_spans", "document_tokens"]

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


@numba.njit(cache=True)
def _spans(buf: npt.NDArray[np.uint8]) -> tuple[I64, I64]:  # pragma: no cover - numba
    n = buf.shape[0]
    starts = np.empty(n // 2 + 1, dtype=np.int64)
    ends = np.empty(n // 2 + 1, dtype=np.int64)
    count = 0
    i = 0
    while i < n:
        if not _alnum(buf[i]):
            i += 1
            continue
        end = _token_end(buf, i, n)
        starts[count] = i
        ends[count] = end
        count += 1
        i = end
    return starts[:count], ends[:count]


def ascii_spans(text: str) -> tuple[I64, I64]:
    """Character spans of the raw tokens of an ASCII ``text`` (the compiled token rule)."""
    return _spans(np.frombuffer(text.encode("ascii"), dtype=np.uint8))


def document_tokens(text: str, config: TextConfig, seed: int) -> DocumentTokens:
    """Token hashes and spans of ``text`` (see the module doc); ``text`` must be a str."""
    if text.isascii():
        hashes = token_hashes(text, config, seed)
        starts, ends = ascii_spans(text)
        if starts.shape[0] == hashes.shape[0]:
            return DocumentTokens(hashes, starts, ends)
    toks = tokenize(text, config)
    return DocumentTokens(
        hash_forms(toks.forms, seed),
        np.array(toks.starts, dtype=np.int64),
        np.array(toks.ends, dtype=np.int64),
    )
