"""SimHash over TF-IDF-weighted features (Charikar 2002; seed 003, MECS 2017).

Each distinct feature ``f`` of the text (a word, or a word w-shingle when ``width`` > 1) has a
64-bit hash ``h(f)`` (for 128 bits, a second word ``splitmix64(h(f) ^ C)``) and an integer
weight ``w(f) = tf(f) * idf(f)``.  Bit ``j`` of the fingerprint is 1 when
``sum_f w(f) * (+1 if bit j of h(f) else -1) > 0`` (ties give 0).  Similar texts get
fingerprints at small Hamming distance; seed 003 dedups at distance <= 3 and calls
3 < d < 8 "similar news".

Weights: ``idf`` comes from an :class:`~neardup.sketch.idf.IdfTable` built from a corpus; its
digest is part of the scheme id, so fingerprints made with different tables are never
compared.  With no table every feature has idf 1 (plain term frequency); the text stage then
drops stop words by default, which plain TF would otherwise let dominate.

Signature: one uint64 (64 bits) or two (128 bits, high word first); bit ``j`` of the
fingerprint is bit ``j`` of the integer (LSB = bit 0).  A text without features gives the
empty signature: distance 0 to another empty one and ``bits`` (the maximum) to any other.
Guarantees: exact integer arithmetic, so the same bytes on every machine; O(n) time.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import numpy as np
import numpy.typing as npt
import xxhash

from neardup._jit import compiled_worthwhile
from neardup.config import Config, canonical_json, check_choice, check_int
from neardup.errors import ConfigError
from neardup.shingles import U64, mix64
from neardup.sketch.base import Signature, require_same_scheme
from neardup.sketch.idf import IDF_SCALE, IdfTable, feature_hashes
from neardup.text import TextConfig

__all__ = ["SimHashConfig", "hamming_distance", "sign_simhash", "simhash_words"]

_SECOND_WORD = np.uint64(0x5349_4D48_4153_4832)  # "SIMHASH2": derives the high 64 bits


def _default_text() -> TextConfig:
    return TextConfig(drop_stop_words=True)


@dataclasses.dataclass(frozen=True)
class SimHashConfig(Config):
    """SimHash parameters: ``bits`` (64 or 128), features = word ``width``-shingles of the
    text stage ``text``, weights from ``idf`` (``None``: uniform, i.e. plain TF).

    An ``idf`` table must have been built with the same ``text`` and ``width``.
    """

    SCHEME = "simhash"

    bits: int = 64
    width: int = 1
    text: TextConfig = dataclasses.field(default_factory=_default_text)
    idf: IdfTable | None = None

    def __post_init__(self) -> None:
        check_choice("bits", self.bits, (64, 128))
        check_int("width", self.width, low=1, high=64)
        if not isinstance(self.text, TextConfig):
            raise ConfigError(f"text must be a TextConfig, got {type(self.text).__name__}")
        if self.idf is not None:
            if not isinstance(self.idf, IdfTable):
                raise ConfigError(f"idf must be an IdfTable or None, got {type(self.idf).__name__}")
            if self.idf.text != self.text or self.idf.width != self.width:
                raise ConfigError(
                    "the IDF table was built with a different text config or width than this "
                    "SimHash config; build it with the same ones"
                )

    def to_dict(self) -> dict[str, Any]:
        """Parameters as plain values; the IDF table is named by its digest and size."""
        plain = super().to_dict()
        if self.idf is not None:
            plain["idf"] = {
                "digest": self.idf.digest,
                "features": len(self.idf),
                "docs": self.idf.num_docs,
            }
        return plain

    @functools.cached_property
    def scheme_id(self) -> str:
        """As :attr:`Config.scheme_id`, with the IDF table's content digest in the hash."""
        digest = xxhash.xxh64_hexdigest(canonical_json(self.to_dict()).encode("ascii"), seed=0)
        return f"{self.SCHEME}/v{self.VERSION}:{digest}"


def _bit_planes(hashes: U64) -> npt.NDArray[np.int64]:
    """``(n, 64)`` matrix of +1/-1: column j is bit j of each hash (LSB first)."""
    as_bytes = hashes.astype("<u8").view(np.uint8).reshape(-1, 8)
    bits = np.unpackbits(as_bytes, axis=1, bitorder="little").astype(np.int64)
    return bits * 2 - 1


def _fingerprint(hashes: U64, weights: npt.NDArray[np.int64]) -> np.uint64:
    totals = weights @ _bit_planes(hashes)
    packed = np.packbits(totals > 0, bitorder="little")
    return np.uint64(packed.view("<u8")[0])


def simhash_words(features: U64, weights: npt.NDArray[np.int64], bits: int = 64) -> U64:
    """The fingerprint of distinct ``features`` with integer ``weights``: 1 or 2 uint64 words.

    For 128 bits the result is ``[high, low]``: ``low`` from the feature hashes themselves,
    ``high`` from ``splitmix64(hash ^ C)``.  No features give an empty array.
    """
    check_choice("bits", bits, (64, 128))
    if features.shape[0] == 0:
        return np.empty(0, dtype=np.uint64)
    low = _fingerprint(features, weights)
    if bits == 64:
        return np.array([low], dtype=np.uint64)
    high = _fingerprint(mix64(features ^ _SECOND_WORD), weights)
    return np.array([high, low], dtype=np.uint64)


def sign_simhash(text: str, config: SimHashConfig | None = None) -> Signature:
    """The SimHash fingerprint of ``text`` (1 or 2 uint64 values, see module docs)."""
    cfg = config or SimHashConfig()
    hashes = feature_hashes(text, cfg.text, cfg.width)
    if (
        cfg.idf is None
        and cfg.bits == 64
        and hashes.shape[0]
        and compiled_worthwhile(20_000 + 100 * hashes.shape[0])
    ):
        # Uniform weights: the same integer arithmetic in one compiled pass (tested equal).
        from neardup import _kernels

        value = np.array([_kernels.simhash64(hashes, IDF_SCALE)], dtype=np.uint64)
        value.flags.writeable = False
        return Signature(cfg.scheme_id, value)
    features, tf = np.unique(hashes, return_counts=True)
    if cfg.idf is None:
        weights = tf.astype(np.int64) * IDF_SCALE
    else:
        weights = tf.astype(np.int64) * cfg.idf.weights_of(features)
    return Signature(cfg.scheme_id, simhash_words(features, weights, cfg.bits))


def hamming_distance(a: Signature, b: Signature) -> int:
    """Number of differing bits of two SimHash fingerprints of the same scheme.

    ``SchemeMismatchError`` across schemes.  Two empty signatures are at distance 0; an
    empty and a non-empty one at the maximum (64 or 128 bits).
    """
    require_same_scheme(a, b)
    if len(a) == 0 or len(b) == 0:
        return 0 if len(a) == len(b) else 64 * max(len(a), len(b))
    if len(a) != len(b):
        raise ConfigError(f"SimHash signatures of different lengths: {len(a)} vs {len(b)}")
    return int(np.bitwise_count(np.bitwise_xor(a.values, b.values)).sum())
