"""Row bookkeeping shared by the Hamming and the LSH index (internal).

Both indexes map caller keys to row numbers (:class:`~neardup.index._common.KeyMap`), keep one
``uint64`` value per row (a fingerprint, or a MinHash signature as a row of a 2-d array), a live
flag per row, and the row's table keys in a :class:`~neardup.index._sorted.MultiTable`.
:class:`RowIndex` holds that logic once: sizes, membership, the duplicate-key policy of
add/add_many, growing the row arrays, remove, compaction, the scheme-id check, and the framing of
save/load.  The subclasses supply what differs: how a value is validated and compared, its table
keys, the queries, and the file's metadata.

Guarantees (both indexes): deterministic; removed rows are tombstones until :meth:`compact`
(triggered when they outnumber both the live rows and the add buffer); at most ``2**32 - 1``
rows (row numbers are ``uint32`` in the tables).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, ClassVar, TypeVar

import numpy as np
import numpy.typing as npt

from neardup.errors import (
    ConfigError,
    ConflictError,
    InputError,
    SchemeMismatchError,
    StoreError,
)
from neardup.index._common import Key, KeyedIndex, KeyMap, write_index_file
from neardup.index._sorted import Segment
from neardup.sketch.base import Signature

__all__ = ["RowIndex", "resolve_config"]

U64 = npt.NDArray[np.uint64]
U32 = npt.NDArray[np.uint32]
C = TypeVar("C")


def resolve_config(config_type: type[C], config: C | None, params: dict[str, Any]) -> C:
    """An index's config: ``config`` itself, or one built from ``params`` (not both)."""
    if config is None:
        return config_type(**params)
    if params:
        raise ConfigError("give either config= or individual parameters, not both")
    if not isinstance(config, config_type):
        raise ConfigError(f"config must be {config_type.__name__}, got {type(config).__name__}")
    return config


