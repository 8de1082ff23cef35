"""Origin detection (seed 004, "Detecting the Origin of Text Segments Efficiently", WWW 2009).

Which earlier document each passage of a document was copied from, over a time-ordered
stream, in a fixed memory budget.  See ``docs/origin.md``.
"""

from neardup.detect.origin.config import OriginConfig, parse_memory
from neardup.detect.origin.engine import TEXT_CONFIG, DocResult, OriginDetector
from neardup.detect.origin.follow import StoreFollower
from neardup.detect.origin.records import OriginReport, Segment

__all__ = [
    "TEXT_CONFIG",
    "DocResult",
    "OriginConfig",
    "OriginDetector",
    "OriginReport",
    "Segment",
    "StoreFollower",
    "parse_memory",
]
