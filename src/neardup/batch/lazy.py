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

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from neardup._jit import compiled_worthwhile, njit, uncompiled
from neardup.batch.verify import DUPLICATE, NOT_DUPLICATE, PairVerdicts

I64 = npt.NDArray[np.int64]
I8 = npt.NDArray[np.int8]

__all__ = ["lazy_verdicts"]

# States of a document in a sweep.
_OPEN, _CENTER, _MEMBER = 0, 1, 2
# States of an edge.
_UNJUDGED, _NO, _YES = -1, 0, 1


@njit(cache=True)  # type: ignore[misc]
def _sweep(
    order: I64, starts: I64, lower: I64, edge: I64, pinned: npt.NDArray[np.bool_], state: I8
) -> tuple[npt.NDArray[np.bool_], I8]:
    """``(ask, status)``: the edges to judge next and each document's fate so far.  For
    each document in rank order, scanning its lower-ranked neighbours in rank order: the
    unjudged edges to centers before its first open neighbour or duplicate edge to a
    center."""
    n = order.shape[0]
    status = np.zeros(n, dtype=np.int8)
    ask = np.zeros(state.shape[0], dtype=np.bool_)
    for x in order:
        if pinned[x]:
            status[x] = _CENTER
            continue
        fate = _CENTER
        for k in range(starts[x], starts[x + 1]):
            y = lower[k]
            if status[y] == _OPEN:
                fate = _OPEN
                break
            if status[y] == _MEMBER:
                continue
            s = state[edge[k]]
            if s == _YES:
                if fate == _CENTER:
                    fate = _MEMBER
                break
            if s == _UNJUDGED:
                ask[edge[k]] = True
                fate = _OPEN
        status[x] = fate
    return ask, status


@njit(cache=True)  # type: ignore[misc]
def _consultable(starts: I64, lower: I64, edge: I64, state: I8, status: I8) -> I64:
    """The unjudged edges a later round may still ask for: higher-ranked end open, lower end
    not a member.  Only the open documents' edges are read, once (each edge is listed
    under its worse-ranked end)."""
    room = 0
    for x in range(status.shape[0]):
        if status[x] == _OPEN:
            room += starts[x + 1] - starts[x]
    out = np.empty(room, dtype=np.int64)
    j = 0
    for x in range(status.shape[0]):
        if status[x] == _OPEN:
            for k in range(starts[x], starts[x + 1]):
                e = edge[k]
                if state[e] == _UNJUDGED and status[lower[k]] != _MEMBER:
                    out[j] = e
                    j += 1
    return out[:j]


def _ends(rank: I64, pairs: I64) -> tuple[I64, I64]:
    """The better-ranked and the worse-ranked end of every pair."""
    a, b = pairs[:, 0], pairs[:, 1]
    swap = rank[a] > rank[b]
    return np.where(swap, b, a), np.where(swap, a, b)


def _lower_csr(rank: I64, pairs: I64) -> tuple[I64, I64, I64]:
    """For every document, its lower-ranked neighbours sorted by rank (CSR ``starts``,
    ``lower``) and the index of the edge to each (``edge``)."""
    n = rank.shape[0]
    low, high = _ends(rank, pairs)
    by = np.lexsort((rank[low], high))
    starts = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(high, minlength=n), out=starts[1:])
    return starts, low[by].astype(np.int64), by.astype(np.int64)


#: What one round of lazy judging costs beside its verdicts, in characters of text judged:
#: the start of a judging stage (13-30 ms in one process) against 2.6-6 ns a character of
#: the two texts of a pair (planted Reuters copies and replicated news pages, docs/batch.md)
#: ...
ROUND_CHARS = 5_000_000
#: ... plus one character for every this many candidate edges the sweep reads.
SWEEP_EDGES_PER_CHAR = 8


# Estimated cost of one pair or document of a sweep run as plain Python, for
# neardup._jit.compiled_worthwhile (a few rounds of element-wise numpy indexing).
_PYTHON_NS_PER_ITEM = 3_000


def round_chars(pairs: int) -> int:
    """The cost of one round of lazy judging over ``pairs`` candidate pairs, in characters
    of text judged (:data:`ROUND_CHARS` plus the sweep's share)."""
    return ROUND_CHARS + pairs // SWEEP_EDGES_PER_CHAR


def lazy_verdicts(
    pairs: I64,
    rank: I64,
    pinned: npt.NDArray[np.bool_],
    judge: Callable[[I64], PairVerdicts],
    *,
    round_cost: int,
    pair_cost: I64 | None = None,
) -> tuple[PairVerdicts, npt.NDArray[np.bool_]]:
    """``(verdicts, judged)``: the verdicts ``judge`` (pair indexes -> their verdicts) gives
    on the pairs greedy centers consult (``judged``); the others are labelled ``not
    duplicate`` with a NaN score.

    Rounds stop the way a ski rental does: once the rounds so far have cost as much as
    judging at once every edge that may still be consulted (its higher-ranked end open, its
    lower end not a member), those edges are judged together and one more sweep asks for
    nothing.  ``round_cost`` is what a round costs beside its verdicts and ``pair_cost``
    what judging each pair costs (1 each by default), in one unit (the engine's: characters
    of text, :func:`round_chars`).  The rest is costed each time the rounds' cost has grown
    by half, so the rounds go on at most about half as long again as that rule says.
    Clusters are the same whatever the costs are; which pairs are judged (and carry a
    score) depends on them."""
    m = pairs.shape[0]
    labels = np.full(m, NOT_DUPLICATE, dtype=np.int8)
    scores = np.full(m, np.nan)
    state = np.full(m, _UNJUDGED, dtype=np.int8)
    if m == 0:
        return PairVerdicts(labels, scores, *_no_features()), state >= 0
    order = np.argsort(rank, kind="stable").astype(np.int64)
    starts, lower, edge = _lower_csr(rank, pairs)
    # A small job's sweeps run the kernels' own Python (the same code, uncompiled), so that
    # judging a few pairs never waits for numba to load (neardup._jit).
    compiled = compiled_worthwhile(_PYTHON_NS_PER_ITEM * (m + order.shape[0]))
    sweep = _sweep if compiled else uncompiled(_sweep)
    consultable = _consultable if compiled else uncompiled(_consultable)
    pin = np.ascontiguousarray(pinned, dtype=np.bool_)
    spent = check = 0
    while True:
        ask, status = sweep(order, starts, lower, edge, pin, state)
        if not ask.any():
            break
        todo = np.flatnonzero(ask).astype(np.int64)
        if spent and spent >= check:
            # Costing the rest reads every open document's edges (most of the edges, late
            # in a run on large clusters): done only when the rounds' cost has grown by
            # half since the last time.
            check = spent + spent // 2
            rest = np.sort(consultable(starts, lower, edge, state, status))
            cost = rest.shape[0] if pair_cost is None else int(pair_cost[rest].sum())
            if cost <= spent:
                todo = rest
        spent += round_cost
        verdicts = judge(todo)
        labels[todo] = verdicts.labels
        scores[todo] = verdicts.scores
        state[todo] = np.where(verdicts.labels == DUPLICATE, _YES, _NO)
    return PairVerdicts(labels, scores, *_no_features()), state >= 0


def _no_features() -> tuple[I64, I64, npt.NDArray[np.float64]]:
    empty = PairVerdicts.empty()
    return empty.kept, empty.counts, empty.cosine
