"""The news stream: ingest-time dedup, partial copies, similar news and breaking events.

``config`` (what a user sets), ``candidates`` (which stored articles to judge), ``judging``
(the rule over them), ``groups`` (duplicate groups), ``state``
(log replay and checkpoints), ``engine`` (:class:`NewsStream`: ingest and queries),
``records`` (:class:`Decision`, :class:`Match`).  See :mod:`neardup.detect.stream.engine`.
"""

from neardup.detect.stream.config import CandidateConfig, StreamConfig
from neardup.detect.stream.engine import NewsStream
from neardup.detect.stream.records import STATUSES, Decision, Match

__all__ = [
    "STATUSES",
    "CandidateConfig",
    "Decision",
    "Match",
    "NewsStream",
    "StreamConfig",
]
