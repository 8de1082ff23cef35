"""Exact shingle sets: sorted distinct 64-bit hashes of a text's shingles (seed 002).

Two schemes, both returning a ``uint64`` :class:`~neardup.sketch.base.Signature` whose values
are sorted ascending and distinct, so exact Jaccard and containment are a sorted merge
(``np.intersect1d``) away:

* ``"shingles"`` (:class:`ShingleSetConfig`): word w-shingles (Broder 1997), every window of
  ``width`` consecutive normalised tokens.
* ``"spotsigs"`` (:class:`SpotSigsConfig`): spot signatures anchored at stop words (Theobald,
  Siddharth, Paepcke, "SpotSigs: robust and efficient near duplicate detection in large web
  collections", SIGIR 2008), which favour running prose over boilerplate.

These sets are what exact verification uses; MinHash (:mod:`neardup.sketch.minhash`) samples
them.  Guarantees: exact (no sampling), deterministic (see :mod:`neardup.shingles`), memory
linear in the text.  A text shorter than ``width`` tokens gives one shingle of all its tokens;
a text with no token (or, for SpotSigs, no antecedent followed by a content word) gives the
empty signature, which is a duplicate only of another empty one.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from neardup._kernels import distinct, sorted_distinct
from neardup.config import Config, check_int
from neardup.errors import ConfigError
from neardup.shingles import (
    SPOTSIGS_ANTECEDENTS,
    SPOTSIGS_CHAIN_LENGTH,
    SPOTSIGS_SPOT_DISTANCE,
    U64,
    hash_set,
    spot_signatures,
    token_hashes,
    word_shingles,
)
from neardup.sketch.base import Signature
from neardup.text import ENGLISH_STOP_WORDS, TextConfig, ensure_text, forms_of_raw_token

__all__ = [
    "DEFAULT_WIDTH",
    "ShingleSetConfig",
    "SpotSigsConfig",
    "shingle_hashes",
    "sign_shingles",
    "sign_spotsigs",
    "spotsig_hashes",
]

# Width 4 (Broder et al.'s choice for near-duplicate web pages): narrower shingles keep more
# similarity under edits but raise the similarity of unrelated articles, wider ones the
# reverse; 4 sits in the middle of that trade-off (measured in docs/signatures.md,
# benchmarks/bench_shingle_params.py).
DEFAULT_WIDTH = 4

# Token hashes of every scheme use this seed; it is part of the bytes, so changing it is a
# scheme VERSION bump.
TOKEN_SEED = 0


def _check_text(value: Any) -> None:
    if not isinstance(value, TextConfig):
        raise ConfigError(f"text must be a TextConfig, got {type(value).__name__}")


@dataclasses.dataclass(frozen=True)
class ShingleSetConfig(Config):
    """Word w-shingles: ``width`` consecutive tokens of the text stage ``text``."""

    SCHEME = "shingles"

    width: int = DEFAULT_WIDTH
    text: TextConfig = dataclasses.field(default_factory=TextConfig)

    def __post_init__(self) -> None:
        check_int("width", self.width, low=1, high=64)
        _check_text(self.text)


def _normalised_words(words: frozenset[str], text: TextConfig) -> frozenset[str]:
    """``words`` passed through the text stage (so "Does" matches the stem "doe")."""
    plain = dataclasses.replace(text, drop_stop_words=False, min_token_length=1)
    out: set[str] = set()
    for word in words:
        out.update(forms_of_raw_token(word, plain) if word else ())
    return frozenset(out)


@dataclasses.dataclass(frozen=True)
class SpotSigsConfig(Config):
    """Spot signatures (SpotSigs, SIGIR 2008).

    ``antecedents`` are the anchor words; ``stop_words`` (``None``: the English list of the
    text stage) are skipped when the chain is built; ``spot_distance`` and ``chain_length``
    as in the paper.  Defaults: the reference implementation's English antecedents and spot
    distance 1, chain length 2 as in the paper's worked example.  The text stage must keep
    stop words (``text.drop_stop_words`` is refused), since they are the anchors.
    """

    SCHEME = "spotsigs"

    antecedents: frozenset[str] = SPOTSIGS_ANTECEDENTS
    spot_distance: int = SPOTSIGS_SPOT_DISTANCE
    chain_length: int = SPOTSIGS_CHAIN_LENGTH
    stop_words: frozenset[str] | None = None
    text: TextConfig = dataclasses.field(default_factory=TextConfig)

    def __post_init__(self) -> None:
        check_int("spot_distance", self.spot_distance, low=1, high=64)
        check_int("chain_length", self.chain_length, low=1, high=16)
        _check_text(self.text)
        if self.text.drop_stop_words:
            raise ConfigError("spotsigs needs stop words: use a text config that keeps them")
        for name in ("antecedents", "stop_words"):
            value = getattr(self, name)
            if value is None:
                continue
            if isinstance(value, str) or not all(isinstance(w, str) for w in value):
                raise ConfigError(f"{name} must be a set of strings")
            object.__setattr__(self, name, frozenset(value))
        if not self.antecedents:
            raise ConfigError("antecedents must not be empty")

    @property
    def antecedent_hashes(self) -> U64:
        """Sorted hashes of the normalised antecedents."""
        cached: U64 | None = self.__dict__.get("_antecedent_hashes")
        if cached is None:
            cached = hash_set(_normalised_words(self.antecedents, self.text), TOKEN_SEED)
            self.__dict__["_antecedent_hashes"] = cached
        return cached

    @property
    def stop_hashes(self) -> U64:
        """Sorted hashes of the normalised stop words (antecedents are stop words too)."""
        cached: U64 | None = self.__dict__.get("_stop_hashes")
        if cached is None:
            words = ENGLISH_STOP_WORDS if self.stop_words is None else self.stop_words
            normalised = _normalised_words(words | self.antecedents, self.text)
            cached = hash_set(normalised, TOKEN_SEED)
            self.__dict__["_stop_hashes"] = cached
        return cached


def shingle_hashes(text: str, config: ShingleSetConfig | None = None) -> U64:
    """Sorted distinct hashes of the word ``width``-shingles of ``text`` (uint64)."""
    cfg = config or ShingleSetConfig()
    tokens = token_hashes(ensure_text(text), cfg.text, TOKEN_SEED)
    shingles = word_shingles(tokens, cfg.width)
    return sorted_distinct(shingles)


def spotsig_hashes(text: str, config: SpotSigsConfig | None = None) -> U64:
    """Sorted distinct hashes of the spot signatures of ``text`` (uint64)."""
    cfg = config or SpotSigsConfig()
    tokens = token_hashes(ensure_text(text), cfg.text, TOKEN_SEED)
    sigs = spot_signatures(
        tokens, cfg.antecedent_hashes, cfg.stop_hashes, cfg.spot_distance, cfg.chain_length
    )
    return distinct(sigs)


def sign_shingles(text: str, config: ShingleSetConfig | None = None) -> Signature:
    """The exact w-shingle set of ``text`` as a signature."""
    cfg = config or ShingleSetConfig()
    values = shingle_hashes(text, cfg)
    values.flags.writeable = False  # a fresh array: the signature keeps it without a copy
    return Signature(cfg.scheme_id, values)


def sign_spotsigs(text: str, config: SpotSigsConfig | None = None) -> Signature:
    """The exact spot-signature set of ``text`` as a signature."""
    cfg = config or SpotSigsConfig()
    return Signature(cfg.scheme_id, spotsig_hashes(text, cfg))
