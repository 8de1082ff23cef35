"""Pair scorers of neardup.evaluation.methods against brute-force definitions."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from neardup.errors import ConfigError, NotFoundError
from neardup.evaluation.methods import (
    available_methods,
    get_method,
    lcs_ratio,
    lcs_tokens,
    score_pairs,
)
from neardup.sketch import sign

A = "The central bank raised rates by half a point on Tuesday. Markets fell sharply."
B = "The central bank raised rates by half a point on Tuesday. Markets fell sharply at noon."


def _ref_lcs_tokens(a: tuple[str, ...], b: tuple[str, ...]) -> int:
    """Longest common run of tokens by the quadratic dynamic programme."""
    best = 0
    prev = [0] * (len(b) + 1)
    for i in range(1, len(a) + 1):
        cur = [0] * (len(b) + 1)
        for j in range(1, len(b) + 1):
            if a[i - 1] == b[j - 1]:
                cur[j] = prev[j - 1] + 1
                best = max(best, cur[j])
        prev = cur
    return best


def test_every_method_scores_identical_texts_one_and_stays_in_range(
    reuters_docs: list[dict[str, Any]],
) -> None:
    texts = [d["text"] for d in reuters_docs[:40] if len(d["text"]) > 300][:6]
    names = available_methods()
    assert {"shingles", "minhash", "sentences"} <= set(names)
    for name in names:
        m = get_method(name)
        for t in texts[:3]:
            assert m.score(t, t) == pytest.approx(1.0)
        for a, b in itertools.pairwise(texts):
            assert 0.0 <= m.score(a, b) <= 1.0


def test_shingles_is_exact_jaccard_of_the_shingle_sets() -> None:
    sa = set(sign(A, "shingles").values.tolist())
    sb = set(sign(B, "shingles").values.tolist())
    assert get_method("shingles").score(A, B) == pytest.approx(len(sa & sb) / len(sa | sb))


def test_lcs_ratio_matches_dynamic_programme(reuters_docs: list[dict[str, Any]]) -> None:
    docs = [d["text"] for d in reuters_docs[:30] if d["text"]][:8]
    for a, b in [
        (A, B),
        *itertools.pairwise(docs),
        (docs[0], docs[0][: len(docs[0]) // 2]),
    ]:
        ta, tb = lcs_tokens(a), lcs_tokens(b)
        expected = _ref_lcs_tokens(ta, tb) / max(len(ta), len(tb))
        assert lcs_ratio(a, b) == pytest.approx(expected)
    # Case, spacing and line breaks do not cut the common passage.
    assert lcs_ratio("Net profit ROSE\n  sharply.", "net profit rose sharply") == 1.0


def test_lcs_verification_is_gated_by_the_candidate_threshold() -> None:
    verified = get_method("shingles+lcs")
    base = get_method("shingles")
    far = "Completely different words about weather in the mountains this winter season."
    assert base.score(A, far) < base.default_threshold
    assert verified.score(A, far) == 0.0
    assert verified.score(A, B) == pytest.approx(lcs_ratio(A, B))
    loose = get_method("shingles+lcs", candidate=0.0)
    assert loose.score(A, far) == pytest.approx(lcs_ratio(A, far))


def test_simhash_score_is_one_minus_normalised_hamming() -> None:
    from neardup.sketch.simhash import hamming_distance

    m = get_method("simhash")
    d = hamming_distance(sign(A, "simhash"), sign(B, "simhash"))
    assert m.score(A, B) == pytest.approx(1.0 - d / 64)


def test_score_pairs_and_errors() -> None:
    m = get_method("minhash")
    texts = {"a": A, "b": B}
    cache: dict[str, Any] = {}
    s = score_pairs(m, [("a", "b"), ("b", "a"), ("a", "a")], texts, cache)
    assert s[0] == s[1] and s[2] == 1.0 and set(cache) == {"a", "b"}
    with pytest.raises(NotFoundError):
        score_pairs(m, [("a", "zz")], texts)
    with pytest.raises(ConfigError):
        get_method("nope")
    with pytest.raises(ConfigError):
        get_method("shingles+xyz")


def test_datasketch_lsh_matches_a_real_minhashlsh_index(reuters_docs: list[dict[str, Any]]) -> None:
    datasketch = pytest.importorskip("datasketch")
    m = get_method("datasketch-lsh")
    base = get_method("datasketch")
    texts = {d["id"]: d["text"] for d in reuters_docs[:400] if len(d["text"]) > 200}
    ids = sorted(texts)[:150]
    # Near copies so that some pairs are candidates: every tenth text with its tail cut.
    for i in ids[::10]:
        texts[i + "~cut"] = texts[i][: int(len(texts[i]) * 0.8)]
    ids = sorted(texts)
    feats = {i: m.prepare(texts[i]) for i in ids}
    lsh = datasketch.MinHashLSH(threshold=0.5, num_perm=128)
    for i in ids:
        lsh.insert(i, feats[i])
    candidates = 0
    for a in ids[:60]:
        found = set(lsh.query(feats[a]))
        for b in ids:
            score = m.compare(feats[a], feats[b])
            assert (score > 0) == (b in found) or base.compare(feats[a], feats[b]) == 0.0
            if b in found:
                assert score == pytest.approx(base.compare(feats[a], feats[b]))
                candidates += a != b
    assert candidates >= 3
