"""Compiled kernels of result-set dedup (private; :mod:`neardup.detect.resultset` documents
what they compute and guarantees it).

Both walk the rows in rank order with an open-addressing table from key to the rows holding
it, so a row meets only the earlier rows sharing a key: :func:`_dedup_kernel` for set
sketches (the first earlier row whose bottom-k Jaccard reaches the threshold),
:func:`_coverage_kernel` for coverage sketches (the rule's two coverage bounds decide most
pairs; the pairs between them are returned as a band for the rule's own clauses).
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

from neardup.similarity.sets import at_least_kernel
from neardup.sketch.coverage import layout_code as _layout_code
from neardup.sketch.coverage import occurrence_keys as _occurrence_keys
from neardup.sketch.coverage import pair_counts

__all__ = ["MIN_SHARED_KEYS", "_coverage_kernel", "_dedup_kernel"]

#: Coverage sketches are compared when they share at least this many sampled shingles (the
#: shingles starting at the sampled words; or all of the smaller sketch's): a pair the sketch
#: calls a duplicate shares many, while unrelated or same-story pairs sharing a few share
#: common phrases and quotations (benchmarks/bench_resultset_quality.py counts the pairs this
#: condition loses).
MIN_SHARED_KEYS = 4

_FIB = np.uint64(0x9E3779B97F4A7C15)  # Fibonacci hashing multiplier (Knuth 6.4)


@numba.njit(cache=True, nogil=True, inline="always")
def _count_rows(  # pragma: no cover - compiled
    q: int,
    chain: Any,
    row_of: Any,
    shared: Any,
    touched: Any,
    n_touched: int,
) -> int:
    """Walk a key's chain of entries from ``q``: add one to ``shared`` of each entry's row,
    listing a row in ``touched`` the first time; the new length of ``touched``."""
    while q != -1:  # unsigned indexes from here: numba checks every signed one for < 0
        j = np.uint64(row_of[np.uint64(q)])
        if shared[j] == 0:
            touched[np.uint64(n_touched)] = j
            n_touched += 1
        shared[j] += 1
        q = chain[np.uint64(q)]
    return n_touched


@numba.njit(cache=True, nogil=True)
def _dedup_kernel(  # pragma: no cover - compiled
    values: Any, offsets: Any, k: int, need: Any, out: Any
) -> int:
    """Fill ``out`` (see the module docstring); return -1, or the first unsorted row."""
    n = offsets.shape[0] - 1
    total = values.shape[0]
    for r in range(n):
        for p in range(offsets[r] + 1, offsets[r + 1]):
            if values[p] <= values[p - 1]:
                return r
    bits = 4
    while (1 << bits) < 2 * total:
        bits += 1
    mask = np.uint64((1 << bits) - 1)
    shift = np.uint64(64 - bits)
    one = np.uint64(1)
    keys = np.zeros(1 << bits, dtype=values.dtype)
    heads = np.full(1 << bits, -1, dtype=np.int64)  # slot -> last flat position with that value
    chain = np.empty(total, dtype=np.int64)  # flat position -> previous position, same value
    row_of = np.empty(total, dtype=np.int64)
    shared = np.zeros(n, dtype=np.int64)
    touched = np.empty(n, dtype=np.int64)
    first_empty = -1
    for i in range(n):
        lo = offsets[i]
        hi = offsets[i + 1]
        out[i] = i
        if hi == lo:
            if first_empty < 0:
                first_empty = i
            else:
                out[i] = first_empty
            continue
        n_touched = 0
        for p in range(lo, hi):
            v = values[p]
            row_of[p] = i
            slot = (np.uint64(v) * _FIB) >> shift
            while heads[slot] != -1 and keys[slot] != v:
                slot = (slot + one) & mask
            q = heads[slot]
            keys[slot] = v
            heads[slot] = p
            chain[p] = q
            # every earlier row holding v (each row holds v at most once)
            n_touched = _count_rows(q, chain, row_of, shared, touched, n_touched)
        if n_touched == 0:
            continue
        candidates = np.sort(touched[:n_touched])
        len_i = hi - lo
        found = False
        for c in range(n_touched):
            j = candidates[c]
            common = shared[j]
            shared[j] = 0
            if found:
                continue
            len_j = offsets[j + 1] - offsets[j]
            # The final union window has at least min(k, max(len_i, len_j)) values and at
            # most `common` of them can match; need[] is non-decreasing.
            if common < need[min(k, max(len_i, len_j))]:
                continue
            if at_least_kernel(values, lo, hi, values, offsets[j], offsets[j + 1], k, need):
                out[i] = j
                found = True
    return -1


@numba.njit(cache=True, nogil=True)
def _coverage_kernel(  # pragma: no cover - compiled
    values: Any, offsets: Any, accept_at: float, reject_below: float, need: Any, out: Any
) -> tuple[int, Any]:
    """Coverage sketches: fill ``out`` from the bounds; return ``(-1, band)`` or ``(bad
    row, _)``.

    Candidates of row ``i``: the earlier rows sharing enough of its occurrence keys (word key
    and the fingerprint of a shingle starting at an occurrence), found through an open-
    addressing table as in :func:`_dedup_kernel`.  Each candidate, in rank order, gets the two
    estimated coverages; the smaller one at least ``accept_at`` is a duplicate (the first one
    wins), below ``reject_below`` is not; the pairs in between that precede the first
    accepted candidate are returned in ``band`` as ``(i, j, found_i, eligible_i, found_j,
    eligible_j)`` rows, in order, for the rule to decide.  ``need[e]``: the fewest found of
    ``e`` eligible tokens whose share is at least ``reject_below`` (0 everywhere when it is 0):
    the comparisons stop as soon as a side cannot reach it.
    """
    n = offsets.shape[0] - 1
    total = np.int64(0)
    for r in range(n):  # the structure of every row (what keeps the reads within it) ...
        if _layout_code(values, offsets[r], offsets[r + 1], False) != 0:
            return r, np.zeros((0, 6), dtype=np.int64)
        # ... of one shingle width (pair_counts compares fingerprints of equal widths only)
        if (values[offsets[r]] >> 16) != (values[offsets[0]] >> 16):
            return r, np.zeros((0, 6), dtype=np.int64)
        total += np.int64(values[offsets[r] + 5])
    checked = np.zeros(n, dtype=np.bool_)  # ... and the entries of the rows compared
    bits = 4
    # Load at most 1/4: linear probing at 4/5 makes long probe runs, and the larger table
    # still fits in L2 for a page of results (measured 5 % faster on scraped news when the
    # same set is repeated, 20-40 % when calls on other sets come in between).
    while (1 << bits) < 4 * total:
        bits += 1
    mask = np.uint64((1 << bits) - 1)
    shift = np.uint64(64 - bits)
    one = np.uint64(1)
    keys = np.empty(1 << bits, dtype=np.uint64)  # read only where heads is set
    heads = np.full(1 << bits, -1, dtype=np.int32)  # slot -> last entry with that key
    chain = np.empty(total + 1, dtype=np.int32)  # entry -> previous entry, same key
    row_of = np.empty(total + 1, dtype=np.int32)
    shared = np.zeros(n, dtype=np.int64)
    touched = np.empty(n, dtype=np.int64)
    n_keys = np.zeros(n, dtype=np.int64)  # distinct keys of each row
    band = np.empty((16, 6), dtype=np.int64)
    n_band = 0
    entries = 0
    longest = 0
    for r in range(n):
        longest = max(longest, offsets[r + 1] - offsets[r])
    row_keys = np.empty(longest, dtype=np.uint64)
    words = np.empty(longest, dtype=np.uint64)
    marks = np.zeros(longest, dtype=np.uint8)
    for i in range(n):
        lo = offsets[i]
        out[i] = i
        m = _occurrence_keys(values, lo, offsets[i + 1], row_keys, words, marks)
        if m > np.int64(values[lo + 5]):
            # At most one shingle starts at each sampled occurrence: more keys than that
            # would overrun the table, which is sized by the occurrences.
            return i, np.zeros((0, 6), dtype=np.int64)
        n_touched = 0
        for x in range(np.uint64(m)):  # unsigned indexes, as in _count_rows
            v = row_keys[x]
            slot = (v * _FIB) >> shift
            while heads[slot] != -1 and keys[slot] != v:
                slot = (slot + one) & mask
            q = heads[slot]
            if q != -1 and row_of[np.uint64(q)] == i:
                continue  # this row holds the key already
            keys[slot] = v
            heads[slot] = entries
            chain[np.uint64(entries)] = q
            row_of[np.uint64(entries)] = i
            entries += 1
            n_keys[np.uint64(i)] += 1
            # every earlier row holding the key (once each)
            n_touched = _count_rows(q, chain, row_of, shared, touched, n_touched)
        if n_touched == 0:
            continue
        candidates = np.sort(touched[:n_touched])
        done = False
        for c in range(n_touched):
            j = candidates[c]
            common = shared[j]
            shared[j] = 0
            if done or common < min(MIN_SHARED_KEYS, n_keys[i], n_keys[j]):
                continue
            # The merge alone bounds both coverages from above (a token can only be found
            # when the other text holds its word): most unrelated candidates stop here.
            ui, ei, uj, ej = pair_counts(values, lo, offsets[j], False)
            if min(ui / ei if ei else 0.0, uj / ej if ej else 0.0) < reject_below:
                continue
            ni = need[ei] if 0 < ei < need.shape[0] else 0  # 0: no early stop
            nj = need[ej] if 0 < ej < need.shape[0] else 0
            for r in (i, j):
                if not checked[r]:
                    if _layout_code(values, offsets[r], offsets[r + 1], True) != 0:
                        return r, np.zeros((0, 6), dtype=np.int64)
                    checked[r] = True
            fi, ei, fj, ej = pair_counts(values, lo, offsets[j], True, ni, nj, ui, uj)
            if fi < 0:
                continue  # stopped: a side cannot reach reject_below
            low = min(fi / ei if ei else 0.0, fj / ej if ej else 0.0)
            if low >= accept_at:
                out[i] = j
                done = True
            elif low >= reject_below:
                if n_band == band.shape[0]:
                    grown = np.empty((2 * n_band, 6), dtype=np.int64)
                    grown[:n_band] = band
                    band = grown
                band[n_band, 0] = i
                band[n_band, 1] = j
                band[n_band, 2] = fi
                band[n_band, 3] = ei
                band[n_band, 4] = fj
                band[n_band, 5] = ej
                n_band += 1
    return -1, band[:n_band]
