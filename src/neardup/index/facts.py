"""Compact in-memory facts of stored articles, to screen a query's candidates in one call.

The news stream verifies a new article against every candidate its SimHash and MinHash LSH
indexes return.  Most candidates are unrelated by the shingle rule, and reading each from
the store to find out is most of the cost of a stream that has grown large (a story's later
versions meet all its earlier ones).  :class:`CandidateFacts` keeps, for every article
added (the stream adds each canonical article at ingest and each other one it reads), in
flat arrays:

* the low 32 bits of its shingle values, sorted, and its shingle count;
* its date;
* the 64-bit hashes (:func:`figure_hashes`) of its ASCII digit runs, sorted, when known.

:meth:`CandidateFacts.screen` evaluates the stream's shingle rule (:class:`ScreenRule`) for
all candidates of a query in one compiled call.  It counts shared values of the 32-bit
multisets with their multiplicity, an **upper bound** of the number of shared 64-bit values
(every shared 64-bit value gives one shared 32-bit value to both sides), and the rule is
monotone in that number: a candidate it calls unrelated is unrelated by the exact rule too.
A candidate without facts is always kept.  :meth:`CandidateFacts.figures_replaced` is the
figures pre-check of :func:`neardup.similarity.overlap.figures_replaced` on the hashes
(two different digit runs share a hash with probability about 2^-64).

Deterministic (xxh3 hashes, no salted ``hash()``); memory 4 bytes per shingle, 8 per
figure, 44 per article, plus 4 bytes per seq up to the largest one added (about 600 bytes
an article on Reuters; the arrays grow by doubling, so up to twice that is reserved); never
evicts (:meth:`clear` empties it).  Not thread-safe.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import xxhash
from numba import njit

__all__ = [
    "FIGURES",
    "KEEP",
    "UNRELATED",
    "CandidateFacts",
    "ScreenRule",
    "candidate_union",
    "figure_hashes",
]

_NO_DATE = np.iinfo(np.int64).min
# Seqs far beyond those already held are not tracked (kept, never screened): the slot
# array grows with the largest seq, so a stray huge seq must not allocate gigabytes.
_SEQ_SLACK = 1 << 22

# CandidateFacts.screen's codes.
UNRELATED = 0
KEEP = 1
FIGURES = 2


@dataclasses.dataclass(frozen=True, slots=True)
class ScreenRule:
    """The stream's shingle rule as :meth:`CandidateFacts.screen` applies it: related when
    ``jaccard >= min_jaccard``, or ``containment >= min_containment`` and ``coverage >=
    min_coverage`` with at least ``min_shared`` shared shingles, or ``max(containment,
    coverage) >= similar_min_overlap``.  Otherwise, with ``max(containment, coverage) >=
    word_floor`` (a word test could still relate them; ``None``: no word test), the
    candidate needs the figures pre-check unless the fast accept holds
    (``accept_containment`` of the new article's shingles in the stored one, coverage
    ``min_word_coverage`` and ``min_shared`` shared; ``None``: off), which keeps it."""

    min_jaccard: float
    min_containment: float
    min_coverage: float
    min_shared: int
    similar_min_overlap: float
    word_floor: float | None = None
    accept_containment: float | None = None
    min_word_coverage: float = 0.0

    def params(self) -> npt.NDArray[np.float64]:
        """The rule as the kernel's parameter array."""
        return np.array(
            [
                self.min_jaccard,
                self.min_containment,
                self.min_coverage,
                float(self.min_shared),
                self.similar_min_overlap,
                -1.0 if self.word_floor is None else self.word_floor,
                -1.0 if self.accept_containment is None else self.accept_containment,
                self.min_word_coverage,
            ],
            dtype=np.float64,
        )


def figure_hashes(runs: Iterable[str]) -> npt.NDArray[np.uint64]:
    """Sorted distinct xxh3-64 hashes of digit-run strings (their UTF-8 bytes)."""
    # A few dozen strings at most: a sorted set of ints beats numpy's per-call overhead.
    hashes = sorted({xxhash.xxh3_64_intdigest(r.encode("utf-8", "surrogatepass")) for r in runs})
    return np.array(hashes, dtype=np.uint64)


@njit(cache=True, nogil=True)
def _union_without(a: Any, b: Any, exclude: int) -> Any:  # pragma: no cover - compiled
    both = np.sort(np.concatenate((a, b)))
    out = np.empty(both.shape[0], dtype=np.int64)
    kept = 0
    for i in range(both.shape[0]):
        v = both[i]
        if v != exclude and (kept == 0 or out[kept - 1] != v):
            out[kept] = v
            kept += 1
    return out[:kept]


