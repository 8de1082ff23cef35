"""SQL shared by the SQLite and PostgreSQL stores (written with ``?`` placeholders).

Backends supply a DB-API connection, the DDL, and ``_sql(text)`` which adapts placeholders.
Fingerprints are stored as *signed* 64-bit integers (both databases' INTEGER/BIGINT are
signed) and converted back to unsigned on reading.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from neardup.store import ArticleRow, EventRow, LogEntry

_ARTICLE_COLUMNS = (
    "seq, id, text_hash, date_us, source, title, text, status, original, event, "
    "fingerprint, signature, decision"
)
_MASK64 = (1 << 64) - 1


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
    """The queries; subclasses provide ``_conn``, ``_sql`` and transaction handling."""

    url: str
    _conn: Any

    def _sql(self, text: str) -> str:
        return text

    def _exec(self, text: str, params: Sequence[Any] = ()) -> Any:
        return self._conn.execute(self._sql(text), tuple(params))

    def _insert_returning_seq(self, text: str, params: Sequence[Any]) -> int:
        raise NotImplementedError

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
