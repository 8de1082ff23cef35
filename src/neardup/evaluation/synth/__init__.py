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

from neardup.evaluation.synth.config import (
    COPY_EDITS,
    DEFAULT_STRENGTHS,
    LABEL_RULES,
    LABELS,
    Copy,
    SynthConfig,
    SynthResult,
)
from neardup.evaluation.synth.corpus import synthesize
from neardup.evaluation.synth.edits import (
    apply_edit,
    perturb_words,
    split_paragraphs,
    strip_boilerplate,
)
from neardup.evaluation.synth.labels import (
    bag_overlap,
    copy_measures,
    label_copy,
    label_margin,
    shingle_containment,
)

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
