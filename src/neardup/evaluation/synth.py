"""Synthetic copies with known edits, and same-topic negatives, for measuring quality.

From any corpus (records with ``id``, ``text`` and optionally ``title``, ``date`` and
``topics``), :func:`synthesize` makes copies of real articles with *known* edits:

==================== =========================================================================
edit                 what it does (``strength`` is the fraction given in parentheses)
==================== =========================================================================
``exact``            an identical copy (new id and date only)
``headline``         a new headline, also put in front of the text as its first line
``boilerplate``      site boilerplate lines added above/below (added words / original words)
``paragraph_drop``   paragraphs removed (fraction of paragraphs; at least one is kept)
``paragraph_reorder``paragraphs moved (fraction of paragraphs permuted; order always changes)
``paragraph_insert`` paragraphs of other articles inserted (added words / original words)
``sentence_drop``    sentences removed (fraction of sentences; at least one is kept)
``sentence_insert``  sentences of other articles inserted (added words / original words)
``truncate``         only the first sentences kept (fraction of sentences cut)
``typos``            keyboard typos: swap, drop, double or mistype a letter (fraction of words)
``ocr``              OCR-like confusions (rn/m, l/1, O/0, e/c, ...) and lost spaces (fraction)
``numbers``          numbers, month names and week days changed (fraction of them)
``mixed``            syndication: new headline + boilerplate (s) + sentence drop (s/2) +
                     typos (s/10)
``quote_insert``     an independent article that received a sentence quoted from another
==================== =========================================================================

Negatives are pairs of *different* real articles on the same topic (a shared ``topics`` label
when records have one, else a shared title word), kept only when their exact overlap is low:
word 5-shingle containment (stemmed tokens, either direction) below ``negative_max_overlap``.
Shared quotations: article B receives a sentence of an independent article A; the pair (A, B')
is a *different* pair that shares a passage (a hard negative), and (B, B') is a copy pair.

Label semantics (precise)
-------------------------
Every pair has ``label`` in ``duplicate`` / ``similar`` / ``different``.  Copy pairs are
labelled by one of three rules (``SynthConfig.label_rule``); every pair record carries the
label under each (``labels``) and the margin under each (``margins``), so an evaluation can
report them side by side from one run.  ``label`` and ``margin`` are those of the active rule.

Two measurements, both exact and deterministic, on case-folded ``\\w+`` words as a bag
(multiset), with the added site boilerplate lines left out of the copy (boilerplate is not
story content: an article wrapped in any amount of site chrome is still the same article):

* ``kept`` = |orig ∩ copy| / |orig| and ``novel`` = 1 - |orig ∩ copy| / |copy| on the copy's
  text as published;
* ``content_kept`` and ``content_added``: the same on the copy's *content*: its text before
  noise edits (typos, OCR confusions, changed numbers and dates), so a misspelt word still
  counts as the original's word (:attr:`Copy.content_text`).

``guide`` (default).  The definition the read-labelled real news follows
(``provenance_news_2018_dev/LABELING_GUIDE.md``): two texts are the same article when "a few
sentences or paragraphs [are] added, removed, reordered or reworded, or the tail cut off",
and a cut copy "is still duplicate when the shorter covers most of the longer's main story
(say, at least about half of its body)".  So a copy is a *duplicate* when
``content_kept >= content_min_kept`` (0.5: at least half of the original is in the copy) and
``content_added <= guide_max_added`` (0.5: at least half of the copy is the original), and
*similar* (in the guide's words, partial) otherwise.  The same definition the judgement
(:mod:`neardup.rule`) is scored against on real data, so the two benchmarks ask one question.

``editorial`` (an alternative). Seed 000 defines duplicates as "articles that have a
significant overlap between them and that a human will notice that they are actually the
same articles that might have went through some editing", the typical case being a wire
story republished "word by word ... with some minor editing"; seed 003 calls "similar" the
news about the same story that is not a duplicate. An aggregator dedups so its reader is not
shown the same article twice, so the rule asks two questions: *does the copy bring the
reader new story content?* and *is it recognisably the same article?*:

1. ``content_added <= content_max_added`` (0.2): at most a fifth of the copy is story content
   from elsewhere (inserted sentences or paragraphs).  More than that is a different piece
   that contains the story (a round-up, a rewrite with new material): *similar*;
2. ``content_kept >= content_min_kept`` (0.5): more than half of the original is in the copy.
   Removing text is the standard edit of republished wire copy (cutting from the bottom to
   fit, dropping paragraphs) and tells the reader nothing new, so any cut that leaves the
   majority of the article is a duplicate; an excerpt of less than half (a brief, a teaser,
   a quotation) is the same story but not the same article: *similar*.

So a new headline, boilerplate, reordered paragraphs, typos and OCR noise, changed numbers
(a corrected or misprinted version) are duplicates at every strength; truncation and
dropped sentences/paragraphs are duplicates while the majority of the text is left;
insertions while they stay under a fifth of the copy.  The 0.2 on additions is seed 000's
"minor editing" made a number; the 0.5 on removals is "the majority of the article".  Both are
definitions fixed before any method was scored, not fitted to a method.

``bag80`` (an alternative, for comparison).  ``kept >= duplicate_min_kept`` (0.8) and
``novel <= duplicate_max_novel`` (0.2) on the published text: typos count as altered words,
and any cut of more than a fifth is *similar*.  It treats removals and additions alike and
spelling noise as new content, which is stricter than seed 000's definition.

``margin`` = ``min(kept - min_kept, max_added - added)`` under each rule is a copy's signed
distance from that rule's boundary (positive: duplicate), so evaluations can report the clear
cases apart from borderline ones.  Labels come from the produced text, never from a method
under test.  With the default strength levels, under ``guide``: ``exact``, ``headline``,
``boilerplate``, ``paragraph_reorder``, ``typos``, ``ocr``, ``numbers`` and ``mixed`` always
duplicate; ``paragraph_insert``/``sentence_insert`` duplicate while the inserted words are
fewer than the original's (strengths up to 0.5; at 1.0 mostly similar);
``truncate``/``paragraph_drop``/``sentence_drop`` duplicate while at least half is left
(under ``editorial`` the inserts become similar beyond about a quarter of added words).

*Similar* examples are therefore copies of the same story with most of their text shared but
cut beyond half or padded beyond the rule's share of added words; no paraphrased rewrites are
generated (that needs a paraphraser), and different stories on the same topic are
*different*, not *similar* ("similar" is the same story).

* Pairs of independent articles (same-topic negatives, and the article that lent a quotation
  vs the article that received it) are **different** by construction.

Clusters for ``eval clusters``: each output document has ``synth.group``: the original's id
for the original and its duplicate copies, the document's own id otherwise.  Originals are
pre-filtered so that no two of them are near-duplicates (5-shingle containment >= 0.5), so
natural re-sends in the corpus do not corrupt the gold clusters.

Guarantees: deterministic. The same corpus (in the same order), config and seed give
identical output on every machine (``random.Random`` seeded per original from
``xxh64(id, seed)``; edit types are assigned round-robin in corpus order).
Memory: the pool of at most ``max_originals`` eligible articles is held in memory.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import random
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import xxhash

from neardup.config import Config, check_choice, check_int, check_range
from neardup.errors import ConfigError, InputError
from neardup.records import Article
from neardup.shingles import hash_forms, word_shingles
from neardup.text import ENGLISH_STOP_WORDS, sentence_spans, tokenize

__all__ = [
    "COPY_EDITS",
    "DEFAULT_STRENGTHS",
    "LABELS",
    "LABEL_RULES",
    "Copy",
    "SynthConfig",
    "SynthResult",
    "apply_edit",
    "bag_overlap",
    "copy_measures",
    "label_copy",
    "label_margin",
    "perturb_words",
    "shingle_containment",
    "split_paragraphs",
    "strip_boilerplate",
    "synthesize",
]

LABELS = ("duplicate", "similar", "different")
# The copy label rules (module docstring): the default first.
LABEL_RULES = ("guide", "editorial", "bag80")

# Strength levels drawn for each edit: light levels are duplicates by the label rule, heavy
# ones similar, so each edit type contributes to both sides of the decision.
DEFAULT_STRENGTHS: dict[str, tuple[float, ...]] = {
    "exact": (0.0,),
    "headline": (0.0,),
    "boilerplate": (0.05, 0.15, 0.4, 0.8),
    "paragraph_drop": (0.1, 0.2, 0.4, 0.6),
    "paragraph_reorder": (0.3, 0.6, 1.0),
    "paragraph_insert": (0.1, 0.2, 0.5, 1.0),
    "sentence_drop": (0.1, 0.2, 0.4, 0.6),
    "sentence_insert": (0.1, 0.2, 0.5, 1.0),
    "truncate": (0.1, 0.2, 0.5, 0.8),
    "typos": (0.01, 0.03, 0.1, 0.3),
    "ocr": (0.01, 0.03, 0.1, 0.3),
    "numbers": (0.3, 0.6, 1.0),
    "mixed": (0.1, 0.2, 0.4),
}
COPY_EDITS: tuple[str, ...] = tuple(DEFAULT_STRENGTHS)

_WORD_RE = re.compile(r"\w+")
_PARA_RE = re.compile(r"\n[ \t]*\n\s*|\n[ \t]+(?=\S)")
_INDENTED_RE = re.compile(r"\n[ \t]+\S")
_NUMBER_RE = re.compile(r"\d+(?:[.,]\d+)*")
_MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]
_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
_DATE_WORD_RE = re.compile(r"\b(" + "|".join(_MONTHS + _DAYS + [m[:3] for m in _MONTHS]) + r")\b")

_BOILERPLATE = (
    "Copyright 1987 The Daily Financial Wire. All rights reserved.",
    "This material may not be published, broadcast, rewritten or redistributed.",
    "Subscribe to our morning newsletter for the top business stories of the day.",
    "Follow us on Twitter and Facebook for breaking news updates.",
    "Click here to read more stories from our markets desk.",
    "Related coverage: markets, commodities and company news.",
    "Advertisement",
    "Share this article with your friends and colleagues by e-mail.",
    "Sign up now to receive alerts when new stories on this topic are published.",
    "Reporting by our correspondents; editing by the newsroom staff.",
    "For reprints and permissions please contact the syndication department.",
    "Read the full report on our website, updated every fifteen minutes.",
    "Comments are closed for this story.",
    "Most read today: the five stories our readers could not stop talking about.",
)
_HEADLINE_PREFIXES = ("UPDATE 1-", "UPDATE 2-", "CORRECTED-", "REFILE-", "WRAPUP-", "")
_HEADLINE_SUFFIXES = (" - report", " -sources", " (Reuters)", " - analysts", "")
_KEY_NEIGHBOURS = {
    "a": "qwsz", "b": "vghn", "c": "xdfv", "d": "serfcx", "e": "wsdr", "f": "drtgvc",
    "g": "ftyhbv", "h": "gyujnb", "i": "ujko", "j": "huikmn", "k": "jiolm", "l": "kop",
    "m": "njk", "n": "bhjm", "o": "iklp", "p": "ol", "q": "wa", "r": "edft", "s": "awedxz",
    "t": "rfgy", "u": "yhji", "v": "cfgb", "w": "qase", "x": "zsdc", "y": "tghu", "z": "asx",
}  # fmt: skip
# OCR confusions (character shapes), tried in order of their frequency in OCR error studies.
_OCR_CONFUSIONS = (
    ("rn", "m"), ("m", "rn"), ("cl", "d"), ("d", "cl"), ("l", "1"), ("1", "l"), ("O", "0"),
    ("0", "O"), ("e", "c"), ("c", "e"), ("i", "l"), ("h", "b"), ("S", "5"), ("B", "8"),
    ("g", "q"), ("u", "v"), ("n", "h"), ("a", "o"), ("t", "f"),
)  # fmt: skip


# The fields of SynthConfig that are shares of words, each in [0, 1].
_SHARES = (
    "content_min_kept",
    "content_max_added",
    "guide_max_added",
    "duplicate_min_kept",
    "duplicate_max_novel",
    "negative_max_overlap",
    "max_original_overlap",
)


@dataclasses.dataclass(frozen=True)
class SynthConfig(Config):
    """Parameters of :func:`synthesize` (defaults: the Reuters perturbation benchmark).

    ``edits`` are the copy edits used in turn (round-robin over originals, so each edit gets
    the same number of copies); each copy draws its strength from ``DEFAULT_STRENGTHS``.
    ``label_rule`` picks the copy label rule (``guide``, the default: ``content_min_kept`` /
    ``guide_max_added``; ``editorial``: ``content_min_kept`` / ``content_max_added``;
    ``bag80``: ``duplicate_min_kept`` / ``duplicate_max_novel``; see the module docstring);
    pairs carry the labels of every rule either way.
    """

    SCHEME = "synth"

    seed: int = 0
    copies_per_doc: int = 3
    negatives_per_doc: int = 1
    quote_rate: float = 0.1
    max_originals: int = 1000
    min_words: int = 60
    min_sentences: int = 4
    edits: tuple[str, ...] = COPY_EDITS
    label_rule: str = "guide"
    content_min_kept: float = 0.5
    content_max_added: float = 0.2
    guide_max_added: float = 0.5
    duplicate_min_kept: float = 0.8
    duplicate_max_novel: float = 0.2
    negative_max_overlap: float = 0.2
    max_original_overlap: float = 0.5
    shingle_width: int = 5

    def __post_init__(self) -> None:
        check_int("seed", self.seed, low=0, high=(1 << 63) - 1)
        check_int("copies_per_doc", self.copies_per_doc, low=0, high=100)
        check_int("negatives_per_doc", self.negatives_per_doc, low=0, high=100)
        check_range("quote_rate", self.quote_rate, low=0.0, high=1.0)
        check_int("max_originals", self.max_originals, low=1, high=10_000_000)
        check_int("min_words", self.min_words, low=1, high=100_000)
        check_int("min_sentences", self.min_sentences, low=2, high=10_000)
        if isinstance(self.edits, str) or not isinstance(self.edits, tuple | list):
            raise ConfigError("edits must be a tuple of edit names")
        object.__setattr__(self, "edits", tuple(self.edits))
        if not self.edits and self.copies_per_doc:
            raise ConfigError("edits must not be empty when copies_per_doc > 0")
        for edit in self.edits:
            check_choice("edit", edit, COPY_EDITS)
        check_choice("label_rule", self.label_rule, LABEL_RULES)
        for share in _SHARES:
            check_range(share, getattr(self, share), low=0.0, high=1.0)
        check_int("shingle_width", self.shingle_width, low=1, high=64)


@dataclasses.dataclass(frozen=True, slots=True)
class Copy:
    """The result of one edit: the new text and title, and how many units were changed.

    ``content``: the copy's text before its *noise* edits (typos, OCR confusions, changed
    numbers), i.e. what the copy says as opposed to how it is spelt; ``None`` when no noise
    edit was applied (then it is ``text``).  The ``editorial`` label rule measures it.
    """

    text: str
    title: str | None
    changes: int
    content: str | None = None

    @property
    def content_text(self) -> str:
        """The copy's story content (``content`` when set, else ``text``)."""
        return self.text if self.content is None else self.content


