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

from neardup.batch.banding import (
    band_keys_bottomk,
    band_keys_minhash,
    band_keys_simhash,
    bucket_pairs,
    default_bands,
)
from neardup.batch.fastsign import minhash_matrix, partition_shingles, unique_rows
from neardup.batch.verify import jaccard_and_containment, pair_lcs
from neardup.config import Config, check_choice, check_int, check_range
from neardup.errors import ConfigError
from neardup.shingles import token_hashes
from neardup.sketch import make_config, sign
from neardup.sketch.minhash import MinHashConfig
from neardup.sketch.shingleset import DEFAULT_WIDTH, TOKEN_SEED, ShingleSetConfig

__all__ = [
    "KEEP_POLICIES",
    "METHODS",
    "VERIFY_MODES",
    "DedupConfig",
    "PairScores",
    "Payload",
    "SignedPartition",
    "candidate_pairs",
    "keeps_shingles",
    "pair_relation",
    "partition_keys",
    "payload_from_shingles",
    "payload_partition",
    "sign_minhash_partition",
    "sign_partition",
    "verify_pairs",
]

U64 = npt.NDArray[np.uint64]
I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]

METHODS = ("minhash", "simhash", "sentences", "spotsigs")
VERIFY_MODES = ("jaccard", "lcs", "none")
KEEP_POLICIES = ("earliest", "first", "longest")


@dataclasses.dataclass(frozen=True)
class DedupConfig(Config):
    """Parameters of a batch dedup (or pairs) run.

    ``method`` makes the candidates (:mod:`neardup.batch.banding`); ``verify`` decides a
    candidate pair: ``"jaccard"`` exact Jaccard of the word ``width``-shingle sets >=
    ``threshold``; ``"lcs"`` longest common run of tokens / tokens of the shorter document
    >= ``threshold``; ``"none"`` the signature estimate >= ``threshold`` (MinHash: fraction of
    equal values; bottom-k: bottom-k Jaccard; SimHash: Hamming distance <= ``max_distance``).
    SimHash candidates must always be within ``max_distance`` bits.  ``keep`` picks the kept
    document of a cluster.  ``num_perm``/``bands`` (``None``: chosen from ``threshold``) shape
    MinHash LSH; ``sketch_size`` is the bottom-k of ``sentences``/``spotsigs``;
    ``max_bucket`` bounds the pairs per bucket member; ``partial_containment`` and
    ``duplicate_score`` label pairs (``pairs`` mode); ``partition_size`` documents per task.
    """

    SCHEME = "batch-dedup"

    method: str = "minhash"
    threshold: float = 0.5
    verify: str = "jaccard"
    keep: str = "earliest"
    num_perm: int = 128
    width: int = DEFAULT_WIDTH
    bands: int | None = None
    max_distance: int = 3
    sketch_size: int = 16
    max_bucket: int = 64
    partial_containment: float = 0.8
    duplicate_score: float = 0.8
    partition_size: int = 5000

    def __post_init__(self) -> None:
        check_choice("method", self.method, METHODS)
        check_choice("verify", self.verify, VERIFY_MODES)
        check_choice("keep", self.keep, KEEP_POLICIES)
        check_range("threshold", self.threshold, low=0.0, high=1.0, low_open=True, high_open=True)
        check_int("num_perm", self.num_perm, low=2, high=4096)
        check_int("width", self.width, low=1, high=64)
        if self.bands is not None:
            check_int("bands", self.bands, low=1, high=self.num_perm)
        check_int("max_distance", self.max_distance, low=0, high=31)
        check_int("sketch_size", self.sketch_size, low=1, high=1024)
        check_int("max_bucket", self.max_bucket, low=1, high=100_000)
        check_range("partial_containment", self.partial_containment, low=0.0, high=1.0)
        check_range("duplicate_score", self.duplicate_score, low=0.0, high=1.0)
        check_int("partition_size", self.partition_size, low=1, high=10_000_000)

    @property
    def banding(self) -> tuple[int, int]:
        """``(bands, rows)`` of MinHash LSH."""
        if self.bands is not None:
            return self.bands, self.num_perm // self.bands
        return default_bands(float(self.threshold), self.num_perm)

    @property
    def minhash(self) -> MinHashConfig:
        """The MinHash scheme config (its shingle set is the one Jaccard verifies).

        The k-permutation method: it is the one a whole partition can be evaluated for in
        one kernel (:mod:`neardup.batch.fastsign`), byte-identical to :func:`sign`.
        """
        config = make_config(
            "minhash", num_perm=self.num_perm, width=self.width, method="permutations"
        )
        if not isinstance(config, MinHashConfig):
            raise ConfigError("minhash scheme returned an unexpected config")
        return config

    @property
    def shingles(self) -> ShingleSetConfig:
        """The exact shingle set used for Jaccard/containment verification."""
        return ShingleSetConfig(width=self.width, text=self.minhash.text)

    def sign_params(self) -> tuple[str, dict[str, Any]]:
        """Scheme name and parameters passed to :func:`neardup.sketch.sign`."""
        if self.method == "minhash":
            return "minhash", {"config": self.minhash}
        if self.method == "sentences":
            return "sentences", {"k": self.sketch_size}
        return self.method, {}


