"""The features of a pair of texts, from their profiles.

For two texts A and B (:class:`~neardup.rule.profile.Profile`):

* ``coverage_a``: the share of A's prose tokens found in B, a token being *found* when one
  of the word shingles covering it is among B's shingles; ``coverage_b`` the same of B in
  A.  Prose is what :mod:`neardup.rule.junk` does not mark as page furniture; a text that is
  all furniture (a page of photo captions) is measured on all its tokens instead.
  Directed coverages see what Jaccard cannot: a truncated reprint keeps most of itself in
  the original (high coverage of the short text) while covering only part of it;
* ``passage``: the longest run of found prose tokens outside quotation marks, measured in
  both texts, the smaller of the two (furniture and quoted words are skipped, neither
  counting nor breaking a run), i.e. how many words of running narrative the two share
  at one place;
* ``jaccard``: exact Jaccard of the two shingle sets (reported, and a bound the candidate
  indexes estimate);
* ``cosine``: the cosine of the two texts' content-word counts (same story?).

:func:`pair_features` is exact and deterministic; O((m_a + m_b) log(m_a + m_b)) compiled
(:mod:`neardup.rule._kernels`), tested equal to :func:`features_reference`.

One text against many: a detector that keeps many stored profiles packs each into one
``uint64`` array (:func:`pack_profile`; :func:`unpack_profile` gives the profile back as
views) and measures a new text against a concatenation of them (:func:`pack_rows`) in one
compiled call (:func:`features_rows`, tested equal to :func:`pair_features` row by row), so
the cost per stored text is the features' own, not a Python call's.
:func:`shared_passages` lists the shared passages as character spans in both texts (for
explanations; it needs the profiles' token offsets).
"""

from __future__ import annotations

import dataclasses
import math
import sys
from itertools import accumulate
from typing import Any

import numpy as np
import numpy.typing as npt

from neardup._jit import compiled_worthwhile
from neardup.errors import InputError, SchemeMismatchError
from neardup.rule.junk import FURNITURE, QUOTED
from neardup.rule.profile import Profile, stored_layout

__all__ = [
    "Direction",
    "Features",
    "Passage",
    "RowFeatures",
    "cosines",
    "direction_reference",
    "features_reference",
    "features_rows",
    "pack_profile",
    "pack_profile_bytes",
    "pack_rows",
    "pair_features",
    "shared_passages",
    "unpack_profile",
]

U64 = npt.NDArray[np.uint64]
I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]


@dataclasses.dataclass(frozen=True)
class Direction:
    """How much of one text is found in the other (token counts)."""

    found_prose: int
    prose: int
    found_tokens: int
    tokens: int
    passage: int

    @property
    def coverage(self) -> float:
        """Found share of the prose (of every token when the text has no prose)."""
        if self.prose:
            return self.found_prose / self.prose
        return self.found_tokens / self.tokens if self.tokens else 0.0


@dataclasses.dataclass(frozen=True)
class Features:
    """The features of a pair (module docstring); ``a`` and ``b`` in the order given."""

    a: Direction
    b: Direction
    shared_shingles: int
    jaccard: float
    cosine: float

    @property
    def coverage_a(self) -> float:
        """Share of A's prose found in B."""
        return self.a.coverage

    @property
    def coverage_b(self) -> float:
        """Share of B's prose found in A."""
        return self.b.coverage

    @property
    def passage(self) -> int:
        """Longest run of shared narrative words (the smaller of the two texts' runs)."""
        return min(self.a.passage, self.b.passage)

    def to_dict(self) -> dict[str, Any]:
        """Plain values, rounded to 6 decimals."""
        return {
            "coverage_a": round(self.coverage_a, 6),
            "coverage_b": round(self.coverage_b, 6),
            "passage": self.passage,
            "jaccard": round(self.jaccard, 6),
            "cosine": round(self.cosine, 6),
            "shared_shingles": self.shared_shingles,
            "prose_a": self.a.prose,
            "prose_b": self.b.prose,
            "tokens_a": self.a.tokens,
            "tokens_b": self.b.tokens,
        }


