"""Compiled fast path of :func:`neardup.shingles.token_hashes` for ASCII text (private).

Imported lazily (numba costs about a second to import), and only for texts that are pure
ASCII, the usual case for English news.  One pass over the bytes finds the tokens exactly as
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

__all__ = ["new_table", "raw_key", "scan_lookup"]

_FNV_OFFSET = np.uint64(0xCBF29CE484222325)
_FNV_PRIME = np.uint64(0x100000001B3)


def new_table() -> Dict:  # type: ignore[type-arg]
    """An empty key -> index table (index 0 means "the token yields no form")."""
    return Dict.empty(types.int64, types.int64)


@njit(cache=True, inline="always")
def _alnum(c: np.uint8) -> bool:
    return (48 <= c <= 57) or (65 <= c <= 90) or (97 <= c <= 122)


@njit(cache=True, inline="always")
def _digit(c: np.uint8) -> bool:
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
        else:
            misses[2 * missed] = i
            misses[2 * missed + 1] = end
            missed += 1
        i = end
    return count, missed


def scan_lookup(
    data: bytes,
    table: Dict,
    finals: npt.NDArray[np.uint64],  # type: ignore[type-arg]
) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.int64]]:
    """Token hashes of ASCII ``data`` and the ``[start, end)`` spans of unknown tokens.

    When spans are returned the hashes are incomplete: register the tokens and call again.
    """
    buf = np.frombuffer(data, dtype=np.uint8)
    bound = buf.shape[0] // 2 + 1  # a token takes at least one byte plus a separator
    out = np.empty(bound, dtype=np.uint64)
    misses = np.empty(2 * bound, dtype=np.int64)
    count, missed = _scan_lookup(buf, table, finals, out, misses)
    return out[:count], misses[: 2 * missed]


def raw_key(data: bytes, start: int, end: int) -> int:
    """The table key of ``data[start:end]`` (as the scanner computes it)."""
    return int(_key(np.frombuffer(data, dtype=np.uint8), start, end))
