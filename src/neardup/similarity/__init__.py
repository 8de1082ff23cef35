"""Similarity measures: exact set similarity, bottom-k sketch overlap, longest common substring.

* :mod:`neardup.similarity.sets`: :func:`jaccard`, :func:`containment`,
  :func:`bottomk_jaccard` and its early-terminating decision :func:`bottomk_at_least`
  (seed 000).
* :mod:`neardup.similarity.substring`: :func:`longest_common_substring` of two texts or token
  sequences by suffix array + LCP (seed 002).

See ``docs/similarity.md``.
"""

from __future__ import annotations

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
    "CommonSubstring",
    "as_sorted_set",
    "bottomk_at_least",
    "bottomk_jaccard",
    "containment",
    "jaccard",
    "longest_common_substring",
    "need_table",
]