def _check_pair(a: Profile, b: Profile) -> None:
    if a.scheme_id != b.scheme_id:
        raise SchemeMismatchError(
            f"profiles of different schemes cannot be compared: {a.scheme_id} vs {b.scheme_id}"
        )


def pair_features(a: Profile, b: Profile, width: int) -> Features:
    """The :class:`Features` of profiles ``a`` and ``b`` (shingle ``width``: the rule's)."""
    from neardup.rule import _kernels

    _check_pair(a, b)
    c = _kernels.pair_counts(
        a.shingles,
        a.flags,
        a.shingle_set,
        a.terms,
        a.term_counts,
        b.shingles,
        b.flags,
        b.shingle_set,
        b.terms,
        b.term_counts,
        width,
    )
    shared = int(c[0])
    union = a.shingle_set.shape[0] + b.shingle_set.shape[0] - shared
    return Features(
        Direction(*c[1:6]),
        Direction(*c[6:11]),
        shared,
        shared / union if union else 1.0,
        _cosine(int(c[11]), a, b),
    )


def _cosine(dot: int, a: Profile, b: Profile) -> float:
    # Integer counts: the dot product and squared norms are exact, so the cosine is the
    # same correctly rounded float on every machine.
    norms2 = a.term_norm2 * b.term_norm2
    return min(1.0, dot / math.sqrt(norms2)) if norms2 else 0.0


# --- one text against many packed profiles ----------------------------------------------

# Packed row layout (native byte order, in memory only, never persisted): a header of
# ``_kernels.ROW_HEADER`` words (shingle positions m, tokens n, distinct shingles s, terms t,
# prose tokens, squared term norm), then the shingles (m words, text order), the sorted
# distinct shingles (s), the terms (t), the term counts (t uint32, two a word) and the token
# flags (n bytes, eight a word).


def pack_profile(p: Profile) -> U64:
    """The profile as one packed ``uint64`` row (the layout above; offsets not kept)."""
    from neardup.rule._kernels import ROW_HEADER

    m, n = int(p.shingles.shape[0]), p.tokens
    s, t = int(p.shingle_set.shape[0]), int(p.terms.shape[0])
    count_words, flag_words = (t + 1) // 2, (n + 7) // 8
    row = np.zeros(ROW_HEADER + m + s + t + count_words + flag_words, dtype=np.uint64)
    row[:ROW_HEADER] = (m, n, s, t, p.prose, p.term_norm2)
    a = ROW_HEADER
    row[a : a + m] = p.shingles
    a += m
    row[a : a + s] = p.shingle_set
    a += s
    row[a : a + t] = p.terms
    a += t
    row[a : a + count_words].view(np.uint32)[:t] = p.term_counts
    a += count_words
    row[a : a + flag_words].view(np.uint8)[:n] = p.flags
    return row


# What the reference path costs a stored profile (reading, then packing it): 25-50 us
# measured on a few hundred words.
_UNPACK_NS = 50_000


def pack_profile_bytes(data: bytes, scheme_id: str) -> U64:
    """``pack_profile(Profile.from_bytes(data, scheme_id=scheme_id))`` without making the
    profile: a stored article read back for judging, in one compiled pass on a
    little-endian machine (tested equal); the same errors as ``Profile.from_bytes``."""
    view = memoryview(data)
    _, n, m, k, at = stored_layout(view, scheme_id)
    if sys.byteorder != "little" or not compiled_worthwhile(_UNPACK_NS + 50 * (m + n + k)):
        return pack_profile(Profile.from_bytes(data, scheme_id=scheme_id))
    from neardup.rule._kernels import pack_stored

    row: U64 = pack_stored(np.frombuffer(view, dtype=np.uint8), at, n, m, k)
    return row


