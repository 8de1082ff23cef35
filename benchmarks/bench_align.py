"""Passage alignment on PAN 2013 pairs: pairs per CPU-second, with the machine's speed.

Aligns every pair of the held-out half of ``../shared/data/pan13_text_alignment`` (the
``test`` split of ``pair_split`` in research/pan13_alignment.py) with
:func:`neardup.similarity.align_passages` from the two raw texts, as a user calls it (both
texts prepared inside the call, nothing cached across pairs), in ``--rounds`` rounds, and
reports the median round in pairs per CPU-second of this process and per wall second.  Side
by side in the same rounds: preparing the two texts alone (:func:`prepare_text`, the text
stage's sentences and tokens), so the share of the aligner proper is visible.  The machine's
speed is taken before and after with the yardstick ``bench_ingest.py`` and
``bench_origin.py`` use (the ``simhash`` package on Reuters, documents per CPU-second).

Run:  python benchmarks/bench_align.py [--rounds 3] [--limit N]
Writes benchmarks/results/align.json.  Needs ../shared/data; about a minute a round.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from _common import machine, read_reuters, save
from neardup.similarity.alignment import AlignmentConfig, align_passages, prepare_text

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "research"))
from pan13_alignment import load


def machine_speed(n: int = 4000) -> float:
    """The ``simhash`` package on the first ``n`` Reuters documents, per CPU-second."""
    from simhash import Simhash, SimhashIndex

    docs = [(d["id"], d["text"]) for d in read_reuters() if d["text"]][:n]
    index = SimhashIndex([], k=3)
    c0 = time.process_time()
    for doc_id, text in docs:
        sh = Simhash(text)
        if not index.get_near_dups(sh):
            index.add(doc_id, sh)
    return len(docs) / (time.process_time() - c0)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--limit", type=int, default=None, help="pairs per category")
    args = parser.parse_args()
    texts, pairs = load(None, "test", args.limit)
    cfg = AlignmentConfig()
    work = [(texts[p.src], texts[p.susp]) for p in pairs]
    for src, susp in work[:30]:  # warm the compiled kernels and caches
        align_passages(src, susp, cfg)

    def align_all() -> None:
        for src, susp in work:
            align_passages(src, susp, cfg)

    def prepare_all() -> None:
        for src, susp in work:
            prepare_text(src, cfg)
            prepare_text(susp, cfg)

    jobs = (("align_passages", align_all), ("prepare_text of both texts only", prepare_all))
    cpu: dict[str, list[float]] = {name: [] for name, _ in jobs}
    wall: dict[str, list[float]] = {name: [] for name, _ in jobs}
    speed = [machine_speed()]
    for _ in range(args.rounds):
        for name, fn in jobs:
            w0, c0 = time.perf_counter(), time.process_time()
            fn()
            cpu[name].append(time.process_time() - c0)
            wall[name].append(time.perf_counter() - w0)
    speed.append(machine_speed())
    out: dict[str, Any] = {
        "machine": machine(("neardup", "numpy", "numba", "simhash")),
        "pairs": len(work),
        "split": "test",
        "results": {},
        "machine_speed_simhash_pkg_docs_per_cpu_s_before_after": speed,
    }
    for name, _ in jobs:
        c = sorted(cpu[name])[len(cpu[name]) // 2]
        w = sorted(wall[name])[len(wall[name]) // 2]
        out["results"][name] = {
            "cpu_s_rounds": cpu[name],
            "wall_s_rounds": wall[name],
            "pairs_per_cpu_s": len(work) / c,
            "pairs_per_s_wall": len(work) / w,
        }
        print(f"{name:34s} {len(work) / c:7.1f} pairs per CPU-second ({len(work) / w:.1f}/s wall)")
    print(
        f"machine speed (simhash package) before/after: {speed[0]:.0f} / {speed[1]:.0f} docs/CPU-s"
    )
    print("wrote", save("align", out, indent=1))


if __name__ == "__main__":
    main()
