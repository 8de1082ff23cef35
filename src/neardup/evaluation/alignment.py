"""Passage alignment on PAN 2013 text alignment: two aligners, PAN-style measures.

For each labelled (suspicious, source) pair of ``../shared/data/pan13_text_alignment`` one of
two aligners predicts the copied passages:

* ``"passages"``: :func:`neardup.similarity.alignment.align_passages` (Sanchez-Perez, Sidorov
  & Gelbukh, PAN 2014 seed-and-extend), which gives both the suspicious and the source spans;
* ``"origin"``: a fresh :class:`~neardup.detect.origin.OriginDetector` (seed 004, exact
  8-shingles) streams the source and then the suspicious document; the suspicious characters
  inside segments whose origin is the source are predicted (no source-side spans).

Per obfuscation category (``01-no-plagiarism``: only false positives count;
``02-no-obfuscation``, ``03-random-obfuscation``, ``04-translation-obfuscation``,
``05-summary-obfuscation``) we report

* micro-averaged character precision / recall / F1 on the suspicious side (all pairs' characters
  pooled), and
* for ``"passages"``, the official PAN measures of Potthast, Stein, Barrón-Cedeño & Rosso, "An
  Evaluation Framework for Plagiarism Detection" (COLING 2010): macro-averaged case precision
  and recall over the characters of *both* documents, granularity and plagdet
  (:func:`pan_measures`, checked against a brute-force character-set computation in tests).

Tuning is honest: :func:`pair_split` puts every pair in the ``"tune"`` or the ``"test"`` half by
a stable hash (xxh64) of its ids; parameters are chosen on one half and reported on the other.

Guarantees: deterministic; memory O(largest document) per pair plus the PAN cases.
"""

from __future__ import annotations

import argparse
import dataclasses
import gzip
import itertools
import json
import math
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import xxhash

from neardup.detect.origin import TEXT_CONFIG, OriginConfig, OriginDetector
from neardup.errors import ConfigError, InputError
from neardup.shingles import hash_forms
from neardup.similarity.alignment import (
    AlignedPassage,
    AlignmentConfig,
    PreparedText,
    UnitPairs,
    align_pair,
    align_prepared,
    prepare_text,
    unit_pairs,
)
from neardup.text import Tokens, tokenize

__all__ = [
    "METHODS",
    "SPLITS",
    "AlignmentScore",
    "PanCase",
    "PanScores",
    "copied_mask",
    "evaluate_alignment",
    "pair_split",
    "pan_measures",
    "render_markdown",
    "tune_alignment",
]

METHODS = ("passages", "origin")
SPLITS = ("all", "tune", "test")


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


# --- data ----------------------------------------------------------------------------------------


def pair_split(susp: str, src: str) -> str:
    """``"tune"`` or ``"test"``: a stable half of the pair (xxh64 of ``susp \\t src``, seed 0)."""
    return "test" if xxhash.xxh64_intdigest(f"{susp}\t{src}".encode(), seed=0) & 1 else "tune"


@dataclasses.dataclass(frozen=True)
class _Pair:
    susp: str
    src: str
    category: str
    truths: tuple[tuple[int, int, int, int], ...]  # this_offset, this_length, src_off, src_len

    @property
    def key(self) -> str:
        return f"{self.susp}\t{self.src}"


def _folder(data_dir: Path | None) -> Path:
    data = Path(data_dir) if data_dir else Path(__file__).resolve().parents[4] / "shared" / "data"
    folder = data / "pan13_text_alignment"
    if not (folder / "docs.jsonl.gz").exists():
        raise InputError(f"PAN13 text alignment data not found in {folder}")
    return folder


