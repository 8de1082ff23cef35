"""Compiled pair features of the judgement (private; features, never verdicts).

:func:`direction` measures how much of one text ``x`` is found in another text ``y``: its
shingles (text order) are looked up in ``y``'s distinct shingles, a token counts as found
when a found shingle covers it, and the longest run of found prose is measured.  A lookup is
one probe of a hash table of ``y``'s set (:func:`probe_table`: O(m + k), its table
O(k) memory), or a binary search when ``y``'s set is more than eight times ``x``'s shingles.
Equal to the pure-Python reference :func:`neardup.rule.features.direction_reference`
(tested with hypothesis).  The merges of two sorted sets step without branches (which side
advances is a coin toss on hashed values).  Deterministic.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from neardup._jit import njit
from neardup._mix import GOLDEN

__all__ = [
    "ROW_HEADER",
    "direction",
    "direction_numpy",
    "merge_count_numpy",
    "merge_count_sorted",
    "pack_stored",
    "pair_counts",
    "pair_counts_rows",
    "row_parts",
    "screen_counts",
    "screen_rows",
    "weighted_dot",
    "weighted_dot_numpy",
]

_FURNITURE = 1
_QUOTED = 2


@njit(cache=True, nogil=True)
def probe_table(values: Any) -> Any:  # pragma: no cover
    """An open-addressing table of distinct ``values`` (Fibonacci hashing, load at most
    1/2, linear probing): ``(keys, at, shift)``, read by :func:`index_in`.  Built once for
    one text, it answers "is this value in my set?" for each of many candidates in about
    one probe a value, where a binary search takes log2 of the set's size in branches that
    mispredict half the time."""
    n = values.shape[0]
    bits = 3
    while (1 << bits) < 2 * n:
        bits += 1
    keys = np.zeros(1 << bits, dtype=np.uint64)
    at = np.full(1 << bits, -1, dtype=np.int32)
    shift = np.uint64(64 - bits)
    mask = np.uint64((1 << bits) - 1)
    for i in range(n):
        v = np.uint64(values[i])
        s = (v * GOLDEN) >> shift
        while at[s] >= 0:
            s = (s + np.uint64(1)) & mask
        keys[s] = v
        at[s] = i
    return keys, at, shift


@njit(cache=True, nogil=True, inline="always")
def index_in(keys: Any, at: Any, shift: Any, v: Any) -> Any:  # pragma: no cover
    """The index of ``v`` in the values of a :func:`probe_table` (-1: absent)."""
    mask = np.uint64(keys.shape[0] - 1)
    s = (np.uint64(v) * GOLDEN) >> shift
    while True:
        j = at[s]
        if j < 0 or keys[s] == v:
            return j
        s = (s + np.uint64(1)) & mask


@njit(cache=True, nogil=True, inline="always")
def _table_hits(
    keys: Any, at: Any, shift: Any, shingles: Any, hit: Any
) -> None:  # pragma: no cover
    """``hit[p]``: whether ``shingles[p]`` is in the :func:`probe_table` (``hit`` at least
    as long as ``shingles``)."""
    for p in range(shingles.shape[0]):
        hit[p] = index_in(keys, at, shift, shingles[p]) >= 0


@njit(cache=True, nogil=True)
def direction(x_shingles: Any, x_flags: Any, y_set: Any, width: int) -> Any:  # pragma: no cover
    """``(found_prose, prose, found_tokens, tokens, passage)`` of ``x`` in ``y``.

    ``passage``: the longest run of found prose tokens outside quotation marks, furniture
    and quoted tokens skipped (they neither count nor break a run).
    """
    m = x_shingles.shape[0]
    k = y_set.shape[0]
    hit = np.zeros(m, dtype=np.bool_)
    if 8 * m >= k:  # a table of y's set pays for itself
        keys, at, shift = probe_table(y_set)
        _table_hits(keys, at, shift, x_shingles, hit)
        return _runs(hit, x_flags, width)
    for p in range(m):  # a few shingles against a large set: binary searches
        v = x_shingles[p]
        lo, hi = 0, k
        while lo < hi:
            mid = (lo + hi) >> 1
            if y_set[mid] < v:
                lo = mid + 1
            else:
                hi = mid
        hit[p] = lo < k and y_set[lo] == v
    return _runs(hit, x_flags, width)


@njit(cache=True, nogil=True)
def _runs(hit: Any, x_flags: Any, width: int) -> Any:  # pragma: no cover
    """:func:`direction`'s counts from ``hit`` (per shingle position of ``x``: found)."""
    m = hit.shape[0]
    n = x_flags.shape[0]
    span = width if width < n else n
    found_prose = prose = found_tokens = 0
    run = best = 0
    last_hit = -1  # the last shingle found that starts at or before token t
    for t in range(n):
        if t < m and hit[t]:
            last_hit = t
        found = last_hit >= 0 and t - last_hit < span
        f = x_flags[t]
        if found:
            found_tokens += 1
        if f & _FURNITURE:
            continue
        prose += 1
        if found:
            found_prose += 1
        if f & _QUOTED:
            continue
        if found:
            run += 1
            if run > best:
                best = run
        else:
            run = 0
    return found_prose, prose, found_tokens, n, best


