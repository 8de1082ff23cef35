"""The word test of :mod:`neardup.similarity.overlap` as compiled kernels over word arrays.

:func:`word_arrays` splits an ASCII text once into flat arrays (its case-folded words'
bytes, 64-bit word hashes, paragraph bounds, key-word flags and its bag of distinct words;
layout in :mod:`neardup.similarity._word_kernels`), and :func:`overlap_arrays`,
:func:`sequence_containment_arrays`, :func:`key_overlap_arrays` and :func:`word_test_arrays`
compute on two of them what :func:`~neardup.similarity.overlap.overlap_prepared`,
:func:`~neardup.similarity.overlap.sequence_containment`,
:func:`~neardup.similarity.overlap.key_overlap` and the stream's word test compute on
prepared texts: the same packaging peel, the same greedy fuzzy matching in the same order
with the same early stops (partial counts included), the same word n-grams and key words.

Equality with the reference is tested on real Reuters pairs and on generated texts
(tests/test_wordarrays.py).  Words are compared by 64-bit hashes, so two different words
are taken for one with probability about 2^-64 per pair of words compared; fuzzy pairs are
compared by their bytes.  Only ASCII texts under a configuration without masks or joined
words have arrays (:func:`word_arrays` returns ``None`` otherwise: use the reference).
Deterministic (no salted hashes); cost O(n + m) plus the fuzzy pairs, which are screened by
length and by their sets of bytes before a dynamic program; memory about 60 bytes a word.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import numpy.typing as npt

from neardup.similarity import _word_kernels as k
from neardup.similarity.overlap import _CALENDAR, KeyOverlap, Overlap, OverlapConfig

__all__ = [
    "WordArrays",
    "WordTest",
    "key_overlap_arrays",
    "overlap_arrays",
    "sequence_containment_arrays",
    "supported",
    "word_arrays",
    "word_hash",
    "word_test_arrays",
    "word_test_params",
]


@dataclasses.dataclass(frozen=True, slots=True)
class WordArrays:
    """An ASCII text split for the compiled word test: ``chars`` (its words' bytes, case
    folded) and ``meta`` (everything else, packed; see :mod:`~neardup.similarity._word_kernels`).
    Made by :func:`word_arrays`; read-only by convention."""

    chars: npt.NDArray[np.uint8]
    meta: npt.NDArray[np.int64]

    @property
    def words(self) -> int:
        """Number of words."""
        return int(self.meta[0])

    @property
    def nbytes(self) -> int:
        """Bytes held by the arrays."""
        return int(self.chars.nbytes + self.meta.nbytes)


def word_hash(word: str) -> int:
    """The 64-bit hash (as a signed int) the arrays give an ASCII word (case-folded)."""
    chars = np.frombuffer(word.encode("ascii"), np.uint8)
    return int(k._hash(chars, 0, chars.shape[0]))


_CALENDAR_HASHES = np.array(sorted({word_hash(w) for w in _CALENDAR}), np.int64)


def supported(config: OverlapConfig) -> bool:
    """Whether the kernels implement ``config``: no masks, no joined words."""
    return not (config.mask_digits or config.mask_calendar or config.match_joined)


def word_arrays(text: str, config: OverlapConfig | None = None) -> WordArrays | None:
    """The arrays of ``text``, or ``None`` when it is not ASCII or ``config`` is not
    :func:`supported` (the reference implementation then applies)."""
    cfg = config or OverlapConfig()
    if not text.isascii() or not supported(cfg):
        return None
    chars, meta = k.tokenize(np.frombuffer(text.encode("ascii"), np.uint8), _CALENDAR_HASHES)
    return WordArrays(chars, meta)


def _params(
    cfg: OverlapConfig, decide: tuple[float, float] | None = None, **rule: float
) -> npt.NDArray[np.float64]:
    params = np.zeros(k.N_PARAMS, np.float64)
    params[k.P_MAX_DELETES] = cfg.max_deletes
    params[k.P_FUZZY_MIN] = cfg.fuzzy_min_length
    params[k.P_LONG] = cfg.long_word_length
    params[k.P_PACK_MAX] = cfg.packaging_max_words
    params[k.P_PACK_MIN_FOUND] = cfg.packaging_min_found
    if decide is not None:
        params[k.P_DECIDE] = 1.0
        params[k.P_MIN_COVERAGE], params[k.P_MAX_ADDED] = decide
    for name, value in rule.items():
        params[getattr(k, "P_" + name.upper())] = value
    return params


def _overlap_of(out: Any) -> Overlap:
    return Overlap(
        stored_words=int(out[0]),
        new_words=int(out[1]),
        stored_matched=int(out[2]),
        new_matched=int(out[3]),
        exact=int(out[4]),
        fuzzy=int(out[5]),
        joined=0,
        packaging=int(out[6]),
        complete=bool(out[7]),
    )


def overlap_arrays(
    stored: WordArrays,
    new: WordArrays,
    config: OverlapConfig | None = None,
    *,
    decide: tuple[float, float] | None = None,
) -> Overlap:
    """:func:`~neardup.similarity.overlap.overlap_prepared` of the two texts (equal results,
    ``complete`` and the partial counts of a decided matching included)."""
    cfg = config or OverlapConfig()
    out = k.overlap_counts(_params(cfg, decide), stored.chars, stored.meta, new.chars, new.meta)
    return _overlap_of(out)


def sequence_containment_arrays(
    stored: WordArrays,
    new: WordArrays,
    width: int = 3,
    config: OverlapConfig | None = None,
    *,
    at_least: float | None = None,
) -> float:
    """:func:`~neardup.similarity.overlap.sequence_containment` of the two texts."""
    cfg = config or OverlapConfig()
    bound = -1.0 if at_least is None else float(at_least)
    share = k.sequence_share(
        _params(cfg), stored.chars, stored.meta, new.chars, new.meta, int(width), bound
    )
    return float(share)


def key_overlap_arrays(
    stored: WordArrays, new: WordArrays, config: OverlapConfig | None = None
) -> KeyOverlap:
    """:func:`~neardup.similarity.overlap.key_overlap` of the two texts."""
    cfg = config or OverlapConfig()
    out = k.key_counts(_params(cfg), stored.chars, stored.meta, new.chars, new.meta)
    return KeyOverlap(*(int(x) for x in out))


@dataclasses.dataclass(frozen=True, slots=True)
class WordTest:
    """The parts of the stream's word test (:func:`word_test_arrays`): ``overlap`` always;
    ``sequence_passed`` None when the overlap rule failed first; ``keys`` None unless the
    sequence passed."""

    overlap: Overlap
    sequence_passed: bool | None
    keys: KeyOverlap | None


def word_test_params(
    config: OverlapConfig,
    *,
    decide: tuple[float, float],
    min_matched: int,
    jaccard_ok: bool,
    width: int,
    min_sequence: float,
) -> npt.NDArray[np.float64]:
    """The parameters of :func:`word_test_arrays` (made once, reused for every pair): the
    overlap with ``decide`` = (min coverage, max added); the overlap rule passes when
    ``coverage >= decide[0]``, ``added <= decide[1]`` and (``min_matched`` stored words
    match or ``jaccard_ok``); then the sequence containment of ``width``-grams must reach
    ``min_sequence``."""
    return _params(
        config,
        decide,
        min_matched=min_matched,
        jaccard_ok=1.0 if jaccard_ok else 0.0,
        width=width,
        min_sequence=min_sequence,
    )


def word_test_arrays(
    stored: WordArrays, new: WordArrays, params: npt.NDArray[np.float64]
) -> WordTest:
    """In one compiled call, the stream's word test up to its key words (parameters from
    :func:`word_test_params`): the overlap; when its rule passes, the sequence containment;
    when that passes, the key word counts.  The same values as the reference functions
    (:func:`~neardup.similarity.overlap.overlap_prepared` with ``decide``,
    :func:`~neardup.similarity.overlap.sequence_containment` with ``at_least``,
    :func:`~neardup.similarity.overlap.key_overlap`) called in that order."""
    out = k.word_test(params, stored.chars, stored.meta, new.chars, new.meta)
    passed = None if not out[10] else bool(out[20])
    keys = KeyOverlap(*(int(x) for x in out[12:20])) if out[20] else None
    return WordTest(_overlap_of(out), passed, keys)
