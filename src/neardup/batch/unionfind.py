"""Clusters of documents from their duplicate verdicts.

Two ways, over document ordinals ``0..n-1``:

* :func:`component_labels`, union-find (disjoint sets): the connected components of the
  duplicate pairs, each labelled by its *smallest* ordinal.  Transitive: A duplicates B and
  B duplicates C puts A and C together even when the rule calls A and C only a partial copy
  (an excerpt and the long write-thru it was cut from, joined by the story's wire copy).
  Union by size with path halving: near-linear time, ``O(n)`` memory;
* :func:`center_labels`, greedy centers: documents are taken in the order of preference of
  the kept document (``rank``); one not yet in a cluster becomes a *center* (kept), and every
  document the rule calls its duplicate that is not yet in a cluster joins it.  Every
  member is then a duplicate of its cluster's kept document, which is what a row saying
  "duplicate_of" claims.  ``O(n + pairs)``.

Guarantees: both depend only on the set of edges (and the rank), never on their order or on
how the work was split between workers (deterministic); tested against plain-Python
references.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from neardup._jit import compiled_worthwhile, njit
from neardup.errors import InputError

__all__ = ["UnionFind", "center_labels", "component_labels"]

I64 = npt.NDArray[np.int64]


@njit(cache=True)  # type: ignore[misc]
def _find(parent: I64, x: int) -> int:
    while parent[x] != x:
        parent[x] = parent[parent[x]]  # path halving
        x = parent[x]
    return x


@njit(cache=True)  # type: ignore[misc]
def _union_all(parent: I64, size: I64, left: I64, right: I64) -> None:
    for k in range(left.shape[0]):
        a = _find(parent, left[k])
        b = _find(parent, right[k])
        if a == b:
            continue
        if size[a] < size[b]:
            a, b = b, a
        parent[b] = a
        size[a] += size[b]


@njit(cache=True)  # type: ignore[misc]
def _min_labels(parent: I64) -> I64:
    n = parent.shape[0]
    root_min = np.full(n, n, dtype=np.int64)
    roots = np.empty(n, dtype=np.int64)
    for x in range(n):
        r = _find(parent, x)
        roots[x] = r
        if x < root_min[r]:
            root_min[r] = x
    labels = np.empty(n, dtype=np.int64)
    for x in range(n):
        labels[x] = root_min[roots[x]]
    return labels


def _find_list(parent: list[int], x: int) -> int:
    """:func:`_find` on a Python list (the small-input path)."""
    while parent[x] != x:
        parent[x] = parent[parent[x]]
        x = parent[x]
    return x


class UnionFind:
    """Disjoint sets over ``0..n-1``; add edges in batches, read canonical labels."""

    def __init__(self, n: int) -> None:
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise InputError(f"union-find size must be a non-negative integer, got {n!r}")
        self.n = n
        self._parent: I64 = np.arange(n, dtype=np.int64)
        self._size: I64 = np.ones(n, dtype=np.int64)

    def union(self, left: npt.ArrayLike, right: npt.ArrayLike) -> None:
        """Merge the sets of ``left[k]`` and ``right[k]`` for every ``k``."""
        a = np.ascontiguousarray(left, dtype=np.int64).reshape(-1)
        b = np.ascontiguousarray(right, dtype=np.int64).reshape(-1)
        if a.shape != b.shape:
            raise InputError(f"edge arrays differ in length ({a.shape[0]} vs {b.shape[0]})")
        if a.size and (
            min(int(a.min()), int(b.min())) < 0 or max(int(a.max()), int(b.max())) >= self.n
        ):
            raise InputError(f"edge endpoint outside 0..{self.n - 1}")
        if compiled_worthwhile(1_000 * a.shape[0]):
            _union_all(self._parent, self._size, a, b)
        else:  # a few edges: the same steps in Python, without loading numba
            parent, size = self._parent.tolist(), self._size.tolist()
            for x, y in zip(a.tolist(), b.tolist(), strict=True):
                rx, ry = _find_list(parent, x), _find_list(parent, y)
                if rx != ry:
                    if size[rx] < size[ry]:
                        rx, ry = ry, rx
                    parent[ry] = rx
                    size[rx] += size[ry]
            self._parent[:] = parent
            self._size[:] = size

    def labels(self) -> I64:
        """For every element, the smallest element of its set."""
        if self.n == 0:
            return np.empty(0, dtype=np.int64)
        if compiled_worthwhile(1_000 * self.n):
            result: I64 = _min_labels(self._parent)
            return result
        parent = self._parent.tolist()
        roots = [_find_list(parent, x) for x in range(self.n)]
        smallest: dict[int, int] = {}
        for x, r in enumerate(roots):
            smallest.setdefault(r, x)  # x rises: the first one seen is the smallest
        return np.array([smallest[r] for r in roots], dtype=np.int64)


def component_labels(n: int, left: npt.ArrayLike, right: npt.ArrayLike) -> I64:
    """Connected components of the graph on ``0..n-1`` with edges ``(left[k], right[k])``:
    each vertex labelled by the smallest vertex of its component."""
    uf = UnionFind(n)
    uf.union(left, right)
    return uf.labels()


@njit(cache=True)  # type: ignore[misc]
def _centers(order: I64, starts: I64, neighbours: I64, pinned: npt.NDArray[np.bool_]) -> I64:
    n = order.shape[0]
    center = np.full(n, -1, dtype=np.int64)
    for x in order:
        if center[x] < 0:
            center[x] = x
        if center[x] != x:
            continue
        for k in range(starts[x], starts[x + 1]):
            y = neighbours[k]
            if center[y] < 0 and not pinned[y]:
                center[y] = x
    return center


def center_labels(
    rank: npt.ArrayLike,
    left: npt.ArrayLike,
    right: npt.ArrayLike,
    pinned: npt.ArrayLike | None = None,
) -> I64:
    """Greedy centers (module docstring) of the graph on ``0..n-1`` (``n = len(rank)``) with
    edges ``(left[k], right[k])``: each vertex labelled by its center.

    Vertices are taken by ascending ``rank`` (distinct values); ``pinned`` vertices are
    always centers of their own (documents that stay whatever happens: ``--against``).
    """
    ranks = np.asarray(rank, dtype=np.int64).reshape(-1)
    n = ranks.shape[0]
    a = np.ascontiguousarray(left, dtype=np.int64).reshape(-1)
    b = np.ascontiguousarray(right, dtype=np.int64).reshape(-1)
    if a.shape != b.shape:
        raise InputError(f"edge arrays differ in length ({a.shape[0]} vs {b.shape[0]})")
    if a.size and (min(int(a.min()), int(b.min())) < 0 or max(int(a.max()), int(b.max())) >= n):
        raise InputError(f"edge endpoint outside 0..{n - 1}")
    keep = np.zeros(n, dtype=np.bool_) if pinned is None else np.asarray(pinned, dtype=np.bool_)
    # Both directions of every edge, grouped by source (CSR).
    source = np.concatenate([a, b])
    target = np.concatenate([b, a])
    by_source = np.argsort(source, kind="stable")
    starts = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(source, minlength=n), out=starts[1:])
    order = np.argsort(ranks, kind="stable").astype(np.int64)
    neighbours = target[by_source]
    if compiled_worthwhile(1_000 * (n + neighbours.shape[0])):
        result: I64 = _centers(order, starts, neighbours, keep)
        return result
    return _centers_python(order, starts, neighbours, keep)


def _centers_python(order: I64, starts: I64, neighbours: I64, pinned: npt.NDArray[np.bool_]) -> I64:
    """:func:`_centers` on Python lists (the small-input path, without loading numba)."""
    center = [-1] * order.shape[0]
    starts_list, targets, fixed = starts.tolist(), neighbours.tolist(), pinned.tolist()
    for x in order.tolist():
        if center[x] < 0:
            center[x] = x
        if center[x] != x:
            continue
        for y in targets[starts_list[x] : starts_list[x + 1]]:
            if center[y] < 0 and not fixed[y]:
                center[y] = x
    return np.array(center, dtype=np.int64)
