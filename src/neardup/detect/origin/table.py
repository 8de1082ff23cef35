"""The hashing phase (seed 004, Section 2.2): a fixed-size bucketed table of shingle facts.

:class:`BucketTable` holds at most ``memory_bytes`` bytes, never more: the budget is divided
into buckets of ``bucket_size`` (64) entries plus one fill byte each, and the arrays are
allocated once.  Each entry stores, packed in parallel numpy arrays (structure of arrays):

======================  =====  ==========================================================
field                   bytes  paper, Section 2.2
======================  =====  ==========================================================
fingerprint remainder     6    (1) the 48 low bits; the bucket index comes from the high
                               32 bits (Lemire's multiply-shift), so >= 14 bits of a
                               >= 2^14-bucket table are implied, as in the paper
origin                    8    (2) the stream ordinal of the first document holding it
offset                    1    (3) number of shingles selected before it, mod 256 (B, BE)
neighbour bytes           2    (4) first byte of the preceding / succeeding selected
                               fingerprint in the origin (E, BE)
eviction byte             1    (5) copy count or lucky score (CC, LS)
======================  =====  ==========================================================

so 14 to 18 bytes an entry (exactly the paper's range) plus 1 byte a bucket.  Packed entries
(not in the paper): ``fingerprint_bytes`` 4 or 3 keeps the 32 or 24 low bits of the
fingerprint (the bucket still comes from the high 32 bits) and ``origin_bytes`` 4 a 4-byte
origin ordinal, down to 7 to 11 bytes an entry, so the same budget holds up to 2 times more
entries; with 4-byte origins a stream may have at most 2^32 documents (``CapacityError``
beyond).

A probe of a selected fingerprint either finds it (its stored facts are returned and its
eviction data updated) or inserts it with the current document as origin, evicting one entry
when the bucket is full (:mod:`.evict`).  LRU keeps each bucket in recency order; a full
bucket is a ring whose oldest entry sits at a head stored in the fill byte (as bucket_size +
head, for buckets of at most 128 entries; larger ones shift), so an eviction is O(1) and only
a hit moves entries - the same order as shifting, without its cost, and no extra byte.
:class:`UnlimitedTable` is the reference mode's table: a dict that never evicts (memory grows
with the stream).

Guarantees: deterministic for a seed; the table's bytes never exceed ``memory_bytes``
(tested); a probe is O(bucket_size).  Fingerprint equality is decided on 48 stored bits +
the bucket bits (8 x ``fingerprint_bytes`` + the bucket bits in general), so a probe of a new
shingle falsely matches a stored one with probability at most bucket_size / 2^48 (4 bytes:
bucket_size / 2^32, 1.5e-8 for 64-entry buckets; 3 bytes: bucket_size / 2^24, 3.8e-6, one
false match per ~260,000 probes of new shingles; a false match marks one shingle copied).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numba
import numpy as np
import numpy.typing as npt

from neardup.detect.origin.config import OriginConfig
from neardup.detect.origin.evict import (
    LRU,
    LUCKY,
    POLICY_CODES,
    choose_victim,
    halve_if_needed,
)
from neardup.errors import CapacityError, StoreError

__all__ = ["BucketTable", "Hits", "UnlimitedTable", "entry_bytes", "make_table"]

U8 = npt.NDArray[np.uint8]
U16 = npt.NDArray[np.uint16]
U32 = npt.NDArray[np.uint32]
U64 = npt.NDArray[np.uint64]
I64 = npt.NDArray[np.int64]
BOOL = npt.NDArray[np.bool_]

_FIELDS = ("tag_hi", "tag_lo", "origin", "offset", "prev", "next", "score", "fill", "rng")


@dataclasses.dataclass(frozen=True, slots=True)
class Hits:
    """What the table returned for a document's selected fingerprints (one row each)."""

    found: BOOL
    origin: I64  # stored origin ordinal where found, else the current document
    offset: U8
    prev: U8
    next: U8


def entry_bytes(config: OriginConfig) -> int:
    """Bytes per stored shingle for this configuration: fingerprint (6, 4 or 3) + origin (8
    or 4) + offset + neighbours + eviction; the paper's 14 to 18 with the default 6 + 8."""
    size = config.fingerprint_bytes + config.origin_bytes
    if config.estimation in ("b", "be"):
        size += 1
    if config.estimation in ("e", "be"):
        size += 2
    if config.eviction in ("copycount", "lucky"):
        size += 1
    return size