@dataclasses.dataclass(frozen=True, slots=True)
class SynthResult:
    """Documents (JSON-able dicts, originals first) and labelled pairs."""

    docs: list[dict[str, Any]]
    pairs: list[dict[str, Any]]

    def label_counts(self) -> dict[str, int]:
        """Number of pairs per label."""
        return dict(Counter(p["label"] for p in self.pairs))


# --- word-level noise --------------------------------------------------------------------


def perturb_words(text: str, rate: float, rng: random.Random, *, insertion: str = "random") -> str:
    """Edit about ``rate`` of the white-space words of ``text``, for planted near-copies.

    Each word draws one number ``r`` from ``rng``: below ``rate/3`` the word is deleted,
    below ``2*rate/3`` it is replaced by a random word of the text, below ``rate`` it is kept
    and a word is inserted after it (``insertion="random"``: a random word of the text, one
    more draw; ``"duplicate"``: the word itself).  Deterministic for a seeded ``rng``; the
    benchmarks' recorded corpora depend on this exact sequence of draws.
    """
    check_choice("insertion", insertion, ("random", "duplicate"))
    words = text.split()
    out: list[str] = []
    for w in words:
        r = rng.random()
        if r < rate / 3:
            continue
        if r < 2 * rate / 3:
            out.append(rng.choice(words))
            continue
        out.append(w)
        if r < rate:
            out.append(rng.choice(words) if insertion == "random" else w)
    return " ".join(out)


