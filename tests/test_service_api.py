"""The HTTP API v1 against the library it serves: every endpoint, on real Reuters articles.

The oracle for each endpoint is the Python API on a second store fed the same articles
(``neardup.api.NewsIndex``) or the library function itself (``dedup_result_set``,
``neardup.sign``): the service must add transport, never change an answer.
"""

from __future__ import annotations

import datetime as dt
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

warnings.filterwarnings("ignore", message=".*httpx2.*")

from fastapi.testclient import TestClient  # noqa: E402

from neardup.api import NewsIndex  # noqa: E402
from neardup.detect.resultset import dedup_result_set  # noqa: E402
from neardup.service.app import create_app  # noqa: E402
from neardup.service.backend import plain  # noqa: E402
from neardup.service.settings import ServiceSettings  # noqa: E402
from neardup.sketch import sign  # noqa: E402


def make_client(tmp_path: Path, **settings: Any) -> TestClient:
    cfg = ServiceSettings(store=f"sqlite:///{tmp_path / 'service.db'}", **settings)
    return TestClient(create_app(cfg), raise_server_exceptions=False)


@pytest.fixture()
def client(tmp_path: Path) -> Iterator[TestClient]:
    with make_client(tmp_path) as c:
        yield c


def with_text(docs: list[dict[str, Any]], n: int) -> list[dict[str, Any]]:
    out = [
        {k: d[k] for k in ("id", "text", "title", "date") if d.get(k) is not None}
        for d in docs
        if d["text"].strip()
    ]
    return out[:n]


def planted(base: dict[str, Any], n: int, start: str = "1987-03-02T09:00:00Z") -> list[dict]:
    """``n`` edited copies of ``base`` 10 minutes apart: a breaking story (seed 003)."""
    t0 = dt.datetime.fromisoformat(start.replace("Z", "+00:00"))
    return [
        {
            "id": f"copy-{i}",
            "text": base["text"] + f" Update {i}: the agency said more details would follow.",
            "title": f"{base.get('title') or 'story'} (update {i})",
            "date": (t0 + dt.timedelta(minutes=10 * i)).isoformat().replace("+00:00", "Z"),
            "source": f"wire-{i % 3}",
        }
        for i in range(n)
    ]


def test_ingest_document_similar_match_the_python_api(
    client: TestClient, reuters_docs: list[dict[str, Any]], tmp_path: Path
) -> None:
    docs = with_text(reuters_docs, 300)
    one = client.post("/v1/documents", json=docs[0])
    assert one.status_code == 200, one.text
    batch = client.post("/v1/documents", json={"articles": docs[1:200]})
    assert batch.status_code == 200, batch.text
    rest = client.post("/v1/documents", json=docs[200:])
    got = [one.json()] + batch.json()["decisions"] + rest.json()["decisions"]

    with NewsIndex(store=str(tmp_path / "oracle.db")) as oracle:
        expected = [plain(d) for d in oracle.ingest_many(docs)]
        assert got == expected
        statuses = {d["status"] for d in got}
        assert "new" in statuses and len(statuses) >= 2, statuses  # real re-sends in Reuters

        # every stored article is served back with the decision made at ingest
        for doc, decision in zip(docs[:40], expected, strict=False):
            body = client.get(f"/v1/documents/{doc['id']}").json()
            assert body["text"] == doc["text"] and body["decision"] == decision
        # similar stories are the library's, in its order
        for doc in docs[:60]:
            served = client.get(f"/v1/documents/{doc['id']}/similar", params={"limit": 5})
            assert served.status_code == 200
            body = served.json()
            want = [plain(m) for m in oracle.similar(doc["id"], 5)]
            assert (
                [{k: item[k] for k in want[0]} for item in body["similar"]] == want
                if want
                else (body["similar"] == [])
            )
            assert [d["id"] for d in body["duplicates"]] == oracle.duplicates(doc["id"])

    # idempotent re-ingest: same decision, no double count
    again = client.post("/v1/documents", json=docs[0]).json()
    assert {k: v for k, v in again.items() if k != "replayed"} == {
        k: v for k, v in got[0].items() if k != "replayed"
    }
    assert client.get("/healthz").json()["documents"] == len(docs)
    recent = client.get("/v1/documents", params={"limit": 5}).json()["documents"]
    assert [r["id"] for r in recent] == [d["id"] for d in reversed(docs[-5:])]


