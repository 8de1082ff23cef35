"""An independent perturbation benchmark of edited copies of scraped news.

    python research/newsgen.py --out /tmp/newsgen --seed 0 [--data DIR] [--per-kind 180]

reads ``provenance_news_2018_dev/docs.jsonl.gz`` (570 real articles scraped from ~80 news
sites, three events) in place and writes, into ``--out``:

* ``docs.jsonl``: the real articles used, unchanged, then the generated ones.  Fields
  ``id, event, publisher, date, title, text`` as in the corpus, plus ``derived_from`` (the
  ids a generated text was built from; empty for real articles);
* ``labels.jsonl``: one pair a line, ``{id1, id2, label, edit, strength, ...}``; ``id1`` is
  the original (or the earlier article), ``id2`` the generated text; extra fields record what
  the generator measured (``kept``, ``added``, ``junk_share``, ``containment``, ...);
* ``summary.json``: counts per edit and label, and the parameters of the run.

It is a *second* benchmark beside the project's own ``neardup synth`` (which edits Reuters
newswire): another corpus (scraped pages with Unicode punctuation and page junk) and another
generator, written without looking at the judgement's junk heuristics.  Use it to report the
quality of a near-duplicate judgement, never to choose its defaults.

Everything is deterministic: the same corpus, seed and ``--per-kind`` give the same bytes
(with the same Python minor version: ``random`` guarantees only ``random()`` across versions).
Each item draws from its own ``random.Random`` seeded by xxh64 of the seed, the edit and the
ids involved (never Python's salted ``hash()``); sources are taken in the order of that hash.

What the generator calls the *body* of a page
---------------------------------------------
A page's text is split into paragraphs at blank lines.  A paragraph is *prose* when it has
at least 10 words, ends like a sentence (``. ? !`` or a closing quote) and does not occur
twice on the page (captions are often printed twice).  The body is the page's prose
paragraphs; ``body words`` count ``\\w+`` words in them.  The page's *head* and *tail* are
its paragraphs before the first and after the last prose paragraph: real page furniture
(bylines, dates, share buttons, "RELATED STORIES", widgets, captions); of those, the lines
used to wrap another article are those under 20 words or printed twice (a long single line
there is narrative the scraper cut off).  A *caption block* is a non-prose line of 6+ words
followed by a short credit line ("(AP Photo/...)", "Photo: ..., AP"), or printed twice and
naming a credit itself, taken as the page prints it (often twice) with its credit line.
A source must have at least 5 prose paragraphs and 250 body words.

*Same event* means the corpus's ``event`` field, restricted to pages *on topic*: pages that
contain at least 3 of their event's 10 keywords (the words whose document frequency in the
event most exceeds that in the other events).  The corpus files some off-topic pages under an
event (a car show, another country's election, weather widgets); they can still be sources of
copies and members of ``unrelated`` pairs, never of the same-event kinds.

Pair kinds (``edit``), strengths and labels
-------------------------------------------
=================== ============================================= ================ ==========
edit                what the generator does                        strength         label
=================== ============================================= ================ ==========
furniture           the page's own head and tail replaced by the   1, 2, 3          duplicate
                    last 3 head and first 3 tail lines of another
                    publisher's page (8 and 8 at 2, 12 and 12 at
                    3); 2 adds a caption block of another
                    publisher's page of the same event (any event
                    when it has fewer than three) after the lead;
                    3 prints the head block twice and adds three
                    caption blocks (after the lead and inside the
                    body)
truncate            the body cut after a share of its words (at a  0.9 0.75 0.6     duplicate
                    sentence end); head kept, tail gone            0.4 0.3          partial
write_thru          runs of body paragraphs of up to three other   0.15 0.3         duplicate
                    same-event articles added after the lead and   0.6 0.75         partial
                    at the end; half of the items also get a new
                    lead (another same-event article's lead);
                    strength is the target share of the update's
                    body that is not the original's (``added`` is
                    the share reached, whole paragraphs)
paragraph_drop      body paragraphs other than the lead removed    0.1 0.2 0.3      duplicate
                    (share of body words)
paragraph_reorder   body paragraphs other than the lead moved      1 2 3            duplicate
                    (number of paragraphs moved)
reword              per body sentence, with probability strength:  0.25 0.5 1.0     duplicate
                    said <-> says, a clause reordered
                    (``"Q," X said.`` -> ``X said, "Q."``; ``"Q,"
                    said X.`` -> ``"Q," X said.``; a fronted
                    ``When/After/... A, B.`` -> ``B when A.``) or
                    one word swapped for a synonym of a short list
typos               keyboard typos (swap, drop, double, neighbour  0.01 0.03 0.05   duplicate
                    key) in this share of the page's words
punctuation         each quote, apostrophe, dash, ellipsis and     0.3 0.6 1.0      duplicate
                    non-breaking space flipped between Unicode
                    and ASCII with probability strength (and some
                    spaces made non-breaking)
excerpt             2-5 consecutive body paragraphs of article A   2 3 4 5          partial
                    (under half of its body) embedded after the
                    lead of a different, independent article B of
                    the same event (under half of B's new body);
                    the pair is (A, B with the excerpt)
shared_quote        the same quoted sentence of a speaker (taken   1 2 3            related
                    from a third same-event article) inserted as
                    its own paragraph into two independent
                    same-event articles; pair of the two edited
                    texts (strength: number of quotes shared)
related             two real, independent articles of the same     0                related
                    event
unrelated           two real, independent articles of different    0                unrelated
                    events
=================== ============================================= ================ ==========

*Independent* articles: not listed as ``duplicate`` or ``partial`` in
``labels_read.jsonl``, and word 8-gram containment at most 0.2 in either direction
(``containment`` in the label records is the larger of the two).

Label rule for copies (the labelling guide's definitions, from what the generator did)
-------------------------------------------------------------------------------------
The generator knows, for every copy, ``kept``: the share of the original's body words that
are in the copy (moved, reworded, misspelt or re-punctuated words still count as kept: the
guide's "lightly edited"), and ``added``: the share of the copy's body words that are not the
original's (new leads, paragraphs from other articles, the host text around an excerpt).
Page furniture is neither (the guide: "ignore the junk").  Then, following
``LABELING_GUIDE.md``:

* **duplicate** when ``kept >= 0.5`` and ``added < 0.5``: "a few sentences or paragraphs
  added, removed, reordered or reworded, or the tail cut off", a truncated copy that
  "covers ... at least about half of its body", an update of which the original is still
  most;
* **partial** otherwise, provided the copied text holds a run of at least three sentences of
  narrative in a row ("at least a few sentences of narrative in a row"; "a short excerpt
  (less than about half) of a long wire story");
* items whose ``kept`` or ``added`` falls within 0.05 of 0.5 are not generated (the guide's
  "about half" is no sharp line), nor copies whose copied run is shorter than three sentences.

Shared quotations are **related** whatever their length (the guide: "Sharing verbatim
QUOTES of what a politician said does NOT make a pair partial or duplicate").

Each real page is the source of at most one copy per edit; each page is in at most two
``shared_quote`` or ``related`` pairs and six ``unrelated`` ones (the two small events have
few pages).  Copies are dated 1-36 hours after their original; a wrapped copy carries the
publisher of the page whose furniture it wears.

Known limits: the corpus has three events, one of them (Helsinki summit) holding 514 of the
570 pages, so same-event kinds come mostly from it, and some ``related`` pairs are only
loosely on one topic; the prose test and the caption test are simple and sometimes wrong (a
short lead counts as furniture, a pull quote as a caption); each edit is applied alone (real
reprints combine them); a write-thru's new lead is another article's lead, not a rewrite of
this one's.
"""