# --- measurements -----------------------------------------------------------------------


def _words(text: str) -> Counter[str]:
    return Counter(w.casefold() for w in _WORD_RE.findall(text))


def bag_overlap(original: str, copy: str) -> tuple[float, float]:
    """``(kept, novel)`` of ``copy`` against ``original`` on case-folded ``\\w+`` word bags.

    ``kept`` = |orig ∩ copy| / |orig|, ``novel`` = 1 - |orig ∩ copy| / |copy| (multisets);
    an empty side gives kept 1.0 / novel 0.0 for that side.  Exact and deterministic.
    """
    a, b = _words(original), _words(copy)
    common = sum((a & b).values())
    n_a, n_b = sum(a.values()), sum(b.values())
    kept = common / n_a if n_a else 1.0
    novel = 1.0 - common / n_b if n_b else 0.0
    return kept, novel


def _bounds(cfg: SynthConfig, rule: str | None) -> tuple[float, float]:
    rule = cfg.label_rule if rule is None else rule
    check_choice("label_rule", rule, LABEL_RULES)
    if rule == "guide":
        return cfg.content_min_kept, cfg.guide_max_added
    if rule == "editorial":
        return cfg.content_min_kept, cfg.content_max_added
    return cfg.duplicate_min_kept, cfg.duplicate_max_novel


