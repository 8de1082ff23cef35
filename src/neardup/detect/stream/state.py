"""The stream's in-memory state, rebuilt from the store: log replay and checkpoints.

The store is the single source of truth.  Every article added is also appended to the
store's ordered log (``add``; ``event`` when it joins a breaking event, ``merge`` when two
events merge: :mod:`neardup.detect.stream.stories`), so a process rebuilds its passage index
and its story state (index, document frequencies, events) by replaying the log, and catches
up with what other processes wrote by replaying the entries after the last one it applied.
Story vectors are made again from the stored profiles' terms, with the document frequencies
of the entries before them: the same vectors as at ingest.  A checkpoint saves the rebuilt
state, pinned to the store's history by a :class:`~neardup.store.checkpoint.LogMark` (the
store's identity, the last log entry applied and the transaction that wrote it), through
:mod:`neardup.store.checkpoint` (atomic writes under a unique temporary name, a digest
checked on every read).  It is only a speed-up: a checkpoint that is damaged, made with
another configuration or not made from this store's own history (a restored backup,
another machine's file) is refused with a :class:`~neardup.errors.StateFileError` and the
state is rebuilt from the log (``stats["checkpoint_error"]`` says why).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from neardup.detect.stream.candidates import CandidateIndexes, passage_fingerprints
from neardup.detect.stream.config import StreamConfig
from neardup.detect.stream.stories import StreamStories
from neardup.errors import StateFileError, StoreError
from neardup.rule import Profile
from neardup.store import LogEntry, Store
from neardup.store.checkpoint import LogMark, check_mark, read_state, write_state

__all__ = ["StreamState"]

_CHECKPOINT_VERSION = 3
_CHECKPOINT_KIND = "stream-checkpoint"  # what a stream's state file holds


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
    def identity(self, schemes: str) -> dict[str, Any]:
        """The configuration a checkpoint must have been made with."""
        return {
            "version": _CHECKPOINT_VERSION,
            "schemes": schemes,
            "stories": self.config.stories.scheme_id,
            "candidates": self.config.candidates.scheme_id,
        }

    def save(self, store: Store, path: Path, identity: dict[str, Any]) -> Path:
        """Write the state to ``path`` (atomic, pinned to the store's log)."""
        meta = {**identity, "mark": LogMark.of(store, self.log_seq).to_dict()}
        arrays = {**self.indexes.state(), **self.stories.state()}
        write_state(path, _CHECKPOINT_KIND, meta, arrays)
        return path

    def restore(self, store: Store, path: Path, identity: dict[str, Any]) -> bool:
        """Load a checkpoint into this (empty) state; ``False`` when there is none.
        ``StateFileError`` when it is damaged, made with another configuration, or not made
        from this store's history (then nothing of it may be kept)."""
        saved = read_state(path, _CHECKPOINT_KIND)
        if saved is None:
            return False
        meta, arrays = saved.meta, saved.arrays
        for key, value in identity.items():
            if meta.get(key) != value:
                raise StateFileError(f"checkpoint {path} was made with another {key}")
        mark = LogMark.from_dict(meta.get("mark"))
        try:
            check_mark(store, mark)
        except StateFileError as exc:
            raise StateFileError(f"checkpoint {path} is stale: {exc}") from exc
        self.indexes.load_state(arrays)
        self.stories.load_state(arrays)
        self.log_seq = mark.log_seq
        return True

    def snapshot(self) -> Any:
        """Comparable contents, for :meth:`NewsStream.consistency_errors`."""
        return self.indexes.snapshot(), self.stories.snapshot()