def test_duplicates_are_listed_on_the_original(client: TestClient, reuters_docs: list) -> None:
    base = with_text(reuters_docs, 1)[0]
    copy = {**base, "id": "copy-of-" + base["id"], "date": "1987-12-31T00:00:00Z"}
    client.post("/v1/documents", json=[base, copy])
    assert client.get(f"/v1/documents/{copy['id']}").json()["original"] == base["id"]
    assert client.get(f"/v1/documents/{base['id']}").json()["duplicates"] == [copy["id"]]


def test_dedup_equals_the_library_on_stored_ids_and_texts(
    client: TestClient, reuters_docs: list[dict[str, Any]]
) -> None:
    docs = with_text(reuters_docs, 120)
    client.post("/v1/documents", json=docs)
    # a ranked result set of 100 stored ids with planted edited copies as texts in between
    items: list[Any] = [d["id"] for d in docs[:100]]
    texts = {d["id"]: d["text"] for d in docs}
    for pos in (5, 30, 70):
        src = docs[pos - 3]
        items.insert(pos, {"id": f"edit-{pos}", "text": src["text"] + " Reuters adds detail."})
    for threshold in (0.3, 0.5, 0.9):
        res = client.post("/v1/dedup", json={"items": items, "threshold": threshold})
        assert res.status_code == 200, res.text
        body = res.json()
        sigs = [sign(texts[i] if isinstance(i, str) else i["text"], "sentences") for i in items]
        assert body["positions"] == dedup_result_set(sigs, threshold)
        keys = [i if isinstance(i, str) else i["id"] for i in items]
        assert body["keep"] == [keys[i] for i, p in enumerate(body["positions"]) if p == i]
        for dropped, kept in body["duplicate_of"].items():
            assert kept in body["keep"] and keys.index(kept) < keys.index(dropped)
        assert len(body["keep"]) + len(body["duplicate_of"]) == len(items)
    # without a threshold the near-duplicate rule decides, on the coverage sketches
    body = client.post("/v1/dedup", json={"items": items}).json()
    assert body["threshold"] is None
    sigs = [sign(texts[i] if isinstance(i, str) else i["text"]) for i in items]
    assert sigs[0].scheme == "coverage"
    assert body["positions"] == dedup_result_set(sigs)
    for pos in (5, 30, 70):
        assert body["duplicate_of"].get(f"edit-{pos}") is not None
    # text items without an id are keyed by position; an empty set is fine
    anon = client.post("/v1/dedup", json={"items": [{"text": "A b c d. E f g h."}] * 2}).json()
    assert anon["keep"] == ["#0"] and anon["duplicate_of"] == {"#1": "#0"}
    assert client.post("/v1/dedup", json={"items": []}).json()["keep"] == []