def candidate_union(
    a: npt.NDArray[np.int64], b: npt.NDArray[np.int64], exclude: int
) -> npt.NDArray[np.int64]:
    """The sorted distinct seqs of two indexes' candidate arrays minus ``exclude`` (the
    query's own seq; -1: none): ``np.setdiff1d(np.union1d(a, b), [exclude])`` in one
    compiled call (numpy's took about 27 us per article of the stream, ad hoc)."""
    union: npt.NDArray[np.int64] = _union_without(
        np.ascontiguousarray(a, dtype=np.int64), np.ascontiguousarray(b, dtype=np.int64), exclude
    )
    return union


@njit(cache=True, nogil=True)
def _count_table(a: Any) -> tuple[Any, Any, int]:  # pragma: no cover - compiled
    """Open-addressing table (linear probing, at most a quarter full) of the low 32 bits
    of the uint64 values ``a`` with their multiplicities: (keys, counts, mask)."""
    size = 16
    while size < 4 * a.shape[0]:
        size *= 2
    mask = size - 1
    keys = np.zeros(size, dtype=np.uint32)
    counts = np.zeros(size, dtype=np.int32)
    for i in range(a.shape[0]):
        v = np.uint32(a[i] & np.uint64(0xFFFFFFFF))
        h = int(v) & mask  # shingle values are splitmix64-finalised: low bits are random
        while counts[h] != 0 and keys[h] != v:
            h = (h + 1) & mask
        keys[h] = v
        counts[h] += 1
    return keys, counts, mask


@njit(cache=True, nogil=True)
def _shared_count(  # pragma: no cover - compiled
    keys: Any, counts: Any, mask: int, values: Any, b0: int, b1: int
) -> int:
    """Sum over the distinct values of sorted ``values[b0:b1]`` of the smaller of their
    two multiplicities (the table's and the run's): what a merge of the two sorted
    multisets counts (``similarity._overlap_kernels.merge_count``), with one table probe
    per stored run instead of a branchy merge (about twice as fast on Reuters)."""
    found = 0
    i = b0
    while i < b1:
        v = values[i]
        j = i + 1
        while j < b1 and values[j] == v:
            j += 1
        h = int(v) & mask
        while counts[h] != 0:
            if keys[h] == v:
                found += min(j - i, int(counts[h]))
                break
            h = (h + 1) & mask
        i = j
    return found


@njit(cache=True, nogil=True)
def _screen(  # pragma: no cover - compiled
    a: Any,
    seqs: Any,
    slot_of: Any,
    starts: Any,
    counts: Any,
    values: Any,
    p: Any,
    out: Any,
) -> None:
    j_min, c_min, v_min, shared_min, similar, floor, accept, word_cover = (
        p[0],
        p[1],
        p[2],
        p[3],
        p[4],
        p[5],
        p[6],
        p[7],
    )
    a_size = a.shape[0]
    table_keys, table_counts, mask = _count_table(a)
    for k in range(seqs.shape[0]):
        q = seqs[k]
        s = slot_of[q] if 0 <= q < slot_of.shape[0] else -1
        if s < 0 or counts[s] == 0 or a_size == 0:
            out[k] = KEEP
            continue
        b_size = counts[s]
        b0 = starts[s]
        inter = _shared_count(table_keys, table_counts, mask, values, b0, b0 + b_size)
        union = a_size + b_size - inter
        jaccard = inter / union if union else 1.0
        contain = inter / a_size
        cover = inter / b_size
        most = contain if contain > cover else cover
        if (
            jaccard >= j_min
            or (contain >= c_min and cover >= v_min and inter >= shared_min)
            or most >= similar
        ):
            out[k] = KEEP
        elif floor >= 0.0 and most >= floor:
            if accept >= 0.0 and contain >= accept and cover >= word_cover and inter >= shared_min:
                out[k] = KEEP
            else:
                out[k] = FIGURES
        else:
            out[k] = UNRELATED


@njit(cache=True, nogil=True)
def _subset(x: Any, x0: int, x1: int, y: Any, y0: int, y1: int) -> bool:  # pragma: no cover
    # Whether sorted distinct x[x0:x1] is a subset of sorted distinct y[y0:y1].
    j = y0
    for i in range(x0, x1):
        v = x[i]
        while j < y1 and y[j] < v:
            j += 1
        if j == y1 or y[j] != v:
            return False
        j += 1
    return True


