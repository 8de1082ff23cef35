"""The pure per-partition functions batch dedup runs on workers (or in-process).

Each takes plain data (lists of texts, numpy arrays, a frozen config) and returns numpy
arrays; none does I/O or keeps state, so running them on 1, 2 or N Dask workers, or in the
calling process, gives the same bytes.  Input is read by :mod:`neardup.batch.ranges` (on
the workers) or the driver (:mod:`neardup.batch.engine`), which also writes every output.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import numpy.typing as npt

from neardup.batch.banding import band_keys_minhash, bucket_pairs, default_bands
from neardup.batch.fastsign import minhash_matrix, partition_shingles
from neardup.batch.winnow import passage_keys
from neardup.config import Config, check_choice, check_int, check_range
from neardup.errors import ConfigError
from neardup.rule import RuleConfig
from neardup.sketch import make_config
from neardup.sketch.minhash import MinHashConfig

__all__ = [
    "CANDIDATE_SOURCES",
    "CLUSTERINGS",
    "KEEP_POLICIES",
    "DedupConfig",
    "SignedPartition",
    "candidate_pairs",
    "sign_partition",
]

U64 = npt.NDArray[np.uint64]
I64 = npt.NDArray[np.int64]

CANDIDATE_SOURCES = ("lsh", "passages")
KEEP_POLICIES = ("earliest", "first", "longest")
CLUSTERINGS = ("centers", "components")


@dataclasses.dataclass(frozen=True)
class DedupConfig(Config):
    """Parameters of a batch dedup (or pairs) run.

    Every candidate pair is judged by the near-duplicate rule (:mod:`neardup.rule`, with
    ``rule``): ``dedup`` clusters the ``duplicate`` verdicts, ``pairs`` reports every
    verdict but ``unrelated``.  The parameters here only shape which pairs are proposed and
    how the work is cut:

    * ``candidates``: the candidate sources, any of ``"lsh"`` (MinHash LSH bands of the
      rule's word shingles: whole texts with Jaccard around ``lsh_threshold`` or more, edits
      scattered anywhere) and ``"passages"`` (winnowed shingle fingerprints,
      :mod:`neardup.batch.winnow`: every pair sharing a passage of the rule's
      ``partial_min_passage`` words, whatever the rest of the texts: excerpts, truncated
      reprints, write-thrus);
    * ``lsh_threshold``, ``num_perm``, ``bands``: the MinHash LSH banding (``bands=None``:
      the banding that minimises false positives plus false negatives around
      ``lsh_threshold``);
    * ``max_bucket``: a document sharing a key with more than ``max_bucket`` others is paired
      with the next ``max_bucket`` of them only (bounds the pairs of boilerplate keys);
    * ``clusters``: how duplicate verdicts make clusters: ``"centers"`` (every removed
      document is a duplicate of the document kept for it; documents taken in ``keep``
      order) or ``"components"`` (connected components: a chain of duplicates is one
      cluster, even when its ends are not duplicates of each other);
    * ``keep``: which document of a cluster is kept; ``partition_size``: documents per task.
    """

    SCHEME = "batch-dedup"

    candidates: tuple[str, ...] = CANDIDATE_SOURCES
    lsh_threshold: float = 0.5
    clusters: str = "centers"
    keep: str = "earliest"
    num_perm: int = 128
    bands: int | None = None
    max_bucket: int = 64
    partition_size: int = 5000
    rule: RuleConfig = dataclasses.field(default_factory=RuleConfig)

    def __post_init__(self) -> None:
        if not isinstance(self.candidates, tuple) or not self.candidates:
            raise ConfigError(
                "candidates must be a non-empty tuple of "
                f"{', '.join(repr(s) for s in CANDIDATE_SOURCES)}, got {self.candidates!r}"
            )
        for source in self.candidates:
            check_choice("candidates", source, CANDIDATE_SOURCES)
        if len(set(self.candidates)) != len(self.candidates):
            raise ConfigError(f"candidates lists a source twice: {self.candidates!r}")
        check_choice("clusters", self.clusters, CLUSTERINGS)
        check_choice("keep", self.keep, KEEP_POLICIES)
        check_range(
            "lsh_threshold", self.lsh_threshold, low=0.0, high=1.0, low_open=True, high_open=True
        )
        check_int("num_perm", self.num_perm, low=2, high=4096)
        if self.bands is not None:
            check_int("bands", self.bands, low=1, high=self.num_perm)
        check_int("max_bucket", self.max_bucket, low=1, high=100_000)
        check_int("partition_size", self.partition_size, low=1, high=10_000_000)
        if not isinstance(self.rule, RuleConfig):
            raise ConfigError(f"rule must be a RuleConfig, got {type(self.rule).__name__}")

    @property
    def banding(self) -> tuple[int, int]:
        """``(bands, rows)`` of MinHash LSH."""
        if self.bands is not None:
            return self.bands, self.num_perm // self.bands
        return default_bands(float(self.lsh_threshold), self.num_perm)

    @property
    def minhash(self) -> MinHashConfig:
        """The MinHash scheme of the LSH source: over the rule's own word shingles.

        The k-permutation method: it is the one a whole partition can be evaluated for in
        one kernel (:mod:`neardup.batch.fastsign`), byte-identical to
        :func:`neardup.sketch.sign`.
        """
        config = make_config(
            "minhash",
            num_perm=self.num_perm,
            width=self.rule.width,
            text=self.rule.text,
            method="permutations",
        )
        if not isinstance(config, MinHashConfig):
            raise ConfigError("minhash scheme returned an unexpected config")
        return config

    @property
    def passage_window(self) -> int:
        """The winnowing window (in shingles) that guarantees every shared run of the rule's
        ``partial_min_passage`` words a shared fingerprint: ``passage - width + 1``."""
        return max(1, self.rule.partial_min_passage - self.rule.width + 1)


@dataclasses.dataclass(frozen=True)
class SignedPartition:
    """The candidate keys of a partition's documents, ragged (``keys[key_offsets[d]:
    key_offsets[d + 1]]`` are document ``d``'s), and each document's number of word
    shingles (``lengths``; 0: a text without words, never a candidate)."""

    keys: U64
    key_offsets: I64
    lengths: I64

    def take(self, rows: I64) -> SignedPartition:
        """Rows ``rows`` only, in that order."""
        keys, offsets = gather_ragged(self.keys, self.key_offsets, rows)
        return SignedPartition(keys, offsets, self.lengths[rows])


def gather_ragged(flat: npt.NDArray[Any], offsets: I64, rows: I64) -> tuple[Any, I64]:
    """Rows ``rows`` of a ragged array, as a new compact ragged array."""
    rows = np.asarray(rows, dtype=np.int64)
    begin = offsets[rows]
    sizes = offsets[rows + 1] - begin
    new_offsets = np.zeros(rows.shape[0] + 1, dtype=np.int64)
    np.cumsum(sizes, out=new_offsets[1:])
    total = int(new_offsets[-1])
    index = np.repeat(begin - new_offsets[:-1], sizes) + np.arange(total, dtype=np.int64)
    return np.asarray(flat[index]), new_offsets


def sign_partition(texts: list[str], config: DedupConfig) -> SignedPartition:
    """The candidate keys of ``texts``: LSH band keys and/or passage fingerprints.

    The texts are shingled together (:func:`neardup.batch.fastsign.partition_shingles`:
    the rule's word shingles, the same values its profiles hold); key 0 never occurs.
    """
    rule = config.rule
    flat, offsets = partition_shingles(texts, rule.text, rule.width)
    lengths = np.diff(offsets)
    n = len(texts)
    parts: list[tuple[U64, I64]] = []
    if "lsh" in config.candidates:
        values, has = minhash_matrix(flat, offsets, config.num_perm, config.minhash.seed)
        bands, rows = config.banding
        band = band_keys_minhash(values, bands, rows)
        band[has == 0] = 0
        live = band != 0
        counts = live.sum(axis=1)
        band_offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(counts, out=band_offsets[1:])
        parts.append((band[live], band_offsets))
    if "passages" in config.candidates:
        parts.append(passage_keys(flat, offsets, config.passage_window))
    keys, key_offsets = _merge_ragged(n, parts)
    return SignedPartition(keys, key_offsets, lengths.astype(np.int64))


def _merge_ragged(n: int, parts: list[tuple[U64, I64]]) -> tuple[U64, I64]:
    """Row-wise concatenation of ragged arrays of ``n`` rows each."""
    if len(parts) == 1:
        return parts[0]
    sizes = sum(np.diff(off) for _, off in parts)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    flat = np.empty(int(offsets[-1]), dtype=np.uint64)
    at = offsets[:-1].copy()
    for values, off in parts:
        size = np.diff(off)
        index = np.repeat(at - off[:-1], size) + np.arange(values.shape[0], dtype=np.int64)
        flat[index] = values
        at += size
    return flat, offsets


def candidate_pairs(keys: U64, docs: I64, max_bucket: int) -> I64:
    """Candidate pairs of one shard of the key shuffle (see
    :func:`neardup.batch.banding.bucket_pairs`)."""
    return bucket_pairs(keys, docs, max_bucket)
