"""Lazy judging against greedy centers on every verdict (the oracle)."""

from __future__ import annotations

import numpy as np
import pytest

from neardup._jit import forced
from neardup.batch.lazy import (
    Judging,
    _ends,
    _neighbour_lists,
    _stable_by,
    lazy_verdicts,
    neighbour_graph,
)
from neardup.batch.unionfind import center_labels
from neardup.batch.verify import DUPLICATE, NOT_DUPLICATE, PairVerdicts


def _graph(seed: int, n: int, m: int, clique: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    edges = {tuple(sorted(e)) for e in rng.integers(0, n, size=(m, 2)).tolist() if e[0] != e[1]}
    # A large cluster: every pair of its members is a candidate.
    members = rng.choice(n, size=min(clique, n), replace=False).tolist()
    edges |= {(min(a, b), max(a, b)) for a in members for b in members if a < b}
    return np.array(sorted(edges), dtype=np.int64).reshape(-1, 2)


class _Case:
    """A seeded random candidate graph (with a large cluster) and its true verdicts."""

    def __init__(self, seed: int, rng: np.random.Generator, most: int, edges: int) -> None:
        n = int(rng.integers(2, most))
        self.pairs = _graph(seed, n, int(rng.integers(0, edges)), int(rng.integers(0, 20)))
        self.duplicate = rng.random(self.pairs.shape[0]) < rng.random()
        self.truth = np.where(self.duplicate, DUPLICATE, NOT_DUPLICATE).astype(np.int8)
        self.scores = rng.random(self.pairs.shape[0])
        self.rank = rng.permutation(n).astype(np.int64)
        self.pinned = rng.random(n) < 0.1

    def check(self, verdicts: PairVerdicts, judged: np.ndarray, asked: list[np.ndarray]) -> None:
        """Greedy centers as on every verdict (the oracle); judged verdicts are the rule's,
        each asked once; the others unscored."""
        pairs, rank, pinned = self.pairs, self.rank, self.pinned
        dup = self.duplicate
        expected = center_labels(rank, pairs[dup, 0], pairs[dup, 1], pinned=pinned)
        ok = verdicts.labels == DUPLICATE
        got = center_labels(rank, pairs[ok, 0], pairs[ok, 1], pinned=pinned)
        np.testing.assert_array_equal(got, expected)
        np.testing.assert_array_equal(verdicts.labels[judged], self.truth[judged])
        np.testing.assert_array_equal(verdicts.scores[judged], self.scores[judged])
        assert np.isnan(verdicts.scores[~judged]).all()
        flat = np.concatenate(asked) if asked else np.empty(0, np.int64)
        assert np.unique(flat).shape[0] == flat.shape[0] == int(judged.sum())
        # Every member's edge to its center was judged duplicate (its score is known).
        for k, (a, b) in enumerate(pairs.tolist()):
            if expected[a] == b or expected[b] == a:
                assert judged[k] and verdicts.labels[k] == DUPLICATE


@pytest.mark.parametrize(
    ("round_pairs", "edge_cost"), [(0, 0), (1, 0), (3, 0), (40, 0), (10**9, 0), (1, 1), (0, 7)]
)
@pytest.mark.parametrize("seed", range(12))
def test_same_centers_as_judging_every_pair(seed: int, round_pairs: int, edge_cost: int) -> None:
    rng = np.random.default_rng(1000 + seed)
    case = _Case(seed, rng, 60, 200)
    pairs, truth, scores = case.pairs, case.truth, case.scores
    asked: list[np.ndarray] = []

    def judge(todo: np.ndarray) -> PairVerdicts:
        asked.append(todo)
        empty = PairVerdicts.empty()
        return PairVerdicts(truth[todo], scores[todo], empty.kept, empty.counts, empty.cosine)

    # Odd seeds: pairs of unequal costs (the engine's: characters of the two texts).
    cost = rng.integers(1, 50, pairs.shape[0]) if seed % 2 else None
    verdicts, judged = lazy_verdicts(
        pairs,
        case.rank,
        case.pinned,
        judge,
        round_cost=round_pairs,
        edge_cost=edge_cost,
        pair_cost=cost,
    )
    case.check(verdicts, judged, asked)


def test_a_large_cluster_needs_few_verdicts() -> None:
    n = 200
    pairs = np.array([(a, b) for a in range(n) for b in range(a + 1, n)], dtype=np.int64)

    def judge(todo: np.ndarray) -> PairVerdicts:
        empty = PairVerdicts.empty()
        labels = np.full(todo.shape[0], DUPLICATE, dtype=np.int8)
        return PairVerdicts(labels, np.ones(todo.shape[0]), empty.kept, empty.counts, empty.cosine)

    rank = np.arange(n, dtype=np.int64)
    _, judged = lazy_verdicts(pairs, rank, np.zeros(n, dtype=bool), judge, round_cost=0)
    # One center: only its n - 1 edges are judged, not the n (n - 1) / 2 pairs.
    assert int(judged.sum()) == n - 1


def test_no_pairs() -> None:
    verdicts, judged = lazy_verdicts(
        np.empty((0, 2), np.int64),
        np.arange(3),
        np.zeros(3, bool),
        lambda t: PairVerdicts.empty(),
        round_cost=1,
    )
    assert verdicts.labels.shape == judged.shape == (0,)


@pytest.mark.parametrize("round_pairs", [0, 5, 20])
def test_rounds_stop_once_they_cost_what_judging_the_rest_would(round_pairs: int) -> None:
    """A chain of distinct documents settles one document a round when judged lazily; the
    rounds stop once ``round_pairs`` per round add up to the pairs still open."""
    n = 200
    pairs = np.array([(i, i + 1) for i in range(n - 1)], dtype=np.int64)
    calls: list[int] = []

    def judge(todo: np.ndarray) -> PairVerdicts:
        calls.append(todo.shape[0])
        empty = PairVerdicts.empty()
        labels = np.full(todo.shape[0], NOT_DUPLICATE, dtype=np.int8)
        return PairVerdicts(labels, np.zeros(todo.shape[0]), empty.kept, empty.counts, empty.cosine)

    rank = np.arange(n, dtype=np.int64)
    _, judged = lazy_verdicts(pairs, rank, np.zeros(n, dtype=bool), judge, round_cost=round_pairs)
    assert judged.all()
    if round_pairs == 0:
        assert calls == [1] * (n - 1)
    else:
        # Round r (from 0) has spent r * round_pairs; the rest goes at once in a round where
        # it is no more than that, and the rounds went on at most half as long again as needed.
        *lazy, rest = calls
        assert lazy == [1] * len(lazy) and rest > 1
        assert rest == n - 1 - len(lazy) <= len(lazy) * round_pairs
        first = next(r for r in range(1, n) if n - 1 - r <= r * round_pairs)
        assert first <= len(lazy) <= 1.5 * first + 1


@pytest.mark.parametrize("seed", range(4))
def test_the_python_sweep_asks_what_the_compiled_one_does(seed: int) -> None:
    """Small jobs sweep in the kernels' own Python (no numba to load): same judged pairs,
    same verdicts, same calls as the compiled sweep."""
    rng = np.random.default_rng(seed)
    n = 40
    pairs = _graph(seed, n, 120, 12)
    truth = np.where(rng.random(pairs.shape[0]) < 0.5, DUPLICATE, NOT_DUPLICATE).astype(np.int8)
    rank = rng.permutation(n).astype(np.int64)
    pinned = rng.random(n) < 0.1
    results = []
    for compiled in (True, False):
        asked: list[list[int]] = []

        def judge(todo: np.ndarray, log: list[list[int]] = asked) -> PairVerdicts:
            log.append(todo.tolist())
            empty = PairVerdicts.empty()
            return PairVerdicts(
                truth[todo], np.ones(todo.shape[0]), empty.kept, empty.counts, empty.cosine
            )

        with forced(compiled):
            verdicts, judged = lazy_verdicts(pairs, rank, pinned, judge, round_cost=3)
        results.append((verdicts.labels.tolist(), judged.tolist(), asked))
    assert results[0] == results[1]


@pytest.mark.parametrize("seed", range(3))
def test_neighbour_lists_by_counting_sorts_equal_the_comparison_sort(seed: int) -> None:
    """The compiled counting sorts and the small-job comparison sorts build the same
    neighbour lists, equal to sorting the edges by one combined key, on graphs with hubs
    and isolated documents."""
    rng = np.random.default_rng(seed)
    n = 300
    pairs = _graph(seed, n, 2_000, 60)
    rank = rng.permutation(n).astype(np.int64)
    at = np.empty(n, dtype=np.int64)
    at[np.argsort(rank, kind="stable")] = np.arange(n)
    low, high = (at[end] for end in _ends(rank, pairs))
    fast, slow = _neighbour_lists(low, high, n, True), _neighbour_lists(low, high, n, False)
    assert all(np.array_equal(f, s) for f, s in zip(fast, slow, strict=True))
    by = np.argsort(high * n + low, kind="stable")  # (document, neighbour)
    starts, lower, edge, up_starts, upper = fast
    assert np.array_equal(edge, by) and np.array_equal(lower, low[by])
    assert np.array_equal(starts, np.searchsorted(high[by], np.arange(n + 1)))
    up = np.argsort(low, kind="stable")
    assert np.array_equal(upper, high[up])
    assert np.array_equal(up_starts, np.searchsorted(low[up], np.arange(n + 1)))
    keys = rng.integers(0, 50, 1_000).astype(np.int64)
    order = rng.permutation(1_000).astype(np.int64)
    expected = order[np.argsort(keys[order], kind="stable")]
    assert np.array_equal(_stable_by(keys, 50, order), expected)


class _Shuffled:
    """A :class:`~neardup.batch.lazy.Judging` of ``workers`` simulated workers whose
    batches finish in a random order (what a pool does), cut into random pieces."""

    def __init__(self, truth: np.ndarray, scores: np.ndarray, workers: int, seed: int) -> None:
        self.truth, self.scores, self.workers = truth, scores, workers
        self.rng = np.random.default_rng(seed)
        self.started: list[np.ndarray] = []
        self.asked: list[np.ndarray] = []

    def idle(self) -> int:
        return max(0, self.workers - len(self.started))

    def running(self) -> int:
        return len(self.started)

    def start(self, todo: np.ndarray) -> None:
        self.asked.append(todo)
        cuts = np.sort(self.rng.integers(0, todo.shape[0] + 1, int(self.rng.integers(0, 3))))
        self.started.extend(p for p in np.split(self.rng.permutation(todo), cuts) if p.size)

    def next(self) -> tuple[np.ndarray, PairVerdicts]:
        todo = self.started.pop(int(self.rng.integers(0, len(self.started))))
        empty = PairVerdicts.empty()
        verdicts = PairVerdicts(
            self.truth[todo], self.scores[todo], empty.kept, empty.counts, empty.cosine
        )
        return todo, verdicts


@pytest.mark.parametrize("workers", [1, 2, 5])
@pytest.mark.parametrize("seed", range(10))
def test_overlapping_batches_give_the_same_centers(seed: int, workers: int) -> None:
    """Batches judged at once on several workers and finishing in any order: greedy
    centers as on every verdict, each judged pair asked once, its verdict the rule's."""
    rng = np.random.default_rng(500 + seed)
    case = _Case(seed, rng, 80, 300)
    judging = _Shuffled(case.truth, case.scores, workers, seed)
    assert isinstance(judging, Judging)
    cost = rng.integers(1, 50, case.pairs.shape[0])
    graph = neighbour_graph(case.pairs, case.rank, case.pinned, cost)
    verdicts, judged = lazy_verdicts(
        case.pairs,
        case.rank,
        case.pinned,
        judging,
        round_cost=int(rng.integers(0, 60)),
        pair_cost=cost,
        graph=graph,
    )
    case.check(verdicts, judged, judging.asked)
    assert judging.running() == 0
