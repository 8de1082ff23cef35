"""The rule's profiles of a whole partition at once: the same rows as one
:func:`neardup.rule.profile` call per text, without its per-text overhead.

A profile (:mod:`neardup.rule.profile`) is the text's token hashes and spans, one flag byte
per token (page furniture, quoted words: :func:`neardup.rule.junk.token_flags`), the word
shingles, their sorted distinct set and the content words with their counts.  Made one text
at a time, the dozen numpy calls per text cost more than the work on a news article.  Here:

* the texts are joined with the separator word of :mod:`neardup.batch.fastsign` and
  tokenised in calls of about half a million characters, with spans; the spans are
  shifted back into each text and the separators are checked to stand exactly where they
  were put (else the partition is profiled text by text);
* the token flags are the rule's own function, called per text (they read paragraphs);
* shingles, sets (:func:`neardup.batch.fastsign.unique_rows`), content words and their
  counts and the squared norms are computed for all texts together, with the rule's
  definitions (:func:`neardup.rule.profile`'s ``_content_terms``): tokens of at least three
  characters that do not start with a digit and are not stop words, from the prose unless
  the text has none.

``terms=False`` leaves the content words out (empty rows, norm 0): a batch ``dedup`` asks
only whether pairs are duplicates, which the cosine never decides.

Guarantees: every row equals :func:`neardup.batch.verify.profile_rows` of the same texts
(tested on Unicode, CJK, empty and one-word texts and texts holding the separator word);
deterministic; memory linear in the partition's characters.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from neardup.batch.fastsign import _SEPARATOR, _chunks, _separator_hash, unique_rows
from neardup.batch.verify import ProfileRows, profile_rows
from neardup.rule import RuleConfig
from neardup.rule.junk import FURNITURE, token_flags
from neardup.rule.profile import _stop_hashes
from neardup.shingles import token_hashes_and_spans, word_shingles
from neardup.sketch.shingleset import TOKEN_SEED

__all__ = ["partition_profiles"]

U64 = npt.NDArray[np.uint64]
I64 = npt.NDArray[np.int64]

# Characters of joined text tokenised per call (the scanner is fastest within the caches).
_CHUNK_CHARS = 1 << 19


def partition_profiles(texts: list[str], rule: RuleConfig, terms: bool = True) -> ProfileRows:
    """The rule's profiles of ``texts`` as ragged rows (see the module docstring)."""
    tokens = _joined_tokens(texts, rule)
    if tokens is None:
        rows = profile_rows(texts, rule)
        if terms:
            return rows
        empty = np.zeros(len(texts) + 1, dtype=np.int64)
        return ProfileRows(
            rows.shingles,
            rows.shingle_offsets,
            rows.flags,
            rows.token_offsets,
            rows.sets,
            rows.set_offsets,
            np.empty(0, dtype=np.uint64),
            np.empty(0, dtype=np.uint32),
            empty,
            np.zeros(len(texts), dtype=np.int64),
        )
    hashes, starts, ends, first, doc = tokens
    n = len(texts)
    token_offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(doc, minlength=n), out=token_offsets[1:])
    flags = _flags(texts, starts, token_offsets, rule)
    shingles, shingle_offsets = _shingles(hashes, token_offsets, rule.width)
    sets, set_offsets = unique_rows(shingles, shingle_offsets)
    if terms:
        values, counts, term_offsets = _content_terms(
            hashes, starts, ends, first, flags, doc, n, _stop_hashes(rule.text)
        )
        # Exact integer squared norms: a cumulative sum of squares, differenced per row.
        c = counts.astype(np.int64)
        squares = np.zeros(c.shape[0] + 1, dtype=np.int64)
        np.cumsum(c * c, out=squares[1:])
        norm2 = squares[term_offsets[1:]] - squares[term_offsets[:-1]]
    else:
        values = np.empty(0, dtype=np.uint64)
        counts = np.empty(0, dtype=np.uint32)
        term_offsets = np.zeros(n + 1, dtype=np.int64)
        norm2 = np.zeros(n, dtype=np.int64)
    return ProfileRows(
        shingles,
        shingle_offsets,
        flags,
        token_offsets,
        sets,
        set_offsets,
        values,
        counts,
        term_offsets,
        norm2,
    )


