"""The synthetic benchmark's labels, edit names and parameters (:class:`SynthConfig`),
and the records one edit and one run return."""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from typing import Any

from neardup.config import Config, check_choice, check_int, check_range
from neardup.errors import ConfigError

_WORD_RE = re.compile(r"\w+")

LABELS = ("duplicate", "similar", "different")


# The copy label rules (module docstring): the default first.
LABEL_RULES = ("guide", "editorial", "bag80")


# Strength levels drawn for each edit: light levels are duplicates by the label rule, heavy
# ones similar, so each edit type contributes to both sides of the decision.
DEFAULT_STRENGTHS: dict[str, tuple[float, ...]] = {
    "exact": (0.0,),
    "headline": (0.0,),
    "boilerplate": (0.05, 0.15, 0.4, 0.8),
    "paragraph_drop": (0.1, 0.2, 0.4, 0.6),
    "paragraph_reorder": (0.3, 0.6, 1.0),
    "paragraph_insert": (0.1, 0.2, 0.5, 1.0),
    "sentence_drop": (0.1, 0.2, 0.4, 0.6),
    "sentence_insert": (0.1, 0.2, 0.5, 1.0),
    "truncate": (0.1, 0.2, 0.5, 0.8),
    "typos": (0.01, 0.03, 0.1, 0.3),
    "ocr": (0.01, 0.03, 0.1, 0.3),
    "numbers": (0.3, 0.6, 1.0),
    "mixed": (0.1, 0.2, 0.4),
}


COPY_EDITS: tuple[str, ...] = tuple(DEFAULT_STRENGTHS)


# The fields of SynthConfig that are shares of words, each in [0, 1].
_SHARES = (
    "content_min_kept",
    "content_max_added",
    "guide_max_added",
    "duplicate_min_kept",
    "duplicate_max_novel",
    "negative_max_overlap",
    "max_original_overlap",
)


@dataclasses.dataclass(frozen=True)
class SynthConfig(Config):
    """Parameters of :func:`synthesize` (defaults: the Reuters perturbation benchmark).

    ``edits`` are the copy edits used in turn (round-robin over originals, so each edit gets
    the same number of copies); each copy draws its strength from ``DEFAULT_STRENGTHS``.
    ``label_rule`` picks the copy label rule (``guide``, the default: ``content_min_kept`` /
    ``guide_max_added``; ``editorial``: ``content_min_kept`` / ``content_max_added``;
    ``bag80``: ``duplicate_min_kept`` / ``duplicate_max_novel``; see the module docstring);
    pairs carry the labels of every rule either way.
    """

    SCHEME = "synth"

    seed: int = 0
    copies_per_doc: int = 3
    negatives_per_doc: int = 1
    quote_rate: float = 0.1
    max_originals: int = 1000
    min_words: int = 60
    min_sentences: int = 4
    edits: tuple[str, ...] = COPY_EDITS
    label_rule: str = "guide"
    content_min_kept: float = 0.5
    content_max_added: float = 0.2
    guide_max_added: float = 0.5
    duplicate_min_kept: float = 0.8
    duplicate_max_novel: float = 0.2
    negative_max_overlap: float = 0.2
    max_original_overlap: float = 0.5
    shingle_width: int = 5

    def __post_init__(self) -> None:
        check_int("seed", self.seed, low=0, high=(1 << 63) - 1)
        check_int("copies_per_doc", self.copies_per_doc, low=0, high=100)
        check_int("negatives_per_doc", self.negatives_per_doc, low=0, high=100)
        check_range("quote_rate", self.quote_rate, low=0.0, high=1.0)
        check_int("max_originals", self.max_originals, low=1, high=10_000_000)
        check_int("min_words", self.min_words, low=1, high=100_000)
        check_int("min_sentences", self.min_sentences, low=2, high=10_000)
        if isinstance(self.edits, str) or not isinstance(self.edits, tuple | list):
            raise ConfigError("edits must be a tuple of edit names")
        object.__setattr__(self, "edits", tuple(self.edits))
        if not self.edits and self.copies_per_doc:
            raise ConfigError("edits must not be empty when copies_per_doc > 0")
        for edit in self.edits:
            check_choice("edit", edit, COPY_EDITS)
        check_choice("label_rule", self.label_rule, LABEL_RULES)
        for share in _SHARES:
            check_range(share, getattr(self, share), low=0.0, high=1.0)
        check_int("shingle_width", self.shingle_width, low=1, high=64)


@dataclasses.dataclass(frozen=True, slots=True)
class Copy:
    """The result of one edit: the new text and title, and how many units were changed.

    ``content``: the copy's text before its *noise* edits (typos, OCR confusions, changed
    numbers), i.e. what the copy says as opposed to how it is spelt; ``None`` when no noise
    edit was applied (then it is ``text``).  The ``editorial`` label rule measures it.
    """

    text: str
    title: str | None
    changes: int
    content: str | None = None

    @property
    def content_text(self) -> str:
        """The copy's story content (``content`` when set, else ``text``)."""
        return self.text if self.content is None else self.content


@dataclasses.dataclass(frozen=True, slots=True)
class SynthResult:
    """Documents (JSON-able dicts, originals first) and labelled pairs."""

    docs: list[dict[str, Any]]
    pairs: list[dict[str, Any]]

    def label_counts(self) -> dict[str, int]:
        """Number of pairs per label."""
        return dict(Counter(p["label"] for p in self.pairs))
