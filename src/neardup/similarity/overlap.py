"""Directed word overlap robust to spelling noise: how much of a stored article a new one
keeps, and how much of the new one is not in the stored one.

Seed 000 defines a duplicate as "the same article after some editing": a copy may drop part
of the article (newspapers cut wire copy to fit) and be spelt differently (typos, OCR
noise, corrected numbers), but adds little story of its own.  Shingle overlaps cannot see
that: a word 4-shingle dies when any of its words has a typo, and Jaccard or containment
treat what is dropped and what is added alike.  This measure answers the two questions
separately, on bags (multisets) of words:

* ``coverage`` = matched words of the *stored* article / its words (how much is kept);
* ``added`` = 1 - matched words of the *new* article / its words (how much is new).

Before matching, **packaging** is peeled off the new article: paragraphs at its top and
bottom (split at blank lines or at a line break followed by indentation, the newswire
convention) of at most ``packaging_max_words`` words, less than ``packaging_min_found`` of
whose words occur (exactly or fuzzily, as below) in the stored article: a new headline,
site boilerplate ("Copyright ... All rights reserved", "Share this article"), a byline.
Seed 000's duplicate is "the same article after some editing"; packaging is not story
content, and an added paragraph *inside* the article, or a long one, is never peeled, nor
is the last paragraph left.  ``packaging`` in the result counts the peeled words; they count
in neither ``added`` nor ``new_words``.

:func:`sequence_containment` adds word order: the share of the new text's word n-gram
positions (misspelt words corrected to the stored word they match) found in the stored
text, which tells a copy from a templated item of another company sharing its words.

Words are case-folded ``\\w+`` runs; with ``mask_digits`` every run of digits becomes ``0``
and with ``mask_calendar`` every month and week-day name becomes one token, so a changed
number or date is the same word (both off by default: on Reuters they make templated
items of different companies identical).  Matching, in this order (each word matched at
most once):

1. **exact**: the multiset intersection of the two bags;
2. **joined** (``match_joined``, off by default): a left-over new word that is two
   left-over stored words run together (scanned text loses spaces: ``ofthe`` = ``of`` +
   ``the``) matches both;
3. **fuzzy**: a left-over new word of at least ``fuzzy_min_length`` characters matches a
   left-over stored word when both reduce to a common string by deleting at most
   ``max_deletes`` characters from each, i.e. ``LCS(u, v) >= max(|u|, |v|) - max_deletes``
   (SymSpell's symmetric delete neighbourhood, Garbe 2012: one delete each covers a
   substitution, an insertion, a deletion and a swap of adjacent letters; two cover OCR's
   ``rn``/``m``; default one).  Words shorter than ``long_word_length`` use at most one
   delete.
   Left-over new words are taken in text order and each takes the available stored word
   needing the fewest deletes, ties broken by the smaller string (greedy, deterministic).

:func:`key_overlap` compares the *key words* alone (:func:`key_words`: figures, dates and
names, i.e. capitalised words that do not open a sentence): templated wire items of another
issuer or another day (dividend notices, bond issues, daily statistics) share the template's
words and word order and differ in exactly these, which a copy keeps.

Guarantees: exact and deterministic for the stated matching (tested equal to an O(n * m)
brute-force matcher that compares every pair of left-over words by their LCS; the key
words and their lookups to a brute-force scan).  Cost: O(n + m) for the exact part; the
fuzzy part looks each left-over new word up through its own delete keys (O(L^d) keys per
word of length L, d = ``max_deletes``, memoised per word) in one process-wide index of
every word seen (each word indexed once, bounded to 200,000 words, see
:class:`_SharedKeyIndex`), skipping words that share no key with the stored text; with
``decide`` it stops as soon as the answer is known (whether the fuzzy stage can matter at
all is settled from word totals before the left-over words are listed).  Whether a word
shares a key with the stored text is tested against the text's memoised key set, or, for
a few words, looked up one by one in the shared index (the same answer, tested).  Pure
Python.  Memory: O(n + m) words per text (interned: texts share their word strings) plus
the shared index; delete-key sets are kept for the last 1,024 texts that built one (about
25 KB each).
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import re
import sys
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet

import numpy as np

from neardup.config import Config, check_int, check_range

__all__ = [
    "DigitRuns",
    "KeyOverlap",
    "Overlap",
    "OverlapConfig",
    "OverlapText",
    "delete_keys",
    "digit_runs",
    "figures_replaced",
    "key_overlap",
    "key_words",
    "lcs_length",
    "never_peeled",
    "never_peeled_digits",
    "overlap",
    "overlap_prepared",
    "overlap_words",
    "paragraphs",
    "peel_packaging",
    "prepare",
    "sequence_containment",
    "words",
]

_WORD_RE = re.compile(r"\w+")
_PARAGRAPH_RE = re.compile(r"\n[ \t]*\n|\n(?=[ \t])")
_DIGITS_RE = re.compile(r"\d+")
_CALENDAR = frozenset(
    [
        "january", "february", "march", "april", "may", "june", "july", "august",
        "september", "october", "november", "december",
        "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec",
        "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday",
    ]
)  # fmt: skip
_CALENDAR_TOKEN = "\x00cal"
# Characters skipped backwards to find what precedes a capitalised word (quotes, brackets).
_KEY_SKIP = frozenset(" \t\r\n\"'(<[")
_SENTENCE_END = frozenset(".!?:;")
# Whole \w+ runs that hold a digit or do not start with a lower-case ASCII letter, a digit or
# "_": a superset of the key words (the rest of the test is in key_words); most words are
# skipped inside the regex engine.
_KEY_CANDIDATE_RE = re.compile(r"\b(?:\w*\d\w*|[^\W\d_a-z]\w*)")


@dataclasses.dataclass(frozen=True)
class OverlapConfig(Config):
    """Parameters of :func:`overlap` (defaults chosen on a tuning benchmark, docs/stream.md).

    ``packaging_max_words`` / ``packaging_min_found``: edge paragraphs of at most that many
    words with less than that share found in the stored article are peeled (0 words: off);
    ``mask_digits``: digit runs compare equal; ``mask_calendar``: month and day names compare
    equal; ``match_joined``: a word run together from two matches both; ``max_deletes``
    (0-2): deletes allowed on each side for a fuzzy match (0 turns fuzzy matching off);
    ``fuzzy_min_length``: shorter words match only exactly; ``long_word_length``: words
    shorter than this use at most one delete.
    """

    SCHEME = "overlap"

    packaging_max_words: int = 20
    packaging_min_found: float = 0.7
    mask_digits: bool = False
    mask_calendar: bool = False
    match_joined: bool = False
    max_deletes: int = 1
    fuzzy_min_length: int = 3
    long_word_length: int = 6

    def __post_init__(self) -> None:
        check_int("packaging_max_words", self.packaging_max_words, low=0)
        check_range("packaging_min_found", self.packaging_min_found, low=0.0, high=1.0)
        check_int("max_deletes", self.max_deletes, low=0, high=2)
        check_int("fuzzy_min_length", self.fuzzy_min_length, low=1, high=64)
        check_int("long_word_length", self.long_word_length, low=1, high=64)
        # A word must keep at least one character after its deletes (no empty keys).
        check_int("fuzzy_min_length", self.fuzzy_min_length, low=self.max_deletes + 1, high=64)


@dataclasses.dataclass(frozen=True, slots=True)
class Overlap:
    """Matched word counts of a (stored, new) pair; the ratios are properties.

    ``stored_matched`` <= ``stored_words`` and ``new_matched`` <= ``new_words``; they differ
    only through joined words (one new word matches two stored ones).  ``complete`` is
    False when the fuzzy stage was skipped because it could not change a requested decision
    (``decide``); the counts are then those of the exact and joined stages.
    """

    stored_words: int
    new_words: int
    stored_matched: int
    new_matched: int
    exact: int
    fuzzy: int
    joined: int
    packaging: int = 0
    complete: bool = True

    @property
    def coverage(self) -> float:
        """Share of the stored article's words the new one keeps (1.0 when it has none)."""
        return self.stored_matched / self.stored_words if self.stored_words else 1.0

    @property
    def added(self) -> float:
        """Share of the new article's words not in the stored one (0.0 when it has none)."""
        return 1.0 - self.new_matched / self.new_words if self.new_words else 0.0

    @property
    def containment(self) -> float:
        """Share of the new article's words found in the stored one: ``1 - added``."""
        return 1.0 - self.added


