"""Origin detection (seed 004): throughput per core and resident memory vs the table size.

1. Throughput of the default configuration (adaptive: exact while the table has room) and
   of the paper's NHs + Lucky + BE on the Reuters-21578 stream (all documents with text, in
   order), per core (CPU time of this process) and wall clock, in ``--rounds`` rounds that
   alternate the contenders (the median round is reported), with the machine's speed taken
   before and after by a yardstick (the ``simhash`` package, as ``bench_ingest.py`` does):
   * engine only: token hashes precomputed (selection + table + estimation + outputs);
   * end to end: text -> tokens (``neardup.text.tokenize``) -> hashes -> engine -> report
     with character spans, i.e. what ``OriginDetector.process`` does.
   Side by side, in the same run: the exact method a user would otherwise write (no library
   does origin detection): a Python dict of every shingle, i.e. our reference mode (All,
   unlimited memory), engine only.  Ratios are reported.  Also engine only: the two
   small-memory recommendations of docs/origin.md at small tables (180 KB, 60 KB).
2. Resident memory over a 10 M-token stream, for a 20 MB table (it fills up: 1.1 M entries
   for about 1.7 M selected shingles) with origin ids in the in-memory registry and in the
   on-disk id log, and a 100 MB table with the id log: Reuters replicated 4 times (2.64 M tokens
   each); replica r salts every token hash with r (hash xor splitmix(r)), so replicas are new
   text to the detector rather than exact copies.  The process RSS (VmRSS) is sampled every
   2,000 documents, each size in a fresh process after the numba kernels are loaded; we
   report the peak minus the RSS just before the detector was created, against the
   configured table size, and the id registry's size (``sys.getsizeof``).  Ids are not
   tracked (``reject_repeated_ids=False``); the cost of tracking them is measured separately.

Run:  python benchmarks/bench_origin.py [--memory 100MB] [--rounds 3] [--memory-runs '']
Writes benchmarks/results/origin.json.  Bounded: about 1-2 minutes on an idle core.
"""

from __future__ import annotations

import argparse
import gc
import json
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np

from _common import machine, read_reuters, save
from neardup.detect.origin import TEXT_CONFIG, OriginConfig, OriginDetector, parse_memory
from neardup.detect.origin.seen import SeenIds
from neardup.shingles import hash_forms, mix64, token_hashes
from neardup.text import tokenize

# the presets at small tables (0.3 % and 0.1 % of the evaluation copy stream's shingles at
# 18 B are 0.18 MB and 0.06 MB)
SMALL_MEMORY = (
    (OriginConfig.preset("balanced", 180_000), "balanced, 180KB"),
    (OriginConfig.preset("small-memory", 60_000), "small-memory, 60KB"),
)


def rss_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def timed(fn: Any) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


def memory_run(
    memory: int,
    docs: list[tuple[str, str]],
    hashes: list[Any],
    tokens: int,
    replicas: int,
    id_log: str | None,
) -> dict[str, Any]:
    """Stream ``tokens`` tokens of salted Reuters replicas; sample RSS every 2,000 docs."""
    best = OriginConfig(memory_bytes=memory)
    # load the numba kernels first (JIT/cache loading costs tens of MB once per process)
    warm = OriginDetector(OriginConfig(memory_bytes=200_000), reject_repeated_ids=False)
    for i, ((doc_id, _), th) in enumerate(zip(docs[:300], hashes[:300], strict=True)):
        warm.process_hashes(f"warm{i}{doc_id}", th)
    del warm
    gc.collect()
    base = rss_bytes()
    det = OriginDetector(best, reject_repeated_ids=False, id_log=id_log)
    peak = base
    samples = []
    processed = 0
    t0 = time.perf_counter()
    for r in range(replicas):
        salt = mix64(np.array([r + 1], dtype=np.uint64))[0]
        for i, ((doc_id, _), th) in enumerate(zip(docs, hashes, strict=True)):
            det.process_hashes(f"{doc_id}-r{r}", th ^ salt if r else th)
            processed += th.shape[0]
            if i % 2000 == 0:
                now = rss_bytes()
                peak = max(peak, now)
                samples.append({"tokens": processed, "rss_over_base": now - base})
            if processed >= tokens:
                break
        if processed >= tokens:
            break
    peak = max(peak, rss_bytes())
    reg = det._registry  # the id registry: ordinal -> [id, stored entries]
    registry_bytes = sys.getsizeof(reg) + sum(
        sys.getsizeof(v) + sys.getsizeof(v[0]) + sys.getsizeof(v[1]) for v in reg.values()
    )
    row = {
        "tokens": processed,
        "replicas": replicas,
        "configured_bytes": memory,
        "origin_ids": "on-disk id log" if id_log else "in-memory registry",
        "table_bytes": det.table.nbytes,
        "table_capacity_shingles": det.table.capacity,
        "stored_shingles": det.table.stored,
        "rss_base_bytes": base,
        "peak_rss_over_base_bytes": peak - base,
        "peak_minus_table_bytes": peak - base - det.table.nbytes,
        "registry_ids": det.registry_size,
        "registry_bytes_getsizeof": registry_bytes,
        "seconds": time.perf_counter() - t0,
        "samples": samples,
    }
    print(
        f"memory {memory / 1e6:.0f} MB, ids {'on disk' if id_log else 'in memory'}:"
        f" {processed} tokens, table {det.table.nbytes / 1e6:.1f} MB"
        f" ({det.table.stored}/{det.table.capacity} shingles stored), peak RSS over base"
        f" {(peak - base) / 1e6:.1f} MB, peak - table {(peak - base - det.table.nbytes) / 1e6:.1f}"
        f" MB, registry {det.registry_size} ids ({registry_bytes / 1e6:.1f} MB by getsizeof)",
        file=sys.stderr,
        flush=True,
    )
    return row


