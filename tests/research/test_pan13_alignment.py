"""The PAN13 harness of research/pan13_alignment.py: the stable tuning/test halves, the folder
reader, the tuning search on a planted pair, and the aligner on a slice of the real corpus
(skipped when ../shared/data is absent)."""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path
from typing import Any

import pytest

from conftest import DATA_DIR, data_path, research_module
from neardup.errors import ConfigError, InputError
from neardup.similarity import align_passages
from neardup.text import sentence_spans

pan13 = research_module("pan13_alignment")


def _write_gz(path: Path, rows: list[dict[str, Any]]) -> None:
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row) + "\n")


def test_pair_split_partitions_stably() -> None:
    rng = random.Random(7)
    ids = [(f"susp{rng.randrange(10**6)}", f"src{rng.randrange(10**6)}") for _ in range(400)]
    halves = [pan13.pair_split(a, b) for a, b in ids]
    assert set(halves) == {"tune", "test"}
    assert 120 < halves.count("tune") < 280
    assert halves == [pan13.pair_split(a, b) for a, b in ids]


@pytest.fixture()
def planted(tmp_path: Path, reuters_docs: list[dict[str, Any]]) -> Path:
    """A PAN-format folder: one verbatim pair and one no-plagiarism pair."""
    texts = [d["text"] for d in reuters_docs if d["text"] and len(sentence_spans(d["text"])) >= 8]
    source = host = other = ""
    for i, a in enumerate(texts):
        rest = [b for b in texts[i + 1 : i + 40] if not align_passages(a, b)]
        if len(rest) >= 2:
            source, host, other = a, rest[0], rest[1]
            break
    spans = sentence_spans(source)
    a, b = spans[1][0], spans[3][1]
    cut = sentence_spans(host)[2][1]
    susp = host[:cut] + " " + source[a:b] + " " + host[cut:]
    folder = tmp_path / "pan13_text_alignment"
    folder.mkdir()
    _write_gz(folder / "docs.jsonl.gz", [
        {"id": "src1", "text": source}, {"id": "susp1", "text": susp},
        {"id": "susp2", "text": other},
    ])  # fmt: skip
    feature = {"this_offset": cut + 1, "this_length": b - a, "source_offset": a,
               "source_length": b - a}  # fmt: skip
    _write_gz(folder / "labels.jsonl.gz", [
        {"susp": "susp1", "src": "src1", "category": "02-no-obfuscation", "features": [feature]},
        {"susp": "susp2", "src": "src1", "category": "01-no-plagiarism", "features": []},
    ])  # fmt: skip
    return tmp_path


def test_folder_reader_and_bad_arguments(planted: Path) -> None:
    texts, pairs = pan13.load(planted)
    assert set(texts) == {"src1", "susp1", "susp2"} and len(pairs) == 2
    assert pan13.load(planted, limit=0)[1] == []
    with pytest.raises(ConfigError):
        pan13.evaluate_alignment(planted, method="passages", split="half")
    with pytest.raises(InputError):
        pan13.evaluate_alignment(planted / "missing", method="passages")


def test_tuning_ranks_best_first(planted: Path) -> None:
    ranked = pan13.tune_alignment(planted, grid={"min_passage_chars": (100, 100_000)}, split="all")
    assert [cfg.min_passage_chars for _, cfg, _ in ranked] == [100, 100_000]
    assert ranked[0][0] > ranked[1][0]  # the huge minimum drops the planted passage
    assert ranked[1][2]["02-no-obfuscation"].predicted_chars == 0


@pytest.fixture(scope="module")
def pan13_data() -> Path:
    data_path("pan13_text_alignment", "labels.jsonl.gz")
    return DATA_DIR


@pytest.mark.data
def test_real_pan13_slice_quality(pan13_data: Path) -> None:
    """A slice of the held-out half: the aligner recovers obfuscated passages that exact
    shingles miss (the full run is in docs/evaluation.md)."""
    scores = pan13.evaluate_alignment(pan13_data, method="passages", split="test", limit=20)
    for cat in ("02-no-obfuscation", "03-random-obfuscation"):
        assert scores[cat].pairs == 20
        assert scores[cat].plagdet is not None and scores[cat].plagdet >= 0.8, (cat, scores[cat])
        assert scores[cat].granularity is not None and scores[cat].granularity <= 1.05
    origin = pan13.evaluate_alignment(pan13_data, method="origin", split="test", limit=20)
    assert scores["03-random-obfuscation"].recall > origin["03-random-obfuscation"].recall + 0.3


@pytest.mark.data
def test_split_halves_are_disjoint_and_cover(pan13_data: Path) -> None:
    with gzip.open(pan13_data / "pan13_text_alignment" / "labels.jsonl.gz", "rt") as fh:
        rows = [json.loads(line) for line in fh]
    halves = [pan13.pair_split(r["susp"], r["src"]) for r in rows]
    assert 0.4 < halves.count("test") / len(rows) < 0.6
