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

A probe of a selected fingerprint either finds it or inserts it with the current document as
origin, evicting one entry when the bucket is full: compiled in :mod:`.buckets`.
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

import numpy as np
import numpy.typing as npt

from neardup.detect.origin import buckets
from neardup.detect.origin.config import OriginConfig
from neardup.detect.origin.evict import LRU, POLICY_CODES
from neardup.errors import CapacityError, StoreError

__all__ = ["BucketTable", "Hits", "Probe", "UnlimitedTable", "entry_bytes", "make_table"]

U8 = npt.NDArray[np.uint8]
U64 = npt.NDArray[np.uint64]
I64 = npt.NDArray[np.int64]
BOOL = npt.NDArray[np.bool_]

_FIELDS = (
    "tag_hi", "tag_lo", "origin", "offset", "prev", "next", "score", "fill", "loose", "lost", "rng"
)  # fmt: skip


@dataclasses.dataclass(frozen=True, slots=True)
class Hits:
    """What the table returned for a document's selected fingerprints (one row each)."""

    found: BOOL
    origin: I64  # stored origin ordinal where found, else the current document
    offset: U8
    prev: U8
    next: U8
    # per fingerprint: it may have been stored once and lost since (always True outside
    # adaptive mode, where nothing is tracked)
    maybe_lost: BOOL


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


@dataclasses.dataclass(frozen=True, slots=True)
class Probe:
    """What the engine sends with a document's fingerprints (all optional).

    ``anchor``: which may evict stored anchors (the others are stored loose; None: all are
    anchors, the paper's table); ``insert``: which misses may be stored at all (None: all);
    ``offsets``, ``prev``, ``next``: the facts stored with each (None: the position mod 256
    and the neighbouring fingerprints' first bytes, the paper's)."""

    anchor: BOOL | None = None
    insert: BOOL | None = None
    offsets: U8 | None = None
    prev: U8 | None = None
    next: U8 | None = None


_EMPTY_BOOL = np.zeros(0, dtype=np.bool_)


