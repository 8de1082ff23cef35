"""Hashed band tables of the LSH index (internal), their compiled slot operations, and the
growing memory map of its signatures.

**Hashed band tables** (:class:`BandTables`, the LSH index), for exact key matches: per
band, an open-addressing hash table (linear probing, at most 70 % full) whose slots hold a
32-bit *fingerprint* of a band key (its high half) and the newest row holding that key, with a
*tag* byte per slot beside them (8 bits of the fingerprint; 0: empty) so that a probe reads
one dense byte per slot and a slot only where the tag matches; the older rows of the key
follow a chain, ``next[row, band]`` (a row's links share one cache line).  An add writes one
slot (or rewrites a head) per band: O(1).  A lookup reads one tag run and walks one chain:
O(1 + rows of the key), about one cache miss per band where a sorted table costs a binary
search per sorted run.  Fingerprints of 32 bits let two different keys share a slot (about
one pair per band in four billion): callers check that each row of a chain really holds the
band (:mod:`neardup.index.lsh` compares the band's values, which makes a candidate exact).
Memory per band and row: 4 bytes of chain plus 9 bytes (slot and tag) per slot, 1.4-2.9
slots per key (a band's table doubles when 70 % full).

:class:`GrowingRows` keeps the LSH index's signatures in a memory map that grows in place.
"""

from __future__ import annotations

import contextlib
import mmap

import numpy as np
import numpy.typing as npt

from neardup._jit import njit

U64 = npt.NDArray[np.uint64]
U32 = npt.NDArray[np.uint32]
U8 = npt.NDArray[np.uint8]
I64 = npt.NDArray[np.int64]

__all__ = ["BandTables", "GrowingRows", "band_head", "insert_one", "slot_tag"]

_MAX_LOAD = 0.7  # slots used per band before its table doubles
_LOW32 = np.uint64(0xFFFFFFFF)


class BandTables:
    """Per band, fingerprint -> newest row, and a chain of older rows (module docs).

    ``slots`` (bands, capacity) uint64: 0 empty, else ``fingerprint << 32 | row + 1``;
    ``tags`` (bands, capacity) uint8: 0 for an empty slot, else :func:`slot_tag` of its
    fingerprint, so a probe reads one byte per slot (a dense array that mostly stays in the
    processor's caches) and reads a slot only when its tag matches;
    ``next`` (row capacity, bands) uint32: the next (older) row of the chain plus one, 0 at
    its end.  Rows are at most ``2**32 - 2``.  Removed rows stay in their chains (callers
    skip them) until the index rebuilds the tables.
    """

    def __init__(self, bands: int, capacity: int = 1 << 10) -> None:
        self.bands = bands
        self.slots = np.zeros((bands, capacity), dtype=np.uint64)
        self.tags = np.zeros((bands, capacity), dtype=np.uint8)
        self.next = np.zeros((256, bands), dtype=np.uint32)
        self.band_used = np.zeros(bands, dtype=np.int64)
        self.used = 0  # the most slots used in any band
        self.limit = int(_MAX_LOAD * capacity)  # slots a band may use before doubling

    @property
    def nbytes(self) -> int:
        return int(self.slots.nbytes + self.tags.nbytes + self.next.nbytes)

    def reserve(self, keys: int, rows: int) -> None:
        """Room for ``keys`` more keys per band and for row numbers below ``rows``."""
        if self.used + keys > self.limit:
            capacity = self.slots.shape[1]
            while self.used + keys > _MAX_LOAD * capacity:
                capacity *= 2
            grown = np.zeros((self.bands, capacity), dtype=np.uint64)
            grown_tags = np.zeros((self.bands, capacity), dtype=np.uint8)
            _rehash(self.slots, grown, grown_tags)
            self.slots, self.tags = grown, grown_tags
            self.limit = int(_MAX_LOAD * capacity)
        if rows > self.next.shape[0]:
            size = self.next.shape[0]
            while size < rows:
                size *= 2
            grown_next = np.empty((size, self.bands), dtype=np.uint32)
            grown_next[: self.next.shape[0]] = self.next
            self.next = grown_next

    def clear(self, rows: int) -> None:
        """Empty tables sized for ``rows`` rows."""
        capacity = 1 << 10
        while rows > _MAX_LOAD * capacity:
            capacity *= 2
        self.slots = np.zeros((self.bands, capacity), dtype=np.uint64)
        self.tags = np.zeros((self.bands, capacity), dtype=np.uint8)
        self.next = np.empty((max(256, rows), self.bands), dtype=np.uint32)
        self.band_used = np.zeros(self.bands, dtype=np.int64)
        self.used = 0
        self.limit = int(_MAX_LOAD * capacity)


