"""PAN 2013 text alignment: both aligners on the shared corpus, the tuning search, the tables.

Reads ``../shared/data/pan13_text_alignment`` in place and scores, per obfuscation category
(``01-no-plagiarism``: only false positives count; ``02-no-obfuscation``,
``03-random-obfuscation``, ``04-translation-obfuscation``, ``05-summary-obfuscation``), the
aligners of :mod:`neardup.evaluation.alignment` with its measures (micro character P/R/F1 on
the suspicious side; the PAN measures of Potthast et al. 2010 for ``align_passages``).

Tuning is honest: :func:`pair_split` puts every pair in the ``"tune"`` or the ``"test"`` half by
a stable hash (xxh64) of its ids; parameters are chosen on one half and reported on the other.

Run:
    python research/pan13_alignment.py --score passages --split test     # one aligner's table
    python research/pan13_alignment.py --tune [--split tune] [--limit N] [--min-precision 0.9]
    python research/pan13_alignment.py --out docs/origin                   # origin's tables

The same scores on any labelled pairs in this format: ``neardup eval alignment LABELS --docs
DOCS``.  Deterministic.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import xxhash

from neardup.detect.origin import OriginConfig
from neardup.errors import ConfigError, InputError
from neardup.evaluation.alignment import (
    AlignmentScore,
    LabelledSpans,
    Predict,
    prediction,
    read_alignment_labels,
    score_alignment,
)
from neardup.evaluation.alignment import evaluate_alignment as evaluate_pairs
from neardup.evaluation.pairs import read_texts
from neardup.samples import data_folders
from neardup.similarity.alignment import (
    AlignmentConfig,
    PreparedText,
    UnitPairs,
    align_pair,
    prepare_text,
    unit_pairs,
)

SPLITS = ("all", "tune", "test")


def pair_split(susp: str, src: str) -> str:
    """``"tune"`` or ``"test"``: a stable half of the pair (xxh64 of ``susp \\t src``, seed 0)."""
    return "test" if xxhash.xxh64_intdigest(f"{susp}\t{src}".encode(), seed=0) & 1 else "tune"


def _folder(data_dir: Path | None) -> Path:
    candidates = [Path(data_dir)] if data_dir else data_folders()
    for data in candidates:
        folder = data / "pan13_text_alignment"
        if (folder / "docs.jsonl.gz").exists():
            return folder
    raise InputError(f"PAN13 text alignment data not found in {candidates}")


def load(
    data_dir: Path | None, split: str = "all", limit: int | None = None
) -> tuple[dict[str, str], list[LabelledSpans]]:
    """The texts and the labelled pairs of one half (``split``), at most ``limit`` pairs per
    category (file order)."""
    if split not in SPLITS:
        raise ConfigError(f"split must be one of {', '.join(SPLITS)}, got {split!r}")
    folder = _folder(data_dir)
    pairs: list[LabelledSpans] = []
    per_category: dict[str, int] = {}
    for pair in read_alignment_labels(folder / "labels.jsonl.gz"):
        if split != "all" and pair_split(pair.susp, pair.src) != split:
            continue
        if limit is not None and per_category.get(pair.group, 0) >= limit:
            continue
        per_category[pair.group] = per_category.get(pair.group, 0) + 1
        pairs.append(pair)
    wanted = {x for p in pairs for x in (p.susp, p.src)}
    return read_texts(folder / "docs.jsonl.gz", wanted), pairs


def evaluate_alignment(
    data_dir: Path | None = None,
    *,
    method: str = "origin",
    config: OriginConfig | AlignmentConfig | None = None,
    limit: int | None = None,
    split: str = "all",
    progress: Callable[[str], None] | None = None,
) -> dict[str, AlignmentScore]:
    """Score one aligner on PAN13 (:func:`neardup.evaluation.alignment.evaluate_alignment`)
    on one half (``split``), at most ``limit`` pairs per category."""
    texts, pairs = load(data_dir, split, limit)
    return evaluate_pairs(pairs, texts, method=method, config=config, progress=progress)


def _cached_predictor(
    texts: Mapping[str, str], cfg: AlignmentConfig, seeded: Mapping[str, UnitPairs]
) -> Predict:
    """For tuning: extension and filtering of seeds computed once per pair (``seeded``)."""

    def predict(pair: LabelledSpans) -> Any:
        return prediction(pair, len(texts[pair.susp]), align_pair(seeded[pair.key], cfg))

    return predict


# --- tuning --------------------------------------------------------------------------------------

#: The grid :func:`tune_alignment` searches by default: the relative seeds, the validation,
#: the gap, the summary's copy test and where boundaries are searched, around the defaults
#: (docs/eval.md has the other grids).
TUNING_GRID: dict[str, tuple[Any, ...]] = {
    "seed_relative": (0.7, 0.8, 0.9),
    "validation_cosine": (0.3, 0.34),
    "summary_copy_ratio": (1.5, 2.0),
    "max_gap_units": (3, 4, 6),
    "trim_whole_units": (True, False),
}

#: Categories whose PAN precision must reach ``min_precision`` for a config to rank first.
PRECISION_CATEGORIES = ("03-random-obfuscation", "04-translation-obfuscation")

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
    min_precision: float = 0.0,
    progress: Callable[[str], None] | None = None,
) -> list[tuple[float, AlignmentConfig, dict[str, AlignmentScore]]]:
    """Score every config of ``grid`` (fields of :class:`AlignmentConfig` over ``base``) on one
    half; best first: configs whose PAN precision on each of :data:`PRECISION_CATEGORIES`
    is at least ``min_precision`` before the others, then by the mean PAN plagdet of
    :data:`TUNING_CATEGORIES` (ties: mean micro F1, then fewer false-positive characters on
    no-plagiarism, then grid order)."""
    texts, pairs = load(data_dir, split, limit)
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
        tuple[tuple[int, float, float, int, int], AlignmentConfig, dict[str, AlignmentScore]]
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
        scores = score_alignment(pairs, texts, _cached_predictor(texts, cfg, seeded[key]))
        f1 = float(np.mean([scores[c].f1 for c in TUNING_CATEGORIES if c in scores]))
        plagdet = float(
            np.mean([scores[c].plagdet or 0.0 for c in TUNING_CATEGORIES if c in scores])
        )
        fp = scores["01-no-plagiarism"].predicted_chars if "01-no-plagiarism" in scores else 0
        short = any(
            (scores[c].pan_precision or 0.0) < min_precision
            for c in PRECISION_CATEGORIES
            if c in scores
        )
        rows.append(((int(short), -plagdet, -f1, fp, n), cfg, scores))
        if progress:
            changed = {k: getattr(cfg, k) for k in space}
            progress(f"tune {n + 1}/{len(configs)}: {changed} plagdet {plagdet:.4f}")
    rows.sort(key=lambda r: r[0])
    return [(-key[1], cfg, scores) for key, cfg, scores in rows]


# --- rendering and the runs of docs/origin.md ---------------------------------------------


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
    ``alignment.md`` (origin detection's figures in docs/origin.md)."""
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
    """``--score METHOD`` prints one aligner's table on ``--split``; ``--tune`` prints the grid
    ranked on one half; without either it writes the origin runs (``--out``)."""
    parser = argparse.ArgumentParser(description="PAN13 passage alignment")
    parser.add_argument("--out", type=Path, default=Path("docs/origin"))
    parser.add_argument("--data", type=Path, default=None)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--tune", action="store_true", help="rank TUNING_GRID on --split")
    parser.add_argument("--score", choices=("passages", "origin"), help="score on --split")
    parser.add_argument("--split", choices=SPLITS, default="tune")
    parser.add_argument("--top", type=int, default=10)
    parser.add_argument(
        "--min-precision",
        type=float,
        default=0.0,
        help="with --tune: configs below this PAN precision on random or translation rank last",
    )
    args = parser.parse_args(list(argv) if argv is not None else None)
    say = lambda m: print(m, file=sys.stderr, flush=True)  # noqa: E731
    if args.score:
        scores = evaluate_alignment(
            args.data, method=args.score, limit=args.limit, split=args.split, progress=say
        )
        print(render_markdown({f"{args.score}, {args.split} half": scores}))
        return 0
    if args.tune:
        ranked = tune_alignment(
            args.data,
            split=args.split,
            limit=args.limit,
            min_precision=args.min_precision,
            progress=say,
        )
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
