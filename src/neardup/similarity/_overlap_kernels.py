"""Compiled kernels of the stream's verification (private).

``sorted_intersection_size``: the size of the intersection of two shingle sets stored as
sorted distinct uint64 arrays (what :func:`neardup.sketch.shingleset.sign_shingles` makes),
in one merge pass.  ``numpy.intersect1d(a, b, assume_unique=True).size`` gives the same
number for any arrays of distinct values; it concatenates and sorts, which on a news
article's few hundred values is dominated by numpy's per-call overhead, paid once per
candidate pair.  The kernel checks the order as it goes and returns
-1 when an input is not strictly increasing, so the caller falls back to numpy (exact in
every case).  Deterministic; O(len(a) + len(b)); no allocation.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from neardup._jit import njit

__all__ = ["merge_count", "sorted_intersection_size"]


@njit(cache=True, nogil=True)
def merge_count(a: Any, i: int, i_end: int, b: Any, j: int, j_end: int) -> int:
    """Equal values of ``a[i:i_end]`` and ``b[j:j_end]``, both sorted ascending and distinct,
    by one merge pass (compiled; also the batch verifier's, :mod:`neardup.batch.verify`).
    On sorted arrays with repeated values it counts, per value, the smaller of its two
    multiplicities (:mod:`neardup.index.facts` relies on that)."""
    found = 0
    while i < i_end and j < j_end:
        x, y = a[i], b[j]
        if x == y:
            found += 1
            i += 1
            j += 1
        elif x < y:
            i += 1
        else:
            j += 1
    return found


@njit(cache=True, nogil=True)
def _merge_count(a: Any, b: Any) -> int:  # pragma: no cover - compiled
    n, m = a.shape[0], b.shape[0]
    found = merge_count(a, 0, n, b, 0, m)
    # Strictly increasing inputs only (the merge above assumes it): checked over the whole
    # of both arrays, the tails the merge skipped included.
    for k in range(1, n):
        if a[k - 1] >= a[k]:
            return -1
    for k in range(1, m):
        if b[k - 1] >= b[k]:
            return -1
    return found


def sorted_intersection_size(a: npt.NDArray[Any], b: npt.NDArray[Any]) -> int:
    """``|a & b|`` for two 1-d uint64 arrays of distinct values; -1 when either is not
    sorted strictly increasing (use ``numpy.intersect1d`` then)."""
    if a.dtype != np.uint64 or b.dtype != np.uint64:
        return -1
    return int(_merge_count(a, b))
