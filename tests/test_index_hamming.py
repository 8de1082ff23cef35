"""HammingIndex: exact against brute force, add/remove, persistence, bad input, real SimHash."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.errors import (
    ConfigError,
    ConflictError,
    InputError,
    InputTypeError,
    NotFoundError,
    SchemeMismatchError,
    StoreError,
)
from neardup.index import HammingIndex, HammingIndexConfig
from neardup.sketch.base import Signature

U64 = np.uint64


def flip_bits(value: int, count: int, rng: np.random.Generator) -> int:
    bits = rng.choice(64, size=count, replace=False)
    for b in bits.tolist():
        value ^= 1 << b
    return value


def brute(fps: np.ndarray, keys: list[Any], query: int, max_distance: int) -> list[tuple[Any, int]]:
    dist = np.bitwise_count(fps ^ U64(query)).astype(int)
    hits = np.nonzero(dist <= max_distance)[0]
    return sorted(((keys[i], int(dist[i])) for i in hits), key=lambda kd: (kd[1], kd[0]))


def planted(n: int, queries: int, max_extra: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Random fingerprints plus, for each query, neighbours at every distance 0..max_extra."""
    rng = np.random.default_rng(seed)
    fps = rng.integers(0, 2**64 - 1, size=n, dtype=U64, endpoint=True)
    qs = rng.integers(0, 2**64 - 1, size=queries, dtype=U64, endpoint=True)
    extra = [flip_bits(int(q), d, rng) for q in qs.tolist() for d in range(max_extra + 1)]
    return np.concatenate([fps, np.array(extra, dtype=U64)]), qs


@pytest.mark.parametrize(
    "params",
    [
        {"max_distance": 3},  # 4 x 16 bits, the default
        {"max_distance": 3, "num_blocks": 5},  # 13,13,13,13,12
        {"max_distance": 2, "block_bits": (20, 20, 24)},  # wider than the 16-bit directory
        {"max_distance": 0, "num_blocks": 1},  # one 64-bit block: exact match
        {"max_distance": 7, "num_blocks": 8},  # the seed's "similar" range
    ],
)
def test_exact_against_brute_force_with_planted_neighbours(params: dict[str, Any]) -> None:
    cfg = HammingIndexConfig(**params)
    blocks = len(cfg.layout)
    fps, qs = planted(20_000, 40, blocks + 2, seed=blocks)
    keys = list(range(fps.shape[0]))
    index = HammingIndex(cfg)
    index.add_many(keys, fps)
    for d in sorted({0, cfg.max_distance, blocks - 1}):
        for q in qs.tolist():
            assert index.query(q, max_distance=d) == brute(fps, keys, q, d)
    # Every planted distance 0..d is found for the default distance.
    assert all(
        {dist for _, dist in index.query(q)} >= set(range(cfg.max_distance + 1))
        for q in qs.tolist()
    )


def test_incremental_adds_segments_buffer_and_removes_match_brute_force() -> None:
    fps, qs = planted(9_000, 30, 5, seed=7)
    keys = [f"doc{i:05d}" for i in range(fps.shape[0])]
    index = HammingIndex(max_distance=3, buffer_size=256)
    # Mixed batch sizes: larger than the buffer, smaller, single adds.
    index.add_many(keys[:5000], fps[:5000])
    index.add_many(keys[5000:5300], fps[5000:5300])
    for i in range(5300, fps.shape[0]):
        index.add(keys[i], int(fps[i]))
    assert len(index._tables.segments) >= 2 and index._tables.buffer_count > 0
    rng = np.random.default_rng(1)
    removed = set(rng.choice(len(keys), size=2000, replace=False).tolist())
    for i in sorted(removed):
        index.remove(keys[i])
    live = np.array(sorted(set(range(len(keys))) - removed))
    assert len(index) == live.shape[0]
    for q in qs.tolist():
        assert index.query(q) == brute(fps[live], [keys[i] for i in live], q, 3)
    index.compact()
    assert len(index._tables.segments) == 1
    for q in qs.tolist():
        assert index.query(q) == brute(fps[live], [keys[i] for i in live], q, 3)


