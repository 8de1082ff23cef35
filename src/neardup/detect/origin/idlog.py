"""An append-only, on-disk log of document ids indexed by stream ordinal.

The table stores an 8-byte origin per shingle (seed 004, Section 2.2: "a fingerprint of its
origin"); we store the document's stream ordinal and turn it back into an id here, so the
ids cost disk, not memory.  Two files: ``<path>.dat`` (the UTF-8 ids, concatenated) and
``<path>.idx`` (little-endian uint64 end offsets, one per ordinal).  Appends are buffered
(at most :data:`FLUSH_EVERY` ids in memory); a lookup of a flushed ordinal reads 16 bytes of
index and the id.  Resident memory is constant (the buffer); the files grow by the id's
length + 8 bytes a document.

Guarantees: ``get(append(x)) == x``; :meth:`IdLog.truncate` drops records past an ordinal
(used when a saved state is reloaded after the log ran ahead of it).
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

from neardup.errors import StoreError

__all__ = ["FLUSH_EVERY", "IdLog"]

FLUSH_EVERY = 1024
_OFFSET = struct.Struct("<Q")


class IdLog:
    """Ordinal -> id, on disk; see the module doc."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._dat_path = self.path.with_name(self.path.name + ".dat")
        self._idx_path = self.path.with_name(self.path.name + ".idx")
        try:
            self._dat = open(self._dat_path, "a+b")  # noqa: SIM115 - closed in close()
            self._idx = open(self._idx_path, "a+b")  # noqa: SIM115
        except OSError as exc:
            raise StoreError(f"cannot open id log {self.path}: {exc}") from exc
        size = self._idx.seek(0, os.SEEK_END)
        if size % 8:
            raise StoreError(f"id log index {self._idx_path} is corrupt (size {size})")
        self._flushed = size // 8
        self._end = self._dat.seek(0, os.SEEK_END)
        self._pending: list[bytes] = []

    def __len__(self) -> int:
        return self._flushed + len(self._pending)

    def append(self, doc_id: str) -> int:
        """Add an id; returns its ordinal."""
        self._pending.append(doc_id.encode("utf-8", "surrogatepass"))
        if len(self._pending) >= FLUSH_EVERY:
            self.flush()
        return len(self) - 1

    def flush(self) -> None:
        """Write the buffered ids."""
        if not self._pending:
            return
        offsets = bytearray()
        end = self._end
        for raw in self._pending:
            end += len(raw)
            offsets += _OFFSET.pack(end)
        try:
            self._dat.seek(0, os.SEEK_END)
            self._dat.write(b"".join(self._pending))
            self._dat.flush()
            self._idx.seek(0, os.SEEK_END)
            self._idx.write(bytes(offsets))
            self._idx.flush()
        except OSError as exc:
            raise StoreError(f"cannot write id log {self.path}: {exc}") from exc
        self._end = end
        self._flushed += len(self._pending)
        self._pending.clear()

    def _offset(self, ordinal: int) -> int:
        if ordinal < 0:
            return 0
        self._idx.seek(ordinal * 8)
        raw = self._idx.read(8)
        if len(raw) != 8:
            raise StoreError(f"id log {self.path} has no record {ordinal}")
        value: int = _OFFSET.unpack(raw)[0]
        return value

    def get(self, ordinal: int) -> str:
        """The id of ``ordinal``."""
        if not 0 <= ordinal < len(self):
            raise StoreError(f"id log {self.path} has no record {ordinal}")
        if ordinal >= self._flushed:
            return self._pending[ordinal - self._flushed].decode("utf-8", "surrogatepass")
        start, end = self._offset(ordinal - 1), self._offset(ordinal)
        self._dat.seek(start)
        return self._dat.read(end - start).decode("utf-8", "surrogatepass")

    def truncate(self, count: int) -> None:
        """Keep only the first ``count`` records."""
        self.flush()
        if count > self._flushed:
            raise StoreError(f"id log {self.path} has {self._flushed} records, state needs {count}")
        end = self._offset(count - 1)
        try:
            self._idx.truncate(count * 8)
            self._dat.truncate(end)
        except OSError as exc:
            raise StoreError(f"cannot truncate id log {self.path}: {exc}") from exc
        self._flushed = count
        self._end = end

    def close(self) -> None:
        """Flush and close the files."""
        self.flush()
        self._dat.close()
        self._idx.close()
