"""Candidate indexes over signatures: exact Hamming search and banded MinHash LSH.

* :class:`HammingIndex`: exact search of 64-bit SimHash fingerprints within a Hamming
  distance (seed 003's block-split index, Manku-style sorted tables).
* :class:`LSHIndex`: banded MinHash LSH (the "sketches" of seed 002) returning candidates
  with their estimated Jaccard similarity.

Both support add, remove, save and load; see ``docs/indexes.md``.
"""

from __future__ import annotations

from neardup.index.hamming import HammingIndex, HammingIndexConfig
from neardup.index.lsh import LSHIndex, LSHIndexConfig, optimal_bands

__all__ = ["HammingIndex", "HammingIndexConfig", "LSHIndex", "LSHIndexConfig", "optimal_bands"]
