"""What the story component returns: neighbours of an article, its outcome, the items of
``similar`` lists, and breaking events with their reports."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from neardup.index._common import Key
from neardup.index.story import StoryHit
from neardup.records import from_epoch_us

#: A caller's copy judgement: ``judge(a, b)`` on two keys -> ``"duplicate"``, ``"partial"``,
#: ``"similar"`` or ``"unrelated"`` (the near-duplicate rule's verdict on the two texts).
Judge = Callable[[Key, Key], str]


#: The verdicts that make an item a copy; any other verdict marks independent coverage.
COPY_KINDS = ("duplicate", "partial")


def _iso(value_us: int | None) -> str | None:
    if value_us is None:
        return None
    return from_epoch_us(value_us).isoformat()


@dataclasses.dataclass(frozen=True, slots=True)
class Neighbours:
    """The answer of :meth:`StoryDesk.neighbours`, as arrays, most similar first: the
    stored articles' ``keys``, their story ``similarity`` and ``dates`` (microseconds)."""

    keys: npt.NDArray[Any]
    similarity: npt.NDArray[np.float64]
    dates: npt.NDArray[np.int64]

    def __len__(self) -> int:
        return int(self.keys.shape[0])

    def first(self, n: int) -> list[StoryHit]:
        """The first ``n`` as :class:`~neardup.index.story.StoryHit` (distance not kept: -1)."""
        return [
            StoryHit(k, float(s), -1, int(d))
            for k, s, d in zip(
                self.keys[:n].tolist(),
                self.similarity[:n].tolist(),
                self.dates[:n].tolist(),
                strict=True,
            )
        ]


@dataclasses.dataclass(frozen=True, slots=True)
class StoryOutcome:
    """What the event rule decided for one article: the ``event`` it belongs to (``None``:
    none), the event it joined or opened before any merge (``target``), whether it
    ``opened`` it, the events ``merged`` into ``event``, and the keys of earlier articles
    that ``joined`` with it."""

    event: str | None = None
    target: str | None = None
    opened: bool = False
    merged: tuple[str, ...] = ()
    joined: tuple[Key, ...] = ()


@dataclasses.dataclass(frozen=True, slots=True)
class StoryItem:
    """One entry of :meth:`StoryDesk.similar`: the article ``id``, its story ``similarity``
    (estimated cosine), its date, and ``kind``: ``"duplicate"`` or ``"partial"`` (a copy,
    by the judge) or ``"similar"`` (independent coverage of the story)."""

    id: Key
    similarity: float
    date_us: int | None
    kind: str

    def to_dict(self) -> dict[str, object]:
        return {
            "id": self.id,
            "similarity": round(self.similarity, 6),
            "date_us": self.date_us,
            "kind": self.kind,
        }


@dataclasses.dataclass(slots=True)
class StoryEvent:
    """A breaking event's state: ``id`` (the id of its opening article), when it opened,
    ``members`` (keys) in joining order."""

    id: str
    opened_by: str
    opened_at_us: int
    members: list[Key]


@dataclasses.dataclass(frozen=True, slots=True)
class EventArticle:
    """An article of an event report: ``kind`` is ``"first"`` for the earliest article,
    ``"copy"`` (with ``copy_of``, the earlier member it copies, by the judge) or
    ``"independent"``; ``"unjudged"`` when the report was made without a judge."""

    id: str
    date_us: int
    source: str | None
    title: str | None
    kind: str
    copy_of: str | None

    def to_dict(self) -> dict[str, object]:
        return {
            "id": self.id,
            "date": _iso(self.date_us),
            "source": self.source,
            "title": self.title,
            "kind": self.kind,
            "copy_of": self.copy_of,
        }


@dataclasses.dataclass(frozen=True, slots=True)
class EventReport:
    """A breaking event's report (seed 003's "special report").

    ``title``: the member title closest to the event's story (page furniture such as
    "Fullscreen" is far from it), without a site-name suffix.  ``articles`` in time order
    (date, then id); ``first_publisher``: the source of the earliest article (its id when
    it has none); ``sources``: (source, article count) by count then name; ``growth``:
    (hours since the first article, cumulative count) per ``growth_bucket_seconds`` step;
    ``copies`` / ``independent``: how many members copy an earlier member and how many are
    written independently (``None`` without a judge).
    """

    id: str
    title: str | None
    opened_by: str
    opened_at_us: int
    articles: tuple[EventArticle, ...]
    first_publisher: str | None
    sources: tuple[tuple[str, int], ...]
    growth: tuple[tuple[float, int], ...]
    copies: int | None
    independent: int | None

    def to_dict(self) -> dict[str, object]:
        """Plain JSON-able rendering (dates as ISO-8601 strings)."""
        return {
            "id": self.id,
            "title": self.title,
            "opened_by": self.opened_by,
            "opened_at": _iso(self.opened_at_us),
            "articles": [a.to_dict() for a in self.articles],
            "first_publisher": self.first_publisher,
            "sources": [{"source": s, "count": c} for s, c in self.sources],
            "growth": [{"hours": h, "count": c} for h, c in self.growth],
            "copies": self.copies,
            "independent": self.independent,
        }


@dataclasses.dataclass(slots=True)
class KeptArticle:
    """What the event rule keeps of an article counted toward events, while it can still be
    reached (the last two windows) and for ever once it is an event's member."""

    name: str
    date_us: int
    source: str | None
    title: str | None
    fingerprint: npt.NDArray[np.uint64]
    values: npt.NDArray[np.float32]
