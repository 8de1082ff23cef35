"""Choosing the shingle width and the SpotSigs chain length on Reuters.

For each candidate, the exact Jaccard similarity of
* near-duplicate pairs: an article and an edited copy (10 % / 20 % of its words replaced,
  deleted or inserted), and
* unrelated pairs: 3,000 random pairs of articles more than 1,000 positions apart in the
  chronological wire (so re-sends of one story are excluded; same-topic market reports with
  the same boilerplate remain),
and the margin between them: 5th percentile of near-duplicate Jaccard minus the 99.9th
percentile of unrelated Jaccard (larger is better: a threshold fits in between), and the
share of near-duplicate pairs above the largest unrelated similarity.

Run:  /work/venv/bin/python benchmarks/bench_shingle_params.py [--docs 3000]
Writes benchmarks/results/shingle_params.json.  About half a minute.
"""

from __future__ import annotations

import argparse
import random
from typing import Any

import numpy as np

from _common import machine, read_reuters, save
from neardup.evaluation.synth import perturb_words
from neardup.similarity import jaccard
from neardup.sketch.shingleset import (
    ShingleSetConfig,
    SpotSigsConfig,
    shingle_hashes,
    spotsig_hashes,
)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=int, default=3000)
    args = parser.parse_args()
    texts = []
    for row in read_reuters():
        t = row["text"]
        if len(t) > 400:
            texts.append(t)
        if len(texts) >= args.docs:
            break
    if len(texts) <= 1001:
        # the unrelated pairs below are drawn > 1,000 articles apart: fewer texts never finish
        raise SystemExit(f"need more than 1001 articles over 400 chars, have {len(texts)}")
    rng = random.Random(2008)
    sample = rng.sample(range(len(texts)), 300)
    copies = {
        rate: [perturb_words(texts[i], rate, random.Random(i)) for i in sample]
        for rate in (0.1, 0.2)
    }
    # Unrelated: random pairs far apart in the chronological wire (> 1,000 articles), so
    # that corrections and re-sends of one story (which follow each other) are not counted.
    unrelated = []
    while len(unrelated) < 3000:
        i, j = rng.randrange(len(texts)), rng.randrange(len(texts))
        if abs(i - j) > 1000:
            unrelated.append((i, j))
    candidates: dict[str, Any] = {
        **{f"shingles width {w}": ShingleSetConfig(width=w) for w in range(2, 9)},
        **{
            f"spotsigs chain {c} distance {d}": SpotSigsConfig(chain_length=c, spot_distance=d)
            for c in (1, 2, 3)
            for d in (1, 2)
        },
    }
    rows = {}
    for name, cfg in candidates.items():
        fn = shingle_hashes if isinstance(cfg, ShingleSetConfig) else spotsig_hashes
        sets = {i: fn(texts[i], cfg) for i in set(sample) | {x for p in unrelated for x in p}}
        far = np.array([jaccard(sets[i], sets[j]) for i, j in unrelated])
        row: dict[str, Any] = {"unrelated_p999": float(np.quantile(far, 0.999))}
        row["unrelated_max"] = float(far.max())
        for rate, docs in copies.items():
            near = np.array(
                [jaccard(sets[i], fn(doc, cfg)) for i, doc in zip(sample, docs, strict=True)]
            )
            row[f"near_{rate}_median"] = float(np.median(near))
            row[f"near_{rate}_p05"] = float(np.quantile(near, 0.05))
            row[f"margin_{rate}"] = row[f"near_{rate}_p05"] - row["unrelated_p999"]
            row[f"above_max_unrelated_{rate}"] = float(np.mean(near > far.max()))
        row["mean_set_size"] = float(np.mean([s.shape[0] for s in sets.values()]))
        rows[name] = row
        print(
            f"{name:28s} size {row['mean_set_size']:6.1f}  unrelated p99.9 "
            f"{row['unrelated_p999']:.3f} max {row['unrelated_max']:.3f} | 10%: median "
            f"{row['near_0.1_median']:.3f} p5 {row['near_0.1_p05']:.3f} margin "
            f"{row['margin_0.1']:+.3f} | 20%: median {row['near_0.2_median']:.3f} margin "
            f"{row['margin_0.2']:+.3f} above-max {row['above_max_unrelated_0.2']:.2f}"
        )
    out = {
        "machine": machine(("neardup", "numpy", "xxhash", "PyStemmer")),
        "docs": len(texts),
        "near_pairs_per_rate": len(sample),
        "unrelated_pairs": len(unrelated),
        "results": rows,
    }
    print(f"wrote {save('shingle_params', out)}")


if __name__ == "__main__":
    main()
