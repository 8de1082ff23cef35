"""The independent news perturbation benchmark (research/newsgen.py): deterministic, labels
that follow the labelling guide from what the generator did, and every labelled id in the
documents.  The cases on the real corpus skip when ../shared/data is absent."""

from __future__ import annotations

import importlib.util
import json
import random
import sys
from collections import Counter
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from conftest import DATA_DIR, data_path

ROOT = Path(__file__).resolve().parents[1]


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("newsgen", ROOT / "research" / "newsgen.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["newsgen"] = module  # dataclasses resolve annotations through sys.modules
    spec.loader.exec_module(module)
    return module


ng = _load()
PER_KIND = 24


def _page(paras: list[str], **extra: Any) -> Any:
    record = {
        "id": "p1",
        "event": "e",
        "publisher": "a.com",
        "date": "2018-07-15T06:33:53-04:00",
        "title": "t",
        "text": "\n\n".join(paras),
        **extra,
    }
    return ng.Page.of(record)


BODY = [
    f"Paragraph {i} says the summit in Helsinki went on for hours. Officials spoke after it. "
    f"Nobody expected a deal on day {i}, and the press waited outside."
    for i in range(10)
]


# ------------------------------------------------------------------------------------------
# without data: the rules and the edits on a small page


def test_label_rule_follows_the_guide() -> None:
    assert ng.label_copy(kept=1.0, added=0.0, run_sentences=50) == "duplicate"
    assert ng.label_copy(kept=0.6, added=0.0, run_sentences=50) == "duplicate"
    assert ng.label_copy(kept=0.3, added=0.0, run_sentences=50) == "partial"  # short reprint
    assert ng.label_copy(kept=1.0, added=0.3, run_sentences=50) == "duplicate"  # write-thru
    assert ng.label_copy(kept=1.0, added=0.7, run_sentences=50) == "partial"  # mostly new
    assert ng.label_copy(kept=0.1, added=0.9, run_sentences=6) == "partial"  # excerpt
    # too close to "about half", or too little narrative in a row: not generated
    assert ng.label_copy(kept=0.52, added=0.0, run_sentences=50) is None
    assert ng.label_copy(kept=1.0, added=0.48, run_sentences=50) is None
    assert ng.label_copy(kept=0.2, added=0.0, run_sentences=2) is None


def test_page_body_head_and_tail() -> None:
    page = _page(["By A. Writer", "Share", *BODY, "RELATED STORIES:", "Sign up"])
    assert page.head == ["By A. Writer", "Share"]
    assert page.tail == ["RELATED STORIES:", "Sign up"]
    assert page.body == BODY
    assert page.body_words == sum(ng.n_words(p) for p in BODY)
    assert page.is_source
    # a line printed twice is not prose (a caption), even when it reads like a sentence
    twice = _page([BODY[0], BODY[0], *BODY[1:]])
    assert twice.body == BODY[1:]


def test_truncation_to_30_percent_is_partial_and_keeps_the_start() -> None:
    page = _page(["Header line", *BODY, "Footer"])
    copy = ng.truncate(page, 0.3, random.Random(0))
    assert copy is not None
    assert abs(copy.kept - 0.3) < 0.05
    assert ng.label_copy(copy.kept, copy.added, copy.run_sentences) == "partial"
    assert copy.paras[0] == "Header line" and "Footer" not in copy.paras
    assert page.record["text"].startswith(copy.text)  # a prefix cut at a sentence end
    long = ng.truncate(page, 0.9, random.Random(0))
    assert long is not None
    assert ng.label_copy(long.kept, long.added, long.run_sentences) == "duplicate"


def test_furniture_wrap_keeps_the_body_and_is_duplicate() -> None:
    page = _page(["Own header", *BODY, "Own footer"])
    donor = _page(
        ["Menu", "Weather 86F", BODY[0].replace("summit", "talks"), "Comments", "Newsletter"],
        id="d1",
        publisher="b.com",
    )
    captions = [
        ["A man waves in Helsinki, July 15.", "(AP Photo/X)"],
        ["Protesters march in the rain on Sunday", "Protesters march in the rain on Sunday"],
        ["The palace seen from the harbour at dawn", "Photo: Y, Getty"],
    ]
    for level in (1, 2, 3):
        copy = ng.wrap_in_furniture(page, level, random.Random(level), [donor], captions)
        assert copy is not None
        assert ng.label_copy(copy.kept, copy.added, copy.run_sentences) == "duplicate"
        assert "Own header" not in copy.paras and "Own footer" not in copy.paras
        assert copy.paras[0] in ("Menu", "Weather 86F") and copy.paras[-1] == "Newsletter"
        assert [p for p in copy.paras if p in BODY] == BODY  # the body, whole and in order
        assert 0 < copy.facts["junk_share"] < 1
        inserted = [p for p in copy.paras if any(p in block for block in captions)]
        assert len(inserted) == {1: 0, 2: 2, 3: 6}[level]
    same_publisher = _page(["x", *BODY, "y"], id="d2")
    assert ng.wrap_in_furniture(page, 1, random.Random(0), [same_publisher], captions) is None


def test_rewordings() -> None:
    assert ng._said_says("The mayor said it was late.") == "The mayor says it was late."
    assert ng._said_says("Trump has said so.") is None  # not after an auxiliary
    assert ng._reorder_clause("“We screwed up,” he said.") == "He said, “We screwed up.”"
    assert ng._reorder_clause('"Of course," said Peskov.') == '"Of course," Peskov said.'
    assert (
        ng._reorder_clause("After the meeting ended late, the two leaders left the palace.")
        == "The two leaders left the palace after the meeting ended late."
    )
    assert ng._reorder_clause("No clause to move here.") is None


def test_sentences_do_not_split_after_abbreviations() -> None:
    text = "U.S. President Trump met Mr. Putin. They spoke. “Yes,” he said. Sen. Warner left."
    assert ng.split_sentences(text) == [
        "U.S. President Trump met Mr. Putin.",
        "They spoke.",
        "“Yes,” he said.",
        "Sen. Warner left.",
    ]


def test_typos_and_punctuation_touch_only_what_they_say() -> None:
    page = _page(["“Hello” — it’s late…", *BODY])
    typo = ng.add_typos(page, 0.05, random.Random(1))
    assert typo is not None
    assert ng.n_words(typo.text) >= ng.n_words(page.record["text"]) - typo.facts["typos"]
    punct = ng.change_punctuation(page, 1.0, random.Random(1))
    assert punct is not None
    assert punct.paras[0] == '"Hello" -- it\'s late...'
    assert [w.lower() for w in ng.words(punct.text)] == [
        w.lower() for w in ng.words(page.record["text"])
    ]


# ------------------------------------------------------------------------------------------
# on the real corpus


@pytest.fixture(scope="module")
def corpus() -> Any:
    data_path(ng.CORPUS, "docs.jsonl.gz")
    return ng.load_corpus(DATA_DIR)


@pytest.fixture(scope="module")
def bench(corpus: Any) -> Any:
    return ng.build(corpus, seed=0, per_kind=PER_KIND)


@pytest.fixture(scope="module")
def written(bench: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("newsgen")
    ng.write(bench, out)
    return out


def _read(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_same_seed_same_bytes_other_seed_other_pairs(
    corpus: Any, written: Path, tmp_path: Path
) -> None:
    ng.write(ng.build(corpus, seed=0, per_kind=PER_KIND), tmp_path / "again")
    for name in ("docs.jsonl", "labels.jsonl"):
        assert (tmp_path / "again" / name).read_bytes() == (written / name).read_bytes()
    ng.write(ng.build(corpus, seed=1, per_kind=PER_KIND), tmp_path / "other")
    assert (tmp_path / "other" / "labels.jsonl").read_bytes() != (
        written / "labels.jsonl"
    ).read_bytes()


def test_command_line_writes_the_files(tmp_path: Path) -> None:
    data_path(ng.CORPUS, "docs.jsonl.gz")
    args = ["--out", str(tmp_path), "--seed", "3", "--data", str(DATA_DIR), "--per-kind", "6"]
    assert ng.main(args) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["pairs"] == len(_read(tmp_path / "labels.jsonl")) == 6 * len(ng.STRENGTHS)


def test_every_labelled_id_is_a_document(written: Path) -> None:
    docs = _read(written / "docs.jsonl")
    ids = [d["id"] for d in docs]
    assert len(ids) == len(set(ids))
    labels = _read(written / "labels.jsonl")
    assert {i for rec in labels for i in (rec["id1"], rec["id2"])} <= set(ids)
    assert all(
        d["derived_from"] == []
        or set(d["derived_from"]) <= set(ids) | {i for d2 in docs for i in d2["derived_from"]}
        for d in docs
    )
    pairs = [frozenset((r["id1"], r["id2"])) for r in labels]
    assert len(pairs) == len(set(pairs))


def test_balanced_kinds_and_labels_by_kind(written: Path) -> None:
    labels = _read(written / "labels.jsonl")
    per_edit = Counter(r["edit"] for r in labels)
    assert per_edit == dict.fromkeys(ng.STRENGTHS, PER_KIND)
    expected = {
        "furniture": {"duplicate"},
        "paragraph_drop": {"duplicate"},
        "paragraph_reorder": {"duplicate"},
        "reword": {"duplicate"},
        "typos": {"duplicate"},
        "punctuation": {"duplicate"},
        "truncate": {"duplicate", "partial"},
        "write_thru": {"duplicate", "partial"},
        "excerpt": {"partial"},
        "shared_quote": {"related"},
        "related": {"related"},
        "unrelated": {"unrelated"},
    }
    for edit, allowed in expected.items():
        assert {r["label"] for r in labels if r["edit"] == edit} == allowed, edit


def test_copy_labels_agree_with_kept_and_added(written: Path) -> None:
    for rec in _read(written / "labels.jsonl"):
        if "kept" not in rec:
            continue
        duplicate = rec["kept"] >= 0.5 and rec["added"] < 0.5
        assert rec["label"] == ("duplicate" if duplicate else "partial"), rec
        if rec["edit"] == "truncate":
            assert rec["label"] == ("duplicate" if rec["strength"] >= 0.5 else "partial")
            assert abs(rec["kept"] - rec["strength"]) < 0.1
        if rec["edit"] == "write_thru":
            assert rec["label"] == ("duplicate" if rec["strength"] < 0.5 else "partial")
        if rec["edit"] == "excerpt":
            assert rec["kept"] < 0.5 and rec["added"] > 0.5


def test_truncated_copies_are_prefixes_and_wraps_hold_the_body(corpus: Any, bench: Any) -> None:
    for rec in (r for r in bench.labels if r["edit"] in ("truncate", "furniture")):
        original = corpus.by_id[rec["id1"]]
        copy = bench.docs[rec["id2"]]["text"]
        if rec["edit"] == "truncate":
            assert ng.join_paragraphs(original.paras).startswith(copy)
        else:
            assert [p for p in ng.split_paragraphs(copy) if p in original.body] == original.body
            assert bench.docs[rec["id2"]]["publisher"] != original.publisher


def test_excerpts_are_consecutive_paragraphs_of_the_source(corpus: Any, bench: Any) -> None:
    for rec in (r for r in bench.labels if r["edit"] == "excerpt"):
        body = corpus.by_id[rec["id1"]].body
        start, n = rec["excerpt_start"], int(rec["strength"])
        host_text = bench.docs[rec["id2"]]["text"]
        assert "\n\n".join(body[start : start + n]) in host_text
        assert corpus.independent(rec["id1"], rec["host"])


def test_shared_quotes_are_the_only_new_text_and_negatives_are_independent(
    corpus: Any, bench: Any
) -> None:
    for rec in bench.labels:
        if rec["edit"] == "shared_quote":
            texts = [bench.docs[i] for i in (rec["id1"], rec["id2"])]
            news = []
            for doc in texts:
                (source,) = doc["derived_from"]
                before = set(corpus.by_id[source].paras)
                news.append([p for p in ng.split_paragraphs(doc["text"]) if p not in before])
            assert news[0] and sorted(news[0]) == sorted(news[1])
            assert len(news[0]) == int(rec["strength"])
            assert all(ng.QUOTED_SENTENCE.fullmatch(q) for q in news[0])
            sources = [d["derived_from"][0] for d in texts]
            assert corpus.independent(*sources)
        if rec["edit"] in ("related", "unrelated"):
            assert corpus.independent(rec["id1"], rec["id2"])
            assert rec["containment"] <= ng.MAX_CONTAINMENT
            same = corpus.by_id[rec["id1"]].event == corpus.by_id[rec["id2"]].event
            assert same == (rec["edit"] == "related")