from __future__ import annotations

import argparse
import datetime as dt
import gzip
import json
import os
import random
import re
import sys
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import xxhash

CORPUS = "provenance_news_2018_dev"
MIN_PROSE_WORDS = 10
MIN_SOURCE_PARAS = 5
MIN_SOURCE_WORDS = 250
MAX_CONTAINMENT = 0.2  # independence: word 8-gram containment in either direction
SHINGLE = 8
BAND = 0.05  # no item with kept/added within this of 0.5
MAX_DONORS = 3  # articles a write-thru takes new paragraphs from
TOPIC_WORDS, TOPIC_HITS = 10, 3  # a page is on its event's topic: 3 of its 10 keywords
MIN_RUN_SENTENCES = 3

STRENGTHS: dict[str, tuple[float, ...]] = {
    "furniture": (1, 2, 3),
    "truncate": (0.9, 0.75, 0.6, 0.4, 0.3),
    "write_thru": (0.15, 0.3, 0.6, 0.75),
    "paragraph_drop": (0.1, 0.2, 0.3),
    "paragraph_reorder": (1, 2, 3),
    "reword": (0.25, 0.5, 1.0),
    "typos": (0.01, 0.03, 0.05),
    "punctuation": (0.3, 0.6, 1.0),
    "excerpt": (2, 3, 4, 5),
    "shared_quote": (1, 2, 3),
    "related": (0,),
    "unrelated": (0,),
}

# --------------------------------------------------------------------------------------------
# text units


WORD = re.compile(r"\w+")
SENTENCE_END = (".", "?", "!", '"', "”", "’", "'")
ABBREVIATIONS = frozenset(
    re.split(
        r"\s+",
        "mr mrs ms dr st sen rep gov gen col lt sgt jr sr prof rev no vs u.s u.k u.n "
        "jan feb mar apr aug sept sep oct nov dec inc corp co ltd",
    )
)


def words(text: str) -> list[str]:
    return WORD.findall(text)


def n_words(text: str) -> int:
    return len(WORD.findall(text))


def split_paragraphs(text: str) -> list[str]:
    return [p.strip() for p in re.split(r"\n\s*\n", text) if p.strip()]


def join_paragraphs(paras: Iterable[str]) -> str:
    return "\n\n".join(paras)


_BOUNDARY = re.compile(r"[.!?][”\"’']?\s+(?=[“\"‘'(A-Z0-9])")


def sentence_spans(paragraph: str) -> list[tuple[int, int]]:
    """Sentences of a paragraph as (start, end) offsets: cut after ``. ? !`` (and a closing
    quote) before a capital, except after an abbreviation or an initial."""
    out, start = [], 0
    for m in _BOUNDARY.finditer(paragraph):
        before = paragraph[start : m.start()].split()
        last = before[-1].lower().rstrip(".") if before else ""
        if m.group(0)[0] == "." and (len(last) <= 1 or last in ABBREVIATIONS):
            continue
        out.append((start, m.start() + len(m.group(0).rstrip())))
        start = m.end()
    if paragraph[start:].strip():
        out.append((start, len(paragraph.rstrip())))
    return out


def split_sentences(paragraph: str) -> list[str]:
    return [paragraph[a:b] for a, b in sentence_spans(paragraph)]


def shingles(text: str) -> set[int]:
    """Hashes of the word 8-grams of a text (NFKC, case-folded ``\\w+`` words)."""
    ws = [w.casefold() for w in words(unicodedata.normalize("NFKC", text))]
    return {
        xxhash.xxh64_intdigest(" ".join(ws[i : i + SHINGLE]).encode("utf-8"))
        for i in range(len(ws) - SHINGLE + 1)
    }


def containment(a: set[int], b: set[int]) -> float:
    """Share of a's 8-grams that are in b (0 when a has none)."""
    return len(a & b) / len(a) if a else 0.0


# --------------------------------------------------------------------------------------------
# pages


@dataclass(frozen=True)
class Page:
    """A corpus article split into paragraphs, with which of them are prose."""

    record: dict[str, Any]
    paras: tuple[str, ...]
    prose: tuple[bool, ...]
    body_index: tuple[int, ...]  # positions of the prose paragraphs
    body_words: int

    @classmethod
    def of(cls, record: dict[str, Any]) -> Page:
        paras = tuple(split_paragraphs(record["text"]))
        seen = Counter(paras)
        prose = tuple(
            n_words(p) >= MIN_PROSE_WORDS and p.endswith(SENTENCE_END) and seen[p] == 1
            for p in paras
        )
        index = tuple(i for i, is_prose in enumerate(prose) if is_prose)
        return cls(record, paras, prose, index, sum(n_words(paras[i]) for i in index))

    @property
    def id(self) -> str:
        return str(self.record["id"])

    @property
    def event(self) -> str:
        return str(self.record["event"])

    @property
    def publisher(self) -> str:
        return str(self.record["publisher"])

    @property
    def body(self) -> list[str]:
        return [self.paras[i] for i in self.body_index]

    @property
    def head(self) -> list[str]:
        idx = self.body_index
        return list(self.paras[: idx[0]]) if idx else list(self.paras)

    @property
    def tail(self) -> list[str]:
        idx = self.body_index
        return list(self.paras[idx[-1] + 1 :]) if idx else []

    @property
    def core(self) -> list[str]:
        """The paragraphs from the first to the last prose paragraph."""
        idx = self.body_index
        return list(self.paras[idx[0] : idx[-1] + 1]) if idx else []

    @property
    def is_source(self) -> bool:
        return len(self.body_index) >= MIN_SOURCE_PARAS and self.body_words >= MIN_SOURCE_WORDS


