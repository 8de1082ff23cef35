"""The streaming engine: reference mode vs a brute-force oracle on Reuters with planted
copies, segment offsets, save/reload continuity, bad input."""

from __future__ import annotations

import dataclasses
import itertools
import random
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from neardup.detect.origin import TEXT_CONFIG, OriginConfig, OriginDetector
from neardup.detect.origin.table import entry_bytes
from neardup.errors import ConflictError, InputTypeError, StoreError
from neardup.text import tokenize

K = 8


def planted_stream(
    reuters_docs: list[dict[str, Any]], n: int = 400
) -> tuple[list[tuple[str, str]], dict[str, tuple[str, int, int]]]:
    """Reuters docs in order, plus after every 4th doc one that copies a passage of an
    earlier doc between unique filler words.  Returns the stream and, per planted doc,
    (source id, start, end) of the copied passage inside the planted doc's text."""
    rng = random.Random(4)
    docs = [(d["id"], d["text"]) for d in reuters_docs if d["text"]][:n]
    stream: list[tuple[str, str]] = []
    planted: dict[str, tuple[str, int, int]] = {}
    for i, (doc_id, text) in enumerate(docs):
        stream.append((doc_id, text))
        if i % 4 != 3:
            continue
        src_id, src_text = docs[rng.randrange(i + 1)]
        toks = tokenize(src_text, TEXT_CONFIG)
        if len(toks) < 30:
            continue
        a = rng.randrange(len(toks) - 25)
        b = min(len(toks), a + rng.randrange(12, 40))
        passage = src_text[toks.starts[a] : toks.ends[b - 1]]
        head = " ".join(f"zq{i}x{j}" for j in range(10)) + " "
        tail = " " + " ".join(f"zq{i}y{j}" for j in range(10))
        new_id = f"plant-{i}"
        stream.append((new_id, head + passage + tail))
        planted[new_id] = (src_id, len(head), len(head) + len(passage))
    return stream, planted


def oracle(stream: list[tuple[str, str]]) -> list[dict[str, Any]]:
    """The origin problem solved by brute force on token strings with a dict."""
    first: dict[tuple[str, ...], str] = {}
    out = []
    for doc_id, text in stream:
        forms = tokenize(text, TEXT_CONFIG).forms
        origins = []
        for i in range(len(forms) - K + 1):
            sh = tuple(forms[i : i + K])
            origins.append(first.setdefault(sh, doc_id))
        old = [False] * len(forms)
        for i, o in enumerate(origins):
            if o != doc_id:
                for t in range(i, i + K):
                    old[t] = True
        counts = Counter(origins).most_common()
        if not counts:
            dominant: str | None = doc_id
        elif len(counts) == 1 or 10 * counts[0][1] >= 11 * counts[1][1]:
            dominant = counts[0][0]
        else:
            dominant = None
        out.append({"origins": origins, "fresh": old.count(False), "dominant": dominant})
    return out


def test_reference_mode_equals_brute_force_oracle(reuters_docs: list[dict[str, Any]]) -> None:
    stream, planted = planted_stream(reuters_docs)
    expected = oracle(stream)
    det = OriginDetector(OriginConfig.reference())
    copied_docs = 0
    for (doc_id, text), exp in zip(stream, expected, strict=True):
        rep = det.process(doc_id, text)
        assert [o for _, _, o in rep.shingle_origins] == exp["origins"]
        assert rep.fresh_tokens == exp["fresh"]
        assert rep.dominant_origin == exp["dominant"]
        copied_docs += rep.copied_fraction > 0
    assert copied_docs >= len(planted)


def test_segments_map_back_to_the_copied_text(reuters_docs: list[dict[str, Any]]) -> None:
    stream, planted = planted_stream(reuters_docs)
    det = OriginDetector(OriginConfig.reference())
    order = {doc_id: i for i, (doc_id, _) in enumerate(stream)}
    checked = 0
    for doc_id, text in stream:
        rep = det.process(doc_id, text)
        if doc_id not in planted:
            continue
        src, start, end = planted[doc_id]
        copied = rep.copied_segments
        assert copied, doc_id
        # the copied segments tile exactly the planted passage (filler words are unique)
        assert copied[0].start == start and copied[-1].end == end
        for a, b in itertools.pairwise(copied):
            assert len(tokenize(text[a.end : b.start], TEXT_CONFIG)) == 0  # no token between
        for seg in copied:
            assert order[seg.origin] <= order[src]  # the source or an even earlier doc
        assert any(seg.origin == src for seg in copied) or all(
            order[s.origin] < order[src] for s in copied
        )
        # novel segments are exactly the filler
        novel = [s for s in rep.segments if not s.copied]
        assert all(text[s.start : s.end].startswith("zq") for s in novel)
        checked += 1
    assert checked >= 50


