"""An inverted index of passage fingerprints: which stored texts share a passage with a query?

Each stored text is added with a few dozen 64-bit *fingerprints* of its passages (the
winnowed shingle hashes of :mod:`neardup.sketch.winnowing`); a query with another text's
fingerprints returns the stored keys that share at least one, with how many they share,
most first.  Shared fingerprints are what a partial copy, an excerpt or a truncated reprint
has in common with its source, whatever its length: the index finds *containment*, which
Jaccard-based indexes (MinHash LSH) miss when one text is much longer than the other.

Like every neardup index it returns *candidates*: the caller verifies them (the rule,
:mod:`neardup.rule`).  A fingerprint held by more than ``max_postings`` live texts is
skipped by queries (boilerplate shared by many pages says nothing about copying; a lost
candidate is reported by the stream's candidate-recall measurement).

Layout: postings (fingerprint, row) in a small append buffer plus sorted immutable segments
merged log-structured (at most :data:`MAX_SEGMENTS` segments; a posting is moved about 14
times by 30 M postings).  Each segment has a directory by the fingerprints' top bits (a
bucket of about 16 postings per entry), so a query reads, per fingerprint and segment, one
directory entry and one bucket (compiled).
Removal marks the row dead; merges drop dead postings.  Memory: 12.5 bytes per posting plus
17 bytes per key.

Guarantees: exact for the stated semantics (tested against a dictionary of sets),
deterministic order (count descending, then key ascending).  Not thread-safe.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np
import numpy.typing as npt

from neardup._kernels import sorted_distinct
from neardup.config import check_int
from neardup.errors import ConflictError, InputError, NotFoundError

__all__ = ["MAX_SEGMENTS", "PassageIndex"]

U64 = npt.NDArray[np.uint64]
U32 = npt.NDArray[np.uint32]
I64 = npt.NDArray[np.int64]

#: The most sorted segments the index keeps.  The query kernel always takes this many (the
#: unused ones empty), so it is one compiled specialisation, compiled once on a new machine
#: (a tuple of each length was one of its own: 0.7-1.2 CPU s each on a cold cache, measured);
#: log-structured merging alone reaches 10 segments at 30 M postings.  Merging the two
#: newest while there are more costs little: 14.5 moves of a posting instead of 13.3 over
#: 30 M postings in buffers of 2,048 (a simulation of the merge policy), and a query reads
#: fewer segments.
MAX_SEGMENTS = 6


@numba.njit(cache=True, nogil=True)
def _live_counts(rows: Any, lo: Any, hi: Any, alive: Any, counts: Any) -> None:  # pragma: no cover
    """Add, per query value, the number of live rows of ``rows[lo:hi]`` to ``counts``."""
    for i in range(lo.shape[0]):
        c = 0
        for p in range(lo[i], hi[i]):
            if alive[rows[p]]:
                c += 1
        counts[i] += c


@numba.njit(cache=True, nogil=True)
def _gather(
    rows: Any, lo: Any, hi: Any, keep: Any, alive: Any, out: Any, at: int
) -> int:  # pragma: no cover
    """Append the live rows of the kept query values' ranges to ``out`` from ``at``."""
    for i in range(lo.shape[0]):
        if not keep[i]:
            continue
        for p in range(lo[i], hi[i]):
            r = rows[p]
            if alive[r]:
                out[at] = r
                at += 1
    return at


@numba.njit(cache=True, nogil=True)
def _find(q: Any, v: Any) -> int:  # pragma: no cover - numba
    """Index of ``v`` in the sorted distinct array ``q``, or -1."""
    a, b = 0, q.shape[0]
    while a < b:
        mid = (a + b) >> 1
        if q[mid] < v:
            a = mid + 1
        else:
            b = mid
    return a if a < q.shape[0] and q[a] == v else -1