CREDIT = re.compile(r"\bPhoto\b|\bphoto\b|/|\bAP\b|Getty|Reuters|AFP|EPA|Images|Archive|Credit")


def caption_blocks(page: Page) -> list[list[str]]:
    """Photo-caption blocks of a page: a line of 6+ words that is not prose on its page (it is
    printed twice or does not end like a sentence) and is followed by a short credit line
    ("(AP Photo/...)", "Photo: ..., AP") or, printed twice, names a credit itself.  The block
    is the line as often as the page prints it (often twice), then the credit line."""
    counts = Counter(page.paras)
    blocks, done = [], set()
    for i, p in enumerate(page.paras):
        if n_words(p) < 6 or page.prose[i] or p in done:
            continue
        last = max(j for j, q in enumerate(page.paras) if q == p)
        nxt = page.paras[last + 1] if last + 1 < len(page.paras) else ""
        credit = bool(nxt) and n_words(nxt) <= 8 and bool(CREDIT.search(nxt))
        if credit or (counts[p] > 1 and CREDIT.search(p)):
            done.add(p)
            blocks.append([p] * counts[p] + ([nxt] if credit else []))
    return blocks


def furniture_lines(lines: Sequence[str]) -> list[str]:
    """Head or tail lines fit to wrap another article: short lines, or lines the page
    prints twice (captions); a long single line there is narrative cut off by the scraper."""
    counts = Counter(lines)
    return [p for p in lines if n_words(p) < 20 or counts[p] > 1]


# --------------------------------------------------------------------------------------------
# the corpus: pages, overlaps, read labels


@dataclass
class Corpus:
    pages: list[Page]
    copies_read: set[frozenset[str]]  # pairs read as duplicate or partial
    by_id: dict[str, Page] = field(init=False)
    shingle_sets: dict[str, set[int]] = field(init=False)
    shared: dict[tuple[str, str], int] = field(init=False)
    source_pages: list[Page] = field(init=False)
    on_topic: set[str] = field(init=False)  # ids of pages that are about their event

    def __post_init__(self) -> None:
        self.by_id = {p.id: p for p in self.pages}
        self.source_pages = [p for p in self.pages if p.is_source]
        self.on_topic = on_topic_pages(self.pages)
        self.shingle_sets = {p.id: shingles(p.record["text"]) for p in self.pages}
        postings: dict[int, list[str]] = defaultdict(list)
        for p in self.pages:
            for h in self.shingle_sets[p.id]:
                postings[h].append(p.id)
        shared: Counter[tuple[str, str]] = Counter()
        for ids in postings.values():
            for i, a in enumerate(ids):
                for b in ids[i + 1 :]:
                    shared[(a, b) if a < b else (b, a)] += 1
        self.shared = dict(shared)

    def containment(self, a: str, b: str) -> float:
        """Larger of the two directed word 8-gram containments of two corpus pages."""
        n = self.shared.get((a, b) if a < b else (b, a), 0)
        sa, sb = len(self.shingle_sets[a]), len(self.shingle_sets[b])
        return max(n / sa if sa else 0.0, n / sb if sb else 0.0)

    def independent(self, a: str, b: str) -> bool:
        return (
            a != b
            and frozenset((a, b)) not in self.copies_read
            and self.containment(a, b) <= MAX_CONTAINMENT
        )

    def sources(self) -> list[Page]:
        return list(self.source_pages)


def event_keywords(pages: Sequence[Page], top: int = TOPIC_WORDS) -> dict[str, list[str]]:
    """Per event, the words whose document frequency in the event most exceeds that in the
    other events (ties by the word)."""
    vocab: dict[str, list[set[str]]] = defaultdict(list)
    for p in pages:
        vocab[p.event].append({w.casefold() for w in words(p.record["text"])})
    out = {}
    for event, sets in vocab.items():
        others = [s for e, ss in vocab.items() if e != event for s in ss]
        df_in = Counter(w for s in sets for w in s)
        df_out = Counter(w for s in others for w in s)
        score = {
            w: df_in[w] / len(sets) - (df_out[w] / len(others) if others else 0) for w in df_in
        }
        out[event] = sorted(score, key=lambda w: (-score[w], w))[:top]
    return out


def on_topic_pages(pages: Sequence[Page]) -> set[str]:
    """Pages that name at least TOPIC_HITS of their event's keywords: the corpus files some
    off-topic pages (car shows, other elections, widgets) under an event."""
    keywords = event_keywords(pages)
    return {
        p.id
        for p in pages
        if len(set(keywords[p.event]) & {w.casefold() for w in words(p.record["text"])})
        >= TOPIC_HITS
    }


def load_corpus(data_dir: Path) -> Corpus:
    folder = data_dir / CORPUS
    with gzip.open(folder / "docs.jsonl.gz", "rt", encoding="utf-8") as fh:
        pages = [Page.of(json.loads(line)) for line in fh if line.strip()]
    copies: set[frozenset[str]] = set()
    labels = folder / "labels_read.jsonl"
    if labels.exists():
        with labels.open(encoding="utf-8") as fh:
            for line in fh:
                rec = json.loads(line)
                if rec["label"] in ("duplicate", "partial"):
                    copies.add(frozenset((rec["a"], rec["b"])))
    return Corpus(pages, copies)


# --------------------------------------------------------------------------------------------
# deterministic randomness


def h64(*parts: object) -> int:
    """xxh64 of the parts joined by a unit separator: a stable, unsalted 64-bit key."""
    return int(xxhash.xxh64_intdigest("\x1f".join(map(str, parts)).encode("utf-8")))