def _neighbour_bytes(fps: U64) -> tuple[U8, U8]:
    first = (fps >> np.uint64(56)).astype(np.uint8)
    prev = np.zeros_like(first)
    nxt = np.zeros_like(first)
    prev[1:] = first[:-1]
    nxt[:-1] = first[1:]
    return prev, nxt


@numba.njit(cache=True)
def _tags(fp: np.uint64, tag_hi: Any, tag_lo: Any) -> tuple[Any, Any]:  # pragma: no cover
    """The stored parts of ``fp``: its low bits as wide as ``tag_lo``'s items, and the next
    bits as wide as ``tag_hi``'s (6 bytes: 32 + 16, 4: 32 + 0, 3: 16 + 8)."""
    lo_bits = np.uint64(8 * tag_lo.itemsize)
    hi_bits = np.uint64(8 * tag_hi.itemsize)
    lo = fp & ((np.uint64(1) << lo_bits) - np.uint64(1))
    hi = (fp >> lo_bits) & ((np.uint64(1) << hi_bits) - np.uint64(1))
    return lo, hi


@numba.njit(cache=True)
def _find(
    fp: np.uint64, nbuckets: int, bsize: int, tag_hi: U16, tag_lo: U32, fill: U8
) -> tuple[Any, Any, Any]:  # pragma: no cover - numba
    b = np.int64(((fp >> np.uint64(32)) * np.uint64(nbuckets)) >> np.uint64(32))
    lo, hi = _tags(fp, tag_hi, tag_lo)
    base = b * np.int64(bsize)
    n = min(np.int64(fill[b]), np.int64(bsize))  # a full LRU ring keeps its head above
    wide = tag_hi.shape[0] > 0  # 4-byte fingerprints keep no high tag
    for i in range(n):
        if tag_lo[base + i] == lo and (not wide or tag_hi[base + i] == hi):
            return b, base, np.int64(i)
    return b, base, np.int64(-1)


@numba.njit(cache=True)
def _move(
    src: int,
    dst: int,
    tag_hi: U16,
    tag_lo: U32,
    origin: I64,
    offset: U8,
    prev: U8,
    nxt: U8,
    score: U8,
) -> None:  # pragma: no cover - numba
    if tag_hi.shape[0] > 0:
        tag_hi[dst] = tag_hi[src]
    tag_lo[dst] = tag_lo[src]
    origin[dst] = origin[src]
    if offset.shape[0] > 0:
        offset[dst] = offset[src]
    if prev.shape[0] > 0:
        prev[dst] = prev[src]
        nxt[dst] = nxt[src]
    if score.shape[0] > 0:
        score[dst] = score[src]


