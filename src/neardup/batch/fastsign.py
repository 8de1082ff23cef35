"""Whole-partition shingling and MinHash: the same values as per-document signing, faster.

Signing documents one by one pays numpy's per-call overhead a dozen times per document.
Here a partition is processed at once:

* :func:`partition_shingles`: the texts are joined with a *separator word* between them and
  tokenised in :func:`neardup.shingles.token_hashes` calls of about half a million
  characters (the text stage works token by token, so joining changes no token); word
  shingles are computed for the whole token array
  in one :func:`neardup.shingles.word_shingles` call, and windows that straddle a separator
  are dropped.  Documents shorter than ``width`` tokens get their single shingle exactly as
  :func:`~neardup.shingles.word_shingles` defines it.  If a text happens to contain the
  separator word itself, the partition falls back to per-document tokenisation.  Result:
  for every document, the same *set* of shingle hashes as
  :func:`neardup.sketch.shingleset.shingle_hashes` (tested).
* :func:`minhash_matrix`: the k-permutation MinHash of :mod:`neardup.sketch.minhash`
  (``method="permutations"``: ``min_x (a_i x + b_i) mod 2**64``) for all documents in one
  numba loop, with the ``a_i, b_i`` of
  :func:`~neardup.sketch.minhash.permutation_params`, so the rows are byte-identical to
  ``sign(text, "minhash", method="permutations", ...)`` (tested).

Guarantees: deterministic; memory linear in the partition's tokens.
"""

from __future__ import annotations

import functools
import itertools

import numpy as np
import numpy.typing as npt

from neardup._jit import compiled_worthwhile, njit
from neardup.shingles import token_hashes, word_shingles
from neardup.sketch.minhash import permutation_params
from neardup.sketch.shingleset import TOKEN_SEED
from neardup.text import TextConfig

__all__ = ["minhash_matrix", "partition_shingles", "unique_rows"]

U64 = npt.NDArray[np.uint64]
I64 = npt.NDArray[np.int64]

# A word that no news text contains; a text that does makes the partition take the slow path.
_SEPARATOR = "qxzvneardupdocumentseparatorqxzv"
# Characters of text tokenised per call (see _joined_tokens).
_CHUNK_CHARS = 1 << 19


@functools.lru_cache(maxsize=16)
def _separator_hash(config: TextConfig) -> int | None:
    hashes = token_hashes(_SEPARATOR, config, TOKEN_SEED)
    return int(hashes[0]) if hashes.shape[0] == 1 else None


def _per_document(texts: list[str], config: TextConfig, width: int) -> tuple[U64, I64]:
    parts = [word_shingles(token_hashes(t, config, TOKEN_SEED), width) for t in texts]
    offsets = np.zeros(len(parts) + 1, dtype=np.int64)
    np.cumsum([p.shape[0] for p in parts], out=offsets[1:])
    flat = np.concatenate(parts) if parts else np.empty(0, dtype=np.uint64)
    return flat.astype(np.uint64, copy=False), offsets


def partition_shingles(texts: list[str], config: TextConfig, width: int) -> tuple[U64, I64]:
    """Word ``width``-shingles of each text, ragged ``(flat, offsets)``, in position order
    (duplicates kept; use :func:`unique_rows` for sets).

    The texts are joined and tokenised together (ASCII or not: the text stage's scanner
    reads any Unicode text).
    """
    return _joined(texts, config, width)


def _chunks(texts: list[str], target: int) -> list[tuple[int, int]]:
    """``[lo, hi)`` runs of consecutive texts of about ``target`` characters each."""
    lengths = np.fromiter((len(t) for t in texts), dtype=np.int64, count=len(texts))
    ends = np.cumsum(lengths)
    bounds = [0]
    while bounds[-1] < len(texts):
        lo = bounds[-1]
        base = int(ends[lo - 1]) if lo else 0
        hi = int(np.searchsorted(ends, base + target, side="right"))
        bounds.append(min(len(texts), max(hi, lo + 1)))
    return list(itertools.pairwise(bounds))


def _joined_tokens(texts: list[str], config: TextConfig, sep: np.uint64) -> U64:
    """Token hashes of ``texts`` joined by the separator word: the same array as one
    :func:`token_hashes` call on the whole joined string (tokens never span a separator),
    computed in pieces of about ``_CHUNK_CHARS`` characters because the compiled scanner
    runs 2-3x faster when its text and output stay in the CPU caches (measured on the
    50k planted corpus: 0.32 s warm per 500-document piece vs 0.89 s for 5,000)."""
    pieces: list[U64] = []
    separator = np.array([sep], dtype=np.uint64)
    for n, (lo, hi) in enumerate(_chunks(texts, _CHUNK_CHARS)):
        if n:
            pieces.append(separator)
        pieces.append(token_hashes(f" {_SEPARATOR} ".join(texts[lo:hi]), config, TOKEN_SEED))
    return np.concatenate(pieces) if pieces else np.empty(0, dtype=np.uint64)


