"""Passage alignment with origin detection on PAN 2013 text alignment (PAN-style, characters).

For each labelled (suspicious, source) pair of ``../shared/data/pan13_text_alignment``, a fresh
:class:`~neardup.detect.origin.OriginDetector` streams the source document and then the
suspicious one; the suspicious document's characters inside copied segments whose origin is
the source are the *predicted* copied characters, and the characters inside the labelled
plagiarism passages (``this_offset``, ``this_length``) the *true* ones.  Per obfuscation
category (``02-no-obfuscation``, ``03-random-obfuscation``, ``04-translation-obfuscation``,
``05-summary-obfuscation``; ``01-no-plagiarism`` has no true characters, so only its false
positives count) we report micro-averaged character precision and recall, as the PAN
measures do on the suspicious side (Potthast et al. 2010; we do not compute granularity, and
origin detection does not give source-side offsets).

Guarantees: deterministic; each document is tokenised once; memory O(largest document).
"""

from __future__ import annotations

import argparse
import dataclasses
import gzip
import json
import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from neardup.detect.origin import TEXT_CONFIG, OriginConfig, OriginDetector
from neardup.errors import InputError
from neardup.shingles import hash_forms
from neardup.text import Tokens, tokenize

__all__ = ["AlignmentScore", "copied_mask", "evaluate_alignment", "render_markdown"]


@dataclasses.dataclass(frozen=True)
class AlignmentScore:
    """Character-level scores of one category (micro-averaged over its pairs)."""

    category: str
    pairs: int
    true_chars: int
    predicted_chars: int
    matched_chars: int

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


def evaluate_alignment(
    data_dir: Path | None = None,
    *,
    config: OriginConfig | None = None,
    limit: int | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, AlignmentScore]:
    """Score origin detection as passage alignment on PAN13, per obfuscation category.

    ``config`` defaults to the reference mode (All, unlimited memory: exact 8-shingle
    matches); ``limit`` caps the number of pairs per category (in file order) for quick runs.
    """
    data = Path(data_dir) if data_dir else Path(__file__).resolve().parents[4] / "shared" / "data"
    folder = data / "pan13_text_alignment"
    if not (folder / "docs.jsonl.gz").exists():
        raise InputError(f"PAN13 text alignment data not found in {folder}")
    cfg = config or OriginConfig.reference()
    texts: dict[str, str] = {}
    with gzip.open(folder / "docs.jsonl.gz", "rt", encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            texts[str(row["id"])] = row["text"] or ""
    tokens: dict[str, Tokens] = {}

    def toks(doc_id: str) -> Tokens:
        if doc_id not in tokens:
            tokens[doc_id] = tokenize(texts[doc_id], TEXT_CONFIG)
        return tokens[doc_id]

    totals: dict[str, list[int]] = {}
    with gzip.open(folder / "labels.jsonl.gz", "rt", encoding="utf-8") as fh:
        for n, line in enumerate(fh):
            row = json.loads(line)
            susp, src, category = str(row["susp"]), str(row["src"]), str(row["category"])
            if limit is not None and totals.get(category, [0])[0] >= limit:
                continue
            if susp not in texts or src not in texts:
                raise InputError(f"PAN13 label refers to a missing document: {susp} / {src}")
            length = len(texts[susp])
            truth = np.zeros(length, dtype=bool)
            for feat in row.get("features") or []:
                if "this_offset" not in feat:  # metadata entries ("about", "md5") mark nothing
                    continue
                a = int(feat["this_offset"])
                truth[a : a + int(feat["this_length"])] = True
            pred = copied_mask(cfg, (src, toks(src)), (susp, toks(susp)), length)
            acc = totals.setdefault(category, [0, 0, 0, 0])
            acc[0] += 1
            acc[1] += int(truth.sum())
            acc[2] += int(pred.sum())
            acc[3] += int((truth & pred).sum())
            if progress and n % 500 == 499:
                progress(f"alignment: {n + 1} pairs")
    return {c: AlignmentScore(c, *v) for c, v in sorted(totals.items())}


def render_markdown(results: Mapping[str, Mapping[str, AlignmentScore]]) -> str:
    """One table per configuration label: category, pairs, precision, recall, F1."""
    lines = []
    for label, scores in results.items():
        lines += [f"### PAN13 passage alignment: {label}", ""]
        lines += ["| category | pairs | true chars | predicted | precision % | recall % | F1 % |"]
        lines += ["|---|---|---|---|---|---|---|"]
        for s in scores.values():
            # with nothing to find, only the falsely predicted characters mean anything
            recall = f"{100 * s.recall:.1f}" if s.true_chars else "n/a"
            f1 = f"{100 * s.f1:.1f}" if s.true_chars else "n/a"
            precision = f"{100 * s.precision:.1f}" if s.true_chars else "n/a"
            lines.append(
                f"| {s.category} | {s.pairs} | {s.true_chars} | {s.predicted_chars} |"
                f" {precision} | {recall} | {f1} |"
            )
        lines.append("")
    return "\n".join(lines)


ALIGNMENT_CONFIGS: dict[str, OriginConfig] = {
    "All + unlimited (reference, exact 8-shingles)": OriginConfig.reference(),
    "NHs + LS + BE, 1 MB table": OriginConfig(memory_bytes=1_000_000),
}


def run_alignment(
    out_dir: Path,
    *,
    data_dir: Path | None = None,
    limit: int | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, dict[str, AlignmentScore]]:
    """Evaluate :data:`ALIGNMENT_CONFIGS`; write ``alignment.json`` and ``alignment.md``."""
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
    """``python -m neardup.evaluation.alignment --out docs/origin [--limit N]``."""
    parser = argparse.ArgumentParser(description="PAN13 passage alignment by origin detection")
    parser.add_argument("--out", type=Path, default=Path("docs/origin"))
    parser.add_argument("--data", type=Path, default=None)
    parser.add_argument("--limit", type=int, default=None)
    args = parser.parse_args(list(argv) if argv is not None else None)
    results = run_alignment(
        args.out,
        data_dir=args.data,
        limit=args.limit,
        progress=lambda m: print(m, file=sys.stderr, flush=True),
    )
    print(render_markdown(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
