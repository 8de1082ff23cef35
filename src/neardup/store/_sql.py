"""SQL shared by the SQLite and PostgreSQL stores (written with ``?`` placeholders).

Backends supply a DB-API connection, the DDL, and ``_sql(text)`` which adapts placeholders.
Fingerprints are stored as *signed* 64-bit integers (both databases' INTEGER/BIGINT are
signed) and converted back to unsigned on reading.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from neardup.errors import StoreError
from neardup.store import SCHEMA_VERSION, ArticleRow, EventRow, LogEntry

_ARTICLE_COLUMNS = (
    "seq, id, text_hash, date_us, source, title, text, status, original, event, "
    "fingerprint, signature, decision"
)
_MASK64 = (1 << 64) - 1

# The tables of both backends; only the column types differ ({seq}: the auto-numbered key,
# {int}: a 64-bit integer, {blob}: bytes).
_DDL_TEMPLATE = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS articles (
    seq {seq},
    id TEXT NOT NULL UNIQUE,
    text_hash TEXT NOT NULL,
    date_us {int},
    source TEXT,
    title TEXT,
    text TEXT,
    status TEXT NOT NULL,
    original TEXT,
    event TEXT,
    fingerprint {int} NOT NULL,
    signature {blob} NOT NULL,
    decision TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS articles_original ON articles (original) WHERE original IS NOT NULL;
CREATE INDEX IF NOT EXISTS articles_event ON articles (event) WHERE event IS NOT NULL;
CREATE TABLE IF NOT EXISTS events (
    id TEXT PRIMARY KEY,
    opened_by TEXT NOT NULL,
    opened_at_us {int} NOT NULL,
    opened_seq {int} NOT NULL
);
CREATE TABLE IF NOT EXISTS log (
    seq {seq},
    op TEXT NOT NULL,
    article_seq {int} NOT NULL,
    arg TEXT NOT NULL
);
"""


def make_ddl(*, seq: str, integer: str, blob: str) -> str:
    """The schema's DDL with a backend's column types (statements separated by ``;``)."""
    return _DDL_TEMPLATE.format(seq=seq, int=integer, blob=blob)


def run_script(script: str, execute: Callable[[str], Any]) -> None:
    """Run each ``;``-separated statement of ``script`` with ``execute``."""
    for statement in script.split(";"):
        if statement.strip():
            execute(statement)


def to_signed(value: int) -> int:
    """Unsigned 64-bit -> signed 64-bit (two's complement)."""
    return value - (1 << 64) if value >= 1 << 63 else value


def to_unsigned(value: int) -> int:
    """Signed 64-bit -> unsigned 64-bit."""
    return value & _MASK64


def _article(row: Sequence[Any]) -> ArticleRow:
    return ArticleRow(
        seq=int(row[0]),
        id=row[1],
        text_hash=row[2],
        date_us=row[3],
        source=row[4],
        title=row[5],
        text=row[6],
        status=row[7],
        original=row[8],
        event=row[9],
        fingerprint=to_unsigned(int(row[10])),
        signature=bytes(row[11]),
        decision=row[12],
    )


def _event(row: Sequence[Any]) -> EventRow:
    return EventRow(id=row[0], opened_by=row[1], opened_at_us=int(row[2]), opened_seq=int(row[3]))


