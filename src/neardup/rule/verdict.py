"""The near-duplicate judgement: one verdict for a pair of texts, written once.

*Is B the same article as A, a partial copy of it, the same story written independently,
or unrelated?*  Every detector of neardup (the news stream, batch ``dedup`` and ``pairs``,
result-set dedup over texts, the service, the evaluation) asks this question through
:func:`judge`; the indexes only propose candidates, and the cheap screens the detectors use
are bounds of this rule (:mod:`neardup.rule.bounds`, property-tested against it).

The verdict, from the pair's :class:`~neardup.rule.features.Features` and the thresholds of
:class:`~neardup.rule.profile.RuleConfig` (the definitions follow the labelling guide of the
read-labelled real news, ``provenance_news_2018_dev/LABELING_GUIDE.md``):

==============  ==================================================================
``duplicate``   the larger coverage >= ``duplicate_min_coverage`` and the smaller
                >= ``duplicate_min_coverage_other``: one text is (nearly) all found in
                the other, which is mostly the same text (a copy, a write-thru, a cut)
``partial``     not a duplicate; a shared passage of >= ``partial_min_passage``
                words of narrative in a row (an excerpt, embedded paragraphs)
``similar``     neither; content-word cosine >= ``similar_min_cosine`` (the same
                story, independently written)
``unrelated``   otherwise
==============  ==================================================================

The verdict is symmetric in its two texts.  ``score`` ranks matches: the mean of the two
coverages for copies, the cosine otherwise.  ``clauses`` say which conditions held or failed
and by what margin; ``passages`` (with ``explain=True``) give the shared passages as
character spans of both texts.

Guarantees: exact for the stated features, deterministic, symmetric (``judge(a, b)`` and
``judge(b, a)`` give the same label and score).  Cost: one profile per text
(:func:`~neardup.rule.profile.profile`, linear) and one compiled pass per pair.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import numpy.typing as npt

from neardup.errors import ConfigError, InputTypeError
from neardup.rule.features import Features, Passage, pair_features, shared_passages
from neardup.rule.profile import Profile, RuleConfig, default_rule_config, profile

__all__ = [
    "VERDICTS",
    "Clause",
    "Verdict",
    "clauses_of",
    "decide",
    "decide_many",
    "judge",
    "label_of",
]

VERDICTS = ("duplicate", "partial", "similar", "unrelated")


@dataclasses.dataclass(frozen=True)
class Clause:
    """One condition of the rule: ``value >= threshold`` held or not, and by how much."""

    name: str
    value: float
    threshold: float

    @property
    def held(self) -> bool:
        """Whether the condition holds."""
        return self.value >= self.threshold

    @property
    def margin(self) -> float:
        """``value - threshold`` (positive: held)."""
        return self.value - self.threshold

    def to_dict(self) -> dict[str, Any]:
        """Plain values (rounded to 6 decimals)."""
        return {
            "name": self.name,
            "value": round(self.value, 6),
            "threshold": self.threshold,
            "held": self.held,
            "margin": round(self.margin, 6),
        }


@dataclasses.dataclass(frozen=True)
class Verdict:
    """The judgement of a pair (see the module docstring)."""

    label: str
    score: float
    features: Features
    clauses: tuple[Clause, ...]
    passages: tuple[Passage, ...] = ()

    @property
    def is_copy(self) -> bool:
        """``duplicate`` or ``partial``: text was copied between the two."""
        return self.label in ("duplicate", "partial")

    def to_dict(self) -> dict[str, Any]:
        """Plain values for JSON."""
        out: dict[str, Any] = {
            "label": self.label,
            "score": round(self.score, 6),
            "features": self.features.to_dict(),
            "clauses": [c.to_dict() for c in self.clauses],
        }
        if self.passages:
            out["passages"] = [p.to_dict() for p in self.passages]
        return out


def clauses_of(
    config: RuleConfig, coverage_a: float, coverage_b: float, passage: float, cosine: float
) -> tuple[Clause, Clause, Clause, Clause]:
    """The rule's four clauses for these feature values (exact or estimated)."""
    return (
        Clause("coverage", max(coverage_a, coverage_b), config.duplicate_min_coverage),
        Clause("coverage_other", min(coverage_a, coverage_b), config.duplicate_min_coverage_other),
        Clause("passage", float(passage), float(config.partial_min_passage)),
        Clause("cosine", cosine, config.similar_min_cosine),
    )


