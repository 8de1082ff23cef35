"""The first start on a new machine: the README's first command with numba's cache empty.

neardup's kernels are compiled by numba the first time a process needs them and cached on
disk; a new machine (or a new version) starts with an empty cache.  This script measures
what a user waits for then, and once the cache is warm:

* ``serve``: ``neardup serve --preload N`` (the README's first command), wall seconds from
  the start of the process until the page answers 200;
* ``ingest`` / ``dedup``: ``neardup ingest`` of ``N`` Reuters articles into a new SQLite
  store and ``neardup dedup`` of them, wall and CPU seconds of the process.

Each job runs in a temporary folder with ``NUMBA_CACHE_DIR`` set to a new empty folder
(``cold``), then once more on that cache (``warm``).  ``--base-src B/src`` runs another
version too (``PYTHONPATH=B/src``, for example a worktree of an earlier commit), round by
round after this one: the machine's drift falls on both alike.  Data: Reuters-21578 from
``../shared/data`` (or ``$NEARDUP_DATA``).

Run:  python benchmarks/bench_first_start.py [--jobs serve,ingest,dedup] [--n 2000]
      [--rounds 2] [--base-src B/src]
Writes benchmarks/results/first_start.json (or ``--out``).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from _common import DATA, machine, read_reuters, save

NEARDUP = str(Path(sys.executable).with_name("neardup"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _answers(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=1) as r:
            return bool(r.status == 200)
    except OSError:
        return False


def _serve(env: dict[str, str], folder: Path, n: int) -> dict[str, float]:
    port = _free_port()
    start = time.perf_counter()
    proc = subprocess.Popen(
        [NEARDUP, "serve", "--preload", str(n), "--port", str(port)],
        cwd=folder,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        while not _answers(port):
            if proc.poll() is not None:
                raise RuntimeError(f"neardup serve exited {proc.returncode}")
            if time.perf_counter() - start > 900:
                raise RuntimeError("neardup serve not ready after 900 s")
            time.sleep(0.2)
        return {"ready_s": round(time.perf_counter() - start, 2)}
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def _command(env: dict[str, str], folder: Path, args: list[str]) -> dict[str, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([NEARDUP, *args], cwd=folder, env=env, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2)}


def _job(job: str, env: dict[str, str], folder: Path, corpus: Path, n: int) -> dict[str, float]:
    if job == "serve":
        for stale in folder.glob("neardup.db*"):
            stale.unlink()
        return _serve(env, folder, n)
    if job == "ingest":
        store = folder / "ingest.db"
        for stale in folder.glob("ingest.db*"):
            stale.unlink()
        return _command(
            env, folder, ["ingest", str(corpus), "--store", f"sqlite:///{store}", "--no-progress"]
        )
    return _command(
        env,
        folder,
        ["dedup", str(corpus), "-o", str(folder / "kept.jsonl"), "--force", "--no-progress"],
    )


def _version(label: str, src: str | None, jobs: list[str], corpus: Path, n: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for job in jobs:
        folder = Path(tempfile.mkdtemp(prefix=f"first_start_{label}_{job}_"))
        cache = folder / "numba_cache"
        env = {
            **os.environ,
            "NUMBA_CACHE_DIR": str(cache),
            "NEARDUP_DATA": str(DATA),
            "PYTHONDONTWRITEBYTECODE": "",
        }
        if src is not None:
            env["PYTHONPATH"] = src
        try:
            out[job] = {
                "cold": _job(job, env, folder, corpus, n),
                "warm": _job(job, env, folder, corpus, n),
            }
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        print(label, job, json.dumps(out[job]), flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jobs", default="serve,ingest,dedup")
    ap.add_argument("--n", type=int, default=2000, help="articles (serve: --preload N)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--base-src", default=None, help="another version's src folder")
    ap.add_argument("--out", default="first_start")
    args = ap.parse_args()
    jobs = [j for j in args.jobs.split(",") if j]
    unknown = set(jobs) - {"serve", "ingest", "dedup"}
    if unknown:
        ap.error(f"unknown jobs: {sorted(unknown)}")
    work = Path(tempfile.mkdtemp(prefix="first_start_"))
    corpus = work / "reuters.jsonl"
    with corpus.open("w") as f:
        for i, doc in enumerate(read_reuters()):
            if i == args.n:
                break
            f.write(json.dumps({"id": doc["id"], "text": doc["text"], "date": doc["date"]}) + "\n")
    versions = {"this": None} | ({"base": args.base_src} if args.base_src else {})
    rounds: list[dict[str, Any]] = []
    try:
        for r in range(args.rounds):
            rounds.append(
                {
                    label: _version(label, src, jobs, corpus, args.n)
                    for label, src in versions.items()
                }
            )
            print(f"round {r + 1} done", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    path = save(
        args.out if "/" not in args.out else Path(args.out),
        {
            "machine": machine(),
            "n": args.n,
            "jobs": jobs,
            "base_src": args.base_src,
            "rounds": rounds,
        },
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
