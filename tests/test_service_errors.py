"""Every bad request is a 4xx JSON error naming the problem, never a 500; tokens; limits;
the Prometheus text of /metrics."""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

warnings.filterwarnings("ignore", message=".*httpx2.*")

from fastapi.testclient import TestClient  # noqa: E402

from neardup.errors import ConfigError  # noqa: E402
from neardup.service.app import create_app  # noqa: E402
from neardup.service.settings import ServiceSettings  # noqa: E402

FIXTURE_CHECK = HealthCheck.function_scoped_fixture

ARTICLE = {
    "id": "a1",
    "text": "Shares rose sharply on Monday in Tokyo. Analysts expect more gains this week.",
    "date": "1987-02-26T15:01:01Z",
}


def make_client(tmp_path: Path, **settings: Any) -> TestClient:
    cfg = ServiceSettings(store=f"sqlite:///{tmp_path / 'errors.db'}", **settings)
    return TestClient(create_app(cfg), raise_server_exceptions=False)


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    with make_client(tmp_path_factory.mktemp("svc")) as c:
        assert c.post("/v1/documents", json=ARTICLE).status_code == 200
        yield c


def check_error(response: Any, status: int, *words: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    error = response.json()["error"]
    assert error["status"] == status and error["message"]
    for word in words:
        assert word.lower() in error["message"].lower(), (word, error["message"])
    return error  # type: ignore[no-any-return]


BAD_REQUESTS = [
    # (method, path, kwargs, status, words the message must contain)
    ("post", "/v1/documents", {"content": b"{not json"}, 400, ["json"]),
    ("post", "/v1/documents", {"content": b"\xff\xfe\x00"}, 400, ["json"]),
    ("post", "/v1/documents", {"content": b""}, 422, ["empty"]),
    ("post", "/v1/documents", {"json": 42}, 422, ["article"]),
    ("post", "/v1/documents", {"json": {"text": "x y z"}}, 422, ["id"]),
    ("post", "/v1/documents", {"json": {"id": "b"}}, 422, ["text"]),
    ("post", "/v1/documents", {"json": {"id": "b", "text": 7}}, 422, ["text", "string"]),
    ("post", "/v1/documents", {"json": {"id": ["b"], "text": "x"}}, 422, ["id"]),
    ("post", "/v1/documents", {"json": {"id": "b", "text": "   \n"}}, 422, ["empty"]),
    ("post", "/v1/documents", {"json": {"id": "b", "text": "x", "date": "soon"}}, 422, ["date"]),
    ("post", "/v1/documents", {"json": []}, 422, ["empty"]),
    ("post", "/v1/documents", {"json": {"articles": "x"}}, 422, ["list"]),
    ("post", "/v1/documents", {"json": [ARTICLE, {"id": 3}]}, 422, ["articles[1]", "text"]),
    ("post", "/v1/documents", {"json": [ARTICLE, ARTICLE]}, 422, ["twice"]),
    ("post", "/v1/documents", {"json": {**ARTICLE, "text": "other"}}, 409, ["different"]),
    ("get", "/v1/documents/nope", {}, 404, ["nope"]),
    ("get", "/v1/documents/nope/similar", {}, 404, ["nope"]),
    ("get", "/v1/documents/a1/similar?limit=0", {}, 422, ["limit"]),
    ("get", "/v1/documents/a1/similar?limit=x", {}, 422, ["limit"]),
    ("get", "/v1/documents/a1/similar?limit=100000", {}, 413, ["limit"]),
    ("get", "/v1/documents?limit=-1", {}, 422, ["limit"]),
    ("post", "/v1/dedup", {"content": b"[1,"}, 400, ["json"]),
    ("post", "/v1/dedup", {"json": {}}, 422, ["items"]),
    ("post", "/v1/dedup", {"json": {"items": "a1"}}, 422, ["items"]),
    ("post", "/v1/dedup", {"json": {"items": [1]}}, 422, ["items.0"]),
    ("post", "/v1/dedup", {"json": {"items": [{}]}}, 422, ["id", "text"]),
    ("post", "/v1/dedup", {"json": {"items": ["a1", "missing"]}}, 404, ["missing"]),
    ("post", "/v1/dedup", {"json": {"items": ["a1"], "threshold": 0}}, 422, ["threshold"]),
    ("post", "/v1/dedup", {"json": {"items": ["a1"], "threshold": "x"}}, 422, ["threshold"]),
    ("post", "/v1/dedup", {"json": {"items": ["a1", "a1"]}}, 422, ["twice"]),
    ("post", "/v1/dedup", {"json": {"items": [{"text": ""}]}}, 422, ["empty"]),
    ("post", "/v1/dedup", {"json": {"items": ["a1"], "extra": 1}}, 422, ["extra"]),
    ("post", "/v1/origin", {"json": {}}, 422, ["id", "text"]),
    ("post", "/v1/origin", {"json": {"id": "a1", "text": "x"}}, 422, ["exactly one"]),
    ("post", "/v1/origin", {"json": {"text": " "}}, 422, ["empty"]),
    ("post", "/v1/origin", {"json": {"id": "nope"}}, 404, ["nope"]),
    ("post", "/v1/align", {"json": {"id": "nope"}}, 422, ["source"]),
    ("post", "/v1/align", {"json": {"id": "nope", "source": "gone"}}, 404, ["nope"]),
    ("post", "/v1/origin", {"content": b"nul"}, 400, ["json"]),
    ("get", "/v1/events?since=yesterday", {}, 422, ["yesterday"]),
    ("get", "/v1/events?since=1988-01-01&until=1987-01-01", {}, 422, ["since"]),
    ("get", "/v1/events/nope", {}, 404, ["nope"]),
    ("get", "/v2/nothing", {}, 404, ["/v2/nothing"]),
    ("put", "/v1/documents", {"json": ARTICLE}, 405, []),
]


@pytest.mark.parametrize(("method", "path", "kwargs", "status", "words"), BAD_REQUESTS)
def test_bad_request_is_a_json_4xx_naming_the_problem(
    client: TestClient, method: str, path: str, kwargs: dict, status: int, words: list[str]
) -> None:
    check_error(getattr(client, method)(path, **kwargs), status, *words)


def test_validation_errors_list_every_problem(client: TestClient) -> None:
    res = client.post("/v1/dedup", json={"items": [1, {}], "threshold": 7})
    error = check_error(res, 422)
    assert {p["field"] for p in error["problems"]} >= {"items.0", "items.1", "threshold"}


def test_batch_with_a_conflicting_article_reports_it_in_place(client: TestClient) -> None:
    fresh = {"id": "fresh-1", "text": "Oil prices fell in London on Tuesday. Traders sold."}
    res = client.post("/v1/documents", json=[fresh, {**ARTICLE, "text": "changed text"}])
    assert res.status_code == 200
    first, second = res.json()["decisions"]
    assert first["status"] == "new"
    assert second["id"] == "a1" and second["error"]["status"] == 409
    assert client.get("/v1/documents/fresh-1").status_code == 200


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    body=st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
        lambda inner: (
            st.lists(inner, max_size=4)
            | st.dictionaries(
                st.sampled_from(["id", "text", "items", "threshold", "articles", "date", "x"]),
                inner,
                max_size=4,
            )
        ),
        max_leaves=12,
    ),
    path=st.sampled_from(["/v1/documents", "/v1/dedup", "/v1/origin"]),
)
def test_random_json_bodies_never_give_a_500(client: TestClient, body: Any, path: str) -> None:
    res = client.post(path, content=json.dumps(body).encode())
    assert res.status_code < 500 or res.status_code == 501, res.text
    assert res.headers["content-type"].startswith("application/json")
    if res.status_code >= 400:
        assert res.json()["error"]["message"]


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(raw=st.binary(max_size=64))
def test_random_bytes_never_give_a_500(client: TestClient, raw: bytes) -> None:
    for path in ("/v1/documents", "/v1/dedup", "/v1/origin"):
        res = client.post(path, content=raw)
        assert res.status_code < 500, res.text


