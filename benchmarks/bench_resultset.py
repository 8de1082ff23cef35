"""Realtime result-set dedup: latency of ``dedup_result_set``, side by side.

Contenders, on the same result sets, timed alternately in one run (signatures made
beforehand, offline, as in seed 000):

* ``coverage``: the default scheme (``neardup.sign(text)``: the rule's coverage sketch),
  decided by the near-duplicate rule;
* ``sentences``: seed 000's sentence sketch (``neardup.sign(text, "sentences")``) at 0.5;
* ``datasketch``: what a user would otherwise write: ``datasketch.MinHash`` (128
  permutations of word 4-shingles, made beforehand) and, per result set, a
  ``MinHashLSH(threshold=0.5)`` queried then filled item by item, each candidate verified by
  its Jaccard estimate (the earliest one at least 0.5 wins);
* ``pure Python``: ``reference_dedup`` on the coverage sketches (every pair, plain Python):
  the answers of ``dedup_result_set`` are checked equal to it before timing.

For each: median and p99 in us with the cache off (every call computes), and for the two
neardup schemes a cache hit (the same set again).  Result sets: Reuters-21578 (ASCII
newswire) with 10 % planted edited copies (the demo's generator) and without; real scraped
web news (``provenance_news_2018_dev``, Unicode, pages with their junk) in random orders;
sizes 10, 100 and 1,000; and the worst case for the candidate filter (every article ends
with the same boilerplate paragraph, so every pair shares keys).

Run:  .venv/bin/python benchmarks/bench_resultset.py   (a few minutes)
Writes benchmarks/results/resultset.json.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from datasketch import MinHash, MinHashLSH

from _common import DATA, load_texts, save
from neardup.cli.demo import plant_copies
from neardup.detect.resultset import ResultSetDeduper, reference_dedup
from neardup.evaluation.methods import get_method
from neardup.sketch import Signature, sign

THRESHOLD = 0.5
BOILERPLATE = (
    "This story was distributed by the Reuters newswire service to its subscribers, and "
    "may not be published, broadcast, rewritten or redistributed without permission."
)


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


def lsh_dedup(minhashes: list[MinHash]) -> list[int]:
    """The datasketch user's result-set dedup (module docstring)."""
    lsh = MinHashLSH(threshold=THRESHOLD, num_perm=128)
    out = []
    for i, m in enumerate(minhashes):
        hits = [j for j in lsh.query(m) if minhashes[j].jaccard(m) >= THRESHOLD]
        out.append(min(hits) if hits else i)
        lsh.insert(i, m)
    return out


class Signed:
    """Every text's three signatures, made once."""

    def __init__(self) -> None:
        self.coverage: dict[str, Signature] = {}
        self.sentences: dict[str, Signature] = {}
        self.minhash: dict[str, MinHash] = {}
        self._prepare = get_method("datasketch").prepare

    def of(self, texts: list[str]) -> tuple[list[Signature], list[Signature], list[MinHash]]:
        for t in texts:
            if t not in self.coverage:
                self.coverage[t] = sign(t)
                self.sentences[t] = sign(t, "sentences")
                self.minhash[t] = self._prepare(t)
        return (
            [self.coverage[t] for t in texts],
            [self.sentences[t] for t in texts],
            [self.minhash[t] for t in texts],
        )


def _time(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1e6


def measure(signed: Signed, sets: list[list[str]], repeat: int, slow_repeat: int) -> dict[str, Any]:
    cold = ResultSetDeduper(max_entries=0)
    warm = ResultSetDeduper()
    times: dict[str, list[float]] = {
        k: [] for k in ("coverage", "sentences", "datasketch", "pure_python", "hit_c", "hit_s")
    }
    removed = {"coverage": 0, "sentences": 0, "datasketch": 0}
    for texts in sets:
        cov, sen, mh = signed.of(texts)
        expected = reference_dedup(cov)
        if cold(cov) != expected:
            raise SystemExit("dedup_result_set disagrees with the reference")
        removed["coverage"] += sum(r != i for i, r in enumerate(expected))
        removed["sentences"] += sum(r != i for i, r in enumerate(cold(sen, THRESHOLD)))
        removed["datasketch"] += sum(r != i for i, r in enumerate(lsh_dedup(mh)))
        warm(cov), warm(sen, THRESHOLD)
        for n in range(repeat):  # the contenders alternate, so they share the conditions
            times["coverage"].append(_time(lambda c=cov: cold(c)))
            times["sentences"].append(_time(lambda s=sen: cold(s, THRESHOLD)))
            times["hit_c"].append(_time(lambda c=cov: warm(c)))
            times["hit_s"].append(_time(lambda s=sen: warm(s, THRESHOLD)))
            if n < slow_repeat:
                times["datasketch"].append(_time(lambda m=mh: lsh_dedup(m)))
                times["pure_python"].append(_time(lambda c=cov: reference_dedup(c)))
    med = {k: statistics.median(v) for k, v in times.items()}
    return {
        "coverage": summary(times["coverage"]),
        "coverage_cache_hit": summary(times["hit_c"]),
        "sentences": summary(times["sentences"]),
        "sentences_cache_hit": summary(times["hit_s"]),
        "datasketch_lsh": summary(times["datasketch"]),
        "pure_python_coverage": summary(times["pure_python"]),
        "ratio_coverage_to_sentences": round(med["coverage"] / med["sentences"], 2),
        "speedup_vs_datasketch": round(med["datasketch"] / med["coverage"], 1),
        "speedup_vs_pure_python": round(med["pure_python"] / med["coverage"], 1),
        "items_removed": removed,
        "sets": len(sets),
    }


def provenance_texts() -> list[str]:
    path = DATA / "provenance_news_2018_dev" / "docs.jsonl.gz"
    if not path.exists():
        return []
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [t for t in (json.loads(line)["text"] for line in fh) if len(t) >= 200]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default="resultset", help="results/<out>.json, or a path")
    args = parser.parse_args()
    texts = load_texts()
    signed = Signed()
    results: dict[str, Any] = {"threshold_sentences_and_datasketch": THRESHOLD}

    def run(name: str, sets: list[list[str]], repeat: int, slow: int) -> None:
        results[name] = measure(signed, sets, repeat, slow)
        r = results[name]
        print(
            f"{name}: coverage {r['coverage']['median_us']} us (hit "
            f"{r['coverage_cache_hit']['median_us']}), sentences {r['sentences']['median_us']} "
            f"us (hit {r['sentences_cache_hit']['median_us']}), datasketch "
            f"{r['datasketch_lsh']['median_us']} us; removed {r['items_removed']}"
        )

    run("100_reuters_with_planted_copies", make_sets(texts, 100, 20, True, 100), 100, 3)
    run("100_reuters_only", make_sets(texts, 100, 20, False, 200), 100, 3)
    web = provenance_texts()
    if len(web) >= 100:
        run("100_web_news", [random.Random(s).sample(web, 100) for s in range(20)], 100, 3)
    for size, count, repeat, slow in ((10, 50, 200, 20), (1000, 3, 10, 1)):
        run(
            f"{size}_reuters_with_planted_copies",
            make_sets(texts, size, count, True, size),
            repeat,
            slow,
        )
    boiler = [
        [t + "\n\n" + BOILERPLATE for t in ranked] for ranked in make_sets(texts, 100, 5, True, 300)
    ]
    run("100_worst_case_shared_boilerplate", boiler, 100, 3)
    print(
        "wrote",
        save(
            Path(args.out) if "/" in args.out else args.out,
            results,
            libraries=("neardup", "numpy", "numba", "datasketch"),
        ),
    )


if __name__ == "__main__":
    main()
