"""Compiled kernels of :mod:`neardup.similarity.wordarrays` (private).

A text is two arrays: ``chars`` (uint8, its case-folded words' bytes one after the other)
and ``meta`` (int64, packed; :func:`tokenize` makes both).  ``meta`` holds, in order::

    n, p, v, t                words, paragraphs, distinct words, table size
    starts[n + 1]             word k is chars[starts[k]:starts[k + 1]]
    paras[p + 1]              paragraph q is words paras[q]:paras[q + 1]
    hashes[n]                 64-bit word hash (FNV-1a, then the splitmix64 finaliser)
    flags[n]                  KEY: a key word (similarity.overlap.key_words); FIGURE: all digits
                              or a month or week-day name
    masks[n]                  the set of the word's bytes, as bits (byte & 63)
    slots[n]                  the word's distinct-word index
    vocab_hash[v]             distinct word hashes (as int64), in order of first occurrence
    vocab_count[v]            occurrences of each
    vocab_first[v]            the word index of its first occurrence
    table[t]                  open addressing, hash -> distinct-word index (-1: empty)
    bucket_start[LENGTHS + 1] distinct words of length b are by_length[bucket_start[b]:...]
    by_length[v]              distinct-word indices by length (the last bucket: longer)
    keys[k]                   delete keys (the rest of meta): open addressing, the low bits of
                              a key's hash index it, an entry is (hash >> 32) << 32 | distinct
                              word index (-1: empty); a distinct word of at most KEY_MAX_LENGTH
                              bytes has its own key and those with one byte deleted

Every function here mirrors one of :mod:`neardup.similarity.overlap` step by step (the
greedy order, the early stops and their partial counts included); words are compared by
their 64-bit hashes (two different words of one comparison share a hash with probability
about 2^-64 per pair), fuzzy pairs by their bytes.  Deterministic; no Python objects.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

__all__ = [
    "digit_run_bounds",
    "key_counts",
    "overlap_counts",
    "sequence_share",
    "tokenize",
    "word_test",
]

KEY = 1
FIGURE = 2
_HEAD = 4
LENGTHS = 64
# Longer words have no delete keys; a fuzzy lookup of a word this long or longer scans.
KEY_MAX_LENGTH = 48

# params of the matching kernels (float64 array), by index
P_MAX_DELETES = 0
P_FUZZY_MIN = 1
P_LONG = 2
P_PACK_MAX = 3
P_PACK_MIN_FOUND = 4
P_DECIDE = 5  # 1.0: decide=(P_MIN_COVERAGE, P_MAX_ADDED) is given
P_MIN_COVERAGE = 6
P_MAX_ADDED = 7
P_MIN_MATCHED = 8  # word_test: overlap_min_matched
P_JACCARD_OK = 9  # word_test: 1.0 when jaccard >= duplicate_min_jaccard
P_WIDTH = 10  # word_test: overlap_sequence_width
P_MIN_SEQUENCE = 11  # word_test: overlap_min_sequence
N_PARAMS = 12


# --- tokenising (ASCII) --------------------------------------------------------------------
@njit(cache=True, nogil=True)
def _is_word(c: int) -> bool:
    return (97 <= c <= 122) or (65 <= c <= 90) or (48 <= c <= 57) or c == 95


@njit(cache=True, nogil=True)
def digit_run_bounds(buf: Any) -> Any:  # pragma: no cover - compiled
    """``[start0, end0, start1, end1, ...]`` of the maximal runs of word bytes
    (``[A-Za-z0-9_]``) of the ASCII text ``buf`` that are all digits: the matches of
    ``\\b[0-9]+\\b`` (similarity.overlap.digit_runs), in order."""
    n = buf.shape[0]
    out = np.empty(n + 2, dtype=np.int64)
    m = 0
    i = 0
    while i < n:
        if not _is_word(buf[i]):
            i += 1
            continue
        j = i
        digits = True
        while j < n and _is_word(buf[j]):
            if not 48 <= buf[j] <= 57:
                digits = False
            j += 1
        if digits:
            out[m] = i
            out[m + 1] = j
            m += 2
        i = j
    return out[:m]


@njit(cache=True, nogil=True)
def _is_space(c: int) -> bool:
    # str.isspace on ASCII: \t \n \v \f \r, the four separators \x1c-\x1f, and the space.
    return c == 32 or 9 <= c <= 13 or 28 <= c <= 31


@njit(cache=True, nogil=True)
def _key_skip(c: int) -> bool:
    # " \t\r\n\"'(<[" (similarity.overlap._KEY_SKIP)
    return (
        c == 32
        or c == 9
        or c == 13
        or c == 10
        or c == 34
        or c == 39
        or c == 40
        or c == 60
        or c == 91
    )


@njit(cache=True, nogil=True)
def _sentence_end(c: int) -> bool:
    return c == 46 or c == 33 or c == 63 or c == 58 or c == 59  # . ! ? : ;


@njit(cache=True, nogil=True)
def _hash(chars: Any, a: int, b: int) -> np.int64:
    h = np.uint64(0xCBF29CE484222325)
    prime = np.uint64(0x100000001B3)
    for k in range(a, b):
        h = (h ^ np.uint64(chars[k])) * prime
    h = (h ^ (h >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    h = (h ^ (h >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    h = h ^ (h >> np.uint64(31))
    return np.int64(h)


@njit(cache=True, nogil=True)
def _split_paragraph(buf: Any, i: int, n: int) -> int:
    """The separator's length when ``similarity.overlap._PARAGRAPH_RE`` matches at ``i``
    (``\\n[ \\t]*\\n`` or ``\\n(?=[ \\t])``), 0 otherwise."""
    if buf[i] != 10:
        return 0
    j = i + 1
    while j < n and (buf[j] == 32 or buf[j] == 9):
        j += 1
    if j < n and buf[j] == 10:
        return j + 1 - i
    if i + 1 < n and (buf[i + 1] == 32 or buf[i + 1] == 9):
        return 1
    return 0


@njit(cache=True, nogil=True)
def tokenize(buf: Any, calendar: Any) -> tuple[Any, Any]:  # pragma: no cover - compiled
    """(chars, meta) of an ASCII text given as bytes (see the module docstring);
    ``calendar``: the sorted hashes of the month and week-day names."""
    n_buf = buf.shape[0]
    chars = np.empty(n_buf, np.uint8)
    cap = n_buf // 2 + 2
    starts = np.empty(cap, np.int64)
    flags = np.empty(cap, np.int64)
    masks = np.empty(cap, np.int64)
    hashes = np.empty(cap, np.int64)
    paras = np.empty(cap + 1, np.int64)
    n = 0
    p = 0
    c_len = 0
    paras[0] = 0
    seg = 0
    i = 0
    while i <= n_buf:
        sep = 0
        if i < n_buf:
            sep = _split_paragraph(buf, i, n_buf)
            if sep == 0:
                i += 1
                continue
        # A paragraph buf[seg:i]; blank ones (str.strip() empty) are dropped.
        blank = True
        for k in range(seg, i):
            if not _is_space(buf[k]):
                blank = False
                break
        if not blank:
            k = seg
            while k < i:
                if not _is_word(buf[k]):
                    k += 1
                    continue
                a = k
                digit = False
                all_digits = True
                mask = np.int64(0)
                starts[n] = c_len
                while k < i and _is_word(buf[k]):
                    c = buf[k]
                    if 48 <= c <= 57:
                        digit = True
                    else:
                        all_digits = False
                    if 65 <= c <= 90:
                        c = c + 32
                    chars[c_len] = c
                    c_len += 1
                    mask |= np.int64(1) << np.int64(c & 63)
                    k += 1
                h = _hash(chars, starts[n], c_len)
                key = digit
                if not digit and 65 <= buf[a] <= 90:
                    j = a - 1
                    while j >= seg and _key_skip(buf[j]):
                        j -= 1
                    key = not (j < seg or _sentence_end(buf[j]))
                figure = all_digits
                if not figure:
                    pos = np.searchsorted(calendar, h)
                    figure = pos < calendar.shape[0] and calendar[pos] == h
                flags[n] = (KEY if key else 0) | (FIGURE if figure else 0)
                masks[n] = mask
                hashes[n] = h
                n += 1
            p += 1
            paras[p] = n
        if i >= n_buf:
            break
        i += sep
        seg = i
    starts[n] = c_len
    # Distinct words in order of first occurrence, through an open-addressing table (the
    # hashes are already mixed: their low bits index it).
    size = 2
    while size < 2 * n:
        size *= 2
    table = np.full(size, -1, np.int64)
    slots = np.empty(n, np.int64)
    vocab_hash = np.empty(n, np.int64)
    vocab_count = np.empty(n, np.int64)
    vocab_first = np.empty(n, np.int64)
    v = 0
    for w in range(n):
        h = hashes[w]
        at = h & (size - 1)
        while table[at] >= 0 and vocab_hash[table[at]] != h:
            at = (at + 1) & (size - 1)
        if table[at] < 0:
            table[at] = v
            vocab_hash[v] = h
            vocab_count[v] = 0
            vocab_first[v] = w
            v += 1
        slots[w] = table[at]
        vocab_count[table[at]] += 1
    # Distinct words by length (buckets 0..LENGTHS-1, the last holding every longer word):
    # a fuzzy lookup reads only the lengths it can match.
    bucket_start = np.zeros(LENGTHS + 1, np.int64)
    for d in range(v):
        w = vocab_first[d]
        bucket_start[min(starts[w + 1] - starts[w], LENGTHS - 1) + 1] += 1
    for b in range(LENGTHS):
        bucket_start[b + 1] += bucket_start[b]
    by_length = np.empty(v, np.int64)
    fill = bucket_start[:LENGTHS].copy()
    for d in range(v):
        w = vocab_first[d]
        b = min(starts[w + 1] - starts[w], LENGTHS - 1)
        by_length[fill[b]] = d
        fill[b] += 1
    keys = _delete_keys(chars, starts, vocab_first, v)
    fixed = _HEAD + (n + 1) + (p + 1) + 4 * n + 3 * v + size + LENGTHS + 1 + v
    meta = np.empty(fixed + keys.shape[0], np.int64)
    meta[0], meta[1], meta[2], meta[3] = n, p, v, size
    o = _HEAD
    # The parts in the layout's order (module docstring).
    for part in (
        starts[: n + 1],
        paras[: p + 1],
        hashes[:n],
        flags[:n],
        masks[:n],
        slots,
        vocab_hash[:v],
        vocab_count[:v],
        vocab_first[:v],
        table,
        bucket_start,
        by_length,
        keys,
    ):
        meta[o : o + part.shape[0]] = part
        o += part.shape[0]
    return chars[:c_len].copy(), meta


# Delete keys hash polynomially (mod 2^64, odd base): a word's hash H and its prefix hashes
# give every one-byte deletion's hash in O(1), H(u without byte i) = H + (P_i (1 - B) - u_i)
# B^(n-1-i), with P_i the hash of the first i bytes (B^-1 steps the power down).
_B = np.uint64(0x9E3779B97F4A7C15)
_B_INV = np.uint64(0xF1DE83E19937733D)


@njit(cache=True, nogil=True, inline="always")
def _finish(h: np.uint64, length: int) -> np.int64:
    # The splitmix64 finaliser over the polynomial hash and the key's length.
    h = h ^ (np.uint64(length) * np.uint64(0xD6E8FEB86659FD93))
    h = (h ^ (h >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    h = (h ^ (h >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return np.int64(h ^ (h >> np.uint64(31)))


@njit(cache=True, nogil=True)
def _key_hash(chars: Any, a: int, b: int, skip: int) -> np.int64:
    """The delete key of chars[a:b] without chars[skip] (-1: none), as a direct sum (the
    reference of the O(1) steps in :func:`_delete_keys` and :func:`_fuzzy_by_keys`)."""
    h = np.uint64(0)
    for k in range(a, b):
        if k != skip:
            h = h * _B + np.uint64(chars[k])
    return _finish(h, b - a - (1 if skip >= 0 else 0))


@njit(cache=True, nogil=True, inline="always")
def _word_poly(chars: Any, a: int, b: int) -> tuple[np.uint64, np.uint64]:
    # (H, B^(n-1)) of chars[a:b], n >= 1.
    h = np.uint64(0)
    power = np.uint64(1)
    for k in range(a, b):
        h = h * _B + np.uint64(chars[k])
        if k > a:
            power = power * _B
    return h, power


@njit(cache=True, nogil=True, inline="always")
def _entry(h: np.int64, d: int) -> np.int64:
    return np.int64((np.uint64(h) >> np.uint64(32)) << np.uint64(32)) | np.int64(d)


@njit(cache=True, nogil=True)
def _delete_keys(chars: Any, starts: Any, vocab_first: Any, v: int) -> Any:
    """The delete-key table (module docstring) of the distinct words."""
    count = 0
    for d in range(v):
        w = vocab_first[d]
        length = starts[w + 1] - starts[w]
        if length <= KEY_MAX_LENGTH:
            count += length + 1
    size = 2
    while size < 2 * count:
        size *= 2
    table = np.full(size, -1, np.int64)
    for d in range(v):
        w = vocab_first[d]
        a, b = starts[w], starts[w + 1]
        if b - a > KEY_MAX_LENGTH:
            continue
        whole, power = _word_poly(chars, a, b)
        prefix = np.uint64(0)
        for skip in range(a - 1, b):
            if skip < a:
                h = _finish(whole, b - a)
            else:
                c = np.uint64(chars[skip])
                # Deleting any byte of a run of equal bytes gives one key: the first only.
                same = skip > a and chars[skip] == chars[skip - 1]
                h = _finish(whole + (prefix * (np.uint64(1) - _B) - c) * power, b - a - 1)
                prefix = prefix * _B + c
                power = power * _B_INV
                if same:
                    continue
            at = h & (size - 1)
            while table[at] != -1:
                at = (at + 1) & (size - 1)
            table[at] = _entry(h, d)
    return table


# --- reading a packed text -----------------------------------------------------------------
@njit(cache=True, nogil=True, inline="always")
def _offsets(meta: Any) -> tuple[int, int, int, int, int, int, int, int, int, int, int, int]:
    # (n, p, v, starts, paras, hashes, flags, masks, slots, vocab_hash, vocab_count, first)
    n, p, v = meta[0], meta[1], meta[2]
    starts = _HEAD
    paras = starts + n + 1
    hashes = paras + p + 1
    flags = hashes + n
    masks = flags + n
    slots = masks + n
    vh = slots + n
    vc = vh + v
    vf = vc + v
    return n, p, v, starts, paras, hashes, flags, masks, slots, vh, vc, vf


@njit(cache=True, nogil=True)
def _find(meta: Any, vh: int, v: int, h: np.int64) -> Any:
    # The distinct-word index of hash h, or -1 (the text's open-addressing table).
    size = meta[3]
    table = vh + 3 * v
    at = h & (size - 1)
    while True:
        d = meta[table + at]
        if d < 0:
            return -1
        if meta[vh + d] == h:
            return d
        at = (at + 1) & (size - 1)


@njit(cache=True, nogil=True, inline="always")
def _keys_at(meta: Any, vf: int, v: int) -> tuple[int, int]:
    """(offset, size) of the delete-key table."""
    at = vf + v + meta[3] + LENGTHS + 1 + v
    return at, meta.shape[0] - at


@njit(cache=True, nogil=True, inline="always")
def _better(
    best: int, best_need: int, need: int, cv: Any, b0: int, b1: int, w0: int, w1: int
) -> bool:
    """Whether word ``cv[w0:w1]`` (``need`` deletes) beats the best so far (``best`` -1: none):
    fewer deletes, ties to the smaller string (similarity.overlap._best_fuzzy)."""
    return (
        best < 0 or need < best_need or (need == best_need and _compare(cv, w0, w1, cv, b0, b1) < 0)
    )


@njit(cache=True, nogil=True)
def _fuzzy_by_keys(
    params: Any, cu: Any, mu: Any, u: int, cv: Any, mv: Any, pool: Any, first: bool
) -> int:
    """With one delete allowed (``max_deletes`` 1): the distinct word of ``mv`` that
    :func:`_best_fuzzy` chooses for word ``u`` of ``mu`` (``first``: any word that
    :func:`_shares_key` accepts, and ``pool`` is ignored), from the words sharing a delete
    key with it instead of every word of a compatible length.  With one delete,
    ``max(|u|, |w|) - LCS(u, w) <= 1`` exactly when the two share a key (a common
    subsequence one byte shorter than the longer word is one byte deleted from each, or
    from one of them), so the two find the same words; each hit is checked as the scan
    checks it (a 32-bit hash match is not trusted)."""
    _, _, _, us, _, _, _, umasks, _, _, _, _ = _offsets(mu)
    _, _, v, vs, _, _, _, vmasks, _, _, _, vf = _offsets(mv)
    u0, u1 = mu[us + u], mu[us + u + 1]
    lu = u1 - u0
    shortest = params[P_FUZZY_MIN]
    at0, size = _keys_at(mv, vf, v)
    best = -1
    best_need = 0
    b0 = 0
    b1 = 0
    whole, power = _word_poly(cu, u0, u1)
    prefix = np.uint64(0)
    for skip in range(u0 - 1, u1):
        if skip < u0:
            h = _finish(whole, lu)
        else:
            c = np.uint64(cu[skip])
            same = skip > u0 and cu[skip] == cu[skip - 1]
            h = _finish(whole + (prefix * (np.uint64(1) - _B) - c) * power, lu - 1)
            prefix = prefix * _B + c
            power = power * _B_INV
            if same:
                continue
        want = _entry(h, 0)
        at = h & (size - 1)
        while True:
            e = mv[at0 + at]
            if e == -1:
                break
            at = (at + 1) & (size - 1)
            if (e >> 32) << 32 != want:
                continue
            d = e & 0xFFFFFFFF
            if not first and pool[d] <= 0:
                continue
            w = mv[vf + d]
            w0, w1 = mv[vs + w], mv[vs + w + 1]
            lw = w1 - w0
            if lw < shortest or abs(lw - lu) > 1:
                continue
            need = _deletes_within(cu, u0, u1, mu[umasks + u], cv, w0, w1, mv[vmasks + w], 1, mv)
            if need < 0:
                continue
            if first:
                return int(d)
            if _better(best, best_need, need, cv, b0, b1, w0, w1):
                best, best_need, b0, b1 = d, need, w0, w1
    return best


@njit(cache=True, nogil=True, inline="always")
def _buckets(meta: Any, vf: int, v: int, low: int, high: int) -> tuple[int, int, int]:
    """(offset of by_length, first, end) of the distinct words of lengths [low, high]."""
    starts = vf + v + meta[3]
    by_length = starts + LENGTHS + 1
    # Both ends clipped to the buckets: a word longer than the last bucket reads that bucket
    # (which holds every longer word; the length test of the caller still applies).
    low = min(max(low, 0), LENGTHS - 1)
    high = min(high, LENGTHS - 1)
    if low > high:
        return by_length, 0, 0
    return by_length, meta[starts + low], meta[starts + high + 1]


# --- fuzzy word pairs (similarity.overlap._deletes_needed, _allowed, _depth) ----------------
@njit(cache=True, nogil=True)
def _lcs(ca: Any, a0: int, a1: int, cb: Any, b0: int, b1: int, row: Any) -> Any:
    m = b1 - b0
    for j in range(m + 1):
        row[j] = 0
    for i in range(a0, a1):
        diag = 0  # prev[j] before it is overwritten
        x = ca[i]
        for j in range(m):
            up = row[j + 1]
            if x == cb[b0 + j]:
                cur = diag + 1
            else:
                left = row[j]
                cur = up if up > left else left
            diag = up
            row[j + 1] = cur
    return row[m]


@njit(cache=True, nogil=True)
def _popcount(x: np.int64) -> int:
    # SWAR bit count (constant time).
    y = np.uint64(x)
    y = y - ((y >> np.uint64(1)) & np.uint64(0x5555555555555555))
    y = (y & np.uint64(0x3333333333333333)) + ((y >> np.uint64(2)) & np.uint64(0x3333333333333333))
    y = (y + (y >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return int((y * np.uint64(0x0101010101010101)) >> np.uint64(56))


@njit(cache=True, nogil=True)
def _deletes_within(
    ca: Any, a0: int, a1: int, ma: np.int64,
    cb: Any, b0: int, b1: int, mb: np.int64,
    limit: int, row: Any,
) -> int:  # fmt: skip
    """``max(|u|, |v|) - LCS(u, v)`` when it is at most ``limit``, else -1 (length and byte-set
    bounds first: a byte of one word absent from the other must be deleted)."""
    la, lb = a1 - a0, b1 - b0
    longest = la if la > lb else lb
    if longest - (lb if la > lb else la) > limit:
        return -1
    if _popcount(ma & ~mb) > la - (longest - limit) or _popcount(mb & ~ma) > lb - (longest - limit):
        return -1
    if limit <= 1:
        return _within_one(ca, a0, a1, cb, b0, b1, limit)
    need = longest - _lcs(ca, a0, a1, cb, b0, b1, row)
    return need if need <= limit else -1


@njit(cache=True, nogil=True)
def _within_one(ca: Any, a0: int, a1: int, cb: Any, b0: int, b1: int, limit: int) -> int:
    """``max(|u|, |v|) - LCS(u, v)`` when it is at most ``limit`` (0 or 1), else -1, in
    O(|u| + |v|) (the dynamic program's answer: 0 when equal; 1 when one word is the other
    with a byte deleted, or both are one word with a byte deleted from each)."""
    la, lb = a1 - a0, b1 - b0
    if la < lb:  # the longer first
        ca, a0, a1, cb, b0, b1 = cb, b0, b1, ca, a0, a1
        la, lb = lb, la
    # Common prefix and suffix.
    pre = 0
    while pre < lb and ca[a0 + pre] == cb[b0 + pre]:
        pre += 1
    if la == lb and pre == la:
        return 0
    if limit < 1 or la - lb > 1:
        return -1
    suf = 0
    while suf < lb and ca[a1 - 1 - suf] == cb[b1 - 1 - suf]:
        suf += 1
    if la == lb + 1:
        # v is u with one byte deleted: some i with u[:i] == v[:i] and u[i+1:] == v[i:].
        return 1 if pre + suf >= lb else -1
    # Equal lengths L: del(u, i) == del(v, j).  With i <= j: u[:i] == v[:i],
    # u[i+1:j+1] == v[i:j], u[j+1:] == v[j+1:]; the largest i (the common prefix) and the
    # smallest j (L - 1 - the common suffix) leave the shortest middle to compare.
    n = la
    for _ in range(2):
        i = pre
        j = n - 1 - suf
        if j < i:
            j = i
        ok = True
        for k in range(i, j):
            if ca[a0 + k + 1] != cb[b0 + k]:
                ok = False
                break
        if ok:
            return 1
        ca, a0, a1, cb, b0, b1 = cb, b0, b1, ca, a0, a1
    return -1


@njit(cache=True, nogil=True)
def _allowed(params: Any, la: int, lb: int) -> int:
    md = int(params[P_MAX_DELETES])
    if (la if la < lb else lb) < params[P_LONG]:
        return 1 if md >= 1 else 0
    return md


@njit(cache=True, nogil=True)
def _depth(params: Any, length: int) -> int:
    md = int(params[P_MAX_DELETES])
    if length >= params[P_LONG]:
        return md
    return 1 if md >= 1 else 0


@njit(cache=True, nogil=True)
def _compare(ca: Any, a0: int, a1: int, cb: Any, b0: int, b1: int) -> int:
    # Python's str ordering on the words' bytes: -1, 0, 1.
    la, lb = a1 - a0, b1 - b0
    for k in range(la if la < lb else lb):
        x, y = ca[a0 + k], cb[b0 + k]
        if x != y:
            return -1 if x < y else 1
    if la == lb:
        return 0
    return -1 if la < lb else 1


@njit(cache=True, nogil=True)
def _best_fuzzy(
    params: Any, cu: Any, mu: Any, u: int, cv: Any, mv: Any, pool: Any, row: Any
) -> int:
    """The distinct-word index of ``mv``'s word matching word ``u`` of ``mu`` with the fewest
    deletes, ties to the smaller string, among those with ``pool[index] > 0`` and at least
    ``fuzzy_min_length`` bytes; -1 when none (similarity.overlap._best_fuzzy)."""
    _, _, _, us, _, _, _, umasks, _, _, _, _ = _offsets(mu)
    _, _, v, vs, _, _, _, vmasks, _, _, _, vf = _offsets(mv)
    u0, u1 = mu[us + u], mu[us + u + 1]
    lu = u1 - u0
    shortest = params[P_FUZZY_MIN]
    md = int(params[P_MAX_DELETES])
    if md == 1 and lu < KEY_MAX_LENGTH:
        return _fuzzy_by_keys(params, cu, mu, u, cv, mv, pool, False)
    best = -1
    best_need = 0
    b0 = 0
    b1 = 0
    by_length, r0, r1 = _buckets(mv, vf, v, lu - md, lu + md)
    for r in range(r0, r1):
        d = mv[by_length + r]
        if pool[d] <= 0:
            continue
        w = mv[vf + d]
        w0, w1 = mv[vs + w], mv[vs + w + 1]
        lw = w1 - w0
        if lw < shortest or abs(lw - lu) > md:
            continue
        limit = _allowed(params, lu, lw)
        need = _deletes_within(cu, u0, u1, mu[umasks + u], cv, w0, w1, mv[vmasks + w], limit, row)
        if need < 0:
            continue
        if _better(best, best_need, need, cv, b0, b1, w0, w1):
            best, best_need, b0, b1 = d, need, w0, w1
    return best


@njit(cache=True, nogil=True)
def _shares_key(params: Any, cu: Any, mu: Any, u: int, cv: Any, mv: Any, row: Any) -> bool:
    """Whether word ``u`` shares a delete key (at each word's ``_depth``) with some word of
    ``mv`` of at least ``fuzzy_min_length`` bytes: ``LCS >= max(|u| - d_u, |v| - d_v)``."""
    _, _, _, us, _, _, _, umasks, _, _, _, _ = _offsets(mu)
    _, _, v, vs, _, _, _, vmasks, _, _, _, vf = _offsets(mv)
    u0, u1 = mu[us + u], mu[us + u + 1]
    lu = u1 - u0
    du = _depth(params, lu)
    shortest = params[P_FUZZY_MIN]
    md = int(params[P_MAX_DELETES])
    if md == 1 and lu < KEY_MAX_LENGTH:
        return _fuzzy_by_keys(params, cu, mu, u, cv, mv, mv, True) >= 0
    by_length, r0, r1 = _buckets(mv, vf, v, lu - md, lu + md)
    for r in range(r0, r1):
        d = mv[by_length + r]
        w = mv[vf + d]
        w0, w1 = mv[vs + w], mv[vs + w + 1]
        lw = w1 - w0
        if lw < shortest:
            continue
        dw = _depth(params, lw)
        need_lcs = lu - du if lu - du > lw - dw else lw - dw
        if need_lcs > (lu if lu < lw else lw):
            continue
        # LCS >= need_lcs  <=>  max(lu, lw) - LCS <= max(lu, lw) - need_lcs
        longest = lu if lu > lw else lw
        if (
            _deletes_within(
                cu, u0, u1, mu[umasks + u], cv, w0, w1, mv[vmasks + w], longest - need_lcs, row
            )
            >= 0
        ):
            return True
    return False


@njit(cache=True, nogil=True)
def _found(params: Any, cu: Any, mu: Any, u: int, cv: Any, mv: Any, row: Any) -> bool:
    """Word ``u`` is a word of ``mv`` or matches one fuzzily (peel's and key_overlap's test)."""
    _, _, v, _, _, _hashes, _, _, _, vh, vc, _ = _offsets(mv)
    _, _, _, us, _, uh, _, _, _, _, _, _ = _offsets(mu)
    if _find(mv, vh, v, mu[uh + u]) >= 0:
        return True
    lu = mu[us + u + 1] - mu[us + u]
    if params[P_MAX_DELETES] == 0 or lu < params[P_FUZZY_MIN]:
        return False
    return _best_fuzzy(params, cu, mu, u, cv, mv, mv[vc : vc + v], row) >= 0


# --- packaging (similarity.overlap._peel) --------------------------------------------------
@njit(cache=True, nogil=True)
def _packaging(params: Any, cs: Any, ms: Any, cn: Any, mn: Any, q: int, row: Any) -> Any:
    _, _, _, ns, paras, nh, _, _, _, _, _, _ = _offsets(mn)
    _, _, sv, _, _, _, _, _, _, svh, _, _ = _offsets(ms)
    a, b = mn[paras + q], mn[paras + q + 1]
    size = b - a
    if size > params[P_PACK_MAX]:
        return False
    need = params[P_PACK_MIN_FOUND] * size
    exact = 0
    possible = 0
    for k in range(a, b):
        if _find(ms, svh, sv, mn[nh + k]) >= 0:
            exact += 1
        elif mn[ns + k + 1] - mn[ns + k] >= params[P_FUZZY_MIN]:
            possible += 1
    if exact >= need:
        return False
    if params[P_MAX_DELETES] == 0 or exact + possible < need:
        return True
    found = 0
    for k in range(a, b):
        if _found(params, cn, mn, k, cs, ms, row):
            found += 1
    return found < need


@njit(cache=True, nogil=True)
def _peel(params: Any, cs: Any, ms: Any, cn: Any, mn: Any, row: Any) -> tuple[int, int]:
    p = mn[1]
    if p <= 1:
        return 0, p
    i, j = 0, p
    if params[P_PACK_MAX] > 0:
        while j - i > 1 and _packaging(params, cs, ms, cn, mn, i, row):
            i += 1
        while j - i > 1 and _packaging(params, cs, ms, cn, mn, j - 1, row):
            j -= 1
    return i, j


# --- the word overlap (similarity.overlap._overlap_counts, stored text given) ---------------
@njit(cache=True, nogil=True)
def _holds(params: Any, s: int, m: int, n_stored: int, n_new: int) -> Any:
    cov = s / n_stored if n_stored else 1.0
    added = 1.0 - m / n_new if n_new else 0.0
    return cov >= params[P_MIN_COVERAGE] and added <= params[P_MAX_ADDED]


@njit(cache=True, nogil=True)
def _overlap(
    params: Any, cs: Any, ms: Any, cn: Any, mn: Any, i: int, j: int, out: Any, row: Any
) -> None:
    """out[0:8] = stored words, kept new words, matched (stored), matched (new), exact,
    fuzzy, packaging, complete (0/1) for the new text's paragraphs [i, j)."""
    sn, _, sv, ss, _, _, _, _, _, svh, svc, svf = _offsets(ms)
    nn, _, nv, ns, paras, _nh, _, _, nslots, nvh, _, _ = _offsets(mn)
    k0, k1 = mn[paras + i], mn[paras + j]
    n_new = k1 - k0
    shortest = params[P_FUZZY_MIN]
    md = int(params[P_MAX_DELETES])
    decide = params[P_DECIDE] > 0
    # The kept words' bag, by the new text's distinct-word index.
    b = np.zeros(nv, np.int64)
    for k in range(k0, k1):
        b[mn[nslots + k]] += 1
    # a[w] per new distinct word (0 when the stored text lacks it), and the exact stage.
    a_of = np.zeros(nv, np.int64)
    exact = 0
    exact_short = 0
    for d in range(nv):
        if b[d] == 0:
            continue
        e = _find(ms, svh, sv, mn[nvh + d])
        if e >= 0:
            a_of[d] = ms[svc + e]
            shared = a_of[d] if a_of[d] < b[d] else b[d]
            exact += shared
            w = ms[svf + e]
            if ms[ss + w + 1] - ms[ss + w] < shortest:
                exact_short += shared
    n_stored = sn
    out[0], out[1], out[2], out[3], out[4], out[5] = n_stored, n_new, exact, exact, exact, 0
    out[6] = nn - n_new
    out[7] = 1
    if decide and md > 0:
        most = min(n_new - exact, n_stored - exact)
        if _holds(params, exact, exact, n_stored, n_new) or not _holds(
            params, exact + most, exact + most, n_stored, n_new
        ):
            out[7] = 1 if (exact >= n_new or exact >= n_stored) else 0
            return
        if n_new > exact and n_stored > exact:
            long_stored = 0
            for k in range(sn):
                if ms[ss + k + 1] - ms[ss + k] >= shortest:
                    long_stored += 1
            long_new = 0
            for k in range(k0, k1):
                if mn[ns + k + 1] - mn[ns + k] >= shortest:
                    long_new += 1
            exact_long = exact - exact_short
            most = min(long_new - exact_long, long_stored - exact_long)
            if _holds(params, exact, exact, n_stored, n_new) or not _holds(
                params, exact + most, exact + most, n_stored, n_new
            ):
                out[7] = 0
                return
    if md == 0:
        return
    # Left-overs: the stored text's bag minus the kept words (its pool), and the kept
    # words beyond the stored counts, in text order.
    pool = ms[svc : svc + sv].copy()
    for d in range(nv):
        if b[d] > 0 and a_of[d] > 0:
            e = _find(ms, svh, sv, mn[nvh + d])
            pool[e] -= a_of[d] if a_of[d] < b[d] else b[d]
    stored_left = False
    for e in range(sv):
        if pool[e] > 0:
            stored_left = True
            break
    rem = np.zeros(nv, np.int64)
    for d in range(nv):
        if b[d] > a_of[d]:
            rem[d] = b[d] - a_of[d]
    new_left = np.empty(n_new, np.int64)
    n_left = 0
    for k in range(k0, k1):
        d = mn[nslots + k]
        if rem[d] > 0:
            rem[d] -= 1
            new_left[n_left] = k
            n_left += 1
    if n_left == 0 or not stored_left:
        return
    # (The reference's _fuzzy_irrelevant test runs only when decide is given and the bound
    # above was not checked, i.e. when one side has no left-over word: never here.)
    # _match_fuzzy: the pool is the left-over stored words of at least fuzzy_min_length.
    any_pool = False
    for e in range(sv):
        w = ms[svf + e]
        if ms[ss + w + 1] - ms[ss + w] < shortest:
            pool[e] = 0
        elif pool[e] > 0:
            any_pool = True
    if not any_pool:
        return
    todo = np.empty(n_left, np.int64)
    n_todo = 0
    for r in range(n_left):
        k = new_left[r]
        if mn[ns + k + 1] - mn[ns + k] >= shortest and _shares_key(params, cn, mn, k, cs, ms, row):
            todo[n_todo] = k
            n_todo += 1
    matched = 0
    for done in range(n_todo):
        if decide:
            rest = n_todo - done
            if not _holds(params, exact + matched + rest, exact + matched + rest, n_stored, n_new):
                out[2], out[3], out[5], out[7] = exact + matched, exact + matched, matched, 0
                return
        best = _best_fuzzy(params, cn, mn, todo[done], cs, ms, pool, row)
        if best >= 0:
            pool[best] -= 1
            matched += 1
    out[2], out[3], out[5] = exact + matched, exact + matched, matched


# --- word order (similarity.overlap.sequence_containment) ---------------------------------
@njit(cache=True, nogil=True)
def _gram(meta: Any, hashes: int, k: int, width: int, subst: Any, use_subst: bool) -> np.int64:
    g = np.uint64(0x9E3779B97F4A7C15)
    for t in range(width):
        h = subst[k + t] if use_subst else meta[hashes + k + t]
        g = (g ^ np.uint64(h)) * np.uint64(0x100000001B3)
        g = g ^ (g >> np.uint64(29))
    return np.int64(g)


@njit(cache=True, nogil=True)
def _has(table: Any, zero: bool, g: np.int64) -> int:
    if g == 0:
        return 1 if zero else 0
    size = table.shape[0]
    at = g & (size - 1)
    while table[at] != 0:
        if table[at] == g:
            return 1
        at = (at + 1) & (size - 1)
    return 0


@njit(cache=True, nogil=True)
def _sequence(
    params: Any, cs: Any, ms: Any, cn: Any, mn: Any, i: int, j: int, width: int,
    at_least: float, row: Any,
) -> Any:  # fmt: skip
    sn, _, sv, _, _, sh, _, _, _, svh, svc, _svf = _offsets(ms)
    _, _, _, ns, paras, nh, _, _, _, _, _, _ = _offsets(mn)
    k0, k1 = mn[paras + i], mn[paras + j]
    positions = k1 - k0 - width + 1
    if positions <= 0:
        return 1.0
    n_theirs = sn - width + 1
    size = 2
    while size < 2 * n_theirs:
        size *= 2
    theirs = np.zeros(size, np.int64)  # 0: empty (a gram hashing to 0 is kept apart)
    zero = False
    dummy = np.empty(0, np.int64)
    for k in range(n_theirs):
        g = _gram(ms, sh, k, width, dummy, False)
        if g == 0:
            zero = True
            continue
        at = g & (size - 1)
        while theirs[at] != 0 and theirs[at] != g:
            at = (at + 1) & (size - 1)
        theirs[at] = g
    found = 0
    for k in range(k0, k0 + positions):
        found += _has(theirs, zero, _gram(mn, nh, k, width, dummy, False))
    plain = found / positions
    if at_least >= 0.0 and plain >= at_least:
        return plain
    corrected = np.empty(k1 - k0, np.int64)
    md = params[P_MAX_DELETES]
    for k in range(k0, k1):
        h = mn[nh + k]
        if (
            md > 0
            and _find(ms, svh, sv, h) < 0
            and mn[ns + k + 1] - mn[ns + k] >= params[P_FUZZY_MIN]
        ):
            best = _best_fuzzy(params, cn, mn, k, cs, ms, ms[svc : svc + sv], row)
            if best >= 0:
                h = ms[svh + best]
        corrected[k - k0] = h
    found = 0
    for k in range(positions):
        found += _has(theirs, zero, _gram(mn, nh, k, width, corrected, True))
    return found / positions


# --- key words (similarity.overlap.key_overlap) --------------------------------------------
@njit(cache=True, nogil=True)
def _count_keys(
    params: Any, ca: Any, ma: Any, a0: int, a1: int, cb: Any, mb: Any, b0: int, b1: int,
    out: Any, at: int, row: Any,
) -> None:  # fmt: skip
    """(names, names found, figures, figures found) of ``ma``'s key words [a0, a1) among
    the words [b0, b1) of ``mb`` (all of them, or a kept range) into out[at:at + 4]."""
    _, _, _, as_, _, ah, aflags, _, _, _, _, _ = _offsets(ma)
    bn, _, bv, _, _, _bh, _, _, bslots, bvh, bvc, _ = _offsets(mb)
    whole = b0 == 0 and b1 == bn
    pool = mb[bvc : bvc + bv].copy()
    if not whole:
        pool[:] = 0
        for k in range(b0, b1):
            pool[mb[bslots + k]] += 1
    names = names_found = figures = figures_found = 0
    md = params[P_MAX_DELETES]
    for k in range(a0, a1):
        f = ma[aflags + k]
        if not f & KEY:
            continue
        e = _find(mb, bvh, bv, ma[ah + k])
        present = e >= 0 and pool[e] > 0
        if f & FIGURE:
            figures += 1
            figures_found += 1 if present else 0
            continue
        names += 1
        if present or (
            md > 0
            and ma[as_ + k + 1] - ma[as_ + k] >= params[P_FUZZY_MIN]
            and _best_fuzzy(params, ca, ma, k, cb, mb, pool, row) >= 0
        ):
            names_found += 1
    out[at], out[at + 1], out[at + 2], out[at + 3] = names, names_found, figures, figures_found


@njit(cache=True, nogil=True)
def _keys(
    params: Any, cs: Any, ms: Any, cn: Any, mn: Any, i: int, j: int, out: Any, at: int,
    row: Any,
) -> None:  # fmt: skip
    _, _, _, _, paras, _, _, _, _, _, _, _ = _offsets(mn)
    k0, k1 = mn[paras + i], mn[paras + j]
    _count_keys(params, cn, mn, k0, k1, cs, ms, 0, ms[0], out, at, row)
    _count_keys(params, cs, ms, 0, ms[0], cn, mn, k0, k1, out, at + 4, row)


# --- entry points --------------------------------------------------------------------------
@njit(cache=True, nogil=True)
def overlap_counts(params: Any, cs: Any, ms: Any, cn: Any, mn: Any) -> Any:  # pragma: no cover
    """[stored words, kept new words, matched stored, matched new, exact, fuzzy, packaging,
    complete, peel i, peel j] (similarity.overlap.overlap_prepared)."""
    row = np.empty(max(cs.shape[0], cn.shape[0]) + 2, np.int64)
    i, j = _peel(params, cs, ms, cn, mn, row)
    out = np.zeros(10, np.int64)
    _overlap(params, cs, ms, cn, mn, i, j, out, row)
    out[8], out[9] = i, j
    return out


@njit(cache=True, nogil=True)
def sequence_share(
    params: Any, cs: Any, ms: Any, cn: Any, mn: Any, width: int, at_least: float
) -> Any:  # pragma: no cover
    """similarity.overlap.sequence_containment (``at_least`` < 0: not given)."""
    row = np.empty(max(cs.shape[0], cn.shape[0]) + 2, np.int64)
    i, j = _peel(params, cs, ms, cn, mn, row)
    return _sequence(params, cs, ms, cn, mn, i, j, width, at_least, row)


@njit(cache=True, nogil=True)
def key_counts(params: Any, cs: Any, ms: Any, cn: Any, mn: Any) -> Any:  # pragma: no cover
    """The eight counts of similarity.overlap.KeyOverlap, in its field order."""
    row = np.empty(max(cs.shape[0], cn.shape[0]) + 2, np.int64)
    i, j = _peel(params, cs, ms, cn, mn, row)
    out = np.zeros(8, np.int64)
    _keys(params, cs, ms, cn, mn, i, j, out, 0, row)
    return out


@njit(cache=True, nogil=True)
def word_test(params: Any, cs: Any, ms: Any, cn: Any, mn: Any) -> Any:  # pragma: no cover
    """The stream's word test in one call: out[0:10] as :func:`overlap_counts` (with
    ``decide``); then, only when the overlap rule passes (coverage, added, matched words or
    ``P_JACCARD_OK``), out[10] = 1 and the sequence share is computed; when it reaches
    ``P_MIN_SEQUENCE``, out[20] = 1 and out[12:20] = the key counts.  Unreached parts stay
    0."""
    row = np.empty(max(cs.shape[0], cn.shape[0]) + 2, np.int64)
    i, j = _peel(params, cs, ms, cn, mn, row)
    out = np.zeros(21, np.int64)
    _overlap(params, cs, ms, cn, mn, i, j, out, row)
    out[8], out[9] = i, j
    n_stored, n_new, sm, nm = out[0], out[1], out[2], out[3]
    cov = sm / n_stored if n_stored else 1.0
    added = 1.0 - nm / n_new if n_new else 0.0
    if not (
        cov >= params[P_MIN_COVERAGE]
        and added <= params[P_MAX_ADDED]
        and (sm >= params[P_MIN_MATCHED] or params[P_JACCARD_OK] > 0)
    ):
        return out
    out[10] = 1
    at_least = params[P_MIN_SEQUENCE]
    share = _sequence(params, cs, ms, cn, mn, i, j, int(params[P_WIDTH]), at_least, row)
    if share < at_least:
        return out
    out[20] = 1
    _keys(params, cs, ms, cn, mn, i, j, out, 12, row)
    return out
