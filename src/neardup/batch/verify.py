"""Exact verification of candidate pairs, batched (seed 002: sketch -> Jaccard -> LCS).

Payloads are *ragged* arrays: a flat ``uint64`` array plus ``offsets`` (``n + 1``), so row
``d`` is ``flat[offsets[d]:offsets[d + 1]]``.  Two payloads are used:

* the exact, sorted, distinct word-shingle set (``neardup.sketch.shingleset``), from which
  :func:`pair_overlaps` gives the intersection size of each pair by a sorted merge; Jaccard
  ``|A∩B| / |A∪B|`` and containment of the smaller in the larger ``|A∩B| / min(|A|, |B|)``
  follow exactly;
* the token-hash sequence (``neardup.shingles.token_hashes``), for :func:`pair_lcs`: the
  length of the longest common run of tokens (longest common substring over tokens, seed 002),
  by dynamic programming with one rolling row, ``O(|a| |b|)`` time and ``O(|b|)`` memory.

The kernels are numba ``@njit(cache=True)`` loops because ragged sorted merges and the LCS
recurrence do not vectorise in numpy.  Guarantees: exact, deterministic.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from neardup._jit import compiled_worthwhile, njit
from neardup.similarity._overlap_kernels import merge_count

__all__ = ["jaccard_and_containment", "pair_lcs", "pair_overlaps"]

U64 = npt.NDArray[np.uint64]
I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]


@njit(cache=True)  # type: ignore[misc]
def _overlaps(flat: U64, offsets: I64, left: I64, right: I64) -> I64:
    out = np.zeros(left.shape[0], dtype=np.int64)
    for k in range(left.shape[0]):
        i = offsets[left[k]]
        i_end = offsets[left[k] + 1]
        j = offsets[right[k]]
        j_end = offsets[right[k] + 1]
        out[k] = merge_count(flat, i, i_end, flat, j, j_end)
    return out


def pair_overlaps(flat: U64, offsets: I64, left: I64, right: I64) -> I64:
    """``|A ∩ B|`` for each pair of rows (rows sorted ascending and distinct)."""
    if not compiled_worthwhile(5_000 * len(left)):  # a few pairs: numpy, without numba
        return np.array(
            [
                np.intersect1d(
                    flat[offsets[a] : offsets[a + 1]], flat[offsets[b] : offsets[b + 1]],
                    assume_unique=True,
                ).shape[0]
                for a, b in zip(np.asarray(left).tolist(), np.asarray(right).tolist(), strict=True)
            ],
            dtype=np.int64,
        )  # fmt: skip
    result: I64 = _overlaps(
        np.ascontiguousarray(flat, dtype=np.uint64),
        np.ascontiguousarray(offsets, dtype=np.int64),
        np.ascontiguousarray(left, dtype=np.int64),
        np.ascontiguousarray(right, dtype=np.int64),
    )
    return result


def jaccard_and_containment(flat: U64, offsets: I64, left: I64, right: I64) -> tuple[F64, F64]:
    """Exact Jaccard and containment (of the smaller set in the larger) of each pair.

    Two empty sets have Jaccard 1 and containment 1; an empty and a non-empty set 0 and 0.
    """
    inter = pair_overlaps(flat, offsets, left, right).astype(np.float64)
    sizes = np.diff(np.asarray(offsets, dtype=np.int64))
    size_a = sizes[left].astype(np.float64)
    size_b = sizes[right].astype(np.float64)
    union = size_a + size_b - inter
    smaller = np.minimum(size_a, size_b)
    with np.errstate(divide="ignore", invalid="ignore"):
        jac = np.where(union > 0, inter / np.maximum(union, 1.0), 1.0)
        both_empty = (size_a == 0) & (size_b == 0)
        cont = np.where(
            smaller > 0, inter / np.maximum(smaller, 1.0), np.where(both_empty, 1.0, 0.0)
        )
    return jac, cont


@njit(cache=True)  # type: ignore[misc]
def _lcs(flat: U64, offsets: I64, left: I64, right: I64) -> I64:
    out = np.zeros(left.shape[0], dtype=np.int64)
    for k in range(left.shape[0]):
        a0 = offsets[left[k]]
        na = offsets[left[k] + 1] - a0
        b0 = offsets[right[k]]
        nb = offsets[right[k] + 1] - b0
        row = np.zeros(nb + 1, dtype=np.int64)
        best = 0
        for i in range(1, na + 1):
            prev_diag = 0
            ai = flat[a0 + i - 1]
            for j in range(1, nb + 1):
                saved = row[j]
                if ai == flat[b0 + j - 1]:
                    row[j] = prev_diag + 1
                    if row[j] > best:
                        best = row[j]
                else:
                    row[j] = 0
                prev_diag = saved
        out[k] = best
    return out


def pair_lcs(flat: U64, offsets: I64, left: I64, right: I64) -> I64:
    """Length in tokens of the longest common run of tokens of each pair of rows."""
    result: I64 = _lcs(
        np.ascontiguousarray(flat, dtype=np.uint64),
        np.ascontiguousarray(offsets, dtype=np.int64),
        np.ascontiguousarray(left, dtype=np.int64),
        np.ascontiguousarray(right, dtype=np.int64),
    )
    return result
