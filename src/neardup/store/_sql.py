"""SQL shared by the SQLite and PostgreSQL stores (written with ``?`` placeholders).

Backends supply a DB-API connection, the DDL, and ``_sql(text)`` which adapts placeholders.
Fingerprints are stored as *signed* 64-bit integers (both databases' INTEGER/BIGINT are
signed) and converted back to unsigned on reading.

Integrity: every article row read is checked here, on the one path all reads take, so every
detector gets it: a stored text must match its stored ``text_hash``
(:func:`neardup.records.text_hash`) and must decode, and the columns fixed at ingest (id,
content hash, date, source, title, status, SimHash, signature, decision) must match the
row's ``row_check`` (xxh3-64, written with the row); a log entry must match its
``entry_check``.  Otherwise :class:`~neardup.errors.StoreCorruptError` names the articles
(or entries) and nothing is answered from them.  Log replay reads each entry's article
through the same check, so a state rebuilt from the log never uses unchecked values.
Opening a store checks its newest :data:`CHECK_AT_OPEN` rows the same way (the cheap
start-up form).  Rows written before schema version 2 have no row check (their text is
still checked against its hash).

Errors caused by the values a caller sent (a NUL or a lone surrogate reaching the driver, a
key too long for an index, an integer out of range) are ``InputError``; only the store's
own failures are ``StoreError``.

Every log entry carries the random id of the write transaction that appended it
(``txn``, 63 bits): a state rebuilt from the log up to entry ``seq`` can prove it belongs
to this store's history by that entry's ``txn`` (:mod:`neardup.store.checkpoint`).
"""

from __future__ import annotations

import secrets
import struct
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import xxhash

from neardup.errors import (
    InputError,
    InputTooLargeError,
    NearDupError,
    StoreCorruptError,
    StoreError,
)
from neardup.records import text_hash
from neardup.store import SCHEMA_VERSION, ArticleRow, EventRow, GroupOriginal, LogEntry

#: Newest articles whose text is checked against its hash when a store is opened.
CHECK_AT_OPEN = 1000

_ARTICLE_COLUMNS = (
    "seq, id, text_hash, date_us, source, title, text, status, original, event, "
    "fingerprint, signature, decision, row_check"
)
# The same for log replay: the article's text is not read (its hash is in the row check).
_JOINED_COLUMNS = (
    "a.seq, a.id, a.text_hash, a.date_us, a.source, a.title, NULL, a.status, a.original, "
    "a.event, a.fingerprint, a.signature, a.decision, a.row_check"
)
_MASK64 = (1 << 64) - 1
# The article columns that may hold undecodable bytes after damage (searched when a read
# fails to decode; the signature too, in case damage turned the blob into text).
_ARTICLE_TEXT_COLUMNS = (
    "id",
    "text_hash",
    "source",
    "title",
    "text",
    "status",
    "original",
    "event",
    "decision",
    "signature",
)

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
    decision TEXT NOT NULL,
    row_check {int}
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
    arg TEXT NOT NULL,
    txn {int},
    entry_check {int}
);
"""

# Version 1 -> 2: the log's transaction ids and the integrity checks ({int}: the backend's
# 64-bit integer type).  Entries written before get one random transaction id together
# (SqlStoreBase._after_migration); their rows and entries stay unchecked (NULL).
MIGRATE_1_TO_2 = """
ALTER TABLE log ADD COLUMN txn {int};
ALTER TABLE log ADD COLUMN entry_check {int};
ALTER TABLE articles ADD COLUMN row_check {int}
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


_ROW_HEADER = struct.Struct("<6i?qQ")  # six text lengths (-1: NULL), date, SimHash
_ENTRY_HEADER = struct.Struct("<iqqi")  # op length, article seq, transaction id, arg length


