"""Pairwise passage alignment: which passages of a suspicious text come from a source text.

The method is the seed-and-extend text alignment of Sanchez-Perez, Sidorov & Gelbukh, "A
Winning Approach to Text Alignment for Text Reuse Detection at PAN 2014" (CLEF 2014 working
notes; the best PAN 2014 text-alignment system), on top of neardup's text stage:

1. **Units.**  Both texts are split into sentences (:func:`neardup.text.sentence_spans`),
   tokenised, stop words dropped and stemmed (:func:`neardup.text.tokenize`); a sentence with
   fewer than ``min_sentence_words`` tokens is joined to the next one.  Every unit keeps its
   character span in the original text, so results are character offsets into it.
2. **Seeding.**  Each unit is a tf-isf vector (term frequency times the inverse *sentence*
   frequency over the units of both texts).  A pair of units (suspicious, source) is a seed
   when both its cosine exceeds ``seed_cosine`` and the Dice coefficient of the two sets of
   terms exceeds ``seed_dice``.  Because the measures ignore order and survive some changed
   words, seeds survive word shuffles, insertions, deletions and synonym replacement, which
   break exact n-gram matches.  A unit pair is kept as a seed only when its cosine is at
   least ``seed_relative`` times the best seed cosine of its suspicious unit and of its
   source unit (our addition): in repetitive pages a sentence weakly resembles many others
   beside its true match, and those weak seeds would stretch the passage over them.
3. **Extension.**  Seeds are clustered: sorted by their suspicious-side unit, split wherever
   more than ``max_gap_units`` units lie between two neighbours, then the same on the source
   side, alternating until nothing splits.  A cluster spans from its first to its last unit
   on each side; it is kept when the cosine of the two spans (sum of their unit vectors)
   exceeds ``validation_cosine``, else it is re-clustered with a gap one smaller (down to 0).
   A cluster of one suspicious unit is weak evidence and is kept only when its span cosine
   exceeds ``single_unit_cosine``.
4. **Boundaries** (our addition, tuned on half of PAN13).  Copies rarely start and end at
   sentence boundaries: on each side the passage starts (ends) at the first (last) token of
   a word ``boundary_ngram``-gram found in the other side's span (unigrams,
   ``boundary_ngram_low``, unless ``verbatim_share`` of the passage's n-grams are shared)
   that opens (closes) a window of ``boundary_window`` tokens at least
   ``boundary_density`` of which are shared, searched within the first (last) unit, or over
   the whole span with ``trim_whole_units``; a boundary moves
   only when words are dropped, so a copy of whole sentences keeps its sentence span.  A
   suspicious unit between two seeds that resembles no unit of the source span (best
   tf-isf cosine <= ``novel_cosine``) cuts the passage: a new sentence between two copied
   paragraphs ends the first and starts the second.
5. **Filtering.**  Of two passages overlapping on the suspicious side the one with the higher
   span similarity is kept (ties: the longer); passages shorter than ``min_passage_chars`` on
   either side are dropped.  Neighbouring passages (of this step or the next) at most
   ``merge_gap_chars`` apart on the suspicious side are joined when at least
   ``merge_share`` of the tokens between them occur in their source spans' hull (adaptive
   merging of adjacent detections, common among the PAN 2014 systems that Potthast et al.
   survey): one copy cut by an edited stretch stays one passage, while a new sentence
   between two copied paragraphs, whose words the source lacks, still splits them.
6. **Verbatim pairs** (Sanchez-Perez, Gelbukh & Sidorov, "Adaptive Algorithm for Plagiarism
   Detection: The Best-Performing Approach at PAN 2014 Text Alignment Competition", CLEF
   2015): when a passage shares a run of equal words (:func:`common_runs`) of at least
   ``verbatim_min_chars`` with its source, the pair is a verbatim copy and its passages are
   the shared runs themselves, widened over the characters equal on both sides within the
   sentence: they end exactly where the copying ends.
7. **Summaries** (the adaptive summary step of the same papers; Potthast et al., "Overview
   of the 6th International Competition on Plagiarism Detection", PAN 2014, describes the
   summary obfuscation): seeds with looser thresholds (``summary_seed_cosine``,
   ``summary_seed_dice``) are extended with the wide gap ``summary_max_gap_units``; when the
   source side of the result is at least ``summary_source_ratio`` times its suspicious side,
   the pair is a summary and is answered with one passage, the hull of the suspicious side,
   aligned with the whole source; provided the wide passages fill at least
   ``summary_min_fill`` of that hull (a summary is one compact passage) and the strict
   passages do not already explain the hull as a copy (a summary condenses, so it maps to
   a source span ``summary_copy_ratio`` times longer or more; a copy maps about one to one).

Terms are the 64-bit hashes of the text stage's forms (:func:`neardup.shingles.hash_forms`);
ASCII texts take the compiled token path (:mod:`neardup.similarity.spans`).

Guarantees: pure and deterministic (terms are seeded 64-bit hashes, the same in every process;
every sort has a total key); approximate in the sense of the paper (a heuristic aligner, its
quality on PAN13 in ``docs/eval.md``); seeding runs an inverted index per block of 256 x 256
units (time proportional to the number of (unit, unit, shared term) triples, memory bounded by the
block size beyond the sparse unit vectors, which are linear in the texts); texts longer than
``max_text_chars`` raise :class:`~neardup.errors.InputTooLargeError`.
"""