def label_copy(
    kept: float, novel: float, config: SynthConfig | None = None, rule: str | None = None
) -> str:
    """``"duplicate"`` or ``"similar"`` for a copy pair by ``rule`` (default: the config's).

    Pass the measurements the rule is defined on: ``content_kept``/``content_added`` for
    ``editorial``, ``kept``/``novel`` for ``bag80`` (see :func:`copy_measures`).
    """
    min_kept, max_added = _bounds(config or SynthConfig(), rule)
    return "duplicate" if kept >= min_kept and novel <= max_added else "similar"


def copy_measures(original: str, copy: Copy) -> dict[str, float]:
    """``kept``/``novel`` of the published copy and ``content_kept``/``content_added`` of its
    content (before noise edits), both without the added boilerplate.  Exact."""
    kept, novel = bag_overlap(original, strip_boilerplate(copy.text))
    if copy.content is None:
        content_kept, content_added = kept, novel
    else:
        content_kept, content_added = bag_overlap(original, strip_boilerplate(copy.content))
    return {
        "kept": kept,
        "novel": novel,
        "content_kept": content_kept,
        "content_added": content_added,
    }


def _shingle_set(text: str, width: int) -> npt.NDArray[np.uint64]:
    forms = tokenize(text).forms
    return np.unique(word_shingles(hash_forms(forms, seed=0), width))


def shingle_containment(a: str, b: str, width: int = 5) -> float:
    """Max containment of the word ``width``-shingle sets of ``a`` and ``b`` (either way).

    Exact: |A ∩ B| / min(|A|, |B|) on stemmed tokens (0.0 when either side is empty).
    """
    sa, sb = _shingle_set(a, width), _shingle_set(b, width)
    if sa.size == 0 or sb.size == 0:
        return 0.0
    common = np.intersect1d(sa, sb, assume_unique=True).size
    return common / min(sa.size, sb.size)


# --- text surgery -------------------------------------------------------------------------


def split_paragraphs(text: str) -> tuple[list[str], str]:
    """Paragraphs of ``text`` and the separator to join them with.

    Paragraphs end at blank lines or at a line break followed by indentation (the newswire
    convention).  Text with a single paragraph is split into groups of two sentences, so
    paragraph edits apply to every article with at least two sentences.
    """
    sep = "\n    " if _INDENTED_RE.search(text) else "\n\n"
    paras = [p.strip() for p in _PARA_RE.split(text) if p.strip()]
    if len(paras) < 2:
        spans = sentence_spans(text)
        paras = [
            text[spans[i][0] : spans[min(i + 1, len(spans) - 1)][1]]
            for i in range(0, len(spans), 2)
        ]
        sep = "\n\n"
    return paras, sep


def _sentences(text: str) -> list[str]:
    return [text[s:e] for s, e in sentence_spans(text)]


def _whole_sentence(sentence: str) -> bool:
    """A sentence that stays one sentence wherever it is put (capital start, final stop)."""
    return sentence[:1].isupper() and sentence.rstrip("\"'”’)")[-1:] in (".", "!", "?")


def _count_words(text: str) -> int:
    return len(_WORD_RE.findall(text))


def _pick(rng: random.Random, n: int, fraction: float, keep_one: bool) -> list[int]:
    """``round(fraction * n)`` distinct indices (at least 1; at most n - 1 if ``keep_one``)."""
    k = max(1, round(fraction * n))
    if keep_one:
        k = min(k, n - 1)
    k = min(k, n)
    return sorted(rng.sample(range(n), k)) if k > 0 else []


def _new_headline(title: str | None, text: str, rng: random.Random) -> str:
    base = title.strip() if title and title.strip() else ""
    if not base or rng.random() < 0.5:
        # A headline made from the lead: its first eight words, upper-cased as wires do.
        lead = _WORD_RE.findall(text)[:8]
        base = " ".join(lead).upper()
    new = rng.choice(_HEADLINE_PREFIXES) + base + rng.choice(_HEADLINE_SUFFIXES)
    return new if new != title else "UPDATE 3-" + base


def _edit_headline(text: str, title: str | None, rng: random.Random) -> Copy:
    headline = _new_headline(title, text, rng)
    return Copy(headline + "\n" + text, headline, 1)


