"""Origin detection following a store's ingest log, incrementally (seed 004).

:class:`StoreFollower` runs one :class:`~neardup.detect.origin.engine.OriginDetector` over the
articles of a store (SQLite or PostgreSQL, :mod:`neardup.store`) in the order of the store's
ingest log: every call of :meth:`StoreFollower.catch_up` processes the articles added since
the last one, by any process, so every process following the same store holds the same state
after the same prefix of the log (the stream is deterministic).  The HTTP service, the
Python API and ``neardup origin --follow`` use it, so they are one engine and give one
answer for one stream.

Checkpoint (``state_path``): the detector's state, the reports kept and the log position in
one state file (:mod:`.persist`, i.e. :mod:`neardup.store.checkpoint`: atomic, digest
checked), pinned to the store's history by a :class:`~neardup.store.checkpoint.LogMark` (the
store's identity, the last log entry applied and the transaction that wrote it), as the news
stream's checkpoint is. On start a checkpoint is used only when it is intact, made with the
same configuration and its mark is in the store's log. Anything else (missing, damaged,
another store, a store restored from an older copy, a log that was rewritten) is refused
with a message (:attr:`StoreFollower.checkpoint_note`, also logged) and the state is rebuilt
from the log: a lost speed-up, never a wrong answer.

Reports: the report of each stored article is the one computed when the stream reached it;
the last ``report_cache`` are kept (an older one is answered ``NotFoundError`` with a hint).
"""

from __future__ import annotations

import json
import logging
import os
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from neardup.detect.origin.config import OriginConfig
from neardup.detect.origin.engine import OriginDetector
from neardup.detect.origin.persist import load_state, save_state
from neardup.detect.origin.records import OriginReport
from neardup.errors import NearDupError, NotFoundError, StateFileError, StoreError
from neardup.store.checkpoint import LogMark, check_mark

__all__ = ["StoreFollower"]

log = logging.getLogger("neardup.origin")

_BATCH = 1000
_FOLLOW_VERSION = 2


class StoreFollower:
    """Origin detection over a store's ingest log; see the module doc."""

    def __init__(
        self,
        store: Any,
        config: OriginConfig | None = None,
        *,
        state_path: str | os.PathLike[str] | None = None,
        report_cache: int = 100_000,
    ) -> None:
        self.store = store
        self.config = config or OriginConfig()
        self.detector = OriginDetector(self.config)
        self.applied = 0  # last log sequence number processed
        self.documents = 0
        self._reports: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._capacity = report_cache
        self.state_path = Path(state_path) if state_path is not None else None
        self.restored = False
        self.checkpoint_note: str | None = None
        if self.state_path is not None and self.state_path.exists():
            self._restore(self.state_path)

    # --- the stream -----------------------------------------------------------------------

    def catch_up(self, on_report: Callable[[OriginReport], None] | None = None) -> int:
        """Process every article added to the store since the last call, in log order;
        ``on_report`` is called with each report.  Returns the number processed."""
        done = 0
        while True:
            entries = self.store.log_since(self.applied, _BATCH)
            if not entries:
                return done
            adds = [e.article_seq for e in entries if e.op == "add"]
            rows = {r.seq: r for r in self.store.get_many_by_seq(adds)} if adds else {}
            for seq in adds:
                row = rows.get(seq)
                if row is None or row.text is None:
                    continue
                report = self.detector.process(row.id, row.text)
                self._remember(row.id, report.to_dict())
                self.documents += 1
                done += 1
                if on_report is not None:
                    on_report(report)
            self.applied = entries[-1].seq

    def _remember(self, doc_id: str, row: dict[str, Any]) -> None:
        self._reports[doc_id] = row
        while len(self._reports) > self._capacity:
            self._reports.popitem(last=False)

    def report_of(self, doc_id: str) -> dict[str, Any]:
        """The stored article's report (the row ``neardup origin`` prints for it)."""
        row = self._reports.get(doc_id)
        if row is None:
            raise NotFoundError(
                f"the origin report of {doc_id!r} is no longer held; post its text instead"
            )
        copied: dict[str, Any] = json.loads(json.dumps(row))  # a copy the caller may change
        return copied

    def peek(self, text: str, doc_id: str = "query") -> OriginReport:
        """The report of ``text`` (as document ``doc_id``) against every article streamed so
        far; nothing changes."""
        return self.detector.peek(text, doc_id)

    # --- checkpoint -----------------------------------------------------------------------

    @staticmethod
    def saved_config(path: str | os.PathLike[str]) -> OriginConfig | None:
        """The configuration a checkpoint at ``path`` was made with (None when there is no
        readable one), so a caller can continue it without restating the options."""
        if not Path(path).exists():
            return None
        try:
            meta = json.loads(load_state(path)["meta"].tobytes())
            return OriginConfig(**meta["config"])
        except (KeyError, ValueError, TypeError, NearDupError):
            return None

    def save(self) -> None:
        """Write the checkpoint (atomically); nothing to do without ``state_path``."""
        if self.state_path is None:
            return
        meta = {
            "version": _FOLLOW_VERSION,
            "mark": LogMark.of(self.store, self.applied).to_dict(),
            "documents": self.documents,
        }
        arrays = self.detector.state_arrays()
        arrays["follow_meta"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
        reports = json.dumps(list(self._reports.items()), separators=(",", ":"))
        arrays["follow_reports"] = np.frombuffer(reports.encode(), dtype=np.uint8)
        save_state(self.state_path, arrays)

    def _restore(self, path: Path) -> None:
        """Use the checkpoint at ``path`` only when it is intact and matches (module doc)."""
        try:
            arrays = load_state(path)
            meta = json.loads(arrays.pop("follow_meta").tobytes())
            reports = json.loads(arrays.pop("follow_reports").tobytes())
            detector = OriginDetector.from_state(arrays, str(path))
            problem = self._mismatch(meta, detector)
        except (KeyError, ValueError, TypeError, AttributeError, NearDupError) as exc:
            problem = f"cannot be used ({exc})"
        if problem is not None:
            self.checkpoint_note = f"origin checkpoint {path} {problem}; rebuilt from the log"
            log.warning("%s", self.checkpoint_note)
            return
        self.detector = detector
        self.applied = LogMark.from_dict(meta["mark"]).log_seq
        self.documents = int(meta["documents"])
        self._reports = OrderedDict((str(k), v) for k, v in reports[-self._capacity :])
        self.restored = True

    def _mismatch(self, meta: dict[str, Any], detector: OriginDetector) -> str | None:
        """Why the checkpoint does not belong to this store and configuration, or None."""
        if meta.get("version") != _FOLLOW_VERSION:
            return f"has version {meta.get('version')}"
        if detector.config != self.config:
            return f"was made with another configuration ({detector.config.label})"
        try:
            check_mark(self.store, LogMark.from_dict(meta.get("mark")))
        except StateFileError as exc:
            return f"does not match the store ({exc})"
        except StoreError as exc:
            return f"cannot be checked against the store ({exc})"
        if int(meta["documents"]) != detector.documents_processed:
            return "is inconsistent (document counts differ)"
        return None
