"""The stream's story component: same-story candidates and breaking events (seed 003).

One :class:`~neardup.detect.story.StoryDesk` per stream, keyed by the store's sequence
numbers.  Per article, inside the write transaction, in ingest order:

1. its story vector, made from its rule profile's content terms (no second reading of the
   text) with the document frequencies of the articles stored before it;
2. **one windowed query** (:meth:`StoryDesk.neighbours`: the stored articles dated within
   ``stories.window_seconds`` of it at story similarity >= ``stories.min_similarity``), whose
   first ``candidates.story_candidates`` hits the stream judges with the rule (so reports of
   the same story written independently are found and listed as ``similar``) and whose
   last ``events.window_seconds`` the event rule reads;
3. the event rule (:meth:`StoryDesk.decide`), then the records: the article is indexed and
   its terms counted, and the outcome is written to the store (``insert_event`` when it
   opens an event, ``set_event`` for the members) and to its log.

Log entries (replayed in order by :class:`~neardup.detect.stream.state.StreamState`, which
calls the same :class:`StoryDesk` steps, so a replay rebuilds the same state and processes
sharing a store agree): ``add`` (arg ``"1"`` when the article counts toward events -- it is
not a table of figures -- else ``"0"``), ``event`` (arg: the event the article joins; the
opening article is logged first, so an event's first entry names and dates it) and
``merge`` (arg: JSON ``[merged, survivor]``).  An article without a date is indexed for
``similar`` but has no story candidates at ingest and never counts toward events.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from neardup.detect.story import EventReport, Judge, Neighbours, StoryDesk, StoryOutcome
from neardup.errors import StoreError
from neardup.index.story import StoryHit
from neardup.rule import Profile, RuleConfig
from neardup.sketch.story import StoryVector, tf_weights
from neardup.store import EventRow, Store

__all__ = ["StreamStories"]

Log = Callable[[int, str, str], None]
_PREFIX = "story_"


class StreamStories:
    """The story state of one stream (see the module docstring)."""

    def __init__(self, config: Any, rule: RuleConfig) -> None:
        self.config = config
        self.desk = StoryDesk(config, rule)
        self._titles: dict[str, tuple[int, str | None]] = {}

    def __len__(self) -> int:
        return len(self.desk)

    # --- ingest ---------------------------------------------------------------------------
    def vector(self, prof: Profile) -> StoryVector:
        """The story vector of a profile with the document frequencies as they are now."""
        return self.desk.vector_of(prof)

    def neighbours(self, vec: StoryVector, date_us: int | None) -> Neighbours:
        """The one query of an arriving article (see :meth:`StoryDesk.neighbours`)."""
        return self.desk.neighbours(vec, date_us)

    def decide(
        self,
        article_id: str,
        vec: StoryVector,
        date_us: int | None,
        source: str | None,
        counted: bool,
        hits: Neighbours,
    ) -> StoryOutcome:
        """The event outcome of an arriving article (pure)."""
        return self.desk.decide(article_id, vec, date_us, source, counted, hits)

    def record(
        self,
        store: Store,
        log: Log,
        seq: int,
        article_id: str,
        vec: StoryVector,
        prof: Profile,
        date_us: int | None,
        *,
        source: str | None,
        title: str | None,
        counted: bool,
        outcome: StoryOutcome,
    ) -> None:
        """Record a stored article and its event outcome in memory, in the store and its
        log (after the article's row and its ``add`` entry were written)."""
        self.desk.add(
            seq, article_id, vec, prof.terms, date_us, source=source, title=title, counted=counted
        )
        if outcome.target is None or outcome.event is None or date_us is None:
            return
        if outcome.opened:
            store.insert_event(EventRow(outcome.target, article_id, date_us, seq))
        members = (seq, *(int(k) for k in outcome.joined))
        store.set_event(members, outcome.target)
        for member in members:
            log(member, "event", outcome.target)
            self.desk.set_member(member, outcome.target)
        for other in outcome.merged:
            moved = [int(k) for k in self.desk.merge(outcome.event, other)]
            store.set_event(moved, outcome.event)
            log(seq, "merge", json.dumps([other, outcome.event]))

    # --- replay ---------------------------------------------------------------------------
    def replay_add(
        self,
        seq: int,
        article_id: str,
        prof: Profile,
        date_us: int | None,
        source: str | None,
        title: str | None,
        counted: bool,
    ) -> StoryVector:
        """Apply an ``add`` entry (the vector is made again with the document frequencies of
        the entries before it: the same as at ingest)."""
        vec = self.desk.vector_of(prof)
        self.desk.add(
            seq, article_id, vec, prof.terms, date_us, source=source, title=title, counted=counted
        )
        return vec

    def replay_event(self, seq: int, event: str) -> None:
        """Apply an ``event`` entry (ignored when events are off in this config)."""
        if self.config.events.enabled:
            self.desk.set_member(seq, event)

    def replay_merge(self, arg: str) -> None:
        """Apply a ``merge`` entry (ignored when events are off in this config)."""
        if not self.config.events.enabled:
            return
        try:
            other, survivor = json.loads(arg)
        except (ValueError, TypeError) as exc:
            raise StoreError(f"malformed merge entry {arg!r}") from exc
        self.desk.merge(str(survivor), str(other))

    # --- queries --------------------------------------------------------------------------
    def similar_hits(self, seq: int, prof: Profile, date_us: int | None, k: int) -> list[StoryHit]:
        """The ``k`` stories most similar to a stored article's (its vector made again with
        today's document frequencies), dated within ``similar_window_seconds`` either side
        of it (any date when it has none, or the window is 0), itself left out."""
        vec = self.desk.vector_of(prof)
        if vec.is_empty or len(self.desk) == 0:
            return []
        span = round(self.config.similar_window_seconds * 1_000_000)
        since = until = None
        if date_us is not None and span > 0:
            since, until = date_us - span, date_us + span
        return self.desk.index.nearest(vec, k, since, until, exclude=(seq,))

    def closeness(self, prof: Profile, others: Sequence[Profile]) -> list[float]:
        """The exact cosine of the TF-IDF vectors of ``prof``'s content terms and each of
        ``others``' (sublinear TF, today's document frequencies): what the story vector
        estimates, computed exactly to rank a short list."""
        freq = self.desk.frequencies

        def weighted(p: Profile) -> npt.NDArray[np.float64]:
            if not p.terms.shape[0]:
                return np.zeros(0, dtype=np.float64)
            return (tf_weights(p.term_counts) * freq.weights_of(p.terms)).astype(np.float64)

        wq = weighted(prof)
        nq = float(np.sqrt(np.dot(wq, wq)))
        out: list[float] = []
        for other in others:
            wo = weighted(other)
            no = float(np.sqrt(np.dot(wo, wo)))
            if nq == 0.0 or no == 0.0:
                out.append(0.0)
                continue
            _, iq, io = np.intersect1d(prof.terms, other.terms, True, return_indices=True)
            out.append(float(np.dot(wq[iq], wo[io])) / (nq * no))
        return out

    def resolve(self, event_id: str) -> str:
        """The id an event goes by now (``NotFoundError`` when unknown)."""
        return self.desk.resolve(event_id)

    def merged_ids(self) -> set[str]:
        """Ids of events merged into others."""
        return set(self.desk.aliases)

    def summary(self, event_id: str) -> dict[str, Any]:
        """``title``, ``articles`` and ``sources`` of an event (titles cached by size)."""
        event = self.desk.event(event_id)
        size = len(event.members)
        cached = self._titles.get(event.id)
        if cached is None or cached[0] != size:
            cached = (size, self.desk.title(event.id))
            self._titles[event.id] = cached
        return {"title": cached[1], "articles": size, "sources": self.desk.sources(event.id)}

    def report(self, event_id: str, judge: Judge) -> EventReport:
        """The report of an event (members judged against each other for copies)."""
        return self.desk.report(event_id, judge)

    # --- checkpoint -----------------------------------------------------------------------
    def state(self) -> dict[str, npt.NDArray[Any]]:
        """Arrays for the stream's checkpoint (see :meth:`load_state`)."""
        meta, arrays = self.desk.state()
        return {
            f"{_PREFIX}meta": np.asarray([json.dumps(meta, sort_keys=True)], dtype=np.str_),
            **{f"{_PREFIX}{k}": v for k, v in arrays.items()},
        }

    def load_state(self, arrays: dict[str, npt.NDArray[Any]]) -> None:
        """Restore :meth:`state` (``StoreError`` when it does not fit this config)."""
        try:
            meta = json.loads(str(arrays[f"{_PREFIX}meta"][0]))
        except (KeyError, IndexError, ValueError) as exc:
            raise StoreError(f"checkpoint has no story state: {exc}") from exc
        mine = {k[len(_PREFIX) :]: v for k, v in arrays.items() if k.startswith(_PREFIX)}
        mine.pop("meta", None)
        self.desk = StoryDesk.from_state(meta, mine, self.config, self.desk.rule, "checkpoint")

    def snapshot(self) -> str:
        """Comparable contents, for consistency checks."""
        return self.desk.snapshot()
