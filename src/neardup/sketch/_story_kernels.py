"""Compiled projection of the story vector (private).

:func:`project` is :func:`neardup.sketch.story.story_vector_reference`'s matrix product in one
pass without the ``(features, bits)`` sign matrix: for each feature, its ``bits / 64``
projection words are splitmix64 of the feature xor a per-word key, and every bit adds or
subtracts the feature's weight.  Exact int64 arithmetic, so it is equal to the numpy reference
(tested).  Imported lazily (numba).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

import numpy as np
import numpy.typing as npt
from numba import njit

from neardup._mix import splitmix64

__all__ = ["finish", "project"]


# numba dispatchers are untyped for mypy; the kernel is splitmix64 itself
_splitmix = cast("Callable[[np.uint64], np.uint64]", njit(cache=True, inline="always")(splitmix64))


@njit(cache=True)
def _project(
    feats: npt.NDArray[np.uint64], weights: npt.NDArray[np.int64], keys: npt.NDArray[np.uint64]
) -> npt.NDArray[np.int64]:  # pragma: no cover - compiled
    nwords = keys.shape[0]
    # Sum of w * bit per component; total = 2 * that - sum(w) (one add per set bit only).
    ones = np.zeros(nwords * 64, dtype=np.int64)
    total = np.int64(0)
    for i in range(feats.shape[0]):
        w = weights[i]
        total += w
        f = feats[i]
        for k in range(nwords):
            word = _splitmix(f ^ keys[k])
            base = k * 64
            for b in range(64):
                ones[base + b] += w * np.int64((word >> np.uint64(b)) & np.uint64(1))
    out = np.empty(nwords * 64, dtype=np.int64)
    for j in range(nwords * 64):
        out[j] = 2 * ones[j] - total
    return out


@njit(cache=True)
def _finish(
    totals: npt.NDArray[np.int64], weights: npt.NDArray[np.int64]
) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.float32]]:  # pragma: no cover - compiled
    norm2 = 0.0
    for i in range(weights.shape[0]):
        w = float(weights[i])
        norm2 += w * w
    inv = 1.0 / np.sqrt(norm2) if norm2 > 0.0 else 0.0
    n = totals.shape[0]
    words = np.zeros(n // 64, dtype=np.uint64)
    values = np.empty(n, dtype=np.float32)
    for j in range(n):
        t = totals[j]
        if t > 0:
            words[j // 64] |= np.uint64(1) << np.uint64(j % 64)
        values[j] = np.float32(float(t) * inv)
    return words, values


def project(
    feats: npt.NDArray[np.uint64], weights: npt.NDArray[np.int64], keys: npt.NDArray[np.uint64]
) -> npt.NDArray[np.int64]:
    """Integer totals ``sum_f w(f) * (+1 | -1)`` of every component (module docs)."""
    return _project(
        np.ascontiguousarray(feats, dtype=np.uint64),
        np.ascontiguousarray(weights, dtype=np.int64),
        np.ascontiguousarray(keys, dtype=np.uint64),
    )


def finish(
    totals: npt.NDArray[np.int64], weights: npt.NDArray[np.int64]
) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.float32]]:
    """The fingerprint words (bit ``j`` set when ``totals[j] > 0``) and the real vector
    ``totals / ||weights||`` (float32)."""
    return _finish(
        np.ascontiguousarray(totals, dtype=np.int64), np.ascontiguousarray(weights, dtype=np.int64)
    )