def _edit_boilerplate(text: str, title: str | None, s: float, rng: random.Random) -> Copy:
    target = max(1, round(s * _count_words(text)))
    top: list[str] = []
    bottom: list[str] = []
    added = 0
    while added < target:
        line = rng.choice(_BOILERPLATE)
        (top if rng.random() < 0.4 else bottom).append(line)
        added += _count_words(line)
    _paras, sep = split_paragraphs(text)
    return Copy(sep.join([*top, text.strip(), *bottom]), title, len(top) + len(bottom))


def _edit_paragraph_drop(text: str, title: str | None, s: float, rng: random.Random) -> Copy:
    paras, sep = split_paragraphs(text)
    drop = set(_pick(rng, len(paras), s, keep_one=True))
    return Copy(sep.join(p for i, p in enumerate(paras) if i not in drop), title, len(drop))


def _edit_paragraph_reorder(text: str, title: str | None, s: float, rng: random.Random) -> Copy:
    paras, sep = split_paragraphs(text)
    chosen = _pick(rng, len(paras), s, keep_one=False)
    if len(chosen) < 2:
        chosen = sorted(rng.sample(range(len(paras)), 2))
    moved = chosen[:]
    rng.shuffle(moved)
    if moved == chosen:  # make sure the order really changes: rotate by one
        moved = chosen[1:] + chosen[:1]
    out = paras[:]
    for dst, src in zip(chosen, moved, strict=True):
        out[dst] = paras[src]
    return Copy(sep.join(out), title, len(chosen))


def _insert_units(
    units: list[str], donors: Sequence[str], target_words: int, rng: random.Random
) -> tuple[list[str], int]:
    out = units[:]
    inserted = 0
    added = 0
    while added < target_words and donors:
        piece = rng.choice(donors)
        out.insert(rng.randint(0, len(out)), piece)
        added += _count_words(piece)
        inserted += 1
    return out, inserted


def _edit_paragraph_insert(
    text: str, title: str | None, s: float, rng: random.Random, donor_text: list[str]
) -> Copy:
    paras, sep = split_paragraphs(text)
    donors = [p for d in donor_text for p in split_paragraphs(d)[0]]
    out, n = _insert_units(paras, donors, max(1, round(s * _count_words(text))), rng)
    return Copy(sep.join(out), title, n)


def _sentence_pieces(text: str) -> tuple[str, list[list[str]]]:
    """Text before the first sentence, and ``[sentence, separator after it]`` pieces; joining
    them gives ``text`` back exactly."""
    spans = sentence_spans(text)
    pieces = [
        [text[a:b], text[b : spans[i + 1][0] if i + 1 < len(spans) else len(text)]]
        for i, (a, b) in enumerate(spans)
    ]
    return text[: spans[0][0]] if spans else text, pieces


def _join_pieces(prefix: str, pieces: list[list[str]]) -> str:
    return (prefix + "".join(x + sep for x, sep in pieces)).rstrip()


def _edit_sentence_drop(text: str, title: str | None, s: float, rng: random.Random) -> Copy:
    prefix, pieces = _sentence_pieces(text)
    drop = set(_pick(rng, len(pieces), s, keep_one=True))
    kept = [p for i, p in enumerate(pieces) if i not in drop]
    for i in range(len(kept) - 1):
        # The old boundary may have relied on the dropped sentence (a lower-case start after
        # a blank line): a blank line keeps every remaining boundary where it was.
        if kept[i + 1][0][:1].islower() and "\n\n" not in kept[i][1]:
            kept[i][1] = "\n\n"
    return Copy(_join_pieces(prefix, kept), title, len(drop))


def _insert_sentences(
    text: str, donors: Sequence[str], target_words: int, rng: random.Random
) -> tuple[str, int]:
    """Insert whole donor sentences at random sentence boundaries, each set off by a blank
    line so the sentence structure of the rest is unchanged."""
    prefix, pieces = _sentence_pieces(text)
    added = inserted = 0
    while added < target_words and donors:
        sentence = rng.choice(donors)
        at = rng.randint(0, len(pieces))
        if at == len(pieces) and pieces:
            pieces[-1][1] = "\n\n"
        pieces.insert(at, [sentence, "\n\n" if at < len(pieces) else ""])
        added += _count_words(sentence)
        inserted += 1
    return _join_pieces(prefix, pieces), inserted


def _donor_sentences(texts: Sequence[str]) -> list[str]:
    return [
        x
        for d in texts
        for x in _sentences(d)
        if _whole_sentence(x) and len(sentence_spans(x)) == 1
    ]


def _edit_sentence_insert(
    text: str, title: str | None, s: float, rng: random.Random, donor_text: list[str]
) -> Copy:
    target = max(1, round(s * _count_words(text)))
    out, n = _insert_sentences(text, _donor_sentences(donor_text), target, rng)
    return Copy(out, title, n)


def _edit_truncate(text: str, title: str | None, s: float, rng: random.Random) -> Copy:
    spans = sentence_spans(text)
    cut = len(_pick(rng, len(spans), s, keep_one=True))
    return Copy(text[: spans[len(spans) - cut - 1][1]], title, cut)


def _typo(word: str, rng: random.Random) -> str:
    i = rng.randrange(len(word))
    op = rng.randrange(4)
    if op == 0 and len(word) > 1:  # swap two adjacent letters
        i = min(i, len(word) - 2)
        new = word[:i] + word[i + 1] + word[i] + word[i + 2 :]
    elif op == 1 and len(word) > 2:  # drop a letter
        new = word[:i] + word[i + 1 :]
    elif op == 2:  # double a letter
        new = word[:i] + word[i] + word[i:]
    else:  # hit a neighbouring key
        ch = word[i]
        near = _KEY_NEIGHBOURS.get(ch.lower(), "e")
        rep = rng.choice(near)
        new = word[:i] + (rep.upper() if ch.isupper() else rep) + word[i + 1 :]
    if new.casefold() == word.casefold():
        new = word[:i] + word[i] + word[i:]
    return new