def _joined(texts: list[str], config: TextConfig, width: int) -> tuple[U64, I64]:
    n = len(texts)
    sep = _separator_hash(config)
    if n == 0:
        return np.empty(0, dtype=np.uint64), np.zeros(1, dtype=np.int64)
    if sep is None or any(_SEPARATOR in t for t in texts):
        return _per_document(texts, config, width)
    tokens = _joined_tokens(texts, config, np.uint64(sep))
    is_sep = tokens == np.uint64(sep)
    if int(is_sep.sum()) != n - 1:  # a separator hash collision: stay exact
        return _per_document(texts, config, width)
    # Tokens per document, and the document of every token position.
    sep_pos = np.flatnonzero(is_sep)
    bounds = np.concatenate(([-1], sep_pos, [tokens.shape[0]]))
    counts = np.diff(bounds) - 1
    seen = np.concatenate(([0], np.cumsum(is_sep)))  # separators before position i
    m = tokens.shape[0]
    docs_parts: list[I64] = []
    vals_parts: list[U64] = []
    if m >= width:
        shingles = word_shingles(tokens, width)
        starts = np.arange(shingles.shape[0])
        valid = seen[starts + width] == seen[starts]
        docs_parts.append(seen[starts[valid]].astype(np.int64))
        vals_parts.append(shingles[valid])
    short = np.flatnonzero((counts > 0) & (counts < width))
    for d in short:
        first = int(bounds[d]) + 1
        docs_parts.append(np.array([d], dtype=np.int64))
        vals_parts.append(word_shingles(tokens[first : first + int(counts[d])], width))
    if not docs_parts:
        return np.empty(0, dtype=np.uint64), np.zeros(n + 1, dtype=np.int64)
    docs = np.concatenate(docs_parts)
    vals = np.concatenate(vals_parts)
    if short.shape[0]:
        order = np.argsort(docs, kind="stable")
        docs, vals = docs[order], vals[order]
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(docs, minlength=n), out=offsets[1:])
    return vals, offsets


@njit(cache=True)
def _sort_unique_rows(flat: U64, offsets: I64) -> tuple[U64, I64]:
    n = offsets.shape[0] - 1
    out = np.empty(flat.shape[0], dtype=np.uint64)
    new_offsets = np.zeros(n + 1, dtype=np.int64)
    pos = 0
    for d in range(n):
        row = np.sort(flat[offsets[d] : offsets[d + 1]])
        for t in range(row.shape[0]):
            if t == 0 or row[t] != row[t - 1]:
                out[pos] = row[t]
                pos += 1
        new_offsets[d + 1] = pos
    return out[:pos].copy(), new_offsets


def unique_rows(flat: U64, offsets: I64) -> tuple[U64, I64]:
    """Each ragged row sorted ascending with duplicates removed (exact shingle sets)."""
    flat = np.ascontiguousarray(flat, dtype=np.uint64)
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    if not compiled_worthwhile(10_000 + 150 * flat.shape[0]):
        return _unique_rows_numpy(flat, offsets)
    result: tuple[U64, I64] = _sort_unique_rows(flat, offsets)
    return result


def _unique_rows_numpy(flat: U64, offsets: I64) -> tuple[U64, I64]:
    """Reference of :func:`unique_rows` in numpy (one lexicographic sort of (row, value))."""
    rows = np.repeat(np.arange(offsets.shape[0] - 1, dtype=np.int64), np.diff(offsets))
    order = np.lexsort((flat, rows))
    values, rows = flat[order], rows[order]
    keep = np.ones(values.shape[0], dtype=bool)
    keep[1:] = (values[1:] != values[:-1]) | (rows[1:] != rows[:-1])
    new_offsets = np.zeros(offsets.shape[0], dtype=np.int64)
    np.cumsum(np.bincount(rows[keep], minlength=offsets.shape[0] - 1), out=new_offsets[1:])
    return values[keep], new_offsets


@njit(cache=True)
def _minhash_kernel(flat: U64, offsets: I64, a: U64, b: U64) -> U64:
    n = offsets.shape[0] - 1
    k = a.shape[0]
    out = np.full((n, k), np.uint64(0xFFFFFFFFFFFFFFFF), dtype=np.uint64)
    for d in range(n):
        row = out[d]
        for t in range(offsets[d], offsets[d + 1]):
            x = flat[t]
            for p in range(k):
                h = a[p] * x + b[p]  # uint64 arithmetic wraps mod 2**64
                if h < row[p]:
                    row[p] = h
    return out


def minhash_matrix(flat: U64, offsets: I64, num_perm: int, seed: int) -> tuple[U64, I64]:
    """``(values (n, num_perm), lengths (n,))``: k-permutation MinHash of each ragged row;
    rows without shingles get length 0 (their values are meaningless)."""
    a, b = permutation_params(num_perm, seed)
    flat = np.ascontiguousarray(flat, dtype=np.uint64)
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    lengths = np.where(np.diff(offsets) > 0, num_perm, 0).astype(np.int64)
    if not compiled_worthwhile(5_000 * (offsets.shape[0] - 1) + 3 * flat.shape[0] * num_perm):
        return _minhash_numpy(flat, offsets, a, b), lengths
    values: U64 = _minhash_kernel(flat, offsets, a, b)
    return values, lengths


def _minhash_numpy(flat: U64, offsets: I64, a: U64, b: U64) -> U64:
    """Reference of the compiled pass of :func:`minhash_matrix`, in numpy blocks of rows."""
    n = offsets.shape[0] - 1
    out = np.full((n, a.shape[0]), np.uint64(0xFFFFFFFFFFFFFFFF), dtype=np.uint64)
    sizes = np.diff(offsets)
    filled = np.flatnonzero(sizes > 0)
    step = 64
    for lo in range(0, filled.shape[0], step):
        rows = filled[lo : lo + step]
        begin, end = int(offsets[rows[0]]), int(offsets[rows[-1] + 1])
        hashed = flat[begin:end, None] * a[None, :]  # uint64 arithmetic wraps mod 2**64
        hashed += b[None, :]
        # Empty rows hold no shingles, so the starts of the filled ones delimit them.
        out[rows] = np.minimum.reduceat(hashed, offsets[rows] - begin, axis=0)
    return out
