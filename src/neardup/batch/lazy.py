"""Judging only the pairs that greedy centers consult.

Greedy centers (:func:`~neardup.batch.unionfind.center_labels`) read the verdict of an edge
``(c, x)`` (``c`` ranked before ``x``) only when ``c`` is a center and no center ranked
before ``c`` took ``x``.  :func:`lazy_verdicts` asks the rule in rounds: each round sweeps
the documents in rank order with the verdicts known so far, settles every document whose
fate they already decide, and judges the edges a still-open document needs next (every
unjudged edge to a known center ranked before its first open neighbour).  When no edge is
asked for, every edge the greedy pass consults has been judged, so greedy centers on the
judged duplicate edges equal greedy centers on all verdicts.  Unjudged edges are treated as
not duplicates, which greedy never looks at.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from neardup._jit import njit
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


def lazy_verdicts(
    pairs: I64,
    rank: I64,
    pinned: npt.NDArray[np.bool_],
    judge: Callable[[I64], PairVerdicts],
    max_rounds: int = 12,
) -> tuple[PairVerdicts, npt.NDArray[np.bool_]]:
    """``(verdicts, judged)``: the verdicts ``judge`` (pair indexes -> their verdicts) gives
    on the pairs greedy centers consult (``judged``); the others are labelled ``not
    duplicate`` with a NaN score.  After ``max_rounds`` rounds, every edge still able to
    matter (its higher-ranked end open) is judged at once, bounding the rounds."""
    m = pairs.shape[0]
    labels = np.full(m, NOT_DUPLICATE, dtype=np.int8)
    scores = np.full(m, np.nan)
    state = np.full(m, _UNJUDGED, dtype=np.int8)
    if m == 0:
        return PairVerdicts(labels, scores, *_no_features()), state >= 0
    order = np.argsort(rank, kind="stable").astype(np.int64)
    starts, lower, edge = _lower_csr(rank, pairs)
    pin = np.ascontiguousarray(pinned, dtype=np.bool_)
    low, high = _ends(rank, pairs)
    for round_ in range(max_rounds + 1):
        ask, status = _sweep(order, starts, lower, edge, pin, state)
        if not ask.any():
            break
        if round_ == max_rounds:
            # Every edge that may still be consulted: its higher end open, its lower end
            # not a member; one more sweep then asks for nothing.
            ask = (state == _UNJUDGED) & (status[high] == _OPEN) & (status[low] != _MEMBER)
        todo = np.flatnonzero(ask).astype(np.int64)
        verdicts = judge(todo)
        labels[todo] = verdicts.labels
        scores[todo] = verdicts.scores
        state[todo] = np.where(verdicts.labels == DUPLICATE, _YES, _NO)
    return PairVerdicts(labels, scores, *_no_features()), state >= 0


def _no_features() -> tuple[I64, I64, npt.NDArray[np.float64]]:
    empty = PairVerdicts.empty()
    return empty.kept, empty.counts, empty.cosine
