"""MinHash: estimates inside a statistical band on real Reuters pairs, for both methods."""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.errors import ConfigError
from neardup.evaluation.synth import perturb_words
from neardup.sketch import minhash as mh
from neardup.sketch import sign
from neardup.sketch.minhash import MinHashConfig, estimate_jaccard, minhash_values
from neardup.sketch.shingleset import shingle_hashes

Pair = tuple[np.ndarray, np.ndarray, float]


def jaccard(a: np.ndarray, b: np.ndarray) -> float:
    sa, sb = set(a.tolist()), set(b.tolist())
    return len(sa & sb) / len(sa | sb) if sa | sb else 1.0


@pytest.fixture(scope="module")
def reuters_pairs(reuters_docs: list[dict[str, Any]]) -> list[Pair]:
    """Natural near-duplicate pairs of the wire plus edited copies, with exact Jaccard."""
    docs = [d["text"] for d in reuters_docs if d["text"].strip()]
    sets = [shingle_hashes(t) for t in docs]
    postings: dict[int, list[int]] = defaultdict(list)
    for i, s in enumerate(sets):
        for v in s.tolist():
            postings[v].append(i)
    shared: Counter[tuple[int, int]] = Counter()
    for ids in postings.values():
        if 1 < len(ids) <= 6:
            for x in range(len(ids)):
                for y in range(x + 1, len(ids)):
                    shared[(ids[x], ids[y])] += 1
    natural = [
        (sets[i], sets[j], jac)
        for (i, j), c in shared.items()
        if c >= 8 and 0.1 <= (jac := jaccard(sets[i], sets[j])) < 1.0
    ]
    rng = random.Random(7)
    edited = []
    for k, i in enumerate(rng.sample(range(len(docs)), 150)):
        b = shingle_hashes(perturb_words(docs[i], (0.03, 0.1, 0.3)[k % 3], rng))
        if sets[i].size and b.size:
            edited.append((sets[i], b, jaccard(sets[i], b)))
    from conftest import data_path, read_jsonl_gz

    index = {d["id"]: n for n, d in enumerate(d for d in reuters_docs if d["text"].strip())}
    labelled = []
    for group in read_jsonl_gz(data_path("reuters21578", "labels_derived_exact_dups.jsonl.gz")):
        ids = [index[i] for i in group["ids"] if i in index]
        if len(ids) >= 2:
            a, b = sets[ids[0]], sets[ids[1]]
            labelled.append((a, b, jaccard(a, b)))
    assert len(natural) >= 50, "expected natural near-duplicates among Reuters articles"
    assert len(labelled) >= 10
    return natural[:250] + edited + labelled


@pytest.mark.parametrize("method", ["oph", "permutations"])
def test_estimates_inside_statistical_band(reuters_pairs: list[Pair], method: str) -> None:
    """|est - J| <= 4 standard errors sqrt(J(1-J)/k) (+1/k for J at the ends), and no bias."""
    num_perm = 128
    errors = []
    outside = 0
    for a, b, jac in reuters_pairs:
        ma = minhash_values(a, num_perm, method, 1)
        mb = minhash_values(b, num_perm, method, 1)
        est = float(np.count_nonzero(ma == mb)) / num_perm
        band = 4 * np.sqrt(jac * (1 - jac) / num_perm) + 1 / num_perm
        outside += abs(est - jac) > band
        errors.append(est - jac)
    # 4 sigma: ~6e-5 expected outside per pair; allow one in case of a heavy tail.
    assert outside <= 1, f"{outside} of {len(reuters_pairs)} estimates outside the band"
    mean_error = float(np.mean(errors))
    standard_error = float(np.std(errors)) / np.sqrt(len(errors))
    assert abs(mean_error) <= 4 * standard_error + 1e-3
    rmse = float(np.sqrt(np.mean(np.square(errors))))
    theory = float(np.sqrt(np.mean([j * (1 - j) / num_perm for _, _, j in reuters_pairs])))
    assert rmse <= 1.25 * theory


