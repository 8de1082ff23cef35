"""Stores: SQLite always, PostgreSQL against 127.0.0.1:5432/test (skipped when unreachable
unless NEARDUP_REQUIRE_SERVICES is set).  Each PostgreSQL test uses its own schema."""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from neardup.errors import ConfigError, StoreError
from neardup.records import text_hash
from neardup.store import SCHEMA_VERSION, ArticleRow, EventRow, GroupOriginal, Store, open_store

PG_BASE = os.environ.get("NEARDUP_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")


def pg_url_or_skip() -> str:
    """A fresh schema URL on the test server, or skip (fail under NEARDUP_REQUIRE_SERVICES)."""
    try:
        import psycopg

        with psycopg.connect(PG_BASE, connect_timeout=3) as conn:
            conn.execute("SELECT 1")
    except Exception as exc:  # any failure to reach the server
        if os.environ.get("NEARDUP_REQUIRE_SERVICES"):
            pytest.fail(f"PostgreSQL required but unreachable at {PG_BASE}: {exc}")
        pytest.skip(f"PostgreSQL unreachable at {PG_BASE}: {exc}")
    return f"{PG_BASE}?schema=nd_test_{uuid.uuid4().hex[:12]}"


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield str(tmp_path / "store.db")
        return
    url = pg_url_or_skip()
    yield url
    from neardup.store.postgres import drop_schema

    drop_schema(url)


def row(article_id: str, fp: int = 1, date_us: int | None = 0, **kw: object) -> ArticleRow:
    fields: dict[str, object] = {
        "seq": 0,
        "id": article_id,
        "text_hash": text_hash("text of " + article_id),
        "date_us": date_us,
        "source": "src",
        "title": "t",
        "text": "text of " + article_id,
        "status": "new",
        "original": None,
        "event": None,
        "fingerprint": fp,
        "signature": b"\x00\x01sig",
        "decision": "{}",
    }
    fields.update(kw)
    return ArticleRow(**fields)  # type: ignore[arg-type]


def test_roundtrip_articles_and_reopen(store_url: str) -> None:
    store = open_store(store_url)
    assert isinstance(store, Store)
    with store.write():
        s1 = store.insert_article(row("a", fp=(1 << 64) - 1, date_us=None))
        s2 = store.insert_article(row("b", fp=1 << 63, date_us=-5))
    assert s2 > s1
    store.close()
    store = open_store(store_url)
    try:
        a = store.get("a")
        assert a is not None and a.fingerprint == (1 << 64) - 1 and a.date_us is None
        assert a.signature == b"\x00\x01sig" and a.text == "text of a"
        assert store.get("missing") is None
        assert [r.id for r in store.get_many_by_seq([s2, s1])] == ["b", "a"]
        assert sorted(r.id for r in store.get_many(["a", "b", "zz"])) == ["a", "b"]
        assert store.count() == 2
        assert [r.id for r in store.iter_articles()] == ["a", "b"]
        assert store.meta_get("schema_version") == str(SCHEMA_VERSION)
    finally:
        store.close()


def test_write_rolls_back_on_error(store_url: str) -> None:
    store = open_store(store_url)
    try:
        with pytest.raises(RuntimeError), store.write():
            store.insert_article(row("a"))
            store.append_log("add", 1, "1")
            raise RuntimeError("boom")
        assert store.get("a") is None and store.count() == 0 and store.last_log_seq() == 0
        with store.write():
            store.insert_article(row("a"))
        with pytest.raises(StoreError), store.write():
            store.insert_article(row("a"))  # unique id
        assert store.count() == 1
    finally:
        store.close()


def test_log_groups_and_events(store_url: str) -> None:
    store = open_store(store_url)
    try:
        with store.write():
            seqs = [store.insert_article(row(i, fp=n, date_us=n * 10)) for n, i in enumerate("abc")]
            logs = [store.append_log("add", s, "1") for s in seqs]
            store.set_original(["b", "c"], "a")
            store.insert_event(EventRow("a", "a", 5, seqs[0]))
            store.set_event(seqs[::-1], "a")
            logs.append(store.append_log("event", seqs[2], "a"))
        assert logs == sorted(logs) and store.last_log_seq() == logs[-1]
        entries = store.log_since(logs[0])
        assert [e.seq for e in entries] == logs[1:]
        assert entries[-1].op == "event" and entries[-1].arg == "a" and entries[-1].date_us == 20
        assert [e.seq for e in store.log_since(0, limit=2)] == logs[:2]
        assert store.members_of("a") == ["b", "c"]
        assert store.group_originals(["c", "a", "nope", "b"]) == [(seqs[0], "a", 0)]
        assert store.group_originals(["c"]) == [GroupOriginal(seqs[0], "a", 0)]
        assert store.group_originals([]) == []
        with store.write():
            d = store.insert_article(row("d", fp=7, date_us=None))
        assert store.group_originals(["d", "b"]) == [(seqs[0], "a", 0), (d, "d", None)]
        assert [r.id for r in store.event_articles("a")] == ["a", "b", "c"]
        assert store.get_event("a") == EventRow("a", "a", 5, seqs[0])
        assert store.get_event("nope") is None
        assert [e.id for e in store.events(0, 6)] == ["a"]
        assert store.events(6, None) == [] and store.events(None, 5) == []
        store.meta_set("k", "v1")
        store.meta_set("k", "v2")
        assert store.meta_get("k") == "v2"
    finally:
        store.close()