def words(text: str, config: OverlapConfig | None = None) -> list[str]:
    """The normalised words of ``text`` in order (case-folded ``\\w+``, masks applied)."""
    cfg = config or OverlapConfig()
    folded = text.casefold()
    if cfg.mask_digits:
        folded = _DIGITS_RE.sub("0", folded)
    out = _WORD_RE.findall(folded)
    if cfg.mask_calendar:
        out = [_CALENDAR_TOKEN if w in _CALENDAR else w for w in out]
    return out


def key_words(text: str, config: OverlapConfig | None = None) -> list[str]:
    """The *key* words of ``text`` in order, normalised as in :func:`words`: every word
    holding a digit (figures, dates, tickers) and every capitalised word that does not open a
    sentence (names: companies, people, places).

    Templated wire items (dividend notices, bond issues, daily statistics) of different
    issuers or days share their template words and differ in exactly these: a copy keeps
    them, another company's notice does not (docs/stream.md, "Templated items").  A word
    opens a sentence when the text before it, quotes and brackets skipped, is empty or ends
    with ``.!?:;``.  Deterministic; O(len(text)).
    """
    cfg = config or OverlapConfig()
    # An ASCII \w+ run is one word of words(): its case fold is its lower case (no masks).
    plain = not cfg.mask_digits and not cfg.mask_calendar
    out: list[str] = []
    for m in _KEY_CANDIDATE_RE.finditer(text):
        token = m.group()
        if not any(c.isdigit() for c in token):
            if not token[0].isupper():
                continue
            j = m.start() - 1
            while j >= 0 and text[j] in _KEY_SKIP:
                j -= 1
            if j < 0 or text[j] in _SENTENCE_END:
                continue
        if plain and token.isascii():
            out.append(token.lower())
        else:
            out.extend(words(token, cfg))
    return out


def lcs_length(u: str, v: str) -> int:
    """Length of the longest common subsequence of two strings (O(|u| |v|) dynamic program)."""
    if not u or not v:
        return 0
    prev = [0] * (len(v) + 1)
    for cu in u:
        cur = [0]
        for j, cv in enumerate(v):
            cur.append(prev[j] + 1 if cu == cv else max(prev[j + 1], cur[j]))
        prev = cur
    return prev[-1]


def delete_keys(word: str, deletes: int) -> set[str]:
    """Every string made from ``word`` by deleting at most ``deletes`` characters (itself
    included; never the empty string): SymSpell's delete neighbourhood."""
    keys = {word}
    level = {word}
    for _ in range(deletes):
        level = {w[:i] + w[i + 1 :] for w in level if len(w) > 1 for i in range(len(w))}
        keys |= level
    return keys


def _allowed(cfg: OverlapConfig, u: str, v: str) -> int:
    # Two long words may use max_deletes; if either is short, one delete at most.
    if min(len(u), len(v)) < cfg.long_word_length:
        return min(1, cfg.max_deletes)
    return cfg.max_deletes


def _depth(cfg: OverlapConfig, w: str) -> int:
    # Keys deep enough for every match the word may take part in: a short word allows one
    # delete (_allowed), and a long word's deeper keys include its one-delete keys, so two
    # words allowed d deletes always share a key of depth <= d (no match is missed).
    return cfg.max_deletes if len(w) >= cfg.long_word_length else min(1, cfg.max_deletes)


def _deletes_needed(u: str, v: str) -> int:
    return max(len(u), len(v)) - lcs_length(u, v)


