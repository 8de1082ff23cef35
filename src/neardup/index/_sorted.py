"""Sorted multi-tables of the Hamming index (internal), and the compiled queries over them.

**Sorted multi-tables** (:class:`MultiTable`, the Hamming index): ``T`` tables; each indexed
row has one 64-bit *table key* per table (a rotated fingerprint).  A query looks up, in each
table, the rows whose key shares the query key's top ``width`` bits.

Layout (log-structured, so adds are cheap and queries stay fast at 10 M rows):

* a small **buffer** of the most recent rows, scanned linearly by the query kernels;
* a few immutable **segments**: per table, the keys sorted (stably) by their top ``width``
  bits (``uint64``) with their row numbers (``uint32``) in the same order, plus a
  *directory*: for every value ``p`` of the top ``dbits`` key bits, where the keys with that
  prefix start (a CSR offsets array).  A lookup is
  one directory read plus, when ``width > dbits``, a binary search inside the bucket.

When the buffer is full it becomes a segment; segments are merged while the older one is at
most ``merge_ratio`` times larger than the newer one, so there are ``O(log n)`` of them and
every row is moved ``O(log n)`` times (amortised).  Merging two sorted runs uses numpy's
stable sort (timsort), which detects the two runs and merges them in linear time.  Removed rows
are dropped from the segments when they are merged (tombstones until then).

Memory: 12 bytes per row per table (8 key + 4 row number), plus the directories
(``<= 8 * (2**16 + 1)`` bytes per table per segment).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from neardup._jit import njit

U64 = npt.NDArray[np.uint64]
U32 = npt.NDArray[np.uint32]
I64 = npt.NDArray[np.int64]
Bool = npt.NDArray[np.bool_]

__all__ = [
    "MultiTable",
    "Segment",
    "hamming_probe_all",
    "hamming_probe_segment",
    "popcount64",
    "positions_within",
]

_MAX_DIRECTORY_BITS = 16


def _directory_bits(n: int, min_width: int) -> int:
    """Top bits used by a segment's directory: about log2(n), at most 16 and the key width."""
    return max(1, min(_MAX_DIRECTORY_BITS, min_width, max(1, n.bit_length() - 1)))


def _sort_order(keys: U64, widths: tuple[int, ...]) -> npt.NDArray[np.intp]:
    """(T, n) stable order of each table by its key's top ``width`` bits.

    Only the prefix matters to a lookup, and sorting a prefix of at most 16 bits is a linear
    radix sort in numpy (``kind="stable"``), several times faster than sorting 64-bit keys.
    """
    order = np.empty(keys.shape, dtype=np.intp)
    for t, width in enumerate(widths):
        if width >= 64:
            prefix: npt.NDArray[Any] = keys[t]
        else:
            prefix = keys[t] >> np.uint64(64 - width)
            if width <= 16:
                prefix = prefix.astype(np.uint16)
            elif width <= 32:
                prefix = prefix.astype(np.uint32)
        order[t] = np.argsort(prefix, kind="stable")
    return order


class Segment:
    """An immutable sorted run: ``keys`` (T, n) sorted per table, ``rows`` (T, n), directory."""

    __slots__ = ("dbits", "directory", "keys", "rows")

    def __init__(self, keys: U64, rows: U32, min_width: int) -> None:
        self.keys = keys
        self.rows = rows
        n = keys.shape[1]
        self.dbits = _directory_bits(n, min_width)
        shift = np.uint64(64 - self.dbits)
        directory = np.zeros((keys.shape[0], (1 << self.dbits) + 1), dtype=np.int64)
        for t in range(keys.shape[0]):
            counts = np.bincount((keys[t] >> shift).astype(np.int64), minlength=1 << self.dbits)
            np.cumsum(counts, out=directory[t, 1:])
        self.directory = directory

    @property
    def size(self) -> int:
        return int(self.keys.shape[1])

    @property
    def nbytes(self) -> int:
        return int(self.keys.nbytes + self.rows.nbytes + self.directory.nbytes)

    @classmethod
    def build(cls, keys: U64, rows: U32, widths: tuple[int, ...]) -> Segment:
        """Sort ``keys`` (T, n) per table by prefix, carrying ``rows`` (n,) along."""
        order = _sort_order(keys, widths)
        sorted_keys = np.take_along_axis(keys, order, axis=1)
        sorted_rows = rows[order].astype(np.uint32, copy=False)
        return cls(
            np.ascontiguousarray(sorted_keys), np.ascontiguousarray(sorted_rows), min(widths)
        )

    @classmethod
    def merge(cls, older: Segment, newer: Segment, alive: Bool, widths: tuple[int, ...]) -> Segment:
        """One segment with the live rows of both (linear: radix sort of <= 16-bit prefixes,
        or timsort, which finds the two sorted runs and merges them)."""
        keys = np.concatenate([older.keys, newer.keys], axis=1)
        rows = np.concatenate([older.rows, newer.rows], axis=1)
        keep = alive[rows[0]]
        if not keep.all():
            # Every table holds the same set of rows, so each keeps the same number of them.
            mask = alive[rows]
            t = keys.shape[0]
            keys = keys[mask].reshape(t, -1)
            rows = rows[mask].reshape(t, -1)
        order = _sort_order(keys, widths)
        return cls(
            np.ascontiguousarray(np.take_along_axis(keys, order, axis=1)),
            np.ascontiguousarray(np.take_along_axis(rows, order, axis=1)),
            min(widths),
        )


