"""The ``"coverage"`` signature scheme: the near-duplicate rule's judgement from two small
sketches, for realtime result-set dedup.

``neardup.sign(text)`` (the default scheme) reads the text as the rule does
(:func:`neardup.rule.profile`: word shingles, page furniture) and keeps a coverage sketch
(:mod:`neardup.sketch.coverage`): a coordinated sample of about ``sample_size`` of its word
occurrences, each with fingerprints of the shingles covering it.  Two sketches give the
rule's two coverages (the share of each text's prose found in the other) as estimates
(:func:`estimate`), and :func:`is_duplicate` applies the rule's own arithmetic to them
(:func:`neardup.rule.clauses_of` and :func:`neardup.rule.label_of`).

What is approximated, and what is not:

* *found* is exact for each sampled token (up to a 16-bit fingerprint collision among the
  shingles of one word, below 0.1 % per token for most words); the coverages are estimated
  from the sample, so the verdict equals ``judge()``'s up to that sampling error, which is
  largest when a coverage is close to a threshold (figures in docs/resultset.md);
* the sketch decides *duplicate or not*: the longest shared passage and the content-word
  cosine of the rule (its ``partial`` and ``similar`` verdicts) are not estimated.

Defaults (``sample_size=64``, ``max_word_count=15``) were chosen on one half of the
read-labelled real pairs and the project's synthetic benchmark and reported on the other
half and on a synthetic benchmark built from other articles
(``benchmarks/bench_resultset_quality.py``, docs/resultset.md): agreement with ``judge()``
rises with the sample, and so do the bytes and the time; a low word cap biases the estimate
on text with many repeated words.

Guarantees: pure and deterministic (the same text and parameters give the same bytes on
every machine); the sketch of a text has at most
``6 + 2 * (2 * sample_size + max_word_count) + width * (sample_size + max_word_count)``
32-bit words whatever its length.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import NamedTuple

import numpy as np

from neardup.config import Config, check_int
from neardup.errors import ConfigError, SchemeMismatchError, SignatureFormatError
from neardup.rule import RuleConfig, clauses_of, label_of, profile
from neardup.shingles import token_hashes

# `sign` is re-exported: ``neardup.sign`` is loaded from here, so the default scheme is
# registered (below) before anyone signs.
from neardup.sketch import Scheme, register_scheme, sign
from neardup.sketch import coverage as _sketch
from neardup.sketch.base import Signature, require_same_scheme
from neardup.sketch.shingleset import TOKEN_SEED
from neardup.text import ensure_text

__all__ = [
    "CoverageEstimate",
    "CoverageSketchConfig",
    "duplicate_bounds",
    "estimate",
    "is_duplicate",
    "scheme_for",
    "sign",
    "sign_coverage",
]


@dataclasses.dataclass(frozen=True)
class CoverageSketchConfig(Config):
    """Parameters of the coverage sketch.

    * ``sample_size``: word occurrences sampled (64: the estimates' error and the
      result-set latency both measured in docs/resultset.md, "How to choose");
    * ``max_word_count``: a word occurring more often than this in a text is not sampled
      there (15, at most 15), which bounds the sketch of a long text;
    * ``rule``: the near-duplicate rule whose profile the sketch samples (its width, page
      furniture and text stage; its thresholds are applied when sketches are compared, so
      they do not change the bytes or the scheme id).
    """

    SCHEME = "coverage"

    sample_size: int = 64
    max_word_count: int = 15
    rule: RuleConfig = dataclasses.field(default_factory=RuleConfig)

    def __post_init__(self) -> None:
        check_int("sample_size", self.sample_size, low=1, high=_sketch.MAX_SAMPLE_SIZE)
        check_int("max_word_count", self.max_word_count, low=1, high=_sketch.MAX_WORD_COUNT)
        if not isinstance(self.rule, RuleConfig):
            raise ConfigError(f"rule must be a RuleConfig, got {type(self.rule).__name__}")

    @functools.cached_property
    def scheme_id(self) -> str:
        """Depends on the sample parameters and the rule's *profile* only (not thresholds)."""
        return scheme_for(self.sample_size, self.max_word_count, self.rule.profile_id)


