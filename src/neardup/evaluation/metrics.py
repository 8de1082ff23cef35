"""Quality metrics: precision/recall/F1 at a threshold and over a sweep, PR and ROC curves,
exact ROC AUC, clustering agreement (adjusted Rand index, B-cubed), and the origin-detection
measures of seed 004 (Section 3.2: DO, TF, ssr).

Conventions (documented, so results are comparable across methods):

* A pair is predicted positive when its ``score >= threshold``.
* Empty ratios: precision with no predicted positives is 1.0 (no false claim was made);
  recall with no actual positives is 1.0 (nothing was missed); F1 is the harmonic mean of
  the two, 0.0 when both are 0.  The counts are always returned so nothing is hidden.
* ROC AUC is exact and rank-based (Mann-Whitney U with mid-ranks for ties, so a tie between
  a positive and a negative counts one half); it is ``nan`` when one class is empty.
* ARI (Hubert & Arabie 1985) from the contingency table; 1.0 when both clusterings are
  trivially identical (the degenerate 0/0 case, as in the usual reference implementations).
* B-cubed (Bagga & Baldwin 1998; Amigó et al. 2009): per-item precision and recall averaged
  over items.
* DO, TF and ssr (seed 004): ``nan`` when there is nothing to score (no query document, no
  token, no shingle).

The passage alignment measures (character-level and PAN) are in
:mod:`neardup.evaluation.alignment`.

Everything is exact, deterministic and vectorised with numpy: O(n log n) in the number of
pairs or items, O(n) memory.  Each function is checked against a brute-force definition in
``tests/test_metrics.py``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from neardup.errors import InputError

__all__ = [
    "PRF",
    "BCubed",
    "Sweep",
    "adjusted_rand_index",
    "average_precision",
    "bcubed",
    "dominant_origin_score",
    "pr_curve",
    "precision_recall_f1",
    "roc_auc",
    "roc_curve",
    "selected_shingle_ratio",
    "threshold_sweep",
    "token_freshness_score",
]

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]


@dataclasses.dataclass(frozen=True, slots=True)
class PRF:
    """Precision, recall and F1 at one threshold, with the confusion counts."""

    threshold: float
    precision: float
    recall: float
    f1: float
    tp: int
    fp: int
    fn: int
    tn: int

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able values."""
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True, slots=True)
class Sweep:
    """Precision/recall/F1 at every distinct score used as threshold (descending)."""

    thresholds: F64
    precision: F64
    recall: F64
    f1: F64
    tp: I64
    fp: I64
    positives: int
    negatives: int

    def best(self) -> PRF:
        """The threshold with the highest F1 (the highest such threshold on ties)."""
        if self.thresholds.size == 0:
            return PRF(float("inf"), 1.0, 1.0 if self.positives == 0 else 0.0, 0.0, 0, 0, 0, 0)
        i = int(np.argmax(self.f1))
        return self.at_index(i)

    def at_index(self, i: int) -> PRF:
        """The :class:`PRF` of the ``i``-th threshold."""
        tp, fp = int(self.tp[i]), int(self.fp[i])
        return PRF(
            float(self.thresholds[i]),
            float(self.precision[i]),
            float(self.recall[i]),
            float(self.f1[i]),
            tp,
            fp,
            self.positives - tp,
            self.negatives - fp,
        )


def _arrays(scores: npt.ArrayLike, labels: npt.ArrayLike) -> tuple[F64, npt.NDArray[np.bool_]]:
    s = np.asarray(scores, dtype=np.float64).ravel()
    y_raw = np.asarray(labels).ravel()
    if s.shape != y_raw.shape:
        raise InputError(f"scores and labels differ in length: {s.size} vs {y_raw.size}")
    if np.isnan(s).any():
        raise InputError("scores contain NaN")
    if y_raw.dtype != np.bool_ and y_raw.size and not np.isin(y_raw, (0, 1)).all():
        raise InputError("labels must be booleans or 0/1")
    return s, y_raw.astype(bool)


def _ratio(num: npt.ArrayLike, den: npt.ArrayLike) -> F64:
    n = np.asarray(num, dtype=np.float64)
    d = np.asarray(den, dtype=np.float64)
    out = np.ones(np.broadcast(n, d).shape, dtype=np.float64)
    np.divide(n, d, out=out, where=d > 0)
    return out


def _f1(p: F64, r: F64) -> F64:
    total = p + r
    out = np.zeros_like(total)
    np.divide(2.0 * p * r, total, out=out, where=total > 0)
    return out


