"""The bucketed table's operations in compiled code (seed 004, Section 2.2): find, insert,
evict and score the entries of one bucket (:class:`~neardup.detect.origin.table.BucketTable`
holds the arrays and their layout).

A probe of a selected fingerprint either finds it (its stored facts are returned and its
eviction data updated) or inserts it with the current document as origin, evicting one entry
when the bucket is full (:mod:`.evict`).  LRU keeps each bucket in recency order; a full
bucket is a ring whose oldest entry sits at a head stored in the fill byte (as bucket_size +
head, for buckets of at most 128 entries; larger ones shift), so an eviction is O(1) and only
a hit moves entries - the same order as shifting, without its cost, and no extra byte.

Guarantees: deterministic for a seed (the table's own random state); a probe is
O(bucket_size); fingerprint equality is decided on the stored bits plus the bucket bits (the
table's module states the false-match bound).
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np
import numpy.typing as npt

from neardup.detect.origin.evict import LRU, LUCKY, choose_victim, halve_if_needed, next_random

__all__ = ["add_scores", "probe_insert"]

U8 = npt.NDArray[np.uint8]
U16 = npt.NDArray[np.uint16]
U32 = npt.NDArray[np.uint32]
U64 = npt.NDArray[np.uint64]
I64 = npt.NDArray[np.int64]
BOOL = npt.NDArray[np.bool_]


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
def _to_back(
    slot: Any,
    head: Any,
    n: Any,
    base: Any,
    bsize: int,
    wide: bool,
    tag_hi: U16,
    tag_lo: U32,
    origin: I64,
    offset: U8,
    prev: U8,
    nxt: U8,
    score: U8,
) -> None:  # pragma: no cover - numba
    """LRU: move the entry in physical ``slot`` to the back of its bucket's queue (logical
    position i is physical ``(head + i) % bsize``), shifting the newer ones forward."""
    e = base + slot
    hi_ = np.uint64(tag_hi[e]) if wide else np.uint64(0)
    lo_ = tag_lo[e]
    or_ = origin[e]
    has_off = offset.shape[0] > 0
    has_nb = prev.shape[0] > 0
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


@numba.njit(cache=True)
def _loose_victim(
    oldest: bool, head: Any, n: Any, base: Any, bsize: int, origin: I64, rng: U64
) -> Any:  # pragma: no cover - numba
    """Physical slot of a loose entry of a full bucket that holds one: the oldest in queue
    order (``oldest``, LRU) or the first from a random slot on."""
    start = 0 if oldest else np.int64(next_random(rng) % np.uint64(n))
    for step in range(n):
        i = (head + step) % bsize if oldest else (start + step) % n
        if origin[base + i] & 1:
            return i
    return 0  # unreachable while the loose count is right


@numba.njit(cache=True)
def probe_insert(
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
    loose: U8,
    lost: U64,
    rng: U64,
    policy: int,
    saturated: int,
    limit: int,
    found: BOOL,
    f_origin: I64,
    f_offset: U8,
    f_prev: U8,
    f_next: U8,
    f_lost: BOOL,
    evicted: I64,
    insert: BOOL,
    anchor: BOOL,
    offs: U8,
    pbytes: U8,
    nbytes_: U8,
    readonly: bool,
) -> tuple[int, int, int]:  # pragma: no cover - numba
    """Probe every fingerprint in order, inserting misses; returns the numbers of entries
    evicted, inserted and dropped (misses not stored: not sampled, or loose with no room).

    ``insert`` (empty = all): only those misses may be stored.  ``anchor`` (empty = all are
    anchors, the paper's table): a miss that is not an anchor is stored *loose*; a full
    bucket evicts a loose entry first, and drops a loose newcomer when it holds none.
    ``lost`` (empty = not tracked): per bucket, one bit (``fp & 63``) for every entry it
    evicted or dropped; ``f_lost[j]`` tells whether fingerprint j's bit was set when it
    was probed (unset: j was never lost from the table).  ``readonly``: look up only, change
    nothing (a query that leaves no trace)."""
    m = fps.shape[0]
    filtered = insert.shape[0] > 0
    tiered = anchor.shape[0] > 0
    tracked = lost.shape[0] > 0
    has_off = offset.shape[0] > 0
    has_nb = prev.shape[0] > 0
    has_score = score.shape[0] > 0
    wide = tag_hi.shape[0] > 0
    # LRU keeps a full bucket as a ring (oldest first from ``head``), so evicting the oldest
    # entry is O(1); the head is stored in the fill byte as bsize + head (bsize <= 128)
    ring = policy == LRU and bsize <= 128
    nev = 0
    ins = 0
    drop = 0
    for j in range(m):
        fp = fps[j]
        b, base, slot = _find(fp, nbuckets, bsize, tag_hi, tag_lo, fill)
        n = min(np.int64(fill[b]), np.int64(bsize))
        head = np.int64(fill[b]) - n
        if slot >= 0:
            e = base + slot
            found[j] = True
            f_origin[j] = np.int64(origin[e]) >> 1
            if readonly:
                if has_off:
                    f_offset[j] = offset[e]
                if has_nb:
                    f_prev[j] = prev[e]
                    f_next[j] = nxt[e]
                continue
            if tiered and anchor[j] and (origin[e] & 1):
                origin[e] -= 1  # an anchor now: it leaves the loose tier
                loose[b] -= np.uint8(1)
            if has_off:
                f_offset[j] = offset[e]
            if has_nb:
                f_prev[j] = prev[e]
                f_next[j] = nxt[e]
            if policy == LRU:
                _to_back(
                    slot, head, n, base, bsize, wide, tag_hi, tag_lo, origin, offset, prev, nxt,
                    score,
                )  # fmt: skip
            elif has_score:
                if score[e] < 255:
                    score[e] += np.uint8(1)
                if policy == LUCKY or score[e] == 255:
                    halve_if_needed(policy, base, n, score, saturated, limit)
            continue
        bit = np.uint64(1) << (fp & np.uint64(63))
        if tracked:
            f_lost[j] = (lost[b] & bit) != 0
        if readonly:
            continue
        if filtered and not insert[j]:
            if tracked:
                lost[b] |= bit
            drop += 1
            continue
        is_loose = tiered and not anchor[j]
        if n < bsize:
            e = base + n
            fill[b] = np.uint8(n + 1)
        elif tiered and loose[b] > 0:
            # evict a loose entry: the oldest in LRU order, else from a random slot on
            victim = _loose_victim(policy == LRU, head, n, base, bsize, origin, rng)
            if tracked:
                lost[b] |= np.uint64(1) << (np.uint64(tag_lo[base + victim]) & np.uint64(63))
            evicted[nev] = np.int64(origin[base + victim]) >> 1
            nev += 1
            loose[b] -= np.uint8(1)
            if policy == LRU:  # the victim goes to the back of the queue, then is overwritten
                _to_back(
                    victim, head, n, base, bsize, wide, tag_hi, tag_lo, origin, offset, prev, nxt,
                    score,
                )  # fmt: skip
                e = base + (head + n - 1) % bsize
            else:
                e = base + victim
        elif is_loose:
            if tracked:
                lost[b] |= bit  # no room for a loose newcomer: dropped
            drop += 1
            continue
        elif ring:  # the oldest entry is at the head: overwrite it, advance the head
            e = base + head
            if tracked:
                lost[b] |= np.uint64(1) << (np.uint64(tag_lo[e]) & np.uint64(63))
            evicted[nev] = np.int64(origin[e]) >> 1
            nev += 1
            fill[b] = np.uint8(bsize + (head + 1) % bsize)
        else:
            victim = choose_victim(policy, base, n, score, rng)
            if tracked:
                lost[b] |= np.uint64(1) << (np.uint64(tag_lo[base + victim]) & np.uint64(63))
            evicted[nev] = np.int64(origin[base + victim]) >> 1
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
        origin[e] = (own << 1) | (1 if is_loose else 0)
        if is_loose:
            loose[b] += np.uint8(1)
        if has_off:
            offset[e] = offs[j]
        if has_nb:
            prev[e] = pbytes[j]
            nxt[e] = nbytes_[j]
        if has_score:
            score[e] = np.uint8(1)
        ins += 1
    return nev, ins, drop


@numba.njit(cache=True)
def add_scores(
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
