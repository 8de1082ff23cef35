"""Coverage sketch: a fixed-size sample of a text's words from which the share of its prose
found in another text (the near-duplicate rule's *coverage*) is estimated.

The near-duplicate rule (:mod:`neardup.rule`) reads, for two texts A and B, the share of A's
prose tokens *found* in B, a token being found when one of the word ``width``-shingles
covering it (Broder 1997) is among B's shingles, and the same of B in A.  This module keeps,
per text, what is needed to decide "found" *exactly* for a coordinated sample of its tokens:

* **which tokens**: the occurrences of the word types whose 32-bit key (the top half of the
  token hash) is among the text's smallest, up to ``sample_size`` occurrences (bottom-k
  sampling of word types, every occurrence of a chosen type kept: coordinated across
  texts, because a word's key is the same in every text; Cohen & Kaplan, "Summarizing data
  using bottom-k sketches", PODC 2007).  A type occurring more than ``max_word_count``
  times in the text is listed without its occurrences (*overflow*) and not sampled, so the
  sketch stays small on long texts;
* **for each sampled word**: the 16-bit fingerprints of the shingles covering its
  occurrences, sorted, each with the set of occurrences it covers (a bit mask; the counted,
  prose, occurrences first) and whether it starts at one of them.

Why that decides "found": a shingle covering a token of word ``x`` contains ``x``.  If it is
among B's shingles, it covers an occurrence of ``x`` in B, and B, which sampled ``x`` (its key
is below B's bound), lists that shingle with that occurrence.  So for every sampled prose
token of A whose word type B also sampled (or B has not, with a key below B's bound: then
the word is absent from B and the token is not found), "found" is read from the two sketches
exactly, up to a 16-bit fingerprint collision among the covering shingles of the same word
(a false "found" with probability below ``width * entries / 65536``).  Comparing a word of
two sketches is one merge of their sorted fingerprints.  The share of those
tokens found estimates the rule's coverage of A in B: its expectation over the random word
keys is close to the coverage, and its error is that of a sample of about
``sample_size * bound_B / bound_A`` tokens drawn in clusters of one word type each.

:func:`sketch_values` builds the sketch from a text's arrays (token hashes, shingle hashes in
text order, per-token page-furniture flags); :func:`pair_counts` (compiled) gives
``(found, eligible)`` of each of two sketches in the other, equal to
:func:`direction_counts_reference` (plain Python, the oracle) both ways.  The scheme itself
(``neardup.sign(text, "coverage")``) is defined where the rule's profile is, in
:mod:`neardup.rule.coverage`.

Layout of the ``uint32`` values (little-endian through :class:`~neardup.sketch.base.Signature`)::

    word 0      format (1) | flags << 8 | width << 16     flags: 1 complete, 2 no prose
    word 1      sample_size (1 .. MAX_SAMPLE_SIZE)
    word 2      max_word_count (1 .. MAX_WORD_COUNT)
    word 3      bound: sampled types have keys < bound (unused when complete)
    word 4      T, number of listed word types
    word 5      N, number of sampled occurrences
    6 .. 6+T    word-type keys, strictly ascending
    next T      per type: counted << 24 | stored << 16 | entries, or 0xFFFFFFFF for an
                overflow type (listed, not sampled: no entries)
    the rest    the entries, type by type, strictly ascending:
                fingerprint << 16 | starts << 15 | occurrence mask (15 bits)

``stored``: the type's occurrences in the text (at most ``max_word_count``, at most 15);
``counted``: how many of them are prose (they are the low bits of the masks); an entry is a
distinct covering shingle of the type's occurrences: its fingerprint (the top 16 bits of the
shingle hash), whether it is the shingle starting at one of them (the keys result-set dedup
finds candidates by), and the occurrences it covers.

*complete*: every word type of the text is listed (the bound does not apply).  *no prose*:
the text is all page furniture, so (like the rule) every token is counted.

Guarantees: deterministic (the bytes depend only on the arrays and parameters); size at most
``6 + 2 * (2 * sample_size + max_word_count) + width * (sample_size + max_word_count)``
words, whatever the text length; building is O(n log n) in the tokens.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
from numba import njit

from neardup.errors import InputError, SignatureFormatError

__all__ = [
    "FORMAT",
    "HEADER_WORDS",
    "MAX_SAMPLE_SIZE",
    "MAX_WORD_COUNT",
    "OVERFLOW",
    "STARTS",
    "SketchParts",
    "direction_counts_reference",
    "layout_code",
    "layout_error",
    "occurrence_keys",
    "pair_counts",
    "parse",
    "sketch_values",
]

FORMAT = 1
HEADER_WORDS = 6
OVERFLOW = 0xFFFFFFFF
MAX_WORD_COUNT = 15  # occurrences of one word a sketch may list: the bits of an entry's mask
MAX_SAMPLE_SIZE = 1 << 16  # the largest sample_size a sketch may declare
STARTS = 1 << 15  # the entry's shingle starts at one of the occurrences
MASK = STARTS - 1
COMPLETE = 1
NO_PROSE = 2
_FURNITURE = 1  # the rule's page-furniture bit of a token flag (neardup.rule.junk.FURNITURE)
_PAST = np.int64(1) << np.int64(40)  # beyond every 32-bit key: the end of a word list

U32 = npt.NDArray[np.uint32]


def sketch_values(
    token_hashes: npt.NDArray[np.uint64],
    shingles: npt.NDArray[np.uint64],
    flags: npt.NDArray[np.uint8],
    *,
    width: int,
    sample_size: int,
    max_word_count: int,
) -> U32:
    """The sketch (layout in the module docstring) of one text.

    ``token_hashes``: the 64-bit hash of each token, in text order; ``shingles``: the hashes
    of its word ``width``-shingles in text order (one shingle of all tokens when the text has
    fewer than ``width``); ``flags``: per token, bit 1 set for page furniture.
    """
    n = int(token_hashes.shape[0])
    m = int(shingles.shape[0])
    if flags.shape[0] != n or (n and m != max(n - width + 1, 1)) or (not n and m):
        raise InputError(f"{n} tokens, {flags.shape[0]} flags and {m} shingles do not match")
    if not 1 <= max_word_count <= MAX_WORD_COUNT:
        raise InputError(f"max_word_count must be in 1..{MAX_WORD_COUNT}, got {max_word_count}")
    keys = (token_hashes >> np.uint64(32)).astype(np.uint32)
    counted = (flags & _FURNITURE) == 0
    no_prose = n > 0 and not counted.any()
    if no_prose:
        counted[:] = True
    types, type_of, counts = np.unique(keys, return_inverse=True, return_counts=True)
    overflow = counts > max_word_count
    # Types are taken in key order until sample_size occurrences (or sample_size overflow
    # types) are listed; `stop` is the first type left out.
    stored = np.where(overflow, 0, counts)
    stored_before = np.cumsum(stored) - stored
    overflow_before: npt.NDArray[np.int64] = np.cumsum(overflow) - overflow
    over = (stored_before >= sample_size) | (overflow_before >= sample_size)
    stop = int(np.argmax(over)) if over.any() else int(types.shape[0])
    complete = stop == types.shape[0]
    # The sampled occurrences, type by type, counted ones first, in text order.
    chosen = np.flatnonzero((type_of < stop) & ~overflow[type_of])
    chosen = chosen[np.lexsort((chosen, ~counted[chosen], type_of[chosen]))]
    chosen_type = type_of[chosen]
    first = np.searchsorted(chosen_type, chosen_type, side="left")
    occurrence = np.arange(chosen.shape[0]) - first  # its index among its type's
    entry_type, entries = _entries(chosen, chosen_type, occurrence, shingles, n, width)
    per_entry = np.bincount(entry_type, minlength=stop)[:stop]
    prose = np.bincount(type_of[counted], minlength=types.shape[0])[:stop]
    per_type = np.where(
        overflow[:stop],
        np.int64(OVERFLOW),
        (prose.astype(np.int64) << 24) | (counts[:stop].astype(np.int64) << 16) | per_entry,
    ).astype(np.uint32)
    head = np.array(
        [
            FORMAT | ((COMPLETE * complete + NO_PROSE * no_prose) << 8) | (width << 16),
            sample_size,
            max_word_count,
            0 if complete else int(types[stop]),
            stop,
            chosen.shape[0],
        ],
        dtype=np.uint32,
    )
    return np.concatenate((head, types[:stop].astype(np.uint32), per_type, entries))


def _entries(
    tokens: npt.NDArray[np.intp],
    token_type: npt.NDArray[np.intp],
    occurrence: npt.NDArray[np.intp],
    shingles: npt.NDArray[np.uint64],
    n: int,
    width: int,
) -> tuple[npt.NDArray[np.intp], U32]:
    """The entries of the sampled ``tokens`` (see the layout) and the type of each."""
    if tokens.shape[0] == 0:
        return np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.uint32)
    m = shingles.shape[0]
    span = min(width, n)
    hi = np.minimum(tokens, m - 1)  # the shingle starting at the token (the last at the end)
    lo = np.maximum(tokens - span + 1, 0)
    reps = hi - lo + 1
    which = np.repeat(np.arange(tokens.shape[0]), reps)
    position = np.repeat(hi, reps) - (
        np.arange(which.shape[0]) - np.repeat(np.cumsum(reps) - reps, reps)
    )
    fp = (shingles[position] >> np.uint64(48)).astype(np.int64)
    bits = (np.int64(1) << occurrence[which].astype(np.int64)) | np.where(
        position == hi[which], np.int64(STARTS), np.int64(0)
    )
    kind = token_type[which].astype(np.int64)
    order = np.lexsort((fp, kind))
    kind, fp, bits = kind[order], fp[order], bits[order]
    new = np.ones(kind.shape[0], dtype=bool)
    new[1:] = (kind[1:] != kind[:-1]) | (fp[1:] != fp[:-1])
    starts = np.flatnonzero(new)
    merged = np.bitwise_or.reduceat(bits, starts)
    return kind[starts].astype(np.intp), ((fp[starts] << 16) | merged).astype(np.uint32)


def layout_error(values: U32) -> str | None:
    """Why ``values`` is not a well-formed coverage sketch, or ``None`` when it is."""
    if values.dtype != np.uint32:
        return f"values must be uint32, got {values.dtype}"
    return _LAYOUT_MESSAGES[int(layout_code(values, 0, values.shape[0], True))]


_LAYOUT_MESSAGES = {
    0: None,
    1: "shorter than its header",
    2: "unknown format or width, or sample parameters out of range",
    3: "its length does not match its header",
    4: "word-type keys are not strictly ascending below the sketch's bound",
    5: "a word type's counts are inconsistent",
    6: "occurrence counts do not add up",
    7: (
        "a word type's entries are not strictly ascending fingerprints with occurrence masks, "
        "or more of them start a shingle than the word has occurrences"
    ),
}


@njit(cache=True, nogil=True)
def layout_code(values: Any, lo: Any, hi: Any, entries: bool) -> Any:  # pragma: no cover
    """0 when ``values[lo:hi]`` is a well-formed sketch, else the code of the first fault.

    ``entries=False`` checks the structure only (header, word keys and counts: what keeps
    :func:`pair_counts` within the sketch), in O(T); ``True`` also every entry.
    """
    if hi - lo < HEADER_WORDS:
        return 1
    head = np.int64(values[lo])
    width = (head >> 16) & 0xFFFF
    if head & 0xFF != FORMAT or width < 1 or width > 32:
        return 2
    # Readers size their work by the declared sample (result-set dedup's table of needed
    # matches), so it must stay within what a sketch can hold.
    sample_size = np.int64(values[lo + 1])
    max_word_count = np.int64(values[lo + 2])
    if sample_size < 1 or sample_size > MAX_SAMPLE_SIZE:
        return 2
    if max_word_count < 1 or max_word_count > MAX_WORD_COUNT:
        return 2
    t = np.int64(values[lo + 4])
    if hi - lo < HEADER_WORDS + 2 * t:
        return 3
    keys = lo + HEADER_WORDS
    for i in range(1, t):  # unsigned reads (_at): they are within the sketch from here on
        if _at(values, keys + i) <= _at(values, keys + i - 1):
            return 4
    # A sampled sketch lists only keys below its bound: a comparison stops at the bound.
    if (head >> 8) & COMPLETE == 0 and t > 0 and values[keys + t - 1] >= values[lo + 3]:
        return 4
    listed = np.int64(0)
    occurrences = np.int64(0)
    for i in range(t):
        c = np.int64(_at(values, keys + t + i))
        if c == OVERFLOW:
            continue
        stored = (c >> 16) & 0xFF
        if stored < 1 or stored > MAX_WORD_COUNT or (c >> 24) > stored or c & 0xFFFF == 0:
            return 5
        listed += c & 0xFFFF
        occurrences += stored
    if hi - lo != HEADER_WORDS + 2 * t + listed:
        return 3
    if occurrences != np.int64(values[lo + 5]):
        return 6
    if not entries:
        return 0
    at = keys + 2 * t
    for i in range(t):
        c = np.int64(_at(values, keys + t + i))
        if c == OVERFLOW:
            continue
        stored = (c >> 16) & 0xFF
        full = (np.int64(1) << stored) - 1
        previous = np.int64(-1)
        starts = np.int64(0)  # one shingle starts at each occurrence
        for e in range(c & 0xFFFF):
            v = np.int64(_at(values, at + e))
            if (v >> 16) <= previous or v & MASK == 0 or v & MASK & ~full:
                return 7
            previous = v >> 16
            starts += (v & STARTS) != 0
        if starts > stored:
            return 7
        at += c & 0xFFFF
    return 0


@njit(cache=True, nogil=True, inline="always")
def occurrence_keys(  # pragma: no cover - compiled
    values: Any, lo: Any, hi: Any, keys: Any, words: Any, marks: Any
) -> Any:
    """Write the occurrence keys of ``values[lo:hi]`` to ``keys`` in entry order and return
    how many: ``word key << 16 | fingerprint`` of each entry whose shingle starts at one of
    the word's occurrences (:attr:`SketchParts.occurrence_keys`, as a list).

    The structure must be sound (``layout_code`` without entries is 0): reads and writes
    then stay within the sketch, ``keys``, ``words`` (both at least as long as the sketch)
    and ``marks`` (``uint8``, as long, all zero; left so).  The entries need not be: a
    sketch of well-formed entries has at most one key per sampled occurrence (``values[lo +
    5]``), and a caller relying on that checks the count.

    One pass over the types marks where each listed type's entries begin and keeps its
    word; one pass over the entries, without a branch, writes every entry's key and
    advances past those that start no shingle.  A loop per type runs a few entries and
    mispredicts its exit: this pass took a third of that loop's time over 100 Reuters
    sketches (49 -> 17 us, an ad-hoc timing of the key pass alone; the whole result set in
    docs/resultset.md).  Unsigned indexes spare numba's negative-index check of every signed
    one.
    """
    one = np.uint64(1)
    base = np.uint64(lo) + np.uint64(HEADER_WORDS)
    t = np.uint64(values[np.uint64(lo) + np.uint64(4)])
    at = base + np.uint64(2) * t  # the first entry
    listed = np.uint64(0)
    begin = np.uint64(0)
    for type_ in range(t):
        c = np.uint64(type_)
        count = np.uint64(values[base + t + c])
        if count == OVERFLOW:
            continue  # listed without entries
        words[listed] = np.uint64(values[base + c]) << np.uint64(16)
        marks[begin] = 1
        begin += count & np.uint64(0xFFFF)
        listed += one
    if listed == 0:
        return np.int64(0)
    marks[np.uint64(0)] = 0
    k = np.uint64(0)
    m = np.uint64(0)
    for entry_ in range(np.uint64(hi) - at):
        e = np.uint64(entry_)
        k += np.uint64(marks[e])
        marks[e] = 0
        entry = np.uint64(values[at + e])
        keys[m] = words[k] | (entry >> np.uint64(16))
        m += np.uint64((entry & np.uint64(STARTS)) != 0)
    return np.int64(m)


@njit(cache=True, nogil=True, inline="always")
def _at(values: Any, i: Any) -> Any:  # pragma: no cover - compiled
    """``values[i]`` for an index known to be in range and not negative: an unsigned index
    spares numba's negative-index check."""
    return values[np.uint64(i)]


