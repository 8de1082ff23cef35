"""The news stream: ingest-time dedup, partial copies, similar news and breaking events.

For every ingested article (seed 002's candidates -> verification; seed 003's stream):

1. **Profile** the text once (:func:`neardup.rule.profile`) and fingerprint it: the winnowed
   hashes of its prose shingles (:func:`~neardup.detect.stream.candidates.
   passage_fingerprints`) and its story vector, made from the profile's content terms
   (:mod:`neardup.detect.stream.stories`; seed 003).
2. **Candidates**: stored articles sharing a passage fingerprint, and the nearest stories
   of the last ``stories.window_seconds`` (:mod:`neardup.detect.stream.candidates`),
   optionally only those dated within ``window_seconds``.
3. **Judge** each candidate with the one rule (:func:`neardup.rule.decide`): ``duplicate``,
   ``partial``, ``similar`` or ``unrelated`` (dropped).
4. **Decide**: the status is the strongest verdict (``duplicate`` > ``partial`` >
   ``similar`` > ``new``).

Duplicate groups.  A group is its *original* (its earliest article by ``date``, undated
after dated, ties by id) and the articles that duplicate it.  Every stored article,
originals and members alike, is a candidate, so a new article finds a group through any of
its members; it joins a group when it duplicates the group's original itself, so a group
never grows along a chain of write-thrus each a duplicate of the last (on the read-labelled
real news, "same group" then agrees with the readers' duplicates far better than when any
member would do: docs/evaluation.md):

* it joins the earliest such group (``Decision.duplicate_of``); the other groups whose
  originals it duplicates and that duplicate that group's original are *merged* into it
  (``Decision.merged``: groups the candidate search had split, e.g. by the time window);
* when the new article is earlier than that original, it *takes over*: its decision is
  ``new`` with ``took_over`` listing every member, which now point at it;
* an article that duplicates members of groups but none of their originals is a
  ``duplicate`` (``duplicate_of``: the member it duplicates best) at the head of a group of
  its own.

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
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from neardup.config import check_int
from neardup.detect.story import EventReport, figure_share
from neardup.detect.stream.candidates import passage_fingerprints
from neardup.detect.stream.config import StreamConfig
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
from neardup.rule import VERDICTS, Profile, Verdict, decide, judge, pair_features, profile
from neardup.rule.bounds import screen, screen_rows
from neardup.rule.features import features_rows, pack_profile, pack_rows, unpack_profile
from neardup.rule.verdict import decide_many
from neardup.store import ArticleRow, EventRow, Store

__all__ = ["NewsStream", "text_hash"]

_US = 1_000_000
_RANK = {"duplicate": 0, "partial": 1, "similar": 2}
# Stored articles' profiles kept in memory (LRU, by seq): on the replicated Reuters stream a
# copy meets its original about 20,000 articles later; a miss costs a store read.
_CACHE = 65_536


class _Stored:
    """What judging reads of a stored article (its group is read from the store): its
    profile packed in one row (:func:`neardup.rule.features.pack_profile`), unpacked as
    views when a pair is judged alone."""

    __slots__ = ("_profile", "_scheme", "date_us", "fingerprint", "id", "row", "seq")

    def __init__(
        self,
        seq: int,
        article_id: str,
        date_us: int | None,
        fingerprint: int,
        row: npt.NDArray[np.uint64],
        scheme: str,
    ) -> None:
        self.seq = seq
        self.id = article_id
        self.date_us = date_us
        self.fingerprint = fingerprint
        self.row = row
        self._scheme = scheme
        self._profile: Profile | None = None

    @property
    def profile(self) -> Profile:
        """The stored profile (views of :attr:`row`)."""
        if self._profile is None:
            self._profile = unpack_profile(self.row, self._scheme)
        return self._profile


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


def _order_key(date_us: int | None, article_id: str) -> tuple[bool, int, str]:
    # Earliest first; undated after dated; ties by id.
    return (date_us is None, date_us or 0, article_id)


class NewsStream:
    """Ingest-time dedup, partial copies, similar news and breaking events over a store.

    Not thread-safe by itself (the API object serialises calls).  ``checkpoint_path``: where
    the in-memory indexes are checkpointed (``None``: never; rebuilt from the store's log at
    start); ``checkpoint_every``: articles between automatic checkpoints.
    """

    def __init__(
        self,
        store: Store,
        config: StreamConfig | None = None,
        *,
        checkpoint_path: str | os.PathLike[str] | None = None,
        checkpoint_every: int = 200_000,
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
        self._cache: OrderedDict[int, _Stored] = OrderedDict()
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
        self._cache.clear()  # a rolled-back batch may give its seqs to other articles
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
        story = hits.keys[: self.config.candidates.story_candidates].tolist()
        matches = self._judge(p.profile, p.passages, fingerprint, p.date_us, story, exclude=-1)
        dup_ids = [m.id for m in matches if m.verdict == "duplicate"]
        groups = self._joinable(p.profile, matches, dup_ids)
        status, original, duplicate_of = "new", None, None
        took_over: tuple[str, ...] = ()
        merged: list[ArticleRow] = []
        if groups:
            earliest = groups[0]
            merged = [g for g in groups[1:] if self._verdict(earliest, g) == "duplicate"]
            if _order_key(p.date_us, art.id) < _order_key(earliest.date_us, earliest.id):
                took_over = self._regroup([earliest, *merged], art.id)
            else:
                status, original = "duplicate", earliest.id
                duplicate_of = original
        elif dup_ids:
            # Duplicates of group members but of no group's original (a later write-thru of
            # a write-thru): a duplicate, at the head of a group of its own.
            status, duplicate_of = "duplicate", dup_ids[0]
        elif matches:
            status = matches[0].verdict
        similar = tuple(m for m in matches if m.verdict != "duplicate")[: cfg.similar_limit]
        duplicates = tuple(m for m in matches if m.verdict == "duplicate")
        outcome = stories.decide(art.id, vec, p.date_us, art.source, p.counted, hits)
        decision = Decision(
            id=art.id,
            status=status,
            duplicate_of=duplicate_of,
            similar=similar,
            matches=duplicates[: cfg.similar_limit + 1] + similar,
            event=outcome.event,
            took_over=took_over,
            merged=tuple(g.id for g in merged),
        )
        if merged and original is not None:
            self._regroup(merged, original)
        seq = self.store.insert_article(
            ArticleRow(
                seq=0,
                id=art.id,
                text_hash=p.text_hash,
                date_us=p.date_us,
                source=art.source,
                title=art.title,
                text=art.text if cfg.store_text else None,
                status=status,
                original=original,
                event=outcome.event,
                fingerprint=fingerprint,
                signature=p.profile.to_bytes(),
                decision=decision.to_json(),
            )
        )
        self._log(seq, "add", "1" if p.counted else "0")
        self._state.indexes.add(seq, p.passages)
        self._remember(_Stored(seq, art.id, p.date_us, fingerprint, p.row, cfg.rule.profile_id))
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

    def _joinable(
        self, prof: Profile, matches: Sequence[Match], dup_ids: Sequence[str]
    ) -> list[ArticleRow]:
        """The originals of the groups of the duplicate matches that the new article
        duplicates itself, earliest first (a group is its original and the articles that
        duplicate it)."""
        if not dup_ids:
            return []
        rows = self.store.get_many(dup_ids)
        ids = sorted({r.original or r.id for r in rows})
        have = {r.id: r for r in rows if r.original is None}
        missing = [i for i in ids if i not in have]
        for r in self.store.get_many(missing) if missing else []:
            have[r.id] = r
        verdicts = {m.id: m.verdict for m in matches}
        joinable = [
            have[i]
            for i in ids
            if i in have and (verdicts.get(i) or self._verdict_of(prof, have[i])) == "duplicate"
        ]
        return sorted(joinable, key=lambda r: _order_key(r.date_us, r.id))

    def _verdict_of(self, prof: Profile, row: ArticleRow) -> str:
        """The rule's label for a profile against a stored article."""
        stored = self._stored([row.seq])[row.seq].profile
        rule = self.config.rule
        return decide(pair_features(prof, stored, rule.width), rule)[0]

    def _verdict(self, a: ArticleRow, b: ArticleRow) -> str:
        """The rule's label for two stored articles."""
        return self._verdict_of(self._stored([a.seq])[a.seq].profile, b)

    def _regroup(self, originals: Sequence[ArticleRow], new_original: str) -> tuple[str, ...]:
        """Point every member of the groups of ``originals`` (and the originals) at
        ``new_original``; the ids moved, in group order."""
        moved: list[str] = []
        for g in originals:
            moved.extend((g.id, *self.store.members_of(g.id)))
        if moved:
            self.store.set_original(moved, new_original)
        return tuple(moved)

    def _log(self, seq: int, op: str, arg: str) -> None:
        self._state.log_seq = self.store.append_log(op, seq, arg)

    # --- judging ------------------------------------------------------------------------
    def _judge(
        self,
        prof: Profile,
        passages: npt.NDArray[np.uint64],
        fingerprint: int,
        date_us: int | None,
        story: Sequence[int],
        *,
        exclude: int,
        since_us: int | None = None,
        until_us: int | None = None,
        limit: int | None = None,
        story_limit: int | None = None,
    ) -> list[Match]:
        """Matches of an article with its candidates (passages, and the first
        ``story_limit`` of its ``story`` neighbours' seqs), best first.

        Every candidate is screened in one compiled pass over the packed profiles (shared
        shingles, cosine); those whose bounds leave no copy verdict possible are decided by
        the cosine alone (:mod:`neardup.rule.bounds`: the rule's own verdict), and only the
        ``limit`` best of those similar ones get their exact features.  The others get their
        exact features in a second compiled pass, and the rule's verdicts
        (:func:`neardup.rule.verdict.decide_many`: :func:`neardup.rule.decide` on arrays)."""
        seqs = self._state.indexes.query_seqs(passages, story, exclude, story_limit)
        if not seqs:
            return []
        stored = self._stored(seqs)
        window = self.config.window_seconds
        window_us = None if window is None else round(window * _US)
        if window_us is None and since_us is None and until_us is None:
            kept = [stored[q] for q in seqs if q in stored]
        else:
            kept = [
                stored[q]
                for q in seqs
                if q in stored
                and _in_time(stored[q].date_us, date_us, window_us, since_us, until_us)
            ]
        if not kept:
            return []
        rule = self.config.rule
        rows, offsets = pack_rows([s.row for s in kept])
        screened = screen_rows(prof, rows, offsets, rule)
        limit = self.config.similar_limit if limit is None else limit
        possible = screened.copy_possible
        similar_only = np.flatnonzero(~possible & (screened.cosine >= rule.similar_min_cosine))
        chosen = np.flatnonzero(possible).tolist()
        if similar_only.shape[0] > limit:
            # The order the matches are sorted in below: score, then distance, then id.
            cosine = screened.cosine
            ranked = sorted(
                similar_only.tolist(),
                key=lambda i: (
                    -round(float(cosine[i]), 6),
                    _distance(kept[i], fingerprint),
                    kept[i].id,
                ),
            )
            chosen += ranked[:limit]
        else:
            chosen += similar_only.tolist()
        if not chosen:
            return []
        chosen.sort()
        return self._matches(prof, [kept[i] for i in chosen], rows, offsets, chosen, fingerprint)

    def _matches(
        self,
        prof: Profile,
        chosen: Sequence[_Stored],
        rows: npt.NDArray[np.uint64],
        offsets: npt.NDArray[np.int64],
        select: Sequence[int],
        fingerprint: int,
    ) -> list[Match]:
        """The rule's matches of ``prof`` with the ``select``-ed packed rows (``chosen``),
        best first (unrelated ones dropped)."""
        rule = self.config.rule
        f = features_rows(prof, rows, offsets, np.asarray(select, dtype=np.int64), rule.width)
        labels, scores = decide_many(f.coverage_a, f.coverage_b, f.passage, f.cosine, rule)
        unrelated = VERDICTS.index("unrelated")
        matches: list[Match] = []
        for s, label, score, cov_a, cov_b, passage, cosine in zip(
            chosen,
            labels.tolist(),
            scores.tolist(),
            f.coverage_a.tolist(),
            f.coverage_b.tolist(),
            f.passage.tolist(),
            f.cosine.tolist(),
            strict=True,
        ):
            if label == unrelated:
                continue
            matches.append(
                Match(
                    id=s.id,
                    verdict=VERDICTS[label],
                    score=round(score, 6),
                    coverage=round(cov_a, 6),
                    coverage_other=round(cov_b, 6),
                    passage=passage,
                    cosine=round(cosine, 6),
                    distance=_distance(s, fingerprint),
                )
            )
        matches.sort(key=lambda m: (_RANK[m.verdict], -m.score, m.distance, m.id))
        return matches

    def _stored(self, seqs: Sequence[int]) -> dict[int, _Stored]:
        """What judging reads of stored articles, by seq: from memory, else one store read."""
        cache = self._cache
        out: dict[int, _Stored] = {}
        missing = []
        for seq in seqs:
            found = cache.get(seq)
            if found is None:
                missing.append(seq)
            else:
                cache.move_to_end(seq)
                out[seq] = found
        if missing:
            scheme = self.config.rule.profile_id
            for row in self.store.get_many_by_seq(missing):
                prof = Profile.from_bytes(row.signature, scheme_id=scheme)
                out[row.seq] = self._remember(
                    _Stored(
                        row.seq, row.id, row.date_us, row.fingerprint, pack_profile(prof), scheme
                    )
                )
        return out

    def _remember(self, stored: _Stored) -> _Stored:
        self._cache[stored.seq] = stored
        if len(self._cache) > _CACHE:
            self._cache.popitem(last=False)
        return stored

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
            and _in_time(stored[c.seq].date_us, row.date_us, window_us, since_us, until_us)
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
                out.append(_match(s, label, score, features, row.fingerprint))
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


def _in_time(
    stored: int | None,
    new: int | None,
    window_us: int | None,
    since_us: int | None,
    until_us: int | None,
) -> bool:
    if stored is None:
        return since_us is None and until_us is None
    if window_us is not None and new is not None and abs(stored - new) > window_us:
        return False
    if since_us is not None and stored < since_us:
        return False
    return until_us is None or stored < until_us


def _distance(s: _Stored, fingerprint: int) -> int:
    """Hamming distance of the first 64 bits of the two story SimHashes (the stored
    ``fingerprint``)."""
    return (s.fingerprint ^ fingerprint).bit_count()


def _match(s: _Stored, label: str, score: float, features: Any, fingerprint: int) -> Match:
    distance = _distance(s, fingerprint)
    return Match(
        id=s.id,
        verdict=label,
        score=round(score, 6),
        coverage=round(features.coverage_a, 6),
        coverage_other=round(features.coverage_b, 6),
        passage=features.passage,
        cosine=round(features.cosine, 6),
        distance=distance,
    )