@numba.njit(cache=True, nogil=True)
def _bitmap(q: Any) -> Any:  # pragma: no cover - numba
    """A 4,096-bit filter of the values of ``q`` (their low 12 bits): a value whose bit is
    clear is not in ``q``, so a scan skips its binary search."""
    bits = np.zeros(64, dtype=np.uint64)
    for i in range(q.shape[0]):
        low = q[i] & np.uint64(4095)
        bits[low >> np.uint64(6)] |= np.uint64(1) << (low & np.uint64(63))
    return bits


@numba.njit(cache=True, nogil=True)
def _maybe(bits: Any, v: Any) -> Any:  # pragma: no cover - numba
    low = v & np.uint64(4095)
    return (bits[low >> np.uint64(6)] >> (low & np.uint64(63))) & np.uint64(1) != 0


@numba.njit(cache=True, nogil=True)
def _scan_counts(
    fps: Any, rows: Any, n: int, q: Any, bits: Any, alive: Any, counts: Any
) -> None:  # pragma: no cover
    """Add the live unsorted postings ``[:n]`` of each query value to ``counts``
    (``bits``: :func:`_bitmap` of ``q``)."""
    for p in range(n):
        if not _maybe(bits, fps[p]):
            continue
        i = _find(q, fps[p])
        if i >= 0 and alive[rows[p]]:
            counts[i] += 1


@numba.njit(cache=True, nogil=True)
def _scan_gather(
    fps: Any, rows: Any, n: int, q: Any, bits: Any, keep: Any, alive: Any, out: Any, at: int
) -> int:  # pragma: no cover
    """Append the live unsorted postings ``[:n]`` of the kept query values to ``out``."""
    for p in range(n):
        if not _maybe(bits, fps[p]):
            continue
        i = _find(q, fps[p])
        if i >= 0 and keep[i] and alive[rows[p]]:
            out[at] = rows[p]
            at += 1
    return at


_BLOCK = 16  # fingerprints per directory entry of a segment, on average


