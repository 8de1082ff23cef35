"""Batch dedup benchmark: neardup vs datasketch vs rensa on a planted Reuters corpus.

Corpus (built in a temporary directory, never in the repository), deterministic for a seed:

* Sentence pool: every sentence (``neardup.text.sentence_spans``) of every non-empty
  Reuters-21578 body, white space collapsed, at least 6 words, and occurring exactly once
  in the collection (so repeated wire boilerplate cannot make unrelated documents similar).
* Base documents (``(1 - dup_fraction) * N``): each is ``k`` sentences drawn at random from
  the pool, ``k`` drawn from the real distribution of sentences per Reuters article
  (clipped to 4..30: with fewer sentences, two base documents that happen to draw the same
  pool sentences would be genuine near-duplicates that the truth does not list).
* Planted near-duplicates (``dup_fraction * N``, default 20 %): a copy of a random base
  document with one edit, chosen uniformly: exact copy; 1-8 % of words substituted,
  deleted or repeated; one sentence dropped; one unrelated sentence appended; 3 % word
  edits plus one sentence dropped.  Dated 1-48 hours after the original.
* The truth is the planted clusters (a base document and its copies); all documents are
  shuffled.

Systems (each in its own subprocess, ``--repeat`` times (default 2), round-robin over the
systems, the fastest run reported, since the machine is shared; wall time from reading the
input file to cluster labels, including the imports and writing/reading the labels; CPU time
= user + system of the whole subprocess tree, interpreter start-up included, the least of
the runs, which the other jobs on the machine disturb less than wall time; peak memory =
largest sum of RSS over the subprocess and all its children, sampled every 50 ms (an upper
bound for forked workers, whose pages shared with the parent are counted in each process);
the load average before and after is saved):

* ``neardup``: ``neardup.batch.dedup`` (candidates from MinHash 128 LSH bands chosen for the
  threshold and winnowed passage fingerprints of word 4-shingles, every candidate judged by
  the near-duplicate rule) with ``workers=--workers``: a pool of that
  many forked local processes (no Dask); in one process (``neardup-1proc``); and on a Dask
  LocalCluster of ``--workers`` processes started by the run (``neardup-dask``).  With
  ``--base-src DIR``, ``neardup-base`` runs the neardup sources in DIR (e.g. ``git archive
  COMMIT src | tar -x -C DIR``) in one process, round-robin with the others: a before/after
  of two versions against the same rensa and datasketch runs.  Its
  labels are read back from the output file (orjson), inside the timed span.
* ``datasketch``: ``MinHash.bulk`` (its documented way to hash many sets: one set of
  permutations for all) of lower-cased word 4-shingles, 5,000 documents a call, then
  ``MinHashLSH(threshold=T, num_perm=128)``; each document is queried before insertion and
  candidates with estimated Jaccard >= T are merged by union-find.
* ``rensa``: its batch API: ``RMinHash.from_token_sets`` (5,000 documents a call),
  ``RMinHashLSH(threshold=T, num_perm=128, num_bands=32).insert_many`` and ``query_all``;
  candidates with estimated Jaccard >= T are merged by union-find (rensa needs bands
  dividing num_perm; 32 x 4 is what neardup's default uses at T=0.5 too).

Quality against the planted truth: pairwise precision/recall/F1 over "same cluster" pairs,
and the adjusted Rand index.

Run: ``python benchmarks/bench_batch.py`` (default 50,000 documents, about 3 minutes on the
shared 2-core machine; ``--n 1000000`` for the full size).  Results:
``benchmarks/results/batch.json``.

``--probe 1,2`` times single neardup ``dedup`` calls instead (wall time of the call, CPU of
the process and its workers, peak summed RSS and PSS), ``--probe-repeat`` rounds; with
``--probe-base-src DIR`` each call is paired, interleaved, with the same call on the
neardup sources in DIR (e.g. ``git archive COMMIT src | tar -x -C DIR``), an A/B of two
versions on one corpus file.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime as dt
import json
import os
import platform
import re
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("NEARDUP_DATA", ROOT.parent / "shared" / "data"))
RESULTS = ROOT / "benchmarks" / "results" / "batch.json"
NUM_PERM = 128
WIDTH = 4
_WORD_RE = re.compile(r"\w+")

# --- corpus --------------------------------------------------------------------------------


def build_corpus(
    n: int, dup_fraction: float, seed: int, path: Path, kind: str = "planted"
) -> np.ndarray:
    """Write the corpus to ``path`` (JSONL); return the truth cluster of each document.

    ``planted``: the Reuters corpus above (``_corpora.planted_corpus``); ``typographic``:
    the same documents printed with a news site's punctuation (non-ASCII, the same words);
    ``provenance``: the real scraped pages of provenance_news_2018_dev replicated with edits
    (``_corpora.provenance_replicated``; its truth is the source page, a lower bound)."""
    from _corpora import planted_corpus, provenance_replicated

    if kind == "provenance":
        return provenance_replicated(n, seed, path)
    return planted_corpus(n, seed, path, dup_fraction=dup_fraction, unicode=kind == "typographic")


# --- systems (run in a subprocess) ----------------------------------------------------------


def _read_texts(path: Path) -> list[str]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line)["text"] for line in fh]


def _ext_shingles(text: str) -> list[str]:
    words = _WORD_RE.findall(text.lower())
    if len(words) < WIDTH:
        return [" ".join(words)] if words else []
    return [" ".join(words[i : i + WIDTH]) for i in range(len(words) - WIDTH + 1)]


class _UF:
    def __init__(self, n: int) -> None:
        self.parent = list(range(n))

    def find(self, x: int) -> int:
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)

    def labels(self) -> list[int]:
        return [self.find(i) for i in range(len(self.parent))]


_BULK = 5_000  # documents per batch call of the libraries


def run_datasketch(path: Path, threshold: float) -> list[int]:
    from datasketch import MinHash, MinHashLSH

    texts = _read_texts(path)
    lsh = MinHashLSH(threshold=threshold, num_perm=NUM_PERM)
    sketches: dict[int, Any] = {}
    uf = _UF(len(texts))
    for lo in range(0, len(texts), _BULK):
        chunk = [[s.encode("utf-8") for s in _ext_shingles(t)] for t in texts[lo : lo + _BULK]]
        for i, (shingles, m) in enumerate(
            zip(chunk, MinHash.bulk(chunk, num_perm=NUM_PERM, seed=1), strict=True), lo
        ):
            if not shingles:
                continue
            for j in lsh.query(m):
                if m.jaccard(sketches[j]) >= threshold:
                    uf.union(i, j)
            lsh.insert(i, m)
            sketches[i] = m
    return uf.labels()


def run_rensa(path: Path, threshold: float) -> list[int]:
    from rensa import RMinHash, RMinHashLSH

    texts = _read_texts(path)
    lsh = RMinHashLSH(threshold=threshold, num_perm=NUM_PERM, num_bands=32)
    uf = _UF(len(texts))
    keys: list[int] = []
    sketches: list[Any] = []
    for lo in range(0, len(texts), _BULK):
        chunk = [_ext_shingles(t) for t in texts[lo : lo + _BULK]]
        kept = [i for i, shingles in enumerate(chunk, lo) if shingles]
        objs = RMinHash.from_token_sets([chunk[i - lo] for i in kept], num_perm=NUM_PERM, seed=1)
        lsh.insert_pairs(list(zip(range(len(keys), len(keys) + len(kept)), objs, strict=True)))
        keys.extend(kept)
        sketches.extend(objs)
    for a, candidates in enumerate(lsh.query_all(sketches)):
        for b in candidates:
            if b < a and sketches[a].jaccard(sketches[b]) >= threshold:
                uf.union(keys[a], keys[b])
    return uf.labels()


def run_neardup(path: Path, threshold: float, workers: int, dask: bool = False) -> list[int]:
    """``neardup.batch.dedup`` with ``workers`` local processes (a fork pool), or with a Dask
    LocalCluster of ``workers`` processes started here (``dask``); labels read back from the
    output file."""
    import orjson

    from neardup.batch import DedupConfig, dedup

    out = path.with_name(f"neardup-{workers}{'-dask' if dask else ''}.jsonl")
    # A complete earlier output would be recognised and the run skipped: start afresh.
    for stale in (out, out.with_name(out.name + ".complete")):
        stale.unlink(missing_ok=True)
    config = DedupConfig(lsh_threshold=threshold)
    if dask:
        from distributed import Client, LocalCluster

        with (
            LocalCluster(
                n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None
            ) as cluster,
            Client(cluster) as client,
        ):
            dedup(path, out, config, client=client)
    else:
        dedup(path, out, config, workers=workers)
    index: dict[str, int] = {}
    labels: list[int] = []
    with out.open("rb") as fh:
        for line in fh:
            row = orjson.loads(line)
            labels.append(index.setdefault(row["cluster"], len(index)))
    return labels


def _worker_main(args: argparse.Namespace) -> None:
    path = Path(args.corpus)
    t0 = time.perf_counter()
    if args.worker == "datasketch":
        labels = run_datasketch(path, args.threshold)
    elif args.worker == "rensa":
        labels = run_rensa(path, args.threshold)
    elif args.worker == "neardup":
        labels = run_neardup(path, args.threshold, args.workers)
    elif args.worker == "neardup-dask":
        labels = run_neardup(path, args.threshold, args.workers, dask=True)
    else:  # neardup-1proc, neardup-base
        labels = run_neardup(path, args.threshold, 1)
    seconds = time.perf_counter() - t0
    np.save(args.labels, np.asarray(labels, dtype=np.int64))
    print(json.dumps({"seconds": seconds}))


# --- measurement ------------------------------------------------------------------------------


def _tree_rss(pid: int) -> int:
    import psutil

    try:
        proc = psutil.Process(pid)
        total = proc.memory_info().rss
        for child in proc.children(recursive=True):
            with contextlib.suppress(psutil.Error):
                total += child.memory_info().rss
        return int(total)
    except psutil.Error:
        return 0


def _run_system(
    name: str, corpus: Path, threshold: float, workers: int, base_src: str | None = None
) -> dict[str, Any]:
    labels_path = corpus.with_name(f"labels-{name}.npy")
    cmd = [
        sys.executable,
        __file__,
        "--worker",
        name,
        "--corpus",
        str(corpus),
        "--labels",
        str(labels_path),
        "--threshold",
        str(threshold),
        "--workers",
        str(workers),
    ]
    env = dict(os.environ)
    if name == "neardup-base":
        if base_src is None:
            raise SystemExit("the neardup-base system needs --base-src")
        env["PYTHONPATH"] = base_src
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    peak = 0
    stop = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not stop.is_set():
            peak = max(peak, _tree_rss(proc.pid))
            time.sleep(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, err = proc.communicate()
    stop.set()
    sampler.join()
    if proc.returncode != 0:
        raise RuntimeError(f"{name} failed:\n{err[-3000:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    # CPU of the whole subprocess tree (user + system, interpreter start-up included): less
    # sensitive than wall time to the other jobs on the shared machine.
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    seconds = json.loads(out.strip().splitlines()[-1])["seconds"]
    return {
        "seconds": seconds,
        "cpu_seconds": cpu,
        "peak_rss_mb": peak / 2**20,
        "labels": np.load(labels_path),
    }


def _pair_counts(truth: np.ndarray, pred: np.ndarray) -> tuple[float, float, float, float]:
    """(same-cluster pairs in both, in truth, in prediction, all pairs)."""

    def comb2(x: np.ndarray) -> float:
        x = x.astype(np.float64)
        return float((x * (x - 1) / 2).sum())

    _, t = np.unique(truth, return_inverse=True)
    _, p = np.unique(pred, return_inverse=True)
    cells = np.unique(t.astype(np.int64) * (p.max() + 1) + p, return_counts=True)[1]
    n = truth.shape[0]
    return comb2(cells), comb2(np.bincount(t)), comb2(np.bincount(p)), n * (n - 1) / 2


def quality(truth: np.ndarray, pred: np.ndarray) -> dict[str, float]:
    both, in_truth, in_pred, total = _pair_counts(truth, pred)
    precision = both / in_pred if in_pred else 1.0
    recall = both / in_truth if in_truth else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    expected = in_truth * in_pred / total
    max_index = (in_truth + in_pred) / 2
    ari = (both - expected) / (max_index - expected) if max_index != expected else 1.0
    return {"precision": precision, "recall": recall, "f1": f1, "ari": ari}


def machine_info() -> dict[str, Any]:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    versions: dict[str, str] = {}
    for mod in ("numpy", "numba", "dask", "distributed", "datasketch", "rensa", "neardup"):
        try:
            from importlib.metadata import version

            versions[mod] = version(mod)
        except Exception:
            versions[mod] = "unknown"
    return {
        "platform": platform.platform(),
        "cpu": cpu,
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "versions": versions,
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    }


def _sweep(args: argparse.Namespace) -> None:
    """Quality of neardup's default pipeline at several LSH thresholds on the planted corpus."""
    from neardup.batch import DedupConfig, run

    rows = {}
    with tempfile.TemporaryDirectory(prefix="neardup-bench-") as tmp:
        corpus = Path(tmp) / "corpus.jsonl"
        truth = build_corpus(args.n, args.dup_fraction, args.seed, corpus, args.text)
        for value in args.sweep.split(","):
            threshold = float(value)
            result = run(corpus, DedupConfig(lsh_threshold=threshold))
            q = quality(truth, result.kept_of)
            rows[value] = {k: round(v, 4) for k, v in q.items()}
            print(f"T={value} {json.dumps(rows[value])}", flush=True)
    out = Path(args.out)
    out.write_text(
        json.dumps(
            {
                "benchmark": "neardup batch dedup quality by threshold (planted corpus)",
                "n": args.n,
                "dup_fraction": args.dup_fraction,
                "seed": args.seed,
                "thresholds": rows,
                "machine": machine_info(),
            },
            indent=2,
        )
        + "\n"
    )