class BucketTable:
    """The paper's fixed-size bucketed hash table; its arrays never exceed ``memory_bytes``.

    With ``config.adaptive`` each bucket also keeps a loose-entry count (1 byte) and a 64-bit
    mask of the fingerprints it lost (8 bytes), so a probe tells whether a missing
    fingerprint may have been lost (``Hits.maybe_lost``) or was certainly never stored."""

    # the arrays (structure of arrays; sizes in ``_layout``)
    tag_hi: npt.NDArray[Any]
    tag_lo: npt.NDArray[Any]
    origin: npt.NDArray[Any]
    offset: U8
    prev: U8
    next: U8
    score: U8
    fill: U8
    loose: U8
    lost: U64
    rng: U64

    def __init__(self, config: OriginConfig, arrays: dict[str, Any] | None = None) -> None:
        if config.memory_bytes is None:
            raise CapacityError("BucketTable needs memory_bytes; use UnlimitedTable for None")
        self.config = config
        self.bucket_size = config.bucket_size
        self.entry_bytes = entry_bytes(config)
        self.adaptive = config.adaptive
        per_bucket = 10 if self.adaptive else 1  # fill (+ loose count + lost mask)
        self.bucket_bytes = self.bucket_size * self.entry_bytes + per_bucket
        self.nbuckets = config.memory_bytes // self.bucket_bytes
        if self.nbuckets < 1:
            raise CapacityError(
                f"memory {config.memory_bytes} B is too small for one bucket of"
                f" {self.bucket_size} x {self.entry_bytes} B + {per_bucket} B ="
                f" {self.bucket_bytes} B"
            )
        if self.nbuckets >= 1 << 32:
            raise CapacityError("memory too large: at most 2^32 - 1 buckets")
        self.policy = POLICY_CODES[config.eviction]
        n = self.nbuckets * self.bucket_size
        has_off = config.estimation in ("b", "be")
        has_nb = config.estimation in ("e", "be")
        has_score = config.eviction in ("copycount", "lucky")
        # (high tag dtype, its length, low tag dtype) for 6, 4 and 3 fingerprint bytes
        hi_dtype, hi_n, lo_dtype = {
            6: (np.uint16, n, np.uint32), 4: (np.uint16, 0, np.uint32), 3: (np.uint8, n, np.uint16)
        }[config.fingerprint_bytes]  # fmt: skip
        nb = self.nbuckets if self.adaptive else 0
        self._layout = {
            "tag_hi": (hi_dtype, hi_n), "tag_lo": (lo_dtype, n),
            "origin": (np.uint32 if config.origin_bytes == 4 else np.int64, n),
            "offset": (np.uint8, n if has_off else 0), "prev": (np.uint8, n if has_nb else 0),
            "next": (np.uint8, n if has_nb else 0), "score": (np.uint8, n if has_score else 0),
            "fill": (np.uint8, self.nbuckets), "loose": (np.uint8, nb), "lost": (np.uint64, nb),
            "rng": (np.uint64, 1),
        }  # fmt: skip
        self.last_inserted = 0
        self.last_dropped = 0
        if arrays is None:
            for name, (dtype, size) in self._layout.items():
                setattr(self, name, np.zeros(size, dtype=dtype))
            seed = np.uint64(config.seed) ^ np.uint64(0x9E3779B97F4A7C15)
            self.rng = np.array([seed if seed else np.uint64(1)], dtype=np.uint64)
        else:
            self._restore(arrays)

    def _restore(self, arrays: dict[str, Any]) -> None:
        for name, (dtype, size) in self._layout.items():
            value = arrays.get(name)
            if not isinstance(value, np.ndarray) or value.dtype != dtype or value.shape != (size,):
                raise StoreError(f"saved origin table field {name!r} is missing or malformed")
            setattr(self, name, np.array(value))
        self._check()

    def _check(self) -> None:
        """Cheap consistency checks of restored arrays (a damaged file is refused)."""
        bsize = self.bucket_size
        fill = self.fill.astype(np.int64)
        ring = self.policy == LRU and bsize <= 128
        if (fill > (2 * bsize - 1 if ring else bsize)).any():
            raise StoreError("saved origin table has a bucket fill beyond its size")
        if self.adaptive:
            used = np.arange(self.capacity) % bsize < np.repeat(np.minimum(fill, bsize), bsize)
            loose = np.bincount(
                np.arange(self.capacity)[used & ((self.origin & 1) == 1)] // bsize,
                minlength=self.nbuckets,
            )
            if not np.array_equal(loose, self.loose.astype(np.int64)):
                raise StoreError("saved origin table's loose counts do not match its entries")

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

    def stored_origins(self) -> I64:
        """The origin ordinal of every stored entry (for analyses)."""
        bsize = self.bucket_size
        used = np.arange(self.capacity) % bsize < np.repeat(
            np.minimum(self.fill, bsize).astype(np.int64), bsize
        )
        return np.asarray(self.origin[used], dtype=np.int64) >> 1

    def probe(
        self,
        fps: U64,
        own: int,
        insert: BOOL | None = None,
        facts: Probe | None = None,
        readonly: bool = False,
    ) -> tuple[Hits, I64]:
        """Look up / insert each fingerprint in order; returns hits and evicted origins.

        ``insert`` (optional, one bool per fingerprint): store only those misses; ``facts``:
        see :class:`Probe`.  :attr:`last_inserted` is then the number of entries stored."""
        limit = 1 << (31 if self.config.origin_bytes == 4 else 62)
        if own >= limit:
            raise CapacityError(
                f"origin_bytes={self.config.origin_bytes} stores origins below 2^"
                f"{limit.bit_length() - 1}: the stream is longer than that"
            )
        facts = facts or Probe()
        if insert is None:
            insert = facts.insert
        m = fps.shape[0]
        found = np.zeros(m, dtype=np.bool_)
        origin = np.full(m, own, dtype=np.int64)
        off = np.zeros(m, dtype=np.uint8)
        prev = np.zeros(m, dtype=np.uint8)
        nxt = np.zeros(m, dtype=np.uint8)
        lost = np.ones(m, dtype=np.bool_) if not self.adaptive else np.zeros(m, dtype=np.bool_)
        evicted = np.empty(m, dtype=np.int64)
        offs = facts.offsets
        if offs is None:
            offs = (np.arange(m, dtype=np.int64) & 255).astype(np.uint8)
        pb, nb = facts.prev, facts.next
        if pb is None or nb is None:
            pb, nb = _neighbour_bytes(fps)
        cfg = self.config
        nev, self.last_inserted, self.last_dropped = buckets.probe_insert(
            fps, own, self.nbuckets, self.bucket_size, self.tag_hi, self.tag_lo, self.origin,
            self.offset, self.prev, self.next, self.score, self.fill, self.loose, self.lost,
            self.rng, self.policy, cfg.copycount_saturated, cfg.lucky_limit, found, origin,
            off, prev, nxt, lost, evicted,
            _EMPTY_BOOL if insert is None else insert,
            _EMPTY_BOOL if facts.anchor is None or not self.adaptive else facts.anchor,
            offs, pb, nb, readonly,
        )  # fmt: skip
        return Hits(found, origin, off, prev, nxt, lost), evicted[:nev]

    def add_scores(self, fps: U64, bonus: I64) -> None:
        """Apply lucky increments to the fingerprints still stored."""
        buckets.add_scores(
            fps, bonus, self.nbuckets, self.bucket_size, self.tag_hi, self.tag_lo, self.score,
            self.fill, self.config.lucky_limit,
        )  # fmt: skip

    def arrays(self) -> dict[str, np.ndarray[Any, Any]]:
        """The table's arrays, for saving."""
        return {f: getattr(self, f) for f in _FIELDS}