def unpack_profile(row: U64, scheme_id: str) -> Profile:
    """The :class:`Profile` of a packed row (its arrays are views of ``row``; no offsets)."""
    from neardup.rule._kernels import ROW_HEADER

    m, n, s, t, prose, norm2 = (int(v) for v in row[:ROW_HEADER])
    a = ROW_HEADER + m
    shingle_set = row[a : a + s]
    a += s
    terms = row[a : a + t]
    a += t
    count_words = (t + 1) // 2
    counts = row[a : a + count_words].view(np.uint32)[:t]
    a += count_words
    flags = row[a : a + (n + 7) // 8].view(np.uint8)[:n]
    p = Profile(scheme_id, row[ROW_HEADER : ROW_HEADER + m], flags, terms, counts)
    # The derived values the row carries (what the cached properties would compute).
    shingle_set = shingle_set.view()
    shingle_set.flags.writeable = False
    p.__dict__.update(shingle_set=shingle_set, prose=prose, term_norm2=norm2)
    return p


def pack_rows(rows: list[U64]) -> tuple[U64, I64]:
    """Packed rows concatenated, with ``offsets`` (row ``i`` starts at ``offsets[i]``;
    ``offsets[-1]`` is the total length)."""
    offsets = np.fromiter(accumulate(map(len, rows), initial=0), np.int64, len(rows) + 1)
    try:
        # The rows' bytes joined: half the cost of np.concatenate on a few dozen rows.
        return np.frombuffer(bytearray().join(rows), dtype=np.uint64), offsets  # type: ignore[arg-type]
    except (BufferError, TypeError):  # a strided row exports no contiguous buffer
        return np.concatenate(rows) if rows else np.zeros(0, np.uint64), offsets


_EXACT = float(1 << 53)  # integers below this are exact as float64
_NORM2 = 5  # the header word of a packed row holding its squared term norm


def large_norms(norm2: int, norms2: npt.NDArray[Any]) -> bool:
    """Whether a squared norm reaches 2**53 (then the compiled cosines are not the rule's
    floats and :func:`cosines` computes them with Python integers)."""
    return norm2 >= _EXACT or (norms2.shape[0] > 0 and int(norms2.max()) >= _EXACT)


def cosines(dot: I64, norm2: int, norms2: npt.NDArray[Any]) -> F64:
    """The rule's content cosine (:func:`pair_features`) of one text of squared term norm
    ``norm2`` with several texts, from the dot products: the same correctly rounded floats
    (below 2**53 the float product of the two norms is the correctly rounded integer
    product; above, each pair is computed as :func:`pair_features` does)."""
    nb = norms2.astype(np.float64)
    na = float(norm2)
    if na >= _EXACT or (nb.shape[0] and float(nb.max()) >= _EXACT):
        return np.array(
            [
                min(1.0, d / math.sqrt(norm2 * int(b))) if norm2 * int(b) else 0.0
                for d, b in zip(dot.tolist(), norms2.tolist(), strict=True)
            ],
            dtype=np.float64,
        )
    prod = na * nb
    with np.errstate(divide="ignore", invalid="ignore"):
        cos = np.minimum(1.0, dot.astype(np.float64) / np.sqrt(prod))
    out: F64 = np.where(prod > 0, cos, 0.0)
    return out


@dataclasses.dataclass(frozen=True)
class RowFeatures:
    """The features of one text ``a`` against several packed rows ``b`` (one entry per
    row, in the order asked): the fields of :class:`Features` that the verdict reads, and
    ``counts``, the raw integer counts (:func:`neardup.rule._kernels.pair_counts`)."""

    coverage_a: F64
    coverage_b: F64
    passage: I64
    cosine: F64
    shared: I64
    counts: I64


def features_rows(a: Profile, rows: U64, offsets: I64, select: I64, width: int) -> RowFeatures:
    """:func:`pair_features` of ``a`` with each row ``select[j]`` of the packed ``rows``
    (profiles of ``a``'s scheme: the caller packs only those), in one compiled call."""
    from neardup.rule import _kernels

    c, values = _kernels.pair_counts_rows(
        a.shingles,
        a.flags,
        a.shingle_set,
        a.terms,
        a.term_counts,
        np.searchsorted(a.shingle_set, a.shingles),
        rows,
        offsets,
        np.ascontiguousarray(select, dtype=np.int64),
        width,
    )
    cosine = values[:, 2]
    norms2 = rows[offsets[select] + _NORM2]
    if large_norms(a.term_norm2, norms2):
        cosine = cosines(c[:, 11], a.term_norm2, norms2)
    return RowFeatures(
        coverage_a=values[:, 0],
        coverage_b=values[:, 1],
        passage=np.minimum(c[:, 5], c[:, 10]),
        cosine=cosine,
        shared=c[:, 0],
        counts=c,
    )


# --- pure-Python references (the oracles of the compiled features) ----------------------


def direction_reference(x: Profile, y: Profile, width: int) -> Direction:
    """:class:`Direction` of ``x`` in ``y`` by plain Python sets and loops."""
    n = x.tokens
    ys = set(y.shingles.tolist())
    span = min(width, n)
    found = [False] * n
    for p, h in enumerate(x.shingles.tolist()):
        if h in ys:
            for t in range(p, min(p + span, n)):
                found[t] = True
    flags = x.flags.tolist()
    prose = [not f & FURNITURE for f in flags]
    run = best = 0
    for t in range(n):
        if not prose[t] or flags[t] & QUOTED:
            continue
        run = run + 1 if found[t] else 0
        best = max(best, run)
    return Direction(
        sum(f and p for f, p in zip(found, prose, strict=True)), sum(prose), sum(found), n, best
    )


def features_reference(a: Profile, b: Profile, width: int) -> Features:
    """:func:`pair_features` by plain Python (sets, dicts, loops)."""
    _check_pair(a, b)
    sa, sb = set(a.shingles.tolist()), set(b.shingles.tolist())
    ta = dict(zip(a.terms.tolist(), a.term_counts.tolist(), strict=True))
    tb = dict(zip(b.terms.tolist(), b.term_counts.tolist(), strict=True))
    dot = sum(v * tb[k] for k, v in ta.items() if k in tb)
    norms2 = sum(v * v for v in ta.values()) * sum(v * v for v in tb.values())
    union = len(sa | sb)
    return Features(
        direction_reference(a, b, width),
        direction_reference(b, a, width),
        len(sa & sb),
        len(sa & sb) / union if union else 1.0,
        min(1.0, dot / math.sqrt(norms2)) if norms2 else 0.0,
    )


# --- shared passages as spans ------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Passage:
    """A passage found in both texts: ``[a_start, a_end)`` of A and ``[b_start, b_end)`` of
    B (character offsets) and its length in tokens (of A)."""

    a_start: int
    a_end: int
    b_start: int
    b_end: int
    tokens: int

    def to_dict(self) -> dict[str, int]:
        """Plain values."""
        return dataclasses.asdict(self)


def _spans(p: Profile) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    if p.starts is None or p.ends is None:
        raise InputError("shared passages need profiles made from the texts (with offsets)")
    return p.starts, p.ends


def shared_passages(a: Profile, b: Profile, width: int, min_tokens: int = 1) -> list[Passage]:
    """Passages of at least ``min_tokens`` tokens found in both texts, in A's order.

    Greedy seed-and-extend on equal shingles: each shingle of A not yet in a passage is
    paired with the first occurrence in B of the same shingle after the previous passage's
    end in B (else the first occurrence anywhere), and the pair is extended while the next
    shingles are equal.  Deterministic; O(m_a + m_b) after one dictionary of B.
    """
    _check_pair(a, b)
    a_starts, a_ends = _spans(a)
    b_starts, b_ends = _spans(b)
    ha, hb = a.shingles.tolist(), b.shingles.tolist()
    where: dict[int, list[int]] = {}
    for q, h in enumerate(hb):
        where.setdefault(h, []).append(q)
    span_a, span_b = min(width, a.tokens), min(width, b.tokens)
    out: list[Passage] = []
    p, after = 0, 0
    while p < len(ha):
        found = where.get(ha[p])
        if not found:
            p += 1
            continue
        q = next((x for x in found if x >= after), found[0])
        k = 1
        while p + k < len(ha) and q + k < len(hb) and ha[p + k] == hb[q + k]:
            k += 1
        a_last = min(p + k - 1 + span_a, a.tokens) - 1
        b_last = min(q + k - 1 + span_b, b.tokens) - 1
        tokens = a_last - p + 1
        if tokens >= min_tokens:
            out.append(
                Passage(
                    int(a_starts[p]),
                    int(a_ends[a_last]),
                    int(b_starts[q]),
                    int(b_ends[b_last]),
                    tokens,
                )
            )
        after = q + k
        p += k
    return out
