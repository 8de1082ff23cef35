"""The compiled word test (``similarity.wordarrays``) against the Python reference
(``similarity.overlap``): same answers, and how much faster.

Two parts, one process:

* **pairs**: on ``--pairs`` real Reuters pairs (four in five: a text against a
  ``bench_ingest`` edit of itself, of the kind its id and cycle hash to; one in five:
  against another story), microseconds per pair for splitting a text (``word_arrays``
  vs ``prepare``), the overlap with ``decide``, the sequence containment, the key words,
  and the stream's whole word test (one compiled call vs the reference's three calls); how
  many answers differ (must be 0).
* **stream**: the replicated stream of ``bench_ingest.py`` with ``verify="overlap"`` up to
  ``--start`` articles, stored once; the next ``--n`` articles into two copies of that
  store, once as shipped and once with the compiled path off
  (``detect.stream.word_arrays`` answering ``None``); articles per CPU-second of each and
  how many decisions differ (statuses, targets, every match's id, score and verdict).
  Caches start cold in both (the stream is re-opened on each copy).

Run:  /work/venv/bin/python benchmarks/bench_wordarrays.py [--pairs 3000] [--start 300032]
      [--n 10240]
Writes benchmarks/results/wordarrays.json (``--out``); about 10 minutes with the defaults.
"""

from __future__ import annotations

import argparse
import importlib
import random
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import neardup.detect.stream as stream_module
from _common import machine, save
from bench_figures_precheck import CONFIG, ingest
from bench_ingest import _edit, load_reuters
from neardup.similarity import wordarrays as wa

ov = importlib.import_module("neardup.similarity.overlap")


def _timed(f: Callable[[Any, Any], Any], pairs: list[tuple[Any, Any]]) -> tuple[float, list[Any]]:
    f(*pairs[0])  # compiled on first use
    t0 = time.perf_counter()
    out = [f(a, b) for a, b in pairs]
    return (time.perf_counter() - t0) / len(pairs) * 1e6, out


def bench_pairs(docs: list[dict[str, Any]], n: int) -> dict[str, Any]:
    rng = random.Random(0)
    ascii_docs = [d for d in docs if d["text"].isascii()]
    texts: list[tuple[str, str]] = []
    for i in range(n):
        d = ascii_docs[rng.randrange(len(ascii_docs))]
        if i % 5 == 4:
            new = ascii_docs[rng.randrange(len(ascii_docs))]["text"]
        else:
            new = _edit(d["text"], d["id"], 1 + i % 7)
        texts.append((d["text"], new))
    cfg = CONFIG.overlap
    rule = (CONFIG.overlap_min_coverage, CONFIG.overlap_max_added)
    width, min_seq = CONFIG.overlap_sequence_width, CONFIG.overlap_min_sequence
    results: dict[str, Any] = {"pairs": n}
    split_ref, _ = _timed(lambda s, t: (ov.prepare(s), ov.prepare(t)), texts)
    split_new, arrays = _timed(lambda s, t: (wa.word_arrays(s), wa.word_arrays(t)), texts)
    results["split_two_texts_us"] = {
        "reference": round(split_ref, 2),
        "compiled": round(split_new, 2),
    }
    params = wa.word_test_params(
        cfg, decide=rule, min_matched=CONFIG.overlap_min_matched, jaccard_ok=False,
        width=width, min_sequence=min_seq,
    )  # fmt: skip

    def ref_test(s: Any, t: Any) -> Any:
        o = ov.overlap_prepared(s, t, cfg, decide=rule)
        if not (o.coverage >= rule[0] and o.added <= rule[1] and o.stored_matched >= 20):
            return o, None, None
        if ov.sequence_containment(s, t, width, cfg, at_least=min_seq) < min_seq:
            return o, False, None
        return o, True, ov.key_overlap(s, t, cfg)

    def new_test(s: Any, t: Any) -> Any:
        r = wa.word_test_arrays(s, t, params)
        return r.overlap, r.sequence_passed, r.keys

    cases = {
        "overlap": (
            lambda s, t: ov.overlap_prepared(s, t, cfg, decide=rule),
            lambda s, t: wa.overlap_arrays(s, t, cfg, decide=rule),
        ),
        "sequence": (
            lambda s, t: ov.sequence_containment(s, t, width, cfg, at_least=min_seq),
            lambda s, t: wa.sequence_containment_arrays(s, t, width, cfg, at_least=min_seq),
        ),
        "key_words": (
            lambda s, t: ov.key_overlap(s, t, cfg),
            lambda s, t: wa.key_overlap_arrays(s, t, cfg),
        ),
        "word_test": (ref_test, new_test),
    }
    for name, (ref, new) in cases.items():
        # Fresh prepared texts per case: the reference memoises per text (peel, key words).
        fresh = [(ov.prepare(s), ov.prepare(t)) for s, t in texts]
        ref_us, ref_out = _timed(ref, fresh)
        new_us, new_out = _timed(new, arrays)
        differ = sum(x != y for x, y in zip(ref_out, new_out, strict=True))
        results[name] = {
            "reference_us": round(ref_us, 2),
            "compiled_us": round(new_us, 2),
            "speedup": round(ref_us / new_us, 1),
            "answers_differ": differ,
        }
    return results


def bench_stream(docs: list[dict[str, Any]], start: int, n: int) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="nd-bench-wordarrays-"))
    runs: dict[str, Any] = {}
    try:
        base = work / "base.db"
        _, build_cpu = ingest(base, docs, 0, start)
        for name in ("compiled", "reference"):
            copy = work / f"{name}.db"
            shutil.copy(base, copy)
            if name == "reference":
                stream_module.word_arrays = lambda *a, **k: None  # type: ignore[assignment]
            decided, cpu = ingest(copy, docs, start, n)
            runs[name] = {"decisions": decided, "cpu_seconds": round(cpu, 2)}
        stream_module.word_arrays = wa.word_arrays
    finally:
        shutil.rmtree(work, ignore_errors=True)
    a, b = runs["compiled"], runs["reference"]
    out: dict[str, Any] = {
        "start": start,
        "articles": n,
        "build_articles_per_cpu_s": round(start / build_cpu, 1),
        "decisions_differ": sum(
            x != y for x, y in zip(a["decisions"], b["decisions"], strict=True)
        ),
    }
    for name, r in runs.items():
        out[name] = {
            "cpu_seconds": r["cpu_seconds"],
            "articles_per_cpu_s": round(n / r["cpu_seconds"], 1),
        }
    out["speedup"] = round(b["cpu_seconds"] / a["cpu_seconds"], 2)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pairs", type=int, default=3000)
    ap.add_argument("--start", type=int, default=300_032)
    ap.add_argument("--n", type=int, default=10_240)
    ap.add_argument("--skip-stream", action="store_true")
    ap.add_argument("--out", default="wordarrays", help="results/<out>.json")
    args = ap.parse_args()
    docs = load_reuters()
    out: dict[str, Any] = {"machine": machine(("neardup", "numpy", "numba")), "args": vars(args)}
    out["pairs"] = bench_pairs(docs, args.pairs)
    print(out["pairs"])
    if not args.skip_stream:
        out["stream"] = bench_stream(docs, args.start, args.n)
        print(out["stream"])
    print("wrote", save(args.out, out))


if __name__ == "__main__":
    main()
