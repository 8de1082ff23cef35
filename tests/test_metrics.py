"""Metrics against brute-force reference implementations written from the definitions."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.errors import InputError
from neardup.evaluation.metrics import (
    adjusted_rand_index,
    average_precision,
    bcubed,
    dominant_origin_score,
    pr_curve,
    precision_recall_f1,
    roc_auc,
    roc_curve,
    selected_shingle_ratio,
    threshold_sweep,
    token_freshness_score,
)

# --- reference implementations (plain loops, straight from the definitions) ---------------


def ref_prf(scores: list[float], labels: list[bool], t: float) -> tuple[float, float, float]:
    tp = sum(1 for s, y in zip(scores, labels, strict=True) if s >= t and y)
    fp = sum(1 for s, y in zip(scores, labels, strict=True) if s >= t and not y)
    fn = sum(1 for s, y in zip(scores, labels, strict=True) if s < t and y)
    p = tp / (tp + fp) if tp + fp else 1.0
    r = tp / (tp + fn) if tp + fn else 1.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return p, r, f


def ref_auc(scores: list[float], labels: list[bool]) -> float:
    pos = [s for s, y in zip(scores, labels, strict=True) if y]
    neg = [s for s, y in zip(scores, labels, strict=True) if not y]
    wins = sum(1.0 if a > b else 0.5 if a == b else 0.0 for a in pos for b in neg)
    return wins / (len(pos) * len(neg))


def ref_ari(a: list[int], b: list[int]) -> float:
    """ARI from pair counting over all item pairs (Hubert & Arabie's formula)."""
    n = len(a)
    pairs = list(itertools.combinations(range(n), 2))
    same_a = [a[i] == a[j] for i, j in pairs]
    same_b = [b[i] == b[j] for i, j in pairs]
    both = sum(x and y for x, y in zip(same_a, same_b, strict=True))
    sa, sb, total = sum(same_a), sum(same_b), len(pairs)
    expected = sa * sb / total if total else 0.0
    maximum = (sa + sb) / 2
    if maximum == expected:
        return 1.0
    return (both - expected) / (maximum - expected)


def ref_bcubed(truth: list[int], pred: list[int]) -> tuple[float, float]:
    n = len(truth)
    p = r = 0.0
    for i in range(n):
        cluster = [j for j in range(n) if pred[j] == pred[i]]
        klass = [j for j in range(n) if truth[j] == truth[i]]
        both = [j for j in cluster if truth[j] == truth[i]]
        p += len(both) / len(cluster)
        r += len(both) / len(klass)
    return p / n, r / n


scores_labels = st.integers(min_value=1, max_value=40).flatmap(
    lambda n: st.tuples(
        st.lists(
            st.sampled_from([0.0, 0.1, 0.25, 0.5, 0.5, 0.75, 0.9, 1.0]), min_size=n, max_size=n
        ),
        st.lists(st.booleans(), min_size=n, max_size=n),
    )
)
clusterings = st.integers(min_value=1, max_value=25).flatmap(
    lambda n: st.tuples(
        st.lists(st.integers(0, 5), min_size=n, max_size=n),
        st.lists(st.integers(0, 5), min_size=n, max_size=n),
    )
)


# --- hand-checkable cases ----------------------------------------------------------------------


def test_prf_hand_case() -> None:
    scores = [0.9, 0.8, 0.7, 0.2, 0.1]
    labels = [True, False, True, True, False]
    m = precision_recall_f1(scores, labels, 0.5)
    assert (m.tp, m.fp, m.fn, m.tn) == (2, 1, 1, 1)
    assert m.precision == pytest.approx(2 / 3)
    assert m.recall == pytest.approx(2 / 3)
    assert m.f1 == pytest.approx(2 / 3)


def test_auc_hand_cases() -> None:
    assert roc_auc([0.1, 0.4, 0.35, 0.8], [0, 0, 1, 1]) == pytest.approx(0.75)
    assert roc_auc([0.5, 0.5], [0, 1]) == pytest.approx(0.5)  # a tie counts one half
    assert roc_auc([1, 2, 3], [0, 0, 1]) == 1.0
    assert math.isnan(roc_auc([1, 2], [1, 1]))


def test_ari_hand_cases() -> None:
    assert adjusted_rand_index([0, 0, 1, 1], [5, 5, 7, 7]) == 1.0  # names do not matter
    assert adjusted_rand_index([0, 0, 1, 1], [0, 1, 0, 1]) == pytest.approx(-0.5)
    assert adjusted_rand_index(["a", "a", "b"], ["x", "x", "x"]) == pytest.approx(0.0)


def test_bcubed_hand_case() -> None:
    # Gold {1,2,3},{4,5}; predicted {1,2},{3,4,5}.
    b = bcubed([0, 0, 0, 1, 1], [0, 0, 1, 1, 1])
    # precision: items 1,2 -> 1; items 3,4,5 -> 1/3, 2/3, 2/3 => (2 + 5/3)/5
    assert b.precision == pytest.approx((2 + 5 / 3) / 5)
    # recall: items 1,2 -> 2/3; item 3 -> 1/3; items 4,5 -> 1 => (4/3 + 1/3 + 2)/5
    assert b.recall == pytest.approx((4 / 3 + 1 / 3 + 2) / 5)


def test_empty_and_bad_input() -> None:
    m = precision_recall_f1([], [], 0.5)
    assert (m.precision, m.recall, m.f1) == (1.0, 1.0, 1.0)
    with pytest.raises(InputError):
        precision_recall_f1([0.1, 0.2], [1], 0.5)
    with pytest.raises(InputError):
        precision_recall_f1([float("nan")], [1], 0.5)
    with pytest.raises(InputError):
        roc_auc([0.1, 0.2], [0, 2])
    with pytest.raises(InputError):
        bcubed([1, 2], [1])
    assert adjusted_rand_index([], []) == 1.0


# --- properties against the references ---------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(scores_labels)
def test_sweep_equals_pointwise(data: tuple[list[float], list[bool]]) -> None:
    scores, labels = data
    sweep = threshold_sweep(scores, labels)
    assert list(sweep.thresholds) == sorted(set(scores), reverse=True)
    for i, t in enumerate(sweep.thresholds):
        p, r, f = ref_prf(scores, labels, float(t))
        assert sweep.precision[i] == pytest.approx(p)
        assert sweep.recall[i] == pytest.approx(r)
        assert sweep.f1[i] == pytest.approx(f)
        single = precision_recall_f1(scores, labels, float(t))
        assert (single.precision, single.recall) == pytest.approx((p, r))
    best = sweep.best()
    assert best.f1 == pytest.approx(max(ref_prf(scores, labels, t)[2] for t in set(scores)))


@settings(max_examples=150, deadline=None)
@given(scores_labels)
def test_auc_equals_pair_counting(data: tuple[list[float], list[bool]]) -> None:
    scores, labels = data
    if all(labels) or not any(labels):
        assert math.isnan(roc_auc(scores, labels))
        return
    auc = roc_auc(scores, labels)
    assert auc == pytest.approx(ref_auc(scores, labels))
    # The trapezoid area under the ROC curve is the same number.
    fpr, tpr, _ = roc_curve(scores, labels)
    assert float(np.sum(np.diff(fpr) * (tpr[1:] + tpr[:-1]) / 2)) == pytest.approx(auc)


@settings(max_examples=100, deadline=None)
@given(scores_labels)
def test_pr_curve_and_average_precision(data: tuple[list[float], list[bool]]) -> None:
    scores, labels = data
    precision, recall, thresholds = pr_curve(scores, labels)
    assert precision[0] == 1.0 and recall[0] == 0.0 and math.isinf(thresholds[0])
    assert np.all(np.diff(recall) >= 0)
    if any(labels):
        assert recall[-1] == pytest.approx(1.0)
        # AP by its definition: mean over positives of the precision at that positive's rank
        # cut-off (with ties, the cut-off includes the whole tie group).
        ref = 0.0
        pos = [s for s, y in zip(scores, labels, strict=True) if y]
        for s in pos:
            ref += ref_prf(scores, labels, s)[0]
        assert average_precision(scores, labels) == pytest.approx(ref / len(pos))


@settings(max_examples=150, deadline=None)
@given(clusterings)
def test_ari_and_bcubed_equal_references(data: tuple[list[int], list[int]]) -> None:
    truth, pred = data
    assert adjusted_rand_index(truth, pred) == pytest.approx(ref_ari(truth, pred))
    b = bcubed(truth, pred)
    p, r = ref_bcubed(truth, pred)
    assert (b.precision, b.recall) == pytest.approx((p, r))
    assert b.f1 == pytest.approx(2 * p * r / (p + r))
    # Symmetry: swapping the roles swaps precision and recall; ARI is symmetric.
    swapped = bcubed(pred, truth)
    assert (swapped.precision, swapped.recall) == pytest.approx((r, p))
    assert adjusted_rand_index(pred, truth) == pytest.approx(adjusted_rand_index(truth, pred))


def test_do_tf_ssr_by_hand() -> None:
    # 4 documents; the second has no dominant origin and is not a query document
    assert dominant_origin_score([3, None, 5, 7], [3, 1, 4, 7]) == pytest.approx(2 / 3)
    assert math.isnan(dominant_origin_score([None], [1]))
    with pytest.raises(InputError):
        dominant_origin_score([1], [1, 2])
    assert token_freshness_score([True, False, False, True], [True, True, False, False]) == 0.5
    assert token_freshness_score(np.zeros(3, bool), np.zeros(3, bool)) == 1.0
    assert math.isnan(token_freshness_score([], []))
    assert selected_shingle_ratio(17, 100) == 0.17
    assert math.isnan(selected_shingle_ratio(0, 0))
