"""Steps 2-3 of the aligner: the tf-isf pair model of one (suspicious, source) pair, its
seeds (cosine and Dice of unit pairs, block by block), and the extension of seeds into
validated clusters (Sanchez-Perez, Sidorov & Gelbukh, PAN 2014)."""

from __future__ import annotations

import itertools
import math
from typing import Any, NamedTuple

import numpy as np

from neardup.similarity.alignment.records import AlignmentConfig, PreparedText, _FloatArray

# Units per block on each side when pairing units: bounds the seeding's working memory.
_BLOCK_ROWS = 256


class _Side(NamedTuple):
    """One side's unit vectors as a ragged run (CSR): unit ``k``'s entries are
    ``[ptr[k], ptr[k + 1])``, each a pair-vocabulary term id and its tf-isf weight; with each
    unit's norm and number of distinct terms."""

    ptr: np.ndarray[Any, np.dtype[np.int64]]
    ids: np.ndarray[Any, np.dtype[np.int64]]
    vals: _FloatArray
    norms: _FloatArray
    sizes: _FloatArray


def _side(text: PreparedText, ids: np.ndarray[Any, np.dtype[np.int64]], isf: _FloatArray) -> _Side:
    vals = text.term_counts * isf[ids]
    n = len(text)
    rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(text.term_ptr))
    norms = np.sqrt(np.bincount(rows, weights=vals * vals, minlength=n))
    sizes = np.diff(text.term_ptr).astype(np.float64)
    return _Side(text.term_ptr, ids, vals, norms, sizes)


class _PairModel:
    """tf-isf vectors of the units of one (suspicious, source) pair, isf over both sides."""

    def __init__(self, susp: PreparedText, src: PreparedText) -> None:
        self.susp, self.src = susp, src
        both = np.concatenate((susp.term_ids, src.term_ids))
        vocab, inverse = np.unique(both, return_inverse=True)
        self.vocab = len(vocab)
        # sf(t): units holding t (a unit lists each of its terms once)
        sf = np.bincount(inverse, minlength=self.vocab).astype(np.float64)
        n_units = len(susp) + len(src)
        # isf(t) = log(N / sf(t)); a term in every unit weighs 0 (it tells nothing apart).
        isf = np.log(n_units / np.maximum(sf, 1.0))
        cut = len(susp.term_ids)
        self.sides = (
            _side(susp, inverse[:cut].astype(np.int64), isf),
            _side(src, inverse[cut:].astype(np.int64), isf),
        )

    def _dense(self, side: int, lo: int, hi: int) -> _FloatArray:
        """The sum of the vectors of units ``[lo, hi]`` over the pair vocabulary."""
        s = self.sides[side]
        a, b = int(s.ptr[lo]), int(s.ptr[hi + 1])
        out = np.bincount(s.ids[a:b], weights=s.vals[a:b], minlength=self.vocab)
        return out.astype(np.float64, copy=False)

    def best_cosine(self, unit: int, src_range: tuple[int, int]) -> float:
        """The largest cosine of suspicious unit ``unit`` with a source unit of ``src_range``
        (0 without any)."""
        norm = float(self.sides[0].norms[unit])
        if norm <= 0.0:
            return 0.0
        vec = self._dense(0, unit, unit)
        r = self.sides[1]
        lo, hi = src_range
        a, b = int(r.ptr[lo]), int(r.ptr[hi + 1])
        if b <= a:
            return 0.0
        rows = np.repeat(np.arange(hi - lo + 1, dtype=np.int64), np.diff(r.ptr[lo : hi + 2]))
        dots = np.bincount(rows, weights=vec[r.ids[a:b]] * r.vals[a:b], minlength=hi - lo + 1)
        norms = r.norms[lo : hi + 1]
        cos = np.divide(dots, norms * norm, out=np.zeros_like(dots), where=norms > 0)
        return max(0.0, float(cos.max()))

    def similar_units(
        self, min_cosine: float, min_dice: float
    ) -> tuple[
        np.ndarray[Any, np.dtype[np.int64]],
        np.ndarray[Any, np.dtype[np.int64]],
        _FloatArray,
        _FloatArray,
    ]:
        """Unit pairs ``(i_susp, j_src)`` with cosine > ``min_cosine`` and Dice > ``min_dice``.

        Both sides are sparse rows over the terms they share, paired block by block
        (``_BLOCK_ROWS`` units a side, :func:`_block_products`), so memory stays bounded
        however long the texts are.
        """
        empty_i = np.zeros(0, dtype=np.int64)
        empty_f = np.zeros(0, dtype=np.float64)
        side_s, side_r = self.sides
        in_s = np.bincount(side_s.ids, minlength=self.vocab) > 0
        in_r = np.bincount(side_r.ids, minlength=self.vocab) > 0
        shared = in_s & in_r
        if not shared.any():
            return empty_i, empty_i, empty_f, empty_f
        susp, src = _SparseRows(side_s, shared), _SparseRows(side_r, shared)
        src_blocks = [
            (lo2, src.block(lo2, min(lo2 + _BLOCK_ROWS, len(src))))
            for lo2 in range(0, len(src), _BLOCK_ROWS)
        ]
        parts: list[tuple[Any, ...]] = []
        for lo in range(0, len(susp), _BLOCK_ROWS):
            block_s = susp.block(lo, min(lo + _BLOCK_ROWS, len(susp)))
            for lo2, block_r in src_blocks:
                got = _block_products(block_s, block_r)
                if got is None:
                    continue
                rows, cols, dot, inter = got
                i, j = rows + lo, cols + lo2
                denom = susp.norms[i] * src.norms[j]
                cos = np.divide(dot, denom, out=np.zeros_like(dot), where=denom > 0)
                dice = 2.0 * inter / (susp.sizes[i] + src.sizes[j])
                ok = (cos > min_cosine) & (dice > min_dice)
                parts.append((i[ok], j[ok], cos[ok], dice[ok]))
        if not parts:
            return empty_i, empty_i, empty_f, empty_f
        i_all = np.concatenate([p[0] for p in parts]).astype(np.int64)
        j_all = np.concatenate([p[1] for p in parts]).astype(np.int64)
        order = np.lexsort((j_all, i_all))  # row-major, whatever the block order
        return (
            i_all[order],
            j_all[order],
            np.concatenate([p[2] for p in parts])[order],
            np.concatenate([p[3] for p in parts])[order],
        )

    def span_cosine(self, susp_range: tuple[int, int], src_range: tuple[int, int]) -> float:
        """Cosine of the summed vectors of units ``[a, b]`` (inclusive) on each side."""
        a = self._dense(0, *susp_range)
        b = self._dense(1, *src_range)
        na = math.sqrt(float(a @ a))
        nb = math.sqrt(float(b @ b))
        return float(a @ b) / (na * nb) if na > 0 and nb > 0 else 0.0


