"""Steps 2-3 of the aligner: the tf-isf pair model of one (suspicious, source) pair, its
seeds (cosine and Dice of unit pairs, block by block), and the extension of seeds into
validated clusters (Sanchez-Perez, Sidorov & Gelbukh, PAN 2014)."""

from __future__ import annotations

import itertools
import math
import operator
from collections import Counter
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from neardup.similarity.alignment.records import AlignmentConfig, PreparedText, _FloatArray

# Units per block on each side when pairing units: bounds the seeding's working memory.
_BLOCK_ROWS = 256


class _PairModel:
    """tf-isf vectors of the units of one (suspicious, source) pair, isf over both sides."""

    def __init__(self, susp: PreparedText, src: PreparedText) -> None:
        self.susp, self.src = susp, src
        df = Counter(itertools.chain.from_iterable(c.keys() for c in (*susp.terms, *src.terms)))
        n_units = len(susp) + len(src)
        # isf(t) = log(N / sf(t)); a term in every unit weighs 0 (it tells nothing apart).
        logs = {f: math.log(n_units / f) for f in set(df.values())}
        self.isf = {t: logs[f] for t, f in df.items()}
        self.susp_vecs = [self._weights(c) for c in susp.terms]
        self.src_vecs = [self._weights(c) for c in src.terms]
        self._unit_cache: dict[tuple[int, int], dict[int, float]] = {}

    def unit_vec(self, side: int, k: int) -> dict[int, float]:
        """Unit ``k``'s tf-isf vector scaled to length 1 (side 0: suspicious, 1: source)."""
        key = (side, k)
        vec = self._unit_cache.get(key)
        if vec is None:
            vec = _unit((self.susp_vecs if side == 0 else self.src_vecs)[k])
            self._unit_cache[key] = vec
        return vec

    def _weights(self, counts: Counter[int]) -> dict[int, float]:
        return {t: n * self.isf[t] for t, n in counts.items()}

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
        flat_s, flat_r = _flat(self.susp_vecs), _flat(self.src_vecs)
        shared = np.intersect1d(flat_s.terms, flat_r.terms)  # sorted: a term's column
        if not len(shared):
            return empty_i, empty_i, empty_f, empty_f
        susp, src = _SparseRows(flat_s, shared), _SparseRows(flat_r, shared)
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
        a = _sum_vecs(self.susp_vecs[susp_range[0] : susp_range[1] + 1])
        b = _sum_vecs(self.src_vecs[src_range[0] : src_range[1] + 1])
        dot = sum(x * b[t] for t, x in a.items() if t in b)
        na = _norm(a)
        nb = _norm(b)
        return dot / (na * nb) if na > 0 and nb > 0 else 0.0


def _norm(vec: dict[int, float]) -> float:
    """Euclidean norm, the squares summed in the dict's order (the same float every time)."""
    return math.sqrt(sum(map(operator.mul, vec.values(), vec.values())))


def _unit(vec: dict[int, float]) -> dict[int, float]:
    norm = _norm(vec)
    return {t: x / norm for t, x in vec.items()} if norm > 0 else {}


class _Flat(NamedTuple):
    """The entries of a side's unit vectors in one run: unit, term, weight (dict order), and
    each unit's norm and number of distinct terms."""

    rows: np.ndarray[Any, np.dtype[np.int64]]
    terms: np.ndarray[Any, np.dtype[np.uint64]]
    vals: _FloatArray
    norms: _FloatArray
    sizes: _FloatArray


def _flat(vecs: Sequence[dict[int, float]]) -> _Flat:
    sizes = [len(v) for v in vecs]
    total = sum(sizes)
    terms = np.fromiter(itertools.chain.from_iterable(vecs), dtype=np.uint64, count=total)
    vals = np.fromiter(
        itertools.chain.from_iterable(v.values() for v in vecs), dtype=np.float64, count=total
    )
    rows = np.repeat(np.arange(len(vecs), dtype=np.int64), sizes)
    norms = np.array([_norm(v) for v in vecs], dtype=np.float64)
    return _Flat(rows, terms, vals, norms, np.array(sizes, dtype=np.float64))


class _SparseRows:
    """Units of one side as sparse rows over the shared terms (CSR; a term's column is its
    index in the sorted ``shared``), with each unit's full vector norm and its number of
    distinct terms (all terms, shared or not)."""

    def __init__(self, flat: _Flat, shared: np.ndarray[Any, np.dtype[np.uint64]]) -> None:
        pos = np.minimum(np.searchsorted(shared, flat.terms), len(shared) - 1)
        hit = shared[pos] == flat.terms
        counts = np.bincount(flat.rows[hit], minlength=len(flat.norms))
        self.ptr = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
        self.ids = pos[hit].astype(np.int64)
        self.vals = flat.vals[hit]
        self.norms = flat.norms
        self.sizes = flat.sizes

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


def _sum_vecs(vecs: Sequence[dict[int, float]]) -> dict[int, float]:
    total: dict[int, float] = {}
    for v in vecs:
        for t, x in v.items():
            total[t] = total.get(t, 0.0) + x
    return total


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
    src = [model.unit_vec(1, v) for v in range(src_range[0], src_range[1] + 1)]
    novel = {
        u
        for u in gaps
        if max((_dot(model.unit_vec(0, u), v) for v in src), default=0.0) <= threshold
    }
    if not novel:
        return [group]
    parts: list[list[tuple[int, int]]] = [[ordered[0]]]
    for prev, seed in itertools.pairwise(ordered):
        if any(u in novel for u in range(prev[0] + 1, seed[0])):
            parts.append([])
        parts[-1].append(seed)
    return parts


def _dot(a: dict[int, float], b: dict[int, float]) -> float:
    if len(a) > len(b):
        a, b = b, a
    return sum(x * b[t] for t, x in a.items() if t in b)
