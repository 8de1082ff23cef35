"""The passage index against a dictionary of sets (the oracle), through adds, removals,
segment merges and a save/load round trip."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.errors import ConflictError, InputError, NotFoundError
from neardup.index.passages import MAX_SEGMENTS, PassageIndex
from neardup.sketch.winnowing import winnow, winnowing_positions


def oracle(held: dict[int, set[int]], q: set[int], cap: int, exclude: int | None):
    postings: dict[int, int] = {}
    for fps in held.values():
        for f in fps:
            postings[f] = postings.get(f, 0) + 1
    counts = {
        k: sum(1 for f in fps & q if postings[f] <= cap) for k, fps in held.items() if k != exclude
    }
    ranked = sorted(((-c, k) for k, c in counts.items() if c), key=lambda t: t)
    return [k for _, k in ranked], [-c for c, _ in ranked]


ops = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.integers(0, 40), st.sets(st.integers(0, 30), max_size=12)),
        st.tuples(st.just("remove"), st.integers(0, 40), st.just(set())),
        st.tuples(st.just("query"), st.integers(-1, 40), st.sets(st.integers(0, 30), max_size=8)),
    ),
    max_size=80,
)


@settings(max_examples=150, deadline=None)
@given(ops, st.integers(1, 6), st.integers(1, 20))
def test_queries_equal_the_oracle(script: list, cap: int, buffer: int) -> None:
    index = PassageIndex(max_postings=cap, buffer_size=buffer)
    held: dict[int, set[int]] = {}
    for op, key, values in script:
        if op == "add":
            if key in held:
                with pytest.raises(ConflictError):
                    index.add(key, np.array(sorted(values), dtype=np.uint64))
                continue
            index.add(key, np.array(sorted(values), dtype=np.uint64))
            held[key] = set(values)
        elif op == "remove":
            if key not in held:
                with pytest.raises(NotFoundError):
                    index.remove(key)
                continue
            index.remove(key)
            del held[key]
        else:
            exclude = None if key < 0 else key
            keys, counts = index.query(np.array(sorted(values), dtype=np.uint64), exclude=exclude)
            want_keys, want_counts = oracle(held, values, cap, exclude)
            assert keys.tolist() == want_keys and counts.tolist() == want_counts
        assert len(index) == len(held) and sorted(index.keys()) == sorted(held)
    restored = PassageIndex(max_postings=cap, buffer_size=buffer)
    restored.load_state(index.state())
    q = np.arange(31, dtype=np.uint64)
    assert [a.tolist() for a in restored.query(q)] == [a.tolist() for a in index.query(q)]


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.integers(0, 400), max_size=3000),
    st.lists(st.integers(0, 401), max_size=40),
    st.sampled_from([0, 54, 63]),
)
def test_bucket_ranges_equal_searchsorted(values: list[int], queries: list[int], up: int) -> None:
    # Small values crowd one bucket; shifted up they spread over the directory's buckets.
    from neardup.index.passages import _bucket_ranges, _directory

    fps = np.sort(np.array(values, dtype=np.uint64) << np.uint64(up))
    q = np.unique(np.array(queries, dtype=np.uint64) << np.uint64(up))
    starts, shift = _directory(fps)
    lo, hi = _bucket_ranges(fps, starts, shift, q)
    assert lo.tolist() == np.searchsorted(fps, q, "left").tolist()
    assert hi.tolist() == np.searchsorted(fps, q, "right").tolist()


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 5000), st.integers(0, 2**32))
def test_bucket_ranges_of_uniform_hashes(n: int, seed: int) -> None:
    from neardup.index.passages import _bucket_ranges, _directory

    rng = np.random.default_rng(seed)
    fps = np.sort(rng.integers(0, 2**64, size=n, dtype=np.uint64, endpoint=False))
    q = np.unique(np.concatenate([fps[:: max(1, n // 50)], rng.integers(0, 2**64, 50, np.uint64)]))
    starts, shift = _directory(fps)
    assert starts[0] == 0 and starts[-1] == n and np.all(np.diff(starts) >= 0)
    lo, hi = _bucket_ranges(fps, starts, shift, q)
    assert lo.tolist() == np.searchsorted(fps, q, "left").tolist()
    assert hi.tolist() == np.searchsorted(fps, q, "right").tolist()


def test_large_segments_equal_the_oracle() -> None:
    # Segments far longer than a fence block, long runs of one fingerprint, removals.
    rng = np.random.default_rng(3)
    index = PassageIndex(max_postings=300, buffer_size=97)
    held: dict[int, set[int]] = {}
    for key in range(2000):
        values = set(rng.integers(0, 500, size=int(rng.integers(0, 20))).tolist())
        index.add(key, np.array(sorted(values), dtype=np.uint64))
        held[key] = values
        if key % 7 == 3:
            gone = int(rng.integers(0, key + 1))
            if gone in held:
                index.remove(gone)
                del held[gone]
    assert len(index._segments) > 1 and max(s.fps.size for s in index._segments) > 5000
    for _ in range(50):
        values = set(rng.integers(0, 520, size=int(rng.integers(1, 30))).tolist())
        exclude = int(rng.integers(-1, 2000))
        keys, counts = index.query(np.array(sorted(values), dtype=np.uint64), exclude=exclude)
        want_keys, want_counts = oracle(held, values, 300, exclude)
        assert keys.tolist() == want_keys and counts.tolist() == want_counts


def test_segments_stay_few_and_queries_exact() -> None:
    # Many small flushes: merging alone would keep more than MAX_SEGMENTS segments, the cap
    # merges the newest instead; answers stay the oracle's at every count of segments, and
    # the query kernel is one compiled specialisation whatever the count (a new machine
    # compiles it once).
    from neardup.index.passages import _query

    rng = np.random.default_rng(4)
    index = PassageIndex(max_postings=1000, buffer_size=3)
    held: dict[int, set[int]] = {}
    most = 0
    for key in range(3000):
        values = set(rng.integers(0, 4000, size=int(rng.integers(1, 4))).tolist())
        index.add(key, np.array(sorted(values), dtype=np.uint64))
        held[key] = values
        most = max(most, len(index._segments))
        if key % 97 == 0:
            probe = set(rng.integers(0, 4000, size=20).tolist())
            keys, counts = index.query(np.array(sorted(probe), dtype=np.uint64))
            want_keys, want_counts = oracle(held, probe, 1000, None)
            assert keys.tolist() == want_keys and counts.tolist() == want_counts
    assert most == MAX_SEGMENTS
    if hasattr(_query, "signatures"):  # compiled (not under NUMBA_DISABLE_JIT)
        assert len(_query.signatures) == 1


def test_bad_keys_and_state() -> None:
    index = PassageIndex()
    with pytest.raises(InputError):
        index.add("a", np.zeros(1, dtype=np.uint64))  # type: ignore[arg-type]
    state = PassageIndex().state()
    state["passages_key_of"] = np.array([5], dtype=np.int64)
    with pytest.raises(InputError):
        index.load_state(state)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 2**64 - 1), min_size=1, max_size=60), st.integers(1, 10))
def test_winnowing_picks_the_rightmost_minimum_of_every_window(values: list, window: int) -> None:
    fps = np.array(values, dtype=np.uint64)
    picked = set(winnowing_positions(fps, window).tolist())
    w = min(window, len(values))
    want = set()
    for i in range(len(values) - w + 1):
        block = values[i : i + w]
        best = max(j for j in range(w) if block[j] == min(block))
        want.add(i + best)
    assert picked == want
    assert winnow(fps, window).tolist() == sorted({values[p] for p in want})


def test_a_shared_run_of_a_window_of_shingles_shares_a_fingerprint() -> None:
    rng = np.random.default_rng(5)
    for _ in range(200):
        run = rng.integers(0, 2**63, size=8, dtype=np.uint64)
        a = np.concatenate([rng.integers(0, 2**63, size=20, dtype=np.uint64), run])
        b = np.concatenate([run, rng.integers(0, 2**63, size=30, dtype=np.uint64)])
        assert set(winnow(a, 8).tolist()) & set(winnow(b, 8).tolist())
