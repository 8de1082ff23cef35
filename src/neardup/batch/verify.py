"""Candidate pairs judged by the near-duplicate rule, batched.

Batch dedup asks of each candidate pair the one question every detector asks, through the
one rule (:mod:`neardup.rule`): the profiles of the documents in candidate pairs are made by
:func:`neardup.rule.profile` (:func:`profile_rows`) and kept as *ragged* arrays (a flat
array plus ``offsets``, row ``d`` being ``flat[offsets[d]:offsets[d + 1]]``); the pair
features are computed for a whole chunk of pairs in one compiled loop that calls the rule's
own feature kernels (:mod:`neardup.rule._kernels`: each text's coverage by the other and
longest shared passage, the shared shingles, the content-word dot product), and each pair's
verdict is :func:`neardup.rule.decide` of its :class:`~neardup.rule.Features`.  The kernel
computes features, never verdicts.

Guarantees: every verdict, score and feature equals :func:`neardup.rule.judge` of the two
texts (tested pair by pair); deterministic.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import numpy.typing as npt
from numba import njit

from neardup.rule import VERDICTS, Features, RuleConfig, decide, profile
from neardup.rule._kernels import direction, merge_count_sorted, weighted_dot
from neardup.rule.features import Direction

__all__ = [
    "DUPLICATE",
    "UNRELATED",
    "PairVerdicts",
    "ProfileRows",
    "profile_rows",
    "verify_pairs",
]

U64 = npt.NDArray[np.uint64]
I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]

DUPLICATE = VERDICTS.index("duplicate")
UNRELATED = VERDICTS.index("unrelated")

# Columns of PairVerdicts.counts: for each of the two texts (a, then b) its Direction fields
# (found prose, prose, found tokens, tokens, passage), then the shared distinct shingles and
# the size of the union of the two shingle sets.
_DIRECTION = 5
_SHARED = 10
_UNION = 11
_COLUMNS = 12


@dataclasses.dataclass(frozen=True)
class ProfileRows:
    """The rule's profiles (:class:`neardup.rule.Profile`) of some documents, ragged.

    ``shingles`` (text order), ``flags`` (per token) and ``sets`` (sorted distinct
    shingles), ``terms``/``term_counts`` (content words), each with its offsets; ``norm2``:
    each row's squared content-word norm (an exact integer).
    """

    shingles: U64
    shingle_offsets: I64
    flags: npt.NDArray[np.uint8]
    token_offsets: I64
    sets: U64
    set_offsets: I64
    terms: U64
    term_counts: npt.NDArray[np.uint32]
    term_offsets: I64
    norm2: I64

    @property
    def rows(self) -> int:
        """Number of documents."""
        return int(self.norm2.shape[0])

    def take(self, rows: I64) -> ProfileRows:
        """Rows ``rows`` only, in that order."""
        from neardup.batch.tasks import gather_ragged

        sh, sh_off = gather_ragged(self.shingles, self.shingle_offsets, rows)
        fl, tok_off = gather_ragged(self.flags, self.token_offsets, rows)
        st, st_off = gather_ragged(self.sets, self.set_offsets, rows)
        te, te_off = gather_ragged(self.terms, self.term_offsets, rows)
        tc, _ = gather_ragged(self.term_counts, self.term_offsets, rows)
        return ProfileRows(sh, sh_off, fl, tok_off, st, st_off, te, tc, te_off, self.norm2[rows])

    def arrays(self) -> dict[str, np.ndarray]:
        """Named arrays (to save); :meth:`from_arrays` reads them back."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    @classmethod
    def from_arrays(cls, arrays: dict[str, Any]) -> ProfileRows:
        """Rows from :meth:`arrays` (any mapping of those names, e.g. memory-mapped)."""
        return cls(**{f.name: arrays[f.name] for f in dataclasses.fields(cls)})

    @classmethod
    def concat(cls, pieces: list[ProfileRows]) -> ProfileRows:
        """The rows of ``pieces``, in order."""
        if not pieces:
            return profile_rows([], RuleConfig())
        out: dict[str, np.ndarray] = {}
        for flat, offsets in (
            ("shingles", "shingle_offsets"),
            ("flags", "token_offsets"),
            ("sets", "set_offsets"),
            ("terms", "term_offsets"),
        ):
            out[flat], out[offsets] = _concat_ragged(
                [getattr(p, flat) for p in pieces], [getattr(p, offsets) for p in pieces]
            )
        out["term_counts"] = np.concatenate([p.term_counts for p in pieces])
        out["norm2"] = np.concatenate([p.norm2 for p in pieces])
        return cls.from_arrays(out)


