"""A text's profile: what the near-duplicate judgement reads of it, computed once.

:func:`profile` turns a text into arrays the pair features (:mod:`neardup.rule.features`)
are computed from, so a stored article is profiled once and compared with many:

* ``shingles``: the hashes of its word ``width``-shingles in text order (duplicates kept),
  the same values :func:`neardup.sketch.shingleset.sign_shingles` makes a set of (so a
  profile's distinct shingles *are* its shingle signature, and MinHash / LSH can be computed
  from it);
* ``flags``: per token, whether it belongs to page furniture or stands in quotation marks
  (:mod:`neardup.rule.junk`);
* ``terms`` and ``term_counts``: the hashed content words of its prose (stop words, figures
  and one- or two-letter words left out), for the same-story cosine;
* ``starts`` / ``ends``: each token's character span, so shared passages can be shown as
  spans of the text (not kept by :meth:`Profile.to_bytes`: a stored profile is re-made from
  its text when an explanation is asked for).

Guarantees: pure and deterministic (explicit seeds and byte order; the same text and config
give the same bytes on every machine).  Linear in the text length.
"""

from __future__ import annotations

import dataclasses
import functools
import struct
from typing import Any

import numpy as np
import numpy.typing as npt

from neardup._kernels import distinct
from neardup.config import Config, check_int, check_range
from neardup.errors import ConfigError, SchemeMismatchError, SignatureFormatError
from neardup.rule.junk import token_flags
from neardup.shingles import hash_set, token_hashes_and_spans, word_shingles
from neardup.sketch.shingleset import TOKEN_SEED, ShingleSetConfig
from neardup.text import ENGLISH_STOP_WORDS, TextConfig, ensure_text

__all__ = ["Profile", "RuleConfig", "profile", "stored_layout"]

U64 = npt.NDArray[np.uint64]


@dataclasses.dataclass(frozen=True)
class RuleConfig(Config):
    """Parameters of the near-duplicate judgement (one config for every detector).

    Profile (what is read of each text):

    * ``width``: word shingle width (4: Broder et al.'s choice for near-duplicate web pages);
    * ``min_paragraph_tokens``: paragraphs shorter than this are page furniture (8);
    * ``text``: the text stage (stemmed, case-folded words; numbers kept).

    Verdict (:func:`neardup.rule.judge`), on each text's *prose* (its words outside page
    furniture):

    * ``duplicate``: at least ``duplicate_min_coverage`` of one text's prose is found in the
      other, and at least ``duplicate_min_coverage_other`` of the other's in it ("I have
      already read this article": a copy, possibly edited, updated or cut);
    * ``partial``: not a duplicate, but a passage of at least ``partial_min_passage`` words of
      prose in a row (words in quotation marks not counted) is found in both ("a few
      sentences of narrative in a row" copied);
    * ``similar``: neither, but the cosine of the two texts' content words is at least
      ``similar_min_cosine`` (the same story, written independently);
    * ``unrelated``: otherwise.

    The four thresholds were chosen on half of the labelled real pairs and reported on the
    other half and on other data sets (docs/evaluation.md, "How the defaults were chosen").
    """

    SCHEME = "rule"

    width: int = 4
    min_paragraph_tokens: int = 8
    duplicate_min_coverage: float = 0.5
    duplicate_min_coverage_other: float = 0.3
    partial_min_passage: int = 30
    similar_min_cosine: float = 0.2
    text: TextConfig = dataclasses.field(default_factory=TextConfig)

    def __post_init__(self) -> None:
        check_int("width", self.width, low=1, high=16)
        check_int("min_paragraph_tokens", self.min_paragraph_tokens, low=0, high=1000)
        check_range("duplicate_min_coverage", self.duplicate_min_coverage, low=0.0, high=1.0)
        check_range(
            "duplicate_min_coverage_other", self.duplicate_min_coverage_other, low=0.0, high=1.0
        )
        if self.duplicate_min_coverage_other > self.duplicate_min_coverage:
            raise ConfigError(
                "duplicate_min_coverage_other must not exceed duplicate_min_coverage "
                f"({self.duplicate_min_coverage_other} > {self.duplicate_min_coverage})"
            )
        check_int("partial_min_passage", self.partial_min_passage, low=1, high=1_000_000)
        check_range("similar_min_cosine", self.similar_min_cosine, low=0.0, high=1.0)
        if not isinstance(self.text, TextConfig):
            raise ConfigError(f"text must be a TextConfig, got {type(self.text).__name__}")
        if self.text.drop_stop_words or self.text.min_token_length > 1:
            raise ConfigError("the rule reads every word: use a text config that drops none")

    @functools.cached_property
    def profile_id(self) -> str:
        """The scheme id of the profiles this config makes (its profile fields only)."""
        return _ProfileScheme(self.width, self.min_paragraph_tokens, self.text).scheme_id

    @functools.cached_property
    def shingle_config(self) -> ShingleSetConfig:
        """The shingle signature scheme whose values a profile's distinct shingles are."""
        return ShingleSetConfig(width=self.width, text=self.text)


