"""The set of document ids already processed, at 8 bytes an id (repeated-id detection).

A Python ``set`` of id strings costs the string objects and the set's slots, over a hundred
bytes a document (``benchmarks/bench_origin.py``), which makes a long stream's memory grow
with it.  Here an id
is kept as its 64-bit ``xxh3_64`` (UTF-8, fixed seed :data:`SEED`; never Python's salted
``hash()``), so memory grows by 8 bytes a document (+ a constant: a pending buffer of at
most :data:`PENDING` hashes).

Layout: a log-structured merge of sorted ``uint64`` arrays whose sizes at least double from
the newest to the oldest (like a binary counter), plus the small pending set.  ``add`` is
amortised O(log n); ``in`` is a binary search in each of the O(log n) arrays.

Guarantee: no false negatives (a repeated id is always detected).  A new id is wrongly taken
for a repeated one only if its 64-bit hash collides with one of the n ids seen: probability
at most n / 2**64 per id, n**2 / 2**65 over a whole stream (about 3e-6 for 10 million ids).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import xxhash

__all__ = ["PENDING", "SEED", "SeenIds"]

SEED = 0x5EE17D5  # fixed: the hashes are saved with the detector's state
PENDING = 4096

U64 = npt.NDArray[np.uint64]


def _hash(doc_id: str) -> int:
    return int(xxhash.xxh3_64_intdigest(doc_id.encode("utf-8"), seed=SEED))


class SeenIds:
    """Ids seen so far, as 64-bit hashes; see the module doc."""

    def __init__(self, hashes: U64 | None = None) -> None:
        self._levels: list[U64] = []
        self._pending: set[int] = set()
        if hashes is not None and hashes.shape[0]:
            self._levels.append(np.unique(np.asarray(hashes, dtype=np.uint64)))

    def __contains__(self, doc_id: object) -> bool:
        if not isinstance(doc_id, str):
            return False
        h = _hash(doc_id)
        if h in self._pending:
            return True
        key = np.uint64(h)
        for level in self._levels:
            i = int(np.searchsorted(level, key))
            if i < level.shape[0] and level[i] == key:
                return True
        return False

    def __len__(self) -> int:
        return len(self._pending) + sum(int(level.shape[0]) for level in self._levels)

    def add(self, doc_id: str) -> bool:
        """Remember ``doc_id``; ``False`` if it was already there (then nothing changes)."""
        if doc_id in self:
            return False
        self._pending.add(_hash(doc_id))
        if len(self._pending) >= PENDING:
            self._flush()
        return True

    def _flush(self) -> None:
        if not self._pending:
            return
        merged = np.sort(np.fromiter(self._pending, dtype=np.uint64, count=len(self._pending)))
        self._pending.clear()
        # keep sizes at least doubling towards older levels: merge while the newest is smaller
        while self._levels and self._levels[-1].shape[0] <= 2 * merged.shape[0]:
            merged = np.union1d(self._levels.pop(), merged)
        self._levels.append(merged)

    @property
    def nbytes(self) -> int:
        """Bytes held by the hash arrays (the pending set costs about 60 B a hash more)."""
        return 8 * len(self)

    def to_array(self) -> U64:
        """All hashes, sorted (for saving)."""
        self._flush()
        if not self._levels:
            return np.zeros(0, dtype=np.uint64)
        return np.unique(np.concatenate(self._levels))
