"""Exact set similarity and the bottom-k sketch overlap with early termination.

Inputs are sets of integers given as **sorted, distinct** 1-d integer arrays (the values of a
set-valued :class:`~neardup.sketch.base.Signature` such as the sentence sketch, or any
array-like).  Arrays that are not strictly increasing are read as sets (sorted and
de-duplicated first), so the functions never give a silent wrong answer on unsorted input.
Signatures are accepted too; two signatures of different schemes raise
:class:`~neardup.errors.SchemeMismatchError`.

Measures (all exact rational values, returned as ``float``):

* :func:`jaccard` ``|A ∩ B| / |A ∪ B|`` (Jaccard 1901; seed 002).
* :func:`containment` ``|A ∩ B| / |A|``: how much of ``A`` is inside ``B`` (Broder 1997).
* :func:`bottomk_jaccard` the **bottom-k Jaccard estimate** of two bottom-k sketches (seed
  000; Broder 1997; Cohen & Kaplan 2007, "coordinated" bottom-k samples).  A sketch with
  ``k`` values may have been trimmed, so of its set only the values up to its largest one,
  ``tau``, are known; a sketch with fewer than ``k`` values is its whole set.  The estimate
  is the Jaccard of the two sets restricted to the window ``x <= min(tau of the full
  sketches)`` (no limit when neither sketch is full)::

      J_hat = |A ∩ B ∩ window| / |(A ∪ B) ∩ window|

  Inside the window membership in both sets is known exactly, and with a random hash the
  window is a uniform sample of ``A ∪ B`` of at least ``k`` values when a sketch is full,
  so ``J_hat`` is an unbiased estimate of the Jaccard of the full sets; it **equals the
  exact Jaccard** when both sketches have fewer than ``k`` values (e.g. both articles have
  fewer than ``k`` distinct sentences).  It is computed by one merge of the two sorted
  sketches that stops when both are exhausted or a full sketch is exhausted (everything
  after that lies outside the window).  Sketches longer than ``k`` are first cut to their
  ``k`` smallest values.
* :func:`bottomk_at_least` decides ``bottomk_jaccard(a, b, k) >= threshold`` by the same merge
  but stops as soon as the answer is certain (seed 000: "if the duplication threshold is 50%
  similarity, you processed 60% of the terms and all matched or didn't match then there is no
  sense continuing on").  It returns exactly what the full merge returns, at every threshold.

Empty sets: ``jaccard(∅, ∅) = 1`` and ``bottomk_jaccard(∅, ∅) = 1`` (an empty signature is a
near-duplicate of another empty one), while the similarity of an empty and a non-empty set
is 0.  ``containment(∅, B)`` is 1 if ``B`` is empty and 0 otherwise, for the same reason.

Guarantees: exact (no floating-point accumulation: the result is one correctly rounded
division of two integers, so ``>= threshold`` decisions agree everywhere); deterministic;
O(|A| + |B|) time for sorted input (O(n log n) when it has to be sorted first), O(1) extra
memory for :func:`bottomk_at_least`.
"""

from __future__ import annotations

import functools
from typing import Any, cast

import numpy as np
import numpy.typing as npt

from neardup._jit import njit
from neardup.config import check_int, check_range
from neardup.errors import InputError, InputTypeError
from neardup.sketch.base import Signature, require_same_scheme

__all__ = [
    "as_sorted_set",
    "at_least_kernel",
    "bottomk_at_least",
    "bottomk_jaccard",
    "containment",
    "jaccard",
    "need_table",
]

IntArray = npt.NDArray[np.integer[Any]]
SetLike = Signature | npt.ArrayLike


def as_sorted_set(values: SetLike) -> IntArray:
    """``values`` as a sorted, distinct, 1-d integer array (no copy when it already is one)."""
    arr = values.values if isinstance(values, Signature) else np.asarray(values)
    if arr.ndim != 1:
        raise InputError(f"a set must be a 1-d array of integers, got {arr.ndim} dimensions")
    if arr.size == 0:
        return arr.astype(np.uint64) if arr.dtype.kind not in "iu" else arr
    if arr.dtype.kind not in "iu":
        raise InputTypeError(f"a set must hold integers, got dtype {arr.dtype}")
    if arr.size > 1 and not bool(np.all(arr[1:] > arr[:-1])):
        arr = np.unique(arr)  # read unsorted or repeated values as a set
    return arr


def _pair(a: SetLike, b: SetLike) -> tuple[IntArray, IntArray]:
    if isinstance(a, Signature) and isinstance(b, Signature):
        require_same_scheme(a, b)
    elif isinstance(a, Signature) or isinstance(b, Signature):
        raise InputTypeError("compare a Signature with another Signature, not with an array")
    x, y = as_sorted_set(a), as_sorted_set(b)
    if x.size and y.size and x.dtype != y.dtype:
        # Mixed signed/unsigned or widths: compare as int64-safe common type when possible.
        common = np.result_type(x.dtype, y.dtype)
        if common.kind == "f":
            raise InputTypeError(f"cannot compare sets of {x.dtype} and {y.dtype} exactly")
        x, y = x.astype(common), y.astype(common)
    return x, y


def _intersection_size(x: IntArray, y: IntArray) -> int:
    if x.size == 0 or y.size == 0:
        return 0
    return int(np.intersect1d(x, y, assume_unique=True).size)


def jaccard(a: SetLike, b: SetLike) -> float:
    """Exact Jaccard coefficient ``|A ∩ B| / |A ∪ B|`` (1.0 for two empty sets)."""
    x, y = _pair(a, b)
    inter = _intersection_size(x, y)
    union = x.size + y.size - inter
    return 1.0 if union == 0 else inter / union


