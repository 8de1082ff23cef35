"""Judging an article's candidates with the one rule, over packed stored profiles.

Every candidate is screened in one compiled pass over the packed profiles (shared shingles,
cosine); those whose bounds leave no copy verdict possible are decided by the cosine alone
(:mod:`neardup.rule.bounds`: the rule's own verdict), and only the ``limit`` best of those
similar ones get their exact features.  The others get their exact features in a second
compiled pass, and the rule's verdicts (:func:`neardup.rule.verdict.decide_many`:
:func:`neardup.rule.decide` on arrays).  Matches are ordered by verdict, score, story
distance, then id: deterministic.

Stored profiles are read through :class:`ProfileCache` (an LRU by seq over the store).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from neardup.config import check_int
from neardup.detect.stream.records import Match
from neardup.rule import VERDICTS, Profile, RuleConfig
from neardup.rule.bounds import screen_rows
from neardup.rule.features import features_rows, pack_profile_bytes, pack_rows, unpack_profile
from neardup.rule.verdict import decide_many
from neardup.store import Store

__all__ = [
    "PROFILE_CACHE_BYTES",
    "Judged",
    "ProfileCache",
    "StoredArticle",
    "in_time",
    "judge_rows",
    "match_of",
]

_RANK = {"duplicate": 0, "partial": 1, "similar": 2}
_RANK_OF = [_RANK.get(v, 3) for v in VERDICTS]  # by label index
_UNRELATED = VERDICTS.index("unrelated")
#: Bytes of stored articles' packed profiles kept in memory by default (LRU, by seq): about
#: 175,000 newswire articles of Reuters' length, or 37,000 scraped news pages.  A miss costs a
#: store read and a repacking (docs/stream.md, "Memory").
PROFILE_CACHE_BYTES = 512 << 20
# What an entry costs beside its packed row: the object, its dictionary slot, the array.
_ENTRY_BYTES = 256


class StoredArticle:
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


class ProfileCache:
    """Stored articles' packed profiles by seq: the ones used last kept in memory, up to
    ``max_bytes`` of packed rows (each counted with a small fixed overhead), the others read
    from the store (one read per call).  Cleared when a batch rolls back (its seqs may go to
    other articles)."""

    def __init__(self, scheme: str, max_bytes: int = PROFILE_CACHE_BYTES) -> None:
        check_int("profile_cache_bytes", max_bytes, low=0)
        self.scheme = scheme
        self.max_bytes = max_bytes
        self.bytes = 0
        self._cache: OrderedDict[int, StoredArticle] = OrderedDict()

    def __len__(self) -> int:
        return len(self._cache)

    def clear(self) -> None:
        self._cache.clear()
        self.bytes = 0

    def get(self, store: Store, seqs: Sequence[int]) -> dict[int, StoredArticle]:
        """What judging reads of stored articles, by seq: from memory, else one store read
        (seqs not in the store are left out)."""
        cache = self._cache
        out: dict[int, StoredArticle] = {}
        missing = []
        for seq in seqs:
            found = cache.get(seq)
            if found is None:
                missing.append(seq)
            else:
                cache.move_to_end(seq)
                out[seq] = found
        if missing:
            scheme = self.scheme
            for row in store.get_many_by_seq(missing):
                packed = pack_profile_bytes(row.signature, scheme)
                out[row.seq] = self.remember(
                    StoredArticle(row.seq, row.id, row.date_us, row.fingerprint, packed, scheme)
                )
        return out

    def remember(self, stored: StoredArticle) -> StoredArticle:
        """Keep ``stored`` (the least recently used ones go while over ``max_bytes``)."""
        cache = self._cache
        old = cache.pop(stored.seq, None)
        if old is not None:
            self.bytes -= old.row.nbytes + _ENTRY_BYTES
        cache[stored.seq] = stored
        self.bytes += stored.row.nbytes + _ENTRY_BYTES
        while self.bytes > self.max_bytes and cache:
            _, gone = cache.popitem(last=False)
            self.bytes -= gone.row.nbytes + _ENTRY_BYTES
        return stored


class Judged(NamedTuple):
    """The rule's matches of one article with its candidates (unrelated ones dropped), best
    first: ``ranked``, every one as ``(id, verdict)``; ``reported``, as :class:`Match`, the
    first ``report + 1`` duplicates and the first ``report`` others, in the same order (what
    a decision lists; the rest are read by id and verdict only)."""

    ranked: list[tuple[str, str]]
    reported: list[Match]


_NOTHING = Judged([], [])


def judge_rows(
    prof: Profile,
    kept: Sequence[StoredArticle],
    fingerprint: int,
    rule: RuleConfig,
    limit: int,
    report: int,
) -> Judged:
    """The rule's matches of ``prof`` with the ``kept`` candidates (module docstring:
    screened, then the copy-possible ones and the ``limit`` best similar ones judged
    exactly), best first, ``report`` of each kind as :class:`Match` (:class:`Judged`)."""
    if not kept:
        return _NOTHING
    rows, offsets = pack_rows([s.row for s in kept])
    screened = screen_rows(prof, rows, offsets, rule)
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
                distance(kept[i], fingerprint),
                kept[i].id,
            ),
        )
        chosen += ranked[:limit]
    else:
        chosen += similar_only.tolist()
    if not chosen:
        return _NOTHING
    chosen.sort()
    return _matches(
        prof, [kept[i] for i in chosen], rows, offsets, chosen, fingerprint, rule, report
    )


def _matches(
    prof: Profile,
    chosen: Sequence[StoredArticle],
    rows: npt.NDArray[np.uint64],
    offsets: npt.NDArray[np.int64],
    select: Sequence[int],
    fingerprint: int,
    rule: RuleConfig,
    report: int,
) -> Judged:
    """The rule's matches of ``prof`` with the ``select``-ed packed rows (``chosen``),
    best first by verdict, score, distance, then id (:class:`Judged`).  A :class:`Match`
    is made only for what is reported: a reprint of a story with many stored copies is
    judged against all of them, but a decision lists a few."""
    f = features_rows(prof, rows, offsets, np.asarray(select, dtype=np.int64), rule.width)
    labels, scores = decide_many(f.coverage_a, f.coverage_b, f.passage, f.cosine, rule)
    related = np.flatnonzero(labels != _UNRELATED).tolist()
    if not related:
        return _NOTHING
    label_of = labels.tolist()
    score_of = scores.tolist()
    keys = sorted(
        (
            _RANK_OF[label_of[i]],
            -round(score_of[i], 6),
            distance(chosen[i], fingerprint),
            chosen[i].id,
            i,
        )
        for i in related
    )
    ranked = [(key[3], VERDICTS[label_of[key[4]]]) for key in keys]
    reported: list[Match] = []
    duplicates = others = 0
    for rank, neg_score, dist, article_id, i in keys:
        if rank == 0:
            duplicates += 1
            if duplicates > report + 1:
                continue
        else:
            others += 1
            if others > report:
                break
        reported.append(
            Match(
                id=article_id,
                verdict=VERDICTS[label_of[i]],
                score=-neg_score,
                coverage=round(float(f.coverage_a[i]), 6),
                coverage_other=round(float(f.coverage_b[i]), 6),
                passage=int(f.passage[i]),
                cosine=round(float(f.cosine[i]), 6),
                distance=dist,
            )
        )
    return Judged(ranked, reported)


def in_time(
    stored: int | None,
    new: int | None,
    window_us: int | None,
    since_us: int | None,
    until_us: int | None,
) -> bool:
    """Whether a stored article dated ``stored`` is within ``window_us`` of ``new`` and in
    ``[since, until)`` (an undated one only when neither bound is set)."""
    if stored is None:
        return since_us is None and until_us is None
    if window_us is not None and new is not None and abs(stored - new) > window_us:
        return False
    if since_us is not None and stored < since_us:
        return False
    return until_us is None or stored < until_us


def distance(s: StoredArticle, fingerprint: int) -> int:
    """Hamming distance of the first 64 bits of the two story SimHashes (the stored
    ``fingerprint``)."""
    return (s.fingerprint ^ fingerprint).bit_count()


def match_of(s: StoredArticle, label: str, score: float, features: Any, fingerprint: int) -> Match:
    """A :class:`Match` from one pair's exact features and the rule's label and score."""
    return Match(
        id=s.id,
        verdict=label,
        score=round(score, 6),
        coverage=round(features.coverage_a, 6),
        coverage_other=round(features.coverage_b, 6),
        passage=features.passage,
        cosine=round(features.cosine, 6),
        distance=distance(s, fingerprint),
    )
