"""The service under hostile input and load: every client value is a 4xx naming it (the
same on SQLite and PostgreSQL), the store's own failures are 503, damaged stored data is a
500 naming the article, never a wrong answer; a write's token is checked before its body is
read, slow bodies time out, bodies held at once are bounded, and heavy requests run off the
event loop (``/healthz`` answers while one runs); HEAD is answered where GET is; the token
can come from a file."""

from __future__ import annotations

import asyncio
import json
import socket
import sqlite3
import threading
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

warnings.filterwarnings("ignore", message=".*httpx2.*")

import httpx  # noqa: E402
import uvicorn  # noqa: E402
from click.testing import CliRunner  # noqa: E402
from fastapi.testclient import TestClient  # noqa: E402

from neardup.errors import StoreError  # noqa: E402
from neardup.service.app import RequestGate, create_app  # noqa: E402
from neardup.service.backend import LibraryBackend  # noqa: E402
from neardup.service.settings import SETTINGS_ENV, ServiceSettings  # noqa: E402
from test_store import pg_url_or_skip  # noqa: E402

TEXT = "Shares rose sharply on Monday in Tokyo. Analysts expect more gains this week."
ARTICLE = {"id": "a1", "text": TEXT, "date": "1987-02-26T15:01:01Z"}


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def client(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TestClient]:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path_factory.mktemp('hard') / 'h.db'}"
    else:
        url = pg_url_or_skip()
    try:
        with TestClient(create_app(ServiceSettings(store=url)), raise_server_exceptions=False) as c:
            assert c.post("/v1/documents", json=ARTICLE).status_code == 200
            yield c
    finally:
        if request.param == "postgres":
            from neardup.store.postgres import drop_schema

            drop_schema(url)


def error_of(res: Any, status: int, *words: str) -> dict[str, Any]:
    assert res.status_code == status, res.text[:500]
    error = res.json()["error"]
    for word in words:
        assert word.lower() in error["message"].lower(), (word, error["message"])
    return error  # type: ignore[no-any-return]


HOSTILE = [
    # (method, path, raw body, status, words)
    ("POST", "/v1/documents", '{"id":"x","text":"t t","date":"0001-01-01T00:00:00+14:00"}', 422,
     ["outside the supported range"]),
    ("POST", "/v1/documents", '{"id":"x","text":"t t","date":"9999-12-31T23:59:59-14:00"}', 422,
     ["outside"]),
    ("GET", "/v1/events?since=0001-01-01T00:00:00%2B14:00", None, 422, ["outside"]),
    ("GET", "/v1/events?until=9999-12-31T23:59:59-14:00", None, 422, ["outside"]),
    ("POST", "/v1/documents", '{"id":' + "1" * 5000 + ',"text":"t"}', 400, ["json"]),
    ("POST", "/v1/dedup", '{"items":["a1"],"threshold":' + "9" * 5000 + "}", 400, ["json"]),
    ("POST", "/v1/documents", '{"id":18446744073709551616,"text":"t"}', 422, ["id"]),
    ("POST", "/v1/documents", "[" * 100_000 + "]" * 100_000, 400, ["depth"]),
    ("POST", "/v1/dedup", '{"items":' + "[" * 40 + "]" * 40 + "}", 400, ["deeper than 32"]),
    ("POST", "/v1/origin", '{"text":' + '{"a":' * 40 + "1" + "}" * 41, 400, ["deeper"]),
    ("POST", "/v1/documents", '{"id":"x","text":"\\ud800"}', 400, ["surrogate"]),
    ("POST", "/v1/documents", '{"id":"\\udc00","text":"t"}', 400, ["surrogate"]),
    ("POST", "/v1/dedup", '{"items":["\\ud800"]}', 400, ["surrogate"]),
    ("POST", "/v1/dedup", '{"items":[{"text":"a \\udfff"}]}', 400, ["surrogate"]),
    ("POST", "/v1/documents", '{"id":"a\\u0000b","text":"t t"}', 422, ["NUL"]),
    ("POST", "/v1/documents", '{"id":"b","text":"t \\u0000 t"}', 422, ["NUL"]),
    ("POST", "/v1/documents", '{"id":"b","text":"t t","title":"\\u0000"}', 422, ["title", "NUL"]),
    ("POST", "/v1/documents", '{"id":"b","text":"t t","source":"\\u0000"}', 422, ["source"]),
    ("POST", "/v1/dedup", '{"items":[{"text":"a \\u0000 b"}]}', 422, ["NUL"]),
    ("POST", "/v1/dedup", '{"items":["a\\u0000b"]}', 422, ["NUL"]),
    ("POST", "/v1/origin", '{"text":"a \\u0000 b"}', 422, ["NUL"]),
    ("POST", "/v1/origin", '{"id":"a\\u0000"}', 422, ["NUL"]),
    ("GET", "/v1/documents/a%00b", None, 422, ["NUL"]),
    ("GET", "/v1/documents/a%00b/similar", None, 422, ["NUL"]),
    ("GET", "/v1/events/a%00b", None, 422, ["NUL"]),
    ("POST", "/v1/documents", json.dumps({"id": "x" * 1_000_000, "text": "t t"}), 413, ["2048"]),
    ("POST", "/v1/dedup", json.dumps({"items": ["x" * 1_000_000]}), 413, ["2048"]),
    ("POST", "/v1/origin", json.dumps({"id": "x" * 3000}), 413, ["2048"]),
    ("POST", "/v1/dedup", '{"items":["a1"],"threshold":"0.5"}', 422, ["threshold", "number"]),
    ("POST", "/v1/dedup", '{"items":["a1"],"threshold":NaN}', 400, ["NaN", "not JSON numbers"]),
    ("POST", "/v1/dedup", '{"items":["a1"],"threshold":Infinity}', 400, ["Infinity"]),
    ("POST", "/v1/dedup", '{"items":["a1"],"threshold":true}', 422, ["threshold"]),
    ("POST", "/v1/documents", '{"id":"n1","text":"some text","url":"u"}', 422, ["unknown", "url"]),
    ("POST", "/v1/documents", '{"articles":[],"x":1}', 422, ["unknown"]),
    ("POST", "/v1/documents", '{"id":"n1","text":"some text","title":7}', 422, ["title", "string"]),
    ("POST", "/v1/documents", '{"id":"n1","text":"some text","date":7}', 422, ["date"]),
]  # fmt: skip


