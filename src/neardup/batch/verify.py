"""Candidate pairs judged by the near-duplicate rule, batched.

Batch dedup asks of each candidate pair the one question every detector asks, through the
one rule (:mod:`neardup.rule`): the profiles of the documents in candidate pairs are made by
:func:`neardup.rule.profile` (:func:`profile_rows`) and kept as *ragged* arrays (a flat
array plus ``offsets``, row ``d`` being ``flat[offsets[d]:offsets[d + 1]]``); the pair
features are computed for a whole chunk of pairs in one compiled loop that calls the rule's
own feature kernels (:mod:`neardup.rule._kernels`: each text's coverage by the other and
longest shared passage, the shared shingles, the content-word dot product), and the verdicts
are the rule's clauses applied to those features for the whole chunk at once
(:func:`neardup.rule.verdict.decide_many`, property-tested equal to
:func:`neardup.rule.decide`). The kernel computes features, never verdicts. Before them,
every pair is screened by the rule's exact upper bounds (:mod:`neardup.rule.bounds`) from
the distinct shingles the two texts share, one linear merge: most candidate pairs of a
corpus cannot be a copy, and ``dedup`` only asks whether a pair is a duplicate, which rules
out even more.

Guarantees: every verdict, score and feature equals :func:`neardup.rule.judge` of the two
texts (tested pair by pair); deterministic.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import numpy as np
import numpy.typing as npt

from neardup._jit import compiled_worthwhile, njit
from neardup.errors import ConfigError
from neardup.rule import VERDICTS, Features, RuleConfig, profile
from neardup.rule._kernels import (
    direction,
    direction_numpy,
    merge_count_numpy,
    merge_count_sorted,
    weighted_dot,
    weighted_dot_numpy,
)
from neardup.rule.bounds import copy_possible_pairs
from neardup.rule.features import Direction
from neardup.rule.junk import FURNITURE
from neardup.rule.verdict import decide_many

__all__ = [
    "DUPLICATE",
    "LABELS",
    "NOT_DUPLICATE",
    "QUESTIONS",
    "UNRELATED",
    "PairVerdicts",
    "ProfileRows",
    "profile_rows",
    "row_counts",
    "verify_pairs",
]

U64 = npt.NDArray[np.uint64]
I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]
I8 = npt.NDArray[np.int8]

DUPLICATE = VERDICTS.index("duplicate")
UNRELATED = VERDICTS.index("unrelated")
#: The label of a pair that a ``duplicate`` question found not to be a duplicate (which of
#: the rule's other verdicts it gets is not asked).
NOT_DUPLICATE = len(VERDICTS)
#: Names of the labels of :class:`PairVerdicts`: the rule's verdicts, then ``not duplicate``.
LABELS = (*VERDICTS, "not duplicate")

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
def _directions(
    left: I64,
    right: I64,
    shingles: U64,
    sh_off: I64,
    flags: Any,
    tok_off: I64,
    sets: U64,
    set_off: I64,
    width: int,
) -> I64:  # pragma: no cover - compiled
    m = left.shape[0]
    counts = np.zeros((m, 2 * _DIRECTION), dtype=np.int64)
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
    return counts


def _directions_numpy(
    left: I64,
    right: I64,
    shingles: U64,
    sh_off: I64,
    flags: Any,
    tok_off: I64,
    sets: U64,
    set_off: I64,
    width: int,
) -> I64:
    """:func:`_directions` pair by pair with numpy (tested equal)."""
    counts = np.zeros((left.shape[0], 2 * _DIRECTION), dtype=np.int64)
    for k, (a, b) in enumerate(zip(left.tolist(), right.tolist(), strict=True)):
        for col, (x, y) in ((0, (a, b)), (_DIRECTION, (b, a))):
            counts[k, col : col + _DIRECTION] = direction_numpy(
                _row(shingles, sh_off, x), _row(flags, tok_off, x), _row(sets, set_off, y), width
            )
    return counts


@dataclasses.dataclass(frozen=True)
class PairVerdicts:
    """The rule's verdicts on pairs: ``labels`` (indexes into :data:`LABELS`: the rule's
    verdicts, or ``not duplicate`` for the duplicate question) and ``scores`` of every
    pair; the features of the pairs listed in ``kept`` (ascending pair indexes:
    ``counts``, the integer features, and ``cosine``), from which :meth:`features` rebuilds
    a pair's :class:`~neardup.rule.Features`.  Features are kept for the pairs a ``pairs``
    output reports (the related ones), not for the millions of ``unrelated`` candidates,
    nor at all for ``dedup``."""

    labels: npt.NDArray[np.int8]
    scores: F64
    kept: I64
    counts: I64
    cosine: F64

    @classmethod
    def empty(cls) -> PairVerdicts:
        """No pairs."""
        return cls(
            np.empty(0, dtype=np.int8),
            np.empty(0, dtype=np.float64),
            np.empty(0, dtype=np.int64),
            np.empty((0, _COLUMNS), dtype=np.int64),
            np.empty(0, dtype=np.float64),
        )

    @classmethod
    def concat(cls, pieces: list[PairVerdicts]) -> PairVerdicts:
        """The pairs of ``pieces``, in order."""
        if not pieces:
            return cls.empty()
        base = np.cumsum([0] + [p.labels.shape[0] for p in pieces[:-1]])
        return cls(
            np.concatenate([p.labels for p in pieces]),
            np.concatenate([p.scores for p in pieces]),
            np.concatenate([p.kept + b for p, b in zip(pieces, base.tolist(), strict=True)]),
            np.concatenate([p.counts for p in pieces]),
            np.concatenate([p.cosine for p in pieces]),
        )

    def label(self, k: int) -> str:
        """The verdict of pair ``k``."""
        return LABELS[int(self.labels[k])]

    def related(self) -> Iterator[tuple[int, Features]]:
        """``(pair index, features)`` of the kept pairs the rule did not call
        ``unrelated``, in pair order."""
        for at, k in enumerate(self.kept.tolist()):
            if self.labels[k] != UNRELATED:
                yield k, _features(self.counts[at].tolist(), float(self.cosine[at]))

    def features(self, k: int) -> Features:
        """The :class:`~neardup.rule.Features` of pair ``k`` (``KeyError`` when they were
        not kept)."""
        at = int(np.searchsorted(self.kept, k))
        if at == self.kept.shape[0] or self.kept[at] != k:
            raise KeyError(f"the features of pair {k} were not kept")
        return _features(self.counts[at].tolist(), float(self.cosine[at]))


def _features(row: list[int], cosine: float) -> Features:
    a = Direction(*row[:_DIRECTION])
    b = Direction(*row[_DIRECTION : 2 * _DIRECTION])
    shared, union = row[_SHARED], row[_UNION]
    # The same expression as neardup.rule.features.pair_features (tested equal).
    return Features(a, b, shared, shared / union if union else 1.0, cosine)


def _coverage(found_prose: I64, prose: I64, found_tokens: I64, tokens: I64) -> F64:
    """:attr:`neardup.rule.features.Direction.coverage` of arrays (the same divisions)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        of_prose = found_prose / prose
        of_tokens = np.where(tokens > 0, found_tokens / np.maximum(tokens, 1), 0.0)
    out: F64 = np.where(prose > 0, of_prose, of_tokens)
    return out


