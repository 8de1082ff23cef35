"""The origin-detection experiments of research/origin_experiments.py (seed 004, Section 3):
table sizing, the copy-stream generator, and one small experiment run end to end; the PAN13
folder reader of research/pan13_alignment.py on a constructed corpus."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from conftest import research_module
from neardup.detect.origin import OriginConfig
from neardup.errors import InputError

oe = research_module("origin_experiments")
pan13 = research_module("pan13_alignment")


def test_memory_for_fraction() -> None:
    mem = oe.memory_for_fraction(0.01, 640_000)  # 6,400 entries = 100 buckets of 64 x 18 B + 1
    assert mem == 100 * (64 * 18 + 1)


def _docs(reuters_docs: list[dict[str, Any]], n: int) -> list[Any]:
    return [oe.StreamDoc(d["id"], d["text"], d["date"]) for d in reuters_docs if d["text"]][:n]


def test_copy_stream_is_deterministic_and_copies(reuters_docs: list[dict[str, Any]]) -> None:
    docs = _docs(reuters_docs, 300)
    a = oe.copy_stream(docs, seed=1)
    assert a == oe.copy_stream(docs, seed=1) and a != oe.copy_stream(docs, seed=2)
    copiers = [d for d in a if d.sources]
    assert 0.5 * 1.5 * len(docs) < len(copiers) < 1.5 * 1.5 * len(docs)
    seen: set[str] = set()
    for d in a:
        assert all(s in seen for s in d.sources)  # sources are earlier originals
        if not d.sources:
            seen.add(d.id)
    # without edits the passages are verbatim text of their first source
    exact = oe.copy_stream(docs, seed=3, edit_rate=0.0)
    texts = {d.id: " ".join(d.text.split()) for d in docs}
    for d in [d for d in exact if d.sources][:50]:
        verbatim = [line for line in d.text.split("\n") if any(line in texts[s] for s in d.sources)]
        assert len(verbatim) >= len(d.sources)  # every source gave at least one passage


def test_small_experiment_end_to_end(reuters_docs: list[dict[str, Any]]) -> None:
    """Reference-mode scores are perfect; a bounded table scores between baseline and 1."""
    stream = oe.copy_stream(_docs(reuters_docs, 400), seed=0)
    prepared = oe.prepare(stream)
    truth = oe.ground_truth(prepared, query_docs=200)
    assert truth.query.shape[0] == 200
    ref = oe.run_config(prepared, truth, OriginConfig.reference(), 1.0)
    assert ref.do == 1.0 and ref.tf == 1.0 and ref.ssr == 1.0
    mem = oe.memory_for_fraction(0.05, prepared.total_shingles)
    run = oe.run_config(prepared, truth, OriginConfig.paper(memory_bytes=mem), 0.05)
    own = float(np.mean(truth.own_dominant[truth.query]))
    assert own < run.do < 1.0
    assert 0.5 < run.tf < 1.0
    assert 0.05 < run.ssr < 0.3


def _write_gz(path: Path, rows: list[dict[str, Any]]) -> None:
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(r) + "\n")


def test_alignment_scores_on_constructed_corpus(tmp_path: Path) -> None:
    words = [f"w{i}" for i in range(400)]
    src = " ".join(words[:100])
    passage = " ".join(words[20:60])
    filler = " ".join(words[200:230])
    susp = f"{filler} {passage} {' '.join(words[300:330])}"
    start = len(filler) + 1
    folder = tmp_path / "pan13_text_alignment"
    folder.mkdir()
    _write_gz(folder / "docs.jsonl.gz", [
        {"id": "src1", "text": src}, {"id": "susp1", "text": susp},
        {"id": "susp2", "text": " ".join(words[250:300])},
    ])  # fmt: skip
    _write_gz(folder / "labels.jsonl.gz", [
        {"susp": "susp1", "src": "src1", "category": "02-no-obfuscation",
         "features": [{"name": "about", "title": "news"},
                      {"this_offset": start, "this_length": len(passage)}]},
        {"susp": "susp2", "src": "src1", "category": "01-no-plagiarism", "features": []},
    ])  # fmt: skip
    scores = pan13.evaluate_alignment(tmp_path)
    exact = scores["02-no-obfuscation"]
    assert (exact.true_chars, exact.predicted_chars, exact.matched_chars) == (len(passage),) * 3
    assert exact.precision == exact.recall == 1.0
    none = scores["01-no-plagiarism"]
    assert none.predicted_chars == 0 and none.precision == 1.0
    with pytest.raises(InputError):
        pan13.evaluate_alignment(tmp_path / "missing")