@njit(cache=True, nogil=True)
def _figures(  # pragma: no cover - compiled
    new_words: Any,
    new_core: Any,
    with_core: bool,
    date_us: int,
    window_us: float,
    slots: Any,
    dates: Any,
    dstarts: Any,
    dcounts: Any,
    digits: Any,
    out: Any,
) -> int:
    # out[k]: 1 replaced, 0 not (or unknown), 2 undecided until the core is given; returns
    # the number of undecided candidates.
    undecided = 0
    for k in range(slots.shape[0]):
        s = slots[k]
        out[k] = 0
        if s < 0 or dcounts[s] < 0 or dates[s] == _NO_DATE or date_us == _NO_DATE:
            continue
        gap = dates[s] - date_us
        if gap < 0:
            gap = -gap
        if not gap > window_us:
            continue
        d0, d1 = dstarts[s], dstarts[s] + dcounts[s]
        if not _subset(digits, d0, d1, new_words, 0, new_words.shape[0]):
            out[k] = 1
        elif not with_core:
            out[k] = 2
            undecided += 1
        elif not _subset(new_core, 0, new_core.shape[0], digits, d0, d1):
            out[k] = 1
    return undecided


class _Column:
    """A growable flat array (amortised doubling)."""

    __slots__ = ("data", "used")

    def __init__(self, dtype: Any) -> None:
        self.data: npt.NDArray[Any] = np.empty(1024, dtype=dtype)
        self.used = 0

    def _reserve(self, end: int) -> None:
        if end > self.data.shape[0]:
            grown = np.empty(max(end, 2 * self.data.shape[0]), dtype=self.data.dtype)
            grown[: self.used] = self.data[: self.used]
            self.data = grown

    def append(self, values: npt.NDArray[Any]) -> int:
        """Append ``values``; return where they start."""
        start = self.used
        self._reserve(start + values.shape[0])
        self.data[start : start + values.shape[0]] = values
        self.used = start + values.shape[0]
        return start

    def push(self, value: int) -> None:
        """Append one value."""
        self._reserve(self.used + 1)
        self.data[self.used] = value
        self.used += 1


