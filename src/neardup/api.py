"""The Python API of the news stream: :class:`NewsIndex`.

::

    from neardup.api import NewsIndex

    with NewsIndex(store="news.db") as news:
        decision = news.ingest({"id": "a1", "text": "...", "date": "2024-05-01T10:00:00Z"})
        decision.status            # "new" | "duplicate" | "similar"
        news.similar("a1", limit=5)
        news.events(since="2024-05-01", until="2024-05-02")   # [Event]
        news.event(event_id)       # EventReport
        news.dedup(["a1", "a7", "a9"])   # a ranked result set of stored ids -> positions

``store`` is a path or URL (see :func:`neardup.store.open_store`): a plain path such as
``news.db`` (or ``sqlite:///news.db``, relative to the current folder; ``sqlite:////abs/
news.db`` for an absolute path) for the embedded SQLite store, whose in-memory indexes are
checkpointed next to it as ``<path>.ckpt.npz``; ``postgresql://...`` for PostgreSQL.  The
default, ``neardup.db`` in the current folder, is the one every ``neardup`` command uses.
Every method but :meth:`NewsIndex.dedup_cached` is serialised by a lock, so one object may be
shared by threads.  An ``ingest`` that returned is durable (see ``docs/stream.md``).

Every method returns public records (:class:`~neardup.detect.stream.Decision`,
:class:`~neardup.detect.stream.Match`, :class:`Event`, :class:`~neardup.detect.story.EventReport`,
:class:`~neardup.rule.Verdict`) or plain values, never the store's rows or the engine.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import threading
import warnings
from collections.abc import Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any

from neardup.config import check_int
from neardup.detect.stored import StoredResultSets
from neardup.detect.story import EventReport
from neardup.detect.stream import Decision, Match, NewsStream, StreamConfig
from neardup.detect.stream.judging import PROFILE_CACHE_BYTES
from neardup.errors import NearDupError
from neardup.records import Article, epoch_us, from_epoch_us, parse_date
from neardup.rule import Verdict
from neardup.store import open_store
from neardup.store.sqlite import parse_sqlite_url

__all__ = ["Event", "NewsIndex"]


def _to_us(value: str | dt.datetime | None, name: str) -> int | None:
    try:
        when = parse_date(value)
    except NearDupError as exc:
        raise type(exc)(f"{name}: {exc}") from exc
    return None if when is None else epoch_us(when)


@dataclasses.dataclass(frozen=True, slots=True)
class Event:
    """A breaking event as a list shows it: ``id`` (the id of the article that opened it),
    ``opened_by`` (that article), ``opened_at`` (its date, UTC), the event's readable
    ``title`` and its numbers of ``articles`` and ``sources`` so far.  The whole report, with
    the members judged for copies, is :meth:`NewsIndex.event`."""

    id: str
    opened_by: str
    opened_at: dt.datetime
    title: str | None
    articles: int
    sources: int

    @property
    def opened_at_us(self) -> int:
        """Deprecated: ``opened_at`` in microseconds since the epoch (the store's form)."""
        warnings.warn(
            "Event.opened_at_us is deprecated; use Event.opened_at (a UTC datetime)",
            DeprecationWarning,
            stacklevel=2,
        )
        return _to_us(self.opened_at, "opened_at") or 0


def engine_of(index: NewsIndex) -> NewsStream:
    """The engine behind ``index``, for this package's own interfaces (the service's store
    reads and metrics, consistency checks in tests).  Not public API: its type and methods
    may change without a deprecation."""
    return index._stream


def sizes_of(index: NewsIndex) -> dict[str, int]:
    """Sizes of ``index``'s in-memory state for the package's interfaces (the service's
    metrics): ``events`` (not merged), ``index_entries`` (articles in the candidate indexes)
    and ``signature_cache_entries`` (result-set signatures held for :meth:`NewsIndex.dedup`).
    Not public API."""
    with index._lock:
        return {
            "events": len(index._stream.events()),
            "index_entries": index._stream.indexed,
            "signature_cache_entries": index._result_sets.cached,
        }


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
    store's log at every start).  ``signature_cache``: result-set signatures of stored
    articles kept in memory per scheme for :meth:`dedup` (0: none; they are recomputed from
    the stored text when evicted, so the bound trades time, never answers).
    ``profile_cache_bytes``: memory for stored articles' profiles kept for judging new ones
    (512 MiB; evicted ones are read back from the store: time, never answers).
    """

    def __init__(
        self,
        store: str = "neardup.db",
        config: StreamConfig | None = None,
        *,
        checkpoint: str | None = "auto",
        checkpoint_every: int = 200_000,
        signature_cache: int = 100_000,
        profile_cache_bytes: int = PROFILE_CACHE_BYTES,
    ) -> None:
        check_int("signature_cache", signature_cache, low=0)
        path = default_checkpoint(store) if checkpoint == "auto" else checkpoint
        self._lock = threading.RLock()
        backend = open_store(store)
        try:
            self._stream = NewsStream(
                backend,
                config,
                checkpoint_path=path,
                checkpoint_every=checkpoint_every,
                profile_cache_bytes=profile_cache_bytes,
            )
        except BaseException:
            backend.close()
            raise
        self._result_sets = StoredResultSets(backend, signature_cache)
        self._closed = False

    @property
    def stream(self) -> NewsStream:
        """Deprecated: the engine is internal; every job has a method here."""
        warnings.warn(
            "NewsIndex.stream is deprecated and will be removed: the engine is internal; "
            "use the NewsIndex methods",
            DeprecationWarning,
            stacklevel=2,
        )
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
    ) -> list[Event]:
        """Events opened in ``[since, until)`` (article dates), in opening order, each with
        its title and size (:class:`Event`); events merged into others are left out."""
        with self._lock:
            rows = self._stream.events(_to_us(since, "since"), _to_us(until, "until"))
            out = []
            for row in rows:
                summary = self._stream.event_summary(row.id)
                out.append(
                    Event(
                        id=row.id,
                        opened_by=row.opened_by,
                        opened_at=from_epoch_us(row.opened_at_us),
                        title=summary["title"],
                        articles=summary["articles"],
                        sources=summary["sources"],
                    )
                )
            return out

    def event(self, event_id: str) -> EventReport:
        """The report of one event (``NotFoundError`` if unknown)."""
        with self._lock:
            return self._stream.event(event_id)

    def dedup(self, items: Sequence[str | Article], threshold: float | None = None) -> list[int]:
        """Realtime dedup of a ranked result set over the store (seed 000).

        ``items`` in ranking order: a string is a stored article's id, an
        :class:`~neardup.records.Article` is signed from its text now (never stored).
        Returns :func:`~neardup.detect.resultset.dedup_result_set`'s answer on the items'
        result-set signatures: for each position, the earliest position it
        near-duplicates, or itself (kept); :func:`~neardup.detect.resultset.kept_of` groups
        them.  ``threshold``: ``None`` (the default) for the near-duplicate rule on
        coverage sketches, else seed 000's sentence sketch at that similarity in ``(0, 1]``.
        Stored signatures are kept in memory (``signature_cache``); ``NotFoundError`` names
        unknown ids.  Approximate as the sketches are (docs/resultset.md); deterministic.
        """
        with self._lock:
            return self._result_sets.dedup(items, threshold)

    def dedup_cached(self, ids: Sequence[str], threshold: float | None = None) -> list[int] | None:
        """:meth:`dedup` of stored ids answered from signatures already in memory, or
        ``None`` when one is not held (then call :meth:`dedup`).  Takes no lock and never
        reads the store, so any thread may call it, even while another call runs (an event
        loop can answer from it without waiting)."""
        return self._result_sets.dedup_cached(ids, threshold)

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