def row_check(row: ArticleRow) -> int:
    """xxh3-64 (signed) of the article columns fixed at ingest (module docstring): their
    lengths and numbers in a fixed header, then their bytes."""
    texts = (row.id, row.text_hash, row.source, row.title, row.status, row.decision)
    data = [b"" if v is None else v.encode("utf-8", "surrogatepass") for v in texts]
    header = _ROW_HEADER.pack(
        *(-1 if v is None else len(d) for v, d in zip(texts, data, strict=True)),
        row.date_us is None,
        row.date_us or 0,
        row.fingerprint,
    )
    return to_signed(xxhash.xxh3_64_intdigest(b"".join([header, *data, row.signature])))


def entry_check(op: str, article_seq: int, arg: str, txn: int) -> int:
    """xxh3-64 (signed) of a log entry's fields (its seq is the row's key)."""
    op_bytes, arg_bytes = op.encode("utf-8", "surrogatepass"), arg.encode("utf-8", "surrogatepass")
    header = _ENTRY_HEADER.pack(len(op_bytes), article_seq, txn, len(arg_bytes))
    return to_signed(xxhash.xxh3_64_intdigest(header + op_bytes + arg_bytes))


def _entry_ok(r: Sequence[Any]) -> bool:
    """A joined log row (see ``log_since``) names an article and matches its check."""
    if r[6] is None:
        return False
    if r[5] is None:
        return True  # written before entries had checks
    try:
        return entry_check(r[1], int(r[2]), r[3], int(r[4])) == int(r[5])
    except (TypeError, ValueError, AttributeError):  # a value of the wrong type
        return False


def new_txn_id() -> int:
    """A random, non-zero 63-bit transaction id (an identity, not a stage output)."""
    return secrets.randbits(63) | 1