@njit(cache=True, nogil=True)
def merge_count_sorted(a: Any, b: Any) -> int:  # pragma: no cover
    """Equal values of two sorted distinct arrays, by one merge pass."""
    i = j = found = 0
    n, m = a.shape[0], b.shape[0]
    # Branch-free steps: on hashed values which side advances is a coin toss, which a
    # branch mispredicts half the time.
    while i < n and j < m:
        x, y = a[i], b[j]
        found += x == y
        i += x <= y
        j += y <= x
    return found


@njit(cache=True, nogil=True)
def weighted_dot(a: Any, wa: Any, b: Any, wb: Any) -> int:  # pragma: no cover
    """Sum of ``wa[i] * wb[j]`` (integers) over equal keys of two sorted distinct arrays."""
    i = j = 0
    n, m = a.shape[0], b.shape[0]
    total = 0
    while i < n and j < m:  # branch-free steps, as merge_count_sorted
        x, y = a[i], b[j]
        total += int(wa[i]) * int(wb[j]) * (x == y)
        i += x <= y
        j += y <= x
    return total


@njit(cache=True, nogil=True)
def _prose_counts(flags: Any) -> Any:  # pragma: no cover
    prose = 0
    for t in range(flags.shape[0]):
        if not flags[t] & _FURNITURE:
            prose += 1
    return prose


@njit(cache=True, nogil=True)
def pair_counts(
    a_shingles: Any,
    a_flags: Any,
    a_set: Any,
    a_terms: Any,
    a_counts: Any,
    b_shingles: Any,
    b_flags: Any,
    b_set: Any,
    b_terms: Any,
    b_counts: Any,
    width: int,
) -> Any:  # pragma: no cover
    """Every count :func:`neardup.rule.features.pair_features` needs, in one call:
    ``(shared, direction(a in b)..., direction(b in a)..., dot)``.  Two texts sharing no
    shingle skip the direction scans (nothing is found, no passage)."""
    shared = merge_count_sorted(a_set, b_set)
    dot = weighted_dot(a_terms, a_counts, b_terms, b_counts)
    if shared == 0:
        pa, pb = _prose_counts(a_flags), _prose_counts(b_flags)
        na, nb = a_flags.shape[0], b_flags.shape[0]
        return shared, 0, pa, 0, na, 0, 0, pb, 0, nb, 0, dot
    fa, pa, ta, na, ra = direction(a_shingles, a_flags, b_set, width)
    fb, pb, tb, nb, rb = direction(b_shingles, b_flags, a_set, width)
    return shared, fa, pa, ta, na, ra, fb, pb, tb, nb, rb, dot


@njit(cache=True, nogil=True)
def screen_counts(
    q_set: Any,
    q_terms: Any,
    q_counts: Any,
    sets: Any,
    set_offsets: Any,
    terms: Any,
    counts: Any,
    term_offsets: Any,
) -> Any:  # pragma: no cover
    """Distinct shingles shared and content-word dot product of one text with each of many
    (their sorted sets and terms concatenated, ``*_offsets`` delimiting each)."""
    k = set_offsets.shape[0] - 1
    shared = np.zeros(k, dtype=np.int64)
    dot = np.zeros(k, dtype=np.int64)
    for i in range(k):
        shared[i] = merge_count_sorted(q_set, sets[set_offsets[i] : set_offsets[i + 1]])
        t0, t1 = term_offsets[i], term_offsets[i + 1]
        dot[i] = weighted_dot(q_terms, q_counts, terms[t0:t1], counts[t0:t1])
    return shared, dot