def item_rng(seed: int, *parts: str) -> random.Random:
    return random.Random(h64(seed, *parts))


def ranked(seed: int, kind: str, items: Iterable[Page]) -> list[Page]:
    """Pages in the order of a seeded hash of their id: the per-kind draw of sources."""
    return sorted(items, key=lambda p: (h64(seed, kind, p.id), p.id))


def shuffled(rng: random.Random, items: Sequence[Page]) -> list[Page]:
    out = list(items)
    rng.shuffle(out)
    return out


# --------------------------------------------------------------------------------------------
# label rule


def label_copy(kept: float, added: float, run_sentences: int) -> str | None:
    """The guide's label for a copy, from what the generator did; None when the item is too
    close to the guide's "about half" or copies too little to be partial (not generated)."""
    if abs(kept - 0.5) < BAND or abs(added - 0.5) < BAND:
        return None
    if kept >= 0.5 and added < 0.5:
        return "duplicate"
    return "partial" if run_sentences >= MIN_RUN_SENTENCES else None


@dataclass
class Copy:
    """A generated text and what the generator did to make it."""

    paras: list[str]
    kept: float = 1.0
    added: float = 0.0
    run_sentences: int = 10**6  # longest run of copied body sentences in a row
    facts: dict[str, Any] = field(default_factory=dict)

    @property
    def text(self) -> str:
        return join_paragraphs(self.paras)


def sentences_in(paras: Iterable[str]) -> int:
    return sum(len(split_sentences(p)) for p in paras)


# --------------------------------------------------------------------------------------------
# edits: one function each


FURNITURE_LINES = {1: 3, 2: 8, 3: 12}  # head and tail lines taken from the donor, per level
FURNITURE_CAPTIONS = {1: 0, 2: 1, 3: 3}  # caption blocks added, per level


def wrap_in_furniture(
    page: Page,
    level: int,
    rng: random.Random,
    donors: Sequence[Page],
    captions: Sequence[list[str]],
) -> Copy | None:
    """The page's body in another publisher's head and tail lines (its own dropped), with
    caption blocks of other pages: the first after the lead, the others at random body
    paragraph boundaries; at level 3 the head block is printed twice."""
    others = [d for d in donors if d.publisher != page.publisher]
    n_captions = FURNITURE_CAPTIONS[level]
    if not others or len(captions) < n_captions:
        return None
    donor = rng.choice(others)
    head = furniture_lines(donor.head)[-FURNITURE_LINES[level] :]
    tail = furniture_lines(donor.tail)[: FURNITURE_LINES[level]]
    if level == 3:
        head = head + head
    core = page.core
    junk = head + tail
    for k, c in enumerate(rng.sample(range(len(captions)), n_captions)):
        at = 1 if k == 0 else rng.randrange(2, len(core))
        core = core[:at] + captions[c] + core[at:]
        junk += captions[c]
    paras = head + core + tail
    junk_words = sum(n_words(p) for p in junk)
    total = sum(n_words(p) for p in paras)
    return Copy(
        paras,
        facts={"furniture_from": donor.id, "junk_share": round(junk_words / total, 3)},
    )


def truncate(page: Page, keep: float, rng: random.Random) -> Copy | None:
    """The page cut after about ``keep`` of its body words, at the end of a sentence."""
    del rng
    total, target = page.body_words, keep * page.body_words
    out: list[str] = list(page.head)
    done = 0
    for p, is_prose in zip(page.core, (page.prose[i] for i in _core_index(page)), strict=True):
        if not is_prose:
            out.append(p)
            continue
        if done + n_words(p) <= target:
            out.append(p)
            done += n_words(p)
            continue
        end = 0
        for a, b in sentence_spans(p):
            if abs(done + n_words(p[a:b]) - target) > abs(done - target):
                break
            end, done = b, done + n_words(p[a:b])
        if end:
            out.append(p[:end])
        break
    kept = done / total
    return Copy(out, kept=kept, run_sentences=sentences_in(out[len(page.head) :]))


def _core_index(page: Page) -> range:
    idx = page.body_index
    return range(idx[0], idx[-1] + 1)


