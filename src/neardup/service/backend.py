"""The service's adapter over the library: the only module that names the detectors' API.

The HTTP layer (:mod:`neardup.service.app`) talks to :class:`Backend` and gets plain JSON-able
values back; this module maps them onto :class:`neardup.api.NewsIndex` (ingest, similar
stories, events, result-set dedup of stored ids; store of record) and the origin engine of
:mod:`neardup.detect.origin` (seed 004).  It decides nothing itself: it translates
arguments and answers.  Keeping every library name here isolates the HTTP layer from their
exact spelling.

State and consistency:

* The store is the source of truth.  Ingest goes through ``NewsIndex.ingest``, which commits
  before returning, so an answered request is durable.
* Result-set signatures of stored ids (``POST /v1/dedup``) are kept by ``NewsIndex.dedup``
  (:mod:`neardup.detect.stored`) in a bounded cache of ``signature_cache`` entries per
  scheme; they are a pure function of the stored text, so every worker computes the same
  bytes.
* The origin engine is a stream over the store's ingest log (``Store.log_since``): before
  each origin query it catches up with every article added since, in log order, by any
  process.  Every worker therefore holds the same table after the same log prefix, and a
  stored article's report is the one computed when the stream reached it.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from neardup.api import NewsIndex, engine_of, sizes_of
from neardup.detect.origin import OriginConfig, StoreFollower
from neardup.errors import NearDupError, NotFoundError
from neardup.records import Article, from_epoch_us
from neardup.service.settings import ServiceSettings
from neardup.similarity import align_passages

__all__ = ["Backend", "LibraryBackend", "open_backend", "plain"]

log = logging.getLogger("neardup.service")

QUERY_ID = "\x00query"  # the id a pasted text takes in the origin stream (never stored)


def plain(value: Any) -> Any:
    """Records -> JSON-able values (dataclasses, datetimes as ISO-8601 UTC, numpy scalars)."""
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict) and not isinstance(value, type):
        return plain(to_dict())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dt.datetime):
        return value.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return value


class Backend(Protocol):
    """What the HTTP layer needs; every method returns JSON-able values."""

    def ingest(self, articles: Sequence[Article]) -> list[dict[str, Any]]: ...

    def recent(self, limit: int) -> list[dict[str, Any]]: ...

    def document(self, doc_id: str) -> dict[str, Any]: ...

    def similar(self, doc_id: str, limit: int) -> dict[str, Any]: ...

    def dedup(
        self, items: Sequence[tuple[str | None, str | None]], threshold: float | None
    ) -> list[int]:
        """``items``: (stored id, None) or (None, text), in ranking order; ``threshold``:
        ``None`` for the near-duplicate rule, else seed 000's sentence sketch at it."""
        ...

    def dedup_cached(self, ids: Sequence[str], threshold: float | None) -> list[int] | None:
        """:meth:`dedup` of stored ids from signatures already in memory, without touching
        the store (safe on any thread); ``None`` when some id's signature is not held."""
        ...

    def events(self, since: dt.datetime | None, until: dt.datetime | None) -> list[Any]: ...

    def event(self, event_id: str) -> dict[str, Any]: ...

    def origin(self, doc_id: str | None, text: str | None) -> dict[str, Any]: ...

    def align(self, doc_id: str, source_id: str) -> dict[str, Any]: ...

    def health(self) -> dict[str, Any]: ...

    def sizes(self) -> dict[str, tuple[str, float]]: ...

    def close(self) -> None: ...


def _iso_from_us(value: int | None) -> str | None:
    if value is None:
        return None
    return plain(from_epoch_us(value))  # type: ignore[no-any-return]