def test_identical_sets_estimate_one_and_disjoint_zero() -> None:
    rng = np.random.default_rng(3)
    a = rng.integers(0, 2**63, 300, dtype=np.uint64)
    b = rng.integers(0, 2**63, 300, dtype=np.uint64)
    for method in ("oph", "permutations"):
        ma = minhash_values(a, 128, method)
        assert np.array_equal(ma, minhash_values(a[::-1].copy(), 128, method))  # order-free
        assert np.array_equal(ma, minhash_values(np.concatenate([a, a]), 128, method))  # dups
        assert np.count_nonzero(ma == minhash_values(b, 128, method)) == 0


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 400), st.sampled_from([8, 64, 128, 256, 2048]), st.integers(0, 2**32))
def test_densification_table_equals_probing(n: int, num_perm: int, seed: int) -> None:
    """The cached first-hit table picks exactly the bins the probing loop picks."""
    rng = np.random.default_rng(seed)
    shingles = rng.integers(0, 2**64, n, dtype=np.uint64, endpoint=False)
    g = mh.mix64(shingles ^ mh._oph_key(seed))
    idx = (((g >> np.uint64(32)) * np.uint64(num_perm)) >> np.uint64(32)).astype(np.intp)
    values = np.full(num_perm, np.iinfo(np.uint64).max, dtype=np.uint64)
    np.minimum.at(values, idx, g)
    filled = np.zeros(num_perm, dtype=bool)
    filled[idx] = True
    dense = mh._densify(values, filled, seed)
    probed = values.copy()
    left = mh._densify_probing(values, filled, probed, np.flatnonzero(~filled), seed)
    assert left.size == 0
    assert np.array_equal(dense, probed)
    assert np.all(np.isin(dense, values[filled]))  # every value comes from a non-empty bin


def test_oph_empty_bins_copy_from_non_empty_bins() -> None:
    few = np.array([1, 2, 3], dtype=np.uint64)
    values = minhash_values(few, 128, "oph")
    assert values.shape == (128,)
    assert len(set(values.tolist())) <= 3


def test_minhash_values_validation() -> None:
    with pytest.raises(ConfigError):
        minhash_values(np.zeros((2, 2), dtype=np.uint64))
    with pytest.raises(ConfigError):
        minhash_values(np.zeros(2, dtype=np.uint64), method="nope")
    assert minhash_values(np.empty(0, dtype=np.uint64)).shape == (0,)


def test_big_sets_are_processed_in_bounded_blocks() -> None:
    rng = np.random.default_rng(5)
    big = rng.integers(0, 2**63, 20_000, dtype=np.uint64)
    whole = minhash_values(big, 64, "permutations")
    assert np.array_equal(whole, np.minimum(
        minhash_values(big[:9000], 64, "permutations"),
        minhash_values(big[9000:], 64, "permutations"),
    ))  # fmt: skip


def test_sign_and_estimate_on_edited_copy(reuters_docs: list[dict[str, Any]]) -> None:
    text = next(d["text"] for d in reuters_docs if len(d["text"]) > 2000)
    copy = perturb_words(text, 0.05, random.Random(1))
    exact = jaccard(shingle_hashes(text), shingle_hashes(copy))
    for method in ("oph", "permutations"):
        cfg = MinHashConfig(method=method, num_perm=256)
        est = estimate_jaccard(sign(text, "minhash", config=cfg), sign(copy, "minhash", config=cfg))
        assert abs(est - exact) <= 4 * np.sqrt(exact * (1 - exact) / 256) + 1 / 256


def test_spotsigs_minhash_estimates_spotsig_jaccard(reuters_docs: list[dict[str, Any]]) -> None:
    from neardup.sketch.shingleset import SpotSigsConfig, spotsig_hashes

    spot = SpotSigsConfig()
    cfg = MinHashConfig(spotsigs=spot, num_perm=256)
    text = next(d["text"] for d in reuters_docs if len(d["text"]) > 3000)
    copy = perturb_words(text, 0.1, random.Random(2))
    exact = jaccard(spotsig_hashes(text, spot), spotsig_hashes(copy, spot))
    est = estimate_jaccard(sign(text, "minhash", config=cfg), sign(copy, "minhash", config=cfg))
    assert abs(est - exact) <= 4 * np.sqrt(exact * (1 - exact) / 256) + 1 / 256