def test_dedup_fast_path_answers_as_the_route_and_the_library(
    client: TestClient, reuters_docs: list[dict[str, Any]]
) -> None:
    """Bare ids take the ASGI fast path (DedupFastPath); ``{"id"}`` objects take the route:
    both must give the library's answer, and the fast path's errors are the route's."""
    docs = with_text(reuters_docs, 150)
    client.post("/v1/documents", json=docs)
    texts = {d["id"]: d["text"] for d in docs}
    ids = [d["id"] for d in docs]
    for n, threshold in enumerate((None, 0.2, 0.5, 1)):
        ranked = ids[n * 7 :] + ids[: n * 7]
        body: dict[str, Any] = {"items": ranked}
        if threshold is not None:
            body["threshold"] = threshold
        fast = client.post("/v1/dedup", json=body)
        routed = client.post("/v1/dedup", json={**body, "items": [{"id": i} for i in ranked]})
        assert fast.status_code == routed.status_code == 200, (fast.text, routed.text)
        assert fast.headers["content-type"] == "application/json"
        assert fast.json() == routed.json()
        if threshold is None:  # the rule, on the default coverage sketches
            expected = dedup_result_set([sign(texts[i]) for i in ranked])
        else:
            expected = dedup_result_set([sign(texts[i], "sentences") for i in ranked], threshold)
        assert fast.json()["positions"] == expected
    # the fast path hands everything else to the route, which words the error
    unknown = client.post("/v1/dedup", json={"items": [ids[0], "no-such-id"]})
    assert unknown.status_code == 404 and "no-such-id" in unknown.json()["error"]["message"]
    repeated = client.post("/v1/dedup", json={"items": [ids[0], ids[0]]})
    assert repeated.status_code == 422
    too_many = client.post("/v1/dedup", json={"items": [f"x{i}" for i in range(1001)]})
    assert too_many.status_code == 413
    # fast-path requests are counted under the route's template
    metrics = client.get("/metrics").text
    assert 'route="/v1/dedup",status="200"' in metrics
    assert 'route="<unmatched>"' not in metrics


def test_warm_up_runs_the_hot_paths_on_scratch_data(
    client: TestClient, caplog: pytest.LogCaptureFixture
) -> None:
    from neardup.service.warmup import warm_up

    with caplog.at_level("WARNING", logger="neardup.service"):
        assert warm_up() >= 0.0
    assert not [r for r in caplog.records if r.levelname == "WARNING"], caplog.text
    # the scratch articles never reach the service's store
    assert client.get("/healthz").json()["documents"] == 0


def test_warm_up_beside_runs_in_a_process_of_its_own(client: TestClient) -> None:
    # What `neardup serve --preload` starts beside its preload: the same warm-up, exit 0,
    # and nothing of it in the service's store.
    from neardup.service.warmup import finish_warm_up_beside, start_warm_up_beside

    helper = start_warm_up_beside()
    if helper is None:
        pytest.skip("one core: the warm-up is not started beside the caller")
    finish_warm_up_beside(helper)
    assert helper.returncode == 0
    assert client.get("/healthz").json()["documents"] == 0
    # Cancelled (the caller's work failed): ended at once, whatever it was doing.
    cancelled = start_warm_up_beside()
    finish_warm_up_beside(cancelled, cancel=True)
    assert cancelled is not None and cancelled.returncode is not None
    finish_warm_up_beside(None)  # nothing started: nothing to do


def test_events_and_event_report_match_the_python_api(
    client: TestClient, reuters_docs: list[dict[str, Any]], tmp_path: Path
) -> None:
    base = with_text(reuters_docs, 1)[0]
    story = planted(base, 20)
    decisions = client.post("/v1/documents", json=story).json()["decisions"]
    assert any(d["event"] for d in decisions), "20 similar articles in 4 h open an event"
    with NewsIndex(store=str(tmp_path / "oracle.db")) as oracle:
        oracle.ingest_many(story)
        rows = oracle.events()
        served = client.get("/v1/events").json()["events"]
        assert [e["id"] for e in served] == [r.id for r in rows] and served
        for row in rows:
            report = client.get(f"/v1/events/{row.id}")
            assert report.status_code == 200
            assert report.json() == plain(oracle.event(row.id))
    report = client.get(f"/v1/events/{served[0]['id']}").json()
    dates = [a["date"] for a in report["articles"]]
    assert dates == sorted(dates) and report["growth"]
    # time windows use article dates: nothing opened in 1990
    assert client.get("/v1/events", params={"since": "1990-01-01"}).json()["events"] == []
    window = {"since": "1987-03-01T00:00:00Z", "until": "1987-03-03T00:00:00Z"}
    assert client.get("/v1/events", params=window).json()["events"] == served