def _concat_ragged(flats: list[np.ndarray], offsets: list[I64]) -> tuple[np.ndarray, I64]:
    joined = [np.zeros(1, dtype=np.int64)]
    base = 0
    for flat, off in zip(flats, offsets, strict=True):
        joined.append(np.asarray(off[1:], dtype=np.int64) + base)
        base += int(flat.shape[0])
    return np.concatenate([np.asarray(f) for f in flats]), np.concatenate(joined)


def _ragged(arrays: list[np.ndarray], dtype: Any) -> tuple[np.ndarray, I64]:
    offsets = np.zeros(len(arrays) + 1, dtype=np.int64)
    np.cumsum([a.shape[0] for a in arrays], out=offsets[1:])
    flat = np.concatenate(arrays).astype(dtype, copy=False) if arrays else np.empty(0, dtype)
    return flat, offsets


def profile_rows(texts: list[str], rule: RuleConfig) -> ProfileRows:
    """The rule's profiles of ``texts`` (:func:`neardup.rule.profile`), as ragged rows."""
    profiles = [profile(text, rule) for text in texts]
    sh, sh_off = _ragged([p.shingles for p in profiles], np.uint64)
    fl, tok_off = _ragged([p.flags for p in profiles], np.uint8)
    st, st_off = _ragged([p.shingle_set for p in profiles], np.uint64)
    te, te_off = _ragged([p.terms for p in profiles], np.uint64)
    tc, _ = _ragged([p.term_counts for p in profiles], np.uint32)
    norm2 = np.array([p.term_norm2 for p in profiles], dtype=np.int64)
    return ProfileRows(sh, sh_off, fl, tok_off, st, st_off, te, tc, te_off, norm2)


@njit(cache=True, nogil=True)  # type: ignore[misc]
def _pair_counts(
    left: I64,
    right: I64,
    shingles: U64,
    sh_off: I64,
    flags: Any,
    tok_off: I64,
    sets: U64,
    set_off: I64,
    terms: U64,
    term_counts: Any,
    term_off: I64,
    width: int,
) -> tuple[I64, I64]:  # pragma: no cover - compiled
    m = left.shape[0]
    counts = np.zeros((m, _COLUMNS), dtype=np.int64)
    dots = np.zeros(m, dtype=np.int64)
    for k in range(m):
        a, b = left[k], right[k]
        a_sh = shingles[sh_off[a] : sh_off[a + 1]]
        b_sh = shingles[sh_off[b] : sh_off[b + 1]]
        a_fl = flags[tok_off[a] : tok_off[a + 1]]
        b_fl = flags[tok_off[b] : tok_off[b + 1]]
        a_set = sets[set_off[a] : set_off[a + 1]]
        b_set = sets[set_off[b] : set_off[b + 1]]
        da = direction(a_sh, a_fl, b_set, width)
        db = direction(b_sh, b_fl, a_set, width)
        for c in range(_DIRECTION):
            counts[k, c] = da[c]
            counts[k, _DIRECTION + c] = db[c]
        shared = merge_count_sorted(a_set, b_set)
        counts[k, _SHARED] = shared
        counts[k, _UNION] = a_set.shape[0] + b_set.shape[0] - shared
        dots[k] = weighted_dot(
            terms[term_off[a] : term_off[a + 1]],
            term_counts[term_off[a] : term_off[a + 1]],
            terms[term_off[b] : term_off[b + 1]],
            term_counts[term_off[b] : term_off[b + 1]],
        )
    return counts, dots


