"""The stream's in-memory state, rebuilt from the store: log replay and checkpoints.

The store is the single source of truth.  Every article added is also appended to the
store's ordered log (``add``; ``event`` when it joins a breaking event, ``merge`` when two
events merge: :mod:`neardup.detect.stream.stories`), so a process rebuilds its passage index
and its story state (index, document frequencies, events) by replaying the log, and catches
up with what other processes wrote by replaying the entries after the last one it applied.
Story vectors are made again from the stored profiles' terms, with the document frequencies
of the entries before them: the same vectors as at ingest.  A
checkpoint saves the rebuilt state with the log position it reflects; it is only a speed-up:
a checkpoint that does not match the store, or cannot be read, is ignored and the state is
rebuilt from the log (``stats["checkpoint_error"]`` says why).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from neardup.detect.stream.candidates import CandidateIndexes, passage_fingerprints
from neardup.detect.stream.config import StreamConfig
from neardup.detect.stream.stories import StreamStories
from neardup.errors import StoreError
from neardup.rule import Profile
from neardup.store import LogEntry, Store

__all__ = ["StreamState"]

_CHECKPOINT_VERSION = 3


class StreamState:
    """Passage index and story state of a stream, with the log position they reflect."""

    def __init__(self, config: StreamConfig) -> None:
        self.config = config
        self.indexes = CandidateIndexes(config.candidates)
        self.stories = StreamStories(config.stories, config.rule)
        self.log_seq = 0

    # --- replay ---------------------------------------------------------------------------
    def catch_up(self, store: Store) -> int:
        """Apply the store's log entries after :attr:`log_seq`; the number applied."""
        applied = 0
        while True:
            entries = store.log_since(self.log_seq, limit=100_000)
            if not entries:
                return applied
            self.apply(store, entries)
            applied += len(entries)

    def apply(self, store: Store, entries: Sequence[LogEntry]) -> None:
        """Apply log entries in order (stored rows read in batches for their profiles; the
        pending ``add`` entries are applied before an ``event`` or ``merge`` entry)."""
        window = self.config.candidates.passage_window
        scheme = self.config.rule.profile_id
        pending: list[tuple[int, bool]] = []

        def flush() -> None:
            if not pending:
                return
            rows = store.get_many_by_seq([seq for seq, _ in pending])
            if len(rows) != len(pending):
                raise StoreError("the store's log names articles that are not in the store")
            for row, (_, counted) in zip(rows, pending, strict=True):
                prof = Profile.from_bytes(row.signature, scheme_id=scheme)
                self.indexes.add(row.seq, passage_fingerprints(prof, window))
                self.stories.replay_add(
                    row.seq, row.id, prof, row.date_us, row.source, row.title, counted
                )
            pending.clear()

        for e in entries:
            if e.op == "add":
                pending.append((e.article_seq, e.arg != "0"))
            elif e.op == "event":
                flush()
                self.stories.replay_event(e.article_seq, e.arg)
            elif e.op == "merge":
                flush()
                self.stories.replay_merge(e.arg)
            else:
                raise StoreError(f"store log entry {e.seq} has unknown op {e.op!r}")
            self.log_seq = e.seq
        flush()

    # --- checkpoints ----------------------------------------------------------------------
    def identity(self, store_uuid: str, schemes: str) -> dict[str, Any]:
        """What a checkpoint must match to be used with this store and config."""
        return {
            "version": _CHECKPOINT_VERSION,
            "store_uuid": store_uuid,
            "schemes": schemes,
            "stories": self.config.stories.scheme_id,
            "candidates": self.config.candidates.scheme_id,
        }

    def save(self, path: Path, identity: dict[str, Any]) -> Path:
        """Write the state to ``path`` (atomic replace under a per-process temporary name)."""
        meta = {**identity, "log_seq": self.log_seq}
        arrays = {
            "meta": np.asarray([json.dumps(meta, sort_keys=True)], dtype=np.str_),
            **self.indexes.state(),
            **self.stories.state(),
        }
        # Several processes sharing a store may checkpoint at once; each file is complete
        # and self-consistent, and the last rename wins.
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        try:
            with open(tmp, "wb") as fh:
                np.savez(fh, **arrays)  # type: ignore[arg-type]
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)
        except OSError as exc:
            raise StoreError(f"cannot write checkpoint {path}: {exc}") from exc
        return path

    def restore(
        self, path: Path, identity: dict[str, Any], last_log_seq: Callable[[], int]
    ) -> None:
        """Load a checkpoint into this (empty) state; ``StoreError`` when it does not match."""
        with np.load(path, allow_pickle=False) as data:
            arrays = {k: data[k] for k in data.files}
        meta = json.loads(str(arrays["meta"][0]))
        for key, value in identity.items():
            if meta.get(key) != value:
                raise StoreError(f"checkpoint {path} does not match the store ({key} differs)")
        log_seq = int(meta["log_seq"])
        if log_seq > last_log_seq():
            raise StoreError(f"checkpoint {path} is ahead of the store's log")
        self.indexes.load_state(arrays)
        self.stories.load_state(arrays)
        self.log_seq = log_seq

    def snapshot(self) -> Any:
        """Comparable contents, for :meth:`NewsStream.consistency_errors`."""
        return self.indexes.snapshot(), self.stories.snapshot()
