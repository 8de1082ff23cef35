"""State files and checkpoints are trusted only when intact and made from the store's own
history; a damaged store is reported, never answered from.

Every case ends the same way: start-up succeeds or fails with a typed ``NearDupError``, and
once it succeeds the stream equals a replay of the store alone (``consistency_errors()`` is
empty) and decides new articles exactly as a stream rebuilt from a copy of the store with no
checkpoint at all.  SQLite always; PostgreSQL on 127.0.0.1 (own schema per test, skipped when
unreachable).  Texts are generated here, so nothing needs ../shared/data.
"""

from __future__ import annotations

import dataclasses
import os
import random
import shutil
import sqlite3
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from neardup.detect.stream import CandidateConfig, Decision, NewsStream, StreamConfig
from neardup.errors import NearDupError, StateFileError, StoreCorruptError, StoreError
from neardup.store import open_store
from neardup.store.checkpoint import LogMark, check_mark, read_state, write_state
from test_store import pg_url_or_skip

# --- generated news ----------------------------------------------------------------------

_SYLLABLES = ["ka", "ro", "mi", "ten", "sul", "var", "de", "lo", "pra", "nis", "ec", "tor"]


def _vocabulary(rng: random.Random, size: int = 1500) -> list[str]:
    words = set()
    while len(words) < size:
        words.add("".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(1, 4))))
    return sorted(words)


def make_articles(prefix: str, n: int, seed: int, day: int = 1) -> list[dict[str, Any]]:
    """``n`` distinct generated articles, with names, figures and dates."""
    rng = random.Random(seed)
    vocab = _vocabulary(random.Random(7))
    out = []
    for i in range(n):
        sentences = []
        for _ in range(rng.randint(5, 10)):
            words = [rng.choice(vocab) for _ in range(rng.randint(8, 18))]
            words[0] = words[0].capitalize()
            if rng.random() < 0.5:
                words.insert(rng.randrange(len(words)), f"{rng.randint(2, 999)}")
            if rng.random() < 0.5:
                words.insert(rng.randrange(len(words)), rng.choice(vocab).capitalize())
            sentences.append(" ".join(words) + ".")
        out.append(
            {
                "id": f"{prefix}{i}",
                "text": " ".join(sentences),
                "title": f"story {prefix}{i}",
                "date": f"2024-03-{day:02d}T{(i // 60) % 24:02d}:{i % 60:02d}:00Z",
            }
        )
    return out


def copies_of(docs: list[dict[str, Any]], tag: str) -> list[dict[str, Any]]:
    """Exact copies of ``docs`` under new ids, dated a day later (each a duplicate)."""
    return [
        {**d, "id": f"{tag}-{d['id']}", "date": d["date"].replace("2024-03-", "2024-04-")}
        for d in docs
    ]


def plain(results: list[Any]) -> list[Any]:
    return [r.to_dict() if isinstance(r, Decision) else type(r).__name__ for r in results]


# --- stores: open, copy, snapshot and restore on both backends ----------------------------


@dataclasses.dataclass
class Backend:
    """One store under test and how to copy it (a backup) and put a copy back (a restore)."""

    kind: str
    url: str
    folder: Path
    snapshots: list[str] = dataclasses.field(default_factory=list)

    @property
    def ckpt(self) -> Path:
        return self.folder / "store.ckpt"

    def stream(self, checkpoint: bool = True, cfg: StreamConfig | None = None) -> NewsStream:
        path = self.ckpt if checkpoint else None
        return NewsStream(open_store(self.url), cfg, checkpoint_path=path)

    def snapshot(self) -> str:
        name = f"snap{len(self.snapshots)}"
        if self.kind == "sqlite":
            src = sqlite3.connect(self.db)
            dst = sqlite3.connect(self.folder / f"{name}.db")
            src.backup(dst)
            src.close()
            dst.close()
        else:
            _pg_copy_schema(self.url, self.schema, f"{self.schema}_{name}")
        self.snapshots.append(name)
        return name

    def restore(self, name: str) -> None:
        """Put the snapshot back in place of the store (the checkpoint file is kept)."""
        if self.kind == "sqlite":
            for suffix in ("-wal", "-shm"):
                Path(str(self.db) + suffix).unlink(missing_ok=True)
            shutil.copyfile(self.folder / f"{name}.db", self.db)
        else:
            _pg_copy_schema(self.url, f"{self.schema}_{name}", self.schema)

    def clone_url(self) -> str:
        """A copy of the store as it is now (for a replay-only oracle)."""
        name = self.snapshot()
        if self.kind == "sqlite":
            return str(self.folder / f"{name}.db")
        return self.url.replace(f"schema={self.schema}", f"schema={self.schema}_{name}")

    @property
    def db(self) -> Path:
        return self.folder / "store.db"

    @property
    def schema(self) -> str:
        return self.url.rsplit("schema=", 1)[1]


