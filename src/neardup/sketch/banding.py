"""The LSH band layout of a MinHash signature: how many bands of how many rows.

Two documents whose signatures agree on every row of at least one band become candidates;
with ``bands`` bands of ``rows`` rows, a pair of Jaccard similarity ``s`` does with
probability ``1 - (1 - s**rows)**bands`` (Indyk & Motwani 1998; Broder's sketches of seed
002).  :func:`optimal_bands` picks the layout that minimises the weighted area of false
positives below the threshold and of false negatives above it: the criterion of datasketch's
``MinHashLSH._optimal_param``, integrated on the same 1,001-point grids, over every layout
with ``bands * rows <= num_perm`` at once.  Pure, deterministic; ties go to the fewest
bands, then the fewest rows.  The LSH index tunes its bands with it, and batch dedup with
false negatives weighted more (:mod:`neardup.batch.banding`).
"""

from __future__ import annotations

import functools

import numpy as np

from neardup.config import check_int, check_range
from neardup.errors import ConfigError

__all__ = ["optimal_bands"]

_GRID = 1001  # points of the trapezoid rule on each side of the threshold (datasketch's)


@functools.lru_cache(maxsize=128)
def optimal_bands(
    threshold: float,
    num_perm: int,
    false_positive_weight: float = 0.5,
    false_negative_weight: float = 0.5,
) -> tuple[int, int]:
    """``(bands, rows)`` minimising ``false_positive_weight * FP + false_negative_weight *
    FN``, the integrated false positive and false negative probabilities at ``threshold``."""
    if not 0.0 < threshold < 1.0:
        raise ConfigError(f"LSH threshold must be in (0, 1), got {threshold}")
    check_int("num_perm", num_perm, low=1, high=1 << 14)
    check_range("false_positive_weight", false_positive_weight, low=0.0, high=1.0)
    check_range("false_negative_weight", false_negative_weight, low=0.0, high=1.0)
    pairs = [(b, r) for b in range(1, num_perm + 1) for r in range(1, num_perm // b + 1)]
    grid = np.array(pairs, dtype=np.float64).reshape(-1, 2)
    b, r = grid[:, :1], grid[:, 1:]
    low = np.linspace(0.0, threshold, _GRID)
    high = np.linspace(threshold, 1.0, _GRID)
    fp = np.trapezoid(1.0 - (1.0 - low**r) ** b, low, axis=1)
    fn = np.trapezoid((1.0 - high**r) ** b, high, axis=1)
    best = int(np.argmin(false_positive_weight * fp + false_negative_weight * fn))
    return pairs[best]  # the first minimum: pairs are ordered by bands, then rows