class _SparseRows:
    """Units of one side as sparse rows over the terms both sides hold (``shared``, a mask
    over the pair vocabulary), with each unit's full vector norm and its number of distinct
    terms (all terms, shared or not)."""

    def __init__(self, side: _Side, shared: np.ndarray[Any, np.dtype[np.bool_]]) -> None:
        hit = shared[side.ids]
        rows = np.repeat(np.arange(len(side.norms), dtype=np.int64), np.diff(side.ptr))
        counts = np.bincount(rows[hit], minlength=len(side.norms))
        self.ptr = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
        self.ids = side.ids[hit]
        self.vals = side.vals[hit]
        self.norms = side.norms
        self.sizes = side.sizes

    def __len__(self) -> int:
        return len(self.ptr) - 1

    def block(self, lo: int, hi: int) -> _Block:
        """Entries of units ``[lo, hi)`` sorted by term id: row (relative to ``lo``), term
        id, weight."""
        a, b = int(self.ptr[lo]), int(self.ptr[hi])
        rows = np.repeat(np.arange(hi - lo, dtype=np.int64), np.diff(self.ptr[lo : hi + 1]))
        ids, vals = self.ids[a:b], self.vals[a:b]
        order = np.argsort(ids, kind="stable")
        return rows[order], ids[order], vals[order]


_IntArray = np.ndarray[Any, np.dtype[np.int64]]


_Block = tuple[_IntArray, _IntArray, _FloatArray]


