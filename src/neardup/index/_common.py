"""Keys and the on-disk file format shared by the indexes (internal).

Index file format (all integers little-endian)::

    offset  size  field
    0       8     magic (b"NDHAMIDX" Hamming index, b"NDLSHIDX" LSH index)
    8       4     format version (uint32, 1)
    12      4     length H of the header (uint32)
    16      H     header: ASCII JSON {"meta": {...}, "arrays": [{"name", "dtype", "shape",
                  "offset", "nbytes"}, ...]}; offsets are relative to the data section
    16+H    p     zero padding to a multiple of 8
    D       ...   the arrays, each C-ordered with the explicit dtype of the header ("<u8",
                  "<u4", "<i8", "|u1"), each starting on a multiple of 8
    end-8   8     xxh64 (seed 0) of every byte before it (uint64)

Keys are stored as an ``<i8`` array (integer keys) or as UTF-8 bytes plus ``<u8`` offsets
(string keys).  A file is written to ``<path>.tmp``, fsynced and renamed over ``path``, so a
crash never leaves a half-written index under the final name.
"""

from __future__ import annotations

import itertools
import json
import os
import struct
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Literal, cast

import numpy as np
import numpy.typing as npt
import xxhash

from neardup.errors import InputError, InputTypeError, NotFoundError, StoreError

__all__ = ["Key", "KeyMap", "KeyedIndex", "read_index_file", "write_index_file"]

Key = str | int
_VERSION = 1
_PREFIX = struct.Struct("<8sII")
_I64_MIN = -(1 << 63)
_I64_MAX = (1 << 63) - 1


