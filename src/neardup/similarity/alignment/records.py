"""The aligner's parameters (:class:`AlignmentConfig`), its output (:class:`AlignedPassage`)
and a text prepared once for many pairs (:class:`PreparedText`)."""

from __future__ import annotations

import dataclasses
import functools
import itertools
from collections import Counter
from typing import Any, NamedTuple

import numpy as np

from neardup.config import Config, check_int, check_range
from neardup.errors import ConfigError
from neardup.text import TextConfig

_FloatArray = np.ndarray[Any, np.dtype[np.float64]]


def _default_text_config() -> TextConfig:
    # The paper removes stop words and stems (Porter; Snowball English here).
    return TextConfig(drop_stop_words=True, stem=True)


@dataclasses.dataclass(frozen=True)
class AlignmentConfig(Config):
    """Parameters of :func:`align_passages` (steps in the module docstring).

    The defaults were chosen on the tuning half of PAN13 by the mean plagdet of its four
    categories among the settings with PAN precision at least 0.9 on random and translation
    obfuscation (``docs/eval.md``); the paper's own values are ``seed_cosine=0.33,
    seed_dice=0.33, max_gap_units=4, validation_cosine=0.34, min_passage_chars=150``
    without boundary trimming (``boundary_ngram=0, boundary_ngram_low=0``), relative seeds
    (``seed_relative=0``), the single-unit rule (``single_unit_cosine=0``), merging
    (``merge_gap_chars=0``), and without the verbatim (``verbatim_min_chars=0``) and summary
    (``summary_max_gap_units=0``) steps.  The retry of empty pairs (``retry_empty``) is off:
    it raises PAN13's random obfuscation but reads independent news reports of one story as
    copies (``docs/eval.md``, step 13)."""

    SCHEME = "alignment"

    text: TextConfig = dataclasses.field(default_factory=_default_text_config)
    min_sentence_words: int = 3
    seed_cosine: float = 0.2
    seed_dice: float = 0.2
    max_gap_units: int = 6
    validation_cosine: float = 0.3
    min_passage_chars: int = 100
    seed_relative: float = 0.9
    single_unit_cosine: float = 0.5
    merge_gap_chars: int = 1000
    merge_share: float = 0.8
    boundary_ngram: int = 3
    boundary_ngram_low: int = 1
    verbatim_share: float = 0.4
    summary_max_gap_units: int = 48
    summary_source_ratio: float = 4.0
    summary_seed_cosine: float = 0.15
    summary_seed_dice: float = 0.33
    summary_min_fill: float = 0.5
    summary_copy_ratio: float = 1.5
    trim_whole_units: bool = False
    novel_cosine: float = 0.1
    boundary_window: int = 4
    boundary_density: float = 0.5
    verbatim_min_chars: int = 256
    verbatim_min_tokens: int = 3
    retry_empty: bool = False
    retry_seed_relative: float = 0.0
    retry_single_unit_cosine: float = 0.3
    retry_validation_cosine: float = 0.2
    max_text_chars: int = 2_000_000

    def __post_init__(self) -> None:
        if not isinstance(self.text, TextConfig):
            raise ConfigError(f"text must be a TextConfig, got {type(self.text).__name__}")
        check_int("min_sentence_words", self.min_sentence_words, low=1, high=1000)
        check_range("seed_cosine", self.seed_cosine, low=0.0, high=1.0)
        check_range("seed_dice", self.seed_dice, low=0.0, high=1.0)
        check_int("max_gap_units", self.max_gap_units, low=0, high=10_000)
        check_range("validation_cosine", self.validation_cosine, low=0.0, high=1.0)
        check_int("min_passage_chars", self.min_passage_chars, low=0)
        check_range("seed_relative", self.seed_relative, low=0.0, high=1.0)
        check_range("single_unit_cosine", self.single_unit_cosine, low=0.0, high=1.0)
        check_int("merge_gap_chars", self.merge_gap_chars, low=0)
        check_range("merge_share", self.merge_share, low=0.0, high=1.0)
        check_int("boundary_ngram", self.boundary_ngram, low=0, high=16)
        check_int("boundary_ngram_low", self.boundary_ngram_low, low=0, high=16)
        check_range("verbatim_share", self.verbatim_share, low=0.0, high=1.0)
        check_int("summary_max_gap_units", self.summary_max_gap_units, low=0, high=10_000)
        check_range("summary_source_ratio", self.summary_source_ratio, low=1.0, high=1000.0)
        check_range("summary_seed_cosine", self.summary_seed_cosine, low=0.0, high=1.0)
        check_range("summary_seed_dice", self.summary_seed_dice, low=0.0, high=1.0)
        check_range("summary_min_fill", self.summary_min_fill, low=0.0, high=1.0)
        check_range("summary_copy_ratio", self.summary_copy_ratio, low=0.0, high=1000.0)
        check_int("verbatim_min_chars", self.verbatim_min_chars, low=0)
        check_int("boundary_window", self.boundary_window, low=1, high=64)
        check_range("novel_cosine", self.novel_cosine, low=0.0, high=1.0)
        check_range("boundary_density", self.boundary_density, low=0.0, high=1.0)
        check_int("verbatim_min_tokens", self.verbatim_min_tokens, low=1, high=1000)
        check_range("retry_seed_relative", self.retry_seed_relative, low=0.0, high=1.0)
        check_range("retry_single_unit_cosine", self.retry_single_unit_cosine, low=0.0, high=1.0)
        check_range("retry_validation_cosine", self.retry_validation_cosine, low=0.0, high=1.0)
        check_int("max_text_chars", self.max_text_chars, low=1)

    def retry_config(self) -> AlignmentConfig:
        """The config of the retry of a pair left empty (step 8): this one with the
        ``retry_*`` values and without a further retry."""
        return dataclasses.replace(
            self,
            seed_relative=self.retry_seed_relative,
            single_unit_cosine=self.retry_single_unit_cosine,
            validation_cosine=self.retry_validation_cosine,
            retry_empty=False,
        )

    @property
    def seed_floors(self) -> tuple[float, float]:
        """The lowest seed cosine and Dice any pass of this config uses."""
        if not self.summary_max_gap_units:
            return self.seed_cosine, self.seed_dice
        return (
            min(self.seed_cosine, self.summary_seed_cosine),
            min(self.seed_dice, self.summary_seed_dice),
        )


