"""Cheap upper bounds of the rule's copy features, for screening many candidates at once.

A detector that judges many stored texts against one new text first counts, for each, the
distinct shingles the two share (one merge of sorted sets) and the dot product of their
content-word counts (the cosine).  From the shared count alone, :func:`copy_bounds` gives
upper bounds of the two coverages and of the shared passage:

* a shingle position of text X is found only if its hash is one of the ``shared`` distinct
  shared hashes; X's positions carry ``|X_set|`` distinct hashes, so at most
  ``m_X - |X_set| + shared`` of its ``m_X`` positions are found;
* a found position covers at most ``width`` tokens, so at most ``width`` times that many
  tokens of X are found (and never more than its tokens): the coverage of X's prose is at
  most that count over its prose (over its tokens when it has none);
* a passage is a run of found tokens, so it is no longer than the found tokens.

When the bounds cannot reach ``duplicate`` or ``partial`` (:func:`copy_possible`), the
verdict is decided by the cosine alone (``similar`` or ``unrelated``), exactly as
:func:`neardup.rule.decide` would decide it.  Property-tested against the exact features
(``tests/test_rule.py``, ``tests/test_rule_rows.py``).

:func:`screen_rows` is :func:`screen` against packed profiles
(:func:`neardup.rule.features.pack_rows`): one compiled call for all of them, the counts the
bounds read taken from each row's header.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from neardup.rule.profile import Profile, RuleConfig

__all__ = [
    "RowScreen",
    "Screen",
    "copy_bounds",
    "copy_possible",
    "copy_possible_pairs",
    "profile_counts",
    "screen",
    "screen_rows",
]

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]


def profile_counts(p: Profile) -> tuple[int, int, int, int]:
    """``(positions, distinct, tokens, prose)`` of a profile (what the bounds read)."""
    return int(p.shingles.shape[0]), int(p.shingle_set.shape[0]), p.tokens, p.prose


def copy_bounds(
    shared: I64, positions: I64, distinct: I64, tokens: I64, prose: I64, width: int
) -> tuple[F64, I64]:
    """Upper bounds ``(coverage, passage)`` of one text's coverage and passage against each
    of several others (arrays: one entry per pair; ``shared``: distinct shingles shared)."""
    found_positions = np.where(shared > 0, positions - distinct + shared, 0)
    found_tokens = np.minimum(tokens, width * found_positions)
    base = np.where(prose > 0, prose, tokens)
    coverage = np.where(base > 0, np.minimum(1.0, found_tokens / np.maximum(base, 1)), 0.0)
    return coverage, found_tokens


def copy_possible(
    shared: I64,
    new: tuple[int, int, int, int],
    stored: tuple[I64, I64, I64, I64],
    config: RuleConfig,
) -> npt.NDArray[np.bool_]:
    """Per pair: whether the bounds leave ``duplicate`` or ``partial`` possible (``False``:
    the rule's verdict is ``similar`` or ``unrelated``, by the cosine alone).

    ``new``: :func:`profile_counts` of the one text; ``stored``: the same counts of each
    other text as arrays."""
    w = config.width
    n_pos, n_dist, n_tok, n_prose = (np.full(shared.shape, v, dtype=np.int64) for v in new)
    cov_new, pass_new = copy_bounds(shared, n_pos, n_dist, n_tok, n_prose, w)
    cov_old, pass_old = copy_bounds(shared, *stored, w)
    return _possible(cov_new, cov_old, pass_new, pass_old, config)


def _possible(
    cov_new: F64, cov_old: F64, pass_new: I64, pass_old: I64, config: RuleConfig
) -> npt.NDArray[np.bool_]:
    """Whether the rule's copy clauses can hold under these upper bounds of the features."""
    high = np.maximum(cov_new, cov_old)
    low = np.minimum(cov_new, cov_old)
    duplicate = (high >= config.duplicate_min_coverage) & (
        low >= config.duplicate_min_coverage_other
    )
    partial = np.minimum(pass_new, pass_old) >= config.partial_min_passage
    possible: npt.NDArray[np.bool_] = duplicate | partial
    return possible


def copy_possible_pairs(
    shared: I64,
    a: tuple[I64, I64, I64, I64],
    b: tuple[I64, I64, I64, I64],
    config: RuleConfig,
) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.bool_]]:
    """Per pair ``(a[k], b[k])``: whether the bounds leave ``duplicate`` possible, and
    whether they leave ``partial`` possible (``False``: the rule's verdict is not that one).

    ``a`` and ``b``: :func:`profile_counts` of each pair's two texts, as arrays (one entry
    per pair); ``shared``: the distinct shingles each pair shares.  The same bounds and
    clauses as :func:`copy_possible`, for many pairs of many texts at once (batch dedup
    asks only the first question)."""
    w = config.width
    cov_a, pass_a = copy_bounds(shared, *a, w)
    cov_b, pass_b = copy_bounds(shared, *b, w)
    high = np.maximum(cov_a, cov_b)
    low = np.minimum(cov_a, cov_b)
    duplicate = (high >= config.duplicate_min_coverage) & (
        low >= config.duplicate_min_coverage_other
    )
    partial = np.minimum(pass_a, pass_b) >= config.partial_min_passage
    return duplicate, partial