def test_token_guards_writes_only(tmp_path: Path) -> None:
    token = "s3cret-token-123"
    with make_client(tmp_path, token=token) as c:
        check_error(c.post("/v1/documents", json=ARTICLE), 401, "token")
        res = c.post("/v1/documents", json=ARTICLE, headers={"Authorization": "Bearer wrong-token"})
        assert check_error(res, 401, "wrong") and res.headers["www-authenticate"] == "Bearer"
        ok = c.post("/v1/documents", json=ARTICLE, headers={"Authorization": f"Bearer {token}"})
        assert ok.status_code == 200
        ok = c.post("/v1/documents", json=ARTICLE, headers={"X-API-Token": token})
        assert ok.status_code == 200 and ok.json()["replayed"]
        # reads stay open
        assert c.get("/v1/documents/a1").status_code == 200
        assert c.post("/v1/dedup", json={"items": ["a1"]}).status_code == 200
    with pytest.raises(ConfigError):
        ServiceSettings(token="short")


def test_body_text_batch_and_result_set_limits(tmp_path: Path) -> None:
    with make_client(
        tmp_path, max_body_bytes=4096, max_text_chars=500, max_batch=3, max_result_set=5
    ) as c:
        check_error(c.post("/v1/documents", content=b"x" * 5000), 413, "4096")
        # a chunked body without Content-Length is cut at the limit too
        chunks = iter([b'{"id": "z", "text": "', b"y" * 3000, b"y" * 3000, b'"}'])
        check_error(c.post("/v1/documents", content=chunks), 413, "limit")
        check_error(c.post("/v1/documents", json={"id": "z", "text": "w " * 300}), 413, "500")
        many = [{"id": str(i), "text": "Some text here. More."} for i in range(4)]
        check_error(c.post("/v1/documents", json=many), 413, "3")
        check_error(c.post("/v1/dedup", json={"items": [{"text": "a b"}] * 6}), 413, "5")
        check_error(c.post("/v1/origin", json={"text": "w " * 300}), 413, "500")
        assert c.post("/v1/documents", json=many[:3]).status_code == 200


