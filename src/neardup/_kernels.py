"""Compiled per-document kernels (private): token scanning, shingles, their sorted distinct
values, MinHash and the uniform-weight SimHash.

numba is loaded on first use (:mod:`neardup._jit`).  Each kernel has a numpy or Python
reference implementation in the public modules and is tested equal to it; they exist because
a news article has only ~100-200 tokens, where numpy's per-call overhead (about a
microsecond per array operation, a dozen operations per document) dominates the work.

Token scanning (any Unicode text): one pass over the text's code units (the bytes of an
ASCII text, else its UTF-32 code points, so positions are ``str`` indices) finds the raw
tokens exactly as ``neardup.text``'s token regular expression does, keys each one by a
64-bit hash, and looks the key up in a per-config table of *slots* that the Python text
stage fills on first sight of a token.  A slot holds the token's *pieces* (zero, one, or
several for scripts written without spaces), each with a value (a token hash, or a piece
number from which the text stage reads the form) and a span relative to the token's start.
A scan leaves the unknown tokens of a text pending in place and reports them together, so
the caller learns them in one batch (one stemmer call) and resolves them without a second
scan.  Normalisation (NFKC, case folding), stop words and stemming all happen in that
Python step, once per distinct raw token: the kernel only finds token boundaries, which is
why its output is the reference's by construction.  numba because this is a scanning loop
that numpy cannot vectorise.

The token regular expression is ``\\d+(?:[.,]\\d+)+(?![^\\W_])|[^\\W_]+(?:['’][^\\W_]+)*``:
a number with inner ``.``/``,`` groups, as many groups as still leave a non-alphanumeric
character after it, or else a run of letters/digits with inner apostrophes.  The kernel
reads the two character classes it uses (``[^\\W_]`` and ``\\d``) from a table indexed by
code point, built by ``neardup.text`` from those very classes of the regular expression.

Keys: FNV-1a 64, xor the length, splitmix64-finalised; over the lower-cased bytes of an
ASCII token (whose forms depend only on its lower-case spelling) and over the exact code
points of any other token (tagged apart).  Two distinct tokens sharing a key (probability
about 2**-64 per pair) would share their pieces.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from neardup._jit import compiled_worthwhile, njit
from neardup._mix import GOLDEN, splitmix64

__all__ = [
    "ALNUM",
    "DIGIT",
    "Scan",
    "TokenTable",
    "minhash_of_values",
    "minhash_permutations",
    "resolve",
    "scan_tokens",
    "simhash64",
    "sorted_distinct",
    "word_shingles",
]

_mix64 = njit(cache=True, inline="always")(splitmix64)

#: Character-class bits of the scanner's table: ``[^\W_]`` (a letter or digit, ``str.isalnum``)
#: and ``\d`` (a decimal digit) of Python's ``re``.
ALNUM = 1
DIGIT = 2

_FNV_OFFSET = np.uint64(0xCBF29CE484222325)
_FNV_PRIME = np.uint64(0x100000001B3)
_WIDE_TAG = np.uint64(0x57494445)  # "WIDE": keys of tokens with non-ASCII code points

_EMPTY = np.int64(0)  # an empty slot; a real key 0 is stored as _ZERO_KEY
_ZERO_KEY = np.int64(0x5A45524F)


class TokenTable:
    """Open-addressing hash table key -> value in two int64 arrays (linear probing).

    Values: > 0 a slot number (the token's pieces), < 0 a token reported unknown by the scan
    with that (negated) call id.  Kept at most half full.  Plain arrays instead of a numba
    typed dict: passing them to a compiled function costs far less.
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
def _is(classes: npt.NDArray[np.uint8], c: int, bit: int) -> bool:
    return bool(classes[c] & bit)


@njit(cache=True, inline="always")
def _key(buf: npt.NDArray[np.integer], start: int, end: int) -> np.int64:  # type: ignore[type-arg]
    h = _FNV_OFFSET
    wide = False
    for p in range(start, end):
        c = np.uint64(buf[p])
        if c >= np.uint64(128):
            wide = True
            break
        if np.uint64(65) <= c <= np.uint64(90):
            c += np.uint64(32)
        h = (h ^ c) * _FNV_PRIME
    if wide:  # exact code points: the forms of a non-ASCII token may depend on its case
        h = _FNV_OFFSET ^ _WIDE_TAG
        for p in range(start, end):
            h = (h ^ np.uint64(buf[p])) * _FNV_PRIME
    key = np.int64(_mix64(h ^ np.uint64(end - start)))
    return key if key != _EMPTY else _ZERO_KEY


@njit(cache=True, inline="always")
def _token_end(
    buf: npt.NDArray[np.integer],  # type: ignore[type-arg]
    classes: npt.NDArray[np.uint8],
    i: int,
    n: int,
) -> int:
    """End of the token starting at ``i`` (``i`` itself when none starts there)."""
    end = -1
    if _is(classes, buf[i], DIGIT):
        j = i
        while j < n and _is(classes, buf[j], DIGIT):
            j += 1
        k = j
        # Number groups: keep the longest one still followed by a non-alphanumeric.
        while k + 1 < n and (buf[k] == 46 or buf[k] == 44) and _is(classes, buf[k + 1], DIGIT):
            m = k + 1
            while m < n and _is(classes, buf[m], DIGIT):
                m += 1
            if m >= n or not _is(classes, buf[m], ALNUM):
                end = m
            k = m
    if end < 0:
        j = i
        while j < n and _is(classes, buf[j], ALNUM):
            j += 1
        if j == i:
            return i
        while j + 1 < n and (buf[j] == 39 or buf[j] == 0x2019) and _is(classes, buf[j + 1], ALNUM):
            j += 1
            while j < n and _is(classes, buf[j], ALNUM):
                j += 1
        end = j
    return end


@njit(cache=True)
def _scan(
    buf: npt.NDArray[np.integer],  # type: ignore[type-arg]
    start: int,
    classes: npt.NDArray[np.uint8],
    table_keys: npt.NDArray[np.int64],
    table_values: npt.NDArray[np.int64],
    used: int,
    slot_pieces: npt.NDArray[np.int64],
    piece_values: npt.NDArray[np.uint64],
    piece_spans: npt.NDArray[np.int64],
    work: npt.NDArray[np.uint64],
    bound: int,
    call_id: int,
) -> tuple[int, int, int, int, int]:
    # One output array (each argument of a compiled call costs time), in the layout of
    # Scan: values, reported tokens (start, end, key), pending positions, and the spans
    # when the array has room for them (integers stored as their uint64 bits).
    at_misses = bound
    at_pending = 4 * bound
    at_spans = 5 * bound
    with_spans = work.shape[0] > at_spans
    n = buf.shape[0]
    capacity = table_keys.shape[0]
    i = start
    count = 0
    missed = 0
    waiting = 0
    added = 0
    while i < n:
        if classes[buf[i]] == 0:
            i += 1
            continue
        end = _token_end(buf, classes, i, n)
        if end == i:
            i += 1
            continue
        if count >= bound:
            return count, missed, waiting, added, i  # output full: the caller resumes at i
        key = _key(buf, i, end)
        slot = _slot(table_keys, key)
        report = False
        if table_keys[slot] == _EMPTY:
            if 2 * (used + added + 1) > capacity:
                return count, missed, waiting, added, i  # full: the caller grows, resumes at i
            table_keys[slot] = key  # insert as pending for this call
            table_values[slot] = -call_id
            added += 1
            value = np.int64(-call_id)
            report = True
        else:
            value = table_values[slot]
            if value < 0 and value != -call_id:
                table_values[slot] = -call_id  # pending from an interrupted call: report
                report = True
        if value > 0:
            lo = slot_pieces[value]
            hi = slot_pieces[value + 1]
            if hi - lo == 1 and not with_spans:  # the usual case (room checked above)
                work[count] = piece_values[lo]
                count += 1
                i = end
                continue
            if count + (hi - lo) > bound:
                return count, missed, waiting, added, i
            for p in range(lo, hi):
                work[count] = piece_values[p]
                if with_spans:
                    work[at_spans + 2 * count] = np.uint64(i + piece_spans[2 * p])
                    work[at_spans + 2 * count + 1] = np.uint64(i + piece_spans[2 * p + 1])
                count += 1
        else:
            # Unknown yet: keep the key in its place in the output, resolved after the
            # caller has stored the new tokens (no second scan of the text).
            work[count] = np.uint64(key)
            if with_spans:
                work[at_spans + 2 * count] = np.uint64(i)
                work[at_spans + 2 * count + 1] = np.uint64(end)
            work[at_pending + waiting] = np.uint64(count)
            waiting += 1
            count += 1
            if report:
                work[at_misses + 3 * missed] = np.uint64(i)
                work[at_misses + 3 * missed + 1] = np.uint64(end)
                work[at_misses + 3 * missed + 2] = np.uint64(key)
                missed += 1
        i = end
    return count, missed, waiting, added, n


@njit(cache=True)
def _resolve(
    table_keys: npt.NDArray[np.int64],
    table_values: npt.NDArray[np.int64],
    slot_pieces: npt.NDArray[np.int64],
    piece_values: npt.NDArray[np.uint64],
    piece_spans: npt.NDArray[np.int64],
    work: npt.NDArray[np.uint64],
    bound: int,
    count: int,
    waiting: int,
) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.int64], bool]:
    """Replace each pending key among the ``count`` values of a scan's ``work`` by its
    token's pieces (none, one or several); ``ok`` is false if a key is still unknown."""
    at_pending = 4 * bound
    at_spans = 5 * bound
    with_spans = work.shape[0] > at_spans
    total = count - waiting
    for q in range(waiting):
        slot = _slot(table_keys, np.int64(work[np.int64(work[at_pending + q])]))
        value = table_values[slot]
        if table_keys[slot] == _EMPTY or value <= 0:
            return np.empty(0, dtype=np.uint64), np.empty(0, dtype=np.int64), False
        total += slot_pieces[value + 1] - slot_pieces[value]
    new_out = np.empty(total, dtype=np.uint64)
    new_spans = np.empty(2 * total if with_spans else 0, dtype=np.int64)
    w = 0
    q = 0
    for r in range(count):
        if q < waiting and np.int64(work[at_pending + q]) == r:
            q += 1
            value = table_values[_slot(table_keys, np.int64(work[r]))]
            base = np.int64(work[at_spans + 2 * r]) if with_spans else 0
            for p in range(slot_pieces[value], slot_pieces[value + 1]):
                new_out[w] = piece_values[p]
                if with_spans:
                    new_spans[2 * w] = base + piece_spans[2 * p]
                    new_spans[2 * w + 1] = base + piece_spans[2 * p + 1]
                w += 1
        else:
            new_out[w] = work[r]
            if with_spans:
                new_spans[2 * w] = np.int64(work[at_spans + 2 * r])
                new_spans[2 * w + 1] = np.int64(work[at_spans + 2 * r + 1])
            w += 1
    return new_out, new_spans, True