def _cosines(dots: I64, norm2: I64, left: I64, right: I64) -> F64:
    """The rule's content-word cosine of each pair: ``min(1, dot / sqrt(|a|^2 |b|^2))`` with
    the product of the squared norms an exact integer before its one rounding to a float,
    as :func:`neardup.rule.pair_features` computes it (int64 when the product fits in the
    53 bits a float holds exactly; Python integers otherwise)."""
    a = norm2[left]
    b = norm2[right]
    small = (a < (1 << 26)) & (b < (1 << 26))
    norms2 = np.empty(left.shape[0], dtype=np.float64)
    norms2[small] = (a[small] * b[small]).astype(np.float64)
    for k in np.flatnonzero(~small).tolist():
        norms2[k] = float(int(a[k]) * int(b[k]))
    with np.errstate(divide="ignore", invalid="ignore"):
        cos = np.minimum(1.0, dots / np.sqrt(norms2))
    out: F64 = np.where(norms2 > 0, cos, 0.0)
    return out


QUESTIONS = ("verdict", "duplicate")


@njit(cache=True, nogil=True)  # type: ignore[misc]
def _screen_counts(
    left: I64,
    right: I64,
    sets: U64,
    set_off: I64,
    terms: U64,
    term_counts: Any,
    term_off: I64,
    dots: bool,
) -> tuple[I64, I64]:  # pragma: no cover - compiled
    """Distinct shingles shared by each pair (one merge of the two sorted sets) and, with
    ``dots``, the content-word dot product: what the bounds and the cosine need."""
    m = left.shape[0]
    shared = np.zeros(m, dtype=np.int64)
    dot = np.zeros(m, dtype=np.int64)
    for k in range(m):
        a, b = left[k], right[k]
        shared[k] = merge_count_sorted(
            sets[set_off[a] : set_off[a + 1]], sets[set_off[b] : set_off[b + 1]]
        )
        if dots:
            dot[k] = weighted_dot(
                terms[term_off[a] : term_off[a + 1]],
                term_counts[term_off[a] : term_off[a + 1]],
                terms[term_off[b] : term_off[b + 1]],
                term_counts[term_off[b] : term_off[b + 1]],
            )
    return shared, dot