@pytest.mark.parametrize(
    "cfg",
    [
        OriginConfig.paper(memory_bytes=60_000),
        OriginConfig.paper(memory_bytes=60_000, eviction="random", estimation="nb"),
        OriginConfig.paper(
            memory_bytes=60_000, eviction="lru", estimation="e", selection="winnowing"
        ),
        OriginConfig.paper(
            memory_bytes=60_000,
            eviction="copycount",
            estimation="b",
            selection="dct",
            no_overlap=False,
        ),
        OriginConfig.paper(
            memory_bytes=20_000,
            lucky_limit=3,
            lucky_every=3,
            estimation="b",
            bridge_limit=255,
            bridge_tolerance=2,
            edge_extension=1,
            fingerprint_bytes=3,
            origin_bytes=4,
        ),
        OriginConfig.reference(),
    ],
    ids=lambda c: c.label,
)
def test_save_reload_continues_the_stream(
    reuters_docs: list[dict[str, Any]], tmp_path: Path, cfg: OriginConfig
) -> None:
    stream, _ = planted_stream(reuters_docs, n=300)
    one = OriginDetector(cfg)
    full = [one.process(i, t).to_dict() for i, t in stream]
    first = OriginDetector(cfg)
    half = len(stream) // 2
    split = [first.process(i, t).to_dict() for i, t in stream[:half]]
    first.save(tmp_path / "state.npz")
    second = OriginDetector.load(tmp_path / "state.npz")
    split += [second.process(i, t).to_dict() for i, t in stream[half:]]
    assert split == full
    for name, arr in one.table.arrays().items():
        assert np.array_equal(arr, second.table.arrays()[name]), name
    with pytest.raises(ConflictError):
        second.process(stream[0][0], "again")


def test_bounded_table_finds_most_copies(reuters_docs: list[dict[str, Any]]) -> None:
    stream, planted = planted_stream(reuters_docs)
    det = OriginDetector(OriginConfig.paper(memory_bytes=2_000_000))
    hit = 0
    for doc_id, text in stream:
        rep = det.process(doc_id, text)
        if doc_id in planted and rep.copied_fraction > 0:
            hit += 1
        assert det.table.nbytes <= 2_000_000
    assert hit >= 0.9 * len(planted)
    assert det.registry_size <= det.table.stored


def test_bad_and_edge_input(tmp_path: Path) -> None:
    det = OriginDetector(OriginConfig.paper(memory_bytes=100_000))
    empty = det.process("e", "")
    assert (empty.tokens, empty.fresh_tokens, empty.copied_fraction, empty.segments) == (
        0,
        0,
        0.0,
        (),
    )
    assert empty.dominant_origin == "e"
    short = det.process("s", "only five words in here")
    assert short.tokens == 5 and short.selected_shingles == 0 and short.fresh_tokens == 5
    assert short.dominant_origin == "s"
    punct = det.process("p", "!!! ... ???")
    assert punct.tokens == 0
    with pytest.raises(ConflictError, match="already processed"):
        det.process("s", "other text")
    with pytest.raises(InputTypeError):
        det.process("b", b"bytes")  # type: ignore[arg-type]
    lax = OriginDetector(OriginConfig.reference(), reject_repeated_ids=False)
    lax.process("x", "one two three four five six seven eight nine")
    assert lax.process("x", "one two three four five six seven eight nine").copied_fraction == 1.0
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a state")
    with pytest.raises(StoreError):
        OriginDetector.load(bad)
    with pytest.raises(StoreError):
        OriginDetector.load(tmp_path / "missing.npz")


