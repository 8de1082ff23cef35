"""Estimation phase (seed 004, Section 2.3) and the per-token and per-document outputs.

Given what the table returned for a document's selected fingerprints, :func:`estimate` gives
an origin (a stream ordinal) to *every* selected fingerprint; the current document's own
ordinal means "new".  Four methods, as the paper defines them:

* **NB** (no bridging): the stored origin where found, the document itself otherwise.
* **E** (expansion): a found fingerprint s also labels its immediate selected neighbour s'
  in D with s's origin when s' was not found and the first byte of s' equals the neighbour
  byte stored with s (the preceding byte for the left neighbour, the succeeding byte for the
  right one).  So up to two extra fingerprints per hit.
* **B** (bridging, limit T = 30): for found s before s' with (b) the same stored origin and
  (c) ``offset(s') - offset(s)`` in D equal to the difference of their stored offsets (mod
  256, the stored width) and smaller than T, where (d) s' is the first such partner after s,
  every selected fingerprint strictly between them that was not found is labelled with that
  origin.  The end of one bridge may start the next.  O(m T) for m selected fingerprints.
* **BE**: bridging that also requires (e) the first byte of the fingerprint after s in D to
  equal s's stored succeeding byte and (f) the first byte of the one before s' to equal s''s
  stored preceding byte; then expansion.  Bridges are applied first; expansion only labels
  fingerprints still unlabelled (the paper notes the two never contradict).

Two extensions, not in the paper (both off by default; docs/origin.md, "Small memory"):

* **offset tolerance** (``tolerance`` d >= 1): condition (c) accepts partners whose offset
  difference in D differs from the stored one by at most d (circular distance mod 256).  A
  copy with word edits selects a few more or fewer shingles between two anchors, which shifts
  the offsets; the same stored origin (b) is still required.
* **edge extension** (:func:`extend_edges`, radius r >= 1): after bridging (and expansion),
  each found fingerprint of another document also labels up to r unlabelled selected
  neighbours on each side with its origin, stopping at the first labelled one.  Unverified
  (no stored bytes are compared): it trades a few novel tokens called old for the copied
  tokens at the edges of a passage of which only some anchors survived in a small table.
  So it marks *tokens* only: the engine counts extended labels neither for the most copied
  origin nor for the lucky scores (an unverified guess should not move either).

Found fingerprints keep their stored origin; only missing ones are guessed, as the paper
says ("guess the origin of selected shingles that were not found").  Found fingerprints whose
stored origin is the document itself (a shingle repeated inside D) neither bridge nor expand.

Outputs (Sections 2 and 3.2): a token is *old* iff a selected fingerprint covering it has an
origin other than the document, else *fresh*; each old token takes the origin of the
left-most such fingerprint (copied segments are maximal runs of old tokens with one origin).
The *most copied origin* is the origin of the most selected fingerprints; it is the
*dominant origin* when its count is at least 10 % larger than any other origin's count.
"""

from __future__ import annotations

import numba
import numpy as np
import numpy.typing as npt

__all__ = [
    "BRIDGING",
    "BRIDGING_EXPANSION",
    "ESTIMATION_CODES",
    "EXPANSION",
    "NO_BRIDGING",
    "dominant_origin",
    "estimate",
    "extend_edges",
    "fill_between",
    "token_origins",
]

NO_BRIDGING = 0
EXPANSION = 1
BRIDGING = 2
BRIDGING_EXPANSION = 3
ESTIMATION_CODES = {"nb": NO_BRIDGING, "e": EXPANSION, "b": BRIDGING, "be": BRIDGING_EXPANSION}

I64 = npt.NDArray[np.int64]
U8 = npt.NDArray[np.uint8]
U64 = npt.NDArray[np.uint64]
BOOL = npt.NDArray[np.bool_]


@numba.njit(cache=True)
def estimate(
    own: int,
    fps: U64,
    found: BOOL,
    origin: I64,
    offset: U8,
    prev: U8,
    nxt: U8,
    method: int,
    limit: int,
    tolerance: int,
    maybe_lost: BOOL,
) -> I64:  # pragma: no cover - numba
    """Origin ordinal of every selected fingerprint (``own`` = new); see the module doc.

    ``tolerance`` (offset tolerance of bridging) is 0 for the paper's methods; edge extension
    is the separate :func:`extend_edges`.  Only fingerprints that are neither found nor
    known never to have been stored (``maybe_lost`` False) get a guessed origin; the paper's
    table tracks nothing and passes all True."""
    m = fps.shape[0]
    est = np.empty(m, dtype=np.int64)
    labelled = np.empty(m, dtype=np.bool_)
    first = np.empty(m, dtype=np.uint8)
    for j in range(m):
        est[j] = origin[j] if found[j] else own
        labelled[j] = found[j] or not maybe_lost[j]
        first[j] = np.uint8(fps[j] >> np.uint64(56))
    if method == BRIDGING or method == BRIDGING_EXPANSION:  # noqa: SIM109 (numba)
        bridged = np.zeros(m, dtype=np.bool_)
        for j in range(m):
            if not found[j] or origin[j] == own:
                continue
            stop = min(m, j + limit)
            for t in range(j + 1, stop):
                if not found[t] or origin[t] != origin[j]:
                    continue
                shift = ((t - j) - (int(offset[t]) - int(offset[j]))) & 255
                if min(shift, 256 - shift) > tolerance:
                    continue
                # t is the first partner of j, condition (d)
                ok = True
                if method == BRIDGING_EXPANSION and t > j + 1:
                    ok = first[j + 1] == nxt[j] and first[t - 1] == prev[t]
                if ok:
                    for i in range(j + 1, t):
                        if not labelled[i] and not bridged[i]:
                            est[i] = origin[j]
                            bridged[i] = True
                break
        for j in range(m):
            labelled[j] = labelled[j] or bridged[j]
    if method == EXPANSION or method == BRIDGING_EXPANSION:  # noqa: SIM109 (numba)
        for j in range(m):
            if not found[j] or origin[j] == own:
                continue
            if j > 0 and not labelled[j - 1] and first[j - 1] == prev[j]:
                est[j - 1] = origin[j]
                labelled[j - 1] = True
            if j + 1 < m and not labelled[j + 1] and first[j + 1] == nxt[j]:
                est[j + 1] = origin[j]
                labelled[j + 1] = True
    return est