def label_of(clauses: tuple[Clause, Clause, Clause, Clause]) -> str:
    """The verdict label the clauses give (the rule's order: duplicate, partial, similar)."""
    coverage, coverage_other, passage, cosine = clauses
    if coverage.held and coverage_other.held:
        return "duplicate"
    if passage.held:
        return "partial"
    return "similar" if cosine.held else "unrelated"


def decide(features: Features, config: RuleConfig) -> tuple[str, float, tuple[Clause, ...]]:
    """``(label, score, clauses)`` of the rule for ``features`` (the rule itself).

    Detectors that only *estimate* the features from a sketch (result-set dedup) call
    :func:`clauses_of` and :func:`label_of` with their estimates, so the arithmetic of the
    rule stays here.
    """
    clauses = clauses_of(
        config, features.coverage_a, features.coverage_b, features.passage, features.cosine
    )
    label = label_of(clauses)
    if label in ("duplicate", "partial"):
        score = (features.coverage_a + features.coverage_b) / 2
    else:
        score = features.cosine
    return label, score, clauses


def decide_many(
    coverage_a: npt.NDArray[np.float64],
    coverage_b: npt.NDArray[np.float64],
    passage: npt.NDArray[np.int64],
    cosine: npt.NDArray[np.float64],
    config: RuleConfig,
) -> tuple[npt.NDArray[np.int8], npt.NDArray[np.float64]]:
    """:func:`decide` of many pairs at once: ``(labels, scores)``, each label an index into
    :data:`VERDICTS`.

    The clauses of :func:`clauses_of` and the order of :func:`label_of` on arrays, for a
    detector that judges many candidates of one text, where a Python call per pair would
    cost more than its features; property-tested equal to :func:`decide` element by element
    (``tests/test_rule_rows.py``).
    """
    high = np.maximum(coverage_a, coverage_b)
    low = np.minimum(coverage_a, coverage_b)
    duplicate = (high >= config.duplicate_min_coverage) & (
        low >= config.duplicate_min_coverage_other
    )
    partial = ~duplicate & (passage.astype(np.float64) >= float(config.partial_min_passage))
    similar = ~duplicate & ~partial & (cosine >= config.similar_min_cosine)
    labels = np.full(coverage_a.shape[0], VERDICTS.index("unrelated"), dtype=np.int8)
    labels[duplicate] = VERDICTS.index("duplicate")
    labels[partial] = VERDICTS.index("partial")
    labels[similar] = VERDICTS.index("similar")
    scores: npt.NDArray[np.float64] = np.where(
        duplicate | partial, (coverage_a + coverage_b) / 2, cosine
    )
    return labels, scores


def judge(
    a: str | Profile,
    b: str | Profile,
    config: RuleConfig | None = None,
    *,
    explain: bool = False,
) -> Verdict:
    """The :class:`Verdict` on texts (or profiles) ``a`` and ``b``.

    ``explain=True`` adds the shared passages as character spans (needs texts, or profiles
    made from texts).  Raises ``SchemeMismatchError`` for profiles of another config and
    ``InputTypeError`` for anything but ``str`` or :class:`Profile`.
    """
    cfg = config or default_rule_config()
    if not isinstance(cfg, RuleConfig):
        raise ConfigError(f"config must be a RuleConfig, got {type(cfg).__name__}")
    pa, pb = _profile_of(a, cfg, "a"), _profile_of(b, cfg, "b")
    features = pair_features(pa, pb, cfg.width)
    label, score, clauses = decide(features, cfg)
    passages: tuple[Passage, ...] = ()
    if explain:
        passages = tuple(shared_passages(pa, pb, cfg.width))
    return Verdict(label, score, features, clauses, passages)


def _profile_of(x: str | Profile, cfg: RuleConfig, name: str) -> Profile:
    if isinstance(x, Profile):
        return x
    if isinstance(x, str):
        return profile(x, cfg)
    raise InputTypeError(f"{name} must be a str or a Profile, got {type(x).__name__}")