def _in_chunks(values: Sequence[Any], size: int = 500) -> Iterator[tuple[list[Any], str]]:
    """``values`` in lists of at most ``size``, each with its ``?,?,...`` placeholders (an
    ``IN (...)`` list of bounded length: SQLite limits a statement's parameters)."""
    for start in range(0, len(values), size):
        chunk = list(values[start : start + size])
        yield chunk, ",".join("?" * len(chunk))


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
    try:
        return EventRow(
            id=row[0], opened_by=row[1], opened_at_us=int(row[2]), opened_seq=int(row[3])
        )
    except (TypeError, ValueError) as exc:
        raise StoreCorruptError(f"stored event {row[0]!r} is damaged: {exc}") from exc


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
    _txn: int = 0  # the open write transaction's id (0: none open)

    @property
    def _label(self) -> str:
        raise NotImplementedError

    def _sql(self, text: str) -> str:
        return text

    def _exec(self, text: str, params: Sequence[Any] = ()) -> Any:
        try:
            return self._conn.execute(self._sql(text), tuple(params))
        except (self._db_error, UnicodeError, OverflowError) as exc:
            raise self._error(exc) from exc

    def _fetchall(self, text: str, params: Sequence[Any] = ()) -> list[Any]:
        """Execute and fetch every row; errors while fetching are wrapped too."""
        cursor = self._exec(text, params)
        try:
            return list(cursor.fetchall())
        except (self._db_error, UnicodeError, OverflowError) as exc:
            raise self._error(exc) from exc

    def _fetchone(self, text: str, params: Sequence[Any] = ()) -> Any:
        cursor = self._exec(text, params)
        try:
            return cursor.fetchone()
        except (self._db_error, UnicodeError, OverflowError) as exc:
            raise self._error(exc) from exc

    def _error(self, exc: BaseException) -> NearDupError:
        """The neardup error for a driver error: ``InputError`` when the caller's values
        caused it (see :meth:`_input_problem`), else ``StoreError``."""
        if isinstance(exc, UnicodeEncodeError | OverflowError):
            return InputError(f"the store cannot hold a value sent: {exc}")
        if isinstance(exc, UnicodeDecodeError):
            return StoreCorruptError(f"{self._label}: stored text does not decode: {exc}")
        kind = self._input_problem(exc)
        if kind == "too_large":
            return InputTooLargeError(f"a value sent is too large for the store: {exc}")
        if kind == "invalid":
            return InputError(f"the store refused a value sent: {exc}")
        if kind == "corrupt":
            return StoreCorruptError(f"{self._label}: {exc}")
        return StoreError(f"{self._label}: {exc}")

    def _input_problem(self, exc: BaseException) -> str | None:
        """``"invalid"`` / ``"too_large"`` when a driver error was caused by the values sent,
        ``"corrupt"`` when stored data is damaged, else ``None`` (the backend decides)."""
        return None

    def _insert_returning_seq(self, text: str, params: Sequence[Any]) -> int:
        raise NotImplementedError

    # --- schema version -----------------------------------------------------------------
    def _check_version(self, migrations: Mapping[int, str], execute: Callable[[str], Any]) -> None:
        """Write the schema version and the store's uuid into a new store, refuse a newer
        one, migrate an older one forward (``migrations[v]`` upgrades version v to v + 1,
        run with ``execute``; :meth:`_after_migration` finishes each step in Python)."""
        found = self.meta_get("schema_version")
        if found is None:
            self.meta_set("schema_version", str(SCHEMA_VERSION))
            self._ensure_identity()
            return
        try:
            version = int(found)
        except ValueError as exc:
            raise StoreCorruptError(
                f"{self._label}: schema version {found!r} is not a number"
            ) from exc
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"store schema version {version} is newer than this neardup supports "
                f"({SCHEMA_VERSION}); upgrade neardup"
            )
        while version < SCHEMA_VERSION:
            run_script(migrations[version], execute)
            self._after_migration(version)
            version += 1
            self.meta_set("schema_version", str(version))
        self._ensure_identity()

    def _after_migration(self, version: int) -> None:
        if version == 1:
            # One random id for every entry written before transaction ids existed: two
            # copies migrated apart get different ones, so neither trusts the other's states.
            self._exec("UPDATE log SET txn = ? WHERE txn IS NULL", (new_txn_id(),))

    def _ensure_identity(self) -> None:
        if self.meta_get("store_uuid") is None:
            self.meta_set("store_uuid", secrets.token_hex(16))

    def identity(self) -> str:
        """The store's uuid, made when it was created: a copy of the store has the same one,
        another store a different one."""
        found = self.meta_get("store_uuid")
        if found is None:
            with self.write():
                self._ensure_identity()
                found = self.meta_get("store_uuid")
        return str(found)

    def check_recent(self, limit: int | None = None) -> None:
        """Read the newest ``limit`` (default :data:`CHECK_AT_OPEN`) articles through the
        checked row path (the cheap start-up form of the integrity check):
        ``StoreCorruptError`` names damaged ones."""
        limit = CHECK_AT_OPEN if limit is None else limit
        self._select_articles("ORDER BY seq DESC LIMIT ?", (limit,))

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
            self._txn = new_txn_id()
            try:
                yield
            except BaseException as exc:
                self._depth = 0
                self._txn = 0
                self._rollback(tx, exc)
                raise
            self._depth = 0
            self._txn = 0
            self._commit(tx)

    # --- meta ---------------------------------------------------------------------------
    def meta_get(self, key: str) -> str | None:
        row = self._fetchone("SELECT value FROM meta WHERE key = ?", (key,))
        return None if row is None else str(row[0])

    def meta_set(self, key: str, value: str) -> None:
        self._exec(
            "INSERT INTO meta (key, value) VALUES (?, ?) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    # --- articles -----------------------------------------------------------------------
    def _select_articles(self, where: str, params: Sequence[Any]) -> list[ArticleRow]:
        """``SELECT`` article rows (``where``: the rest of the statement), checked."""
        text = f"SELECT {_ARTICLE_COLUMNS} FROM articles {where}"
        try:
            rows = self._fetchall(text, params)
        except StoreCorruptError as exc:
            raise StoreCorruptError(self._undecodable(where, params) or str(exc)) from exc
        return self._articles(rows)

    def _articles(self, rows: Sequence[Sequence[Any]]) -> list[ArticleRow]:
        """Rows (:data:`_ARTICLE_COLUMNS`) -> :class:`ArticleRow` s; ``StoreCorruptError``
        naming every article whose row check or text hash does not match."""
        out: list[ArticleRow] = []
        bad: list[str] = []
        for r in rows:
            try:
                article = _article(r)
                damaged = (r[13] is not None and row_check(article) != int(r[13])) or (
                    article.text is not None and text_hash(article.text) != article.text_hash
                )
            except (TypeError, ValueError) as exc:  # a value of the wrong type or size
                article, damaged = None, True
                bad.append(f"seq {r[0]!r} ({exc})")
            if article is None:
                continue
            if damaged:
                bad.append(repr(article.id))
            out.append(article)
        if bad:
            more = f" and {len(bad) - 10} more" if len(bad) > 10 else ""
            raise StoreCorruptError(
                f"{self._label}: stored article(s) {', '.join(bad[:10])}{more} fail their "
                "integrity check (the store is damaged); restore the store from a backup"
            )
        return out

    def _undecodable(self, where: str, params: Sequence[Any]) -> str | None:
        """A message naming the articles of ``where`` with text that does not decode as
        UTF-8 (only a damaged SQLite file holds such bytes), or ``None``."""
        return None

    def get(self, article_id: str) -> ArticleRow | None:
        rows = self._select_articles("WHERE id = ?", (article_id,))
        return rows[0] if rows else None

    def get_many_by_seq(self, seqs: Sequence[int]) -> list[ArticleRow]:
        out: list[ArticleRow] = []
        for chunk, marks in _in_chunks([int(s) for s in seqs]):
            out.extend(self._select_articles(f"WHERE seq IN ({marks})", chunk))
        order = {s: i for i, s in enumerate(seqs)}
        out.sort(key=lambda a: order.get(a.seq, 0))
        return out

    def get_many(self, article_ids: Sequence[str]) -> list[ArticleRow]:
        out: list[ArticleRow] = []
        for chunk, marks in _in_chunks(article_ids):
            out.extend(self._select_articles(f"WHERE id IN ({marks})", chunk))
        return out

    def insert_article(self, row: ArticleRow) -> int:
        return self._insert_returning_seq(
            "INSERT INTO articles (id, text_hash, date_us, source, title, text, status, "
            "original, event, fingerprint, signature, decision, row_check) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
                row_check(row),
            ),
        )

    def set_original(self, article_ids: Sequence[str], original: str | None) -> None:
        for article_id in article_ids:
            self._exec("UPDATE articles SET original = ? WHERE id = ?", (original, article_id))

    def members_of(self, original: str) -> list[str]:
        rows = self._fetchall(
            "SELECT id FROM articles WHERE original = ? ORDER BY seq", (original,)
        )
        return [str(r[0]) for r in rows]

    def group_originals(self, article_ids: Sequence[str]) -> list[GroupOriginal]:
        out: dict[str, GroupOriginal] = {}
        for chunk, marks in _in_chunks(article_ids):
            rows = self._fetchall(
                "SELECT o.seq, o.id, o.date_us FROM articles a JOIN articles o "
                f"ON o.id = COALESCE(a.original, a.id) WHERE a.id IN ({marks}) "
                "AND o.original IS NULL",
                chunk,
            )
            for seq, article_id, date_us in rows:
                date = None if date_us is None else int(date_us)
                out[str(article_id)] = GroupOriginal(int(seq), str(article_id), date)
        return [out[i] for i in sorted(out)]

    def set_event(self, seqs: Sequence[int], event_id: str) -> None:
        for seq in seqs:
            self._exec("UPDATE articles SET event = ? WHERE seq = ?", (event_id, int(seq)))

    def count(self) -> int:
        return int(self._fetchone("SELECT COUNT(*) FROM articles")[0])

    def iter_articles(self) -> Iterator[ArticleRow]:
        last = 0
        while True:
            rows = self._select_articles("WHERE seq > ? ORDER BY seq LIMIT 1000", (last,))
            if not rows:
                return
            yield from rows
            last = rows[-1].seq

    # --- events -------------------------------------------------------------------------
    def insert_event(self, event: EventRow) -> None:
        self._exec(
            "INSERT INTO events (id, opened_by, opened_at_us, opened_seq) VALUES (?, ?, ?, ?)",
            (event.id, event.opened_by, event.opened_at_us, event.opened_seq),
        )

    def get_event(self, event_id: str) -> EventRow | None:
        row = self._fetchone(
            "SELECT id, opened_by, opened_at_us, opened_seq FROM events WHERE id = ?", (event_id,)
        )
        return None if row is None else _event(row)

    def events(self, since_us: int | None, until_us: int | None) -> list[EventRow]:
        low = since_us if since_us is not None else -(1 << 62)
        high = until_us if until_us is not None else 1 << 62
        rows = self._fetchall(
            "SELECT id, opened_by, opened_at_us, opened_seq FROM events "
            "WHERE opened_at_us >= ? AND opened_at_us < ? ORDER BY opened_at_us, id",
            (low, high),
        )
        return [_event(r) for r in rows]

    def event_articles(self, event_id: str) -> list[ArticleRow]:
        return self._select_articles("WHERE event = ? ORDER BY date_us, id", (event_id,))

    # --- log ----------------------------------------------------------------------------
    def append_log(self, op: str, article_seq: int, arg: str) -> int:
        # Outside a write() (autocommit) each entry is its own transaction.
        txn = self._txn or new_txn_id()
        return self._insert_returning_seq(
            "INSERT INTO log (op, article_seq, arg, txn, entry_check) VALUES (?, ?, ?, ?, ?)",
            (op, article_seq, arg, txn, entry_check(op, article_seq, arg, txn)),
        )

    def log_txn(self, seq: int) -> int | None:
        """The id of the transaction that appended log entry ``seq`` (``None``: no entry)."""
        row = self._fetchone("SELECT txn FROM log WHERE seq = ?", (int(seq),))
        return None if row is None else int(row[0] or 0)

    def log_since(self, seq: int, limit: int | None = None) -> list[LogEntry]:
        """Entries after ``seq`` in order, each checked, with its article's SimHash and date
        read through the article's row check (``StoreCorruptError`` on any mismatch, or
        for an entry whose article is missing)."""
        text = (
            f"SELECT l.seq, l.op, l.article_seq, l.arg, l.txn, l.entry_check, {_JOINED_COLUMNS} "
            "FROM log l LEFT JOIN articles a ON a.seq = l.article_seq WHERE l.seq > ? "
            "ORDER BY l.seq"
        )
        params: list[Any] = [seq]
        if limit is not None:
            text += " LIMIT ?"
            params.append(limit)
        try:
            rows = self._fetchall(text, params)
        except StoreCorruptError as exc:
            where = "WHERE seq IN (SELECT article_seq FROM log WHERE seq > ?)"
            raise StoreCorruptError(self._undecodable(where, (seq,)) or str(exc)) from exc
        bad = [r[0] for r in rows if not _entry_ok(r)]
        if bad:
            raise StoreCorruptError(
                f"{self._label}: log entr(ies) {bad[:10]} fail their integrity check or name "
                "no stored article (the store is damaged); restore the store from a backup"
            )
        articles = self._articles([r[6:] for r in rows])
        return [
            LogEntry(int(r[0]), r[1], int(r[2]), r[3], a.fingerprint, a.date_us)
            for r, a in zip(rows, articles, strict=True)
        ]

    def last_log_seq(self) -> int:
        row = self._fetchone("SELECT MAX(seq) FROM log")
        return 0 if row is None or row[0] is None else int(row[0])
