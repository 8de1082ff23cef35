"""MinHash over any shingle set, with a Jaccard estimate (Broder 1997; seed 002 "sketches").

Two ways to draw ``num_perm`` min-wise values from a set of 64-bit shingle hashes (the
permutations in one compiled pass of :mod:`neardup._kernels`, tested equal to its numpy
reference; OPH vectorised with numpy):

``method="permutations"``
    ``num_perm`` independent hash functions ``h_i(x) = a_i * x + b_i mod 2**64`` (``a_i`` odd,
    so each is a bijection of uint64: a permutation), value ``i`` = the minimum of ``h_i``
    over the set.  Cost O(n * num_perm).  Shingle hashes are already splitmix64-finalised,
    so this multiply-add family orders them as a random permutation would (checked against
    exact Jaccard in ``tests/test_sketch_minhash.py``).

``method="oph"``
    One permutation hashing (Li, Owen, Zhang, NIPS 2012) with *optimal densification*
    (Shrivastava, "Optimal densification for fast and accurate minwise hashing", ICML 2017):
    one hash ``g(x)`` splits the set into ``num_perm`` bins by its high bits and keeps each
    bin's minimum; an empty bin ``i`` copies the value of the first non-empty bin along a
    probe sequence ``p(i, 1), p(i, 2), ...`` that depends only on ``i`` and the seed (so two
    documents probe alike).  Cost O(n + num_perm), and still Pr[equal value] = Jaccard.

Both give unbiased estimates of the Jaccard similarity J of the two shingle sets with
standard error about ``sqrt(J (1 - J) / num_perm)`` (their measured error: docs/signatures.md).
The default is ``"permutations"``: on news-sized articles (a few hundred shingles) its fused
compiled kernel (:mod:`neardup._kernels`) signs faster than ``"oph"``; ``"oph"`` is the
better choice for long documents, as its cost does not grow with ``num_perm * n``
(``benchmarks/bench_sign.py``).

The signature is ``num_perm`` uint64 values (position ``i`` = value ``i``).  A text without
shingles gives the *empty* signature (no values); :func:`estimate_jaccard` defines two empty
signatures as identical (1.0) and an empty one as disjoint from any other (0.0).
Guarantees: deterministic for a given config (explicit seeds, wrapping uint64 arithmetic);
memory O(num_perm * 4096) whatever the text size (the set is processed in blocks).
"""

from __future__ import annotations

import dataclasses
from functools import lru_cache

import numpy as np
import numpy.typing as npt

from neardup._jit import compiled_worthwhile
from neardup._mix import GOLDEN
from neardup.config import Config, check_choice, check_int
from neardup.errors import ConfigError
from neardup.shingles import U64, mix64, spot_signatures, token_hashes, word_shingles
from neardup.sketch.base import Signature, require_same_scheme
from neardup.sketch.shingleset import (
    DEFAULT_WIDTH,
    TOKEN_SEED,
    ShingleSetConfig,
    SpotSigsConfig,
    shingle_hashes,
    spotsig_hashes,
)
from neardup.text import PYTHON_NS_PER_CHAR, TextConfig, ensure_text

__all__ = [
    "MINHASH_METHODS",
    "MinHashConfig",
    "estimate_jaccard",
    "minhash_values",
    "permutation_params",
    "sign_minhash",
]

MINHASH_METHODS = ("oph", "permutations")
_MAX = np.uint64(0xFFFFFFFFFFFFFFFF)
_GOLDEN = int(GOLDEN)
_BLOCK = 4096  # shingles per block in the k-permutation method: bounds memory
_PROBE_CHUNK = 16  # densification probes tried per vectorised step
_PROBE_LIMIT = 1 << 16  # after this many probes, fall back to the next non-empty bin
_TABLE_MAX_BINS = 1024  # up to here densify with a cached first-hit table (4 MB at 1024)
_SHIFT = np.uint64(32)
_PROBE_SALT = np.uint64(0x44454E53)  # "DENS": probes use a key distinct from the bin hash


