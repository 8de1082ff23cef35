"""Longest common substring of two texts or token sequences, near-linear (seed 002).

Seed 002 uses the longest common substring (LCS) and its ratio to each document's length as
the precise, final check of a near-duplicate pair (sketch -> Jaccard -> LCS), but computes it
with the quadratic dynamic-programming table.  Here it is computed with a suffix array of the
concatenation ``a + separator + b`` (libdivsufsort via pydivsufsort) and the LCP array
(Kasai et al. 2001): the longest common substring is the largest LCP between two suffixes that
are neighbours in suffix order and start on different sides of the separator (Gusfield 1997,
§7.4).  Among several longest common substrings the one that starts first in ``a`` is
returned, and among its occurrences in ``b`` the first one.

* Character level: ``a`` and ``b`` are ``str``; spans are character offsets (code points;
  lone surrogates are ordinary code points here, never an error).
* Token level: ``a`` and ``b`` are sequences of hashable tokens (e.g. ``tokenize(text).forms``
  or integer token hashes); spans are token indices.

Guarantees: exact and deterministic.  Time O(n) for the LCP scan plus the suffix sort
(O(n log n) worst case, linear in practice), n = len(a) + len(b); memory about 25 bytes per
element.  Inputs longer than ``MAX_ELEMENTS`` in total raise
:class:`~neardup.errors.InputTooLargeError`.
"""

from __future__ import annotations

import ctypes
import dataclasses
import glob
import os
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pydivsufsort

from neardup._jit import njit
from neardup.errors import InputTooLargeError, InputTypeError

__all__ = ["MAX_ELEMENTS", "CommonSubstring", "longest_common_substring"]

# int32 suffix arrays; 2**28 elements is ~5 GB of working memory, a documented ceiling.
MAX_ELEMENTS = 1 << 28


@dataclasses.dataclass(frozen=True, slots=True)
class CommonSubstring:
    """One longest common substring: ``a[a_start:a_end] == b[b_start:b_end]``.

    ``ratio_a``/``ratio_b`` are ``length / len(a)`` and ``length / len(b)`` (seed 002's
    "ratio to the document length"; 0.0 for an empty input).
    """

    length: int
    a_start: int
    b_start: int
    len_a: int
    len_b: int

    @property
    def a_end(self) -> int:
        return self.a_start + self.length

    @property
    def b_end(self) -> int:
        return self.b_start + self.length

    @property
    def ratio_a(self) -> float:
        return self.length / self.len_a if self.len_a else 0.0

    @property
    def ratio_b(self) -> float:
        return self.length / self.len_b if self.len_b else 0.0


# --- the OpenMP work-around -------------------------------------------------------------
# The libdivsufsort wheel is built with OpenMP.  On a busy machine its thread team costs
# milliseconds per call whatever the input size, many times the single-threaded sort of two
# articles.  A suffix sort of two articles is far too small to gain from threads, so the
# calling thread's OpenMP team size is set to 1 in the bundled libgomp (that copy of libgomp is
# private to pydivsufsort, so nothing else in the process is affected).
_omp_lock = threading.Lock()
_omp_set: Any = None
_omp_threads = threading.local()


def _single_threaded_omp() -> None:
    global _omp_set
    if getattr(_omp_threads, "done", False):
        return
    with _omp_lock:
        if _omp_set is None:
            libs = os.path.join(os.path.dirname(pydivsufsort.__file__), "..", "pydivsufsort.libs")
            found = sorted(glob.glob(os.path.join(libs, "libgomp*")))
            try:
                _omp_set = ctypes.CDLL(found[0]).omp_set_num_threads if found else False
            except (OSError, AttributeError):
                _omp_set = False
    if _omp_set:
        _omp_set(1)  # per thread: OpenMP's nthreads-var is a per-thread setting
    _omp_threads.done = True


def _suffix_array(encoded: bytes, width: int) -> npt.NDArray[np.int32]:
    """Suffix array of a sequence of big-endian ``width``-byte symbols."""
    _single_threaded_omp()
    sa: npt.NDArray[np.int32] = np.asarray(pydivsufsort.divsufsort(encoded))
    if width == 1:
        return sa
    # Suffixes at symbol boundaries sort like the symbol sequence (big-endian bytes).
    keep: npt.NDArray[np.int32] = (sa[sa % width == 0] // width).astype(np.int32)
    return keep


# --- encoding ------------------------------------------------------------------------------


def _codepoints(text: str) -> npt.NDArray[np.uint32]:
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype="<u4")


Encoded = tuple[npt.NDArray[Any], bytes, int]


def _encode_chars(a: str, b: str) -> Encoded:
    """Symbols of ``a + sep + b`` (smallest unsigned dtype) and their suffix-sort bytes."""
    joined = _codepoints(a + b)
    if joined.size and int(joined.max()) < 255:
        # Byte alphabet (ASCII and Latin-1 news): the separator is a byte value not used.
        used = np.zeros(256, dtype=bool)
        used[joined] = True
        sep = int(np.flatnonzero(~used)[0])
        symbols = np.empty(joined.size + 1, dtype=np.uint8)
        symbols[: len(a)] = joined[: len(a)]
        symbols[len(a)] = sep
        symbols[len(a) + 1 :] = joined[len(a) :]
        return symbols, symbols.tobytes(), 1
    ranks = np.unique(joined, return_inverse=True)[1].astype(np.uint32)
    return _join_ranks(ranks[: len(a)], ranks[len(a) :], int(ranks.max(initial=0)) + 1)


