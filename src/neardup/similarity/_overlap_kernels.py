"""The compiled merge count of two sorted shingle sets (private).

``merge_count``: how many values two ranges of sorted arrays share, in one merge pass, with no
allocation.  ``numpy.intersect1d`` gives the same number for arrays of distinct values; it
concatenates and sorts, which on a news article's few hundred values is dominated by numpy's
per-call overhead, paid once per candidate pair.  Deterministic; O(len(a) + len(b)).
"""

from __future__ import annotations

from typing import Any

from neardup._jit import njit

__all__ = ["merge_count"]


@njit(cache=True, nogil=True)
def merge_count(a: Any, i: int, i_end: int, b: Any, j: int, j_end: int) -> int:
    """Equal values of ``a[i:i_end]`` and ``b[j:j_end]``, both sorted ascending and distinct,
    by one merge pass (compiled; also the batch verifier's, :mod:`neardup.batch.verify`).
    On sorted arrays with repeated values it counts, per value, the smaller of its two
    multiplicities."""
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