@dataclasses.dataclass(frozen=True)
class _SchemeFields(Config):
    """What a coverage sketch's bytes depend on."""

    SCHEME = "coverage"

    sample_size: int
    max_word_count: int
    profile: str


@functools.lru_cache(maxsize=64)
def scheme_for(sample_size: int, max_word_count: int, profile_id: str) -> str:
    """The scheme id of coverage sketches with these parameters over this rule profile."""
    return _SchemeFields(sample_size, max_word_count, profile_id).scheme_id


def sign_coverage(text: str, config: CoverageSketchConfig | None = None) -> Signature:
    """The coverage sketch of ``text`` (``neardup.sign(text, "coverage", ...)``)."""
    cfg = config or CoverageSketchConfig()
    text = ensure_text(text)
    prof = profile(text, cfg.rule)
    # The profile keeps shingles, not the words: the word hashes are made again, by the
    # same tokenizer and seed (token_hashes equals hash_forms(tokenize(text).forms)).
    words = token_hashes(text, cfg.rule.text, TOKEN_SEED)
    values = _sketch.sketch_values(
        words,
        prof.shingles,
        prof.flags,
        width=cfg.rule.width,
        sample_size=cfg.sample_size,
        max_word_count=cfg.max_word_count,
    )
    values.flags.writeable = False
    return Signature(cfg.scheme_id, values)


register_scheme("coverage", Scheme(CoverageSketchConfig, sign_coverage))


class CoverageEstimate(NamedTuple):
    """The rule's coverages estimated from two sketches: ``found_a`` of ``eligible_a``
    sampled prose tokens of A are found in B, and the same of B in A."""

    found_a: int
    eligible_a: int
    found_b: int
    eligible_b: int

    @property
    def coverage_a(self) -> float:
        """Estimated share of A's prose found in B (0 when nothing of A was sampled)."""
        return self.found_a / self.eligible_a if self.eligible_a else 0.0

    @property
    def coverage_b(self) -> float:
        """Estimated share of B's prose found in A."""
        return self.found_b / self.eligible_b if self.eligible_b else 0.0


def estimate(a: Signature, b: Signature) -> CoverageEstimate:
    """The coverages of two coverage sketches (``SchemeMismatchError`` across schemes,
    ``SignatureFormatError`` for values that are not a coverage sketch)."""
    require_same_scheme(a, b)
    if a.scheme != "coverage":
        raise SchemeMismatchError(f"{a.scheme_id} is not a coverage sketch")
    for s in (a, b):
        error = _sketch.layout_error(s.values)  # checked before the kernel reads it
        if error is not None:
            raise SignatureFormatError(f"not a coverage sketch: {error}")
    if (int(a.values[0]) >> 16) != (int(b.values[0]) >> 16):
        # One scheme id, two shingle widths: crafted; fingerprints of different widths
        # never match, so the counts would be meaningless.
        raise SignatureFormatError("coverage sketches of different shingle widths")
    values = np.concatenate((a.values, b.values))
    fa, ea, fb, eb = _sketch.pair_counts(values, 0, len(a))
    return CoverageEstimate(int(fa), int(ea), int(fb), int(eb))


def is_duplicate(coverage_a: float, coverage_b: float, rule: RuleConfig) -> bool:
    """The rule's duplicate verdict on (estimated) coverages, by the rule's own clauses.

    Only the two coverage clauses decide ``duplicate``; the passage and cosine, which the
    sketch does not estimate, are given as 0 (they only separate the other verdicts).
    """
    return label_of(clauses_of(rule, coverage_a, coverage_b, 0, 0.0)) == "duplicate"


def duplicate_bounds(rule: RuleConfig) -> tuple[float, float]:
    """``(accept_at, reject_below)``: two bounds of the rule's duplicate verdict on the
    smaller of two coverages, for compiled early-outs.

    When the smaller coverage is at least ``accept_at``, both coverage clauses hold (the
    rule's ``duplicate_min_coverage_other`` never exceeds ``duplicate_min_coverage``); when
    it is below ``reject_below``, the ``coverage_other`` clause fails.  Between the two,
    :func:`is_duplicate` decides.  Property-tested against :func:`is_duplicate`.
    """
    return rule.duplicate_min_coverage, rule.duplicate_min_coverage_other
