"""Compiled per-document kernels (private): ASCII token scanning, shingles, MinHash.

Imported lazily (numba costs about a second to import).  Each kernel has a numpy or Python
reference implementation in the public modules and is tested equal to it; they exist because
a news article has only ~100-200 tokens, where numpy's per-call overhead (about a
microsecond per array operation, a dozen operations per document) dominates the work.

Token scanning, for texts that are pure ASCII (the usual case for English news): one pass
over the bytes finds the tokens exactly as
``neardup.text``'s token regular expression does (checked against it on all of Reuters and by
property tests), keys each token by a 64-bit hash of its lower-cased bytes, and looks the key
up in a per-config table filled by the Python text stage on first sight of a token.  Numba
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
from numba import njit, types
from numba.typed import Dict

__all__ = ["minhash_permutations", "new_table", "raw_key", "scan_lookup", "word_shingles"]

_FNV_OFFSET = np.uint64(0xCBF29CE484222325)
_FNV_PRIME = np.uint64(0x100000001B3)


def new_table() -> Dict:  # type: ignore[type-arg]
    """An empty key -> index table (index 0 means "the token yields no form")."""
    return Dict.empty(types.int64, types.int64)


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
    table: Dict,  # type: ignore[type-arg]
    finals: npt.NDArray[np.uint64],
    out: npt.NDArray[np.uint64],
    misses: npt.NDArray[np.int64],
) -> tuple[int, int]:
    n = buf.shape[0]
    i = 0
    count = 0
    missed = 0
    # Unknown tokens are reported once per call, however often they occur.
    seen = Dict.empty(key_type=types.int64, value_type=types.int64)
    while i < n:
        if not _alnum(buf[i]):
            i += 1
            continue
        end = _token_end(buf, i, n)
        key = _key(buf, i, end)
        if key in table:
            idx = table[key]
            if idx > 0:
                out[count] = finals[idx]
                count += 1
        elif key not in seen:
            seen[key] = 1
            misses[3 * missed] = i
            misses[3 * missed + 1] = end
            misses[3 * missed + 2] = key
            missed += 1
        i = end
    return count, missed


def scan_lookup(
    data: bytes,
    table: Dict,  # type: ignore[type-arg]
    finals: npt.NDArray[np.uint64],
) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.int64]]:
    """Token hashes of ASCII ``data`` and ``(start, end, key)`` of its unknown tokens.

    Each unknown token is reported once (flattened triples).  When any is reported the
    hashes are incomplete: register the tokens and call again.
    """
    buf = np.frombuffer(data, dtype=np.uint8)
    bound = buf.shape[0] // 2 + 1  # a token takes at least one byte plus a separator
    out = np.empty(bound, dtype=np.uint64)
    misses = np.empty(3 * bound, dtype=np.int64)
    count, missed = _scan_lookup(buf, table, finals, out, misses)
    return out[:count], misses[: 3 * missed]


def raw_key(data: bytes, start: int, end: int) -> int:
    """The table key of ``data[start:end]`` (as the scanner computes it)."""
    return int(_key(np.frombuffer(data, dtype=np.uint8), start, end))


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