def _match_joined(new_left: list[str], stored_left: Counter[str]) -> tuple[list[str], int]:
    """Match new words that are two stored words run together; returns the still unmatched
    new words (in order) and the number of joined matches (stored_left is updated)."""
    rest: list[str] = []
    joined = 0
    for w in new_left:
        found = False
        # Split points in order: the first split whose halves are both available wins.
        for i in range(1, len(w)):
            a, b = w[:i], w[i:]
            if stored_left[a] > 0 and stored_left[b] > (1 if a == b else 0):
                stored_left[a] -= 1
                stored_left[b] -= 1
                joined += 1
                found = True
                break
        if not found:
            rest.append(w)
    return rest, joined


@functools.lru_cache(maxsize=1 << 16)
def _cached_keys(word: str, deletes: int) -> tuple[str, ...]:
    # Words recur across articles (Zipf): their delete keys are computed once (a few MB).
    return tuple(sorted(delete_keys(word, deletes)))


@functools.lru_cache(maxsize=1 << 17)
def _word_keys(word: str, max_deletes: int, long_word_length: int) -> tuple[str, ...]:
    # The keys of _depth's depth for the word, memoised with it (one call per lookup).
    depth = max_deletes if len(word) >= long_word_length else min(1, max_deletes)
    return _cached_keys(word, depth)


def _key_index(cfg: OverlapConfig, pool: Iterable[str]) -> dict[str, list[str]]:
    by_key: dict[str, list[str]] = {}
    for w in pool:
        for k in _word_keys(w, cfg.max_deletes, cfg.long_word_length):
            by_key.setdefault(k, []).append(w)
    return by_key


def _best_fuzzy(
    cfg: OverlapConfig,
    u: str,
    by_key: Mapping[str, list[str]],
    pool: Mapping[str, int],
    present: AbstractSet[str] | None = None,
) -> tuple[int, str] | None:
    """The available word (``pool`` count > 0) matching ``u`` with the fewest deletes, ties
    to the smaller string; None when none matches.  ``by_key`` may index more words than
    ``pool`` holds (the process-wide index): only the pool's count.  ``present``: a superset
    of the delete keys of the pool's words (keys outside it cannot lead to a pool word)."""
    # The pool's words sharing a key with u (set operations in C); the minimum of
    # (deletes, word) does not depend on the order they are visited in.
    pool_words = pool.keys()
    found: set[str] = set()
    for k in _word_keys(u, cfg.max_deletes, cfg.long_word_length):
        if present is not None and k not in present:
            continue
        listed = by_key.get(k)
        if listed is not None:
            found |= pool_words & listed
    best: tuple[int, str] | None = None
    for v in found:
        if pool[v] == 0:
            continue
        need = _deletes_needed(u, v)
        if need <= _allowed(cfg, u, v) and (best is None or (need, v) < best):
            best = (need, v)
    return best


def _shares_key(
    cfg: OverlapConfig, u: str, by_key: Mapping[str, list[str]], vocabulary: Mapping[str, int]
) -> bool:
    """Whether ``u`` shares a delete key with a word of ``vocabulary`` (of at least
    ``fuzzy_min_length``), looked up in ``by_key``, an index holding every such word (the
    shared index after the text's registration): the same answer as testing ``u``'s keys
    against the text's whole key set (:meth:`OverlapText.key_set`), without building it."""
    words_of = vocabulary.keys()
    for k in _word_keys(u, cfg.max_deletes, cfg.long_word_length):
        found = by_key.get(k)
        if found is not None and not words_of.isdisjoint(found):
            return True
    return False


def _keys_of(cfg: OverlapConfig, pool: Iterable[str]) -> set[str]:
    # Every delete key of the pool's words: two words that match share one (_depth), so a
    # word with no key in this set matches none of them (a cheap exact skip).
    return set().union(*(_word_keys(w, cfg.max_deletes, cfg.long_word_length) for w in pool))


def _match_fuzzy(
    cfg: OverlapConfig,
    new_left: list[str],
    stored_left: Counter[str],
    index: Mapping[str, list[str]] | None = None,
    present_keys: AbstractSet[str] | None = None,
    settled: Callable[[int, int], bool] | None = None,
    stored: OverlapText | None = None,
) -> tuple[int, bool]:
    """Greedy fuzzy matching of left-over words through delete keys (see module doc);
    returns (matches, complete).  ``index``: a key index of a superset of the left-over
    stored words (the shared index); the pool restricts it to the available ones, so the
    matching is the same as with an index of the left-over words alone.  ``present_keys``: a
    superset of the left-over stored words' delete keys (the stored text's
    :meth:`OverlapText.key_set`).  ``settled(matched, still_possible)``: whether the
    decision is already known to fail from the matches so far and an upper bound of those
    still to come; the matching then stops early (complete False, a prefix of the greedy
    matching).  ``stored`` (with ``index`` and no ``present_keys``): the stored text; a new
    word is then looked up when it shares a delete key with any of its words, as if
    ``present_keys`` were its whole key set (:meth:`OverlapText.key_set`), which is built
    only when that is cheaper than testing the few new words one by one
    (:func:`_shares_key`)."""
    pool = {w: n for w, n in stored_left.items() if n > 0 and len(w) >= cfg.fuzzy_min_length}
    if not pool:
        return 0, True
    md, long_len, shortest = cfg.max_deletes, cfg.long_word_length, cfg.fuzzy_min_length
    if index is not None and present_keys is None and stored is not None:
        eligible = [u for u in new_left if len(u) >= shortest]
        setting = (md, long_len, shortest)
        if setting in stored.key_sets or 4 * len(eligible) > len(stored.counts):
            present_keys = stored.key_set(cfg)
        else:
            # Few words to test: their keys are looked up in the index (the same answer
            # as the key set, which costs more to build); _best_fuzzy needs no key filter
            # (the pool filters the index's words).
            vocabulary = stored.counts
            todo = [u for u in eligible if _shares_key(cfg, u, index, vocabulary)]
            return _greedy_fuzzy(cfg, todo, index, pool, None, settled)
    if index is None:
        by_key: Mapping[str, list[str]] = _key_index(cfg, pool)
        present: AbstractSet[str] = _keys_of(cfg, pool)
    else:
        by_key, present = index, present_keys if present_keys is not None else _keys_of(cfg, pool)
    # Only words sharing a delete key with some stored word can match (_depth).
    todo = [
        u
        for u in new_left
        if len(u) >= shortest and not present.isdisjoint(_word_keys(u, md, long_len))
    ]
    return _greedy_fuzzy(cfg, todo, by_key, pool, present, settled)