# --- packed profile rows (one uint64 array per profile; layout: neardup.rule.features) -------

ROW_HEADER = 6  # positions, tokens, distinct shingles, terms, prose tokens, squared norm


@njit(cache=True, nogil=True)
def pack_stored(buf: Any, at: int, n: int, m: int, k: int) -> Any:  # pragma: no cover
    """The packed row of a profile's stored bytes ``buf`` (``Profile.to_bytes``: its
    ``m`` shingles start at byte ``at``, then ``n`` token flags, ``k`` terms and ``k``
    term counts, all little-endian), on a little-endian machine, where a stored value's
    bytes are its bytes in the row: ``pack_profile(Profile.from_bytes(buf))`` in one pass
    (the reference; tested equal)."""
    ordered = np.empty(m, dtype=np.uint64)
    ordered.view(np.uint8)[:] = buf[at : at + 8 * m]
    ordered.sort()
    s = 0
    for i in range(m):
        if s == 0 or ordered[i] != ordered[s - 1]:
            ordered[s] = ordered[i]
            s += 1
    count_words = (k + 1) // 2
    row = np.zeros(ROW_HEADER + m + s + k + count_words + (n + 7) // 8, dtype=np.uint64)
    rb = row.view(np.uint8)
    flags_at = at + 8 * m
    terms_at = flags_at + n
    counts_at = terms_at + 8 * k
    a = ROW_HEADER
    rb[8 * a : 8 * (a + m)] = buf[at:flags_at]
    a += m
    row[a : a + s] = ordered[:s]
    a += s
    rb[8 * a : 8 * (a + k)] = buf[terms_at:counts_at]
    a += k
    rb[8 * a : 8 * a + 4 * k] = buf[counts_at : counts_at + 4 * k]
    counts = row[a : a + count_words].view(np.uint32)
    norm2 = np.uint64(0)
    for i in range(k):
        c = np.uint64(counts[i])
        norm2 += c * c
    a += count_words
    rb[8 * a : 8 * a + n] = buf[flags_at:terms_at]
    prose = 0
    for j in range(n):
        if (buf[flags_at + j] & _FURNITURE) == 0:
            prose += 1
    row[0] = m
    row[1] = n
    row[2] = s
    row[3] = k
    row[4] = prose
    row[5] = norm2
    return row


@njit(cache=True, nogil=True)
def row_parts(rows: Any, base: Any) -> Any:  # pragma: no cover
    """``(shingles, flags, shingle_set, terms, term_counts)`` of the packed row starting at
    ``rows[base]`` (views, no copy)."""
    m = np.int64(rows[base])
    n = np.int64(rows[base + 1])
    s = np.int64(rows[base + 2])
    t = np.int64(rows[base + 3])
    a = base + ROW_HEADER
    shingles = rows[a : a + m]
    a += m
    shingle_set = rows[a : a + s]
    a += s
    terms = rows[a : a + t]
    a += t
    count_words = (t + 1) // 2
    term_counts = rows[a : a + count_words].view(np.uint32)[:t]
    a += count_words
    flags = rows[a : a + (n + 7) // 8].view(np.uint8)[:n]
    return shingles, flags, shingle_set, terms, term_counts


@njit(cache=True, nogil=True)
def cosine_of(dot: Any, norm_a: Any, norm_b: Any) -> Any:  # pragma: no cover
    """The rule's content cosine from the dot product and the two squared norms: the float
    :func:`neardup.rule.features.pair_features` gives when both norms are below 2**53 (the
    float product is then the correctly rounded integer product; the caller checks)."""
    prod = float(norm_a) * float(norm_b)
    if prod <= 0.0:
        return 0.0
    return min(1.0, dot / math.sqrt(prod))


@njit(cache=True, nogil=True)
def coverage_of(
    found_prose: Any, prose: Any, found_tokens: Any, tokens: Any
) -> Any:  # pragma: no cover
    """:attr:`neardup.rule.features.Direction.coverage` (the same correctly rounded
    quotient)."""
    if prose:
        return found_prose / prose
    return found_tokens / tokens if tokens else 0.0


@njit(cache=True, nogil=True)
def _found_bound(
    shared: Any, positions: Any, distinct: Any, tokens: Any, prose: Any, width: Any
) -> Any:  # pragma: no cover
    """:func:`neardup.rule.bounds.copy_bounds` of one text for one pair (the same
    arithmetic): ``(coverage, passage)`` upper bounds."""
    found_positions = positions - distinct + shared if shared > 0 else 0
    found_tokens = min(tokens, width * found_positions)
    base = prose if prose > 0 else tokens
    coverage = min(1.0, found_tokens / max(base, 1)) if base > 0 else 0.0
    return coverage, found_tokens


@njit(cache=True, nogil=True)
def screen_rows(
    q_set: Any,
    q_terms: Any,
    q_counts: Any,
    rows: Any,
    offsets: Any,
    q_positions: int,
    q_distinct: int,
    q_tokens: int,
    q_prose: int,
    width: int,
) -> Any:  # pragma: no cover
    """Per packed row: integer ``counts`` ``(shared, dot, passage bound of the query,
    passage bound of the row, the row's squared term norm)`` and floats ``(coverage bound
    of the query, coverage bound of the row, cosine)`` -- the distinct shingles
    shared, the content-word dot product and the upper bounds of
    :mod:`neardup.rule.bounds`, each row's own counts read from its header."""
    k = offsets.shape[0] - 1
    counts = np.zeros((k, 5), dtype=np.int64)
    bounds = np.zeros((k, 3), dtype=np.float64)
    q_norm2 = np.int64(0)
    for i in range(q_counts.shape[0]):
        q_norm2 += np.int64(q_counts[i]) * np.int64(q_counts[i])
    for i in range(k):
        base = offsets[i]
        _, _, shingle_set, terms, term_counts = row_parts(rows, base)
        shared = merge_count_sorted(q_set, shingle_set)
        cov_q, pass_q = _found_bound(shared, q_positions, q_distinct, q_tokens, q_prose, width)
        cov_r, pass_r = _found_bound(
            shared,
            np.int64(rows[base]),
            np.int64(rows[base + 2]),
            np.int64(rows[base + 1]),
            np.int64(rows[base + 4]),
            width,
        )
        counts[i, 0] = shared
        counts[i, 1] = weighted_dot(q_terms, q_counts, terms, term_counts)
        counts[i, 2] = pass_q
        counts[i, 3] = pass_r
        counts[i, 4] = np.int64(rows[base + 5])
        bounds[i, 0] = cov_q
        bounds[i, 1] = cov_r
        bounds[i, 2] = cosine_of(counts[i, 1], q_norm2, counts[i, 4])
    return counts, bounds


@njit(cache=True, nogil=True)
def _shared_marks(a_set: Any, b_set: Any, marks: Any) -> int:  # pragma: no cover
    """Mark the values of ``a_set`` found in ``b_set`` (one merge); the number marked."""
    i = j = found = 0
    n, m = a_set.shape[0], b_set.shape[0]
    while i < n and j < m:  # branch-free steps, as merge_count_sorted
        x, y = a_set[i], b_set[j]
        # The last write to marks[i] is the one made as i moves on (x <= y): x == y.
        marks[i] = x == y
        found += x == y
        i += x <= y
        j += y <= x
    while i < n:
        marks[i] = False
        i += 1
    return found


@njit(cache=True, nogil=True)
def pair_counts_rows(
    a_shingles: Any,
    a_flags: Any,
    a_set: Any,
    a_terms: Any,
    a_counts: Any,
    a_rank: Any,
    rows: Any,
    offsets: Any,
    select: Any,
    width: int,
) -> Any:  # pragma: no cover
    """:func:`pair_counts` of text ``a`` with each selected packed row, as an int64 matrix
    (one line per entry of ``select``, the 12 columns of :func:`pair_counts`), and the
    floats ``(coverage of a, coverage of the row, cosine)`` made of them.

    ``a_rank[p]``: the index of ``a_shingles[p]`` in ``a_set``; ``a``'s shingles found in a
    row are read from one merge of the two sets (marking the values of ``a_set`` found),
    and the row's shingles found in ``a`` from ``a_set``'s :func:`probe_table`, built once
    for all the rows: the same counts as :func:`direction`."""
    out = np.zeros((select.shape[0], 12), dtype=np.int64)
    values = np.zeros((select.shape[0], 3), dtype=np.float64)
    a_norm2 = np.int64(0)
    for i in range(a_counts.shape[0]):
        a_norm2 += np.int64(a_counts[i]) * np.int64(a_counts[i])
    marks = np.zeros(a_set.shape[0], dtype=np.bool_)
    hit = np.zeros(a_shingles.shape[0], dtype=np.bool_)
    longest = np.int64(0)
    for j in range(select.shape[0]):
        longest = max(longest, np.int64(rows[offsets[select[j]]]))
    hit_row = np.zeros(longest, dtype=np.bool_)
    a_prose = _prose_counts(a_flags)
    s_keys, s_at, s_shift = probe_table(a_set)
    for j in range(select.shape[0]):
        shingles, flags, shingle_set, terms, term_counts = row_parts(rows, offsets[select[j]])
        shared = _shared_marks(a_set, shingle_set, marks)
        out[j, 0] = shared
        out[j, 11] = weighted_dot(a_terms, a_counts, terms, term_counts)
        values[j, 2] = cosine_of(out[j, 11], a_norm2, rows[offsets[select[j]] + 5])
        if shared == 0:
            out[j, 2] = a_prose
            out[j, 4] = a_flags.shape[0]
            out[j, 7] = _prose_counts(flags)
            out[j, 9] = flags.shape[0]
            continue
        for p in range(a_shingles.shape[0]):
            hit[p] = marks[a_rank[p]]
        fa, pa, ta, na, ra = _runs(hit, a_flags, width)
        _table_hits(s_keys, s_at, s_shift, shingles, hit_row)
        fb, pb, tb, nb, rb = _runs(hit_row[: shingles.shape[0]], flags, width)
        out[j, 1] = fa
        out[j, 2] = pa
        out[j, 3] = ta
        out[j, 4] = na
        out[j, 5] = ra
        out[j, 6] = fb
        out[j, 7] = pb
        out[j, 8] = tb
        out[j, 9] = nb
        out[j, 10] = rb
        values[j, 0] = coverage_of(fa, pa, ta, na)
        values[j, 1] = coverage_of(fb, pb, tb, nb)
    return out, values


# --- numpy twins (the same features without numba, for work too small to pay its load) ----


def _found_in(values: Any, sorted_set: Any) -> Any:
    """Per value: whether it is in ``sorted_set`` (sorted, distinct)."""
    if sorted_set.shape[0] == 0:
        return np.zeros(values.shape[0], dtype=np.bool_)
    at = np.searchsorted(sorted_set, values)
    at[at == sorted_set.shape[0]] = 0
    found: Any = sorted_set[at] == values
    return found


def direction_numpy(x_shingles: Any, x_flags: Any, y_set: Any, width: int) -> Any:
    """:func:`direction` by whole-array numpy operations (tested equal)."""
    m = x_shingles.shape[0]
    n = x_flags.shape[0]
    span = min(width, n)
    last = np.full(n, -1, dtype=np.int64)
    hit = _found_in(x_shingles, y_set)
    k = min(m, n)
    last[:k] = np.where(hit[:k], np.arange(k, dtype=np.int64), -1)
    np.maximum.accumulate(last, out=last)
    found = (last >= 0) & (np.arange(n, dtype=np.int64) - last < span)
    prose = (x_flags & _FURNITURE) == 0
    counted = found[prose & ((x_flags & _QUOTED) == 0)]
    # The longest run of True in ``counted``: between consecutive False positions.
    breaks = np.flatnonzero(~counted)
    edges = np.concatenate(([-1], breaks, [counted.shape[0]]))
    best = int(np.max(np.diff(edges)) - 1) if edges.shape[0] > 1 else 0
    return (
        int(np.count_nonzero(found & prose)),
        int(np.count_nonzero(prose)),
        int(np.count_nonzero(found)),
        n,
        best,
    )


def merge_count_numpy(a: Any, b: Any) -> int:
    """:func:`merge_count_sorted` by binary search (tested equal)."""
    small, large = (a, b) if a.shape[0] <= b.shape[0] else (b, a)
    return int(np.count_nonzero(_found_in(small, large)))


def weighted_dot_numpy(a: Any, wa: Any, b: Any, wb: Any) -> int:
    """:func:`weighted_dot` by binary search (tested equal)."""
    if a.shape[0] == 0 or b.shape[0] == 0:
        return 0
    at = np.searchsorted(b, a)
    at[at == b.shape[0]] = 0
    equal = b[at] == a
    return int(np.dot(wa[equal].astype(np.int64), wb[at[equal]].astype(np.int64)))
