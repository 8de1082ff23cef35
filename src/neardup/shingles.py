"""Shingles and fingerprints: the only place where text is encoded and hashed.

Tokens become 64-bit integers here, and every later stage works on those integers.

* Token hashes are ``xxh3_64`` of the token's UTF-8 bytes with an explicit seed.
* A word shingle of ``width`` consecutive tokens (w-shingling, Broder 1997; seed 002) is a
  polynomial combination of its token hashes mod 2**64 followed by the splitmix64 finaliser,
  computed for all positions at once with numpy.
* Sentence shingles (seed 000) are CRC32 of the sentence's normalised terms joined by spaces.

Guarantees: pure and deterministic (no salted ``hash()``; explicit seeds; integer arithmetic
that wraps identically everywhere), so the same text and parameters give the same integers on
every machine and process.  Golden values pin them in ``tests/test_shingles.py``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import xxhash

from neardup.errors import ConfigError

__all__ = ["hash_forms", "mix64", "word_shingles"]

U64 = npt.NDArray[np.uint64]

# Odd 64-bit multiplier of the polynomial shingle combination (the golden ratio constant).
_POLY = np.uint64(0x9E3779B97F4A7C15)


def hash_forms(forms: Sequence[str], seed: int = 0) -> U64:
    """64-bit hashes of token forms (``xxh3_64`` of UTF-8, ``seed``), in token order."""
    digest = xxhash.xxh3_64_intdigest
    return np.fromiter(
        (digest(f.encode("utf-8", "surrogatepass"), seed) for f in forms),
        dtype=np.uint64,
        count=len(forms),
    )


def mix64(values: U64) -> U64:
    """The splitmix64 finaliser, element-wise: a bijection of uint64 with good avalanche."""
    z = np.asarray(values, dtype=np.uint64).copy()
    with np.errstate(over="ignore"):
        z ^= z >> np.uint64(30)
        z *= np.uint64(0xBF58476D1CE4E5B9)
        z ^= z >> np.uint64(27)
        z *= np.uint64(0x94D049BB133111EB)
        z ^= z >> np.uint64(31)
    return z


def word_shingles(token_hashes: U64, width: int) -> U64:
    """Hashes of all ``width``-token windows, in position order (duplicates kept).

    A text with fewer than ``width`` (but at least one) tokens yields one shingle of all its
    tokens, so short texts still have a signature; no tokens yield an empty array.
    """
    if isinstance(width, bool) or not isinstance(width, int) or width < 1:
        raise ConfigError(f"shingle width must be a positive integer, got {width!r}")
    h = np.asarray(token_hashes, dtype=np.uint64)
    n = h.shape[0]
    if n == 0:
        return np.empty(0, dtype=np.uint64)
    w = min(width, n)
    count = n - w + 1
    acc = np.zeros(count, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for i in range(w):
            acc = acc * _POLY + h[i : i + count]
        # Tag the width into the hash so shingles of different widths never coincide.
        acc += np.uint64(w)
    return mix64(acc)
