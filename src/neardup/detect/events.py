"""Breaking-event detection over the article stream (seed 003, section 2.3.2).

Rule (seed 003: "more than 15 similar news ... within 4 hours"): when an article ``A`` dated
``t`` arrives, ``R`` is the set of earlier-ingested articles dated in ``[t - window, t]`` whose
64-bit SimHash is within ``max_distance`` bits of ``A``'s.

* If an article of ``R`` (or ``A``'s duplicate original) already belongs to an event, ``A``
  *attaches* to it (several: the smallest event id, so the choice is deterministic).
* Otherwise, if ``len(R) > min_articles`` (``M``, default 15), an event *opens*: its id is
  ``A``'s id and every article of ``R`` joins it with ``A``.

Time is the article's ``date``, never the wall clock, so replaying an archive in the same
order gives the same events (``tests/test_events.py``).  Undated articles never open an event
and join one only through their duplicate original.  Articles arriving more than ``window``
behind the newest date seen may miss entries already pruned from the window (the window keeps
``2 * window`` of history), so they are not counted toward opening events.

Cost: the window is a date-sorted list; a query is two binary searches plus one vectorised
XOR-popcount over the articles of the window (``O(k)`` for ``k`` articles in ``window``).
Memory: about 100 bytes per article in the last ``2 * window``.
"""

from __future__ import annotations

import bisect
import dataclasses
import datetime as dt
import itertools
from collections.abc import Iterable, Sequence

import numpy as np

from neardup.config import Config, check_int, check_range
from neardup.index.hamming import positions_within

__all__ = [
    "EventArticle",
    "EventConfig",
    "EventDetector",
    "EventOutcome",
    "EventReport",
    "build_report",
]

_US = 1_000_000


@dataclasses.dataclass(frozen=True)
class EventConfig(Config):
    """Breaking events: more than ``min_articles`` similar articles within ``window_seconds``.

    Defaults are seed 003's (15 articles, 4 hours, similar = Hamming distance < 8).
    ``enabled=False`` turns detection off.  ``growth_bucket_seconds`` is the step of the
    report's growth curve.
    """

    SCHEME = "events"

    enabled: bool = True
    min_articles: int = 15
    window_seconds: float = 4 * 3600.0
    max_distance: int = 7
    growth_bucket_seconds: float = 3600.0

    def __post_init__(self) -> None:
        check_int("min_articles", self.min_articles, low=0, high=1_000_000)
        check_range("window_seconds", self.window_seconds, low=0.0, low_open=True)
        check_int("max_distance", self.max_distance, low=0, high=64)
        check_range("growth_bucket_seconds", self.growth_bucket_seconds, low=0.0, low_open=True)


@dataclasses.dataclass(frozen=True, slots=True)
class EventOutcome:
    """What the detector decided for one article: the event it is in (or ``None``), whether
    it opened it, and the seqs of earlier articles that join the event with it."""

    event: str | None
    opened: bool
    joined: tuple[int, ...]


class EventDetector:
    """The sliding window of recent articles and their events (state rebuilt from the log)."""

    def __init__(self, config: EventConfig) -> None:
        self.config = config
        self._window_us = round(config.window_seconds * _US)
        self._dates: list[int] = []
        self._seqs: list[int] = []
        # The window's fingerprints in date order (the first len(self._dates) slots of a
        # growing array): neighbours() scans them in one compiled pass.
        self._fps = np.zeros(256, dtype=np.uint64)
        self._events: dict[int, str] = {}
        self._newest = -(1 << 62)

    def __len__(self) -> int:
        return len(self._dates)

    def decide(
        self, article_id: str, date_us: int | None, fingerprint: int, linked: Iterable[str] = ()
    ) -> EventOutcome:
        """The event outcome for a new article (pure: :meth:`add` records it afterwards)."""
        linked_events = {e for e in linked if e}
        if not self.config.enabled:
            return EventOutcome(None, False, ())
        if date_us is None:
            return EventOutcome(min(linked_events) if linked_events else None, False, ())
        near = self.neighbours(date_us, fingerprint)
        found = linked_events | {self._events[s] for s in near if s in self._events}
        if found:
            return EventOutcome(min(found), False, ())
        if len(near) > self.config.min_articles:
            return EventOutcome(article_id, True, tuple(near))
        return EventOutcome(None, False, ())

    def neighbours(self, date_us: int, fingerprint: int) -> list[int]:
        """Seqs of window articles dated in ``[date - window, date]`` within ``max_distance``."""
        lo = bisect.bisect_left(self._dates, date_us - self._window_us)
        hi = bisect.bisect_right(self._dates, date_us)
        if hi <= lo:
            return []
        near = positions_within(self._fps, lo, hi, np.uint64(fingerprint), self.config.max_distance)
        seqs = self._seqs
        return [seqs[i] for i in near.tolist()]

    def add(self, seq: int, date_us: int | None, fingerprint: int, event: str | None) -> None:
        """Record an ingested article (undated articles are not kept)."""
        if date_us is None or not self.config.enabled:
            return
        pos = bisect.bisect_right(self._dates, date_us)
        self._dates.insert(pos, date_us)
        self._seqs.insert(pos, seq)
        self._insert_fp(pos, fingerprint)
        if event is not None:
            self._events[seq] = event
        if date_us > self._newest:
            self._newest = date_us
            self._prune()

    def set_event(self, seqs: Iterable[int], event: str) -> None:
        """Mark window articles as members of ``event``."""
        for seq in seqs:
            self._events[seq] = event

    def _prune(self) -> None:
        horizon = self._newest - 2 * self._window_us
        if not self._dates or self._dates[0] >= horizon:
            return
        cut = bisect.bisect_left(self._dates, horizon)
        for seq in self._seqs[:cut]:
            self._events.pop(seq, None)
        kept = len(self._dates) - cut
        self._fps[:kept] = self._fps[cut : cut + kept]  # numpy copies overlapping slices safely
        del self._dates[:cut], self._seqs[:cut]

    def _insert_fp(self, pos: int, fingerprint: int) -> None:
        # Called after the date is inserted: the window now holds len(self._dates) articles.
        n = len(self._dates) - 1  # fingerprints held before this one
        if n == self._fps.shape[0]:
            grown = np.zeros(2 * n, dtype=np.uint64)
            grown[:n] = self._fps
            self._fps = grown
        if pos < n:  # rare: an article dated before the newest one
            self._fps[pos + 1 : n + 1] = self._fps[pos:n]
        self._fps[pos] = fingerprint

    # --- checkpoint -----------------------------------------------------------------------
    def state(self) -> dict[str, np.ndarray]:
        """Arrays that :meth:`load_state` restores exactly."""
        ev_seqs = sorted(self._events)
        return {
            "win_dates": np.asarray(self._dates, dtype=np.int64),
            "win_seqs": np.asarray(self._seqs, dtype=np.int64),
            "win_fps": self._fps[: len(self._dates)].copy(),
            "win_event_seqs": np.asarray(ev_seqs, dtype=np.int64),
            "win_event_ids": np.asarray([self._events[s] for s in ev_seqs], dtype=np.str_),
            "win_newest": np.asarray([self._newest], dtype=np.int64),
        }

    def load_state(self, arrays: dict[str, np.ndarray]) -> None:
        self._dates = [int(x) for x in arrays["win_dates"]]
        self._seqs = [int(x) for x in arrays["win_seqs"]]
        fps = np.asarray(arrays["win_fps"], dtype=np.uint64)
        if fps.shape[0] != len(self._dates):
            raise ValueError("event window fingerprints do not match its dates")
        self._fps = np.zeros(max(256, 2 * fps.shape[0]), dtype=np.uint64)
        self._fps[: fps.shape[0]] = fps
        self._events = {
            int(s): str(e)
            for s, e in zip(arrays["win_event_seqs"], arrays["win_event_ids"], strict=True)
        }
        self._newest = int(arrays["win_newest"][0])

    def snapshot(self) -> tuple[tuple[int, int, int, str | None], ...]:
        """(date, seq, fingerprint, event) of every window article, for consistency checks."""
        return tuple(
            (d, s, f, self._events.get(s))
            for d, s, f in zip(
                self._dates, self._seqs, self._fps[: len(self._dates)].tolist(), strict=True
            )
        )


