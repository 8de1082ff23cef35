"""The bucketed table (Section 2.2) and each eviction rule, on constructed cases."""

from __future__ import annotations

import dataclasses
import math
from collections import OrderedDict
from typing import Any

import numpy as np
import pytest

from neardup.detect.origin import TEXT_CONFIG, OriginConfig
from neardup.detect.origin.evict import lucky_bonus
from neardup.detect.origin.select import select
from neardup.detect.origin.table import BucketTable, UnlimitedTable, entry_bytes
from neardup.errors import CapacityError
from neardup.shingles import hash_forms
from neardup.text import tokenize


def one_bucket(
    eviction: str, bucket_size: int = 4, estimation: str = "be", **kw: int
) -> BucketTable:
    cfg = OriginConfig.paper(
        bucket_size=bucket_size, eviction=eviction, estimation=estimation, memory_bytes=1
    )
    size = bucket_size * entry_bytes(cfg) + 1
    return BucketTable(
        OriginConfig.paper(
            bucket_size=bucket_size,
            eviction=eviction,
            estimation=estimation,
            memory_bytes=size,
            **kw,
        )
    )


def fp(i: int) -> np.uint64:
    return np.uint64(0x0101_0000_0000_0000 + i * 0x1_0000_0001)


def probe(table: BucketTable, ids: list[int], own: int = 0) -> tuple[np.ndarray, np.ndarray]:
    hits, evicted = table.probe(np.array([fp(i) for i in ids], dtype=np.uint64), own)
    return hits.found, evicted


def stored(table: BucketTable) -> set[int]:
    keys = {int(fp(i)) & 0xFFFF_FFFF_FFFF: i for i in range(1000)}
    n = min(int(table.fill[0]), table.bucket_size)  # a full LRU ring keeps its head above
    got = set()
    for s in range(n):
        low = (int(table.tag_hi[s]) << 32) | int(table.tag_lo[s])
        got.add(keys[low])
    return got


@pytest.mark.parametrize(("eviction", "estimation", "size"), [
    ("random", "nb", 14), ("lru", "nb", 14), ("copycount", "nb", 15), ("lucky", "nb", 15),
    ("lucky", "b", 16), ("lucky", "e", 17), ("lucky", "be", 18), ("random", "be", 17),
])  # fmt: skip
def test_bytes_per_entry_are_the_papers(eviction: str, estimation: str, size: int) -> None:
    assert entry_bytes(OriginConfig.paper(eviction=eviction, estimation=estimation)) == size


def test_table_never_exceeds_its_budget() -> None:
    rng = np.random.default_rng(1)
    for memory in [1153, 1200, 5000, 65_537, 1_000_003, 20_000_000]:
        for eviction in ("random", "lru", "copycount", "lucky"):
            for estimation in ("nb", "e", "b", "be"):
                cfg = OriginConfig.paper(
                    memory_bytes=memory, eviction=eviction, estimation=estimation
                )
                table = BucketTable(cfg)
                assert table.nbytes <= memory
                # and the bucket count is the largest that fits
                assert table.nbytes + table.bucket_bytes > memory
                fps = rng.integers(0, 2**63, size=3000, dtype=np.int64).astype(
                    np.uint64
                ) * np.uint64(2)
                table.probe(fps, 0)
                assert table.nbytes <= memory
                assert table.stored <= table.capacity


def test_memory_too_small_for_one_bucket() -> None:
    with pytest.raises(CapacityError, match="too small for one bucket"):
        BucketTable(OriginConfig.paper(memory_bytes=1000))  # 64 x 18 + 1 = 1153 bytes needed


def test_hit_returns_stored_facts() -> None:
    table = one_bucket("lucky")
    fps = np.array([fp(1), fp(2), fp(3)], dtype=np.uint64)
    table.probe(fps, own=7)
    hits, _ = table.probe(np.array([fp(9), fp(2)], dtype=np.uint64), own=8)
    assert hits.found.tolist() == [False, True]
    assert hits.origin.tolist() == [8, 7]
    assert int(hits.offset[1]) == 1  # one shingle was selected before it in doc 7
    assert int(hits.prev[1]) == int(fp(1)) >> 56 and int(hits.next[1]) == int(fp(3)) >> 56


