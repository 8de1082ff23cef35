"""Small-memory analysis of origin detection: the seen-id store against a set, the CLI's
bounded default, state files of version 1, labels, and the error breakdown / tuning
protocol of ``neardup.evaluation.origin_small`` checked against direct recomputation."""

from __future__ import annotations

import dataclasses
import json
import random
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from neardup.cli import cli
from neardup.detect.origin import OriginConfig, OriginDetector
from neardup.detect.origin.persist import save_state
from neardup.detect.origin.seen import PENDING, SeenIds
from neardup.detect.origin.table import BucketTable
from neardup.errors import ConfigError, ConflictError, StoreError
from neardup.evaluation.origin import (
    Prepared,
    StreamDoc,
    copy_stream,
    ground_truth,
    memory_for_fraction,
    prepare,
    run_config,
)
from neardup.evaluation.origin_small import (
    AGE_BINS,
    EXTENSION_CANDIDATES,
    ablation,
    copy_reuse,
    error_breakdown,
    insert_sampling,
    recommended,
    run_split,
    selection_density,
    split_query,
    tune,
)


def test_seen_ids_match_a_set() -> None:
    rng = random.Random(7)
    seen = SeenIds()
    oracle: set[str] = set()
    for _ in range(3 * PENDING + 123):  # several flushes and merges
        doc_id = f"doc-{rng.randrange(10 * PENDING)}"
        assert seen.add(doc_id) == (doc_id not in oracle)
        oracle.add(doc_id)
    assert len(seen) == len(oracle)
    probes = [f"doc-{i}" for i in range(10 * PENDING)]
    assert [p in seen for p in probes] == [p in oracle for p in probes]
    assert 42 not in seen  # not a string: never seen
    reloaded = SeenIds(seen.to_array())
    assert [p in reloaded for p in probes] == [p in oracle for p in probes]
    assert seen.nbytes == 8 * len(oracle)
    assert np.all(np.diff(seen.to_array().astype(np.float64)) > 0)  # sorted, distinct


TEXT = " ".join(f"w{i}" for i in range(40))