@dataclasses.dataclass(frozen=True)
class SignedPartition:
    """Signatures of a partition: ``values`` ``(n, w)`` uint64 (zero-padded) and ``lengths``
    ``(n,)`` (number of real values; 0 = the document has no feature: never a candidate)."""

    values: U64
    lengths: I64


def sign_partition(texts: list[str], config: DedupConfig) -> SignedPartition:
    """Signatures of ``texts`` with ``config.method`` (MinHash: the whole-partition path)."""
    if config.method == "minhash":
        return sign_minhash_partition(texts, config)[0]
    scheme, params = config.sign_params()
    sigs = [sign(text, scheme, **params).values for text in texts]
    lengths = np.fromiter((s.shape[0] for s in sigs), dtype=np.int64, count=len(sigs))
    if config.method == "minhash":
        width = config.num_perm
    elif config.method == "simhash":
        width = 1
    else:
        width = config.sketch_size
    values = np.zeros((len(sigs), width), dtype=np.uint64)
    for row, sig in enumerate(sigs):
        # simhash-128 keeps its high word (first value); sets keep their bottom-k.
        take = min(width, sig.shape[0])
        values[row, :take] = sig[:take]
    return SignedPartition(values, np.minimum(lengths, width))


def sign_minhash_partition(
    texts: list[str], config: DedupConfig
) -> tuple[SignedPartition, U64, I64]:
    """MinHash signatures of ``texts`` and the word shingles they were computed from
    (ragged ``(flat, offsets)``, position order, duplicates kept).

    The shingles are exactly those :func:`payload_partition` derives the verification sets
    from (same text config and width), so keeping them spares the verify stage re-reading
    and re-tokenising the candidate documents.
    """
    mh = config.minhash
    flat, offsets = partition_shingles(texts, mh.text, mh.width)
    values, lengths = minhash_matrix(flat, offsets, mh.num_perm, mh.seed)
    return SignedPartition(values, lengths), flat, offsets


def keeps_shingles(config: DedupConfig, mode: str) -> bool:
    """Whether the signing pass keeps each partition's shingles for verification: MinHash
    runs that verify shingle sets (``jaccard``, or ``pairs`` output), not LCS, which needs
    the token sequences and re-reads the candidate documents instead."""
    needs_payload = config.verify != "none" or mode == "pairs"
    return config.method == "minhash" and config.verify != "lcs" and needs_payload


def payload_from_shingles(flat: U64, offsets: I64, rows: I64) -> Payload:
    """The verification :class:`Payload` of rows ``rows`` of a partition's kept shingles
    (:func:`sign_minhash_partition`): equal to :func:`payload_partition` of those texts."""
    begin = offsets[rows]
    sizes = offsets[rows + 1] - begin
    new_offsets = np.zeros(rows.shape[0] + 1, dtype=np.int64)
    np.cumsum(sizes, out=new_offsets[1:])
    total = int(new_offsets[-1])
    index = np.repeat(begin - new_offsets[:-1], sizes) + np.arange(total, dtype=np.int64)
    sets, set_offsets = unique_rows(np.asarray(flat[index], dtype=np.uint64), new_offsets)
    return Payload(sets, set_offsets)


def partition_keys(part: SignedPartition, config: DedupConfig) -> U64:
    """``(n, keys per document)`` bucket keys; 0 for documents without features."""
    if config.method == "minhash":
        bands, rows = config.banding
        keys = band_keys_minhash(part.values, bands, rows)
    elif config.method == "simhash":
        keys = band_keys_simhash(part.values[:, 0], config.max_distance)
    else:
        return band_keys_bottomk(part.values, part.lengths)
    keys[part.lengths == 0] = 0
    return keys


def candidate_pairs(keys: U64, docs: I64, max_bucket: int) -> I64:
    """Candidate pairs of one shard of the key shuffle (see :func:`bucket_pairs`)."""
    return bucket_pairs(keys, docs, max_bucket)


@dataclasses.dataclass(frozen=True)
class Payload:
    """Verification data of some documents, ragged: shingle sets and, for LCS, token hashes."""

    shingles: U64
    shingle_offsets: I64
    tokens: U64 | None = None
    token_offsets: I64 | None = None