def test_lru_evicts_least_recently_used() -> None:
    table = one_bucket("lru")
    probe(table, [1, 2, 3, 4])
    found, _ = probe(table, [1])  # 1 moves to the end of the queue
    assert found.tolist() == [True]
    _, evicted = probe(table, [5], own=1)
    assert evicted.tolist() == [0]
    assert stored(table) == {1, 3, 4, 5}
    probe(table, [6], own=2)
    assert stored(table) == {1, 4, 5, 6}


def test_copy_count_evicts_smallest_count_and_halves() -> None:
    table = one_bucket("copycount")
    probe(table, [1, 2, 3, 4])
    probe(table, [1, 1, 2, 2, 4])
    probe(table, [5])  # 3 has the smallest count (1)
    assert stored(table) == {1, 2, 4, 5}
    assert sorted(table.score[:4].tolist()) == [1, 2, 3, 3]
    big = one_bucket("copycount", bucket_size=12)
    probe(big, list(range(12)))
    probe(big, list(range(9)) * 254)  # nine counters reach 255: no halving yet
    assert (big.score[:12] == 255).sum() == 9
    probe(big, [9] * 254)  # the tenth reaches 255 -> all counters halved
    assert big.score[:12].tolist() == [127] * 10 + [0, 0]


def test_random_eviction_is_seeded_and_spread() -> None:
    counts = np.zeros(4)
    for seed in range(400):
        table = one_bucket("random", seed=seed)
        probe(table, [1, 2, 3, 4])
        probe(table, [5])
        counts[sorted({1, 2, 3, 4} - stored(table))[0] - 1] += 1
    assert counts.min() > 60  # roughly uniform over the four
    a, b = one_bucket("random", seed=3), one_bucket("random", seed=3)
    for t in (a, b):
        probe(t, list(range(1, 30)))
    assert stored(a) == stored(b)


def test_lucky_bonus_rules() -> None:
    own = 99
    # one copied block of 11 shingles (positions 2..12) from origin 5 in a doc of 20
    origins = np.full(20, own, dtype=np.int64)
    origins[2:13] = 5
    bonus = lucky_bonus(origins, own, 7).tolist()
    expected = [0] * 20
    expected[2] += math.floor(math.sqrt(11 - 2))  # (b) first of block
    expected[12] += 3  # (b) last of block
    expected[0] += 3  # (c) document ends
    expected[19] += 3
    for j in (6, 13):  # (d) every 7th selected shingle
        expected[j] += 1
    assert bonus == expected
    # blocks of 1 and 2 shingles get nothing from (b)
    origins = np.array([own, 4, own, 6, 6, own, own], dtype=np.int64)
    assert lucky_bonus(origins, own, 7).tolist() == [3, 0, 0, 0, 0, 0, 4]


def test_lucky_scores_and_halving() -> None:
    table = one_bucket("lucky")
    probe(table, [1, 2, 3, 4])
    assert table.score[:4].tolist() == [1, 1, 1, 1]
    probe(table, [1, 2])
    assert table.score[:4].tolist() == [2, 2, 1, 1]
    fps = np.array([fp(3)], dtype=np.uint64)
    table.add_scores(fps, np.array([5], dtype=np.int64))
    assert table.score[:4].tolist() == [2, 2, 6, 1]
    _, evicted = probe(table, [5], own=3)
    assert evicted.tolist() == [0]  # 4 has the lowest score
    assert stored(table) == {1, 2, 3, 5}
    # average reaches the limit 11 -> every score halved
    table.add_scores(fps, np.array([40], dtype=np.int64))  # scores 2,2,46,1 -> mean 12.75
    assert table.score[:4].tolist() == [1, 1, 23, 0]


def test_unlimited_table_never_forgets() -> None:
    table = UnlimitedTable(OriginConfig.reference())
    rng = np.random.default_rng(0)
    fps = rng.integers(0, 2**63, size=5000, dtype=np.int64).astype(np.uint64)
    table.probe(fps, 0)
    hits, evicted = table.probe(fps[::-1].copy(), 1)
    assert hits.found.all() and (hits.origin == 0).all() and evicted.size == 0


@pytest.mark.parametrize(("fingerprint_bytes", "origin_bytes", "size"), [
    (6, 8, 16), (4, 8, 14), (6, 4, 12), (4, 4, 10), (3, 4, 9),
])  # fmt: skip
def test_packed_entry_bytes(fingerprint_bytes: int, origin_bytes: int, size: int) -> None:
    cfg = OriginConfig.paper(
        estimation="b", fingerprint_bytes=fingerprint_bytes, origin_bytes=origin_bytes
    )
    assert entry_bytes(cfg) == size
    table = BucketTable(dataclasses.replace(cfg, memory_bytes=10 * (64 * size + 1)))
    assert table.capacity == 640 and table.nbytes == 10 * (64 * size + 1)