class Pieces:
    """The slots of a :class:`TokenTable`: slot ``s`` holds pieces
    ``slot_pieces[s] .. slot_pieces[s + 1] - 1``; piece ``p`` spans
    ``piece_spans[2p] .. piece_spans[2p + 1]`` relative to its token's start.  Slot 0 is
    unused (a table value of 0 is never a slot).  Grown by doubling."""

    def __init__(self) -> None:
        self.slot_pieces = np.zeros(1024, dtype=np.int64)
        self.slots = 1
        self.piece_spans = np.zeros(2048, dtype=np.int64)
        self.count = 0

    def append(self, spans: list[list[tuple[int, int]]]) -> npt.NDArray[np.int64]:
        """Add one slot per entry of ``spans`` (its pieces' relative spans); their numbers."""
        first = self.slots
        sizes = np.fromiter((len(s) for s in spans), dtype=np.int64, count=len(spans))
        total = int(sizes.sum())
        slots_needed = self.slots + len(spans) + 1
        if slots_needed > self.slot_pieces.shape[0]:
            self.slot_pieces = _grown(self.slot_pieces, slots_needed)
        if 2 * (self.count + total) > self.piece_spans.shape[0]:
            self.piece_spans = _grown(self.piece_spans, 2 * (self.count + total))
        ends = self.count + np.cumsum(sizes)
        self.slot_pieces[first + 1 : first + 1 + len(spans)] = ends
        flat = [edge for token in spans for span in token for edge in span]
        self.piece_spans[2 * self.count : 2 * (self.count + total)] = flat
        self.slots += len(spans)
        self.count += total
        return np.arange(first, self.slots, dtype=np.int64)