def containment(a: SetLike, b: SetLike) -> float:
    """Exact containment of ``a`` in ``b``: ``|A ∩ B| / |A|`` (empty ``a``: 1.0 iff ``b`` empty)."""
    x, y = _pair(a, b)
    if x.size == 0:
        return 1.0 if y.size == 0 else 0.0
    return _intersection_size(x, y) / x.size


def bottomk_jaccard(a: SetLike, b: SetLike, k: int) -> float:
    """The bottom-``k`` Jaccard estimate (see the module docstring), computed in full.

    The exact Jaccard of the two sets whenever both sketches hold fewer than ``k`` values.
    """
    check_int("k", k, low=1)
    x, y = _pair(a, b)
    x, y = x[:k], y[:k]
    union = np.union1d(x, y)
    if union.size == 0:
        return 1.0
    inter = np.intersect1d(x, y, assume_unique=True) if x.size and y.size else x[:0]
    full = [side[-1] for side in (x, y) if side.size >= k]
    if full:
        tau = min(full)
        union = union[: np.searchsorted(union, tau, side="right")]
        inter = inter[: np.searchsorted(inter, tau, side="right")]
    return inter.size / union.size


@functools.lru_cache(maxsize=1024)
def _need_table_cached(threshold: float, size: int) -> npt.NDArray[np.int64]:
    u = np.arange(size + 1, dtype=np.int64)
    need = np.ceil(threshold * u).astype(np.int64)
    # Make need[u] the smallest m with the float division m / u >= threshold, exactly as the
    # final decision computes it (float products and divisions may differ in the last bit).
    with np.errstate(divide="ignore", invalid="ignore"):
        for _ in range(2):
            lower = np.maximum(need - 1, 0)
            need = np.where((u > 0) & (lower / np.maximum(u, 1) >= threshold), lower, need)
            need = np.where((u > 0) & (need / np.maximum(u, 1) < threshold), need + 1, need)
    need[0] = 0  # two empty sets: similarity 1 >= any threshold
    need.flags.writeable = False
    return cast("npt.NDArray[np.int64]", need)


def need_table(threshold: float, size: int) -> npt.NDArray[np.int64]:
    """``need[u]``: the fewest matches ``m`` with ``m / u >= threshold``, for ``u = 0..size``.

    Non-decreasing in ``u``; it turns every ``>= threshold`` test into an integer comparison
    that agrees bit-for-bit with the float division ``m / u >= threshold``.
    """
    check_range("threshold", threshold, low=0.0, high=1.0, low_open=True)
    check_int("size", size, low=1)
    return _need_table_cached(float(threshold), size)


@njit(cache=True, nogil=True)
def at_least_kernel(  # pragma: no cover - compiled
    a: Any, a_lo: int, a_hi: int, b: Any, b_lo: int, b_hi: int, k: int, need: Any
) -> bool:
    """Early-terminating bottom-k merge of ``a[a_lo:a_hi]`` and ``b[b_lo:b_hi]``.

    ``need`` is ``need_table(threshold, 2 * k)``.  State: ``u`` window values walked, ``m``
    of them in both.  Before each step the final ratio is bounded from both sides; the walk
    stops as soon as the threshold is certainly reached (worst case: no further match, every
    remaining value joins the window) or certainly missed (best case: every remaining value
    of the shorter side matches and only the values the walk must still consume are added).
    """
    a_hi = min(a_hi, a_lo + k)
    b_hi = min(b_hi, b_lo + k)
    a_full = a_hi - a_lo >= k
    b_full = b_hi - b_lo >= k
    i = a_lo
    j = b_lo
    u = 0
    m = 0
    while True:
        ra = a_hi - i
        rb = b_hi - j
        if (ra == 0 and rb == 0) or (a_full and ra == 0) or (b_full and rb == 0):
            return bool(m >= need[u])  # the walk has ended: everything left is outside the window
        # Best case: min(ra, rb) more matches, and only the values the walk must still
        # consume before it ends join the window.
        if a_full and b_full:
            forced = min(ra, rb)
        elif a_full:
            forced = ra
        elif b_full:
            forced = rb
        else:
            forced = max(ra, rb)
        if m + min(ra, rb) < need[u + forced]:
            return False
        # Worst case: no further match, as many values as possible join the window.
        most = ra + rb - 1 if a_full and b_full else ra + rb
        if m >= need[u + most]:
            return True
        # Not decided, so the walk has not ended: ra + rb > 0 and no full side is exhausted.
        if j >= b_hi or (i < a_hi and a[i] < b[j]):
            i += 1
        elif i >= a_hi or b[j] < a[i]:
            j += 1
        else:
            i += 1
            j += 1
            m += 1
        u += 1


def bottomk_at_least(a: SetLike, b: SetLike, threshold: float, k: int) -> bool:
    """``bottomk_jaccard(a, b, k) >= threshold``, decided with early termination (seed 000).

    ``threshold`` is in ``(0, 1]``.  Agrees with the full merge at every threshold (tested);
    reads at most ``2 * k`` values and usually far fewer.
    """
    check_int("k", k, low=1)
    check_range("threshold", threshold, low=0.0, high=1.0, low_open=True)
    x, y = _pair(a, b)
    if x.dtype != y.dtype:  # one side empty: any common dtype will do
        x, y = x.astype(np.uint64), y.astype(np.uint64)
    # A k beyond both sets trims nothing and makes neither full: one more than the longer
    # set answers the same, and bounds the table of needed matches by the input.
    k = min(k, max(x.size, y.size) + 1)
    need = need_table(threshold, 2 * k)
    return bool(at_least_kernel(x, 0, x.size, y, 0, y.size, k, need))