def _greedy_fuzzy(
    cfg: OverlapConfig,
    todo: list[str],
    by_key: Mapping[str, list[str]],
    pool: dict[str, int],
    present: AbstractSet[str] | None,
    settled: Callable[[int, int], bool] | None,
) -> tuple[int, bool]:
    # The greedy loop of _match_fuzzy over the words that may match, in text order.
    matched = 0
    for done, u in enumerate(todo):
        if settled is not None and settled(matched, len(todo) - done):
            return matched, False
        best = _best_fuzzy(cfg, u, by_key, pool, present)
        if best is not None:
            pool[best[1]] -= 1
            matched += 1
    return matched, True


def overlap_words(
    stored: Sequence[str],
    new: Sequence[str],
    config: OverlapConfig | None = None,
    *,
    decide: tuple[float, float] | None = None,
) -> Overlap:
    """:func:`overlap` on already normalised words (from :func:`words`, same config).

    ``decide=(min_coverage, max_added)``: the caller only needs to know whether
    ``coverage >= min_coverage and added <= max_added``; the fuzzy stage is then skipped
    when the answer is already true after the exact stage, and skipped or stopped as soon
    as it is false even if every left-over word that could still match did; ``complete``
    is then False.
    The answer is the same as with the full matching.
    """
    cfg = config or OverlapConfig()
    return _overlap_counts(Counter(stored), len(stored), new, Counter(new), cfg, decide)


def _overlap_counts(
    a: Counter[str],
    n_stored: int,
    new: Sequence[str],
    b: Counter[str],
    cfg: OverlapConfig,
    decide: tuple[float, float] | None,
    stored: OverlapText | None = None,
    packaging: int = 0,
    new_text: OverlapText | None = None,
) -> Overlap:
    # The multiset intersection over the shared distinct words only (a C-level set
    # intersection first; Counter's & and - loop over every word in Python).
    shared = a.keys() & b.keys()
    # sum of min(a[w], b[w]) over the shared words, in C (a set iterates in one order).
    exact = sum(map(min, map(a.__getitem__, shared), map(b.__getitem__, shared)))
    n_new = len(new)
    checked = False  # _fuzzy_irrelevant already known False
    if decide is not None and cfg.max_deletes > 0 and not cfg.match_joined:
        # Settled before the left-overs are listed: _fuzzy_irrelevant's bound with every
        # left-over word counted as eligible (never decides differently).
        most = min(n_new - exact, n_stored - exact)
        if _holds(decide, exact, exact, n_stored, n_new) or not _holds(
            decide, exact + most, exact + most, n_stored, n_new
        ):
            done = exact >= n_new or exact >= n_stored
            return Overlap(n_stored, n_new, exact, exact, exact, 0, 0, packaging, done)
        if stored is not None and n_new > exact and n_stored > exact:
            # Both sides have left-overs: _fuzzy_irrelevant's test before they are listed,
            # from the eligible (long enough) word totals minus the long words matched.
            shortest = cfg.fuzzy_min_length
            short_stored, long_stored = stored.length_split(shortest)
            if new_text is not None:
                long_new = new_text.length_split(shortest)[1]
            else:
                long_new = sum(n for w, n in b.items() if len(w) >= shortest)
            short_shared = shared & short_stored
            exact_long = exact - sum(
                map(min, map(a.__getitem__, short_shared), map(b.__getitem__, short_shared))
            )
            most = min(long_new - exact_long, long_stored - exact_long)
            if _holds(decide, exact, exact, n_stored, n_new) or not _holds(
                decide, exact + most, exact + most, n_stored, n_new
            ):
                return Overlap(n_stored, n_new, exact, exact, exact, 0, 0, packaging, False)
            checked = True
    bget = b.get
    stored_left = Counter({w: m - bget(w, 0) for w, m in a.items() if m > bget(w, 0)})
    # Left-over new words in text order (the greedy order), each occurrence once: every
    # occurrence of a word the stored text lacks, the first b - a of a word it has fewer of.
    only_new = b.keys() - a.keys()
    surplus = {w: b[w] - a[w] for w in shared if b[w] > a[w]}
    new_left: list[str]
    if not surplus:
        new_left = [w for w in new if w in only_new] if only_new else []
    else:
        left_counts = dict.fromkeys(only_new, 0)
        for w in only_new:
            left_counts[w] = b[w]
        left_counts.update(surplus)
        new_left = []
        for w in new:
            if left_counts.get(w, 0) > 0:
                left_counts[w] -= 1
                new_left.append(w)
    joined = 0
    if cfg.match_joined and new_left and stored_left:
        new_left, joined = _match_joined(new_left, stored_left)
    fuzzy = 0
    complete = True
    if cfg.max_deletes > 0 and new_left and stored_left:
        if (
            decide is not None
            and not checked
            and _fuzzy_irrelevant(
                cfg, decide, exact, joined, n_stored, len(new), new_left, stored_left
            )
        ):
            complete = False
        else:
            settled: Callable[[int, int], bool] | None = None
            if decide is not None:
                rule, n_new, s0, n0 = decide, len(new), exact + 2 * joined, exact + joined

                def known(f: int, rest: int) -> bool:
                    # Cannot hold even if every remaining word matched.  (Not "holds
                    # already": callers also read the matched count, e.g. the stream's
                    # floor of matched words, so a passing matching runs to the end.)
                    return not _holds(rule, s0 + f + rest, n0 + f + rest, n_stored, n_new)

                settled = known

            if stored is None:
                fuzzy, complete = _match_fuzzy(cfg, new_left, stored_left, settled=settled)
            else:
                index = stored.key_index(cfg)
                fuzzy, complete = _match_fuzzy(
                    cfg, new_left, stored_left, index, None, settled, stored
                )
    return Overlap(
        stored_words=n_stored,
        new_words=len(new),
        stored_matched=exact + 2 * joined + fuzzy,
        new_matched=exact + joined + fuzzy,
        exact=exact,
        fuzzy=fuzzy,
        joined=joined,
        packaging=packaging,
        complete=complete,
    )


