"""MinHash: k permutations vs one permutation hashing with optimal densification.

Measures, on real Reuters-21578 article pairs, the accuracy of both methods against the exact
Jaccard similarity of the word-shingle sets, and their speed; the default ``method`` of
``neardup.sketch.minhash`` was chosen from this output (see docs/signatures.md).

Pairs:
* natural near-duplicates of the wire (corrections, re-sends): pairs among the first
  ``--docs`` articles sharing rare shingles, exact Jaccard in [0.05, 1);
* edited copies: an article with a fraction of its words replaced / deleted / inserted;
* the derived exact-duplicate groups (labels_derived_exact_dups.jsonl.gz).

Run:  /work/venv/bin/python benchmarks/bench_minhash.py [--docs 6000]
Writes benchmarks/results/minhash.json.  Bounded: about a minute on one core.
"""

from __future__ import annotations

import argparse
import random
import time
from collections import Counter, defaultdict
from typing import Any

import numpy as np

from _common import machine, read_reuters, save
from neardup.evaluation.synth import perturb_words
from neardup.similarity import jaccard
from neardup.sketch.minhash import minhash_values
from neardup.sketch.shingleset import ShingleSetConfig, shingle_hashes


def load_docs(limit: int) -> list[dict[str, Any]]:
    out = []
    for row in read_reuters():
        out.append(row)
        if len(out) >= limit:
            break
    return out


def natural_pairs(sets: list[np.ndarray], max_df: int = 10) -> list[tuple[int, int, float]]:
    """Pairs sharing >= 5 shingles of document frequency <= max_df, with exact Jaccard."""
    postings: dict[int, list[int]] = defaultdict(list)
    for i, s in enumerate(sets):
        for v in s.tolist():
            postings[v].append(i)
    shared: Counter[tuple[int, int]] = Counter()
    for docs in postings.values():
        if 1 < len(docs) <= max_df:
            for x in range(len(docs)):
                for y in range(x + 1, len(docs)):
                    shared[(docs[x], docs[y])] += 1
    pairs = []
    for (i, j), count in shared.items():
        if count >= 5:
            jac = jaccard(sets[i], sets[j])
            if 0.05 <= jac < 1.0:
                pairs.append((i, j, jac))
    return pairs


def evaluate(
    pairs: list[tuple[np.ndarray, np.ndarray, float]], method: str, num_perm: int, seeds: int
) -> dict[str, Any]:
    errors = []
    zs = []
    for seed in range(1, seeds + 1):
        for a, b, jac in pairs:
            ma = minhash_values(a, num_perm, method, seed)
            mb = minhash_values(b, num_perm, method, seed)
            est = float(np.count_nonzero(ma == mb)) / num_perm
            errors.append(est - jac)
            sd = max(np.sqrt(jac * (1 - jac) / num_perm), 1.0 / num_perm)
            zs.append((est - jac) / sd)
    err = np.array(errors)
    z = np.abs(np.array(zs))
    theo = np.sqrt(np.mean([j * (1 - j) / num_perm for _, _, j in pairs]))
    return {
        "method": method,
        "num_perm": num_perm,
        "pairs": len(pairs),
        "seeds": seeds,
        "mean_error": float(err.mean()),
        "rmse": float(np.sqrt((err**2).mean())),
        "theoretical_rmse": float(theo),
        "rmse_over_theoretical": float(np.sqrt((err**2).mean()) / theo) if theo else None,
        "share_abs_z_over_4": float((z > 4).mean()),
        "max_abs_z": float(z.max()),
    }


def timing(sets: list[np.ndarray], method: str, num_perm: int, repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for s in sets:
            minhash_values(s, num_perm, method, 1)
        best = min(best, time.perf_counter() - t0)
    return best / len(sets) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=int, default=6000)
    parser.add_argument("--seeds", type=int, default=5)
    args = parser.parse_args()
    rng = random.Random(20080101)
    docs = [d for d in load_docs(args.docs) if d["text"].strip()]
    cfg = ShingleSetConfig()
    sets = [shingle_hashes(d["text"], cfg) for d in docs]

    natural = [(sets[i], sets[j], jac) for i, j, jac in natural_pairs(sets)]
    sample = rng.sample(range(len(docs)), 400)
    edited = []
    for k, i in enumerate(sample):
        rate = (0.02, 0.05, 0.1, 0.2, 0.4)[k % 5]
        b = shingle_hashes(perturb_words(docs[i]["text"], rate, rng), cfg)
        if sets[i].shape[0] and b.shape[0]:
            edited.append((sets[i], b, jaccard(sets[i], b)))
    groups = [row["ids"] for row in read_reuters("labels_derived_exact_dups.jsonl.gz")]
    index = {d["id"]: n for n, d in enumerate(docs)}
    dups = [
        (sets[index[g[0]]], sets[index[g[1]]], jaccard(sets[index[g[0]]], sets[index[g[1]]]))
        for g in groups
        if g[0] in index and g[1] in index
    ]
    pairs = natural + edited
    print(f"{len(docs)} docs; {len(natural)} natural pairs, {len(edited)} edited, {len(dups)} dups")
    results: dict[str, Any] = {
        "machine": machine(("neardup", "numpy", "numba", "xxhash")),
        "docs": len(docs),
        "pair_counts": {"natural": len(natural), "edited": len(edited), "exact_dups": len(dups)},
        "accuracy": [],
        "exact_dups_all_estimates_1": {},
        "us_per_signature_from_shingles": {},
        "mean_shingles_per_doc": float(np.mean([s.shape[0] for s in sets])),
    }
    for num_perm in (64, 128, 256):
        for method in ("permutations", "oph"):
            row = evaluate(pairs, method, num_perm, args.seeds)
            results["accuracy"].append(row)
            print(
                f"{method:13s} k={num_perm:3d}: bias {row['mean_error']:+.4f}  "
                f"rmse {row['rmse']:.4f} (theory {row['theoretical_rmse']:.4f}, "
                f"ratio {row['rmse_over_theoretical']:.3f})  |z|>4 {row['share_abs_z_over_4']:.4f}"
            )
    for method in ("permutations", "oph"):
        ok = all(
            np.array_equal(minhash_values(a, 128, method), minhash_values(b, 128, method))
            for a, b, _ in dups
        )
        results["exact_dups_all_estimates_1"][method] = ok
        for num_perm in (64, 128, 256):
            us = timing(sets[:2000], method, num_perm)
            results["us_per_signature_from_shingles"][f"{method}/{num_perm}"] = us
            print(f"{method:13s} k={num_perm:3d}: {us:8.1f} us per signature (from shingles)")
    print(f"wrote {save('minhash', results)}")


if __name__ == "__main__":
    main()
