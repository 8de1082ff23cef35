"""Clusters from duplicate verdicts: union-find components equal graph reachability (BFS
oracle) and greedy centers equal a plain-Python greedy, whatever the edge order."""

from __future__ import annotations

import collections

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup._jit import forced
from neardup.batch.unionfind import UnionFind, center_labels, component_labels
from neardup.errors import InputError


def _bfs_labels(n: int, edges: list[tuple[int, int]]) -> list[int]:
    adjacency: dict[int, list[int]] = collections.defaultdict(list)
    for a, b in edges:
        adjacency[a].append(b)
        adjacency[b].append(a)
    labels = [-1] * n
    for start in range(n):
        if labels[start] != -1:
            continue
        labels[start] = start  # BFS from the smallest unvisited vertex: label = component min
        queue = collections.deque([start])
        while queue:
            v = queue.popleft()
            for w in adjacency[v]:
                if labels[w] == -1:
                    labels[w] = start
                    queue.append(w)
    return labels


graphs = st.integers(min_value=1, max_value=60).flatmap(
    lambda n: st.tuples(
        st.just(n),
        st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=3 * n),
    )
)


@settings(max_examples=200, deadline=None)
@given(graphs, st.randoms(use_true_random=False))
def test_labels_equal_bfs_components_in_any_order(graph, rnd) -> None:
    n, edges = graph
    expected = _bfs_labels(n, edges)
    shuffled = list(edges)
    rnd.shuffle(shuffled)
    for order in (edges, shuffled, [(b, a) for a, b in shuffled]):
        left = np.array([a for a, _ in order], dtype=np.int64)
        right = np.array([b for _, b in order], dtype=np.int64)
        for compiled in (True, False):  # the kernels, and the small-input Python path
            with forced(compiled):
                assert component_labels(n, left, right).tolist() == expected


@settings(max_examples=100, deadline=None)
@given(graphs)
def test_batched_unions_equal_one_batch(graph) -> None:
    n, edges = graph
    uf = UnionFind(n)
    for a, b in edges:  # one edge at a time
        uf.union([a], [b])
    left = [a for a, _ in edges]
    right = [b for _, b in edges]
    assert uf.labels().tolist() == component_labels(n, left, right).tolist()
    # Idempotent: adding the same edges again changes nothing.
    uf.union(left, right)
    assert uf.labels().tolist() == _bfs_labels(n, edges)


def test_empty_and_bad_input() -> None:
    assert component_labels(0, [], []).shape == (0,)
    assert component_labels(3, [], []).tolist() == [0, 1, 2]
    with pytest.raises(InputError):
        component_labels(3, [0], [3])
    with pytest.raises(InputError):
        component_labels(3, [0, 1], [2])
    with pytest.raises(InputError):
        UnionFind(-1)


def _greedy_centers(rank: list[int], edges: list[tuple[int, int]], pinned: list[bool]) -> list[int]:
    adjacency: dict[int, set[int]] = collections.defaultdict(set)
    for a, b in edges:
        adjacency[a].add(b)
        adjacency[b].add(a)
    center = [-1] * len(rank)
    for v in sorted(range(len(rank)), key=lambda x: rank[x]):
        if center[v] == -1:
            center[v] = v
        if center[v] != v:
            continue
        for w in adjacency[v]:
            if center[w] == -1 and not pinned[w]:
                center[w] = v
    return center


@settings(max_examples=200, deadline=None)
@given(graphs, st.randoms(use_true_random=False))
def test_centers_equal_greedy_in_any_order(graph, rnd) -> None:
    n, edges = graph
    rank = list(range(n))
    rnd.shuffle(rank)
    pinned = [rnd.random() < 0.2 for _ in range(n)]
    expected = _greedy_centers(rank, edges, pinned)
    shuffled = list(edges)
    rnd.shuffle(shuffled)
    for order in (edges, [(b, a) for a, b in shuffled]):
        left = np.array([a for a, _ in order], dtype=np.int64)
        right = np.array([b for _, b in order], dtype=np.int64)
        for compiled in (True, False):  # the kernel, and the small-input Python path
            with forced(compiled):
                got = center_labels(rank, left, right, pinned=pinned).tolist()
            assert got == expected
    # Every member is joined to its center by an edge; every pinned vertex is a center.
    pairs = {frozenset(e) for e in edges}
    for v, c in enumerate(expected):
        assert c == v or frozenset((v, c)) in pairs
        assert not pinned[v] or c == v


def test_centers_do_not_chain() -> None:
    """A - B - C (A preferred): B joins A; C, not a duplicate of A, keeps itself."""
    labels = center_labels([0, 1, 2], np.array([0, 1]), np.array([1, 2]))
    assert labels.tolist() == [0, 0, 2]
    assert component_labels(3, np.array([0, 1]), np.array([1, 2])).tolist() == [0, 0, 0]


def test_center_labels_rejects_bad_edges() -> None:
    with pytest.raises(InputError):
        center_labels([0, 1], np.array([0]), np.array([2]))
    with pytest.raises(InputError):
        center_labels([0, 1], np.array([0, 1]), np.array([1]))