@numba.njit(cache=True)
def _probe_insert(
    fps: U64,
    own: int,
    nbuckets: int,
    bsize: int,
    tag_hi: U16,
    tag_lo: U32,
    origin: I64,
    offset: U8,
    prev: U8,
    nxt: U8,
    score: U8,
    fill: U8,
    rng: U64,
    policy: int,
    saturated: int,
    limit: int,
    found: BOOL,
    f_origin: I64,
    f_offset: U8,
    f_prev: U8,
    f_next: U8,
    evicted: I64,
    insert: BOOL,
) -> int:  # pragma: no cover - numba
    """Probe every fingerprint in order, inserting misses (only those with ``insert[j]`` when
    ``insert`` is not empty); returns the number evicted."""
    m = fps.shape[0]
    filtered = insert.shape[0] > 0
    has_off = offset.shape[0] > 0
    has_nb = prev.shape[0] > 0
    has_score = score.shape[0] > 0
    wide = tag_hi.shape[0] > 0
    # LRU keeps a full bucket as a ring (oldest first from ``head``), so evicting the oldest
    # entry is O(1); the head is stored in the fill byte as bsize + head (bsize <= 128)
    ring = policy == LRU and bsize <= 128
    nev = 0
    for j in range(m):
        fp = fps[j]
        b, base, slot = _find(fp, nbuckets, bsize, tag_hi, tag_lo, fill)
        n = min(np.int64(fill[b]), np.int64(bsize))
        head = np.int64(fill[b]) - n
        if slot >= 0:
            e = base + slot
            found[j] = True
            f_origin[j] = origin[e]
            if has_off:
                f_offset[j] = offset[e]
            if has_nb:
                f_prev[j] = prev[e]
                f_next[j] = nxt[e]
            if policy == LRU:
                # move to the end of the queue (logical position i is at (head + i) % bsize)
                hi_ = np.uint64(tag_hi[e]) if wide else np.uint64(0)
                lo_ = tag_lo[e]
                or_ = origin[e]
                of_ = offset[e] if has_off else np.uint8(0)
                pv_ = prev[e] if has_nb else np.uint8(0)
                nx_ = nxt[e] if has_nb else np.uint8(0)
                for i in range((slot - head) % bsize, n - 1):
                    src = base + (head + i + 1) % bsize
                    dst = base + (head + i) % bsize
                    _move(src, dst, tag_hi, tag_lo, origin, offset, prev, nxt, score)
                last = base + (head + n - 1) % bsize
                if wide:
                    tag_hi[last] = hi_
                tag_lo[last] = lo_
                origin[last] = or_
                if has_off:
                    offset[last] = of_
                if has_nb:
                    prev[last] = pv_
                    nxt[last] = nx_
            elif has_score:
                if score[e] < 255:
                    score[e] += np.uint8(1)
                if policy == LUCKY or score[e] == 255:
                    halve_if_needed(policy, base, n, score, saturated, limit)
            continue
        if filtered and not insert[j]:
            continue
        if n < bsize:
            e = base + n
            fill[b] = np.uint8(n + 1)
        elif ring:  # the oldest entry is at the head: overwrite it, advance the head
            e = base + head
            evicted[nev] = origin[e]
            nev += 1
            fill[b] = np.uint8(bsize + (head + 1) % bsize)
        else:
            victim = choose_victim(policy, base, n, score, rng)
            evicted[nev] = origin[base + victim]
            nev += 1
            if policy == LRU:
                for i in range(victim, n - 1):
                    _move(base + i + 1, base + i, tag_hi, tag_lo, origin, offset, prev, nxt, score)
                e = base + n - 1
            else:
                e = base + victim
        lo, hi = _tags(fp, tag_hi, tag_lo)
        if wide:
            tag_hi[e] = hi
        tag_lo[e] = lo
        origin[e] = own
        if has_off:
            offset[e] = np.uint8(j & 255)
        if has_nb:
            prev[e] = np.uint8(fps[j - 1] >> np.uint64(56)) if j > 0 else np.uint8(0)
            nxt[e] = np.uint8(fps[j + 1] >> np.uint64(56)) if j + 1 < m else np.uint8(0)
        if has_score:
            score[e] = np.uint8(1)
    return nev


@numba.njit(cache=True)
def _add_scores(
    fps: U64,
    bonus: I64,
    nbuckets: int,
    bsize: int,
    tag_hi: U16,
    tag_lo: U32,
    score: U8,
    fill: U8,
    limit: int,
) -> None:  # pragma: no cover - numba
    """Lucky rules (b)-(e): add ``bonus[j]`` to fingerprint j's score if it is still stored."""
    for j in range(fps.shape[0]):
        if bonus[j] <= 0:
            continue
        b, base, slot = _find(fps[j], nbuckets, bsize, tag_hi, tag_lo, fill)
        if slot < 0:
            continue
        e = base + slot
        score[e] = np.uint8(min(255, int(score[e]) + int(bonus[j])))
        halve_if_needed(LUCKY, base, np.int64(fill[b]), score, 0, limit)


