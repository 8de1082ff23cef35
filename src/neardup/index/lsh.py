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
  ``12 * bands`` for the band tables, in numpy arrays; keys in a dict.
* Deterministic: same adds, same answers, same file bytes.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from numba import njit

from neardup.config import Config, check_int, check_range
from neardup.errors import (
    ConfigError,
    InputError,
    InputTypeError,
    SchemeMismatchError,
    StoreError,
)
from neardup.index._common import Key, read_index_file
from neardup.index._rows import RowIndex, resolve_config
from neardup.index._tables import (
    MultiTable,
    count_equal,
    count_equal_at_least,
    distinct_pairs,
    distinct_rows_at_least,
    exact_probe_all,
    exact_probe_segment,
)
from neardup.sketch.base import Signature

__all__ = ["LSHIndex", "LSHIndexConfig", "optimal_bands"]

U64 = npt.NDArray[np.uint64]
_MAGIC = b"NDLSHIDX"
_GRID = 2001  # points of the trapezoid rule on [0, 1]


@functools.lru_cache(maxsize=128)
def optimal_bands(
    threshold: float,
    num_perm: int,
    false_positive_weight: float = 0.5,
    false_negative_weight: float = 0.5,
) -> tuple[int, int]:
    """``(bands, rows)`` minimising the weighted false positive + false negative areas.

    The criterion of ``datasketch.MinHashLSH._optimal_param``; vectorised over all
    ``(bands, rows)`` with ``bands * rows <= num_perm`` (ties: fewest bands, then rows).
    """
    pairs = [(b, r) for b in range(1, num_perm + 1) for r in range(1, num_perm // b + 1)]
    b = np.array([p[0] for p in pairs], dtype=np.float64)[:, None]
    r = np.array([p[1] for p in pairs], dtype=np.float64)[:, None]
    lo = np.linspace(0.0, threshold, _GRID)[None, :]
    hi = np.linspace(threshold, 1.0, _GRID)[None, :]
    fp = np.trapezoid(1.0 - (1.0 - lo**r) ** b, lo, axis=1)
    fn = np.trapezoid((1.0 - hi**r) ** b, hi, axis=1)
    error = false_positive_weight * fp + false_negative_weight * fn
    best = int(np.argmin(error))  # first minimum: pairs are ordered by bands, then rows
    return pairs[best]


@dataclasses.dataclass(frozen=True)
class LSHIndexConfig(Config):
    """Parameters of :class:`LSHIndex`.

    * ``num_perm``: MinHash signature length the index accepts.
    * ``threshold``: Jaccard similarity the bands are tuned for (default 0.8).
    * ``false_positive_weight``, ``false_negative_weight``: weights of the tuning criterion
      (sum to 1; default 0.5 each, as datasketch).
    * ``bands``, ``rows``: give both to override the tuning.
    * ``buffer_size``: recent documents scanned linearly before being sorted into a segment.
    """

    SCHEME = "lsh-index"

    num_perm: int = 128
    threshold: float = 0.8
    false_positive_weight: float = 0.5
    false_negative_weight: float = 0.5
    bands: int | None = None
    rows: int | None = None
    buffer_size: int = 256

    def __post_init__(self) -> None:
        check_int("num_perm", self.num_perm, low=1, high=1 << 14)
        check_range("threshold", self.threshold, low=0.0, high=1.0, low_open=True, high_open=True)
        check_range("false_positive_weight", self.false_positive_weight, low=0.0, high=1.0)
        check_range("false_negative_weight", self.false_negative_weight, low=0.0, high=1.0)
        if abs(self.false_positive_weight + self.false_negative_weight - 1.0) > 1e-9:
            raise ConfigError("false_positive_weight + false_negative_weight must be 1")
        check_int("buffer_size", self.buffer_size, low=1, high=1 << 20)
        if (self.bands is None) != (self.rows is None):
            raise ConfigError("give both bands and rows to override the tuning, or neither")
        if self.bands is not None and self.rows is not None:
            check_int("bands", self.bands, low=1, high=self.num_perm)
            check_int("rows", self.rows, low=1, high=self.num_perm)
            if self.bands * self.rows > self.num_perm:
                raise ConfigError(
                    f"bands * rows = {self.bands * self.rows} exceeds num_perm = {self.num_perm}"
                )

    @property
    def band_layout(self) -> tuple[int, int]:
        """``(bands, rows)``: the override, or the tuned values for the threshold."""
        if self.bands is not None and self.rows is not None:
            return self.bands, self.rows
        return optimal_bands(
            float(self.threshold),
            self.num_perm,
            float(self.false_positive_weight),
            float(self.false_negative_weight),
        )


@njit(cache=True)
def band_keys(values: U64, bands: int, rows: int) -> U64:  # pragma: no cover - compiled
    """(bands, n) band keys of the (n, num_perm) signatures: splitmix64 fold of each band.

    ``h = splitmix(band + 1)``; for each value ``v`` of the band ``h = splitmix(h ^ v)``.
    """
    n = values.shape[0]
    out = np.empty((bands, n), dtype=np.uint64)
    for i in range(n):
        for b in range(bands):
            h = np.uint64(b + 1)
            for j in range(rows + 1):
                if j > 0:
                    h ^= values[i, b * rows + j - 1]
                h ^= h >> np.uint64(30)
                h *= np.uint64(0xBF58476D1CE4E5B9)
                h ^= h >> np.uint64(27)
                h *= np.uint64(0x94D049BB133111EB)
                h ^= h >> np.uint64(31)
            out[b, i] = h
    return out


@functools.lru_cache(maxsize=64)
def _min_equal(num_perm: int, min_score: float) -> int:
    """The fewest equal values ``c`` with ``c / num_perm >= min_score`` (the same IEEE test
    as :func:`~neardup.index._tables.count_equal_at_least`)."""
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
        self._init_rows(MultiTable((64,) * self.bands, config.buffer_size), (config.num_perm,))

    @property
    def nbytes(self) -> int:
        """Bytes of the numpy arrays (signatures, band tables, live flags); keys not included."""
        used = self._nrows * self.config.num_perm * 8 + self._nrows
        return int(self._tables.nbytes + used)

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
        schemes: list[str] = []
        values = self._signature(signature, schemes)
        row = self._add_row(key, values, schemes)
        if row is None:
            return
        keys = band_keys(self._values[row : row + 1], self.bands, self.rows)
        self._tables.insert(keys, np.array([row], dtype=np.uint32), self._alive)

    def add_many(self, keys: Sequence[Key], signatures: object) -> None:
        """Index many signatures at once (Signatures, or an (n, num_perm) uint64 array)."""
        schemes: list[str] = []
        sigs = self._matrix(signatures, schemes)
        self._add_rows(keys, sigs, schemes)

    def get(self, key: Key) -> Signature:
        """The signature indexed under ``key`` (with the index's scheme id)."""
        values = self._values[self._keys.row(key)].copy()
        return Signature(self.scheme_id or "raw", values)

    # -- queries ---------------------------------------------------------------------------

    def candidate_rows(self, sigs: U64) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """Distinct ``(query number, row)`` pairs sharing a band, sorted by query then row."""
        qs, rows = self._band_hits(sigs)
        return distinct_pairs(qs, rows, np.int64(max(self._nrows, 1)))

    def _band_hits(self, sigs: U64) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """``(query number, row)`` of every band shared, a row once per band it shares."""
        qkeys = np.ascontiguousarray(band_keys(sigs, self.bands, self.rows).T)
        tables = self._tables
        if len(tables.segments) == 1 and tables.buffer_count == 0:
            # One sorted segment (bulk build, load, compaction): skip the typed-list unboxing.
            seg = tables.segments[0]
            return exact_probe_segment(
                qkeys, seg.keys, seg.rows, seg.directory, np.int64(seg.dbits), self._alive
            )
        seg_keys, seg_rows, seg_dirs, seg_dbits = tables.segment_lists()
        return exact_probe_all(
            qkeys,
            seg_keys,
            seg_rows,
            seg_dirs,
            seg_dbits,
            tables.buffer_keys,
            tables.buffer_rows,
            np.int64(tables.buffer_count),
            self._alive,
        )

    def _scores(self, sigs: U64, qs: npt.NDArray[np.int64], rows: npt.NDArray[np.int64]) -> Any:
        return count_equal(self._values, sigs, qs, rows) / self.config.num_perm

    def query(
        self, signature: Signature, min_score: float = 0.0, limit: int | None = None
    ) -> list[tuple[Key, float]]:
        """Candidates ``(key, estimated Jaccard)`` sharing a band, best first, then by key.

        ``min_score`` drops candidates whose estimate is lower; ``limit`` keeps the best ones.
        """
        if limit is not None:
            check_int("limit", limit, low=1)
        equal, rows = self._equal_rows(signature, min_score)
        num_perm = self.config.num_perm
        keys = self._keys.keys
        ranked = sorted((-c, keys[r]) for c, r in zip(equal.tolist(), rows.tolist(), strict=True))
        result = [(k, -c / num_perm) for c, k in ranked if -c / num_perm >= min_score]
        return result[:limit] if limit is not None else result  # type: ignore[misc]

    def query_keys(self, signature: Signature, min_score: float = 0.0) -> list[Key]:
        """The keys of :meth:`query` (same ``min_score``), unranked and in no promised order:
        the cheaper form when only the candidate set is wanted (no scores to sort or box)."""
        return self._keys.lookup(self._rows_at_least(signature, min_score).tolist())

    def query_key_array(
        self, signature: Signature, min_score: float = 0.0
    ) -> npt.NDArray[np.int64]:
        """The keys of :meth:`query_keys` as an int64 array, in no promised order (indexes
        with integer keys; ``InputTypeError`` for string keys): for callers that combine
        candidate sets in numpy.  One compiled pass after the band probe."""
        return self._keys.key_array(self._rows_at_least(signature, min_score))

    def _rows_at_least(self, signature: Signature, min_score: float) -> npt.NDArray[np.int64]:
        """The distinct rows sharing a band with ``signature`` whose share of equal values
        is at least ``min_score``, in row order (one compiled pass after the band probe)."""
        check_range("min_score", min_score, low=0.0, high=1.0)
        sig = np.ascontiguousarray(self._signature(signature, []))
        _, hits = self._band_hits(sig.reshape(1, -1))
        need = _min_equal(self.config.num_perm, float(min_score))
        banded = self.bands if self.rows == 1 else 0
        rows: npt.NDArray[np.int64] = distinct_rows_at_least(
            hits, self._values, sig, np.int64(need), np.int64(banded)
        )
        return rows

    def _equal_rows(
        self, signature: Signature, min_score: float
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """Per candidate row sharing a band with ``signature``: its count of equal values,
        keeping those whose estimate is at least ``min_score``."""
        if min_score:
            check_range("min_score", min_score, low=0.0, high=1.0)
        sigs = np.ascontiguousarray(self._signature(signature, [])).reshape(1, -1)
        qs, rows = self.candidate_rows(sigs)
        if rows.shape[0] == 0:
            return np.zeros(0, dtype=np.int64), rows
        if not min_score:
            return count_equal(self._values, sigs, qs, rows), rows
        # Dropped before ranking (most band collisions score below it), in the same
        # compiled call: the same float test as on each ranked pair (count / num_perm).
        num_perm = np.int64(self.config.num_perm)
        return count_equal_at_least(self._values, sigs, qs, rows, num_perm, np.float64(min_score))

    def query_many(
        self, signatures: object, min_score: float = 0.0, limit: int | None = None
    ) -> list[list[tuple[Key, float]]]:
        """:meth:`query` for each signature, in one vectorised pass."""
        check_range("min_score", min_score, low=0.0, high=1.0)
        if limit is not None:
            check_int("limit", limit, low=1)
        sigs = self._matrix(signatures, [])
        qs, rows = self.candidate_rows(sigs)
        scores = self._scores(sigs, qs, rows)
        if min_score > 0.0:
            keep = scores >= min_score
            qs, rows, scores = qs[keep], rows[keep], scores[keep]
        out: list[list[tuple[Key, float]]] = [[] for _ in range(sigs.shape[0])]
        keys = self._keys.lookup(rows.tolist())
        for q, score, k in zip(qs.tolist(), scores.tolist(), keys, strict=True):
            out[q].append((k, score))
        for i, result in enumerate(out):
            result.sort(key=lambda item: (-item[1], item[0]))
            if limit is not None and len(result) > limit:
                out[i] = result[:limit]
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
        except (KeyError, TypeError, ConfigError) as exc:
            raise StoreError(f"{path}: malformed LSH index metadata: {exc}") from exc
        if not same_layout:
            raise StoreError(f"{path}: band layout differs from the one its config derives")
        index._restore(path, meta, arrays, n, stored)
        return index