def _pg_copy_schema(url: str, source: str, target: str) -> None:
    """Make schema ``target`` an exact copy of ``source`` (tables and sequence positions),
    as pg_dump/pg_restore would."""
    import psycopg

    base = url.split("?", 1)[0]
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{target}" CASCADE')
        conn.execute(f'CREATE SCHEMA "{target}"')
        for table in ("meta", "articles", "events", "log"):
            conn.execute(f'CREATE TABLE "{target}".{table} (LIKE "{source}".{table} INCLUDING ALL)')
            conn.execute(f'INSERT INTO "{target}".{table} SELECT * FROM "{source}".{table}')
        for table in ("articles", "log"):
            seq = f'"{target}".{table}_seq_seq'
            conn.execute(f"CREATE SEQUENCE {seq}")
            conn.execute(
                f"ALTER TABLE \"{target}\".{table} ALTER COLUMN seq SET DEFAULT nextval('{seq}')"
            )
            row = conn.execute(
                f'SELECT last_value, is_called FROM "{source}".{table}_seq_seq'
            ).fetchone()
            assert row is not None
            conn.execute("SELECT setval(%s, %s, %s)", (seq.replace('"', ""), row[0], row[1]))


def _pg_drop_schemas(url: str, prefix: str) -> None:
    import psycopg

    base = url.split("?", 1)[0]
    with psycopg.connect(base, autocommit=True) as conn:
        names = conn.execute(
            "SELECT nspname FROM pg_namespace WHERE nspname LIKE %s", (prefix + "%",)
        ).fetchall()
        for (name,) in names:
            conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    if request.param == "sqlite":
        yield Backend("sqlite", str(tmp_path / "store.db"), tmp_path)
        return
    url = pg_url_or_skip()
    b = Backend("postgres", url, tmp_path)
    try:
        yield b
    finally:
        _pg_drop_schemas(url, b.schema)


A = make_articles("a", 120, seed=1, day=1)
B = make_articles("b", 120, seed=2, day=2)
C = make_articles("c", 160, seed=3, day=3)


def ingest(stream: NewsStream, docs: list[dict[str, Any]]) -> list[Any]:
    out: list[Any] = []
    for i in range(0, len(docs), 40):
        out.extend(stream.ingest_many(docs[i : i + 40]))
    return out


def kill(stream: NewsStream) -> None:
    """End a stream as ``kill -9`` would: no checkpoint, the connection just dropped."""
    stream.store.close()


def assert_decides_as_a_replay(b: Backend, live: NewsStream, probes: list[dict[str, Any]]) -> None:
    """``live`` equals a replay of its store, and decides ``probes`` as a stream rebuilt
    from a copy of the store without any checkpoint."""
    assert live.consistency_errors() == []
    oracle = NewsStream(open_store(b.clone_url()), checkpoint_path=None)
    try:
        want = plain(ingest(oracle, probes))
    finally:
        oracle.close()
    got = plain(ingest(live, probes))
    assert got == want
    assert live.consistency_errors() == []


# --- the state-file mechanism ----------------------------------------------------------