def test_packed_tables_never_exceed_their_budget() -> None:
    rng = np.random.default_rng(2)
    for memory in [577, 1153, 5000, 65_537, 1_000_003]:
        for fp_bytes, origin_bytes in [(4, 4), (3, 4), (3, 8)]:
            for eviction in ("random", "lru", "lucky"):
                cfg = OriginConfig.paper(
                    memory_bytes=memory,
                    eviction=eviction,
                    estimation="b",
                    fingerprint_bytes=fp_bytes,
                    origin_bytes=origin_bytes,
                )
                try:
                    table = BucketTable(cfg)
                except CapacityError:
                    assert memory < 64 * entry_bytes(cfg) + 1
                    continue
                assert table.nbytes <= memory < table.nbytes + table.bucket_bytes
                fps = rng.integers(0, 2**63, size=3000, dtype=np.int64).astype(np.uint64)
                table.probe(fps, 5)
                assert table.nbytes <= memory and table.stored <= table.capacity


@pytest.mark.parametrize("fingerprint_bytes", [4, 3])
def test_packed_table_finds_what_it_stored(fingerprint_bytes: int) -> None:
    cfg = OriginConfig.paper(
        estimation="b", eviction="random", fingerprint_bytes=fingerprint_bytes, origin_bytes=4
    )
    table = BucketTable(dataclasses.replace(cfg, memory_bytes=200 * (64 * entry_bytes(cfg) + 1)))
    rng = np.random.default_rng(3)
    fps = np.unique(rng.integers(0, 2**63, size=5000, dtype=np.int64).astype(np.uint64) * 2)
    fps = rng.permutation(fps)  # unique() sorts: spread the first 3000 over all buckets
    hits, evicted = table.probe(fps[:3000], own=(1 << 31) - 1)
    assert not hits.found.any() and evicted.shape[0] == 0
    again, _ = table.probe(fps, own=7)
    assert again.found[:3000].all()
    assert set(again.origin[:3000].tolist()) == {(1 << 31) - 1}
    assert again.offset[:3000].tolist() == [j & 255 for j in range(3000)]
    # new fingerprints: a false match needs all stored bits equal, ~1e-6 here
    assert int(again.found[3000:].sum()) <= 1
    with pytest.raises(CapacityError, match="2\\^31"):
        table.probe(fps[:1], own=1 << 31)


@pytest.mark.parametrize("bucket_size", [4, 64, 200])
def test_lru_ring_matches_an_ordered_dict_oracle(
    reuters_docs: list[dict[str, Any]], bucket_size: int
) -> None:
    """LRU keeps a full bucket as a ring (head in the fill byte, bucket sizes <= 128; larger
    ones shift): hits, stored origins and evictions equal a plain LRU built from one
    OrderedDict per bucket, on the selected fingerprints of real Reuters documents."""
    cfg = OriginConfig.paper(eviction="lru", estimation="nb", bucket_size=bucket_size)
    cfg = dataclasses.replace(cfg, memory_bytes=12 * (bucket_size * entry_bytes(cfg) + 1))
    table = BucketTable(cfg)
    oracle: dict[int, OrderedDict[int, int]] = {}
    for own, doc in enumerate([d for d in reuters_docs if d["text"]][:300]):
        tokens = tokenize(doc["text"], TEXT_CONFIG)
        fps = select(hash_forms(tokens.forms, 0), cfg).fingerprints
        hits, evicted = table.probe(fps, own)
        want_found, want_origin, want_evicted = [], [], []
        for f in fps.tolist():
            bucket = oracle.setdefault(((f >> 32) * table.nbuckets) >> 32, OrderedDict())
            if f in bucket:
                bucket.move_to_end(f)
                want_found.append(True)
                want_origin.append(bucket[f])
                continue
            if len(bucket) == bucket_size:
                want_evicted.append(bucket.popitem(last=False)[1])
            bucket[f] = own
            want_found.append(False)
            want_origin.append(own)
        assert hits.found.tolist() == want_found
        assert hits.origin.tolist() == want_origin
        assert evicted.tolist() == want_evicted
    assert table.stored == sum(len(b) for b in oracle.values())
    assert int(table.fill.max()) > bucket_size or bucket_size > 128  # the ring did turn
