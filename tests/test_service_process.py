"""``neardup serve`` as a real process: kill -9 loses no acknowledged article, and several
workers over PostgreSQL decide as one process does."""

from __future__ import annotations

import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from neardup.api import NewsIndex
from neardup.service.backend import plain

PG_BASE = os.environ.get("NEARDUP_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def neardup_command() -> list[str]:
    script = Path(sys.executable).with_name("neardup")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "from neardup.cli import main; main()"]


class Server:
    """A ``neardup serve`` subprocess on a free loopback port."""

    def __init__(self, store: str, *extra: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen(
            [*neardup_command(), "serve", "--store", store, "--port", str(self.port), *extra],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                err = self.proc.stderr.read().decode() if self.proc.stderr else ""
                raise AssertionError(f"neardup serve exited {self.proc.returncode}: {err}")
            try:
                if httpx.get(self.url + "/healthz", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.1)
        self.kill()
        raise AssertionError("neardup serve did not become healthy in 60 s")

    def kill(self) -> None:
        """kill -9 the server and its workers (its own process group only)."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()


def articles(docs: list[dict[str, Any]], n: int) -> list[dict[str, Any]]:
    return [
        {k: d[k] for k in ("id", "text", "title", "date") if d.get(k) is not None}
        for d in docs
        if d["text"].strip()
    ][:n]


def stored_in_order(client: httpx.Client) -> list[str]:
    docs = client.get("/v1/documents", params={"limit": 1000}).json()["documents"]
    return [d["id"] for d in reversed(docs)]


@pytest.mark.slow
def test_kill_9_during_a_burst_loses_no_acknowledged_article(
    tmp_path: Path, reuters_docs: list[dict[str, Any]]
) -> None:
    docs = articles(reuters_docs, 600)
    by_id = {d["id"]: d for d in docs}
    store = f"sqlite:///{tmp_path / 'burst.db'}"
    server = Server(store)
    acked: dict[str, dict[str, Any]] = {}
    stop = threading.Event()

    def writer(chunk: list[dict[str, Any]]) -> None:
        with httpx.Client(base_url=server.url, timeout=10) as client:
            for doc in chunk:
                if stop.is_set():
                    return
                try:
                    res = client.post("/v1/documents", json=doc)
                except httpx.HTTPError:
                    return  # the server died under us: this one was never acknowledged
                if res.status_code == 200:
                    acked[doc["id"]] = res.json()

    threads = [threading.Thread(target=writer, args=(docs[i::3],)) for i in range(3)]
    try:
        for t in threads:
            t.start()
        # kill at a random moment in the middle of the burst
        target = random.Random(7).randint(150, 350)
        deadline = time.monotonic() + 120
        while len(acked) < target and time.monotonic() < deadline:
            time.sleep(0.005)
        server.kill()
        stop.set()
        for t in threads:
            t.join(timeout=30)
    finally:
        server.kill()
    assert len(acked) >= 100, f"only {len(acked)} writes were acknowledged before the kill"

    restarted = Server(store)
    try:
        with httpx.Client(base_url=restarted.url, timeout=30) as client:
            for doc_id, decision in acked.items():
                res = client.get(f"/v1/documents/{doc_id}")
                assert res.status_code == 200, f"acknowledged {doc_id} lost: {res.text}"
                assert res.json()["decision"] == {**decision, "replayed": False}
            # the same answers: re-ingest replays the acknowledged decision ...
            for doc_id in list(acked)[:50]:
                again = client.post("/v1/documents", json=by_id[doc_id]).json()
                assert {**again, "replayed": False} == {**acked[doc_id], "replayed": False}
            # ... and the rebuilt indexes agree with a fresh one fed the stored articles
            order = stored_in_order(client)
            assert set(acked) <= set(order)
            with NewsIndex(store=str(tmp_path / "oracle.db")) as oracle:
                oracle.ingest_many([by_id[i] for i in order])
                for doc_id in order[:: max(1, len(order) // 60)]:
                    served = [
                        {k: v for k, v in item.items() if k not in ("title", "date", "source")}
                        for item in client.get(f"/v1/documents/{doc_id}/similar").json()["similar"]
                    ]
                    assert served == [plain(m) for m in oracle.similar(doc_id, 10)]
                ids = order[:100]
                served_dedup = client.post("/v1/dedup", json={"items": ids}).json()
                assert served_dedup["keep"]
    finally:
        restarted.stop()


@pytest.fixture()
def postgres_url() -> Iterator[str]:
    try:
        import psycopg

        with psycopg.connect(PG_BASE, connect_timeout=3):
            pass
    except Exception as exc:
        if os.environ.get("NEARDUP_REQUIRE_SERVICES"):
            raise
        pytest.skip(f"PostgreSQL unreachable at {PG_BASE}: {exc}")
    from neardup.store.postgres import drop_schema

    url = f"{PG_BASE}?schema=svc_{uuid.uuid4().hex[:12]}"
    try:
        yield url
    finally:
        drop_schema(url)


@pytest.mark.slow
@pytest.mark.postgres
def test_several_workers_over_postgres_decide_as_one(
    postgres_url: str, tmp_path: Path, reuters_docs: list[dict[str, Any]]
) -> None:
    docs = articles(reuters_docs, 300)
    # add planted copies, so duplicates and similar decisions are exercised
    docs += [{**d, "id": f"{d['id']}-copy", "text": d["text"] + " (corrected)"} for d in docs[::10]]
    random.Random(3).shuffle(docs)
    by_id = {d["id"]: d for d in docs}
    server = Server(postgres_url, "--workers", "3")
    acked: dict[str, dict[str, Any]] = {}
    pids: set[int] = set()
    try:

        def writer(chunk: list[dict[str, Any]]) -> None:
            for doc in chunk:
                # a new connection per request, so the kernel spreads them over the workers
                with httpx.Client(base_url=server.url, timeout=60) as client:
                    res = client.post("/v1/documents", json=doc)
                    assert res.status_code == 200, res.text
                    acked[doc["id"]] = res.json()
                    metrics = client.get("/metrics").text
                    pids.add(int(metrics.split('pid="')[1].split('"')[0]))

        threads = [threading.Thread(target=writer, args=(docs[i::4],)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=300)
        assert len(acked) == len(docs)
        assert len(pids) >= 2, "requests never reached a second worker"
        with httpx.Client(base_url=server.url, timeout=60) as client:
            order = stored_in_order(client)
            assert sorted(order) == sorted(by_id)
            # one process, fed the same articles in the order the store serialised them,
            # makes exactly the decisions the workers acknowledged
            with NewsIndex(store=str(tmp_path / "one.db")) as one:
                expected = one.ingest_many([by_id[i] for i in order])
                for doc_id, decision in zip(order, expected, strict=True):
                    assert acked[doc_id] == plain(decision), doc_id
                statuses = {plain(d)["status"] for d in expected}
                assert "duplicate" in statuses
                for doc_id in order[::15]:
                    served = [
                        {k: v for k, v in item.items() if k not in ("title", "date", "source")}
                        for item in client.get(f"/v1/documents/{doc_id}/similar").json()["similar"]
                    ]
                    assert served == [plain(m) for m in one.similar(doc_id, 10)]
    finally:
        server.stop()


@pytest.mark.parametrize(
    ("args", "code", "words"),
    [
        (["--store", "ftp://example/x"], 2, "unknown store scheme"),
        (["--workers", "0"], 2, "workers"),
        (["--token", "short"], 2, "token"),
        (["--preload", "5", "--preload-path", "/nonexistent/docs.jsonl.gz"], 66, "not found"),
        (["--store", "postgresql://nobody@127.0.0.1:1/x"], 74, "postgresql"),
    ],
)
def test_serve_refuses_bad_options_with_a_clear_message(
    tmp_path: Path, args: list[str], code: int, words: str
) -> None:
    env = {**os.environ, "NEARDUP_DATA": str(tmp_path / "absent")}
    if "--store" not in args:
        args = [*args, "--store", f"sqlite:///{tmp_path / 'x.db'}"]
    done = subprocess.run(
        [*neardup_command(), "serve", "--port", str(free_port()), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=tmp_path,
        check=False,
    )
    assert done.returncode == code, done.stderr
    assert words.lower() in done.stderr.lower() and "Traceback" not in done.stderr