class BucketTable:
    """The paper's fixed-size bucketed hash table; its arrays never exceed ``memory_bytes``."""

    def __init__(self, config: OriginConfig, arrays: dict[str, Any] | None = None) -> None:
        if config.memory_bytes is None:
            raise CapacityError("BucketTable needs memory_bytes; use UnlimitedTable for None")
        self.config = config
        self.bucket_size = config.bucket_size
        self.entry_bytes = entry_bytes(config)
        self.bucket_bytes = self.bucket_size * self.entry_bytes + 1
        self.nbuckets = config.memory_bytes // self.bucket_bytes
        if self.nbuckets < 1:
            raise CapacityError(
                f"memory {config.memory_bytes} B is too small for one bucket of"
                f" {self.bucket_size} x {self.entry_bytes} B + 1 B = {self.bucket_bytes} B"
            )
        if self.nbuckets >= 1 << 32:
            raise CapacityError("memory too large: at most 2^32 - 1 buckets")
        self._policy = POLICY_CODES[config.eviction]
        n = self.nbuckets * self.bucket_size
        has_off = config.estimation in ("b", "be")
        has_nb = config.estimation in ("e", "be")
        has_score = config.eviction in ("copycount", "lucky")
        # (high tag dtype, its length, low tag dtype) for 6, 4 and 3 fingerprint bytes
        hi_dtype, hi_n, lo_dtype = {
            6: (np.uint16, n, np.uint32), 4: (np.uint16, 0, np.uint32), 3: (np.uint8, n, np.uint16)
        }[config.fingerprint_bytes]  # fmt: skip
        self._layout = {
            "tag_hi": (hi_dtype, hi_n), "tag_lo": (lo_dtype, n),
            "origin": (np.uint32 if config.origin_bytes == 4 else np.int64, n),
        }  # fmt: skip
        if arrays is None:
            self.tag_hi = np.zeros(hi_n, dtype=hi_dtype)
            self.tag_lo = np.zeros(n, dtype=lo_dtype)
            self.origin = np.zeros(n, dtype=self._layout["origin"][0])
            self.offset = np.zeros(n if has_off else 0, dtype=np.uint8)
            self.prev = np.zeros(n if has_nb else 0, dtype=np.uint8)
            self.next = np.zeros(n if has_nb else 0, dtype=np.uint8)
            self.score = np.zeros(n if has_score else 0, dtype=np.uint8)
            self.fill = np.zeros(self.nbuckets, dtype=np.uint8)
            seed = np.uint64(config.seed) ^ np.uint64(0x9E3779B97F4A7C15)
            self.rng = np.array([seed if seed else np.uint64(1)], dtype=np.uint64)
        else:
            self._restore(arrays, n, has_off, has_nb, has_score)

    def _restore(self, arrays: dict[str, Any], n: int, off: bool, nb: bool, sc: bool) -> None:
        expected = {
            **self._layout,
            "offset": (np.uint8, n if off else 0), "prev": (np.uint8, n if nb else 0),
            "next": (np.uint8, n if nb else 0), "score": (np.uint8, n if sc else 0),
            "fill": (np.uint8, self.nbuckets), "rng": (np.uint64, 1),
        }  # fmt: skip
        for name, (dtype, size) in expected.items():
            value = arrays.get(name)
            if not isinstance(value, np.ndarray) or value.dtype != dtype or value.shape != (size,):
                raise StoreError(f"saved origin table field {name!r} is missing or malformed")
            setattr(self, name, np.array(value))

    @property
    def capacity(self) -> int:
        """Number of shingles the table can hold."""
        return self.nbuckets * self.bucket_size

    @property
    def nbytes(self) -> int:
        """Bytes held by the table's arrays (<= ``memory_bytes``; the 8-byte RNG state aside)."""
        return sum(int(getattr(self, f).nbytes) for f in _FIELDS if f != "rng")

    @property
    def stored(self) -> int:
        """Number of shingles currently stored."""
        return int(np.minimum(self.fill, self.bucket_size).sum(dtype=np.int64))

    def probe(self, fps: U64, own: int, insert: BOOL | None = None) -> tuple[Hits, I64]:
        """Look up / insert each fingerprint in order; returns hits and evicted origins.

        ``insert`` (optional, one bool per fingerprint): store only those misses."""
        if self.config.origin_bytes == 4 and own >= 1 << 32:
            raise CapacityError("origin_bytes=4 stores 4-byte origins: at most 2^32 documents")
        m = fps.shape[0]
        found = np.zeros(m, dtype=np.bool_)
        origin = np.full(m, own, dtype=np.int64)
        off = np.zeros(m, dtype=np.uint8)
        prev = np.zeros(m, dtype=np.uint8)
        nxt = np.zeros(m, dtype=np.uint8)
        evicted = np.empty(m, dtype=np.int64)
        cfg = self.config
        nev = _probe_insert(
            fps, own, self.nbuckets, self.bucket_size, self.tag_hi, self.tag_lo, self.origin,
            self.offset, self.prev, self.next, self.score, self.fill, self.rng, self._policy,
            cfg.copycount_saturated, cfg.lucky_limit, found, origin, off, prev, nxt, evicted,
            np.zeros(0, dtype=np.bool_) if insert is None else insert,
        )  # fmt: skip
        return Hits(found, origin, off, prev, nxt), evicted[:nev]

    def add_scores(self, fps: U64, bonus: I64) -> None:
        """Apply lucky increments to the fingerprints still stored."""
        _add_scores(
            fps, bonus, self.nbuckets, self.bucket_size, self.tag_hi, self.tag_lo, self.score,
            self.fill, self.config.lucky_limit,
        )  # fmt: skip

    def arrays(self) -> dict[str, np.ndarray[Any, Any]]:
        """The table's arrays, for saving."""
        return {f: getattr(self, f) for f in _FIELDS}


