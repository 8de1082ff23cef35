"""The :class:`StoryDesk`: the story state of a stream (vectors, the windowed index, the
maintained document frequencies, the events) and the event rule over it."""

from __future__ import annotations

import collections
import math
import os
import re
from typing import Any

import numpy as np
import numpy.typing as npt

from neardup.config import check_int, check_range
from neardup.detect.story.config import StoryConfig
from neardup.detect.story.persist import (
    desk_snapshot,
    desk_state,
    load_desk,
    restore_desk,
    save_desk,
)
from neardup.detect.story.records import (
    COPY_KINDS,
    EventReport,
    Judge,
    KeptArticle,
    Neighbours,
    StoryEvent,
    StoryItem,
    StoryOutcome,
)
from neardup.detect.story.reports import event_report, event_title
from neardup.errors import InputError, InputTypeError, NotFoundError, StoreError
from neardup.index._common import Key
from neardup.index.docfreq import DocumentFrequencies
from neardup.index.story import StoryIndex, StoryIndexConfig, to_us
from neardup.records import Article
from neardup.rule import Profile, RuleConfig, profile
from neardup.sketch.story import StoryVector, story_vector

_US = 1_000_000


_NO_NEIGHBOURS = Neighbours(
    np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64), np.zeros(0, dtype=np.int64)
)