def _probe_main(args: argparse.Namespace) -> None:
    """In a subprocess: one ``dedup`` call with ``--workers``; prints its wall time and the
    CPU time of this process and its (joined) children."""
    from neardup.batch import DedupConfig, dedup

    path = Path(args.corpus)
    out = path.with_name(f"probe-{os.getpid()}.jsonl")
    # The probe may run older neardup sources (--probe-base-src), whose config named the
    # LSH threshold ``threshold``.
    fields = {f.name for f in dataclasses.fields(DedupConfig)}
    name = "lsh_threshold" if "lsh_threshold" in fields else "threshold"
    t0 = time.perf_counter()
    dedup(path, out, DedupConfig(**{name: args.threshold}), workers=args.workers)
    seconds = time.perf_counter() - t0
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime
    for stale in (out, out.with_name(out.name + ".complete")):
        stale.unlink(missing_ok=True)
    print(json.dumps({"seconds": seconds, "cpu_seconds": cpu}))


def _tree_memory(pid: int) -> tuple[int, int]:
    """(summed RSS, summed PSS) of a process and its children."""
    import psutil

    rss = pss = 0
    try:
        procs = [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]
    except psutil.Error:
        return 0, 0
    for proc in procs:
        with contextlib.suppress(psutil.Error):
            info = proc.memory_full_info()
            rss += info.rss
            pss += getattr(info, "pss", info.rss)
    return rss, pss


