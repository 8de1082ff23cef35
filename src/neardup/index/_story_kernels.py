"""Compiled window scans of the story index (private; imported lazily, numba).

Each kernel is a brute-force pass over a contiguous range of rows -- exact by construction --
and is tested against a numpy recomputation of the same scores.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt
from numba import njit, types
from numba.core.extending import intrinsic

__all__ = ["byte_table", "partial_distances", "scan", "scan_survivors"]

U64 = npt.NDArray[np.uint64]
I64 = npt.NDArray[np.int64]
F32 = npt.NDArray[np.float32]
U8 = npt.NDArray[np.uint8]


@intrinsic
def _ctpop(typingctx: Any, src: Any) -> Any:  # pragma: no cover - compiled
    """LLVM's population count (one instruction where the CPU has one)."""

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        return builder.ctpop(args[0])

    return types.uint64(types.uint64), codegen


@njit(cache=True, inline="always")
def _popcount(x: np.uint64) -> np.int64:  # pragma: no cover - compiled
    return np.int64(_ctpop(x))  # type: ignore[call-arg]  # the intrinsic adds typingctx


@njit(cache=True)
def byte_table(values: F32) -> F32:  # pragma: no cover - compiled
    """``table[i, v] = sum_b (+values[8i+b] if bit b of v else -values[8i+b])``: one lookup per
    fingerprint byte then sums the signed projection of a whole byte."""
    nbytes = values.shape[0] // 8
    table = np.empty((nbytes, 256), dtype=np.float32)
    for i in range(nbytes):
        for v in range(256):
            s = 0.0
            for b in range(8):
                x = float(values[8 * i + b])
                s += x if (v >> b) & 1 else -x
            table[i, v] = np.float32(s)
    return table


@njit(cache=True)
def scan(
    fps: U64,
    dates: I64,
    alive: npt.NDArray[np.bool_],
    lo: int,
    hi: int,
    check_dates: bool,
    since: int,
    until: int,
    query: U64,
    table: F32,
    asymmetric: bool,
    min_score: float,
    best: npt.NDArray[np.float64],
    out_pos: I64,
    out_score: npt.NDArray[np.float64],
    out_dist: I64,
) -> int:  # pragma: no cover - compiled
    """Score rows ``[lo, hi)`` (live, and dated in ``[since, until]`` when ``check_dates``)
    against ``query``; write those scoring at least ``min_score`` to the ``out`` arrays and
    return how many.  Score: the asymmetric cosine estimate (``table``) when ``asymmetric``,
    else ``cos(pi * d / bits)`` of the Hamming distance ``d``.

    ``best`` (a min-heap, carried from one call to the next; empty: keep every row) holds the
    ``best.shape[0]`` highest scores written so far (``-inf`` while not full): a row scoring
    below its smallest cannot be among that many best and is not written.  Every row of the
    top ``best.shape[0]`` (ties included) is still written: exact."""
    words = query.shape[0]
    bits = words * 64
    scale = math.sqrt(math.pi / 2.0) / bits
    keep = best.shape[0]
    n = 0
    for r in range(lo, hi):
        if not alive[r]:
            continue
        if check_dates and (dates[r] < since or dates[r] > until):
            continue
        d = np.int64(0)
        for w in range(words):
            d += _popcount(fps[r, w] ^ query[w])
        if asymmetric:
            s = 0.0
            for w in range(words):
                x = fps[r, w]
                for b in range(8):
                    s += table[8 * w + b, np.int64((x >> np.uint64(8 * b)) & np.uint64(255))]
            score = s * scale
        else:
            score = math.cos(math.pi * d / bits)
        if score < min_score or (keep > 0 and score < best[0]):
            continue
        out_pos[n] = r
        out_score[n] = score
        out_dist[n] = d
        n += 1
        if keep > 0 and score > best[0]:
            _replace_smallest(best, score)
    return n


@njit(cache=True, inline="always")
def _replace_smallest(heap: npt.NDArray[np.float64], value: float) -> None:  # pragma: no cover
    """Replace the root (smallest) of a binary min-heap by ``value`` and sift it down."""
    size = heap.shape[0]
    i = 0
    while True:
        child = 2 * i + 1
        if child >= size:
            break
        if child + 1 < size and heap[child + 1] < heap[child]:
            child += 1
        if heap[child] >= value:
            break
        heap[i] = heap[child]
        i = child
    heap[i] = value


@njit(cache=True)
def partial_distances(
    fps: U64, alive: npt.NDArray[np.bool_], lo: int, hi: int, query: U64, words: int, out: U8
) -> I64:  # pragma: no cover - compiled
    """Hamming distance of the first ``words`` fingerprint words of rows ``[lo, hi)`` to the
    query's (``out[r - lo]``; 255 for removed rows) and its histogram (``64 * words + 2``
    bins, the last one counting removed rows)."""
    hist = np.zeros(64 * words + 2, dtype=np.int64)
    for r in range(lo, hi):
        if not alive[r]:
            out[r - lo] = 255
            hist[64 * words + 1] += 1
            continue
        d = np.int64(0)
        for w in range(words):
            d += _popcount(fps[r, w] ^ query[w])
        out[r - lo] = np.uint8(d)
        hist[d] += 1
    return hist


@njit(cache=True)
def scan_survivors(
    fps: U64,
    lo: int,
    partial: U8,
    cut: int,
    query: U64,
    table: F32,
    asymmetric: bool,
    min_score: float,
    best: npt.NDArray[np.float64],
    out_pos: I64,
    out_score: npt.NDArray[np.float64],
    out_dist: I64,
) -> int:  # pragma: no cover - compiled
    """:func:`scan` restricted to the rows ``lo + i`` with ``partial[i] <= cut`` (live rows
    of the main run, all in the window)."""
    # The row body repeats scan's on purpose: the two loops sharing an inlined scoring
    # helper ran the exact scan 2-3x slower (bench_story.py --only index, 300,000 stories).
    words = query.shape[0]
    bits = words * 64
    scale = math.sqrt(math.pi / 2.0) / bits
    keep = best.shape[0]
    n = 0
    for i in range(partial.shape[0]):
        if partial[i] > cut:
            continue
        r = lo + i
        d = np.int64(0)
        for w in range(words):
            d += _popcount(fps[r, w] ^ query[w])
        if asymmetric:
            s = 0.0
            for w in range(words):
                x = fps[r, w]
                for b in range(8):
                    s += table[8 * w + b, np.int64((x >> np.uint64(8 * b)) & np.uint64(255))]
            score = s * scale
        else:
            score = math.cos(math.pi * d / bits)
        if score < min_score or (keep > 0 and score < best[0]):
            continue
        out_pos[n] = r
        out_score[n] = score
        out_dist[n] = d
        n += 1
        if keep > 0 and score > best[0]:
            _replace_smallest(best, score)
    return n
