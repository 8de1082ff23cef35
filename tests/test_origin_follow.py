"""One origin engine over a store: StoreFollower (SQLite and PostgreSQL), its verified
checkpoint, ``neardup origin --follow``, and the state files' damage handling."""

from __future__ import annotations

import json
import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

import neardup
from neardup.cli import cli
from neardup.detect.origin import OriginConfig, OriginDetector, StoreFollower
from neardup.detect.origin.persist import load_state, save_state
from neardup.errors import StoreError
from neardup.store import open_store

PG_BASE = os.environ.get("NEARDUP_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")
CONFIG = OriginConfig(memory_bytes=200_000)  # small enough to fill on 160 articles


def pg_url_or_skip() -> str:
    try:
        import psycopg

        with psycopg.connect(PG_BASE, connect_timeout=3) as conn:
            conn.execute("SELECT 1")
    except Exception as exc:  # any failure to reach the server
        if os.environ.get("NEARDUP_REQUIRE_SERVICES"):
            pytest.fail(f"PostgreSQL required but unreachable at {PG_BASE}: {exc}")
        pytest.skip(f"PostgreSQL unreachable at {PG_BASE}: {exc}")
    return f"{PG_BASE}?schema=nd_origin_{uuid.uuid4().hex[:12]}"


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield str(tmp_path / "store.db")
        return
    url = pg_url_or_skip()
    yield url
    from neardup.store.postgres import drop_schema

    drop_schema(url)


def articles(reuters_docs: list[dict[str, Any]], n: int) -> list[neardup.Article]:
    docs = [d for d in reuters_docs if d["text"]][:n]
    return [neardup.Article(id=d["id"], text=d["text"]) for d in docs]


def ingest(url: str, items: list[neardup.Article]) -> None:
    with neardup.NewsIndex(url) as news:
        news.ingest_many(items)


def replay(items: list[neardup.Article], config: OriginConfig) -> dict[str, dict[str, Any]]:
    """The oracle: one detector over the articles in ingest order."""
    det = OriginDetector(config)
    return {a.id: det.process(a.id, a.text).to_dict() for a in items}


def test_follower_equals_one_detector_and_continues_incrementally(
    store_url: str, tmp_path: Path, reuters_docs: list[dict[str, Any]]
) -> None:
    items = articles(reuters_docs, 160)
    ingest(store_url, items[:100])
    store = open_store(store_url)
    state = tmp_path / "follow.npz"
    try:
        first = StoreFollower(store, CONFIG, state_path=state)
        seen: list[str] = []
        assert first.catch_up(lambda r: seen.append(r.id)) == 100
        assert first.catch_up() == 0  # nothing new
        first.save()
        ingest(store_url, items[100:])
        again = StoreFollower(store, CONFIG, state_path=state)
        assert again.restored and again.checkpoint_note is None
        assert again.catch_up(lambda r: seen.append(r.id)) == 60
    finally:
        store.close()
    want = replay(items, CONFIG)
    assert seen == [a.id for a in items]
    for a in items[::11]:
        assert again.report_of(a.id) == want[a.id]


def test_a_stale_checkpoint_after_a_store_restore_is_refused_and_rebuilt(
    tmp_path: Path, reuters_docs: list[dict[str, Any]]
) -> None:
    items = articles(reuters_docs, 150)
    url = str(tmp_path / "s.db")
    ingest(url, items[:60])
    shutil.copy(url, tmp_path / "backup.db")
    ingest(url, items[60:100])
    state = tmp_path / "s.db.origin.npz"
    store = open_store(url)
    follower = StoreFollower(store, CONFIG, state_path=state)
    follower.catch_up()
    follower.save()
    store.close()
    # restore the older copy, keep the checkpoint, ingest other articles
    for suffix in ("", "-wal", "-shm"):
        Path(url + suffix).unlink(missing_ok=True)
    shutil.copy(tmp_path / "backup.db", url)
    others = items[100:150]
    store = open_store(url)
    try:
        early = StoreFollower(store, CONFIG, state_path=state)  # log shorter than the state
        assert not early.restored and "older copy" in (early.checkpoint_note or "")
        store.close()
        ingest(url, others)
        store = open_store(url)
        stale = StoreFollower(store, CONFIG, state_path=state)
        assert not stale.restored
        assert "restored from a copy and written since" in (stale.checkpoint_note or "")
        stale.catch_up()
    finally:
        store.close()
    want = replay(items[:60] + others, CONFIG)
    for a in (items[:60] + others)[::7]:
        assert stale.report_of(a.id) == want[a.id]


