"""The Python API of the news stream: :class:`NewsIndex`.

::

    from neardup.api import NewsIndex

    with NewsIndex(store="news.db") as news:
        decision = news.ingest({"id": "a1", "text": "...", "date": "2024-05-01T10:00:00Z"})
        decision.status            # "new" | "duplicate" | "similar"
        news.similar("a1", limit=5)
        news.events(since="2024-05-01", until="2024-05-02")
        news.event(event_id)       # EventReport

``store`` is a path or URL (see :func:`neardup.store.open_store`): a plain path such as
``news.db`` (or ``sqlite:///news.db``, relative to the current folder; ``sqlite:////abs/
news.db`` for an absolute path) for the embedded SQLite store, whose in-memory indexes are
checkpointed next to it as ``<path>.ckpt.npz``; ``postgresql://...`` for PostgreSQL.  The
default, ``neardup.db`` in the current folder, is the one every ``neardup`` command uses.
Every method is serialised by a lock, so one object may be shared by threads.  An ``ingest``
that returned is durable (see ``docs/stream.md``).
"""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Iterable, Mapping
from types import TracebackType
from typing import Any

from neardup.detect.story import EventReport
from neardup.detect.stream import Decision, Match, NewsStream, StreamConfig
from neardup.errors import NearDupError
from neardup.records import Article, epoch_us, parse_date
from neardup.rule import Verdict
from neardup.store import EventRow, open_store
from neardup.store.sqlite import parse_sqlite_url

__all__ = ["NewsIndex"]


def _to_us(value: str | dt.datetime | None, name: str) -> int | None:
    try:
        when = parse_date(value)
    except NearDupError as exc:
        raise type(exc)(f"{name}: {exc}") from exc
    return None if when is None else epoch_us(when)


def default_checkpoint(store: str) -> str | None:
    """``<file>.ckpt.npz`` next to a file-based SQLite store, else ``None``."""
    if store.startswith(("postgresql://", "postgres://")):
        return None
    path, _ = parse_sqlite_url(store)
    return None if path == ":memory:" else path + ".ckpt.npz"


class NewsIndex:
    """Ingest-time dedup, similar news and breaking events over a persistent store.

    ``config``: a :class:`~neardup.detect.stream.StreamConfig` (defaults documented there).
    ``checkpoint``: ``"auto"`` (next to a SQLite file), a path, or ``None`` (rebuild from the
    store's log at every start).
    """

    def __init__(
        self,
        store: str = "neardup.db",
        config: StreamConfig | None = None,
        *,
        checkpoint: str | None = "auto",
        checkpoint_every: int = 200_000,
    ) -> None:
        path = default_checkpoint(store) if checkpoint == "auto" else checkpoint
        self._lock = threading.RLock()
        backend = open_store(store)
        try:
            self._stream = NewsStream(
                backend, config, checkpoint_path=path, checkpoint_every=checkpoint_every
            )
        except BaseException:
            backend.close()
            raise
        self._closed = False

    @property
    def stream(self) -> NewsStream:
        """The underlying engine (for advanced use: store access, consistency checks)."""
        return self._stream

    @property
    def config(self) -> StreamConfig:
        return self._stream.config

    def ingest(self, article: Article | Mapping[str, Any]) -> Decision:
        """Decide and durably store one article; raises ``InputError``/``ConflictError``."""
        with self._lock:
            return self._stream.ingest(article)

    def ingest_many(
        self, articles: Iterable[Article | Mapping[str, Any]], batch_size: int = 256
    ) -> list[Decision | NearDupError]:
        """Ingest in transactions of ``batch_size``; bad articles give their error in place."""
        out: list[Decision | NearDupError] = []
        batch: list[Article | Mapping[str, Any]] = []
        with self._lock:
            for article in articles:
                batch.append(article)
                if len(batch) >= batch_size:
                    out.extend(self._stream.ingest_many(batch))
                    batch = []
            if batch:
                out.extend(self._stream.ingest_many(batch))
        return out

    def similar(
        self,
        article_id: str,
        limit: int = 10,
        *,
        since: str | dt.datetime | None = None,
        until: str | dt.datetime | None = None,
    ) -> list[Match]:
        """Stored articles related to ``article_id``, best first, each with the rule's verdict
        (``duplicate``, ``partial`` or ``similar``), optionally within a date range
        ``[since, until)`` (e.g. the last 30 days)."""
        with self._lock:
            return self._stream.similar(
                article_id, limit, since_us=_to_us(since, "since"), until_us=_to_us(until, "until")
            )

    def decision(self, article_id: str) -> Decision:
        """The decision made when ``article_id`` was ingested (``NotFoundError`` if unknown)."""
        with self._lock:
            return self._stream.decision(article_id)

    def original_of(self, article_id: str) -> str:
        """The current original of the article's duplicate group."""
        with self._lock:
            return self._stream.original_of(article_id)

    def duplicates(self, article_id: str) -> list[str]:
        """The other articles of its duplicate group, original first."""
        with self._lock:
            return self._stream.duplicates(article_id)

    def explain(self, a_id: str, b_id: str) -> Verdict:
        """Why two stored articles get their verdict: the rule's clauses with their margins
        and the shared passages as character spans of both texts."""
        with self._lock:
            return self._stream.explain(a_id, b_id)

    def events(
        self, since: str | dt.datetime | None = None, until: str | dt.datetime | None = None
    ) -> list[EventRow]:
        """Events opened in ``[since, until)`` (article dates), in opening order."""
        with self._lock:
            return self._stream.events(_to_us(since, "since"), _to_us(until, "until"))

    def event(self, event_id: str) -> EventReport:
        """The report of one event (``NotFoundError`` if unknown)."""
        with self._lock:
            return self._stream.event(event_id)

    def __len__(self) -> int:
        with self._lock:
            return len(self._stream)

    def checkpoint(self) -> None:
        """Write the in-memory indexes' checkpoint now."""
        with self._lock:
            self._stream.checkpoint()

    def close(self) -> None:
        """Checkpoint and close the store (idempotent)."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self._stream.close()

    def __enter__(self) -> NewsIndex:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
