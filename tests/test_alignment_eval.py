"""PAN13 alignment evaluation: both aligners, the PAN measures end to end, the tuning search
and the ``neardup eval alignment`` command.

Oracles: a small PAN-format folder built from real Reuters text with passages planted at
known offsets (the scores must be exactly 1), and the real PAN13 labels on a small slice.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from conftest import DATA_DIR, data_path
from neardup.cli import main
from neardup.errors import ConfigError, InputError
from neardup.evaluation.alignment import evaluate_alignment, pair_split, tune_alignment
from neardup.similarity import AlignmentConfig, align_passages
from neardup.text import sentence_spans


def _write_gz(path: Path, rows: list[dict[str, Any]]) -> None:
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row) + "\n")


@pytest.fixture()
def planted(tmp_path: Path, reuters_docs: list[dict[str, Any]]) -> tuple[Path, int]:
    """A PAN-format folder: one verbatim pair (a 3-sentence Reuters passage planted in another
    Reuters article) and one no-plagiarism pair; returns the data dir and the passage length."""
    texts = [d["text"] for d in reuters_docs if d["text"] and len(sentence_spans(d["text"])) >= 8]
    source = host = other = ""
    for i, a in enumerate(texts):
        rest = [b for b in texts[i + 1 : i + 40] if not align_passages(a, b)]
        if len(rest) >= 2:
            source, host, other = a, rest[0], rest[1]
            break
    assert source, "no unrelated Reuters articles found"
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
    feature = {"name": "plagiarism", "obfuscation": "none", "this_offset": cut + 1,
               "this_length": b - a, "source_offset": a, "source_length": b - a}  # fmt: skip
    _write_gz(folder / "labels.jsonl.gz", [
        {"susp": "susp1", "src": "src1", "category": "02-no-obfuscation",
         "features": [{"name": "about", "title": "news"}, feature]},
        {"susp": "susp2", "src": "src1", "category": "01-no-plagiarism", "features": []},
    ])  # fmt: skip
    return tmp_path, b - a


def test_passages_method_exact_on_planted_copy(planted: tuple[Path, int]) -> None:
    data, length = planted
    scores = evaluate_alignment(data, method="passages")
    exact = scores["02-no-obfuscation"]
    assert (exact.true_chars, exact.predicted_chars, exact.matched_chars) == (length,) * 3
    assert (exact.pan_precision, exact.pan_recall, exact.granularity, exact.plagdet) == (
        1.0,
        1.0,
        1.0,
        1.0,
    )
    assert (exact.cases, exact.detections) == (1, 1) and exact.ms_per_pair is not None
    none = scores["01-no-plagiarism"]
    assert none.predicted_chars == 0 and none.detections == 0
    # the origin aligner on the same folder: its segments run from the first to the last
    # copied token (the final full stop is not a token); no source spans, no PAN measures
    origin = evaluate_alignment(data, method="origin")["02-no-obfuscation"]
    assert origin.precision == 1.0 and origin.matched_chars >= length - 2
    assert origin.plagdet is None


def test_bad_arguments(planted: tuple[Path, int]) -> None:
    data, _ = planted
    with pytest.raises(ConfigError):
        evaluate_alignment(data, method="nope")
    with pytest.raises(ConfigError):
        evaluate_alignment(data, method="passages", split="half")
    with pytest.raises(ConfigError):
        evaluate_alignment(data, method="origin", config=AlignmentConfig())
    with pytest.raises(InputError):
        evaluate_alignment(data / "missing", method="passages")


def test_tuning_ranks_best_first(planted: tuple[Path, int]) -> None:
    data, _ = planted
    ranked = tune_alignment(data, grid={"min_passage_chars": (100, 100_000)}, split="all")
    assert [cfg.min_passage_chars for _, cfg, _ in ranked] == [100, 100_000]
    assert ranked[0][0] > ranked[1][0]  # the huge minimum drops the planted passage
    assert ranked[1][2]["02-no-obfuscation"].predicted_chars == 0


@pytest.fixture(scope="module")
def pan13() -> Path:
    data_path("pan13_text_alignment", "labels.jsonl.gz")
    return DATA_DIR


@pytest.mark.data
def test_real_pan13_slice_quality(pan13: Path) -> None:
    """A slice of the held-out half: the aligner recovers obfuscated passages that exact
    shingles miss (the full run is in docs/eval.md)."""
    scores = evaluate_alignment(pan13, method="passages", split="test", limit=20)
    for cat in ("02-no-obfuscation", "03-random-obfuscation"):
        assert scores[cat].pairs == 20
        assert scores[cat].plagdet is not None and scores[cat].plagdet >= 0.8, (cat, scores[cat])
        assert scores[cat].granularity is not None and scores[cat].granularity <= 1.05
    origin = evaluate_alignment(pan13, method="origin", split="test", limit=20)
    assert scores["03-random-obfuscation"].recall > origin["03-random-obfuscation"].recall + 0.3


@pytest.mark.data
def test_split_halves_are_disjoint_and_cover(pan13: Path) -> None:
    with gzip.open(pan13 / "pan13_text_alignment" / "labels.jsonl.gz", "rt") as fh:
        rows = [json.loads(line) for line in fh]
    halves = [pair_split(r["susp"], r["src"]) for r in rows]
    assert 0.4 < halves.count("test") / len(rows) < 0.6


@pytest.mark.data
def test_cli_alignment_passages(pan13: Path, capsys: pytest.CaptureFixture[str]) -> None:
    try:
        main(["eval", "alignment", "--data", str(pan13), "--method", "passages",
              "--split", "test", "--limit", "3", "--json"])  # fmt: skip
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["method"] == "passages" and out["split"] == "test"
    cat = out["categories"]["02-no-obfuscation"]
    assert cat["pairs"] == 3 and cat["plagdet"] is not None and 0.0 <= cat["f1"] <= 1.0