def _ragged(arrays: list[U64]) -> tuple[U64, I64]:
    offsets = np.zeros(len(arrays) + 1, dtype=np.int64)
    if arrays:
        np.cumsum([a.shape[0] for a in arrays], out=offsets[1:])
        flat = np.concatenate(arrays).astype(np.uint64, copy=False)
    else:
        flat = np.empty(0, dtype=np.uint64)
    return flat, offsets


def payload_partition(texts: list[str], config: DedupConfig) -> Payload:
    """Exact shingle sets (and token sequences when ``verify="lcs"``) of ``texts``."""
    shingle_config = config.shingles
    sets, set_offsets = unique_rows(
        *partition_shingles(texts, shingle_config.text, shingle_config.width)
    )
    if config.verify != "lcs":
        return Payload(sets, set_offsets)
    toks, tok_offsets = _ragged([token_hashes(t, shingle_config.text, TOKEN_SEED) for t in texts])
    return Payload(sets, set_offsets, toks, tok_offsets)


@dataclasses.dataclass(frozen=True)
class PairScores:
    """Scores of verified pairs; NaN where a score was not computed."""

    estimated: F64
    jaccard: F64
    containment: F64
    lcs: F64
    passed: npt.NDArray[np.bool_]


def _estimates(values: U64, lengths: I64, left: I64, right: I64, config: DedupConfig) -> F64:
    if values.shape[1] == 0:  # not requested (see the engine's verify stage)
        return np.full(left.shape[0], np.nan)
    if config.method == "minhash":
        equal = values[left] == values[right]
        est = equal.mean(axis=1)
    elif config.method == "simhash":
        xor = values[left, 0] ^ values[right, 0]
        est = 1.0 - np.bitwise_count(xor).astype(np.float64) / 64.0
    else:
        est = np.empty(left.shape[0], dtype=np.float64)
        for k in range(left.shape[0]):
            a = values[left[k], : lengths[left[k]]]
            b = values[right[k], : lengths[right[k]]]
            union = np.union1d(a, b)[: config.sketch_size]
            both = np.intersect1d(a, b, assume_unique=True)
            shared = np.intersect1d(union, both, assume_unique=True).shape[0]
            est[k] = shared / max(union.shape[0], 1)
    empty = (lengths[left] == 0) | (lengths[right] == 0)
    return np.where(empty, 0.0, est)


def verify_pairs(
    pairs: I64,
    values: U64,
    lengths: I64,
    payload: Payload | None,
    config: DedupConfig,
    mode: str,
) -> PairScores:
    """Score ``pairs`` (rows into ``values``/``lengths``/``payload``) and decide which pass.

    ``mode="dedup"``: the verification score (see :class:`DedupConfig`) >= ``threshold``.
    ``mode="pairs"``: the same, or (with a payload) containment >= ``partial_containment``.
    """
    left = np.ascontiguousarray(pairs[:, 0], dtype=np.int64)
    right = np.ascontiguousarray(pairs[:, 1], dtype=np.int64)
    m = left.shape[0]
    est = _estimates(values, lengths, left, right, config)
    nan = np.full(m, np.nan)
    jac, cont, lcs = nan, nan.copy(), nan.copy()
    if payload is not None:
        jac, cont = jaccard_and_containment(payload.shingles, payload.shingle_offsets, left, right)
        if (
            config.verify == "lcs"
            and payload.tokens is not None
            and payload.token_offsets is not None
        ):
            run = pair_lcs(payload.tokens, payload.token_offsets, left, right).astype(np.float64)
            sizes = np.diff(payload.token_offsets)
            shorter = np.minimum(sizes[left], sizes[right]).astype(np.float64)
            lcs = np.where(shorter > 0, run / np.maximum(shorter, 1.0), 0.0)
    threshold = config.threshold
    if config.verify == "jaccard":
        passed = jac >= threshold
    elif config.verify == "lcs":
        passed = lcs >= threshold
    else:
        passed = est >= threshold
    if config.method == "simhash":
        within = est >= 1.0 - config.max_distance / 64.0 - 1e-12
        passed = passed & within if config.verify != "none" else within
    if mode == "pairs" and payload is not None:
        passed = passed | (cont >= config.partial_containment)
    return PairScores(est, jac, cont, lcs, np.asarray(passed, dtype=bool))


def pair_relation(jaccard: float, containment: float, config: DedupConfig) -> str:
    """``"duplicate"`` (score >= ``duplicate_score``), ``"partial"`` (containment of the
    shorter in the longer >= ``partial_containment``) or ``"similar"``."""
    if jaccard >= config.duplicate_score:
        return "duplicate"
    if containment >= config.partial_containment:
        return "partial"
    return "similar"
