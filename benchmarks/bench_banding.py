"""Batch LSH banding by measurement: recall, precision and CPU of each band layout.

The batch finds a duplicate pair only if the two documents share a whole band of their 128
MinHash values (candidate generation); every candidate is then verified exactly (word
4-shingle Jaccard >= the threshold).  So the band layout decides recall (a pair above the
threshold that shares no band is lost) and CPU (every candidate is verified), never
precision of a verified pair.  This script measures, for each ``bands`` (``rows = 128 //
bands``), on corpora of edited copies:

* **verifiable recall**: of the pairs that pass verification under the reference layout
  (64 bands of 2 rows: a pair at Jaccard 0.5 shares a band with probability 1 - 1e-8), the
  share found; the clusters' pair precision, recall and F1 against the planted truth;
* candidate and verified pairs, and the CPU seconds of ``neardup.batch.run`` in this
  process (median of ``--repeat``, layouts alternated).

Corpora (deterministic; never written into the repository):

* ``tune`` (the layout is chosen on this one): the planted Reuters corpus
  (``_corpora.planted_corpus``, seed 1) whose copies carry word edits (1-8 %), keyboard typos
  (2-10 % of words), typographic punctuation, word edits with typographic punctuation, a
  dropped or an appended sentence, or nothing;
* ``heldout-planted``: the same generator, another seed (2), every text typographic;
* ``heldout-real``: the real scraped articles of provenance_news_2018_dev replicated with
  word edits and typos (``_corpora.provenance_replicated``, seed 3): real Unicode text that
  nothing was chosen on; its truth is the source article (wire reprints among the sources
  are real duplicates too, so F1 there is a lower bound; verifiable recall is exact).

Run: ``python benchmarks/bench_banding.py [--n 50000] [--bands 16,21,25,32,42,64]
[--repeat 2]``; ``--quick`` for 10,000 documents.  Writes ``results/banding.json``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from _common import RESULTS, loadavg, save
from _corpora import EDITED_KINDS, planted_corpus, provenance_replicated

REFERENCE_BANDS = 64


def pair_quality(truth: np.ndarray, pred: np.ndarray) -> dict[str, float]:
    """Pair precision, recall and F1 of ``pred`` clusters against ``truth`` clusters."""

    def comb2(x: np.ndarray) -> float:
        x = x.astype(np.float64)
        return float((x * (x - 1) / 2).sum())

    _, t = np.unique(truth, return_inverse=True)
    _, p = np.unique(pred, return_inverse=True)
    both = comb2(np.unique(t.astype(np.int64) * (p.max() + 1) + p, return_counts=True)[1])
    in_truth, in_pred = comb2(np.bincount(t)), comb2(np.bincount(p))
    precision = both / in_pred if in_pred else 1.0
    recall = both / in_truth if in_truth else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1}


def run_layout(path: Path, bands: int) -> tuple[float, Any]:
    from neardup.batch import DedupConfig, run

    start = time.process_time()
    result = run(path, DedupConfig(bands=bands))
    return time.process_time() - start, result


def passed_pairs(result: Any) -> set[tuple[int, int]]:
    ok = result.scores.passed
    return set(map(tuple, result.pairs[ok].tolist()))


def measure(name: str, path: Path, truth: np.ndarray, layouts: list[int], repeat: int) -> dict:
    run_layout(path, REFERENCE_BANDS)  # warm the compiled kernels and the page cache
    cpu: dict[int, list[float]] = {b: [] for b in layouts}
    results: dict[int, Any] = {}
    for _ in range(repeat):
        for b in layouts:  # alternated, so the machine's drift falls on all layouts alike
            seconds, results[b] = run_layout(path, b)
            cpu[b].append(seconds)
    _, reference = run_layout(path, REFERENCE_BANDS)
    verifiable = passed_pairs(reference)
    rows = {}
    for b in layouts:
        found = passed_pairs(results[b])
        quality = pair_quality(truth, results[b].labels)
        rows[str(b)] = {
            "bands": b,
            "rows": 128 // b,
            "cpu_seconds_median": round(statistics.median(cpu[b]), 3),
            "cpu_seconds": [round(c, 3) for c in cpu[b]],
            "candidate_pairs": results[b].summary.candidate_pairs,
            "verified_pairs": results[b].summary.verified_pairs,
            "verifiable_recall": round(len(found & verifiable) / max(1, len(verifiable)), 5),
            **{k: round(v, 5) for k, v in quality.items()},
        }
        r = rows[str(b)]
        print(
            f"{name:16s} {b:3d}x{128 // b:<2d} cpu {r['cpu_seconds_median']:7.2f}s "
            f"candidates {r['candidate_pairs']:9,d} verifiable recall "
            f"{r['verifiable_recall']:.4f}  P {r['precision']:.4f} R {r['recall']:.4f} "
            f"F1 {r['f1']:.4f}",
            flush=True,
        )
    return {"verifiable_pairs": len(verifiable), "layouts": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=50_000)
    parser.add_argument("--bands", default="16,21,25,32,42,64")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--quick", action="store_true", help="10,000 documents, one repeat")
    parser.add_argument("--out", type=Path, default=RESULTS / "banding.json")
    args = parser.parse_args()
    if args.quick:
        args.n, args.repeat = 10_000, 1
    layouts = [int(b) for b in args.bands.split(",")]
    load_before = loadavg()
    corpora: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="neardup-banding-") as tmp:
        builds = {
            "tune": lambda p: planted_corpus(args.n, 1, p, kinds=EDITED_KINDS),
            "heldout-planted": lambda p: planted_corpus(
                args.n, 2, p, kinds=EDITED_KINDS, unicode=True
            ),
            "heldout-real": lambda p: provenance_replicated(max(2_000, args.n // 2), 3, p),
        }
        for name, build in builds.items():
            path = Path(tmp) / f"{name}.jsonl"
            truth = build(path)
            corpora[name] = {
                "documents": int(truth.shape[0]),
                **measure(name, path, truth, layouts, args.repeat),
            }
    save(
        args.out,
        {
            "benchmark": "batch banding: recall, precision and CPU per band layout",
            "threshold": 0.5,
            "num_perm": 128,
            "reference_bands": REFERENCE_BANDS,
            "n": args.n,
            "repeat": args.repeat,
            "load_before_after": [load_before, loadavg()],
            "corpora": corpora,
        },
        libraries=("neardup", "numpy", "numba"),
    )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