def test_states_of_older_versions_are_refused_with_a_message(tmp_path: Path) -> None:
    det = OriginDetector(OriginConfig.paper(memory_bytes=1 << 16))
    det.process("a", TEXT)
    det.save(tmp_path / "s.npz")
    # an older file: a bare .npz, not a state file with its digest
    files = {k: np.asarray(v) for k, v in det.state_arrays().items()}
    np.savez(tmp_path / "old.npz", **files)
    with pytest.raises(StoreError, match="not a neardup state file"):
        OriginDetector.load(tmp_path / "old.npz")
    # a checksummed file whose version is not this one's
    meta = json.loads(files["meta"].tobytes())
    meta["version"] = 2
    files["meta"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    save_state(tmp_path / "v2.npz", files)
    with pytest.raises(StoreError, match=r"version 2.*rebuild"):
        OriginDetector.load(tmp_path / "v2.npz")
    again = OriginDetector.load(tmp_path / "s.npz")
    with pytest.raises(ConflictError):
        again.process("a", TEXT)
    assert again.process("b", TEXT).dominant_origin == "a"


def test_cli_keeps_ids_on_disk_without_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    made: list[OriginDetector] = []
    original = OriginDetector.__init__

    def spy(self: OriginDetector, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        made.append(self)

    monkeypatch.setattr(OriginDetector, "__init__", spy)
    rows = [{"id": "a", "text": TEXT}, {"id": "b", "text": f"fresh words {TEXT}"}]
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = CliRunner().invoke(cli, ["origin", str(tmp_path / "in.jsonl"), "--memory", "1MB"])
    assert result.exit_code == 0, result.output
    out = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert out[1]["dominant_origin"] == "a"
    assert made and made[0].registry_size == 0  # no in-memory id registry
    assert list(scratch.iterdir()) == []  # the temporary id log is removed


def test_labels_name_the_knobs() -> None:
    assert OriginConfig.paper().label == "NHs+LS+BE"
    cfg = OriginConfig.paper(lucky_limit=3, lucky_every=3, estimation="b", bridge_limit=255)
    assert cfg.label == "NHs+LS(limit 3, y 3)+B(T 255)"
    ext = dataclasses.replace(
        cfg, bridge_tolerance=2, edge_extension=1, fingerprint_bytes=3, origin_bytes=4
    )
    assert ext.label == "NHs+LS(limit 3, y 3)+B(T 255, tol 2, ext 1)+packed(3+4 B)"
    for bad in ({"fingerprint_bytes": 5}, {"origin_bytes": 6}, {"bridge_tolerance": 128},
                {"edge_extension": -1}, {"fingerprint_bytes": True}):  # fmt: skip
        with pytest.raises(ConfigError):
            OriginConfig.paper(**bad)  # type: ignore[arg-type]
    assert len({c.label for c in EXTENSION_CANDIDATES}) == len(EXTENSION_CANDIDATES)


def test_copy_stream_recent_share(reuters_docs: list[dict[str, Any]]) -> None:
    docs = [StreamDoc(d["id"], d["text"], d["date"]) for d in reuters_docs if d["text"]][:300]
    with pytest.raises(ConfigError):
        copy_stream(docs, recent_share=1.5)
    assert copy_stream(docs, seed=4) == copy_stream(docs, seed=4, recent_share=0.6)
    recent = 20
    order = {d.id: i for i, d in enumerate(docs)}
    last = -1
    for d in copy_stream(docs, seed=4, recent=recent, recent_share=1.0):
        if not d.sources:
            last = order[d.id]
        for s in d.sources:  # every passage from the `recent` last originals
            assert last - recent < order[s] <= last


def test_breakdown_and_tuning_agree_with_direct_scores(
    reuters_docs: list[dict[str, Any]],
) -> None:
    docs = [StreamDoc(d["id"], d["text"], d["date"]) for d in reuters_docs if d["text"]][:300]
    prepared = prepare(copy_stream(docs, seed=0))
    truth = ground_truth(prepared, query_docs=200)
    cfg = OriginConfig.paper(lucky_limit=2, estimation="b")
    fraction = 0.02
    b = error_breakdown(prepared, truth, cfg, fraction)
    direct = run_config(
        prepared,
        truth,
        OriginConfig.paper(
            lucky_limit=2,
            estimation="b",
            memory_bytes=memory_for_fraction(fraction, prepared.total_shingles),
        ),
        fraction,
    )
    assert b["tf"] == pytest.approx(100 * direct.tf)
    assert b["do"] == pytest.approx(100 * direct.do)
    assert b["fresh_called_old"] + b["old_called_fresh"] == pytest.approx(100 - b["tf"])
    idx = np.concatenate(
        [np.arange(truth.token_offsets[i], truth.token_offsets[i + 1]) for i in truth.query]
    )
    n_old = int(truth.token_old[idx].sum())
    assert sum(b["old_tokens_by_age"]) == n_old and len(b["missed_by_age"]) == len(AGE_BINS) - 1
    assert sum(b["missed_by_age"]) == pytest.approx(b["old_called_fresh"] / 100 * idx.shape[0])
    # copied runs counted directly: maximal runs of old tokens over the query documents
    runs = sum(
        int(
            np.count_nonzero(
                np.diff(np.concatenate(([0], truth.token_old[a:z], [0])).astype(int)) == 1
            )
        )
        for a, z in ((truth.token_offsets[i], truth.token_offsets[i + 1]) for i in truth.query)
    )
    assert b["copied_runs"] == runs
    assert 0 <= b["copied_runs_untouched"] <= 100 and 0 <= b["missed_in_untouched_runs"] <= 100
    tuning, held_out = split_query(truth)
    assert tuning.shape[0] + held_out.shape[0] == 200 and tuning[-1] < held_out[0]
    candidates = [cfg, OriginConfig.paper(eviction="random", estimation="nb")]
    result = tune(prepared, truth, fractions=(fraction,), candidates=candidates)
    runs = result[str(fraction)]["runs"]
    assert runs[0]["all"]["tf"] == pytest.approx(b["tf"])
    best = max(runs, key=lambda r: r["tuning"]["tf"])  # no DO floor at this size
    assert result[str(fraction)]["chosen"] == best["label"]
    r = run_split(prepared, truth, cfg, fraction)
    assert r["held_out"] == runs[0]["held_out"]
    nhs = (("hailstorm", None, True),)
    sd = selection_density(prepared, truth, cfg, variants=nhs, fractions=(fraction,))
    assert sd[0]["held_out"] == r["held_out"] and sd[0]["ssr"] == pytest.approx(direct.ssr)
    sampled = insert_sampling(prepared, truth, cfg, moduli=(1,), fractions=(fraction,))
    assert sampled[0]["tuning"] == r["tuning"]
    # extensions: chosen among both families by the same rule; the paper's choice unchanged
    ext = dataclasses.replace(cfg, edge_extension=1, fingerprint_bytes=4, origin_bytes=4)
    both = tune(prepared, truth, (fraction,), candidates, extensions=[ext])[str(fraction)]
    assert both["chosen"] == result[str(fraction)]["chosen"]
    assert [r["family"] for r in both["runs"]] == ["paper", "paper", "extension"]
    assert both["chosen_extended"] == max(both["runs"], key=lambda r: r["tuning"]["tf"])["label"]
    abl = ablation(prepared, truth, ext, fraction)
    packed_only = "NHs+LS(limit 2)+B+packed(4+4 B)"
    assert [a["label"] for a in abl] == [ext.label, "NHs+LS(limit 2)+B(ext 1)", packed_only]
    assert abl[0]["held_out"] == both["runs"][2]["held_out"]


@pytest.mark.parametrize("insert_modulo", [1, 3])
def test_insert_modulo_stores_only_the_sample(
    reuters_docs: list[dict[str, Any]], insert_modulo: int
) -> None:
    """Only sampled fingerprints are stored; the id registry still counts exactly the stored
    entries per origin (so an evicted origin's id is freed, never looked up after)."""
    cfg = OriginConfig.paper(memory_bytes=20 * (64 * 18 + 1), insert_modulo=insert_modulo)
    det = OriginDetector(cfg, reject_repeated_ids=False)
    for d in [d for d in reuters_docs if d["text"]][:400]:
        det.process(d["id"], d["text"])
    table = det.table
    assert isinstance(table, BucketTable)
    used = np.arange(table.capacity) % table.bucket_size < np.repeat(table.fill, 64)
    low = table.tag_lo[used].astype(np.uint64) >> np.uint64(16)
    assert np.all(low % np.uint64(insert_modulo) == 0)
    counts = np.bincount(table.origin[used] >> 1)
    registry = {o: v[1] for o, v in det._registry.items()}
    assert registry == {o: int(c) for o, c in enumerate(counts) if c}


def test_copy_reuse_by_hand() -> None:
    a = np.arange(10, dtype=np.uint64)  # 3 shingles of width 8
    b = np.concatenate([a, np.array([99], dtype=np.uint64)])  # a's 3 + 1 new
    c = a.copy()
    prepared = Prepared(("a", "b", "c"), (a, b, c), 3 + 4 + 3, 31)
    r = copy_reuse(prepared)
    assert r["copied_shingles"] == 3 and r["mean"] == 2.0 and r["share_copied_once"] == 0.0


def test_cli_takes_the_small_memory_options(tmp_path: Path) -> None:
    rows = [{"id": "a", "text": TEXT}, {"id": "b", "text": f"fresh words {TEXT}"}]
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    args = ["origin", str(tmp_path / "in.jsonl"), "--memory", "60KB", "--estimation", "b"]
    args += ["--lucky-limit", "3", "--lucky-every", "3", "--bridge-limit", "255"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert "adaptive(NHs)+LS(limit 3, y 3)+B(T 255, tol 2, ext 1)+packed(4+4 B)" in result.stderr
    bad = CliRunner().invoke(cli, [*args[:-6], "--lucky-limit", "0"])
    assert bad.exit_code != 0 and isinstance(bad.exception, ConfigError)


def test_recommended_reads_the_choices_and_the_paper_floor() -> None:
    def run(label: str, do: float, tf: float) -> dict[str, Any]:
        return {"label": label, "held_out": {"do": do, "tf": tf}}

    two = [run("a", 90, 80), run("b", 90, 82)]
    small = {
        "0.003": {"chosen": "a", "chosen_extended": "b", "runs": two},
        "0.001": {"chosen": "a", "chosen_extended": "a", "runs": [run("a", 80, 77)]},
    }
    large = {"0.342": {"chosen": "c", "runs": [run("c", 99, 99)]}}
    rows = {r["fraction"]: r for r in recommended(small, large)}
    assert set(rows) == {0.003, 0.001, 0.342}  # 0.033 is in neither result
    assert rows[0.003]["met"] and rows[0.003]["extended_tf"] == 82 and rows[0.003]["paper_tf"] == 80
    assert not rows[0.001]["met"]  # TF 77 < the paper's 78.1
    assert rows[0.342]["extended_label"] == "c" and rows[0.342]["met"]
