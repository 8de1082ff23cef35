"""Persistent stores of the news stream: articles, signatures, decisions, events and a log.

One interface (:class:`Store`), two backends:

* :class:`~neardup.store.sqlite.SQLiteStore`: the embedded default, one file in WAL mode.
* :class:`~neardup.store.postgres.PostgresStore`: PostgreSQL (psycopg 3) for deployments with
  several service processes.

Open either with :func:`open_store` from a URL or a path: ``news.db`` or ``sqlite:///news.db``
(a SQLite file relative to the current folder), ``sqlite:////var/lib/news.db`` (an absolute
path: four slashes), ``:memory:`` (SQLite, for tests) or
``postgresql://user@host/db?schema=name``.

The store is the single source of truth.  Every change that in-memory indexes mirror is also
appended to an ordered *log* (``add``, ``unindex``, ``event``), so a process can rebuild its
indexes from the log, and catch up with what other processes wrote, by replaying the entries
after the last one it applied.  Writers serialise through :meth:`Store.write` (SQLite: ``BEGIN
IMMEDIATE``; PostgreSQL: a transaction-scoped advisory lock), which makes the
check-then-insert of an ingest atomic: decisions are the same as with one process.

Schema versioning: ``meta.schema_version`` is written at creation; opening a store with a
newer version than this code knows raises :class:`~neardup.errors.StoreError`; older versions
are migrated forward by the backend's ``MIGRATIONS`` (version 2 added the log's transaction
ids).

Integrity: every log entry records the random id of the transaction that appended it
(:meth:`Store.log_txn`), and the store has a uuid made at creation (:meth:`Store.identity`):
together they pin a state rebuilt from the log to this store's exact history
(:mod:`neardup.store.checkpoint`).  Every article row read is checked against its stored
text hash (``StoreCorruptError`` otherwise, naming the articles); the lookups of a few
mutable columns (``members_of``, ``originals_of``) read no more than those columns.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from typing import NamedTuple, Protocol, runtime_checkable

from neardup.errors import ConfigError

__all__ = [
    "SCHEMA_VERSION",
    "ArticleRow",
    "EventRow",
    "GroupOriginal",
    "LogEntry",
    "Store",
    "open_store",
]

SCHEMA_VERSION = 2


@dataclasses.dataclass(frozen=True, slots=True)
class ArticleRow:
    """One stored article with its signatures and the decision made when it was ingested.

    ``date_us`` is microseconds since the Unix epoch (UTC) or ``None``; ``fingerprint`` is the
    64-bit SimHash as an unsigned int; ``signature`` the verification signature's bytes
    (:meth:`neardup.sketch.base.Signature.to_bytes`); ``original`` the *current* original of
    the article's duplicate group (``None`` for an original); ``decision`` the JSON of the
    decision returned at ingest (returned again, unchanged, on an idempotent re-ingest).
    """

    seq: int
    id: str
    text_hash: str
    date_us: int | None
    source: str | None
    title: str | None
    text: str | None
    status: str
    original: str | None
    event: str | None
    fingerprint: int
    signature: bytes
    decision: str


@dataclasses.dataclass(frozen=True, slots=True)
class EventRow:
    """A breaking event: its id (the id of the article that opened it) and opening time."""

    id: str
    opened_by: str
    opened_at_us: int
    opened_seq: int


@dataclasses.dataclass(frozen=True, slots=True)
class LogEntry:
    """One log entry: ``op`` in ``add`` (arg ``"1"`` when indexed as canonical, else ``"0"``),
    ``unindex`` (removed from the dedup index) or ``event`` (arg: the event id), with the
    article's fingerprint and date for replay."""

    seq: int
    op: str
    article_seq: int
    arg: str
    fingerprint: int
    date_us: int | None


class GroupOriginal(NamedTuple):
    """The original of a duplicate group, as the stream's grouping reads it."""

    seq: int
    id: str
    date_us: int | None


