"""Banded MinHash LSH index with scored candidates (seed 002's "sketches"; Broder 1997).

Seed 002 finds candidate near-duplicates cheaply from min-hash "sketches" before the exact
Jaccard and LCS checks.  The banded form (Indyk & Motwani 1998; *Mining of Massive Datasets*,
ch. 3) splits a MinHash signature of ``num_perm`` values into ``bands`` bands of ``rows``
values; two documents are candidates when any band is identical.  For Jaccard similarity
``s`` that happens with probability ``1 - (1 - s**rows)**bands`` (the S-curve).

``bands`` and ``rows`` are derived from a ``threshold`` the way ``datasketch.MinHashLSH`` does:
minimise ``w_fp * FP + w_fn * FN`` where ``FP`` is the area under the S-curve below the
threshold and ``FN`` the area above it over ``1 - S``, over all ``bands * rows <= num_perm``
(integrals by the trapezoid rule on a fixed grid, so the choice is deterministic).  Both can be
given instead.

Guarantees:

* A candidate shares at least one whole band with the query (band keys are 64-bit splitmix64
  folds of the band values, so a false band match needs a 64-bit collision, ~2**-64).
* Every candidate comes back with its **estimated Jaccard similarity**: the fraction of the
  ``num_perm`` positions where the two signatures are equal (exact fraction, computed on the
  stored signatures), sorted by score descending, then key.
* Signatures of another scheme id or length raise :class:`~neardup.errors.SchemeMismatchError`.
* Keys: all ``str`` or all ``int``; re-adding a key with an equal signature is a no-op,
  with a different one :class:`~neardup.errors.ConflictError`; removing an unknown key
  :class:`~neardup.errors.NotFoundError`.
* Memory: ``8 * num_perm`` bytes per document for the signatures (needed for the scores) plus
  about ``17-30 * bands`` for the band tables (:class:`~neardup.index._bands.BandTables`: a
  4-byte chain link, 1.4-2.9 slots of 8 bytes and their tag bytes per band key) and a live
  flag, in numpy arrays and a memory map; keys in a dict.
* Deterministic: same adds, same answers, same file bytes.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from neardup._jit import compiled_entry
from neardup.config import check_int, check_range
from neardup.errors import (
    ConfigError,
    InputError,
    InputTypeError,
    SchemeMismatchError,
    StoreError,
)
from neardup.index import _lsh_kernels as kern
from neardup.index._bands import BandTables, GrowingRows
from neardup.index._common import Key, read_index_file
from neardup.index._lsh_config import LSHIndexConfig
from neardup.index._lsh_kernels import _COUNT_BITS, _COUNT_MASK, band_keys
from neardup.index._rows import RowIndex, resolve_config
from neardup.sketch.banding import optimal_bands
from neardup.sketch.base import Signature

__all__ = ["LSHIndex", "LSHIndexConfig", "optimal_bands"]

U64 = npt.NDArray[np.uint64]
U32 = npt.NDArray[np.uint32]
I64 = npt.NDArray[np.int64]
_UINT64 = np.dtype(np.uint64)
_MAGIC = b"NDLSHIDX"
_FIRST_OUT = 256  # output slots of a query's first (usually only) pass: 64 candidates


def _rank(item: tuple[Key, float]) -> tuple[float, Key]:
    """Order of a query's results: best score first, then key."""
    return -item[1], item[0]


@functools.lru_cache(maxsize=64)
def _min_equal(num_perm: int, min_score: float) -> int:
    """The fewest equal values ``c`` with ``c / num_perm >= min_score`` (the test every
    score is held to)."""
    return next(c for c in range(num_perm + 1) if c / num_perm >= min_score)