def test_checkpoints_of_another_store_or_configuration_are_refused(
    tmp_path: Path, reuters_docs: list[dict[str, Any]]
) -> None:
    items = articles(reuters_docs, 40)
    ingest(str(tmp_path / "a.db"), items)
    ingest(str(tmp_path / "b.db"), items)
    state = tmp_path / "a.npz"
    a = open_store(str(tmp_path / "a.db"))
    b = open_store(str(tmp_path / "b.db"))
    try:
        follower = StoreFollower(a, CONFIG, state_path=state)
        follower.catch_up()
        follower.save()
        other = StoreFollower(b, CONFIG, state_path=state)
        assert not other.restored and "not to this one" in (other.checkpoint_note or "")
        bigger = OriginConfig(memory_bytes=400_000)
        changed = StoreFollower(a, bigger, state_path=state)
        assert not changed.restored
        assert "another configuration" in (changed.checkpoint_note or "")
        assert StoreFollower.saved_config(state) == CONFIG
    finally:
        a.close()
        b.close()


def damaged_copies(good: bytes) -> list[bytes]:
    flipped = bytearray(good)
    flipped[len(good) // 2] ^= 0x01
    return [b"", b"PK\x03\x04 not a zip", good[: len(good) // 2], good[:-10], bytes(flipped)]


def test_damaged_state_files_are_refused_with_a_message(tmp_path: Path) -> None:
    det = OriginDetector(OriginConfig(memory_bytes=100_000))
    det.process("a", "one two three four five six seven eight nine ten eleven")
    det.save(tmp_path / "s.npz")
    good = (tmp_path / "s.npz").read_bytes()
    for n, damage in enumerate(damaged_copies(good)):
        path = tmp_path / f"bad{n}.npz"
        path.write_bytes(damage)
        with pytest.raises(
            StoreError, match=r"damaged|truncated|not a neardup state file|cannot be read"
        ):
            OriginDetector.load(path)
    with pytest.raises(StoreError, match="does not exist"):
        load_state(tmp_path / "missing.npz")


def test_two_processes_never_share_a_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    names: list[str] = []
    real = os.replace

    def spy(src: Any, dst: Any) -> None:
        names.append(Path(src).name)
        real(src, dst)

    monkeypatch.setattr(os, "replace", spy)
    for _ in range(3):
        save_state(tmp_path / "s.npz", {"x": np.arange(3)})
    assert len(set(names)) == 3
    assert all(n.startswith(f".s.npz.{os.getpid()}.") and n.endswith(".tmp") for n in names)
    assert list(tmp_path.iterdir()) == [tmp_path / "s.npz"]  # no temporary file left


def run(args: list[str]) -> tuple[int, list[dict[str, Any]], str]:
    result = CliRunner().invoke(cli, ["origin", *args])
    rows = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    return result.exit_code, rows, result.stderr


def test_cli_follow_prints_what_the_file_run_prints_and_continues(
    tmp_path: Path, reuters_docs: list[dict[str, Any]]
) -> None:
    items = articles(reuters_docs, 120)
    url = str(tmp_path / "s.db")
    ingest(url, items[:80])
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps({"id": a.id, "text": a.text}) + "\n" for a in items))
    code, from_file, _ = run([str(path), "--memory", "200KB"])
    assert code == 0
    state = str(tmp_path / "follow.npz")
    code, first, err = run(["--follow", url, "--memory", "200KB", "--state", state])
    assert code == 0, err
    ingest(url, items[80:])
    code, second, err = run(["--follow", url, "--state", state])  # options from the state
    assert code == 0, err
    assert first + second == from_file
    assert "120 in all" in err
    code, none, err = run(["--follow", url, "--state", state])
    assert code == 0 and none == [] and "0 new articles" in err
    Path(state).write_bytes(b"")  # damaged: refused with a message, rebuilt from the log
    code, rebuilt, err = run(["--follow", url, "--memory", "200KB", "--state", state])
    assert code == 0 and rebuilt == from_file and "rebuilt from the log" in err


def test_cli_follow_needs_exactly_one_source(tmp_path: Path) -> None:
    assert CliRunner().invoke(cli, ["origin"]).exit_code == 2
    path = tmp_path / "in.jsonl"
    path.write_text("")
    result = CliRunner().invoke(cli, ["origin", str(path), "--follow", str(tmp_path / "s.db")])
    assert result.exit_code == 2 and "not both" in result.output
