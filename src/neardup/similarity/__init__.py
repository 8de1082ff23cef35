"""Similarity measures: exact set similarity, bottom-k sketch overlap, longest common substring.

* :mod:`neardup.similarity.sets`: :func:`jaccard`, :func:`containment`,
  :func:`bottomk_jaccard` and its early-terminating decision :func:`bottomk_at_least`
  (seed 000).
* :mod:`neardup.similarity.substring`: :func:`longest_common_substring` of two texts or token
  sequences by suffix array + LCP (seed 002).
* :mod:`neardup.similarity.alignment`: :func:`align_passages`, the passages of a suspicious
  text aligned with a source text as character spans on both sides (seed-and-extend text
  alignment of Sanchez-Perez, Sidorov & Gelbukh, PAN 2014), with :class:`AlignmentConfig`.

The near-duplicate *judgement* built on such measures is :mod:`neardup.rule`.

See ``docs/similarity.md``.
"""

from __future__ import annotations

from neardup.similarity.alignment import (
    AlignedPassage,
    AlignmentConfig,
    PreparedText,
    UnitPairs,
    align_pair,
    align_passages,
    align_prepared,
    prepare_text,
    unit_pairs,
)
from neardup.similarity.sets import (
    as_sorted_set,
    bottomk_at_least,
    bottomk_jaccard,
    containment,
    jaccard,
    need_table,
)
from neardup.similarity.substring import CommonSubstring, longest_common_substring

__all__ = [
    "AlignedPassage",
    "AlignmentConfig",
    "CommonSubstring",
    "PreparedText",
    "UnitPairs",
    "align_pair",
    "align_passages",
    "align_prepared",
    "as_sorted_set",
    "bottomk_at_least",
    "bottomk_jaccard",
    "containment",
    "jaccard",
    "longest_common_substring",
    "need_table",
    "prepare_text",
    "unit_pairs",
]