def write_thru(
    page: Page, share: float, rng: random.Random, donors: Sequence[Page], corpus: Corpus
) -> Copy | None:
    """An update: runs of consecutive paragraphs of up to three other same-event articles
    added after the lead and at the end, so that about ``share`` of the update's body is new;
    half the items also get a new lead (another same-event article's)."""
    new_lead = rng.random() < 0.5
    core = page.core
    lead_at = next(i for i, p in enumerate(core) if p in page.body)
    kept_words = page.body_words
    seen = set(corpus.shingle_sets[page.id])
    added: list[str] = []
    used: list[str] = []
    if new_lead:
        for donor in donors:
            lead = donor.body[0]
            if containment(shingles(lead), seen) <= MAX_CONTAINMENT:
                kept_words -= n_words(core[lead_at])
                core = [*core[:lead_at], lead, *core[lead_at + 1 :]]
                added.append(lead)
                seen |= shingles(lead)
                used.append(donor.id)
                break
        else:
            return None
    target = share * kept_words / (1 - share)
    have = sum(n_words(p) for p in added)
    extra: list[str] = []
    for donor in donors:
        if have >= target or len(set(used)) == MAX_DONORS:
            break
        start = rng.randrange(1, max(2, len(donor.body) // 2))
        for p in donor.body[start:]:
            if have >= target:
                break
            sh = shingles(p)
            if containment(sh, seen) > MAX_CONTAINMENT:
                continue
            extra.append(p)
            seen |= sh
            have += n_words(p)
            if donor.id not in used:
                used.append(donor.id)
    if have < target * 0.9:
        return None
    cut = rng.randint(0, len(extra))
    paras = page.head + core[: lead_at + 1] + extra[:cut] + core[lead_at + 1 :] + extra[cut:]
    paras += page.tail
    body_total = kept_words + have
    return Copy(
        paras,
        kept=kept_words / page.body_words,
        added=have / body_total,
        run_sentences=sentences_in(page.body[1:]),
        facts={"new_lead": new_lead, "added_from": used},
    )


def drop_paragraphs(page: Page, share: float, rng: random.Random) -> Copy | None:
    """Body paragraphs other than the lead removed until about ``share`` of its words."""
    candidates = list(page.body_index[1:])
    rng.shuffle(candidates)
    target, dropped, gone = share * page.body_words, 0, set()
    for i in candidates:
        w = n_words(page.paras[i])
        if abs(dropped + w - target) < abs(dropped - target):
            gone.add(i)
            dropped += w
    if not gone:
        return None
    return Copy(
        [p for i, p in enumerate(page.paras) if i not in gone],
        kept=1 - dropped / page.body_words,
        facts={"dropped_paragraphs": len(gone)},
    )


def reorder_paragraphs(page: Page, moves: int, rng: random.Random) -> Copy | None:
    """``moves`` body paragraphs other than the lead moved elsewhere in the body."""
    body = page.body_index
    if len(body) < moves + 2:
        return None
    order = list(range(len(page.paras)))
    for i in rng.sample(body[1:], moves):
        order.remove(i)
        order.insert(rng.randint(order.index(body[0]) + 1, len(order)), i)
    if order == sorted(order):
        order.remove(body[-1])
        order.insert(order.index(body[1]), body[-1])
    return Copy([page.paras[i] for i in order], facts={"moved_paragraphs": moves})


SYNONYMS = {
    "big": "large",
    "large": "big",
    "began": "started",
    "started": "began",
    "nearly": "almost",
    "almost": "nearly",
    "many": "numerous",
    "tried": "attempted",
    "very": "extremely",
    "quickly": "rapidly",
    "several": "a number of",
    "however": "though",
    "despite": "in spite of",
    "buy": "purchase",
    "help": "assist",
    "meeting": "talks",
    "shows": "indicates",
    "wants": "would like",
    "also": "additionally",
}
QUOTE_FIRST = re.compile(
    r"^([“\"])(?P<q>.+?)[,]([”\"]) (?P<who>[A-Z][\w.’'-]*(?: [A-Z][\w.’'-]*){0,3}|[Hh]e|[Ss]he)"
    r" (?P<verb>said|says)\.$"
)
SAID_WHO = re.compile(
    r"^(?P<q>[“\"].+?,[”\"]) (?P<verb>said|says) (?P<who>[A-Z][\w.’'-]*(?: [A-Z][\w.’'-]*){0,3})\.$"
)
FRONTED = re.compile(
    r"^(?P<conj>When|After|Before|While|Although|If|Since|Because|As) (?P<a>[^,]{8,}), "
    r"(?P<b>[a-zA-Z][^,]{8,})\.$"
)


AUXILIARIES = frozenset(
    ["has", "have", "had", "was", "were", "is", "are", "be", "been", "being", "it", "that"]
)


def _said_says(s: str) -> str | None:
    """The first attribution verb said <-> says (not after an auxiliary: "has said")."""
    swap = {"said": "says", "says": "said", "Said": "Says", "Says": "Said"}
    for m in re.finditer(r"\b(said|says|Said|Says)\b", s):
        before = s[: m.start()].split()
        if before and before[-1].lower() in AUXILIARIES:
            continue
        return s[: m.start()] + swap[m.group(1)] + s[m.end() :]
    return None


def _reorder_clause(s: str) -> str | None:
    """``"Q," X said.`` -> ``X said, "Q."``; ``"Q," said X.`` -> ``"Q," X said.``;
    ``When A, B.`` -> ``B when A.``; None when the sentence has none of these shapes."""
    if m := QUOTE_FIRST.match(s):
        who = m["who"][0].upper() + m["who"][1:]
        return f"{who} {m['verb']}, {m.group(1)}{m['q']}.{m.group(3)}"
    if m := SAID_WHO.match(s):
        return f"{m['q']} {m['who']} {m['verb']}."
    if m := FRONTED.match(s):
        b = m["b"]
        return f"{b[0].upper()}{b[1:]} {m['conj'].lower()} {m['a']}."
    return None


def _synonym(s: str, rng: random.Random) -> str | None:
    """One word of the sentence that is in SYNONYMS replaced (case of its first letter kept)."""
    hits = [m for m in re.finditer(r"\b[a-zA-Z]+\b", s) if m.group(0).lower() in SYNONYMS]
    if not hits:
        return None
    m = rng.choice(hits)
    new = SYNONYMS[m.group(0).lower()]
    if m.group(0)[0].isupper():
        new = new[0].upper() + new[1:]
    return s[: m.start()] + new + s[m.end() :]


def reword(page: Page, share: float, rng: random.Random) -> Copy | None:
    """Light rewording: each body sentence, with probability ``share``, gets one of
    said <-> says, a reordered clause or a synonym (in a random order of preference)."""
    changed = 0
    paras = list(page.paras)
    for i in page.body_index:
        p, out, last = paras[i], [], 0
        for a, b in sentence_spans(p):
            sentence = p[a:b]
            if rng.random() < share:
                ways: list[Callable[[str], str | None]] = [
                    _said_says,
                    _reorder_clause,
                    lambda x: _synonym(x, rng),
                ]
                rng.shuffle(ways)
                for way in ways:
                    new = way(sentence)
                    if new is not None and new != sentence:
                        sentence, changed = new, changed + 1
                        break
            out += [p[last:a], sentence]
            last = b
        paras[i] = "".join(out) + p[last:]
    if not changed:
        return None
    return Copy(paras, facts={"sentences_reworded": changed})


KEYBOARD = [
    "qwertyuiop",
    "asdfghjkl",
    "zxcvbnm",
]


def _neighbour(ch: str, rng: random.Random) -> str:
    low = ch.lower()
    for r, row in enumerate(KEYBOARD):
        c = row.find(low)
        if c >= 0:
            near = [row[c + d] for d in (-1, 1) if 0 <= c + d < len(row)]
            near += [
                KEYBOARD[r2][c] for r2 in (r - 1, r + 1) if 0 <= r2 < 3 and c < len(KEYBOARD[r2])
            ]
            out = rng.choice(near)
            return out.upper() if ch.isupper() else out
    return ch


def _typo(word: str, rng: random.Random) -> str:
    i = rng.randrange(1, len(word) - 1)
    kind = rng.choice(("swap", "drop", "double", "neighbour"))
    if kind == "swap":
        return word[:i] + word[i + 1] + word[i] + word[i + 2 :]
    if kind == "drop":
        return word[:i] + word[i + 1 :]
    if kind == "double":
        return word[:i] + word[i] + word[i:]
    return word[:i] + _neighbour(word[i], rng) + word[i + 1 :]


def add_typos(page: Page, rate: float, rng: random.Random) -> Copy | None:
    """Keyboard typos in ``rate`` of the page's words (words of 4+ letters are hit)."""
    text = join_paragraphs(page.paras)
    spots = [m.span() for m in re.finditer(r"\b[A-Za-z]{4,}\b", text)]
    n = max(1, round(rate * n_words(text)))
    if len(spots) < n:
        return None
    chosen = sorted(rng.sample(spots, n))
    out, last = [], 0
    for a, b in chosen:
        out += [text[last:a], _typo(text[a:b], rng)]
        last = b
    out.append(text[last:])
    return Copy(split_paragraphs("".join(out)), facts={"typos": n})


UNICODE_TO_ASCII = {
    "“": '"',
    "”": '"',
    "‘": "'",
    "’": "'",
    "—": "--",
    "–": "-",
    "…": "...",
    "\xa0": " ",
}


def _curl(text: str, i: int, ch: str) -> str:
    """The curly form of a straight quote at position i (opening after a space or start)."""
    opening = i == 0 or text[i - 1] in " \n([\u2014"
    if ch == '"':
        return "“" if opening else "”"
    return "‘" if opening else "’"


def change_punctuation(page: Page, rate: float, rng: random.Random) -> Copy | None:
    """Each quote, apostrophe, dash, ellipsis and no-break space flipped between its Unicode
    and ASCII forms with probability ``rate``; as many ordinary spaces after a figure or a
    capitalised word made non-breaking, at a rate of ``rate`` / 10."""
    text = join_paragraphs(page.paras)
    out, flips, i = [], 0, 0
    while i < len(text):
        ch = text[i]
        if text.startswith("...", i) and rng.random() < rate:
            out.append("…")
            flips, i = flips + 1, i + 3
            continue
        if ch in UNICODE_TO_ASCII and rng.random() < rate:
            out.append(UNICODE_TO_ASCII[ch])
            flips += 1
        elif ch in "\"'" and rng.random() < rate:
            out.append(_curl(text, i, ch))
            flips += 1
        elif (
            ch == "-"
            and text[i - 1 : i] == " "
            and text[i + 1 : i + 2] == " "
            and rng.random() < rate
        ):
            out.append("—")
            flips += 1
        elif (
            ch == " "
            and i
            and (text[i - 1].isdigit() or text[i - 1].isupper())
            and rng.random() < rate / 10
        ):
            out.append("\xa0")
            flips += 1
        else:
            out.append(ch)
        i += 1
    if not flips:
        return None
    return Copy(split_paragraphs("".join(out)), facts={"changes": flips})


def embed_excerpt(source: Page, host: Page, n_paras: int, rng: random.Random) -> Copy | None:
    """``n_paras`` consecutive body paragraphs of ``source`` after the lead of ``host``;
    None unless they are under half of the source's body and of the host's new body."""
    body = source.body
    if len(body) < n_paras + 1:
        return None
    start = rng.randrange(0, len(body) - n_paras + 1)
    excerpt = body[start : start + n_paras]
    copied = sum(n_words(p) for p in excerpt)
    own = host.body_words
    kept, added = copied / source.body_words, own / (own + copied)
    if kept > 0.5 - BAND or added < 0.5 + BAND:  # an excerpt: under half of each article
        return None
    core = host.core
    lead_at = next(i for i, p in enumerate(core) if p in host.body)
    paras = host.head + core[: lead_at + 1] + excerpt + core[lead_at + 1 :] + host.tail
    return Copy(
        paras,
        kept=kept,
        added=added,
        run_sentences=sentences_in(excerpt),
        facts={"host": host.id, "excerpt_start": start},
    )


QUOTED_SENTENCE = re.compile(
    r"[“\"][^“”\"]{40,400}[,?!.][”\"],? (?:[A-Z][\w.’'-]*(?: [A-Z][\w.’'-]*){0,3}) "
    r"(?:said|says|told \w+(?: \w+)?|tweeted|wrote|added)(?: [^“”\"]{0,80})?[.]"
)


def quoted_sentences(page: Page) -> list[str]:
    """Sentences of a page's body that quote a named speaker (8+ quoted words)."""
    out = []
    for p in page.body:
        for s in split_sentences(p):
            if QUOTED_SENTENCE.fullmatch(s) and n_words(re.split(r"[”\"],?", s[1:])[0]) >= 8:
                out.append(s)
    return out


def insert_paragraphs(page: Page, extra: Sequence[str], rng: random.Random) -> list[str]:
    """The page with each of ``extra`` as its own paragraph after a random body paragraph."""
    paras = list(page.paras)
    for p in extra:
        spots = [i + 1 for i, q in enumerate(paras) if q in page.body]
        paras.insert(rng.choice(spots), p)
    return paras


# --------------------------------------------------------------------------------------------
# building the benchmark


@dataclass
class Bench:
    corpus: Corpus
    seed: int
    docs: dict[str, dict[str, Any]] = field(default_factory=dict)
    labels: list[dict[str, Any]] = field(default_factory=list)

    def real(self, page: Page) -> str:
        if page.id not in self.docs:
            rec = {k: page.record[k] for k in ("id", "event", "publisher", "date", "title", "text")}
            self.docs[page.id] = {**rec, "derived_from": []}
        return page.id

    def generated(
        self,
        new_id: str,
        base: Page,
        text: str,
        derived_from: Sequence[str],
        rng: random.Random,
        publisher: str | None = None,
        after: str | None = None,
    ) -> str:
        if new_id in self.docs:
            raise ValueError(f"generated id {new_id} made twice")
        date = base.record["date"]
        if after is not None:  # a copy is published 1-36 hours after its original
            date = _later(max(date, after, key=dt.datetime.fromisoformat), rng.randint(1, 36))
        self.docs[new_id] = {
            "id": new_id,
            "event": base.event,
            "publisher": publisher or base.publisher,
            "date": date,
            "title": base.record["title"],
            "text": text,
            "derived_from": list(derived_from),
        }
        return new_id

    def pair(
        self, id1: str, id2: str, label: str, edit: str, strength: float, **facts: Any
    ) -> None:
        self.labels.append(
            {"id1": id1, "id2": id2, "label": label, "edit": edit, "strength": strength, **facts}
        )


def _later(date: str, hours: int) -> str:
    return (dt.datetime.fromisoformat(date) + dt.timedelta(hours=hours)).isoformat()


def quotas(total: int, strengths: Sequence[float]) -> list[int]:
    n = len(strengths)
    return [total // n + (1 if i < total % n else 0) for i in range(n)]


def same_event(corpus: Corpus, page: Page) -> list[Page]:
    """Source pages on the page's event and topic (none when the page is off topic)."""
    if page.id not in corpus.on_topic:
        return []
    return [p for p in corpus.sources() if p.event == page.event and p.id in corpus.on_topic]


def same_event_partners(corpus: Corpus, page: Page, rng: random.Random) -> list[Page]:
    """Other source pages of the page's event and topic, independent of it, shuffled."""
    return shuffled(rng, [p for p in same_event(corpus, page) if corpus.independent(p.id, page.id)])


Edit = Callable[[Page, float, random.Random], Copy | None]


def copy_kind(bench: Bench, kind: str, per_kind: int, make: Edit) -> None:
    """Copies of distinct sources, ``quota`` per strength, labelled by :func:`label_copy`."""
    corpus, seed = bench.corpus, bench.seed
    pool = ranked(seed, kind, corpus.sources())
    used: set[str] = set()
    for strength, quota in zip(STRENGTHS[kind], quotas(per_kind, STRENGTHS[kind]), strict=True):
        made = 0
        for page in pool:
            if made == quota:
                break
            if page.id in used:
                continue
            rng = item_rng(seed, kind, str(strength), page.id)
            copy = make(page, strength, rng)
            if copy is None:
                continue
            label = label_copy(copy.kept, copy.added, copy.run_sentences)
            if label is None:
                continue
            used.add(page.id)
            made += 1
            derived = [page.id, *_facts_ids(copy.facts)]
            wrapper = copy.facts.get("furniture_from")  # the copy is on that page's site
            new_id = bench.generated(
                f"{page.id}~{kind}",
                page,
                copy.text,
                derived,
                rng,
                publisher=corpus.by_id[wrapper].publisher if wrapper else None,
                after=page.record["date"],
            )
            facts = {**copy.facts, "kept": round(copy.kept, 3), "added": round(copy.added, 3)}
            bench.pair(bench.real(page), new_id, label, kind, strength, **facts)


def _facts_ids(facts: dict[str, Any]) -> list[str]:
    out: list[str] = []
    for key in ("furniture_from", "added_from", "host"):
        value = facts.get(key)
        out += value if isinstance(value, list) else [value] if value else []
    return out


@dataclass(frozen=True)
class Caption:
    event: str
    publisher: str
    lines: tuple[str, ...]


def furniture_pools(corpus: Corpus) -> tuple[list[Page], list[Caption]]:
    """Pages with head and tail lines fit to wrap another article, and every distinct
    caption block of the corpus (the first page that prints it owns it)."""
    donors = [p for p in corpus.pages if furniture_lines(p.head) and furniture_lines(p.tail)]
    captions: dict[str, Caption] = {}
    for p in corpus.pages:
        for block in caption_blocks(p):
            captions.setdefault(block[0], Caption(p.event, p.publisher, tuple(block)))
    return donors, list(captions.values())


def captions_for(page: Page, captions: Sequence[Caption]) -> list[list[str]]:
    """Caption blocks of other publishers, of the page's event when it has three or more."""
    other = [c for c in captions if c.publisher != page.publisher]
    same = [c for c in other if c.event == page.event]
    return [list(c.lines) for c in (same if len(same) >= 3 else other)]


def build(corpus: Corpus, seed: int, per_kind: int = 180) -> Bench:
    """Every pair kind of the module docstring, ``per_kind`` pairs each (fewer when the
    corpus cannot supply them), deterministic in ``seed``."""
    bench = Bench(corpus, seed)
    donors, captions = furniture_pools(corpus)

    def furniture(page: Page, s: float, rng: random.Random) -> Copy | None:
        return wrap_in_furniture(page, int(s), rng, donors, captions_for(page, captions))

    def thru(page: Page, s: float, rng: random.Random) -> Copy | None:
        return write_thru(page, s, rng, same_event_partners(corpus, page, rng), corpus)

    copy_kind(bench, "furniture", per_kind, furniture)
    copy_kind(bench, "truncate", per_kind, truncate)
    copy_kind(bench, "write_thru", per_kind, thru)
    copy_kind(bench, "paragraph_drop", per_kind, drop_paragraphs)
    copy_kind(
        bench, "paragraph_reorder", per_kind, lambda p, s, r: reorder_paragraphs(p, int(s), r)
    )
    copy_kind(bench, "reword", per_kind, reword)
    copy_kind(bench, "typos", per_kind, add_typos)
    copy_kind(bench, "punctuation", per_kind, change_punctuation)
    excerpts(bench, per_kind)
    shared_quotes(bench, per_kind)
    negatives(bench, per_kind)
    return bench


def excerpts(bench: Bench, per_kind: int) -> None:
    """(A, B + paragraphs of A): partial."""
    corpus, seed, kind = bench.corpus, bench.seed, "excerpt"
    pool = ranked(seed, kind, corpus.sources())
    used: set[str] = set()
    for strength, quota in zip(STRENGTHS[kind], quotas(per_kind, STRENGTHS[kind]), strict=True):
        made = 0
        for page in pool:
            if made == quota:
                break
            if page.id in used:
                continue
            rng = item_rng(seed, kind, str(strength), page.id)
            for host in same_event_partners(corpus, page, rng)[:5]:
                copy = embed_excerpt(page, host, int(strength), rng)
                if copy is None:
                    continue
                label = label_copy(copy.kept, copy.added, copy.run_sentences)
                if label != "partial":
                    continue
                new_id = bench.generated(
                    f"{host.id}~excerpt~{page.id}",
                    host,
                    copy.text,
                    [host.id, page.id],
                    rng,
                    after=page.record["date"],
                )
                facts = {**copy.facts, "kept": round(copy.kept, 3), "added": round(copy.added, 3)}
                bench.pair(bench.real(page), new_id, label, kind, strength, **facts)
                used.add(page.id)
                made += 1
                break


def shared_quotes(bench: Bench, per_kind: int) -> None:
    """(X + quotes, Y + the same quotes), X and Y independent: related."""
    corpus, seed, kind = bench.corpus, bench.seed, "shared_quote"
    quotes = {p.id: [(q, shingles(q)) for q in quoted_sentences(p)] for p in corpus.sources()}
    pool = ranked(seed, kind, corpus.sources())
    used: Counter[str] = Counter()  # each page is in at most two pairs
    made_pairs: set[frozenset[str]] = set()
    for strength, quota in zip(STRENGTHS[kind], quotas(per_kind, STRENGTHS[kind]), strict=True):
        made, k = 0, int(strength)
        for x in pool:
            if made == quota:
                break
            if used[x.id] >= 2:
                continue
            rng = item_rng(seed, kind, str(strength), x.id)
            partners = [
                p
                for p in same_event_partners(corpus, x, rng)
                if used[p.id] < 2 and frozenset((x.id, p.id)) not in made_pairs
            ]
            if not partners:
                continue
            y = partners[0]
            both = corpus.shingle_sets[x.id] | corpus.shingle_sets[y.id]
            speakers = shuffled(rng, same_event(corpus, x))
            chosen: list[str] = []
            taken: set[int] = set()
            for z in speakers:
                if z.id in (x.id, y.id):
                    continue
                for q, sh in quotes[z.id]:
                    # new to both articles, and not the same quote as one already chosen
                    if len(chosen) < k and not sh & both and containment(sh, taken) < 0.5:
                        chosen.append(q)
                        taken |= sh
            if len(chosen) < k:
                continue
            ids = [
                bench.generated(
                    f"{p.id}~quote~{other.id}",
                    p,
                    join_paragraphs(insert_paragraphs(p, chosen, rng)),
                    [p.id],
                    rng,
                )
                for p, other in ((x, y), (y, x))
            ]
            first, second = sorted(ids, key=lambda i: (bench.docs[i]["date"], i))
            bench.pair(
                first,
                second,
                "related",
                kind,
                strength,
                quote_words=sum(n_words(q) for q in chosen),
                containment=round(corpus.containment(x.id, y.id), 3),
            )
            used.update((x.id, y.id))
            made_pairs.add(frozenset((x.id, y.id)))
            made += 1


def negatives(bench: Bench, per_kind: int) -> None:
    """Independent real pairs: same event (related) and different events (unrelated)."""
    corpus, seed = bench.corpus, bench.seed
    pages = corpus.sources()
    for kind, same in (("related", True), ("unrelated", False)):
        pairs = [
            (a, b)
            for i, a in enumerate(pages)
            for b in pages[i + 1 :]
            if (a.event == b.event) == same and (not same or {a.id, b.id} <= corpus.on_topic)
        ]
        pairs.sort(
            key=lambda ab: (
                h64(seed, kind, ab[0].id, ab[1].id),
                ab[0].id,
                ab[1].id,
            )
        )
        uses: Counter[str] = Counter()
        cap = 2 if same else 6  # the other events have few pages: each is used more often
        made = 0
        for a, b in pairs:
            if made == per_kind:
                break
            if uses[a.id] >= cap or uses[b.id] >= cap or not corpus.independent(a.id, b.id):
                continue
            first, second = sorted((a, b), key=lambda p: (p.record["date"], p.id))
            bench.pair(
                bench.real(first),
                bench.real(second),
                kind,
                kind,
                0,
                containment=round(corpus.containment(a.id, b.id), 3),
            )
            uses.update((a.id, b.id))
            made += 1


# --------------------------------------------------------------------------------------------
# output


def counts(labels: Sequence[dict[str, Any]]) -> dict[str, dict[str, int]]:
    out: dict[str, Counter[str]] = defaultdict(Counter)
    for rec in labels:
        out[rec["edit"]][rec["label"]] += 1
        out[f"{rec['edit']} @ {rec['strength']}"][rec["label"]] += 1
    return {k: dict(sorted(v.items())) for k, v in out.items()}


def _jsonl(records: Iterable[dict[str, Any]]) -> Iterator[str]:
    for rec in records:
        yield json.dumps(rec, ensure_ascii=False, sort_keys=True) + "\n"


def write(bench: Bench, out: Path) -> dict[str, Any]:
    out.mkdir(parents=True, exist_ok=True)
    real = [d for d in bench.docs.values() if not d["derived_from"]]
    made = [d for d in bench.docs.values() if d["derived_from"]]
    with (out / "docs.jsonl").open("w", encoding="utf-8", newline="\n") as fh:
        fh.writelines(_jsonl(real + made))
    with (out / "labels.jsonl").open("w", encoding="utf-8", newline="\n") as fh:
        fh.writelines(_jsonl(bench.labels))
    summary = {
        "corpus": CORPUS,
        "seed": bench.seed,
        "docs": len(bench.docs),
        "pairs": len(bench.labels),
        "labels": dict(sorted(Counter(r["label"] for r in bench.labels).items())),
        "per_edit": counts(bench.labels),
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    return summary


def default_data_dir() -> Path:
    return Path(
        os.environ.get("NEARDUP_DATA", Path(__file__).resolve().parents[2] / "shared" / "data")
    )


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument(
        "--out", type=Path, required=True, help="folder for docs.jsonl and labels.jsonl"
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--data", type=Path, default=default_data_dir(), help="the shared/data folder")
    ap.add_argument("--per-kind", type=int, default=180, help="pairs per edit kind (default 180)")
    args = ap.parse_args(argv)
    if not (args.data / CORPUS / "docs.jsonl.gz").exists():
        print(f"newsgen: no {CORPUS}/docs.jsonl.gz under {args.data}", file=sys.stderr)
        return 2
    summary = write(build(load_corpus(args.data), args.seed, args.per_kind), args.out)
    print(f"{summary['pairs']} pairs over {summary['docs']} documents in {args.out}")
    print(f"labels: {summary['labels']}")
    for edit, by_label in summary["per_edit"].items():
        print(f"  {edit:28s} {by_label}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