def _holds(decide: tuple[float, float], s: int, n: int, n_stored: int, n_new: int) -> bool:
    cov = s / n_stored if n_stored else 1.0
    added = 1.0 - n / n_new if n_new else 0.0
    return cov >= decide[0] and added <= decide[1]


def _fuzzy_irrelevant(
    cfg: OverlapConfig,
    decide: tuple[float, float],
    exact: int,
    joined: int,
    n_stored: int,
    n_new: int,
    new_left: list[str],
    stored_left: Counter[str],
) -> bool:
    """Whether fuzzy matching cannot change ``coverage >= c and added <= a`` (it only adds
    matches, at most one per eligible left-over word on each side)."""
    min_cov, max_added = decide
    s_matched, n_matched = exact + 2 * joined, exact + joined

    def holds(s: int, n: int) -> bool:
        cov = s / n_stored if n_stored else 1.0
        added = 1.0 - n / n_new if n_new else 0.0
        return cov >= min_cov and added <= max_added

    if holds(s_matched, n_matched):
        return True
    eligible_new = sum(1 for w in new_left if len(w) >= cfg.fuzzy_min_length)
    eligible_stored = sum(n for w, n in stored_left.items() if len(w) >= cfg.fuzzy_min_length)
    most = min(eligible_new, eligible_stored)
    return not holds(s_matched + most, n_matched + most)


def paragraphs(text: str) -> list[str]:
    """Non-blank paragraphs of ``text``: split at blank lines or at a line break followed by
    indentation (newswire paragraphs are indented)."""
    return [p for p in _PARAGRAPH_RE.split(text) if p.strip()]


class _SharedKeyIndex:
    """Process-wide delete-key index: key -> every registered word having it.

    Words recur across articles (Zipf), so indexing each distinct word once for all texts
    replaces building one index per stored text (the hot spot of the stream's word test).
    Lookups filter the candidates by the text's own words, so the matching is the same as
    with a per-text index.  Bounded: past ``max_words`` words it is emptied and its
    ``generation`` advances, and texts re-register their words on their next lookup.
    """

    def __init__(self, max_words: int) -> None:
        self.max_words = max_words
        self.by_key: dict[str, list[str]] = {}
        self.words: set[str] = set()
        self.generation = 0

    def register(self, cfg: OverlapConfig, words: Iterable[str]) -> None:
        fresh = [w for w in words if len(w) >= cfg.fuzzy_min_length and w not in self.words]
        if len(self.words) + len(fresh) > self.max_words:
            self.by_key = {}
            self.words = set()
            self.generation += 1
            fresh = [w for w in dict.fromkeys(words) if len(w) >= cfg.fuzzy_min_length]
        by_key = self.by_key
        for w in fresh:
            if w in self.words:
                continue
            self.words.add(w)
            for k in _word_keys(w, cfg.max_deletes, cfg.long_word_length):
                found = by_key.get(k)
                if found is None:
                    by_key[k] = [w]
                else:
                    found.append(w)


# One shared index per fuzzy setting; 200,000 words (about 1.6 M keys, some 150 MB at most;
# Reuters-21578 has about 40,000 distinct words).
_SHARED_MAX_WORDS = 200_000
_SHARED: dict[tuple[int, int, int], _SharedKeyIndex] = {}
# Texts holding a memoised key set (OverlapText.key_set), oldest first, by id (held, so an
# id is never reused while listed); at most _KEY_SETS_KEPT of them keep it.
_KEY_SETS_KEPT = 1024
_KEY_SETS_HELD: OrderedDict[int, OverlapText] = OrderedDict()


@dataclasses.dataclass(frozen=True, slots=True)
class OverlapText:
    """A text split into normalised words once, for comparing it with many others.

    ``paragraphs``: the words of each paragraph; ``words``: all of them in order;
    ``counts``: their bag (read-only by convention); ``texts``: the paragraphs' raw text
    (for :meth:`keys`).  Made by :func:`prepare`.
    """

    paragraphs: tuple[tuple[str, ...], ...]
    words: tuple[str, ...]
    counts: Counter[str]
    texts: tuple[str, ...] = ()
    # Generation of the shared key index this text's words were registered in, per setting.
    registered: dict[tuple[int, int, int], int] = dataclasses.field(
        default_factory=dict, compare=False, repr=False
    )
    key_sets: dict[tuple[int, int, int], frozenset[str]] = dataclasses.field(
        default_factory=dict, compare=False, repr=False
    )
    # The key words of each paragraph, computed on first use (most texts never need them).
    key_memo: list[tuple[tuple[str, ...], ...]] = dataclasses.field(
        default_factory=list, compare=False, repr=False
    )
    # The last peel_packaging result of this text as the new one: (stored, config, range);
    # the stream asks for it up to three times per pair (overlap, sequence, key words).
    peel_memo: list[tuple[OverlapText, OverlapConfig, tuple[int, int]]] = dataclasses.field(
        default_factory=list, compare=False, repr=False
    )
    # length_split's answer per minimum length.
    split_memo: dict[int, tuple[frozenset[str], int]] = dataclasses.field(
        default_factory=dict, compare=False, repr=False
    )

    def length_split(self, min_length: int) -> tuple[frozenset[str], int]:
        """The distinct words shorter than ``min_length`` and how many of the text's words
        (with repeats) are at least that long (memoised)."""
        found = self.split_memo.get(min_length)
        if found is None:
            short = frozenset(w for w in self.counts if len(w) < min_length)
            long_total = len(self.words) - sum(map(self.counts.__getitem__, short))
            found = self.split_memo[min_length] = (short, long_total)
        return found

    def key_index(self, cfg: OverlapConfig) -> Mapping[str, list[str]]:
        """Delete keys -> words having them: a superset of this text's distinct words of at
        least ``fuzzy_min_length`` (the shared index; filter by :attr:`counts`)."""
        setting = (cfg.max_deletes, cfg.long_word_length, cfg.fuzzy_min_length)
        shared = _SHARED.get(setting)
        if shared is None:
            shared = _SHARED[setting] = _SharedKeyIndex(_SHARED_MAX_WORDS)
        if self.registered.get(setting) != shared.generation:
            shared.register(cfg, self.counts)
            self.registered[setting] = shared.generation
        return shared.by_key

    def key_set(self, cfg: OverlapConfig) -> AbstractSet[str]:
        """Every delete key of this text's words of at least ``fuzzy_min_length``."""
        setting = (cfg.max_deletes, cfg.long_word_length, cfg.fuzzy_min_length)
        found = self.key_sets.get(setting)
        if found is None:
            found = self.key_sets[setting] = frozenset(
                _keys_of(cfg, (w for w in self.counts if len(w) >= cfg.fuzzy_min_length))
            )
            # Memory bound: only the last _KEY_SETS_KEPT texts keep their key sets (some
            # 25 KB each); older ones drop them and rebuild them on their next use.
            _KEY_SETS_HELD[id(self)] = self
            if len(_KEY_SETS_HELD) > _KEY_SETS_KEPT:
                _KEY_SETS_HELD.popitem(last=False)[1].key_sets.clear()
        return found

    def keys(self, cfg: OverlapConfig) -> tuple[tuple[str, ...], ...]:
        """The key words (:func:`key_words`, same config as :func:`prepare`) per paragraph."""
        if not self.key_memo:
            self.key_memo.append(tuple(tuple(key_words(t, cfg)) for t in self.texts))
        return self.key_memo[0]


