"""Selection phase (seed 004, Section 2.1): which fingerprints of a document go to the table.

Input is a document's token hashes (64-bit, from :func:`neardup.shingles.hash_forms`); output
is a :class:`Selection`: the selected fingerprints in selection (= position) order, each with
the half-open token range ``[start, end)`` it covers.  For shingle-based methods the
fingerprint is the k-shingle's 64-bit hash (:func:`neardup.shingles.word_shingles`; the paper
uses 62-bit Rabin fingerprints, we keep all 64 bits); for hash-breaking and DCT it is the
fingerprint of a text segment.

Methods, exactly as the paper defines them:

* **All**: every shingle.
* **Every l-th**: shingles starting at positions 0, l, 2l, ...
* **Modulo l** (M l): shingles whose fingerprint is divisible by l.
* **Winnowing w** (W w; Schleimer et al. 2003): in each window of w consecutive shingles the
  smallest fingerprint, the right-most one on ties; a document with fewer than w shingles is
  one window.
* **Revised hash-breaking p** (Hb p; Brin et al. 1995, revised by Seo and Croft 2008): the
  document is cut after every token whose hash is divisible by p into non-overlapping
  segments (the text after the last cut is a segment too); segments shorter than p tokens
  are ignored; each remaining segment is fingerprinted.
* **DCT p** (Seo and Croft 2008): the same segments, each fingerprinted by a quantised
  discrete cosine transform of its normalised token hashes, so small changes inside a
  segment often keep its fingerprint.  The paper gives no constants; ours: token hashes
  mapped to [-1, 1), mean removed, DCT-II coefficients 1..16 scaled by their largest
  magnitude and quantised to 4 bits each, packed into 64 bits and finalised with splitmix64.
* **Hailstorm** (Hs, new in the paper): a shingle is selected iff the minimum token hash of
  its k tokens occurs at its first or its last position (probability 2/k for distinct
  tokens).  Context free, and Lemma 1: every token except the first and last k-1 is covered.
* **No complete overlap** (NM l, NW w, NHs): after selecting, a second pass discards every
  selected shingle all of whose tokens are covered by selected, not discarded shingles.  We
  make the pass left to right: shingle j is discarded iff the next selected shingle starts
  no later than the end of the last kept one; this keeps every token that the full
  selection covered covered (tested).

Guarantees: pure, deterministic, O(n k) for n tokens (winnowing O(n w)); numba kernels.
A document with fewer than k tokens has no shingles (nothing selected).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import cast

import numba
import numpy as np
import numpy.typing as npt

from neardup._mix import splitmix64
from neardup.detect.origin.config import OriginConfig
from neardup.errors import ConfigError
from neardup.shingles import word_shingles
from neardup.sketch.winnowing import winnowing_positions  # Winnowing (W w), written once

__all__ = [
    "Selection",
    "all_shingles",
    "dct_segments",
    "every_positions",
    "hailstorm_positions",
    "hashbreak_segments",
    "modulo_positions",
    "no_overlap_positions",
    "select",
    "select_positions",
    "winnowing_positions",
]

U64 = npt.NDArray[np.uint64]
I64 = npt.NDArray[np.int64]

# Salt xor-ed into token hashes before the hash-breaking test, so that the cut decision does
# not reuse the bits Hailstorm's minimum depends on.
_BREAK_SALT = np.uint64(0xB4EAC5A1D3F2E987)
_POLY = np.uint64(0x9E3779B97F4A7C15)


@dataclasses.dataclass(frozen=True, slots=True)
class Selection:
    """Selected fingerprints in order, with the token range ``[starts[j], ends[j])`` each covers."""

    fingerprints: U64
    starts: I64
    ends: I64
    total_shingles: int  # n - k + 1 (0 when n < k): the denominator of ssr

    def __len__(self) -> int:
        return int(self.fingerprints.shape[0])


def all_shingles(token_hashes: U64, width: int) -> U64:
    """Fingerprints of every k-shingle; empty when there are fewer than k tokens."""
    if token_hashes.shape[0] < width:
        return np.empty(0, dtype=np.uint64)
    return word_shingles(token_hashes, width)


def every_positions(count: int, every: int) -> I64:
    """Every l-th: positions 0, l, 2l, ... below ``count``."""
    return np.arange(0, count, every, dtype=np.int64)


def modulo_positions(fingerprints: U64, modulus: int) -> I64:
    """Modulo l: positions whose fingerprint is divisible by l."""
    return np.flatnonzero(fingerprints % np.uint64(modulus) == 0).astype(np.int64)


@numba.njit(cache=True)
def hailstorm_positions(token_hashes: U64, width: int) -> I64:  # pragma: no cover - numba
    """Hailstorm: shingles whose minimum token hash is at their first or last token."""
    n = token_hashes.shape[0]
    m = n - width + 1
    if m <= 0:
        return np.empty(0, dtype=np.int64)
    out = np.empty(m, dtype=np.int64)
    count = 0
    for i in range(m):
        low = token_hashes[i]
        for t in range(i + 1, i + width):
            if token_hashes[t] < low:
                low = token_hashes[t]
        if token_hashes[i] == low or token_hashes[i + width - 1] == low:
            out[count] = i
            count += 1
    return out[:count]


@numba.njit(cache=True)
def no_overlap_positions(positions: I64, width: int) -> I64:  # pragma: no cover - numba
    """The "no complete overlap" second pass over sorted shingle start positions."""
    m = positions.shape[0]
    out = np.empty(m, dtype=np.int64)
    count = 0
    covered_end = -1  # tokens below this are covered by kept shingles
    for j in range(m):
        if j + 1 < m and positions[j + 1] <= covered_end:
            continue  # earlier kept + the next selected cover all of this shingle
        out[count] = positions[j]
        count += 1
        covered_end = positions[j] + width
    return out[:count]


# numba dispatchers are untyped for mypy; the kernel is splitmix64 itself
_splitmix = cast(
    "Callable[[np.uint64], np.uint64]", numba.njit(cache=True, inline="always")(splitmix64)
)


@numba.njit(cache=True)
def _segments(token_hashes: U64, p: int) -> tuple[I64, I64]:  # pragma: no cover - numba
    """Revised hash-breaking segments: cut after tokens with hash % p == 0, drop those < p."""
    n = token_hashes.shape[0]
    starts = np.empty(n, dtype=np.int64)
    ends = np.empty(n, dtype=np.int64)
    count = 0
    start = 0
    pp = np.uint64(p)
    for t in range(n):
        last = t == n - 1
        if _splitmix(token_hashes[t] ^ _BREAK_SALT) % pp == 0 or last:
            if t + 1 - start >= p:
                starts[count] = start
                ends[count] = t + 1
                count += 1
            start = t + 1
    return starts[:count], ends[:count]


@numba.njit(cache=True)
def _hashbreak_fps(token_hashes: U64, starts: I64, ends: I64) -> U64:  # pragma: no cover
    out = np.empty(starts.shape[0], dtype=np.uint64)
    for s in range(starts.shape[0]):
        acc = np.uint64(0)
        for t in range(starts[s], ends[s]):
            acc = acc * _POLY + token_hashes[t]
        out[s] = _splitmix(acc + np.uint64(ends[s] - starts[s]) + np.uint64(0x4842))
    return out


@numba.njit(cache=True)
def _dct_fps(token_hashes: U64, starts: I64, ends: I64) -> U64:  # pragma: no cover - numba
    out = np.empty(starts.shape[0], dtype=np.uint64)
    coeffs = np.zeros(16, dtype=np.float64)
    for s in range(starts.shape[0]):
        a = starts[s]
        n = ends[s] - a
        x = np.empty(n, dtype=np.float64)
        mean = 0.0
        for i in range(n):
            x[i] = (token_hashes[a + i] >> np.uint64(11)) * (2.0 / 9007199254740992.0) - 1.0
            mean += x[i]
        mean /= n
        for i in range(n):
            x[i] -= mean
        peak = 0.0
        for u in range(16):
            c = 0.0
            if u + 1 < n:
                for i in range(n):
                    c += x[i] * math.cos(math.pi / n * (i + 0.5) * (u + 1))
            coeffs[u] = c
            peak = max(peak, abs(c))
        packed = np.uint64(0)
        for u in range(16):
            q = 8 if peak == 0.0 else int(math.floor((coeffs[u] / peak + 1.0) * 8.0))  # noqa: RUF046
            q = min(max(q, 0), 15)
            packed = (packed << np.uint64(4)) | np.uint64(q)
        out[s] = _splitmix(packed ^ (np.uint64(n) * _POLY))
    return out


def hashbreak_segments(token_hashes: U64, p: int) -> Selection:
    """Revised hash-breaking p: segment fingerprints and token ranges."""
    starts, ends = _segments(token_hashes, p)
    fps = _hashbreak_fps(token_hashes, starts, ends)
    return Selection(fps, starts, ends, 0)


def dct_segments(token_hashes: U64, p: int) -> Selection:
    """DCT p: quantised-DCT fingerprints of the hash-breaking segments."""
    starts, ends = _segments(token_hashes, p)
    fps = _dct_fps(token_hashes, starts, ends)
    return Selection(fps, starts, ends, 0)


def select(token_hashes: U64, config: OriginConfig) -> Selection:
    """Run the configured selection algorithm on one document's token hashes."""
    th = np.ascontiguousarray(token_hashes, dtype=np.uint64)
    k = config.shingle_width
    total = max(th.shape[0] - k + 1, 0)
    method = config.selection
    if method in ("hashbreak", "dct"):
        fn = hashbreak_segments if method == "hashbreak" else dct_segments
        seg = fn(th, config.parameter)
        return Selection(seg.fingerprints, seg.starts, seg.ends, total)
    shingles = all_shingles(th, k)
    positions = select_positions(th, shingles, config)
    return Selection(shingles[positions], positions, positions + k, total)


def select_positions(token_hashes: U64, shingles: U64, config: OriginConfig) -> I64:
    """Start positions of the selected shingles among ``shingles`` (all of a document's, in
    order) for a shingle-based selection (not hash-breaking or DCT)."""
    k = config.shingle_width
    total = shingles.shape[0]
    method = config.selection
    if method == "all":
        positions = np.arange(total, dtype=np.int64)
    elif method == "every":
        positions = every_positions(total, config.parameter)
    elif method == "modulo":
        positions = modulo_positions(shingles, config.parameter)
    elif method == "winnowing":
        positions = winnowing_positions(shingles, config.parameter)
    elif method == "hailstorm":
        positions = hailstorm_positions(token_hashes, k)
    else:
        raise ConfigError(f"selection {method!r} does not select shingles")
    if config.no_overlap:
        positions = no_overlap_positions(positions, k)
    return positions
