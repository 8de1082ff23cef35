"""Passage alignment quality on labelled copied spans: character and PAN measures.

Labels are JSON Lines (``.gz`` allowed), one (suspicious, source) pair a line, in the format
of the PAN 2013 text alignment corpus: the two document ids (``susp`` and ``src``), an
optional group (``category``) and ``features``, the copied passages as character spans,
``{"this_offset", "this_length", "source_offset", "source_length"}`` (features without
``this_offset``, such as metadata, mark nothing).  A pair without a passage is a negative:
there only falsely predicted characters count.

Two aligners predict the copied passages of each pair:

* ``"passages"``: :func:`neardup.similarity.alignment.align_passages` (Sanchez-Perez, Sidorov
  & Gelbukh, PAN 2014 seed-and-extend), which gives both the suspicious and the source spans;
* ``"origin"``: a fresh :class:`~neardup.detect.origin.OriginDetector` (seed 004, exact
  8-shingles) streams the source and then the suspicious document; the suspicious characters
  inside segments whose origin is the source are predicted (no source-side spans).

Per group, :func:`evaluate_alignment` reports

* micro-averaged character precision / recall / F1 on the suspicious side (all pairs'
  characters pooled), and
* for ``"passages"``, the official PAN measures of Potthast, Stein, Barrón-Cedeño & Rosso, "An
  Evaluation Framework for Plagiarism Detection" (COLING 2010): macro-averaged case precision
  and recall over the characters of *both* documents, granularity and plagdet
  (:func:`pan_measures`, checked against a brute-force character-set computation in tests).

Guarantees: deterministic; exact; memory O(largest document) per pair plus the cases.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from neardup.detect.origin import TEXT_CONFIG, OriginConfig, OriginDetector
from neardup.errors import ConfigError, InputError, NotFoundError
from neardup.evaluation.pairs import read_jsonl
from neardup.shingles import hash_forms
from neardup.similarity.alignment import (
    AlignedPassage,
    AlignmentConfig,
    align_prepared,
    prepare_text,
)
from neardup.text import Tokens, tokenize

__all__ = [
    "METHODS",
    "AlignmentScore",
    "LabelledSpans",
    "PanCase",
    "PanScores",
    "Predict",
    "copied_mask",
    "evaluate_alignment",
    "pan_measures",
    "prediction",
    "read_alignment_labels",
    "score_alignment",
]

METHODS = ("passages", "origin")

Mask = np.ndarray[Any, np.dtype[np.bool_]]


@dataclasses.dataclass(frozen=True)
class AlignmentScore:
    """Scores of one category: micro character counts on the suspicious side (always) and the
    PAN measures (``None`` for the origin aligner, which gives no source spans)."""

    category: str
    pairs: int
    true_chars: int
    predicted_chars: int
    matched_chars: int
    cases: int | None = None
    detections: int | None = None
    pan_precision: float | None = None
    pan_recall: float | None = None
    granularity: float | None = None
    plagdet: float | None = None
    ms_per_pair: float | None = None

    @property
    def precision(self) -> float:
        """Matched / predicted characters (1.0 when nothing was predicted)."""
        return self.matched_chars / self.predicted_chars if self.predicted_chars else 1.0

    @property
    def recall(self) -> float:
        """Matched / true characters (1.0 when there is nothing to find)."""
        return self.matched_chars / self.true_chars if self.true_chars else 1.0

    @property
    def f1(self) -> float:
        """Harmonic mean of precision and recall (0.0 when both are 0)."""
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0

    def to_dict(self) -> dict[str, Any]:
        """Plain values, with the derived scores."""
        out = dataclasses.asdict(self)
        out.update(precision=self.precision, recall=self.recall, f1=self.f1)
        return out


# --- the PAN measures (Potthast et al. 2010) ---------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class PanCase:
    """A plagiarism case or a detection: ``[this_start, this_end)`` in the suspicious document
    and ``[source_start, source_end)`` in the source document of the pair ``pair``."""

    pair: str
    this_start: int
    this_end: int
    source_start: int
    source_end: int

    @classmethod
    def from_passage(cls, pair: str, p: AlignedPassage) -> PanCase:
        """A detection from an aligned passage."""
        return cls(pair, p.this_offset, p.this_end, p.source_offset, p.source_end)

    @property
    def size(self) -> int:
        """Characters of both documents (the PAN case is a set of references into both)."""
        return (self.this_end - self.this_start) + (self.source_end - self.source_start)


@dataclasses.dataclass(frozen=True)
class PanScores:
    """Macro case precision/recall, granularity and plagdet of a set of detections."""

    cases: int
    detections: int
    precision: float
    recall: float
    granularity: float
    plagdet: float


def _overlap(a0: int, a1: int, b0: int, b1: int) -> bool:
    return max(a0, b0) < min(a1, b1)


def _detects(r: PanCase, s: PanCase) -> bool:
    """Potthast et al.: r detects s iff they share characters in both documents."""
    return (
        r.pair == s.pair
        and _overlap(r.this_start, r.this_end, s.this_start, s.this_end)
        and _overlap(r.source_start, r.source_end, s.source_start, s.source_end)
    )


def _union_inside(lo: int, hi: int, spans: Iterable[tuple[int, int]]) -> int:
    """Characters of ``[lo, hi)`` covered by the union of ``spans``."""
    clipped = sorted((max(a, lo), min(b, hi)) for a, b in spans if max(a, lo) < min(b, hi))
    total, reach = 0, lo
    for a, b in clipped:
        a = max(a, reach)
        if b > a:
            total += b - a
            reach = b
    return total


def _covered_share(s: PanCase, others: Sequence[PanCase]) -> float:
    """|union over r detecting s of (s ⊓ r)| / |s|: the PAN per-case recall term."""
    hits = [r for r in others if _detects(r, s)]
    this = _union_inside(s.this_start, s.this_end, ((r.this_start, r.this_end) for r in hits))
    src = _union_inside(
        s.source_start, s.source_end, ((r.source_start, r.source_end) for r in hits)
    )
    return (this + src) / s.size if s.size else 0.0


def _by_pair(items: Iterable[PanCase]) -> dict[str, list[PanCase]]:
    out: dict[str, list[PanCase]] = {}
    for c in items:
        out.setdefault(c.pair, []).append(c)
    return out


def pan_measures(cases: Sequence[PanCase], detections: Sequence[PanCase]) -> PanScores:
    """The PAN plagiarism-detection measures (Potthast et al. 2010), exactly.

    ``prec = 1/|R| Σ_r |∪_s (s ⊓ r)| / |r|``, ``rec = 1/|S| Σ_s |∪_r (s ⊓ r)| / |s|`` where
    ``s ⊓ r = s ∩ r`` if ``r`` detects ``s`` (overlap in both documents) else ∅, characters
    counted in both documents; ``gran = mean over detected cases of the number of detections
    detecting it`` (1 when none is detected); ``plagdet = F1 / log2(1 + gran)``.  As in the PAN
    evaluation script, precision and recall are 1 with neither cases nor detections and 0 when
    only one side is empty.  Exact; O(Σ_pairs cases × detections).
    """
    if not cases and not detections:
        return PanScores(0, 0, 1.0, 1.0, 1.0, 1.0)
    if not cases or not detections:
        return PanScores(len(cases), len(detections), 0.0, 0.0, 1.0, 0.0)
    case_map, det_map = _by_pair(cases), _by_pair(detections)
    recall = sum(_covered_share(s, det_map.get(s.pair, [])) for s in cases) / len(cases)
    precision = sum(_covered_share(r, case_map.get(r.pair, [])) for r in detections) / len(
        detections
    )
    counts = [sum(_detects(r, s) for r in det_map.get(s.pair, [])) for s in cases]
    detected = [n for n in counts if n]
    granularity = sum(detected) / len(detected) if detected else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    plagdet = f1 / math.log2(1 + granularity)
    return PanScores(len(cases), len(detections), precision, recall, granularity, plagdet)


# --- labelled pairs ----------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class LabelledSpans:
    """A labelled pair: the suspicious and the source document's ids, its group, and the
    copied passages as ``(this_offset, this_length, source_offset, source_length)``."""

    susp: str
    src: str
    group: str
    spans: tuple[tuple[int, int, int, int], ...]

    @property
    def key(self) -> str:
        """The pair's id in :class:`PanCase` (``susp \\t src``)."""
        return f"{self.susp}\t{self.src}"