@dataclasses.dataclass(frozen=True)
class Screen:
    """One text screened against several: per other text, the distinct shingles shared, the
    exact content cosine (the rule's) and whether a copy verdict is still possible."""

    shared: I64
    cosine: list[float]
    copy_possible: npt.NDArray[np.bool_]


def screen(new: Profile, others: Sequence[Profile], config: RuleConfig) -> Screen:
    """:class:`Screen` of ``new`` against ``others`` in one compiled pass (exact counts)."""
    from neardup.rule import _kernels
    from neardup.rule.features import _cosine

    k = len(others)
    if not k:
        empty = np.zeros(0, dtype=np.int64)
        return Screen(empty, [], np.zeros(0, dtype=np.bool_))
    set_offsets = np.zeros(k + 1, dtype=np.int64)
    np.cumsum([o.shingle_set.shape[0] for o in others], out=set_offsets[1:])
    term_offsets = np.zeros(k + 1, dtype=np.int64)
    np.cumsum([o.terms.shape[0] for o in others], out=term_offsets[1:])
    shared, dot = _kernels.screen_counts(
        new.shingle_set,
        new.terms,
        new.term_counts,
        np.concatenate([o.shingle_set for o in others]),
        set_offsets,
        np.concatenate([o.terms for o in others]),
        np.concatenate([o.term_counts for o in others]),
        term_offsets,
    )
    counts = np.array([profile_counts(o) for o in others], dtype=np.int64).reshape(k, 4)
    stored = (counts[:, 0], counts[:, 1], counts[:, 2], counts[:, 3])
    possible = copy_possible(shared, profile_counts(new), stored, config)
    cosine = [_cosine(int(d), new, o) for d, o in zip(dot.tolist(), others, strict=True)]
    return Screen(shared, cosine, possible)


@dataclasses.dataclass(frozen=True)
class RowScreen:
    """:class:`Screen` of one text against packed rows, as arrays (``cosine``: the rule's
    exact content cosine)."""

    shared: I64
    cosine: F64
    copy_possible: npt.NDArray[np.bool_]


def screen_rows(
    new: Profile, rows: npt.NDArray[np.uint64], offsets: I64, config: RuleConfig
) -> RowScreen:
    """:func:`screen` of ``new`` against the packed ``rows`` (profiles of its scheme), in
    one compiled call: the same shared counts, cosines and ``copy_possible``."""
    from neardup.rule import _kernels
    from neardup.rule.features import _NORM2, cosines, large_norms

    n_pos, n_dist, n_tok, n_prose = profile_counts(new)
    counts, bounds = _kernels.screen_rows(
        new.shingle_set,
        new.terms,
        new.term_counts,
        rows,
        offsets,
        n_pos,
        n_dist,
        n_tok,
        n_prose,
        config.width,
    )
    possible = _possible(bounds[:, 0], bounds[:, 1], counts[:, 2], counts[:, 3], config)
    cosine = bounds[:, 2]
    norms2 = rows[offsets[:-1] + _NORM2]  # exact (uint64)
    if large_norms(new.term_norm2, norms2):
        cosine = cosines(counts[:, 1], new.term_norm2, norms2)
    return RowScreen(counts[:, 0], cosine, possible)