class RowIndex(KeyedIndex):
    """Keys, per-row values, live flags and tables: the state common to both indexes."""

    #: "a Hamming index": the subject of the capacity message.
    KIND: ClassVar[str]
    #: "fingerprints" / "signatures": the plural noun of the messages.
    NOUN: ClassVar[str]
    #: file magic and the name of the per-row value array in the file.
    MAGIC: ClassVar[bytes]
    VALUES_NAME: ClassVar[str]
    #: rows allocated for an empty or freshly compacted index.
    MIN_ROWS: ClassVar[int]

    scheme_id: str | None

    def _init_rows(self, tables: Any, value_shape: tuple[int, ...]) -> None:
        """Empty state: ``value_shape`` is ``()`` for a fingerprint, ``(num_perm,)`` else."""
        self._tables = tables
        self._keys = KeyMap()
        self._values: U64 = np.zeros((self.MIN_ROWS, *value_shape), dtype=np.uint64)
        self._alive = np.zeros(self.MIN_ROWS, dtype=np.bool_)
        self._nrows = 0
        self.scheme_id = None

    # -- what the subclasses define --------------------------------------------------------

    def _same(self, previous: Any, value: Any) -> bool:
        """Whether a key's ``previous`` value equals the ``value`` added again."""
        raise NotImplementedError

    def _conflict_message(self, key: Key, previous: Any, value: Any) -> str:
        raise NotImplementedError

    def _table_keys(self, values: U64) -> U64:
        """(T, n) table keys of ``n`` values."""
        raise NotImplementedError

    # -- the tables (sorted multi-tables by default; the LSH index hashes its bands) -------

    def _flush(self) -> None:
        """Take in adds held back for a bulk insert (the LSH index holds some); every read of
        the values or the tables calls this first."""

    def _insert_tables(self, values: U64, rows: U32) -> None:
        """Add new rows (holding ``values``) to the tables."""
        self._tables.insert(self._table_keys(values), rows, self._alive)

    def _compact_tables(self, renumber: npt.NDArray[np.int64]) -> None:
        """Drop removed rows from the tables and renumber the others (before the values move)."""
        self._tables.compact(self._alive, renumber)

    def _rebuild_tables(self) -> None:
        """After the values were compacted or restored (rows ``0 .. n-1``, all live)."""

    def _table_arrays(self, n: int) -> tuple[U64, U32]:
        """The file's (T, n) table keys and rows, each table sorted by key (compacted index)."""
        segs = self._tables.segments
        t = self._num_tables
        keys = segs[0].keys if segs else np.zeros((t, 0), dtype=np.uint64)
        rows = segs[0].rows if segs else np.zeros((t, 0), dtype=np.uint32)
        return keys, rows

    def _restore_tables(self, keys: U64, rows: U32) -> None:
        """Fill the tables from a file's arrays (the values are restored already)."""
        if keys.shape[1]:
            self._tables.segments = [Segment(keys, rows, self._tables.min_width)]

    @property
    def _num_tables(self) -> int:
        """Tables (one key per row in each)."""
        return int(self._tables.num_tables)

    @property
    def _tombstone_allowance(self) -> int:
        """Removed rows kept before :meth:`remove` compacts (at least; and while they are
        fewer than the live rows)."""
        return int(self._tables.buffer_size)

    # -- sizes -----------------------------------------------------------------------------

    # -- scheme ids ------------------------------------------------------------------------

    def _check_scheme(self, sig: Signature, seen: list[str]) -> None:
        """Signatures must share one scheme id: the index's, else the first one in this call.

        The index adopts a scheme id only when an add succeeds (``seen`` collects it), so a
        query or a failed add never changes it.
        """
        expected = self.scheme_id if self.scheme_id is not None else (seen[0] if seen else None)
        if expected is None:
            seen.append(sig.scheme_id)
        elif sig.scheme_id != expected:
            raise SchemeMismatchError(
                f"this index holds {expected} {self.NOUN}, got {sig.scheme_id}"
            )

    def _adopt_scheme(self, seen: list[str]) -> None:
        if self.scheme_id is None and seen:
            self.scheme_id = seen[0]

    # -- add / remove ----------------------------------------------------------------------

    def _add_row(self, key: object, value: Any, seen: list[str]) -> int | None:
        """Store one validated ``value`` under ``key``: its new row, or ``None`` when the key
        already holds an equal value (``ConflictError`` when it holds another).  The caller
        inserts the row's table keys."""
        self._flush()
        km = self._keys
        k = km.normalise(key)
        old = km.rows.get(k)
        if old is not None and not self._same(self._values[old], value):
            raise ConflictError(self._conflict_message(k, self._values[old], value))
        self._adopt_scheme(seen)
        if old is not None:
            return None
        row = self._nrows
        self._reserve(row + 1)
        self._values[row] = value
        self._alive[row] = True
        self._nrows += 1
        km.append([k], {k: row})
        return row

    def _add_rows(self, keys: Sequence[Key], values: U64, seen: list[str]) -> None:
        """Store many validated ``values`` (all-or-nothing) and insert their table keys."""
        self._flush()
        km = self._keys
        norm, repeats, prepared = km.prepare(keys)
        if len(norm) != values.shape[0]:
            raise InputError(f"{len(norm)} keys but {values.shape[0]} {self.NOUN}")
        fresh = norm
        if repeats:
            keep = np.ones(len(norm), dtype=np.bool_)
            for i, (in_index, where) in repeats.items():
                previous = self._values[where] if in_index else values[where]
                if not self._same(previous, values[i]):
                    raise ConflictError(self._conflict_message(norm[i], previous, values[i]))
                keep[i] = False
            fresh = [k for k, kept in zip(norm, keep.tolist(), strict=True) if kept]
            values = values[keep]
        self._adopt_scheme(seen)
        if not fresh:
            return
        start = self._nrows
        self._reserve(start + len(fresh))
        self._values[start : start + len(fresh)] = values
        self._alive[start : start + len(fresh)] = True
        self._nrows += len(fresh)
        km.append(fresh, prepared)
        rows = np.arange(start, start + len(fresh), dtype=np.uint32)
        self._insert_tables(values, rows)

    def _reserve(self, rows: int) -> None:
        """Room for ``rows`` rows (capacity doubles, so appends are amortised O(1))."""
        if rows >= 1 << 32:
            raise InputError(f"{self.KIND} holds at most 2**32 - 1 rows; compact or shard")
        cap = self._values.shape[0]
        if rows <= cap:
            return
        cap = max(rows, 2 * cap)
        values = np.zeros((cap, *self._values.shape[1:]), dtype=np.uint64)
        values[: self._nrows] = self._values[: self._nrows]
        alive = np.zeros(cap, dtype=np.bool_)
        alive[: self._nrows] = self._alive[: self._nrows]
        self._values, self._alive = values, alive

    def remove(self, key: Key) -> None:
        """Remove ``key``; ``NotFoundError`` when it is not indexed."""
        self._flush()
        row = self._keys.row(key)
        self._alive[row] = False
        self._keys.drop(row)
        dead = self._nrows - len(self._keys)
        if dead > max(self._tombstone_allowance, len(self._keys)):
            self.compact()

    def compact(self) -> None:
        """Drop removed rows and merge the tables into one sorted segment (same content)."""
        self._flush()
        live = self._alive[: self._nrows]
        renumber = np.cumsum(live, dtype=np.int64) - 1
        self._compact_tables(renumber)
        values = self._values[: self._nrows][live]
        n = values.shape[0]
        self._values = np.zeros((max(n, self.MIN_ROWS), *values.shape[1:]), dtype=np.uint64)
        self._values[:n] = values
        self._alive = np.zeros(self._values.shape[0], dtype=np.bool_)
        self._alive[:n] = True
        self._nrows = n
        self._keys.compact()
        self._rebuild_tables()

    # -- persistence -----------------------------------------------------------------------

    def _meta(self, n: int) -> dict[str, Any]:
        """The file's metadata for ``n`` (compacted) rows."""
        raise NotImplementedError

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the index to ``path`` (compacts it first; atomic replace)."""
        self.compact()
        n = self._nrows
        keys, rows = self._table_arrays(n)
        arrays: dict[str, npt.NDArray[Any]] = {
            self.VALUES_NAME: self._values[:n],
            "table_keys": keys,
            "table_rows": rows,
            **self._keys.to_arrays(),
        }
        write_index_file(path, self.MAGIC, self._meta(n), arrays)

    @classmethod
    def _stored(cls, arrays: dict[str, npt.NDArray[Any]]) -> tuple[U64, U64, U32]:
        """The file's per-row values, table keys and table rows (``KeyError`` if absent,
        ``StoreError`` unless each holds unsigned integers that fit its type exactly)."""
        for name, width in ((cls.VALUES_NAME, 8), ("table_keys", 8), ("table_rows", 4)):
            dtype = arrays[name].dtype
            # Another kind would be converted, not read (floats rounded, text parsed).
            if dtype.kind != "u" or dtype.itemsize > width:
                raise StoreError(f"array {name} holds {dtype}, not {8 * width}-bit unsigned")
        return (
            arrays[cls.VALUES_NAME].astype(np.uint64, copy=False),
            arrays["table_keys"].astype(np.uint64, copy=False),
            arrays["table_rows"].astype(np.uint32, copy=False),
        )

    def _restore(
        self,
        path: str | os.PathLike[str],
        meta: dict[str, Any],
        arrays: dict[str, npt.NDArray[Any]],
        n: int,
        stored: tuple[U64, U64, U32],
    ) -> None:
        """Fill a fresh index from a file's ``n`` rows; ``StoreError`` on inconsistent data."""
        values, keys, rows = stored
        t = self._num_tables
        shape = (n, *self._values.shape[1:])
        if values.shape != shape or keys.shape != (t, n) or rows.shape != (t, n):
            raise StoreError(f"{path}: array shapes disagree with the metadata")
        scheme_id = meta.get("scheme_id")
        if scheme_id is not None and not isinstance(scheme_id, str):
            raise StoreError(f"{path}: scheme id {scheme_id!r} is not a string")
        try:
            self._keys = KeyMap.from_arrays(meta.get("key_kind"), arrays)
        except (KeyError, TypeError, ValueError) as exc:  # absent, non-integer or not UTF-8
            raise StoreError(f"{path}: malformed keys: {exc}") from exc
        if len(self._keys) != n:
            raise StoreError(f"{path}: {len(self._keys)} keys for {n} {self.NOUN}")
        self._reserve(n)
        self._values[:n] = values
        self._alive[:n] = True
        self._nrows = n
        if n and rows.max() >= n:
            raise StoreError(f"{path}: table row number out of range")
        self._restore_tables(keys, rows)
        self._rebuild_tables()
        self.scheme_id = scheme_id
