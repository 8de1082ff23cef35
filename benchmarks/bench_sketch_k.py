"""Choosing the sentence sketch's default k: quality on Reuters with planted copies vs speed.

For originals drawn from Reuters-21578 (deterministic seed), edited copies are planted with
the demo's generator (``resend``, ``correction``, ``trimmed``, ``rewritten``; see
``neardup.cli.demo.edit_text``).  For every pair (original, copy), and for random pairs of
unrelated articles, the exact Jaccard of the full sentence-hash sets is the reference; for
each k the bottom-k estimate decides ``>= threshold`` and is scored by its agreement with the
exact decision (all pairs, and pairs of long articles with >= 16 sentences where sketches are
trimmed) and its mean absolute error.  Speed: median ``dedup_result_set`` latency (cache
off) on result sets of 100 real articles + 12 planted copies (random articles, and long
articles with >= 16 sentences), and the signature size.

Run:  /work/venv/bin/python benchmarks/bench_sketch_k.py   (about a minute)
Writes benchmarks/results/sketch_k.json.
"""

from __future__ import annotations

import random
import statistics
import time
from typing import Any

import numpy as np

from _common import load_texts, save
from neardup.cli.demo import EDITS, edit_text, plant_copies
from neardup.detect.resultset import ResultSetDeduper
from neardup.similarity import bottomk_jaccard, jaccard
from neardup.sketch import sign
from neardup.sketch.bottomk import sentence_hashes

KS = (2, 4, 8, 12, 16, 24, 32, 64)
THRESHOLD = 0.5
SEED = 2026


def _latency(sigs: list[list[Any]], k: int) -> list[float]:
    deduper = ResultSetDeduper(max_entries=0)
    for s in sigs:
        deduper(s, THRESHOLD, k=k)
    times = []
    for _ in range(100):
        for s in sigs:
            start = time.perf_counter()
            deduper(s, THRESHOLD, k=k)
            times.append((time.perf_counter() - start) * 1e6)
    return times


def main() -> None:
    texts = load_texts()
    rng = random.Random(SEED)
    hashes = [sentence_hashes(t) for t in texts]
    long_ids = [i for i, h in enumerate(hashes) if h.size >= 16]
    originals = rng.sample(range(len(texts)), 1500) + long_ids
    pairs: list[tuple[np.ndarray, np.ndarray, str, bool]] = []
    for n in originals:
        for edit in EDITS:
            copy = sentence_hashes(edit_text(texts[n], edit, rng))
            pairs.append((hashes[n], copy, edit, hashes[n].size >= 16))
    unrelated = []
    for _ in range(20000):
        a, b = rng.sample(range(len(texts)), 2)
        unrelated.append((hashes[a], hashes[b]))
    exact = [jaccard(a, b) for a, b, _, _ in pairs]
    exact_u = [jaccard(a, b) for a, b in unrelated]

    sets = []
    long_sets = []
    for s in range(5):
        draw = random.Random(s).sample(texts, 100)
        sets.append(plant_copies(draw, 12, s)[0])
        draw = [texts[i] for i in random.Random(s).sample(long_ids, 100)]
        long_sets.append(plant_copies(draw, 12, s)[0])

    rows: list[dict[str, Any]] = []
    for k in KS:
        est = [bottomk_jaccard(a, b, k) for a, b, _, _ in pairs]
        agree = [(e >= THRESHOLD) == (x >= THRESHOLD) for e, x in zip(est, exact, strict=True)]
        long_agree = [g for g, p in zip(agree, pairs, strict=True) if p[3]]
        est_u = [bottomk_jaccard(a, b, k) for a, b in unrelated]
        false_pos = sum(e >= THRESHOLD > x for e, x in zip(est_u, exact_u, strict=True))
        by_edit = {
            edit: float(np.mean([g for g, p in zip(agree, pairs, strict=True) if p[2] == edit]))
            for edit in EDITS
        }
        sigs = [[sign(t, "sentences", k=k) for t in ranked] for ranked in sets]
        long_sigs = [[sign(t, "sentences", k=k) for t in ranked] for ranked in long_sets]
        times = _latency(sigs, k)
        long_times = _latency(long_sigs, k)
        sig_bytes = statistics.mean(len(x.to_bytes()) for s in sigs for x in s)
        long_bytes = statistics.mean(len(x.to_bytes()) for s in long_sigs for x in s)
        row = {
            "k": k,
            "agreement_all": round(float(np.mean(agree)), 4),
            "agreement_long": round(float(np.mean(long_agree)), 4),
            "agreement_by_edit": {e: round(v, 4) for e, v in by_edit.items()},
            "mae_all": round(float(np.mean(np.abs(np.array(est) - exact))), 4),
            "mae_long": round(
                float(
                    np.mean([abs(e - x) for e, x, p in zip(est, exact, pairs, strict=True) if p[3]])
                ),
                4,
            ),
            "unrelated_false_positives": int(false_pos),
            "dedup_median_us": round(statistics.median(times), 1),
            "signature_bytes_mean": round(sig_bytes, 1),
            "dedup_median_us_long_articles": round(statistics.median(long_times), 1),
            "signature_bytes_mean_long_articles": round(long_bytes, 1),
        }
        rows.append(row)
        print(row)
    path = save(
        "sketch_k",
        {
            "threshold": THRESHOLD,
            "pairs": len(pairs),
            "long_pairs": sum(p[3] for p in pairs),
            "unrelated_pairs": len(unrelated),
            "exact_dup_rate_by_edit": {
                e: round(
                    float(
                        np.mean(
                            [x >= THRESHOLD for x, p in zip(exact, pairs, strict=True) if p[2] == e]
                        )
                    ),
                    4,
                )
                for e in EDITS
            },
            "rows": rows,
        },
        libraries=("neardup", "numpy", "xxhash", "PyStemmer"),
    )
    print("wrote", path)


if __name__ == "__main__":
    main()
