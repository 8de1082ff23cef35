"""The package's one 64-bit mixing primitive: the splitmix64 finaliser.

Steele, Lea & Flood, "Fast splittable pseudorandom number generators" (OOPSLA 2014): a
bijection of ``uint64`` in which every input bit flips each output bit with probability close
to 1/2.  Shingle keys, band keys, story projections and the origin detector's anchors are
all finalised by it.

Written once, as plain numpy arithmetic: :func:`splitmix64` runs on one ``np.uint64`` or
element-wise on an array, and compiled kernels use the same function, each kernel module
wrapping it with ``njit(inline="always")``.  Arithmetic wraps modulo 2**64 (numba and numpy
arrays both wrap; a numpy *scalar* product may warn, so Python-side callers pass arrays).
Deterministic and platform-independent.
"""

from __future__ import annotations

from typing import TypeVar

import numpy as np
import numpy.typing as npt

__all__ = ["GOLDEN", "splitmix64"]

#: 2**64 / golden ratio, odd: the multiplier of polynomial hash combinations (Knuth 6.4).
GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31 = np.uint64(30), np.uint64(27), np.uint64(31)

T = TypeVar("T", np.uint64, npt.NDArray[np.uint64])


def splitmix64(z: T) -> T:
    """The splitmix64 finaliser of ``z`` (one ``np.uint64`` or a ``uint64`` array)."""
    z = (z ^ (z >> _S30)) * _M1
    z = (z ^ (z >> _S27)) * _M2
    return z ^ (z >> _S31)  # type: ignore[no-any-return]
