"""One document through the three phases in compiled code (seed 004, Section 2).

The engine (:mod:`.engine`) calls :func:`bucket_document` once per document for a bucketed
table: it builds the facts stored with each fingerprint (:func:`probe_facts`), probes the
table (:mod:`.table`), estimates the origins (:mod:`.estimate`), applies the lucky scores
(:mod:`.evict`) and derives the per-token and per-document outputs (:func:`conclude`).  The
reference mode's dict table runs :func:`probe_facts` and :func:`conclude` around its own
probe.  Numbers, not decisions, cross the boundary: each step is the function of the same
name tested on its own (``tests/test_origin_*.py``); fusing them only removes the Python
overhead per document (a few dozen array operations on documents of ~150 tokens).

Conventions: ``fps`` are a document's looked-up fingerprints in position order with token
ranges ``[starts[j], ends[j])``; ``anchors`` the indices (ascending) of the selected ones
(all of them in the paper's mode).  Tiered (adaptive mode): fingerprints that are not
anchors are stored loose, and only what ``maybe_lost`` allows is estimated.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np
import numpy.typing as npt

from neardup.detect.origin.buckets import add_scores, probe_insert
from neardup.detect.origin.estimate import (
    _top_two,
    estimate,
    extend_edges,
    fill_between,
)
from neardup.detect.origin.evict import LUCKY, lucky_bonus

__all__ = ["bucket_document", "conclude", "origins_and_cuts", "probe_facts"]

U8 = npt.NDArray[np.uint8]
U64 = npt.NDArray[np.uint64]
I64 = npt.NDArray[np.int64]
BOOL = npt.NDArray[np.bool_]


@numba.njit(cache=True)
def probe_facts(fps: U64, anchors: I64, tiered: bool) -> tuple[Any, Any, Any, Any]:
    """(anchor mask, offsets, preceding and succeeding bytes) stored with each fingerprint.

    The offset of a fingerprint is the number of anchors before it (mod 256) and its
    neighbour bytes are the first bytes of the anchors before and after it: for an anchor
    exactly the paper's offset and neighbours among the selected shingles (Section 2.2).
    Not tiered: the mask is empty (every fingerprint is an anchor)."""
    m = fps.shape[0]
    a = anchors.shape[0]
    is_anchor = np.zeros(m if tiered else 0, dtype=np.bool_)
    offs = np.empty(m, dtype=np.uint8)
    pb = np.zeros(m, dtype=np.uint8)
    nb = np.zeros(m, dtype=np.uint8)
    r = 0  # anchors before position j
    for j in range(m):
        here = r < a and anchors[r] == j
        if here and tiered:
            is_anchor[j] = True
        offs[j] = np.uint8(r & 255)
        if r > 0:
            pb[j] = np.uint8(fps[anchors[r - 1]] >> np.uint64(56))
        nxt = r + 1 if here else r
        if nxt < a:
            nb[j] = np.uint8(fps[anchors[nxt]] >> np.uint64(56))
        if here:
            r += 1
    return is_anchor, offs, pb, nb


@numba.njit(cache=True)
def conclude(
    own: int,
    fps: U64,
    starts: I64,
    ends: I64,
    anchors: I64,
    n_tokens: int,
    found: BOOL,
    origin: I64,
    offset: U8,
    prev: U8,
    nxt: U8,
    maybe_lost: BOOL,
    method: int,
    bridge_limit: int,
    tolerance: int,
    radius: int,
    lucky_every: int,
) -> tuple[Any, Any, Any, Any, int, int, int, int]:
    """Estimation and outputs of one document after its probe.

    Returns (origin of every fingerprint, origins for the tokens (with edge extension),
    per-token origin or -1, lucky bonus of each anchor, most copied origin, its count, the
    runner-up's count, the number of distinct origins)."""
    a = anchors.shape[0]
    af = np.empty(a, dtype=np.uint64)
    a_found = np.empty(a, dtype=np.bool_)
    a_origin = np.empty(a, dtype=np.int64)
    a_off = np.empty(a, dtype=np.uint8)
    a_prev = np.empty(a, dtype=np.uint8)
    a_next = np.empty(a, dtype=np.uint8)
    a_lost = np.empty(a, dtype=np.bool_)
    positions = np.empty(a, dtype=np.int64)
    for r in range(a):
        j = anchors[r]
        af[r] = fps[j]
        a_found[r] = found[j]
        a_origin[r] = origin[j]
        a_off[r] = offset[j]
        a_prev[r] = prev[j]
        a_next[r] = nxt[j]
        a_lost[r] = maybe_lost[j]
        positions[r] = j
    est_a = estimate(
        own, af, a_found, a_origin, a_off, a_prev, a_next, method, bridge_limit, tolerance,
        a_lost,
    )  # fmt: skip
    bonus = lucky_bonus(est_a, own, lucky_every)
    m = fps.shape[0]
    index = np.arange(m, dtype=np.int64)
    est = fill_between(own, index, positions, est_a, found, origin, maybe_lost)
    if radius > 0:
        marked_a = extend_edges(own, a_found, est_a, radius, a_lost)
        marked = fill_between(own, index, positions, marked_a, found, origin, maybe_lost)
    else:
        marked = est
    tok = np.full(n_tokens, -1, dtype=np.int64)
    for j in range(m):
        if marked[j] == own:
            continue
        for t in range(starts[j], ends[j]):
            if tok[t] < 0:
                tok[t] = marked[j]
    if m == 0:
        return est, marked, tok, bonus, own, 0, 0, 1
    best, best_count, second, distinct = _top_two(est, own)
    return est, marked, tok, bonus, best, best_count, second, distinct


@numba.njit(cache=True)
def origins_and_cuts(own: int, est: I64, marked: I64, tok: I64) -> tuple[I64, I64]:
    """(the distinct origins other than ``own`` in ``est`` and ``marked``, ascending; the
    token indices where a new segment starts: 0 and every change of ``tok``, plus its
    length)."""
    m = est.shape[0]
    both = np.empty(2 * m, dtype=np.int64)
    c = 0
    for j in range(m):
        if est[j] != own:
            both[c] = est[j]
            c += 1
        if marked[j] != own:
            both[c] = marked[j]
            c += 1
    values = np.sort(both[:c])
    out = np.empty(c, dtype=np.int64)
    d = 0
    for i in range(c):
        if i == 0 or values[i] != values[i - 1]:
            out[d] = values[i]
            d += 1
    n = tok.shape[0]
    cuts = np.empty(n + 1, dtype=np.int64)
    k = 0
    for t in range(n):
        if t == 0 or tok[t] != tok[t - 1]:
            cuts[k] = t
            k += 1
    cuts[k] = n
    return out[:d], cuts[: k + 1]


@numba.njit(cache=True)
def bucket_document(
    own: int,
    fps: U64,
    starts: I64,
    ends: I64,
    anchors: I64,
    tiered: bool,
    n_tokens: int,
    insert: BOOL,
    nbuckets: int,
    bsize: int,
    tag_hi: Any,
    tag_lo: Any,
    origin_t: Any,
    offset_t: U8,
    prev_t: U8,
    next_t: U8,
    score: U8,
    fill: U8,
    loose: U8,
    lost: U64,
    rng: U64,
    policy: int,
    saturated: int,
    limit: int,
    method: int,
    bridge_limit: int,
    tolerance: int,
    radius: int,
    lucky_every: int,
    lucky: bool,
    readonly: bool,
) -> tuple[Any, Any, Any, Any, Any, int, int, int, int, int, int]:  # pragma: no cover
    """Probe, estimate and conclude one document on a bucketed table (module doc);
    ``readonly``: look up only, the table is left exactly as it was.

    Returns (est, marked, token origins, found, evicted origins, inserted count, dropped
    count, most copied, its count, runner-up count, distinct origins)."""
    m = fps.shape[0]
    is_anchor, offs, pb, nb = probe_facts(fps, anchors, tiered)
    found = np.zeros(m, dtype=np.bool_)
    f_origin = np.full(m, own, dtype=np.int64)
    f_off = np.zeros(m, dtype=np.uint8)
    f_prev = np.zeros(m, dtype=np.uint8)
    f_next = np.zeros(m, dtype=np.uint8)
    f_lost = np.full(m, lost.shape[0] == 0, dtype=np.bool_)
    evicted = np.empty(m, dtype=np.int64)
    nev, ins, drop = probe_insert(
        fps, own, nbuckets, bsize, tag_hi, tag_lo, origin_t, offset_t, prev_t, next_t, score,
        fill, loose, lost, rng, policy, saturated, limit, found, f_origin, f_off, f_prev,
        f_next, f_lost, evicted, insert, is_anchor, offs, pb, nb, readonly,
    )  # fmt: skip
    est, marked, tok, bonus, best, best_count, second, distinct = conclude(
        own, fps, starts, ends, anchors, n_tokens, found, f_origin, f_off, f_prev, f_next,
        f_lost, method, bridge_limit, tolerance, radius, lucky_every,
    )  # fmt: skip
    if lucky and policy == LUCKY and not readonly:
        a = anchors.shape[0]
        af = np.empty(a, dtype=np.uint64)
        for r in range(a):
            af[r] = fps[anchors[r]]
        add_scores(af, bonus, nbuckets, bsize, tag_hi, tag_lo, score, fill, limit)
    return est, marked, tok, found, evicted[:nev], ins, drop, best, best_count, second, distinct