@runtime_checkable
class Store(Protocol):
    """What the stream needs from a store.  All methods raise ``StoreError`` on I/O failure,
    ``StoreCorruptError`` on damaged data and ``InputError`` for values the store cannot
    hold (never ``StoreError`` for those)."""

    url: str

    def write(self) -> AbstractContextManager[None]:
        """An exclusive write transaction: serialised with every other writer, committed
        (durably, per the backend's setting) on normal exit, rolled back on an exception."""
        ...

    def meta_get(self, key: str) -> str | None: ...

    def meta_set(self, key: str, value: str) -> None: ...

    def get(self, article_id: str) -> ArticleRow | None: ...

    def get_many_by_seq(self, seqs: Sequence[int]) -> list[ArticleRow]: ...

    def get_many(self, article_ids: Sequence[str]) -> list[ArticleRow]: ...

    def insert_article(self, row: ArticleRow) -> int:
        """Insert ``row`` (its ``seq`` is ignored) and return the assigned seq."""
        ...

    def set_original(self, article_ids: Sequence[str], original: str | None) -> None: ...

    def members_of(self, original: str) -> list[str]:
        """Ids of the articles whose current original is ``original``."""
        ...

    def group_originals(self, article_ids: Sequence[str]) -> list[GroupOriginal]:
        """The current originals of the duplicate groups of the stored articles named (an
        original is its own group's), once each, by id; unknown ids left out.  Reads three
        columns, not the rows' texts and signatures."""
        ...

    def set_event(self, seqs: Sequence[int], event_id: str) -> None: ...

    def insert_event(self, event: EventRow) -> None: ...

    def get_event(self, event_id: str) -> EventRow | None: ...

    def events(self, since_us: int | None, until_us: int | None) -> list[EventRow]: ...

    def event_articles(self, event_id: str) -> list[ArticleRow]:
        """The event's articles in time order (date, then id)."""
        ...

    def append_log(self, op: str, article_seq: int, arg: str) -> int: ...

    def log_since(self, seq: int, limit: int | None = None) -> list[LogEntry]: ...

    def last_log_seq(self) -> int: ...

    def log_txn(self, seq: int) -> int | None:
        """The random id of the transaction that appended log entry ``seq`` (``None``: no
        such entry).  Equal ids at equal ``seq`` mean the same history up to that entry."""
        ...

    def identity(self) -> str:
        """The store's uuid, made at creation (a copy of the store keeps it)."""
        ...

    def check_recent(self, limit: int | None = None) -> None:
        """Check the newest ``limit`` articles (default 1,000) as every read does
        (``StoreCorruptError`` naming the damaged ones); run when a store is opened."""
        ...

    def count(self) -> int: ...

    def iter_articles(self) -> Iterator[ArticleRow]: ...

    def close(self) -> None: ...


def open_store(url: str, *, create: bool = True) -> Store:
    """Open (and by default create) the store named by ``url``.

    A plain path, ``sqlite:///relative/path.db``, ``sqlite:////absolute/path.db`` or
    ``:memory:`` open the SQLite backend (see
    :func:`~neardup.store.sqlite.parse_sqlite_url`); ``postgresql://`` / ``postgres://`` the
    PostgreSQL backend.  SQLite URLs take ``?synchronous=normal|full`` (default ``normal``,
    see docs/stream.md).
    """
    if not isinstance(url, str) or not url:
        raise ConfigError(f"store must be a non-empty URL or path, got {url!r}")
    if url.startswith(("postgresql://", "postgres://")):
        from neardup.store.postgres import PostgresStore

        return PostgresStore(url, create=create)
    if "://" in url and not url.startswith("sqlite://"):
        scheme = url.split("://", 1)[0]
        raise ConfigError(
            f"unknown store scheme {scheme!r}: use sqlite:///path or postgresql://..."
        )
    from neardup.store.sqlite import SQLiteStore

    return SQLiteStore(url, create=create)