def test_id_log_round_trip(tmp_path: Path) -> None:
    from neardup.detect.origin.idlog import FLUSH_EVERY, IdLog

    log = IdLog(tmp_path / "ids")
    ids = [f"doc-{i}-é" for i in range(FLUSH_EVERY * 2 + 17)]
    assert [log.append(x) for x in ids] == list(range(len(ids)))
    assert [log.get(i) for i in (0, 5, FLUSH_EVERY, len(ids) - 1)] == [
        ids[0], ids[5], ids[FLUSH_EVERY], ids[-1]
    ]  # fmt: skip
    log.close()
    again = IdLog(tmp_path / "ids")
    assert len(again) == len(ids) and again.get(FLUSH_EVERY + 3) == ids[FLUSH_EVERY + 3]
    again.truncate(10)
    assert len(again) == 10 and again.append("new") == 10 and again.get(10) == "new"
    with pytest.raises(StoreError):
        again.get(11)
    again.close()


def test_id_log_gives_the_same_output(reuters_docs: list[dict[str, Any]], tmp_path: Path) -> None:
    """Origins resolved from the on-disk id log equal the in-memory registry's, also across
    a save and reload (ids logged after the save are dropped on reload)."""
    stream, _ = planted_stream(reuters_docs, n=300)
    cfg = OriginConfig.paper(memory_bytes=60_000)
    in_memory = OriginDetector(cfg)
    memory = [in_memory.process(i, t).to_dict() for i, t in stream]
    half = len(stream) // 2
    first = OriginDetector(cfg, id_log=tmp_path / "ids")
    disk = [first.process(i, t).to_dict() for i, t in stream[:half]]
    first.save(tmp_path / "state.npz")
    first.process("ran-ahead", stream[half][1])  # logged, but not in the saved state
    first.close()
    second = OriginDetector.load(tmp_path / "state.npz")
    disk += [second.process(i, t).to_dict() for i, t in stream[half:]]
    assert disk == memory
    assert second.registry_size == 0
    with pytest.raises(StoreError, match="already holds"):
        OriginDetector(cfg, id_log=tmp_path / "ids")


@pytest.mark.parametrize(("fingerprint_bytes", "origin_bytes"), [(4, 4), (3, 4), (4, 8)])
def test_packed_entries_give_the_papers_results_at_equal_capacity(
    reuters_docs: list[dict[str, Any]], fingerprint_bytes: int, origin_bytes: int
) -> None:
    """Oracle: the paper's 6 + 8-byte entries.  With as many buckets (so the same capacity
    and the same evictions) packed entries give identical reports, unless a fingerprint
    falsely matches on its fewer stored bits (not on this stream)."""
    stream, _ = planted_stream(reuters_docs, n=300)
    paper = OriginConfig.paper(estimation="b", lucky_limit=3, lucky_every=3, bridge_limit=255)
    packed = dataclasses.replace(
        paper, fingerprint_bytes=fingerprint_bytes, origin_bytes=origin_bytes
    )
    buckets = 40  # 2,560 entries: far fewer than the stream's selected shingles
    outs = []
    for cfg in (paper, packed):
        mem = buckets * (cfg.bucket_size * entry_bytes(cfg) + 1)
        det = OriginDetector(dataclasses.replace(cfg, memory_bytes=mem))
        outs.append([det.process(i, t).to_dict() for i, t in stream])
        assert det.table.nbytes <= mem and det.table.capacity == buckets * 64
    assert outs[0] == outs[1]
    assert sum(r["tokens"] - r["fresh_tokens"] for r in outs[0]) > 0


def test_edge_extension_marks_tokens_only(reuters_docs: list[dict[str, Any]]) -> None:
    """Edge extension adds copied tokens next to found copies but changes neither the
    shingles' origins, the dominant origin nor (so) the table's evolution."""
    stream, _ = planted_stream(reuters_docs, n=300)
    base = OriginConfig.paper(memory_bytes=30_000, estimation="b", bridge_limit=255)
    plain = OriginDetector(base)
    wide = OriginDetector(dataclasses.replace(base, edge_extension=2))
    grew = 0
    for doc_id, text in stream:
        a = plain.process(doc_id, text)
        b = wide.process(doc_id, text)
        assert a.shingle_origins == b.shingle_origins
        assert a.dominant_origin == b.dominant_origin
        assert b.fresh_tokens <= a.fresh_tokens
        grew += a.fresh_tokens - b.fresh_tokens
    assert grew > 0
    for name, arr in plain.table.arrays().items():
        assert np.array_equal(arr, wide.table.arrays()[name]), name