class CandidateFacts:
    """Facts of stored articles by seq, for :meth:`screen` and :meth:`figures_replaced`
    (module docstring: what is kept, the guarantees, the memory)."""

    def __init__(self) -> None:
        self.clear()

    def clear(self) -> None:
        """Forget every article."""
        self._slot_of = np.full(1024, -1, dtype=np.int32)
        self._starts = _Column(np.int64)
        self._counts = _Column(np.int32)
        self._dates = _Column(np.int64)
        self._dstarts = _Column(np.int64)
        self._dcounts = _Column(np.int32)
        self._values = _Column(np.uint32)
        self._digits = _Column(np.uint64)
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def __contains__(self, seq: object) -> bool:
        return (
            isinstance(seq, int) and 0 <= seq < self._slot_of.shape[0] and (self._slot_of[seq] >= 0)
        )

    @property
    def nbytes(self) -> int:
        """Bytes held by the arrays (capacity included)."""
        cols = (
            self._starts,
            self._counts,
            self._dates,
            self._dstarts,
            self._dcounts,
            self._values,
            self._digits,
        )
        return int(self._slot_of.nbytes + sum(c.data.nbytes for c in cols))

    def add(
        self,
        seq: int,
        shingles: npt.NDArray[np.uint64],
        date_us: int | None,
        figures: npt.NDArray[np.uint64] | None,
    ) -> None:
        """Record article ``seq``: its shingle values (uint64), date and :func:`figure_hashes`
        of its digit runs (``None``: unknown, never settled by figures).  An article already
        held is left as it is (an article's facts never change)."""
        if seq < 0 or seq in self:
            return
        if seq >= self._slot_of.shape[0]:
            if seq > 2 * self._slot_of.shape[0] + _SEQ_SLACK:
                return
            grown = np.full(max(seq + 1, 2 * self._slot_of.shape[0]), -1, dtype=np.int32)
            grown[: self._slot_of.shape[0]] = self._slot_of
            self._slot_of = grown
        low = np.sort(shingles.astype(np.uint32))  # the low 32 bits (C casting wraps)
        self._starts.push(self._values.append(low))
        self._counts.push(low.shape[0])
        self._dates.push(_NO_DATE if date_us is None else date_us)
        self._dstarts.push(0 if figures is None else self._digits.append(figures))
        self._dcounts.push(-1 if figures is None else figures.shape[0])
        self._slot_of[seq] = self._size
        self._size += 1

    _STATE = ("starts", "counts", "dates", "dstarts", "dcounts", "values", "digits")

    def state(self) -> dict[str, npt.NDArray[Any]]:
        """The facts as arrays named ``facts_*`` (for a checkpoint; :meth:`load_state`)."""
        out = {
            f"facts_{name}": getattr(self, f"_{name}").data[: getattr(self, f"_{name}").used]
            for name in self._STATE
        }
        out["facts_slot_of"] = self._slot_of
        return out

    def load_state(self, arrays: Mapping[str, npt.NDArray[Any]]) -> None:
        """Replace the facts by those of :meth:`state` (absent: left empty).  ``ValueError``
        when the arrays are inconsistent."""
        self.clear()
        if "facts_slot_of" not in arrays:
            return
        slot_of = np.asarray(arrays["facts_slot_of"], dtype=np.int32)
        cols = {name: np.asarray(arrays[f"facts_{name}"]) for name in self._STATE}
        size = cols["starts"].shape[0]
        if any(cols[n].shape[0] != size for n in ("counts", "dates", "dstarts", "dcounts")):
            raise ValueError("facts columns differ in length")
        held = slot_of[slot_of >= 0]
        if held.size != size or (size and (held.max() >= size or np.unique(held).size != size)):
            raise ValueError("facts slots do not match their columns")
        ends = cols["starts"].astype(np.int64) + cols["counts"]
        dends = cols["dstarts"].astype(np.int64) + np.maximum(cols["dcounts"], 0)
        if size and (ends.max() > cols["values"].shape[0] or dends.max() > cols["digits"].shape[0]):
            raise ValueError("facts offsets point past their values")
        self._slot_of = slot_of.copy()
        for name in self._STATE:
            column = getattr(self, f"_{name}")
            column.data = np.array(cols[name], dtype=column.data.dtype)
            column.used = column.data.shape[0]
        self._size = size

    def _slots(self, seqs: Sequence[int]) -> npt.NDArray[np.int32]:
        if len(seqs) == 1:  # the word test's single candidate: skip the array arithmetic
            seq = int(seqs[0])
            held = 0 <= seq < self._slot_of.shape[0]
            return np.array([self._slot_of[seq] if held else -1], dtype=np.int32)
        s = np.asarray(seqs, dtype=np.int64)
        slots = np.full(s.shape[0], -1, dtype=np.int32)
        inside = (s >= 0) & (s < self._slot_of.shape[0])
        slots[inside] = self._slot_of[s[inside]]
        return slots

    def screen(
        self,
        seqs: Sequence[int] | npt.NDArray[np.int64],
        shingles: npt.NDArray[np.uint64],
        params: npt.NDArray[np.float64],
    ) -> npt.NDArray[np.int8]:
        """Per candidate seq: 0 unrelated by the rule (``params``: :meth:`ScreenRule.params`)
        for the new article's shingle values ``shingles``, 2 unrelated unless a word test
        relates them (ask :meth:`figures_replaced`), 1 keep (related, or no facts).
        Approximate only towards keeping (module docstring).  O(candidates x shingles)."""
        out = np.empty(len(seqs), dtype=np.int8)
        if not len(seqs):
            return out
        _screen(
            np.ascontiguousarray(shingles, dtype=np.uint64),
            np.ascontiguousarray(seqs, dtype=np.int64),
            self._slot_of,
            self._starts.data,
            self._counts.data,
            self._values.data,
            params,
            out,
        )
        return out

    def knows_figures(self, seq: int) -> bool:
        """Whether article ``seq`` is held with its figures."""
        return seq in self and bool(self._dcounts.data[self._slot_of[seq]] >= 0)

    def figures_replaced(
        self,
        seqs: Sequence[int],
        new_words: npt.NDArray[np.uint64],
        new_core: Callable[[], npt.NDArray[np.uint64]],
        date_us: int | None,
        window_us: float,
    ) -> npt.NDArray[np.bool_]:
        """Per candidate seq: True when both dates are known, more than ``window_us`` apart,
        and :func:`~neardup.similarity.overlap.figures_replaced` holds on the hashes: a
        stored figure is not among ``new_words`` (:func:`figure_hashes` of the new text's
        digit-run words) or one of ``new_core()`` (those of its never-peeled paragraphs,
        asked for only when that decides) is not a stored figure.  False when unknown."""
        out = np.zeros(len(seqs), dtype=np.int8)
        if not len(seqs) or date_us is None:
            return out.astype(np.bool_)
        slots = self._slots(seqs)
        columns = (self._dates.data, self._dstarts.data, self._dcounts.data, self._digits.data)
        empty = np.zeros(0, dtype=np.uint64)
        args = (int(date_us), float(window_us), slots, *columns, out)
        if _figures(new_words, empty, False, *args):
            _figures(new_words, new_core(), True, *args)
        replaced: npt.NDArray[np.bool_] = out == 1
        return replaced
