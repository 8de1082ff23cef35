"""The corpus: originals chosen from records, their copies, same-topic negatives and
shared-quotation pairs, each pair labelled (:func:`synthesize`)."""

from __future__ import annotations

import datetime as dt
import random
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import numpy.typing as npt
import xxhash

from neardup.errors import InputError
from neardup.evaluation.synth.config import (
    _WORD_RE,
    DEFAULT_STRENGTHS,
    LABEL_RULES,
    Copy,
    SynthConfig,
    SynthResult,
)
from neardup.evaluation.synth.edits import (
    _count_words,
    _donor_sentences,
    _insert_sentences,
    applicable,
    apply_edit,
)
from neardup.evaluation.synth.labels import (
    _overlap,
    _rule_inputs,
    _shingle_set,
    copy_measures,
    label_copy,
    label_margin,
)
from neardup.records import Article
from neardup.text import ENGLISH_STOP_WORDS, sentence_spans


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