class GrowingRows:
    """Rows of ``uint64`` values in an anonymous private memory map that grows in place.

    Growing a numpy array copies it: over a run of doublings every value is written about
    twice more, onto pages the process must touch.  A map is moved by the kernel instead
    (``mremap``: page tables, not data), and capacity not yet written costs no memory.  Falls
    back to a copy when the map cannot be resized (a view of it still held elsewhere, or a
    system without ``mremap``).  Holds no view itself: the owner's array is the only one.
    """

    def __init__(self) -> None:
        self._map: mmap.mmap | None = None

    def owns(self, rows: U64) -> bool:
        """Whether ``rows`` is a view of this map."""
        base = rows.base
        while isinstance(base, np.ndarray | memoryview):
            base = base.base if isinstance(base, np.ndarray) else base.obj
        return self._map is not None and base is self._map

    def resize(self, capacity: int, width: int, used: int) -> U64:
        """This map's rows grown to ``capacity`` (the first ``used`` kept).  The caller has
        dropped its view of the map first, so that the map can move."""
        assert self._map is not None
        try:
            self._map.resize(capacity * width * 8)
        except (BufferError, OSError, SystemError, ValueError):  # cannot move: copy
            old = self._view(len(self._map) // (8 * width), width)
            return self.adopt(old, used, capacity)
        return self._view(capacity, width)

    def adopt(self, rows: U64, used: int, capacity: int) -> U64:
        """A new map of ``capacity`` rows holding the first ``used`` rows of ``rows``."""
        width = rows.shape[1]
        fresh = mmap.mmap(-1, max(1, capacity * width * 8), flags=mmap.MAP_PRIVATE)
        self._map = fresh
        grown = self._view(capacity, width)
        grown[:used] = rows[:used]
        return grown

    def _view(self, capacity: int, width: int) -> U64:
        assert self._map is not None
        with contextlib.suppress(AttributeError, OSError):
            self._map.madvise(mmap.MADV_HUGEPAGE)  # as numpy asks for its large arrays
        flat = np.frombuffer(self._map, dtype=np.uint64, count=capacity * width)
        return flat.reshape(capacity, width)


@njit(cache=True, inline="always")
def slot_tag(fingerprint: np.uint64) -> np.uint8:  # pragma: no cover - compiled
    """The nonzero byte kept for a fingerprint: its top 8 bits (1 for 0), which pick the
    slot only in tables of more than ``2**24`` slots."""
    tag = fingerprint >> np.uint64(24)
    return np.uint8(tag) if tag != 0 else np.uint8(1)


@njit(cache=True, inline="always")
def band_head(slots: U64, tags: U8, band: int, key: np.uint64) -> np.int64:  # pragma: no cover
    """The newest row plus one of ``key``'s chain in ``band`` (0: no such key).

    Reads the tags until an empty slot; a slot itself only where the tag matches."""
    mask = np.uint64(slots.shape[1] - 1)
    fingerprint = key >> np.uint64(32)
    tag = slot_tag(fingerprint)
    pos = fingerprint & mask
    while True:
        t = tags[band, pos]
        if t == 0:
            return np.int64(0)
        if t == tag:
            slot = slots[band, pos]
            if (slot >> np.uint64(32)) == fingerprint:
                return np.int64(slot & _LOW32)
        pos = (pos + np.uint64(1)) & mask


@njit(cache=True, inline="always")
def insert_one(
    slots: U64, tags: U8, nxt: U32, used: I64, band: int, key: np.uint64, row: int
) -> None:  # pragma: no cover - compiled
    """Make ``row`` the head of ``key``'s chain in ``band``."""
    mask = np.uint64(slots.shape[1] - 1)
    fingerprint = key >> np.uint64(32)
    tag = slot_tag(fingerprint)
    entry = (fingerprint << np.uint64(32)) | (np.uint64(row) + np.uint64(1))
    pos = fingerprint & mask
    while True:
        t = tags[band, pos]
        if t == 0:
            slots[band, pos] = entry
            tags[band, pos] = tag
            nxt[row, band] = 0
            used[band] += 1
            return
        if t == tag:
            slot = slots[band, pos]
            if (slot >> np.uint64(32)) == fingerprint:
                nxt[row, band] = np.uint32(slot & _LOW32)
                slots[band, pos] = entry
                return
        pos = (pos + np.uint64(1)) & mask


@njit(cache=True)
def _rehash(slots: U64, grown: U64, grown_tags: U8) -> None:  # pragma: no cover
    mask = np.uint64(grown.shape[1] - 1)
    for b in range(slots.shape[0]):
        for old in range(slots.shape[1]):
            slot = slots[b, old]
            if slot == 0:
                continue
            fingerprint = slot >> np.uint64(32)
            pos = fingerprint & mask
            while grown_tags[b, pos] != 0:
                pos = (pos + np.uint64(1)) & mask
            grown[b, pos] = slot
            grown_tags[b, pos] = slot_tag(fingerprint)
