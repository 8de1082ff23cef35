"""Batch dedup speed, today's engine against the rule's, side by side on one corpus.

The planted Reuters corpus of ``bench_batch.py`` (same recipe, same seed) is built once;
then single ``neardup.batch.dedup`` calls (one process, ``workers=1``) run in subprocesses,
round-robin over the variants so the load of the shared machine falls on all alike:

* ``base``: the neardup sources in ``--base-src`` (e.g. ``git archive <commit> src | tar -x
  -C DIR``: the engine before the rule, MinHash LSH at 0.5 with exact Jaccard >= 0.5 as
  its verification), with its default config;
* ``rule``: this checkout, default config (candidates from LSH and passages, every pair
  judged by the rule);
* ``rule-lsh``: this checkout with ``candidates=("lsh",)`` (today's candidate generator,
  the rule as the verification): the cost of the rule alone.

Each call reports wall and CPU seconds (user + system of the subprocess), peak RSS, the
per-stage seconds and counts of its summary, and its quality against the planted truth
(pairwise precision/recall/F1 of "same cluster", as ``bench_batch.py``).  Results:
``benchmarks/results/batch_rule_speed_<n>.json``.

Run: ``git archive <commit> src | tar -x -C /tmp/base && python
benchmarks/bench_batch_rule_speed.py --n 50000 --base-src /tmp/base/src --repeat 2``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from _common import loadavg, save
from bench_batch import build_corpus, quality

VARIANTS: dict[str, dict[str, Any]] = {
    "base": {},
    "rule": {},
    "rule-lsh": {"candidates": ["lsh"]},
}

# Runs in the subprocess, under whichever neardup sources PYTHONPATH selects.
_CALL = """
import json, resource, sys, time
from pathlib import Path
from neardup.batch import DedupConfig, dedup
corpus, out, params = Path(sys.argv[1]), Path(sys.argv[2]), json.loads(sys.argv[3])
params = {k: tuple(v) if isinstance(v, list) else v for k, v in params.items()}
t0 = time.perf_counter()
summary = dedup(corpus, out, DedupConfig(**params), workers=1)
seconds = time.perf_counter() - t0
own = resource.getrusage(resource.RUSAGE_SELF)
plain = summary.to_dict()
print(json.dumps({
    "seconds": seconds,
    "cpu_seconds": own.ru_utime + own.ru_stime,
    "peak_rss_mb": own.ru_maxrss / 1024,
    "stage_seconds": {k: round(v, 2) for k, v in plain.get("stage_seconds", {}).items()},
    "candidate_pairs": plain.get("candidate_pairs"),
    "profiled_documents": plain.get("profiled_documents"),
    "removed": plain.get("removed"),
}))
"""


def _call(name: str, corpus: Path, base_src: str | None) -> dict[str, Any]:
    out = corpus.with_name(f"out-{name}.jsonl")
    for stale in (out, out.with_name(out.name + ".complete")):
        stale.unlink(missing_ok=True)
    env = dict(os.environ)
    if name == "base":
        if base_src is None:
            raise SystemExit("--base-src is needed for the base variant")
        env["PYTHONPATH"] = base_src
    cmd = [sys.executable, "-c", _CALL, str(corpus), str(out), json.dumps(VARIANTS[name])]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise RuntimeError(f"{name} failed:\n{proc.stderr[-3000:]}")
    row: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    row["cpu_seconds_tree"] = round(
        (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), 2
    )
    index: dict[str, int] = {}
    labels = []
    with out.open(encoding="utf-8") as fh:
        for line in fh:
            labels.append(index.setdefault(json.loads(line)["cluster"], len(index)))
    row["labels"] = np.asarray(labels, dtype=np.int64)
    row["load_1min"] = loadavg()[0]
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=50_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--variants", default="base,rule-lsh,rule")
    parser.add_argument("--base-src", default=None)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    names = args.variants.split(",")
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
    with tempfile.TemporaryDirectory(prefix="neardup-rule-speed-") as tmp:
        corpus = Path(tmp) / "corpus.jsonl"
        t0 = time.perf_counter()
        truth = build_corpus(args.n, 0.2, args.seed, corpus)
        print(f"corpus: {args.n} documents in {time.perf_counter() - t0:.0f}s", flush=True)
        load_before = loadavg()
        for _ in range(args.repeat):
            for name in names:
                row = _call(name, corpus, args.base_src)
                row.update({k: round(v, 4) for k, v in quality(truth, row.pop("labels")).items()})
                row["seconds"] = round(row["seconds"], 2)
                row["cpu_seconds"] = round(row["cpu_seconds"], 2)
                row["peak_rss_mb"] = round(row["peak_rss_mb"])
                runs[name].append(row)
                print(f"{name:9s} {json.dumps(row)}", flush=True)
        load_after = loadavg()
    best = {name: min(rows, key=lambda r: r["cpu_seconds"]) for name, rows in runs.items()}
    ratios = {}
    if "base" in best:
        for name in names:
            if name != "base":
                ratios[f"{name}/base cpu"] = round(
                    best[name]["cpu_seconds"] / best["base"]["cpu_seconds"], 2
                )
                ratios[f"{name}/base wall"] = round(
                    best[name]["seconds"] / best["base"]["seconds"], 2
                )
    print(json.dumps(ratios), flush=True)
    payload = {
        "benchmark": "batch dedup, engine before the rule vs on the rule (planted corpus)",
        "n": args.n,
        "seed": args.seed,
        "load_before": load_before,
        "load_after": load_after,
        "runs": runs,
        "best_by_cpu": best,
        "ratios": ratios,
    }
    print(f"saved {save(Path(args.out) if args.out else f'batch_rule_speed_{args.n}', payload)}")


if __name__ == "__main__":
    main()