@njit(cache=True, nogil=True)
def pair_counts(  # pragma: no cover - compiled
    values: Any,
    a: Any,
    b: Any,
    exact: bool = True,
    need_a: Any = 0,
    need_b: Any = 0,
    upper_a: Any = 0,
    upper_b: Any = 0,
) -> Any:
    """``(found_a, eligible_a, found_b, eligible_b)`` of the sketches starting at ``values[a]``
    and ``values[b]``: each one's sample in the other, in one merge of their word lists.

    Both must be well-formed (:func:`layout_error`) and of the same width.  *Eligible* (of A
    in B): A's counted sampled tokens whose word key is below B's bound and is not an
    overflow type of either; *found*: those with a covering-shingle fingerprint among B's
    entries of the same word.  Equal to :func:`direction_counts_reference` both ways.

    ``exact=False`` skips the fingerprints and counts as found every eligible token whose
    word the other text holds: an upper bound of ``found``, at the cost of the merge alone.
    Given those upper bounds (``upper_a``, ``upper_b``) and ``need_a`` or ``need_b`` > 0, the
    exact merge stops as soon as ``found_a >= need_a`` or ``found_b >= need_b`` has become
    impossible and returns ``found_a = found_b = -1`` (seed 000's early termination).
    """
    a_open = ((_at(values, a) >> 8) & COMPLETE) == 0  # a bound applies to A's word keys
    b_open = ((_at(values, b) >> 8) & COMPLETE) == 0
    a_bound = np.int64(_at(values, a + 3))
    b_bound = np.int64(_at(values, b + 3))
    ta = np.int64(_at(values, a + 4))
    tb = np.int64(_at(values, b + 4))
    keys_a = a + HEADER_WORDS
    keys_b = b + HEADER_WORDS
    at_a = keys_a + 2 * ta  # the entries of the current type
    at_b = keys_b + 2 * tb
    # Every integer is an int64 (a uint32 read mixed with signed counts would make numba
    # compute in floats).
    found_a = eligible_a = found_b = eligible_b = i = j = np.int64(0)
    lost_a = lost_b = np.int64(0)  # eligible tokens of shared words found not to be found
    while i < ta or j < tb:
        ka = np.int64(_at(values, keys_a + i)) if i < ta else _PAST
        kb = np.int64(_at(values, keys_b + j)) if j < tb else _PAST
        ca = np.int64(_at(values, keys_a + ta + i)) if i < ta else np.int64(OVERFLOW)
        cb = np.int64(_at(values, keys_b + tb + j)) if j < tb else np.int64(OVERFLOW)
        if ka < kb:  # a word of A that B does not hold
            if b_open and ka >= b_bound:
                i = ta  # the rest of A is beyond what B sampled
                continue
            if ca != OVERFLOW:
                eligible_a += ca >> 24
                at_a += ca & 0xFFFF
            i += 1
        elif kb < ka:  # a word of B that A does not hold
            if a_open and kb >= a_bound:
                j = tb
                continue
            if cb != OVERFLOW:
                eligible_b += cb >> 24
                at_b += cb & 0xFFFF
            j += 1
        else:  # a word both hold: merge the fingerprints of its shingles
            if ca != OVERFLOW and cb != OVERFLOW:
                if exact:
                    marks_a, marks_b = _merge_marks(values, at_a, ca & 0xFFFF, at_b, cb & 0xFFFF)
                    fa = _popcount(marks_a & ((np.int64(1) << (ca >> 24)) - 1))
                    fb = _popcount(marks_b & ((np.int64(1) << (cb >> 24)) - 1))
                    found_a += fa
                    found_b += fb
                    lost_a += (ca >> 24) - fa
                    lost_b += (cb >> 24) - fb
                    if (need_a > 0 and upper_a - lost_a < need_a) or (
                        need_b > 0 and upper_b - lost_b < need_b
                    ):
                        return np.int64(-1), eligible_a, np.int64(-1), eligible_b
                else:
                    found_a += ca >> 24
                    found_b += cb >> 24
                eligible_a += ca >> 24
                eligible_b += cb >> 24
            if ca != OVERFLOW:
                at_a += ca & 0xFFFF
            if cb != OVERFLOW:
                at_b += cb & 0xFFFF
            i += 1
            j += 1
    return found_a, eligible_a, found_b, eligible_b


