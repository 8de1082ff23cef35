"""The news stream: ingest-time dedup, partial copies, similar news and breaking events.

For every ingested article (seed 002's candidates -> verification; seed 003's stream):

1. **Profile** the text once (:func:`neardup.rule.profile`) and fingerprint it: the winnowed
   hashes of its prose shingles (:func:`~neardup.detect.stream.candidates.
   passage_fingerprints`) and its story vector, made from the profile's content terms
   (:mod:`neardup.detect.stream.stories`; seed 003).
2. **Candidates**: stored articles sharing a passage fingerprint, and the nearest stories
   of the last ``stories.window_seconds`` (:mod:`neardup.detect.stream.candidates`),
   optionally only those dated within ``window_seconds``.
3. **Judge** each candidate with the one rule (:mod:`neardup.detect.stream.judging`): ``duplicate``,
   ``partial``, ``similar`` or ``unrelated`` (dropped).
4. **Decide**: the status is the strongest verdict (``duplicate`` > ``partial`` >
   ``similar`` > ``new``).

Duplicate groups (:mod:`neardup.detect.stream.groups`).  A group is its *original* (its
earliest article) and the articles that duplicate it.  Every stored article, originals and
members alike, is a candidate, so a new article finds a group through any of its members; it
joins a group when it duplicates the group's original itself (on the read-labelled real
news, "same group" then agrees with the readers' duplicates far better than when any member
would do: docs/evaluation.md); groups it bridges are merged, and an article earlier than
the original takes the group over.

The store's ``original`` column is always current; a decision records what was decided at
ingest.  Groups live in the store only, so they are the same after a restart, on SQLite and
PostgreSQL, and for processes sharing a store.

Idempotence: re-ingesting an id with the same text returns the stored decision unchanged
(``replayed=True``); different text under a known id raises
:class:`~neardup.errors.ConflictError`.

Guarantees: decisions are deterministic for a given ingest order (exact indexes; every tie
broken by id).  Each batch is decided inside :meth:`Store.write` after replaying the store's
log, so processes sharing a store decide as one would.  The candidate search is the only
approximation (``max_verified`` candidates, fingerprints held by more than
``max_postings`` articles skipped); docs/evaluation.md measures what it loses.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from neardup.config import check_int
from neardup.detect.story import EventReport, figure_share
from neardup.detect.stream.candidates import passage_fingerprints
from neardup.detect.stream.config import StreamConfig
from neardup.detect.stream.groups import place
from neardup.detect.stream.judging import (
    PROFILE_CACHE_BYTES,
    Judged,
    ProfileCache,
    StoredArticle,
    in_time,
    judge_rows,
    match_of,
)
from neardup.detect.stream.records import Decision, Match
from neardup.detect.stream.state import StreamState
from neardup.errors import (
    ConflictError,
    InputError,
    InputTooLargeError,
    InputTypeError,
    NearDupError,
    NotFoundError,
    SchemeMismatchError,
    StateFileError,
)
from neardup.records import Article, epoch_us, text_hash
from neardup.rule import Profile, Verdict, decide, judge, pair_features, profile
from neardup.rule.bounds import screen
from neardup.rule.features import pack_profile
from neardup.store import ArticleRow, EventRow, Store

__all__ = ["NewsStream", "text_hash"]

_US = 1_000_000


@dataclasses.dataclass(frozen=True, slots=True)
class _Prepared:
    """An article validated and profiled outside the write transaction (its story vector
    is made inside: it depends on the articles stored before it)."""

    article: Article
    text_hash: str
    date_us: int | None
    profile: Profile
    row: npt.NDArray[np.uint64]
    passages: npt.NDArray[np.uint64]
    counted: bool


def _date_us(article: Article) -> int | None:
    if article.date is None:
        return None
    return epoch_us(article.date)


class NewsStream:
    """Ingest-time dedup, partial copies, similar news and breaking events over a store.

    Not thread-safe by itself (the API object serialises calls).  ``checkpoint_path``: where
    the in-memory indexes are checkpointed (``None``: never; rebuilt from the store's log at
    start); ``checkpoint_every``: articles between automatic checkpoints;
    ``profile_cache_bytes``: memory for stored articles' profiles kept for judging (512 MiB;
    more keeps a long stream's late copies from being read back from the store, 0 reads
    every candidate from it: the decisions are the same).
    """

    def __init__(
        self,
        store: Store,
        config: StreamConfig | None = None,
        *,
        checkpoint_path: str | os.PathLike[str] | None = None,
        checkpoint_every: int = 200_000,
        profile_cache_bytes: int = PROFILE_CACHE_BYTES,
    ) -> None:
        self.store = store
        self.config = config or StreamConfig()
        check_int("checkpoint_every", checkpoint_every, low=1)
        self.checkpoint_path = None if checkpoint_path is None else Path(checkpoint_path)
        self.checkpoint_every = checkpoint_every
        stories = self.config.stories
        self._schemes = json.dumps(
            {
                "story": f"{stories.vector.scheme_id};df={stories.df_bucket_bits}",
                "profile": self.config.rule.profile_id,
            },
            sort_keys=True,
        )
        self._init_meta()
        self._profiles = ProfileCache(self.config.rule.profile_id, profile_cache_bytes)
        self._since_checkpoint = 0
        self.stats: dict[str, Any] = {"restored_from_checkpoint": 0, "replayed_log_entries": 0}
        self._state = StreamState(self.config)
        self._load()

    # --- setup and state ------------------------------------------------------------------
    def _init_meta(self) -> None:
        with self.store.write():
            found = self.store.meta_get("signature_schemes")
            if found is None:
                self.store.meta_set("signature_schemes", self._schemes)
            elif found != self._schemes:
                raise SchemeMismatchError(
                    f"store {self.store.url!r} holds articles profiled as {found}, this stream "
                    f"makes {self._schemes}; open it with the config it was created with"
                )

    def _load(self) -> None:
        """Checkpoint (when intact and made from this store's history, see
        :mod:`neardup.detect.stream.state`) plus the log entries after it; else the whole
        log."""
        self._profiles.clear()  # a rolled-back batch may give its seqs to other articles
        self._state = StreamState(self.config)
        if self.checkpoint_path is not None:
            try:
                if self._state.restore(
                    self.store, self.checkpoint_path, self._state.identity(self._schemes)
                ):
                    self.stats["restored_from_checkpoint"] = 1
            except (StateFileError, ValueError, KeyError, IndexError, TypeError) as exc:
                # A damaged, stale or foreign checkpoint is only a lost speed-up: rebuild from
                # the log.  (Another StoreError, e.g. the store being unreachable while the
                # checkpoint is checked, is raised: a rebuild would fail too.)
                self.stats["checkpoint_error"] = str(exc)
                self._state = StreamState(self.config)
        self._catch_up()

    def _catch_up(self) -> None:
        self.stats["replayed_log_entries"] += self._state.catch_up(self.store)

    def checkpoint(self) -> Path | None:
        """Write the in-memory indexes to ``checkpoint_path`` (atomic, pinned to the store's
        log); return it."""
        if self.checkpoint_path is None:
            return None
        self._state.save(self.store, self.checkpoint_path, self._state.identity(self._schemes))
        self._since_checkpoint = 0
        return self.checkpoint_path

    def consistency_errors(self) -> list[str]:
        """Differences between the live in-memory state and a rebuild from the store's log
        (empty when they agree; ``tests/test_durability.py`` checks this after ``kill -9``)."""
        fresh = StreamState(self.config)
        fresh.catch_up(self.store)
        errors: list[str] = []
        live_keys, live_stories = self._state.snapshot()
        fresh_keys, fresh_stories = fresh.snapshot()
        if live_keys != fresh_keys:
            errors.append(
                f"passage index differs: {len(live_keys)} live vs {len(fresh_keys)} rebuilt"
            )
        if live_stories != fresh_stories:
            errors.append("story state (index, document frequencies or events) differs")
        stored_events = {e.id for e in self.store.events(None, None)}
        live_events = {e.id for e in fresh.stories.desk.events()} | fresh.stories.merged_ids()
        if self.config.stories.events.enabled and stored_events != live_events:
            errors.append(
                f"the store holds {len(stored_events)} events, log replay gives {len(live_events)}"
            )
        stored = {a.seq for a in self.store.iter_articles()}
        if stored != set(fresh_keys):
            errors.append(
                f"log replay gives {len(fresh_keys)} indexed articles but the store has "
                f"{len(stored)}"
            )
        return errors

    # --- ingest ---------------------------------------------------------------------------
    def prepare(self, article: Article | Mapping[str, Any]) -> _Prepared:
        """Validate and profile one article (no store access).  ``InputError`` when bad."""
        if isinstance(article, Mapping):
            article = Article.from_mapping(article)
        elif not isinstance(article, Article):
            raise InputTypeError(
                f"an article must be an Article or a mapping, got {type(article).__name__}"
            )
        text = article.text
        if len(text) > self.config.max_text_chars:
            raise InputTooLargeError(
                f"article {article.id!r}: text has {len(text)} characters, over the "
                f"max_text_chars limit of {self.config.max_text_chars}"
            )
        if not text.strip():
            raise InputError(f"article {article.id!r} has empty text")
        prof = profile(text, self.config.rule)
        if not prof.tokens:
            raise InputError(f"article {article.id!r} has no words to compare")
        passages = passage_fingerprints(prof, self.config.candidates.passage_window)
        counted = figure_share(text) <= self.config.stories.events.max_figure_share
        return _Prepared(
            article, text_hash(text), _date_us(article), prof, pack_profile(prof), passages, counted
        )

    def ingest(self, article: Article | Mapping[str, Any]) -> Decision:
        """Decide and store one article (durable when this returns).  Raises on bad input."""
        result = self.ingest_many([article])[0]
        if isinstance(result, NearDupError):
            raise result
        return result

    def ingest_many(
        self, articles: Iterable[Article | Mapping[str, Any]]
    ) -> list[Decision | NearDupError]:
        """Decide and store articles in one transaction, in order.

        Per-article errors (``InputError`` and subclasses, ``ConflictError``) are returned in
        place of the decision and that article is not stored; the others are.  Store errors
        roll the whole batch back and raise (nothing of the batch is acknowledged).
        """
        prepared: list[_Prepared | NearDupError] = []
        for article in articles:
            try:
                prepared.append(self.prepare(article))
            except (InputError, ConflictError) as exc:
                prepared.append(exc)
        results: list[Decision | NearDupError] = []
        try:
            with self.store.write():
                self._catch_up()
                for item in prepared:
                    if isinstance(item, NearDupError):
                        results.append(item)
                        continue
                    try:
                        results.append(self._ingest_one(item))
                    except ConflictError as exc:
                        results.append(exc)
        except BaseException:
            # The store rolled back: the in-memory indexes may hold uncommitted work.
            self._load()
            raise
        self._since_checkpoint += len(prepared)
        if self.checkpoint_path is not None and self._since_checkpoint >= self.checkpoint_every:
            self.checkpoint()
        return results

    def _ingest_one(self, p: _Prepared) -> Decision:
        cfg = self.config
        art = p.article
        existing = self.store.get(art.id)
        if existing is not None:
            if existing.text_hash != p.text_hash:
                raise ConflictError(f"article {art.id!r} was already ingested with different text")
            return Decision.from_json(existing.decision, replayed=True)
        stories = self._state.stories
        vec = stories.vector(p.profile)
        fingerprint = int(vec.fingerprint[0])
        hits = stories.neighbours(vec, p.date_us)
        story = hits.keys[: cfg.candidates.story_candidates].tolist()
        judged = self._judge(p.profile, p.passages, fingerprint, p.date_us, story, exclude=-1)
        placed = place(
            self.store, p.profile, p.date_us, art.id, judged.ranked, self._profile_of, self._label
        )
        similar = tuple(m for m in judged.reported if m.verdict != "duplicate")
        duplicates = tuple(m for m in judged.reported if m.verdict == "duplicate")
        outcome = stories.decide(art.id, vec, p.date_us, art.source, p.counted, hits)
        decision = Decision(
            id=art.id,
            status=placed.status,
            duplicate_of=placed.duplicate_of,
            similar=similar,
            matches=duplicates + similar,
            event=outcome.event,
            took_over=placed.took_over,
            merged=placed.merged,
        )
        seq = self.store.insert_article(
            ArticleRow(
                seq=0,
                id=art.id,
                text_hash=p.text_hash,
                date_us=p.date_us,
                source=art.source,
                title=art.title,
                text=art.text if cfg.store_text else None,
                status=placed.status,
                original=placed.original,
                event=outcome.event,
                fingerprint=fingerprint,
                signature=p.profile.to_bytes(),
                decision=decision.to_json(),
            )
        )
        self._log(seq, "add", "1" if p.counted else "0")
        self._state.indexes.add(seq, p.passages)
        self._profiles.remember(
            StoredArticle(seq, art.id, p.date_us, fingerprint, p.row, cfg.rule.profile_id)
        )
        stories.record(
            self.store,
            self._log,
            seq,
            art.id,
            vec,
            p.profile,
            p.date_us,
            source=art.source,
            title=art.title,
            counted=p.counted,
            outcome=outcome,
        )
        return decision

    def _judge(
        self,
        prof: Profile,
        passages: npt.NDArray[np.uint64],
        fingerprint: int,
        date_us: int | None,
        story: Sequence[int],
        *,
        exclude: int,
    ) -> Judged:
        """Matches of an article with its candidates (passages, and its ``story``
        neighbours' seqs) dated within ``window_seconds``, best first
        (:func:`~neardup.detect.stream.judging.judge_rows`)."""
        seqs = self._state.indexes.query_seqs(passages, story, exclude, None)
        if not seqs:
            return Judged([], [])
        stored = self._stored(seqs)
        window = self.config.window_seconds
        if window is None:
            kept = [stored[q] for q in seqs if q in stored]
        else:
            window_us = round(window * _US)
            kept = [
                stored[q]
                for q in seqs
                if q in stored and in_time(stored[q].date_us, date_us, window_us, None, None)
            ]
        limit = self.config.similar_limit
        return judge_rows(prof, kept, fingerprint, self.config.rule, limit, limit)

    def _stored(self, seqs: Sequence[int]) -> dict[int, StoredArticle]:
        return self._profiles.get(self.store, seqs)

    def _profile_of(self, seq: int) -> Profile:
        return self._stored([seq])[seq].profile

    def _label(self, a: Profile, b: Profile) -> str:
        """The rule's label for two profiles."""
        rule = self.config.rule
        return decide(pair_features(a, b, rule.width), rule)[0]

    def _log(self, seq: int, op: str, arg: str) -> None:
        self._state.log_seq = self.store.append_log(op, seq, arg)

    # --- queries --------------------------------------------------------------------------
    def get(self, article_id: str) -> ArticleRow:
        """The stored article; ``NotFoundError`` when unknown."""
        row = self.store.get(article_id)
        if row is None:
            raise NotFoundError(f"article {article_id!r} is not in the store")
        return row

    def decision(self, article_id: str) -> Decision:
        """The decision made when ``article_id`` was ingested."""
        return Decision.from_json(self.get(article_id).decision)

    def original_of(self, article_id: str) -> str:
        """The current original of the article's duplicate group (itself for an original)."""
        row = self.get(article_id)
        return row.original or row.id

    def duplicates(self, article_id: str) -> list[str]:
        """The other articles of its duplicate group (its original first, then the members in
        ingest order); empty when it has none."""
        original = self.original_of(article_id)
        group = [original, *self.store.members_of(original)]
        return [i for i in group if i != article_id]

    def similar(
        self,
        article_id: str,
        limit: int = 10,
        *,
        since_us: int | None = None,
        until_us: int | None = None,
    ) -> list[Match]:
        """Other coverage of a stored article's story, most similar story first (the exact
        TF-IDF cosine of the two profiles' content terms -- the story vector before its
        projection -- with today's document frequencies), each with the rule's verdict:
        partial copies,
        independent reports of the same story (``similar``) and duplicates outside the
        article's own duplicate group (at most ``limit``).  The articles of its own group
        are :meth:`duplicates`, not repeated here.

        Candidates: the stored articles sharing a passage with it and its
        ``max(2 * limit, story_candidates)`` nearest stories dated within
        ``stories.similar_window_seconds`` either side of it (every date for an undated
        article), optionally only those dated in ``[since, until)``; the rule decides.
        ``NotFoundError`` for an unknown id, ``InputError`` for ``limit`` outside
        ``[0, 100000]``; ``limit`` 0 gives ``[]``."""
        if isinstance(limit, bool) or not isinstance(limit, int):
            raise InputTypeError(f"limit must be an integer, got {type(limit).__name__}")
        if not 0 <= limit <= 100_000:
            raise InputError(f"limit must be in [0, 100000], got {limit}")
        self._catch_up()
        row = self.get(article_id)
        if limit == 0:
            return []
        prof = self._stored([row.seq])[row.seq].profile
        passages = passage_fingerprints(prof, self.config.candidates.passage_window)
        k = max(2 * limit, self.config.candidates.story_candidates)
        stories = self._state.stories
        hits = stories.similar_hits(row.seq, prof, row.date_us, k)
        group = set(self.duplicates(article_id))
        candidates = self._state.indexes.query(passages, hits, row.seq, len(hits))
        stored = self._stored([c.seq for c in candidates])
        window = self.config.window_seconds
        window_us = None if window is None else round(window * _US)
        kept = [
            stored[c.seq]
            for c in candidates
            if c.seq in stored
            and stored[c.seq].id not in group
            and in_time(stored[c.seq].date_us, row.date_us, window_us, since_us, until_us)
        ]
        if not kept:
            return []
        rule = self.config.rule
        screened = screen(prof, [s.profile for s in kept], rule)
        related = [
            s
            for i, s in enumerate(kept)
            if screened.copy_possible[i] or screened.cosine[i] >= rule.similar_min_cosine
        ]
        closeness = stories.closeness(prof, [s.profile for s in related])
        ranked = sorted(range(len(related)), key=lambda i: (-closeness[i], related[i].id))
        out: list[Match] = []
        for i in ranked:  # exact features only for what is listed
            s = related[i]
            features = pair_features(prof, s.profile, rule.width)
            label, score, _ = decide(features, rule)
            if label != "unrelated":
                out.append(match_of(s, label, score, features, row.fingerprint))
                if len(out) == limit:
                    break
        return out

    def explain(self, a_id: str, b_id: str) -> Verdict:
        """The rule's verdict on two stored articles, with the clauses and the shared passages
        as spans of their texts (``InputError`` when a text was not stored)."""
        a, b = self.get(a_id), self.get(b_id)
        if a.text is None or b.text is None:
            raise InputError("explanations need the stored texts (store_text=True)")
        return judge(a.text, b.text, self.config.rule, explain=True)

    def events(self, since_us: int | None = None, until_us: int | None = None) -> list[EventRow]:
        """Events opened in ``[since, until)`` by article date, in opening order (events
        merged into others left out: their ids resolve to the survivor in :meth:`event`)."""
        self._catch_up()
        merged = self._state.stories.merged_ids()
        return [e for e in self.store.events(since_us, until_us) if e.id not in merged]

    def event(self, event_id: str) -> EventReport:
        """The report of one event (a merged event's id gives the survivor's report), its
        members judged for copies; ``NotFoundError`` when unknown."""
        self._catch_up()
        stories = self._state.stories
        try:
            resolved = stories.resolve(event_id)
        except NotFoundError:
            raise NotFoundError(f"event {event_id!r} is not in the store") from None
        return stories.report(resolved, self._verdict_of_seqs)

    def event_summary(self, event_id: str) -> dict[str, Any]:
        """An event's readable ``title``, its number of ``articles`` and of ``sources``
        (what an event list shows, without judging copies); ``NotFoundError`` if unknown."""
        self._catch_up()
        try:
            return self._state.stories.summary(event_id)
        except NotFoundError:
            raise NotFoundError(f"event {event_id!r} is not in the store") from None

    def _verdict_of_seqs(self, a: object, b: object) -> str:
        """The rule's label for two stored articles given by seq."""
        sa, sb = int(a), int(b)  # type: ignore[call-overload]
        stored = self._stored([sa, sb])
        rule = self.config.rule
        return decide(pair_features(stored[sa].profile, stored[sb].profile, rule.width), rule)[0]

    def __len__(self) -> int:
        return self.store.count()

    @property
    def indexed(self) -> int:
        """Number of articles in the in-memory candidate indexes."""
        return len(self._state.indexes)

    def close(self) -> None:
        """Checkpoint (when configured) and close the store."""
        try:
            if self.checkpoint_path is not None and self._since_checkpoint:
                self.checkpoint()
        finally:
            self.store.close()
