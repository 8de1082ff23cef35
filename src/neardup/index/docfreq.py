"""Document frequencies maintained as articles arrive: the story vector's IDF.

A news stream's vocabulary moves: the names of today's story were rare yesterday.  Instead of
a frozen table (:class:`~neardup.sketch.idf.IdfTable`), on-line event detection keeps the
IDF *incremental*: each article is weighed with the document frequencies of the articles
seen before it, then counted (Allan, Papka & Lavrenko, "On-line new event detection and
tracking", SIGIR 1998; Petrovic, Osborne & Lavrenko, "Streaming first story detection with
application to Twitter", NAACL 2010).

Counts live in ``2**bucket_bits`` hashed buckets (``uint32``; 16 MiB for the default 22 bits):
fixed memory whatever the vocabulary.  A feature's bucket is the top ``bucket_bits`` bits of
its 64-bit hash; two features sharing a bucket share a count, which can only *raise* a rare
feature's document frequency (with a million distinct features, about one in four shares
its bucket, almost always with another rare feature).  The weight is the smoothed IDF of
:mod:`neardup.sketch.idf`, ``ln((1 + N) / (1 + df)) + 1``, scaled by ``IDF_SCALE`` and
rounded, so the same counts give the same weights.

Guarantees: deterministic (counts depend only on the articles added, in any order; weights
only on the counts); counts saturate at ``2**32 - 1``; removing an article is not supported
(an IDF does not need to forget: a removed duplicate's words were seen).  Save/load in the
index file format of :mod:`neardup.index._common`.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import numpy.typing as npt

from neardup.config import check_int
from neardup.errors import InputError, StoreError
from neardup.index._common import read_index_file, write_index_file
from neardup.sketch.idf import IDF_SCALE

__all__ = ["DocumentFrequencies"]

U64 = npt.NDArray[np.uint64]
_MAGIC = b"NDSTYIDF"
_U32_MAX = np.uint32(0xFFFFFFFF)


class DocumentFrequencies:
    """Hashed document-frequency counts with ``weights_of`` (the ``IdfWeights`` protocol)."""

    __slots__ = ("bucket_bits", "counts", "num_docs")

    def __init__(self, bucket_bits: int = 22) -> None:
        check_int("bucket_bits", bucket_bits, low=8, high=30)
        self.bucket_bits = bucket_bits
        self.counts = np.zeros(1 << bucket_bits, dtype=np.uint32)
        self.num_docs = 0

    def __repr__(self) -> str:
        return f"DocumentFrequencies({self.num_docs} documents, 2**{self.bucket_bits} buckets)"

    def _buckets(self, features: U64) -> npt.NDArray[np.int64]:
        f = np.asarray(features, dtype=np.uint64)
        return (f >> np.uint64(64 - self.bucket_bits)).astype(np.int64)

    def add(self, features: U64) -> None:
        """Count one document whose *distinct* features are ``features``."""
        f = np.asarray(features, dtype=np.uint64)
        if f.ndim != 1:
            raise InputError("features must be a 1-d array of uint64 hashes")
        buckets = np.unique(self._buckets(f))
        counts = self.counts
        room = counts[buckets] < _U32_MAX
        counts[buckets[room]] += np.uint32(1)
        self.num_docs += 1

    def document_frequency(self, features: U64) -> npt.NDArray[np.int64]:
        """Documents counted in each feature's bucket."""
        return self.counts[self._buckets(features)].astype(np.int64)

    def weights_of(self, features: U64) -> npt.NDArray[np.int64]:
        """``round((ln((1 + N) / (1 + df)) + 1) * IDF_SCALE)`` for each feature."""
        df = self.document_frequency(features).astype(np.float64)
        idf = np.log((1.0 + self.num_docs) / (1.0 + df)) + 1.0
        return np.rint(idf * IDF_SCALE).astype(np.int64)

    # -- persistence -----------------------------------------------------------------------

    def state(self) -> dict[str, npt.NDArray[Any]]:
        """Arrays that :meth:`from_state` restores exactly (for a caller's checkpoint)."""
        return {
            "df_counts": self.counts,
            "df_meta": np.array([self.num_docs, self.bucket_bits], dtype=np.int64),
        }

    @classmethod
    def from_state(cls, arrays: dict[str, npt.NDArray[Any]]) -> DocumentFrequencies:
        """The counts :meth:`state` returned (``StoreError`` when they do not fit)."""
        try:
            num_docs, bucket_bits = (int(x) for x in arrays["df_meta"])
            counts = np.asarray(arrays["df_counts"], dtype=np.uint32)
        except (KeyError, ValueError, TypeError) as exc:
            raise StoreError(f"malformed document-frequency state: {exc}") from exc
        if not 8 <= bucket_bits <= 30 or counts.shape != (1 << bucket_bits,) or num_docs < 0:
            raise StoreError("document-frequency counts do not match their bucket count")
        out = cls(bucket_bits)
        out.counts[:] = counts
        out.num_docs = num_docs
        return out

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the counts (atomic replace; the format of :mod:`neardup.index._common`)."""
        meta = {"num_docs": self.num_docs, "bucket_bits": self.bucket_bits}
        write_index_file(path, _MAGIC, meta, {"df_counts": self.counts})

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> DocumentFrequencies:
        """Read counts written by :meth:`save`; ``StoreError`` if the file is not one."""
        meta, arrays = read_index_file(path, _MAGIC)
        try:
            state = {
                "df_counts": arrays["df_counts"],
                "df_meta": np.array([meta["num_docs"], meta["bucket_bits"]], dtype=np.int64),
            }
        except KeyError as exc:
            raise StoreError(f"{path}: malformed document-frequency file: {exc}") from exc
        return cls.from_state(state)