@pytest.mark.parametrize(("method", "path", "body", "status", "words"), HOSTILE)
def test_hostile_values_are_4xx_naming_the_problem(
    client: TestClient, method: str, path: str, body: str | None, status: int, words: list[str]
) -> None:
    content = None if body is None else body.encode("utf-8", "surrogatepass")
    error_of(client.request(method, path, content=content), status, *words)


def test_strict_schema_accepts_the_valid_forms(client: TestClient) -> None:
    assert client.post("/v1/dedup", json={"items": ["a1"], "threshold": 1}).status_code == 200
    assert client.post("/v1/dedup", json={"items": ["a1"], "threshold": 0.5}).status_code == 200
    ok = client.post(
        "/v1/documents",
        json={"id": 12345, "text": TEXT + " More.", "title": None, "date": None, "source": None},
    )
    assert ok.status_code == 200 and ok.json()["id"] == "12345"
    edge = {"id": "edge", "text": "Year's end copy.", "date": "9999-12-31T23:59:59.999999Z"}
    assert client.post("/v1/documents", json=edge).status_code == 200
    assert client.get("/v1/documents/edge").json()["date"] == "9999-12-31T23:59:59.999999Z"
    first = {"id": "first", "text": "First day copy.", "date": "0001-01-01T00:00:00Z"}
    assert client.post("/v1/documents", json=first).status_code == 200
    span = {"since": "0001-01-01T00:00:00Z", "until": "9999-12-31T23:59:59.999999Z"}
    assert client.get("/v1/events", params=span).status_code == 200


def test_dedup_total_characters_are_limited(tmp_path: Path) -> None:
    cfg = ServiceSettings(store=f"sqlite:///{tmp_path / 'c.db'}", max_dedup_chars=1000)
    with TestClient(create_app(cfg), raise_server_exceptions=False) as c:
        items = [{"text": "word " * 100} for _ in range(3)]  # 1,500 characters
        error_of(c.post("/v1/dedup", json={"items": items}), 413, "1500", "1000")
        assert c.post("/v1/dedup", json={"items": items[:2]}).status_code == 200


def test_head_is_answered_where_get_is(client: TestClient) -> None:
    for path in ("/healthz", "/metrics", "/", "/static/app.js", "/v1/documents", "/v1/events",
                 "/v1/documents/a1", "/v1/documents/a1/similar", "/openapi.json",
                 "/v1/documents/nope"):  # fmt: skip
        get, head = client.get(path), client.head(path)
        assert head.status_code == get.status_code, path
        assert head.content == b"" and head.headers["content-type"] == get.headers["content-type"]
    assert client.head("/v1/dedup").status_code == 405  # POST only


