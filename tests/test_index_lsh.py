"""LSHIndex: band tuning, candidates and scores against brute force, S-curve, persistence."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from neardup.errors import (
    ConfigError,
    ConflictError,
    InputError,
    InputTypeError,
    NotFoundError,
    SchemeMismatchError,
    StoreError,
)
from neardup.index import LSHIndex, LSHIndexConfig, optimal_bands
from neardup.sketch.base import Signature

U64 = np.uint64
SCHEME = "minhash/v1:test"


def random_sigs(n: int, num_perm: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.integers(0, 2**64 - 1, size=(n, num_perm), dtype=U64, endpoint=True)


def partner(base: np.ndarray, similarity: float, rng: np.random.Generator) -> np.ndarray:
    """A signature equal to ``base`` at each position with probability ``similarity``.

    This is exactly the MinHash model: Pr[h(A) = h(B)] = J(A, B) per position.
    """
    fresh = rng.integers(0, 2**64 - 1, size=base.shape, dtype=U64, endpoint=True)
    return np.where(rng.random(base.shape[0]) < similarity, base, fresh)


def brute_candidates(
    sigs: np.ndarray, keys: list[Any], q: np.ndarray, bands: int, rows: int
) -> list[tuple[Any, float]]:
    eq = sigs == q
    n = sigs.shape[0]
    hit = eq[:, : bands * rows].reshape(n, bands, rows).all(axis=2).any(axis=1)
    scores = eq.mean(axis=1)
    out = [(keys[i], float(scores[i])) for i in np.nonzero(hit)[0]]
    return sorted(out, key=lambda ks: (-ks[1], ks[0]))


def sig(values: np.ndarray) -> Signature:
    return Signature(SCHEME, values)


@pytest.mark.parametrize("threshold", [0.3, 0.5, 0.7, 0.8, 0.9])
@pytest.mark.parametrize("num_perm", [64, 128])
def test_optimal_bands_matches_datasketch(threshold: float, num_perm: int) -> None:
    lsh = pytest.importorskip("datasketch.lsh")
    assert optimal_bands(threshold, num_perm) == lsh._optimal_param(threshold, num_perm, 0.5, 0.5)


def test_band_override_and_config_errors() -> None:
    assert LSHIndexConfig(bands=16, rows=8).band_layout == (16, 8)
    assert LSHIndexConfig(threshold=0.9).band_layout == (5, 25)
    for bad in (
        {"bands": 16},
        {"bands": 17, "rows": 8},
        {"threshold": 0.0},
        {"threshold": 1.0},
        {"false_positive_weight": 0.7},
        {"num_perm": 0},
        {"buffer_size": 0},
    ):
        with pytest.raises(ConfigError):
            LSHIndexConfig(**bad)  # type: ignore[arg-type]


def test_candidates_and_scores_equal_brute_force() -> None:
    num_perm = 64
    rng = np.random.default_rng(2)
    bases = random_sigs(300, num_perm, seed=1)
    near = np.array(
        [partner(bases[i % 300], s, rng) for i, s in enumerate(np.linspace(0.3, 1, 900))]
    )
    sigs = np.concatenate([bases, near])
    keys = [f"k{i:04d}" for i in range(sigs.shape[0])]
    index = LSHIndex(num_perm=num_perm, threshold=0.6, buffer_size=128)
    index.add_many(keys[:700], [sig(s) for s in sigs[:700]])
    for i in range(700, sigs.shape[0]):
        index.add(keys[i], sig(sigs[i]))
    queries = [partner(bases[i], 0.8, rng) for i in range(0, 300, 3)]
    got = index.query_many([sig(q) for q in queries])
    for q, result in zip(queries, got, strict=True):
        assert result == brute_candidates(sigs, keys, q, index.bands, index.rows)
    assert got == [index.query(sig(q)) for q in queries]
    for q, result in zip(queries, got, strict=True):
        for min_score in (0.0, 0.5):
            keys_only = index.query_keys(sig(q), min_score=min_score)
            assert sorted(keys_only) == sorted(k for k, s in result if s >= min_score)
            assert len(keys_only) == len(set(keys_only))


def test_more_candidates_than_the_first_scan_holds() -> None:
    """Thousands of candidates (more than a probe's first output buffer), added in bulk
    and one by one: all come back, as brute force finds them."""
    rng = np.random.default_rng(8)
    q = rng.integers(0, 2**63, size=32, dtype=np.uint64)
    sigs = rng.integers(0, 2**63, size=(2_500, 32), dtype=np.uint64)
    sigs[:, :4] = q[:4]  # every row shares the first band with the query
    index = LSHIndex(num_perm=32, bands=8, rows=4, buffer_size=256)
    keys = list(range(sigs.shape[0]))
    index.add_many(keys[:1200], [sig(s) for s in sigs[:1200]])
    for k in keys[1200:]:
        index.add(k, sig(sigs[k]))
    got = index.query(sig(q))
    assert len(got) == sigs.shape[0]
    assert got == brute_candidates(sigs, keys, q, 8, 4)
    # the batch query grows its buffer too, between two queries that fit the first one
    assert index.query_many([sig(sigs[0]), sig(q), sig(sigs[1])])[1] == got
    assert sorted(index.query_keys(sig(q), min_score=0.1)) == keys
    assert sorted(index.query_key_array(sig(q), min_score=0.1).tolist()) == keys
    half = [k for k in keys if k % 2]
    for k in keys:
        if not k % 2:
            index.remove(k)  # compacts once dead rows outnumber live ones
    assert sorted(index.query_key_array(sig(q), min_score=0.1).tolist()) == half
    assert sorted(index.query_keys(sig(q), min_score=0.1)) == half


def test_query_key_array_equals_query_keys() -> None:
    """The int64-array form of ``query_keys`` (the news stream's), rows added in bulk and
    one by one, several ``min_score``; string keys refuse it."""
    rng = np.random.default_rng(4)
    bases = random_sigs(200, 32, seed=5)
    near = np.array([partner(bases[i % 200], s, rng) for i, s in enumerate(np.linspace(0, 1, 600))])
    sigs = np.concatenate([bases, near])
    # Bands of one row (read only past the bands) and of several rows (read in full).
    for threshold, layout in ((0.1, (15, 1)), (0.5, (8, 4))):
        index = LSHIndex(num_perm=32, threshold=threshold, buffer_size=64)
        assert (index.bands, index.rows) == layout
        index.add_many(list(range(500)), [sig(s) for s in sigs[:500]])
        for i in range(500, sigs.shape[0]):
            index.add(i, sig(sigs[i]))
        for q in near[::7]:
            for min_score in (0.0, 0.0625, 0.09375, 0.5, 1.0):
                got = index.query_key_array(sig(q), min_score=min_score).tolist()
                assert len(got) == len(set(got))
                # query scores every band candidate on its own path (count_equal).
                want = sorted(k for k, score in index.query(sig(q)) if score >= min_score)
                assert sorted(got) == want
                assert sorted(index.query_keys(sig(q), min_score=min_score)) == want
    named = LSHIndex(num_perm=32, threshold=0.5)
    named.add("a", sig(bases[0]))
    with pytest.raises(InputTypeError):
        named.query_key_array(sig(bases[0]))


def test_s_curve_recall_matches_theory() -> None:
    num_perm, per_level = 128, 300
    index = LSHIndex(num_perm=num_perm, threshold=0.7)
    b, r = index.bands, index.rows
    rng = np.random.default_rng(4)
    bases = random_sigs(per_level * 5, num_perm, seed=9)
    index.add_many(list(range(bases.shape[0])), bases)
    for level, s in enumerate([0.4, 0.6, 0.7, 0.8, 0.9]):
        ids = range(level * per_level, (level + 1) * per_level)
        queries = np.array([partner(bases[i], s, rng) for i in ids])
        results = index.query_many(queries)
        found = sum(any(k == i for k, _ in res) for i, res in zip(ids, results, strict=True))
        p = 1 - (1 - s**r) ** b
        sigma = math.sqrt(p * (1 - p) / per_level)
        assert abs(found / per_level - p) <= 4.5 * sigma + 0.01, (s, found, p)


def test_min_score_and_limit() -> None:
    rng = np.random.default_rng(5)
    base = random_sigs(1, 128, seed=3)[0]
    sigs = np.array([partner(base, s, rng) for s in (1.0, 0.95, 0.9, 0.85)])
    index = LSHIndex(num_perm=128, bands=32, rows=4)
    index.add_many(["a", "b", "c", "d"], sigs)
    full = index.query(sig(base))
    assert [k for k, _ in full][:1] == ["a"] and full[0][1] == 1.0
    assert index.query(sig(base), limit=2) == full[:2]
    assert all(s >= 0.9 for _, s in index.query(sig(base), min_score=0.9))
    with pytest.raises(ConfigError):
        index.query(sig(base), min_score=1.5)
    with pytest.raises(ConfigError):
        index.query_keys(sig(base), min_score=1.5)
    assert sorted(index.query_keys(sig(base), min_score=0.9)) == sorted(
        k for k, _ in index.query(sig(base), min_score=0.9)
    )
    with pytest.raises(ConfigError):
        index.query(sig(base), limit=0)


def test_add_remove_and_duplicate_policy() -> None:
    sigs = random_sigs(4, 32, seed=8)
    index = LSHIndex(num_perm=32, bands=8, rows=4)
    index.add("a", sig(sigs[0]))
    index.add("a", sig(sigs[0]))  # equal signature: no-op
    assert len(index) == 1
    with pytest.raises(ConflictError):
        index.add("a", sig(sigs[1]))
    with pytest.raises(ConflictError):
        index.add_many(["x", "x"], [sig(sigs[1]), sig(sigs[2])])
    assert "x" not in index
    index.add("b", sig(sigs[0]))
    assert index.query(sig(sigs[0])) == [("a", 1.0), ("b", 1.0)]
    index.remove("a")
    assert index.query(sig(sigs[0])) == [("b", 1.0)]
    assert index.get("b") == sig(sigs[0])
    with pytest.raises(NotFoundError):
        index.remove("a")
    index.add("a", sig(sigs[1]))
    assert index.query(sig(sigs[1])) == [("a", 1.0)]
    assert index.keys() == ["b", "a"]


def test_many_removes_compact_and_stay_correct() -> None:
    sigs = random_sigs(2_000, 32, seed=12)
    keys = list(range(2_000))
    index = LSHIndex(num_perm=32, bands=8, rows=4, buffer_size=64)
    index.add_many(keys, sigs)
    for k in keys:
        if k % 3:
            index.remove(k)
    assert index._nrows < 2_000
    kept = np.arange(0, 2_000, 3)
    for i in range(0, 2_000, 50):
        assert index.query(sig(sigs[i])) == brute_candidates(
            sigs[kept], kept.tolist(), sigs[i], 8, 4
        )


def test_save_load_round_trip(tmp_path: Path) -> None:
    rng = np.random.default_rng(6)
    bases = random_sigs(500, 64, seed=13)
    sigs = np.concatenate([bases, [partner(b, 0.8, rng) for b in bases]])
    keys = [f"doc-{i}-é" for i in range(sigs.shape[0])]
    index = LSHIndex(num_perm=64, threshold=0.5, buffer_size=100)
    index.add_many(keys, [sig(s) for s in sigs])
    index.remove(keys[3])
    queries = [sig(partner(b, 0.7, rng)) for b in bases[:50]]
    before = index.query_many(queries)
    path = tmp_path / "lsh.idx"
    index.save(path)
    loaded = LSHIndex.load(path)
    assert loaded.config == index.config and loaded.scheme_id == SCHEME
    assert loaded.query_many(queries) == before
    with pytest.raises(SchemeMismatchError):
        loaded.query(Signature("minhash/v1:other", sigs[0]))
    index.save(tmp_path / "again.idx")
    assert path.read_bytes() == (tmp_path / "again.idx").read_bytes()
    empty = LSHIndex(num_perm=64)
    empty.save(tmp_path / "empty.idx")
    assert len(LSHIndex.load(tmp_path / "empty.idx")) == 0


def test_damaged_or_foreign_files(tmp_path: Path) -> None:
    index = LSHIndex(num_perm=16, bands=4, rows=4)
    index.add_many(list(range(50)), random_sigs(50, 16, seed=1))
    path = tmp_path / "l.idx"
    index.save(path)
    data = bytearray(path.read_bytes())
    data[-20] ^= 1
    (tmp_path / "bad.idx").write_bytes(bytes(data))
    with pytest.raises(StoreError, match="checksum"):
        LSHIndex.load(tmp_path / "bad.idx")
    from neardup.index import HammingIndex

    with pytest.raises(StoreError):
        HammingIndex.load(path)


def test_bad_input_and_scheme_mismatch() -> None:
    index = LSHIndex(num_perm=16, bands=4, rows=4)
    values = random_sigs(1, 16, seed=2)[0]
    with pytest.raises(InputTypeError):
        index.add("a", values)  # type: ignore[arg-type]
    with pytest.raises(SchemeMismatchError):
        index.add("a", Signature(SCHEME, values[:8]))
    with pytest.raises(SchemeMismatchError):
        index.add("a", Signature(SCHEME, values.astype(np.uint32)))
    with pytest.raises(InputError):
        index.add("a", Signature(SCHEME, np.empty(0, dtype=U64)))
    index.add("a", Signature(SCHEME, values))
    with pytest.raises(SchemeMismatchError):
        index.add("b", Signature("minhash/v1:other", values))
    with pytest.raises(SchemeMismatchError):
        index.query(Signature("minhash/v1:other", values))
    with pytest.raises(InputTypeError):
        index.add(3, Signature(SCHEME, values))  # keys are str here
    with pytest.raises(InputTypeError):
        index.add_many(["b"], values.astype(np.int64)[None, :])
    with pytest.raises(SchemeMismatchError):
        index.add_many(["b"], values[None, :8].copy())
    with pytest.raises(InputError):
        index.add_many(["b", "c"], values[None, :].copy())
    assert len(index) == 1


@pytest.mark.data
def test_real_reuters_minhash(reuters_docs: list[dict[str, Any]]) -> None:
    from neardup.sketch import SCHEMES, sign

    if "minhash" not in SCHEMES:
        pytest.skip("the minhash scheme is not registered yet")
    docs = reuters_docs[:1500]
    signed = [(str(d["id"]), sign(d.get("text", ""), "minhash", num_perm=128)) for d in docs]
    signed = [(k, s) for k, s in signed if len(s)]
    keys = [k for k, _ in signed]
    matrix = np.array([s.values for _, s in signed])
    index = LSHIndex(num_perm=128, threshold=0.5)
    index.add_many(keys, [s for _, s in signed])
    for i in range(0, len(signed), 5):
        got = index.query(signed[i][1])
        assert got == brute_candidates(matrix, keys, matrix[i], index.bands, index.rows)
        assert (keys[i], 1.0) in got


def test_scheme_is_adopted_only_by_a_successful_add() -> None:
    values = random_sigs(1, 16, seed=4)[0]
    index = LSHIndex(num_perm=16, bands=4, rows=4)
    assert index.query(Signature("minhash/v1:x", values)) == []
    with pytest.raises(InputTypeError):
        index.add(None, Signature("minhash/v1:y", values))  # type: ignore[arg-type]
    with pytest.raises(SchemeMismatchError):
        index.add_many(
            ["a", "b"], [Signature("minhash/v1:a", values), Signature("minhash/v1:b", values)]
        )
    index.add("a", Signature("minhash/v1:z", values))
    assert index.scheme_id == "minhash/v1:z"


def test_fingerprint_collisions_never_make_a_candidate() -> None:
    """Two one-value bands whose 64-bit keys share the high 32 bits (the table's
    fingerprint) land in one chain; a query still returns only the rows that hold its
    band exactly."""
    from neardup.index.lsh import band_keys

    rng = np.random.default_rng(21)
    values = rng.integers(0, 2**63, size=(1 << 18, 1), dtype=np.uint64)
    keys = band_keys(values, 1, 1)[0]
    order = np.argsort(keys >> np.uint64(32), kind="stable")
    high = (keys >> np.uint64(32))[order]
    same = np.flatnonzero((high[1:] == high[:-1]) & (keys[order][1:] != keys[order][:-1]))
    assert same.shape[0] > 0  # birthday: a few pairs among 2**18 keys
    a, b = values[order[same[0]], 0], values[order[same[0] + 1], 0]
    rest = rng.integers(0, 2**63, size=(2, 7), dtype=np.uint64)
    sig_a = np.concatenate([[a], rest[0]]).astype(np.uint64)
    sig_b = np.concatenate([[b], rest[1]]).astype(np.uint64)
    index = LSHIndex(num_perm=8, bands=1, rows=1)
    index.add("a", sig(sig_a))
    index.add("b", sig(sig_b))
    assert index.query(sig(sig_a)) == [("a", 1.0)]
    assert index.query(sig(sig_b)) == [("b", 1.0)]
    assert index.query_keys(sig(sig_b)) == ["b"]


def test_file_tables_are_the_sorted_band_keys() -> None:
    """The band keys and rows written to a file are, per band, the keys sorted stably with
    their rows: the layout the sorted-segment tables wrote, so files keep their bytes."""
    from neardup.index._sorted import Segment
    from neardup.index.lsh import band_keys

    sigs = random_sigs(700, 32, seed=30)
    sigs[100:200, :4] = sigs[0, :4]  # a shared band: equal keys keep their row order
    index = LSHIndex(num_perm=32, bands=8, rows=4)
    index.add_many(list(range(700)), sigs)
    keys, rows = index._table_arrays(700)
    old = Segment.build(band_keys(sigs, 8, 4), np.arange(700, dtype=np.uint32), (64,) * 8)
    assert np.array_equal(keys, old.keys) and np.array_equal(rows, old.rows)
