"""Same-story coverage: "more coverage of this story" and breaking events (seed 003).

Seed 003 ("General Simhash-based Framework for News Aggregators", MECS 2017) lists similar
news and detects breaking events ("more than 15 similar news ... within 4 hours") from one
SimHash per article made on the article's *feature vector*.  Here that vector is the story
vector of :mod:`neardup.sketch.story` (TF-IDF over words, weighed with the document
frequencies of the stream so far, projected to ``bits`` dimensions) and the fingerprints live
in a :class:`~neardup.index.story.StoryIndex` searched by time window.

:class:`StoryDesk` is the whole detector:

* :meth:`StoryDesk.ingest` -- the hook to call once per article, in stream order: the article's
  story vector is made with the document frequencies of the articles before it, the event
  rule runs, then the article is indexed and its words counted.
* :meth:`StoryDesk.similar` -- other articles of the same story dated within
  ``similar_window_seconds`` of it, ranked by story similarity, each marked by the caller's
  ``judge(a_id, b_id)``: ``duplicate`` and ``partial`` (copies) or ``similar`` (independent
  coverage), so a page can list "more coverage" and "copies" apart.
* :meth:`StoryDesk.events` / :meth:`StoryDesk.report` -- breaking events and their reports.

Event rule (time is the article's date, never the wall clock).  When a dated article ``A``
arrives, ``R`` is the set of earlier-ingested articles dated in ``[t - window, t]`` whose story
similarity to ``A`` is at least ``min_similarity``.

1. *Join*: when at least ``min_links`` articles of ``R`` belong to one event, ``A`` and the
   rest of ``R`` join it (an event grows as coverage continues).  When ``R`` reaches two or
   more events that way, they fire on one story: they *merge* into the earliest opened (its
   id stays; the others resolve to it).
2. *Open*: otherwise, when ``len(R) > min_articles`` (seed 003's "more than 15"), the burst
   comes from at least ``min_sources`` sources (an article without a source counts as a
   source of its own), and it is a *burst*: the story was not running before -- ``A`` has
   at most ``len(R) / burst_ratio`` neighbours in the whole ``background_seconds`` before
   the window -- an event opens: its id is ``A``'s id and ``R`` joins it with ``A``.
   Templated items that recur every day (market reports, earnings tables, dividend
   notices) have as many neighbours on each earlier day, so they do not burst while the
   stream has the days before.

Tables are not stories: an article whose words are more than ``max_figure_share`` figures
(earnings tables, price lists, spreads; 20 %: 86 % of Reuters' third-quarter earnings
items, 2 % of its topical news, 0.2 % of scraped web news) is indexed for
:meth:`StoryDesk.similar` but does not count toward events.  Undated articles are indexed
but not counted toward events either; texts without words (empty, punctuation only) are not
indexed, and :meth:`StoryDesk.similar` answers an empty list for them.

Guarantees: deterministic -- replaying the same articles in the same order gives the same
events, reports and state (ties break by insertion order).  Persistence: :meth:`save` /
:meth:`load` write the index, the document frequencies and the detector's state.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import math
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from neardup.config import Config, check_int, check_range
from neardup.errors import ConfigError, InputError, InputTypeError, NotFoundError, StoreError
from neardup.index._common import read_index_file, write_index_file
from neardup.index.docfreq import DocumentFrequencies
from neardup.index.story import StoryHit, StoryIndex, StoryIndexConfig, to_us
from neardup.records import Article
from neardup.sketch.base import Signature
from neardup.sketch.story import (
    StoryVector,
    StoryVectorConfig,
    story_features,
    story_vector,
    story_vector_of_features,
)

__all__ = [
    "COPY_KINDS",
    "Judge",
    "StoryConfig",
    "StoryDesk",
    "StoryEvent",
    "StoryEventArticle",
    "StoryEventConfig",
    "StoryEventReport",
    "StoryItem",
    "StoryOutcome",
    "figure_share",
]

#: A caller's copy judgement: ``judge(a_id, b_id)`` -> ``"duplicate"``, ``"partial"``,
#: ``"similar"`` or ``"unrelated"`` (the near-duplicate rule's verdict on the two texts).
Judge = Callable[[str, str], str]
#: The verdicts that make an item a copy; any other verdict marks independent coverage.
COPY_KINDS = ("duplicate", "partial")

_US = 1_000_000
_STATE_MAGIC = b"NDSTYDSK"


@dataclasses.dataclass(frozen=True)
class StoryEventConfig(Config):
    """Breaking events: more than ``min_articles`` same-story articles within
    ``window_seconds`` from ``min_sources`` sources, that burst (module docs).

    ``min_similarity``: story similarity (estimated cosine) of "the same story".
    ``min_links``: members among an article's neighbours needed to join an event.
    ``background_seconds`` / ``burst_ratio``: the burst test (0 seconds: off).
    ``max_figure_share``: articles whose words are more than this share figures (tables:
    earnings, prices, spreads) do not count toward events.
    ``growth_bucket_seconds``: the step of a report's growth curve.
    """

    SCHEME = "story-events"

    enabled: bool = True
    min_articles: int = 15
    window_seconds: float = 4 * 3600.0
    min_similarity: float = 0.3
    min_sources: int = 3
    min_links: int = 2
    background_seconds: float = 7 * 86400.0
    burst_ratio: float = 1.0
    max_figure_share: float = 0.2
    growth_bucket_seconds: float = 3600.0

    def __post_init__(self) -> None:
        check_range("max_figure_share", self.max_figure_share, low=0.0, high=1.0)
        check_int("min_articles", self.min_articles, low=0, high=1_000_000)
        check_range("window_seconds", self.window_seconds, low=0.0, low_open=True)
        check_range("min_similarity", self.min_similarity, low=-1.0, high=1.0)
        check_int("min_sources", self.min_sources, low=1, high=1_000_000)
        check_int("min_links", self.min_links, low=1, high=1_000_000)
        check_range("background_seconds", self.background_seconds, low=0.0)
        check_range("burst_ratio", self.burst_ratio, low=0.0, low_open=True)
        check_range("growth_bucket_seconds", self.growth_bucket_seconds, low=0.0, low_open=True)


def _default_vector() -> StoryVectorConfig:
    return StoryVectorConfig()


def _default_events() -> StoryEventConfig:
    return StoryEventConfig()


@dataclasses.dataclass(frozen=True)
class StoryConfig(Config):
    """The story detector: the ``vector`` config, the index ``buffer_size``, the
    document-frequency buckets (``2**df_bucket_bits``), :meth:`StoryDesk.similar`'s defaults
    (``similar_window_seconds`` either side of the article's date, ``similar_min_similarity``)
    and the ``events`` rule."""

    SCHEME = "stories"

    vector: StoryVectorConfig = dataclasses.field(default_factory=_default_vector)
    buffer_size: int = 4096
    df_bucket_bits: int = 22
    similar_window_seconds: float = 7 * 86400.0
    similar_min_similarity: float = 0.15
    events: StoryEventConfig = dataclasses.field(default_factory=_default_events)

    def __post_init__(self) -> None:
        if not isinstance(self.vector, StoryVectorConfig):
            raise ConfigError("vector must be a StoryVectorConfig")
        if not isinstance(self.events, StoryEventConfig):
            raise ConfigError("events must be a StoryEventConfig")
        check_int("buffer_size", self.buffer_size, low=1, high=1 << 22)
        check_int("df_bucket_bits", self.df_bucket_bits, low=8, high=30)
        check_range("similar_window_seconds", self.similar_window_seconds, low=0.0)
        check_range("similar_min_similarity", self.similar_min_similarity, low=-1.0, high=1.0)


@dataclasses.dataclass(frozen=True, slots=True)
class StoryOutcome:
    """What :meth:`StoryDesk.ingest` decided: whether the article has a story (``indexed``;
    False for texts without words), its event (or ``None``), whether it ``opened`` it, the
    events it ``merged`` into it, and the ids of earlier articles that ``joined`` with it."""

    id: str
    indexed: bool
    event: str | None = None
    opened: bool = False
    merged: tuple[str, ...] = ()
    joined: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True, slots=True)
class StoryItem:
    """One entry of :meth:`StoryDesk.similar`: the article ``id``, its story ``similarity``
    (estimated cosine), its date, and ``kind``: ``"duplicate"`` or ``"partial"`` (a copy,
    by the judge) or ``"similar"`` (independent coverage of the story)."""

    id: str
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
class _Meta:
    """What the detector keeps of an article of the recent window or of an event."""

    date_us: int
    source: str | None
    title: str | None
    fingerprint: npt.NDArray[np.uint64]
    values: npt.NDArray[np.float32]


@dataclasses.dataclass(slots=True)
class StoryEvent:
    """A breaking event's state: ``id`` (its opening article), when it opened, ``members``
    in joining order."""

    id: str
    opened_by: str
    opened_at_us: int
    members: list[str]


@dataclasses.dataclass(frozen=True, slots=True)
class StoryEventArticle:
    """An article of an event report: ``kind`` is ``"first"`` for the earliest article,
    ``"copy"`` (with ``copy_of``, the earlier member it copies, by the judge) or
    ``"independent"``; ``"unjudged"`` when the report was made without a judge."""

    id: str
    date_us: int
    source: str | None
    title: str | None
    kind: str
    copy_of: str | None


@dataclasses.dataclass(frozen=True, slots=True)
class StoryEventReport:
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
    articles: tuple[StoryEventArticle, ...]
    first_publisher: str | None
    sources: tuple[tuple[str, int], ...]
    growth: tuple[tuple[float, int], ...]
    copies: int | None
    independent: int | None

    def to_dict(self) -> dict[str, object]:
        """Plain JSON-able rendering."""
        return {
            "id": self.id,
            "title": self.title,
            "opened_by": self.opened_by,
            "opened_at_us": self.opened_at_us,
            "articles": [dataclasses.asdict(a) for a in self.articles],
            "first_publisher": self.first_publisher,
            "sources": [{"source": s, "count": c} for s, c in self.sources],
            "growth": [{"hours": h, "count": c} for h, c in self.growth],
            "copies": self.copies,
            "independent": self.independent,
        }


class StoryDesk:
    """Story index, document frequencies and breaking events over an article stream."""

    def __init__(self, config: StoryConfig | None = None) -> None:
        self.config = cfg = config or StoryConfig()
        self.index = StoryIndex(StoryIndexConfig(cfg.vector.bits, cfg.buffer_size))
        self.frequencies = DocumentFrequencies(cfg.df_bucket_bits)
        self._window_us = round(cfg.events.window_seconds * _US)
        self._meta: dict[str, _Meta] = {}
        self._member_of: dict[str, str] = {}
        self._events: dict[str, StoryEvent] = {}
        self._alias: dict[str, str] = {}
        # Per event: the sum of its members' story vectors, and its newest member's date.
        self._centroid: dict[str, npt.NDArray[np.float64]] = {}
        self._last: dict[str, int] = {}
        self._newest = -(1 << 62)
        self._horizon: collections.deque[tuple[int, str]] = collections.deque()

    def __len__(self) -> int:
        return len(self.index)

    # -- vectors ---------------------------------------------------------------------------

    def vector(self, text: str) -> StoryVector:
        """The story vector of ``text`` with the document frequencies as they are now."""
        return story_vector(text, self.config.vector, self.frequencies)

    # -- ingest ----------------------------------------------------------------------------

    def ingest(self, article: Article) -> StoryOutcome:
        """Index ``article``'s story and run the event rule (module docs), in stream order.

        ``ConflictError`` when the id is already indexed with another story or date; an id
        seen before with the same text and date is a no-op returning its current event.
        """
        if not isinstance(article, Article):
            raise InputTypeError(f"ingest takes an Article, got {type(article).__name__}")
        cfg = self.config
        feats, tf = story_features(article.text, cfg.vector)
        if feats.shape[0] == 0:
            return StoryOutcome(article.id, indexed=False)
        vec = story_vector_of_features(feats, tf, cfg.vector, self.frequencies)
        date_us = to_us(article.date)
        if article.id in self.index:
            self.index.add(article.id, vec, date_us)  # raises ConflictError if it differs
            return StoryOutcome(article.id, True, self.event_of(article.id))
        outcome = StoryOutcome(article.id, True)
        if (
            date_us is not None
            and cfg.events.enabled
            and figure_share(article.text) <= cfg.events.max_figure_share
        ):
            self._remember(article, vec, date_us)
            outcome = self._decide(article, vec, date_us)
        self.index.add(article.id, vec, date_us)
        self.frequencies.add(feats)
        return outcome

    def _remember(self, article: Article, vec: StoryVector, date_us: int) -> None:
        self._meta[article.id] = _Meta(
            date_us, article.source, article.title, vec.fingerprint, vec.values
        )
        self._horizon.append((date_us, article.id))
        if date_us > self._newest:
            self._newest = date_us
            self._prune()

    def _prune(self) -> None:
        # Keep what the rule can still reach: articles of the last two windows (in arrival
        # order; a late article stays until it reaches the front) and every event member.
        horizon = self._newest - 2 * self._window_us
        queue = self._horizon
        while queue and queue[0][0] < horizon:
            _, i = queue.popleft()
            if i not in self._member_of:
                self._meta.pop(i, None)

    def _decide(self, article: Article, vec: StoryVector, t: int) -> StoryOutcome:
        ev = self.config.events
        near = [
            hit
            for hit in self.index.nearest(
                vec, None, t - self._window_us, t, min_similarity=ev.min_similarity
            )
            if str(hit.key) in self._meta  # counted toward events (dated, not a table)
        ]
        links: dict[str, int] = {}
        for hit in near:
            event = self._member_of.get(str(hit.key))
            if event is not None:
                links[event] = links.get(event, 0) + 1
        values = vec.values.astype(np.float64)
        fits: list[tuple[int, float, str]] = []
        for event in self._active(t):
            n = links.get(event, 0)
            score = _cosine(values, self._centroid[event])
            if n >= ev.min_links or score >= ev.min_similarity:
                fits.append((n, score, event))
        if fits:
            fits.sort(key=lambda f: (-f[0], -f[1], self._events[f[2]].opened_at_us, f[2]))
            target = fits[0][2]
            joined = self._join(target, article.id, near)
            merged = self._merge_near(target, t)
            return StoryOutcome(article.id, True, target, False, merged, joined)
        if (
            len(near) > ev.min_articles
            and self._sources(article, near) >= ev.min_sources
            and self._bursts(vec, t, len(near))
        ):
            self._events[article.id] = StoryEvent(article.id, article.id, t, [])
            self._centroid[article.id] = np.zeros(self.config.vector.bits, dtype=np.float64)
            self._last[article.id] = t
            joined = self._join(article.id, article.id, near)
            merged = self._merge_near(article.id, t)
            return StoryOutcome(article.id, True, self.resolve(article.id), True, merged, joined)
        return StoryOutcome(article.id, True)

    def _active(self, t: int) -> list[str]:
        """Events with a member dated within the window before ``t``."""
        start = t - self._window_us
        return [e for e, last in self._last.items() if last >= start]

    def _merge_near(self, target: str, t: int) -> tuple[str, ...]:
        """Merge into ``target`` (or into an older event) the active events whose centroid is
        as similar to its centroid as a same-story article: they fire on one story."""
        ev = self.config.events
        merged: list[str] = []
        for other in sorted(self._active(t), key=lambda e: (self._events[e].opened_at_us, e)):
            if other == target or other not in self._events:
                continue
            if _cosine(self._centroid[target], self._centroid[other]) >= ev.min_similarity:
                first, second = sorted(
                    (target, other), key=lambda e: (self._events[e].opened_at_us, e)
                )
                self._merge(first, second)
                merged.append(second)
                target = first
        return tuple(merged)

    def _sources(self, article: Article, near: list[StoryHit]) -> int:
        names = {article.source or f"id:{article.id}"}
        for hit in near:
            meta = self._meta.get(str(hit.key))
            source = meta.source if meta is not None else None
            names.add(source or f"id:{hit.key}")
        return len(names)

    def _bursts(self, vec: StoryVector, t: int, in_window: int) -> bool:
        """Whether the story is new: fewer than ``in_window / burst_ratio`` neighbours in the
        ``background_seconds`` before the window (all of them, not a rate: a template that
        runs every day at market open has as many neighbours on each earlier day)."""
        ev = self.config.events
        background_us = round(ev.background_seconds * _US)
        if background_us <= 0:
            return True
        start = t - self._window_us
        before = self.index.nearest(
            vec, None, start - background_us, start - 1, min_similarity=ev.min_similarity
        )
        return in_window >= ev.burst_ratio * len(before)

    def _join(self, event: str, article_id: str, near: list[StoryHit]) -> tuple[str, ...]:
        """Make the article and its not-yet-member neighbours members of ``event``; the
        neighbours that joined, in order."""
        fresh: list[str] = []
        self._add_member(event, article_id)
        for hit in near:
            i = str(hit.key)
            if i not in self._member_of and i in self._meta:
                self._add_member(event, i)
                fresh.append(i)
        return tuple(fresh)

    def _add_member(self, event: str, article_id: str) -> None:
        meta = self._meta[article_id]
        self._member_of[article_id] = event
        self._events[event].members.append(article_id)
        self._centroid[event] += meta.values
        if meta.date_us > self._last[event]:
            self._last[event] = meta.date_us

    def _merge(self, target: str, other: str) -> None:
        moved = self._events.pop(other)
        for i in moved.members:
            self._member_of[i] = target
        self._events[target].members.extend(moved.members)
        self._centroid[target] += self._centroid.pop(other)
        self._last[target] = max(self._last[target], self._last.pop(other))
        self._alias[other] = target
        for alias, to in list(self._alias.items()):
            if to == other:
                self._alias[alias] = target

    # -- queries ---------------------------------------------------------------------------

    def event_of(self, article_id: str) -> str | None:
        """The event ``article_id`` belongs to (``None``: none; unknown ids too)."""
        return self._member_of.get(article_id)

    def resolve(self, event_id: str) -> str:
        """The id an event goes by now (a merged event resolves to the one that absorbed
        it); ``NotFoundError`` for an unknown id."""
        event_id = self._alias.get(event_id, event_id)
        if event_id not in self._events:
            raise NotFoundError(f"no event {event_id!r}")
        return event_id

    def events(self) -> list[StoryEvent]:
        """Every event, in opening order (date, then id)."""
        return sorted(self._events.values(), key=lambda e: (e.opened_at_us, e.id))

    def similar(
        self,
        article: Article | str,
        limit: int = 20,
        judge: Judge | None = None,
        *,
        window_seconds: float | None = None,
        min_similarity: float | None = None,
    ) -> list[StoryItem]:
        """Other articles of ``article``'s story, most similar first, at most ``limit``.

        ``article``: an :class:`Article` (its text is vectorised now, the best ranking) or
        the id of an indexed article (ranked from its stored fingerprint; ``NotFoundError``
        for an unknown id).  Only articles dated within ``window_seconds`` (default
        ``similar_window_seconds``; 0: no window) of its date, or any date when it has
        none, with story similarity at least ``min_similarity``
        (default ``similar_min_similarity``).  Each item is marked by ``judge(article id,
        item id)`` (module docs); without a judge every item is ``"similar"``.  Duplicates
        of the article are listed, not dropped.  A text without words gives ``[]``.
        """
        if isinstance(limit, bool) or not isinstance(limit, int):
            raise InputTypeError(f"limit must be an integer, got {type(limit).__name__}")
        if not 0 <= limit <= 1000:
            raise InputError(f"limit must be in [0, 1000], got {limit}")
        cfg = self.config
        window = cfg.similar_window_seconds if window_seconds is None else window_seconds
        check_range("window_seconds", window, low=0.0)
        floor = cfg.similar_min_similarity if min_similarity is None else min_similarity
        check_range("min_similarity", floor, low=-1.0, high=1.0)
        query: StoryVector | Any
        if isinstance(article, Article):
            vec = self.vector(article.text)
            if vec.is_empty or limit == 0:
                return []
            own, date_us, query = article.id, to_us(article.date), vec
        elif isinstance(article, str):
            fp, date_us = self.index.get(article)
            own = article
            query = Signature(self.index.scheme_id or cfg.vector.scheme_id, fp)
            if limit == 0:
                return []
        else:
            raise InputTypeError(
                f"similar takes an Article or an article id, got {type(article).__name__}"
            )
        span = round(window * _US)
        since = until = None
        if date_us is not None and span > 0:
            since, until = date_us - span, date_us + span
        hits = self.index.nearest(query, limit, since, until, min_similarity=floor, exclude=(own,))
        items: list[StoryItem] = []
        for hit in hits:
            key = str(hit.key)
            kind = "similar"
            if judge is not None:
                verdict = judge(own, key)
                kind = verdict if verdict in COPY_KINDS else "similar"
            items.append(StoryItem(key, hit.similarity, hit.date_us, kind))
        return items

    # -- reports ---------------------------------------------------------------------------

    def report(
        self, event_id: str, judge: Judge | None = None, *, candidates: int = 3
    ) -> StoryEventReport:
        """The report of an event (``NotFoundError`` for an unknown id; a merged id gives
        the report of the event that absorbed it).  With a ``judge``, each member after the
        first is compared with its ``candidates`` most story-similar earlier members (a
        copy's source is almost always among them): the first ``duplicate``/``partial``
        verdict marks it a copy of that member, none marks it independent."""
        check_int("candidates", candidates, low=1, high=100)
        event = self._events[self.resolve(event_id)]
        members = sorted(event.members, key=lambda i: (self._meta[i].date_us, i))
        metas = [self._meta[i] for i in members]
        kinds: list[tuple[str, str | None]] = []
        if judge is None:
            kinds = [("first", None), *[("unjudged", None)] * (len(members) - 1)]
        else:
            kinds = _copy_marks(members, metas, judge, candidates)
        articles = tuple(
            StoryEventArticle(i, m.date_us, m.source, m.title, kind, of)
            for i, m, (kind, of) in zip(members, metas, kinds, strict=True)
        )
        counts: dict[str, int] = {}
        for m in metas:
            if m.source:
                counts[m.source] = counts.get(m.source, 0) + 1
        sources = tuple(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
        first_publisher = (metas[0].source or members[0]) if members else None
        copies = independent = None
        if judge is not None:
            copies = sum(1 for a in articles if a.kind == "copy")
            independent = sum(1 for a in articles if a.kind == "independent")
        return StoryEventReport(
            event.id,
            self._title(metas),
            event.opened_by,
            event.opened_at_us,
            articles,
            first_publisher,
            sources,
            _growth([m.date_us for m in metas], self.config.events.growth_bucket_seconds),
            copies,
            independent,
        )

    def _title(self, metas: list[_Meta]) -> str | None:
        """The member title (or title segment) whose story vector is closest to the event's
        centroid; ``None`` when no member has a title with words."""
        if not metas:
            return None
        centroid = np.mean([m.values for m in metas], axis=0).astype(np.float32)
        norm = float(np.linalg.norm(centroid))
        best: tuple[float, str] | None = None
        seen: set[str] = set()
        for m in metas:
            for candidate in _title_segments(m.title):
                if candidate in seen:
                    continue
                seen.add(candidate)
                vec = story_vector(candidate, self._title_config(), self.frequencies)
                if vec.is_empty or norm == 0.0:
                    continue
                score = float(np.dot(vec.values, centroid)) / (
                    norm * math.sqrt(float(np.dot(vec.values, vec.values)))
                )
                if best is None or score > best[0]:
                    best = (score, candidate)
        return best[1] if best is not None else None

    def _title_config(self) -> StoryVectorConfig:
        # A title is one short paragraph: the paragraph rule must not drop it.
        return dataclasses.replace(self.config.vector, min_paragraph_words=0)

    # -- persistence -----------------------------------------------------------------------

    def save(self, directory: str | os.PathLike[str]) -> None:
        """Write the index, the document frequencies and the detector state to
        ``directory`` (created if needed; each file replaced atomically)."""
        folder = Path(directory)
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot create {folder}: {exc}") from exc
        self.index.save(folder / "story.index")
        self.frequencies.save(folder / "story.df")
        ids = sorted(self._meta, key=lambda i: (self._meta[i].date_us, i))
        metas = [self._meta[i] for i in ids]
        words = self.config.vector.bits // 64
        meta: dict[str, Any] = {
            "config": self.config.scheme_id,
            "ids": ids,
            "sources": [m.source for m in metas],
            "titles": [m.title for m in metas],
            "events": [
                {"id": e.id, "opened_by": e.opened_by, "at": e.opened_at_us, "members": e.members}
                for e in self.events()
            ],
            "alias": self._alias,
            "newest": self._newest,
        }
        arrays: dict[str, npt.NDArray[Any]] = {
            "dates": np.array([m.date_us for m in metas], dtype=np.int64),
            "fingerprints": np.array([m.fingerprint for m in metas], dtype=np.uint64).reshape(
                -1, words
            ),
            "values": np.array([m.values for m in metas], dtype=np.float32).reshape(
                -1, self.config.vector.bits
            ),
        }
        write_index_file(folder / "story.state", _STATE_MAGIC, meta, arrays)

    @classmethod
    def load(
        cls, directory: str | os.PathLike[str], config: StoryConfig | None = None
    ) -> StoryDesk:
        """Read what :meth:`save` wrote; ``StoreError`` if it is missing, damaged, or was
        made with another config."""
        folder = Path(directory)
        desk = cls(config)
        meta, arrays = read_index_file(folder / "story.state", _STATE_MAGIC)
        if meta.get("config") != desk.config.scheme_id:
            raise StoreError(f"{folder}: saved with another story config")
        desk.index = StoryIndex.load(folder / "story.index")
        desk.frequencies = DocumentFrequencies.load(folder / "story.df")
        try:
            ids = meta["ids"]
            for n, i in enumerate(ids):
                desk._meta[i] = _Meta(
                    int(arrays["dates"][n]),
                    meta["sources"][n],
                    meta["titles"][n],
                    arrays["fingerprints"][n].copy(),
                    arrays["values"][n].copy(),
                )
            for e in meta["events"]:
                desk._events[e["id"]] = StoryEvent(e["id"], e["opened_by"], e["at"], e["members"])
                desk._centroid[e["id"]] = np.zeros(desk.config.vector.bits, dtype=np.float64)
                desk._last[e["id"]] = int(e["at"])
                members = list(e["members"])
                desk._events[e["id"]].members = []
                for m in members:
                    desk._add_member(e["id"], m)
            desk._alias = dict(meta["alias"])
            desk._newest = int(meta["newest"])
            desk._horizon = collections.deque(
                (int(arrays["dates"][n]), i) for n, i in enumerate(ids)
            )
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise StoreError(f"{folder}: malformed story state: {exc}") from exc
        return desk

    def snapshot(self) -> str:
        """A canonical JSON rendering of the events (for replay and consistency checks)."""
        return json.dumps(
            [[e.id, e.opened_at_us, sorted(e.members)] for e in self.events()]
            + [sorted(self._alias.items())],
            sort_keys=True,
        )


_FIGURE = re.compile(r"(?<![\w.,])\d[\d.,]*(?!\w)")


def figure_share(text: str) -> float:
    """The share of figures (numbers such as ``1,200`` or ``3.5``) among the
    whitespace-separated words of ``text`` (0 for a text without words)."""
    words = len(text.split())
    if words == 0:
        return 0.0
    return min(1.0, len(_FIGURE.findall(text)) / words)


def _cosine(a: npt.NDArray[np.floating[Any]], b: npt.NDArray[np.floating[Any]]) -> float:
    na = float(np.dot(a, a))
    nb = float(np.dot(b, b))
    if na <= 0.0 or nb <= 0.0:
        return 0.0
    return float(np.dot(a, b)) / math.sqrt(na * nb)


def _title_segments(title: str | None) -> list[str]:
    """A title and its parts around site-name separators (" | ", " - ", " :: ")."""
    if not title or not title.strip():
        return []
    text = " ".join(title.split())
    parts = [text]
    for sep in (" | ", " - ", " \u2014 ", " \u2013 ", " :: "):
        if sep in text:
            parts.extend(p.strip() for p in text.split(sep) if p.strip())
    return parts


def _copy_marks(
    members: list[str], metas: list[_Meta], judge: Judge, candidates: int
) -> list[tuple[str, str | None]]:
    fps = np.array([m.fingerprint for m in metas], dtype=np.uint64)
    marks: list[tuple[str, str | None]] = [("first", None)]
    for n in range(1, len(members)):
        dist = np.bitwise_count(fps[:n] ^ fps[n]).sum(axis=1)
        order = np.lexsort((np.arange(n), dist))[:candidates]
        mark: tuple[str, str | None] = ("independent", None)
        for j in order.tolist():
            if judge(members[j], members[n]) in COPY_KINDS:
                mark = ("copy", members[j])
                break
        marks.append(mark)
    return marks


def _growth(dates: list[int], bucket_seconds: float) -> tuple[tuple[float, int], ...]:
    if not dates:
        return ()
    step = round(bucket_seconds * _US)
    start = min(dates)
    counts: dict[int, int] = {}
    for d in dates:
        b = (d - start) // step
        counts[b] = counts.get(b, 0) + 1
    out: list[tuple[float, int]] = []
    total = 0
    for b in sorted(counts):
        total += counts[b]
        out.append(((b + 1) * step / 3600 / _US, total))
    return tuple(out)