def test_store_failure_is_503_and_damaged_data_is_500_naming_the_article(
    tmp_path: Path,
) -> None:
    db = tmp_path / "s.db"
    cfg = ServiceSettings(store=f"sqlite:///{db}")
    backend = LibraryBackend(cfg)
    with TestClient(create_app(cfg, backend=backend), raise_server_exceptions=False) as c:
        assert c.post("/v1/documents", json=[ARTICLE, {**ARTICLE, "id": "a2", "text": "Oil fell."}])
        conn = sqlite3.connect(db)
        conn.execute("UPDATE articles SET text = 'Shares fell.' WHERE id = 'a1'")
        conn.commit()
        conn.close()
        error_of(c.get("/v1/documents/a1"), 500, "a1", "integrity")
        error_of(c.post("/v1/documents", json=ARTICLE), 500, "a1")  # never "replayed"
        assert c.get("/v1/documents/a2").status_code == 200  # the others are served
        backend.store.close()  # the store goes away
        error_of(c.get("/v1/documents/a2"), 503)
    with pytest.raises(StoreError):  # its final checkpoint cannot ask the closed store
        backend.close()


# --- the request gate, alone ------------------------------------------------------------


def _gate_call(
    gate_args: dict[str, Any], scope_extra: dict[str, Any], messages: list[Any]
) -> tuple[list[dict[str, Any]], list[str]]:
    """Run a RequestGate over a fake app; ``messages``: what receive() gives (a float: sleep
    that long first).  Returns what was sent and what happened."""
    sent: list[dict[str, Any]] = []
    events: list[str] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        message = await receive()
        events.append(f"app got {len(message['body'])} bytes")
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    queue = list(messages)

    async def receive() -> dict[str, Any]:
        events.append("receive")
        item = queue.pop(0)
        if isinstance(item, float):
            await asyncio.sleep(item)
            item = queue.pop(0)
        return item  # type: ignore[no-any-return]

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/v1/dedup", "headers": [], **scope_extra}
    gate = RequestGate(app, **{"max_bytes": 1000, "timeout": 5.0, "budget": 10_000,
                               "token": None, **gate_args})  # fmt: skip
    asyncio.run(gate(scope, receive, send))
    assert gate.pending == 0  # every byte held is given back
    return sent, events


def _body(data: bytes, more: bool = False) -> dict[str, Any]:
    return {"type": "http.request", "body": data, "more_body": more}


def test_gate_checks_the_token_before_reading_the_body() -> None:
    scope = {"path": "/v1/documents", "headers": [(b"content-length", b"999")]}
    sent, events = _gate_call({"token": "s3cret-token"}, scope, [_body(b"x" * 999)])
    assert sent[0]["status"] == 401 and "receive" not in events
    headers = dict(sent[0]["headers"])
    assert headers[b"www-authenticate"] == b"Bearer" and headers[b"connection"] == b"close"
    good = [(b"authorization", b"Bearer s3cret-token"), (b"content-length", b"3")]
    sent, events = _gate_call(
        {"token": "s3cret-token"}, {**scope, "headers": good}, [_body(b"abc")]
    )
    assert sent[0]["status"] == 200 and "app got 3 bytes" in events


def test_gate_refuses_declared_oversize_without_reading() -> None:
    sent, events = _gate_call({}, {"headers": [(b"content-length", b"5000")]}, [])
    assert sent[0]["status"] == 413 and events == []


def test_gate_times_out_a_slow_body() -> None:
    start = time.perf_counter()
    sent, events = _gate_call({"timeout": 0.2}, {}, [_body(b"ab", more=True), 5.0, _body(b"c")])
    assert sent[0]["status"] == 408 and not any(e.startswith("app") for e in events)
    assert time.perf_counter() - start < 3.0
    assert json.loads(sent[1]["body"])["error"]["type"] == "request_timeout"


def test_gate_bounds_the_bytes_held_by_bodies_at_once() -> None:
    sent: list[dict[str, Any]] = []
    release = asyncio.Event()

    async def slow_app(scope: Any, receive: Any, send: Any) -> None:
        await receive()
        await release.wait()  # holds its body until released
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    async def main() -> RequestGate:
        gate = RequestGate(slow_app, max_bytes=600, timeout=5.0, budget=1000, token=None)
        scope = {"type": "http", "method": "POST", "path": "/v1/dedup", "headers": []}

        def source(n: int) -> Any:
            async def receive() -> dict[str, Any]:
                return _body(b"x" * n)

            return receive

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        first = asyncio.create_task(gate(scope, source(600), send))
        await asyncio.sleep(0.05)
        assert gate.pending == 600
        await gate(scope, source(500), send)  # 600 + 500 > 1000: refused at once
        release.set()
        await first
        await gate(scope, source(500), send)  # fits again
        return gate

    gate = asyncio.run(main())
    statuses = [m["status"] for m in sent if m["type"] == "http.response.start"]
    assert statuses == [503, 200, 200] and gate.pending == 0
    busy = next(m for m in sent if m.get("status") == 503)
    assert dict(busy["headers"])[b"retry-after"] == b"1"