@dataclasses.dataclass(frozen=True)
class MinHashConfig(Config):
    """MinHash parameters.

    ``num_perm`` values; ``method`` ``"oph"`` or ``"permutations"``; ``seed`` picks the hash
    functions.  The shingle set is word ``width``-shingles of the text stage ``text``, or the
    spot signatures of ``spotsigs`` when that is given (``width`` is then unused).
    """

    SCHEME = "minhash"

    num_perm: int = 128
    method: str = "permutations"
    seed: int = 1
    width: int = DEFAULT_WIDTH
    text: TextConfig = dataclasses.field(default_factory=TextConfig)
    spotsigs: SpotSigsConfig | None = None

    def __post_init__(self) -> None:
        check_int("num_perm", self.num_perm, low=1, high=1 << 16)
        check_choice("method", self.method, MINHASH_METHODS)
        check_int("seed", self.seed, low=0, high=(1 << 64) - 1)
        check_int("width", self.width, low=1, high=64)
        if not isinstance(self.text, TextConfig):
            raise ConfigError(f"text must be a TextConfig, got {type(self.text).__name__}")
        if self.spotsigs is not None and not isinstance(self.spotsigs, SpotSigsConfig):
            raise ConfigError("spotsigs must be a SpotSigsConfig or None")

    def shingles(self, text: str) -> U64:
        """The shingle set this config samples (sorted distinct uint64)."""
        if self.spotsigs is not None:
            return spotsig_hashes(text, self.spotsigs)
        return shingle_hashes(text, _shingle_config(self.width, self.text))

    def shingle_multiset(self, text: str) -> U64:
        """The shingles in text order, duplicates kept (a minimum ignores them; no sort)."""
        if self.spotsigs is not None:
            spot = self.spotsigs
            tokens = token_hashes(ensure_text(text), spot.text, TOKEN_SEED)
            return spot_signatures(
                tokens, spot.antecedent_hashes, spot.stop_hashes, spot.spot_distance,
                spot.chain_length,
            )  # fmt: skip
        return word_shingles(token_hashes(ensure_text(text), self.text, TOKEN_SEED), self.width)


@lru_cache(maxsize=64)
def _shingle_config(width: int, text: TextConfig) -> ShingleSetConfig:
    return ShingleSetConfig(width=width, text=text)


@lru_cache(maxsize=64)
def permutation_params(num_perm: int, seed: int) -> tuple[U64, U64]:
    """``(a, b)`` of the ``num_perm`` affine bijections; ``a`` odd."""
    idx = np.arange(2 * num_perm, dtype=np.uint64)
    idx += np.uint64((seed * _GOLDEN) & 0xFFFFFFFFFFFFFFFF)
    draws = mix64(idx)
    a = draws[0::2] | np.uint64(1)
    b = draws[1::2].copy()
    a.flags.writeable = False
    b.flags.writeable = False
    return a, b


def _minhash_permutations(shingles: U64, num_perm: int, seed: int) -> U64:
    """The k-permutation values in one compiled pass (equal to the numpy reference below,
    tested); small inputs take the numpy reference, which starts faster."""
    if not shingles.shape[0]:
        return np.empty(0, dtype=np.uint64)
    if not compiled_worthwhile(_numpy_cost(shingles.shape[0], num_perm)):
        return _minhash_permutations_numpy(shingles, num_perm, seed)
    from neardup import _kernels

    a, b = permutation_params(num_perm, seed)
    return _kernels.minhash_of_values(shingles, a, b)


def _numpy_cost(values: int, num_perm: int) -> int:
    """Estimated nanoseconds of :func:`_minhash_permutations_numpy` (for
    :func:`neardup._jit.compiled_worthwhile`)."""
    return 20_000 + 3 * values * num_perm


def _minhash_permutations_numpy(shingles: U64, num_perm: int, seed: int) -> U64:
    """Reference numpy implementation of :func:`_minhash_permutations` (same values)."""
    a, b = permutation_params(num_perm, seed)
    out: U64 | None = None
    # uint64 array arithmetic wraps mod 2**64 (numpy warns only for scalars).
    for start in range(0, shingles.shape[0], _BLOCK):
        block = shingles[start : start + _BLOCK]
        hashed = block[:, None] * a[None, :]
        hashed += b[None, :]
        mins = hashed.min(axis=0)
        out = mins if out is None else np.minimum(out, mins)
    if out is None:
        return np.empty(0, dtype=np.uint64)
    return out


@lru_cache(maxsize=64)
def _oph_key(seed: int) -> np.uint64:
    key = mix64(np.array([(seed * _GOLDEN + 0x4F5048) & 0xFFFFFFFFFFFFFFFF], dtype=np.uint64))
    return np.uint64(key[0])