def _grown(array: npt.NDArray[np.int64], needed: int) -> npt.NDArray[np.int64]:
    size = array.shape[0]
    while size < needed:
        size *= 2
    grown = np.zeros(size, dtype=array.dtype)
    grown[: array.shape[0]] = array
    return grown


class Scan(NamedTuple):
    """Result of :func:`scan_tokens` over ``buf[start:stop]``.

    ``values()`` are the pieces' values in text order (and ``spans()`` their flat ``start,
    end`` pairs, when asked for), except at the ``pending`` positions, which hold the keys
    of tokens not known yet (with the whole token's span); ``misses()`` are the flattened
    ``(start, end, key)`` triples of the unknown tokens this call reported (each once).
    ``stop`` is ``len(buf)`` when the scan reached the end, else the offset of the token at
    which the table became half full or the output filled up (grow them and scan again
    from there).  All in one array, ``work`` (values, misses, pending positions, spans).
    """

    work: npt.NDArray[np.uint64]
    bound: int
    size: int
    missed: int
    waiting: int
    stop: int

    def values(self) -> npt.NDArray[np.uint64]:
        return self.work[: self.size]

    def spans(self) -> npt.NDArray[np.int64]:
        at = 5 * self.bound
        return self.work[at : at + 2 * self.size].view(np.int64)

    def misses(self) -> npt.NDArray[np.int64]:
        return self.work[self.bound : self.bound + 3 * self.missed].view(np.int64)