def _load(
    data_dir: Path | None, split: str, limit: int | None
) -> tuple[dict[str, str], list[_Pair]]:
    if split not in SPLITS:
        raise ConfigError(f"split must be one of {', '.join(SPLITS)}, got {split!r}")
    folder = _folder(data_dir)
    texts: dict[str, str] = {}
    with gzip.open(folder / "docs.jsonl.gz", "rt", encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            texts[str(row["id"])] = row["text"] or ""
    pairs: list[_Pair] = []
    per_category: dict[str, int] = {}
    with gzip.open(folder / "labels.jsonl.gz", "rt", encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            susp, src, category = str(row["susp"]), str(row["src"]), str(row["category"])
            if split != "all" and pair_split(susp, src) != split:
                continue
            if limit is not None and per_category.get(category, 0) >= limit:
                continue
            if susp not in texts or src not in texts:
                raise InputError(f"PAN13 label refers to a missing document: {susp} / {src}")
            truths = tuple(
                (
                    int(f["this_offset"]),
                    int(f["this_length"]),
                    int(f.get("source_offset", 0)),
                    int(f.get("source_length", 0)),
                )
                # metadata entries ("about", "md5") mark nothing
                for f in row.get("features") or []
                if "this_offset" in f
            )
            per_category[category] = per_category.get(category, 0) + 1
            pairs.append(_Pair(susp, src, category, truths))
    return texts, pairs


# --- the two aligners ------------------------------------------------------------------------


def copied_mask(
    config: OriginConfig,
    source: tuple[str, Tokens],
    suspicious: tuple[str, Tokens],
    suspicious_length: int,
) -> np.ndarray[Any, np.dtype[np.bool_]]:
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


_Predict = Callable[[_Pair], tuple[np.ndarray[Any, np.dtype[np.bool_]], list[PanCase] | None]]


def _origin_predictor(texts: Mapping[str, str], cfg: OriginConfig) -> _Predict:
    tokens: dict[str, Tokens] = {}

    def toks(doc_id: str) -> Tokens:
        if doc_id not in tokens:
            tokens[doc_id] = tokenize(texts[doc_id], TEXT_CONFIG)
        return tokens[doc_id]

    def predict(pair: _Pair) -> tuple[np.ndarray[Any, np.dtype[np.bool_]], list[PanCase] | None]:
        length = len(texts[pair.susp])
        src, susp = (pair.src, toks(pair.src)), (pair.susp, toks(pair.susp))
        return copied_mask(cfg, src, susp, length), None

    return predict


def _passages_predictor(texts: Mapping[str, str], cfg: AlignmentConfig) -> _Predict:
    """Aligns each pair from scratch (both texts prepared inside the timed call)."""

    def predict(pair: _Pair) -> tuple[np.ndarray[Any, np.dtype[np.bool_]], list[PanCase] | None]:
        found = align_prepared(
            prepare_text(texts[pair.src], cfg), prepare_text(texts[pair.susp], cfg), cfg
        )
        return _as_prediction(pair, len(texts[pair.susp]), found)

    return predict


def _as_prediction(
    pair: _Pair, length: int, found: Sequence[AlignedPassage]
) -> tuple[np.ndarray[Any, np.dtype[np.bool_]], list[PanCase]]:
    mask = np.zeros(length, dtype=bool)
    for p in found:
        mask[p.this_offset : p.this_end] = True
    return mask, [PanCase.from_passage(pair.key, p) for p in found]


def _cached_predictor(
    texts: Mapping[str, str], cfg: AlignmentConfig, seeded: Mapping[str, UnitPairs]
) -> _Predict:
    """For tuning: extension and filtering of seeds computed once per pair (``seeded``)."""

    def predict(pair: _Pair) -> tuple[np.ndarray[Any, np.dtype[np.bool_]], list[PanCase] | None]:
        return _as_prediction(pair, len(texts[pair.susp]), align_pair(seeded[pair.key], cfg))

    return predict


def _score(
    pairs: Sequence[_Pair],
    texts: Mapping[str, str],
    predict: _Predict,
    progress: Callable[[str], None] | None = None,
) -> dict[str, AlignmentScore]:
    counts: dict[str, list[int]] = {}
    seconds: dict[str, float] = {}
    cases: dict[str, list[PanCase]] = {}
    found: dict[str, list[PanCase] | None] = {}
    for n, pair in enumerate(pairs):
        truth = np.zeros(len(texts[pair.susp]), dtype=bool)
        for a, length, _, _ in pair.truths:
            truth[a : a + length] = True
        t0 = time.perf_counter()
        pred, detections = predict(pair)
        seconds[pair.category] = seconds.get(pair.category, 0.0) + time.perf_counter() - t0
        acc = counts.setdefault(pair.category, [0, 0, 0, 0])
        acc[0] += 1
        acc[1] += int(truth.sum())
        acc[2] += int(pred.sum())
        acc[3] += int((truth & pred).sum())
        cases.setdefault(pair.category, []).extend(
            PanCase(pair.key, a, a + la, b, b + lb) for a, la, b, lb in pair.truths
        )
        kept = found.setdefault(pair.category, [])
        if detections is None:
            found[pair.category] = None
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
    data_dir: Path | None = None,
    *,
    method: str = "origin",
    config: OriginConfig | AlignmentConfig | None = None,
    limit: int | None = None,
    split: str = "all",
    progress: Callable[[str], None] | None = None,
) -> dict[str, AlignmentScore]:
    """Score one aligner on PAN13, per obfuscation category.

    ``method`` is ``"passages"`` (:func:`~neardup.similarity.alignment.align_passages`,
    ``config`` an :class:`AlignmentConfig`, default its defaults) or ``"origin"`` (origin
    detection, ``config`` an :class:`OriginConfig`, default the reference mode: All, unlimited
    memory, exact 8-shingle matches); ``split`` keeps the ``"tune"`` or ``"test"`` half
    (:func:`pair_split`) or ``"all"``; ``limit`` caps the pairs per category (file order).
    ``ms_per_pair`` is the aligner's wall time per pair, preparing both texts included.
    """
    if method not in METHODS:
        raise ConfigError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    texts, pairs = _load(data_dir, split, limit)
    predict: _Predict
    if method == "origin":
        if config is not None and not isinstance(config, OriginConfig):
            raise ConfigError("method 'origin' needs an OriginConfig")
        predict = _origin_predictor(texts, config or OriginConfig.reference())
    else:
        if config is not None and not isinstance(config, AlignmentConfig):
            raise ConfigError("method 'passages' needs an AlignmentConfig")
        predict = _passages_predictor(texts, config or AlignmentConfig())
    return _score(pairs, texts, predict, progress)


# --- tuning --------------------------------------------------------------------------------------

#: The grid :func:`tune_alignment` searches by default: the boundary and summary settings
#: around the defaults (the seed settings' grid around the paper's values is in docs/eval.md).
TUNING_GRID: dict[str, tuple[Any, ...]] = {
    "boundary_window": (4, 6, 8),
    "boundary_density": (0.5, 0.6),
    "summary_source_ratio": (3.0, 4.0, 5.0),
    "novel_cosine": (0.0, 0.1),
}

#: Categories whose PAN plagdet the tuning objective averages (every category with cases).
TUNING_CATEGORIES = (
    "02-no-obfuscation",
    "03-random-obfuscation",
    "04-translation-obfuscation",
    "05-summary-obfuscation",
)


def tune_alignment(
    data_dir: Path | None = None,
    *,
    grid: Mapping[str, Sequence[Any]] | None = None,
    base: AlignmentConfig | None = None,
    split: str = "tune",
    limit: int | None = None,
    progress: Callable[[str], None] | None = None,
) -> list[tuple[float, AlignmentConfig, dict[str, AlignmentScore]]]:
    """Score every config of ``grid`` (fields of :class:`AlignmentConfig` over ``base``) on one
    half; best first by the mean PAN plagdet of :data:`TUNING_CATEGORIES` (ties: mean micro
    F1, then fewer false-positive characters on no-plagiarism, then grid order)."""
    texts, pairs = _load(data_dir, split, limit)
    space = dict(grid or TUNING_GRID)
    base_cfg = base or AlignmentConfig()
    configs = [
        dataclasses.replace(base_cfg, **dict(zip(space, values, strict=True)))
        for values in itertools.product(*space.values())
    ]
    # Seeding depends only on the text settings and the two seed floors: done once per pair
    # and text setting at the lowest thresholds of the grid, then filtered per config.
    floors = (min(c.seed_floors[0] for c in configs), min(c.seed_floors[1] for c in configs))
    seeded: dict[tuple[Any, ...], dict[str, UnitPairs]] = {}
    rows: list[
        tuple[tuple[float, float, int, int], AlignmentConfig, dict[str, AlignmentScore]]
    ] = []
    for n, cfg in enumerate(configs):
        key = (cfg.text, cfg.min_sentence_words, cfg.max_text_chars)
        if key not in seeded:
            prepared: dict[str, PreparedText] = {}
            for doc in sorted({p.susp for p in pairs} | {p.src for p in pairs}):
                prepared[doc] = prepare_text(texts[doc], cfg)
            seeded[key] = {
                p.key: unit_pairs(prepared[p.src], prepared[p.susp], *floors) for p in pairs
            }
        scores = _score(pairs, texts, _cached_predictor(texts, cfg, seeded[key]))
        f1 = float(np.mean([scores[c].f1 for c in TUNING_CATEGORIES if c in scores]))
        plagdet = float(
            np.mean([scores[c].plagdet or 0.0 for c in TUNING_CATEGORIES if c in scores])
        )
        fp = scores["01-no-plagiarism"].predicted_chars if "01-no-plagiarism" in scores else 0
        rows.append(((-plagdet, -f1, fp, n), cfg, scores))
        if progress:
            changed = {k: getattr(cfg, k) for k in space}
            progress(f"tune {n + 1}/{len(configs)}: {changed} plagdet {plagdet:.4f}")
    rows.sort(key=lambda r: r[0])
    return [(-key[0], cfg, scores) for key, cfg, scores in rows]


# --- rendering and the origin helper's run --------------------------------------------------------


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}"


