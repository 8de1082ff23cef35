"""Compiled kernels of the LSH index (internal): band keys, the hashed band tables' adds and
lookups, exact candidate counts.  See :mod:`neardup.index.lsh` for the guarantees and
:mod:`neardup.index._tables` for the table layout.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from neardup._jit import njit
from neardup._mix import GOLDEN, splitmix64
from neardup.index._bands import band_head, insert_one, slot_tag

U64 = npt.NDArray[np.uint64]
U32 = npt.NDArray[np.uint32]
U8 = npt.NDArray[np.uint8]
I64 = npt.NDArray[np.int64]
Bool = npt.NDArray[np.bool_]

_COUNT_BITS = 15  # numbers of equal values are at most num_perm <= 2**14
_COUNT_MASK = (1 << _COUNT_BITS) - 1
_BAND_BITS = 16  # a band hit is row << 16 | band (bands <= num_perm <= 2**14)
_BAND_MASK = (1 << _BAND_BITS) - 1


@njit(cache=True)
def band_keys(values: U64, bands: int, rows: int) -> U64:  # pragma: no cover - compiled
    """(bands, n) band keys of the (n, num_perm) signatures: splitmix64 fold of each band.

    ``h = splitmix(band + 1)``; for each value ``v`` of the band ``h = splitmix(h ^ v)``.
    """
    n = values.shape[0]
    out = np.empty((bands, n), dtype=np.uint64)
    for i in range(n):
        for b in range(bands):
            out[b, i] = _band_key(values[i], b, rows)
    return out


_mix = njit(cache=True, inline="always")(splitmix64)


@njit(cache=True, inline="always")
def _band_key(sig: U64, band: int, rows: int) -> np.uint64:  # pragma: no cover - compiled
    h = _mix(np.uint64(band + 1))
    for j in range(band * rows, (band + 1) * rows):
        h = _mix(h ^ sig[j])
    return h


@njit(cache=True, inline="always")
def _table_keys(sig: U64, bands: int, rows: int, out: U64 | I64) -> None:  # pragma: no cover
    """The keys of ``sig``'s bands in the in-memory tables, into ``out[:bands]`` (the 64 bits
    as ``out``'s integer type): per band a polynomial of its values and its number,
    finalised by splitmix64.  Cheaper than :func:`band_keys` (one multiply per value
    instead of a full mix), and enough: the tables only route a lookup to a chain, whose
    rows are then checked value by value.  The bands are stepped together, value by value,
    so that their multiplications overlap (one band after another waits on each product:
    twice the time)."""
    for b in range(bands):
        out[b] = np.uint64(b + 1) * np.uint64(0xD6E8FEB86659FD93)
    for j in range(rows):
        for b in range(bands):
            out[b] = np.uint64(out[b]) * GOLDEN + sig[b * rows + j]
    for b in range(bands):
        out[b] = _mix(np.uint64(out[b]))


@njit(cache=True, inline="always")
def _store(
    sig: U64,
    values: U64,
    alive: Bool,
    row: int,
    slots: U64,
    tags: U8,
    nxt: U32,
    used: I64,
    keys: U64,
    first: U8,
    bands: int,
    rows: int,
) -> None:  # pragma: no cover - compiled
    values[row] = sig
    alive[row] = True
    mask = np.uint64(slots.shape[1] - 1)
    _table_keys(sig, bands, rows, keys)  # the keys, then their independent loads (_band_hits)
    for b in range(bands):
        first[b] = tags[b, (keys[b] >> np.uint64(32)) & mask]
    for b in range(bands):
        if first[b] == 0:  # the usual case: a band no row holds yet
            fingerprint = keys[b] >> np.uint64(32)
            pos = fingerprint & mask
            slots[b, pos] = (fingerprint << np.uint64(32)) | np.uint64(row + 1)
            tags[b, pos] = slot_tag(fingerprint)
            nxt[row, b] = 0
            used[b] += 1
        else:
            insert_one(slots, tags, nxt, used, b, keys[b], row)


@njit(cache=True)
def _add_block(
    block: U64,
    start: int,
    values: U64,
    alive: Bool,
    slots: U64,
    tags: U8,
    nxt: U32,
    used: I64,
    bands: int,
    rows: int,
) -> np.int64:  # pragma: no cover - compiled
    """Store each row of ``block`` as rows ``start, start + 1, ...`` (values, live flag) and
    insert its band keys: one call for many adds instead of several numpy steps each.  The
    most slots used in a band."""
    keys = np.empty(bands, dtype=np.uint64)
    first = np.empty(bands, dtype=np.uint8)
    for i in range(block.shape[0]):
        _store(block[i], values, alive, start + i, slots, tags, nxt, used, keys, first, bands, rows)
    return np.int64(used.max())


# Inlined into its callers, as _query_into: a call between compiled functions passes each
# array as a structure and counts its references, a measurable share of a single query.
@njit(cache=True, inline="always")
def _band_hits(
    q: U64,
    values: U64,
    alive: Bool,
    slots: U64,
    tags: U8,
    nxt: U32,
    bands: int,
    rows: int,
    check: bool,
    out: I64,
    scratch: I64,
) -> int:  # pragma: no cover - compiled
    """Live rows holding one of ``q``'s bands (a row once per band it holds), as
    ``row << 16 | band``, into ``out`` while there is room; how many there are.  ``check``:
    each row's band values are compared with ``q``'s (exact); else every row whose band key
    has the table's 32-bit fingerprint is taken, and the caller compares the values.
    ``scratch``: work space of at least ``2 * bands`` values.

    In passes, each of independent loads issued back to back, which the processor overlaps
    (a loop that hashes, loads and follows in turn keeps only a few in flight and waits for
    each cache miss): every band key; the first tag of every band; the head of every band
    whose first slot is used (a new document usually has none); then the chains."""
    mask = np.uint64(slots.shape[1] - 1)
    _table_keys(q, bands, rows, scratch)
    for b in range(bands):
        scratch[bands + b] = np.int64(tags[b, (np.uint64(scratch[b]) >> np.uint64(32)) & mask])
    found = False
    for b in range(bands):
        if scratch[bands + b] != 0:  # else no row holds this band: the usual answer
            head = band_head(slots, tags, b, np.uint64(scratch[b]))
            scratch[bands + b] = head
            found = found or head != 0
    if not found:
        return 0
    count = 0
    for b in range(bands):
        r = scratch[bands + b]
        while r != 0:
            row = r - 1
            if alive[row]:
                same = True
                if check:
                    for j in range(b * rows, (b + 1) * rows):
                        if values[row, j] != q[j]:
                            same = False  # another key with the same 32-bit fingerprint
                            break
                if same:
                    if count < out.shape[0]:
                        out[count] = (row << _BAND_BITS) | b
                    count += 1
            r = np.int64(nxt[row, b])
    return count


@njit(cache=True, inline="always")
def _ascending(a: I64) -> bool:  # pragma: no cover - compiled
    i = 1
    while i < a.shape[0] and a[i] >= a[i - 1]:
        i += 1
    return bool(i >= a.shape[0])


@njit(cache=True, inline="always")
def _equal_values(v: U64, q: U64) -> int:  # pragma: no cover - compiled
    """How many values of ``v`` equal ``q``'s (a branch-free loop the compiler vectorises:
    near copies would make a branch per value unpredictable)."""
    c = 0
    for k in range(v.shape[0]):
        c += int(v[k] == q[k])
    return c


@njit(cache=True, inline="always")
def _query_into(
    q: U64,
    values: U64,
    alive: Bool,
    slots: U64,
    tags: U8,
    nxt: U32,
    bands: int,
    rows: int,
    need: int,
    exact: bool,
    out: I64,
) -> int:  # pragma: no cover - compiled
    """The distinct rows sharing a band with ``q`` that have at least ``need`` values equal
    to ``q``'s, in row order, into ``out[:k]``, and their numbers of equal values into
    ``out[m : m + k]`` (``m = len(out) // 4``; ``exact``: counted in full, else counting
    stops at ``need``, enough to keep or drop the row; the second half of ``out`` is work
    space).  Returns ``k``, or ``-k`` when ``out`` is too small (call again with four times
    ``k``).  Output arrays are the caller's: returning new arrays from a compiled call costs
    about a microsecond each.

    With bands of one row, the first ``bands`` positions are the bands: a row's hits are
    exactly its equal values there, so only the other positions are read.

    Exact counts read every value of a candidate anyway: the band check is made there (a
    row is kept when one of its bands equals ``q``'s), not on the way through the tables,
    which saves a dependent memory read per candidate."""
    quarter = out.shape[0] // 4
    half = 2 * quarter
    hits = out[half:]
    # work space of the table lookups: the output's first quarter, written only afterwards
    scratch = out[: 2 * bands] if 2 * bands <= quarter else np.empty(2 * bands, dtype=np.int64)
    # One call site in a loop (it is inlined: two would double the code numba compiles).
    while True:
        n = _band_hits(q, values, alive, slots, tags, nxt, bands, rows, not exact, hits, scratch)
        if n <= hits.shape[0]:
            break
        hits = np.empty(n, dtype=np.int64)  # more hits than the buffer holds: again, in room
    if n == 0:
        return 0
    hits = hits[:n]
    if n > 1 and not _ascending(hits):  # one row's hits (a near copy) come in order
        hits.sort()  # work space: sorted in place
    width = values.shape[1]
    banded = bands if rows == 1 and not exact else 0
    kept = 0
    i = 0
    while i < n:
        r = hits[i] >> _BAND_BITS
        j = i + 1
        while j < n and (hits[j] >> _BAND_BITS) == r:
            j += 1
        if exact:
            c = _equal_values(values[r], q)
            shared = False  # a band it was reached through is q's (else: a fingerprint only)
            for h in range(i, j):
                b = hits[h] & _BAND_MASK
                same = True
                for k in range(b * rows, (b + 1) * rows):
                    if values[r, k] != q[k]:
                        same = False
                        break
                if same:
                    shared = True
                    break
            if not shared:
                c = -1
        else:
            c = j - i if banded > 0 else 0
            k = banded
            while k < width and c < need:
                if values[r, k] == q[k]:
                    c += 1
                k += 1
        if c >= need:
            if kept < quarter:
                out[kept] = r
                out[quarter + kept] = c
            kept += 1
        i = j
    return kept if kept <= quarter else -kept


@njit(cache=True)
def _query_one(
    values: U64,
    alive: Bool,
    slots: U64,
    tags: U8,
    nxt: U32,
    rows: int,
    need: int,
    out: I64,
    q: U64,
) -> np.int64:  # pragma: no cover - compiled
    """:func:`_query_into` (exact counts, ``bands`` from the tables) into ``out``, with the
    usual answers as one integer (no output array to read): 0 for no row,
    ``(row << 15 | count) + 1`` for one, ``-k`` for ``k`` rows (in ``out`` as
    :func:`_query_into` leaves them when ``k <= len(out) // 4``; else call it again with
    room).  The index's arrays come first and the query last, so that the caller can bind
    them once (``functools.partial``)."""
    k = _query_into(q, values, alive, slots, tags, nxt, slots.shape[0], rows, need, True, out)
    if k == 1:
        return np.int64(((out[0] << _COUNT_BITS) | out[out.shape[0] // 4]) + 1)
    return np.int64(0) if k == 0 else np.int64(-abs(k))


@njit(cache=True)
def _query_many(
    qs: U64,
    values: U64,
    alive: Bool,
    slots: U64,
    tags: U8,
    nxt: U32,
    bands: int,
    rows: int,
    need: int,
) -> tuple[I64, I64, I64]:  # pragma: no cover - compiled
    """:func:`_query_into` (exact counts) of each query: (query number, row, count)."""
    out_q = np.empty(0, dtype=np.int64)
    out_r = np.empty(0, dtype=np.int64)
    out_c = np.empty(0, dtype=np.int64)
    total = 0
    found = np.empty(1024, dtype=np.int64)
    for q in range(qs.shape[0]):
        while True:  # one call site of the inlined _query_into, as there
            k = _query_into(qs[q], values, alive, slots, tags, nxt, bands, rows, need, True, found)
            if k >= 0:
                break
            found = np.empty(-8 * k, dtype=np.int64)
        if total + k > out_q.shape[0]:
            size = max(2 * out_q.shape[0], total + k, 1024)
            grown_q = np.empty(size, dtype=np.int64)
            grown_r = np.empty(size, dtype=np.int64)
            grown_c = np.empty(size, dtype=np.int64)
            grown_q[:total] = out_q[:total]
            grown_r[:total] = out_r[:total]
            grown_c[:total] = out_c[:total]
            out_q, out_r, out_c = grown_q, grown_r, grown_c
        quarter = found.shape[0] // 4
        out_q[total : total + k] = q
        out_r[total : total + k] = found[:k]
        out_c[total : total + k] = found[quarter : quarter + k]
        total += k
    return out_q[:total], out_r[:total], out_c[:total]