def test_more_matches_than_the_first_scan_holds() -> None:
    """A query with thousands of matches (more than a scan's first output buffer) over
    segments and the buffer: the second, exactly sized scan returns them all."""
    rng = np.random.default_rng(4)
    base = int(rng.integers(0, 2**63))
    flips = rng.integers(0, 64, size=(3_000, 2))
    fps = np.array(
        [base ^ (1 << int(a)) ^ (1 << int(b)) for a, b in flips.tolist()], dtype=np.uint64
    )
    keys = list(range(fps.shape[0]))
    index = HammingIndex(max_distance=3, buffer_size=256)
    index.add_many(keys[:1500], fps[:1500])
    for k in keys[1500:]:
        index.add(k, int(fps[k]))
    assert len(index._tables.segments) >= 2 and index._tables.buffer_count > 0
    got = index.query(base, 3)
    assert len(got) == fps.shape[0]
    assert got == brute(fps, keys, base, 3)
    assert index.query(int(fps[0]), 3) == brute(fps, keys, int(fps[0]), 3)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.integers(0, 2**64 - 1), min_size=1, max_size=8),
    st.lists(st.tuples(st.integers(0, 7), st.integers(0, 5), st.integers(0, 2**32)), max_size=60),
    st.integers(1, 64),
)
def test_property_clustered_fingerprints(
    bases: list[int], derived: list[tuple[int, int, int]], buffer_size: int
) -> None:
    rng_values = []
    for base_i, flips, seed in derived:
        rng = np.random.default_rng(seed)
        rng_values.append(flip_bits(bases[base_i % len(bases)], flips, rng))
    values = bases + rng_values
    fps = np.array(values, dtype=U64)
    index = HammingIndex(max_distance=3, buffer_size=buffer_size)
    keys = list(range(len(values)))
    index.add_many(keys, fps)
    for q in bases:
        assert index.query(q) == brute(fps, keys, q, 3)


def test_query_many_equals_query() -> None:
    fps, qs = planted(5_000, 25, 4, seed=3)
    index = HammingIndex(max_distance=3)
    index.add_many(list(range(fps.shape[0])), fps)
    assert index.query_many(qs) == [index.query(q) for q in qs.tolist()]
    assert index.query_many([]) == []


def test_duplicate_key_policy_and_remove() -> None:
    index = HammingIndex()
    index.add("a", 5)
    index.add("a", 5)  # same fingerprint: idempotent
    index.add_many(["b", "b"], [9, 9])
    assert len(index) == 2 and index.get("a") == 5
    with pytest.raises(ConflictError):
        index.add("a", 6)
    with pytest.raises(ConflictError):
        index.add_many(["c", "c"], [1, 2])
    assert "c" not in index  # all-or-nothing
    index.remove("a")
    assert "a" not in index and index.query(5) == [("b", 2)]
    index.add("a", 6)  # allowed after removal
    assert index.query(6, max_distance=0) == [("a", 0)]
    with pytest.raises(NotFoundError):
        index.remove("zzz")
    with pytest.raises(NotFoundError):
        index.get("zzz")
    assert index.keys() == ["b", "a"]


def _key_array_query(index: HammingIndex, q: int) -> list[tuple[int, int]]:
    keys, dists = index.query_key_array(q)
    return sorted(zip(dists.tolist(), keys.tolist(), strict=True))


def test_query_key_array_equals_query_through_adds_removes_and_compaction() -> None:
    """The int64-array form of ``query`` (the news stream's): same keys and distances as
    brute force over segments, the buffer, removed keys and after a compaction; string
    keys refuse it."""
    fps, qs = planted(6_000, 20, 4, seed=3)
    index = HammingIndex(max_distance=3, buffer_size=128)
    index.add_many(list(range(3_000)), fps[:3_000])
    for i in range(3_000, fps.shape[0]):
        index.add(i * 7, int(fps[i]))  # keys not equal to rows
    keys = list(range(3_000)) + [i * 7 for i in range(3_000, fps.shape[0])]
    removed = set(range(0, fps.shape[0], 5))
    for i in sorted(removed):
        index.remove(keys[i])
    live = [i for i in range(fps.shape[0]) if i not in removed]
    for _ in range(2):  # before and after compaction (rows renumbered)
        for q in qs.tolist():
            want = brute(fps[live], [keys[i] for i in live], q, 3)
            assert _key_array_query(index, q) == sorted((d, k) for k, d in want)
        index.compact()
    named = HammingIndex(max_distance=3)
    named.add("a", 1)
    with pytest.raises(InputTypeError):
        named.query_key_array(1)


