"""Realtime result-set dedup (seed 000): latency of ``dedup_result_set`` on real Reuters sets.

Result sets are drawn from Reuters-21578 (deterministic seeds): ``size - size // 10`` real
articles plus ``size // 10`` planted edited copies (the demo's generator) at later ranks, and
sets of ``size`` real articles only.  Signatures are the default sentence sketch, made
beforehand (offline, as in the seed).  Measured in one run:

* ``dedup_result_set`` with the cache off (every call computes): median and p99, in us;
* the straightforward pure-Python pairwise merge (``reference_dedup``: every pair, a full
  sorted merge) on the same sets, and the ratio of medians;
* a cache hit (same set again): median and p99;
* latency at 10, 100 and 1,000 items;
* the worst case for the candidate filter: every article carries the same boilerplate
  sentence, so every pair shares a value and is merged.

Run:  /work/venv/bin/python benchmarks/bench_resultset.py   (about a minute)
Writes benchmarks/results/resultset.json.
"""

from __future__ import annotations

import argparse
import random
import statistics
from pathlib import Path
from typing import Any

import numpy as np

from _common import load_texts, save, timed
from neardup.cli.demo import plant_copies
from neardup.detect.resultset import DEFAULT_K, ResultSetDeduper, reference_dedup
from neardup.sketch import Signature, sign

THRESHOLD = 0.5
BOILERPLATE = "This story was distributed by the Reuters newswire service to its subscribers."


def make_sets(texts: list[str], size: int, count: int, planted: bool, seed: int) -> list[list[str]]:
    sets = []
    for s in range(count):
        rng = random.Random(seed + s)
        copies = size // 10 if planted else 0
        draw = rng.sample(texts, size - copies)
        sets.append(plant_copies(draw, copies, seed + s)[0])
    return sets


def summary(times: list[float]) -> dict[str, float]:
    return {
        "median_us": round(statistics.median(times), 2),
        "p99_us": round(float(np.percentile(times, 99)), 2),
        "samples": len(times),
    }


def measure(sig_sets: list[list[Signature]], repeat: int, baseline_repeat: int) -> dict[str, Any]:
    cold = ResultSetDeduper(max_entries=0)
    warm = ResultSetDeduper()
    fast: list[float] = []
    hits: list[float] = []
    slow: list[float] = []
    for sigs in sig_sets:
        expected = reference_dedup(sigs, THRESHOLD)
        if cold(sigs, THRESHOLD) != expected:
            raise SystemExit("dedup_result_set disagrees with the reference")
        fast += timed(lambda s=sigs: cold(s, THRESHOLD), repeat)
        warm(sigs, THRESHOLD)
        hits += timed(lambda s=sigs: warm(s, THRESHOLD), repeat)
        slow += timed(lambda s=sigs: reference_dedup(s, THRESHOLD), baseline_repeat)
    return {
        "dedup_result_set": summary(fast),
        "cache_hit": summary(hits),
        "pure_python_pairwise": summary(slow),
        "speedup_median": round(statistics.median(slow) / statistics.median(fast), 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default="resultset", help="results/<out>.json, or a path")
    args = parser.parse_args()
    texts = load_texts()
    print(f"{len(texts)} Reuters articles with >= 200 characters")
    signed: dict[str, Signature] = {}

    def sign_all(sets: list[list[str]]) -> list[list[Signature]]:
        out = []
        for ranked in sets:
            row = []
            for t in ranked:
                if t not in signed:
                    signed[t] = sign(t)
                row.append(signed[t])
            out.append(row)
        return out

    results: dict[str, Any] = {"threshold": THRESHOLD, "sketch": f"sentences, k={DEFAULT_K}"}
    planted100 = sign_all(make_sets(texts, 100, 20, planted=True, seed=100))
    real100 = sign_all(make_sets(texts, 100, 20, planted=False, seed=200))
    results["100_with_planted_copies"] = measure(planted100, 100, 3)
    print("100 items (90 real + 10 planted copies):", results["100_with_planted_copies"])
    results["100_real_only"] = measure(real100, 100, 3)
    print("100 real articles:", results["100_real_only"])

    by_size = {}
    for size, count, repeat, base in ((10, 50, 200, 20), (100, 10, 100, 3), (1000, 3, 10, 1)):
        sets = sign_all(make_sets(texts, size, count, planted=True, seed=1000 + size))
        by_size[str(size)] = measure(sets, repeat, base)
        print(f"{size} items:", by_size[str(size)])
    results["by_size"] = by_size

    boiler = make_sets(texts, 100, 5, planted=True, seed=300)
    boiler = [[t + " " + BOILERPLATE for t in ranked] for ranked in boiler]
    results["worst_case_shared_boilerplate_100"] = measure(sign_all(boiler), 100, 3)
    print("100 items, shared boilerplate sentence:", results["worst_case_shared_boilerplate_100"])
    target = Path(args.out) if "/" in args.out else args.out
    libraries = ("neardup", "numpy", "xxhash", "PyStemmer")
    print("wrote", save(target, results, libraries=libraries))


if __name__ == "__main__":
    main()
