"""State files: in-memory state saved next to a store, trusted only when intact and current.

A process that mirrors a store in memory (the stream's indexes, the origin detector's
table) may save that state and start from it instead of replaying the store's whole log.
A saved state is only a speed-up, so it must never be believed when it is damaged or when
it was not made from the store's own history: a restored backup of the store, a state file
copied from another machine, a file cut short by a full disk.  This module is the one
mechanism for that, for every kind of state file:

* :func:`write_state` writes a JSON header and named numpy arrays **atomically**: a
  temporary file with a name unique to the process and call, fsync, rename over the target,
  fsync of the folder.  Several processes may save the same state at once; each file is
  complete and the last rename wins.
* :func:`read_state` reads one back **only if intact**: the file carries its length and an
  xxh3-128 digest of everything after the digest, so a truncated, empty, or overwritten file
  (one flipped byte) raises :class:`~neardup.errors.StateFileError`, as does a file of
  another ``kind``; no other exception escapes for any content.
* :class:`LogMark` **pins a state to the store's history**: the store's uuid, the position
  in its log the state was built up to, and the id of the write transaction that appended
  that log entry (:meth:`~neardup.store.Store.log_txn`).  :func:`check_mark` accepts a mark
  only when the store has that entry from that transaction, i.e. when its log up to there
  is the very one the state was built from (transaction ids are random 63-bit numbers and
  the log is append-only); the store may have gone further since (replay the entries
  after ``log_seq``).  A restored older copy of the store lacks the entry, or holds another
  transaction's under the same number; another store has another uuid.

A caller that gets ``StateFileError`` from :func:`read_state` or :func:`check_mark`
rebuilds its state from the store.  File layout (little-endian)::

    magic "NDSTATE1" | xxh3-128 digest (16 bytes) of the rest | header length (u32) |
    body length (u64) | header: UTF-8 JSON {"kind", "meta"} | body: an uncompressed .npz

Deterministic: the same state gives the same bytes except the zip's timestamps.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import os
import secrets
import struct
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import xxhash

from neardup.errors import NearDupError, StateFileError, StoreError
from neardup.store import Store

__all__ = ["LogMark", "SavedState", "check_mark", "read_state", "write_state"]

_MAGIC = b"NDSTATE1"
_PREFIX = struct.Struct("<8s16sIQ")  # magic, digest, header length, body length
_MAX_HEADER = 1 << 24  # a header is small JSON; a larger length is damage
_CHUNK = 1 << 20


@dataclasses.dataclass(frozen=True, slots=True)
class LogMark:
    """Where in which store's history a state was built up to (see the module docstring).

    ``store``: :meth:`~neardup.store.Store.identity`; ``log_seq``: the last log entry the
    state includes (0: none); ``txn``: :meth:`~neardup.store.Store.log_txn` of that entry
    (0 when ``log_seq`` is 0).
    """

    store: str
    log_seq: int
    txn: int

    @classmethod
    def of(cls, store: Store, log_seq: int) -> LogMark:
        """The mark of ``store``'s log up to entry ``log_seq`` (which must exist)."""
        txn = 0
        if log_seq:
            found = store.log_txn(log_seq)
            if found is None:
                raise StoreError(f"store {store.url!r} has no log entry {log_seq}")
            txn = found
        return cls(store.identity(), int(log_seq), int(txn))

    def to_dict(self) -> dict[str, Any]:
        return {"store": self.store, "log_seq": self.log_seq, "txn": self.txn}

    @classmethod
    def from_dict(cls, data: Any) -> LogMark:
        """Inverse of :meth:`to_dict`; ``StateFileError`` for anything else."""
        try:
            store, log_seq, txn = data["store"], data["log_seq"], data["txn"]
        except (TypeError, KeyError) as exc:
            raise StateFileError(f"the state's log mark is missing or incomplete: {exc}") from exc
        if not isinstance(store, str) or not all(
            type(v) is int and 0 <= v < 1 << 63 for v in (log_seq, txn)
        ):
            raise StateFileError(f"the state's log mark {data!r} is malformed")
        return cls(store, log_seq, txn)


def check_mark(store: Store, mark: LogMark) -> None:
    """Accept ``mark`` only if ``store``'s log up to ``mark.log_seq`` is the history the
    state was built from; else :class:`~neardup.errors.StateFileError` saying why.
    ``StoreError`` (other than that) means the store could not be asked."""
    identity = store.identity()
    if mark.store != identity:
        raise StateFileError(
            f"the state belongs to store {mark.store}, not to this one ({identity})"
        )
    if mark.log_seq == 0:
        return  # the empty prefix of any history
    txn = store.log_txn(mark.log_seq)
    if txn is None:
        raise StateFileError(
            f"the state is built up to log entry {mark.log_seq}, which the store does not "
            f"have (its log ends at {store.last_log_seq()}): the store is an older copy"
        )
    if txn != mark.txn:
        raise StateFileError(
            f"log entry {mark.log_seq} of the store was written by another transaction than "
            "the state was built from: the store was restored from a copy and written since"
        )


@dataclasses.dataclass(frozen=True)
class SavedState:
    """What :func:`read_state` returns: the header's ``meta`` and the arrays by name."""

    meta: dict[str, Any]
    arrays: dict[str, npt.NDArray[Any]]