def prepare(text: str, config: OverlapConfig | None = None) -> OverlapText:
    """Split ``text`` for :func:`overlap_prepared` (the words of :func:`words`, by paragraph)."""
    cfg = config or OverlapConfig()
    split = tuple(paragraphs(text))
    # Interned: the texts the stream caches and the shared key index hold one copy of each
    # word (CPython drops an interned string with its last reference).
    if cfg.mask_digits or cfg.mask_calendar:
        paras = tuple(tuple(map(sys.intern, words(p, cfg))) for p in split)
    else:  # words() inlined: no masks
        find, fold, intern = _WORD_RE.findall, str.casefold, sys.intern
        paras = tuple(tuple(map(intern, find(fold(p)))) for p in split)
    flat = tuple(itertools.chain.from_iterable(paras))
    return OverlapText(paras, flat, Counter(flat), split)


def peel_packaging(
    stored: OverlapText, new: OverlapText, config: OverlapConfig | None = None
) -> tuple[int, int]:
    """Paragraph range ``[i, j)`` of ``new`` left once its packaging (module doc) is peeled.
    A word counts as found when it is a word of ``stored`` or matches one fuzzily (the
    fuzzy rule of the matching), so a misspelt paragraph of the article is not packaging.
    Memoised on ``new`` for the last ``stored`` (a pure function of the two texts)."""
    cfg = config or OverlapConfig()
    if len(new.paragraphs) <= 1:
        return 0, len(new.paragraphs)  # one paragraph always stays
    memo = new.peel_memo
    if memo and memo[0][0] is stored and (memo[0][1] is cfg or memo[0][1] == cfg):
        return memo[0][2]
    found = _peel(stored, new, cfg)
    memo[:] = [(stored, cfg, found)]
    return found


def _peel(stored: OverlapText, new: OverlapText, cfg: OverlapConfig) -> tuple[int, int]:
    # peel_packaging's computation (no memo).
    paras = new.paragraphs
    vocabulary = stored.counts

    def found(w: str) -> bool:
        if w in vocabulary:
            return True
        if cfg.max_deletes == 0 or len(w) < cfg.fuzzy_min_length:
            return False
        # No key filter needed: the pool (the stored bag) filters the index's words.
        return _best_fuzzy(cfg, w, stored.key_index(cfg), vocabulary) is not None

    def packaging(ws: tuple[str, ...]) -> bool:
        if len(ws) > cfg.packaging_max_words:
            return False
        need = cfg.packaging_min_found * len(ws)
        exact = sum(1 for w in ws if w in vocabulary)
        if exact >= need:
            return False
        fuzzy_possible = sum(
            1 for w in ws if w not in vocabulary and len(w) >= cfg.fuzzy_min_length
        )
        if cfg.max_deletes == 0 or exact + fuzzy_possible < need:
            return True  # decided without the fuzzy lookups
        return sum(1 for w in ws if found(w)) < need

    i, j = 0, len(paras)
    if cfg.packaging_max_words > 0:
        # At least one paragraph stays: a text is never all packaging.
        while j - i > 1 and packaging(paras[i]):
            i += 1
        while j - i > 1 and packaging(paras[j - 1]):
            j -= 1
    return i, j


def overlap_prepared(
    stored: OverlapText,
    new: OverlapText,
    config: OverlapConfig | None = None,
    *,
    decide: tuple[float, float] | None = None,
) -> Overlap:
    """:func:`overlap` of two prepared texts (same config); ``decide`` as in
    :func:`overlap_words`."""
    cfg = config or OverlapConfig()
    i, j = peel_packaging(stored, new, cfg)
    whole: OverlapText | None = new
    if i == 0 and j == len(new.paragraphs):
        kept, kept_counts, peeled = new.words, new.counts, 0
    else:
        kept = tuple(w for ws in new.paragraphs[i:j] for w in ws)
        kept_counts = Counter(kept)
        peeled = len(new.words) - len(kept)
        whole = None
    return _overlap_counts(
        stored.counts, len(stored.words), kept, kept_counts, cfg, decide, stored, peeled, whole
    )


