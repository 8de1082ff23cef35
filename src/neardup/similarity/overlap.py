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

Guarantees: exact and deterministic for the stated matching (tested equal to an O(n * m)
brute-force matcher that compares every pair of left-over words by their LCS).  Cost:
O(n + m) for the exact part; the fuzzy part builds the delete keys of the stored words
(O(L^d) keys per word of length L, d = ``max_deletes``; once per prepared text, memoised per
word) and looks each left-over new word up through its own keys, so noise-free pairs pay
almost nothing for it; pure Python, about 0.5-1 ms for a pair of news articles.  Memory:
O(n + m) words and keys.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections import Counter
from collections.abc import Iterable, Sequence

from neardup.config import Config, check_int, check_range

__all__ = [
    "Overlap",
    "OverlapConfig",
    "OverlapText",
    "delete_keys",
    "key_overlap",
    "key_words",
    "lcs_length",
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
    out: list[str] = []
    for m in _WORD_RE.finditer(text):
        token = m.group()
        if not any(c.isdigit() for c in token):
            if not token[0].isupper():
                continue
            j = m.start() - 1
            while j >= 0 and text[j] in _KEY_SKIP:
                j -= 1
            if j < 0 or text[j] in _SENTENCE_END:
                continue
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


def _key_index(cfg: OverlapConfig, pool: Iterable[str]) -> dict[str, list[str]]:
    by_key: dict[str, list[str]] = {}
    for w in pool:
        for k in _cached_keys(w, _depth(cfg, w)):
            by_key.setdefault(k, []).append(w)
    return by_key


def _best_fuzzy(
    cfg: OverlapConfig, u: str, by_key: dict[str, list[str]], pool: dict[str, int] | None
) -> tuple[int, str] | None:
    """The available word (``pool`` count > 0; any when ``pool`` is None) matching ``u`` with
    the fewest deletes, ties to the smaller string; None when none matches."""
    seen: set[str] = set()
    best: tuple[int, str] | None = None
    for k in _cached_keys(u, _depth(cfg, u)):
        for v in by_key.get(k, ()):
            if v in seen or (pool is not None and pool.get(v, 0) == 0):
                continue
            seen.add(v)
            need = _deletes_needed(u, v)
            if need <= _allowed(cfg, u, v) and (best is None or (need, v) < best):
                best = (need, v)
    return best


def _match_fuzzy(
    cfg: OverlapConfig,
    new_left: list[str],
    stored_left: Counter[str],
    index: dict[str, list[str]] | None = None,
) -> int:
    """Greedy fuzzy matching of left-over words through delete keys (see module doc).
    ``index``: a key index of a superset of the left-over stored words (the whole stored
    vocabulary, cached); the pool restricts it to the available ones, so the matching is
    the same as with an index of the left-over words alone."""
    pool = {w: n for w, n in stored_left.items() if n > 0 and len(w) >= cfg.fuzzy_min_length}
    if not pool:
        return 0
    by_key = _key_index(cfg, pool) if index is None else index
    matched = 0
    for u in new_left:
        if len(u) < cfg.fuzzy_min_length:
            continue
        best = _best_fuzzy(cfg, u, by_key, pool)
        if best is not None:
            pool[best[1]] -= 1
            matched += 1
    return matched


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
    when it cannot change that answer (already true after the exact and joined stages, or
    false even if every eligible left-over word were matched), and ``complete`` is False.
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
) -> Overlap:
    common = a & b
    exact = sum(common.values())
    stored_left = a - common
    left_counts = b - common
    # Left-over new words in text order (the greedy order), each occurrence once.
    new_left: list[str] = []
    if left_counts:
        for w in new:
            if left_counts[w] > 0:
                left_counts[w] -= 1
                new_left.append(w)
    joined = 0
    if cfg.match_joined and new_left and stored_left:
        new_left, joined = _match_joined(new_left, stored_left)
    fuzzy = 0
    complete = True
    if cfg.max_deletes > 0 and new_left and stored_left:
        if decide is not None and _fuzzy_irrelevant(
            cfg, decide, exact, joined, n_stored, len(new), new_left, stored_left
        ):
            complete = False
        else:
            index = stored.key_index(cfg) if stored is not None else None
            fuzzy = _match_fuzzy(cfg, new_left, stored_left, index)
    return Overlap(
        stored_words=n_stored,
        new_words=len(new),
        stored_matched=exact + 2 * joined + fuzzy,
        new_matched=exact + joined + fuzzy,
        exact=exact,
        fuzzy=fuzzy,
        joined=joined,
        complete=complete,
    )


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


