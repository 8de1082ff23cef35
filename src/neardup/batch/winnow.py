"""Winnowed shingle fingerprints: candidates for copied passages (containment), not only
for similar wholes.

Winnowing (Schleimer, Wilkerson and Aiken, "Winnowing: local algorithms for document
fingerprinting", SIGMOD 2003): slide a window of ``window`` consecutive word-shingle hashes
over a document and select the smallest hash of each window (the rightmost one on ties),
recording each selected position once.  Two guarantees follow, and both are what the
near-duplicate rule (:mod:`neardup.rule`) needs of its candidates:

* **any shared run of at least** ``window + width - 1`` **tokens is found**: its
  ``window`` consecutive shingles fill a whole window in both documents, whose minimum
  (the same value in both) is selected in both, so the two documents share a fingerprint.
  A partial copy (a passage of ``partial_min_passage`` words in a row) or a truncated
  reprint of any length ratio shares such a run, so it becomes a candidate, whatever the
  Jaccard of the wholes;
* **density** about ``2 / (window + 1)`` fingerprints per shingle, so the candidate keys
  grow linearly with the text, like LSH bands.

Documents with fewer shingles than ``window`` keep their smallest shingle (one window).

Guarantees: exact (the guarantee above is tested against brute force), deterministic,
linear time (one pass with a monotone queue per document), compiled.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from neardup._jit import compiled_worthwhile, njit
from neardup._kernels import sorted_distinct
from neardup.shingles import mix64

__all__ = ["passage_keys", "winnow"]

U64 = npt.NDArray[np.uint64]
I64 = npt.NDArray[np.int64]

# Tags the fingerprints' keys apart from the LSH band keys they share the shuffle with.
_PASSAGE_TAG = np.uint64(0x6A09E667F3BCC909)


@njit(cache=True)
def _winnow(flat: U64, offsets: I64, window: int) -> tuple[U64, I64]:
    n = offsets.shape[0] - 1
    out = np.empty(flat.shape[0], dtype=np.uint64)
    new_offsets = np.zeros(n + 1, dtype=np.int64)
    queue = np.empty(max(window, 1), dtype=np.int64)  # positions, values increasing
    pos = 0
    for d in range(n):
        lo = offsets[d]
        m = offsets[d + 1] - lo
        begin = pos
        if m > 0:
            head = 0
            size = 0
            last = -1
            w = window if window < m else m
            for i in range(m):
                if size > 0 and queue[head] <= i - w:  # left the window
                    head = (head + 1) % w
                    size -= 1
                v = flat[lo + i]
                # Drop larger-or-equal values from the back: the rightmost minimum wins ties.
                while size > 0 and flat[lo + queue[(head + size - 1) % w]] >= v:
                    size -= 1
                queue[(head + size) % w] = i
                size += 1
                if i >= w - 1:
                    p = queue[head]
                    if p != last:
                        out[pos] = flat[lo + p]
                        pos += 1
                        last = p
            row = np.sort(out[begin:pos])
            k = begin
            for t in range(row.shape[0]):
                if t == 0 or row[t] != row[t - 1]:
                    out[k] = row[t]
                    k += 1
            pos = k
        new_offsets[d + 1] = pos
    return out[:pos].copy(), new_offsets


def _winnow_numpy(flat: U64, offsets: I64, window: int) -> tuple[U64, I64]:
    """Reference of :func:`_winnow` in numpy (the same values), for work too small to pay
    for loading the compiled kernel."""
    rows: list[U64] = []
    for d in range(offsets.shape[0] - 1):
        x = flat[offsets[d] : offsets[d + 1]]
        if x.shape[0] == 0:
            rows.append(x)
            continue
        w = min(window, x.shape[0])
        # The values selected are each window's minimum (which of equal minima is the
        # rightmost changes positions, not values): the distinct minima, sorted.
        mins = np.lib.stride_tricks.sliding_window_view(x, w).min(axis=1)
        rows.append(sorted_distinct(mins))
    new_offsets = np.zeros(offsets.shape[0], dtype=np.int64)
    np.cumsum([r.shape[0] for r in rows], out=new_offsets[1:])
    values = np.concatenate(rows) if rows else np.empty(0, dtype=np.uint64)
    return values.astype(np.uint64, copy=False), new_offsets


def winnow(flat: U64, offsets: I64, window: int) -> tuple[U64, I64]:
    """The distinct winnowed fingerprints of each ragged row of shingle hashes (position
    order in), sorted ascending, as a ragged ``(values, offsets)`` array."""
    flat = np.ascontiguousarray(flat, dtype=np.uint64)
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    if not compiled_worthwhile(10_000 + 3_000 * (offsets.shape[0] - 1) + 2 * flat.shape[0]):
        return _winnow_numpy(flat, offsets, int(window))
    result: tuple[U64, I64] = _winnow(flat, offsets, int(window))
    return result


def passage_keys(flat: U64, offsets: I64, window: int) -> tuple[U64, I64]:
    """Bucket keys of the winnowed fingerprints of each row (a bijection of the fingerprint,
    tagged; never 0, the shuffle's "no key"), ragged like :func:`winnow`'s output."""
    values, new_offsets = winnow(flat, offsets, window)
    keys = mix64(values ^ _PASSAGE_TAG)
    keys[keys == 0] = 1
    return keys, new_offsets
