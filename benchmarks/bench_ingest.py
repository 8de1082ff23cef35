"""Ingest of the Reuters stream replicated towards 1 M articles into the SQLite store.

Replication (deterministic): cycle 0 is the Reuters-21578 stream itself (articles with
non-empty text, in their chronological order).  Cycle ``c >= 1`` repeats it with ids
``<id>~c<c>``, dates shifted by ``c`` times the stream's span (so the article rate per hour,
which drives event detection, is Reuters' own), and one deterministic edit per article, by
``xxh64(id, c) % 4``: 0 one word replaced, 1 three words replaced, 2 a quarter of the words
replaced, 3 the last fifth dropped.  Edits 0, 1 and 3 usually give ``duplicate`` decisions,
edit 2 ``similar`` or ``new`` ones, so the canonical index keeps growing.

Measures, in one process, one core:

* **main run**: articles/s with every decision made and committed (batches of ``--batch``,
  SQLite ``synchronous=normal``), with the split between signing (outside the transaction)
  and deciding + storing, and the rate per stretch of 16,384 articles (how it falls as the
  store grows); peak RSS; store size.  Stops at ``--n`` articles or after
  ``--time-limit`` seconds, whichever comes first, and reports the number actually ingested
  (nothing is extrapolated).
* **candidate settings** on the first ``--stage-n`` articles: the defaults, fewer judged
  candidates (``max_verified`` 8) and no story candidates (``story_candidates`` 0: only
  shared passages are judged): rate, decisions per status, and how many decisions each
  changes.
* ``--decisions FILE`` writes the main run's decisions (id, status, original), so two
  versions run side by side can be checked to decide alike (``cmp``);
* ``--config JSON`` sets the main run's ``CandidateConfig`` fields (default: the defaults);
  ``--typographic`` prints every article with a news site's punctuation.
* **durability**: ``synchronous=normal`` vs ``full``, batch ``--batch`` vs batch 1.
* **baseline**: the ``simhash`` package's ``SimhashIndex(k=3)`` (in memory, no store, no
  verification) on the same ``--stage-n`` articles: what a user would otherwise pick.  Its
  rate on the first 4,000 articles is also taken just before and after the main run, as the
  machine's speed in that run (``machine_speed_simhash_pkg_per_cpu_s_before_after``).

Rates are given per wall-clock second and per CPU second of the process (``process_time``):
on a shared, loaded machine the second is the fair "one core" figure.

Run:  /work/venv/bin/python benchmarks/bench_ingest.py [--n 1000000] [--time-limit 60]
Writes benchmarks/results/ingest.json (``--out ingest_1m``: results/ingest_1m.json).
"""

from __future__ import annotations

import argparse
import datetime
import json
import resource
import shutil
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import xxhash

from _common import machine, read_reuters, save
from neardup.detect.stream import CandidateConfig, Decision, NewsStream, StreamConfig
from neardup.store import open_store


def machine_info() -> dict[str, Any]:
    """The shared machine info plus the SQLite library version the store runs on."""
    import sqlite3

    return {**machine(("neardup", "numpy", "xxhash", "simhash")), "sqlite": sqlite3.sqlite_version}


def load_reuters() -> list[dict[str, Any]]:
    return [
        {"id": d["id"], "text": d["text"], "date": d["date"], "title": d.get("title")}
        for d in read_reuters()
        if d["text"].strip()
    ]