def _screen_counts_numpy(
    left: I64,
    right: I64,
    sets: U64,
    set_off: I64,
    terms: U64,
    term_counts: Any,
    term_off: I64,
    dots: bool,
) -> tuple[I64, I64]:
    """:func:`_screen_counts` pair by pair with numpy (tested equal)."""
    pairs = list(zip(left.tolist(), right.tolist(), strict=True))
    shared = [merge_count_numpy(_row(sets, set_off, a), _row(sets, set_off, b)) for a, b in pairs]
    dot = [
        weighted_dot_numpy(
            _row(terms, term_off, a),
            _row(term_counts, term_off, a),
            _row(terms, term_off, b),
            _row(term_counts, term_off, b),
        )
        if dots
        else 0
        for a, b in pairs
    ]
    return np.array(shared, dtype=np.int64), np.array(dot, dtype=np.int64)


def _row(flat: Any, offsets: I64, d: int) -> Any:
    """Row ``d`` of a ragged array."""
    return flat[offsets[d] : offsets[d + 1]]


#: Estimated cost of the numpy twins, for :func:`neardup._jit.compiled_worthwhile`:
#: nanoseconds per pair (a few numpy calls) and per element of the two rows.
_NUMPY_NS_PER_PAIR = 60_000
_NUMPY_NS_PER_ELEMENT = 30


def _pairs_cost(left: I64, right: I64, offsets: I64) -> int:
    """Estimated nanoseconds of a numpy twin over the pairs ``(left, right)`` of rows whose
    sizes ``offsets`` give."""
    # Only the pairs' rows are read: ``offsets`` may be a whole run's table.
    elements = int((offsets[left + 1] - offsets[left]).sum())
    elements += int((offsets[right + 1] - offsets[right]).sum())
    pairs = int(left.shape[0])
    return _NUMPY_NS_PER_PAIR * pairs + _NUMPY_NS_PER_ELEMENT * elements


def row_counts(rows: ProfileRows) -> tuple[I64, I64, I64, I64]:
    """:func:`neardup.rule.bounds.profile_counts` of every row: ``(positions, distinct,
    tokens, prose)`` arrays."""
    shingle_offsets = np.asarray(rows.shingle_offsets, dtype=np.int64)
    set_offsets = np.asarray(rows.set_offsets, dtype=np.int64)
    token_offsets = np.asarray(rows.token_offsets, dtype=np.int64)
    positions: I64 = shingle_offsets[1:] - shingle_offsets[:-1]
    distinct: I64 = set_offsets[1:] - set_offsets[:-1]
    tokens: I64 = token_offsets[1:] - token_offsets[:-1]
    is_prose = (np.asarray(rows.flags) & FURNITURE) == 0
    before = np.zeros(is_prose.shape[0] + 1, dtype=np.int64)
    np.cumsum(is_prose, out=before[1:])
    prose: I64 = before[token_offsets[1:]] - before[token_offsets[:-1]]
    return positions, distinct, tokens, prose


