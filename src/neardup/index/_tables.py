"""Table storage of the indexes (internal), under one name: the sorted multi-tables of the
Hamming index (:mod:`neardup.index._sorted`) and the hashed band tables and growing signature
rows of the LSH index (:mod:`neardup.index._bands`).  New code imports from those modules.
"""

from __future__ import annotations

from neardup.index._bands import BandTables, GrowingRows, band_head, insert_one, slot_tag
from neardup.index._sorted import (
    MultiTable,
    Segment,
    hamming_probe_all,
    hamming_probe_segment,
    popcount64,
    positions_within,
)

__all__ = [
    "BandTables",
    "GrowingRows",
    "MultiTable",
    "Segment",
    "band_head",
    "hamming_probe_all",
    "hamming_probe_segment",
    "insert_one",
    "popcount64",
    "positions_within",
    "slot_tag",
]