def _ocr(word: str, rng: random.Random) -> str:
    options = [(a, b) for a, b in _OCR_CONFUSIONS if a in word]
    if not options:
        return word[:-1] + ("1" if word[-1] != "1" else "l")
    a, b = rng.choice(options)
    starts = [m.start() for m in re.finditer(re.escape(a), word)]
    i = rng.choice(starts)
    return word[:i] + b + word[i + len(a) :]


def _replace_words(
    text: str, s: float, rng: random.Random, change: Any, pattern: re.Pattern[str]
) -> Copy:
    matches = list(pattern.finditer(text))
    if not matches:
        return Copy(text, None, 0)
    # The strength is a fraction of *all* words; candidates are the words an edit can touch.
    total = _count_words(text)
    k = min(len(matches), max(1, round(s * total)))
    chosen = sorted(rng.sample(range(len(matches)), k))
    out: list[str] = []
    pos = 0
    for idx in chosen:
        m = matches[idx]
        out.append(text[pos : m.start()])
        out.append(change(m.group(), rng))
        pos = m.end()
    out.append(text[pos:])
    return Copy("".join(out), None, k)


_LETTER_WORD_RE = re.compile(r"[^\W\d_]{3,}")


def _edit_typos(text: str, title: str | None, s: float, rng: random.Random) -> Copy:
    c = _replace_words(text, s, rng, _typo, _LETTER_WORD_RE)
    return Copy(c.text, title, c.changes, content=text)


def _edit_ocr(text: str, title: str | None, s: float, rng: random.Random) -> Copy:
    c = _replace_words(text, s, rng, _ocr, re.compile(r"\w{2,}"))
    # Scanned text also loses a few spaces (two words run together): one per ~50 words.
    spaces = [m.start() for m in re.finditer(r"(?<=\w) (?=\w)", c.text)]
    lost = sorted(rng.sample(spaces, min(len(spaces), round(s * len(spaces) / 5))))
    out = c.text
    for i in reversed(lost):
        out = out[:i] + out[i + 1 :]
    return Copy(out, title, c.changes + len(lost), content=text)


def _change_number(token: str, rng: random.Random) -> str:
    digits = [i for i, ch in enumerate(token) if ch.isdigit()]
    i = rng.choice(digits[1:] if len(digits) > 1 else digits)
    old = token[i]
    low = 1 if i == digits[0] and len(digits) > 1 else 0
    new = rng.choice([d for d in "0123456789"[low:] if d != old])
    return token[:i] + new + token[i + 1 :]


def _change_date_word(token: str, rng: random.Random) -> str:
    for names in (_MONTHS, _DAYS):
        for name in names:
            if token in (name, name[:3]):
                other = rng.choice([n for n in names if n != name])
                return other if token == name else other[:3]
    return token


def _edit_numbers(text: str, title: str | None, s: float, rng: random.Random) -> Copy:
    units = list(_NUMBER_RE.finditer(text)) + list(_DATE_WORD_RE.finditer(text))
    units.sort(key=lambda m: m.start())
    if not units:
        return Copy(text, title, 0)
    chosen = _pick(rng, len(units), s, keep_one=False)
    out: list[str] = []
    pos = 0
    for idx in chosen:
        m = units[idx]
        word = m.group()
        new = _change_number(word, rng) if word[0].isdigit() else _change_date_word(word, rng)
        out.append(text[pos : m.start()])
        out.append(new)
        pos = m.end()
    out.append(text[pos:])
    return Copy("".join(out), title, len(chosen), content=text)


def _edit_mixed(
    text: str, title: str | None, s: float, rng: random.Random, donor_text: list[str]
) -> Copy:
    c = _edit_headline(text, title, rng)
    headline, body = c.text.split("\n", 1)
    parts = [1]
    body_c = _edit_sentence_drop(body, title, s / 2, rng)
    parts.append(body_c.changes)
    body_c = _edit_boilerplate(body_c.text, title, s, rng)
    parts.append(body_c.changes)
    body_c = _edit_typos(body_c.text, title, s / 10, rng)
    parts.append(body_c.changes)
    return Copy(
        headline + "\n" + body_c.text,
        c.title,
        sum(parts),
        content=headline + "\n" + body_c.content_text,
    )


def applicable(edit: str, text: str) -> bool:
    """Whether ``edit`` can change ``text`` at all (e.g. ``numbers`` needs a number)."""
    if edit == "numbers":
        return bool(_NUMBER_RE.search(text) or _DATE_WORD_RE.search(text))
    if edit in ("paragraph_drop", "paragraph_reorder"):
        return len(split_paragraphs(text)[0]) >= 2
    if edit in ("sentence_drop", "truncate"):
        return len(sentence_spans(text)) >= 2
    return True