class UnlimitedTable:
    """Reference-mode table: every fingerprint kept forever (a dict; memory grows).  It never
    loses anything, so ``Hits.maybe_lost`` is all False (all True outside adaptive mode,
    where estimation is not gated)."""

    def __init__(self, config: OriginConfig, arrays: dict[str, Any] | None = None) -> None:
        self.config = config
        self.last_inserted = 0
        self.last_dropped = 0
        self._facts: dict[int, tuple[int, int, int, int]] = {}
        if arrays is not None:
            keys = arrays.get("keys")
            facts = arrays.get("facts")
            if (
                not isinstance(keys, np.ndarray)
                or not isinstance(facts, np.ndarray)
                or keys.dtype != np.uint64
                or facts.dtype != np.int64
                or keys.ndim != 1
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

    def stored_origins(self) -> I64:
        """The origin ordinal of every stored entry."""
        return np.array([f[0] for f in self._facts.values()], dtype=np.int64)

    def probe(
        self,
        fps: U64,
        own: int,
        insert: BOOL | None = None,
        facts: Probe | None = None,
        readonly: bool = False,
    ) -> tuple[Hits, I64]:
        """Look up / insert each fingerprint in order (never evicts); ``insert``, ``facts``
        and ``readonly`` as for :meth:`BucketTable.probe` (anchors make no difference)."""
        facts = facts or Probe()
        if insert is None:
            insert = facts.insert
        m = fps.shape[0]
        found = np.zeros(m, dtype=np.bool_)
        origin = np.full(m, own, dtype=np.int64)
        off = np.zeros(m, dtype=np.uint8)
        prev_b, next_b = (
            (facts.prev, facts.next)
            if facts.prev is not None and facts.next is not None
            else _neighbour_bytes(fps)
        )
        offs = facts.offsets
        offs_l = (np.arange(m) & 255).tolist() if offs is None else offs.tolist()
        prev = np.zeros(m, dtype=np.uint8)
        nxt = np.zeros(m, dtype=np.uint8)
        facts_ = self._facts
        get = facts_.get
        pb = prev_b.tolist()
        nb = next_b.tolist()
        keep = [not readonly] * m if insert is None else (insert & (not readonly)).tolist()
        before = len(facts_)
        for j, fp in enumerate(fps.tolist()):
            hit = get(fp)
            if hit is None:
                if keep[j]:
                    facts_[fp] = (own, offs_l[j], pb[j], nb[j])
            else:
                found[j] = True
                origin[j], off[j], prev[j], nxt[j] = hit
        lost = np.full(m, not self.config.adaptive, dtype=np.bool_)
        self.last_inserted = len(facts_) - before
        return Hits(found, origin, off, prev, nxt, lost), np.empty(0, dtype=np.int64)

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
