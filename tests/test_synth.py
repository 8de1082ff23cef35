"""Synthetic copies: reproducible, each edit does what it says (on real Reuters text), and
the labels follow the documented rule."""

from __future__ import annotations

import itertools
import random
import re
from collections import Counter
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from neardup.errors import ConfigError, InputError
from neardup.evaluation.synth import (
    COPY_EDITS,
    LABEL_RULES,
    LABELS,
    Copy,
    SynthConfig,
    apply_edit,
    bag_overlap,
    copy_measures,
    label_copy,
    label_margin,
    shingle_containment,
    split_paragraphs,
    strip_boilerplate,
    synthesize,
)
from neardup.text import sentence_spans


@pytest.fixture(scope="module")
def articles(reuters_docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Reuters articles long enough for every edit (several paragraphs and sentences)."""
    out = [
        d
        for d in reuters_docs
        if len(d["text"].split()) >= 120
        and len(split_paragraphs(d["text"])[0]) >= 4
        and len(sentence_spans(d["text"])) >= 4
    ]
    return out[:25]


@pytest.fixture(scope="module")
def bench(reuters_docs: list[dict[str, Any]]) -> Any:
    return synthesize(reuters_docs[:600], SynthConfig(max_originals=120, seed=7))


def _sentences(text: str) -> list[str]:
    return [text[a:b] for a, b in sentence_spans(text)]


def _is_subsequence(small: list[str], big: list[str]) -> bool:
    it = iter(big)
    return all(any(x == y for y in it) for x in small)


def _rng(i: int) -> random.Random:
    return random.Random(1000 + i)


def _donors(articles: list[dict[str, Any]], i: int) -> list[str]:
    return [articles[(i + 1) % len(articles)]["text"], articles[(i + 2) % len(articles)]["text"]]


def test_reproducible_and_seed_dependent(reuters_docs: list[dict[str, Any]]) -> None:
    cfg = SynthConfig(max_originals=40, seed=3)
    a = synthesize(reuters_docs[:300], cfg)
    b = synthesize(reuters_docs[:300], cfg)
    assert a.docs == b.docs and a.pairs == b.pairs
    c = synthesize(reuters_docs[:300], SynthConfig(max_originals=40, seed=4))
    assert [d["text"] for d in c.docs] != [d["text"] for d in a.docs]


def test_exact_and_headline(articles: list[dict[str, Any]]) -> None:
    for i, d in enumerate(articles[:10]):
        same = apply_edit("exact", d["text"], d["title"], 0.0, _rng(i))
        assert same.text == d["text"] and same.title == d["title"]
        new = apply_edit("headline", d["text"], d["title"], 0.0, _rng(i))
        assert new.title != d["title"]
        first, rest = new.text.split("\n", 1)
        assert first == new.title and rest == d["text"]


def test_boilerplate_adds_about_the_asked_share(articles: list[dict[str, Any]]) -> None:
    for i, d in enumerate(articles):
        s = (0.05, 0.2, 0.5)[i % 3]
        c = apply_edit("boilerplate", d["text"], d["title"], s, _rng(i))
        assert d["text"].strip() in c.text
        n = len(re.findall(r"\w+", d["text"]))
        added = len(re.findall(r"\w+", c.text)) - n
        assert s * n <= added + 0.5 <= s * n + 16  # stops after the line that reaches it


def test_paragraph_drop_reorder_insert(articles: list[dict[str, Any]]) -> None:
    for i, d in enumerate(articles):
        paras, _ = split_paragraphs(d["text"])
        n = len(paras)
        drop = apply_edit("paragraph_drop", d["text"], d["title"], 0.4, _rng(i))
        got, _ = split_paragraphs(drop.text)
        assert len(got) == n - drop.changes == n - min(n - 1, max(1, round(0.4 * n)))
        assert _is_subsequence(got, paras)

        moved = apply_edit("paragraph_reorder", d["text"], d["title"], 0.5, _rng(i))
        got, _ = split_paragraphs(moved.text)
        assert sorted(got) == sorted(paras) and got != paras

        donors = _donors(articles, i)
        ins = apply_edit("paragraph_insert", d["text"], d["title"], 0.3, _rng(i), donors)
        got, _ = split_paragraphs(ins.text)
        assert _is_subsequence(paras, got)
        donor_paras = {p for t in donors for p in split_paragraphs(t)[0]}
        extra = Counter(got) - Counter(paras)
        assert sum(extra.values()) == ins.changes >= 1
        assert set(extra) <= donor_paras


def test_sentence_drop_insert_truncate(articles: list[dict[str, Any]]) -> None:
    for i, d in enumerate(articles):
        sents = _sentences(d["text"])
        n = len(sents)
        drop = apply_edit("sentence_drop", d["text"], d["title"], 0.3, _rng(i))
        got = _sentences(drop.text)
        assert len(got) == n - drop.changes and drop.changes == max(1, round(0.3 * n))
        assert _is_subsequence(got, sents)

        donors = _donors(articles, i)
        ins = apply_edit("sentence_insert", d["text"], d["title"], 0.2, _rng(i), donors)
        got = _sentences(ins.text)
        assert _is_subsequence(sents, got) and len(got) == n + ins.changes

        cut = apply_edit("truncate", d["text"], d["title"], 0.5, _rng(i))
        assert d["text"].startswith(cut.text)
        assert len(_sentences(cut.text)) == n - max(1, round(0.5 * n))


def test_typos_and_ocr_change_the_asked_share_of_words(articles: list[dict[str, Any]]) -> None:
    for i, d in enumerate(articles):
        words = d["text"].split()
        c = apply_edit("typos", d["text"], d["title"], 0.05, _rng(i))
        new = c.text.split()
        assert len(new) == len(words)  # typos never split or merge words
        changed = sum(a != b for a, b in zip(words, new, strict=True))
        assert changed == c.changes == max(1, round(0.05 * len(re.findall(r"\w+", d["text"]))))
        o = apply_edit("ocr", d["text"], d["title"], 0.1, _rng(i))
        kept, _ = bag_overlap(d["text"], o.text)
        assert o.changes >= 1 and kept < 1.0
        # OCR confusions keep the characters' rough shape: the text length barely moves.
        assert abs(len(o.text) - len(d["text"])) <= 0.05 * len(d["text"]) + 5


def test_numbers_change_numbers_only(articles: list[dict[str, Any]]) -> None:
    for i, d in enumerate(articles):
        c = apply_edit("numbers", d["text"], d["title"], 1.0, _rng(i))
        assert c.changes >= 1 and c.text != d["text"]

        def letters(t: str) -> str:
            return re.sub(r"\d", "#", t)

        month = re.compile(r"\b(?:[A-Z][a-z]+)\b")
        # Outside digits (and month/day names) nothing changes.
        assert month.sub("W", letters(c.text)) == month.sub("W", letters(d["text"]))


def test_bad_edit_arguments(articles: list[dict[str, Any]]) -> None:
    d = articles[0]
    with pytest.raises(ConfigError):
        apply_edit("nonsense", d["text"], None, 0.1, _rng(0))
    with pytest.raises(ConfigError):
        apply_edit("typos", d["text"], None, 1.5, _rng(0))
    with pytest.raises(InputError):
        apply_edit("sentence_insert", d["text"], None, 0.1, _rng(0), donor_text=[])
    with pytest.raises(InputError):
        apply_edit("numbers", "No digits here. None at all.", None, 0.5, _rng(0))
    with pytest.raises(ConfigError):
        SynthConfig(edits=("typos", "bogus"))
    with pytest.raises(ConfigError):
        SynthConfig(copies_per_doc=-1)
    with pytest.raises(InputError):
        synthesize([{"id": "a", "text": "too short"}])


def test_labels_follow_the_rule(bench: Any) -> None:
    docs = {d["id"]: d for d in bench.docs}
    assert len(docs) == len(bench.docs)  # ids are unique
    cfg = SynthConfig(max_originals=120, seed=7)
    edits = Counter()
    for p in bench.pairs:
        assert p["label"] in LABELS
        assert p["id1"] in docs and p["id2"] in docs and p["id1"] != p["id2"]
        a, b = docs[p["id1"]], docs[p["id2"]]
        edits[p["edit"]] += 1
        if p["edit"] in ("negative_same_topic", "shared_quote"):
            assert p["label"] == "different"
            assert b["synth"]["group"] != a["synth"]["group"]
            if p["edit"] == "negative_same_topic":
                containment = shingle_containment(a["text"], b["text"])
                assert containment < cfg.negative_max_overlap
                assert containment == pytest.approx(p["overlap"], abs=1e-4)
            else:
                assert b["synth"]["quote_from"] == a["id"]
            continue
        # bag80: measured on the published text, independently of the module's helper.
        kept, novel = bag_overlap(a["text"], strip_boilerplate(b["text"]))
        assert p["kept"] == pytest.approx(kept, abs=1e-4)
        assert p["novel"] == pytest.approx(novel, abs=1e-4)
        assert p["labels"]["bag80"] == label_copy(kept, novel, cfg, "bag80")
        assert p["labels"]["bag80"] == ("duplicate" if kept >= 0.8 and novel <= 0.2 else "similar")
        # editorial: measured on the content (before noise edits).
        ck, ca = p["content_kept"], p["content_added"]
        assert p["labels"]["editorial"] == ("duplicate" if ck >= 0.5 and ca <= 0.2 else "similar")
        # guide: the labelling guide of the real news, on the same content measures.
        assert p["labels"]["guide"] == ("duplicate" if ck >= 0.5 and ca <= 0.5 else "similar")
        if p["edit"] not in ("typos", "ocr", "numbers", "mixed"):
            # No noise edit: the content is the published text.
            assert (ck, ca) == (p["kept"], p["novel"])
        for rule in LABEL_RULES:
            margin = p["margins"][rule]
            assert (margin >= 0) == (p["labels"][rule] == "duplicate")
        assert p["label"] == p["labels"]["guide"]  # the default rule
        assert p["margin"] == p["margins"]["guide"]
        assert b["synth"]["copy_of"] == a["id"] and b["synth"]["edit"] == p["edit"]
        expected_group = a["id"] if p["label"] == "duplicate" else b["id"]
        assert b["synth"]["group"] == expected_group
        if p["edit"] in ("exact", "headline", "paragraph_reorder", "boilerplate"):
            assert p["labels"]["bag80"] == p["labels"]["editorial"] == p["labels"]["guide"]
            assert p["labels"]["guide"] == "duplicate"
        if p["edit"] in ("typos", "ocr", "numbers"):
            # Spelling noise is not new content: the editorial rule keeps these duplicates.
            assert p["labels"]["editorial"] == "duplicate" and ck == 1.0 and ca == 0.0
    assert set(COPY_EDITS) <= set(edits)
    assert edits["negative_same_topic"] >= 60


def test_originals_are_not_near_duplicates_of_each_other(bench: Any) -> None:
    originals = [d for d in bench.docs if d["synth"]["role"] == "original"]
    texts = {" ".join(d["text"].lower().split()) for d in originals}
    assert len(texts) == len(originals)  # the corpus's exact re-sends were filtered
    for a, b in itertools.pairwise(originals):
        assert shingle_containment(a["text"], b["text"]) < 0.5


def test_label_rule_boundaries() -> None:
    # bag80, the previous rule: 80 % kept and 20 % new on the published text.
    bag = SynthConfig(label_rule="bag80")
    assert label_copy(0.8, 0.2, bag) == "duplicate"
    assert label_copy(0.79, 0.0, bag) == "similar"
    assert label_copy(1.0, 0.21, bag) == "similar"
    assert label_margin(0.79, 0.0, bag) == pytest.approx(-0.01)
    # editorial: half of the original kept, a fifth of the copy added.
    assert label_copy(0.5, 0.2, rule="editorial") == "duplicate"
    assert label_copy(0.49, 0.0, rule="editorial") == "similar"
    assert label_copy(1.0, 0.21, rule="editorial") == "similar"
    assert label_copy(0.79, 0.0, bag, "editorial") == "duplicate"  # explicit rule wins
    assert label_margin(0.6, 0.1, rule="editorial") == pytest.approx(0.1)
    # guide, the default: half of the original kept and half of the copy the original.
    assert label_copy(0.5, 0.5) == "duplicate"
    assert label_copy(0.49, 0.0) == "similar"
    assert label_copy(1.0, 0.51) == "similar"
    assert label_margin(0.6, 0.1) == pytest.approx(0.1)
    with pytest.raises(ConfigError):
        label_copy(1.0, 0.0, rule="nope")
    with pytest.raises(ConfigError):
        SynthConfig(label_rule="nope")
    assert bag_overlap("a b c d", "a b c d") == (1.0, 0.0)
    kept, novel = bag_overlap("a b c d", "a b x")
    assert kept == 0.5 and novel == pytest.approx(1 / 3)


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    edit=st.sampled_from(COPY_EDITS),
    strength=st.floats(min_value=0.0, max_value=1.0),
    index=st.integers(min_value=0, max_value=24),
    seed=st.integers(min_value=0, max_value=2**32),
)
def test_any_edit_any_strength_changes_the_text(
    articles: list[dict[str, Any]], edit: str, strength: float, index: int, seed: int
) -> None:
    d = articles[index % len(articles)]
    donors = _donors(articles, index)
    c = apply_edit(edit, d["text"], d["title"], strength, random.Random(seed), donors)
    again = apply_edit(edit, d["text"], d["title"], strength, random.Random(seed), donors)
    assert c == again  # pure given the generator state
    if edit == "exact":
        assert c.text == d["text"]
    else:
        assert c.text != d["text"] and c.changes >= 1
    assert c.text.strip()


def test_noise_edits_keep_the_content(articles: list[dict[str, Any]]) -> None:
    d = articles[0]
    for edit in ("typos", "ocr", "numbers"):
        c = apply_edit(edit, d["text"], d["title"], 0.3, _rng(1))
        assert c.content == d["text"] and c.text != d["text"]
        m = copy_measures(d["text"], c)
        assert m["content_kept"] == 1.0 and m["content_added"] == 0.0
        assert m["kept"] < 1.0  # the published words did change
    drop = apply_edit("truncate", d["text"], d["title"], 0.5, _rng(1))
    assert drop.content is None and drop.content_text == drop.text
    m = copy_measures(d["text"], Copy("a b", None, 1, content=d["text"]))
    assert m["content_kept"] == 1.0 and m["kept"] < 0.1


def test_label_rule_choice_changes_only_labels(reuters_docs: list[dict[str, Any]]) -> None:
    a = synthesize(reuters_docs[:300], SynthConfig(max_originals=40, seed=3))
    b = synthesize(reuters_docs[:300], SynthConfig(max_originals=40, seed=3, label_rule="bag80"))
    assert [d["text"] for d in a.docs] == [d["text"] for d in b.docs]
    for pa, pb in zip(a.pairs, b.pairs, strict=True):
        assert pa["labels"] == pb["labels"]
        assert pa["label"] == pa["labels"]["guide"]
        assert pb["label"] == pb["labels"]["bag80"]