def _probe_bins(
    rows: npt.NDArray[np.intp], first: int, count: int, num_bins: int, seed: int
) -> npt.NDArray[np.intp]:
    """Bins probed by empty bins ``rows`` at attempts ``first .. first + count - 1``.

    Probe ``(i, t)`` is the high 32 bits of ``splitmix64((i << 32 | t) ^ key)`` scaled to
    ``num_bins``: it depends on the bin, the attempt and the seed only, never on the set.
    """
    steps = np.arange(first, first + count, dtype=np.uint64)
    keys = (rows.astype(np.uint64)[:, None] << _SHIFT) | steps[None, :]
    keys ^= _oph_key(seed) ^ _PROBE_SALT
    hashed = mix64(keys)
    hashed >>= _SHIFT
    hashed *= np.uint64(num_bins)
    hashed >>= _SHIFT
    return hashed.astype(np.intp)


@lru_cache(maxsize=64)
def _first_probes(num_bins: int, seed: int) -> npt.NDArray[np.intp]:
    table = _probe_bins(np.arange(num_bins, dtype=np.intp), 0, _PROBE_CHUNK, num_bins, seed)
    table.flags.writeable = False
    return table


@lru_cache(maxsize=8)
def _first_hit_table(num_bins: int, seed: int) -> npt.NDArray[np.int32]:
    """``table[i, f]`` = first attempt at which empty bin ``i`` probes bin ``f``.

    ``_PROBE_LIMIT`` when that takes more attempts than the limit.  With it, densifying is a
    gather and an argmin over (empty bins x non-empty bins) instead of a probing loop; it
    gives exactly the bins the probing loop would find.  Built once per process and
    (num_bins, seed) in O(num_bins**2 log num_bins); used up to ``_TABLE_MAX_BINS`` bins.
    """
    table = np.full((num_bins, num_bins), _PROBE_LIMIT, dtype=np.int32)
    flat = table.reshape(-1)
    rows = np.arange(num_bins, dtype=np.intp)
    pending = rows
    attempt = 0
    chunk = 256
    while pending.shape[0] and attempt < _PROBE_LIMIT:
        probes = _probe_bins(pending, attempt, chunk, num_bins, seed)
        steps = np.arange(attempt, attempt + chunk, dtype=np.int32)
        cells = pending[:, None] * num_bins + probes
        np.minimum.at(flat, cells.reshape(-1), np.broadcast_to(steps, probes.shape).reshape(-1))
        # A row is done once every bin has appeared in its probe sequence.
        pending = pending[(table[pending] == _PROBE_LIMIT).any(axis=1)]
        attempt += chunk
    table.flags.writeable = False
    return table


def _densify(values: U64, filled: npt.NDArray[np.bool_], seed: int) -> U64:
    """Fill empty bins by optimal densification (Shrivastava 2017).

    Empty bin ``i`` copies the first non-empty bin of its probe sequence
    ``p(i, 0), p(i, 1), ...`` (see :func:`_probe_bins`).
    """
    num_bins = values.shape[0]
    pending = np.flatnonzero(~filled)
    if pending.shape[0] == 0:
        return values
    out = values.copy()
    full = np.flatnonzero(filled)
    if full.shape[0] == 1:
        # One non-empty bin: every probe sequence ends there.
        out[pending] = values[full[0]]
        return out
    # The first _PROBE_CHUNK probes of every bin are cached: they settle most empty bins of
    # a well-filled sketch in one gather.
    pending = _settle(values, filled, out, pending, _first_probes(num_bins, seed)[pending])
    if pending.shape[0] == 0:
        return out
    if num_bins <= _TABLE_MAX_BINS:
        first = _first_hit_table(num_bins, seed)[pending][:, full]
        best = first.argmin(axis=1)
        reached = first[np.arange(pending.shape[0]), best] < _PROBE_LIMIT
        out[pending[reached]] = values[full[best[reached]]]
        pending = pending[~reached]
    else:
        pending = _densify_probing(values, filled, out, pending, seed)
    if pending.shape[0]:
        # Practically unreachable (needs 65,536 unlucky probes); stay defined: copy the
        # next non-empty bin in circular order.
        out[pending] = values[full[np.searchsorted(full, pending) % full.shape[0]]]
    return out