@dataclasses.dataclass(frozen=True)
class _ProfileScheme(Config):
    """The fields a profile's bytes depend on (thresholds do not)."""

    SCHEME = "profile"

    width: int
    min_paragraph_tokens: int
    text: TextConfig


@functools.lru_cache(maxsize=16)
def _stop_hashes(text: TextConfig) -> U64:
    from neardup.text import forms_of_raw_token

    plain = dataclasses.replace(text, drop_stop_words=False, min_token_length=1)
    forms = {f for w in ENGLISH_STOP_WORDS for f in forms_of_raw_token(w, plain)}
    return hash_set(forms, TOKEN_SEED)


_MAGIC = b"NDPF"
_FORMAT = 1
_HEAD = struct.Struct("<4sBH")  # magic, format, scheme id length
_SIZES = struct.Struct("<III")  # tokens, shingles, terms


def stored_layout(view: memoryview, scheme_id: str | None) -> tuple[str, int, int, int, int]:
    """``(scheme id, tokens, shingles, terms, offset of the shingles)`` of the bytes of
    :meth:`Profile.to_bytes` (little-endian shingles, then token flags, terms and term
    counts follow); ``SignatureFormatError`` when they are not a profile or their length
    is not the one the header gives, ``SchemeMismatchError`` when ``scheme_id`` is given
    and differs."""
    try:
        magic, version, sid_len = _HEAD.unpack_from(view, 0)
        if magic != _MAGIC or version != _FORMAT:
            raise SignatureFormatError("not a neardup text profile")
        at = _HEAD.size
        sid = bytes(view[at : at + sid_len]).decode("ascii")
        at += sid_len
        n, m, k = _SIZES.unpack_from(view, at)
    except (struct.error, UnicodeDecodeError, ValueError) as exc:
        raise SignatureFormatError(f"not a neardup text profile: {exc}") from exc
    at += _SIZES.size
    expected = at + 8 * m + n + 12 * k
    if len(view) != expected:
        raise SignatureFormatError(f"text profile of {len(view)} bytes, its header says {expected}")
    if scheme_id is not None and sid != scheme_id:
        raise SchemeMismatchError(f"a profile of scheme {sid} where {scheme_id} was expected")
    return sid, n, m, k, at