def _span(feature: Mapping[str, Any], where: str) -> tuple[int, int, int, int]:
    try:
        span = tuple(
            int(feature.get(k, 0))
            for k in ("this_offset", "this_length", "source_offset", "source_length")
        )
    except (TypeError, ValueError) as exc:
        raise InputError(f"{where}: a passage's offsets and lengths must be integers") from exc
    if min(span) < 0:
        raise InputError(f"{where}: a passage has a negative offset or length")
    return span  # type: ignore[return-value]


def read_alignment_labels(
    path: str | Path,
    id_fields: tuple[str, str] = ("susp", "src"),
    group_field: str = "category",
) -> list[LabelledSpans]:
    """The labelled pairs of a JSON Lines file (the format in the module docstring), in file
    order; a pair without ``group_field`` is in the group ``"all"``.  A malformed line raises
    ``InputError`` naming the file and line."""
    out: list[LabelledSpans] = []
    for number, obj in enumerate(read_jsonl(path), 1):
        where = f"{path}:{number}"
        susp, src = obj.get(id_fields[0]), obj.get(id_fields[1])
        if susp is None or src is None:
            raise InputError(f"{where}: missing {id_fields[0]!r} or {id_fields[1]!r}")
        features = obj.get("features") or []
        if not isinstance(features, list) or not all(isinstance(f, dict) for f in features):
            raise InputError(f"{where}: 'features' must be a list of objects")
        spans = tuple(_span(f, where) for f in features if "this_offset" in f)
        out.append(LabelledSpans(str(susp), str(src), str(obj.get(group_field, "all")), spans))
    return out


