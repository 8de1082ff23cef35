"""Compiled per-document kernels (private): ASCII token scanning, shingles, their
sorted distinct values, MinHash and the uniform-weight SimHash.

Imported lazily (numba costs about a second to import).  Each kernel has a numpy or Python
reference implementation in the public modules and is tested equal to it; they exist because
a news article has only ~100-200 tokens, where numpy's per-call overhead (about a
microsecond per array operation, a dozen operations per document) dominates the work.

Token scanning, for texts that are pure ASCII (the usual case for English news): one pass
over the bytes finds the tokens exactly as
``neardup.text``'s token regular expression does (checked against it on all of Reuters and by
property tests), keys each token by a 64-bit hash of its lower-cased bytes, and looks the key
up in a per-config table filled by the Python text stage on first sight of a token.  A scan
leaves the unknown tokens of a text pending in place and reports them together, so the
caller learns them in one batch (one stemmer call) and resolves them without a second
scan.  Numba
is used because this is a byte-level scanning loop that numpy cannot vectorise.

The token regular expression, restricted to ASCII, is
``\\d+(?:[.,]\\d+)+(?![A-Za-z0-9])|[A-Za-z0-9]+(?:'[A-Za-z0-9]+)*``: a number with inner
``.``/``,`` groups, as many groups as still leave a non-alphanumeric character after it, or
else a run of letters/digits with inner apostrophes.

Keys: FNV-1a 64 over the lower-cased bytes, xor the length, splitmix64-finalised.  Two
distinct tokens sharing a key (probability about 2**-64 per pair) would share a hash.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from numba import njit

__all__ = [
    "Scan",
    "TokenTable",
    "minhash_of_values",
    "minhash_permutations",
    "resolve",
    "scan_lookup",
    "simhash64",
    "sorted_distinct",
    "word_shingles",
]

_FNV_OFFSET = np.uint64(0xCBF29CE484222325)
_FNV_PRIME = np.uint64(0x100000001B3)


_EMPTY = np.int64(0)  # an empty slot; a real key 0 is stored as _ZERO_KEY
_ZERO_KEY = np.int64(0x5A45524F)


class TokenTable:
    """Open-addressing hash table key -> value in two int64 arrays (linear probing).

    Values: > 0 an index into ``finals`` (the token's hash), 0 a token without a form,
    < 0 a token reported unknown by the scan with that (negated) call id.  Kept at most half
    full.  Plain arrays instead of a numba typed dict: passing them to a compiled function
    costs far less.
    """

    def __init__(self, capacity: int = 1 << 12) -> None:
        self.keys = np.zeros(capacity, dtype=np.int64)
        self.values = np.zeros(capacity, dtype=np.int64)
        self.used = 0

    def set_many(self, keys: npt.NDArray[np.int64], values: npt.NDArray[np.int64]) -> None:
        """Store ``values`` under ``keys`` (new keys or overwrites), growing as needed."""
        if 2 * (self.used + keys.shape[0]) > self.keys.shape[0]:
            self.grow(self.used + keys.shape[0])
        self.used += _set_many(self.keys, self.values, keys, values)

    def grow(self, entries: int | None = None) -> None:
        """Double the capacity (or more, to hold ``entries`` at most half full)."""
        capacity = 2 * self.keys.shape[0]
        while entries is not None and 2 * entries > capacity:
            capacity *= 2
        new_keys = np.zeros(capacity, dtype=np.int64)
        new_values = np.zeros(capacity, dtype=np.int64)
        live = self.keys != _EMPTY
        _set_many(new_keys, new_values, self.keys[live], self.values[live])
        self.keys, self.values = new_keys, new_values


@njit(cache=True, inline="always")
def _slot(table_keys: npt.NDArray[np.int64], key: np.int64) -> int:
    """Slot of ``key``, or of the empty slot where it would go."""
    if key == _EMPTY:
        key = _ZERO_KEY
    mask = table_keys.shape[0] - 1
    slot = int(key & mask)
    while table_keys[slot] != _EMPTY and table_keys[slot] != key:
        slot = (slot + 1) & mask
    return slot


@njit(cache=True)
def _set_many(
    table_keys: npt.NDArray[np.int64],
    table_values: npt.NDArray[np.int64],
    keys: npt.NDArray[np.int64],
    values: npt.NDArray[np.int64],
) -> int:
    added = 0
    for j in range(keys.shape[0]):
        key = keys[j] if keys[j] != _EMPTY else _ZERO_KEY
        slot = _slot(table_keys, key)
        if table_keys[slot] == _EMPTY:
            table_keys[slot] = key
            added += 1
        table_values[slot] = values[j]
    return added


@njit(cache=True, inline="always")
def _alnum(c: int) -> bool:
    return (48 <= c <= 57) or (65 <= c <= 90) or (97 <= c <= 122)


@njit(cache=True, inline="always")
def _digit(c: int) -> bool:
    return 48 <= c <= 57


@njit(cache=True)
def _key(buf: npt.NDArray[np.uint8], start: int, end: int) -> np.int64:
    h = _FNV_OFFSET
    for p in range(start, end):
        b = buf[p]
        if 65 <= b <= 90:
            b += 32
        h = (h ^ np.uint64(b)) * _FNV_PRIME
    h ^= np.uint64(end - start)
    h ^= h >> np.uint64(30)
    h *= np.uint64(0xBF58476D1CE4E5B9)
    h ^= h >> np.uint64(27)
    h *= np.uint64(0x94D049BB133111EB)
    h ^= h >> np.uint64(31)
    return np.int64(h)


@njit(cache=True)
def _token_end(buf: npt.NDArray[np.uint8], i: int, n: int) -> int:
    """End of the token starting at ``i`` (``buf[i]`` is alphanumeric)."""
    end = -1
    if _digit(buf[i]):
        j = i
        while j < n and _digit(buf[j]):
            j += 1
        k = j
        # Number groups: keep the longest one still followed by a non-alphanumeric.
        while k + 1 < n and (buf[k] == 46 or buf[k] == 44) and _digit(buf[k + 1]):
            m = k + 1
            while m < n and _digit(buf[m]):
                m += 1
            if m >= n or not _alnum(buf[m]):
                end = m
            k = m
    if end < 0:
        j = i
        while j < n and _alnum(buf[j]):
            j += 1
        while j + 1 < n and buf[j] == 39 and _alnum(buf[j + 1]):
            j += 1
            while j < n and _alnum(buf[j]):
                j += 1
        end = j
    return end


@njit(cache=True)
def _scan_lookup(
    buf: npt.NDArray[np.uint8],
    start: int,
    table_keys: npt.NDArray[np.int64],
    table_values: npt.NDArray[np.int64],
    used: int,
    finals: npt.NDArray[np.uint64],
    out: npt.NDArray[np.uint64],
    work: npt.NDArray[np.int64],
    call_id: int,
) -> tuple[int, int, int, int, int]:
    # work[:3 * bound]: (start, end, key) of reported tokens; work[3 * bound:]: pending
    # positions in out (one array: each argument of a compiled call costs time).
    pend = 3 * out.shape[0]
    n = buf.shape[0]
    capacity = table_keys.shape[0]
    i = start
    count = 0
    missed = 0
    waiting = 0
    added = 0
    while i < n:
        if not _alnum(buf[i]):
            i += 1
            continue
        end = _token_end(buf, i, n)
        key = _key(buf, i, end)
        if key == _EMPTY:
            key = _ZERO_KEY
        slot = _slot(table_keys, key)
        report = False
        if table_keys[slot] == _EMPTY:
            if 2 * (used + added + 1) > capacity:
                return count, missed, waiting, added, i  # full: the caller grows, resumes at i
            table_keys[slot] = key  # insert as pending for this call
            table_values[slot] = -call_id
            added += 1
            idx = np.int64(-call_id)
            report = True
        else:
            idx = table_values[slot]
            if idx < 0 and idx != -call_id:
                table_values[slot] = -call_id  # pending from an interrupted call: report
                report = True
        if idx > 0:
            out[count] = finals[idx]
            count += 1
        elif idx < 0:
            # Unknown yet: keep the key in its place in the output, resolved after the
            # caller has stored the new tokens (no second scan of the text).
            out[count] = np.uint64(key)
            work[pend + waiting] = count
            waiting += 1
            count += 1
            if report:
                work[3 * missed] = i
                work[3 * missed + 1] = end
                work[3 * missed + 2] = key
                missed += 1
        i = end
    return count, missed, waiting, added, n


@njit(cache=True)
def _resolve(
    table_keys: npt.NDArray[np.int64],
    table_values: npt.NDArray[np.int64],
    finals: npt.NDArray[np.uint64],
    out: npt.NDArray[np.uint64],
    count: int,
    pending: npt.NDArray[np.int64],
) -> int:
    """Replace the pending keys in ``out[:count]`` by their hashes, drop tokens without a
    form (compacting in place); the new length, or -1 if a key is still unknown."""
    w = 0
    p = 0
    waiting = pending.shape[0]
    for r in range(count):
        if p < waiting and pending[p] == r:
            p += 1
            key = np.int64(out[r])
            slot = _slot(table_keys, key)
            if table_keys[slot] == _EMPTY or table_values[slot] < 0:
                return -1
            idx = table_values[slot]
            if idx > 0:
                out[w] = finals[idx]
                w += 1
        else:
            out[w] = out[r]
            w += 1
    return w


Scan = tuple[npt.NDArray[np.uint64], int, npt.NDArray[np.int64], npt.NDArray[np.int64], int]
"""Result of :func:`scan_lookup` over ``data[start:stop]``: ``(out, count, misses, pending,
stop)``.  ``out[:count]`` holds the token hashes in text order, except at the positions
listed in ``pending``, which hold the keys of tokens not known yet; ``misses`` are the
flattened ``(start, end, key)`` triples of the unknown tokens this call reported (each
once).  ``stop`` is ``len(data)`` when the scan reached the end, else the offset of the token
at which the table became half full (grow it and scan again from there).  A plain tuple:
this runs once per text, where an object's construction shows."""


def scan_lookup(
    data: bytes,
    table: TokenTable,
    finals: npt.NDArray[np.uint64],
    call_id: int,
    start: int = 0,
) -> Scan:
    """Scan ASCII ``data`` from ``start`` (a token start or separator): token hashes, with
    the unknown tokens left pending (see :data:`Scan`).

    Unknown tokens are inserted in the table as pending (value ``-call_id``) and reported
    once per ``call_id`` (a positive integer unique to the call).  Store the reported tokens
    (:meth:`TokenTable.set_many`), then :func:`resolve` the pending positions: one pass over
    the text however many new words it has.
    """
    buf = np.frombuffer(data, dtype=np.uint8)
    bound = (buf.shape[0] - start) // 2 + 1  # a token takes one byte plus a separator
    out = np.empty(bound, dtype=np.uint64)
    work = np.empty(4 * bound, dtype=np.int64)
    count, missed, waiting, added, stop = _scan_lookup(
        buf, start, table.keys, table.values, table.used, finals, out, work, call_id
    )
    table.used += added
    return out, count, work[: 3 * missed], work[3 * bound : 3 * bound + waiting], stop


def resolve(
    scan: Scan, table: TokenTable, finals: npt.NDArray[np.uint64]
) -> npt.NDArray[np.uint64] | None:
    """The token hashes of a scan once its reported tokens are stored (``None`` if some
    pending token is still unknown, which a caller that stored every miss never sees)."""
    out, count, _, pending, _ = scan
    if pending.shape[0] == 0:
        return out[:count]
    length = _resolve(table.keys, table.values, finals, out, count, pending)
    return None if length < 0 else out[:length]


# --- shingles and MinHash -------------------------------------------------------------------

_POLY = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_MAX = np.uint64(0xFFFFFFFFFFFFFFFF)


@njit(cache=True, inline="always")
def _mix64(z: np.uint64) -> np.uint64:
    z ^= z >> np.uint64(30)
    z *= _M1
    z ^= z >> np.uint64(27)
    z *= _M2
    z ^= z >> np.uint64(31)
    return z


@njit(cache=True, inline="always")
def _shingle(tokens: npt.NDArray[np.uint64], i: int, w: int) -> np.uint64:
    acc = tokens[i]
    for j in range(1, w):
        acc = acc * _POLY + tokens[i + j]
    return _mix64(acc + np.uint64(w))


@njit(cache=True)
def _word_shingles(tokens: npt.NDArray[np.uint64], width: int) -> npt.NDArray[np.uint64]:
    n = tokens.shape[0]
    if n == 0:
        return np.empty(0, dtype=np.uint64)
    w = min(width, n)
    out = np.empty(n - w + 1, dtype=np.uint64)
    for i in range(n - w + 1):
        out[i] = _shingle(tokens, i, w)
    return out


@njit(cache=True)
def _minhash_permutations(
    tokens: npt.NDArray[np.uint64],
    width: int,
    a: npt.NDArray[np.uint64],
    b: npt.NDArray[np.uint64],
) -> npt.NDArray[np.uint64]:
    n = tokens.shape[0]
    k = a.shape[0]
    if n == 0:
        return np.empty(0, dtype=np.uint64)
    w = min(width, n)
    out = np.full(k, _MAX, dtype=np.uint64)
    for i in range(n - w + 1):
        x = _shingle(tokens, i, w)
        for p in range(k):
            v = a[p] * x + b[p]
            if v < out[p]:
                out[p] = v
    return out


def word_shingles(tokens: npt.NDArray[np.uint64], width: int) -> npt.NDArray[np.uint64]:
    """Compiled :func:`neardup.shingles.word_shingles` (same values)."""
    return _word_shingles(np.ascontiguousarray(tokens, dtype=np.uint64), width)


def minhash_permutations(
    tokens: npt.NDArray[np.uint64],
    width: int,
    a: npt.NDArray[np.uint64],
    b: npt.NDArray[np.uint64],
) -> npt.NDArray[np.uint64]:
    """Word ``width``-shingles of ``tokens`` and their k-permutation MinHash in one pass.

    Equal to ``minhash_values(word_shingles(tokens, width), len(a), "permutations")`` for
    the ``a``, ``b`` of that seed; O(1) extra memory.
    """
    return _minhash_permutations(np.ascontiguousarray(tokens, dtype=np.uint64), width, a, b)


@njit(cache=True)
def _sorted_distinct(values: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    ordered = np.sort(values)
    n = ordered.shape[0]
    if n == 0:
        return ordered
    kept = 1
    for i in range(1, n):
        if ordered[i] != ordered[kept - 1]:
            ordered[kept] = ordered[i]
            kept += 1
    return ordered[:kept].copy()


def sorted_distinct(values: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    """``np.unique`` of a uint64 array (sorted distinct values), without numpy's per-call
    overhead (about 10 us of a ~150-value article's 15)."""
    return _sorted_distinct(np.ascontiguousarray(values, dtype=np.uint64))


@njit(cache=True)
def _minhash_of_values(
    values: npt.NDArray[np.uint64], a: npt.NDArray[np.uint64], b: npt.NDArray[np.uint64]
) -> npt.NDArray[np.uint64]:
    out = np.full(a.shape[0], _MAX, dtype=np.uint64)
    for i in range(values.shape[0]):
        x = values[i]
        for p in range(a.shape[0]):
            v = a[p] * x + b[p]
            if v < out[p]:
                out[p] = v
    return out


def minhash_of_values(
    values: npt.NDArray[np.uint64], a: npt.NDArray[np.uint64], b: npt.NDArray[np.uint64]
) -> npt.NDArray[np.uint64]:
    """k-permutation MinHash of a non-empty set of uint64 ``values`` (duplicates allowed):
    ``min(a[p] * x + b[p])`` per ``p`` mod 2**64, as ``sketch.minhash`` computes it in
    numpy blocks; O(1) extra memory."""
    return _minhash_of_values(np.ascontiguousarray(values, dtype=np.uint64), a, b)


@njit(cache=True)
def _simhash64(features: npt.NDArray[np.uint64], scale: np.int64) -> np.uint64:
    ordered = np.sort(features)
    totals = np.zeros(64, dtype=np.int64)
    n = ordered.shape[0]
    i = 0
    while i < n:
        f = ordered[i]
        j = i + 1
        while j < n and ordered[j] == f:
            j += 1
        weight = np.int64(j - i) * scale
        for bit in range(64):
            if (f >> np.uint64(bit)) & np.uint64(1):
                totals[bit] += weight
            else:
                totals[bit] -= weight
        i = j
    out = np.uint64(0)
    for bit in range(64):
        if totals[bit] > 0:
            out |= np.uint64(1) << np.uint64(bit)
    return out


def simhash64(features: npt.NDArray[np.uint64], scale: int) -> int:
    """The 64-bit SimHash of a non-empty feature list (repeats counted) with every distinct
    feature weighted ``count * scale``: ``sketch.simhash``'s numpy arithmetic (exact
    integers) in one pass, for the uniform (no IDF table) weights."""
    return int(_simhash64(np.ascontiguousarray(features, dtype=np.uint64), np.int64(scale)))