# --- reports ------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class EventArticle:
    """An article of an event, as reported."""

    id: str
    date: dt.datetime | None
    source: str | None
    title: str | None


@dataclasses.dataclass(frozen=True, slots=True)
class EventReport:
    """A breaking event's report (seed 003's "special report").

    ``articles`` in time order (date, then id); ``first_publisher`` the source of the earliest
    article (its id when it has no source); ``sources`` (source, article count) by count then
    name; ``growth`` (hours since the first article, cumulative article count) at every
    ``growth_bucket_seconds`` step that saw an article.
    """

    id: str
    opened_by: str
    opened_at: dt.datetime
    articles: tuple[EventArticle, ...]
    first_publisher: str | None
    sources: tuple[tuple[str, int], ...]
    growth: tuple[tuple[float, int], ...]

    def to_dict(self) -> dict[str, object]:
        """Plain JSON-able rendering (dates as ISO-8601 strings)."""
        return {
            "id": self.id,
            "opened_by": self.opened_by,
            "opened_at": self.opened_at.isoformat(),
            "articles": [
                {
                    "id": a.id,
                    "date": a.date.isoformat() if a.date else None,
                    "source": a.source,
                    "title": a.title,
                }
                for a in self.articles
            ],
            "first_publisher": self.first_publisher,
            "sources": [{"source": s, "count": c} for s, c in self.sources],
            "growth": [{"hours": h, "count": c} for h, c in self.growth],
        }


def from_us(value: int | None) -> dt.datetime | None:
    """Microseconds since the epoch -> aware UTC datetime."""
    if value is None:
        return None
    return dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(microseconds=value)


def build_report(
    event_id: str,
    opened_by: str,
    opened_at_us: int,
    articles: Sequence[tuple[str, int | None, str | None, str | None]],
    growth_bucket_seconds: float,
) -> EventReport:
    """The report of an event from its articles ``(id, date_us, source, title)``."""
    ordered = sorted(articles, key=lambda a: (a[1] is None, a[1] or 0, a[0]))
    items = tuple(EventArticle(i, from_us(d), s, t) for i, d, s, t in ordered)
    first = ordered[0] if ordered else None
    first_publisher = None if first is None else (first[2] or first[0])
    counts: dict[str, int] = {}
    for _, _, source, _ in ordered:
        if source:
            counts[source] = counts.get(source, 0) + 1
    sources = tuple(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    growth: list[tuple[float, int]] = []
    dated = [a[1] for a in ordered if a[1] is not None]
    if dated:
        step = round(growth_bucket_seconds * _US)
        start = dated[0]
        total = 0
        # ``dated`` is sorted, so equal buckets are consecutive: one linear pass.
        for bucket, members in itertools.groupby((d - start) // step for d in dated):
            total += sum(1 for _ in members)
            growth.append(((bucket + 1) * step / 3600 / _US, total))
    opened_at = from_us(opened_at_us)
    if opened_at is None:  # pragma: no cover - opened_at_us is an int
        raise ValueError("event without an opening time")
    return EventReport(
        event_id, opened_by, opened_at, items, first_publisher, sources, tuple(growth)
    )