def _densify_probing(
    values: U64,
    filled: npt.NDArray[np.bool_],
    out: U64,
    pending: npt.NDArray[np.intp],
    seed: int,
) -> npt.NDArray[np.intp]:
    """Probe chunk by chunk (large ``num_bins``); returns the bins still unfilled."""
    num_bins = values.shape[0]
    # A probe hits a non-empty bin with probability m / k: try about 4 k / m at a time.  The
    # chunking never changes which bin is copied, only how many numpy calls it takes.
    chunk = int(min(256, max(_PROBE_CHUNK, 4 * num_bins // max(1, num_bins - len(pending)))))
    attempt = 0
    while pending.shape[0] and attempt < _PROBE_LIMIT:
        if attempt == 0:
            probes = _first_probes(num_bins, seed)[pending]
            step = _PROBE_CHUNK
        else:
            probes = _probe_bins(pending, attempt, chunk, num_bins, seed)
            step = chunk
        pending = _settle(values, filled, out, pending, probes)
        attempt += step
    return pending


def _settle(
    values: U64,
    filled: npt.NDArray[np.bool_],
    out: U64,
    pending: npt.NDArray[np.intp],
    probes: npt.NDArray[np.intp],
) -> npt.NDArray[np.intp]:
    """Copy into each pending bin the value of the first non-empty bin among its ``probes``
    (one row per pending bin, in probe order); returns the bins no probe settled."""
    hits = filled[probes]
    first = hits.argmax(axis=1)
    found = hits[np.arange(pending.shape[0]), first]
    rows = np.flatnonzero(found)
    out[pending[rows]] = values[probes[rows, first[rows]]]
    left: npt.NDArray[np.intp] = pending[~found]
    return left


def _minhash_oph(shingles: U64, num_perm: int, seed: int) -> U64:
    g = shingles ^ _oph_key(seed)
    g = mix64(g)
    bins = g >> _SHIFT
    bins *= np.uint64(num_perm)
    bins >>= _SHIFT
    idx = bins.astype(np.intp)
    values = np.full(num_perm, _MAX, dtype=np.uint64)
    np.minimum.at(values, idx, g)
    filled = np.zeros(num_perm, dtype=bool)
    filled[idx] = True
    return _densify(values, filled, seed)


def minhash_values(
    shingles: U64, num_perm: int = 128, method: str = "permutations", seed: int = 1
) -> U64:
    """The ``num_perm`` MinHash values of a set of uint64 shingle hashes.

    Duplicates in ``shingles`` do not matter (a minimum ignores them).  An empty set gives
    an empty array.
    """
    check_int("num_perm", num_perm, low=1, high=1 << 16)
    check_choice("method", method, MINHASH_METHODS)
    check_int("seed", seed, low=0, high=(1 << 64) - 1)
    data = np.ascontiguousarray(shingles, dtype=np.uint64)
    if data.ndim != 1:
        raise ConfigError("shingles must be a 1-d array of uint64")
    if data.shape[0] == 0:
        return np.empty(0, dtype=np.uint64)
    if method == "oph":
        return _minhash_oph(data, num_perm, seed)
    return _minhash_permutations(data, num_perm, seed)


def sign_minhash(text: str, config: MinHashConfig | None = None) -> Signature:
    """The MinHash signature of ``text``'s shingle set (``num_perm`` uint64 values)."""
    cfg = config or MinHashConfig()
    text = ensure_text(text)
    if (
        cfg.method == "permutations"
        and cfg.spotsigs is None
        and compiled_worthwhile(PYTHON_NS_PER_CHAR * len(text) + _numpy_cost(0, cfg.num_perm))
    ):
        # Fused compiled kernel: shingles and minima in one pass (same values as below).
        from neardup import _kernels

        a, b = permutation_params(cfg.num_perm, cfg.seed)
        tokens = token_hashes(text, cfg.text, TOKEN_SEED)
        values = _kernels.minhash_permutations(tokens, cfg.width, a, b)
    else:
        values = minhash_values(cfg.shingle_multiset(text), cfg.num_perm, cfg.method, cfg.seed)
    return Signature(cfg.scheme_id, values)


def estimate_jaccard(a: Signature, b: Signature) -> float:
    """Estimated Jaccard similarity of the shingle sets behind two MinHash signatures.

    The fraction of equal positions (unbiased; standard error ``sqrt(J(1-J)/num_perm)``).
    ``SchemeMismatchError`` when the signatures come from different schemes or parameters.
    Two empty signatures give 1.0; an empty and a non-empty one give 0.0.
    """
    require_same_scheme(a, b)
    if len(a) == 0 or len(b) == 0:
        return 1.0 if len(a) == len(b) else 0.0
    if len(a) != len(b):
        raise ConfigError(f"MinHash signatures of different lengths: {len(a)} vs {len(b)}")
    return float(np.count_nonzero(a.values == b.values)) / len(a)