def precision_recall_f1(scores: npt.ArrayLike, labels: npt.ArrayLike, threshold: float) -> PRF:
    """Precision, recall and F1 of predicting ``score >= threshold`` against ``labels``."""
    s, y = _arrays(scores, labels)
    pred = s >= threshold
    tp = int(np.count_nonzero(pred & y))
    fp = int(np.count_nonzero(pred & ~y))
    fn = int(np.count_nonzero(~pred & y))
    tn = int(np.count_nonzero(~pred & ~y))
    p = float(_ratio(tp, tp + fp))
    r = float(_ratio(tp, tp + fn))
    return PRF(float(threshold), p, r, float(_f1(np.array(p), np.array(r))), tp, fp, fn, tn)


def threshold_sweep(scores: npt.ArrayLike, labels: npt.ArrayLike) -> Sweep:
    """P/R/F1 at each distinct score as the threshold, highest first (O(n log n)).

    Entry ``i`` is exactly ``precision_recall_f1(scores, labels, thresholds[i])``.
    """
    s, y = _arrays(scores, labels)
    order = np.argsort(-s, kind="stable")
    s_sorted = s[order]
    y_sorted = y[order]
    tp_cum = np.cumsum(y_sorted, dtype=np.int64)
    fp_cum = np.cumsum(~y_sorted, dtype=np.int64)
    # The last index of each run of equal scores: everything >= that score is predicted.
    last = (
        np.flatnonzero(np.r_[s_sorted[1:] != s_sorted[:-1], True])
        if s.size
        else np.array([], dtype=np.int64)
    )
    tp = tp_cum[last]
    fp = fp_cum[last]
    positives = int(np.count_nonzero(y))
    precision = _ratio(tp, tp + fp)
    recall = _ratio(tp, np.full(tp.shape, positives))
    return Sweep(
        s_sorted[last].astype(np.float64),
        precision,
        recall,
        _f1(precision, recall),
        tp.astype(np.int64),
        fp.astype(np.int64),
        positives,
        int(s.size) - positives,
    )


def pr_curve(scores: npt.ArrayLike, labels: npt.ArrayLike) -> tuple[F64, F64, F64]:
    """``(precision, recall, thresholds)`` by decreasing threshold, starting at (1, 0).

    The first point is the threshold above every score (no predictions: precision 1 by
    convention, recall 0); then one point per distinct score.
    """
    sweep = threshold_sweep(scores, labels)
    precision = np.r_[1.0, sweep.precision]
    recall = np.r_[0.0, sweep.recall]
    thresholds = np.r_[np.inf, sweep.thresholds]
    return precision, recall, thresholds


def average_precision(scores: npt.ArrayLike, labels: npt.ArrayLike) -> float:
    """Average precision: sum over thresholds of (R_i - R_{i-1}) * P_i (step-wise, exact)."""
    precision, recall, _ = pr_curve(scores, labels)
    return float(np.sum(np.diff(recall) * precision[1:]))


def roc_curve(scores: npt.ArrayLike, labels: npt.ArrayLike) -> tuple[F64, F64, F64]:
    """``(false_positive_rate, true_positive_rate, thresholds)`` from (0, 0) upwards."""
    sweep = threshold_sweep(scores, labels)
    fpr = np.r_[0.0, sweep.fp / sweep.negatives if sweep.negatives else sweep.fp * 0.0]
    tpr = np.r_[0.0, sweep.tp / sweep.positives if sweep.positives else sweep.tp * 0.0]
    return fpr.astype(np.float64), tpr.astype(np.float64), np.r_[np.inf, sweep.thresholds]


def _midranks(values: F64) -> F64:
    """1-based ranks with ties given their average rank."""
    order = np.argsort(values, kind="stable")
    sorted_v = values[order]
    starts = np.flatnonzero(np.r_[True, sorted_v[1:] != sorted_v[:-1]])
    ends = np.r_[starts[1:], sorted_v.size]
    avg = (starts + ends + 1) / 2.0  # mean of ranks starts+1 .. ends
    ranks = np.empty(values.size, dtype=np.float64)
    ranks[order] = np.repeat(avg, ends - starts)
    return ranks


def roc_auc(scores: npt.ArrayLike, labels: npt.ArrayLike) -> float:
    """Exact ROC AUC = P(score of a positive > score of a negative) + P(tie) / 2.

    Computed from mid-ranks (Mann-Whitney U) in O(n log n); ``nan`` if a class is empty.
    """
    s, y = _arrays(scores, labels)
    n_pos = int(np.count_nonzero(y))
    n_neg = int(s.size) - n_pos
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    ranks = _midranks(s)
    u = float(ranks[y].sum()) - n_pos * (n_pos + 1) / 2.0
    return u / (n_pos * n_neg)