def _encode_tokens(a: Sequence[Any], b: Sequence[Any]) -> Encoded:
    ids: dict[Any, int] = {}
    try:
        ra = np.fromiter((ids.setdefault(t, len(ids)) for t in a), dtype=np.uint32, count=len(a))
        rb = np.fromiter((ids.setdefault(t, len(ids)) for t in b), dtype=np.uint32, count=len(b))
    except TypeError as exc:
        raise InputTypeError(f"tokens must be hashable: {exc}") from exc
    return _join_ranks(ra, rb, len(ids))


def _join_ranks(ra: npt.NDArray[np.uint32], rb: npt.NDArray[np.uint32], sep: int) -> Encoded:
    """``ra + [sep] + rb`` with ``sep`` larger than every rank, in the smallest width."""
    width = 1 if sep < 256 else 2 if sep < 65536 else 4
    symbols = np.concatenate([ra, np.array([sep], dtype=np.uint32), rb]).astype(f"u{width}")
    return symbols, symbols.astype(f">u{width}").tobytes(), width


@njit(cache=True, nogil=True)
def _lcs_scan(s: Any, sa: Any, n_a: int) -> tuple[int, int, int]:  # pragma: no cover - compiled
    """Kasai's LCP, then the longest cross-side neighbour LCP and its first occurrences.

    Returns ``(length, a_start, b_start)``; ``b_start`` is relative to ``b``.
    """
    n = s.shape[0]
    rank = np.empty(n, dtype=np.int32)
    for r in range(n):
        rank[sa[r]] = r
    lcp = np.zeros(n, dtype=np.int32)  # lcp[r] = LCP(suffix sa[r-1], suffix sa[r])
    h = 0
    for p in range(n):
        r = rank[p]
        if r > 0:
            q = sa[r - 1]
            while p + h < n and q + h < n and s[p + h] == s[q + h]:
                h += 1
            lcp[r] = h
            if h > 0:
                h -= 1
        else:
            h = 0
    best = 0
    for r in range(1, n):
        if lcp[r] > best and (sa[r] < n_a) != (sa[r - 1] < n_a):
            best = lcp[r]
    if best == 0:
        return 0, 0, 0
    # Every run of neighbours with LCP >= best shares one longest common substring; take the
    # run with the leftmost occurrence in a, then that run's leftmost occurrence in b.
    best_a = n
    best_b = n
    r = 0
    while r < n:
        end = r + 1
        while end < n and lcp[end] >= best:
            end += 1
        if end - r > 1:
            min_a = n
            min_b = n
            for t in range(r, end):
                p = sa[t]
                if p < n_a:
                    min_a = min(min_a, p)
                elif p > n_a:
                    min_b = min(min_b, p)
            if min_a < n and min_b < n and min_a < best_a:
                best_a = min_a
                best_b = min_b
        r = end
    return best, best_a, best_b - n_a - 1


def longest_common_substring(a: str | Sequence[Any], b: str | Sequence[Any]) -> CommonSubstring:
    """The longest common substring of ``a`` and ``b`` (both ``str``, or both token sequences).

    Two ``str`` are compared character by character; two sequences (lists or tuples of
    tokens, numpy integer arrays) token by token.  Length 0 (spans at 0) when nothing is
    shared or an input is empty.
    """
    if isinstance(a, str) != isinstance(b, str):
        raise InputTypeError("compare two str (character level) or two token sequences")
    for x in (a, b):
        if isinstance(x, bytes | bytearray | memoryview):
            raise InputTypeError("longest_common_substring takes str or token sequences, not bytes")
        if not isinstance(x, str | Sequence | np.ndarray):
            raise InputTypeError(f"expected str or a sequence of tokens, got {type(x).__name__}")
    n_a, n_b = len(a), len(b)
    if n_a + n_b + 1 > MAX_ELEMENTS:
        raise InputTooLargeError(
            f"longest_common_substring: {n_a + n_b} elements is over the {MAX_ELEMENTS} limit"
        )
    if n_a == 0 or n_b == 0:
        return CommonSubstring(0, 0, 0, n_a, n_b)
    if isinstance(a, str) and isinstance(b, str):
        symbols, encoded, width = _encode_chars(a, b)
    else:
        symbols, encoded, width = _encode_tokens(
            a.tolist() if isinstance(a, np.ndarray) else a,  # type: ignore[arg-type]
            b.tolist() if isinstance(b, np.ndarray) else b,  # type: ignore[arg-type]
        )
    sa = _suffix_array(encoded, width)
    length, a_start, b_start = _lcs_scan(symbols, sa, n_a)
    return CommonSubstring(int(length), int(a_start), int(b_start), n_a, n_b)
