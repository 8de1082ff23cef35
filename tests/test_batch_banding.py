"""Candidate generation: LSH parameters, bucket pairs vs brute force, shard invariance,
and the whole-partition signer vs per-document signing."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup._jit import forced
from neardup.batch.banding import (
    bucket_pairs,
    lsh_bands,
    shard_of,
    unique_pairs,
)
from neardup.batch.fastsign import minhash_matrix, partition_shingles, unique_rows
from neardup.errors import ConfigError
from neardup.sketch import sign
from neardup.sketch.shingleset import ShingleSetConfig, shingle_hashes
from neardup.text import TextConfig


@pytest.mark.parametrize("threshold", [0.3, 0.5, 0.7, 0.8, 0.9])
def test_lsh_bands_match_datasketch(threshold: float) -> None:
    lsh = pytest.importorskip("datasketch.lsh")
    assert lsh_bands(threshold, 128) == lsh._optimal_param(threshold, 128, 0.5, 0.5)


def test_lsh_bands_rejects_bad_threshold() -> None:
    with pytest.raises(ConfigError):
        lsh_bands(1.0, 128)


def _brute_pairs(keys: np.ndarray, docs: np.ndarray) -> set[tuple[int, int]]:
    out = set()
    pairs = zip(keys.tolist(), docs.tolist(), strict=True)
    for (k1, d1), (k2, d2) in itertools.combinations(pairs, 2):
        if k1 == k2 and k1 != 0 and d1 != d2:
            out.add((min(d1, d2), max(d1, d2)))
    return out


key_sets = st.integers(1, 80).flatmap(
    lambda n: st.tuples(
        st.lists(st.integers(0, 6), min_size=n, max_size=n),
        st.lists(st.integers(0, 30), min_size=n, max_size=n),
    )
)


@settings(max_examples=150, deadline=None)
@given(key_sets, st.integers(1, 5))
def test_bucket_pairs_brute_force_and_shard_invariance(data: Any, shards: int) -> None:
    raw_keys, raw_docs = data
    keys = np.array(raw_keys, dtype=np.uint64)
    docs = np.array(raw_docs, dtype=np.int64)
    expected = _brute_pairs(keys, docs)
    full = bucket_pairs(keys, docs, max_bucket=1000)
    assert {tuple(p) for p in full.tolist()} == expected
    assert np.array_equal(full, unique_pairs(full))  # sorted and distinct
    where = shard_of(keys, shards)
    parts = [bucket_pairs(keys[where == s], docs[where == s], 1000) for s in range(shards)]
    assert np.array_equal(unique_pairs(np.concatenate(parts)), full)


def test_large_buckets_are_bounded_but_connected() -> None:
    keys = np.full(500, 7, dtype=np.uint64)
    docs = np.arange(500, dtype=np.int64)
    pairs = bucket_pairs(keys, docs, max_bucket=3)
    assert pairs.shape[0] == 3 * 500 - 6  # each member with its next 3, not 500*499/2
    assert np.all(pairs[:, 1] - pairs[:, 0] <= 3)


def _texts(reuters_docs: list[dict[str, Any]]) -> list[str]:
    texts = [d["text"] for d in reuters_docs[:400]]
    return [
        "Café naïve résumé: prices rose 3.5% in Zürich.",
        *texts,
        "",
        "one",
        "two words",
        "三 个 中文 文本",
        "qxzvneardupdocumentseparatorqxzv is inside this text",
        "Москва заявила о росте цен",
    ]


@pytest.mark.parametrize("compiled", [True, False])
def test_partition_shingles_equal_per_document_sets(
    reuters_docs: list[dict[str, Any]], compiled: bool
) -> None:
    """Joined (ASCII and Unicode texts together, typographic punctuation included), and the
    per-document fallback when a text holds the separator word; with the compiled kernels
    and with the small-input numpy paths."""
    texts = _texts(reuters_docs)
    curly = [t.replace("'", "’").replace('"', "“") for t in texts[1:60]]
    joined = [t for t in texts if "qxzv" not in t] + curly
    with forced(compiled):
        for batch in (joined, texts):
            for width in (1, 4, 7):
                cfg = ShingleSetConfig(width=width, text=TextConfig())
                flat, offsets = unique_rows(*partition_shingles(batch, cfg.text, width))
                for i, text in enumerate(batch):
                    got = flat[offsets[i] : offsets[i + 1]]
                    assert np.array_equal(got, shingle_hashes(text, cfg))


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.lists(st.integers(0, 2**64 - 1), max_size=12), max_size=12),
    st.integers(1, 40),
)
def test_small_input_paths_equal_the_kernels(rows: list[list[int]], num_perm: int) -> None:
    """unique_rows, minhash_matrix and the bucket sort without numba give the kernels'
    results."""
    flat = np.array([v for row in rows for v in row], dtype=np.uint64)
    offsets = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum([len(row) for row in rows], out=offsets[1:])
    keys = flat % np.uint64(7) + np.uint64(1)  # repeated keys: real buckets
    docs = np.repeat(np.arange(len(rows), dtype=np.int64), np.diff(offsets))
    results = []
    for compiled in (True, False):
        with forced(compiled):
            sets = unique_rows(flat, offsets)
            values, lengths = minhash_matrix(*sets, num_perm, 3)
            results.append((sets, values[lengths > 0], bucket_pairs(keys, docs, 3)))
    (sets_a, values_a, pairs_a), (sets_b, values_b, pairs_b) = results
    assert np.array_equal(sets_a[0], sets_b[0]) and np.array_equal(sets_a[1], sets_b[1])
    assert np.array_equal(values_a, values_b)
    assert np.array_equal(pairs_a, pairs_b)


@pytest.mark.parametrize("compiled", [True, False])
def test_minhash_matrix_is_byte_identical_to_sign(
    reuters_docs: list[dict[str, Any]], compiled: bool
) -> None:
    texts = _texts(reuters_docs)
    with forced(compiled):
        values, lengths = minhash_matrix(*partition_shingles(texts, TextConfig(), 4), 128, 1)
    for i, text in enumerate(texts):
        ref = sign(text, "minhash", num_perm=128, width=4, method="permutations", seed=1)
        if len(ref) == 0:
            assert lengths[i] == 0
        else:
            assert lengths[i] == 128
            assert values[i].tobytes() == ref.values.tobytes()


def test_default_bands_weight_false_negatives() -> None:
    """The batch default: the datasketch criterion with false negatives weighted 9 to 1.
    At 0.5 that is 32 x 4; at every threshold it finds a pair at the threshold at least as
    often as the equal weights do (more bands of fewer rows, or the same)."""
    from neardup.batch.banding import FALSE_NEGATIVE_WEIGHT, default_bands

    assert FALSE_NEGATIVE_WEIGHT == 0.9
    assert default_bands(0.5, 128) == (32, 4)
    for threshold in (0.3, 0.5, 0.7, 0.8, 0.9):
        bands, rows = default_bands(threshold, 128)
        equal_b, equal_r = lsh_bands(threshold, 128)
        assert bands * rows <= 128
        found = 1 - (1 - threshold**rows) ** bands
        assert found >= 1 - (1 - threshold**equal_r) ** equal_b
    lsh = pytest.importorskip("datasketch.lsh")
    assert default_bands(0.7, 128) == lsh._optimal_param(0.7, 128, 0.1, 0.9)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from([0, 1, 7, 2**31, 2**32 - 1, 2**32, 2**40, 2**62]),
            st.integers(0, 40),
        ),
        max_size=60,
    )
)
def test_unique_pairs_is_the_sorted_set_of_rows(rows: list[tuple[int, int]]) -> None:
    """Both paths (32-bit ends packed in one word, wider ends lexsorted) against Python's
    sorted set."""
    pairs = np.array(
        [(a + b, a + 2 * b) for a, b in rows] or np.empty((0, 2)), dtype=np.int64
    ).reshape(-1, 2)
    got = unique_pairs(pairs)
    assert got.dtype == np.int64 and got.shape[1] == 2
    assert [tuple(r) for r in got.tolist()] == sorted({tuple(r) for r in pairs.tolist()})