@dataclasses.dataclass(frozen=True, slots=True)
class KeyOverlap:
    """Key words (:func:`key_words`) of a (stored, new) pair found on the other side.

    ``names_*``: capitalised words and words mixing letters and digits; ``figures_*``: runs
    of digits and month and week-day names.  ``*_new`` / ``*_found``: the new text's key
    words (packaging peeled) and how many of them occur among the stored text's words;
    ``*_stored`` / ``*_kept``:
    the same the other way round.  Ratios are properties (0.0 added / 1.0 kept when a side
    has none).
    """

    names_new: int
    names_found: int
    figures_new: int
    figures_found: int
    names_stored: int
    names_kept: int
    figures_stored: int
    figures_kept: int

    @property
    def names_added(self) -> float:
        """Share of the new text's names not in the stored text."""
        return 1.0 - self.names_found / self.names_new if self.names_new else 0.0

    @property
    def figures_added(self) -> float:
        """Share of the new text's figures and dates not in the stored text."""
        return 1.0 - self.figures_found / self.figures_new if self.figures_new else 0.0

    @property
    def names_kept_share(self) -> float:
        """Share of the stored text's names the new text keeps."""
        return self.names_kept / self.names_stored if self.names_stored else 1.0

    @property
    def figures_kept_share(self) -> float:
        """Share of the stored text's figures and dates the new text keeps."""
        return self.figures_kept / self.figures_stored if self.figures_stored else 1.0


def _is_figure(w: str) -> bool:
    # Runs of digits and calendar words; a run mixing letters and digits (a ticker, or a
    # word with an OCR confusion such as "l987" or "deb1") is treated like a name.
    return w.isdigit() or w in _CALENDAR or w == _CALENDAR_TOKEN


def _found_counts(
    cfg: OverlapConfig, keys: Iterable[str], other: OverlapText
) -> tuple[int, int, int, int]:
    """(names, names found, figures, figures found) of ``keys`` among ``other``'s words:
    figures exactly, names exactly or fuzzily (the fuzzy rule of the matching)."""
    names = names_found = figures = figures_found = 0
    vocabulary = other.counts
    for w in keys:
        if _is_figure(w):
            figures += 1
            figures_found += w in vocabulary
            continue
        names += 1
        if w in vocabulary or (
            cfg.max_deletes > 0
            and len(w) >= cfg.fuzzy_min_length
            and _best_fuzzy(cfg, w, other.key_index(cfg), vocabulary) is not None
        ):
            names_found += 1
    return names, names_found, figures, figures_found


def key_overlap(
    stored: OverlapText, new: OverlapText, config: OverlapConfig | None = None
) -> KeyOverlap:
    """How many of each text's key words (:func:`key_words`: names, figures and dates)
    occur among the other text's words, after the new text's packaging is peeled.

    Templated wire items of different issuers or days (dividend notices, bond issues,
    daily statistics) share the template's words and word order and differ in exactly
    these; a copy keeps them.  Figures and dates match only exactly (a changed figure is
    another period's); names also fuzzily, as in :func:`overlap` (a misspelt name is the
    same name).  A key word is looked up among *all* words of the other text, so a new
    capitalised headline of the same article's words is not new.  Exact and deterministic;
    O(k) for k key words plus the fuzzy lookups of the missing names.
    """
    cfg = config or OverlapConfig()
    i, j = peel_packaging(stored, new, cfg)
    n, nf, f, ff = _found_counts(cfg, (w for ws in new.keys(cfg)[i:j] for w in ws), stored)
    kept = new
    if i != 0 or j != len(new.paragraphs):
        kept_words = tuple(w for ws in new.paragraphs[i:j] for w in ws)
        kept = OverlapText(new.paragraphs[i:j], kept_words, Counter(kept_words), new.texts[i:j])
    sn, sk, sf, sfk = _found_counts(cfg, (w for ws in stored.keys(cfg) for w in ws), kept)
    return KeyOverlap(n, nf, f, ff, sn, sk, sf, sfk)


# A whole \w+ run of ASCII digits: a figure key word (key_words keeps every run holding a
# digit, _is_figure every all-digit one) and, in the case-folded text, a word.
_DIGIT_RUN_RE = re.compile(r"\b[0-9]+\b")


@dataclasses.dataclass(frozen=True, slots=True)
class DigitRuns:
    """A text's ASCII digit runs, for :func:`figures_replaced`: ``keys`` as key words (in
    the raw text, as :func:`key_words` reads it) and ``words`` as words (in the case-folded
    text, as :func:`words` reads it; the same set for an ASCII text)."""

    keys: frozenset[str]
    words: frozenset[str]


def digit_runs(text: str) -> DigitRuns:
    """The :class:`DigitRuns` of ``text`` (O(len(text)): one scan).  An ASCII text is
    scanned by a compiled kernel (about 5x faster than the regular expression on Reuters,
    tested equal to it); other text by the regular expression ``\\b[0-9]+\\b``."""
    if text.isascii():
        from neardup.similarity import _word_kernels  # compiled; numba loads on first use

        bounds = _word_kernels.digit_run_bounds(
            np.frombuffer(text.encode("ascii"), dtype=np.uint8)
        ).tolist()
        keys = frozenset(map(text.__getitem__, map(slice, bounds[0::2], bounds[1::2])))
        return DigitRuns(keys, keys)
    keys = frozenset(_DIGIT_RUN_RE.findall(text))
    return DigitRuns(keys, frozenset(_DIGIT_RUN_RE.findall(text.casefold())))


def _never_peeled_range(sizes: Sequence[int], cfg: OverlapConfig) -> tuple[int, int]:
    # never_peeled's range from the paragraphs' word counts.
    if cfg.packaging_max_words == 0 or len(sizes) <= 1:
        return 0, len(sizes)
    long = [k for k, n in enumerate(sizes) if n > cfg.packaging_max_words]
    return (long[0], long[-1] + 1) if long else (0, 0)