def _directory(fps: U64) -> tuple[I64, int]:
    """``(starts, shift)`` of the sorted ``fps``: ``fps[starts[t] : starts[t + 1]]`` are the
    values whose top bits ``v >> shift`` are ``t``, for ``2 ** (64 - shift)`` buckets of about
    ``_BLOCK`` values each (fingerprints are uniform hashes; skewed values only make the
    buckets uneven, never a search wrong)."""
    n = int(fps.shape[0])
    bits = max(1, min(40, (n // _BLOCK).bit_length() - 1))
    shift = 64 - bits
    edges = np.arange(1 << bits, dtype=np.uint64) << np.uint64(shift)
    starts = np.empty((1 << bits) + 1, dtype=np.int64)
    starts[:-1] = np.searchsorted(fps, edges, "left")
    starts[-1] = n
    return starts, shift


@numba.njit(cache=True, nogil=True, inline="always")
def _lower_bound(a: Any, start: int, length: int, v: Any) -> int:  # pragma: no cover
    """Index of the first value ``>= v`` of the sorted ``a[start : start + length]`` (its end
    when none).  Branch-free steps: each halves the range by a conditional add, so nothing
    is mispredicted and the processor runs ahead into the next search while this one waits
    on memory (a branch per step guesses wrong half the time on random queries)."""
    if length == 0:
        return start
    base = start
    while length > 1:
        half = length >> 1
        base += half * (a[base + half - 1] < v)
        length -= half
    return int(base + (a[base] < v))


@numba.njit(cache=True, nogil=True)
def _bucket_ranges(
    fps: Any, starts: Any, shift: int, queries: Any
) -> tuple[Any, Any]:  # pragma: no cover
    """``[lo, hi)`` of each query value in the sorted array ``fps``, through its
    :func:`_directory`: the value's bucket (two adjacent reads), a search of that bucket
    (a cache line or two), then a scan of the equal values (their postings are read next
    anyway).  Two or three memory reads per value instead of one per step of a binary
    search over the whole segment."""
    n = fps.shape[0]
    lo = np.empty(queries.shape[0], dtype=np.int64)
    hi = np.empty(queries.shape[0], dtype=np.int64)
    for i in range(queries.shape[0]):
        v = queries[i]
        t = np.int64(v >> np.uint64(shift))
        first = starts[t]
        p = _lower_bound(fps, first, starts[t + 1] - first, v)
        e = p
        while e < n and fps[e] == v:
            e += 1
        lo[i] = p
        hi[i] = e
    return lo, hi


@numba.njit(cache=True, nogil=True)
def _query(
    q: Any,
    seg_fps: Any,
    seg_starts: Any,
    seg_shifts: Any,
    seg_rows: Any,
    buf_fps: Any,
    buf_rows: Any,
    nbuf: int,
    alive: Any,
    max_postings: int,
) -> Any:  # pragma: no cover - numba
    """The live rows holding a value of ``q`` (distinct, ascending), once per value they
    hold, in no order (values held by more than ``max_postings`` live rows skipped): the
    segments' ranges, the buffer's scan and the count of each value, in one call.

    The segments come as tuples of :data:`MAX_SEGMENTS` (the unused ones empty and
    skipped), so the kernel is compiled once; ``sorted_distinct`` and :func:`_tally` do
    the sorting (on uint64, the one sort every kernel of the stream shares)."""
    nq = q.shape[0]
    nseg = len(seg_fps)
    los = np.zeros((nseg, nq), dtype=np.int64)
    his = np.zeros((nseg, nq), dtype=np.int64)
    counts = np.zeros(nq, dtype=np.int64)
    for s in range(nseg):
        if seg_fps[s].shape[0] == 0:
            continue  # an unused segment: its ranges stay empty
        lo, hi = _bucket_ranges(seg_fps[s], seg_starts[s], seg_shifts[s], q)
        los[s] = lo
        his[s] = hi
        _live_counts(seg_rows[s], lo, hi, alive, counts)
    bits = _bitmap(q)
    _scan_counts(buf_fps, buf_rows, nbuf, q, bits, alive, counts)
    keep = np.empty(nq, dtype=np.bool_)
    total = 0
    for i in range(nq):
        keep[i] = counts[i] > 0 and counts[i] <= max_postings
        if keep[i]:
            total += counts[i]
    out = np.empty(total, dtype=np.uint64)
    at = 0
    for s in range(nseg):
        at = _gather(seg_rows[s], los[s], his[s], keep, alive, out, at)
    at = _scan_gather(buf_fps, buf_rows, nbuf, q, bits, keep, alive, out, at)
    return out[:at]


@numba.njit(cache=True, nogil=True)
def _tally(rows: Any) -> tuple[Any, Any]:  # pragma: no cover - numba
    """The distinct values of the uint64 ``rows`` ascending (as int64), with how many times
    each occurs."""
    found = np.sort(rows)
    at = found.shape[0]
    distinct = np.empty(at, dtype=np.int64)
    shared = np.empty(at, dtype=np.int64)
    n = 0
    for i in range(at):
        if n and distinct[n - 1] == np.int64(found[i]):
            shared[n - 1] += 1
        else:
            distinct[n] = np.int64(found[i])
            shared[n] = 1
            n += 1
    return distinct[:n], shared[:n]


class _Segment:
    """Postings sorted by fingerprint (immutable), with their :func:`_directory`."""

    __slots__ = ("fps", "rows", "shift", "starts")

    def __init__(self, fps: U64, rows: U32) -> None:
        self.fps = np.ascontiguousarray(fps)
        self.rows = np.ascontiguousarray(rows)
        self.starts, self.shift = _directory(self.fps)


_EMPTY = _Segment(np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.uint32))


class PassageIndex:
    """Keys (ints) with sets of 64-bit passage fingerprints; queries by shared count.

    ``max_postings``: a fingerprint held by more live keys than this is skipped by queries;
    ``buffer_size``: postings kept unsorted before they become a segment.
    """

    def __init__(self, *, max_postings: int = 64, buffer_size: int = 2048) -> None:
        check_int("max_postings", max_postings, low=1, high=1 << 30)
        check_int("buffer_size", buffer_size, low=1, high=1 << 26)
        self.max_postings = max_postings
        self.buffer_size = buffer_size
        self._row_of: dict[int, int] = {}
        self._keys = np.zeros(1024, dtype=np.int64)
        self._alive = np.zeros(1024, dtype=np.bool_)
        self._nrows = 0
        self._buf_fps = np.zeros(buffer_size, dtype=np.uint64)
        self._buf_rows = np.zeros(buffer_size, dtype=np.uint32)
        self._buffered = 0
        self._segments: list[_Segment] = []
        self._typed: tuple[Any, Any, Any, Any] | None = None  # segment arrays for _query

    # --- rows ---------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._row_of)

    def __contains__(self, key: object) -> bool:
        return key in self._row_of

    def keys(self) -> list[int]:
        """The live keys, in insertion order."""
        return sorted(self._row_of, key=self._row_of.__getitem__)

    def _new_row(self, key: int) -> int:
        if self._nrows == self._keys.shape[0]:
            grow = self._keys.shape[0] * 2
            self._keys = np.resize(self._keys, grow)
            alive = np.zeros(grow, dtype=np.bool_)
            alive[: self._nrows] = self._alive[: self._nrows]
            self._alive = alive
        row = self._nrows
        self._nrows += 1
        self._keys[row] = key
        self._alive[row] = True
        self._row_of[key] = row
        return row

    # --- updates ------------------------------------------------------------------------
    def add(self, key: int, fingerprints: U64) -> None:
        """Index ``key`` with ``fingerprints`` (distinct or not); ``ConflictError`` if held."""
        if isinstance(key, bool) or not isinstance(key, int | np.integer):
            raise InputError(f"passage index keys are integers, got {type(key).__name__}")
        key = int(key)
        if key in self._row_of:
            raise ConflictError(f"key {key} is already in the passage index")
        fps = np.unique(np.asarray(fingerprints, dtype=np.uint64))
        row = self._new_row(key)
        if fps.size:
            end = self._buffered + fps.size
            if end > self._buf_fps.shape[0]:
                self._buf_fps = np.resize(self._buf_fps, end)
                self._buf_rows = np.resize(self._buf_rows, end)
            self._buf_fps[self._buffered : end] = fps
            self._buf_rows[self._buffered : end] = row
            self._buffered = end
            if self._buffered >= self.buffer_size:
                self._flush()

    def remove(self, key: int) -> None:
        """Drop ``key`` (its postings go at the next merge); ``NotFoundError`` if absent."""
        row = self._row_of.pop(int(key), None)
        if row is None:
            raise NotFoundError(f"key {key} is not in the passage index")
        self._alive[row] = False

    def _flush(self) -> None:
        if not self._buffered:
            return
        fps = self._buf_fps[: self._buffered]
        rows = self._buf_rows[: self._buffered]
        order = np.argsort(fps, kind="stable")
        self._push(_Segment(fps[order], rows[order]))
        self._buffered = 0
        # Log-structured merging: while the older segment is at most twice the newer, or
        # while there are more than MAX_SEGMENTS (see there).
        while len(self._segments) > 1 and (
            self._segments[-2].fps.size <= 2 * self._segments[-1].fps.size
            or len(self._segments) > MAX_SEGMENTS
        ):
            newer = self._pop()
            older = self._pop()
            self._push(self._merge(older, newer))

    def _push(self, seg: _Segment) -> None:
        self._segments.append(seg)
        self._typed = None

    def _pop(self) -> _Segment:
        self._typed = None
        return self._segments.pop()

    def _merge(self, older: _Segment, newer: _Segment) -> _Segment:
        fps = np.concatenate([older.fps, newer.fps])
        rows = np.concatenate([older.rows, newer.rows])
        live = self._alive[rows]
        fps, rows = fps[live], rows[live]
        order = np.argsort(fps, kind="stable")  # two sorted runs: a linear merge
        return _Segment(fps[order], rows[order])

    # --- queries ------------------------------------------------------------------------
    def query(self, fingerprints: U64, *, exclude: int | None = None) -> tuple[I64, I64]:
        """``(keys, counts)``: live keys sharing a fingerprint with the query (fingerprints
        held by more than ``max_postings`` live keys skipped), with the number shared, most
        first then by key; ``exclude`` leaves one key out."""
        q = np.ascontiguousarray(fingerprints, dtype=np.uint64)
        empty = np.zeros(0, dtype=np.int64)
        if not q.size or not self._row_of:
            return empty, empty
        found, shared = _tally(
            _query(
                sorted_distinct(q),
                *self._typed_segments(),
                self._buf_fps,
                self._buf_rows,
                self._buffered,
                self._alive,
                self.max_postings,
            )
        )
        keys = self._keys[found]
        if exclude is not None:
            mine = keys != exclude
            keys, shared = keys[mine], shared[mine]
        order = np.lexsort((keys, -shared))
        return keys[order], shared[order]

    def _parts(self) -> list[tuple[U64, U32]]:
        parts = [(s.fps, s.rows) for s in self._segments]
        if self._buffered:
            parts.append((self._buf_fps[: self._buffered], self._buf_rows[: self._buffered]))
        return parts

    # --- persistence --------------------------------------------------------------------
    def state(self, prefix: str = "passages_") -> dict[str, npt.NDArray[Any]]:
        """Arrays that :meth:`load_state` restores (live postings only)."""
        parts = self._parts()
        fps = np.concatenate([p[0] for p in parts]) if parts else np.zeros(0, np.uint64)
        rows = np.concatenate([p[1] for p in parts]) if parts else np.zeros(0, np.uint32)
        live = self._alive[rows]
        keys = np.asarray(self.keys(), dtype=np.int64)
        return {
            f"{prefix}keys": keys,
            f"{prefix}fps": fps[live],
            f"{prefix}key_of": self._keys[rows[live]],
        }

    def load_state(self, arrays: dict[str, npt.NDArray[Any]], prefix: str = "passages_") -> None:
        """Replace the contents with a :meth:`state` (``InputError`` when inconsistent)."""
        keys = np.asarray(arrays[f"{prefix}keys"], dtype=np.int64)
        fps = np.asarray(arrays[f"{prefix}fps"], dtype=np.uint64)
        key_of = np.asarray(arrays[f"{prefix}key_of"], dtype=np.int64)
        if fps.shape != key_of.shape:
            raise InputError("passage index state: fingerprints and keys differ in length")
        fresh = PassageIndex(max_postings=self.max_postings, buffer_size=self.buffer_size)
        for k in keys.tolist():
            fresh._new_row(int(k))
        if fps.size:
            rows = np.fromiter(
                (fresh._row_of.get(int(k), -1) for k in key_of.tolist()),
                dtype=np.int64,
                count=key_of.size,
            )
            if (rows < 0).any():
                raise InputError("passage index state: a posting names an unknown key")
            order = np.argsort(fps, kind="stable")
            fresh._segments = [_Segment(fps[order], rows[order].astype(np.uint32))]
        fresh._typed = None
        self.__dict__.update(fresh.__dict__)

    def _typed_segments(self) -> tuple[Any, Any, Any, Any]:
        """The segments' fingerprints, directories (starts and shifts) and rows as tuples of
        :data:`MAX_SEGMENTS`, the unused ones empty (what :func:`_query` reads), remade after
        each flush."""
        if self._typed is None:
            segments = self._segments + [_EMPTY] * (MAX_SEGMENTS - len(self._segments))
            self._typed = (
                tuple(seg.fps for seg in segments),
                tuple(seg.starts for seg in segments),
                np.array([seg.shift for seg in segments], dtype=np.int64),
                tuple(seg.rows for seg in segments),
            )
        return self._typed