class StoryDesk:
    """Story index, document frequencies and breaking events over an article stream.

    Keys name the articles in the index and in events: the article ids when used alone
    (:meth:`ingest`), the store's sequence numbers in the news stream.  ``rule``: the
    profile the text path (:meth:`ingest`, :meth:`similar` of an :class:`Article`) reads.
    """

    def __init__(self, config: StoryConfig | None = None, rule: RuleConfig | None = None) -> None:
        self.config = cfg = config or StoryConfig()
        self.rule = rule or RuleConfig()
        self.index = StoryIndex(StoryIndexConfig(cfg.vector.bits, cfg.buffer_size))
        self.frequencies = DocumentFrequencies(cfg.df_bucket_bits)
        self._window_us = round(cfg.events.window_seconds * _US)
        self._query_us = round(cfg.window_seconds * _US)
        self._meta: dict[Key, KeptArticle] = {}
        self._member_of: dict[Key, str] = {}
        self._events: dict[str, StoryEvent] = {}
        self._alias: dict[str, str] = {}
        # Per event: the sum of its members' story vectors, and its newest member's date.
        self._centroid: dict[str, npt.NDArray[np.float64]] = {}
        self._last: dict[str, int] = {}
        self._newest = -(1 << 62)
        self._horizon: collections.deque[tuple[int, Key]] = collections.deque()

    def __len__(self) -> int:
        return len(self.index)

    # -- vectors and the one query ---------------------------------------------------------

    def vector(self, terms: npt.NDArray[np.uint64], counts: npt.ArrayLike) -> StoryVector:
        """The story vector of content terms (a profile's ``terms`` / ``term_counts``) with
        the document frequencies as they are now."""
        return story_vector(terms, counts, self.config.vector, self.frequencies)

    def vector_of(self, prof: Profile) -> StoryVector:
        """The story vector of a rule profile (see :meth:`vector`)."""
        return self.vector(prof.terms, prof.term_counts)

    def neighbours(self, vec: StoryVector, date_us: int | None) -> Neighbours:
        """The one query of an arriving article: indexed articles dated within
        ``window_seconds`` of ``date_us`` (either side: articles may arrive out of date
        order) with story similarity at least ``min_similarity``, most similar first.
        ``[]`` for an undated article or an empty vector."""
        if date_us is None or vec.is_empty or len(self.index) == 0:
            return _NO_NEIGHBOURS
        span = self._query_us
        keys, similarity, dates = self.index.within(
            vec, date_us - span, date_us + span, min_similarity=self.config.min_similarity
        )
        return Neighbours(keys, similarity, dates)

    # -- the event rule ----------------------------------------------------------------------

    def counts(self, text: str) -> bool:
        """Whether a text may count toward events (it is not a table of figures)."""
        return figure_share(text) <= self.config.events.max_figure_share

    def decide(
        self,
        name: str,
        vec: StoryVector,
        date_us: int | None,
        source: str | None,
        counted: bool,
        hits: Neighbours,
    ) -> StoryOutcome:
        """The event rule (module docs) for an arriving article named ``name`` whose
        :meth:`neighbours` are ``hits``; pure (record it with :meth:`apply`)."""
        ev = self.config.events
        if not ev.enabled or date_us is None or not counted or vec.is_empty:
            return StoryOutcome()
        t = date_us
        start = t - self._window_us
        meta = self._meta
        sel = (hits.similarity >= ev.min_similarity) & (hits.dates >= start) & (hits.dates <= t)
        near = [k for k in hits.keys[sel].tolist() if k in meta]
        links: dict[str, int] = {}
        for key in near:
            event = self._member_of.get(key)
            if event is not None:
                links[event] = links.get(event, 0) + 1
        values = vec.values.astype(np.float64)
        fits: list[tuple[int, float, str]] = []
        for event in self._active(t):
            n = links.get(event, 0)
            score = _cosine(values, self._centroid[event])
            if n >= ev.min_links or score >= ev.min_similarity:
                fits.append((n, score, event))
        joined = tuple(k for k in near if k not in self._member_of)
        if fits:
            fits.sort(key=lambda f: (-f[0], -f[1], self._events[f[2]].opened_at_us, f[2]))
            target, opened = fits[0][2], False
        elif (
            len(near) > ev.min_articles
            and self._sources(source, name, near) >= ev.min_sources
            and self._bursts(vec, t, len(near))
        ):
            target, opened = name, True
        else:
            return StoryOutcome()
        centroid = values + sum((meta[k].values for k in joined), np.zeros_like(values))
        if not opened:
            centroid += self._centroid[target]
        survivor, merged = self._merges(target, t if opened else None, centroid, t)
        return StoryOutcome(survivor, target, opened, merged, joined)

    def _merges(
        self, target: str, opened_at: int | None, centroid: npt.NDArray[np.float64], t: int
    ) -> tuple[str, tuple[str, ...]]:
        """The event the grown ``target`` ends in and the events merged into it: active
        events, oldest first, whose centroid is as similar to the (growing) merged centroid
        as a same-story article."""
        ev = self.config.events

        def order(e: str) -> tuple[int, str]:
            if e == target and opened_at is not None:
                return (opened_at, e)
            return (self._events[e].opened_at_us, e)

        survivor, merged = target, []
        for other in sorted((e for e in self._active(t) if e != target), key=order):
            if _cosine(centroid, self._centroid[other]) >= ev.min_similarity:
                centroid = centroid + self._centroid[other]
                if order(other) < order(survivor):
                    merged.append(survivor)
                    survivor = other
                else:
                    merged.append(other)
        return survivor, tuple(merged)

    def _active(self, t: int) -> list[str]:
        """Events with a member dated within the window before ``t``."""
        start = t - self._window_us
        return [e for e, last in self._last.items() if last >= start]

    def _sources(self, source: str | None, name: str, near: list[Key]) -> int:
        names = {source or f"id:{name}"}
        for key in near:
            meta = self._meta[key]
            names.add(meta.source or f"id:{meta.name}")
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

    # -- recording -----------------------------------------------------------------------------

    def add(
        self,
        key: Key,
        name: str,
        vec: StoryVector,
        terms: npt.NDArray[np.uint64],
        date_us: int | None,
        *,
        source: str | None = None,
        title: str | None = None,
        counted: bool = True,
    ) -> None:
        """Index an article's story (after :meth:`decide`) and count its terms; a dated
        article that ``counted`` is kept for the event rule.  An empty vector is not
        indexed (its terms are none)."""
        if vec.is_empty:
            return
        if date_us is not None and counted and self.config.events.enabled:
            self._meta[key] = KeptArticle(name, date_us, source, title, vec.fingerprint, vec.values)
            self._horizon.append((date_us, key))
            if date_us > self._newest:
                self._newest = date_us
                self._prune()
        self.index.add(key, vec, date_us)
        self.frequencies.add(terms)

    def _prune(self) -> None:
        # Keep what the rule can still reach: articles of the last two windows (in arrival
        # order; a late article stays until it reaches the front) and every event member.
        horizon = self._newest - 2 * self._window_us
        queue = self._horizon
        while queue and queue[0][0] < horizon:
            _, k = queue.popleft()
            if k not in self._member_of:
                self._meta.pop(k, None)

    def apply(self, key: Key, outcome: StoryOutcome) -> None:
        """Record :meth:`decide`'s outcome for the article added under ``key``: the steps
        :meth:`set_member` (the article first, then the joined ones) and :meth:`merge`."""
        if outcome.target is None or outcome.event is None:
            return
        for member in (key, *outcome.joined):
            self.set_member(member, outcome.target)
        for other in outcome.merged:
            self.merge(outcome.event, other)

    def set_member(self, key: Key, event: str) -> None:
        """Make the article ``key`` a member of ``event``; an unknown event opens, named
        ``event`` and dated by this, its first member.  ``StoreError`` when the article
        is not kept for events (a log that does not fit this state)."""
        meta = self._meta.get(key)
        if meta is None:
            raise StoreError(f"article {key!r} joins event {event!r} but is not counted")
        if event not in self._events:
            self._events[event] = StoryEvent(event, event, meta.date_us, [])
            self._centroid[event] = np.zeros(self.config.vector.bits, dtype=np.float64)
            self._last[event] = meta.date_us
            self._alias.pop(event, None)
        previous = self._member_of.get(key)
        if previous == event:
            return
        if previous is not None:
            self._events[previous].members.remove(key)
            self._centroid[previous] -= meta.values
        self._member_of[key] = event
        self._events[event].members.append(key)
        self._centroid[event] += meta.values
        if meta.date_us > self._last[event]:
            self._last[event] = meta.date_us

    def merge(self, survivor: str, other: str) -> list[Key]:
        """Merge event ``other`` into ``survivor`` (its id then resolves to it); the keys
        moved.  ``StoreError`` for an unknown event."""
        if survivor not in self._events or other not in self._events or survivor == other:
            raise StoreError(f"cannot merge event {other!r} into {survivor!r}")
        moved = self._events.pop(other)
        for k in moved.members:
            self._member_of[k] = survivor
        self._events[survivor].members.extend(moved.members)
        self._centroid[survivor] += self._centroid.pop(other)
        self._last[survivor] = max(self._last[survivor], self._last.pop(other))
        self._alias[other] = survivor
        for alias, to in list(self._alias.items()):
            if to == other:
                self._alias[alias] = survivor
        return list(moved.members)

    # -- used alone -----------------------------------------------------------------------------

    def ingest(self, article: Article) -> StoryOutcome:
        """Index ``article``'s story and run the event rule (module docs), in stream order;
        the article's id is its key.  ``ConflictError`` when the id is already indexed with
        another story or date; an id seen before with the same text and date is a no-op
        returning its current event."""
        if not isinstance(article, Article):
            raise InputTypeError(f"ingest takes an Article, got {type(article).__name__}")
        prof = profile(article.text, self.rule)
        vec = self.vector_of(prof)
        if vec.is_empty:
            return StoryOutcome()
        date_us = to_us(article.date)
        if article.id in self.index:
            self.index.add(article.id, vec, date_us)  # raises ConflictError if it differs
            event = self.event_of(article.id)
            return StoryOutcome(event, event)
        counted = self.counts(article.text)
        hits = self.neighbours(vec, date_us)
        outcome = self.decide(article.id, vec, date_us, article.source, counted, hits)
        self.add(
            article.id,
            article.id,
            vec,
            prof.terms,
            date_us,
            source=article.source,
            title=article.title,
            counted=counted,
        )
        self.apply(article.id, outcome)
        return outcome

    # -- queries ---------------------------------------------------------------------------

    def event_of(self, key: Key) -> str | None:
        """The event the article ``key`` belongs to (``None``: none; unknown keys too)."""
        return self._member_of.get(key)

    def resolve(self, event_id: str) -> str:
        """The id an event goes by now (a merged event resolves to the one that absorbed
        it); ``NotFoundError`` for an unknown id."""
        event_id = self._alias.get(event_id, event_id)
        if event_id not in self._events:
            raise NotFoundError(f"no event {event_id!r}")
        return event_id

    @property
    def aliases(self) -> dict[str, str]:
        """Merged event ids and the ids they resolve to."""
        return dict(self._alias)

    def events(self) -> list[StoryEvent]:
        """Every event, in opening order (date, then id)."""
        return sorted(self._events.values(), key=lambda e: (e.opened_at_us, e.id))

    def event(self, event_id: str) -> StoryEvent:
        """The event ``event_id`` resolves to (``NotFoundError`` when unknown)."""
        return self._events[self.resolve(event_id)]

    def similar(
        self,
        article: Article | Key,
        limit: int = 20,
        judge: Judge | None = None,
        *,
        window_seconds: float | None = None,
        min_similarity: float | None = None,
    ) -> list[StoryItem]:
        """Other articles of ``article``'s story, most similar first, at most ``limit``.

        ``article``: an :class:`Article` (its text is profiled now) or the key of an indexed
        article (ranked from its stored fingerprint; ``NotFoundError`` for an unknown key).
        Only articles dated within ``window_seconds`` (default ``similar_window_seconds``; 0:
        no window) of its date, or any date when it has none, with story similarity at
        least ``min_similarity`` (default: the config's).  Each item is marked by
        ``judge(article key, item key)``; without a judge every item is ``"similar"``.
        Duplicates of the article are listed, not dropped.  A text without content terms
        gives ``[]``; ``limit`` outside ``[0, 1000]`` is an ``InputError``.
        """
        if isinstance(limit, bool) or not isinstance(limit, int):
            raise InputTypeError(f"limit must be an integer, got {type(limit).__name__}")
        if not 0 <= limit <= 1000:
            raise InputError(f"limit must be in [0, 1000], got {limit}")
        cfg = self.config
        window = cfg.similar_window_seconds if window_seconds is None else window_seconds
        check_range("window_seconds", window, low=0.0)
        floor = cfg.min_similarity if min_similarity is None else min_similarity
        check_range("min_similarity", floor, low=-1.0, high=1.0)
        query: Any
        if isinstance(article, Article):
            vec = self.vector_of(profile(article.text, self.rule))
            if vec.is_empty or limit == 0:
                return []
            own: Key = article.id
            date_us, query = to_us(article.date), vec
        elif isinstance(article, str | int) and not isinstance(article, bool):
            fp, date_us = self.index.get(article)
            own = article
            from neardup.sketch.base import Signature

            query = Signature(self.index.scheme_id or cfg.vector.scheme_id, fp)
            if limit == 0:
                return []
        else:
            raise InputTypeError(
                f"similar takes an Article or an article key, got {type(article).__name__}"
            )
        span = round(window * _US)
        since = until = None
        if date_us is not None and span > 0:
            since, until = date_us - span, date_us + span
        hits = self.index.nearest(query, limit, since, until, min_similarity=floor, exclude=(own,))
        items: list[StoryItem] = []
        for hit in hits:
            kind = "similar"
            if judge is not None:
                verdict = judge(own, hit.key)
                kind = verdict if verdict in COPY_KINDS else "similar"
            items.append(StoryItem(hit.key, hit.similarity, hit.date_us, kind))
        return items

    # -- reports ---------------------------------------------------------------------------

    def report(
        self, event_id: str, judge: Judge | None = None, *, candidates: int = 3
    ) -> EventReport:
        """The report of an event (``NotFoundError`` for an unknown id; a merged id gives
        the report of the event that absorbed it).  With a ``judge`` (on keys), each member
        after the first is compared with its ``candidates`` most story-similar earlier
        members (a copy's source is almost always among them): the first
        ``duplicate``/``partial`` verdict marks it a copy of that member, none marks it
        independent (:mod:`neardup.detect.story.reports`)."""
        check_int("candidates", candidates, low=1, high=100)
        event = self._events[self.resolve(event_id)]
        members = sorted(event.members, key=lambda k: (self._meta[k].date_us, self._meta[k].name))
        metas = [self._meta[k] for k in members]
        return event_report(
            event,
            members,
            metas,
            judge,
            candidates,
            event_title(metas, self.rule, self.vector_of),
            self.config.events.growth_bucket_seconds,
        )

    def title(self, event_id: str) -> str | None:
        """The readable title of an event (as in its report)."""
        event = self.event(event_id)
        return event_title([self._meta[k] for k in event.members], self.rule, self.vector_of)

    def sources(self, event_id: str) -> int:
        """The number of sources of an event's articles (one per article without one)."""
        event = self.event(event_id)
        return len({self._meta[k].source or f"id:{self._meta[k].name}" for k in event.members})

    # -- persistence (:mod:`neardup.detect.story.persist`) ------------------------------------

    def state(self) -> tuple[dict[str, Any], dict[str, npt.NDArray[Any]]]:
        """``(meta, arrays)`` that :meth:`from_state` restores exactly: the story index, the
        document frequencies and the detector's state (for :meth:`save` and for a caller's
        checkpoint)."""
        return desk_state(self)

    @classmethod
    def from_state(
        cls,
        meta: dict[str, Any],
        arrays: dict[str, npt.NDArray[Any]],
        config: StoryConfig | None = None,
        rule: RuleConfig | None = None,
        where: str = "state",
    ) -> StoryDesk:
        """The detector :meth:`state` described; ``StoreError`` when it is damaged or was
        made with another config."""
        return restore_desk(cls(config, rule), meta, arrays, where)

    def save(self, directory: str | os.PathLike[str]) -> None:
        """Write :meth:`state` to ``directory/story.state`` (created if needed; replaced
        atomically)."""
        save_desk(self, directory)

    @classmethod
    def load(
        cls,
        directory: str | os.PathLike[str],
        config: StoryConfig | None = None,
        rule: RuleConfig | None = None,
    ) -> StoryDesk:
        """Read what :meth:`save` wrote; ``StoreError`` if it is missing, damaged, or was
        made with another config."""
        return load_desk(cls, directory, config, rule)

    def snapshot(self) -> str:
        """A canonical JSON rendering of the events, the indexed stories and the document
        frequencies (for replay and consistency checks)."""
        return desk_snapshot(self)


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