def test_many_removes_trigger_compaction_and_stay_exact() -> None:
    fps, qs = planted(3_000, 10, 3, seed=11)
    index = HammingIndex(max_distance=3, buffer_size=64)
    index.add_many(list(range(fps.shape[0])), fps)
    for k in range(fps.shape[0]):
        if k % 3:
            index.remove(k)
    odd = np.arange(0, fps.shape[0], 3)
    assert index._nrows < fps.shape[0]  # compacted at least once
    for q in qs.tolist():
        assert index.query(q) == brute(fps[odd], odd.tolist(), q, 3)


def test_save_load_round_trip(tmp_path: Path) -> None:
    fps, qs = planted(6_000, 20, 4, seed=5)
    keys = [f"ключ-{i}" for i in range(fps.shape[0])]  # non-ASCII keys survive
    index = HammingIndex(max_distance=3, num_blocks=5, buffer_size=512)
    index.add_many(keys, fps)
    index.remove(keys[0])
    before = [index.query(q) for q in qs.tolist()]
    path = tmp_path / "ham.idx"
    index.save(path)
    loaded = HammingIndex.load(path)
    assert loaded.config == index.config and len(loaded) == len(index)
    assert [loaded.query(q) for q in qs.tolist()] == before
    assert loaded.get(keys[1]) == int(fps[1])
    loaded.add("new", int(qs[0]))  # a loaded index keeps working
    assert ("new", 0) in loaded.query(int(qs[0]))
    # Saving is deterministic.
    index.save(tmp_path / "again.idx")
    assert path.read_bytes() == (tmp_path / "again.idx").read_bytes()


def test_save_load_empty_and_int_keys(tmp_path: Path) -> None:
    empty = HammingIndex()
    empty.save(tmp_path / "e.idx")
    assert len(HammingIndex.load(tmp_path / "e.idx")) == 0
    index = HammingIndex()
    index.add_many([-5, 2**62], [1, 2])
    index.save(tmp_path / "i.idx")
    assert HammingIndex.load(tmp_path / "i.idx").query(3, max_distance=1) == [(-5, 1), (2**62, 1)]


def test_damaged_or_foreign_files_raise_store_error(tmp_path: Path) -> None:
    index = HammingIndex()
    index.add_many(list(range(100)), np.arange(100, dtype=U64))
    path = tmp_path / "h.idx"
    index.save(path)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    bad = tmp_path / "bad.idx"
    bad.write_bytes(bytes(data))
    with pytest.raises(StoreError, match="checksum"):
        HammingIndex.load(bad)
    (tmp_path / "short.idx").write_bytes(bytes(data[:10]))
    with pytest.raises(StoreError):
        HammingIndex.load(tmp_path / "short.idx")
    (tmp_path / "other.idx").write_bytes(b"NDLSHIDX" + bytes(data[8:]))
    with pytest.raises(StoreError):
        HammingIndex.load(tmp_path / "other.idx")
    with pytest.raises(StoreError):
        HammingIndex.load(tmp_path / "missing.idx")


def test_bad_input() -> None:
    index = HammingIndex()
    with pytest.raises(InputTypeError):
        index.add("a", 1.5)  # type: ignore[arg-type]
    with pytest.raises(InputError):
        index.add("a", -1)
    with pytest.raises(InputError):
        index.add("a", 2**64)
    with pytest.raises(InputTypeError):
        index.add_many(["a"], np.array([1.0]))
    with pytest.raises(InputError):
        index.add_many(["a"], np.array([[1]], dtype=U64))
    with pytest.raises(InputError):
        index.add_many(["a", "b"], np.array([1], dtype=U64))
    with pytest.raises(InputTypeError):
        index.add(None, 1)  # type: ignore[arg-type]
    with pytest.raises(InputTypeError):
        index.add(True, 1)
    with pytest.raises(InputTypeError):
        index.query("abc")  # type: ignore[arg-type]
    index.add("a", 1)
    with pytest.raises(InputTypeError):
        index.add(7, 1)  # keys are str in this index
    with pytest.raises(ConfigError):
        index.query(1, max_distance=4)  # 4 blocks answer up to 3 exactly
    with pytest.raises(ConfigError):
        index.query(1, max_distance=-1)
    assert len(index) == 1