def verify_pairs(
    pairs: I64,
    rows: ProfileRows,
    rule: RuleConfig,
    features: str = "related",
    question: str = "verdict",
    counts: I64 | None = None,
) -> PairVerdicts:
    """The rule's answer for each pair ``(a, b)`` of rows of ``rows`` (a before b).

    ``counts``: :func:`row_counts` of ``rows`` as the four columns of an array, when the
    caller keeps them (else they are computed from all of ``rows``).

    ``question="verdict"``: the rule's verdict, with the features kept for ``"all"``
    pairs, the ``"related"`` ones (not ``unrelated``) or ``"none"``.
    ``question="duplicate"`` (what ``dedup`` asks; ``features="none"`` only): whether each
    pair is a ``duplicate`` (label :data:`DUPLICATE`, the rule's score) or not
    (:data:`NOT_DUPLICATE`, score NaN), the rule's other verdicts left apart.

    Every pair is first screened by exact upper bounds of its copy features from the
    shingles the two texts share (:func:`neardup.rule.bounds.copy_possible_pairs`); the
    position-by-position features are computed only for pairs whose answer the bounds
    leave open (and, for kept features, the related ones).  A pair the bounds rule out
    gets the verdict the rule gives it from the cosine alone (``similar`` or
    ``unrelated``), or ``not duplicate``: the same answers as without the screen (tested).
    """
    if question not in QUESTIONS:
        raise ConfigError(f"question must be one of {QUESTIONS}, got {question!r}")
    if question == "duplicate" and features != "none":
        raise ConfigError("the duplicate question keeps no features: use features='none'")
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    if pairs.shape[0] == 0:
        return PairVerdicts.empty()
    left = np.ascontiguousarray(pairs[:, 0])
    right = np.ascontiguousarray(pairs[:, 1])
    arrays = _contiguous(rows)
    verdict = question == "verdict"
    shared, dots = _shared_counts(left, right, arrays, verdict)
    if counts is None:
        positions, distinct, tokens, prose = row_counts(rows)
    else:
        positions, distinct, tokens, prose = (counts[:, c] for c in range(4))
    duplicate_open, partial_open = copy_possible_pairs(
        shared,
        (positions[left], distinct[left], tokens[left], prose[left]),
        (positions[right], distinct[right], tokens[right], prose[right]),
        rule,
    )
    m = left.shape[0]
    if verdict:
        cosine = _cosines(dots, np.asarray(rows.norm2, dtype=np.int64), left, right)
        full = duplicate_open | partial_open
        if features == "all":
            full[:] = True
        elif features == "related":
            full |= cosine >= rule.similar_min_cosine
        # Copies ruled out: the rule decides by the cosine alone (decide's last clause).
        labels = np.where(
            cosine >= rule.similar_min_cosine, VERDICTS.index("similar"), UNRELATED
        ).astype(np.int8)
        scores = cosine.copy()
    else:
        cosine = np.zeros(m, dtype=np.float64)
        full = duplicate_open
        labels = np.full(m, NOT_DUPLICATE, dtype=np.int8)
        scores = np.full(m, np.nan)
    counts = np.zeros((m, _COLUMNS), dtype=np.int64)
    counts[:, _SHARED] = shared
    counts[:, _UNION] = distinct[left] + distinct[right] - shared
    at = np.flatnonzero(full)
    if at.shape[0]:
        counts[at, : 2 * _DIRECTION] = _direction_counts(left[at], right[at], arrays, rule.width)
        labels[at], scores[at] = _decide(counts[at], cosine[at], rule, verdict)
    if features == "all":
        kept = np.arange(m, dtype=np.int64)
    elif features == "related":
        kept = np.flatnonzero(labels != UNRELATED).astype(np.int64)
    else:
        kept = np.empty(0, dtype=np.int64)
    return PairVerdicts(labels, scores, kept, counts[kept], cosine[kept])


def _decide(sub: I64, cosine: F64, rule: RuleConfig, verdict: bool) -> tuple[I8, F64]:
    """The rule's answer on pairs with full features (rows of ``counts``): its verdict, or
    with ``verdict=False`` duplicate / not duplicate (score NaN)."""
    coverage_a = _coverage(*(sub[:, c] for c in range(4)))
    coverage_b = _coverage(*(sub[:, _DIRECTION + c] for c in range(4)))
    passage = np.minimum(sub[:, 4], sub[:, _DIRECTION + 4])
    labels, scores = decide_many(coverage_a, coverage_b, passage, cosine, rule)
    if not verdict:
        dup = labels == DUPLICATE
        labels = np.where(dup, DUPLICATE, NOT_DUPLICATE).astype(np.int8)
        scores = np.where(dup, scores, np.nan)
    return labels, scores


def _shared_counts(
    left: I64, right: I64, arrays: dict[str, np.ndarray], dots: bool
) -> tuple[I64, I64]:
    """:func:`_screen_counts` of the pairs (its numpy twin for work too small to load
    numba for)."""
    screen = (
        _screen_counts
        if compiled_worthwhile(_pairs_cost(left, right, arrays["set_offsets"]))
        else _screen_counts_numpy
    )
    counts: tuple[I64, I64] = screen(
        left,
        right,
        arrays["sets"],
        arrays["set_offsets"],
        arrays["terms"],
        arrays["term_counts"],
        arrays["term_offsets"],
        dots,
    )
    return counts


def _contiguous(rows: ProfileRows) -> dict[str, np.ndarray]:
    """The arrays of ``rows`` as the compiled kernels take them (contiguous, typed)."""
    types = {
        "shingles": np.uint64,
        "shingle_offsets": np.int64,
        "flags": np.uint8,
        "token_offsets": np.int64,
        "sets": np.uint64,
        "set_offsets": np.int64,
        "terms": np.uint64,
        "term_counts": np.uint32,
        "term_offsets": np.int64,
    }
    return {name: np.ascontiguousarray(getattr(rows, name), dtype=t) for name, t in types.items()}


def _direction_counts(left: I64, right: I64, arrays: dict[str, np.ndarray], width: int) -> I64:
    """The two :class:`~neardup.rule.features.Direction` rows of each pair (columns 0-9 of
    :attr:`PairVerdicts.counts`)."""
    directions = (
        _directions
        if compiled_worthwhile(_pairs_cost(left, right, arrays["shingle_offsets"]))
        else _directions_numpy
    )
    out: I64 = directions(
        left,
        right,
        arrays["shingles"],
        arrays["shingle_offsets"],
        arrays["flags"],
        arrays["token_offsets"],
        arrays["sets"],
        arrays["set_offsets"],
        width,
    )
    return out
