"""``/healthz`` latency while clients send maximal ``POST /v1/dedup`` requests.

Goal: ``/healthz`` p99 <= 50 ms while four clients loop over the largest result set the
service accepts (1,000 texts, ``max_dedup_chars`` = 4,000,000 characters together, ~1 s
of signing each).  Heavy requests run on the backend's worker thread, so the event loop
stays free to answer; before that change they ran on the event loop and ``/healthz``
waited for them.

What runs: ``neardup serve`` (1 worker, a fresh SQLite store) on a free loopback port; a
separate process with ``--clients`` threads, each posting the same maximal body in a loop
for ``--duration`` seconds; this process probes ``GET /healthz`` every 20 ms on a fresh
connection and records each latency (client-side wall time).  First an idle phase (no load)
for reference.  With ``--baseline-src DIR`` the same phases also run with the server
imported from another source tree (e.g. ``/work/main/src``), alternating with this one for
``--rounds`` rounds, so the two are compared on the same machine in the same minutes.

Usage::

    python benchmarks/bench_health_under_load.py [--clients 4] [--duration 20] [--rounds 1]
                                                 [--baseline-src ../main/src]

Results: printed, and saved with the machine to benchmarks/results/health_under_load.json.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
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
import numpy as np
import psutil

from _common import loadavg, save

ROOT = Path(__file__).resolve().parents[1]
TOTAL_CHARS = 4_000_000  # the service's default max_dedup_chars
ITEMS = 1000  # its default max_result_set


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def maximal_body(seed: int = 0) -> bytes:
    """1,000 distinct texts of 4,000 characters: the largest result set accepted."""
    rng = random.Random(seed)
    vocab = [
        "".join(rng.choice("aeioukrstnlmdp") for _ in range(rng.randint(2, 9))) for _ in range(5000)
    ]
    per = TOTAL_CHARS // ITEMS
    items = []
    for i in range(ITEMS):
        words: list[str] = []
        size = 0
        while size < per - 12:
            word = rng.choice(vocab) + ("." if rng.random() < 0.07 else "")
            words.append(word.capitalize() if words and words[-1].endswith(".") else word)
            size += len(word) + 1
        text = " ".join(words)[: per - 1] + "."
        items.append({"id": f"t{i}", "text": text})
    return json.dumps({"items": items}).encode()


class Server:
    """``neardup serve`` in its own process group, from this tree or ``src``."""

    def __init__(self, src: str | None) -> None:
        self.folder = tempfile.mkdtemp(prefix="bench-health-")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = dict(os.environ)
        if src:
            env["PYTHONPATH"] = str(Path(src).resolve())
        store = f"sqlite:///{self.folder}/store.db"
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "from neardup.cli import main; main()",
                "serve",
                "--store",
                store,
                "--port",
                str(self.port),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            env=env,
            cwd=self.folder,
        )
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            try:
                if httpx.get(self.url + "/healthz", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.2)
        self.stop()
        sys.exit("bench_health_under_load: the server did not start")

    def cpu_seconds(self) -> float:
        try:
            p = psutil.Process(self.proc.pid)
            t = p.cpu_times()
            return t.user + t.system
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


def load_clients(url: str, clients: int, seconds: float, out: Any) -> None:
    """Process body: ``clients`` threads post the maximal body until ``seconds`` pass."""
    body = maximal_body()
    results: list[tuple[int, float]] = []
    lock = threading.Lock()
    stop_at = time.monotonic() + seconds

    def loop() -> None:
        with httpx.Client(timeout=300) as client:
            while time.monotonic() < stop_at:
                start = time.perf_counter()
                try:
                    status = client.post(
                        url + "/v1/dedup",
                        content=body,
                        headers={"content-type": "application/json"},
                    ).status_code
                except httpx.HTTPError:
                    status = -1
                with lock:
                    results.append((status, time.perf_counter() - start))

    threads = [threading.Thread(target=loop) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    out.put(results)


def healthz_once(port: int, timeout: float = 60.0) -> float:
    """Seconds for one ``GET /healthz`` on a new connection, as a load balancer's probe
    sends it (a raw socket: no client library's own start-up in the figure); ``inf`` if
    it fails."""
    start = time.perf_counter()
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: probe\r\nConnection: close\r\n\r\n")
            data = b""
            while True:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                data += chunk
    except OSError:
        return float("inf")
    return time.perf_counter() - start if data.startswith(b"HTTP/1.1 200") else float("inf")


def probe(port: int, seconds: float, every: float = 0.02) -> list[float]:
    """``/healthz`` latencies (seconds), one request every ``every`` s."""
    latencies = []
    stop_at = time.monotonic() + seconds
    while time.monotonic() < stop_at:
        latencies.append(healthz_once(port))
        time.sleep(every)
    return latencies


def summary(values: list[float]) -> dict[str, Any]:
    a = np.asarray(values, dtype=float)
    finite = a[np.isfinite(a)]
    if not finite.size:
        return {"count": int(a.size), "failed": int(a.size)}
    return {
        "count": int(a.size),
        "failed": int(a.size - finite.size),
        "p50_ms": round(float(np.percentile(finite, 50)) * 1e3, 2),
        "p90_ms": round(float(np.percentile(finite, 90)) * 1e3, 2),
        "p99_ms": round(float(np.percentile(finite, 99)) * 1e3, 2),
        "max_ms": round(float(finite.max()) * 1e3, 2),
    }


def measure(src: str | None, clients: int, duration: float) -> dict[str, Any]:
    server = Server(src)
    try:
        idle = probe(server.port, 3.0)
        queue: Any = multiprocessing.Queue()
        cpu0 = server.cpu_seconds()
        load = multiprocessing.Process(
            target=load_clients, args=(server.url, clients, duration, queue)
        )
        load.start()
        time.sleep(1.0)  # the first bodies are on their way
        busy = probe(server.port, duration - 1.0)
        dedups = queue.get()
        load.join()
        cpu = server.cpu_seconds() - cpu0
    finally:
        server.stop()
    statuses: dict[str, int] = {}
    for status, _ in dedups:
        statuses[str(status)] = statuses.get(str(status), 0) + 1
    return {
        "server": src or "this tree",
        "healthz_idle": summary(idle),
        "healthz_under_load": summary(busy),
        "dedup_requests": {"statuses": statuses, **summary([s for _, s in dedups])},
        "server_cpu_seconds": round(cpu, 1),
        "loadavg_after": loadavg(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--duration", type=float, default=20.0)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--baseline-src", default=None, help="a src/ folder to compare with")
    args = parser.parse_args()
    runs = []
    for _ in range(args.rounds):
        for src in [None, args.baseline_src] if args.baseline_src else [None]:
            result = measure(src, args.clients, args.duration)
            print(json.dumps(result, indent=1))
            runs.append(result)
    payload = {
        "command": "python benchmarks/bench_health_under_load.py " + " ".join(sys.argv[1:]),
        "clients": args.clients,
        "duration_s": args.duration,
        "body": {"items": ITEMS, "characters": TOTAL_CHARS, "bytes": len(maximal_body())},
        "goal": "healthz p99 <= 50 ms under load",
        "runs": runs,
    }
    print("saved", save("health_under_load", payload))


if __name__ == "__main__":
    main()