class LibraryBackend:
    """The real backend over ``neardup.api.NewsIndex`` and the detectors."""

    def __init__(self, settings: ServiceSettings) -> None:
        self.settings = settings
        self.index = NewsIndex(store=settings.store, signature_cache=settings.signature_cache)
        self.store = engine_of(self.index).store
        self._origin: StoreFollower | None = None

    # --- documents -------------------------------------------------------------------------
    def ingest(self, articles: Sequence[Article]) -> list[dict[str, Any]]:
        """One transaction for the whole batch; an article the library refuses (conflicting
        re-ingest, ...) gets ``{"id", "error": {...}}`` in its place and is not stored."""
        results = self.index.ingest_many(list(articles), batch_size=max(1, len(articles)))
        out: list[dict[str, Any]] = []
        for article, result in zip(articles, results, strict=True):
            if isinstance(result, NearDupError):
                if len(articles) == 1:
                    raise result
                out.append(
                    {
                        "id": article.id,
                        "error": {
                            "status": result.http_status,
                            "type": type(result).__name__,
                            "message": str(result),
                        },
                    }
                )
            else:
                out.append(plain(result))
        return out

    def recent(self, limit: int) -> list[dict[str, Any]]:
        last = self.store.last_log_seq()
        seqs: list[int] = []
        start = last
        # The log interleaves "add" with other ops; widen the window until enough adds.
        while len(seqs) < limit and start > 0:
            start = max(0, start - 4 * limit)
            entries = self.store.log_since(start)
            seqs = [e.article_seq for e in entries if e.op == "add"]
        rows = self.store.get_many_by_seq(seqs[-limit:])
        rows.sort(key=lambda r: r.seq, reverse=True)
        return [self._summary(r) for r in rows]

    @staticmethod
    def _summary(row: Any) -> dict[str, Any]:
        return {
            "id": row.id,
            "title": row.title,
            "date": _iso_from_us(row.date_us),
            "source": row.source,
            "status": row.status,
            "original": row.original,
            "event": row.event,
        }

    def _row(self, doc_id: str) -> Any:
        row = self.store.get(doc_id)
        if row is None:
            raise NotFoundError(f"no stored article with id {doc_id!r}")
        return row

    def document(self, doc_id: str) -> dict[str, Any]:
        row = self._row(doc_id)
        try:
            decision = json.loads(row.decision)
        except (TypeError, ValueError):
            decision = None
        duplicates = self.store.members_of(row.id) if row.original is None else []
        return {
            **self._summary(row),
            "text": row.text,
            "decision": decision,
            "duplicates": sorted(d for d in duplicates if d != row.id),
        }

    def similar(self, doc_id: str, limit: int) -> dict[str, Any]:
        """Other coverage of the story, each item with the rule's verdict and the article's
        title, date and source, and the article's own duplicate group apart."""
        self._row(doc_id)
        found = self.index.similar(doc_id, limit)
        group = self.index.duplicates(doc_id)
        rows = {r.id: r for r in self.store.get_many([m.id for m in found] + group)}

        def described(item: dict[str, Any], doc: str) -> dict[str, Any]:
            row = rows.get(doc)
            if row is not None:
                item.update(title=row.title, date=_iso_from_us(row.date_us), source=row.source)
            return item

        return {
            "similar": [described(plain(m), m.id) for m in found],
            "duplicates": [described({"id": d}, d) for d in group],
        }

    # --- result sets (seed 000) -------------------------------------------------------------
    def dedup_cached(self, ids: Sequence[str], threshold: float | None) -> list[int] | None:
        return self.index.dedup_cached(ids, threshold)

    def dedup(
        self, items: Sequence[tuple[str | None, str | None]], threshold: float | None
    ) -> list[int]:
        return self.index.dedup(
            [
                (doc_id or "") if text is None else Article(id=doc_id or f"#{n}", text=text)
                for n, (doc_id, text) in enumerate(items)
            ],
            threshold,
        )

    # --- events (seed 003) ------------------------------------------------------------------
    def events(self, since: dt.datetime | None, until: dt.datetime | None) -> list[Any]:
        return plain(self.index.events(since, until))  # type: ignore[no-any-return]

    def event(self, event_id: str) -> dict[str, Any]:
        report = self.index.event(event_id)
        if report is None:
            raise NotFoundError(f"no event with id {event_id!r}")
        return plain(report)  # type: ignore[no-any-return]

    # --- origin (seed 004) ------------------------------------------------------------------
    def origin(self, doc_id: str | None, text: str | None) -> dict[str, Any]:
        """The row ``neardup origin`` prints for a stored article (computed when the stream
        over the store's log reached it) or for a pasted text (against every stored article,
        storing nothing), plus ``copied`` per segment, ``mostly_original`` and the origins'
        titles for the page."""
        row = self._row(doc_id) if doc_id is not None else None
        follower = self._follower()
        follower.catch_up()
        if row is None:
            report = follower.peek(text or "", QUERY_ID).to_dict()
            report["id"] = None
            report["mostly_original"] = report["dominant_origin"] == QUERY_ID
            for seg in report["segments"]:
                if seg["origin"] == QUERY_ID:
                    seg["origin"] = None
            for key in ("dominant_origin", "most_copied_origin"):
                if report[key] == QUERY_ID:
                    report[key] = None
        else:
            report = follower.report_of(row.id)
            report["mostly_original"] = report["dominant_origin"] == row.id
        own = report["id"]
        for seg in report["segments"]:
            seg["copied"] = seg["origin"] is not None and seg["origin"] != own
        return self._with_titles(report)

    def align(self, doc_id: str, source_id: str) -> dict[str, Any]:
        """The passages of stored article ``doc_id`` taken from stored ``source_id``
        (:func:`neardup.similarity.align_passages`), as character spans on both sides."""
        row, source = self._row(doc_id), self._row(source_id)
        passages = align_passages(source.text or "", row.text or "")
        return {
            "id": row.id,
            "source": source.id,
            "passages": [p.to_dict() for p in passages],
            "origins": {
                source.id: {
                    "title": source.title,
                    "date": _iso_from_us(source.date_us),
                    "source": source.source,
                }
            },
        }

    def _follower(self) -> StoreFollower:
        if self._origin is None:
            config = OriginConfig(memory_bytes=self.settings.origin_memory_bytes)
            self._origin = StoreFollower(self.store, config, state_path=self._origin_state())
        return self._origin

    def _with_titles(self, report: dict[str, Any]) -> dict[str, Any]:
        """Add each origin article's title and date, so the page can name its links."""
        ids = {s["origin"] for s in report.get("segments", []) if s.get("copied")}
        dominant = report.get("dominant_origin")
        if dominant:
            ids.add(dominant)
        rows = self.store.get_many(sorted(ids)) if ids else []
        report["origins"] = {
            r.id: {"title": r.title, "date": _iso_from_us(r.date_us), "source": r.source}
            for r in rows
        }
        return report

    # --- operations -------------------------------------------------------------------------
    def health(self) -> dict[str, Any]:
        return {
            "store": self.store.url.split("?")[0].split("@")[-1],
            "documents": self.store.count(),
        }

    def sizes(self) -> dict[str, tuple[str, float]]:
        held = sizes_of(self.index)
        sizes: dict[str, tuple[str, float]] = {
            "documents": ("Articles in the store.", float(self.store.count())),
            "events": ("Breaking events in the store.", float(held["events"])),
            "signature_cache_entries": (
                "Result-set signatures of stored ids held in memory.",
                float(held["signature_cache_entries"]),
            ),
        }
        sizes["index_entries"] = (
            "Fingerprints in the in-memory dedup index.",
            float(held["index_entries"]),
        )
        if self._origin is not None:
            sizes["origin_documents"] = (
                "Articles the origin engine has streamed.",
                float(self._origin.documents),
            )
        return sizes

    def _origin_state(self) -> Path | None:
        """``<file>.origin.npz`` next to a SQLite file store; none for PostgreSQL/memory."""
        if self.settings.is_postgres:
            return None
        from neardup.store.sqlite import parse_sqlite_url

        path, _ = parse_sqlite_url(self.settings.store)
        return None if path == ":memory:" else Path(path + ".origin.npz")

    def close(self) -> None:
        try:
            if self._origin is not None:
                try:
                    self._origin.save()
                except (OSError, NearDupError) as exc:
                    log.warning("origin state not saved: %s", exc)
        finally:
            self.index.close()


def open_backend(settings: ServiceSettings) -> Backend:
    """The library backend for ``settings.store``."""
    return LibraryBackend(settings)