def render_markdown(results: Mapping[str, Mapping[str, AlignmentScore]]) -> str:
    """One table per configuration label: category, pairs, micro character P/R/F1 on the
    suspicious side and, when computed, the PAN measures."""
    lines = []
    for label, scores in results.items():
        lines += [f"### PAN13 passage alignment: {label}", ""]
        pan = any(s.plagdet is not None for s in scores.values())
        head = "| category | pairs | true chars | predicted | precision % | recall % | F1 % |"
        rule = "|---|---|---|---|---|---|---|"
        if pan:
            head += " PAN prec % | PAN rec % | gran. | plagdet % | ms/pair |"
            rule += "---|---|---|---|---|"
        lines += [head, rule]
        for s in scores.values():
            # with nothing to find, only the falsely predicted characters mean anything
            real = bool(s.true_chars)
            row = (
                f"| {s.category} | {s.pairs} | {s.true_chars} | {s.predicted_chars} |"
                f" {_pct(s.precision if real else None)} | {_pct(s.recall if real else None)} |"
                f" {_pct(s.f1 if real else None)} |"
            )
            if pan:
                gran = "n/a" if s.granularity is None or not real else f"{s.granularity:.3f}"
                ms = "n/a" if s.ms_per_pair is None else f"{s.ms_per_pair:.1f}"
                row += (
                    f" {_pct(s.pan_precision if real else None)} |"
                    f" {_pct(s.pan_recall if real else None)} | {gran} |"
                    f" {_pct(s.plagdet if real else None)} | {ms} |"
                )
            lines.append(row)
        lines.append("")
    return "\n".join(lines)