def test_state_file_round_trip_and_every_damage_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "x.state"
    arrays = {
        "a": np.arange(500, dtype=np.int64),
        "s": np.asarray(["meta"], dtype=np.str_),
        "e": np.zeros((0, 32), dtype=np.uint64),
    }
    assert read_state(path, "k") is None  # no file: nothing to restore
    write_state(path, "k", {"n": 1, "nested": {"x": [1, 2]}}, arrays)
    saved = read_state(path, "k")
    assert saved is not None and saved.meta == {"n": 1, "nested": {"x": [1, 2]}}
    assert set(saved.arrays) == set(arrays)
    for name, value in arrays.items():
        assert np.array_equal(saved.arrays[name], value) and saved.arrays[name].dtype == value.dtype
    good = path.read_bytes()
    assert not [p for p in tmp_path.iterdir() if p.name != "x.state"]  # no temporary left
    # every single-bit change anywhere, every truncation, an extension, another kind
    rng = random.Random(0)
    damaged = [good[:n] for n in (0, 1, 35, 36, 100, len(good) // 2, len(good) - 1)]
    damaged.append(good + b"\x00" * 1000)
    # every byte of the prefix and header, and 400 bytes of the arrays, one bit each
    positions = [*range(200), *rng.sample(range(200, len(good)), 400)]
    for pos in positions:
        flipped = bytearray(good)
        flipped[pos] ^= 1 << rng.randrange(8)
        damaged.append(bytes(flipped))
    for data in damaged:
        path.write_bytes(data)
        with pytest.raises(StateFileError):
            read_state(path, "k")
    path.write_bytes(good)
    with pytest.raises(StateFileError, match="not a 'other'"):
        read_state(path, "other")
    np.savez(path.with_suffix(".npz"), a=np.arange(3))  # a plain .npz is not a state file
    with pytest.raises(StateFileError):
        read_state(path.with_suffix(".npz"), "k")
    folder = tmp_path / "folder"
    folder.mkdir()
    with pytest.raises(StateFileError):
        read_state(folder, "k")


def test_state_file_writers_never_share_a_temporary_file(tmp_path: Path) -> None:
    import threading

    path = tmp_path / "x.state"
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        try:
            for i in range(20):
                write_state(path, "k", {"writer": n, "i": i}, {"a": np.full(2000, n)})
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    saved = read_state(path, "k")
    assert saved is not None and np.all(saved.arrays["a"] == saved.meta["writer"])
    assert [p.name for p in tmp_path.iterdir()] == ["x.state"]


def test_a_state_file_that_cannot_be_written_raises_and_keeps_the_old_one(tmp_path: Path) -> None:
    path = tmp_path / "x.state"
    write_state(path, "k", {"v": 1}, {"a": np.arange(3)})
    with pytest.raises(StoreError):
        write_state(path, "k", {"v": 2}, {"a": object()})  # type: ignore[dict-item]
    saved = read_state(path, "k")
    assert saved is not None and saved.meta == {"v": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["x.state"]


def test_log_marks_pin_a_state_to_the_store_history(backend: Backend) -> None:
    store = open_store(backend.url)
    try:
        assert LogMark.of(store, 0).log_seq == 0
        with store.write():
            from test_store import row

            seq = store.insert_article(row("a"))
            last = store.append_log("add", seq, "1")
        mark = LogMark.of(store, last)
        check_mark(store, mark)
        assert LogMark.from_dict(mark.to_dict()) == mark
        check_mark(store, LogMark(store.identity(), 0, 0))  # the empty prefix
        with pytest.raises(StateFileError, match="another transaction"):
            check_mark(store, dataclasses.replace(mark, txn=mark.txn ^ 1))
        with pytest.raises(StateFileError, match="does not have"):
            check_mark(store, dataclasses.replace(mark, log_seq=last + 5))
        with pytest.raises(StateFileError, match="belongs to store"):
            check_mark(store, dataclasses.replace(mark, store=uuid.uuid4().hex))
        for bad in (None, {}, {"store": 1, "log_seq": 1, "txn": 1}, {**mark.to_dict(), "txn": -1}):
            with pytest.raises(StateFileError):
                LogMark.from_dict(bad)
        with pytest.raises(StoreError):
            LogMark.of(store, last + 5)
    finally:
        store.close()


# --- checkpoints against restored, newer, other and damaged stores ----------------------


def test_restored_store_written_since_is_not_answered_from_the_old_checkpoint(
    backend: Backend,
) -> None:
    """The reported case: ingest A, back up the store; ingest B (checkpoint advances);
    restore the backup (the checkpoint stays); ingest C and kill the writer; restart."""
    s = backend.stream()
    ingest(s, A)
    s.close()
    backup = backend.snapshot()
    s = backend.stream()
    ingest(s, B)
    s.close()
    saved = read_state(backend.ckpt, "stream-checkpoint")
    assert saved is not None
    mark = LogMark.from_dict(saved.meta["mark"])
    backend.restore(backup)

    s = backend.stream()  # the store is older than the checkpoint: rebuilt from its log
    assert s.stats["restored_from_checkpoint"] == 0 and "older" in s.stats["checkpoint_error"]
    ingest(s, C)
    kill(s)

    s = backend.stream()
    try:
        # the old check (store uuid, log_seq <= last) would have trusted the checkpoint
        assert s.store.identity() == mark.store and mark.log_seq <= s.store.last_log_seq()
        assert s.stats["restored_from_checkpoint"] == 0
        assert "another transaction" in s.stats["checkpoint_error"]
        probes = copies_of(C[:60], "again")
        assert_decides_as_a_replay(backend, s, probes)
        statuses = [d.status for d in ingest(s, copies_of(C[60:], "more"))]
        assert statuses.count("duplicate") == len(statuses)  # exact copies of stored articles
    finally:
        s.close()


@pytest.mark.parametrize("case", ["newer", "older", "other-store", "restored-same"])
def test_checkpoint_against_a_newer_older_or_other_store(backend: Backend, case: str) -> None:
    s = backend.stream()
    ingest(s, A)
    s.close()  # checkpoint at the end of A
    if case == "newer":  # the store went on without checkpointing (another process)
        s = backend.stream(checkpoint=False)
        ingest(s, B)
        kill(s)
    elif case == "older":  # the store is a backup from before the checkpoint
        backup = backend.snapshot()
        s = backend.stream()
        ingest(s, B)
        s.close()
        backend.restore(backup)
    elif case == "restored-same":  # a backup taken at the checkpoint itself
        backup = backend.snapshot()
        backend.restore(backup)
    else:  # the checkpoint of another store put next to this one
        other = Backend("sqlite", str(backend.folder / "other.db"), backend.folder)
        o = NewsStream(open_store(other.url), checkpoint_path=backend.folder / "other.ckpt")
        ingest(o, B)
        o.close()
        shutil.copyfile(backend.folder / "other.ckpt", backend.ckpt)
    s = backend.stream()
    try:
        trusted = case in ("newer", "restored-same")
        assert s.stats["restored_from_checkpoint"] == int(trusted), s.stats
        if case == "newer":
            assert s.stats["replayed_log_entries"] > 0  # only the entries after the mark
        assert_decides_as_a_replay(backend, s, copies_of(A[:30], "p") + C[:30])
    finally:
        s.close()


def _damaged_checkpoints(good: bytes, rng: random.Random) -> list[tuple[str, bytes]]:
    cases = [
        ("empty", b""),
        ("truncated-1000", good[:1000]),
        ("truncated-half", good[: len(good) // 2]),
        ("truncated-1", good[:-1]),
        ("extended", good + b"\x00" * 1_000_000),  # truncate -s 1000000 on a small file
        ("garbage", bytes(rng.randrange(256) for _ in range(4096))),
    ]
    for n in range(6):
        flipped = bytearray(good)
        flipped[rng.randrange(len(good))] ^= 1 << rng.randrange(8)
        cases.append((f"flip-{n}", bytes(flipped)))
    return cases


def test_damaged_checkpoint_is_only_a_lost_speed_up(backend: Backend) -> None:
    s = backend.stream()
    ingest(s, A)
    s.close()
    good = backend.ckpt.read_bytes()
    old = backend.folder / "old.npz"
    np.savez(old, meta=np.asarray(["{}"]), index_keys=np.arange(3))  # the former format
    cases = [*_damaged_checkpoints(good, random.Random(5)), ("old-format", old.read_bytes())]
    probes = copies_of(A[:20], "p")
    for name, data in cases:
        backend.ckpt.write_bytes(data)
        s = backend.stream()
        try:
            assert s.stats["restored_from_checkpoint"] == 0, name
            assert s.stats.get("checkpoint_error"), name
            assert s.consistency_errors() == [], name
        finally:
            kill(s)
    backend.ckpt.write_bytes(cases[0][1])
    s = backend.stream()
    assert_decides_as_a_replay(backend, s, probes)
    s.close()  # writes a good checkpoint again
    s = backend.stream()
    assert s.stats["restored_from_checkpoint"] == 1 and s.consistency_errors() == []
    s.close()


def test_checkpoint_made_with_another_configuration_is_not_used(backend: Backend) -> None:
    s = backend.stream()
    ingest(s, A)
    s.close()
    cfg = StreamConfig(candidates=CandidateConfig(story_candidates=5))
    s = backend.stream(cfg=cfg)
    try:
        assert s.stats["restored_from_checkpoint"] == 0
        assert "another candidates" in s.stats["checkpoint_error"]
        assert s.consistency_errors() == []
    finally:
        s.close()


# --- a damaged store -------------------------------------------------------------------


def _tamper(b: Backend, statement: str, params: tuple[Any, ...] = ()) -> None:
    """Change stored values behind the store's back (what a damaged disk does)."""
    if b.kind == "sqlite":
        conn = sqlite3.connect(b.db)
        conn.execute(statement, params)
        conn.commit()
        conn.close()
    else:
        import psycopg

        with psycopg.connect(b.url.split("?", 1)[0], autocommit=True) as conn:
            conn.execute(f'SET search_path TO "{b.schema}"')
            conn.execute(statement.replace("?", "%s"), params)


TAMPERING = {
    "text": ("UPDATE articles SET text = text || ' extra' WHERE id = ?", ()),
    "fingerprint": ("UPDATE articles SET fingerprint = fingerprint + 1 WHERE id = ?", ()),
    "signature": ("UPDATE articles SET signature = signature || signature WHERE id = ?", ()),
    "date": ("UPDATE articles SET date_us = date_us + 1 WHERE id = ?", ()),
    "title": ("UPDATE articles SET title = 'other' WHERE id = ?", ()),
    "decision": ("UPDATE articles SET decision = '{}' WHERE id = ?", ()),
    "log-entry": (
        "UPDATE log SET arg = '0' WHERE op = 'add' AND article_seq = "
        "(SELECT seq FROM articles WHERE id = ?)",
        (),
    ),
}


@pytest.mark.parametrize("column", sorted(TAMPERING))
def test_a_stored_value_changed_behind_the_store_is_a_store_error_naming_it(
    backend: Backend, column: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    s = backend.stream()
    ingest(s, A)
    s.close()
    victim = A[7]["id"]
    statement, _ = TAMPERING[column]
    _tamper(backend, statement, (victim,))
    # the start-up check of the newest rows would refuse the store at once: reads only here
    monkeypatch.setattr("neardup.store._sql.CHECK_AT_OPEN", 0)
    # a replay reads every logged article through its check: start-up names the damage
    with pytest.raises(StoreCorruptError) as err:
        backend.stream(checkpoint=False)
    assert victim in str(err.value) or "log entr" in str(err.value)
    # from the checkpoint, start-up reads nothing; every read of the article refuses it
    s = backend.stream()
    try:
        assert s.stats["restored_from_checkpoint"] == 1
        if column == "log-entry":
            with pytest.raises(StoreCorruptError, match="log entr"):
                s.consistency_errors()
            return
        with pytest.raises(StoreCorruptError, match=victim):
            s.get(victim)
        with pytest.raises(StoreCorruptError, match=victim):
            s.ingest({**A[7], "id": "again"})  # the copy's candidate is the damaged one
        assert s.get(A[8]["id"]).text == A[8]["text"]  # the others are served
    finally:
        s.close()


def test_a_damaged_row_is_found_at_start_up_and_served_never(tmp_path: Path) -> None:
    b = Backend("sqlite", str(tmp_path / "store.db"), tmp_path)
    s = b.stream()
    ingest(s, A)
    s.close()
    newest = A[-1]["id"]
    _tamper(b, "UPDATE articles SET text = 'replaced' WHERE id = ?", (newest,))
    with pytest.raises(StoreCorruptError, match=newest):
        open_store(b.url)  # the cheap start-up form: the newest rows are checked at open


def test_invalid_utf8_in_a_stored_text_is_a_store_error_naming_the_article(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    b = Backend("sqlite", str(tmp_path / "store.db"), tmp_path)
    s = b.stream()
    ingest(s, A)
    s.close()
    victim = A[3]["id"]
    conn = sqlite3.connect(b.db)
    conn.execute("UPDATE articles SET text = CAST(X'41FF42' AS TEXT) WHERE id = ?", (victim,))
    conn.commit()
    conn.close()
    with pytest.raises(StoreCorruptError, match=f"{victim}.*UTF-8"):
        open_store(b.url)  # found by the start-up check
    monkeypatch.setattr("neardup.store._sql.CHECK_AT_OPEN", 0)
    s = b.stream()  # restored from the checkpoint: no article read yet
    try:
        with pytest.raises(StoreCorruptError, match=f"{victim}.*UTF-8"):
            s.get(victim)
        assert s.get(A[4]["id"]).text == A[4]["text"]
        with pytest.raises(StoreCorruptError, match=victim):
            list(s.store.iter_articles())
    finally:
        s.close()


def _open_or_typed_error(b: Backend) -> NewsStream | None:
    try:
        return b.stream()
    except NearDupError:
        return None


def test_damaged_sqlite_file_starts_with_a_typed_error_or_decides_as_its_replay(
    tmp_path: Path,
) -> None:
    """Truncated, emptied and bit-flipped store files, with their good checkpoint."""
    b = Backend("sqlite", str(tmp_path / "store.db"), tmp_path)
    s = b.stream()
    ingest(s, A)
    s.close()
    conn = sqlite3.connect(b.db)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    good, ckpt = b.db.read_bytes(), b.ckpt.read_bytes()
    rng = random.Random(11)
    cases = [("empty", b""), ("half", good[: len(good) // 2]), ("4096", good[:4096])]
    cases += [(f"flip-{n}", _flip(good, rng)) for n in range(24)]
    outcomes: dict[str, int] = {}
    for name, data in cases:
        for suffix in ("-wal", "-shm"):
            Path(str(b.db) + suffix).unlink(missing_ok=True)
        b.db.write_bytes(data)
        b.ckpt.write_bytes(ckpt)
        s = _open_or_typed_error(b)
        if s is None:
            outcomes["typed error at start-up"] = outcomes.get("typed error at start-up", 0) + 1
            continue
        try:
            try:
                errors = s.consistency_errors()
            except NearDupError:  # the replay itself meets the damage and names it
                outcomes["typed error on replay"] = outcomes.get("typed error on replay", 0) + 1
                continue
            assert errors == [], name
            outcomes["consistent"] = outcomes.get("consistent", 0) + 1
        finally:
            kill(s)
    assert sum(outcomes.values()) == len(cases), outcomes


def _flip(data: bytes, rng: random.Random) -> bytes:
    out = bytearray(data)
    out[rng.randrange(len(out))] ^= 1 << rng.randrange(8)
    return bytes(out)


def test_stores_of_schema_version_one_are_migrated(tmp_path: Path) -> None:
    """A store made before transaction ids and row checks opens, keeps its articles, and
    its old rows are still read (unchecked rows, text still checked against its hash)."""
    from neardup.records import text_hash
    from neardup.store._sql import make_ddl, run_script

    path = tmp_path / "v1.db"
    ddl = (
        make_ddl(seq="INTEGER PRIMARY KEY", integer="INTEGER", blob="BLOB")
        .replace(",\n    row_check INTEGER", "")
        .replace(",\n    txn INTEGER,\n    entry_check INTEGER", "")
    )
    conn = sqlite3.connect(path)
    run_script(ddl, conn.execute)
    conn.execute("INSERT INTO meta VALUES ('schema_version', '1')")
    conn.execute(
        "INSERT INTO articles (id, text_hash, date_us, source, title, text, status, original, "
        "event, fingerprint, signature, decision) VALUES ('old', ?, 0, NULL, NULL, 'old text', "
        "'new', NULL, NULL, 5, X'00', '{}')",
        (text_hash("old text"),),
    )
    conn.execute("INSERT INTO log (op, article_seq, arg) VALUES ('add', 1, '1')")
    conn.commit()
    conn.close()
    store = open_store(str(path))
    try:
        assert store.meta_get("schema_version") == "2"
        assert store.get("old") is not None and store.log_txn(1) not in (None, 0)
        assert [e.fingerprint for e in store.log_since(0)] == [5]
        assert store.identity()
    finally:
        store.close()


def test_checkpoint_written_by_several_processes_at_once_stays_whole(tmp_path: Path) -> None:
    """Two streams on one store checkpoint in turn and at once; the file is always whole."""
    b = Backend("sqlite", str(tmp_path / "store.db"), tmp_path)
    one, two = b.stream(), b.stream()
    try:
        ingest(one, A[:60])
        ingest(two, A[60:])
        one._catch_up()
        one.checkpoint()
        two.checkpoint()
        one.checkpoint()
    finally:
        one.close()
        two.close()
    assert [p.name for p in tmp_path.iterdir() if "ckpt" in p.name] == ["store.ckpt"]
    s = b.stream()
    assert s.stats["restored_from_checkpoint"] == 1 and s.consistency_errors() == []
    s.close()
    assert os.path.exists(b.ckpt)