def test_newer_schema_is_refused(store_url: str) -> None:
    store = open_store(store_url)
    with store.write():
        store.meta_set("schema_version", str(SCHEMA_VERSION + 1))
    store.close()
    with pytest.raises(StoreError, match="newer"):
        open_store(store_url)


def test_writers_are_serialised(store_url: str) -> None:
    first = open_store(store_url)
    second = open_store(store_url)
    order: list[str] = []
    try:
        entered = threading.Event()

        def other() -> None:
            entered.wait()
            with second.write():
                order.append("second")
                second.insert_article(row("b"))

        thread = threading.Thread(target=other)
        thread.start()
        with first.write():
            entered.set()
            time.sleep(0.3)
            order.append("first")
            first.insert_article(row("a"))
        thread.join(timeout=30)
        assert order == ["first", "second"]
        assert first.count() == 2
    finally:
        first.close()
        second.close()


def test_sqlite_urls_and_options(tmp_path: Path) -> None:
    path = tmp_path / "x.db"
    store = open_store(f"sqlite:///{path}?synchronous=full")
    assert store.synchronous == "full"  # type: ignore[attr-defined]
    store.close()
    assert path.exists()
    store = open_store(":memory:")
    store.close()
    with pytest.raises(ConfigError):
        open_store(f"sqlite:///{path}?synchronous=sometimes")
    with pytest.raises(ConfigError):
        open_store(f"sqlite:///{path}?colour=blue")
    with pytest.raises(ConfigError):
        open_store("mysql://host/db")
    with pytest.raises(ConfigError):
        open_store("")
    with pytest.raises(StoreError):
        open_store(str(tmp_path / "absent.db"), create=False)
    with pytest.raises(StoreError):
        open_store(str(tmp_path / "no" / "such" / "dir.db"))
    not_db = tmp_path / "garbage.db"
    not_db.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreError):
        open_store(str(not_db))


def test_sqlite_mmap_option(tmp_path: Path) -> None:
    # Memory-mapped reads are on by default (SQLite caps the size at its build's maximum),
    # off with mmap_size=0, and both read the same rows; bad sizes are configuration errors.
    path = tmp_path / "m.db"
    store = open_store(f"sqlite:///{path}")
    with store.write():
        for n in range(50):
            store.insert_article(row(f"a{n}", fp=n))
    assert store._conn.execute("PRAGMA mmap_size").fetchone()[0] > 0  # type: ignore[attr-defined]
    mapped = [(r.id, r.fingerprint, r.signature) for r in store.get_many_by_seq(range(1, 51))]
    store.close()
    plain = open_store(f"sqlite:///{path}?mmap_size=0")
    assert plain._conn.execute("PRAGMA mmap_size").fetchone()[0] == 0  # type: ignore[attr-defined]
    assert [(r.id, r.fingerprint, r.signature) for r in plain.get_many_by_seq(range(1, 51))] == (
        mapped
    )
    assert len(mapped) == 50
    plain.close()
    for bad in ("-1", "lots"):
        with pytest.raises(ConfigError, match="mmap_size"):
            open_store(f"sqlite:///{path}?mmap_size={bad}")


def test_postgres_bad_schema_name_and_missing() -> None:
    url = pg_url_or_skip()
    with pytest.raises(ConfigError):
        open_store(PG_BASE + "?schema=bad;name")
    with pytest.raises(StoreError):
        open_store(url, create=False)


def test_store_urls_follow_the_common_convention(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # sqlite:///relative.db, sqlite:////absolute.db (as SQLAlchemy), and a bare path.
    from neardup.api import NewsIndex
    from neardup.store.sqlite import parse_sqlite_url

    monkeypatch.chdir(tmp_path)
    assert parse_sqlite_url("sqlite:///news.db") == ("news.db", {})
    assert parse_sqlite_url("sqlite:///sub/news.db?synchronous=full") == (
        "sub/news.db",
        {"synchronous": "full"},
    )
    assert parse_sqlite_url("sqlite:////var/lib/news.db") == ("/var/lib/news.db", {})
    assert parse_sqlite_url("news.db") == ("news.db", {})
    assert parse_sqlite_url("sqlite://")[0] == ":memory:"
    assert parse_sqlite_url("sqlite:///:memory:")[0] == ":memory:"
    with pytest.raises(ConfigError, match=r"sqlite:///news\.db"):
        parse_sqlite_url("sqlite://news.db")
    for url in ("sqlite:///rel.db", "bare.db"):
        open_store(url).close()
    assert (tmp_path / "rel.db").exists() and (tmp_path / "bare.db").exists()
    absolute = tmp_path / "abs" / "x.db"
    absolute.parent.mkdir()
    open_store(f"sqlite:///{absolute}").close()  # sqlite:////tmp/...: four slashes
    assert absolute.exists()
    # one default store: NewsIndex() and the commands use ./neardup.db
    with NewsIndex() as news:
        news.ingest({"id": "a", "text": "Shares rose on Monday in Tokyo."})
    assert (tmp_path / "neardup.db").exists() and (tmp_path / "neardup.db.ckpt.npz").exists()
