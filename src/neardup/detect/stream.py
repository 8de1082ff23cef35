"""The news stream: ingest-time dedup, similar news and breaking events over a store.

Pipeline for every ingested article (seed 002's candidate -> verify; seed 003's thresholds):

1. **Sign**: a 64-bit SimHash (:func:`neardup.sketch.simhash.sign_simhash`), the exact set
   of word 4-shingles (:func:`neardup.sketch.shingleset.sign_shingles`) and, with LSH
   candidates, a MinHash of that set (:func:`neardup.sketch.minhash.minhash_values`).
2. **Candidates**: every stored canonical article whose SimHash is within
   ``similar_max_distance`` bits (exact block-split :class:`~neardup.index.hamming.HammingIndex`;
   derived unless given: 7 when SimHash is the only candidate source, seed 003's duplicate
   distance 3 next to LSH, which finds the similar stories: on the perturbation benchmark
   and on real Reuters the wider reach changes no decision of the word rule, and it costs
   ingest time, docs/stream.md), optionally restricted to articles dated within
   ``window_seconds`` of the new one; with ``candidates="simhash+lsh"`` (the default
   whenever candidates are verified) also the MinHash LSH candidates
   (:class:`~neardup.index.lsh.LSHIndex`, ``lsh_num_perm`` = 32 permutations of the same
   shingle set, bands tuned for ``lsh_threshold``, at least ``lsh_min_score`` of the values
   equal).  Both LSH settings are derived from ``verify`` unless given: ``lsh_threshold``
   0.2 for the shingle rule, 0.1 for ``overlap``, whose misspelt copies have shingle
   Jaccard near 0.1; ``lsh_min_score`` 2 of 32 for the shingle rule, 3 of 32 for
   ``overlap`` (duplicate F1 0.9861 against 0.9877 with 2 of 32, for ingest throughput).
   On a tuning benchmark SimHash within 7 bits reaches about 70 % of the duplicate pairs,
   SimHash + LSH at 0.2 98 %, at 0.1 99 % (``benchmarks/bench_stream_overlap.py``,
   docs/stream.md).
3. **Verify** (``verify="overlap"``, the default: duplicate F1 0.9861 against 0.922 for
   the shingle rule on the perturbation benchmark and fewer different-story duplicates on
   real Reuters, at 2,122 articles per CPU-second over the replicated 1 M stream;
   docs/stream.md): the shingle numbers of ``verify="shingles"``
   below, then, when both texts are stored and the shingle sets overlap by at least
   ``overlap_min_shingle_overlap``, the duplicate test is the directed word overlap of
   :mod:`neardup.similarity.overlap` (robust to spelling noise, site packaging peeled):
   ``coverage >= overlap_min_coverage`` of the stored article's words kept, ``added <=
   overlap_max_added`` of the new one's words from elsewhere, word-order check
   ``sequence_containment >= overlap_min_sequence``, ``overlap_min_matched`` words
   matched or ``jaccard >= duplicate_min_jaccard`` (short notices), and the names and
   figures not *replaced* (:func:`~neardup.similarity.overlap.key_overlap`; replaced =
   more than ``overlap_names_added`` of the new article's names absent from the stored one
   while less than ``overlap_names_kept`` of the stored one's are kept; figures and
   dates may change within ``overlap_figures_window_seconds`` of the stored article's
   date, not at all beyond it):
   seed 000's "same article after some editing", with the editorial label's thresholds,
   minus templated items of another issuer or day (docs/stream.md, "Templated items").
   Similar and unrelated as for ``shingles``; without stored text the shingle rule
   decides.
   ``verify="shingles"`` (the cheaper rule, the default before issue 7): exact Jaccard and
   *directed* containment of the shingle sets: ``containment`` = the share of the new
   article's shingles found in the stored one, ``coverage`` = the share of the stored
   article's shingles found in the new one.  A
   candidate is a *duplicate* when ``containment >= duplicate_min_containment`` and
   ``coverage >= duplicate_min_coverage`` (the new article adds little to the stored one and is
   more than an excerpt of it: seed 000's "same article after some editing") and they share
   at least ``duplicate_min_shared`` shingles, or when
   ``jaccard >= duplicate_min_jaccard``; otherwise *similar* (the same story, seed 003) when
   ``max(containment, coverage) >= similar_min_overlap``; otherwise unrelated and dropped.
   With ``verify="lcs"`` a duplicate must also share a longest common substring of at least
   ``lcs_min_ratio`` of the shorter text (:func:`neardup.similarity.longest_common_substring`).
   With ``verify="none"`` (SimHash candidates only) the seed's raw rule applies: distance <=
   ``duplicate_max_distance`` is a duplicate, larger distances up to ``similar_max_distance``
   are similar.  The thresholds were chosen on half of the benchmark and checked on the other
   half (``docs/stream.md``).
4. **Decide**: ``duplicate`` (pointing at the original of the best duplicate match's group),
   ``similar`` (some match, none a duplicate), or ``new``.  A decision's ``similar`` list is
   every match but the duplicate target, best first (other near-duplicate groups, then
   similar stories by score), at most ``similar_limit``.
5. **Events**: :class:`~neardup.detect.events.EventDetector`.

Originals: the original of a duplicate group is its earliest article by ``date`` (undated
after dated), ties broken by id.  When an article arrives that duplicates a stored group but
is *earlier* than its original, it takes over: its decision is ``new`` with ``took_over``
listing the previous original and its duplicates, which from then on point at it in the store
(the store's ``original`` column is always current; the decision records what was decided at
ingest).  Duplicates are recorded (with their text and signatures) but, by default, not
indexed as canonical stories (``index_duplicates=False``), so later articles match the group
through its original.

Idempotence: re-ingesting an id with the same text returns the stored decision unchanged
(``replayed=True``) and changes nothing; different text under a known id raises
:class:`~neardup.errors.ConflictError`.

Guarantees: decisions are deterministic for a given ingest order (the index is exact; every
tie is broken by id).  Durability and multi-process consistency come from the store: each
batch is decided inside :meth:`Store.write` after replaying the store's log, so processes
sharing a store decide as one would.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
import uuid
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import orjson

from neardup.config import Config, check_choice, check_int, check_range
from neardup.detect.events import EventConfig, EventDetector, EventReport, build_report
from neardup.errors import (
    ConfigError,
    ConflictError,
    InputError,
    InputTooLargeError,
    InputTypeError,
    NearDupError,
    NotFoundError,
    SchemeMismatchError,
    StateFileError,
    StoreError,
)
from neardup.index.facts import (
    FIGURES,
    KEEP,
    CandidateFacts,
    ScreenRule,
    candidate_union,
    figure_hashes,
)
from neardup.index.hamming import HammingIndex
from neardup.index.lsh import LSHIndex
from neardup.records import Article, text_hash
from neardup.similarity import longest_common_substring
from neardup.similarity._overlap_kernels import sorted_intersection_size
from neardup.similarity.overlap import (
    DigitRuns,
    KeyOverlap,
    OverlapConfig,
    OverlapText,
    digit_runs,
    figures_replaced,
    key_overlap,
    never_peeled_digits,
    overlap_prepared,
    prepare,
    sequence_containment,
)
from neardup.similarity.wordarrays import (
    WordArrays,
    word_arrays,
    word_test_arrays,
    word_test_params,
)
from neardup.sketch.base import Signature
from neardup.sketch.minhash import MinHashConfig, minhash_values
from neardup.sketch.shingleset import ShingleSetConfig, sign_shingles
from neardup.sketch.simhash import SimHashConfig, sign_simhash
from neardup.store import ArticleRow, EventRow, LogEntry, Store
from neardup.store.checkpoint import LogMark, check_mark, read_state, write_state

_CHECKPOINT_KIND = "stream-checkpoint"  # what a stream's state file holds (store.checkpoint)

__all__ = [
    "STATUSES",
    "Decision",
    "Match",
    "NewsStream",
    "StreamConfig",
]

STATUSES = ("new", "duplicate", "similar")
_VERIFY = ("none", "shingles", "lcs", "overlap")
_CANDIDATES = ("simhash", "simhash+lsh")
_US = 1_000_000
_CHECKPOINT_VERSION = 1
# Stored articles' prepared words (and their delete-key set, once built) kept for
# verify="overlap"; texts never change under a seq, so the cache is always valid.  Bounded
# to 4,096 articles (words interned, shared between texts: about 10 KB an article, some
# 40 MB; delete-key sets are kept for 1,024 texts at most, see similarity.overlap).  On the
# replicated Reuters stream a copy meets its original about 20,000 articles later; 4,096
# entries cut the misses of 1,024 by 58 % (peak RSS of the 50,000-article run +40 MB).  The
# same bound holds for the stored ASCII texts' word arrays of the compiled word test (about
# 23 KB an article on Reuters with their delete keys, some 95 MB; only the texts of
# non-ASCII articles are still prepared).
_OVERLAP_CACHE = 4096
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_NO_SEQS = np.zeros(0, dtype=np.int64)  # no LSH candidates
# SimHash candidates' distance when SimHash is the only candidate source (seed 003's
# "similar" reach on Reuters).
_SIMHASH_ONLY_MAX_DISTANCE = 7
# Share of equal MinHash values an LSH-only candidate needs: 2 of 32, 3 of 32 for the word
# rule's one-row bands (docs/stream.md, "Throughput").
_LSH_MIN_SCORE = 0.0625
_OVERLAP_LSH_MIN_SCORE = 0.09375


@dataclasses.dataclass(frozen=True)
class StreamConfig(Config):
    """Parameters of the stream's decisions (defaults measured on Reuters, docs/stream.md).

    * ``candidates``: ``"simhash"`` (SimHash within ``similar_max_distance``) or
      ``"simhash+lsh"`` (plus MinHash LSH, ``lsh_num_perm`` permutations, bands tuned for
      ``lsh_threshold``); ``"auto"`` (default) resolves to ``"simhash+lsh"`` unless
      ``verify="none"``, which keeps seed 003's SimHash-only mode.  ``similar_max_distance``
      is derived unless given: 7 for ``"simhash"``, ``duplicate_max_distance`` (3) next to
      LSH (:attr:`candidate_max_distance`).
    * Word-overlap rule (``verify="overlap"``, the default): as below, but once the shingle
      sets overlap by ``overlap_min_shingle_overlap`` and both texts are stored, duplicate
      when the word ``coverage >= overlap_min_coverage``, ``added <= overlap_max_added``,
      the corrected word ``overlap_sequence_width``-gram containment >=
      ``overlap_min_sequence`` and ``overlap_min_matched`` words match (or ``jaccard >=
      duplicate_min_jaccard``) and the key words are not replaced (names: more than
      ``overlap_names_added`` of the new article's names absent from the stored one while
      less than ``overlap_names_kept`` of the stored one's are kept; figures and dates:
      free within ``overlap_figures_window_seconds`` (18 h; a same-day correction or
      update), no other figure beyond it (the next report of a template), and when either
      date is unknown or the window is ``None`` more than ``overlap_figures_added`` new
      while less than ``overlap_figures_kept`` kept; 1.0 added turns a test off); ``overlap``
      configures the measure
      (:class:`~neardup.similarity.overlap.OverlapConfig`).  At ingest, candidates are
      verified best first (Jaccard, then distance, then id: the order in which the decision
      picks its duplicate); once the duplicate is found, the candidates ranked after it
      cannot change the decision and are listed as ``similar`` when the shingle rule relates
      them, without the word test (``overlap_test_after_duplicate=True`` tests them too,
      for their own verdicts; the decision's status and ``duplicate_of`` are the same).
      LSH-only candidates need ``lsh_min_score`` of their MinHash values equal.
    * Verified rule (``verify="shingles"`` or ``"lcs"``): duplicate when ``containment``
      (share of the new article in the stored one) >= ``duplicate_min_containment`` and
      ``coverage`` (share of the stored article in the new one) >= ``duplicate_min_coverage``
      and at least ``duplicate_min_shared`` shingles are shared, or ``jaccard >=
      duplicate_min_jaccard``; similar when ``max(containment, coverage) >=
      similar_min_overlap``; else unrelated.
    * Raw rule (``verify="none"``): distance <= ``duplicate_max_distance`` duplicate, up to
      ``similar_max_distance`` similar.

    Only ``simhash`` and ``shingles`` are fixed for the life of a store (its signatures are
    made with them); the thresholds and candidate options may change between runs.
    """

    SCHEME = "stream"

    duplicate_max_distance: int = 3
    similar_max_distance: int | None = None
    candidates: str = "auto"
    lsh_num_perm: int = 32
    lsh_threshold: float | None = None
    lsh_min_score: float | None = None
    verify: str = "overlap"
    duplicate_min_jaccard: float = 0.5
    duplicate_min_containment: float = 0.5
    duplicate_min_coverage: float = 0.5
    duplicate_min_shared: int = 20
    similar_min_overlap: float = 0.5
    lcs_min_ratio: float = 0.5
    overlap_min_coverage: float = 0.5
    overlap_max_added: float = 0.2
    overlap_min_matched: int = 20
    overlap_min_shingle_overlap: float = 0.1
    overlap_accept_containment: float | None = 0.9
    overlap_min_sequence: float = 0.5
    overlap_sequence_width: int = 3
    overlap_names_added: float = 0.1
    overlap_names_kept: float = 0.7
    overlap_figures_added: float = 0.3
    overlap_figures_kept: float = 0.7
    overlap_figures_window_seconds: float | None = 64_800.0
    overlap_test_after_duplicate: bool = False
    overlap: OverlapConfig = dataclasses.field(default_factory=OverlapConfig)
    similar_limit: int = 10
    window_seconds: float | None = None
    index_duplicates: bool = False
    store_text: bool = True
    max_text_chars: int = 1_000_000
    simhash: SimHashConfig = dataclasses.field(default_factory=SimHashConfig)
    shingles: ShingleSetConfig = dataclasses.field(default_factory=ShingleSetConfig)
    events: EventConfig = dataclasses.field(default_factory=EventConfig)

    def __post_init__(self) -> None:
        check_int("duplicate_max_distance", self.duplicate_max_distance, low=0, high=63)
        check_choice("verify", self.verify, _VERIFY)
        check_choice("candidates", self.candidates, ("auto", *_CANDIDATES))
        if self.candidates == "auto":
            # MinHash LSH candidates need verification; seed 003's raw rule uses SimHash only.
            resolved = "simhash" if self.verify == "none" else "simhash+lsh"
            object.__setattr__(self, "candidates", resolved)
        if self.similar_max_distance is None:
            # Derived unless given: with LSH candidates the similar stories come from LSH,
            # and SimHash only adds near-exact copies (seed 003's duplicate distance); alone,
            # SimHash must reach the similar ones too (docs/stream.md, "Throughput").
            derived = self.duplicate_max_distance
            if self.candidates == "simhash":
                derived = max(_SIMHASH_ONLY_MAX_DISTANCE, derived)
            object.__setattr__(self, "similar_max_distance", derived)
        check_int(
            "similar_max_distance",
            self.candidate_max_distance,
            low=self.duplicate_max_distance,
            high=63,
        )
        check_int("lsh_num_perm", self.lsh_num_perm, low=8, high=1024)
        if self.lsh_threshold is None:
            # Derived unless given: the word-overlap rule was tuned with looser candidates.
            object.__setattr__(self, "lsh_threshold", 0.1 if self.verify == "overlap" else 0.2)
        check_range(
            "lsh_threshold",
            self.lsh_band_threshold,
            low=0.0,
            high=1.0,
            low_open=True,
            high_open=True,
        )
        if self.lsh_min_score is None:
            # Derived unless given: the word rule's looser bands (one-row bands for 0.1) ask
            # 3 of 32 values equal, which drops chance collisions: duplicate F1 0.9861
            # against 0.9877 for 2 of 32, and 2,218 against 2,085 articles per CPU-second
            # over the replicated 1 M; heavily misspelt copies lose most (docs/stream.md,
            # "Candidate reach").
            score = _OVERLAP_LSH_MIN_SCORE if self.verify == "overlap" else _LSH_MIN_SCORE
            object.__setattr__(self, "lsh_min_score", score)
        check_range("lsh_min_score", self.lsh_candidate_min_score, low=0.0, high=1.0)
        if self.candidates != "simhash" and self.verify == "none":
            raise ConfigError("candidates from MinHash LSH need verification (verify != 'none')")
        check_range("duplicate_min_jaccard", self.duplicate_min_jaccard, low=0.0, high=1.0)
        check_range("duplicate_min_containment", self.duplicate_min_containment, low=0.0, high=1.0)
        check_range("duplicate_min_coverage", self.duplicate_min_coverage, low=0.0, high=1.0)
        check_int("duplicate_min_shared", self.duplicate_min_shared, low=0)
        check_range("similar_min_overlap", self.similar_min_overlap, low=0.0, high=1.0)
        check_range("lcs_min_ratio", self.lcs_min_ratio, low=0.0, high=1.0)
        check_range("overlap_min_coverage", self.overlap_min_coverage, low=0.0, high=1.0)
        check_range("overlap_max_added", self.overlap_max_added, low=0.0, high=1.0)
        check_int("overlap_min_matched", self.overlap_min_matched, low=0)
        check_range(
            "overlap_min_shingle_overlap", self.overlap_min_shingle_overlap, low=0.0, high=1.0
        )
        check_range("overlap_min_sequence", self.overlap_min_sequence, low=0.0, high=1.0)
        if self.overlap_figures_window_seconds is not None:
            check_range(
                "overlap_figures_window_seconds",
                self.overlap_figures_window_seconds,
                low=0.0,
            )
        if self.overlap_accept_containment is not None:
            check_range(
                "overlap_accept_containment", self.overlap_accept_containment, low=0.0, high=1.0
            )
        check_int("overlap_sequence_width", self.overlap_sequence_width, low=1, high=16)
        for name in (
            "overlap_names_added",
            "overlap_names_kept",
            "overlap_figures_added",
            "overlap_figures_kept",
        ):
            check_range(name, getattr(self, name), low=0.0, high=1.0)
        if not isinstance(self.overlap_test_after_duplicate, bool):
            raise ConfigError("overlap_test_after_duplicate must be a bool")
        if not isinstance(self.overlap, OverlapConfig):
            raise ConfigError("overlap must be an OverlapConfig")
        check_int("similar_limit", self.similar_limit, low=0, high=10_000)
        if self.window_seconds is not None:
            check_range("window_seconds", self.window_seconds, low=0.0, low_open=True)
        check_int("max_text_chars", self.max_text_chars, low=1)
        if not isinstance(self.simhash, SimHashConfig) or self.simhash.bits != 64:
            raise ConfigError("simhash must be a 64-bit SimHashConfig")
        if not isinstance(self.shingles, ShingleSetConfig):
            raise ConfigError("shingles must be a ShingleSetConfig")
        if not isinstance(self.events, EventConfig):
            raise ConfigError("events must be an EventConfig")
        if self.events.max_distance > 63:
            raise ConfigError("events.max_distance must be < 64")

    def _resolved(self, name: str) -> float:
        """The derived-unless-given field ``name`` (set by ``__post_init__``)."""
        value = getattr(self, name)
        if value is None:  # only before __post_init__ has run
            raise ConfigError(f"{name} is not resolved yet")
        return float(value)

    @property
    def candidate_max_distance(self) -> int:
        """``similar_max_distance`` as derived from ``candidates`` unless given (resolved at
        construction)."""
        return int(self._resolved("similar_max_distance"))

    @property
    def lsh_candidate_min_score(self) -> float:
        """``lsh_min_score`` as derived from ``verify`` unless given (resolved at
        construction)."""
        return self._resolved("lsh_min_score")

    @property
    def lsh_band_threshold(self) -> float:
        """``lsh_threshold`` as derived from ``verify`` unless given (resolved at construction)."""
        return self._resolved("lsh_threshold")


@dataclasses.dataclass(frozen=True, slots=True)
class Match:
    """Evidence for one matched stored article.

    ``distance``: SimHash Hamming distance; ``jaccard``: exact shingle-set Jaccard;
    ``containment``: the share of the new (or queried) article's shingles found in the matched
    one; ``coverage``: the share of the matched article's shingles found in the new one
    (``None`` when not verified; decisions stored by earlier versions have no ``coverage``
    and a ``containment`` of the smaller set); ``lcs_ratio``: longest common substring over
    the shorter text (``None`` unless the LCS stage ran); ``score``: the ranking score
    (``jaccard`` when verified, else ``1 - distance / 64``); ``verdict``: ``duplicate`` or
    ``similar``; ``word_coverage`` / ``word_added``: the word-overlap measure
    (``verify="overlap"``, ``None`` when it did not run, also when the figures alone
    settled the test: dated more than ``overlap_figures_window_seconds`` apart with a figure
    of one not among the other's words; when it was not needed to decide, the values after
    exact matching only, see ``similarity.overlap``'s ``decide``).
    """

    id: str
    distance: int
    score: float
    verdict: str
    jaccard: float | None = None
    containment: float | None = None
    lcs_ratio: float | None = None
    coverage: float | None = None
    word_coverage: float | None = None
    word_added: float | None = None

    def to_dict(self) -> dict[str, Any]:
        # Spelled out: dataclasses.asdict deep-copies and costs ~10 us a match at ingest.
        return {
            "id": self.id,
            "distance": self.distance,
            "score": self.score,
            "verdict": self.verdict,
            "jaccard": self.jaccard,
            "containment": self.containment,
            "lcs_ratio": self.lcs_ratio,
            "coverage": self.coverage,
            "word_coverage": self.word_coverage,
            "word_added": self.word_added,
        }


@dataclasses.dataclass(frozen=True, slots=True)
class Decision:
    """The decision for one ingested article, with its evidence.

    ``status``: ``new``, ``duplicate`` or ``similar``.  ``duplicate_of``: the original of the
    group it duplicates.  ``similar``: the other matches, best first (other near-duplicate
    groups, then similar stories by score; at most ``similar_limit``).  ``matches``: every
    verified match reported (duplicates first; at most ``similar_limit + 1``).  ``event``: the
    breaking event it belongs to.
    ``took_over``: ids that now point at this article as their original.  ``replayed``:
    ``True`` when this is the stored decision returned again for an idempotent re-ingest.
    """

    id: str
    status: str
    duplicate_of: str | None = None
    similar: tuple[Match, ...] = ()
    matches: tuple[Match, ...] = ()
    event: str | None = None
    took_over: tuple[str, ...] = ()
    replayed: bool = False

    def to_dict(self, *, evidence: bool = True) -> dict[str, Any]:
        """The CLI's JSON object; ``evidence`` adds ``matches``, ``took_over``, ``replayed``."""
        out: dict[str, Any] = {
            "id": self.id,
            "status": self.status,
            "duplicate_of": self.duplicate_of,
            "similar": [{"id": m.id, "score": round(m.score, 6)} for m in self.similar],
            "event": self.event,
        }
        if evidence:
            out["matches"] = [m.to_dict() for m in self.matches]
            out["took_over"] = list(self.took_over)
            out["replayed"] = self.replayed
        return out

    def to_json(self) -> str:
        """Compact JSON, keys sorted (UTF-8 text, shortest round-trip floats; orjson: 4x
        faster than ``json.dumps`` on an 11-match decision, 12 vs 48 us)."""
        return orjson.dumps(self.to_dict(), option=orjson.OPT_SORT_KEYS).decode()

    @classmethod
    def from_json(cls, text: str, *, replayed: bool = False) -> Decision:
        data = json.loads(text)
        matches = tuple(Match(**m) for m in data["matches"])
        by_id = {m.id: m for m in matches}
        return cls(
            id=data["id"],
            status=data["status"],
            duplicate_of=data["duplicate_of"],
            similar=tuple(by_id[s["id"]] for s in data["similar"]),
            matches=matches,
            event=data["event"],
            took_over=tuple(data["took_over"]),
            replayed=replayed,
        )


@dataclasses.dataclass(frozen=True, slots=True)
class _Prepared:
    """An article validated and signed outside the write transaction."""

    article: Article
    text_hash: str
    date_us: int | None
    fingerprint: int
    shingles: Signature
    minhash: Signature | None


def _date_us(article: Article) -> int | None:
    if article.date is None:
        return None
    delta = article.date - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * _US + delta.microseconds


def _gap_us(a: int | None, b: int | None) -> int | None:
    """Microseconds between two dates, ``None`` when either is unknown."""
    return None if a is None or b is None else abs(a - b)


def _order_key(date_us: int | None, article_id: str) -> tuple[bool, int, str]:
    # Earliest by date first, undated after dated, then the id: a total, stable order.
    return (date_us is None, date_us or 0, article_id)


@dataclasses.dataclass(slots=True)
class _NewWords:
    """The new article's text for the word test: its prepared words, digit runs and those of
    its never-peeled paragraphs, each made once, when first needed (most articles meet no
    candidate needing them)."""

    text: str
    config: OverlapConfig
    _prepared: OverlapText | None = None
    _digits: DigitRuns | None = None
    _core: frozenset[str] | None = None
    _arrays: WordArrays | None = None
    _arrays_made: bool = False
    _figure_words: npt.NDArray[np.uint64] | None = None
    _figure_core: npt.NDArray[np.uint64] | None = None

    def figure_words(self) -> npt.NDArray[np.uint64]:
        """:func:`~neardup.index.facts.figure_hashes` of the digit runs (as words)."""
        if self._figure_words is None:
            self._figure_words = figure_hashes(self.digits().words)
        return self._figure_words

    def figure_core(self) -> npt.NDArray[np.uint64]:
        """:func:`~neardup.index.facts.figure_hashes` of the never-peeled digit runs."""
        if self._figure_core is None:
            self._figure_core = figure_hashes(self.core_digits())
        return self._figure_core

    def arrays(self) -> WordArrays | None:
        """The compiled word test's arrays (``None``: not ASCII, the reference applies)."""
        if not self._arrays_made:
            self._arrays = word_arrays(self.text, self.config)
            self._arrays_made = True
        return self._arrays

    def prepared(self) -> OverlapText:
        if self._prepared is None:
            self._prepared = prepare(self.text, self.config)
        return self._prepared

    def digits(self) -> DigitRuns:
        if self._digits is None:
            self._digits = digit_runs(self.text)
        return self._digits

    def core_digits(self) -> frozenset[str]:
        if self._core is None:
            self._core = never_peeled_digits(self.text, self.config, runs=self.digits().keys)
        return self._core


@dataclasses.dataclass(frozen=True, slots=True)
class _Shared:
    """The shingles a new article shares with a stored one: their count, Jaccard, the
    share of the new article's (``contain``) and of the stored one's (``cover``)."""

    inter: int
    jaccard: float
    contain: float
    cover: float


@dataclasses.dataclass(slots=True)
class _Found:
    """While candidates are verified in rank order (``(-score, distance, id)``, the order in
    which an ingest picks its duplicate): the rank of the best duplicate found so far, and
    the rows of the matches.  With ``settle``, a candidate ranked after that duplicate
    cannot be the article's duplicate, so its word test can be skipped."""

    settle: bool
    best: tuple[float, int, str] | None = None
    rows: dict[str, ArticleRow] = dataclasses.field(default_factory=dict)

    def beats(self, rank: tuple[float, int, str]) -> bool:
        """Whether a duplicate ranked before ``rank`` is found (and settles it)."""
        return self.settle and self.best is not None and self.best < rank

    def scores_above(self, score: float) -> bool:
        """Whether a duplicate scoring above ``score`` is found (and settles any candidate
        scoring at most ``score``)."""
        return self.settle and self.best is not None and -self.best[0] > score

    def duplicate(self, rank: tuple[float, int, str]) -> None:
        if self.best is None or rank < self.best:
            self.best = rank


class NewsStream:
    """Ingest-time dedup, similar news and breaking events over a :class:`Store`.

    Not thread-safe by itself (the API object serialises calls).  ``checkpoint_path``: where
    the in-memory indexes are checkpointed (``None``: never; rebuilt from the store's log at
    start); ``checkpoint_every``: log entries between automatic checkpoints.
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
        self._schemes = json.dumps(
            {"simhash": self.config.simhash.scheme_id, "shingles": self.config.shingles.scheme_id},
            sort_keys=True,
        )
        self._init_meta()
        self._minhash_config = MinHashConfig(
            num_perm=self.config.lsh_num_perm,
            width=self.config.shingles.width,
            text=self.config.shingles.text,
        )
        self._index = self._new_index()
        self._lsh = self._new_lsh()
        self._events = EventDetector(self.config.events)
        self._log_seq = 0
        self._since_checkpoint = 0
        self._overlap_cache: OrderedDict[int, OverlapText] = OrderedDict()
        # Stored articles' word arrays for the compiled word test (None: not ASCII), by seq.
        self._arrays_cache: OrderedDict[int, WordArrays | None] = OrderedDict()
        # The compiled word test's parameters, without and with the Jaccard route.
        self._word_params = tuple(
            word_test_params(
                self.config.overlap,
                decide=(self.config.overlap_min_coverage, self.config.overlap_max_added),
                min_matched=self.config.overlap_min_matched,
                jaccard_ok=ok,
                width=self.config.overlap_sequence_width,
                min_sequence=self.config.overlap_min_sequence,
            )
            for ok in (False, True)
        )
        # Every canonical article's (and every article read since) shingle values' low 32
        # bits, date and figures (index.facts, about 600 bytes an article on Reuters): most
        # candidates are screened out from these alone, in one compiled call, without a
        # store read (_maybe_related).  Never evicted: on the replicated stream a story's
        # later versions meet every earlier one, and an LRU of 65,536 articles missed most
        # of them beyond 300,000 articles.
        self._facts = CandidateFacts()
        self._screen_params = (
            self._screen_rule(word_test=False).params(),
            self._screen_rule(word_test=True).params(),
        )
        # figures_replaced never settles under masked digits or calendar words.
        self._figures_apply = not (
            self.config.overlap.mask_digits or self.config.overlap.mask_calendar
        )
        # The in-memory index the seq caches were filled under: _load replaces it (a rolled
        # back batch may give its seqs to other articles), and the caches are then dropped.
        self._caches_index: HammingIndex | None = None
        self.stats = {"restored_from_checkpoint": 0, "replayed_log_entries": 0}
        self._load()

    # --- setup and state ------------------------------------------------------------------
    def _init_meta(self) -> None:
        with self.store.write():
            found = self.store.meta_get("signature_schemes")
            if found is None:
                self.store.meta_set("signature_schemes", self._schemes)
            elif found != self._schemes:
                raise SchemeMismatchError(
                    f"store {self.store.url!r} holds signatures of schemes {found}, this stream "
                    f"makes {self._schemes}; open it with the config it was created with"
                )
            self._uuid = self.store.meta_get("store_uuid")
            if self._uuid is None:
                self._uuid = uuid.uuid4().hex  # an identity, not a stage output
                self.store.meta_set("store_uuid", self._uuid)

    def _new_index(self) -> HammingIndex:
        # A 256-row add buffer: every query scans the buffer by brute force, and at one add
        # per query a smaller buffer measured 4x faster queries (17 vs 65 us) for the same
        # add cost (bench_ingest.py, docs/stream.md).
        return HammingIndex(max_distance=self.config.candidate_max_distance, buffer_size=256)

    def _new_lsh(self) -> LSHIndex | None:
        if self.config.candidates != "simhash+lsh":
            return None
        return LSHIndex(
            num_perm=self.config.lsh_num_perm,
            threshold=self.config.lsh_band_threshold,
            buffer_size=256,
        )

    def _minhash(self, shingles: npt.NDArray[Any]) -> Signature:
        """MinHash of a stored or new shingle set (equal to ``sign_minhash`` of the text)."""
        cfg = self._minhash_config
        values = minhash_values(shingles, cfg.num_perm, cfg.method, cfg.seed)
        return Signature(cfg.scheme_id, values)

    def _load(self) -> None:
        """Checkpoint (when intact and made from this store's history, see
        :mod:`neardup.store.checkpoint`) plus the log entries after it; else the whole log."""
        self._index = self._new_index()
        self._lsh = self._new_lsh()
        self._events = EventDetector(self.config.events)
        self._log_seq = 0
        if self.checkpoint_path is not None:
            try:
                if self._restore_checkpoint(self.checkpoint_path):
                    self.stats["restored_from_checkpoint"] = 1
            except (StateFileError, ValueError, KeyError, IndexError, TypeError) as exc:
                # A damaged, stale or foreign checkpoint is only a lost speed-up: rebuild from
                # the log.  (A StoreError other than StateFileError, e.g. the store being
                # unreachable while the checkpoint is checked, is raised: a rebuild would fail.)
                self.stats["checkpoint_error"] = str(exc)  # type: ignore[assignment]
                self._index = self._new_index()
                self._lsh = self._new_lsh()
                self._events = EventDetector(self.config.events)
                self._log_seq = 0
        self._catch_up()

    def _catch_up(self) -> None:
        """Apply the store's log entries after the last one applied (other writers' work)."""
        while True:
            entries = self.store.log_since(self._log_seq, limit=100_000)
            if not entries:
                return
            self._apply(entries)
            self.stats["replayed_log_entries"] += len(entries)

    def _apply(self, entries: Sequence[LogEntry]) -> None:
        pending_keys: list[int] = []
        pending_fps: list[int] = []

        def flush() -> None:
            if pending_keys:
                self._index.add_many(pending_keys, np.asarray(pending_fps, dtype=np.uint64))
                if self._lsh is not None:
                    rows = self.store.get_many_by_seq(pending_keys)
                    shingles = [Signature.from_bytes(r.signature) for r in rows]
                    sigs = [self._minhash(s.values) for s in shingles]
                    self._lsh.add_many([r.seq for r in rows], sigs)
                    if self.config.verify != "none":
                        for r, s in zip(rows, shingles, strict=True):
                            self._remember(r.seq, r.date_us, s.values, s, r.text)
                pending_keys.clear()
                pending_fps.clear()

        for e in entries:
            if e.op == "add":
                if e.arg == "1":
                    pending_keys.append(e.article_seq)
                    pending_fps.append(e.fingerprint)
                self._events.add(e.article_seq, e.date_us, e.fingerprint, None)
            elif e.op == "unindex":
                flush()
                if e.article_seq in self._index:
                    self._index.remove(e.article_seq)
                if self._lsh is not None and e.article_seq in self._lsh:
                    self._lsh.remove(e.article_seq)
            elif e.op == "event":
                self._events.set_event([e.article_seq], e.arg)
            else:
                raise StoreError(f"store log entry {e.seq} has unknown op {e.op!r}")
            self._log_seq = e.seq
        flush()

    # --- checkpoints ----------------------------------------------------------------------
    def checkpoint(self) -> Path | None:
        """Write the in-memory indexes to ``checkpoint_path`` (atomic replace under a
        temporary name unique to the process, pinned to the store's log by a
        :class:`~neardup.store.checkpoint.LogMark`); return it."""
        if self.checkpoint_path is None:
            return None
        indexed = self._index.keys()
        keys = [int(k) for k in indexed]
        fps = np.fromiter((self._index.get(k) for k in keys), dtype=np.uint64, count=len(keys))
        meta = {
            "version": _CHECKPOINT_VERSION,
            "schemes": self._schemes,
            "mark": LogMark.of(self.store, self._log_seq).to_dict(),
            "events": self.config.events.scheme_id,
            "similar_max_distance": self.config.similar_max_distance,
            "lsh": self._lsh_id(),
        }
        lsh_keys: list[int] = []
        lsh_sigs = np.zeros((0, self.config.lsh_num_perm), dtype=np.uint64)
        if self._lsh is not None:
            held = self._lsh.keys()
            lsh_keys = [int(k) for k in held]
            lsh_sigs = np.array(
                [self._lsh.get(k).values for k in lsh_keys], dtype=np.uint64
            ).reshape(len(lsh_keys), self.config.lsh_num_perm)
        arrays = {
            "lsh_keys": np.asarray(lsh_keys, dtype=np.int64),
            "lsh_sigs": lsh_sigs,
            "index_keys": np.asarray(keys, dtype=np.int64),
            "index_fps": fps,
            **self._events.state(),
            **self._facts.state(),
        }
        # Several processes sharing a store may checkpoint at once: each writes its own
        # temporary file, each file is complete and self-consistent, the last rename wins.
        write_state(self.checkpoint_path, _CHECKPOINT_KIND, meta, arrays)
        self._since_checkpoint = 0
        return self.checkpoint_path

    def _restore_checkpoint(self, path: Path) -> bool:
        """Fill the fresh indexes from the checkpoint at ``path``; ``False`` when there is
        none.  ``StateFileError`` when it is damaged, made with another configuration, or
        not made from this store's history (then nothing may be kept of it)."""
        saved = read_state(path, _CHECKPOINT_KIND)
        if saved is None:
            return False
        meta, arrays = saved.meta, saved.arrays
        expected = {
            "version": _CHECKPOINT_VERSION,
            "schemes": self._schemes,
            "events": self.config.events.scheme_id,
            "similar_max_distance": self.config.similar_max_distance,
            "lsh": self._lsh_id(),
        }
        for key, value in expected.items():
            if meta.get(key) != value:
                raise StateFileError(f"checkpoint {path} was made with another {key}")
        mark = LogMark.from_dict(meta.get("mark"))
        try:
            check_mark(self.store, mark)
        except StateFileError as exc:
            raise StateFileError(f"checkpoint {path} is stale: {exc}") from exc
        log_seq = mark.log_seq
        keys = arrays["index_keys"].astype(np.int64).tolist()
        if keys:
            self._index.add_many(keys, arrays["index_fps"].astype(np.uint64))
        if self._lsh is not None:
            lsh_keys = arrays["lsh_keys"].astype(np.int64).tolist()
            sid = self._minhash_config.scheme_id
            sigs = [Signature(sid, row) for row in arrays["lsh_sigs"].astype(np.uint64)]
            if lsh_keys:
                self._lsh.add_many(lsh_keys, sigs)
        self._events.load_state(arrays)
        self._check_caches()  # tie the facts to this index first, or they would be dropped
        self._facts.load_state(arrays)
        self._log_seq = log_seq
        return True

    def _lsh_id(self) -> str | None:
        if self._lsh is None:
            return None
        return f"{self._lsh.config.scheme_id}|{self._minhash_config.scheme_id}"

    def consistency_errors(self) -> list[str]:
        """Differences between the live in-memory indexes and a full rebuild from the store.

        Empty when they agree (``tests/test_durability.py`` checks this after ``kill -9``).
        """
        fresh = NewsStream.__new__(NewsStream)
        fresh.store = self.store
        fresh.config = self.config
        fresh.checkpoint_path = None
        fresh.stats = {"restored_from_checkpoint": 0, "replayed_log_entries": 0}
        fresh._minhash_config = self._minhash_config
        fresh._index = self._new_index()
        fresh._lsh = self._new_lsh()
        fresh._events = EventDetector(self.config.events)
        fresh._log_seq = 0
        fresh._overlap_cache = OrderedDict()
        fresh._arrays_cache = OrderedDict()
        fresh._facts = CandidateFacts()
        fresh._caches_index = None
        fresh._catch_up()
        errors: list[str] = []
        mine, theirs = self._index.keys(), fresh._index.keys()
        live = {int(k): self._index.get(k) for k in mine}
        rebuilt = {int(k): fresh._index.get(k) for k in theirs}
        if live != rebuilt:
            errors.append(
                f"dedup index differs: {len(live)} live vs {len(rebuilt)} rebuilt entries"
            )
        if self._lsh is not None and fresh._lsh is not None:
            held, replayed = self._lsh.keys(), fresh._lsh.keys()
            lsh_live = {int(k): self._lsh.get(k) for k in held}
            lsh_rebuilt = {int(k): fresh._lsh.get(k) for k in replayed}
            if lsh_live != lsh_rebuilt:
                errors.append(f"LSH index differs: {len(lsh_live)} live vs {len(lsh_rebuilt)}")
        if self._events.snapshot() != fresh._events.snapshot():
            errors.append("event window differs from the store")

        def facts_by_seq(facts: CandidateFacts) -> dict[int, tuple[bytes, int, bytes | None]]:
            held = facts.state()
            out: dict[int, tuple[bytes, int, bytes | None]] = {}
            for seq in np.flatnonzero(held["facts_slot_of"] >= 0).tolist():
                k = int(held["facts_slot_of"][seq])
                start, n = int(held["facts_starts"][k]), int(held["facts_counts"][k])
                dstart, dn = int(held["facts_dstarts"][k]), int(held["facts_dcounts"][k])
                digits = None if dn < 0 else held["facts_digits"][dstart : dstart + dn].tobytes()
                values = held["facts_values"][start : start + n].tobytes()
                out[seq] = (values, int(held["facts_dates"][k]), digits)
            return out

        # The screening facts (restored from a checkpoint, or read since) must be those of
        # the articles the store now holds under the same seqs.
        live_facts = facts_by_seq(self._facts)
        fresh._check_caches()
        unread = sorted(set(live_facts) - set(facts_by_seq(fresh._facts)))
        for r in self.store.get_many_by_seq(unread):
            sig = Signature.from_bytes(r.signature)
            fresh._remember(r.seq, r.date_us, sig.values, sig, r.text)
        rebuilt_facts = facts_by_seq(fresh._facts)
        stale = [seq for seq, held in live_facts.items() if rebuilt_facts.get(seq) != held]
        if stale:
            errors.append(
                f"candidate facts of {len(stale)} article(s) differ from the store "
                f"(seqs {stale[:5]})"
            )
        canonical = {
            a.seq: a.fingerprint
            for a in self.store.iter_articles()
            if a.original is None or self.config.index_duplicates
        }
        if canonical != rebuilt:
            errors.append(
                f"log replay gives {len(rebuilt)} indexed articles but the store has "
                f"{len(canonical)} canonical ones"
            )
        return errors

    # --- ingest ---------------------------------------------------------------------------
    def prepare(self, article: Article | Mapping[str, Any]) -> _Prepared:
        """Validate and sign one article (no store access).  ``InputError`` when bad."""
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
        shingles = sign_shingles(text, self.config.shingles)
        if len(shingles) == 0:
            raise InputError(f"article {article.id!r} has no words to compare")
        simhash = sign_simhash(text, self.config.simhash)
        fingerprint = int(simhash.values[0]) if len(simhash) else 0
        minhash = self._minhash(shingles.values) if self._lsh is not None else None
        return _Prepared(
            article, text_hash(text), _date_us(article), fingerprint, shingles, minhash
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
        matches, rows = self._matches(
            p.fingerprint,
            p.shingles,
            p.date_us,
            art.text,
            exclude=-1,
            minhash=p.minhash,
            settle_after_duplicate=True,
        )
        dup = next((m for m in matches if m.verdict == "duplicate"), None)
        status = "new"
        original: str | None = None
        took_over: tuple[str, ...] = ()
        linked: list[str] = []
        target: ArticleRow | None = None
        if dup is not None:
            target = rows[dup.id]
            if target.original is not None:  # an indexed duplicate: go to its group original
                found = self.store.get(target.original)
                target = found if found is not None else target
            linked = [target.event] if target.event else []
            if _order_key(p.date_us, art.id) < _order_key(target.date_us, target.id):
                took_over = (target.id, *self.store.members_of(target.id))
            else:
                status = "duplicate"
                original = target.id
        similar = tuple(m for m in matches if m is not dup)[: cfg.similar_limit]
        if status == "new" and similar and not took_over:
            status = "similar"
        outcome = self._events.decide(art.id, p.date_us, p.fingerprint, linked)
        decision = Decision(
            id=art.id,
            status=status,
            duplicate_of=original,
            similar=similar,
            # Evidence for what is reported: the duplicate target and the similar list.
            matches=tuple(matches[: cfg.similar_limit + 1]),
            event=outcome.event,
            took_over=took_over,
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
                status=status,
                original=original,
                event=outcome.event,
                fingerprint=p.fingerprint,
                signature=p.shingles.to_bytes(),
                decision=decision.to_json(),
            )
        )
        indexed = original is None or cfg.index_duplicates
        self._log(seq, "add", "1" if indexed else "0")
        if indexed:
            self._index.add(seq, p.fingerprint)
            # A canonical article is a candidate of the articles to come: cache what
            # _maybe_related reads (the same values a store read gives).
            if cfg.verify != "none":
                text = art.text if cfg.store_text else None  # what a store read gives
                self._remember(seq, p.date_us, p.shingles.values, p.shingles, text)
            if self._lsh is not None and p.minhash is not None:
                self._lsh.add(seq, p.minhash)
        self._events.add(seq, p.date_us, p.fingerprint, None)
        if took_over and target is not None:
            self.store.set_original(took_over, art.id)
            if not cfg.index_duplicates and target.seq in self._index:
                self._index.remove(target.seq)
                if self._lsh is not None and target.seq in self._lsh:
                    self._lsh.remove(target.seq)
                self._log(target.seq, "unindex", "")
        if outcome.event is not None:
            if outcome.opened and p.date_us is not None:
                self.store.insert_event(EventRow(art.id, art.id, p.date_us, seq))
            members = (*outcome.joined, seq)
            self.store.set_event(members, outcome.event)
            self._events.set_event(members, outcome.event)
            for member in members:
                self._log(member, "event", outcome.event)
        return decision

    def _log(self, seq: int, op: str, arg: str) -> None:
        self._log_seq = self.store.append_log(op, seq, arg)

    # --- matching -------------------------------------------------------------------------
    def _matches(
        self,
        fingerprint: int,
        shingles: Signature,
        date_us: int | None,
        text: str | None,
        *,
        exclude: int,
        since_us: int | None = None,
        until_us: int | None = None,
        minhash: Signature | None = None,
        settle_after_duplicate: bool = False,
    ) -> tuple[list[Match], dict[str, ArticleRow]]:
        """Verified matches, best first: duplicates by score, then similar by score.

        Candidates: SimHash within ``similar_max_distance``, plus (``candidates=
        "simhash+lsh"``) MinHash LSH candidates; a verified candidate whose overlap is below
        ``similar_min_overlap`` is unrelated and dropped (:meth:`_verify`).
        """
        cfg = self.config
        # The candidate seqs stay in numpy arrays until the facts screen has dropped most.
        near, near_distance = self._index.query_key_array(fingerprint, cfg.candidate_max_distance)
        found_lsh = _NO_SEQS
        if self._lsh is not None and minhash is not None and len(minhash):
            # Bands of one row make any single equal MinHash value a candidate; asking for
            # lsh_min_score (2 of 32 values equal) drops most chance collisions.
            found_lsh = self._lsh.query_key_array(minhash, min_score=cfg.lsh_candidate_min_score)
        candidates = candidate_union(near, found_lsh, exclude)
        if not candidates.size:
            return [], {}
        # SimHash distances of the SimHash candidates; an LSH-only candidate's is measured
        # when it is read (_verify_ranked).
        distance = dict(zip(near.tolist(), near_distance.tolist(), strict=True))
        # The word test's view of the new text (made lazily; only verify="overlap" reads it).
        new_words = None
        if cfg.verify == "overlap" and text is not None:
            new_words = _NewWords(text, cfg.overlap)
        keep, band = self._maybe_related(candidates, shingles, text, new_words, date_us)
        # Once the article's duplicate is found, a candidate ranked below it cannot change
        # the decision: under verify="overlap" it is listed without the word test
        # (overlap_test_after_duplicate=False, the default; _verify_ranked).
        found = _Found(
            settle_after_duplicate
            and cfg.verify == "overlap"
            and not cfg.overlap_test_after_duplicate
        )

        def verify_ranked(seqs: list[int]) -> list[Match]:
            return self._verify_ranked(
                seqs,
                distance,
                fingerprint,
                shingles,
                text,
                new_words,
                date_us,
                since_us,
                until_us,
                found,
            )

        matches = verify_ranked(keep)
        # A band candidate shares less than similar_min_overlap of either article's
        # shingles, so its Jaccard is below that too: a duplicate found above it settles it.
        if band and not found.scores_above(cfg.similar_min_overlap):
            band = self._band_related(band, new_words, date_us)
            matches += verify_ranked(band)
        order = {"duplicate": 0, "similar": 1}
        matches.sort(key=lambda m: (order[m.verdict], -m.score, m.distance, m.id))
        return matches, found.rows

    def _verify_ranked(
        self,
        seqs: list[int],
        distance: dict[int, int],
        fingerprint: int,
        shingles: Signature,
        text: str | None,
        new_words: _NewWords | None,
        date_us: int | None,
        since_us: int | None,
        until_us: int | None,
        found: _Found,
    ) -> list[Match]:
        """Read the candidates ``seqs``, drop those outside the time limits and verify the
        rest in rank order (Jaccard, then distance, then id: the order in which the
        decision picks its duplicate), recording each match's row in ``found``."""
        if not seqs:
            return []
        cfg = self.config
        rows = self.store.get_many_by_seq(seqs)
        window = None if cfg.window_seconds is None else round(cfg.window_seconds * _US)
        a = shingles.values
        ranked: list[tuple[tuple[float, int, str], ArticleRow, _Shared | None]] = []
        for row in rows:
            if row.seq not in distance:  # an LSH-only candidate
                distance[row.seq] = (row.fingerprint ^ fingerprint).bit_count()
            if row.date_us is not None:
                if (
                    window is not None
                    and date_us is not None
                    and abs(row.date_us - date_us) > window
                ):
                    continue
                if since_us is not None and row.date_us < since_us:
                    continue
                if until_us is not None and row.date_us >= until_us:
                    continue
            elif since_us is not None or until_us is not None:
                continue
            shared = None if cfg.verify == "none" else self._shared(row, a, shingles)
            score = 1.0 - distance[row.seq] / 64 if shared is None else round(shared.jaccard, 6)
            ranked.append(((-score, distance[row.seq], row.id), row, shared))
        ranked.sort(key=lambda r: r[0])
        matches: list[Match] = []
        for rank, row, shared in ranked:
            word_test = not found.beats(rank)
            match = self._verify(
                row, distance[row.seq], shared, text, new_words, date_us, word_test
            )
            if match is None:  # verified unrelated (overlap below similar_min_overlap)
                continue
            if match.verdict == "duplicate":
                found.duplicate(rank)
            matches.append(match)
            found.rows[row.id] = row
        return matches

    def _shared(self, row: ArticleRow, a: npt.NDArray[Any], shingles: Signature) -> _Shared:
        """The shingles the new article (values ``a`` of ``shingles``) shares with a stored
        one (exact; its facts are remembered for later screens)."""
        b = self._stored_shingles(row, shingles)
        self._remember(row.seq, row.date_us, b, shingles, row.text)
        inter = sorted_intersection_size(a, b) if a.size and b.size else 0
        if inter < 0:  # not sorted distinct uint64 values (never from sign_shingles)
            inter = int(np.intersect1d(a, b, assume_unique=True).size)
        union = a.size + b.size - inter
        return _Shared(
            inter,
            inter / union if union else 1.0,
            # Directed: how much of the new article is in the stored one (does it add
            # little?) and how much of the stored one it covers (is it more than an excerpt?).
            inter / a.size if a.size else 0.0,
            inter / b.size if b.size else 0.0,
        )

    def _verify(
        self,
        row: ArticleRow,
        distance: int,
        shared: _Shared | None,
        text: str | None,
        new_words: _NewWords | None,
        date_us: int | None,
        word_test: bool = True,
    ) -> Match | None:
        """The verified match of the new article with a stored one (``shared``: their
        shingles, ``None`` under ``verify="none"``), or ``None`` when the shingle overlap
        says they are unrelated.  ``word_test=False``: a duplicate ranked above this
        candidate is already found, so it is listed as ``similar`` when related by the
        shingle rule, without the word (or LCS) test."""
        cfg = self.config
        if shared is None:
            verdict = "duplicate" if distance <= cfg.duplicate_max_distance else "similar"
            return Match(row.id, distance, 1.0 - distance / 64, verdict)
        inter, jaccard, contain, cover = shared.inter, shared.jaccard, shared.contain, shared.cover
        # The containment route needs enough shared shingles: on Reuters, one-line notices
        # of different companies ("Qtly div six cts vs six cts prior | Pay ...") share half
        # of their ~11 shingles (docs/stream.md).
        is_dup = jaccard >= cfg.duplicate_min_jaccard or (
            contain >= cfg.duplicate_min_containment
            and cover >= cfg.duplicate_min_coverage
            and inter >= cfg.duplicate_min_shared
        )
        if not word_test:
            if not is_dup and max(contain, cover) < cfg.similar_min_overlap:
                return None
            return Match(
                row.id,
                distance,
                round(jaccard, 6),
                "similar",
                round(jaccard, 6),
                round(contain, 6),
                None,
                round(cover, 6),
            )
        word_cover: float | None = None
        word_added: float | None = None
        if (
            cfg.verify == "overlap"
            and text is not None
            and row.text is not None
            and max(contain, cover) >= cfg.overlap_min_shingle_overlap
            and not self._overlap_fast_accept(contain, cover, inter)
        ):
            if new_words is None:
                new_words = _NewWords(text, cfg.overlap)
            is_dup, word_cover, word_added = self._word_test(row, new_words, jaccard, date_us)
        if not is_dup and max(contain, cover) < cfg.similar_min_overlap:
            return None
        lcs_ratio: float | None = None
        if is_dup and cfg.verify == "lcs" and text is not None and row.text is not None:
            lcs = longest_common_substring(text, row.text)
            shorter = min(len(text), len(row.text))
            lcs_ratio = lcs.length / shorter if shorter else 0.0
            is_dup = lcs_ratio >= cfg.lcs_min_ratio
        verdict = "duplicate" if is_dup else "similar"
        return Match(
            row.id,
            distance,
            round(jaccard, 6),
            verdict,
            round(jaccard, 6),
            round(contain, 6),
            None if lcs_ratio is None else round(lcs_ratio, 6),
            round(cover, 6),
            None if word_cover is None else round(word_cover, 6),
            None if word_added is None else round(word_added, 6),
        )

    def _word_test(
        self, row: ArticleRow, new: _NewWords, jaccard: float, date_us: int | None
    ) -> tuple[bool, float | None, float | None]:
        """``verify="overlap"``'s duplicate test of the new article against a stored one with
        text: (duplicate?, word coverage, word added); the word figures are ``None`` when
        the figures alone decided (below)."""
        cfg = self.config
        gap_us = _gap_us(row.date_us, date_us)
        if self._figures_settle(row, new, date_us):
            return False, None, None
        # Directed word overlap robust to spelling noise (similarity.overlap): the copy
        # keeps at least half of the stored article and adds at most a fifth of its own
        # (seed 000's "same article after some editing"), however many words are
        # misspelt.  Short texts (one-line notices) need the shingle Jaccard instead of the
        # floor of matched words; Jaccard alone no longer decides: an insert of a quarter
        # still has a Jaccard near 0.8.  Then word order (templated items of different
        # companies share their words, not their sequence) and names and figures (a
        # templated item of another issuer or day keeps the template's words and word
        # order, not these; docs/stream.md, "Templated items").  Without stored text the
        # shingle rule decides.
        jaccard_ok = jaccard >= cfg.duplicate_min_jaccard
        new_arrays = new.arrays()
        stored_arrays = None if new_arrays is None else self._stored_arrays(row)
        if new_arrays is not None and stored_arrays is not None:
            # The compiled word test (similarity.wordarrays): the same values as below.
            test = word_test_arrays(stored_arrays, new_arrays, self._word_params[jaccard_ok])
            o = test.overlap
            agree = test.keys is not None and self._keys_agree(test.keys, gap_us)
            return agree, o.coverage, o.added
        rule = (cfg.overlap_min_coverage, cfg.overlap_max_added)
        stored_text = self._stored_text(row)
        new_text = new.prepared()
        o = overlap_prepared(stored_text, new_text, cfg.overlap, decide=rule)
        is_dup = (
            o.coverage >= cfg.overlap_min_coverage
            and o.added <= cfg.overlap_max_added
            and (o.stored_matched >= cfg.overlap_min_matched or jaccard_ok)
            and sequence_containment(
                stored_text,
                new_text,
                cfg.overlap_sequence_width,
                cfg.overlap,
                at_least=cfg.overlap_min_sequence,
            )
            >= cfg.overlap_min_sequence
            and self._keys_agree(key_overlap(stored_text, new_text, cfg.overlap), gap_us)
        )
        return is_dup, o.coverage, o.added

    def _keys_agree(self, k: KeyOverlap, gap_us: int | None) -> bool:
        """Whether the new article's names and figures are the stored one's (``k``, their
        :func:`~neardup.similarity.overlap.key_overlap`): False when it *replaces* them,
        i.e. adds more than ``overlap_names_added`` of its names while keeping less than
        ``overlap_names_kept`` of the stored one's (another issuer), or the same for figures
        and dates (another day or period).  An insert adds names and figures but keeps the
        stored ones; a re-send or correction keeps most of both (docs/stream.md,
        "Templated items").  Added thresholds of 1.0 turn a test off."""
        cfg = self.config
        other_names = (
            k.names_added > cfg.overlap_names_added and k.names_kept_share < cfg.overlap_names_kept
        )
        window = cfg.overlap_figures_window_seconds
        if window is None or gap_us is None:
            other_figures = (
                k.figures_added > cfg.overlap_figures_added
                and k.figures_kept_share < cfg.overlap_figures_kept
            )
        elif gap_us <= window * _US:
            # The same news day: a copy may correct or update its figures.
            other_figures = False
        else:
            # Another day: the same template with any other figure is the next report.
            other_figures = k.figures_added > 0.0 or k.figures_kept_share < 1.0
        return not (other_names or other_figures)

    def _overlap_fast_accept(self, contain: float, cover: float, shared: int) -> bool:
        """Whether the shingle sets alone settle ``verify="overlap"``'s duplicate test: when
        ``overlap_accept_containment`` (0.9) of the new article's 4-shingles are in the
        stored one, at most about a tenth of its words can be new and its word order is the
        stored one's, so the word test would pass; the shingle rule (coverage, shared
        shingles) then decides, without the word overlap (a speed path: on the benchmarks
        it changes no decision, docs/stream.md)."""
        cfg = self.config
        return (
            cfg.overlap_accept_containment is not None
            and contain >= cfg.overlap_accept_containment
            and cover >= cfg.overlap_min_coverage
            and shared >= cfg.duplicate_min_shared
        )

    def _check_caches(self) -> None:
        # The seq-keyed caches hold only committed or current-batch rows of this index's
        # life; after _load (a rollback) a seq may name another article.
        if self._caches_index is not self._index:
            self._overlap_cache.clear()
            self._arrays_cache.clear()
            self._facts.clear()
            self._caches_index = self._index

    def _screen_rule(self, word_test: bool) -> ScreenRule:
        """:meth:`_verify`'s shingle arithmetic for :meth:`_maybe_related`; ``word_test``:
        the word test may run (``verify="overlap"`` with the new text)."""
        cfg = self.config
        return ScreenRule(
            min_jaccard=cfg.duplicate_min_jaccard,
            min_containment=cfg.duplicate_min_containment,
            min_coverage=cfg.duplicate_min_coverage,
            min_shared=cfg.duplicate_min_shared,
            similar_min_overlap=cfg.similar_min_overlap,
            word_floor=(
                min(cfg.similar_min_overlap, cfg.overlap_min_shingle_overlap) if word_test else None
            ),
            accept_containment=cfg.overlap_accept_containment,
            min_word_coverage=cfg.overlap_min_coverage,
        )

    def _remember(
        self,
        seq: int,
        date_us: int | None,
        values: npt.NDArray[Any],
        shingles: Signature,
        text: str | None,
    ) -> None:
        """Record a stored article's facts (shingle values of the stream's scheme, date and,
        under ``verify="overlap"`` with its text, figures) for :meth:`_maybe_related`."""
        if shingles.scheme_id != self.config.shingles.scheme_id:
            return
        self._check_caches()
        if seq in self._facts:
            return
        figures = None
        if self.config.verify == "overlap" and text is not None:
            runs = digit_runs(text)
            if runs.keys == runs.words:  # an ASCII text: one set serves both tests
                figures = figure_hashes(runs.keys)
        self._facts.add(seq, values, date_us, figures)

    def _maybe_related(
        self,
        seqs: npt.NDArray[np.int64],
        shingles: Signature,
        text: str | None,
        new_words: _NewWords | None = None,
        date_us: int | None = None,
    ) -> tuple[list[int], list[int]]:
        """``seqs`` (in order) minus candidates that :meth:`_verify` would return ``None``
        for, split in two: those to verify, and the band of those related only if the word
        test relates them (``verify="overlap"`` with text: not a duplicate by the shingle
        rule, ``max(containment, coverage)`` below ``similar_min_overlap`` but not below
        ``overlap_min_shingle_overlap``), which :meth:`_band_related` then screens by their
        figures.  Dropped: not a duplicate by the shingle rule and below both overlaps.
        Screened in one compiled call from the facts held in memory
        (:class:`~neardup.index.facts.CandidateFacts`; an upper bound of each shared count,
        so a dropped candidate is one the exact rule drops); a candidate without facts is
        kept (exact: the matches are those of verifying every candidate)."""
        cfg = self.config
        a = shingles.values
        self._check_caches()
        if (
            cfg.verify == "none"
            or not a.size
            or shingles.scheme_id != cfg.shingles.scheme_id
            or not len(self._facts)
        ):
            return seqs.tolist(), []
        word_test = cfg.verify == "overlap" and text is not None and new_words is not None
        codes = self._facts.screen(seqs, a, self._screen_params[word_test])
        return seqs[codes == KEEP].tolist(), seqs[codes == FIGURES].tolist()

    def _band_related(
        self, band: list[int], new_words: _NewWords | None, date_us: int | None
    ) -> list[int]:
        """The band of :meth:`_maybe_related` minus the candidates whose figures settle the
        word test (:meth:`_figures_settle`, from the facts held in memory)."""
        window = self.config.overlap_figures_window_seconds
        if new_words is None or window is None or not self._figures_apply:
            return band
        settled = self._facts.figures_replaced(
            band, new_words.figure_words(), new_words.figure_core, date_us, window * _US
        ).tolist()
        return [seq for seq, gone in zip(band, settled, strict=True) if not gone]

    def _stored_shingles(self, row: ArticleRow, shingles: Signature) -> npt.NDArray[Any]:
        """The stored article's shingle values; ``SchemeMismatchError`` when its signature is
        of another scheme than ``shingles``.  Fast path: a stored signature whose header up
        to its value count is the new one's (same format version, width and scheme) is read
        in place, as :meth:`Signature.from_bytes` would (tested equal); anything else goes
        through ``from_bytes``, which validates it."""
        sig = row.signature
        mine = shingles.to_bytes()  # cached by the signature
        width = shingles.values.dtype.itemsize
        head = len(mine) - len(shingles) * width  # header, value count (uint32 LE) included
        if len(sig) >= head and sig[: head - 4] == mine[: head - 4]:
            count = int.from_bytes(sig[head - 4 : head], "little")
            if len(sig) == head + count * width:
                values: npt.NDArray[Any] = np.frombuffer(
                    sig, dtype=shingles.values.dtype.newbyteorder("<"), count=count, offset=head
                )
                return values
        other = Signature.from_bytes(sig)
        if other.scheme_id != shingles.scheme_id:
            raise SchemeMismatchError(
                f"stored article {row.id!r} has a {other.scheme_id} signature, expected "
                f"{shingles.scheme_id}"
            )
        return other.values

    def _figures_settle(self, row: ArticleRow, new: _NewWords, date_us: int | None) -> bool:
        """Whether the figures alone make ``verify="overlap"``'s test fail: the two are
        dated more than ``overlap_figures_window_seconds`` apart (another news day, where
        :meth:`_keys_agree` allows no other figure) and a figure of one cannot be among the
        other's words (:func:`~neardup.similarity.overlap.figures_replaced`, from the facts
        held when known).  The word matching is then skipped (a speed path: the same
        verdict, tested)."""
        window = self.config.overlap_figures_window_seconds
        gap_us = _gap_us(row.date_us, date_us)
        if window is None or gap_us is None or not gap_us > window * _US:
            return False
        if not self._figures_apply:
            return False
        if self._facts.knows_figures(row.seq):
            return bool(
                self._facts.figures_replaced(
                    [row.seq], new.figure_words(), new.figure_core, date_us, window * _US
                )[0]
            )
        stored = digit_runs(row.text or "")
        return figures_replaced(stored, new.digits(), new.core_digits(), self.config.overlap)

    def _stored_arrays(self, row: ArticleRow) -> WordArrays | None:
        """The stored article's word arrays (``None``: not ASCII), from an LRU cache keyed by
        seq (``_OVERLAP_CACHE`` entries, about 9 KB each on Reuters)."""
        self._check_caches()
        cache = self._arrays_cache
        if row.seq in cache:
            cache.move_to_end(row.seq)
            return cache[row.seq]
        made = word_arrays(row.text or "", self.config.overlap)
        cache[row.seq] = made
        if len(cache) > _OVERLAP_CACHE:
            cache.popitem(last=False)
        return made

    def _stored_text(self, row: ArticleRow) -> OverlapText:
        """The stored article's prepared words, from a small LRU cache keyed by seq."""
        self._check_caches()
        cache = self._overlap_cache
        found = cache.get(row.seq)
        if found is not None:
            cache.move_to_end(row.seq)
            return found
        prepared = prepare(row.text or "", self.config.overlap)
        cache[row.seq] = prepared
        if len(cache) > _OVERLAP_CACHE:
            cache.popitem(last=False)
        return prepared

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

    def similar(
        self,
        article_id: str,
        limit: int = 10,
        *,
        since_us: int | None = None,
        until_us: int | None = None,
    ) -> list[Match]:
        """Stored canonical articles matching a stored article, best first (itself and its own
        group excluded), optionally only those dated in ``[since, until)``."""
        check_int("limit", limit, low=0, high=100_000)
        self._catch_up()
        row = self.get(article_id)
        own = row.original or row.id
        shingles = Signature.from_bytes(row.signature)
        matches, rows = self._matches(
            row.fingerprint,
            shingles,
            row.date_us,
            row.text,
            exclude=row.seq,
            since_us=since_us,
            until_us=until_us,
            minhash=self._minhash(shingles.values) if self._lsh is not None else None,
        )
        kept = [m for m in matches if m.id != own and (rows[m.id].original or m.id) != own]
        kept.sort(key=lambda m: (-m.score, m.distance, m.id))
        return kept[:limit]

    def events(self, since_us: int | None = None, until_us: int | None = None) -> list[EventRow]:
        """Events opened in ``[since, until)`` by article date, in opening order."""
        return self.store.events(since_us, until_us)

    def event(self, event_id: str) -> EventReport:
        """The report of one event; ``NotFoundError`` when unknown."""
        row = self.store.get_event(event_id)
        if row is None:
            raise NotFoundError(f"event {event_id!r} is not in the store")
        articles = [
            (a.id, a.date_us, a.source, a.title) for a in self.store.event_articles(event_id)
        ]
        return build_report(
            row.id,
            row.opened_by,
            row.opened_at_us,
            articles,
            self.config.events.growth_bucket_seconds,
        )

    def __len__(self) -> int:
        return self.store.count()

    @property
    def indexed(self) -> int:
        """Number of articles in the in-memory dedup index."""
        return len(self._index)

    def close(self) -> None:
        """Checkpoint (when configured) and close the store."""
        try:
            if self.checkpoint_path is not None and self._since_checkpoint:
                self.checkpoint()
        finally:
            self.store.close()