def _joined_tokens(
    texts: list[str], rule: RuleConfig
) -> tuple[U64, I64, I64, npt.NDArray[np.uint32], I64] | None:
    """``(hashes, starts, ends, first, doc)`` of every token of every text (spans within
    its text, ``first``: the code of its first character, ``doc``: its text), or ``None``
    when the joined scan cannot be trusted (a text holds the separator word, a hash
    collision moved a separator)."""
    sep = _separator_hash(rule.text)
    if sep is None or any(_SEPARATOR in t for t in texts):
        return None
    glue = f" {_SEPARATOR} "
    parts: list[tuple[U64, I64, I64, npt.NDArray[np.uint32], I64]] = []
    for lo, hi in _chunks(texts, _CHUNK_CHARS):
        joined = glue.join(texts[lo:hi])
        hashes, starts, ends = token_hashes_and_spans(joined, rule.text, TOKEN_SEED)
        lengths = np.fromiter((len(t) for t in texts[lo:hi]), dtype=np.int64, count=hi - lo)
        begin = np.zeros(hi - lo, dtype=np.int64)
        np.cumsum(lengths[:-1] + len(glue), out=begin[1:])
        is_sep = hashes == np.uint64(sep)
        where = begin[1:] - len(glue) + 1  # where each separator word was put
        if int(is_sep.sum()) != hi - lo - 1 or not np.array_equal(starts[is_sep], where):
            return None
        keep = ~is_sep
        local = np.cumsum(is_sep)[keep]
        if joined.isascii():
            codes = np.frombuffer(joined.encode("ascii"), dtype=np.uint8).astype(np.uint32)
        else:
            codes = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), dtype="<u4")
        s, e = starts[keep], ends[keep]
        first = codes[s] if s.shape[0] else np.empty(0, dtype=np.uint32)
        parts.append((hashes[keep], s - begin[local], e - begin[local], first, local + lo))
    if not parts:
        empty = np.empty(0, dtype=np.int64)
        return np.empty(0, dtype=np.uint64), empty, empty, np.empty(0, np.uint32), empty
    return (
        np.concatenate([p[0] for p in parts]),
        np.concatenate([p[1] for p in parts]),
        np.concatenate([p[2] for p in parts]),
        np.concatenate([p[3] for p in parts]).astype(np.uint32),
        np.concatenate([p[4] for p in parts]).astype(np.int64),
    )


def _flags(
    texts: list[str], starts: I64, token_offsets: I64, rule: RuleConfig
) -> npt.NDArray[np.uint8]:
    """The rule's token flags of every text, concatenated."""
    pieces = [
        token_flags(
            text,
            starts[token_offsets[d] : token_offsets[d + 1]],
            min_paragraph_tokens=rule.min_paragraph_tokens,
        )
        for d, text in enumerate(texts)
    ]
    return np.concatenate(pieces) if pieces else np.empty(0, dtype=np.uint8)


def _shingles(hashes: U64, token_offsets: I64, width: int) -> tuple[U64, I64]:
    """Word shingles of each text (:func:`neardup.shingles.word_shingles` of its tokens),
    ragged in text order: one pass over all tokens, windows across two texts dropped, and
    the texts shorter than ``width`` shingled alone."""
    n = token_offsets.shape[0] - 1
    counts = np.diff(token_offsets)
    sizes = np.where(counts >= width, counts - width + 1, np.minimum(counts, 1))
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    out = np.empty(int(offsets[-1]), dtype=np.uint64)
    if hashes.shape[0] >= width:
        windows = word_shingles(hashes, width)
        start = np.arange(windows.shape[0], dtype=np.int64)
        doc_of = np.repeat(np.arange(n, dtype=np.int64), counts)
        inside = doc_of[start] == doc_of[start + width - 1]
        out[np.repeat(counts >= width, sizes)] = windows[inside]
    for d in np.flatnonzero((counts > 0) & (counts < width)).tolist():
        row = hashes[token_offsets[d] : token_offsets[d + 1]]
        out[offsets[d] : offsets[d + 1]] = word_shingles(row, width)
    return out, offsets


def _content_terms(
    hashes: U64,
    starts: I64,
    ends: I64,
    first: npt.NDArray[np.uint32],
    flags: npt.NDArray[np.uint8],
    doc: I64,
    n: int,
    stops: U64,
) -> tuple[U64, npt.NDArray[np.uint32], I64]:
    """The content words of every text with their counts (the rule's definition, see the
    module docstring), ragged: each row's distinct words ascending."""
    keep = (ends - starts) >= 3
    keep &= (first < 48) | (first > 57)  # figures start with a digit 0-9
    at = np.minimum(np.searchsorted(stops, hashes), stops.shape[0] - 1)
    keep &= stops[at] != hashes
    prose = (flags & FURNITURE) == 0
    has_prose = np.bincount(doc[keep & prose], minlength=n) > 0
    keep &= prose | ~has_prose[doc]
    words, owner = hashes[keep], doc[keep]
    order = np.lexsort((words, owner))
    words, owner = words[order], owner[order]
    new = np.ones(words.shape[0], dtype=bool)
    new[1:] = (words[1:] != words[:-1]) | (owner[1:] != owner[:-1])
    begin = np.flatnonzero(new)
    counts = np.diff(np.append(begin, words.shape[0])).astype(np.uint32)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(owner[begin], minlength=n), out=offsets[1:])
    return words[begin].astype(np.uint64), counts, offsets