# --- a real server --------------------------------------------------------------------------


class Server:
    """The app on uvicorn in a thread, on a free loopback port."""

    def __init__(self, settings: ServiceSettings) -> None:
        config = uvicorn.Config(create_app(settings), host="127.0.0.1", port=0, log_level="error")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> Server:
        self.thread.start()
        deadline = time.time() + 60
        while not self.server.started:
            if time.time() > deadline or not self.thread.is_alive():
                raise AssertionError("the server did not start")
            time.sleep(0.05)
        self.port = self.server.servers[0].sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)

    def raw(self, head: bytes, wait: float = 10.0) -> tuple[bytes, float]:
        """Send ``head`` on a raw connection (no more), return the answer and its delay."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=wait) as sock:
            start = time.perf_counter()
            sock.sendall(head)
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                data += chunk
            return data, time.perf_counter() - start


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    store = f"sqlite:///{tmp_path_factory.mktemp('real') / 'r.db'}"
    settings = ServiceSettings(store=store, token="s3cret-token", body_timeout_seconds=1.0)
    with Server(settings) as s:
        yield s


def test_a_write_without_token_is_refused_before_its_body_is_sent(server: Server) -> None:
    head = (
        b"POST /v1/documents HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: 16000000\r\n\r\n"
    )
    answer, _ = server.raw(head)
    assert answer.startswith(b"HTTP/1.1 401")


def test_a_body_that_never_finishes_times_out(server: Server) -> None:
    head = (
        b"POST /v1/dedup HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b'Content-Length: 1000\r\n\r\n{"items": ['
    )
    answer, seconds = server.raw(head)
    assert answer.startswith(b"HTTP/1.1 408") and seconds < 8


def test_healthz_answers_while_a_heavy_request_is_signed(server: Server) -> None:
    # distinct sentences, so that signing cannot shortcut repeats: the request takes a while
    texts = [
        {
            "id": f"t{i}",
            "text": " ".join(f"Sentence {i} part {j} of a long story." for j in range(95)),
        }
        for i in range(1000)
    ]
    done: dict[str, Any] = {}

    def heavy() -> None:
        done["res"] = httpx.post(server.url + "/v1/dedup", json={"items": texts}, timeout=120)

    thread = threading.Thread(target=heavy)
    thread.start()
    answered_during = 0
    while thread.is_alive():
        res = httpx.get(server.url + "/healthz", timeout=30)
        assert res.status_code == 200
        answered_during += int(thread.is_alive())
        time.sleep(0.02)
    thread.join()
    assert done["res"].status_code == 200 and len(done["res"].json()["positions"]) == 1000
    assert answered_during >= 1  # the loop answered while the heavy request was computed
    assert httpx.head(server.url + "/healthz").status_code == 200


# --- the token from a file ------------------------------------------------------------------


def test_serve_reads_the_token_from_a_file_or_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from neardup.cli.serve import serve

    runs: list[str] = []
    monkeypatch.setattr(uvicorn, "run", lambda *a, **k: runs.append(k.get("host", "")))
    store = f"sqlite:///{tmp_path / 't.db'}"
    token_file = tmp_path / "token"
    token_file.write_text("from-a-file-123\n")
    runner = CliRunner()
    res = runner.invoke(serve, ["--store", store, "--token-file", str(token_file)])
    assert res.exit_code == 0, res.output
    assert ServiceSettings.from_environ().token == "from-a-file-123" and runs
    res = runner.invoke(serve, ["--store", store], env={"NEARDUP_TOKEN": "from-the-env-1"})
    assert res.exit_code == 0 and ServiceSettings.from_environ().token == "from-the-env-1"
    res = runner.invoke(
        serve, ["--store", store, "--token", "x" * 9, "--token-file", str(token_file)]
    )
    assert res.exit_code == 2 and "once" in res.output
    empty = tmp_path / "empty"
    empty.write_text("")
    res = runner.invoke(serve, ["--store", store, "--token-file", str(empty)])
    assert res.exit_code == 2 and "no token" in res.output
    monkeypatch.delenv(SETTINGS_ENV, raising=False)
