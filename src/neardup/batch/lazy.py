"""Judging only the pairs that greedy centers consult.

Greedy centers (:func:`~neardup.batch.unionfind.center_labels`) read the verdict of an edge
``(c, x)`` (``c`` ranked before ``x``) only when ``c`` is a center and no center ranked
before ``c`` took ``x``.  :func:`lazy_verdicts` asks the rule in rounds: each round sweeps
the documents in rank order with the verdicts known so far, settles every document whose
fate they already decide, and judges the edges a still-open document needs next (every
unjudged edge to a known center ranked before its first open neighbour).  When no edge is
asked for, every edge the greedy pass consults has been judged, so greedy centers on the
judged duplicate edges equal greedy centers on all verdicts.  Unjudged edges are treated as
not duplicates, which greedy never looks at.  Rounds cost something of their own, so they
stop once they have cost as much as judging the rest at once (:func:`lazy_verdicts`).
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Callable
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from neardup._jit import compiled_worthwhile, njit, uncompiled
from neardup.batch.verify import DUPLICATE, NOT_DUPLICATE, PairVerdicts

I64 = npt.NDArray[np.int64]
I8 = npt.NDArray[np.int8]

__all__ = ["Judging", "NeighbourGraph", "Synchronous", "lazy_verdicts", "neighbour_graph"]

# States of a document in a sweep.
_OPEN, _CENTER, _MEMBER = 0, 1, 2
# States of an edge (_PENDING: asked, its verdict not back yet).
_UNJUDGED, _NO, _YES, _PENDING = -1, 0, 1, 2


# The kernels release the GIL: in a pooled run the pool's threads in this process send
# chunks to the workers and take their verdicts while a sweep runs (and the graph is
# built on a thread while the workers profile).
@njit(cache=True, nogil=True)  # type: ignore[misc]
def _sweep(
    starts: I64,
    lower: I64,
    state: I8,
    pinned: npt.NDArray[np.bool_],
    status: I8,
    dirty: npt.NDArray[np.bool_],
    up_starts: I64,
    upper: I64,
    resume: I64,
    asked: I64,
) -> tuple[int, int]:
    """``(count, read)``: writes to ``asked[:count]`` the edges to judge next (their
    positions in the lower-neighbour lists) and to ``status`` each document's fate so far;
    ``read``: the edges the sweep read.

    Documents are numbered by rank position (every array here is indexed by it, so a
    sweep reads the lists front to back instead of jumping through memory) and taken in
    that order.  For each, its lower-ranked neighbours are scanned in rank order: the
    unjudged edges to centers before its first open neighbour or duplicate edge to a
    center are asked.  A document's fate depends only on its edges' states and its lower
    neighbours' fates, so only the documents marked ``dirty`` (one of their edges was
    judged, or, in this sweep, a lower neighbour's fate changed) are scanned again; the
    others keep theirs.  ``state`` holds each edge's state at its position in the lists,
    so the scan reads it in sequence; ``upper`` lists each document's higher-ranked
    neighbours (CSR ``up_starts``).  The scan of a document starts at ``resume``, past the
    neighbours already known to be skipped for good (members, and centers whose edge was
    judged not a duplicate).  An edge whose verdict is pending (asked before, not back yet)
    leaves its document open and is not asked again."""
    count = 0
    read = 0
    for x in range(status.shape[0]):
        if not dirty[x]:
            continue
        dirty[x] = False
        fate = _CENTER
        if not pinned[x]:
            settled = True  # every neighbour so far is skipped for good
            for k in range(resume[x], starts[x + 1]):
                read += 1
                y = lower[k]
                if status[y] == _OPEN:
                    fate = _OPEN
                    break
                if status[y] != _MEMBER:
                    s = state[k]
                    if s == _YES:
                        if fate == _CENTER:
                            fate = _MEMBER
                        break
                    if s == _UNJUDGED:
                        asked[count] = k
                        count += 1
                        fate = _OPEN
                        settled = False
                    elif s == _PENDING:
                        fate = _OPEN
                        settled = False
                if settled:
                    resume[x] = k + 1
        if fate != status[x]:
            status[x] = fate
            for j in range(up_starts[x], up_starts[x + 1]):
                dirty[upper[j]] = True
    return count, read


@njit(cache=True, nogil=True)  # type: ignore[misc]
def _consultable(
    starts: I64, lower: I64, state: I8, status: I8, cost: I64, listing: bool
) -> tuple[I64, int]:
    """The unjudged edges a later round may still ask for (higher-ranked end open, lower
    end not a member): their positions in the lower-neighbour lists when ``listing`` (else
    none), and their summed ``cost`` (of each edge, by list position; most rounds only
    compare it with what the rounds have cost).  Only the open documents' edges are read,
    once (each edge is listed under its worse-ranked end)."""
    room = 0
    if listing:
        for x in range(status.shape[0]):
            if status[x] == _OPEN:
                room += starts[x + 1] - starts[x]
    out = np.empty(room, dtype=np.int64)
    j = 0
    total = 0
    for x in range(status.shape[0]):
        if status[x] == _OPEN:
            for k in range(starts[x], starts[x + 1]):
                if state[k] == _UNJUDGED and status[lower[k]] != _MEMBER:
                    total += cost[k]
                    if listing:
                        out[j] = k
                        j += 1
    return out[:j], total


def _ends(rank: I64, pairs: I64) -> tuple[I64, I64]:
    """The better-ranked and the worse-ranked end of every pair."""
    a, b = pairs[:, 0], pairs[:, 1]
    swap = rank[a] > rank[b]
    return np.where(swap, b, a), np.where(swap, a, b)


@njit(cache=True, nogil=True)  # type: ignore[misc]
def _stable_by(keys: I64, size: int, order: I64) -> I64:
    """``order`` sorted stably by ``keys[order]`` (integers in ``[0, size)``): a counting
    sort, O(len + size), the permutation ``order[np.argsort(keys[order], kind="stable")]``
    (a comparison sort of millions of edges costs ten times as long)."""
    starts = np.zeros(size + 1, dtype=np.int64)
    for i in range(order.shape[0]):
        starts[keys[order[i]] + 1] += 1
    for k in range(size):
        starts[k + 1] += starts[k]
    out = np.empty(order.shape[0], dtype=np.int64)
    for i in range(order.shape[0]):
        k = keys[order[i]]
        out[starts[k]] = order[i]
        starts[k] += 1
    return out


def _neighbour_lists(low: I64, high: I64, n: int, compiled: bool) -> tuple[I64, I64, I64, I64, I64]:
    """For each of the ``n`` documents (by rank position; ``low``: each edge's better-ranked
    end, ``high`` the other, both rank positions): its lower-ranked neighbours in rank
    order (CSR ``starts``, ``lower``) with the index of the edge to each (``edge``), and its
    higher-ranked neighbours (CSR ``up_starts``, ``upper``).  One stable sort of the edges
    by their better end gives ``upper``; sorting that order stably by the worse end gives
    the lower lists, each in rank order.  ``compiled``: counting sorts, else comparison
    sorts; the same order."""
    m = low.shape[0]
    if compiled:
        by_low = _stable_by(low, n, np.arange(m, dtype=np.int64))
        by_high = _stable_by(high, n, by_low)
    else:
        by_low = np.argsort(low, kind="stable")
        by_high = by_low[np.argsort(high[by_low], kind="stable")]
    starts = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(high, minlength=n), out=starts[1:])
    up_starts = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(low, minlength=n), out=up_starts[1:])
    return starts, low[by_high], by_high.astype(np.int64), up_starts, high[by_low]


#: What one round of lazy judging costs beside its verdicts, in characters of text judged
#: (judging costs 1.4 ns a character of the two texts of a pair on the planted Reuters
#: corpus, its verdicts read in place from the profile table): the start of a judging
#: stage, about 1.7 ms in one process ...
ROUND_CHARS = 1_000_000
#: ... plus this many characters for each candidate edge a sweep reads (9 ns an edge on
#: 100,000 planted documents, docs/batch.md).
SWEEP_CHARS_PER_EDGE = 6


# Estimated cost of one pair or document of a sweep run as plain Python, for
# neardup._jit.compiled_worthwhile (a few rounds of element-wise numpy indexing).
_PYTHON_NS_PER_ITEM = 3_000


@runtime_checkable
class Judging(Protocol):
    """Judges batches of pairs, possibly several at once (the workers of a pool).

    :func:`lazy_verdicts` starts a batch whenever :meth:`idle` says a worker has nothing to
    do, and waits for one batch's verdicts with :meth:`next` when none is idle or nothing
    is left to ask."""

    def idle(self) -> int:
        """How many batches could start now without waiting (at least 1 when none is
        running)."""
        ...

    def running(self) -> int:
        """Batches started whose verdicts :meth:`next` has not returned yet."""
        ...

    def start(self, todo: I64) -> None:
        """Start judging the pairs ``todo`` (pair indexes), possibly as several batches."""
        ...

    def next(self) -> tuple[I64, PairVerdicts]:
        """``(todo, verdicts)`` of one started batch (waits for one to finish)."""
        ...


class Synchronous:
    """:class:`Judging` by a function of the pairs, one batch at a time, in this process."""

    def __init__(self, judge: Callable[[I64], PairVerdicts]) -> None:
        self.judge = judge
        self.done: collections.deque[tuple[I64, PairVerdicts]] = collections.deque()

    def idle(self) -> int:
        return 0 if self.done else 1

    def running(self) -> int:
        return len(self.done)

    def start(self, todo: I64) -> None:
        self.done.append((todo, self.judge(todo)))

    def next(self) -> tuple[I64, PairVerdicts]:
        return self.done.popleft()


@dataclasses.dataclass(frozen=True)
class NeighbourGraph:
    """The candidate pairs as lazy judging reads them (:func:`neighbour_graph`): documents
    numbered by rank position, each one's lower-ranked neighbours in rank order (CSR
    ``starts``, ``lower``, the pair index of each: ``edge``) and higher-ranked ones (CSR
    ``up_starts``, ``upper``); each pair's worse-ranked end (``high``), its position in the
    lower lists (``position``) and the cost of judging it there (``cost``); whether each
    document is pinned (``pinned``); ``compiled``: the sweeps run compiled."""

    compiled: bool
    high: I64
    starts: I64
    lower: I64
    edge: I64
    up_starts: I64
    upper: I64
    position: I64
    cost: I64
    pinned: npt.NDArray[np.bool_]


def neighbour_graph(
    pairs: I64, rank: I64, pinned: npt.NDArray[np.bool_], pair_cost: I64 | None = None
) -> NeighbourGraph:
    """The :class:`NeighbourGraph` of ``pairs`` (see :func:`lazy_verdicts`): it needs no
    verdict, so a pooled run builds it while the workers make the profiles."""
    n, m = rank.shape[0], pairs.shape[0]
    order = np.argsort(rank, kind="stable").astype(np.int64)
    at = np.empty(n, dtype=np.int64)  # each document's rank position: its number below
    at[order] = np.arange(n, dtype=np.int64)
    # A small job's sweeps run the kernels' own Python (the same code, uncompiled), so that
    # judging a few pairs never waits for numba to load (neardup._jit).
    compiled = compiled_worthwhile(_PYTHON_NS_PER_ITEM * (m + n))
    low, high = (at[end] for end in _ends(rank, pairs))
    lists = _neighbour_lists(low, high, n, compiled)
    edge = lists[2]
    position = np.empty(m, dtype=np.int64)
    position[edge] = np.arange(m, dtype=np.int64)
    cost = np.ones(m, dtype=np.int64) if pair_cost is None else pair_cost[edge]
    pin = np.ascontiguousarray(np.asarray(pinned, dtype=np.bool_)[order])
    return NeighbourGraph(compiled, high, *lists, position, cost, pin)


def lazy_verdicts(
    pairs: I64,
    rank: I64,
    pinned: npt.NDArray[np.bool_],
    judge: Callable[[I64], PairVerdicts] | Judging,
    *,
    round_cost: int,
    edge_cost: int = 0,
    pair_cost: I64 | None = None,
    graph: NeighbourGraph | None = None,
) -> tuple[PairVerdicts, npt.NDArray[np.bool_]]:
    """``(verdicts, judged)``: the verdicts ``judge`` (pair indexes -> their verdicts, or a
    :class:`Judging` that judges several batches at once) gives on the pairs greedy centers
    consult (``judged``); the others are labelled ``not duplicate`` with a NaN score.
    ``graph``: :func:`neighbour_graph` of the same arguments, if already built.

    With a :class:`Judging` of several workers the rounds overlap: whenever a worker is
    idle, a sweep with the verdicts back so far asks for the edges no batch is judging, so
    the workers do not wait for each other's batches nor for the sweeps (an edge still being
    judged leaves its document open, as an unjudged one does).

    Rounds stop the way a ski rental does: once the rounds so far have cost as much as
    judging at once every edge that may still be consulted (its higher-ranked end open, its
    lower end not a member), those edges are judged together and one more sweep asks for
    nothing.  ``round_cost`` is what a round costs beside its verdicts and its sweep,
    ``edge_cost`` what the sweep costs for each edge it reads (every edge of the documents
    from the first open one on), and ``pair_cost`` what judging each pair costs (1 each by
    default), all in one unit (the engine's: characters of text, :data:`ROUND_CHARS` and
    :data:`SWEEP_CHARS_PER_EDGE`).  The rest is costed each time the rounds' cost has grown
    by half, so the rounds go on at most about half as long again as that rule says.
    Clusters are the same whatever the costs are and in whatever order batches finish;
    which pairs are judged (and carry a score) depends on both."""
    judging = judge if isinstance(judge, Judging) else Synchronous(judge)
    m = pairs.shape[0]
    labels = np.full(m, NOT_DUPLICATE, dtype=np.int8)
    scores = np.full(m, np.nan)
    state = np.full(m, _UNJUDGED, dtype=np.int8)
    if m == 0:
        return PairVerdicts(labels, scores, *_no_features()), state >= 0
    g = graph if graph is not None else neighbour_graph(pairs, rank, pinned, pair_cost)
    starts, lower, edge, up_starts, upper = g.starts, g.lower, g.edge, g.up_starts, g.upper
    high, position = g.high, g.position
    sweep = _sweep if g.compiled else uncompiled(_sweep)
    consultable = _consultable if g.compiled else uncompiled(_consultable)
    # Edge states at their positions in the neighbour lists (what the sweep reads in turn).
    listed = np.full(m, _UNJUDGED, dtype=np.int8)
    n = rank.shape[0]
    # The first sweep scans every document; an open one is its own fate's first change.
    status = np.full(n, -1, dtype=np.int8)
    dirty = np.ones(n, dtype=np.bool_)
    resume = starts[:-1].copy()
    asked = np.empty(m, dtype=np.int64)
    spent = check = 0
    while True:
        if judging.idle():
            count, read = sweep(
                starts, lower, listed, g.pinned, status, dirty, up_starts, upper, resume, asked
            )
            spent += edge_cost * read
            if count:
                todo = np.sort(edge[asked[:count]])
                if spent and spent >= check:
                    # Costing the rest reads every open document's edges (most of the edges,
                    # late in a run on large clusters): done only when the rounds' cost has
                    # grown by half since the last time.
                    check = spent + spent // 2
                    if consultable(starts, lower, listed, status, g.cost, False)[1] <= spent:
                        rest, _ = consultable(starts, lower, listed, status, g.cost, True)
                        todo = np.sort(edge[rest])
                spent += round_cost
                listed[position[todo]] = _PENDING
                judging.start(todo)
        if not judging.running():
            break
        todo, verdicts = judging.next()
        labels[todo] = verdicts.labels
        scores[todo] = verdicts.scores
        state[todo] = np.where(verdicts.labels == DUPLICATE, _YES, _NO)
        listed[position[todo]] = state[todo]
        dirty[high[todo]] = True  # the worse-ranked ends
    return PairVerdicts(labels, scores, *_no_features()), state >= 0


def _no_features() -> tuple[I64, I64, npt.NDArray[np.float64]]:
    empty = PairVerdicts.empty()
    return empty.kept, empty.counts, empty.cosine