def load() -> tuple[list[tuple[str, str]], list[Any]]:
    docs = []
    for row in read_reuters():
        if row["text"]:
            docs.append((row["id"], row["text"]))
    hashes = [hash_forms(tokenize(t, TEXT_CONFIG).forms, 0) for _, t in docs]
    return docs, hashes


def machine_speed(docs: list[tuple[str, str]], n: int = 4000) -> float:
    """The ``simhash`` package (SimhashIndex k=3, pure Python) on the first ``n`` documents,
    in documents per CPU-second: the yardstick of this machine's speed in this run (as
    ``bench_ingest.py`` records it), so figures from a loaded machine can be compared."""
    from simhash import Simhash, SimhashIndex

    index = SimhashIndex([], k=3)
    c0 = time.process_time()
    for doc_id, text in docs[:n]:
        sh = Simhash(text)
        if not index.get_near_dups(sh):
            index.add(doc_id, sh)
    return n / (time.process_time() - c0)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--memory", default="100MB", help="table size for the throughput runs")
    parser.add_argument("--tokens", type=int, default=10_000_000)
    parser.add_argument("--rounds", type=int, default=3, help="alternating throughput rounds")
    parser.add_argument(
        "--memory-runs",
        default="20MB:memory,20MB:disk,100MB:disk",
        help="table size:where origin ids live (memory = registry, disk = id log); '' skips",
    )
    parser.add_argument("--memory-child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.memory_child:
        docs, hashes = load()
        n_tokens = sum(h.shape[0] for h in hashes)
        gc.collect()
        replicas = -(-args.tokens // n_tokens)
        size, mode = args.memory_child.split(":")
        with tempfile.TemporaryDirectory() as tmp:
            id_log = str(Path(tmp) / "ids") if mode == "disk" else None
            row = memory_run(parse_memory(size), docs, hashes, args.tokens, replicas, id_log)
        print(json.dumps(row))
        return
    memory = parse_memory(args.memory)
    docs, hashes = load()
    n_tokens = sum(h.shape[0] for h in hashes)
    best = OriginConfig(memory_bytes=memory)  # the default: adaptive, exact while it fits
    paper = OriginConfig.paper(memory_bytes=memory)  # the paper's NHs+LS+BE
    # warm the numba kernels (cached on disk, but loading counts once) and the token tables
    for cfg in (best, paper):
        warm = OriginDetector(cfg)
        for i, (_, text) in enumerate(docs):
            warm.process(f"w{i}", text)
    OriginDetector(OriginConfig.reference()).process("w", docs[0][1])

    out: dict[str, Any] = {
        "machine": machine(("neardup", "numpy", "numba", "xxhash", "simhash")),
        "stream": {"documents": len(docs), "tokens": n_tokens},
        "table_bytes": memory,
    }

    def engine(cfg: OriginConfig) -> None:
        det = OriginDetector(cfg, reject_repeated_ids=False)
        for (doc_id, _), th in zip(docs, hashes, strict=True):
            det.process_hashes(doc_id, th)

    def end_to_end(cfg: OriginConfig) -> None:
        det = OriginDetector(cfg)
        for doc_id, text in docs:
            det.process(doc_id, text)

    def tokenize_only() -> None:
        for _, text in docs:
            token_hashes(text, TEXT_CONFIG, 0)

    small = [(f"preset {name} engine only", c) for c, name in SMALL_MEMORY]
    jobs: list[tuple[str, Any]] = [
        ("default end to end (OriginDetector.process)", lambda: end_to_end(best)),
        ("default engine only (token hashes given)", lambda: engine(best)),
        ("paper NHs+LS+BE end to end", lambda: end_to_end(paper)),
        ("paper NHs+LS+BE engine only", lambda: engine(paper)),
        ("token hashes only (neardup.shingles.token_hashes)", tokenize_only),
        ("exact dict (reference mode) engine only", lambda: engine(OriginConfig.reference())),
        *((label, lambda cfg=cfg: engine(cfg)) for label, cfg in small),
    ]
    cpu: dict[str, list[float]] = {name: [] for name, _ in jobs}
    wall: dict[str, list[float]] = {name: [] for name, _ in jobs}
    speed = [machine_speed(docs)]
    for _ in range(args.rounds):  # alternate the contenders, so load changes hit them alike
        for name, fn in jobs:
            w, c = timed(fn)
            cpu[name].append(c)
            wall[name].append(w)
    speed.append(machine_speed(docs))
    rows = {}
    for name, _ in jobs:
        c = sorted(cpu[name])[len(cpu[name]) // 2]  # the median round
        w = sorted(wall[name])[len(wall[name]) // 2]
        rows[name] = {
            "cpu_s_rounds": cpu[name],
            "wall_s_rounds": wall[name],
            "tokens_per_cpu_s": n_tokens / c,
            "tokens_per_s_wall": n_tokens / w,
        }
        print(
            f"{name:62s} {n_tokens / c / 1e6:6.2f} M tokens per CPU-second"
            f" ({n_tokens / w / 1e6:5.2f} M/s wall)",
            flush=True,
        )
    ref = rows["exact dict (reference mode) engine only"]["tokens_per_cpu_s"]
    for row in rows.values():
        row["ratio_vs_exact_dict"] = row["tokens_per_cpu_s"] / ref
    out["throughput"] = rows
    out["machine_speed_simhash_pkg_docs_per_cpu_s_before_after"] = speed
    print(
        f"machine speed (simhash package, documents per CPU-second) before/after: {speed[0]:.0f}"
        f" / {speed[1]:.0f}; load average {out['machine'].get('loadavg')}",
        flush=True,
    )

    # --- resident memory over a replicated 10 M-token stream, each size in a fresh process ---
    out["memory"] = []
    for job in filter(None, args.memory_runs.split(",")):
        child = subprocess.run(
            [sys.executable, __file__, "--memory-child", job, "--tokens", str(args.tokens)],
            capture_output=True,
            text=True,
            check=True,
        )
        print(child.stderr.strip(), flush=True)
        out["memory"].append(json.loads(child.stdout))
    # cost of tracking every id (for repeated-id detection): per document, by tracemalloc;
    # the engine's SeenIds (64-bit hashes) against a plain set of the id strings
    replicas = -(-args.tokens // n_tokens)
    n_ids = replicas * len(docs)
    tracemalloc.start()  # the set keeps the id strings too (the stream's own are dropped)
    plain = {f"{doc_id}-r{r}" for r in range(replicas) for doc_id, _ in docs}
    per_doc_set = tracemalloc.get_traced_memory()[0] / n_ids
    tracemalloc.stop()
    del plain
    tracemalloc.start()
    hashed = SeenIds()
    for r in range(replicas):
        for doc_id, _ in docs:
            hashed.add(f"{doc_id}-r{r}")
    hashed.to_array()  # flush the pending buffer so only the arrays remain
    per_doc_hashed = tracemalloc.get_traced_memory()[0] / n_ids
    tracemalloc.stop()
    out["seen_id_bytes_per_document"] = per_doc_hashed
    out["seen_id_bytes_per_document_python_set"] = per_doc_set
    print(
        f"tracking seen ids costs about {per_doc_hashed:.1f} bytes per document"
        f" (a set of the id strings: {per_doc_set:.0f})",
        flush=True,
    )
    print("wrote", save("origin", out, indent=1))


if __name__ == "__main__":
    main()