def _temporary(path: Path) -> Path:
    # Unique per process and per call: concurrent writers never share a temporary file.
    return path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(6)}.tmp")


def _fsync_folder(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return  # not supported here (e.g. some platforms): the rename is still atomic
    try:
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)


def write_state(
    path: str | os.PathLike[str],
    kind: str,
    meta: Mapping[str, Any],
    arrays: Mapping[str, npt.NDArray[Any]],
) -> Path:
    """Write ``meta`` (JSON-able) and ``arrays`` to ``path`` atomically; return the path.

    ``kind`` names what the file holds (e.g. ``"stream-checkpoint"``): :func:`read_state`
    refuses a file of another kind.  ``StoreError`` when the file cannot be written (the
    previous file, if any, is then left as it was).
    """
    target = Path(path)
    header = json.dumps({"kind": kind, "meta": dict(meta)}, sort_keys=True).encode("utf-8")
    for name, value in arrays.items():
        if np.asarray(value).dtype.hasobject:  # read_state never unpickles
            raise StoreError(f"cannot write state file {target}: array {name!r} holds objects")
    tmp = _temporary(target)
    try:
        with open(tmp, "w+b") as fh:
            fh.write(_PREFIX.pack(_MAGIC, bytes(16), len(header), 0))
            fh.write(header)
            start = fh.tell()
            np.savez(fh, **arrays)  # type: ignore[arg-type]
            end = fh.tell()
            fh.seek(_PREFIX.size - 12)
            fh.write(struct.pack("<IQ", len(header), end - start))
            digest = _digest(fh, _PREFIX.size - 12, end)
            fh.seek(len(_MAGIC))
            fh.write(digest)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except (OSError, ValueError) as exc:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise StoreError(f"cannot write state file {target}: {exc}") from exc
    _fsync_folder(target.parent)
    return target


def _digest(fh: Any, start: int, end: int) -> bytes:
    """xxh3-128 of bytes ``[start, end)`` of an open file."""
    hasher = xxhash.xxh3_128()
    fh.seek(start)
    left = end - start
    while left > 0:
        chunk = fh.read(min(_CHUNK, left))
        if not chunk:
            break
        hasher.update(chunk)
        left -= len(chunk)
    return hasher.digest()


class _Window(io.RawIOBase):
    """Bytes ``[start, start + size)`` of an open file, seen as a file of their own (the
    .npz body, so ``np.load`` and ``zipfile`` read it as they would a standalone file)."""

    def __init__(self, fh: Any, start: int, size: int) -> None:
        self._fh, self._start, self._size, self._pos = fh, start, size, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._size}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def readinto(self, buffer: Any) -> int:
        want = min(len(buffer), self._size - self._pos)
        if want <= 0:
            return 0
        self._fh.seek(self._start + self._pos)
        data = self._fh.read(want)
        buffer[: len(data)] = data
        self._pos += len(data)
        return len(data)


def read_state(path: str | os.PathLike[str], kind: str) -> SavedState | None:
    """The state saved at ``path`` by :func:`write_state` with the same ``kind``; ``None``
    when there is no file.  ``StateFileError`` for any damage (empty, truncated, extended,
    any byte changed, not a state file, another kind): the caller rebuilds instead."""
    target = Path(path)
    try:
        fh = open(target, "rb")  # noqa: SIM115 - closed below, after the arrays are read
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StateFileError(f"cannot read state file {target}: {exc}") from exc
    try:
        with fh:
            return _read(fh, target, kind)
    except NearDupError:
        raise
    except Exception as exc:  # any content: the digest passed, so this is a format mismatch
        raise StateFileError(f"state file {target} cannot be read: {exc}") from exc


def _read(fh: Any, target: Path, kind: str) -> SavedState:
    size = os.fstat(fh.fileno()).st_size
    prefix = fh.read(_PREFIX.size)
    if len(prefix) < _PREFIX.size:
        raise StateFileError(f"state file {target} is truncated ({size} bytes)")
    magic, digest, header_size, body_size = _PREFIX.unpack(prefix)
    if magic != _MAGIC:
        raise StateFileError(f"{target} is not a neardup state file")
    if header_size > _MAX_HEADER or _PREFIX.size + header_size + body_size != size:
        raise StateFileError(
            f"state file {target} is truncated or damaged ({size} bytes, its prefix says "
            f"{_PREFIX.size + header_size + body_size})"
        )
    if _digest(fh, _PREFIX.size - 12, size) != digest:
        raise StateFileError(f"state file {target} is damaged (its digest does not match)")
    fh.seek(_PREFIX.size)
    header = json.loads(fh.read(header_size).decode("utf-8"))
    if not isinstance(header, dict) or header.get("kind") != kind:
        found = header.get("kind") if isinstance(header, dict) else None
        raise StateFileError(f"{target} holds a {found!r} state, not a {kind!r} one")
    meta = header.get("meta")
    if not isinstance(meta, dict):
        raise StateFileError(f"state file {target} has no meta object")
    window = io.BufferedReader(_Window(fh, _PREFIX.size + header_size, body_size))
    with np.load(window, allow_pickle=False) as data:
        arrays = {name: np.asarray(data[name]) for name in data.files}
    return SavedState(meta, arrays)