@dataclasses.dataclass(frozen=True, slots=True)
class OverlapText:
    """A text split into normalised words once, for comparing it with many others.

    ``paragraphs``: the words of each paragraph; ``words``: all of them in order;
    ``counts``: their bag (read-only by convention); ``keys``: the key words
    (:func:`key_words`) of each paragraph.  Made by :func:`prepare`.
    """

    paragraphs: tuple[tuple[str, ...], ...]
    words: tuple[str, ...]
    counts: Counter[str]
    keys: tuple[tuple[str, ...], ...] = ()
    # Delete-key index of the distinct words, built on first use per fuzzy setting.
    key_cache: dict[tuple[int, int, int], dict[str, list[str]]] = dataclasses.field(
        default_factory=dict, compare=False, repr=False
    )

    def key_index(self, cfg: OverlapConfig) -> dict[str, list[str]]:
        """Delete keys -> the distinct words (of at least ``fuzzy_min_length``) having them."""
        setting = (cfg.max_deletes, cfg.long_word_length, cfg.fuzzy_min_length)
        found = self.key_cache.get(setting)
        if found is None:
            found = _key_index(cfg, [w for w in self.counts if len(w) >= cfg.fuzzy_min_length])
            self.key_cache[setting] = found
        return found


def prepare(text: str, config: OverlapConfig | None = None) -> OverlapText:
    """Split ``text`` for :func:`overlap_prepared` (the words of :func:`words`, by paragraph)."""
    cfg = config or OverlapConfig()
    split = paragraphs(text)
    paras = tuple(tuple(words(p, cfg)) for p in split)
    flat = tuple(w for ws in paras for w in ws)
    keys = tuple(tuple(key_words(p, cfg)) for p in split)
    return OverlapText(paras, flat, Counter(flat), keys)


def peel_packaging(
    stored: OverlapText, new: OverlapText, config: OverlapConfig | None = None
) -> tuple[int, int]:
    """Paragraph range ``[i, j)`` of ``new`` left once its packaging (module doc) is peeled.
    A word counts as found when it is a word of ``stored`` or matches one fuzzily (the
    fuzzy rule of the matching), so a misspelt paragraph of the article is not packaging."""
    cfg = config or OverlapConfig()
    paras = new.paragraphs
    vocabulary = stored.counts

    def found(w: str) -> bool:
        if w in vocabulary:
            return True
        if cfg.max_deletes == 0 or len(w) < cfg.fuzzy_min_length:
            return False
        return _best_fuzzy(cfg, w, stored.key_index(cfg), None) is not None

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
    if i == 0 and j == len(new.paragraphs):
        kept, kept_counts, peeled = new.words, new.counts, 0
    else:
        kept = tuple(w for ws in new.paragraphs[i:j] for w in ws)
        kept_counts = Counter(kept)
        peeled = len(new.words) - len(kept)
    found = _overlap_counts(
        stored.counts, len(stored.words), kept, kept_counts, cfg, decide, stored
    )
    return dataclasses.replace(found, packaging=peeled)


def key_overlap(
    stored: OverlapText, new: OverlapText, config: OverlapConfig | None = None
) -> tuple[float, float]:
    """``(key_coverage, key_added)``: :func:`overlap`'s coverage and added on the key words
    (:func:`key_words`: figures and names) alone, after the new text's packaging is peeled.

    Key words holding a digit match only exactly (a changed figure is another period's or
    another company's figure); the others also fuzzily, as in :func:`overlap` (a misspelt
    name is the same name).  1.0 / 0.0 for a side without key words.  Exact and
    deterministic; O(k) for k key words plus the fuzzy lookups of the left-over ones.
    """
    cfg = config or OverlapConfig()
    i, j = peel_packaging(stored, new, cfg)
    mine = Counter(w for ws in new.keys[i:j] for w in ws)
    theirs = Counter(w for ws in stored.keys for w in ws)
    n_new, n_stored = sum(mine.values()), sum(theirs.values())
    common = mine & theirs
    matched = sum(common.values())
    left = mine - common
    stored_left = theirs - common
    fuzzy = 0
    if cfg.max_deletes > 0 and left and stored_left:
        new_left = sorted(w for w, n in left.items() for _ in range(n) if not _has_digit(w))
        letters = Counter({w: n for w, n in stored_left.items() if not _has_digit(w)})
        fuzzy = _match_fuzzy(cfg, new_left, letters)
    matched += fuzzy
    coverage = matched / n_stored if n_stored else 1.0
    added = 1.0 - matched / n_new if n_new else 0.0
    return coverage, added


def _has_digit(w: str) -> bool:
    return any(c.isdigit() for c in w)


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
            best = _best_fuzzy(cfg, w, stored.key_index(cfg), None)
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