def apply_edit(
    edit: str,
    text: str,
    title: str | None,
    strength: float,
    rng: random.Random,
    donor_text: Sequence[str] = (),
) -> Copy:
    """Apply one named ``edit`` of ``strength`` to ``text``; pure given the ``rng`` state.

    ``donor_text`` supplies the paragraphs/sentences that insertions borrow (other articles).
    Raises ``InputError`` when the edit cannot apply (see :func:`applicable`).
    """
    check_choice("edit", edit, COPY_EDITS)
    check_range("strength", strength, low=0.0, high=1.0)
    if not applicable(edit, text):
        raise InputError(f"edit {edit!r} cannot change this text (too short or no numbers)")
    donors = list(donor_text)
    if edit in ("paragraph_insert", "sentence_insert", "mixed") and not donors:
        raise InputError(f"edit {edit!r} needs donor articles")
    if edit == "exact":
        return Copy(text, title, 0)
    if edit == "headline":
        return _edit_headline(text, title, rng)
    if edit == "paragraph_insert":
        return _edit_paragraph_insert(text, title, strength, rng, donors)
    if edit == "sentence_insert":
        return _edit_sentence_insert(text, title, strength, rng, donors)
    if edit == "mixed":
        return _edit_mixed(text, title, strength, rng, donors)
    simple = {
        "boilerplate": _edit_boilerplate,
        "paragraph_drop": _edit_paragraph_drop,
        "paragraph_reorder": _edit_paragraph_reorder,
        "sentence_drop": _edit_sentence_drop,
        "truncate": _edit_truncate,
        "typos": _edit_typos,
        "ocr": _edit_ocr,
        "numbers": _edit_numbers,
    }
    return simple[edit](text, title, strength, rng)


# --- the corpus -----------------------------------------------------------------------------


def _rng(seed: int, *parts: str) -> random.Random:
    key = "\x1f".join(parts).encode("utf-8", "surrogatepass")
    return random.Random(xxhash.xxh64_intdigest(key, seed=seed))


def _as_article(record: Article | Mapping[str, Any]) -> Article:
    return record if isinstance(record, Article) else Article.from_mapping(record)


def _topics(article: Article) -> list[str]:
    topics = article.extra.get("topics")
    if isinstance(topics, list) and topics:
        return [f"topic:{t}" for t in topics if isinstance(t, str)]
    words = _WORD_RE.findall((article.title or "").casefold())
    return [f"title:{w}" for w in words if len(w) >= 4 and w not in ENGLISH_STOP_WORDS]


def _select_pool(
    records: Iterable[Article | Mapping[str, Any]], cfg: SynthConfig
) -> tuple[list[Article], list[npt.NDArray[np.uint64]]]:
    """Eligible originals, none a near-duplicate of an earlier one (inverted index check)."""
    pool: list[Article] = []
    sets: list[npt.NDArray[np.uint64]] = []
    postings: dict[int, list[int]] = {}
    seen: set[str] = set()
    for record in records:
        if len(pool) >= cfg.max_originals:
            break
        art = _as_article(record)
        if art.id in seen:
            raise InputError(f"duplicate id {art.id!r} in the corpus")
        seen.add(art.id)
        if _count_words(art.text) < cfg.min_words:
            continue
        if len(sentence_spans(art.text)) < cfg.min_sentences:
            continue
        sh = _shingle_set(art.text, cfg.shingle_width)
        hits: Counter[int] = Counter()
        for h in sh.tolist():
            hits.update(postings.get(h, ()))
        if any(c / min(sh.size, sets[j].size) >= cfg.max_original_overlap for j, c in hits.items()):
            continue
        for h in sh.tolist():
            postings.setdefault(h, []).append(len(pool))
        pool.append(art)
        sets.append(sh)
    return pool, sets


def _doc(article: Article, group: str, role: str, **synth: Any) -> dict[str, Any]:
    return {
        "id": article.id,
        "text": article.text,
        "title": article.title,
        "date": article.date.isoformat() if article.date else None,
        "synth": {"role": role, "group": group, **synth},
    }


def _overlap(a: npt.NDArray[np.uint64], b: npt.NDArray[np.uint64]) -> float:
    if a.size == 0 or b.size == 0:
        return 0.0
    return np.intersect1d(a, b, assume_unique=True).size / min(a.size, b.size)


def strip_boilerplate(text: str) -> str:
    """``text`` without the boilerplate lines this module adds (they are not story content)."""
    for line in _BOILERPLATE:
        text = text.replace(line, " ")
    return text


def label_margin(
    kept: float, novel: float, config: SynthConfig | None = None, rule: str | None = None
) -> float:
    """Signed distance of a copy from ``rule``'s boundary: ``min(kept - min_kept, max_added -
    added)``; >= 0 for duplicates, < 0 for similar copies (same inputs as :func:`label_copy`)."""
    min_kept, max_added = _bounds(config or SynthConfig(), rule)
    return min(kept - min_kept, max_added - novel)


def _rule_inputs(rule: str, m: Mapping[str, float]) -> tuple[float, float]:
    if rule in ("guide", "editorial"):
        return m["content_kept"], m["content_added"]
    return m["kept"], m["novel"]


def _copy_pair(
    original: Article, copy: Copy, copy_id: str, edit: str, strength: float, cfg: SynthConfig
) -> dict[str, Any]:
    m = copy_measures(original.text, copy)
    labels = {r: label_copy(*_rule_inputs(r, m), cfg, r) for r in LABEL_RULES}
    margins = {r: round(label_margin(*_rule_inputs(r, m), cfg, r), 4) for r in LABEL_RULES}
    return {
        "id1": original.id,
        "id2": copy_id,
        "label": labels[cfg.label_rule],
        "edit": edit,
        "strength": strength,
        "changes": copy.changes,
        **{k: round(v, 4) for k, v in m.items()},
        "margin": margins[cfg.label_rule],
        "labels": labels,
        "margins": margins,
    }


def _shifted(date: dt.datetime | None, rng: random.Random) -> dt.datetime | None:
    return None if date is None else date + dt.timedelta(minutes=rng.randint(1, 720))


