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
8. **Retry of empty pairs** (optional, ``retry_empty``; our addition, in the spirit of the
   per-pair adaptive choice of parameters of Sanchez-Perez et al. 2014/2015, which pick
   between a summary and a non-summary setting per pair): when steps 3 to 7 find nothing,
   they run once more with looser evidence: no relative seeds (``retry_seed_relative``),
   a lower single-unit bar (``retry_single_unit_cosine``) and a lower validation cosine
   (``retry_validation_cosine``).  Random obfuscation (words shuffled, replaced and
   inserted; Potthast et al., "Overview of the 5th International Competition on
   Plagiarism Detection", PAN 2013) leaves short copies whose only evidence is one or two
   sentence pairs of moderate cosine; in a pair that shows nothing stronger they are the
   best reading, while beside a strong copy they would be noise, so the strict pass keeps
   precision where it has found something.  Off by default: on real news the looser
   reading takes independent reports of one story for copies (``docs/eval.md``).

Terms are the 64-bit hashes of the text stage's forms (:func:`neardup.shingles.hash_forms`),
from one compiled scan of the text (:mod:`neardup.similarity.spans`).  A prepared text and
the pair model are arrays (each unit's tokens and distinct terms as ragged runs), so the
steps run as array operations, not per-token Python.

Guarantees: pure and deterministic (terms are seeded 64-bit hashes, the same in every process;
every sort has a total key); approximate in the sense of the paper (a heuristic aligner, its
quality on PAN13 in ``docs/eval.md``); seeding runs an inverted index per block of 256 x 256
units (time proportional to the number of (unit, unit, shared term) triples, memory bounded by the
block size beyond the sparse unit vectors, which are linear in the texts); texts longer than
``max_text_chars`` raise :class:`~neardup.errors.InputTooLargeError`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from neardup.config import check_range
from neardup.errors import ConfigError, InputTooLargeError
from neardup.similarity.alignment.extend import _filter
from neardup.similarity.alignment.model import _extend, _PairModel
from neardup.similarity.alignment.records import (
    AlignedPassage,
    AlignmentConfig,
    PreparedText,
    UnitTokens,
    _FloatArray,
)
from neardup.similarity.spans import document_tokens
from neardup.text import ensure_text
from neardup.text.sentences import sentence_bounds

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
    # Tokenise once and hand each sentence the tokens that start inside it: tokens never
    # cross a sentence boundary (boundaries are punctuation or white space), so this equals
    # tokenising each sentence on its own (tested), at a fraction of the calls.
    toks = document_tokens(text, cfg.text, 0)
    sents = sentence_bounds(text)
    lo = np.searchsorted(toks.starts, sents[:, 0])
    hi = np.searchsorted(toks.starts, sents[:, 1])
    bounds, first, last = _units(sents.tolist(), (hi - lo).tolist(), cfg.min_sentence_words, text)
    forms, starts, ends = toks.hashes, toks.starts, toks.ends
    if int((hi - lo).sum()) < len(toks):  # keep only the tokens inside some sentence
        inside = np.zeros(len(toks) + 1, dtype=np.int64)
        np.add.at(inside, lo, 1)
        np.add.at(inside, hi, -1)
        keep = np.cumsum(inside[:-1]) > 0
        rank = np.concatenate(([0], np.cumsum(keep)))
        lo, hi = rank[lo], rank[hi]
        forms, starts, ends = forms[keep], starts[keep], ends[keep]
    # a unit is a run of whole sentences: its tokens run from its first sentence's first
    # token to its last sentence's last
    ptr = np.zeros(len(first) + 1, dtype=np.int64)
    ptr[1:] = hi[last]
    ptr[:-1] = lo[first]
    term_ptr, term_ids, term_counts = _unit_terms(forms, ptr)
    return PreparedText(
        len(text), bounds, ptr, forms, starts, ends, term_ptr, term_ids, term_counts, text
    )


def _units(
    sents: list[list[int]], sizes: list[int], min_words: int, text: str
) -> tuple[np.ndarray[Any, np.dtype[np.int64]], list[int], list[int]]:
    """The units' character spans (one row ``start, end`` a unit) and the first and the last
    sentence of each: sentences joined until each has ``min_words`` tokens, a short tail
    joined to the unit before it."""
    bounds: list[tuple[int, int]] = []
    first: list[int] = []
    last: list[int] = []
    pending: tuple[int, int, int] | None = None  # start, first sentence, tokens of a short unit
    for k, ((start, end), size) in enumerate(zip(sents, sizes, strict=True)):
        head = k
        if pending is not None:
            start, head, size = pending[0], pending[1], pending[2] + size
            pending = None
        if size < min_words:
            pending = (start, head, size)
            continue
        bounds.append((start, end))
        first.append(head)
        last.append(k)
    if pending is not None and pending[2]:
        tail = len(text.rstrip())
        if bounds:  # a short tail joins the unit before it
            bounds[-1] = (bounds[-1][0], tail)
            last[-1] = len(sents) - 1
        else:
            bounds.append((pending[0], tail))
            first.append(pending[1])
            last.append(len(sents) - 1)
    return np.array(bounds, dtype=np.int64).reshape(-1, 2), first, last


def _unit_terms(
    forms: np.ndarray[Any, np.dtype[np.uint64]], ptr: np.ndarray[Any, np.dtype[np.int64]]
) -> tuple[np.ndarray[Any, np.dtype[np.int64]], np.ndarray[Any, np.dtype[np.uint64]], _FloatArray]:
    """Each unit's distinct terms (ascending) and their counts, as one ragged run."""
    n_units = len(ptr) - 1
    distinct, local = np.unique(forms, return_inverse=True)  # ascending hashes
    unit = np.repeat(np.arange(n_units, dtype=np.int64), np.diff(ptr))
    keys, counts = np.unique(unit * len(distinct) + local, return_counts=True)
    term_ptr = np.searchsorted(keys, np.arange(n_units + 1, dtype=np.int64) * len(distinct))
    return (
        term_ptr.astype(np.int64),
        distinct[keys % max(1, len(distinct))],
        counts.astype(np.float64),
    )


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
    """Steps 3 to 8 (extension, boundaries, filtering, verbatim and summary pairs, the
    retry) on the seeds of ``pairs`` that pass the config's ``seed_cosine`` and
    ``seed_dice``; those must not be below the floors ``pairs`` was built with
    (``ConfigError``).  One :func:`unit_pairs` serves many configs (tuning)."""
    cfg = config or AlignmentConfig()
    if cfg.seed_floors[0] < pairs.min_cosine or cfg.seed_floors[1] < pairs.min_dice:
        raise ConfigError(
            f"seed thresholds {cfg.seed_floors} are below the floors the unit pairs were"
            f" built with ({pairs.min_cosine}, {pairs.min_dice})"
        )
    found = _align_once(pairs, cfg)
    if found or not cfg.retry_empty:
        return found
    # step 8: a pair the strict pass leaves empty is read again with looser evidence
    return _align_once(pairs, cfg.retry_config())


def _align_once(pairs: UnitPairs, cfg: AlignmentConfig) -> list[AlignedPassage]:
    """Steps 3 to 7 with one config."""
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
    """Forms and spans of the tokens of ``side`` lying inside ``[start, end)`` (tokens are
    disjoint and in text order, so their starts and their ends both ascend)."""
    i = int(np.searchsorted(side.starts, start, side="left"))
    j = int(np.searchsorted(side.ends, end, side="right"))
    if j <= i:
        return [], [], []
    return side.forms[i:j].tolist(), side.starts[i:j].tolist(), side.ends[i:j].tolist()


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
