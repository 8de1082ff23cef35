"""Eviction (seed 004, Section 2.2): which shingle of a full bucket makes room for a new one.

Four policies, as the paper defines them:

* **Random** (R): a uniformly random shingle of the bucket (xorshift64* generator with an
  explicit seed; no per-shingle byte).
* **LRU**: the bucket is a queue; a new shingle joins the end, a shingle that is searched for
  and found moves to the end, the front is evicted (no per-shingle byte: the order of the
  slots is the queue).
* **Copy Count** (CC): a 1-byte counter set to 1 on insertion and incremented on every hit;
  the smallest counter is evicted; when 10 counters of a bucket reach 255, all are halved.
* **Lucky** (LS, new in the paper): a 1-byte lucky score; after a document has been hashed and
  its copied blocks estimated, (a) new shingles score 1 and found ones +1 (done while
  hashing), (b) the first and last shingle of each copied block of b shingles get
  +floor(sqrt(b - 2)), (c) the first and last selected shingle of the document +3, (d) every
  y-th selected shingle (y = 7) +1, (e) when the average score of a bucket reaches the limit
  11 all its scores are halved.  The smallest score is evicted.

Ties between equal smallest counters/scores (the paper does not say) are broken at random:
the scan starts at a random slot.  Scores saturate at 255.
"""

from __future__ import annotations

import math
from typing import Any

import numba
import numpy as np
import numpy.typing as npt

__all__ = [
    "COPYCOUNT",
    "LRU",
    "LUCKY",
    "POLICY_CODES",
    "RANDOM",
    "lucky_bonus",
    "next_random",
]

RANDOM = 0
LRU = 1
COPYCOUNT = 2
LUCKY = 3
POLICY_CODES = {"random": RANDOM, "lru": LRU, "copycount": COPYCOUNT, "lucky": LUCKY}


@numba.njit(cache=True, inline="always")
def next_random(state: npt.NDArray[np.uint64]) -> Any:  # pragma: no cover - numba
    """xorshift64* (Vigna 2016): advance ``state[0]`` and return a 64-bit value."""
    x = state[0]
    x ^= x >> np.uint64(12)
    x ^= x << np.uint64(25)
    x ^= x >> np.uint64(27)
    state[0] = x
    return x * np.uint64(0x2545F4914F6CDD1D)


@numba.njit(cache=True)
def choose_victim(
    policy: int, base: Any, count: Any, score: npt.NDArray[np.uint8], rng: npt.NDArray[np.uint64]
) -> Any:  # pragma: no cover - numba
    """Slot (0-based within the bucket) to evict from a full bucket."""
    if policy == LRU:
        return 0
    start = np.int64(next_random(rng) % np.uint64(count))
    if policy == RANDOM:
        return start
    best = start
    low = score[base + start]
    for step in range(1, count):
        i = (start + step) % count
        if score[base + i] < low:
            low = score[base + i]
            best = i
    return best


@numba.njit(cache=True)
def halve_if_needed(
    policy: int, base: Any, count: Any, score: npt.NDArray[np.uint8], saturated: int, limit: int
) -> None:  # pragma: no cover - numba
    """CC: halve when ``saturated`` counters are at 255; Lucky: when the mean reaches ``limit``."""
    if policy == COPYCOUNT:
        full = 0
        for i in range(count):
            if score[base + i] == 255:
                full += 1
        if full < saturated:
            return
    else:
        total = 0
        for i in range(count):
            total += int(score[base + i])
        if total < limit * count:
            return
    for i in range(count):
        score[base + i] = score[base + i] >> np.uint8(1)


@numba.njit(cache=True)
def lucky_bonus(origins: npt.NDArray[np.int64], own: int, every: int) -> npt.NDArray[np.int64]:
    """Lucky-score increments (rules b-d) of a document's selected shingles.  # pragma: no cover

    ``origins`` are the estimated origins of the selected shingles in order; a copied block
    is a maximal run of consecutive selected shingles with the same origin other than
    ``own``.
    """
    m = origins.shape[0]
    bonus = np.zeros(m, dtype=np.int64)
    j = 0
    while j < m:
        if origins[j] == own:
            j += 1
            continue
        r = j
        while r + 1 < m and origins[r + 1] == origins[j]:
            r += 1
        size = r - j + 1
        if size >= 2:
            extra = int(math.floor(math.sqrt(size - 2)))  # noqa: RUF046 (numba typing)
            bonus[j] += extra
            bonus[r] += extra
        j = r + 1
    if m > 0:
        bonus[0] += 3
        if m > 1:
            bonus[m - 1] += 3
    for i in range(every - 1, m, every):
        bonus[i] += 1
    return bonus
