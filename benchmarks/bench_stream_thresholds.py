"""How SimHash distance relates to exact shingle similarity on real Reuters pairs.

Chooses the stream's duplicate rule (docs/stream.md): every pair of Reuters-21578 articles
(non-empty text) whose 64-bit SimHash (neardup default: TF weights, stop words dropped) is
within Hamming distance 7 is found with the exact Hamming index, and its exact Jaccard and
containment (smaller set in the larger) of word 4-shingle sets is computed.  Per distance
it prints the number of pairs, how many have Jaccard >= 0.5, how many are rescued only by
containment >= 0.9, and how many are unrelated (Jaccard < 0.2); and, for the derived exact-
duplicate groups, the largest distance seen between members.

Run:  /work/venv/bin/python benchmarks/bench_stream_thresholds.py
Writes benchmarks/results/stream_thresholds.json (about 30 s).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from _common import machine, read_reuters, save
from neardup.index.hamming import HammingIndex
from neardup.index.lsh import LSHIndex
from neardup.sketch.minhash import sign_minhash
from neardup.sketch.shingleset import shingle_hashes
from neardup.sketch.simhash import sign_simhash


def simhash_recall(docs: list[dict[str, Any]], fps: Any, sets: list[Any]) -> dict[str, Any]:
    """Of the pairs with Jaccard >= 0.5 that MinHash LSH finds (128 permutations, bands
    tuned for 0.3, so its own recall at 0.5 is near 1), how many are within SimHash
    distance 7, i.e. reach the stream's verification stage."""
    lsh = LSHIndex(threshold=0.3)
    sigs = [sign_minhash(d["text"]) for d in docs]
    lsh.add_many(list(range(len(docs))), sigs)
    found = 0
    within = 0
    missed_distances: list[int] = []
    for i, cands in enumerate(lsh.query_many(sigs)):
        for j, _ in cands:
            j = int(j)
            if j <= i:
                continue
            a, b = sets[i], sets[j]
            inter = int(np.intersect1d(a, b, assume_unique=True).size)
            if inter / (a.size + b.size - inter) < 0.5:
                continue
            found += 1
            d = int(np.bitwise_count(fps[i] ^ fps[j]))
            if d <= 7:
                within += 1
            else:
                missed_distances.append(d)
    return {
        "lsh_pairs_jaccard_ge_0.5": found,
        "within_simhash_distance_7": within,
        "recall": round(within / found, 4) if found else None,
        "missed_distance_median": float(np.median(missed_distances)) if missed_distances else None,
    }


def main() -> None:
    docs = [d for d in read_reuters() if d["text"].strip()]
    fps = np.array([int(sign_simhash(d["text"]).values[0]) for d in docs], dtype=np.uint64)
    sets = [shingle_hashes(d["text"]) for d in docs]
    index = HammingIndex(max_distance=7)
    index.add_many(list(range(len(docs))), fps)
    rows: list[tuple[int, float, float]] = []
    for i, found in enumerate(index.query_many(fps, 7)):
        for j, d in found:
            if int(j) <= i:
                continue
            a, b = sets[i], sets[int(j)]
            inter = int(np.intersect1d(a, b, assume_unique=True).size)
            rows.append((d, inter / (a.size + b.size - inter), inter / min(a.size, b.size)))
    arr = np.array(rows)
    table = []
    for d in range(8):
        sel = arr[arr[:, 0] == d]
        jac, con = sel[:, 1], sel[:, 2]
        table.append(
            {
                "distance": d,
                "pairs": len(sel),
                "jaccard_ge_0.5": int((jac >= 0.5).sum()),
                "only_containment_ge_0.9": int(((jac < 0.5) & (con >= 0.9)).sum()),
                "jaccard_lt_0.2": int((jac < 0.2).sum()),
            }
        )
        print(table[-1])
    pos = {d["id"]: k for k, d in enumerate(docs)}
    groups = [g["ids"] for g in read_reuters("labels_derived_exact_dups.jsonl.gz")]
    worst = 0
    for g in groups:
        members = [pos[i] for i in g if i in pos]
        for x in members[1:]:
            worst = max(worst, int(np.bitwise_count(fps[members[0]] ^ fps[x])))
    hist, edges = np.histogram(
        arr[:, 1], bins=[0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.01]
    )
    out: dict[str, Any] = {
        "machine": machine(("neardup", "numpy", "numba", "xxhash")),
        "articles": len(docs),
        "pairs_within_distance_7": len(arr),
        "per_distance": table,
        "jaccard_histogram": {"edges": edges.tolist(), "counts": hist.tolist()},
        "exact_duplicate_groups": len(groups),
        "max_distance_within_exact_duplicate_groups": worst,
    }
    print("exact-duplicate groups: max SimHash distance between members", worst)
    out["candidate_recall"] = simhash_recall(docs, fps, sets)
    print("candidate recall", out["candidate_recall"])
    print("wrote", save("stream_thresholds", out))


if __name__ == "__main__":
    main()