class MultiTable:
    """``T`` tables of (64-bit key -> rows): a buffer plus log-structured sorted segments."""

    def __init__(self, widths: tuple[int, ...], buffer_size: int, merge_ratio: int = 2) -> None:
        self.width_tuple = tuple(widths)
        self.widths = np.asarray(widths, dtype=np.int64)
        self.num_tables = len(widths)
        self.min_width = min(widths)
        self.buffer_size = buffer_size
        self.merge_ratio = merge_ratio
        self._segments: list[Segment] = []
        self._lists: tuple[Any, Any, Any, I64] | None = None
        self.buffer_keys = np.zeros((self.num_tables, buffer_size), dtype=np.uint64)
        self.buffer_rows = np.zeros(buffer_size, dtype=np.uint32)
        self.buffer_count = 0

    @property
    def segments(self) -> list[Segment]:
        return self._segments

    @segments.setter
    def segments(self, value: list[Segment]) -> None:
        self._segments = value
        self._lists = None

    def segment_lists(self) -> tuple[Any, Any, Any, I64]:
        """The segments as numba typed lists (keys, rows, directories) + directory bits,
        so one kernel call probes all of them; rebuilt only when the segments change."""
        if self._lists is None:
            from numba import types
            from numba.typed import List as NumbaList

            keys = NumbaList.empty_list(types.Array(types.uint64, 2, "C"))
            rows = NumbaList.empty_list(types.Array(types.uint32, 2, "C"))
            dirs = NumbaList.empty_list(types.Array(types.int64, 2, "C"))
            for seg in self._segments:
                keys.append(seg.keys)
                rows.append(seg.rows)
                dirs.append(seg.directory)
            dbits = np.array([seg.dbits for seg in self._segments], dtype=np.int64)
            self._lists = (keys, rows, dirs, dbits)
        return self._lists

    @property
    def nbytes(self) -> int:
        """Bytes held by the tables (segments and buffer)."""
        total = self.buffer_keys.nbytes + self.buffer_rows.nbytes
        return int(total + sum(s.nbytes for s in self.segments))

    def insert(self, keys: U64, rows: U32, alive: Bool) -> None:
        """Add rows with their table keys (``keys`` is (T, k))."""
        k = rows.shape[0]
        if k == 0:
            return
        if k >= self.buffer_size:
            self.flush(alive)
            self._add_segment(Segment.build(keys, rows, self.width_tuple), alive)
            return
        start = 0
        while start < k:
            room = self.buffer_size - self.buffer_count
            take = min(room, k - start)
            end = self.buffer_count + take
            self.buffer_keys[:, self.buffer_count : end] = keys[:, start : start + take]
            self.buffer_rows[self.buffer_count : end] = rows[start : start + take]
            self.buffer_count = end
            start += take
            if self.buffer_count == self.buffer_size:
                self.flush(alive)

    def flush(self, alive: Bool) -> None:
        """Turn the buffer's live rows into a segment."""
        if self.buffer_count == 0:
            return
        rows = self.buffer_rows[: self.buffer_count]
        keep = alive[rows]
        keys = self.buffer_keys[:, : self.buffer_count][:, keep]
        rows = rows[keep]
        self.buffer_count = 0
        if rows.shape[0]:
            self._add_segment(Segment.build(keys, rows.copy(), self.width_tuple), alive)

    def _add_segment(self, segment: Segment, alive: Bool) -> None:
        self._lists = None
        self.segments.append(segment)
        segs = self.segments
        while len(segs) >= 2 and segs[-2].size <= self.merge_ratio * segs[-1].size:
            self._merge_last_two(alive)

    def _merge_last_two(self, alive: Bool) -> None:
        newer = self.segments.pop()
        older = self.segments.pop()
        self.segments.append(Segment.merge(older, newer, alive, self.width_tuple))

    def compact(self, alive: Bool, renumber: I64 | None = None) -> None:
        """Merge everything into one segment of live rows; optionally renumber the rows."""
        self.flush(alive)
        if not self.segments:
            return
        self._lists = None
        while len(self.segments) > 1:
            self._merge_last_two(alive)
        seg = self.segments[0]
        if not alive[seg.rows[0]].all():
            empty = Segment(
                np.zeros((self.num_tables, 0), dtype=np.uint64),
                np.zeros((self.num_tables, 0), dtype=np.uint32),
                self.min_width,
            )
            seg = Segment.merge(seg, empty, alive, self.width_tuple)
        if renumber is not None:
            seg = Segment(seg.keys, renumber[seg.rows].astype(np.uint32), self.min_width)
        self.segments = [seg] if seg.size else []


