"""Adaptive mode: exact while the table has room (equal to the reference mode), loose
entries go first under pressure, the lost mask, read-only peeks, and the fast token path."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.cli import cli
from neardup.detect.origin import TEXT_CONFIG, OriginConfig, OriginDetector
from neardup.detect.origin.table import BucketTable, Probe, entry_bytes
from neardup.errors import ConfigError
from neardup.shingles import hash_forms
from neardup.similarity.spans import document_tokens
from neardup.text import tokenize


def stream(reuters_docs: list[dict[str, Any]], n: int = 300) -> list[tuple[str, str]]:
    """Reuters articles in order, each fourth followed by a copy of two earlier passages."""
    docs = [(d["id"], d["text"]) for d in reuters_docs if d["text"]][:n]
    out: list[tuple[str, str]] = []
    for i, (doc_id, text) in enumerate(docs):
        out.append((doc_id, text))
        if i % 4 == 3:
            a, b = docs[i // 2][1], docs[i - 1][1]
            out.append((f"copy{i}", f"{a[:400]} quite new words here {b[-300:]}"))
    return out


def rows(config: OriginConfig, items: list[tuple[str, str]]) -> list[dict[str, Any]]:
    det = OriginDetector(config)
    return [det.process(i, t).to_dict() for i, t in items]


def test_a_stream_that_fits_gets_the_reference_answer(reuters_docs: list[dict[str, Any]]) -> None:
    items = stream(reuters_docs)
    want = rows(OriginConfig.reference(), items)
    assert any(r["copied_fraction"] > 0 for r in want)
    unlimited = OriginConfig(memory_bytes=None)
    assert rows(unlimited, items) == want
    roomy = OriginDetector(OriginConfig(memory_bytes=20_000_000))
    assert [roomy.process(i, t).to_dict() for i, t in items] == want
    assert roomy.first_loss is None
    # the same through the CLI's presets
    for preset in ("exact", "balanced"):
        det = OriginDetector(OriginConfig.preset(preset, None if preset == "exact" else 10**7))
        assert [det.process(i, t).to_dict() for i, t in items] == want


def test_under_pressure_the_table_stays_in_budget_and_ids_are_counted(
    reuters_docs: list[dict[str, Any]],
) -> None:
    items = stream(reuters_docs, 400)
    config = OriginConfig(memory_bytes=30_000)
    det = OriginDetector(config)
    for doc_id, text in items:
        det.process(doc_id, text)
    table = det.table
    assert isinstance(table, BucketTable)
    assert table.nbytes <= 30_000 and det.first_loss is not None
    assert table.stored == table.capacity  # full
    counts = np.bincount(table.stored_origins())
    assert {o: v[1] for o, v in det._registry.items()} == {
        o: int(c) for o, c in enumerate(counts) if c
    }
    # deterministic
    again = OriginDetector(config)
    for doc_id, text in items:
        again.process(doc_id, text)
    assert np.array_equal(again.table.tag_lo, table.tag_lo)


def one_bucket(eviction: str = "lru") -> BucketTable:
    cfg = OriginConfig(bucket_size=4, eviction=eviction, memory_bytes=1)
    return BucketTable(dataclasses.replace(cfg, memory_bytes=4 * entry_bytes(cfg) + 10))


def fp(i: int) -> np.uint64:
    return np.uint64(0x0101_0000_0000_0000 + i * 0x1_0000_0001)


def fps(*ids: int) -> np.ndarray:
    return np.array([fp(i) for i in ids], dtype=np.uint64)


@pytest.mark.parametrize("eviction", ["lru", "random", "lucky", "copycount"])
def test_loose_entries_go_first_and_lost_ones_are_remembered(eviction: str) -> None:
    table = one_bucket(eviction)
    # two anchors, two loose entries fill the bucket
    hits, evicted = table.probe(
        fps(1, 2, 3, 4), 0, facts=Probe(anchor=np.array([True, False, True, False]))
    )
    assert not hits.found.any() and not hits.maybe_lost.any() and evicted.size == 0
    assert int(table.loose[0]) == 2
    # a new anchor evicts a loose entry, never an anchor
    table.probe(fps(5), 1, facts=Probe(anchor=np.array([True])))
    again, _ = table.probe(fps(1, 3, 5), 2, facts=Probe(anchor=np.ones(3, bool)))
    assert again.found.all()
    assert int(table.loose[0]) == 1
    # a loose newcomer evicts the other loose entry; then, with only anchors left, one more
    # loose newcomer is dropped (and remembered as lost)
    table.probe(fps(6), 3, facts=Probe(anchor=np.array([False])))
    table.probe(fps(7), 4, facts=Probe(anchor=np.array([True])))
    assert int(table.loose[0]) == 0
    _, ev = table.probe(fps(8), 5, facts=Probe(anchor=np.array([False])))
    assert ev.size == 0 and table.last_dropped == 1
    look, _ = table.probe(fps(8, 2, 4, 6, 9), 6, readonly=True)
    assert not look.found.any()
    # lost ones (8 dropped; 2, 4, 6 evicted) may have been lost; their bits are set
    assert look.maybe_lost[:4].all()


def test_never_stored_fingerprints_are_known_new() -> None:
    table = one_bucket()
    table.probe(fps(1, 2), 0, facts=Probe(anchor=np.ones(2, bool)))
    look, _ = table.probe(fps(3), 1, readonly=True)
    assert not look.found[0] and not look.maybe_lost[0]


def test_peek_leaves_no_trace(reuters_docs: list[dict[str, Any]]) -> None:
    items = stream(reuters_docs, 120)
    det = OriginDetector(OriginConfig(memory_bytes=40_000))
    for doc_id, text in items[:-1]:
        det.process(doc_id, text)
    before = {k: v.copy() for k, v in det.table.arrays().items()}
    registry = json.dumps(det._registry)
    peeked = det.peek(items[-1][1], "q")
    after = det.table.arrays()
    assert all(np.array_equal(before[k], after[k]) for k in before)
    assert json.dumps(det._registry) == registry and det.documents_processed == len(items) - 1
    real = det.process(items[-1][0], items[-1][1])
    assert [(s.start, s.end, s.copied) for s in peeked.segments] == [
        (s.start, s.end, s.copied) for s in real.segments
    ]


def test_selection_all_works_with_and_without_overlap(tmp_path: Any) -> None:
    assert OriginConfig(selection="all").no_overlap is False
    assert OriginConfig(selection="all", no_overlap=True).label.startswith("adaptive(NAll")
    with pytest.raises(ConfigError, match="segments"):
        OriginConfig(selection="dct", no_overlap=True)
    path = tmp_path / "in.jsonl"
    text = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu"
    path.write_text(
        json.dumps({"id": "a", "text": text}) + "\n" + json.dumps({"id": "b", "text": text}) + "\n"
    )
    for flag in ([], ["--overlap"], ["--no-overlap"]):
        result = CliRunner().invoke(cli, ["origin", str(path), "--selection", "all", *flag])
        assert result.exit_code == 0, result.output
        last = json.loads(result.stdout.splitlines()[-1])
        assert last["dominant_origin"] == "a"


def test_exact_preset_takes_no_memory(tmp_path: Any) -> None:
    path = tmp_path / "in.jsonl"
    path.write_text(json.dumps({"id": "a", "text": "one two"}) + "\n")
    result = CliRunner().invoke(cli, ["origin", str(path), "--preset", "exact", "--memory", "1MB"])
    assert isinstance(result.exception, ConfigError) and "--preset exact" in str(result.exception)
    assert CliRunner().invoke(cli, ["origin", str(path), "--preset", "exact"]).exit_code == 0


def test_help_names_presets_and_groups_the_research_settings() -> None:
    out = CliRunner().invoke(cli, ["origin", "--help"]).output
    head, advanced = out.split("Advanced:")
    assert "--preset" in head and "--memory" in head and "--follow" in head
    for knob in ("--selection", "--eviction", "--lucky-limit", "--fingerprint-bytes"):
        assert knob in advanced and knob not in head


def test_fast_token_path_equals_tokenize(reuters_docs: list[dict[str, Any]]) -> None:
    for d in reuters_docs[:800]:
        text = d["text"] or ""
        got = document_tokens(text, TEXT_CONFIG, 3)
        toks = tokenize(text, TEXT_CONFIG)
        assert got.hashes.tolist() == hash_forms(toks.forms, 3).tolist()
        assert got.starts.tolist() == list(toks.starts)
        assert got.ends.tolist() == list(toks.ends)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ab1,.' \n-é’", max_size=60))
def test_fast_token_path_equals_tokenize_on_generated_text(text: str) -> None:
    got = document_tokens(text, TEXT_CONFIG, 0)
    toks = tokenize(text, TEXT_CONFIG)
    assert got.hashes.tolist() == hash_forms(toks.forms, 0).tolist()
    assert (got.starts.tolist(), got.ends.tolist()) == (list(toks.starts), list(toks.ends))
