"""Winnowing: a sample of a text's shingles that every long shared passage keeps.

Schleimer, Wilkerson and Aiken, "Winnowing: local algorithms for document fingerprinting"
(SIGMOD 2003): in every window of ``window`` consecutive shingle hashes the right-most
minimum is selected.  Two texts that share a run of at least ``window`` consecutive
shingles (``window + width - 1`` tokens for width-token shingles) select at least one equal
hash inside it, whatever surrounds the run, because the selection in a window depends on
that window only.  The density is about ``2 / (window + 1)`` of the shingles.

Guarantees: pure and deterministic; O(m * window) for m shingles (compiled).
"""

from __future__ import annotations

import numba
import numpy as np
import numpy.typing as npt

from neardup._kernels import distinct
from neardup.config import check_int

__all__ = ["winnow", "winnowing_positions"]

U64 = npt.NDArray[np.uint64]
I64 = npt.NDArray[np.int64]


@numba.njit(cache=True, nogil=True)
def winnowing_positions(fingerprints: U64, window: int) -> I64:  # pragma: no cover - numba
    """Winnowing: the right-most minimum of each window of ``window`` shingles (union)."""
    m = fingerprints.shape[0]
    out = np.empty(m, dtype=np.int64)
    count = 0
    if m == 0:
        return out[:0]
    w = min(window, m)
    last = -1
    for i in range(m - w + 1):
        best = i
        for t in range(i + 1, i + w):
            if fingerprints[t] <= fingerprints[best]:
                best = t
        if best != last:  # windows are scanned left to right, so picks never decrease
            out[count] = best
            count += 1
            last = best
    return out[:count]


def winnow(fingerprints: U64, window: int) -> U64:
    """The distinct hashes winnowing selects from ``fingerprints`` (sorted ascending)."""
    check_int("window", window, low=1, high=1 << 20)
    values = np.ascontiguousarray(fingerprints, dtype=np.uint64)
    return distinct(values[winnowing_positions(values, window)])
