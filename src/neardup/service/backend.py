"""The service's adapter over the library: the only module that names the detectors' API.

The HTTP layer (:mod:`neardup.service.app`) talks to :class:`Backend` and gets plain JSON-able
values back; this module maps them onto :class:`neardup.api.NewsIndex` (ingest, similar
stories, events; store of record), :func:`neardup.detect.resultset.dedup_result_set` with
sentence signatures (seed 000) and the origin engine of :mod:`neardup.detect.origin` (seed
004).  Keeping every library name here isolates the HTTP layer from their exact spelling.

State and consistency:

* The store is the source of truth.  Ingest goes through ``NewsIndex.ingest``, which commits
  before returning, so an answered request is durable.
* Sentence signatures of stored ids (``POST /v1/dedup``) are computed from the stored text on
  first use (or taken from the store when its signature is a sentence sketch) and kept in a
  bounded LRU of ``signature_cache`` entries; they are a pure function of the text, so every
  worker computes the same bytes.
* The origin engine is a stream over the store's ingest log (``Store.log_since``): before
  each origin query it catches up with every article added since, in log order, by any
  process.  Every worker therefore holds the same table after the same log prefix, and a
  stored article's report is the one computed when the stream reached it.
"""

from __future__ import annotations

import copy
import dataclasses
import datetime as dt
import json
import logging
import os
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from neardup.api import NewsIndex
from neardup.detect.resultset import dedup_result_set
from neardup.errors import InputError, NearDupError, NotFoundError
from neardup.records import Article
from neardup.service.settings import ServiceSettings
from neardup.sketch import Signature, sign

__all__ = ["Backend", "LibraryBackend", "open_backend", "plain"]

log = logging.getLogger("neardup.service")


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

    def dedup(self, items: Sequence[tuple[str | None, str | None]], threshold: float) -> list[int]:
        """``items``: (stored id, None) or (None, text), in ranking order."""
        ...

    def events(self, since: dt.datetime | None, until: dt.datetime | None) -> list[Any]: ...

    def event(self, event_id: str) -> dict[str, Any]: ...

    def origin(self, doc_id: str | None, text: str | None) -> dict[str, Any]: ...

    def health(self) -> dict[str, Any]: ...

    def sizes(self) -> dict[str, tuple[str, float]]: ...

    def close(self) -> None: ...


def _iso_from_us(value: int | None) -> str | None:
    if value is None:
        return None
    moment = dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(microseconds=value)
    return plain(moment)  # type: ignore[no-any-return]


class SignatureCache:
    """Sentence signatures of stored articles by id, bounded to ``capacity`` entries.

    Eviction is first-in first-out (a plain dict in insertion order): a lookup is one dict
    access, with no bookkeeping on the hot path of ``POST /v1/dedup``.  An evicted signature
    is recomputed from the stored text on its next use (ids are immutable, so an entry never
    goes stale).
    """

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._items: dict[str, Any] = {}

    def __len__(self) -> int:
        return len(self._items)

    def get(self, key: str) -> Any:
        return self._items.get(key)

    def lookup(self, keys: Sequence[str]) -> list[Any]:
        """The cached signature (or ``None``) of each key."""
        get = self._items.get
        return [get(k) for k in keys]

    def put(self, key: str, value: Any) -> None:
        if self.capacity <= 0:
            return
        self._items[key] = value
        while len(self._items) > self.capacity:
            del self._items[next(iter(self._items))]