def _block_products(
    block_s: _Block, block_r: _Block
) -> tuple[_IntArray, _IntArray, _FloatArray, _FloatArray] | None:
    """Dot products and shared-term counts of every row pair of two blocks that shares a term,
    by an inverted index: for each term, every (suspicious row, source row) pair holding it.
    No BLAS (whose threads stall on a busy machine); work = sum over terms of the product of
    their row counts, bounded by the block sizes."""
    rows_s, ids_s, vals_s = block_s
    rows_r, ids_r, vals_r = block_r
    if not len(ids_s) or not len(ids_r):
        return None
    terms_s, start_s, count_s = np.unique(ids_s, return_index=True, return_counts=True)
    terms_r, start_r, count_r = np.unique(ids_r, return_index=True, return_counts=True)
    _, ks, kr = np.intersect1d(terms_s, terms_r, assume_unique=True, return_indices=True)
    if not len(ks):
        return None
    a, na, c, nc = start_s[ks], count_s[ks], start_r[kr], count_r[kr]
    m = na * nc
    total = int(m.sum())
    first = np.repeat(np.cumsum(m) - m, m)
    q = np.arange(total, dtype=np.int64) - first
    width = np.repeat(nc, m)
    si = np.repeat(a, m) + q // width
    ri = np.repeat(c, m) + q % width
    n_r = int(rows_r.max()) + 1
    key = rows_s[si] * n_r + rows_r[ri]
    keys, inverse = np.unique(key, return_inverse=True)
    dot = np.bincount(inverse, weights=vals_s[si] * vals_r[ri], minlength=len(keys))
    inter = np.bincount(inverse, minlength=len(keys))
    rows = (keys // n_r).astype(np.int64)
    cols = (keys % n_r).astype(np.int64)
    return rows, cols, dot.astype(np.float64), inter.astype(np.float64)


def _split(seeds: list[tuple[int, int]], side: int, gap: int) -> list[list[tuple[int, int]]]:
    """Seeds sorted on ``side`` (0 suspicious, 1 source), cut wherever more than ``gap`` units
    lie between two neighbours."""
    ordered = sorted(seeds, key=lambda s: (s[side], s[1 - side]))
    groups: list[list[tuple[int, int]]] = [[ordered[0]]]
    for prev, cur in itertools.pairwise(ordered):
        if cur[side] - prev[side] > gap + 1:  # a gap of g units lies between indices g+1 apart
            groups.append([cur])
        else:
            groups[-1].append(cur)
    return groups


def _cluster(seeds: list[tuple[int, int]], gap: int) -> list[list[tuple[int, int]]]:
    """Alternate splits on both sides until neither side splits any cluster (the paper's
    recursive clustering, iteratively; output sorted by first seed for determinism)."""
    done: list[list[tuple[int, int]]] = []
    work: list[tuple[list[tuple[int, int]], int, bool]] = [(seeds, 0, True)]
    while work:
        group, side, first = work.pop()
        parts = _split(group, side, gap)
        if len(parts) == 1 and not first:
            done.append(parts[0])
            continue
        work.extend((p, 1 - side, False) for p in parts)
    return sorted(done, key=lambda g: min(g))


def _extend(
    model: _PairModel,
    seeds: list[tuple[int, int]],
    gap: int,
    cfg: AlignmentConfig,
    novel: float | None = None,
) -> list[tuple[tuple[int, int], tuple[int, int], float]]:
    """Validated clusters as (susp unit range, src unit range, span cosine), cut at novel
    units (``novel``: the threshold, default the config's; 0 cuts nothing)."""
    threshold = cfg.novel_cosine if novel is None else novel
    out: list[tuple[tuple[int, int], tuple[int, int], float]] = []
    work = [(c, gap) for c in _cluster(seeds, gap)]
    while work:
        group, g = work.pop()
        susp_range = (min(s[0] for s in group), max(s[0] for s in group))
        src_range = (min(s[1] for s in group), max(s[1] for s in group))
        sim = model.span_cosine(susp_range, src_range)
        if sim > cfg.validation_cosine:
            parts = _split_at_novel(model, group, susp_range, src_range, threshold)
            if len(parts) == 1:
                out.append((susp_range, src_range, sim))
            else:
                work.extend((c, g) for c in parts)
        elif len(group) > 1 and g > 0:
            work.extend((c, g - 1) for c in _cluster(group, g - 1))
    return sorted(out)


def _split_at_novel(
    model: _PairModel,
    group: list[tuple[int, int]],
    susp_range: tuple[int, int],
    src_range: tuple[int, int],
    threshold: float,
) -> list[list[tuple[int, int]]]:
    """The seeds of a cluster cut wherever a suspicious unit between them resembles no unit
    of the source span (best cosine <= ``threshold``): a new sentence between two copied
    passages ends the first and starts the second.  (Cutting the source side the same way
    lost more recall than it gained precision on the tuning half.)"""
    if threshold <= 0.0:
        return [group]
    ordered = sorted(group)
    gaps = [u for a, b in itertools.pairwise(ordered) for u in range(a[0] + 1, b[0])]
    if not gaps:
        return [group]
    novel = {u for u in gaps if model.best_cosine(u, src_range) <= threshold}
    if not novel:
        return [group]
    parts: list[list[tuple[int, int]]] = [[ordered[0]]]
    for prev, seed in itertools.pairwise(ordered):
        if any(u in novel for u in range(prev[0] + 1, seed[0])):
            parts.append([])
        parts[-1].append(seed)
    return parts
