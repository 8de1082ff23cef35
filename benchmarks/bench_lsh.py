"""MinHash LSH at scale: neardup LSHIndex vs datasketch MinHashLSH vs rensa RMinHashLSH.

Data (synthetic, numpy PCG64 seed 0): ``--n`` MinHash signatures of ``--num-perm`` values,
made in the MinHash model itself: 80 % "originals" with independent uniform 32-bit values per
position (distinct sets), 20 % near copies of an earlier original where each position keeps
the original's value with probability s ~ U(0.5, 1) (Pr[equal MinHash] = Jaccard = s) and
is fresh otherwise.  Values are 32-bit because rensa's digests are 32-bit; every library gets
the *same* values (neardup: ``Signature`` of uint64; datasketch: ``LeanMinHash(hashvalues=)``;
rensa: ``RMinHash`` whose state is set to the values through its pickle format, checked by
comparing ``digest()``).  Queries: half near copies (s ~ U(0.6, 1)) of stored signatures,
half fresh.

All three use the same band layout (``--bands`` x ``--rows``, default 16 x 8 = 128: the
datasketch/neardup tuning for threshold 0.7 with weights 0.5/0.5 is (14, 9); a layout that
divides num_perm is used so rensa's ``num_bands`` gives identical bands).

Each contender runs in its own forked process (so no index evicts another's from the
caches), ``--rounds`` times, the contenders alternated round by round (so the shared
machine's drift falls on all of them alike); the figures are the min and median of the
rounds, per CPU-second of the process (``time.thread_time``).  Before timing, each process
warms up on a throwaway index of 2,000 signatures (inserts and queries), so a library that
compiles or loads code on first use (numba for neardup) pays it there, not in the figures:
start-up is measured apart (``run_all.py``).  Contenders:

* single calls (``<lib>``): insert one signature at a time (objects built outside the timed
  loop), then query one at a time: neardup ``LSHIndex.add`` / ``query`` (scores included),
  datasketch ``MinHashLSH.insert`` / ``query``, rensa ``RMinHashLSH.insert`` / ``query``;
* bulk (``<lib>-bulk``), each library's documented batch calls: neardup ``add_many`` of the
  (n, 128) matrix and ``query_many``; rensa ``insert_many`` and ``query_all`` (its batch
  API; its ``insert_matrix`` takes an ``RMinHashDigestMatrix``, which rensa builds only
  from token sets, not from given values); datasketch ``insertion_session`` (queries one by
  one: it has no batch query).

RSS growth of the process over the inserts = index memory.  neardup, unlike the others,
returns every candidate *with its estimated Jaccard*.

Run:  python benchmarks/bench_lsh.py [--n 1000000] [--libs neardup,rensa,...] [--rounds 3]
Writes benchmarks/results/lsh.json.  Bounded by ``--time-limit`` seconds of inserting per
library: a library that would exceed it is run at the n it reached (stated in the output).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from _common import RESULTS, isolated, machine, rss_bytes, save

SCHEME = "minhash/bench"
CHUNK = 10_000


def make_data(n: int, queries: int, num_perm: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    sigs = rng.integers(0, 2**32, size=(n, num_perm), dtype=np.uint64)
    copies = np.nonzero(rng.random(n) < 0.2)[0]
    copies = copies[copies > 0]
    sources = (rng.random(copies.shape[0]) * copies).astype(np.int64)  # an earlier document
    keep = rng.random((copies.shape[0], num_perm)) < rng.uniform(0.5, 1.0, (copies.shape[0], 1))
    sigs[copies] = np.where(keep, sigs[sources], sigs[copies])
    qs = rng.integers(0, 2**32, size=(queries, num_perm), dtype=np.uint64)
    near = np.arange(queries // 2)
    src = rng.integers(0, n, size=near.shape[0])
    keep = rng.random((near.shape[0], num_perm)) < rng.uniform(0.6, 1.0, (near.shape[0], 1))
    qs[near] = np.where(keep, sigs[src], qs[near])
    return sigs, qs


# -- adapters: make objects (untimed), insert one, query one ------------------------------


class NeardupAdapter:
    name = "neardup LSHIndex"

    def __init__(self, num_perm: int, bands: int, rows: int) -> None:
        from neardup.index import LSHIndex

        self.index = LSHIndex(num_perm=num_perm, bands=bands, rows=rows)

    def objects(self, matrix: np.ndarray) -> list[Any]:
        from neardup.sketch.base import Signature

        return [Signature(SCHEME, row) for row in matrix]

    def insert(self, key: int, obj: Any) -> None:
        self.index.add(key, obj)

    def query(self, obj: Any) -> int:
        return len(self.index.query(obj))

    def insert_bulk(self, start: int, matrix: np.ndarray, objs: list[Any]) -> None:
        self.index.add_many(list(range(start, start + matrix.shape[0])), matrix)

    def query_bulk(self, matrix: np.ndarray, objs: list[Any]) -> int:
        return sum(len(r) for r in self.index.query_many(matrix))


class DatasketchAdapter:
    name = "datasketch MinHashLSH"

    def __init__(self, num_perm: int, bands: int, rows: int) -> None:
        from datasketch import MinHashLSH

        self.index = MinHashLSH(num_perm=num_perm, params=(bands, rows))
        self.num_perm = num_perm

    def objects(self, matrix: np.ndarray) -> list[Any]:
        from datasketch import LeanMinHash

        return [LeanMinHash(seed=1, hashvalues=row, scheme="affine64") for row in matrix]

    def insert(self, key: int, obj: Any) -> None:
        self.index.insert(key, obj)

    def query(self, obj: Any) -> int:
        return len(self.index.query(obj))

    def insert_bulk(self, start: int, matrix: np.ndarray, objs: list[Any]) -> None:
        with self.index.insertion_session() as session:
            for key, obj in enumerate(objs, start):
                session.insert(key, obj)

    def query_bulk(self, matrix: np.ndarray, objs: list[Any]) -> int:
        return sum(len(self.index.query(obj)) for obj in objs)


def _varints(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """LEB128 bytes (n, P, 5) and their lengths (n, P) of 32-bit values."""
    v = matrix.astype(np.uint64)
    out = np.zeros((*v.shape, 5), dtype=np.uint8)
    lengths = np.ones(v.shape, dtype=np.int64)
    for i in range(5):
        byte = (v >> np.uint64(7 * i)) & np.uint64(0x7F)
        more = (v >> np.uint64(7 * (i + 1))) > 0
        out[..., i] = (byte | (more.astype(np.uint64) << np.uint64(7))).astype(np.uint8)
        lengths += more
    return out, lengths


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


class RensaAdapter:
    name = "rensa RMinHashLSH"
    # Observed pickle state of rensa 0.5 RMinHash: magic, a version varint, then varints of
    # num_perm, seed, the length and the values (checked against digest() below).
    HEADER = b"Rensa:RMinHash:2\x00\x82\x90\xb5\x92\x05"

    def __init__(self, num_perm: int, bands: int, rows: int) -> None:
        import rensa

        self.rensa = rensa
        self.num_perm = num_perm
        self.index = rensa.RMinHashLSH(threshold=0.7, num_perm=num_perm, num_bands=bands)
        self.prefix = self.HEADER + _varint(num_perm) + _varint(0) + _varint(num_perm)
        self.checked = False

    def objects(self, matrix: np.ndarray) -> list[Any]:
        raw, lengths = _varints(matrix)
        mask = np.arange(5)[None, None, :] < lengths[..., None]
        out = []
        for i in range(matrix.shape[0]):
            m = self.rensa.RMinHash(num_perm=self.num_perm, seed=0)
            m.__setstate__(self.prefix + raw[i][mask[i]].tobytes())
            out.append(m)
        if not self.checked:
            if [int(x) for x in out[0].digest()] != matrix[0].tolist():
                raise RuntimeError("rensa state format differs: digest does not round-trip")
            self.checked = True
        return out

    def insert(self, key: int, obj: Any) -> None:
        self.index.insert(key, obj)

    def query(self, obj: Any) -> int:
        return len(self.index.query(obj))

    def insert_bulk(self, start: int, matrix: np.ndarray, objs: list[Any]) -> None:
        self.index.insert_many(objs, start)

    def query_bulk(self, matrix: np.ndarray, objs: list[Any]) -> int:
        return sum(len(r) for r in self.index.query_all(objs))


ADAPTERS: dict[str, Callable[[int, int, int], Any]] = {
    "neardup": NeardupAdapter,
    "datasketch": DatasketchAdapter,
    "rensa": RensaAdapter,
}


def chunks(n: int) -> Iterator[tuple[int, int]]:
    for start in range(0, n, CHUNK):
        yield start, min(n, start + CHUNK)


def _warm_up(lib: str, num_perm: int, bands: int, rows: int, bulk: bool) -> None:
    """Insert and query 2,000 signatures on a throwaway index: code loaded on first use
    (compiled kernels) is loaded here, outside the timed loops."""
    sigs, qs = make_data(2_000, 200, num_perm, seed=99)
    adapter = ADAPTERS[lib](num_perm, bands, rows)
    objs, qobjs = adapter.objects(sigs), adapter.objects(qs)
    if bulk:
        adapter.insert_bulk(0, sigs, objs)
        adapter.query_bulk(qs, qobjs)
    else:
        for key, obj in enumerate(objs):
            adapter.insert(key, obj)
        for obj in qobjs:
            adapter.query(obj)


def run_library(
    lib: str, sigs: np.ndarray, qs: np.ndarray, bands: int, rows: int, time_limit: float
) -> dict[str, Any]:
    bulk = lib.endswith("-bulk")
    name = lib.removesuffix("-bulk")
    num_perm = sigs.shape[1]
    _warm_up(name, num_perm, bands, rows, bulk)
    adapter = ADAPTERS[name](num_perm, bands, rows)
    rss0 = rss_bytes()
    insert_s = insert_cpu = 0.0
    inserted = 0
    for start, end in chunks(sigs.shape[0]):
        objs = adapter.objects(sigs[start:end])
        t, c = time.perf_counter(), time.thread_time()
        if bulk:
            adapter.insert_bulk(start, sigs[start:end], objs)
        else:
            for key, obj in enumerate(objs, start):
                adapter.insert(key, obj)
        insert_s += time.perf_counter() - t
        insert_cpu += time.thread_time() - c
        inserted = end
        del objs
        if insert_s > time_limit:
            break
    rss1 = rss_bytes()
    qobjs = adapter.objects(qs)
    t, c = time.perf_counter(), time.thread_time()
    if bulk:
        candidates = adapter.query_bulk(qs, qobjs)
    else:
        candidates = 0
        for obj in qobjs:
            candidates += adapter.query(obj)
    query_s, query_cpu = time.perf_counter() - t, time.thread_time() - c
    out: dict[str, Any] = {
        "library": adapter.name + (" (bulk)" if bulk else ""),
        "n_inserted": inserted,
        "stopped_by_time_limit": inserted < sigs.shape[0],
        "insert_per_s": inserted / insert_s,
        "insert_per_cpu_s": inserted / insert_cpu,
        "query_per_s": qs.shape[0] / query_s,
        "query_per_cpu_s": qs.shape[0] / query_cpu,
        "mean_candidates": candidates / qs.shape[0],
        "index_rss_bytes": rss1 - rss0,
        "rss_bytes_per_doc": (rss1 - rss0) / inserted,
    }
    if name == "neardup":
        out["array_bytes_per_doc"] = adapter.index.nbytes / inserted
    return out


def _summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Min and median over the rounds of each rate (per CPU-second and wall)."""
    first = runs[0]
    out = {k: first[k] for k in ("library", "n_inserted", "stopped_by_time_limit")}
    for key in ("insert_per_cpu_s", "query_per_cpu_s", "insert_per_s", "query_per_s"):
        values = [r[key] for r in runs]
        out[key] = {"median": statistics.median(values), "min": min(values), "max": max(values)}
    out["mean_candidates"] = first["mean_candidates"]
    out["rss_bytes_per_doc"] = statistics.median(r["rss_bytes_per_doc"] for r in runs)
    if "array_bytes_per_doc" in first:
        out["array_bytes_per_doc"] = first["array_bytes_per_doc"]
    out["peak_rss_bytes"] = max(r["child_peak_rss_bytes"] for r in runs)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--num-perm", type=int, default=128)
    parser.add_argument("--bands", type=int, default=16)
    parser.add_argument("--rows", type=int, default=8)
    parser.add_argument(
        "--libs",
        default="neardup,rensa,datasketch,neardup-bulk,rensa-bulk",
        help="contenders: neardup, rensa, datasketch, each with -bulk for its batch calls",
    )
    parser.add_argument("--rounds", type=int, default=3, help="alternated runs per contender")
    parser.add_argument("--time-limit", type=float, default=60.0, help="insert seconds per lib")
    parser.add_argument("--out", type=Path, default=RESULTS / "lsh.json")
    args = parser.parse_args()
    sigs, qs = make_data(args.n, args.queries, args.num_perm, seed=0)
    print(
        f"{args.n:,} signatures x {args.num_perm}, {args.queries:,} queries, "
        f"{args.bands} bands x {args.rows} rows, {args.rounds} rounds"
    )
    libs = args.libs.split(",")
    runs: dict[str, list[dict[str, Any]]] = {lib: [] for lib in libs}
    for _ in range(args.rounds):
        for lib in libs:
            r = isolated(run_library, lib, sigs, qs, args.bands, args.rows, args.time_limit)
            runs[lib].append(r)
            print(
                f"{r['library']}: n {r['n_inserted']:,}, insert "
                f"{r['insert_per_cpu_s']:,.0f}/CPU s, query {r['query_per_cpu_s']:,.0f}/CPU s, "
                f"{r['rss_bytes_per_doc']:.0f} B/doc RSS, "
                f"{r['mean_candidates']:.2f} candidates/query",
                flush=True,
            )
    summary = {lib: _summary(rs) for lib, rs in runs.items()}
    ratios = {}
    pairs = [("neardup", "rensa"), ("neardup", "datasketch")]
    pairs += [("neardup-bulk", "rensa-bulk"), ("neardup-bulk", "datasketch-bulk")]
    for ours, theirs in pairs:
        if ours in summary and theirs in summary:
            for key in ("insert_per_cpu_s", "query_per_cpu_s"):
                ratios[f"{ours}/{theirs} {key.split('_')[0]}"] = round(
                    summary[ours][key]["median"] / summary[theirs][key]["median"], 3
                )
    print(ratios)
    # Per round (the contenders of a round ran back to back, under the same load).
    per_round = {}
    for ours, theirs in pairs:
        if ours in runs and theirs in runs:
            for key in ("insert_per_cpu_s", "query_per_cpu_s"):
                per_round[f"{ours}/{theirs} {key.split('_')[0]}"] = [
                    round(a[key] / b[key], 3) for a, b in zip(runs[ours], runs[theirs], strict=True)
                ]
    print(per_round)
    result = {
        "machine": machine(("neardup", "numpy", "numba", "datasketch", "rensa")),
        "n": args.n,
        "queries": args.queries,
        "num_perm": args.num_perm,
        "bands": args.bands,
        "rows": args.rows,
        "rounds": args.rounds,
        "data": "synthetic MinHash model: 80% random 32-bit values, 20% near copies "
        "(each value kept w.p. s ~ U(0.5,1)); queries half near copies (s ~ U(0.6,1))",
        "contenders": summary,
        "ratios_of_medians": ratios,
        "ratios_per_round": per_round,
        "runs": runs,
        "data_bytes_in_parent": int(sigs.nbytes + qs.nbytes),
    }
    save(args.out, result)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