METRIC_LINE = re.compile(
    r'^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?P<labels>[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*"'
    r'(,[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*")*)\})? (?P<value>[-+]?(\d+(\.\d*)?|\.\d+)'
    r"([eE][-+]?\d+)?|[-+]?Inf|NaN)$"
)


def test_metrics_are_prometheus_text(client: TestClient) -> None:
    client.get("/healthz")
    client.post("/v1/dedup", json={"items": ["a1"]})
    client.get("/v1/documents/nope")
    res = client.get("/metrics")
    assert res.status_code == 200 and res.headers["content-type"].startswith("text/plain")
    samples: dict[str, float] = {}
    typed = set()
    for line in res.text.splitlines():
        if line.startswith("# TYPE "):
            typed.add(line.split()[2])
            continue
        if line.startswith("# HELP ") or not line:
            continue
        match = METRIC_LINE.match(line)
        assert match, f"not Prometheus text: {line!r}"
        samples[line.rsplit(" ", 1)[0]] = float(match["value"])
    pid = next(k for k in samples if "pid=" in k).split('pid="')[1].split('"')[0]
    key = 'neardup_http_requests_total{method="POST",route="/v1/dedup",status="200",pid="%s"}'
    assert samples[key % pid] >= 1
    key404 = 'neardup_http_requests_total{method="GET",route="/v1/documents/{doc_id}",status="404"'
    assert any(k.startswith(key404) for k in samples)
    assert samples[f'neardup_documents{{pid="{pid}"}}'] >= 1
    assert samples[f'neardup_process_resident_memory_bytes{{pid="{pid}"}}'] > 0
    assert {"neardup_http_requests_total", "neardup_http_request_duration_seconds"} <= typed
    # the histogram is cumulative and ends with +Inf == _count
    prefix = 'neardup_http_request_duration_seconds_bucket{method="POST",route="/v1/dedup"'
    buckets = [v for k, v in samples.items() if k.startswith(prefix)]
    assert buckets == sorted(buckets) and buckets[-1] >= 1