def scan_tokens(
    buf: npt.NDArray[np.integer],  # type: ignore[type-arg]
    classes: npt.NDArray[np.uint8],
    table: TokenTable,
    pieces: Pieces,
    piece_values: npt.NDArray[np.uint64],
    call_id: int,
    start: int = 0,
    spans: bool = False,
    bound: int = 0,
) -> Scan:
    """Scan the code units ``buf`` (``uint8`` for ASCII text, else ``uint32`` code points)
    from ``start`` (a token start or separator): the values of the tokens' pieces, with the
    unknown tokens left pending (see :class:`Scan`).

    Unknown tokens are inserted in the table as pending (value ``-call_id``) and reported
    once per ``call_id`` (a positive integer unique to the call).  Store the reported tokens
    (:meth:`Pieces.append`, :meth:`TokenTable.set_many`), then :func:`resolve` the pending
    positions: one pass over the text however many new words it has.  ``bound``: room for
    at least that many pieces (one per code unit is always enough, unless NFKC expanded a
    token of a no-space script).
    """
    bound = max(bound, buf.shape[0] - start + 1)
    work = np.empty((7 if spans else 5) * bound, dtype=np.uint64)
    count, missed, waiting, added, stop = _scan(
        buf, start, classes, table.keys, table.values, table.used, pieces.slot_pieces,
        piece_values, pieces.piece_spans, work, bound, call_id,
    )  # fmt: skip
    table.used += added
    return Scan(work, bound, count, missed, waiting, stop)


def resolve(
    scan: Scan, table: TokenTable, pieces: Pieces, piece_values: npt.NDArray[np.uint64]
) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.int64]] | None:
    """The values and spans of a scan once its reported tokens are stored (``None`` if
    some pending token is still unknown, which a caller that stored every miss never
    sees)."""
    if scan.waiting == 0:
        return scan.values(), scan.spans()
    values, spans, ok = _resolve(
        table.keys, table.values, pieces.slot_pieces, piece_values, pieces.piece_spans,
        scan.work, scan.bound, scan.size, scan.waiting,
    )  # fmt: skip
    return (values, spans) if ok else None


# --- shingles and MinHash -------------------------------------------------------------------

_POLY = GOLDEN
_MAX = np.uint64(0xFFFFFFFFFFFFFFFF)


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
    """:func:`distinct` of a uint64 array, compiled once numba is worth loading
    (:func:`neardup._jit.compiled_worthwhile`): no numpy per-call overhead."""
    values = np.ascontiguousarray(values, dtype=np.uint64)
    if compiled_worthwhile(10_000 + 50 * values.shape[0]):
        return _sorted_distinct(values)
    return distinct(values)


def distinct(values: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """Sorted distinct values of an array (flattened), in its dtype: ``np.unique(values)``
    without its import of ``numpy.ma`` (a tenth of a small job's time)."""
    ordered = np.sort(values, axis=None)
    keep = np.ones(ordered.shape[0], dtype=np.bool_)
    keep[1:] = ordered[1:] != ordered[:-1]
    found: npt.NDArray[Any] = ordered[keep]
    return found


def distinct_below(values: npt.NDArray[Any], size: int) -> npt.NDArray[Any]:
    """:func:`distinct` of integers in ``[0, size)``, by marking them instead of sorting:
    O(len + size) (row numbers of millions of pairs: a tenth of the sort's time)."""
    seen = np.zeros(size, dtype=np.bool_)
    seen[values.ravel()] = True
    found: npt.NDArray[Any] = np.flatnonzero(seen).astype(values.dtype, copy=False)
    return found


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