class LSHIndex(RowIndex):
    """Banded MinHash LSH: add, remove, query with scores, save, load."""

    KIND = "an LSH index"
    NOUN = "signatures"
    MAGIC = _MAGIC
    VALUES_NAME = "signatures"
    MIN_ROWS = 256

    def __init__(self, config: LSHIndexConfig | None = None, **params: Any) -> None:
        self.config = config = resolve_config(LSHIndexConfig, config, params)
        self.bands, self.rows = config.band_layout
        self._num_perm = config.num_perm
        self._pending: list[U64] = []  # values of the last rows added, not stored yet
        self._hold = config.buffer_size
        self._query_entry: Any = None  # compiled code of the single query (see _bind_query)
        self._bound: Any = None  # that code with this index's arrays bound
        self._query_nbytes = 8 * config.num_perm
        self._rows_store = GrowingRows()
        self._spare_out: I64 | None = np.empty(_FIRST_OUT, dtype=np.int64)  # see query
        self._init_rows(BandTables(self.bands), (config.num_perm,))

    def __getstate__(self) -> dict[str, Any]:
        """Picklable state (``pickle``, ``copy.deepcopy``): the signatures as a plain array,
        without the memory map and the compiled-code handle, which are made again on use."""
        self._flush()
        state = self.__dict__.copy()
        values = np.zeros(self._values.shape, dtype=np.uint64)
        values[: self._nrows] = self._values[: self._nrows]
        state.update(_values=values, _rows_store=None, _query_entry=None, _bound=None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        state.pop("_query_call", None)  # the compiled-code handle of older pickles
        self.__dict__.update(state)
        self._rows_store = GrowingRows()
        self._query_entry = self._bound = None
        self._query_nbytes = 8 * self.config.num_perm

    @property
    def nbytes(self) -> int:
        """Bytes of the numpy arrays (signatures, band tables, live flags); keys not included."""
        self._flush()
        used = self._nrows * self.config.num_perm * 8 + self._nrows
        return int(self._tables.nbytes + used)

    # -- the band tables -------------------------------------------------------------------

    @property
    def _num_tables(self) -> int:
        return self.bands

    @property
    def _tombstone_allowance(self) -> int:
        return self.config.buffer_size

    def _insert_tables(self, values: U64, rows: U32) -> None:
        """New rows ``rows`` (consecutive, as every caller adds them) holding ``values``."""
        if rows.shape[0] == 0:
            return
        tables = self._tables
        start, end = int(rows[0]), int(rows[-1]) + 1
        self._reserve_tables(rows.shape[0], end)
        tables.used = kern._add_block(
            np.ascontiguousarray(values), start, self._values, self._alive, tables.slots,
            tables.tags, tables.next, tables.band_used, self.bands, self.rows,
        )  # fmt: skip

    def _reserve_tables(self, keys: int, rows: int) -> None:
        """:meth:`BandTables.reserve`, forgetting the bound arrays when they grow."""
        tables = self._tables
        if tables.used + keys > tables.limit or rows > tables.next.shape[0]:
            self._unbind()
            tables.reserve(keys, rows)

    def _compact_tables(self, renumber: npt.NDArray[np.int64]) -> None:
        """Nothing before the values move: :meth:`_rebuild_tables` hashes them again."""

    def _rebuild_tables(self) -> None:
        n = self._nrows
        self._unbind()
        self._tables.clear(n)
        if n:
            self._insert_tables(self._values[:n], np.arange(n, dtype=np.uint32))

    def _table_arrays(self, n: int) -> tuple[U64, U32]:
        """Per band, the band keys of rows ``0 .. n-1`` sorted (stably), with their rows."""
        keys = band_keys(self._values[:n], self.bands, self.rows)
        order = np.argsort(keys, axis=1, kind="stable")
        return np.take_along_axis(keys, order, axis=1), order.astype(np.uint32)

    def _restore_tables(self, keys: U64, rows: U32) -> None:
        """Nothing to read: :meth:`_rebuild_tables` hashes the restored values."""

    # -- input -----------------------------------------------------------------------------

    def _signature(self, sig: object, seen: list[str]) -> U64:
        """Values of a valid signature; its scheme id must be the index's (or, on an empty
        index, the first one of this call: ``seen`` collects it, and only a successful add
        adopts it, so a query or a failed add never changes the index's scheme)."""
        if not isinstance(sig, Signature):
            raise InputTypeError(f"expected a minhash Signature, got {type(sig).__name__}")
        if len(sig) == 0:
            raise InputError(
                f"empty {sig.scheme} signature (a text without shingles) cannot be indexed "
                "or queried"
            )
        if sig.values.dtype != np.uint64 or len(sig) != self.config.num_perm:
            raise SchemeMismatchError(
                f"this index takes {self.config.num_perm} uint64 MinHash values; got "
                f"{len(sig)} {sig.values.dtype} values ({sig.scheme_id})"
            )
        self._check_scheme(sig, seen)
        return sig.values

    def _query_values(self, sig: object) -> U64:
        """:meth:`_signature` of a query, with a fast path for the usual valid one."""
        if type(sig) is Signature:
            values = sig.values
            if (
                values.shape[0] == self._num_perm
                and values.dtype == _UINT64
                and sig.scheme_id == self.scheme_id
            ):
                return values
        return self._signature(sig, [])

    def _matrix(self, signatures: object, seen: list[str]) -> U64:
        """(n, num_perm) uint64 from Signatures, or a raw 2-d uint64 array (no scheme check)."""
        if isinstance(signatures, np.ndarray):
            if signatures.dtype != np.uint64:
                raise InputTypeError(f"signature arrays must be uint64, got {signatures.dtype}")
            if signatures.ndim != 2 or signatures.shape[1] != self.config.num_perm:
                raise SchemeMismatchError(
                    f"expected shape (n, {self.config.num_perm}), got {signatures.shape}"
                )
            return np.ascontiguousarray(signatures)
        if isinstance(signatures, Signature):
            return self._signature(signatures, seen)[None, :]
        if isinstance(signatures, str | bytes) or not isinstance(signatures, Sequence):
            raise InputTypeError(f"signatures must be a sequence, got {type(signatures).__name__}")
        out = np.empty((len(signatures), self.config.num_perm), dtype=np.uint64)
        for i, sig in enumerate(signatures):
            out[i] = self._signature(sig, seen)
        return out

    # -- add / remove ----------------------------------------------------------------------

    def _same(self, previous: Any, value: Any) -> bool:
        return bool(np.array_equal(previous, value))

    def _conflict_message(self, key: Key, previous: Any, value: Any) -> str:
        return f"key {key!r} is already indexed with a different signature; remove it first"

    def _table_keys(self, values: U64) -> U64:
        return band_keys(values, self.bands, self.rows)

    def add(self, key: Key, signature: Signature) -> None:
        """Index ``signature`` under ``key`` (duplicate policy in the module docs)."""
        row = self._nrows
        if (
            row < len(self._alive)
            and type(signature) is Signature
            and signature.scheme_id == self.scheme_id  # None until the first add
        ):
            values = signature.values
            if (
                values.shape[0] == self._num_perm
                and values.dtype == _UINT64
                and self._keys.append_new(key) is not None
            ):
                # The usual add of a new key (the general path below otherwise): held back,
                # stored and hashed with the next few in one compiled call.
                self._nrows = row + 1
                pending = self._pending
                pending.append(values)
                if len(pending) >= self._hold:
                    self._flush()
                return
        schemes: list[str] = []
        values = self._signature(signature, schemes)
        row_added = self._add_row(key, values, schemes)
        if row_added is not None:
            self._insert_one(values, row_added)

    def _flush(self) -> None:
        """Store and hash the adds held back (rows ``_nrows - len(pending)`` on)."""
        pending = self._pending
        if not pending:
            return
        self._pending = []
        start = self._nrows - len(pending)
        if len(pending) == 1:
            self._insert_one(pending[0], start)
            return
        try:
            # The rows' bytes joined: a third of the cost of ``np.array`` of the list (the
            # fast path of :meth:`add` holds native uint64 values only).
            block = np.frombuffer(bytearray().join(pending), dtype=np.uint64)  # type: ignore[arg-type]
            block = block.reshape(len(pending), self._num_perm)
        except TypeError:  # a signature whose values are not contiguous
            block = np.array(pending)
        tables = self._tables
        self._reserve_tables(len(pending), self._nrows)
        tables.used = kern._add_block(
            block, start, self._values, self._alive, tables.slots, tables.tags,
            tables.next, tables.band_used, self.bands, self.rows,
        )  # fmt: skip

    def _reserve(self, rows: int) -> None:
        """Room for ``rows`` rows: the signatures grow in place (:class:`GrowingRows`)."""
        if rows >= 1 << 32:
            raise InputError(f"{self.KIND} holds at most 2**32 - 1 rows; compact or shard")
        cap = self._values.shape[0]
        if rows <= cap:
            return
        self._unbind()
        cap = max(rows, 2 * cap)
        n, width = self._nrows, self._values.shape[1]
        store = self._rows_store
        if store.owns(self._values):
            self._values = np.empty((0, width), dtype=np.uint64)  # the map's only view goes
            self._values = store.resize(cap, width, n)
        else:
            self._values = store.adopt(self._values, n, cap)
        alive = np.zeros(cap, dtype=np.bool_)
        alive[:n] = self._alive[:n]
        self._alive = alive

    def _insert_one(self, values: U64, row: int) -> None:
        """Store ``values`` as live row ``row`` and insert its band keys (one compiled call)."""
        tables = self._tables
        if tables.used >= tables.limit or row >= tables.next.shape[0]:
            self._reserve_tables(1, row + 1)
        # A block of one row, fresh (writable) as the held-back blocks are: the same
        # compiled kernel for both, so a new machine compiles one.
        block = np.array(values, dtype=np.uint64, ndmin=2)
        tables.used = kern._add_block(
            block, row, self._values, self._alive, tables.slots, tables.tags, tables.next,
            tables.band_used, self.bands, self.rows,
        )  # fmt: skip

    def add_many(self, keys: Sequence[Key], signatures: object) -> None:
        """Index many signatures at once (Signatures, or an (n, num_perm) uint64 array)."""
        schemes: list[str] = []
        sigs = self._matrix(signatures, schemes)
        self._add_rows(keys, sigs, schemes)

    def get(self, key: Key) -> Signature:
        """The signature indexed under ``key`` (with the index's scheme id)."""
        self._flush()
        values = self._values[self._keys.row(key)].copy()
        return Signature(self.scheme_id or "raw", values)

    # -- queries ---------------------------------------------------------------------------

    def _rows_of(self, q: U64, need: int, exact: bool) -> tuple[I64, I64]:
        """:func:`_query_into` of one query: (rows, numbers of equal values)."""
        self._flush()
        tables = self._tables
        out = np.empty(_FIRST_OUT, dtype=np.int64)
        while True:
            k = kern._query_into(
                q, self._values, self._alive, tables.slots, tables.tags, tables.next, self.bands,
                self.rows, need, exact, out,
            )  # fmt: skip
            if k >= 0:
                quarter = out.shape[0] // 4
                return out[:k], out[quarter : quarter + k]
            out = np.empty(-8 * k, dtype=np.int64)

    def candidate_rows(self, sigs: object) -> tuple[I64, I64]:
        """Distinct ``(query number, row)`` pairs sharing a band, sorted by query then row
        (``sigs`` as :meth:`query_many` takes them)."""
        qs, rows, _ = self._many(self._matrix(sigs, []), 0)
        return qs, rows

    def _many(self, sigs: U64, need: int) -> tuple[I64, I64, I64]:
        self._flush()
        tables = self._tables
        found: tuple[I64, I64, I64] = kern._query_many(
            np.ascontiguousarray(sigs), self._values, self._alive, tables.slots, tables.tags,
            tables.next, self.bands, self.rows, need,
        )  # fmt: skip
        return found

    def query(
        self, signature: Signature, min_score: float = 0.0, limit: int | None = None
    ) -> list[tuple[Key, float]]:
        """Candidates ``(key, estimated Jaccard)`` sharing a band, best first, then by key.

        ``min_score`` drops candidates whose estimate is lower; ``limit`` keeps the best ones.
        """
        # The usual query (a contiguous uint64 signature of the index's scheme and length, no
        # options) costs one compiled call with the index's arrays bound already: the checks
        # here are the ones that code needs (it checks no types), the general path the rest.
        if type(signature) is Signature and not min_score and limit is None:
            if self._pending:
                self._flush()
            bound = self._bound
            q = signature.values  # C-contiguous, uint32 or uint64 (Signature's guarantee)
            if (
                bound is not None
                and q.itemsize == 8
                and q.nbytes == self._query_nbytes
                and signature.scheme_id == self.scheme_id
            ):
                # An output buffer of this call's own: taken from the index (another
                # thread's query finds none and takes the general path) and given back.
                out = self._spare_out
                self._spare_out = None
                if out is not None:
                    code = bound(out, q)
                    if code >= 0:  # no row or one: the answer is the code (out unread)
                        self._spare_out = out
                        if code == 0:
                            return []  # the usual answer for a new document
                        code -= 1
                        return [
                            (
                                self._keys.keys[code >> _COUNT_BITS],
                                (code & _COUNT_MASK) / self._num_perm,
                            )
                        ]  # type: ignore[list-item]
                    return self._answer(q, out, code, 0, None)
        return self._query_general(signature, min_score, limit)

    def _query_general(
        self, signature: Signature, min_score: float, limit: int | None
    ) -> list[tuple[Key, float]]:
        """:meth:`query` of any input: every check, then the compiled call."""
        if limit is not None:
            check_int("limit", limit, low=1)
        values = signature.values if type(signature) is Signature else None
        if (
            values is not None
            and signature.scheme_id == self.scheme_id
            and values.ndim == 1
            and values.shape[0] == self._num_perm
            and values.dtype == _UINT64
        ):
            q = values
        else:
            q = self._signature(signature, [])
        need = 0
        if min_score:
            check_range("min_score", min_score, low=0.0, high=1.0)
            need = _min_equal(self._num_perm, float(min_score))
        q = np.ascontiguousarray(q)
        self._flush()
        out = self._spare_out
        self._spare_out = None
        if out is None:
            out = np.empty(_FIRST_OUT, dtype=np.int64)
        call = self._bound or self._bind_query()
        code = self._call(need, out, q) if need else call(out, q)
        return self._answer(q, out, code, need, limit)

    def _answer(
        self, q: U64, out: I64, code: int, need: int, limit: int | None
    ) -> list[tuple[Key, float]]:
        """The ranked answer of a single-query kernel's ``code`` (``out`` its buffer, given
        back to the index once read)."""
        if code == 0:
            self._spare_out = out
            return []  # the usual answer for a new document
        num_perm = self._num_perm
        keys = self._keys.keys
        if code > 0:
            self._spare_out = out
            code -= 1
            return [(keys[code >> _COUNT_BITS], (code & _COUNT_MASK) / num_perm)]  # type: ignore[list-item]
        if -code <= _FIRST_OUT // 4:
            quarter = _FIRST_OUT // 4
            rows, counts = out[:-code].tolist(), out[quarter : quarter - code].tolist()
            self._spare_out = out
        else:
            self._spare_out = out
            found, equal = self._rows_of(q, need, True)
            rows, counts = found.tolist(), equal.tolist()
        ranked = sorted(zip([-c for c in counts], [keys[r] for r in rows], strict=True))
        result = [(k, -c / num_perm) for c, k in ranked]
        return result[:limit] if limit is not None else result  # type: ignore[misc]

    def _call(self, need: int, out: I64, q: U64) -> int:
        """The single-query kernel with a ``need`` (``min_score``) on this index's arrays."""
        tables = self._tables
        return int(
            kern._query_one(
                self._values, self._alive, tables.slots, tables.tags, tables.next, self.rows,
                need, out, q,
            )
        )  # fmt: skip

    def _bind_query(self) -> Any:
        """The single-query kernel's compiled code with this index's arrays and ``need = 0``
        bound, called as ``bound(out, q)`` with a C-contiguous uint64 query of ``num_perm``
        values and an int64 output buffer of ``_FIRST_OUT`` values (the compiled code does
        not check the types: callers do).  Kept until the arrays change (:meth:`_unbind`)."""
        self._flush()
        tables = self._tables
        arrays = (self._values, self._alive, tables.slots, tables.tags, tables.next)
        if self._query_entry is None:
            self._query_entry = compiled_entry(
                kern._query_one, *arrays, self.rows, 0, np.empty(_FIRST_OUT, dtype=np.int64),
                np.empty(self._num_perm, dtype=np.uint64),
            )  # fmt: skip
        self._bound = functools.partial(self._query_entry, *arrays, self.rows, 0)
        return self._bound

    def _unbind(self) -> None:
        """Forget the bound arrays (before any of them is replaced or grown)."""
        self._bound = None

    def query_keys(self, signature: Signature, min_score: float = 0.0) -> list[Key]:
        """The keys of :meth:`query` (same ``min_score``), unranked and in no promised order:
        the cheaper form when only the candidate set is wanted (no scores to sort or box)."""
        return self._keys.lookup(self._rows_at_least(signature, min_score).tolist())

    def query_key_array(
        self, signature: Signature, min_score: float = 0.0
    ) -> npt.NDArray[np.int64]:
        """The keys of :meth:`query_keys` as an int64 array, in no promised order (indexes
        with integer keys; ``InputTypeError`` for string keys): for callers that combine
        candidate sets in numpy.  One compiled pass."""
        return self._keys.key_array(self._rows_at_least(signature, min_score))

    def _rows_at_least(self, signature: Signature, min_score: float) -> I64:
        """The distinct rows sharing a band with ``signature`` whose share of equal values
        is at least ``min_score``, in row order (one compiled pass)."""
        check_range("min_score", min_score, low=0.0, high=1.0)
        q = self._query_values(signature)
        need = _min_equal(self._num_perm, float(min_score))
        return self._rows_of(q, need, False)[0]

    def query_many(
        self, signatures: object, min_score: float = 0.0, limit: int | None = None
    ) -> list[list[tuple[Key, float]]]:
        """:meth:`query` for each signature, in one compiled pass."""
        check_range("min_score", min_score, low=0.0, high=1.0)
        if limit is not None:
            check_int("limit", limit, low=1)
        sigs = self._matrix(signatures, [])
        need = _min_equal(self._num_perm, float(min_score)) if min_score else 0
        qs, rows, counts = self._many(sigs, need)
        out: list[list[tuple[Key, float]]] = [[] for _ in range(sigs.shape[0])]
        if not qs.shape[0]:
            return out
        keys = self._keys.lookup(rows.tolist())
        num_perm = self._num_perm
        for q, c, k in zip(qs.tolist(), counts.tolist(), keys, strict=True):
            out[q].append((k, c / num_perm))
        # Only the queries with several candidates (consecutive in ``qs``) need ranking.
        for q in np.unique(qs[1:][qs[1:] == qs[:-1]]).tolist():
            result = out[q]
            result.sort(key=_rank)
            if limit is not None and len(result) > limit:
                out[q] = result[:limit]
        return out

    # -- persistence -----------------------------------------------------------------------

    def _meta(self, n: int) -> dict[str, Any]:
        return {
            "config": self.config.to_dict(),
            "bands": self.bands,
            "rows": self.rows,
            "documents": n,
            "key_kind": self._keys.kind,
            "scheme_id": self.scheme_id,
        }

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> LSHIndex:
        """Read an index written by :meth:`save`; ``StoreError`` if the file is not one."""
        meta, arrays = read_index_file(path, _MAGIC)
        try:
            index = cls(LSHIndexConfig(**meta["config"]))
            n = int(meta["documents"])
            stored = cls._stored(arrays)
            same_layout = (index.bands, index.rows) == (meta["bands"], meta["rows"])
        except (KeyError, TypeError, ValueError, ConfigError) as exc:
            raise StoreError(f"{path}: malformed LSH index metadata: {exc}") from exc
        if not same_layout:
            raise StoreError(f"{path}: band layout differs from the one its config derives")
        index._restore(path, meta, arrays, n, stored)
        return index