def never_peeled(new: OverlapText, config: OverlapConfig | None = None) -> tuple[int, int]:
    """Paragraph range of ``new`` that :func:`peel_packaging` keeps whatever the stored text:
    from its first to its last paragraph of more than ``packaging_max_words`` words (the
    peel stops at the first paragraph that is not packaging, from either edge); the whole
    text when nothing can be peeled; an empty range when every paragraph is short."""
    return _never_peeled_range([len(ws) for ws in new.paragraphs], config or OverlapConfig())


def never_peeled_digits(
    text: str, config: OverlapConfig | None = None, *, runs: frozenset[str] | None = None
) -> frozenset[str]:
    """The ASCII digit runs (as key words) of the :func:`never_peeled` paragraphs of
    ``text``, without preparing it (the paragraphs' word counts only).  Without masks the
    range is found from both edges, counting each paragraph's words only up to
    ``packaging_max_words + 1`` (the same range: only the first and last long paragraphs
    matter).  ``runs``: the text's own runs (``digit_runs(text).keys``) when known; they
    are the answer when the peeled paragraphs hold none (the usual case)."""
    cfg = config or OverlapConfig()
    paras = paragraphs(text)
    if cfg.mask_digits or cfg.mask_calendar:
        i, j = _never_peeled_range([len(words(p, cfg)) for p in paras], cfg)
    else:
        i, j = _never_peeled_edges(paras, cfg.packaging_max_words)
    # Paragraphs split at whitespace only, so their runs together are the text's runs.
    if i < j and not any(_DIGIT_RUN_RE.search(p) for p in (*paras[:i], *paras[j:])):
        return runs if runs is not None else frozenset(_DIGIT_RUN_RE.findall(text))
    return frozenset(itertools.chain.from_iterable(map(_DIGIT_RUN_RE.findall, paras[i:j])))


def _never_peeled_edges(paras: Sequence[str], max_words: int) -> tuple[int, int]:
    # _never_peeled_range of the unmasked word counts (words() without masks: \w+ runs of
    # the case-folded paragraph), each counted only as far as deciding "> max_words".
    if max_words == 0 or len(paras) <= 1:
        return 0, len(paras)

    def long(p: str) -> bool:
        found = itertools.islice(_WORD_RE.finditer(p.casefold()), max_words + 1)
        return sum(1 for _ in found) > max_words

    first = next((k for k in range(len(paras)) if long(paras[k])), None)
    if first is None:
        return 0, 0
    last = next(k for k in range(len(paras) - 1, first - 1, -1) if long(paras[k]))
    return first, last + 1


def figures_replaced(
    stored: DigitRuns,
    new: DigitRuns,
    new_core: frozenset[str],
    config: OverlapConfig | None = None,
) -> bool:
    """A cheap sufficient test that :func:`key_overlap` of the two texts has
    ``figures_added > 0`` or ``figures_kept_share < 1`` (some figure of one is not among the
    other's words), without the word matching: ``stored`` / ``new``: the texts'
    :func:`digit_runs`; ``new_core``: :func:`never_peeled_digits` of the new text.

    True when a digit run of the stored text is not a word of the new one (a stored figure
    the kept new text cannot keep), or a digit run of the new text's never-peeled part is
    not a word of the stored one (a new figure not found).  False means "not known", never
    "the figures agree".  Exact for what it claims (tested against :func:`key_overlap`);
    only without ``mask_digits`` / ``mask_calendar`` (False otherwise).  O(d) for d digit
    runs.
    """
    cfg = config or OverlapConfig()
    if cfg.mask_digits or cfg.mask_calendar:
        return False
    return not stored.keys <= new.words or not new_core <= stored.words


def sequence_containment(
    stored: OverlapText,
    new: OverlapText,
    width: int = 3,
    config: OverlapConfig | None = None,
    *,
    at_least: float | None = None,
) -> float:
    """Share of the new text's word ``width``-gram positions whose n-gram occurs in the
    stored text, after its packaging is peeled and each of its words not in the stored text
    is replaced by the stored word it matches fuzzily (the fewest deletes, then the smaller
    string); words are normalised as in :func:`words` (digits masked only with
    ``mask_digits``).

    The bag measures of :func:`overlap` ignore word order: two templated items (bond issues
    of different borrowers, earnings tables) share most of their words and differ only in
    names and numbers.  A copy keeps the *sequence* of the article, misspelt or not, so its
    corrected n-grams are found in the stored text; a templated item's names break them.
    1.0 when the new text has fewer than ``width`` words.  Exact and deterministic; cost
    O(n + m) plus the fuzzy lookups of the new words missing from the stored text.

    ``at_least``: correcting words only adds found positions, so when the share without
    correction already reaches ``at_least`` that share is returned (a lower bound of the
    full value, enough to decide ``>= at_least``).
    """
    cfg = config or OverlapConfig()
    vocabulary = stored.counts
    i, j = peel_packaging(stored, new, cfg)
    kept = [w for ws in new.paragraphs[i:j] for w in ws]
    positions = len(kept) - width + 1
    if positions <= 0:
        return 1.0
    theirs = {tuple(stored.words[k : k + width]) for k in range(len(stored.words) - width + 1)}

    def share(ws: list[str]) -> float:
        found = sum(1 for k in range(positions) if tuple(ws[k : k + width]) in theirs)
        return found / positions

    if at_least is not None:
        plain = share(kept)
        if plain >= at_least:
            return plain
    corrected: list[str] = []
    for w in kept:
        if w not in vocabulary and cfg.max_deletes > 0 and len(w) >= cfg.fuzzy_min_length:
            best = _best_fuzzy(cfg, w, stored.key_index(cfg), vocabulary)
            if best is not None:
                w = best[1]
        corrected.append(w)
    return share(corrected)


def overlap(
    stored: str,
    new: str,
    config: OverlapConfig | None = None,
    *,
    decide: tuple[float, float] | None = None,
) -> Overlap:
    """Directed word overlap of ``new`` against ``stored`` (see the module docstring);
    ``decide``: as in :func:`overlap_words`."""
    cfg = config or OverlapConfig()
    return overlap_prepared(prepare(stored, cfg), prepare(new, cfg), cfg, decide=decide)