def test_signatures_and_scheme_mismatch() -> None:
    index = HammingIndex()
    index.add("a", Signature("simhash/v1:aaaa", np.array([7], dtype=U64)))
    assert index.query(Signature("simhash/v1:aaaa", np.array([6], dtype=U64))) == [("a", 1)]
    with pytest.raises(SchemeMismatchError):
        index.query(Signature("simhash/v1:bbbb", np.array([6], dtype=U64)))
    with pytest.raises(SchemeMismatchError):
        index.add("b", Signature("simhash/v1:aaaa", np.array([6, 7], dtype=U64)))
    with pytest.raises(SchemeMismatchError):
        index.add("b", Signature("simhash/v1:aaaa", np.array([6], dtype=np.uint32)))


@pytest.mark.parametrize(
    "params",
    [
        {"max_distance": 3, "num_blocks": 3},
        {"max_distance": 3, "block_bits": (32, 32)},
        {"block_bits": (16, 16, 16)},
        {"block_bits": (16, 16, 16, 16), "num_blocks": 5},
        {"bits": 32},
        {"max_distance": -1},
        {"buffer_size": 0},
        {"num_blocks": 0},
    ],
)
def test_config_errors(params: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        HammingIndexConfig(**params)


def test_config_layout_and_scheme_id() -> None:
    assert HammingIndexConfig().layout == (16, 16, 16, 16)
    assert HammingIndexConfig(num_blocks=5).layout == (13, 13, 13, 13, 12)
    assert HammingIndexConfig(block_bits=[32, 32], max_distance=1).layout == (32, 32)  # type: ignore[arg-type]
    assert HammingIndexConfig().scheme_id == HammingIndexConfig(max_distance=3).scheme_id
    with pytest.raises(ConfigError):
        HammingIndex(HammingIndexConfig(), max_distance=2)


@pytest.mark.data
def test_real_reuters_simhash_exact(reuters_docs: list[dict[str, Any]]) -> None:
    from neardup.sketch import SCHEMES, sign

    if "simhash" not in SCHEMES:
        pytest.skip("the simhash scheme is not registered yet")
    docs = [d for d in reuters_docs if d.get("text", "").strip()]
    sigs = [sign(d["text"], "simhash") for d in docs]
    fps = np.array([int(s.values[0]) for s in sigs], dtype=U64)
    keys = [str(d["id"]) for d in docs]
    index = HammingIndex(max_distance=7, num_blocks=8)
    index.add_many(keys, sigs)
    for i in range(0, len(docs), 7):
        for d in (3, 7):
            assert index.query(sigs[i], max_distance=d) == brute(fps, keys, int(fps[i]), d)


def test_scheme_is_adopted_only_by_a_successful_add() -> None:
    index = HammingIndex()
    assert index.query(Signature("simhash/v1:xxxx", np.array([1], dtype=U64))) == []
    with pytest.raises(InputTypeError):
        index.add(None, Signature("simhash/v1:yyyy", np.array([1], dtype=U64)))  # type: ignore[arg-type]
    with pytest.raises(SchemeMismatchError):  # one call cannot mix schemes either
        index.add_many(
            ["a", "b"],
            [
                Signature("simhash/v1:a", np.array([1], dtype=U64)),
                Signature("simhash/v1:b", np.array([1], dtype=U64)),
            ],
        )
    index.add("a", Signature("simhash/v1:zzzz", np.array([1], dtype=U64)))
    assert index.scheme_id == "simhash/v1:zzzz"
    with pytest.raises(InputError):
        index.query(Signature("simhash/v1:zzzz", np.empty(0, dtype=U64)))