# --- the two aligners ------------------------------------------------------------------------


def copied_mask(
    config: OriginConfig,
    source: tuple[str, Tokens],
    suspicious: tuple[str, Tokens],
    suspicious_length: int,
) -> Mask:
    """Characters of the suspicious text inside segments copied from the source."""
    det = OriginDetector(config, reject_repeated_ids=False)
    (src_id, src_tokens), (susp_id, susp_tokens) = source, suspicious
    det.process_hashes(src_id, hash_forms(src_tokens.forms, config.seed))
    result = det.process_hashes(susp_id, hash_forms(susp_tokens.forms, config.seed))
    report = det.report(result, susp_tokens)
    mask = np.zeros(suspicious_length, dtype=bool)
    for seg in report.segments:
        if seg.copied and seg.origin == src_id:
            mask[seg.start : seg.end] = True
    return mask


#: An aligner under evaluation: a labelled pair -> the predicted characters of the suspicious
#: text, and the predicted passages as PAN detections (``None`` when it gives no source spans).
Predict = Callable[[LabelledSpans], tuple[Mask, list[PanCase] | None]]


def _origin_predictor(texts: Mapping[str, str], cfg: OriginConfig) -> Predict:
    tokens: dict[str, Tokens] = {}

    def toks(doc_id: str) -> Tokens:
        if doc_id not in tokens:
            tokens[doc_id] = tokenize(texts[doc_id], TEXT_CONFIG)
        return tokens[doc_id]

    def predict(pair: LabelledSpans) -> tuple[Mask, list[PanCase] | None]:
        length = len(texts[pair.susp])
        src, susp = (pair.src, toks(pair.src)), (pair.susp, toks(pair.susp))
        return copied_mask(cfg, src, susp, length), None

    return predict


def _passages_predictor(texts: Mapping[str, str], cfg: AlignmentConfig) -> Predict:
    """Aligns each pair from scratch (both texts prepared inside the timed call)."""

    def predict(pair: LabelledSpans) -> tuple[Mask, list[PanCase] | None]:
        found = align_prepared(
            prepare_text(texts[pair.src], cfg), prepare_text(texts[pair.susp], cfg), cfg
        )
        return prediction(pair, len(texts[pair.susp]), found)

    return predict


def prediction(
    pair: LabelledSpans, length: int, found: Sequence[AlignedPassage]
) -> tuple[Mask, list[PanCase]]:
    """What aligned passages predict: the suspicious characters they cover and the
    detections for :func:`pan_measures`."""
    mask = np.zeros(length, dtype=bool)
    for p in found:
        mask[p.this_offset : p.this_end] = True
    return mask, [PanCase.from_passage(pair.key, p) for p in found]