def test_openapi_docs_page_and_health(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    for path in (
        "/v1/documents",
        "/v1/documents/{doc_id}",
        "/v1/documents/{doc_id}/similar",
        "/v1/dedup",
        "/v1/events",
        "/v1/events/{event_id}",
        "/v1/origin",
        "/healthz",
        "/metrics",
    ):
        assert path in spec["paths"], path
    assert "DedupIn" in spec["components"]["schemas"]
    assert "swagger" in client.get("/docs").text.lower()
    page = client.get("/")
    assert page.status_code == 200 and "neardup" in page.text
    assert client.get("/static/app.js").status_code == 200
    health = client.get("/healthz").json()
    assert health["status"] == "ok" and health["documents"] == 0
    assert client.get("/v1/documents").json() == {"documents": []}
    assert client.get("/v1/events").json() == {"events": []}
    assert client.get("/metrics").status_code == 200


def test_origin_matches_the_detector_and_queries_leave_no_trace(
    tmp_path: Path, reuters_docs: list[dict[str, Any]]
) -> None:
    from neardup.detect.origin import OriginConfig, OriginDetector

    docs = with_text(reuters_docs, 240)
    settings = ServiceSettings(store=f"sqlite:///{tmp_path / 'o.db'}")
    oracle = OriginDetector(OriginConfig(memory_bytes=settings.origin_memory_bytes))
    # a text made of two earlier articles' passages and a novel sentence
    novel = " An entirely new sentence that no wire story ever carried, written for this test. "
    pasted = docs[3]["text"][:500] + novel + docs[120]["text"][:500]
    with TestClient(create_app(settings)) as client:
        client.post("/v1/documents", json=docs[:200])
        first = client.post("/v1/origin", json={"text": pasted})
        assert first.status_code == 200, first.text
        assert client.post("/v1/origin", json={"text": pasted}).json() == first.json()
        expected = {d["id"]: oracle.process(d["id"], d["text"]) for d in docs[:200]}
        client.post("/v1/documents", json=docs[200:])  # the stream continues after queries
        expected |= {d["id"]: oracle.process(d["id"], d["text"]) for d in docs[200:]}
        for doc in docs[::7]:
            served = client.post("/v1/origin", json={"id": doc["id"]}).json()
            report = expected[doc["id"]]
            row = report.to_dict()  # what ``neardup origin`` prints for it
            assert {k: v for k, v in served.items() if k in row and k != "segments"} == {
                k: v for k, v in row.items() if k != "segments"
            }
            assert [{k: s[k] for k in ("start", "end", "origin")} for s in served["segments"]] == (
                row["segments"]
            )
            assert [s["copied"] for s in served["segments"]] == [
                s["origin"] != doc["id"] for s in row["segments"]
            ]
            assert served["mostly_original"] == (report.dominant_origin == doc["id"])
        body = first.json()
    assert body["id"] is None and 0.5 < body["copied_fraction"] < 1.0
    copied = [s for s in body["segments"] if s["copied"]]
    assert {s["origin"] for s in copied} >= {docs[3]["id"], docs[120]["id"]}
    for seg in copied:  # offsets map back to text of the article it names
        piece = pasted[seg["start"] : seg["end"]]
        source = next(d for d in docs if d["id"] == seg["origin"])["text"]
        assert piece.split()[:3] == [w for w in piece.split()[:3] if w in source.split()]
        assert seg["origin"] in body["origins"]
    novel_start = pasted.index(novel.strip())
    assert any(
        not s["copied"] and s["start"] <= novel_start + 5 < s["end"] for s in body["segments"]
    )


def test_origin_state_is_saved_at_shutdown_and_continued(
    tmp_path: Path, reuters_docs: list[dict[str, Any]]
) -> None:
    from neardup.service.backend import LibraryBackend

    docs = with_text(reuters_docs, 160)
    settings = ServiceSettings(store=f"sqlite:///{tmp_path / 'r.db'}")
    probe = [d["id"] for d in docs[:100:9]]

    def reports(client: TestClient, ids: list[str]) -> list[dict[str, Any]]:
        return [client.post("/v1/origin", json={"id": i}).json() for i in ids]

    with TestClient(create_app(settings)) as client:
        client.post("/v1/documents", json=docs[:100])
        before = reports(client, probe)
    assert (tmp_path / "r.db.origin.npz").exists()

    restarted = LibraryBackend(settings)
    try:
        with TestClient(create_app(settings, backend=restarted)) as client:
            assert reports(client, probe) == before
            assert restarted._origin is not None and restarted._origin.restored
            client.post("/v1/documents", json=docs[100:])
            later = reports(client, [d["id"] for d in docs[100:]])
    finally:
        restarted.close()
    # a rebuild from the log alone gives the same answers as the continued state
    (tmp_path / "r.db.origin.npz").unlink()
    rebuilt = LibraryBackend(settings)
    try:
        with TestClient(create_app(settings, backend=rebuilt)) as client:
            assert reports(client, [d["id"] for d in docs[100:]]) == later
            assert rebuilt._origin is not None and not rebuilt._origin.restored
    finally:
        rebuilt.close()
    # a damaged state (empty, foreign, truncated, one flipped byte) is refused with a note
    # and rebuilt from the log: every /v1/origin still answers, with the same reports
    good = (tmp_path / "r.db.origin.npz").read_bytes()
    flipped = bytearray(good)
    flipped[len(good) // 2] ^= 0x40
    for damage in (b"", b"not a state", good[: len(good) // 3], bytes(flipped)):
        (tmp_path / "r.db.origin.npz").write_bytes(damage)
        damaged = LibraryBackend(settings)
        try:
            with TestClient(create_app(settings, backend=damaged)) as client:
                assert reports(client, [d["id"] for d in docs[100:]]) == later
                assert damaged._origin is not None and not damaged._origin.restored
                assert "rebuilt from the log" in (damaged._origin.checkpoint_note or "")
        finally:
            damaged.close()


def test_the_page_shows_what_neardup_origin_prints_for_the_same_stream(
    tmp_path: Path, reuters_docs: list[dict[str, Any]]
) -> None:
    """One engine: the service's report of each stored article is the row ``neardup origin``
    prints for the same articles in the same order, with the same table size."""
    import json as json_module

    from click.testing import CliRunner

    from neardup.cli import cli

    docs = with_text(reuters_docs, 150)
    docs.append(
        {
            "id": "patch",
            "text": docs[3]["text"][:600] + " Brand new words. " + docs[90]["text"][:600],
        }
    )
    settings = ServiceSettings(store=f"sqlite:///{tmp_path / 'p.db'}")
    path = tmp_path / "in.jsonl"
    path.write_text(
        "".join(json_module.dumps({"id": d["id"], "text": d["text"]}) + "\n" for d in docs)
    )
    result = CliRunner().invoke(
        cli, ["origin", str(path), "--memory", f"{settings.origin_memory_bytes}B"]
    )
    assert result.exit_code == 0, result.output
    printed = {r["id"]: r for r in map(json_module.loads, result.stdout.splitlines())}
    with TestClient(create_app(settings)) as client:
        assert client.post("/v1/documents", json=docs).status_code == 200
        for doc in [*docs[::10], docs[-1]]:
            served = client.post("/v1/origin", json={"id": doc["id"]}).json()
            row = printed[doc["id"]]
            assert {k: served[k] for k in row if k != "segments"} == {
                k: v for k, v in row.items() if k != "segments"
            }
            assert [{k: s[k] for k in ("start", "end", "origin")} for s in served["segments"]] == (
                row["segments"]
            )
        assert printed["patch"]["copied_fraction"] > 0.5
        aligned = client.post("/v1/align", json={"id": "patch", "source": docs[90]["id"]}).json()
    assert len(aligned["passages"]) == 1
    p = aligned["passages"][0]
    assert (
        docs[-1]["text"][p["this_offset"] : p["this_offset"] + p["this_length"]] in docs[90]["text"]
    )
