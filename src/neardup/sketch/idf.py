"""IDF tables for TF-IDF-weighted SimHash (seed 003), built from a corpus and saved to a file.

An :class:`IdfTable` maps a feature (the uint64 hash of a word, or of a word w-shingle, as
made by :mod:`neardup.shingles`) to an integer weight, the smoothed inverse document frequency
``idf = ln((1 + N) / (1 + df)) + 1`` (N documents, df of them contain the feature) scaled by
1024 and rounded.  Integer weights make SimHash sums exact, so a signature cannot depend on
floating-point rounding of the machine.  A feature absent from the table gets the weight of
``df = 0`` (the rarest possible).

The table records the text-stage config and shingle width it was built with; SimHash refuses
a table whose features were made differently.  Its :attr:`IdfTable.digest` (xxh64 of the file
bytes) goes into the SimHash scheme id, so signatures made with different tables are never
compared.

File format (all integers little-endian)::

    offset  size  field
    0       4     magic b"NDIF"
    4       1     format version (1)
    5       3     zero
    8       8     number of documents N (uint64)
    16      4     shingle width (uint32)
    20      4     length J of the text config JSON (uint32)
    24      J     the text config as canonical JSON (ASCII)
    24+J    8     default weight of unknown features (uint64)
    32+J    8     number of features F (uint64)
    40+J    8F    feature hashes, sorted ascending, distinct (uint64)
    40+J+8F 4F    weights (uint32), idf * 1024 rounded

Guarantees: building is deterministic (the same corpus, in any order, gives the same bytes);
memory O(distinct features).
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import xxhash

from neardup._kernels import distinct
from neardup.config import canonical_json
from neardup.errors import ConfigError, InputError, StoreError
from neardup.shingles import U64, token_hashes, word_shingles
from neardup.text import TextConfig, ensure_text

__all__ = ["IDF_SCALE", "IdfTable", "build_idf_table", "feature_hashes"]

IDF_SCALE = 1024
_MAGIC = b"NDIF"
_VERSION = 1
_HEAD = struct.Struct("<4sB3xQII")
_U64 = struct.Struct("<Q")
FEATURE_SEED = 0


def feature_hashes(text: str, config: TextConfig, width: int) -> U64:
    """The features of ``text`` in order (duplicates kept): words (width 1) or w-shingles."""
    tokens = token_hashes(ensure_text(text), config, FEATURE_SEED)
    if width == 1:
        return tokens
    return word_shingles(tokens, width)


def _idf_weight(num_docs: int, df: npt.NDArray[np.int64]) -> npt.NDArray[np.uint32]:
    idf = np.log((1.0 + num_docs) / (1.0 + df.astype(np.float64))) + 1.0
    return np.rint(idf * IDF_SCALE).astype(np.uint32)


def _text_from_json(data: dict[str, Any]) -> TextConfig:
    stop = data.get("stop_words")
    if stop is not None:
        data = {**data, "stop_words": frozenset(stop)}
    try:
        return TextConfig(**data)
    except TypeError as exc:
        raise InputError(f"IDF table has an unknown text config: {exc}") from exc


class IdfTable:
    """An immutable IDF table; build with :func:`build_idf_table`, save, :meth:`load`."""

    __slots__ = (
        "_bytes",
        "default_weight",
        "digest",
        "keys",
        "num_docs",
        "text",
        "weights",
        "width",
    )

    keys: U64
    weights: npt.NDArray[np.uint32]

    def __init__(
        self,
        *,
        num_docs: int,
        text: TextConfig,
        width: int,
        keys: npt.ArrayLike,
        weights: npt.ArrayLike,
        default_weight: int,
    ) -> None:
        k = np.ascontiguousarray(keys, dtype=np.uint64)
        w = np.ascontiguousarray(weights, dtype=np.uint32)
        if k.ndim != 1 or k.shape != w.shape:
            raise ConfigError("IDF keys and weights must be 1-d arrays of equal length")
        if k.shape[0] > 1 and not bool(np.all(k[1:] > k[:-1])):
            raise ConfigError("IDF keys must be sorted ascending and distinct")
        if not isinstance(text, TextConfig):
            raise ConfigError("IDF table text must be a TextConfig")
        k.flags.writeable = False
        w.flags.writeable = False
        self.num_docs = int(num_docs)
        self.text = text
        self.width = int(width)
        self.keys = k
        self.weights = w
        self.default_weight = int(default_weight)
        self._bytes = self._encode()
        self.digest = xxhash.xxh64_hexdigest(self._bytes, seed=0)

    def __len__(self) -> int:
        return int(self.keys.shape[0])

    def __repr__(self) -> str:
        return f"IdfTable({len(self)} features, {self.num_docs} docs, digest {self.digest})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, IdfTable):
            return NotImplemented
        return self._bytes == other._bytes

    def __hash__(self) -> int:
        return int(self.digest, 16)

    def weights_of(self, features: U64) -> npt.NDArray[np.int64]:
        """Integer weight of each feature (the default weight for unknown ones)."""
        if self.keys.shape[0] == 0:
            return np.full(features.shape[0], self.default_weight, dtype=np.int64)
        pos = np.searchsorted(self.keys, features)
        pos_c = np.minimum(pos, self.keys.shape[0] - 1)
        known = self.keys[pos_c] == features
        return np.where(known, self.weights[pos_c].astype(np.int64), self.default_weight)

    # -- file format -----------------------------------------------------------------------

    def _encode(self) -> bytes:
        text_json = canonical_json(self.text).encode("ascii")
        return b"".join(
            (
                _HEAD.pack(_MAGIC, _VERSION, self.num_docs, self.width, len(text_json)),
                text_json,
                _U64.pack(self.default_weight),
                _U64.pack(len(self)),
                self.keys.astype("<u8").tobytes(),
                self.weights.astype("<u4").tobytes(),
            )
        )

    def to_bytes(self) -> bytes:
        """The documented file format."""
        return self._bytes

    def save(self, path: str | Path) -> None:
        """Write the table to ``path`` (``StoreError`` if it cannot be written)."""
        try:
            Path(path).write_bytes(self._bytes)
        except OSError as exc:
            raise StoreError(f"cannot write IDF table {path}: {exc}") from exc

    @classmethod
    def from_bytes(cls, data: bytes | bytearray | memoryview) -> IdfTable:
        """Decode :meth:`to_bytes`; ``InputError`` on anything else."""
        buf = bytes(data)
        if len(buf) < _HEAD.size:
            raise InputError("IDF table too short")
        magic, version, num_docs, width, json_len = _HEAD.unpack_from(buf, 0)
        if magic != _MAGIC:
            raise InputError("not a neardup IDF table (bad magic)")
        if version != _VERSION:
            raise InputError(f"unsupported IDF table version {version}")
        pos = _HEAD.size
        if len(buf) < pos + json_len + 16:
            raise InputError("IDF table truncated in its header")
        try:
            text_data = json.loads(buf[pos : pos + json_len].decode("ascii"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise InputError("IDF table text config is not valid JSON") from exc
        if not isinstance(text_data, dict):
            raise InputError("IDF table text config is not an object")
        pos += json_len
        (default_weight,) = _U64.unpack_from(buf, pos)
        (count,) = _U64.unpack_from(buf, pos + 8)
        pos += 16
        if len(buf) != pos + 12 * count:
            raise InputError(f"IDF table body is {len(buf) - pos} bytes, expected {12 * count}")
        keys = np.frombuffer(buf, dtype="<u8", count=count, offset=pos)
        weights = np.frombuffer(buf, dtype="<u4", count=count, offset=pos + 8 * count)
        try:
            return cls(
                num_docs=num_docs,
                text=_text_from_json(text_data),
                width=width,
                keys=keys,
                weights=weights,
                default_weight=default_weight,
            )
        except ConfigError as exc:
            raise InputError(f"invalid IDF table: {exc}") from exc

    @classmethod
    def load(cls, path: str | Path) -> IdfTable:
        """Read a table saved with :meth:`save`."""
        try:
            data = Path(path).read_bytes()
        except OSError as exc:
            raise StoreError(f"cannot read IDF table {path}: {exc}") from exc
        return cls.from_bytes(data)


def build_idf_table(
    texts: Iterable[str],
    text: TextConfig | None = None,
    width: int = 1,
    min_df: int = 1,
) -> IdfTable:
    """Count document frequencies over ``texts`` and return the IDF table.

    ``text`` and ``width`` must be those of the SimHash config that will use the table
    (defaults: :class:`~neardup.sketch.simhash.SimHashConfig`'s, stop words dropped, words).
    Features seen in fewer than ``min_df`` documents are left out (they then get the
    unknown-feature weight), which bounds the table size.
    """
    cfg = text if text is not None else TextConfig(drop_stop_words=True)
    if not isinstance(cfg, TextConfig):
        raise ConfigError("text must be a TextConfig")
    if isinstance(width, bool) or not isinstance(width, int) or not 1 <= width <= 64:
        raise ConfigError(f"width must be an integer in [1, 64], got {width!r}")
    if isinstance(min_df, bool) or not isinstance(min_df, int) or min_df < 1:
        raise ConfigError(f"min_df must be a positive integer, got {min_df!r}")
    chunks: list[U64] = []
    num_docs = 0
    for doc in texts:
        chunks.append(distinct(feature_hashes(doc, cfg, width)))
        num_docs += 1
    if chunks:
        keys, df = np.unique(np.concatenate(chunks), return_counts=True)
    else:
        keys, df = np.empty(0, dtype=np.uint64), np.empty(0, dtype=np.int64)
    keep = df >= min_df
    keys, df = keys[keep], df[keep].astype(np.int64)
    default = int(_idf_weight(num_docs, np.zeros(1, dtype=np.int64))[0])
    return IdfTable(
        num_docs=num_docs,
        text=cfg,
        width=width,
        keys=keys,
        weights=_idf_weight(num_docs, df),
        default_weight=default,
    )
