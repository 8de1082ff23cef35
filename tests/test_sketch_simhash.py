"""SimHash: against a pure-Python oracle, Hamming distance, and behaviour on Reuters copies."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.errors import ConfigError
from neardup.shingles import mix64
from neardup.sketch import Signature, build_idf_table, hamming_distance, sign
from neardup.sketch.idf import IDF_SCALE, feature_hashes
from neardup.sketch.simhash import SimHashConfig, simhash_words

MASK = (1 << 64) - 1


def oracle(features: list[int], weights: list[int], bits: int) -> list[int]:
    """Charikar's SimHash written out bit by bit with Python integers."""

    def word(hashes: list[int]) -> int:
        out = 0
        for j in range(64):
            total = sum(w if (h >> j) & 1 else -w for h, w in zip(hashes, weights, strict=True))
            if total > 0:
                out |= 1 << j
        return out

    low = word(features)
    if bits == 64:
        return [low]
    high_hashes = mix64(np.array(features, dtype=np.uint64) ^ np.uint64(0x53494D4841534832))
    return [word(high_hashes.tolist()), low]


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, MASK), st.integers(1, 5000)), min_size=1, max_size=40),
    st.sampled_from([64, 128]),
)
def test_simhash_words_match_oracle(items: list[tuple[int, int]], bits: int) -> None:
    feats = list(dict(items).items())
    hashes = np.array([f for f, _ in feats], dtype=np.uint64)
    weights = np.array([w for _, w in feats], dtype=np.int64)
    assert simhash_words(hashes, weights, bits).tolist() == oracle(
        [f for f, _ in feats], [w for _, w in feats], bits
    )


def test_sign_simhash_matches_oracle_on_reuters(reuters_docs: list[dict[str, Any]]) -> None:
    texts = [d["text"] for d in reuters_docs[:300] if d["text"].strip()]
    idf = build_idf_table(texts)
    cfg = SimHashConfig(idf=idf)
    for text in texts[:40]:
        counts = Counter(feature_hashes(text, cfg.text, 1).tolist())
        feats = sorted(counts)
        w = idf.weights_of(np.array(feats, dtype=np.uint64)).tolist()
        weights = [counts[f] * wi for f, wi in zip(feats, w, strict=True)]
        assert sign(text, "simhash", config=cfg).values.tolist() == oracle(feats, weights, 64)
        plain = [counts[f] * IDF_SCALE for f in feats]
        assert sign(text, "simhash").values.tolist() == oracle(feats, plain, 64)


@settings(max_examples=100, deadline=None)
@given(st.integers(0, MASK), st.integers(0, MASK))
def test_hamming_distance_is_popcount(a: int, b: int) -> None:
    sa = Signature("simhash/v1:test", np.array([a], dtype=np.uint64))
    sb = Signature("simhash/v1:test", np.array([b], dtype=np.uint64))
    assert hamming_distance(sa, sb) == bin(a ^ b).count("1")


def edit(text: str, rate: float, rng: random.Random) -> str:
    words = text.split()
    return " ".join(rng.choice(words) if rng.random() < rate else w for w in words)


def test_copies_are_closer_than_unrelated_articles(reuters_docs: list[dict[str, Any]]) -> None:
    texts = [d["text"] for d in reuters_docs if len(d["text"]) > 1500][:120]
    idf = build_idf_table(d["text"] for d in reuters_docs)
    rng = random.Random(11)
    near, far = [], []
    for i, text in enumerate(texts):
        a = sign(text, "simhash", idf=idf)
        near.append(hamming_distance(a, sign(edit(text, 0.05, rng), "simhash", idf=idf)))
        far.append(hamming_distance(a, sign(texts[(i + 1) % len(texts)], "simhash", idf=idf)))
    assert np.median(near) <= 8 < np.median(far)
    assert np.mean(np.array(near) < np.array(far)) >= 0.95


def test_config_validation() -> None:
    with pytest.raises(ConfigError):
        SimHashConfig(bits=96)
    with pytest.raises(ConfigError):
        SimHashConfig(width=0)
    with pytest.raises(ConfigError):
        SimHashConfig(idf="table.idf")  # type: ignore[arg-type]
    with pytest.raises(ConfigError):
        build_idf_table(["a"], width=0)
    with pytest.raises(ConfigError):
        build_idf_table(["a"], min_df=0)


def test_min_df_prunes_the_table(reuters_docs: list[dict[str, Any]]) -> None:
    texts = [d["text"] for d in reuters_docs[:500]]
    full = build_idf_table(texts)
    pruned = build_idf_table(texts, min_df=2)
    assert 0 < len(pruned) < len(full)
    assert pruned.default_weight == full.default_weight


def test_shingle_features_and_width(reuters_docs: list[dict[str, Any]]) -> None:
    texts = [d["text"] for d in reuters_docs[:200]]
    idf = build_idf_table(texts, width=3)
    cfg = SimHashConfig(idf=idf, width=3)
    assert len(sign(texts[0], "simhash", config=cfg)) == 1