def _edit(text: str, doc_id: str, cycle: int) -> str:
    h = xxhash.xxh64_intdigest(f"{doc_id}~{cycle}".encode(), seed=0)
    words = text.split()
    kind = h % 4
    if kind == 3:
        return " ".join(words[: max(1, len(words) * 4 // 5)])
    count = {0: 1, 1: 3, 2: max(1, len(words) // 4)}[kind]
    for j in range(count):
        pos = (h >> (8 + j % 40)) % len(words) if j < 40 else (h + j * 7919) % len(words)
        words[int(pos)] = f"w{cycle}x{j}"
    return " ".join(words)


def replicated(docs: list[dict[str, Any]], n: int) -> Iterator[dict[str, Any]]:
    """The stream of ``n`` articles described in the module docstring."""
    dates = sorted(d["date"] for d in docs if d["date"])
    first = datetime.datetime.fromisoformat(dates[0])
    last = datetime.datetime.fromisoformat(dates[-1])
    span = last - first + datetime.timedelta(days=1)
    produced = 0
    cycle = 0
    while True:
        for d in docs:
            if produced >= n:
                return
            if cycle == 0:
                yield d
            else:
                date = None
                if d["date"]:
                    shifted = datetime.datetime.fromisoformat(d["date"]) + cycle * span
                    date = shifted.isoformat()
                yield {
                    "id": f"{d['id']}~c{cycle}",
                    "text": _edit(d["text"], d["id"], cycle),
                    "date": date,
                    "title": d["title"],
                }
            produced += 1
        cycle += 1


def peak_rss_mb() -> float:
    """Peak resident size; it counts the store's memory-mapped pages the process touched."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def rss_parts_mb() -> dict[str, float]:
    """Resident size now, split into anonymous memory (the process's own: indexes, caches)
    and file pages (mostly the memory-mapped store: the OS page cache's, shared); Linux."""
    parts: dict[str, float] = {}
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            name, _, value = line.partition(":")
            if name in ("RssAnon", "RssFile"):
                parts[f"{name[3:].lower()}_rss_mb_at_end"] = round(int(value.split()[0]) / 1024, 1)
    except OSError:
        pass
    return parts


#: The main run's rate is also given per stretch of this many articles (a multiple of any
#: batch size that is a power of two up to it): how it falls as the store grows.
STRETCH = 16_384


def ingest_run(
    docs: list[dict[str, Any]],
    n: int,
    config: StreamConfig,
    workdir: Path,
    *,
    batch: int,
    synchronous: str = "normal",
    time_limit: float = 1e9,
) -> dict[str, Any]:
    path = workdir / f"run-{time.monotonic_ns()}.db"
    stream = NewsStream(open_store(f"sqlite:///{path}?synchronous={synchronous}"), config)
    counts: Counter[str] = Counter()
    decisions: dict[str, tuple[str, str | None]] = {}
    sign_s = 0.0
    total_s = 0.0
    cpu_s = 0.0
    done = 0
    stretch_cpu = 0.0  # CPU of the current stretch of STRETCH articles
    by_stretch: list[float] = []
    chunk: list[dict[str, Any]] = []
    source = replicated(docs, n)
    while True:
        chunk = [d for _, d in zip(range(batch), source, strict=False)]
        if not chunk:
            break
        c0 = time.process_time()
        t0 = time.perf_counter()
        prepared = [stream.prepare(d) for d in chunk]
        t1 = time.perf_counter()
        results = _decide(stream, prepared)
        t2 = time.perf_counter()
        spent = time.process_time() - c0
        cpu_s += spent
        stretch_cpu += spent
        sign_s += t1 - t0
        total_s += t2 - t0
        done += len(chunk)
        if done % STRETCH == 0:
            by_stretch.append(round(STRETCH / stretch_cpu, 1))
            stretch_cpu = 0.0
        for d, r in zip(chunk, results, strict=True):
            if isinstance(r, Decision):
                counts[r.status] += 1
                if r.event:
                    counts["in_event"] += 1
                decisions[d["id"]] = (r.status, r.duplicate_of)
            else:
                counts["error"] += 1
        if total_s > time_limit:
            break
    indexed = stream.indexed
    events = len(stream.events())
    memory = rss_parts_mb()
    stream.close()
    size = sum(p.stat().st_size for p in workdir.glob(path.name + "*"))
    for p in workdir.glob(path.name + "*"):
        p.unlink()
    return {
        "articles": done,
        "seconds": round(total_s, 2),
        "articles_per_s": round(done / total_s, 1),
        "cpu_seconds": round(cpu_s, 2),
        "articles_per_cpu_s": round(done / cpu_s, 1),
        "articles_per_cpu_s_by_stretch": by_stretch,
        "sign_seconds": round(sign_s, 2),
        "decide_store_seconds": round(total_s - sign_s, 2),
        "statuses": dict(counts),
        "indexed_canonical": indexed,
        "events": events,
        "store_bytes": size,
        "store_bytes_per_article": round(size / max(done, 1)),
        **memory,
        "_decisions": decisions,
    }


def _decide(stream: NewsStream, prepared: list[Any]) -> list[Any]:
    """``NewsStream.ingest_many`` minus its signing step (already timed separately)."""
    out: list[Any] = []
    with stream.store.write():
        stream._catch_up()
        for p in prepared:
            out.append(stream._ingest_one(p))
    return out


def baseline_simhash(docs: list[dict[str, Any]], n: int) -> dict[str, Any]:
    from simhash import Simhash, SimhashIndex

    index = SimhashIndex([], k=3)
    dups = 0
    t0 = time.perf_counter()
    c0 = time.process_time()
    done = 0
    for d in replicated(docs, n):
        sh = Simhash(d["text"])
        if index.get_near_dups(sh):
            dups += 1
        else:
            index.add(d["id"], sh)
        done += 1
    elapsed = time.perf_counter() - t0
    cpu = time.process_time() - c0
    return {
        "library": "simhash (PyPI) SimhashIndex k=3, in memory, no store, no verification",
        "articles": done,
        "articles_per_s": round(done / elapsed, 1),
        "articles_per_cpu_s": round(done / cpu, 1),
        "near_duplicates": dups,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--stage-n", type=int, default=8_000)
    ap.add_argument("--skip-main", action="store_true")
    ap.add_argument("--main-only", action="store_true", help="skip stages, durability, baseline")
    ap.add_argument("--out", default="ingest", help="results/<out>.json (e.g. ingest_1m)")
    ap.add_argument(
        "--typographic",
        action="store_true",
        help="print every article with a news site's punctuation (_corpora.typographic): the "
        "same stream as non-ASCII text",
    )
    ap.add_argument(
        "--decisions",
        default=None,
        help="write the main run's decisions (id, status, duplicate_of) here, one JSON line "
        "each in ingest order: two versions decide alike when the files are equal (cmp)",
    )
    ap.add_argument(
        "--config",
        default="{}",
        help="CandidateConfig fields for the main run, as JSON (e.g. '{\"max_verified\": 8}')",
    )
    args = ap.parse_args()
    docs = load_reuters()
    if args.typographic:
        from _corpora import typographic

        docs = [{**d, "text": typographic(d["text"])} for d in docs]
    out: dict[str, Any] = {
        "machine": machine_info(),
        "reuters_articles": len(docs),
        "args": vars(args),
    }
    workdir = Path(tempfile.mkdtemp(prefix="nd-bench-ingest-"))
    try:
        fields = json.loads(args.config)
        default = StreamConfig(candidates=CandidateConfig(**fields))
        if not args.skip_main:
            # The machine's speed in the same run (a shared machine's speed varies by 1.5x
            # between days): the simhash package's rate before and after the main run.
            speed = [baseline_simhash(docs, 4000)["articles_per_cpu_s"]]
            main_run = ingest_run(
                docs, args.n, default, workdir, batch=args.batch, time_limit=args.time_limit
            )
            speed.append(baseline_simhash(docs, 4000)["articles_per_cpu_s"])
            main_run["machine_speed_simhash_pkg_per_cpu_s_before_after"] = speed
            decided = main_run.pop("_decisions")
            if args.decisions:
                with open(args.decisions, "w", encoding="utf-8") as fh:
                    for article_id, (status, original) in decided.items():
                        fh.write(json.dumps([article_id, status, original]) + "\n")
            main_run["peak_rss_mb"] = round(peak_rss_mb(), 1)
            out["main"] = main_run
            print("main", json.dumps(main_run))
        if args.main_only:
            out["peak_rss_mb_process"] = round(peak_rss_mb(), 1)
            print("wrote", save(args.out, out))
            return
        stages: dict[str, Any] = {}
        decided: dict[str, dict[str, tuple[str, str | None]]] = {}
        variants = {
            "default": StreamConfig(),
            "max_verified=8": StreamConfig(candidates=CandidateConfig(max_verified=8)),
            "story_candidates=0": StreamConfig(candidates=CandidateConfig(story_candidates=0)),
        }
        for name, config in variants.items():
            run = ingest_run(docs, args.stage_n, config, workdir, batch=args.batch)
            decided[name] = run.pop("_decisions")
            stages[name] = run
            print("stage", name, json.dumps(run))
        for b in ("max_verified=8", "story_candidates=0"):
            changed = Counter(
                f"{decided['default'][k][0]}->{decided[b][k][0]}"
                for k in decided["default"]
                if decided["default"][k] != decided[b].get(k)
            )
            stages[f"changed_default_to_{b}"] = dict(changed)
            print("changed default ->", b, dict(changed))
        out["stages"] = stages
        durability = {}
        for sync in ("normal", "full"):
            for batch in (args.batch, 1):
                n = args.stage_n if batch > 1 else min(args.stage_n, 1500)
                run = ingest_run(docs, n, default, workdir, batch=batch, synchronous=sync)
                run.pop("_decisions")
                key = f"synchronous={sync},batch={batch}"
                durability[key] = {
                    k: run[k] for k in ("articles", "articles_per_s", "articles_per_cpu_s")
                }
                print("durability", key, durability[key])
        out["durability"] = durability
        out["baseline"] = baseline_simhash(docs, args.stage_n)
        print("baseline", out["baseline"])
        ours = stages["default"]["articles_per_cpu_s"]
        theirs = out["baseline"]["articles_per_cpu_s"]
        out["ratio_neardup_vs_simhash_pkg_per_cpu_s"] = round(ours / theirs, 2)
        print("ratio per CPU second", out["ratio_neardup_vs_simhash_pkg_per_cpu_s"])
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    out["peak_rss_mb_process"] = round(peak_rss_mb(), 1)
    print("wrote", save(args.out, out))


if __name__ == "__main__":
    main()