@dataclasses.dataclass(frozen=True)
class PairVerdicts:
    """The rule's verdicts on pairs: ``labels`` (indexes into :data:`neardup.rule.VERDICTS`),
    ``scores``, and the features (``counts``: integer features, ``cosine``), from which
    :meth:`features` rebuilds each pair's :class:`~neardup.rule.Features`."""

    labels: npt.NDArray[np.int8]
    scores: F64
    counts: I64
    cosine: F64

    @classmethod
    def empty(cls) -> PairVerdicts:
        """No pairs."""
        return cls(
            np.empty(0, dtype=np.int8),
            np.empty(0, dtype=np.float64),
            np.empty((0, _COLUMNS), dtype=np.int64),
            np.empty(0, dtype=np.float64),
        )

    @classmethod
    def concat(cls, pieces: list[PairVerdicts]) -> PairVerdicts:
        """The pairs of ``pieces``, in order."""
        if not pieces:
            return cls.empty()
        return cls(
            *(np.concatenate([getattr(p, f.name) for p in pieces]) for f in dataclasses.fields(cls))
        )

    def label(self, k: int) -> str:
        """The verdict of pair ``k``."""
        return VERDICTS[int(self.labels[k])]

    def features(self, k: int) -> Features:
        """The :class:`~neardup.rule.Features` of pair ``k``."""
        return _features(self.counts[k].tolist(), float(self.cosine[k]))


def _features(row: list[int], cosine: float) -> Features:
    a = Direction(*row[:_DIRECTION])
    b = Direction(*row[_DIRECTION : 2 * _DIRECTION])
    shared, union = row[_SHARED], row[_UNION]
    # The same expression as neardup.rule.features.pair_features (tested equal).
    return Features(a, b, shared, shared / union if union else 1.0, cosine)


def verify_pairs(pairs: I64, rows: ProfileRows, rule: RuleConfig) -> PairVerdicts:
    """The rule's verdict on each pair ``(a, b)`` of rows of ``rows`` (a before b)."""
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    if pairs.shape[0] == 0:
        return PairVerdicts.empty()
    left = np.ascontiguousarray(pairs[:, 0])
    right = np.ascontiguousarray(pairs[:, 1])
    counts, dots = _pair_counts(
        left,
        right,
        np.ascontiguousarray(rows.shingles, dtype=np.uint64),
        np.ascontiguousarray(rows.shingle_offsets, dtype=np.int64),
        np.ascontiguousarray(rows.flags, dtype=np.uint8),
        np.ascontiguousarray(rows.token_offsets, dtype=np.int64),
        np.ascontiguousarray(rows.sets, dtype=np.uint64),
        np.ascontiguousarray(rows.set_offsets, dtype=np.int64),
        np.ascontiguousarray(rows.terms, dtype=np.uint64),
        np.ascontiguousarray(rows.term_counts, dtype=np.uint32),
        np.ascontiguousarray(rows.term_offsets, dtype=np.int64),
        rule.width,
    )
    m = pairs.shape[0]
    labels = np.empty(m, dtype=np.int8)
    scores = np.empty(m, dtype=np.float64)
    cosine = np.empty(m, dtype=np.float64)
    norm2 = rows.norm2.tolist()
    index = {name: i for i, name in enumerate(VERDICTS)}
    for k, (row, dot, a, b) in enumerate(
        zip(counts.tolist(), dots.tolist(), left.tolist(), right.tolist(), strict=True)
    ):
        # Exact integers, as the rule computes its cosine (same float on every machine).
        norms2 = norm2[a] * norm2[b]
        cos = min(1.0, dot / math.sqrt(norms2)) if norms2 else 0.0
        label, score, _ = decide(_features(row, cos), rule)
        labels[k] = index[label]
        scores[k] = score
        cosine[k] = cos
    return PairVerdicts(labels, scores, counts, cosine)
