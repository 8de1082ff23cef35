"""The figures pre-check of ``verify="overlap"``: same decisions, and the rate with and without.

Ingests the replicated Reuters stream of ``bench_ingest.py`` up to ``--start`` articles with
``StreamConfig(verify="overlap")`` into SQLite once, copies that store, and ingests the next
``--n`` articles into each copy: once as shipped, once with
``similarity.overlap.figures_replaced`` answering "not known" (every candidate goes through
the word test, as before the pre-check).  Prints and saves, for both, articles per
CPU-second and how many decisions differ (statuses, duplicate targets, every match's id,
score and verdict; the evidence's word figures are not compared: a pre-checked pair has
none).  Caches start cold in both runs (the stream is re-opened on the copy).

Run:  /work/venv/bin/python benchmarks/bench_figures_precheck.py [--start 100096] [--n 10240]
Writes benchmarks/results/figures_precheck.json (``--out``; about 4 minutes with the defaults,
7 with ``--start 300032 --out figures_precheck_300k``).
"""

from __future__ import annotations

import argparse
import itertools
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import neardup.detect.stream as stream_module
from _common import machine, save
from bench_ingest import _decide, load_reuters, replicated
from neardup.detect.stream import NewsStream, StreamConfig
from neardup.similarity.overlap import figures_replaced
from neardup.store import open_store

CONFIG = StreamConfig(verify="overlap")


def ingest(path: Path, docs: list[dict[str, Any]], start: int, n: int) -> tuple[list[Any], float]:
    """Decisions of articles ``[start, start + n)`` of the stream into the store at ``path``,
    and the CPU seconds they took."""
    stream = NewsStream(open_store(f"sqlite:///{path}"), CONFIG)
    source = itertools.islice(replicated(docs, start + n), start, None)
    out: list[Any] = []
    cpu = 0.0
    while chunk := [d for _, d in zip(range(256), source, strict=False)]:
        c0 = time.process_time()
        results = _decide(stream, [stream.prepare(d) for d in chunk])
        cpu += time.process_time() - c0
        out += [
            (r.id, r.status, r.duplicate_of, tuple((m.id, m.score, m.verdict) for m in r.matches))
            for r in results
        ]
    stream.close()
    return out, cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--start", type=int, default=100_096)
    ap.add_argument("--n", type=int, default=10_240)
    ap.add_argument("--out", default="figures_precheck", help="results/<out>.json")
    args = ap.parse_args()
    docs = load_reuters()
    work = Path(tempfile.mkdtemp(prefix="nd-bench-precheck-"))
    try:
        base = work / "base.db"
        _, build_cpu = ingest(base, docs, 0, args.start)
        runs: dict[str, Any] = {}
        for name in ("with pre-check", "without pre-check"):
            copy = work / f"{name.replace(' ', '-')}.db"
            shutil.copy(base, copy)
            check = figures_replaced if name == "with pre-check" else (lambda *a, **k: False)
            stream_module.figures_replaced = check  # type: ignore[assignment]
            decided, cpu = ingest(copy, docs, args.start, args.n)
            runs[name] = {"decisions": decided, "cpu_seconds": round(cpu, 2)}
        stream_module.figures_replaced = figures_replaced
    finally:
        shutil.rmtree(work, ignore_errors=True)
    a, b = runs["with pre-check"], runs["without pre-check"]
    differ = sum(x != y for x, y in zip(a["decisions"], b["decisions"], strict=True))
    out = {
        "machine": machine(("neardup", "numpy", "xxhash")),
        "args": vars(args),
        "build_articles_per_cpu_s": round(args.start / build_cpu, 1),
        "articles": args.n,
        "decisions_differ": differ,
        **{
            name: {
                "cpu_seconds": r["cpu_seconds"],
                "articles_per_cpu_s": round(args.n / r["cpu_seconds"], 1),
            }
            for name, r in runs.items()
        },
    }
    out["speedup"] = round(b["cpu_seconds"] / a["cpu_seconds"], 2)
    print({k: v for k, v in out.items() if k != "machine"})
    print("wrote", save(args.out, out))


if __name__ == "__main__":
    main()
