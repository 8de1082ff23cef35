"""Benchmark corpora: planted near-duplicates of real text, in ASCII and in Unicode.

* :func:`planted_corpus`: Reuters sentences recombined into base documents plus planted
  edited copies (the batch benchmark's corpus, ``bench_batch.build_corpus``), with more kinds
  of copy to choose from: keyboard typos and the typographic punctuation of scraped pages.
* :func:`typographic`: the same text with the punctuation a news site prints (curly quotes
  and apostrophes, em and en dashes, an ellipsis, no-break spaces): what makes a scraped page
  non-ASCII although its words are plain English.
* :func:`provenance_replicated`: the real scraped articles of ``provenance_news_2018_dev``
  (Unicode everywhere), replicated with edits up to a size.

Everything is deterministic for a seed and written as JSON Lines to a path the caller gives
(never into the repository).
"""

from __future__ import annotations

import datetime as dt
import gzip
import json
import random
from pathlib import Path
from typing import Any

import numpy as np

from _common import DATA

#: Copy kinds of :func:`planted_corpus` (one is drawn uniformly per copy).
PLANTED_KINDS = ("exact", "words", "drop", "append", "words+drop")
#: The harder mix the batch banding was chosen on: word edits, typos and typographic
#: punctuation, alone and together.
EDITED_KINDS = ("exact", "words", "typos", "typographic", "words+typographic", "drop", "append")


def typographic(text: str) -> str:
    """``text`` with the punctuation of a news site: “ ” for straight double quotes
    (alternating), ’ for apostrophes and single quotes, — for `` - `` and ``--``, … for
    ``...``, and a no-break space after ``Mr.``/``Mrs.``/``Dr.``."""
    out = []
    opened = False
    for ch in text:
        if ch == '"':
            out.append("”" if opened else "“")
            opened = not opened
        elif ch == "'":
            out.append("’")
        else:
            out.append(ch)
    result = "".join(out).replace(" - ", " — ").replace("--", "—").replace("...", "…")
    for title in ("Mr.", "Mrs.", "Dr."):
        result = result.replace(title + " ", title + "\u00a0")
    return result


def _sentence_pool() -> tuple[list[str], list[int]]:
    from neardup.text import sentence_spans

    counts: dict[str, int] = {}
    per_doc: list[int] = []
    with gzip.open(DATA / "reuters21578" / "docs.jsonl.gz", "rt", encoding="utf-8") as fh:
        for line in fh:
            text = json.loads(line)["text"]
            if not text:
                continue
            sents = [" ".join(text[a:b].split()) for a, b in sentence_spans(text)]
            sents = [s for s in sents if len(s.split()) >= 6]
            per_doc.append(len(sents))
            for s in sents:
                counts[s] = counts.get(s, 0) + 1
    pool = sorted(s for s, c in counts.items() if c == 1)
    return pool, [k for k in per_doc if k > 0]


def _typos(text: str, rate: float, rng: random.Random) -> str:
    """Keyboard typos in a fraction ``rate`` of the words (the synthetic benchmark's)."""
    from neardup.evaluation.synth import apply_edit

    return apply_edit("typos", text, None, rate, rng).text


def _copy(
    sentences: list[str], rng: random.Random, pool: list[str], kinds: tuple[str, ...]
) -> tuple[str, str]:
    from neardup.evaluation.synth import perturb_words

    kind = rng.choice(kinds)
    sents = list(sentences)
    if kind in ("drop", "words+drop") and len(sents) > 2:
        del sents[rng.randrange(len(sents))]
    if kind == "append":
        sents.append(rng.choice(pool))
    text = " ".join(sents)
    if kind in ("words", "words+typographic"):
        text = perturb_words(text, rng.uniform(0.01, 0.08), rng, insertion="duplicate")
    if kind == "words+drop":
        text = perturb_words(text, 0.03, rng, insertion="duplicate")
    if kind == "typos":
        text = _typos(text, rng.uniform(0.02, 0.1), rng)
    if kind in ("typographic", "words+typographic"):
        text = typographic(text)
    return text, kind


def planted_corpus(
    n: int,
    seed: int,
    path: Path,
    *,
    dup_fraction: float = 0.2,
    kinds: tuple[str, ...] = PLANTED_KINDS,
    unicode: bool = False,
) -> np.ndarray:
    """Write ``n`` documents to ``path`` (JSONL); return the truth cluster of each.

    Base documents are ``k`` sentences drawn from the pool of Reuters sentences that occur
    once (``k`` from the real distribution of sentences per article, clipped to 4..30);
    ``dup_fraction`` of the documents are copies of a random base document with one edit of
    ``kinds``, dated 1-48 hours after it.  ``unicode``: every text (base documents and
    copies) printed with :func:`typographic` punctuation.
    """
    pool, per_doc = _sentence_pool()
    rng = random.Random(seed)
    n_copies = int(n * dup_fraction)
    n_base = n - n_copies
    start = dt.datetime(1987, 1, 1, tzinfo=dt.UTC)
    base_sents: list[list[str]] = []
    docs: list[tuple[dict[str, Any], int]] = []
    for i in range(n_base):
        k = min(30, max(4, rng.choice(per_doc)))
        sents = rng.sample(pool, k)
        base_sents.append(sents)
        date = start + dt.timedelta(minutes=i)
        docs.append(({"id": f"b{i}", "text": " ".join(sents), "date": date.isoformat()}, i))
    for j in range(n_copies):
        src = rng.randrange(n_base)
        text, kind = _copy(base_sents[src], rng, pool, kinds)
        date = start + dt.timedelta(minutes=src, hours=rng.randint(1, 48))
        docs.append(
            ({"id": f"c{j}-of-b{src}", "text": text, "date": date.isoformat(), "edit": kind}, src)
        )
    rng.shuffle(docs)
    with path.open("w", encoding="utf-8") as fh:
        for doc, _ in docs:
            if unicode:
                doc = {**doc, "text": typographic(doc["text"])}
            fh.write(json.dumps(doc, ensure_ascii=False) + "\n")
    return np.array([c for _, c in docs], dtype=np.int64)


def provenance_texts() -> list[str]:
    """The texts of ``provenance_news_2018_dev`` (570 scraped news pages), in file order."""
    path = DATA / "provenance_news_2018_dev" / "docs.jsonl.gz"
    if not path.exists():
        raise SystemExit(f"real data not found at {path}; set NEARDUP_DATA")
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line)["text"] for line in fh if json.loads(line)["text"].strip()]


def provenance_replicated(n: int, seed: int, path: Path) -> np.ndarray:
    """Write ``n`` documents made of the provenance articles: the originals first, then
    copies of random originals with 1-8 % of their words edited (and some typos); return
    the index of the original behind each document.  Unicode-heavy real text at any size."""
    from neardup.evaluation.synth import perturb_words

    texts = provenance_texts()
    rng = random.Random(seed)
    truth = []
    with path.open("w", encoding="utf-8") as fh:
        for i in range(n):
            src = i if i < len(texts) else rng.randrange(len(texts))
            text = texts[src]
            if i >= len(texts):
                text = perturb_words(text, rng.uniform(0.01, 0.08), rng, insertion="duplicate")
                if rng.random() < 0.3:
                    text = _typos(text, 0.02, rng)
            fh.write(json.dumps({"id": f"p{i}", "text": text}, ensure_ascii=False) + "\n")
            truth.append(src)
    return np.array(truth, dtype=np.int64)