def _probe(args: argparse.Namespace) -> None:
    """``--probe W,...``: time single ``dedup`` calls (neardup only) with each worker count,
    ``--probe-repeat`` times, interleaved; with ``--probe-base-src DIR`` every call is
    paired with the same call on the neardup sources in DIR (an A/B of two versions on the
    same corpus file).  Reports per call its wall time, CPU, and peak summed RSS and PSS
    (sampled every 0.1 s; PSS splits pages shared by forked workers between them)."""
    variants = [("current", None)]
    if args.probe_base_src:
        variants = [("base", args.probe_base_src), *variants]
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="neardup-probe-") as tmp:
        corpus = Path(tmp) / "corpus.jsonl"
        build_corpus(args.n, args.dup_fraction, args.seed, corpus, args.text)
        for _ in range(args.probe_repeat):
            for workers in (int(w) for w in args.probe.split(",")):
                for name, src in variants:
                    env = dict(os.environ)
                    if src is not None:
                        env["PYTHONPATH"] = src
                    cmd = [sys.executable, __file__, "--probe-call", "--corpus", str(corpus)]
                    cmd += ["--workers", str(workers), "--threshold", str(args.threshold)]
                    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=env)
                    peak_rss = peak_pss = 0
                    while proc.poll() is None:
                        rss, pss = _tree_memory(proc.pid)
                        peak_rss, peak_pss = max(peak_rss, rss), max(peak_pss, pss)
                        time.sleep(0.1)
                    out = proc.stdout.read() if proc.stdout else ""
                    if proc.returncode != 0:
                        raise RuntimeError(f"probe {name} workers={workers} failed")
                    result = json.loads(out.strip().splitlines()[-1])
                    row = {
                        "version": name,
                        "workers": workers,
                        "seconds": round(result["seconds"], 2),
                        "cpu_seconds": round(result["cpu_seconds"], 2),
                        "peak_rss_mb": round(peak_rss / 2**20),
                        "peak_pss_mb": round(peak_pss / 2**20),
                        "load_1min": round(os.getloadavg()[0], 2),
                    }
                    rows.append(row)
                    print(json.dumps(row), flush=True)
    Path(args.out).write_text(
        json.dumps(
            {
                "benchmark": "single neardup dedup calls (planted corpus)",
                "n": args.n,
                "seed": args.seed,
                "runs": rows,
                "machine": machine_info(),
            },
            indent=2,
        )
        + "\n"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=50_000)
    parser.add_argument("--dup-fraction", type=float, default=0.2)
    parser.add_argument(
        "--text",
        choices=("planted", "typographic", "provenance"),
        default="planted",
        help="planted Reuters (ASCII), the same typographic (Unicode), or replicated scraped news",
    )
    parser.add_argument("--threshold", type=float, default=0.5)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--repeat", type=int, default=2, help="runs per system; the fastest is reported"
    )
    parser.add_argument(
        "--systems", default="neardup,neardup-1proc,rensa,datasketch", help="comma-separated"
    )
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--corpus", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--labels", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--out", default=str(RESULTS))
    parser.add_argument(
        "--probe",
        default=None,
        help="comma-separated worker counts: time single neardup dedup calls (CPU, RSS, PSS)",
    )
    parser.add_argument("--probe-repeat", type=int, default=3)
    parser.add_argument(
        "--probe-base-src",
        default=None,
        help="with --probe: also run each call on the neardup sources in this directory "
        "(e.g. from git archive), interleaved",
    )
    parser.add_argument("--probe-call", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument(
        "--base-src",
        default=None,
        help="the neardup sources (e.g. from git archive) the neardup-base system runs in one "
        "process, round-robin with the other systems: a before/after in the same run",
    )
    parser.add_argument(
        "--sweep",
        default=None,
        help="comma-separated thresholds: quality of neardup (one process) at each, no timing",
    )
    args = parser.parse_args()
    if args.probe_call:
        _probe_main(args)
        return
    if args.probe:
        _probe(args)
        return
    if args.worker:
        _worker_main(args)
        return
    if args.sweep:
        _sweep(args)
        return
    with tempfile.TemporaryDirectory(prefix="neardup-bench-") as tmp:
        corpus = Path(tmp) / "corpus.jsonl"
        t0 = time.perf_counter()
        truth = build_corpus(args.n, args.dup_fraction, args.seed, corpus, args.text)
        build_seconds = time.perf_counter() - t0
        print(
            f"corpus: {args.n} docs ({corpus.stat().st_size / 2**20:.0f} MB) built in "
            f"{build_seconds:.0f}s",
            flush=True,
        )
        rows: dict[str, dict[str, Any]] = {}
        names = args.systems.split(",")
        # Round-robin over the systems, so that the load of the shared machine, which
        # changes from minute to minute, falls on all of them alike.
        all_runs: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
        load_before = os.getloadavg()
        for _ in range(args.repeat):
            for name in names:
                all_runs[name].append(
                    _run_system(name, corpus, args.threshold, args.workers, args.base_src)
                )
        load_after = os.getloadavg()
        for name in names:
            runs = all_runs[name]
            best = min(runs, key=lambda r: r["seconds"])
            q = quality(truth, best["labels"])
            rows[name] = {
                "seconds": round(best["seconds"], 2),
                "all_seconds": [round(r["seconds"], 2) for r in runs],
                "cpu_seconds": round(min(r["cpu_seconds"] for r in runs), 2),
                "all_cpu_seconds": [round(r["cpu_seconds"], 2) for r in runs],
                "docs_per_second": round(args.n / best["seconds"]),
                "peak_rss_mb": round(max(r["peak_rss_mb"] for r in runs)),
                **{k: round(v, 4) for k, v in q.items()},
            }
            print(f"{name:14s} {json.dumps(rows[name])}", flush=True)
    ratios = {}
    for ours in ("neardup", "neardup-1proc", "neardup-dask", "neardup-base"):
        for other in ("datasketch", "rensa"):
            if ours in rows and other in rows:
                ratios[f"{ours}_speedup_vs_{other}"] = round(
                    rows[other]["seconds"] / rows[ours]["seconds"], 2
                )
                ratios[f"{ours}_cpu_ratio_vs_{other}"] = round(
                    rows[other]["cpu_seconds"] / rows[ours]["cpu_seconds"], 2
                )
    result = {
        "benchmark": "batch dedup, Reuters sentences recombined + planted near-duplicates",
        "text": args.text,
        "n": args.n,
        "dup_fraction": args.dup_fraction,
        "threshold": args.threshold,
        "workers": args.workers,
        "seed": args.seed,
        "repeat": args.repeat,
        "base_src": args.base_src,
        "systems": rows,
        "ratios": ratios,
        "load_average_1_5_15min": {
            "before": [round(x, 2) for x in load_before],
            "after": [round(x, 2) for x in load_after],
        },
        "machine": machine_info(),
    }
    print(json.dumps(ratios))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