# --- clusterings ------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class BCubed:
    """B-cubed precision, recall and F1 of a clustering against gold classes."""

    precision: float
    recall: float
    f1: float

    def to_dict(self) -> dict[str, float]:
        """Plain JSON-able values."""
        return dataclasses.asdict(self)


def _codes(labels: Sequence[Hashable]) -> I64:
    index: dict[Hashable, int] = {}
    return np.fromiter((index.setdefault(x, len(index)) for x in labels), np.int64, len(labels))


def _contingency(
    truth: Sequence[Hashable], predicted: Sequence[Hashable]
) -> tuple[I64, I64, I64, I64, I64]:
    """Cell counts with each cell's class and cluster ids, and the class/cluster sizes."""
    if len(truth) != len(predicted):
        raise InputError(f"clusterings differ in length: {len(truth)} vs {len(predicted)}")
    t, p = _codes(truth), _codes(predicted)
    cells, cell_counts = np.unique(np.stack([t, p], axis=1), axis=0, return_counts=True)
    class_sizes = np.bincount(t)
    cluster_sizes = np.bincount(p)
    return (
        cell_counts.astype(np.int64),
        cells[:, 0].astype(np.int64),
        cells[:, 1].astype(np.int64),
        class_sizes.astype(np.int64),
        cluster_sizes.astype(np.int64),
    )


def _pairs(n: npt.ArrayLike) -> float:
    a = np.asarray(n, dtype=np.float64)
    return float(np.sum(a * (a - 1) / 2.0))


def adjusted_rand_index(truth: Sequence[Hashable], predicted: Sequence[Hashable]) -> float:
    """Adjusted Rand index of two labelings of the same items (1 = identical, ~0 = chance)."""
    if len(truth) == 0:
        return 1.0
    cells, _, _, class_sizes, cluster_sizes = _contingency(truth, predicted)
    index = _pairs(cells)
    sum_a = _pairs(class_sizes)
    sum_b = _pairs(cluster_sizes)
    total = len(truth) * (len(truth) - 1) / 2.0
    expected = sum_a * sum_b / total if total else 0.0
    maximum = (sum_a + sum_b) / 2.0
    if maximum == expected:  # both labelings trivial (all one cluster, or all singletons)
        return 1.0
    return (index - expected) / (maximum - expected)


def bcubed(truth: Sequence[Hashable], predicted: Sequence[Hashable]) -> BCubed:
    """B-cubed precision/recall/F1: per item, the share of its predicted cluster that shares
    its gold class (precision) and of its gold class that shares its cluster (recall)."""
    if len(truth) == 0:
        return BCubed(1.0, 1.0, 1.0)
    cells, cls, clu, class_sizes, cluster_sizes = _contingency(truth, predicted)
    n = float(len(truth))
    # Each of the ``c`` items of a cell has precision c/|cluster| and recall c/|class|.
    precision = float(np.sum(cells * cells / cluster_sizes[clu]) / n)
    recall = float(np.sum(cells * cells / class_sizes[cls]) / n)
    f1 = float(_f1(np.array(precision), np.array(recall)))
    return BCubed(precision, recall, f1)


# --- origin detection (seed 004, Section 3.2) ------------------------------------------------


def dominant_origin_score(truth: Sequence[int | None], predicted: Sequence[int]) -> float:
    """DO: fraction of documents with a true dominant origin whose prediction equals it.

    Documents whose truth is ``None`` (no dominant origin) are not query documents and are
    skipped; with no query document at all the score is ``nan``.
    """
    if len(truth) != len(predicted):
        raise InputError("truth and predicted differ in length")
    pairs = [(t, p) for t, p in zip(truth, predicted, strict=True) if t is not None]
    if not pairs:
        return math.nan
    return sum(t == p for t, p in pairs) / len(pairs)


def token_freshness_score(true_old: npt.ArrayLike, predicted_old: npt.ArrayLike) -> float:
    """TF: fraction of tokens labelled correctly fresh/old (``nan`` for no tokens)."""
    t = np.asarray(true_old, dtype=bool)
    p = np.asarray(predicted_old, dtype=bool)
    if t.shape != p.shape:
        raise InputError("truth and predicted token labels differ in shape")
    return float(np.mean(t == p)) if t.size else math.nan


def selected_shingle_ratio(selected: int, total: int) -> float:
    """ssr: selected shingles / all shingles (``nan`` when there are none)."""
    return selected / total if total else math.nan