class KeyMap:
    """Row number <-> caller key.  Keys are all ``str`` or all ``int`` (fixed by the first).

    One kind per index so that results sort by key without comparing ``str`` with ``int``.
    """

    __slots__ = ("_ints", "_synced", "keys", "kind", "rows")

    def __init__(self) -> None:
        self.kind: Literal["int", "str"] | None = None
        self.keys: list[Key | None] = []
        self.rows: dict[Key, int] = {}
        # Integer keys mirrored in an int64 array (rows < _synced), filled on demand by
        # key_array: queries then map rows to keys without a Python list per query.
        self._ints = np.zeros(0, dtype=np.int64)
        self._synced = 0

    def __len__(self) -> int:
        return len(self.rows)

    def normalise(self, key: object) -> Key:
        """The key as ``str`` or ``int``; ``InputTypeError`` for anything else or a mixed kind."""
        if isinstance(key, np.integer):
            key = int(key)
        if isinstance(key, bool) or not isinstance(key, str | int):
            raise InputTypeError(f"index keys must be str or int, got {type(key).__name__}")
        kind: Literal["int", "str"] = "str" if isinstance(key, str) else "int"
        if self.kind is not None and kind != self.kind:
            raise InputTypeError(
                f"this index has {self.kind} keys; got a {kind} key {key!r} "
                "(one kind per index so results sort by key)"
            )
        if kind == "int" and not _I64_MIN <= key <= _I64_MAX:  # type: ignore[operator]
            raise InputError(f"integer keys must fit in 64-bit signed, got {key}")
        return key

    def prepare(
        self, keys: object
    ) -> tuple[list[Key], dict[int, tuple[bool, int]], dict[Key, int] | None]:
        """Normalise a batch of keys and find the ones already known.

        Returns the keys, ``{position: (in_index, where)}`` for every position whose key is
        already indexed (``where`` = its row) or appeared earlier in the batch (``where`` =
        that position), and, when every key is new, their ``key -> row`` map ready for
        :meth:`append`.  Fast path when all keys are plain ``int`` or ``str`` and new: C-level
        dict operations only, no Python loop per key.
        """
        if isinstance(keys, np.ndarray):
            if keys.ndim != 1 or keys.dtype.kind not in "iuU":
                raise InputTypeError(f"keys must be a 1-d int or str array, got {keys.dtype}")
            keys = keys.tolist()
        if isinstance(keys, str | bytes) or not isinstance(keys, Sequence):
            raise InputTypeError(f"keys must be a sequence, got {type(keys).__name__}")
        items: list[Any] = list(keys)
        types = set(map(type, items))
        if items and types == {int} and (self.kind in (None, "int")):
            if min(items) < _I64_MIN or max(items) > _I64_MAX:
                raise InputError("integer keys must fit in 64-bit signed")
            norm: list[Key] = items
        elif types == {str} and (self.kind in (None, "str")):
            norm = items
        else:
            norm = [self.normalise(k) for k in items]
            if len({type(k) for k in norm}) > 1:
                raise InputTypeError("keys must be all str or all int")
        start = len(self.keys)
        fresh = dict(zip(norm, range(start, start + len(norm)), strict=True))
        if len(fresh) == len(norm) and (not self.rows or self.rows.keys().isdisjoint(fresh)):
            return norm, {}, fresh
        repeats: dict[int, tuple[bool, int]] = {}
        first: dict[Key, int] = {}
        for i, k in enumerate(norm):
            row = self.rows.get(k)
            if row is not None:
                repeats[i] = (True, row)
            elif k in first:
                repeats[i] = (False, first[k])
            else:
                first[k] = i
        return norm, repeats, None

    def row(self, key: object) -> int:
        """The row of ``key``; ``NotFoundError`` when it is not indexed."""
        k = self.normalise(key)
        try:
            return self.rows[k]
        except KeyError:
            raise NotFoundError(f"key {k!r} is not in the index") from None

    def append(self, keys: list[Key], rows: dict[Key, int] | None = None) -> None:
        """Give the next rows to ``keys`` (normalised, new, distinct); ``rows`` is their
        ``key -> row`` map when :meth:`prepare` already built it."""
        if keys and self.kind is None:
            self.kind = "str" if isinstance(keys[0], str) else "int"
        start = len(self.keys)
        if rows is None:
            rows = dict(zip(keys, range(start, start + len(keys)), strict=True))
        if self.keys:
            self.keys.extend(keys)
        else:  # take the (already private) list rather than copy 10 M references
            self.keys = cast("list[Key | None]", keys)
        if self.rows:
            self.rows.update(rows)
        else:
            self.rows = rows

    def append_new(self, key: object) -> int | None:
        """Append a plainly new key (an ``int`` or ``str`` of the map's kind, not present) and
        return its row; ``None`` for anything else, which :meth:`normalise` and
        :meth:`prepare` decide (the one-key fast path of an index's add)."""
        kind = type(key)
        if kind is int:
            if self.kind != "int" or not _I64_MIN <= key <= _I64_MAX:  # type: ignore[operator]
                return None
        elif kind is not str or self.kind != "str":
            return None
        rows = self.rows
        if key in rows:
            return None
        row = len(self.keys)
        self.keys.append(key)  # type: ignore[arg-type]
        rows[key] = row  # type: ignore[index]
        return row

    def drop(self, row: int) -> None:
        key = self.keys[row]
        if key is not None:
            del self.rows[key]
            self.keys[row] = None

    def lookup(self, rows: Iterable[int]) -> list[Key]:
        keys = self.keys
        return [keys[r] for r in rows]  # type: ignore[misc]

    def key_array(self, rows: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """The integer keys of ``rows`` (live rows: a dropped row's slot is stale), as an
        int64 array; ``InputTypeError`` when the keys are strings."""
        if self.kind == "str":
            raise InputTypeError("this index has str keys; key arrays need int keys")
        n = len(self.keys)
        if self._synced < n:
            if n > self._ints.shape[0]:  # amortised doubling: one add per query in a stream
                grown = np.zeros(max(n, 2 * self._ints.shape[0], 1024), dtype=np.int64)
                grown[: self._synced] = self._ints[: self._synced]
                self._ints = grown
            fresh = self.keys[self._synced : n]
            self._ints[self._synced : n] = [-1 if k is None else k for k in fresh]
            self._synced = n
        return self._ints[rows]

    def compact(self) -> None:
        """Drop removed rows; rows become ``0..len-1`` in their old order."""
        self._synced = 0  # rows are renumbered: the key array is refilled on demand
        self.keys = [k for k in self.keys if k is not None]
        self.rows = dict(zip(self.keys, range(len(self.keys)), strict=True))  # type: ignore[arg-type]

    def to_arrays(self) -> dict[str, npt.NDArray[Any]]:
        """Encode the (compacted) keys for the file format."""
        if self.kind == "str":
            encoded = [str(k).encode("utf-8", "surrogatepass") for k in self.keys]
            offsets = np.zeros(len(encoded) + 1, dtype="<u8")
            np.cumsum([len(b) for b in encoded], out=offsets[1:])
            blob = np.frombuffer(b"".join(encoded), dtype="|u1")
            return {"key_bytes": blob, "key_offsets": offsets}
        return {"key_ints": np.asarray(self.keys, dtype="<i8")}

    @classmethod
    def from_arrays(cls, kind: str | None, arrays: dict[str, npt.NDArray[Any]]) -> KeyMap:
        """The keys of :meth:`to_arrays`; ``StoreError`` when they do not decode (``KeyError``
        when an array is absent)."""
        km = cls()
        if kind == "str":
            blob = arrays["key_bytes"].tobytes()
            bounds = arrays["key_offsets"]
            # Offsets slice the blob: integers from 0 to its end, never decreasing.
            if (
                bounds.ndim != 1
                or bounds.dtype.kind not in "iu"
                or bounds.shape[0] == 0
                or bounds[0] != 0
                or bounds[-1] != len(blob)
                or bool(np.any(bounds[1:] < bounds[:-1]))
            ):
                raise StoreError("index file has malformed key offsets")
            offsets = bounds.tolist()
            try:
                keys: list[Key] = [
                    blob[a:b].decode("utf-8", "surrogatepass")
                    for a, b in itertools.pairwise(offsets)
                ]
            except UnicodeDecodeError as exc:
                raise StoreError(f"index file has a key that is not UTF-8: {exc}") from exc
        elif kind == "int":
            ints = arrays["key_ints"]
            if ints.ndim != 1 or ints.dtype.kind not in "iu":
                raise StoreError(f"index file has integer keys of type {ints.dtype}")
            keys = ints.tolist()
        else:
            keys = []
        km.append(keys)
        if len(km.rows) != len(keys):
            raise StoreError("index file has duplicate keys")
        return km


class KeyedIndex:
    """Sizes and membership of an index that maps keys to rows through a :class:`KeyMap`
    (``self._keys``)."""

    _keys: KeyMap

    def __len__(self) -> int:
        return len(self._keys)

    def __contains__(self, key: object) -> bool:
        try:
            return self._keys.normalise(key) in self._keys.rows
        except InputError:
            return False

    def keys(self) -> list[Key]:
        """The indexed keys, in insertion order."""
        return [k for k in self._keys.keys if k is not None]


def write_index_file(
    path: str | os.PathLike[str],
    magic: bytes,
    meta: dict[str, Any],
    arrays: dict[str, npt.NDArray[Any]],
) -> None:
    """Write ``arrays`` with ``meta`` in the documented format, atomically (tmp + rename)."""
    entries = []
    offset = 0
    for name, arr in arrays.items():
        arr = np.ascontiguousarray(arr)
        dtype = arr.dtype.newbyteorder("<") if arr.dtype.byteorder not in "|" else arr.dtype
        entries.append(
            {
                "name": name,
                "dtype": dtype.str,
                "shape": list(arr.shape),
                "offset": offset,
                "nbytes": int(arr.nbytes),
            }
        )
        offset += -(-arr.nbytes // 8) * 8
    header = json.dumps({"meta": meta, "arrays": entries}, sort_keys=True).encode("ascii")
    head = _PREFIX.pack(magic, _VERSION, len(header)) + header
    head += b"\0" * (-len(head) % 8)
    target = Path(path)
    tmp = target.with_name(target.name + ".tmp")
    digest = xxhash.xxh64(seed=0)
    try:
        with open(tmp, "wb") as fh:
            fh.write(head)
            digest.update(head)
            for (_, arr), entry in zip(arrays.items(), entries, strict=True):
                data = np.ascontiguousarray(arr).astype(str(entry["dtype"]), copy=False)
                view = data.reshape(-1).view(np.uint8).data
                fh.write(view)
                digest.update(view)
                pad = b"\0" * (-data.nbytes % 8)
                fh.write(pad)
                digest.update(pad)
            fh.write(struct.pack("<Q", digest.intdigest()))
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except OSError as exc:
        raise StoreError(f"cannot write index file {target}: {exc}") from exc


def read_index_file(
    path: str | os.PathLike[str], magic: bytes
) -> tuple[dict[str, Any], dict[str, npt.NDArray[Any]]]:
    """Read a file written by :func:`write_index_file`; ``StoreError`` if it is not one."""
    target = Path(path)
    try:
        size = target.stat().st_size
        buf = bytearray(size)
        with open(target, "rb") as fh:
            got = fh.readinto(buf)
    except OSError as exc:
        raise StoreError(f"cannot read index file {target}: {exc}") from exc
    if got != size or size < _PREFIX.size + 8:
        raise StoreError(f"{target} is not a neardup index file (truncated)")
    got_magic, version, header_len = _PREFIX.unpack_from(buf, 0)
    if got_magic != magic:
        raise StoreError(f"{target} is not a {magic.decode('ascii', 'replace')} index file")
    if version != _VERSION:
        raise StoreError(f"{target}: unsupported index format version {version}")
    (stored,) = struct.unpack_from("<Q", buf, size - 8)
    if xxhash.xxh64_intdigest(memoryview(buf)[: size - 8], seed=0) != stored:
        raise StoreError(f"{target}: checksum mismatch (file damaged or truncated)")
    try:
        header = json.loads(bytes(buf[_PREFIX.size : _PREFIX.size + header_len]).decode("ascii"))
        data_start = _PREFIX.size + header_len
        data_start += -data_start % 8
        arrays: dict[str, npt.NDArray[Any]] = {}
        for entry in header["arrays"]:
            dtype = np.dtype(entry["dtype"])
            count = int(np.prod(entry["shape"], dtype=np.int64))
            start = data_start + int(entry["offset"])
            if start + count * dtype.itemsize > size - 8:
                raise StoreError(f"{target}: array {entry['name']} runs past the end")
            arr = np.frombuffer(buf, dtype=dtype, count=count, offset=start)
            arrays[entry["name"]] = arr.reshape(entry["shape"])
        meta: dict[str, Any] = header["meta"]
    except (ValueError, KeyError, TypeError) as exc:
        raise StoreError(f"{target}: malformed index header: {exc}") from exc
    return meta, arrays