@dataclasses.dataclass(frozen=True, slots=True)
class AlignedPassage:
    """A passage of the suspicious text (``this_*``) aligned with one of the source.

    Offsets and lengths are in characters of the original texts (the PAN ``feature`` fields);
    ``similarity`` is the cosine of the two passages' tf-isf vectors.
    """

    this_offset: int
    this_length: int
    source_offset: int
    source_length: int
    similarity: float

    @property
    def this_end(self) -> int:
        """End (exclusive) of the suspicious passage."""
        return self.this_offset + self.this_length

    @property
    def source_end(self) -> int:
        """End (exclusive) of the source passage."""
        return self.source_offset + self.source_length

    def to_dict(self) -> dict[str, Any]:
        """The PAN feature fields plus ``similarity``."""
        return dataclasses.asdict(self)


class UnitTokens(NamedTuple):
    """The tokens of one unit: 64-bit hashes of their forms and their character spans."""

    forms: tuple[int, ...]
    starts: tuple[int, ...]
    ends: tuple[int, ...]

    def __len__(self) -> int:  # type: ignore[override]
        return len(self.forms)


_IntArray = np.ndarray[Any, np.dtype[np.int64]]
_HashArray = np.ndarray[Any, np.dtype[np.uint64]]


@dataclasses.dataclass(frozen=True, eq=False)
class PreparedText:
    """A text cut into units, as arrays: each unit's character span (``bounds``, one row
    ``start, end`` a unit), its tokens (``forms[ptr[k]:ptr[k + 1]]``, the 64-bit hashes of
    the text stage's forms, :func:`neardup.shingles.hash_forms`, with their character spans
    ``starts`` / ``ends``, in text order) and its distinct terms with their counts
    (``term_ids[term_ptr[k]:term_ptr[k + 1]]``, ascending, and ``term_counts``).  Every
    token lies in a unit, so the token arrays are sorted by position."""

    length: int
    bounds: _IntArray
    ptr: _IntArray
    forms: _HashArray
    starts: _IntArray
    ends: _IntArray
    term_ptr: _IntArray
    term_ids: _HashArray
    term_counts: _FloatArray
    text: str = dataclasses.field(default="", repr=False)

    def __len__(self) -> int:
        return int(self.bounds.shape[0])

    @functools.cached_property
    def spans(self) -> tuple[tuple[int, int], ...]:
        """The units' character spans ``(start, end)``."""
        return tuple((int(a), int(b)) for a, b in self.bounds.tolist())

    @functools.cached_property
    def tokens(self) -> tuple[UnitTokens, ...]:
        """Each unit's tokens as tuples."""
        forms, starts, ends = self.forms.tolist(), self.starts.tolist(), self.ends.tolist()
        cut = self.ptr.tolist()
        return tuple(
            UnitTokens(tuple(forms[a:b]), tuple(starts[a:b]), tuple(ends[a:b]))
            for a, b in itertools.pairwise(cut)
        )

    @functools.cached_property
    def terms(self) -> tuple[Counter[int], ...]:
        """Each unit's term counts."""
        ids, counts = self.term_ids.tolist(), self.term_counts.tolist()
        cut = self.term_ptr.tolist()
        return tuple(
            Counter(dict(zip(ids[a:b], map(int, counts[a:b]), strict=True)))
            for a, b in itertools.pairwise(cut)
        )