class Profile:
    """The profile of one text (see the module docstring); build it with :func:`profile`.

    Immutable by convention: its arrays are read-only.
    """

    def __init__(
        self,
        scheme_id: str,
        shingles: U64,
        flags: npt.NDArray[np.uint8],
        terms: U64,
        term_counts: npt.NDArray[np.uint32],
        starts: npt.NDArray[np.int64] | None = None,
        ends: npt.NDArray[np.int64] | None = None,
    ) -> None:
        self.scheme_id = scheme_id
        self.shingles = _frozen(shingles)
        self.flags = _frozen(flags)
        self.terms = _frozen(terms)
        self.term_counts = _frozen(term_counts)
        self.starts = None if starts is None else _frozen(starts)
        self.ends = None if ends is None else _frozen(ends)

    @property
    def tokens(self) -> int:
        """Number of tokens of the text."""
        return int(self.flags.shape[0])

    @functools.cached_property
    def shingle_set(self) -> U64:
        """Sorted distinct shingle hashes (the text's shingle signature values)."""
        return _frozen(distinct(self.shingles))

    @functools.cached_property
    def prose(self) -> int:
        """Number of prose tokens (not page furniture)."""
        return int(np.count_nonzero((self.flags & 1) == 0))

    @functools.cached_property
    def term_norm2(self) -> int:
        """Squared Euclidean norm of the content-word counts (an exact integer)."""
        c = self.term_counts.astype(np.int64)
        return int(np.dot(c, c))

    def to_bytes(self) -> bytes:
        """Compact little-endian bytes (offsets left out); :meth:`from_bytes` reads them."""
        sid = self.scheme_id.encode("ascii")
        return b"".join(
            (
                _HEAD.pack(_MAGIC, _FORMAT, len(sid)),
                sid,
                _SIZES.pack(self.tokens, self.shingles.shape[0], self.terms.shape[0]),
                self.shingles.astype("<u8").tobytes(),
                self.flags.tobytes(),
                self.terms.astype("<u8").tobytes(),
                self.term_counts.astype("<u4").tobytes(),
            )
        )

    @classmethod
    def from_bytes(cls, data: bytes, *, scheme_id: str | None = None) -> Profile:
        """Read :meth:`to_bytes`; ``SignatureFormatError`` for anything else and
        ``SchemeMismatchError`` when ``scheme_id`` is given and differs."""
        view = memoryview(data)
        sid, n, m, k, at = stored_layout(view, scheme_id)
        try:
            shingles = np.frombuffer(view, dtype="<u8", count=m, offset=at)
            at += 8 * m
            flags = np.frombuffer(view, dtype=np.uint8, count=n, offset=at)
            at += n
            terms = np.frombuffer(view, dtype="<u8", count=k, offset=at)
            at += 8 * k
            counts = np.frombuffer(view, dtype="<u4", count=k, offset=at)
        except ValueError as exc:
            raise SignatureFormatError(f"not a neardup text profile: {exc}") from exc
        return cls(
            sid,
            shingles.astype(np.uint64),
            flags.copy(),
            terms.astype(np.uint64),
            counts.astype(np.uint32),
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Profile):
            return NotImplemented
        return self.to_bytes() == other.to_bytes()

    def __hash__(self) -> int:
        return hash(self.to_bytes())

    def __repr__(self) -> str:
        return f"Profile({self.scheme_id!r}, tokens={self.tokens}, shingles={len(self.shingles)})"


def _frozen(a: npt.NDArray[Any]) -> npt.NDArray[Any]:
    a.flags.writeable = False
    return a


@functools.lru_cache(maxsize=1)
def default_rule_config() -> RuleConfig:
    """One shared default :class:`RuleConfig` (its scheme ids are computed once, not per call)."""
    return RuleConfig()


def profile(text: str, config: RuleConfig | None = None) -> Profile:
    """The :class:`Profile` of ``text`` under ``config`` (default :class:`RuleConfig`)."""
    cfg = config or default_rule_config()
    text = ensure_text(text)
    hashes, starts, ends = token_hashes_and_spans(text, cfg.text, TOKEN_SEED)
    flags = token_flags(text, starts, min_paragraph_tokens=cfg.min_paragraph_tokens)
    shingles = word_shingles(hashes, cfg.width)
    terms, counts = _content_terms(text, hashes, starts, ends, flags, cfg.text)
    return Profile(cfg.profile_id, shingles, flags, terms, counts, starts, ends)


def _content_terms(
    text: str,
    hashes: U64,
    starts: npt.NDArray[np.int64],
    ends: npt.NDArray[np.int64],
    flags: npt.NDArray[np.uint8],
    config: TextConfig,
) -> tuple[U64, npt.NDArray[np.uint32]]:
    """Distinct content words of the prose (furniture left out unless there is no prose)
    with their counts: no stop words, no figures (a token starting with a digit 0-9), at
    least three characters in the text."""
    if not hashes.shape[0]:
        return np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.uint32)
    keep = (ends - starts) >= 3
    if text.isascii():
        first = np.frombuffer(text.encode("ascii"), dtype=np.uint8)[starts]
    else:
        first = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype="<u4")[starts]
    keep &= (first < 48) | (first > 57)  # figures start with a digit 0-9
    stops = _stop_hashes(config)
    at = np.minimum(np.searchsorted(stops, hashes), stops.shape[0] - 1)
    keep &= stops[at] != hashes
    prose = (flags & 1) == 0
    if (keep & prose).any():
        keep &= prose
    values, counts = np.unique(hashes[keep], return_counts=True)
    return values.astype(np.uint64), counts.astype(np.uint32)
