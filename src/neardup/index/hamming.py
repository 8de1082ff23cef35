"""Exact Hamming-distance index over 64-bit SimHash fingerprints (seed 003; Manku et al. 2007).

Seed 003 ("General Simhash-based Framework for News Aggregators", MECS 2017) splits the ``f``
fingerprint bits into ``N > d`` blocks: if two fingerprints differ in at most ``d`` bits, at
least one block is identical in both (pigeonhole), so looking up each block exactly finds every
neighbour.  Here each block gets a table in the style of Manku, Jain & Das Sarma ("Detecting
near-duplicates for web crawling", WWW 2007): table ``t`` stores every fingerprint *rotated* so
that block ``t`` comes first, sorted; the rows whose top ``w_t`` bits equal the query's are one
contiguous run, and the rotated fingerprints in it are verified with a popcount right there
(rotation keeps Hamming distances), without a random access per candidate.

Guarantees:

* **Exact**: ``query(fp, d)`` returns precisely the keys whose fingerprint is within Hamming
  distance ``d`` of ``fp``, for every ``d <= num_blocks - 1`` (tests compare it with brute
  force).  Each key appears once (a row is reported only by the first block it matches).
* **Deterministic order**: results sort by distance, then key.
* **Keys**: caller keys, all ``str`` or all ``int``.  Adding a key again with the same
  fingerprint does nothing (idempotent re-ingest); with a different fingerprint it raises
  :class:`~neardup.errors.ConflictError` (remove it first).  Removing an unknown key raises
  :class:`~neardup.errors.NotFoundError`.
* **Memory**: ``12 * num_blocks + 9`` bytes per fingerprint in numpy arrays (key, row number
  per table; the fingerprint and a live flag per row) plus the caller keys in a dict.
* **Persistence**: :meth:`HammingIndex.save` writes the documented little-endian format of
  :mod:`neardup.index._common` (sorted tables included, so :meth:`HammingIndex.load` is a read
  plus one ``bincount`` per table); a checksum catches damaged files.

Complexity: a query probes ``N`` buckets of ``n / 2**w`` rows on average (``w`` = block bits),
plus the last few thousand added rows by brute force (the add buffer), plus a binary search per
table per segment when a block is wider than 16 bits.  Adding is amortised ``O(N log n)``.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from neardup.config import Config, check_choice, check_int
from neardup.errors import (
    ConfigError,
    InputError,
    InputTypeError,
    SchemeMismatchError,
    StoreError,
)
from neardup.index._common import Key, read_index_file
from neardup.index._rows import RowIndex, resolve_config
from neardup.index._sorted import (
    MultiTable,
    hamming_probe_all,
    hamming_probe_segment,
    positions_within,
)
from neardup.sketch.base import Signature

__all__ = ["HammingIndex", "HammingIndexConfig", "positions_within"]

U64 = npt.NDArray[np.uint64]
U32 = npt.NDArray[np.uint32]


class _DamagedTables(StoreError):
    """A file's tables do not index its fingerprints (:meth:`HammingIndex.load` names the
    file)."""


_MAGIC = b"NDHAMIDX"
_U64_MAX = (1 << 64) - 1


@dataclasses.dataclass(frozen=True)
class HammingIndexConfig(Config):
    """Parameters of :class:`HammingIndex`.

    * ``bits``: fingerprint width (64).
    * ``max_distance``: the largest Hamming distance the index must answer exactly (seed 003
      and Manku et al.: 3 for near-duplicates).  Queries may ask for any distance up to
      ``num_blocks - 1``.
    * ``num_blocks``: number of blocks / tables (default ``max_distance + 1``, i.e. 4 blocks of
      16 bits for ``d = 3``: the layout of the seed's plan 2, and the fastest of the layouts
      measured in ``docs/indexes.md``).  Blocks are as even as possible, wider first.
    * ``block_bits``: an explicit layout (block widths, most significant first) instead.
    * ``buffer_size``: rows kept unsorted (scanned by brute force) before they are sorted
      into a segment.
    """

    SCHEME = "hamming-index"

    bits: int = 64
    max_distance: int = 3
    num_blocks: int | None = None
    block_bits: tuple[int, ...] | None = None
    buffer_size: int = 1024

    def __post_init__(self) -> None:
        check_choice("bits", self.bits, (64,))
        check_int("max_distance", self.max_distance, low=0, high=self.bits - 1)
        check_int("buffer_size", self.buffer_size, low=1, high=1 << 20)
        if self.block_bits is not None:
            if isinstance(self.block_bits, list):
                object.__setattr__(self, "block_bits", tuple(self.block_bits))
            if not isinstance(self.block_bits, tuple) or not self.block_bits:
                raise ConfigError("block_bits must be a non-empty tuple of block widths")
            for width in self.block_bits:
                check_int("block_bits[i]", width, low=1, high=self.bits)
            if sum(self.block_bits) != self.bits:
                raise ConfigError(
                    f"block_bits must sum to bits={self.bits}, got {sum(self.block_bits)}"
                )
            if self.num_blocks is not None and self.num_blocks != len(self.block_bits):
                raise ConfigError("num_blocks disagrees with block_bits; give one of them")
        elif self.num_blocks is not None:
            check_int("num_blocks", self.num_blocks, low=1, high=self.bits)
        if len(self.layout) <= self.max_distance:
            raise ConfigError(
                f"need more blocks than max_distance (pigeonhole): {len(self.layout)} blocks "
                f"cannot find every fingerprint within distance {self.max_distance}"
            )

    @property
    def layout(self) -> tuple[int, ...]:
        """Block widths, most significant block first."""
        if self.block_bits is not None:
            return tuple(self.block_bits)
        n = self.num_blocks if self.num_blocks is not None else self.max_distance + 1
        base, extra = divmod(self.bits, n)
        return tuple(base + 1 if i < extra else base for i in range(n))


def _rotl(values: U64, shift: int) -> U64:
    if shift == 0:
        return values.copy()
    s = np.uint64(shift)
    return (values << s) | (values >> np.uint64(64 - shift))


class HammingIndex(RowIndex):
    """Exact Hamming-distance search over 64-bit fingerprints, with add, remove, save, load.

    >>> index = HammingIndex(max_distance=3)
    >>> index.add("a", 0b1011)
    >>> index.add("b", 0b0000)
    >>> index.query(0b1001)
    [('a', 1), ('b', 2)]
    """

    KIND = "a Hamming index"
    NOUN = "fingerprints"
    MAGIC = _MAGIC
    VALUES_NAME = "fingerprints"
    MIN_ROWS = 1024

    def __init__(self, config: HammingIndexConfig | None = None, **params: Any) -> None:
        self.config = config = resolve_config(HammingIndexConfig, config, params)
        layout = config.layout
        self._starts = np.concatenate([[0], np.cumsum(layout)[:-1]]).astype(int).tolist()
        self._start_array = np.array(self._starts, dtype=np.int64)
        self._masks = self._frame_masks(layout, self._starts)
        self._init_rows(MultiTable(layout, config.buffer_size), ())

    # -- sizes -----------------------------------------------------------------------------

    @property
    def nbytes(self) -> int:
        """Bytes of the numpy arrays (tables, fingerprints, live flags); keys not included."""
        return int(self._tables.nbytes + self._values.nbytes + self._alive.nbytes)

    # -- input -----------------------------------------------------------------------------

    @staticmethod
    def _frame_masks(layout: tuple[int, ...], starts: list[int]) -> U64:
        n = len(layout)
        masks = np.zeros((n, n), dtype=np.uint64)
        for u, (start, width) in enumerate(zip(starts, layout, strict=True)):
            block = np.array([((1 << width) - 1) << (64 - start - width)], dtype=np.uint64)
            for t in range(n):
                masks[t, u] = _rotl(block, starts[t])[0]
        return masks

    def _fingerprint(self, value: object, seen: list[str]) -> int:
        if isinstance(value, Signature):
            if len(value) == 0:
                raise InputError(
                    f"empty {value.scheme} signature (a text without features) has no "
                    "fingerprint to index or query"
                )
            if value.values.dtype != np.uint64 or len(value) != 1:
                raise SchemeMismatchError(
                    f"a Hamming index takes one 64-bit value per signature; {value!r} has "
                    f"{len(value)} {value.values.dtype} values"
                )
            self._check_scheme(value, seen)
            return int(value.values[0])
        if isinstance(value, np.unsignedinteger | np.signedinteger):
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise InputTypeError(
                f"a fingerprint must be an int in [0, 2**64) or a Signature, "
                f"got {type(value).__name__}"
            )
        if not 0 <= value <= _U64_MAX:
            raise InputError(
                f"fingerprint {value} is outside [0, 2**64); signed 64-bit values must be "
                "reinterpreted as unsigned first (e.g. value & (2**64 - 1))"
            )
        return value

    def _fingerprints(self, values: object, seen: list[str]) -> U64:
        if isinstance(values, np.ndarray):
            if values.ndim != 1:
                raise InputError(f"fingerprints must be 1-d, got shape {values.shape}")
            if values.dtype.kind == "u":
                return values.astype(np.uint64, copy=False)
            if values.dtype.kind == "i":
                if values.size and values.min() < 0:
                    raise InputError(
                        "negative fingerprints: reinterpret signed values with .view(np.uint64)"
                    )
                return values.astype(np.uint64)
            raise InputTypeError(
                f"fingerprints must be an unsigned integer array, got dtype {values.dtype}"
            )
        if isinstance(values, str | bytes) or not isinstance(values, Iterable):
            raise InputTypeError(f"fingerprints must be a sequence, got {type(values).__name__}")
        items = list(values)
        return np.fromiter(
            (self._fingerprint(v, seen) for v in items), dtype=np.uint64, count=len(items)
        )

    def _table_keys(self, fps: U64) -> U64:
        """(T, n): ``fps`` rotated into each table's frame."""
        keys = np.empty((len(self._starts), fps.shape[0]), dtype=np.uint64)
        for t, start in enumerate(self._starts):
            keys[t] = _rotl(fps, start)
        return keys

    def _restore_tables(self, keys: U64, rows: U32) -> None:
        """Fill the tables from a file's arrays, refusing tables that do not index the file's
        fingerprints (``StoreError``): each table lists every row once, under its fingerprint
        rotated into the table's frame, in the order of the table's prefix.  A query trusts
        the tables (it reads distances off their keys), so a damaged or edited file would
        otherwise answer wrongly without a word; the checks are linear, the sort they spare
        is not."""
        n = self._nrows
        widths = self._tables.widths
        for t, start in enumerate(self._starts):
            if np.bincount(rows[t].astype(np.int64), minlength=n).max(initial=1) != 1:
                raise _DamagedTables(f"table {t} does not list every row once")
            if not np.array_equal(keys[t], _rotl(self._values[:n][rows[t]], start)):
                raise _DamagedTables(f"table {t} disagrees with the fingerprints")
            prefix = keys[t] >> np.uint64(64 - widths[t]) if widths[t] < 64 else keys[t]
            if n > 1 and bool((prefix[1:] < prefix[:-1]).any()):
                raise _DamagedTables(f"table {t} is not in order")
        super()._restore_tables(keys, rows)

    # -- add / remove ----------------------------------------------------------------------

    def _same(self, previous: Any, value: Any) -> bool:
        return int(previous) == int(value)

    def _conflict_message(self, key: Key, previous: Any, value: Any) -> str:
        return (
            f"key {key!r} is already indexed with fingerprint {int(previous):#018x}; "
            f"remove it before adding {int(value):#018x}"
        )

    def add(self, key: Key, fingerprint: int | np.uint64 | Signature) -> None:
        """Index ``fingerprint`` under ``key`` (see the class docs for the duplicate policy).

        The one-document path of ingest: no per-call numpy temporaries beyond one (T, 1)
        array, so it costs a few microseconds (``add_many`` is for bulk loads).
        """
        schemes: list[str] = []
        fp = self._fingerprint(fingerprint, schemes)
        row = self._add_row(key, fp, schemes)
        if row is None:
            return
        mask = _U64_MAX
        table_keys = np.array(
            [[((fp << s) | (fp >> (64 - s))) & mask if s else fp] for s in self._starts],
            dtype=np.uint64,
        )
        self._tables.insert(table_keys, np.array([row], dtype=np.uint32), self._alive)

    def add_many(self, keys: Sequence[Key], fingerprints: object) -> None:
        """Index many fingerprints at once (vectorised; all-or-nothing on bad input)."""
        schemes: list[str] = []
        fps = self._fingerprints(fingerprints, schemes)
        self._add_rows(keys, fps, schemes)

    def get(self, key: Key) -> int:
        """The fingerprint indexed under ``key``; ``NotFoundError`` when absent."""
        return int(self._values[self._keys.row(key)])

    # -- queries ---------------------------------------------------------------------------

    def _distance(self, max_distance: int | None) -> int:
        if max_distance is None:
            return self.config.max_distance
        check_int("max_distance", max_distance, low=0)
        if max_distance >= len(self._starts):
            raise ConfigError(
                f"this index answers distances up to {len(self._starts) - 1} exactly "
                f"({len(self._starts)} blocks); got max_distance={max_distance}"
            )
        return max_distance

    def query_rows(
        self, fingerprints: U64, max_distance: int
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """Raw matches ``(query number, row, distance)``, unordered (for bulk callers).

        ``fingerprints`` as :meth:`query_many` takes them; ``max_distance`` up to
        ``num_blocks - 1``."""
        return self._probe(self._fingerprints(fingerprints, []), self._distance(max_distance))

    def _probe(
        self, fingerprints: U64, max_distance: int
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """:meth:`query_rows` of validated 1-d uint64 ``fingerprints`` and distance."""
        tables = self._tables
        if len(tables.segments) == 1 and tables.buffer_count == 0:
            # One sorted segment (after a bulk build, a load or a compaction): a direct call
            # skips unboxing the typed lists (~2.5 us of the ~7 us of a query, measured).
            seg = tables.segments[0]
            return hamming_probe_segment(
                fingerprints,
                self._start_array,
                tables.widths,
                seg.keys,
                seg.rows,
                seg.directory,
                np.int64(seg.dbits),
                self._masks,
                self._alive,
                np.int64(max_distance),
            )
        seg_keys, seg_rows, seg_dirs, seg_dbits = tables.segment_lists()
        return hamming_probe_all(
            fingerprints,
            self._start_array,
            tables.widths,
            seg_keys,
            seg_rows,
            seg_dirs,
            seg_dbits,
            self._masks,
            self._alive,
            np.int64(max_distance),
            tables.buffer_keys[0],
            tables.buffer_rows,
            np.int64(tables.buffer_count),
        )

    def query(
        self, fingerprint: int | np.uint64 | Signature, max_distance: int | None = None
    ) -> list[tuple[Key, int]]:
        """``(key, distance)`` of every fingerprint within ``max_distance``, sorted by both."""
        d = self._distance(max_distance)
        fps = np.array([self._fingerprint(fingerprint, [])], dtype=np.uint64)
        _, rows, dists = self._probe(fps, d)
        keys = self._keys.lookup(rows.tolist())
        return [(k, dist) for dist, k in sorted(zip(dists.tolist(), keys, strict=True))]

    def query_key_array(
        self, fingerprint: int | np.uint64 | Signature, max_distance: int | None = None
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """:meth:`query` as two int64 arrays ``(keys, distances)`` in no promised order
        (indexes with integer keys; ``InputTypeError`` for string keys): for callers that
        combine candidate sets in numpy."""
        d = self._distance(max_distance)
        fps = np.array([self._fingerprint(fingerprint, [])], dtype=np.uint64)
        _, rows, dists = self._probe(fps, d)
        return self._keys.key_array(rows), dists

    def query_many(
        self, fingerprints: object, max_distance: int | None = None
    ) -> list[list[tuple[Key, int]]]:
        """:meth:`query` for each fingerprint, in one vectorised pass."""
        d = self._distance(max_distance)
        fps = self._fingerprints(fingerprints, [])
        out: list[list[tuple[Key, int]]] = [[] for _ in range(fps.shape[0])]
        qs, rows, dists = self._probe(fps, d)
        keys = self._keys.lookup(rows.tolist())
        for q, dist, k in zip(qs.tolist(), dists.tolist(), keys, strict=True):
            out[q].append((k, dist))
        for result in out:
            result.sort(key=lambda item: (item[1], item[0]))
        return out

    # -- persistence -----------------------------------------------------------------------

    def _meta(self, n: int) -> dict[str, Any]:
        return {
            "config": self.config.to_dict(),
            "key_kind": self._keys.kind,
            "rows": n,
            "scheme_id": self.scheme_id,
        }

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> HammingIndex:
        """Read an index written by :meth:`save`; ``StoreError`` if the file is not one."""
        meta, arrays = read_index_file(path, _MAGIC)
        try:
            params = dict(meta["config"])
            if params.get("block_bits") is not None:
                params["block_bits"] = tuple(params["block_bits"])
            index = cls(HammingIndexConfig(**params))
            n = int(meta["rows"])
            stored = cls._stored(arrays)
        except (KeyError, TypeError, ValueError, ConfigError) as exc:
            raise StoreError(f"{path}: malformed Hamming index metadata: {exc}") from exc
        try:
            index._restore(path, meta, arrays, n, stored)
        except _DamagedTables as exc:
            raise StoreError(f"{path}: damaged Hamming index: {exc}") from None
        return index