def score_alignment(
    pairs: Sequence[LabelledSpans],
    texts: Mapping[str, str],
    predict: Predict,
    progress: Callable[[str], None] | None = None,
) -> dict[str, AlignmentScore]:
    """Run ``predict`` on every pair and score it per group (groups in sorted order); the PAN
    measures only where ``predict`` gives detections for every pair of the group."""
    counts: dict[str, list[int]] = {}
    seconds: dict[str, float] = {}
    cases: dict[str, list[PanCase]] = {}
    found: dict[str, list[PanCase] | None] = {}
    for n, pair in enumerate(pairs):
        truth = np.zeros(len(texts[pair.susp]), dtype=bool)
        for a, length, _, _ in pair.spans:
            truth[a : a + length] = True
        t0 = time.perf_counter()
        pred, detections = predict(pair)
        seconds[pair.group] = seconds.get(pair.group, 0.0) + time.perf_counter() - t0
        acc = counts.setdefault(pair.group, [0, 0, 0, 0])
        acc[0] += 1
        acc[1] += int(truth.sum())
        acc[2] += int(pred.sum())
        acc[3] += int((truth & pred).sum())
        cases.setdefault(pair.group, []).extend(
            PanCase(pair.key, a, a + la, b, b + lb) for a, la, b, lb in pair.spans
        )
        kept = found.setdefault(pair.group, [])
        if detections is None:
            found[pair.group] = None
        elif kept is not None:
            kept.extend(detections)
        if progress and n % 500 == 499:
            progress(f"alignment: {n + 1} pairs")
    out: dict[str, AlignmentScore] = {}
    for c in sorted(counts):
        n_pairs, true, predicted, matched = counts[c]
        ms = 1000 * seconds[c] / n_pairs
        dets = found[c]
        if dets is None:
            out[c] = AlignmentScore(
                c, n_pairs, true, predicted, matched, cases=len(cases[c]), ms_per_pair=ms
            )
            continue
        pan = pan_measures(cases[c], dets)
        out[c] = AlignmentScore(
            c,
            n_pairs,
            true,
            predicted,
            matched,
            cases=pan.cases,
            detections=pan.detections,
            pan_precision=pan.precision,
            pan_recall=pan.recall,
            granularity=pan.granularity,
            plagdet=pan.plagdet,
            ms_per_pair=ms,
        )
    return out


def evaluate_alignment(
    pairs: Sequence[LabelledSpans],
    texts: Mapping[str, str],
    *,
    method: str = "passages",
    config: OriginConfig | AlignmentConfig | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, AlignmentScore]:
    """Score one aligner on labelled pairs, per group.

    ``method`` is ``"passages"`` (:func:`~neardup.similarity.alignment.align_passages`,
    ``config`` an :class:`AlignmentConfig`, default its defaults) or ``"origin"`` (origin
    detection, ``config`` an :class:`OriginConfig`, default the reference mode: All, unlimited
    memory, exact 8-shingle matches).  ``texts`` maps every id of ``pairs`` to its text
    (``NotFoundError`` names the missing ones).  ``ms_per_pair`` is the aligner's wall time per
    pair, preparing both texts included.
    """
    if method not in METHODS:
        raise ConfigError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    missing = {x for p in pairs for x in (p.susp, p.src)} - texts.keys()
    if missing:
        example = sorted(missing)[:3]
        raise NotFoundError(f"{len(missing)} pair ids have no document, e.g. {example}")
    for p in pairs:
        length = len(texts[p.susp])
        if any(a + n > length for a, n, _, _ in p.spans):
            raise InputError(f"a passage of {p.susp} ends after its text ({length} characters)")
    predict: Predict
    if method == "origin":
        if config is not None and not isinstance(config, OriginConfig):
            raise ConfigError("method 'origin' needs an OriginConfig")
        predict = _origin_predictor(texts, config or OriginConfig.reference())
    else:
        if config is not None and not isinstance(config, AlignmentConfig):
            raise ConfigError("method 'passages' needs an AlignmentConfig")
        predict = _passages_predictor(texts, config or AlignmentConfig())
    return score_alignment(pairs, texts, predict, progress)