# ---------------------------------------------------------------------------------------------
# Kernels.  numba because a query walks a few short buckets in several tables with an early
# filter per element; numpy would need one temporary per step and ~1 us of call overhead each.

_FIRST_CAPACITY = 1024  # output slots of a query's first (usually only) scan

_M1 = np.uint64(0x5555555555555555)
_M2 = np.uint64(0x3333333333333333)
_M4 = np.uint64(0x0F0F0F0F0F0F0F0F)
_H01 = np.uint64(0x0101010101010101)


@njit(cache=True, inline="always")
def popcount64(x: np.uint64) -> np.int64:  # pragma: no cover - compiled
    """Bits set in ``x`` (SWAR; LLVM turns this idiom into the popcnt instruction)."""
    x = x - ((x >> np.uint64(1)) & _M1)
    x = (x & _M2) + ((x >> np.uint64(2)) & _M2)
    x = (x + (x >> np.uint64(4))) & _M4
    return np.int64((x * _H01) >> np.uint64(56))


@njit(cache=True)
def positions_within(
    fps: U64, lo: int, hi: int, query: np.uint64, max_distance: int
) -> I64:  # pragma: no cover - compiled
    """Positions ``i`` in ``[lo, hi)`` with ``popcount(fps[i] ^ query) <= max_distance``,
    in order (a brute-force scan: exact)."""
    out: I64 = np.empty(hi - lo if hi > lo else 0, dtype=np.int64)
    n = 0
    for i in range(lo, hi):
        if popcount64(fps[i] ^ query) <= max_distance:
            out[n] = i
            n += 1
    return out[:n]


@njit(cache=True, inline="always")
def _bucket(
    keys: U64, directory: I64, dbits: np.int64, qkey: np.uint64, width: np.int64
) -> tuple[np.int64, np.int64]:  # pragma: no cover - compiled
    """Index range of the keys sharing ``qkey``'s top ``width`` bits."""
    p = np.int64(qkey >> np.uint64(64 - dbits))
    lo = directory[p]
    hi = directory[p + 1]
    if width > dbits:
        if width >= 64:
            low_mask = np.uint64(0)
        else:
            low_mask = (np.uint64(1) << np.uint64(64 - width)) - np.uint64(1)
        first = qkey & ~low_mask
        last = qkey | low_mask
        a = lo
        b = hi
        while a < b:  # lower bound of first
            m = (a + b) >> 1
            if keys[m] < first:
                a = m + 1
            else:
                b = m
        lo = a
        b = hi
        while a < b:  # upper bound of last
            m = (a + b) >> 1
            if keys[m] <= last:
                a = m + 1
            else:
                b = m
        hi = a
    return lo, hi


@njit(cache=True, inline="always")
def _rotl(x: np.uint64, shift: np.int64) -> np.uint64:  # pragma: no cover - compiled
    if shift == 0:
        return x
    return (x << np.uint64(shift)) | (x >> np.uint64(64 - shift))


# Every kernel writes its matches into preallocated output arrays while there is room and
# returns how many it found: the entry points call it once with _FIRST_CAPACITY slots
# (enough for almost every news query: a SimHash query returns about a dozen rows, an LSH
# probe a few hundred), and a second time with exactly as many as it found when they did
# not fit.  One scan instead of the former count-then-fill pair, whose second pass read
# every bucket again.  Growing the output arrays inside the loop instead (reassigning
# them) stops LLVM from optimising the loop and was measured ~10x slower per scanned
# element.  The entry points drive the passes with ``for _ in range(2)`` so each
# argument list is written once; the scanning loops stay in the separately compiled kernels.
# (Passing the kernel itself to one generic driver would remove the drivers too, but numba
# cannot cache a function that takes another compiled function as an argument.)


@njit(cache=True)
def _outputs3(n: int) -> tuple[I64, I64, I64]:  # pragma: no cover - compiled
    """Three int64 output arrays of length ``n`` (query, row, distance)."""
    return (
        np.empty(n, dtype=np.int64),
        np.empty(n, dtype=np.int64),
        np.empty(n, dtype=np.int64),
    )