class UnlimitedTable:
    """Reference-mode table: every fingerprint kept forever (a dict; memory grows)."""

    def __init__(self, config: OriginConfig, arrays: dict[str, Any] | None = None) -> None:
        self.config = config
        self._facts: dict[int, tuple[int, int, int, int]] = {}
        if arrays is not None:
            keys = arrays.get("keys")
            facts = arrays.get("facts")
            if (
                not isinstance(keys, np.ndarray)
                or not isinstance(facts, np.ndarray)
                or facts.shape != (keys.shape[0], 4)
            ):
                raise StoreError("saved unlimited origin table is malformed")
            self._facts = {
                int(k): (int(f[0]), int(f[1]), int(f[2]), int(f[3]))
                for k, f in zip(keys.tolist(), facts.tolist(), strict=True)
            }

    capacity = property(lambda self: len(self._facts))
    stored = property(lambda self: len(self._facts))

    @property
    def nbytes(self) -> int:
        """Rough bytes of the dict (grows with the stream)."""
        return len(self._facts) * 200

    def probe(self, fps: U64, own: int, insert: BOOL | None = None) -> tuple[Hits, I64]:
        """Look up / insert each fingerprint in order (never evicts); ``insert`` as for
        :meth:`BucketTable.probe`."""
        m = fps.shape[0]
        found = np.zeros(m, dtype=np.bool_)
        origin = np.full(m, own, dtype=np.int64)
        off = np.zeros(m, dtype=np.uint8)
        prev_b, next_b = _neighbour_bytes(fps)
        prev = np.zeros(m, dtype=np.uint8)
        nxt = np.zeros(m, dtype=np.uint8)
        facts = self._facts
        get = facts.get
        pb = prev_b.tolist()
        nb = next_b.tolist()
        keep = [True] * m if insert is None else insert.tolist()
        for j, fp in enumerate(fps.tolist()):
            hit = get(fp)
            if hit is None:
                if keep[j]:
                    facts[fp] = (own, j & 255, pb[j], nb[j])
            else:
                found[j] = True
                origin[j], off[j], prev[j], nxt[j] = hit
        return Hits(found, origin, off, prev, nxt), np.empty(0, dtype=np.int64)

    def add_scores(self, fps: U64, bonus: I64) -> None:
        """No eviction, so scores are not kept."""

    def arrays(self) -> dict[str, np.ndarray[Any, Any]]:
        """The dict as two arrays, for saving."""
        keys = np.fromiter(self._facts.keys(), dtype=np.uint64, count=len(self._facts))
        facts = np.array(list(self._facts.values()), dtype=np.int64).reshape(-1, 4)
        return {"keys": keys, "facts": facts}


def make_table(
    config: OriginConfig, arrays: dict[str, Any] | None = None
) -> BucketTable | UnlimitedTable:
    """The table for ``config``: bucketed with a byte budget, or unlimited when it is None."""
    if config.memory_bytes is None:
        return UnlimitedTable(config, arrays)
    return BucketTable(config, arrays)
