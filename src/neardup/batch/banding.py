"""Candidate generation for batch dedup: band keys and the bucket "shuffle".

Every document contributes a few 64-bit *bucket keys*; documents that share a key are
candidate pairs.  Keys per method:

* ``minhash``: LSH banding (Indyk & Motwani 1998; Broder's "sketches" of seed 002): the
  ``num_perm`` values are cut into ``bands`` bands of ``rows`` values, each band hashed to
  one key (tagged with its band number).  ``bands``/``rows`` minimise the weighted sum of
  the false-positive and false-negative probability mass around ``threshold``, datasketch's
  ``MinHashLSH`` criterion (:func:`lsh_bands`), with false negatives weighted 9 to 1 by
  default (:func:`default_bands`): a missed duplicate is lost for good, while a false
  candidate costs one exact check.  Measured on edited copies (word edits, typos,
  typographic punctuation; ``benchmarks/bench_banding.py``, docs/batch.md): at threshold
  0.5 that gives 32 bands of 4 rows instead of the equal weights' 25 of 5, and finds
  97-99.7 % of the pairs above the threshold instead of 85-97 %.
* ``simhash``: the pigeonhole block split of seed 003: with ``max_distance + 1`` blocks, two
  fingerprints within Hamming distance ``max_distance`` agree exactly on at least one block.
* ``sentences``/``spotsigs`` (set-valued sketches): each of the ``k`` smallest values is a key
  (seed 000 and seed 002's "take the smallest hash as the sketch"): two documents sharing one
  of their bottom-k values are candidates.

:func:`bucket_pairs` turns keys into pairs: sort by (key, document), then pair each document
with the next ``max_bucket`` members of its bucket.  Buckets of up to ``max_bucket + 1``
members give all their pairs; larger buckets (boilerplate) give a bounded band of
``max_bucket`` pairs per member instead of a quadratic blow-up.

Guarantees: pure, deterministic (numpy, and one compiled radix sort); the union of
:func:`bucket_pairs` over any partition of the keys into shards (by :func:`shard_of`) equals
the result on all keys, so the number of shards or workers never changes the candidates.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from neardup._jit import compiled_worthwhile, njit
from neardup._kernels import distinct
from neardup.errors import ConfigError
from neardup.shingles import mix64
from neardup.sketch.banding import optimal_bands

__all__ = [
    "FALSE_NEGATIVE_WEIGHT",
    "band_keys_minhash",
    "bucket_pairs",
    "default_bands",
    "lsh_bands",
    "shard_of",
]

U64 = npt.NDArray[np.uint64]
I64 = npt.NDArray[np.int64]

_BAND_TAG = np.uint64(0xA24BAED4963EE407)
_POLY = np.uint64(0x9E3779B97F4A7C15)
# A pair whose two ends fit 32 bits, packed in one word (high: left end).
_SHIFT = np.uint64(32)
_LOW = 0xFFFFFFFF


#: Weight of the false-negative mass in the batch's default banding (false positives get the
#: rest): measured, docs/batch.md.
FALSE_NEGATIVE_WEIGHT = 0.9


def lsh_bands(
    threshold: float, num_perm: int, false_negative_weight: float = 0.5
) -> tuple[int, int]:
    """``(bands, rows)`` with ``bands * rows <= num_perm`` minimising ``(1 - w) * FP + w *
    FN`` mass at ``threshold`` for ``w = false_negative_weight`` (0.5: the datasketch
    default): :func:`neardup.sketch.banding.optimal_bands`."""
    if not 0.0 <= false_negative_weight <= 1.0:
        raise ConfigError(f"false_negative_weight must be in [0, 1], got {false_negative_weight}")
    return optimal_bands(threshold, num_perm, 1.0 - false_negative_weight, false_negative_weight)


def default_bands(threshold: float, num_perm: int) -> tuple[int, int]:
    """The batch's default ``(bands, rows)``: :func:`lsh_bands` with false negatives weighted
    :data:`FALSE_NEGATIVE_WEIGHT`."""
    return lsh_bands(threshold, num_perm, FALSE_NEGATIVE_WEIGHT)


def _fold(columns: U64) -> U64:
    """Hash each row of a 2-d uint64 array to one uint64 (polynomial + splitmix64)."""
    acc = np.zeros(columns.shape[0], dtype=np.uint64)
    with np.errstate(over="ignore"):
        for c in range(columns.shape[1]):
            acc = acc * _POLY + columns[:, c]
    return mix64(acc)


def band_keys_minhash(signatures: U64, bands: int, rows: int) -> U64:
    """``(n, bands)`` keys of ``(n, num_perm)`` MinHash values."""
    if signatures.ndim != 2 or signatures.shape[1] < bands * rows:
        raise ConfigError(f"need {bands * rows} MinHash values per document")
    keys = np.empty((signatures.shape[0], bands), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for b in range(bands):
            band = signatures[:, b * rows : (b + 1) * rows]
            keys[:, b] = mix64(_fold(band) ^ (_BAND_TAG * np.uint64(b + 1)))
    return keys


def shard_of(keys: U64, shards: int) -> I64:
    """The shard of each key (the shuffle's partitioning function)."""
    return (keys % np.uint64(shards)).astype(np.int64)


def bucket_pairs(keys: U64, docs: I64, max_bucket: int) -> I64:
    """Candidate pairs ``(m, 2)``, ``left < right``, sorted and distinct, from bucket keys.

    ``keys[t]`` is a key of document ``docs[t]``; key 0 means "no key" and is skipped.
    """
    keys = np.asarray(keys, dtype=np.uint64).reshape(-1)
    docs = np.asarray(docs, dtype=np.int64).reshape(-1)
    live = keys != 0
    keys, docs = keys[live], docs[live]
    if keys.size < 2:
        return np.empty((0, 2), dtype=np.int64)
    if bool(np.all(docs[1:] >= docs[:-1])):
        # The engine's shards list documents in ascending order, so a stable sort by key
        # gives the (key, document) order; a radix sort does it 3-4x faster than lexsort.
        keys, docs = _stable_sort_by_key(keys, docs)
    else:
        order = np.lexsort((docs, keys))
        keys, docs = keys[order], docs[order]
    # Only keys held by several entries make pairs.  Dropping the others (most keys: one
    # document's band) leaves every bucket contiguous and in order, so the pairs are the
    # same, and the loop below runs over a small fraction of the entries.
    repeated = keys[1:] == keys[:-1]
    shared = np.zeros(keys.shape[0], dtype=bool)
    shared[1:] = repeated
    shared[:-1] |= repeated
    keys, docs = keys[shared], docs[shared]
    if keys.size < 2:
        return np.empty((0, 2), dtype=np.int64)
    run = np.concatenate(([0], np.cumsum(keys[1:] != keys[:-1])))
    left_parts: list[I64] = []
    right_parts: list[I64] = []
    for step in range(1, max_bucket + 1):
        same = run[:-step] == run[step:]
        if not same.any():
            break
        left_parts.append(docs[:-step][same])
        right_parts.append(docs[step:][same])
    if not left_parts:
        return np.empty((0, 2), dtype=np.int64)
    left = np.concatenate(left_parts)
    right = np.concatenate(right_parts)
    distinct = left != right
    pairs = np.stack([left[distinct], right[distinct]], axis=1)
    return unique_pairs(pairs)


@njit(cache=True)
def _radix_sort(keys: U64, docs: I64) -> tuple[U64, I64]:
    n = keys.shape[0]
    current = keys.copy()
    moved = np.empty(n, dtype=np.uint64)
    owner = docs.copy()
    spare = np.empty(n, dtype=np.int64)
    for shift in range(0, 64, 16):
        counts = np.zeros(65537, dtype=np.int64)
        for i in range(n):
            counts[((current[i] >> np.uint64(shift)) & np.uint64(0xFFFF)) + 1] += 1
        for digit in range(65536):
            counts[digit + 1] += counts[digit]
        for i in range(n):
            digit = (current[i] >> np.uint64(shift)) & np.uint64(0xFFFF)
            at = counts[digit]
            counts[digit] = at + 1
            moved[at] = current[i]
            spare[at] = owner[i]
        current, moved = moved, current
        owner, spare = spare, owner
    return current, owner


def _stable_sort_by_key(keys: U64, docs: I64) -> tuple[U64, I64]:
    """``keys`` and ``docs`` reordered by ``np.argsort(keys, kind="stable")``: a
    least-significant-digit radix sort, four stable passes of 16 bits (exact; tested
    against lexsort)."""
    keys = np.ascontiguousarray(keys, dtype=np.uint64)
    docs = np.ascontiguousarray(docs, dtype=np.int64)
    if not compiled_worthwhile(10_000 + 100 * keys.shape[0]):
        order = np.argsort(keys, kind="stable")
        return keys[order], docs[order]
    result: tuple[U64, I64] = _radix_sort(keys, docs)
    return result


def unique_pairs(pairs: I64) -> I64:
    """Sorted distinct rows of an ``(m, 2)`` pair array (lexicographic order)."""
    if pairs.shape[0] == 0:
        return np.empty((0, 2), dtype=np.int64)
    view = np.ascontiguousarray(pairs, dtype=np.int64)
    if int(view.min()) >= 0 and int(view.max()) <= _LOW:
        # Both ends fit 32 bits: one uint64 per pair sorts in the same order, and a plain
        # sort of one column is some 15x faster than a lexsort of two (np.unique, too).
        packed = distinct((view[:, 0].astype(np.uint64) << _SHIFT) | view[:, 1].astype(np.uint64))
        out = np.empty((packed.shape[0], 2), dtype=np.int64)
        out[:, 0] = packed >> _SHIFT
        out[:, 1] = packed & np.uint64(_LOW)
        return out
    order = np.lexsort((view[:, 1], view[:, 0]))
    view = view[order]
    keep = np.ones(view.shape[0], dtype=bool)
    keep[1:] = np.any(view[1:] != view[:-1], axis=1)
    return view[keep]