class LibraryBackend:
    """The real backend over ``neardup.api.NewsIndex`` and the detectors."""

    def __init__(self, settings: ServiceSettings) -> None:
        self.settings = settings
        self.index = NewsIndex(store=settings.store)
        self.store = self.index.stream.store
        self._signatures = SignatureCache(settings.signature_cache)
        self._origin: OriginTracker | None = None

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
    def _stored_signatures(self, ids: Sequence[str]) -> list[Any]:
        """The sentence signature of each stored id, in order (``NotFoundError`` naming the
        unknown ones)."""
        found = self._signatures.lookup(ids)
        missing = [doc_id for doc_id, sig in zip(ids, found, strict=True) if sig is None]
        if not missing:
            return found
        rows = {r.id: r for r in self.store.get_many(sorted(set(missing)))}
        unknown = [i for i in missing if i not in rows]
        if unknown:
            shown = ", ".join(repr(i) for i in unknown[:5])
            more = f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""
            raise NotFoundError(f"no stored article with id {shown}{more}")
        fresh: dict[str, Any] = {}
        for doc_id, row in rows.items():
            sig = None
            try:
                stored = Signature.from_bytes(row.signature)
                if stored.scheme == "sentences":
                    sig = stored
            except InputError:
                sig = None
            if sig is None:
                if row.text is None:
                    raise NotFoundError(f"stored article {doc_id!r} has no text to sign")
                sig = sign(row.text, "sentences")
            self._signatures.put(doc_id, sig)
            fresh[doc_id] = sig
        return [sig if sig is not None else fresh[i] for i, sig in zip(ids, found, strict=True)]

    def dedup(self, items: Sequence[tuple[str | None, str | None]], threshold: float) -> list[int]:
        if all(text is None for _, text in items):
            signatures = self._stored_signatures([doc_id or "" for doc_id, _ in items])
        else:
            ids = [doc_id or "" for doc_id, text in items if text is None]
            stored = iter(self._stored_signatures(ids))
            signatures = [
                sign(text, "sentences") if text is not None else next(stored) for _, text in items
            ]
        return dedup_result_set(signatures, threshold)

    # --- events (seed 003) ------------------------------------------------------------------
    def events(self, since: dt.datetime | None, until: dt.datetime | None) -> list[Any]:
        rows = self.index.events(since, until)
        out = []
        for e in rows:
            summary = self.index.stream.event_summary(e.id)
            out.append(
                {
                    "id": e.id,
                    "opened_by": e.opened_by,
                    "opened_at": _iso_from_us(e.opened_at_us),
                    **summary,
                }
            )
        return out

    def event(self, event_id: str) -> dict[str, Any]:
        report = self.index.event(event_id)
        if report is None:
            raise NotFoundError(f"no event with id {event_id!r}")
        return plain(report)  # type: ignore[no-any-return]

    # --- origin (seed 004) ------------------------------------------------------------------
    def origin(self, doc_id: str | None, text: str | None) -> dict[str, Any]:
        row = self._row(doc_id) if doc_id is not None else None
        if self._origin is None:
            self._origin = OriginTracker(
                self.store, self.settings.origin_memory_bytes, state_path=self._origin_state()
            )
        self._origin.catch_up()
        if row is None:
            return self._with_titles(self._origin.query(text or ""))
        report = self._origin.report_of(row)
        return self._with_titles(report)

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
        sizes: dict[str, tuple[str, float]] = {
            "documents": ("Articles in the store.", float(self.store.count())),
            "events": ("Breaking events in the store.", float(len(self.index.events()))),
            "signature_cache_entries": (
                "Sentence signatures of stored ids held in memory.",
                float(len(self._signatures)),
            ),
        }
        sizes["index_entries"] = (
            "Fingerprints in the in-memory dedup index.",
            float(self.index.stream.indexed),
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


class OriginTracker:
    """Origin detection (seed 004) as a stream over the store's ingest log.

    The stream order is the store's ingest order (its log), the same in every worker.  A
    stored article's report is the one computed when the stream reached it (kept in a bounded
    LRU of ``report_cache`` reports; an older one is recomputed by nobody and answered 404
    with a hint to query its text).  A pasted text is processed by a *copy* of the detector,
    so it sees every stored article but leaves no trace: the query costs one copy of the
    table (``origin_memory_bytes``) for its duration.  With ``state_path`` (SQLite file
    stores) the state is saved at shutdown and a restart continues from it instead of
    replaying the whole log.
    """

    QUERY_ID = "\x00query"

    def __init__(
        self,
        store: Any,
        memory_bytes: int,
        report_cache: int = 100_000,
        state_path: Path | None = None,
    ) -> None:
        from neardup.detect.origin import OriginConfig, OriginDetector

        self.store = store
        self.config = OriginConfig(memory_bytes=memory_bytes)
        self.detector = OriginDetector(self.config)
        self.applied = 0
        self.documents = 0
        self._reports: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._capacity = report_cache
        self.state_path = state_path
        self.restored = False
        if state_path is not None:
            self._restore(state_path)

    # --- checkpoint: the detector's table (its own .npz) + a JSON sidecar ------------------
    def _sidecar(self, path: Path) -> Path:
        return path.with_name(path.name + ".json")

    def _restore(self, path: Path) -> None:
        """Continue from a saved state when its detector and sidecar belong together.

        The stream is deterministic, so a detector that processed ``n`` documents of this
        store's log is *the* state after those ``n``: matching counts (and config) prove
        that the two files go together even if they were written by different workers.
        Anything else (missing, damaged, stale) means a rebuild from the log: only a lost
        speed-up, never a wrong answer.
        """
        from neardup.detect.origin import OriginDetector

        sidecar = self._sidecar(path)
        if not path.exists() or not sidecar.exists():
            return
        try:
            meta = json.loads(sidecar.read_text(encoding="utf-8"))
            detector = OriginDetector.load(path)
            if (
                detector.config != self.config
                or detector.documents_processed != meta["documents"]
                or meta.get("store") != self._store_identity()
            ):
                return
            reports = OrderedDict((k, v) for k, v in meta["reports"])
            applied = int(meta["applied"])
        except (OSError, ValueError, KeyError, TypeError, NearDupError) as exc:
            log.warning("origin state %s ignored (%s); rebuilding from the log", path, exc)
            return
        self.detector, self.applied, self.documents = detector, applied, meta["documents"]
        self._reports = reports
        self.restored = True

    def _store_identity(self) -> str | None:
        # The store's own uuid (written by the stream), so a state never crosses stores.
        getter = getattr(self.store, "meta_get", None)
        return getter("store_uuid") if callable(getter) else None

    def save(self) -> None:
        """Write the detector and the sidecar (each atomically, table first)."""
        if self.state_path is None or self.documents == 0:
            return
        path = self.state_path
        self.detector.save(path)
        sidecar = self._sidecar(path)
        tmp = sidecar.with_name(sidecar.name + ".tmp")
        meta = {
            "applied": self.applied,
            "documents": self.documents,
            "store": self._store_identity(),
            "reports": list(self._reports.items()),
        }
        tmp.write_text(json.dumps(meta, separators=(",", ":")), encoding="utf-8")
        os.replace(tmp, sidecar)

    def catch_up(self) -> None:
        """Stream every article added to the store since the last call, in log order."""
        while True:
            entries = self.store.log_since(self.applied, 1000)
            if not entries:
                return
            adds = [e.article_seq for e in entries if e.op == "add"]
            rows = {r.seq: r for r in self.store.get_many_by_seq(adds)} if adds else {}
            for seq in adds:
                row = rows.get(seq)
                if row is None or row.text is None:
                    continue
                report = self.detector.process(row.id, row.text)
                self._remember(row.id, self._render(report, row.id))
                self.documents += 1
            self.applied = entries[-1].seq

    @staticmethod
    def _render(report: Any, own: str | None) -> dict[str, Any]:
        segments = [
            {
                "start": s.start,
                "end": s.end,
                "origin": s.origin if s.copied else own,
                "copied": s.copied,
            }
            for s in report.segments
        ]
        dominant = report.dominant_origin
        mostly_original = dominant == report.id
        return {
            "id": own,
            "dominant_origin": own if mostly_original else dominant,
            "mostly_original": mostly_original,
            "copied_fraction": round(float(report.copied_fraction), 6),
            "tokens": report.tokens,
            "fresh_tokens": report.fresh_tokens,
            "segments": segments,
        }

    def _remember(self, doc_id: str, report: dict[str, Any]) -> None:
        self._reports[doc_id] = report
        while len(self._reports) > self._capacity:
            self._reports.popitem(last=False)

    def report_of(self, row: Any) -> dict[str, Any]:
        report = self._reports.get(row.id)
        if report is None:
            raise NotFoundError(
                f"the origin report of {row.id!r} is no longer held; post its text instead"
            )
        return copy.deepcopy(report)

    def query(self, text: str) -> dict[str, Any]:
        scratch = copy.deepcopy(self.detector)
        return self._render(scratch.process(self.QUERY_ID, text), None)


def open_backend(settings: ServiceSettings) -> Backend:
    """The library backend for ``settings.store``."""
    return LibraryBackend(settings)