ALIGNMENT_CONFIGS: dict[str, OriginConfig] = {
    "All + unlimited (reference, exact 8-shingles)": OriginConfig.reference(),
    "NHs + LS + BE, 1 MB table": OriginConfig.paper(memory_bytes=1_000_000),
}


def run_alignment(
    out_dir: Path,
    *,
    data_dir: Path | None = None,
    limit: int | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, dict[str, AlignmentScore]]:
    """Evaluate origin detection's :data:`ALIGNMENT_CONFIGS`; write ``alignment.json`` and
    ``alignment.md`` (the origin helper's figures, docs/origin.md)."""
    results = {
        label: evaluate_alignment(data_dir, config=cfg, limit=limit, progress=progress)
        for label, cfg in ALIGNMENT_CONFIGS.items()
    }
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    plain = {k: {c: s.to_dict() for c, s in v.items()} for k, v in results.items()}
    (out_dir / "alignment.json").write_text(json.dumps(plain, indent=1))
    (out_dir / "alignment.md").write_text(render_markdown(results))
    return results


def main(argv: Iterable[str] | None = None) -> int:
    """``python -m neardup.evaluation.alignment --tune [--split tune] [--limit N]`` prints the
    grid ranked on one half; without ``--tune`` it writes the origin runs (``--out``)."""
    parser = argparse.ArgumentParser(description="PAN13 passage alignment")
    parser.add_argument("--out", type=Path, default=Path("docs/origin"))
    parser.add_argument("--data", type=Path, default=None)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--tune", action="store_true", help="rank TUNING_GRID on --split")
    parser.add_argument("--split", choices=SPLITS, default="tune")
    parser.add_argument("--top", type=int, default=10)
    args = parser.parse_args(list(argv) if argv is not None else None)
    say = lambda m: print(m, file=sys.stderr, flush=True)  # noqa: E731
    if args.tune:
        ranked = tune_alignment(args.data, split=args.split, limit=args.limit, progress=say)
        base = AlignmentConfig().to_dict()
        for plagdet, cfg, scores in ranked[: args.top]:
            changed = {k: v for k, v in cfg.to_dict().items() if v != base[k]}
            print(f"mean plagdet {plagdet:.4f} {changed}")
            print(render_markdown({"config": scores}))
        return 0
    results = run_alignment(args.out, data_dir=args.data, limit=args.limit, progress=say)
    print(render_markdown(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