@njit(cache=True)
def _hamming_probe(
    queries: U64,
    starts: I64,
    widths: I64,
    keys: U64,
    rows: U32,
    directory: I64,
    dbits: np.int64,
    masks: U64,
    alive: Bool,
    max_distance: np.int64,
    out_q: I64,
    out_r: I64,
    out_d: I64,
) -> int:  # pragma: no cover - compiled
    count = 0
    for q in range(queries.shape[0]):
        for t in range(starts.shape[0]):
            qk = _rotl(queries[q], starts[t])
            lo, hi = _bucket(keys[t], directory[t], dbits, qk, widths[t])
            for i in range(lo, hi):
                diff = keys[t, i] ^ qk
                d = popcount64(diff)
                if d > max_distance:
                    continue
                first = True
                for u in range(t):
                    if (diff & masks[t, u]) == 0:
                        first = False
                        break
                if not first or not alive[rows[t, i]]:
                    continue
                if count < out_q.shape[0]:  # room left: the first pass's buffer may be full
                    out_q[count] = q
                    out_r[count] = rows[t, i]
                    out_d[count] = d
                count += 1
    return count


@njit(cache=True)
def hamming_probe_segment(
    queries: U64,
    starts: I64,
    widths: I64,
    keys: U64,
    rows: U32,
    directory: I64,
    dbits: np.int64,
    masks: U64,
    alive: Bool,
    max_distance: np.int64,
) -> tuple[I64, I64, I64]:  # pragma: no cover - compiled
    """Rows within ``max_distance`` of each query in one segment: (query, row, distance).

    Table ``t`` holds the fingerprints rotated left by ``starts[t]`` bits.  A row is reported
    only by the first table whose block it matches exactly (``masks[t, u]`` is block ``u`` in
    table ``t``'s frame), so each (query, row) pair appears once.
    """
    out_q, out_r, out_d = _outputs3(_FIRST_CAPACITY)
    for _ in range(2):
        n = _hamming_probe(
            queries,
            starts,
            widths,
            keys,
            rows,
            directory,
            dbits,
            masks,
            alive,
            max_distance,
            out_q,
            out_r,
            out_d,
        )
        if n <= out_q.shape[0]:
            break
        out_q, out_r, out_d = _outputs3(n)
    return out_q[:n], out_r[:n], out_d[:n]


@njit(cache=True)
def _hamming_scan(
    queries: U64,
    values: U64,
    rows: U32,
    alive: Bool,
    max_distance: np.int64,
    out_q: I64,
    out_r: I64,
    out_d: I64,
) -> int:  # pragma: no cover - compiled
    count = 0
    for q in range(queries.shape[0]):
        qv = queries[q]
        for i in range(values.shape[0]):
            d = popcount64(values[i] ^ qv)
            if d <= max_distance and alive[rows[i]]:
                if count < out_q.shape[0]:  # room left: the first pass's buffer may be full
                    out_q[count] = q
                    out_r[count] = rows[i]
                    out_d[count] = d
                count += 1
    return count


# -- all segments and the buffer in one call (the query paths) ----------------------------


@njit(cache=True)
def hamming_probe_all(
    queries: U64,
    starts: I64,
    widths: I64,
    seg_keys: Any,
    seg_rows: Any,
    seg_dirs: Any,
    seg_dbits: I64,
    masks: U64,
    alive: Bool,
    max_distance: np.int64,
    buf_values: U64,
    buf_rows: U32,
    buf_count: np.int64,
) -> tuple[I64, I64, I64]:  # pragma: no cover - compiled
    """(query, row, distance) of every live row within ``max_distance`` of each query, over
    all segments and the buffer; each pair once (see :func:`hamming_probe_segment`)."""
    out_q, out_r, out_d = _outputs3(_FIRST_CAPACITY)
    for _ in range(2):
        count = 0
        for s in range(len(seg_keys)):
            count += _hamming_probe(
                queries,
                starts,
                widths,
                seg_keys[s],
                seg_rows[s],
                seg_dirs[s],
                seg_dbits[s],
                masks,
                alive,
                max_distance,
                out_q[count:],
                out_r[count:],
                out_d[count:],
            )
        count += _hamming_scan(
            queries,
            buf_values[:buf_count],
            buf_rows[:buf_count],
            alive,
            max_distance,
            out_q[count:],
            out_r[count:],
            out_d[count:],
        )
        if count <= out_q.shape[0]:
            break
        out_q, out_r, out_d = _outputs3(count)
    return out_q[:count], out_r[:count], out_d[:count]