class SqlStoreBase:
    """The queries, schema versioning and the re-entrant write transaction.

    Subclasses provide ``_conn`` (a DB-API connection), ``_db_error`` (the driver's error
    class, wrapped in :class:`~neardup.errors.StoreError`), ``_label`` (names the store in
    messages), ``_sql`` (placeholder adaptation), ``_insert_returning_seq`` and the
    transaction hooks ``_begin``, ``_rollback`` and ``_commit``.
    """

    url: str
    _conn: Any
    _db_error: type[BaseException]
    _lock: Any
    _depth: int

    @property
    def _label(self) -> str:
        raise NotImplementedError

    def _sql(self, text: str) -> str:
        return text

    def _exec(self, text: str, params: Sequence[Any] = ()) -> Any:
        try:
            return self._conn.execute(self._sql(text), tuple(params))
        except self._db_error as exc:
            raise StoreError(f"{self._label}: {exc}") from exc

    def _insert_returning_seq(self, text: str, params: Sequence[Any]) -> int:
        raise NotImplementedError

    # --- schema version -----------------------------------------------------------------
    def _check_version(self, migrations: Mapping[int, str], execute: Callable[[str], Any]) -> None:
        """Write the schema version into a new store, refuse a newer one, migrate an older
        one forward (``migrations[v]`` upgrades version v to v + 1, run with ``execute``)."""
        found = self.meta_get("schema_version")
        if found is None:
            self.meta_set("schema_version", str(SCHEMA_VERSION))
            return
        version = int(found)
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"store schema version {version} is newer than this neardup supports "
                f"({SCHEMA_VERSION}); upgrade neardup"
            )
        while version < SCHEMA_VERSION:
            run_script(migrations[version], execute)
            version += 1
            self.meta_set("schema_version", str(version))

    # --- transactions -------------------------------------------------------------------
    def _begin(self) -> Any:
        """Open a transaction; returns what ``_rollback``/``_commit`` need."""
        raise NotImplementedError

    def _rollback(self, tx: Any, exc: BaseException) -> None:
        """Roll back after ``exc``; may raise a wrapped error instead of re-raising it."""
        raise NotImplementedError

    def _commit(self, tx: Any) -> None:
        raise NotImplementedError

    @contextmanager
    def write(self) -> Iterator[None]:
        """One write transaction (re-entrant: inner calls join the outer one).

        SQLite: ``BEGIN IMMEDIATE`` ... ``COMMIT``; PostgreSQL: a transaction holding the
        store's advisory lock.
        """
        with self._lock:
            if self._depth:
                self._depth += 1
                try:
                    yield
                finally:
                    self._depth -= 1
                return
            tx = self._begin()
            self._depth = 1
            try:
                yield
            except BaseException as exc:
                self._depth = 0
                self._rollback(tx, exc)
                raise
            self._depth = 0
            self._commit(tx)

    # --- meta ---------------------------------------------------------------------------
    def meta_get(self, key: str) -> str | None:
        row = self._exec("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def meta_set(self, key: str, value: str) -> None:
        self._exec(
            "INSERT INTO meta (key, value) VALUES (?, ?) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    # --- articles -----------------------------------------------------------------------
    def get(self, article_id: str) -> ArticleRow | None:
        row = self._exec(
            f"SELECT {_ARTICLE_COLUMNS} FROM articles WHERE id = ?", (article_id,)
        ).fetchone()
        return None if row is None else _article(row)

    def get_many_by_seq(self, seqs: Sequence[int]) -> list[ArticleRow]:
        out: list[ArticleRow] = []
        for start in range(0, len(seqs), 500):
            chunk = [int(s) for s in seqs[start : start + 500]]
            marks = ",".join("?" * len(chunk))
            rows = self._exec(
                f"SELECT {_ARTICLE_COLUMNS} FROM articles WHERE seq IN ({marks})", chunk
            ).fetchall()
            out.extend(_article(r) for r in rows)
        order = {s: i for i, s in enumerate(seqs)}
        out.sort(key=lambda a: order.get(a.seq, 0))
        return out

    def get_many(self, article_ids: Sequence[str]) -> list[ArticleRow]:
        out: list[ArticleRow] = []
        for start in range(0, len(article_ids), 500):
            chunk = list(article_ids[start : start + 500])
            marks = ",".join("?" * len(chunk))
            rows = self._exec(
                f"SELECT {_ARTICLE_COLUMNS} FROM articles WHERE id IN ({marks})", chunk
            ).fetchall()
            out.extend(_article(r) for r in rows)
        return out

    def insert_article(self, row: ArticleRow) -> int:
        return self._insert_returning_seq(
            "INSERT INTO articles (id, text_hash, date_us, source, title, text, status, "
            "original, event, fingerprint, signature, decision) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                row.id,
                row.text_hash,
                row.date_us,
                row.source,
                row.title,
                row.text,
                row.status,
                row.original,
                row.event,
                to_signed(row.fingerprint),
                row.signature,
                row.decision,
            ),
        )

    def set_original(self, article_ids: Sequence[str], original: str | None) -> None:
        for article_id in article_ids:
            self._exec("UPDATE articles SET original = ? WHERE id = ?", (original, article_id))

    def members_of(self, original: str) -> list[str]:
        rows = self._exec(
            "SELECT id FROM articles WHERE original = ? ORDER BY seq", (original,)
        ).fetchall()
        return [str(r[0]) for r in rows]

    def set_event(self, seqs: Sequence[int], event_id: str) -> None:
        for seq in seqs:
            self._exec("UPDATE articles SET event = ? WHERE seq = ?", (event_id, int(seq)))

    def count(self) -> int:
        return int(self._exec("SELECT COUNT(*) FROM articles").fetchone()[0])

    def iter_articles(self) -> Iterator[ArticleRow]:
        last = 0
        while True:
            rows = self._exec(
                f"SELECT {_ARTICLE_COLUMNS} FROM articles WHERE seq > ? ORDER BY seq LIMIT 1000",
                (last,),
            ).fetchall()
            if not rows:
                return
            for r in rows:
                yield _article(r)
            last = int(rows[-1][0])

    # --- events -------------------------------------------------------------------------
    def insert_event(self, event: EventRow) -> None:
        self._exec(
            "INSERT INTO events (id, opened_by, opened_at_us, opened_seq) VALUES (?, ?, ?, ?)",
            (event.id, event.opened_by, event.opened_at_us, event.opened_seq),
        )

    def get_event(self, event_id: str) -> EventRow | None:
        row = self._exec(
            "SELECT id, opened_by, opened_at_us, opened_seq FROM events WHERE id = ?", (event_id,)
        ).fetchone()
        return None if row is None else _event(row)

    def events(self, since_us: int | None, until_us: int | None) -> list[EventRow]:
        low = since_us if since_us is not None else -(1 << 62)
        high = until_us if until_us is not None else 1 << 62
        rows = self._exec(
            "SELECT id, opened_by, opened_at_us, opened_seq FROM events "
            "WHERE opened_at_us >= ? AND opened_at_us < ? ORDER BY opened_at_us, id",
            (low, high),
        ).fetchall()
        return [_event(r) for r in rows]

    def event_articles(self, event_id: str) -> list[ArticleRow]:
        rows = self._exec(
            f"SELECT {_ARTICLE_COLUMNS} FROM articles WHERE event = ? ORDER BY date_us, id",
            (event_id,),
        ).fetchall()
        return [_article(r) for r in rows]

    # --- log ----------------------------------------------------------------------------
    def append_log(self, op: str, article_seq: int, arg: str) -> int:
        return self._insert_returning_seq(
            "INSERT INTO log (op, article_seq, arg) VALUES (?, ?, ?)", (op, article_seq, arg)
        )

    def log_since(self, seq: int, limit: int | None = None) -> list[LogEntry]:
        text = (
            "SELECT l.seq, l.op, l.article_seq, l.arg, a.fingerprint, a.date_us FROM log l "
            "JOIN articles a ON a.seq = l.article_seq WHERE l.seq > ? ORDER BY l.seq"
        )
        params: list[Any] = [seq]
        if limit is not None:
            text += " LIMIT ?"
            params.append(limit)
        rows = self._exec(text, params).fetchall()
        return [
            LogEntry(int(r[0]), r[1], int(r[2]), r[3], to_unsigned(int(r[4])), r[5]) for r in rows
        ]

    def last_log_seq(self) -> int:
        row = self._exec("SELECT MAX(seq) FROM log").fetchone()
        return 0 if row is None or row[0] is None else int(row[0])