def synthesize(
    records: Iterable[Article | Mapping[str, Any]], config: SynthConfig | None = None
) -> SynthResult:
    """Copies with known edits, negatives and shared quotations, with their labels.

    ``records`` are :class:`Article` objects or mappings with ``id``/``text`` (``title``,
    ``date``, ``topics`` optional).  Output documents: the originals (the first
    ``max_originals`` eligible, non-near-duplicate records, in input order), then their copies
    (id ``<original>~<edit>~<n>``) and quotation receivers (``<id>~quote~<n>``).
    """
    cfg = config or SynthConfig()
    pool, sets = _select_pool(records, cfg)
    if len(pool) < 2:
        raise InputError(
            f"need at least 2 eligible articles (>= {cfg.min_words} words and "
            f">= {cfg.min_sentences} sentences), found {len(pool)}"
        )
    by_topic: dict[str, list[int]] = {}
    for i, art in enumerate(pool):
        for t in _topics(art):
            by_topic.setdefault(t, []).append(i)
    docs: list[dict[str, Any]] = []
    copies: list[dict[str, Any]] = []
    pairs: list[dict[str, Any]] = []
    group_of: dict[str, str] = {a.id: a.id for a in pool}
    turn = 0
    for i, art in enumerate(pool):
        rng = _rng(cfg.seed, art.id)
        for n in range(cfg.copies_per_doc):
            edit = cfg.edits[turn % len(cfg.edits)]
            turn += 1
            tries = 0
            while not applicable(edit, art.text) and tries < len(cfg.edits):
                edit = cfg.edits[(cfg.edits.index(edit) + 1) % len(cfg.edits)]
                tries += 1
            strength = rng.choice(DEFAULT_STRENGTHS[edit])
            donors = [pool[j].text for j in _donor_indices(rng, i, len(pool))]
            cp = apply_edit(edit, art.text, art.title, strength, rng, donors)
            copy_id = f"{art.id}~{edit}~{n}"
            pair = _copy_pair(art, cp, copy_id, edit, strength, cfg)
            pairs.append(pair)
            group = art.id if pair["label"] == "duplicate" else copy_id
            copy_art = Article(copy_id, cp.text, cp.title, _shifted(art.date, rng))
            copies.append(
                _doc(copy_art, group, "copy", copy_of=art.id, edit=edit, strength=strength)
            )
        pairs.extend(_negatives(i, pool, sets, by_topic, rng, cfg))
        if rng.random() < cfg.quote_rate:
            quote = _shared_quote(i, pool, rng, cfg)
            if quote is not None:
                doc, quote_pairs = quote
                copies.append(doc)
                pairs.extend(quote_pairs)
    docs = [_doc(a, group_of[a.id], "original") for a in pool] + copies
    return SynthResult(docs, pairs)


def _donor_indices(rng: random.Random, i: int, n: int) -> list[int]:
    others = [j for j in rng.sample(range(n), min(n, 4)) if j != i]
    return others[:3]


def _negatives(
    i: int,
    pool: list[Article],
    sets: list[npt.NDArray[np.uint64]],
    by_topic: dict[str, list[int]],
    rng: random.Random,
    cfg: SynthConfig,
) -> list[dict[str, Any]]:
    """Up to ``negatives_per_doc`` same-topic articles with low exact overlap with ``i``."""
    art = pool[i]
    topics = _topics(art)
    out: list[dict[str, Any]] = []
    used: set[int] = {i}
    for _ in range(cfg.negatives_per_doc):
        for _attempt in range(20):
            if not topics:
                break
            topic = rng.choice(topics)
            j = rng.choice(by_topic[topic])
            if j in used:
                continue
            overlap = _overlap(sets[i], sets[j])
            if overlap >= cfg.negative_max_overlap:
                continue
            used.add(j)
            out.append(
                {
                    "id1": art.id,
                    "id2": pool[j].id,
                    "label": "different",
                    "labels": dict.fromkeys(LABEL_RULES, "different"),
                    "edit": "negative_same_topic",
                    "strength": 0.0,
                    "topic": topic,
                    "overlap": round(overlap, 4),
                }
            )
            break
    return out


def _shared_quote(
    i: int, pool: list[Article], rng: random.Random, cfg: SynthConfig
) -> tuple[dict[str, Any], list[dict[str, Any]]] | None:
    """Article ``i`` lends a sentence (preferably one reporting speech) to another article."""
    lender = pool[i]
    sentences = [s for s in _donor_sentences([lender.text]) if _count_words(s) >= 8]
    if not sentences:
        return None
    quoted = [s for s in sentences if re.search(r"\bsaid\b|[\"“”]", s)]
    quote = rng.choice(quoted or sentences)
    j = rng.choice([k for k in range(len(pool)) if k != i])
    receiver = pool[j]
    text, _ = _insert_sentences(receiver.text, [quote], 1, rng)
    new_id = f"{receiver.id}~quote~{i}"
    cp = Copy(text, receiver.title, 1)
    receiver_pair = _copy_pair(receiver, cp, new_id, "quote_insert", 0.0, cfg)
    group = receiver.id if receiver_pair["label"] == "duplicate" else new_id
    doc = _doc(
        Article(new_id, text, receiver.title, _shifted(receiver.date, rng)),
        group,
        "copy",
        copy_of=receiver.id,
        edit="quote_insert",
        strength=0.0,
        quote_from=lender.id,
    )
    lender_pair = {
        "id1": lender.id,
        "id2": new_id,
        "label": "different",
        "labels": dict.fromkeys(LABEL_RULES, "different"),
        "edit": "shared_quote",
        "strength": 0.0,
        "quote_chars": len(quote),
    }
    return doc, [receiver_pair, lender_pair]
