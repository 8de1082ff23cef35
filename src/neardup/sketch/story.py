"""Story vectors: what an article is *about*, as a fixed-length vector and its SimHash.

The copy fingerprints (:mod:`neardup.sketch.simhash`, MinHash, sentence sketches) place an
article near its *copies*.  Two reports of the same event written independently share few
sentences but many of the same rare words (names, places, the event's own vocabulary).  Seed
003 ("General Simhash-based Framework for News Aggregators", MECS 2017) builds its SimHash on
such a feature vector -- the TF-IDF vector an aggregator already has -- rather than on the
text's shingles; this module is that vector.

Method:

1. **Features**: the article's *content terms* with their counts, as the near-duplicate
   rule's profile already holds them (:attr:`neardup.rule.Profile.terms` /
   ``term_counts``): the hashed word forms of its prose (page furniture -- captions printed
   twice, credit lines, menus, "RELATED STORIES" -- left out unless the page has no prose),
   without stop words, figures and words of one or two letters.  The text is read once, by
   the rule; this module only weighs and projects those terms.
2. **Weights**: ``w(f) = (1 + ln tf(f)) * idf(f)`` (sublinear TF; Salton & Buckley 1988),
   with ``idf`` from any object with ``weights_of(features)`` -- a frozen
   :class:`~neardup.sketch.idf.IdfTable` or the document frequencies maintained as articles
   arrive (:class:`neardup.index.docfreq.DocumentFrequencies`; the incremental IDF of
   on-line event detection, Allan, Papka & Lavrenko, SIGIR 1998).  Weights are integers
   (TF and IDF each scaled by 1024), so sums are exact.
3. **Projection** (Charikar 2002, sign random projections): component ``j`` of the story
   vector is ``sum_f w(f) * r_j(f) / ||w||`` with ``r_j(f) = +1`` or ``-1`` given by bit
   ``j mod 64`` of ``splitmix64(f xor K_{j div 64})``: a seeded, data-independent random
   projection of the (unbounded) TF-IDF vector to ``bits`` dimensions.  Each component is
   then close to a standard normal variable, and ``dot(u, v) / bits`` estimates the cosine
   of the two TF-IDF vectors (Johnson-Lindenstrauss).
4. **Story SimHash**: bit ``j`` is 1 when component ``j`` is positive (computed on the exact
   integer sums).  The Hamming distance ``d`` of two story SimHashes estimates the angle of
   the two TF-IDF vectors, ``theta ~ pi * d / bits`` (Charikar 2002).  Given the real vector
   of one side and only the bits of the other, ``sqrt(pi / 2) * mean_j(u_j * s_j)``
   (``s_j = +-1``) estimates the cosine with a lower variance than the Hamming distance
   (asymmetric estimation, Dong, Charikar & Li, SIGIR 2008): the story index ranks with it.

Byte layout of the signature (scheme ``story``): ``bits / 64`` little-endian uint64 words;
word ``k`` holds components ``64k .. 64k + 63``, component ``64k + j`` in bit ``j`` (LSB = 0).

Guarantees: pure and deterministic -- the same terms, counts, config and IDF weights give the
same fingerprint bytes on every machine (exact integer arithmetic; the real vector is float32
and only ranks).  No terms (an empty or junk-only text) give the *empty* story vector
(``is_empty``), which indexes and detectors skip.  Time is linear in the number of distinct
terms (``bits`` sign bits each, one compiled pass).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from neardup.config import Config, check_choice, check_int
from neardup.errors import ConfigError, InputError, InputTypeError
from neardup.shingles import U64, mix64
from neardup.sketch.base import Signature
from neardup.sketch.idf import IDF_SCALE

__all__ = [
    "TF_SCALE",
    "IdfWeights",
    "StoryVector",
    "StoryVectorConfig",
    "asymmetric_cosine",
    "hamming_cosine",
    "story_vector",
    "story_vector_reference",
    "tf_weights",
]

#: Scale of the integer sublinear TF weight ``round((1 + ln tf) * TF_SCALE)``.
TF_SCALE = 1024
# Seeds of the projection words: K_k = splitmix64(seed * 4 + k + _PROJECTION_TAG).
_PROJECTION_TAG = 0x53544F5259_5345  # "STORYSE"
_SQRT_HALF_PI = math.sqrt(math.pi / 2.0)


class IdfWeights(Protocol):
    """Anything that gives integer IDF weights (scaled by ``IDF_SCALE``) to feature hashes."""

    def weights_of(self, features: U64) -> npt.NDArray[np.int64]: ...


@dataclasses.dataclass(frozen=True)
class StoryVectorConfig(Config):
    """Parameters of the story vector.

    * ``bits``: dimension of the vector and width of its SimHash (64, 128 or 256).
    * ``seed``: seed of the random projection (vectors of different seeds are unrelated).
    """

    SCHEME = "story"

    bits: int = 256
    seed: int = 0

    def __post_init__(self) -> None:
        check_choice("bits", self.bits, (64, 128, 256))
        check_int("seed", self.seed, low=0, high=(1 << 32) - 1)

    @property
    def words(self) -> int:
        """Number of uint64 words of the fingerprint."""
        return self.bits // 64

    @functools.cached_property
    def _keys(self) -> U64:
        base = np.arange(self.words, dtype=np.uint64) + np.uint64(
            (self.seed * 4 + _PROJECTION_TAG) & ((1 << 64) - 1)
        )
        keys = mix64(base)
        keys.flags.writeable = False
        return keys

    def projection_keys(self) -> U64:
        """``K_k`` of the module docs, one per fingerprint word."""
        return self._keys


@dataclasses.dataclass(frozen=True, slots=True, eq=False)
class StoryVector:
    """An article's story vector: ``values`` (float32, ``bits`` components, unit variance
    each), its SimHash ``fingerprint`` (``bits / 64`` uint64 words) and the number of
    distinct features it was made of (0: the empty vector)."""

    scheme_id: str
    values: npt.NDArray[np.float32]
    fingerprint: U64
    features: int

    @property
    def is_empty(self) -> bool:
        """True for a text without content terms (nothing to index or compare)."""
        return self.features == 0

    @property
    def bits(self) -> int:
        return int(self.values.shape[0])

    def signature(self) -> Signature:
        """The story SimHash as a :class:`Signature` (scheme ``story``)."""
        return Signature(self.scheme_id, self.fingerprint)

    def cosine(self, other: StoryVector) -> float:
        """Estimated cosine of the two TF-IDF vectors from both real vectors (0 if empty)."""
        if self.scheme_id != other.scheme_id:
            from neardup.sketch.base import require_same_scheme

            require_same_scheme(self.signature(), other.signature())
        if self.is_empty or other.is_empty:
            return 0.0
        return float(np.dot(self.values, other.values)) / self.bits


def tf_weights(counts: npt.ArrayLike) -> npt.NDArray[np.int64]:
    """Integer sublinear TF weights ``round((1 + ln tf) * TF_SCALE)`` of term counts."""
    c = np.asarray(counts, dtype=np.float64)
    return np.rint((1.0 + np.log(c)) * TF_SCALE).astype(np.int64)


def _checked(terms: Any, counts: Any) -> tuple[U64, npt.NDArray[np.int64]]:
    if not isinstance(terms, np.ndarray) or not isinstance(counts, np.ndarray):
        raise InputTypeError("terms and counts must be numpy arrays (a profile's terms)")
    f = np.asarray(terms, dtype=np.uint64)
    c = np.asarray(counts, dtype=np.int64)
    if f.ndim != 1 or c.shape != f.shape:
        raise InputError(f"{f.shape[0] if f.ndim else 0} terms but counts of shape {c.shape}")
    if f.shape[0] and (c.min() < 1 or (f.shape[0] > 1 and not (f[1:] > f[:-1]).all())):
        raise InputError("terms must be distinct and sorted, each counted at least once")
    return f, c


def story_vector(
    terms: U64,
    counts: npt.ArrayLike,
    config: StoryVectorConfig | None = None,
    idf: IdfWeights | None = None,
) -> StoryVector:
    """The story vector of the content ``terms`` (sorted distinct hashes, e.g.
    :attr:`neardup.rule.Profile.terms`) counted ``counts`` times (module docs); ``idf``
    ``None`` weighs every term 1.  ``InputError`` for unsorted or uncounted terms."""
    cfg = config or StoryVectorConfig()
    feats, c = _checked(terms, np.asarray(counts))
    if feats.shape[0] == 0:
        return _empty(cfg)
    weights = tf_weights(c) * (idf.weights_of(feats) if idf is not None else np.int64(IDF_SCALE))
    from neardup.sketch import _story_kernels

    totals = _story_kernels.project(feats, weights, cfg.projection_keys())
    words, values = _story_kernels.finish(totals, weights)
    words.flags.writeable = False
    values.flags.writeable = False
    return StoryVector(cfg.scheme_id, values, words, int(feats.shape[0]))


def story_vector_reference(
    terms: U64,
    counts: npt.ArrayLike,
    config: StoryVectorConfig | None = None,
    idf: IdfWeights | None = None,
) -> StoryVector:
    """:func:`story_vector` in plain numpy (the compiled projection is tested equal to it)."""
    cfg = config or StoryVectorConfig()
    feats, c = _checked(terms, np.asarray(counts))
    if feats.shape[0] == 0:
        return _empty(cfg)
    weights = tf_weights(c) * (idf.weights_of(feats) if idf is not None else np.int64(IDF_SCALE))
    words = mix64(feats[:, None] ^ cfg.projection_keys()[None, :])  # (n, words)
    planes = np.unpackbits(
        words.astype("<u8").view(np.uint8).reshape(feats.shape[0], -1), axis=1, bitorder="little"
    ).astype(np.int64)
    totals = weights @ (planes * 2 - 1)
    packed = np.packbits(totals > 0, bitorder="little").view("<u8").astype(np.uint64)
    norm = math.sqrt(float(np.dot(weights.astype(np.float64), weights.astype(np.float64))))
    values = (totals.astype(np.float64) / norm).astype(np.float32)
    return StoryVector(cfg.scheme_id, values, packed, int(feats.shape[0]))


def _empty(cfg: StoryVectorConfig) -> StoryVector:
    values = np.zeros(cfg.bits, dtype=np.float32)
    fp = np.zeros(cfg.words, dtype=np.uint64)
    values.flags.writeable = False
    fp.flags.writeable = False
    return StoryVector(cfg.scheme_id, values, fp, 0)


def hamming_cosine(distance: int | npt.NDArray[np.int64], bits: int) -> Any:
    """The cosine the Hamming ``distance`` of two story SimHashes estimates:
    ``cos(pi * d / bits)`` (Charikar 2002)."""
    return np.cos(np.pi * np.asarray(distance, dtype=np.float64) / bits)


def asymmetric_cosine(values: npt.NDArray[np.float32], fingerprint: U64) -> float:
    """The cosine estimated from one side's real vector and the other side's SimHash bits:
    ``sqrt(pi / 2) * mean_j(values_j * s_j)`` (module docs, step 4)."""
    bits = np.unpackbits(
        np.asarray(fingerprint, dtype=np.uint64).astype("<u8").view(np.uint8), bitorder="little"
    )
    signs = bits.astype(np.float64) * 2.0 - 1.0
    v = np.asarray(values, dtype=np.float64)
    if signs.shape != v.shape:
        raise ConfigError(f"vector of {v.shape[0]} components vs {signs.shape[0]} bits")
    return float(_SQRT_HALF_PI * np.dot(v, signs) / v.shape[0])