@njit(cache=True, nogil=True, inline="always")
def _merge_marks(values: Any, a: Any, na: Any, b: Any, nb: Any) -> Any:  # pragma: no cover
    """The occurrences of each side covered by a fingerprint both sides hold (bit masks)."""
    marks_a = np.int64(0)
    marks_b = np.int64(0)
    p = np.int64(0)
    q = np.int64(0)
    while p < na and q < nb:
        x = np.int64(_at(values, a + p))
        y = np.int64(_at(values, b + q))
        fx = x >> 16
        fy = y >> 16
        if fx < fy:
            p += 1
        elif fy < fx:
            q += 1
        else:
            marks_a |= x & MASK
            marks_b |= y & MASK
            p += 1
            q += 1
    return marks_a, marks_b


@njit(cache=True, nogil=True, inline="always")
def _popcount(x: Any) -> Any:  # pragma: no cover - compiled
    count = np.int64(0)
    while x:
        x &= x - 1
        count += 1
    return count


class SketchParts:
    """A sketch read into plain Python values (for the reference and for tests)."""

    def __init__(self, values: U32) -> None:
        error = layout_error(values)
        if error is not None:
            raise SignatureFormatError(f"not a coverage sketch: {error}")
        v = values.tolist()
        head = v[0]
        self.width: int = (head >> 16) & 0xFFFF
        self.complete = bool((head >> 8) & COMPLETE)
        self.no_prose = bool((head >> 8) & NO_PROSE)
        self.sample_size: int = v[1]
        self.max_word_count: int = v[2]
        self.bound: int | None = None if self.complete else v[3]
        t = v[4]
        keys = v[HEADER_WORDS : HEADER_WORDS + t]
        per_type = v[HEADER_WORDS + t : HEADER_WORDS + 2 * t]
        at = HEADER_WORDS + 2 * t
        # key -> None (overflow) or (the fingerprints of each counted occurrence,
        #                            the fingerprints of every listed occurrence)
        self.types: dict[int, tuple[list[set[int]], set[int]] | None] = {}
        # (word key << 16) | fingerprint of a shingle starting at an occurrence: what
        # result-set dedup finds candidates by
        self.occurrence_keys: set[int] = set()
        for key, c in zip(keys, per_type, strict=True):
            if c == OVERFLOW:
                self.types[key] = None
                continue
            occurrences: list[set[int]] = [set() for _ in range((c >> 16) & 0xFF)]
            for e in v[at : at + (c & 0xFFFF)]:
                for o, fps in enumerate(occurrences):
                    if e >> o & 1:
                        fps.add(e >> 16)
                if e & STARTS:
                    self.occurrence_keys.add((key << 16) | (e >> 16))
            at += c & 0xFFFF
            every = {f for fps in occurrences for f in fps}
            self.types[key] = (occurrences[: c >> 24], every)


def parse(values: U32) -> SketchParts:
    """The sketch's parts (``SignatureFormatError`` for values that are not a sketch)."""
    return SketchParts(values)


def direction_counts_reference(a: U32, b: U32) -> tuple[int, int]:
    """``(found, eligible)`` of ``a`` in ``b`` by plain Python dictionaries and sets (the
    oracle of :func:`pair_counts`)."""
    pa, pb = parse(a), parse(b)
    found = eligible = 0
    for key, entry in pa.types.items():
        if pb.bound is not None and key >= pb.bound:
            break
        if entry is None:
            continue
        counted, _ = entry
        if key not in pb.types:
            eligible += len(counted)
            continue
        other = pb.types[key]
        if other is None:
            continue
        for fps in counted:
            eligible += 1
            found += bool(fps & other[1])
    return found, eligible