@numba.njit(cache=True)
def extend_edges(
    own: int, found: BOOL, est: I64, radius: int, maybe_lost: BOOL
) -> I64:  # pragma: no cover - numba
    """Edge extension (see the module doc) of :func:`estimate`'s result ``est``: a copy in
    which every found fingerprint of another origin also labels up to ``radius`` unlabelled
    selected neighbours on each side (stopping at the first labelled one; "labelled" means
    found, given another origin by ``est``, or known never stored: ``maybe_lost`` False), so
    an extended label never extends further."""
    m = est.shape[0]
    out = est.copy()
    labelled = np.empty(m, dtype=np.bool_)
    for j in range(m):
        labelled[j] = found[j] or est[j] != own or not maybe_lost[j]
    extended = np.zeros(m, dtype=np.bool_)
    for j in range(m):
        if not found[j] or est[j] == own:
            continue
        for step in (-1, 1):
            i = j + step
            for _ in range(radius):
                if i < 0 or i >= m or labelled[i]:
                    break
                if not extended[i]:
                    out[i] = est[j]
                    extended[i] = True
                i += step
    return out


@numba.njit(cache=True)
def fill_between(
    own: int,
    positions: I64,
    anchor_positions: I64,
    anchor_est: I64,
    found: BOOL,
    origin: I64,
    maybe_lost: BOOL,
) -> I64:  # pragma: no cover - numba
    """Origins of every shingle of a document (adaptive mode) from its anchors' estimates.

    A shingle found in the table keeps its stored origin; an anchor takes its estimate; a
    shingle that is neither and may have been lost (``maybe_lost``) takes origin O when the
    nearest anchors on both sides (by position) both have origin O other than ``own`` (it
    lies inside a copied block); every other shingle is new.  ``positions`` ascend;
    ``anchor_positions`` are a subsequence of them with estimates ``anchor_est``."""
    m = positions.shape[0]
    a = anchor_positions.shape[0]
    out = np.empty(m, dtype=np.int64)
    k = 0  # first anchor at or after the current position
    for j in range(m):
        p = positions[j]
        while k < a and anchor_positions[k] < p:
            k += 1
        if found[j]:
            out[j] = origin[j]
        elif (k < a and anchor_positions[k] == p) or (
            maybe_lost[j] and 0 < k < a and anchor_est[k - 1] == anchor_est[k]
        ):
            out[j] = anchor_est[k]
        else:
            out[j] = own
    return out


@numba.njit(cache=True)
def token_origins(n_tokens: int, starts: I64, ends: I64, est: I64, own: int) -> I64:
    """Per token: the origin of the left-most covering copied fingerprint, or -1 (fresh)."""
    out = np.full(n_tokens, -1, dtype=np.int64)
    for j in range(est.shape[0]):
        if est[j] == own:
            continue
        for t in range(starts[j], ends[j]):
            if out[t] < 0:
                out[t] = est[j]
    return out


@numba.njit(cache=True)
def _top_two(est: I64, own: int) -> tuple[int, int, int, int]:  # pragma: no cover - numba
    """(most copied origin, its count, runner-up count, number of origins) of ``est``."""
    values = np.sort(est)
    best = -1
    best_count = 0
    second = 0
    distinct = 0
    i = 0
    m = values.shape[0]
    while i < m:
        r = i
        while r + 1 < m and values[r + 1] == values[i]:
            r += 1
        count = r - i + 1
        distinct += 1
        v = values[i]
        # ties: the document itself first, then the earliest origin (values ascend)
        if count > best_count or (count == best_count and v == own):
            second = best_count
            best = v
            best_count = count
        elif count > second:
            second = count
        i = r + 1
    return best, best_count, second, distinct


def dominant_origin(est: I64, own: int) -> tuple[int | None, int]:
    """``(dominant, most_copied)`` origin ordinals of a document (the paper's 10 % rule).

    ``dominant`` is ``None`` when the most copied origin is not at least 10 % ahead of every
    other origin.  ``most_copied`` breaks ties in favour of the document itself, then the
    earliest origin.  A document with no selected fingerprint is its own dominant origin.
    """
    if est.shape[0] == 0:
        return own, own
    best, best_count, second, distinct = _top_two(est, own)
    if distinct == 1 or 10 * best_count >= 11 * second:
        return int(best), int(best)
    return None, int(best)
