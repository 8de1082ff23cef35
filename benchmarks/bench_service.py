"""Load benchmark of ``neardup serve`` (issue 6): traffic to 127.0.0.1 only, bounded in time.

What it measures, side by side in one run, on real Reuters-21578 articles:

1. **Ingest over HTTP**: articles/s for ``POST /v1/documents`` in batches of 100 and one
   article per request (4 client threads), into a fresh SQLite store (goal >= 500/s).
2. **Result-set dedup**: ``POST /v1/dedup`` with 100 stored ids per request, requests/s and
   latency percentiles (goal >= 1,000 req/s, p99 <= 10 ms) — distinct sets (every request a
   cache miss: more sets than the session cache holds, cycled) and repeated sets (the session
   cache of seed 000).
3. **Soak**: mixed traffic (dedup, document and similar reads, events, origin by id, ingest
   of new articles) for ``--soak SECONDS``: errors (must be 0) and the server's resident
   memory sampled every second (must stay flat).

Load generator: Debian's ``wrk`` (C, epoll, one thread) with Lua scripts that cycle through
pre-built request bodies; it shares the 2 cores with the server, so figures are a lower
bound of what the server alone would do.  Ingest uses an httpx client (the server, not the
client, is the bottleneck there: each article is signed and decided).

Usage::

    python benchmarks/bench_service.py [--workers 2] [--articles 3000] [--duration 15]
                                       [--soak 60] [--connections 4,16]

Results: printed, and saved with the machine to benchmarks/results/service.json.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import psutil

from _common import loadavg, machine, read_reuters, save

ROOT = Path(__file__).resolve().parents[1]

WRK_SCRIPT = r"""
local bodies = {}
local methods = {}
local paths = {}
local i = 0
init = function(args)
  local f = assert(io.open(args[1], "r"))
  for line in f:lines() do
    local method, path, body = line:match("^(%u+) (%S+) ?(.*)$")
    methods[#methods + 1] = method
    paths[#paths + 1] = path
    bodies[#bodies + 1] = body
  end
  f:close()
end
request = function()
  i = i % #bodies + 1
  if methods[i] == "GET" then
    return wrk.format("GET", paths[i])
  end
  return wrk.format(methods[i], paths[i], {["Content-Type"] = "application/json"}, bodies[i])
end
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'WRKJSON {"requests": %d, "duration_us": %d, "status_errors": %d, "connect_errors": %d, ' ..
    '"read_errors": %d, "write_errors": %d, "timeouts": %d, "p50_us": %d, "p90_us": %d, ' ..
    '"p99_us": %d, "max_us": %d, "mean_us": %.1f}\n',
    summary.requests, summary.duration, e.status, e.connect, e.read, e.write, e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max,
    latency.mean))
end
"""


def machine_info() -> dict[str, Any]:
    """The shared machine info plus the wrk version (the load generator)."""
    wrk = subprocess.run(["wrk", "--version"], capture_output=True, text=True, check=False)
    return {
        **machine(("fastapi", "starlette", "uvicorn", "pydantic", "httpx", "numpy", "numba")),
        "wrk": (wrk.stdout or wrk.stderr).splitlines()[0] if (wrk.stdout or wrk.stderr) else None,
    }


def reuters(limit: int) -> list[dict[str, Any]]:
    out = []
    for d in read_reuters():
        if d["text"].strip():
            out.append({k: d[k] for k in ("id", "text", "title", "date") if d.get(k)})
            if len(out) >= limit:
                break
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    def __init__(self, store: str, workers: int) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        exe = Path(sys.executable).with_name("neardup")
        cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "neardup.cli"]
        self.proc = subprocess.Popen(
            [*cmd, "serve", "--store", store, "--port", str(self.port), "--workers", str(workers)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(self.url + "/healthz", timeout=1).status_code == 200:
                    # with several workers, wait until all of them answer
                    time.sleep(1.0 if workers > 1 else 0.1)
                    return
            except httpx.HTTPError:
                time.sleep(0.2)
        self.stop()
        sys.exit("bench_service: the server did not start")

    def rss_bytes(self) -> int:
        try:
            root = psutil.Process(self.proc.pid)
            procs = [root, *root.children(recursive=True)]
            return sum(p.memory_info().rss for p in procs)
        except psutil.Error:
            return 0

    def cpu_seconds(self) -> float:
        """User + system CPU time of the server and its workers so far."""
        try:
            root = psutil.Process(self.proc.pid)
            total = 0.0
            for p in [root, *root.children(recursive=True)]:
                t = p.cpu_times()
                total += t.user + t.system
            return total
        except psutil.Error:
            return 0.0

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


_BUCKET = re.compile(
    r'^neardup_http_request_duration_seconds_bucket\{method="(\w+)",route="([^"]+)",'
    r'pid="(\d+)",le="([^"]+)"\} (\d+)$'
)


def server_histograms(server: Server, workers: int) -> dict[tuple[str, str, str, str], int]:
    """Cumulative latency buckets of every worker, measured inside the server (from the
    request's arrival in the app to its last byte): scraped over new connections until
    every worker has answered (each keeps its own counters)."""
    seen: dict[str, dict[tuple[str, str, str, str], int]] = {}
    for _ in range(60):
        text = httpx.get(server.url + "/metrics", timeout=10).text
        rows = {}
        for line in text.splitlines():
            m = _BUCKET.match(line)
            if m:
                rows[(m[1], m[2], m[3], m[4])] = int(m[5])
        if rows:
            seen[next(iter(rows))[2]] = rows
        if len(seen) >= workers:
            break
    merged: dict[tuple[str, str, str, str], int] = {}
    for rows in seen.values():
        merged.update(rows)
    return merged


def server_percentile(
    before: dict[tuple[str, str, str, str], int],
    after: dict[tuple[str, str, str, str], int],
    method: str,
    route: str,
    q: float,
) -> float | None:
    """The upper bound (ms) of the histogram bucket holding the q-quantile of the requests
    made between two scrapes (bucket resolution: 0.5, 1, 2.5, 5, 10, 25 ms, ...)."""
    totals: dict[str, int] = {}
    for key, value in after.items():
        if key[0] == method and key[1] == route:
            totals[key[3]] = totals.get(key[3], 0) + value - before.get(key, 0)
    if not totals or not totals.get("+Inf"):
        return None
    count = totals["+Inf"]
    bounds = sorted((float(b), n) for b, n in totals.items() if b != "+Inf")
    for bound, n in bounds:
        if n >= q * count:
            return bound * 1000
    return float("inf")


def run_wrk(server: Server, lines: list[str], seconds: float, connections: int, tmp: Path) -> dict:
    """wrk over ``lines``; adds the server's CPU milliseconds per request (all workers): a
    figure that, unlike requests/s, does not depend on what else runs on the machine."""
    cpu0 = server.cpu_seconds()
    figures = _wrk(server.url, lines, seconds, connections, tmp)
    cpu = server.cpu_seconds() - cpu0
    figures["server_cpu_ms_per_request"] = round(1000 * cpu / max(1, figures["requests"]), 3)
    return figures


def _wrk(url: str, lines: list[str], seconds: float, connections: int, tmp: Path) -> dict:
    script = tmp / "bench.lua"
    script.write_text(WRK_SCRIPT)
    bodies = tmp / f"requests-{time.monotonic_ns()}.txt"
    bodies.write_text("\n".join(lines) + "\n")
    cmd = [
        "wrk", "-t1", f"-c{connections}", f"-d{max(1, round(seconds))}s", "--timeout", "10s",
        "-s", str(script), url, "--", str(bodies),
    ]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 60, check=False)
    found = re.search(r"WRKJSON (\{.*\})", done.stdout)
    if not found:
        raise RuntimeError(f"wrk failed: {done.stdout}\n{done.stderr}")
    raw = json.loads(found.group(1))
    errors = sum(raw[k] for k in ("status_errors", "connect_errors", "read_errors",
                                  "write_errors", "timeouts"))  # fmt: skip
    secs = raw["duration_us"] / 1e6
    return {
        "connections": connections,
        "seconds": round(secs, 2),
        "requests": raw["requests"],
        "requests_per_s": round(raw["requests"] / secs, 1),
        "p50_ms": raw["p50_us"] / 1000,
        "p90_ms": raw["p90_us"] / 1000,
        "p99_ms": raw["p99_us"] / 1000,
        "max_ms": raw["max_us"] / 1000,
        "errors": errors,
        "error_detail": {k: v for k, v in raw.items() if k.endswith(("errors", "timeouts"))},
    }


def bench_ingest(server: Server, docs: list[dict[str, Any]]) -> dict[str, Any]:
    url = server.url
    half = len(docs) // 2
    cpu0 = server.cpu_seconds()
    batched, singles = docs[:half], docs[half:]
    with httpx.Client(base_url=url, timeout=120) as client:
        start = time.perf_counter()
        for i in range(0, len(batched), 100):
            res = client.post("/v1/documents", json=batched[i : i + 100])
            res.raise_for_status()
        batch_s = time.perf_counter() - start
    cpu_batch = server.cpu_seconds() - cpu0
    errors: list[str] = []

    def post_each(chunk: list[dict[str, Any]]) -> None:
        with httpx.Client(base_url=url, timeout=120) as c:
            for doc in chunk:
                r = c.post("/v1/documents", json=doc)
                if r.status_code != 200:
                    errors.append(r.text)

    threads = [threading.Thread(target=post_each, args=(singles[i::4],)) for i in range(4)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    single_s = time.perf_counter() - start
    cpu_single = server.cpu_seconds() - cpu0 - cpu_batch
    return {
        "batch_of_100": {
            "articles": len(batched),
            "seconds": round(batch_s, 2),
            "articles_per_s": round(len(batched) / batch_s, 1),
            "server_cpu_ms_per_article": round(1000 * cpu_batch / len(batched), 3),
        },
        "one_per_request_4_clients": {
            "articles": len(singles),
            "seconds": round(single_s, 2),
            "articles_per_s": round(len(singles) / single_s, 1),
            "server_cpu_ms_per_article": round(1000 * cpu_single / len(singles), 3),
            "errors": len(errors),
        },
    }


def dedup_lines(ids: list[str], sets: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [
        "POST /v1/dedup " + json.dumps({"items": rng.sample(ids, 100)}, separators=(",", ":"))
        for _ in range(sets)
    ]


def soak_lines(
    ids: list[str], docs: list[dict[str, Any]], n: int, seed: int, prefix: str
) -> list[str]:
    """A mixed-traffic request list (wrk cycles through it; new-article ids are unique per
    list, and a repeat in a later cycle is an idempotent re-ingest of the same text)."""
    rng = random.Random(seed)
    lines = []
    for i in range(n):
        r = rng.random()
        if r < 0.60:
            lines.append(dedup_lines(ids, 1, rng.randrange(1 << 30))[0])
        elif r < 0.72:
            lines.append(f"GET /v1/documents/{rng.choice(ids)}")
        elif r < 0.84:
            lines.append(f"GET /v1/documents/{rng.choice(ids)}/similar?limit=10")
        elif r < 0.89:
            lines.append("GET /v1/events")
        elif r < 0.93:
            body = {"id": rng.choice(ids)}
            lines.append("POST /v1/origin " + json.dumps(body))
        elif r < 0.95:
            lines.append("GET /healthz")
        else:
            doc = rng.choice(docs)
            new = {**doc, "id": f"{prefix}-{i}", "text": doc["text"] + f" ({prefix} edit {i})"}
            lines.append("POST /v1/documents " + json.dumps(new, separators=(",", ":")))
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--articles", type=int, default=3000)
    parser.add_argument("--duration", type=float, default=15.0, help="seconds per dedup run")
    parser.add_argument("--soak", type=float, default=60.0, help="seconds of mixed traffic")
    parser.add_argument("--connections", default="4,16")
    args = parser.parse_args()
    if not shutil.which("wrk"):
        sys.exit("bench_service: wrk not found (apt-get install wrk)")
    if args.duration * 2 * len(args.connections.split(",")) + args.soak > 1200:
        sys.exit("bench_service: keep the total run under 20 minutes")

    docs = reuters(args.articles + 600)
    corpus, extra = docs[: args.articles], docs[args.articles :]
    results: dict[str, Any] = {"machine": machine_info(), "workers": args.workers}
    with tempfile.TemporaryDirectory(prefix="neardup-bench-") as tmpdir:
        tmp = Path(tmpdir)
        server = Server(f"sqlite:///{tmp / 'bench.db'}", args.workers)
        try:
            results["ingest"] = bench_ingest(server, corpus)
            print("ingest", json.dumps(results["ingest"]), flush=True)
            ids = [d["id"] for d in corpus]
            # warm each worker's signature cache (stored ids are signed once per process)
            run_wrk(server, dedup_lines(ids, 60, 1), 3, 4, tmp)
            distinct = dedup_lines(ids, 6000, 2)  # > the 4,096-set session cache: all misses
            repeated = dedup_lines(ids, 10, 3)
            results["dedup_100_ids"] = {}
            for conns in (int(c) for c in args.connections.split(",")):
                for name, lines in (("repeated_sets", repeated), ("distinct_sets", distinct)):
                    hist0 = server_histograms(server, args.workers)
                    figures = run_wrk(server, lines, args.duration, conns, tmp)
                    hist1 = server_histograms(server, args.workers)
                    for q in (0.5, 0.99):
                        figures[f"server_side_p{round(q * 100)}_bucket_ms"] = server_percentile(
                            hist0, hist1, "POST", "/v1/dedup", q
                        )
                    results["dedup_100_ids"][f"{name}_c{conns}"] = figures
                    print(f"dedup {name} c={conns}", json.dumps(figures), flush=True)

            lines = soak_lines(ids, extra, 20000, 4, "soak")
            samples: list[tuple[float, int]] = []
            stop = threading.Event()

            def sample() -> None:
                t0 = time.monotonic()
                while not stop.is_set():
                    samples.append((time.monotonic() - t0, server.rss_bytes()))
                    stop.wait(1.0)

            # warm-up (not measured): first origin query, caches, lazily committed pages
            run_wrk(server, soak_lines(ids, extra, 2000, 5, "warmup"), 5, 8, tmp)
            sampler = threading.Thread(target=sample)
            sampler.start()
            try:
                soak = run_wrk(server, lines, args.soak, 8, tmp)
            finally:
                stop.set()
                sampler.join()
            rss = [b for _, b in samples if b]
            fifth = max(1, len(rss) // 5)
            soak["memory"] = {
                "samples": len(rss),
                "rss_first_fifth_mb": round(sum(rss[:fifth]) / fifth / 2**20, 1),
                "rss_last_fifth_mb": round(sum(rss[-fifth:]) / fifth / 2**20, 1),
                "rss_max_mb": round(max(rss) / 2**20, 1),
                "rss_min_mb": round(min(rss) / 2**20, 1),
            }
            half = rss[len(rss) // 2 :]
            soak["memory"]["second_half_slope_mb_per_min"] = (
                round((half[-1] - half[0]) / 2**20 / max(1e-9, len(half) - 1) * 60, 2)
                if len(half) > 1
                else 0.0
            )
            soak["memory"]["growth_mb"] = round(
                soak["memory"]["rss_last_fifth_mb"] - soak["memory"]["rss_first_fifth_mb"], 1
            )
            soak["duration_parameter_s"] = args.soak
            soak["mix"] = (
                "60% dedup, 12% document, 12% similar, 5% events, 4% origin, 2% health, 5% ingest"
            )
            results["soak"] = soak
            print("soak", json.dumps(soak), flush=True)
            metrics = httpx.get(server.url + "/metrics", timeout=10).text
            results["server_500s_in_metrics"] = sum(
                int(float(line.rsplit(" ", 1)[1]))
                for line in metrics.splitlines()
                if line.startswith("neardup_http_requests_total") and 'status="5' in line
            )
        finally:
            server.stop()
    best = max(
        (v for k, v in results["dedup_100_ids"].items() if k.startswith("distinct")),
        key=lambda v: v["requests_per_s"],
    )
    results["goals"] = {
        "dedup_req_per_s_ge_1000": best["requests_per_s"] >= 1000,
        "dedup_p99_le_10ms_at_c4": results["dedup_100_ids"].get("distinct_sets_c4", best)["p99_ms"]
        <= 10,
        "ingest_ge_500_per_s": results["ingest"]["batch_of_100"]["articles_per_s"] >= 500,
        "soak_zero_errors": results["soak"]["errors"] == 0,
    }
    results["machine"]["load_average_at_end"] = loadavg()
    print(json.dumps(results["goals"]), f"saved {save('service', results)}")


if __name__ == "__main__":
    main()
