"""Story vectors: what an article is *about*, as a fixed-length vector and its SimHash.

The copy fingerprints (:mod:`neardup.sketch.simhash`, MinHash, sentence sketches) place an
article near its *copies*.  Two reports of the same event written independently share few
sentences but many of the same rare words (names, places, the event's own vocabulary).  Seed
003 ("General Simhash-based Framework for News Aggregators", MECS 2017) builds its SimHash on
such a feature vector -- the TF-IDF vector an aggregator already has -- rather than on the
text's shingles; this module is that vector.

Method:

1. **Page junk** (scraped news: photo captions printed twice, credit lines, "RELATED
   STORIES", "SIGN UP", menus).  The text is split into paragraphs at blank lines; a
   paragraph repeated verbatim counts once, and paragraphs shorter than
   ``min_paragraph_words`` words are left out (credits, menus and widget labels are short;
   running prose is not) unless nothing else is left.
   Typographic punctuation (curly quotes, dashes, no-break spaces) is written in ASCII
   first, which changes no word and lets most English news take the compiled tokenizer.
2. **Features**: the text stage's word forms (stemmed, stop words dropped, numbers kept),
   optionally also word bigrams (``bigram_weight``), each a 64-bit hash
   (:mod:`neardup.shingles`).
3. **Weights**: ``w(f) = (1 + ln tf(f)) * idf(f)`` (sublinear TF; Salton & Buckley 1988),
   with ``idf`` from any object with ``weights_of(features)`` -- a frozen
   :class:`~neardup.sketch.idf.IdfTable` or the document frequencies the story index
   maintains as articles arrive (:class:`neardup.index.story.DocumentFrequencies`; the
   incremental IDF of on-line event detection, Allan, Papka & Lavrenko, SIGIR 1998).
   Weights are integers (TF and IDF each scaled by 1024), so sums are exact.
4. **Projection** (Charikar 2002, sign random projections): component ``j`` of the story
   vector is ``sum_f w(f) * r_j(f) / ||w||`` with ``r_j(f) = +1`` or ``-1`` given by bit
   ``j mod 64`` of ``splitmix64(f xor K_{j div 64})``: a seeded, data-independent random
   projection of the (unbounded) TF-IDF vector to ``bits`` dimensions.  Each component is
   then close to a standard normal variable, and ``dot(u, v) / bits`` estimates the cosine
   of the two TF-IDF vectors (Johnson-Lindenstrauss).
5. **Story SimHash**: bit ``j`` is 1 when component ``j`` is positive (computed on the exact
   integer sums).  The Hamming distance ``d`` of two story SimHashes estimates the angle of
   the two TF-IDF vectors, ``theta ~ pi * d / bits`` (Charikar 2002).  Given the real vector
   of one side and only the bits of the other, ``sqrt(pi / 2) * mean_j(u_j * s_j)``
   (``s_j = +-1``) estimates the cosine with a lower variance than the Hamming distance
   (asymmetric estimation, Dong, Charikar & Li, SIGIR 2008): the story index ranks with it.

Byte layout of the signature (scheme ``story``): ``bits / 64`` little-endian uint64 words;
word ``k`` holds components ``64k .. 64k + 63``, component ``64k + j`` in bit ``j`` (LSB = 0).

Guarantees: pure and deterministic -- the same text, config and IDF weights give the same
fingerprint bytes on every machine (exact integer arithmetic; the real vector is float32 and
only ranks).  A text without features (empty, punctuation only) gives the *empty* story
vector (``is_empty``), which indexes and detectors skip.  Time is linear in the text length.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from neardup.config import Config, check_choice, check_int, check_range
from neardup.errors import ConfigError
from neardup.shingles import U64, mix64, token_hashes, word_shingles
from neardup.sketch.base import Signature
from neardup.sketch.idf import IDF_SCALE
from neardup.text import TextConfig, ensure_text

__all__ = [
    "TF_SCALE",
    "IdfWeights",
    "StoryVector",
    "StoryVectorConfig",
    "ascii_punctuation",
    "asymmetric_cosine",
    "hamming_cosine",
    "sign_story",
    "story_features",
    "story_paragraphs",
    "story_vector",
    "story_vector_of_features",
    "story_vector_reference",
]

#: Scale of the integer sublinear TF weight ``round((1 + ln tf) * TF_SCALE)``.
TF_SCALE = 1024
_BLANK_LINE = re.compile(r"\n[ \t\r\f\v]*\n")
_PUNCTUATION = (
    ("\u2019", "'"),
    ("\u2018", "'"),
    ("\u201c", '"'),
    ("\u201d", '"'),
    ("\u00a0", " "),
    ("\u2014", "-"),
    ("\u2013", "-"),
    ("\u2015", "-"),
    ("\u2022", "*"),
    ("\u2026", "..."),
    ("\u200b", ""),
    ("\u00ad", ""),
)
# Seeds of the projection words: K_k = splitmix64(seed * 4 + k + _PROJECTION_TAG).
_PROJECTION_TAG = 0x53544F5259_5345  # "STORYSE"
# A bigram is tagged so that it never coincides with the hash of a single word.
_BIGRAM_TAG = np.uint64(0x5354_4F52_5932_4752)  # "STORY2GR"
_SQRT_HALF_PI = math.sqrt(math.pi / 2.0)


class IdfWeights(Protocol):
    """Anything that gives integer IDF weights (scaled by ``IDF_SCALE``) to feature hashes."""

    def weights_of(self, features: U64) -> npt.NDArray[np.int64]: ...


def _default_text() -> TextConfig:
    return TextConfig(drop_stop_words=True)


@dataclasses.dataclass(frozen=True)
class StoryVectorConfig(Config):
    """Parameters of the story vector.

    * ``bits``: dimension of the vector and width of its SimHash (64, 128 or 256).
    * ``seed``: seed of the random projection (vectors of different seeds are unrelated).
    * ``text``: the text stage (stemmed words, stop words dropped).
    * ``bigram_weight``: weight of word-bigram features relative to words (0: words only).
    * ``min_paragraph_words``: paragraphs (split at blank lines) with fewer words are page
      furniture and left out, unless no paragraph has that many (0: keep all).
    """

    SCHEME = "story"

    bits: int = 256
    seed: int = 0
    text: TextConfig = dataclasses.field(default_factory=_default_text)
    bigram_weight: float = 0.0
    min_paragraph_words: int = 10

    def __post_init__(self) -> None:
        check_choice("bits", self.bits, (64, 128, 256))
        check_int("seed", self.seed, low=0, high=(1 << 32) - 1)
        if not isinstance(self.text, TextConfig):
            raise ConfigError(f"text must be a TextConfig, got {type(self.text).__name__}")
        check_range("bigram_weight", self.bigram_weight, low=0.0, high=16.0)
        check_int("min_paragraph_words", self.min_paragraph_words, low=0, high=1000)

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
        """True for a text without features (nothing to index or compare)."""
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


def story_paragraphs(text: str, min_words: int) -> list[str]:
    """The paragraphs of ``text`` the story vector reads (module docs, step 1), in order."""
    seen: set[str] = set()
    distinct: list[str] = []
    for raw in _BLANK_LINE.split(text):
        para = raw.strip()
        if para and para not in seen:
            seen.add(para)
            distinct.append(para)
    if min_words <= 0:
        return distinct
    long = [p for p in distinct if len(p.split(None, min_words - 1)) >= min_words]
    return long if long else distinct


def ascii_punctuation(text: str) -> str:
    """``text`` with typographic quotes, dashes, ellipses and invisible spaces written in
    ASCII (``’`` -> ``'``, ``“`` -> ``"``, ``—`` -> ``-``, no-break space -> space, ...), so
    that most English news takes the compiled ASCII tokenizer; letters are left as they are."""
    if text.isascii():
        return text
    for typographic, plain in _PUNCTUATION:
        if typographic in text:
            text = text.replace(typographic, plain)
    return text


def story_features(text: str, config: StoryVectorConfig) -> tuple[U64, npt.NDArray[np.int64]]:
    """Distinct feature hashes of ``text`` (sorted) and their integer TF weights
    ``round((1 + ln tf) * TF_SCALE)`` (bigrams further scaled by ``bigram_weight``)."""
    text = ascii_punctuation(ensure_text(text))
    if "\n" in text:
        text = "\n\n".join(story_paragraphs(text, config.min_paragraph_words))
    words = token_hashes(text, config.text)
    feats, counts = np.unique(words, return_counts=True)
    weights = _tf_weights(counts)
    if config.bigram_weight > 0.0 and words.shape[0] > 1:
        pairs = word_shingles(words, 2) ^ _BIGRAM_TAG
        bf, bc = np.unique(pairs, return_counts=True)
        bw = np.rint(_tf_weights(bc) * config.bigram_weight).astype(np.int64)
        feats = np.concatenate([feats, bf])
        weights = np.concatenate([weights, bw])
        order = np.argsort(feats, kind="stable")
        feats, weights = feats[order], weights[order]
    return feats, weights


def _tf_weights(counts: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    return np.rint((1.0 + np.log(counts.astype(np.float64))) * TF_SCALE).astype(np.int64)


def story_vector(
    text: str, config: StoryVectorConfig | None = None, idf: IdfWeights | None = None
) -> StoryVector:
    """The story vector of ``text`` (module docs); ``idf`` ``None`` weighs every feature 1."""
    cfg = config or StoryVectorConfig()
    feats, tf = story_features(text, cfg)
    return story_vector_of_features(feats, tf, cfg, idf)


def story_vector_of_features(
    features: U64,
    tf_weights: npt.NDArray[np.int64],
    config: StoryVectorConfig,
    idf: IdfWeights | None = None,
) -> StoryVector:
    """The story vector of :func:`story_features`' output (for callers that also count the
    features, e.g. into maintained document frequencies)."""
    if features.shape[0] == 0:
        return _empty(config)
    weights = tf_weights * (idf.weights_of(features) if idf is not None else np.int64(IDF_SCALE))
    from neardup.sketch import _story_kernels

    totals = _story_kernels.project(features, weights, config.projection_keys())
    words, values = _story_kernels.finish(totals, weights)
    words.flags.writeable = False
    values.flags.writeable = False
    return StoryVector(config.scheme_id, values, words, int(features.shape[0]))


def story_vector_reference(
    text: str, config: StoryVectorConfig | None = None, idf: IdfWeights | None = None
) -> StoryVector:
    """:func:`story_vector` in plain numpy (the compiled projection is tested equal to it)."""
    cfg = config or StoryVectorConfig()
    feats, tf = story_features(text, cfg)
    if feats.shape[0] == 0:
        return _empty(cfg)
    weights = tf * (idf.weights_of(feats) if idf is not None else np.int64(IDF_SCALE))
    words = mix64(feats[:, None] ^ cfg.projection_keys()[None, :])  # (n, words)
    planes = np.unpackbits(
        words.astype("<u8").view(np.uint8).reshape(feats.shape[0], -1), axis=1, bitorder="little"
    ).astype(np.int64)
    totals = weights @ (planes * 2 - 1)
    return _finish(cfg, totals, weights, feats.shape[0])


def _finish(
    cfg: StoryVectorConfig, totals: npt.NDArray[np.int64], weights: npt.NDArray[np.int64], n: int
) -> StoryVector:
    packed = np.packbits(totals > 0, bitorder="little").view("<u8").astype(np.uint64)
    norm = math.sqrt(float(np.dot(weights.astype(np.float64), weights.astype(np.float64))))
    values = (totals.astype(np.float64) / norm).astype(np.float32)
    values.flags.writeable = False
    packed.flags.writeable = False
    return StoryVector(cfg.scheme_id, values, packed, int(n))


def _empty(cfg: StoryVectorConfig) -> StoryVector:
    values = np.zeros(cfg.bits, dtype=np.float32)
    fp = np.zeros(cfg.words, dtype=np.uint64)
    values.flags.writeable = False
    fp.flags.writeable = False
    return StoryVector(cfg.scheme_id, values, fp, 0)


def sign_story(text: str, config: StoryVectorConfig | None = None, **params: Any) -> Signature:
    """The story SimHash of ``text`` as a :class:`Signature` (uniform IDF; pass ``idf=``)."""
    idf = params.pop("idf", None)
    if params:
        raise ConfigError(f"unknown parameters {sorted(params)}")
    return story_vector(text, config, idf).signature()


def hamming_cosine(distance: int | npt.NDArray[np.int64], bits: int) -> Any:
    """The cosine the Hamming ``distance`` of two story SimHashes estimates:
    ``cos(pi * d / bits)`` (Charikar 2002)."""
    return np.cos(np.pi * np.asarray(distance, dtype=np.float64) / bits)


def asymmetric_cosine(values: npt.NDArray[np.float32], fingerprint: U64) -> float:
    """The cosine estimated from one side's real vector and the other side's SimHash bits:
    ``sqrt(pi / 2) * mean_j(values_j * s_j)`` (module docs, step 5)."""
    bits = np.unpackbits(
        np.asarray(fingerprint, dtype=np.uint64).astype("<u8").view(np.uint8), bitorder="little"
    )
    signs = bits.astype(np.float64) * 2.0 - 1.0
    v = np.asarray(values, dtype=np.float64)
    if signs.shape != v.shape:
        raise ConfigError(f"vector of {v.shape[0]} components vs {signs.shape[0]} bits")
    return float(_SQRT_HALF_PI * np.dot(v, signs) / v.shape[0])