from __future__ import annotations

import bisect
import dataclasses
import itertools
import math
import operator
from collections import Counter
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from neardup.config import Config, check_int, check_range
from neardup.errors import ConfigError, InputTooLargeError
from neardup.shingles import hash_forms
from neardup.similarity.spans import document_tokens
from neardup.text import TextConfig, ensure_text, sentence_spans, tokenize

__all__ = [
    "AlignedPassage",
    "AlignmentConfig",
    "PreparedText",
    "UnitPairs",
    "UnitTokens",
    "align_pair",
    "align_passages",
    "align_prepared",
    "common_runs",
    "prepare_text",
    "unit_pairs",
]

_FloatArray = np.ndarray[Any, np.dtype[np.float64]]

# Units per block on each side when pairing units: bounds the seeding's working memory.
_BLOCK_ROWS = 256


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
    (``summary_max_gap_units=0``) steps.
    """

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
        check_int("max_text_chars", self.max_text_chars, low=1)

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


@dataclasses.dataclass(frozen=True)
class PreparedText:
    """A text cut into units: character spans and the term counts of each unit (terms are
    the 64-bit hashes of the text stage's forms, :func:`neardup.shingles.hash_forms`)."""

    length: int
    spans: tuple[tuple[int, int], ...]
    terms: tuple[Counter[int], ...]
    tokens: tuple[UnitTokens, ...]
    text: str = dataclasses.field(default="", repr=False, compare=False)

    def __len__(self) -> int:
        return len(self.spans)


def _hashed_tokens(text: str, config: TextConfig) -> tuple[list[int], list[int], list[int]]:
    """Hashed forms and spans of ``text``'s tokens under ``config``: ASCII text through the
    compiled scanner (:func:`~neardup.similarity.spans.document_tokens` with stop words
    kept, then dropped by their lower-cased text, which for ASCII is their normalised
    form), other text through :func:`~neardup.text.tokenize`.  Equal either way (tested)."""
    keep = dataclasses.replace(config, drop_stop_words=False)
    if text.isascii():
        got = document_tokens(text, keep, 0)
        hashes, starts, ends = got.hashes.tolist(), got.starts.tolist(), got.ends.tolist()
        if not config.drop_stop_words:
            return hashes, starts, ends
        low = text.lower()
        stops = config.effective_stop_words
        kept = [
            k for k, (a, b) in enumerate(zip(starts, ends, strict=True)) if low[a:b] not in stops
        ]
        return [hashes[k] for k in kept], [starts[k] for k in kept], [ends[k] for k in kept]
    toks = tokenize(text, config)
    # each distinct form hashed once (a text repeats most of its words)
    distinct = list(dict.fromkeys(toks.forms))
    hashed = dict(zip(distinct, hash_forms(distinct, 0).tolist(), strict=True))
    return [hashed[f] for f in toks.forms], list(toks.starts), list(toks.ends)


def prepare_text(text: str, config: AlignmentConfig | None = None) -> PreparedText:
    """Units of ``text`` (step 1): sentences joined until each has ``min_sentence_words``
    tokens; a trailing short unit joins the previous one.  Units without tokens are dropped.

    Deterministic; linear in the text length.  Raises ``InputTooLargeError`` above
    ``max_text_chars`` and ``InputTypeError`` for non-``str`` input.
    """
    text = ensure_text(text)
    cfg = config or AlignmentConfig()
    if len(text) > cfg.max_text_chars:
        raise InputTooLargeError(
            f"text has {len(text)} characters, more than max_text_chars={cfg.max_text_chars}"
        )
    spans: list[tuple[int, int]] = []
    units: list[UnitTokens] = []
    pending: tuple[int, UnitTokens] | None = None  # start and tokens of a short unit so far
    # Tokenise once and hand each sentence the tokens that start inside it: tokens never
    # cross a sentence boundary (boundaries are punctuation or white space), so this equals
    # tokenising each sentence on its own (tested), at a fraction of the calls.
    forms, starts, ends = _hashed_tokens(text, cfg.text)
    for start, end in sentence_spans(text):
        lo, hi = bisect.bisect_left(starts, start), bisect.bisect_left(starts, end)
        toks = UnitTokens(tuple(forms[lo:hi]), tuple(starts[lo:hi]), tuple(ends[lo:hi]))
        if pending is not None:
            start, toks = pending[0], _joined(pending[1], toks)
            pending = None
        if len(toks) < cfg.min_sentence_words:
            pending = (start, toks)
            continue
        spans.append((start, end))
        units.append(toks)
    if pending is not None and len(pending[1]):
        if spans:  # a short tail joins the unit before it
            spans[-1] = (spans[-1][0], len(text.rstrip()))
            units[-1] = _joined(units[-1], pending[1])
        else:
            spans.append((pending[0], len(text.rstrip())))
            units.append(pending[1])
    terms = tuple(Counter(u.forms) for u in units)
    return PreparedText(len(text), tuple(spans), terms, tuple(units), text)


def _joined(a: UnitTokens, b: UnitTokens) -> UnitTokens:
    return UnitTokens(a.forms + b.forms, a.starts + b.starts, a.ends + b.ends)


def align_passages(
    source: str, suspicious: str, config: AlignmentConfig | None = None
) -> list[AlignedPassage]:
    """Passages of ``suspicious`` that come from ``source``, sorted by suspicious offset.

    Sanchez-Perez, Sidorov & Gelbukh (PAN 2014) seed-and-extend alignment (module
    docstring).  Empty or token-less texts give ``[]``.  Deterministic.
    """
    cfg = config or AlignmentConfig()
    return align_prepared(prepare_text(source, cfg), prepare_text(suspicious, cfg), cfg)


def align_prepared(
    source: PreparedText, suspicious: PreparedText, config: AlignmentConfig | None = None
) -> list[AlignedPassage]:
    """:func:`align_passages` on texts already cut by :func:`prepare_text` (with the same
    config), so a document used in many pairs is prepared once."""
    cfg = config or AlignmentConfig()
    floors = cfg.seed_floors
    return align_pair(unit_pairs(source, suspicious, *floors), cfg)


def align_pair(pairs: UnitPairs, config: AlignmentConfig | None = None) -> list[AlignedPassage]:
    """Steps 3 to 5 (extension, boundaries, filtering) on the seeds of ``pairs`` that pass
    the config's ``seed_cosine`` and ``seed_dice``; those must not be below the floors
    ``pairs`` was built with (``ConfigError``).  One :func:`unit_pairs` serves many configs
    (tuning)."""
    cfg = config or AlignmentConfig()
    if cfg.seed_floors[0] < pairs.min_cosine or cfg.seed_floors[1] < pairs.min_dice:
        raise ConfigError(
            f"seed thresholds {cfg.seed_floors} are below the floors the unit pairs were"
            f" built with ({pairs.min_cosine}, {pairs.min_dice})"
        )
    model = pairs.model
    seeds = _seeds(pairs, cfg.seed_cosine, cfg.seed_dice, cfg.seed_relative)
    clusters = _extend(model, seeds, cfg.max_gap_units, cfg) if seeds else []
    # one suspicious unit is weak evidence: it must resemble its source span closely
    clusters = [c for c in clusters if c[0][0] < c[0][1] or c[2] > cfg.single_unit_cosine]
    passages = _filter(model, clusters, cfg)
    if cfg.verbatim_min_chars and passages:
        exact = _verbatim(model, passages, cfg)
        if exact is not None:
            return _merge(model, exact, cfg)
    if cfg.summary_max_gap_units:
        loose = _seeds(pairs, cfg.summary_seed_cosine, cfg.summary_seed_dice)
        gap = cfg.summary_max_gap_units
        # a summary leaves out most of its source: no cut at units it does not retell
        wide = _filter(model, _extend(model, loose, gap, cfg, 0.0), cfg) if loose else []
        if wide and _is_summary(wide, passages, cfg):
            return [_summary(wide, model.src.length)]
    return _merge(model, passages, cfg)


def _is_summary(
    wide: list[AlignedPassage], passages: list[AlignedPassage], cfg: AlignmentConfig
) -> bool:
    """Whether the wide pass found a summary: its source spans are at least
    ``summary_source_ratio`` times its suspicious spans; those fill at least
    ``summary_min_fill`` of their hull (a summary is one compact passage, not scattered
    pieces of a long text); and the strict passages do not already explain the hull as a
    copy (covering at least 0.9 of it with a source / suspicious length ratio below
    ``summary_copy_ratio``: a summary condenses, so sentence-to-sentence it maps to a longer
    source span, a copy maps about one to one)."""
    this = sum(p.this_length for p in wide)
    if sum(p.source_length for p in wide) < cfg.summary_source_ratio * this:
        return False
    lo, hi = min(p.this_offset for p in wide), max(p.this_end for p in wide)
    if this < cfg.summary_min_fill * (hi - lo):
        return False
    inside = [p for p in passages if p.this_offset < hi and lo < p.this_end]
    covered = sum(min(p.this_end, hi) - max(p.this_offset, lo) for p in inside)
    ratio = sum(p.source_length for p in inside) / max(1, sum(p.this_length for p in inside))
    return not (covered >= 0.9 * (hi - lo) and ratio < cfg.summary_copy_ratio)


def _merge(
    model: _PairModel, passages: list[AlignedPassage], cfg: AlignmentConfig
) -> list[AlignedPassage]:
    """Neighbouring passages joined when at most ``merge_gap_chars`` of the suspicious text
    lie between them and at least ``merge_share`` of the gap's tokens occur in the two source
    spans' hull: one copy split by an edited stretch stays one passage (granularity), while a
    new sentence between two copied paragraphs, whose words the source lacks, still splits."""
    if cfg.merge_gap_chars <= 0 or len(passages) < 2:
        return passages
    out = [passages[0]]
    for q in passages[1:]:
        p = out[-1]
        if q.this_offset - p.this_end <= cfg.merge_gap_chars:
            lo, hi = min(p.source_offset, q.source_offset), max(p.source_end, q.source_end)
            gap = _tokens_in(model.susp, p.this_end, q.this_offset)[0]
            if gap:
                known = set(_tokens_in(model.src, lo, hi)[0])
                share = sum(f in known for f in gap) / len(gap)
            if not gap or share >= cfg.merge_share:
                sim = max(p.similarity, q.similarity)
                end = max(p.this_end, q.this_end)
                out[-1] = AlignedPassage(p.this_offset, end - p.this_offset, lo, hi - lo, sim)
                continue
        out.append(q)
    return out


def _seeds(
    pairs: UnitPairs, cosine: float, dice: float, relative: float = 0.0
) -> list[tuple[int, int]]:
    """Unit pairs above both thresholds; with ``relative`` > 0 only those whose cosine is at
    least ``relative`` times the best seed cosine of their suspicious unit and of their source
    unit: a unit's weak resemblances to other units of a repetitive text are not seeds
    beside its true match, so they do not stretch the passage over those units."""
    keep = (pairs.cosine > cosine) & (pairs.dice > dice)
    rows, cols, cos = pairs.rows[keep], pairs.cols[keep], pairs.cosine[keep]
    if relative > 0.0 and len(rows):
        best_row = np.zeros(int(rows.max()) + 1)
        np.maximum.at(best_row, rows, cos)
        best_col = np.zeros(int(cols.max()) + 1)
        np.maximum.at(best_col, cols, cos)
        ok = (cos >= relative * best_row[rows]) & (cos >= relative * best_col[cols])
        rows, cols = rows[ok], cols[ok]
    return list(zip(rows.tolist(), cols.tolist(), strict=True))


def _summary(passages: list[AlignedPassage], source_length: int) -> AlignedPassage:
    """A summary retells its source as one condensed passage: one passage spanning all of
    ``passages`` on the suspicious side, aligned with the whole source (granularity 1; the
    PAN corpora mark a summary's source as the whole source document)."""
    a = min(p.this_offset for p in passages)
    b = max(p.this_end for p in passages)
    sim = max(p.similarity for p in passages)
    return AlignedPassage(a, b - a, 0, source_length, sim)


def _tokens_in(side: PreparedText, start: int, end: int) -> tuple[list[int], list[int], list[int]]:
    """Forms and spans of the tokens of ``side`` lying inside ``[start, end)``."""
    lo = bisect.bisect_right([s for s, _ in side.spans], start) - 1
    forms: list[int] = []
    starts: list[int] = []
    ends: list[int] = []
    for k in range(max(lo, 0), len(side.spans)):
        if side.spans[k][0] >= end:
            break
        toks = side.tokens[k]
        for f, a, b in zip(toks.forms, toks.starts, toks.ends, strict=True):
            if a >= start and b <= end:
                forms.append(f)
                starts.append(a)
                ends.append(b)
    return forms, starts, ends


def common_runs(a: Sequence[int], b: Sequence[int], min_tokens: int) -> list[tuple[int, int, int]]:
    """Maximal runs of equal tokens ``a[i - n + 1 : i + 1] == b[j - n + 1 : j + 1]`` with
    ``n >= min_tokens``, as ``(i_end, j_end, n)`` (inclusive ends), in the order of ``a``.
    O(matching token pairs)."""
    where: dict[int, list[int]] = {}
    for j, t in enumerate(b):
        where.setdefault(t, []).append(j)
    out: list[tuple[int, int, int]] = []
    prev: dict[int, int] = {}
    for i, t in enumerate(a):
        cur = {j: prev.get(j - 1, 0) + 1 for j in where.get(t, ())}
        for j, n in prev.items():
            if j + 1 not in cur and n >= min_tokens:
                out.append((i - 1, j, n))
        prev = cur
    out.extend((len(a) - 1, j, n) for j, n in prev.items() if n >= min_tokens)
    return sorted(out)


_ENDS = frozenset(".!?\n")
_CLOSERS = frozenset("\"')]}\u201d\u2019")


def _equal_edges(
    a_text: str, a: tuple[int, int], b_text: str, b: tuple[int, int]
) -> tuple[tuple[int, int], tuple[int, int]]:
    """Widen two matching spans over the characters equal on both sides around them (stop
    words and punctuation the token runs leave out) within their sentences, never over outer
    white space: the copy ends where the two texts stop being equal, or at a full stop."""
    (s1, e1), (s2, e2) = a, b
    while s1 > 0 and s2 > 0 and a_text[s1 - 1] == b_text[s2 - 1] and a_text[s1 - 1] not in _ENDS:
        s1, s2 = s1 - 1, s2 - 1
    while e1 < len(a_text) and e2 < len(b_text) and a_text[e1] == b_text[e2]:
        e1, e2 = e1 + 1, e2 + 1
        if a_text[e1 - 1] in _ENDS:  # a full stop ends it, with its dots and closing quotes
            while (
                e1 < len(a_text) and e2 < len(b_text) and a_text[e1] == b_text[e2]
                and (a_text[e1] in _CLOSERS or a_text[e1] in ".!?")
            ):  # fmt: skip
                e1, e2 = e1 + 1, e2 + 1
            break
    while s1 < e1 and a_text[s1].isspace():
        s1, s2 = s1 + 1, s2 + 1
    while e1 > s1 and a_text[e1 - 1].isspace():
        e1, e2 = e1 - 1, e2 - 1
    return (s1, e1), (s2, e2)


def _verbatim(
    model: _PairModel, passages: list[AlignedPassage], cfg: AlignmentConfig
) -> list[AlignedPassage] | None:
    """Sanchez-Perez, Gelbukh & Sidorov (CLEF 2015), verbatim cases: when a passage shares a
    run of equal words of at least ``verbatim_min_chars`` with its source, the pair is a
    verbatim copy and its passages become the shared runs themselves (at least
    ``min_passage_chars`` long), so each ends exactly where the copying ends; None when no
    passage has such a run."""
    found: list[AlignedPassage] = []
    verbatim = False
    for p in passages:
        a_forms, a_starts, a_ends = _tokens_in(model.susp, p.this_offset, p.this_end)
        b_forms, b_starts, b_ends = _tokens_in(model.src, p.source_offset, p.source_end)
        for i, j, n in common_runs(a_forms, b_forms, cfg.verbatim_min_tokens):
            this, src = _equal_edges(
                model.susp.text, (a_starts[i - n + 1], a_ends[i]),
                model.src.text, (b_starts[j - n + 1], b_ends[j]),
            )  # fmt: skip
            size = min(this[1] - this[0], src[1] - src[0])
            verbatim = verbatim or size >= cfg.verbatim_min_chars
            if size >= cfg.min_passage_chars:
                found.append(
                    AlignedPassage(this[0], this[1] - this[0], src[0], src[1] - src[0], 1.0)
                )
    if not verbatim:
        return None
    kept: list[AlignedPassage] = []
    for p in sorted(found, key=lambda p: (p.this_offset, -p.this_length)):
        if kept and p.this_offset < kept[-1].this_end:
            if p.this_length > kept[-1].this_length:
                kept[-1] = p
            continue
        kept.append(p)
    return kept


@dataclasses.dataclass(frozen=True)
class UnitPairs:
    """Seeding (step 2) of one pair: every unit pair ``(rows[k], cols[k])`` (suspicious,
    source) with cosine > ``min_cosine`` and Dice > ``min_dice``, and both values."""

    model: _PairModel
    min_cosine: float
    min_dice: float
    rows: np.ndarray[Any, np.dtype[np.int64]]
    cols: np.ndarray[Any, np.dtype[np.int64]]
    cosine: _FloatArray
    dice: _FloatArray


def unit_pairs(
    source: PreparedText, suspicious: PreparedText, min_cosine: float, min_dice: float
) -> UnitPairs:
    """The unit pairs of two prepared texts above the cosine and Dice floors (exact values;
    the tf-isf cosine and the Dice coefficient of the term sets, Sanchez-Perez et al. 2014)."""
    check_range("min_cosine", min_cosine, low=0.0, high=1.0)
    check_range("min_dice", min_dice, low=0.0, high=1.0)
    model = _PairModel(suspicious, source)
    rows, cols, cos, dice = model.similar_units(min_cosine, min_dice)
    return UnitPairs(model, min_cosine, min_dice, rows, cols, cos, dice)


# --- the pair model: tf-isf vectors of both sides ----------------------------------------------


class _PairModel:
    """tf-isf vectors of the units of one (suspicious, source) pair, isf over both sides."""

    def __init__(self, susp: PreparedText, src: PreparedText) -> None:
        self.susp, self.src = susp, src
        df = Counter(itertools.chain.from_iterable(c.keys() for c in (*susp.terms, *src.terms)))
        n_units = len(susp) + len(src)
        # isf(t) = log(N / sf(t)); a term in every unit weighs 0 (it tells nothing apart).
        logs = {f: math.log(n_units / f) for f in set(df.values())}
        self.isf = {t: logs[f] for t, f in df.items()}
        self.susp_vecs = [self._weights(c) for c in susp.terms]
        self.src_vecs = [self._weights(c) for c in src.terms]
        self._unit_cache: dict[tuple[int, int], dict[int, float]] = {}

    def unit_vec(self, side: int, k: int) -> dict[int, float]:
        """Unit ``k``'s tf-isf vector scaled to length 1 (side 0: suspicious, 1: source)."""
        key = (side, k)
        vec = self._unit_cache.get(key)
        if vec is None:
            vec = _unit((self.susp_vecs if side == 0 else self.src_vecs)[k])
            self._unit_cache[key] = vec
        return vec

    def _weights(self, counts: Counter[int]) -> dict[int, float]:
        return {t: n * self.isf[t] for t, n in counts.items()}

    def similar_units(
        self, min_cosine: float, min_dice: float
    ) -> tuple[
        np.ndarray[Any, np.dtype[np.int64]],
        np.ndarray[Any, np.dtype[np.int64]],
        _FloatArray,
        _FloatArray,
    ]:
        """Unit pairs ``(i_susp, j_src)`` with cosine > ``min_cosine`` and Dice > ``min_dice``.

        Both sides are sparse rows over the terms they share, paired block by block
        (``_BLOCK_ROWS`` units a side, :func:`_block_products`), so memory stays bounded
        however long the texts are.
        """
        empty_i = np.zeros(0, dtype=np.int64)
        empty_f = np.zeros(0, dtype=np.float64)
        flat_s, flat_r = _flat(self.susp_vecs), _flat(self.src_vecs)
        shared = np.intersect1d(flat_s.terms, flat_r.terms)  # sorted: a term's column
        if not len(shared):
            return empty_i, empty_i, empty_f, empty_f
        susp, src = _SparseRows(flat_s, shared), _SparseRows(flat_r, shared)
        src_blocks = [
            (lo2, src.block(lo2, min(lo2 + _BLOCK_ROWS, len(src))))
            for lo2 in range(0, len(src), _BLOCK_ROWS)
        ]
        parts: list[tuple[Any, ...]] = []
        for lo in range(0, len(susp), _BLOCK_ROWS):
            block_s = susp.block(lo, min(lo + _BLOCK_ROWS, len(susp)))
            for lo2, block_r in src_blocks:
                got = _block_products(block_s, block_r)
                if got is None:
                    continue
                rows, cols, dot, inter = got
                i, j = rows + lo, cols + lo2
                denom = susp.norms[i] * src.norms[j]
                cos = np.divide(dot, denom, out=np.zeros_like(dot), where=denom > 0)
                dice = 2.0 * inter / (susp.sizes[i] + src.sizes[j])
                ok = (cos > min_cosine) & (dice > min_dice)
                parts.append((i[ok], j[ok], cos[ok], dice[ok]))
        if not parts:
            return empty_i, empty_i, empty_f, empty_f
        i_all = np.concatenate([p[0] for p in parts]).astype(np.int64)
        j_all = np.concatenate([p[1] for p in parts]).astype(np.int64)
        order = np.lexsort((j_all, i_all))  # row-major, whatever the block order
        return (
            i_all[order],
            j_all[order],
            np.concatenate([p[2] for p in parts])[order],
            np.concatenate([p[3] for p in parts])[order],
        )

    def span_cosine(self, susp_range: tuple[int, int], src_range: tuple[int, int]) -> float:
        """Cosine of the summed vectors of units ``[a, b]`` (inclusive) on each side."""
        a = _sum_vecs(self.susp_vecs[susp_range[0] : susp_range[1] + 1])
        b = _sum_vecs(self.src_vecs[src_range[0] : src_range[1] + 1])
        dot = sum(x * b[t] for t, x in a.items() if t in b)
        na = _norm(a)
        nb = _norm(b)
        return dot / (na * nb) if na > 0 and nb > 0 else 0.0


def _norm(vec: dict[int, float]) -> float:
    """Euclidean norm, the squares summed in the dict's order (the same float every time)."""
    return math.sqrt(sum(map(operator.mul, vec.values(), vec.values())))


def _unit(vec: dict[int, float]) -> dict[int, float]:
    norm = _norm(vec)
    return {t: x / norm for t, x in vec.items()} if norm > 0 else {}


class _Flat(NamedTuple):
    """The entries of a side's unit vectors in one run: unit, term, weight (dict order), and
    each unit's norm and number of distinct terms."""

    rows: np.ndarray[Any, np.dtype[np.int64]]
    terms: np.ndarray[Any, np.dtype[np.uint64]]
    vals: _FloatArray
    norms: _FloatArray
    sizes: _FloatArray


def _flat(vecs: Sequence[dict[int, float]]) -> _Flat:
    sizes = [len(v) for v in vecs]
    total = sum(sizes)
    terms = np.fromiter(itertools.chain.from_iterable(vecs), dtype=np.uint64, count=total)
    vals = np.fromiter(
        itertools.chain.from_iterable(v.values() for v in vecs), dtype=np.float64, count=total
    )
    rows = np.repeat(np.arange(len(vecs), dtype=np.int64), sizes)
    norms = np.array([_norm(v) for v in vecs], dtype=np.float64)
    return _Flat(rows, terms, vals, norms, np.array(sizes, dtype=np.float64))


class _SparseRows:
    """Units of one side as sparse rows over the shared terms (CSR; a term's column is its
    index in the sorted ``shared``), with each unit's full vector norm and its number of
    distinct terms (all terms, shared or not)."""

    def __init__(self, flat: _Flat, shared: np.ndarray[Any, np.dtype[np.uint64]]) -> None:
        pos = np.minimum(np.searchsorted(shared, flat.terms), len(shared) - 1)
        hit = shared[pos] == flat.terms
        counts = np.bincount(flat.rows[hit], minlength=len(flat.norms))
        self.ptr = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
        self.ids = pos[hit].astype(np.int64)
        self.vals = flat.vals[hit]
        self.norms = flat.norms
        self.sizes = flat.sizes

    def __len__(self) -> int:
        return len(self.ptr) - 1

    def block(self, lo: int, hi: int) -> _Block:
        """Entries of units ``[lo, hi)`` sorted by term id: row (relative to ``lo``), term
        id, weight."""
        a, b = int(self.ptr[lo]), int(self.ptr[hi])
        rows = np.repeat(np.arange(hi - lo, dtype=np.int64), np.diff(self.ptr[lo : hi + 1]))
        ids, vals = self.ids[a:b], self.vals[a:b]
        order = np.argsort(ids, kind="stable")
        return rows[order], ids[order], vals[order]


_IntArray = np.ndarray[Any, np.dtype[np.int64]]
_Block = tuple[_IntArray, _IntArray, _FloatArray]


def _block_products(
    block_s: _Block, block_r: _Block
) -> tuple[_IntArray, _IntArray, _FloatArray, _FloatArray] | None:
    """Dot products and shared-term counts of every row pair of two blocks that shares a term,
    by an inverted index: for each term, every (suspicious row, source row) pair holding it.
    No BLAS (whose threads stall on a busy machine); work = sum over terms of the product of
    their row counts, bounded by the block sizes."""
    rows_s, ids_s, vals_s = block_s
    rows_r, ids_r, vals_r = block_r
    if not len(ids_s) or not len(ids_r):
        return None
    terms_s, start_s, count_s = np.unique(ids_s, return_index=True, return_counts=True)
    terms_r, start_r, count_r = np.unique(ids_r, return_index=True, return_counts=True)
    _, ks, kr = np.intersect1d(terms_s, terms_r, assume_unique=True, return_indices=True)
    if not len(ks):
        return None
    a, na, c, nc = start_s[ks], count_s[ks], start_r[kr], count_r[kr]
    m = na * nc
    total = int(m.sum())
    first = np.repeat(np.cumsum(m) - m, m)
    q = np.arange(total, dtype=np.int64) - first
    width = np.repeat(nc, m)
    si = np.repeat(a, m) + q // width
    ri = np.repeat(c, m) + q % width
    n_r = int(rows_r.max()) + 1
    key = rows_s[si] * n_r + rows_r[ri]
    keys, inverse = np.unique(key, return_inverse=True)
    dot = np.bincount(inverse, weights=vals_s[si] * vals_r[ri], minlength=len(keys))
    inter = np.bincount(inverse, minlength=len(keys))
    rows = (keys // n_r).astype(np.int64)
    cols = (keys % n_r).astype(np.int64)
    return rows, cols, dot.astype(np.float64), inter.astype(np.float64)


def _sum_vecs(vecs: Sequence[dict[int, float]]) -> dict[int, float]:
    total: dict[int, float] = {}
    for v in vecs:
        for t, x in v.items():
            total[t] = total.get(t, 0.0) + x
    return total


# --- extension: clustering with gaps, then validation ------------------------------------------


def _split(seeds: list[tuple[int, int]], side: int, gap: int) -> list[list[tuple[int, int]]]:
    """Seeds sorted on ``side`` (0 suspicious, 1 source), cut wherever more than ``gap`` units
    lie between two neighbours."""
    ordered = sorted(seeds, key=lambda s: (s[side], s[1 - side]))
    groups: list[list[tuple[int, int]]] = [[ordered[0]]]
    for prev, cur in itertools.pairwise(ordered):
        if cur[side] - prev[side] > gap + 1:  # a gap of g units lies between indices g+1 apart
            groups.append([cur])
        else:
            groups[-1].append(cur)
    return groups


def _cluster(seeds: list[tuple[int, int]], gap: int) -> list[list[tuple[int, int]]]:
    """Alternate splits on both sides until neither side splits any cluster (the paper's
    recursive clustering, iteratively; output sorted by first seed for determinism)."""
    done: list[list[tuple[int, int]]] = []
    work: list[tuple[list[tuple[int, int]], int, bool]] = [(seeds, 0, True)]
    while work:
        group, side, first = work.pop()
        parts = _split(group, side, gap)
        if len(parts) == 1 and not first:
            done.append(parts[0])
            continue
        work.extend((p, 1 - side, False) for p in parts)
    return sorted(done, key=lambda g: min(g))


def _extend(
    model: _PairModel,
    seeds: list[tuple[int, int]],
    gap: int,
    cfg: AlignmentConfig,
    novel: float | None = None,
) -> list[tuple[tuple[int, int], tuple[int, int], float]]:
    """Validated clusters as (susp unit range, src unit range, span cosine), cut at novel
    units (``novel``: the threshold, default the config's; 0 cuts nothing)."""
    threshold = cfg.novel_cosine if novel is None else novel
    out: list[tuple[tuple[int, int], tuple[int, int], float]] = []
    work = [(c, gap) for c in _cluster(seeds, gap)]
    while work:
        group, g = work.pop()
        susp_range = (min(s[0] for s in group), max(s[0] for s in group))
        src_range = (min(s[1] for s in group), max(s[1] for s in group))
        sim = model.span_cosine(susp_range, src_range)
        if sim > cfg.validation_cosine:
            parts = _split_at_novel(model, group, susp_range, src_range, threshold)
            if len(parts) == 1:
                out.append((susp_range, src_range, sim))
            else:
                work.extend((c, g) for c in parts)
        elif len(group) > 1 and g > 0:
            work.extend((c, g - 1) for c in _cluster(group, g - 1))
    return sorted(out)


def _split_at_novel(
    model: _PairModel,
    group: list[tuple[int, int]],
    susp_range: tuple[int, int],
    src_range: tuple[int, int],
    threshold: float,
) -> list[list[tuple[int, int]]]:
    """The seeds of a cluster cut wherever a suspicious unit between them resembles no unit
    of the source span (best cosine <= ``threshold``): a new sentence between two copied
    passages ends the first and starts the second.  (Cutting the source side the same way
    lost more recall than it gained precision on the tuning half.)"""
    if threshold <= 0.0:
        return [group]
    ordered = sorted(group)
    gaps = [u for a, b in itertools.pairwise(ordered) for u in range(a[0] + 1, b[0])]
    if not gaps:
        return [group]
    src = [model.unit_vec(1, v) for v in range(src_range[0], src_range[1] + 1)]
    novel = {
        u
        for u in gaps
        if max((_dot(model.unit_vec(0, u), v) for v in src), default=0.0) <= threshold
    }
    if not novel:
        return [group]
    parts: list[list[tuple[int, int]]] = [[ordered[0]]]
    for prev, seed in itertools.pairwise(ordered):
        if any(u in novel for u in range(prev[0] + 1, seed[0])):
            parts.append([])
        parts[-1].append(seed)
    return parts


def _dot(a: dict[int, float], b: dict[int, float]) -> float:
    if len(a) > len(b):
        a, b = b, a
    return sum(x * b[t] for t, x in a.items() if t in b)


# --- filtering -----------------------------------------------------------------------------------


def _filter(
    model: _PairModel,
    clusters: list[tuple[tuple[int, int], tuple[int, int], float]],
    cfg: AlignmentConfig,
) -> list[AlignedPassage]:
    ngram = (cfg.boundary_ngram, cfg.boundary_ngram_low, cfg.verbatim_share)
    window = (cfg.boundary_window, cfg.boundary_density, cfg.trim_whole_units)
    passages = [_passage(model, *c, ngram, window) for c in clusters]
    kept: list[AlignedPassage] = []
    for p in sorted(passages, key=lambda p: (p.this_offset, p.this_length, p.source_offset)):
        if kept and p.this_offset < kept[-1].this_end:  # overlap on the suspicious side
            if _better(p, kept[-1]):
                kept[-1] = p
            continue
        kept.append(p)
    return [
        p
        for p in kept
        if p.this_length >= cfg.min_passage_chars and p.source_length >= cfg.min_passage_chars
    ]


def _better(a: AlignedPassage, b: AlignedPassage) -> bool:
    return (a.similarity, a.this_length, -a.this_offset) > (
        b.similarity,
        b.this_length,
        -b.this_offset,
    )


def _passage(
    model: _PairModel,
    susp_range: tuple[int, int],
    src_range: tuple[int, int],
    sim: float,
    ngram: tuple[int, int, float],
    window: tuple[int, float, bool] = (1, 0.0, False),
) -> AlignedPassage:
    n = ngram[0] if _ngram_share(model, susp_range, src_range, ngram[0]) >= ngram[2] else ngram[1]
    w, rho, anywhere = window
    a, b = _bounds(model.susp, susp_range, model.src, src_range, n, w, rho, anywhere)
    c, d = _bounds(model.src, src_range, model.susp, susp_range, n, w, rho, anywhere)
    return AlignedPassage(a, b - a, c, d - c, sim)


def _bounds(
    side: PreparedText,
    rng: tuple[int, int],
    other: PreparedText,
    other_rng: tuple[int, int],
    ngram: int,
    window: int = 1,
    density: float = 0.0,
    edge_units: bool = False,
) -> tuple[int, int]:
    """Character span of units ``rng``; with ``ngram`` > 0 its first and last unit are trimmed
    to the first / last token starting / ending a word n-gram found in the other side's span
    (copied passages rarely start and end at sentence boundaries).  A unit without such an
    n-gram is kept whole."""
    start, end = side.spans[rng[0]][0], side.spans[rng[1]][1]
    if ngram <= 0:
        return start, end
    forms, starts, ends, first_len, last_from = _range_tokens(side, rng)
    o_forms = _range_tokens(other, other_rng)[0]
    shared = {tuple(o_forms[i : i + ngram]) for i in range(len(o_forms) - ngram + 1)}
    if not shared:
        return start, end
    # Only a trim that drops tokens moves a boundary, so a copy of whole sentences keeps
    # its sentence span (punctuation included).  A boundary token must start (end) a
    # window of ``window`` tokens at least ``density`` of which start (end) shared n-grams:
    # a lone common word before the copy does not pull its start out.
    hit = [tuple(forms[i : i + ngram]) in shared for i in range(len(forms) - ngram + 1)]
    reach = len(hit) if edge_units else min(first_len, len(hit))
    for i in range(reach):
        if hit[i] and sum(hit[i : i + window]) >= density * len(hit[i : i + window]):
            start = starts[i] if i > 0 else start
            break
    stop = ngram - 1 if edge_units else max(last_from, ngram - 1)
    for j in range(len(forms) - 1, stop - 1, -1):
        k = j - ngram + 1  # the n-gram ending at j starts at k
        back = hit[max(0, k - window + 1) : k + 1]
        if hit[k] and sum(back) >= density * len(back):
            end = ends[j] if j < len(forms) - 1 else end
            break
    return start, end


def _ngram_share(
    model: _PairModel, susp_range: tuple[int, int], src_range: tuple[int, int], n: int
) -> float:
    """Share of the suspicious span's word n-grams found in the source span: near 1 for a
    verbatim copy, low once words are shuffled or replaced."""
    if n <= 0:
        return 1.0
    a = _range_tokens(model.susp, susp_range)[0]
    b = _range_tokens(model.src, src_range)[0]
    grams = [tuple(a[i : i + n]) for i in range(len(a) - n + 1)]
    if not grams:
        return 0.0
    other = {tuple(b[i : i + n]) for i in range(len(b) - n + 1)}
    return sum(g in other for g in grams) / len(grams)


def _range_tokens(
    side: PreparedText, rng: tuple[int, int]
) -> tuple[list[int], list[int], list[int], int, int]:
    """Tokens of units ``rng`` concatenated, the first unit's token count and the index where
    the last unit's tokens begin."""
    forms: list[int] = []
    starts: list[int] = []
    ends: list[int] = []
    for k in range(rng[0], rng[1] + 1):
        toks = side.tokens[k]
        forms.extend(toks.forms)
        starts.extend(toks.starts)
        ends.extend(toks.ends)
    first_len = len(side.tokens[rng[0]])
    last_from = len(forms) - len(side.tokens[rng[1]])
    return forms, starts, ends, first_len, last_from
