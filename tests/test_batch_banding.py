"""Candidate generation: LSH parameters, bucket pairs vs brute force, shard invariance,
the SimHash pigeonhole guarantee, and the whole-partition signer vs per-document signing."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.batch.banding import (
    band_keys_bottomk,
    band_keys_simhash,
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


@settings(max_examples=100, deadline=None)
@given(
    st.integers(0, 2**64 - 1),
    st.lists(st.integers(0, 63), max_size=3, unique=True),
    st.integers(0, 6),
)
def test_simhash_blocks_pigeonhole(value: int, flips: list[int], max_distance: int) -> None:
    other = value
    for bit in flips[:max_distance]:
        other ^= 1 << bit
    keys = band_keys_simhash(np.array([value, other], dtype=np.uint64), max_distance)
    assert keys.shape == (2, max_distance + 1)
    assert np.any(keys[0] == keys[1])  # distance <= max_distance: one block agrees


def test_bottomk_keys_mask_unused_slots() -> None:
    values = np.array([[5, 9, 0], [5, 0, 0]], dtype=np.uint64)
    keys = band_keys_bottomk(values, np.array([2, 1]))
    assert keys[0, 0] == keys[1, 0] != 0
    assert keys[0, 2] == keys[1, 1] == keys[1, 2] == 0


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


def test_partition_shingles_equal_per_document_sets(reuters_docs: list[dict[str, Any]]) -> None:
    texts = _texts(reuters_docs)
    for width in (1, 4, 7):
        cfg = ShingleSetConfig(width=width, text=TextConfig())
        flat, offsets = unique_rows(*partition_shingles(texts, cfg.text, width))
        for i, text in enumerate(texts):
            assert np.array_equal(flat[offsets[i] : offsets[i + 1]], shingle_hashes(text, cfg))
    # The separator fallback path: every text ASCII, one containing the separator word.
    ascii_texts = [t for t in texts if t.isascii()]
    flat, offsets = unique_rows(*partition_shingles(ascii_texts, TextConfig(), 4))
    cfg = ShingleSetConfig(width=4)
    for i, text in enumerate(ascii_texts):
        assert np.array_equal(flat[offsets[i] : offsets[i + 1]], shingle_hashes(text, cfg))


def test_minhash_matrix_is_byte_identical_to_sign(reuters_docs: list[dict[str, Any]]) -> None:
    texts = _texts(reuters_docs)
    values, lengths = minhash_matrix(*partition_shingles(texts, TextConfig(), 4), 128, 1)
    for i, text in enumerate(texts):
        ref = sign(text, "minhash", num_perm=128, width=4, method="permutations", seed=1)
        if len(ref) == 0:
            assert lengths[i] == 0
        else:
            assert lengths[i] == 128
            assert values[i].tobytes() == ref.values.tobytes()
