"""The small-memory analysis of research/origin_small.py (seed 004): the copy stream's
recency share, and the error breakdown / tuning protocol checked against direct
recomputation."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

from conftest import research_module
from neardup.detect.origin import OriginConfig
from neardup.errors import ConfigError

oe = research_module("origin_experiments")
osm = research_module("origin_small")


def test_extension_candidates_have_distinct_labels() -> None:
    assert len({c.label for c in osm.EXTENSION_CANDIDATES}) == len(osm.EXTENSION_CANDIDATES)


def test_copy_stream_recent_share(reuters_docs: list[dict[str, Any]]) -> None:
    docs = [oe.StreamDoc(d["id"], d["text"], d["date"]) for d in reuters_docs if d["text"]][:300]
    with pytest.raises(ConfigError):
        oe.copy_stream(docs, recent_share=1.5)
    assert oe.copy_stream(docs, seed=4) == oe.copy_stream(docs, seed=4, recent_share=0.6)
    recent = 20
    order = {d.id: i for i, d in enumerate(docs)}
    last = -1
    for d in oe.copy_stream(docs, seed=4, recent=recent, recent_share=1.0):
        if not d.sources:
            last = order[d.id]
        for s in d.sources:  # every passage from the `recent` last originals
            assert last - recent < order[s] <= last


def test_breakdown_and_tuning_agree_with_direct_scores(
    reuters_docs: list[dict[str, Any]],
) -> None:
    docs = [oe.StreamDoc(d["id"], d["text"], d["date"]) for d in reuters_docs if d["text"]][:300]
    prepared = oe.prepare(oe.copy_stream(docs, seed=0))
    truth = oe.ground_truth(prepared, query_docs=200)
    cfg = OriginConfig.paper(lucky_limit=2, estimation="b")
    fraction = 0.02
    b = osm.error_breakdown(prepared, truth, cfg, fraction)
    direct = oe.run_config(
        prepared,
        truth,
        OriginConfig.paper(
            lucky_limit=2,
            estimation="b",
            memory_bytes=oe.memory_for_fraction(fraction, prepared.total_shingles),
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
    assert sum(b["old_tokens_by_age"]) == n_old and len(b["missed_by_age"]) == len(osm.AGE_BINS) - 1
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
    tuning, held_out = osm.split_query(truth)
    assert tuning.shape[0] + held_out.shape[0] == 200 and tuning[-1] < held_out[0]
    candidates = [cfg, OriginConfig.paper(eviction="random", estimation="nb")]
    result = osm.tune(prepared, truth, fractions=(fraction,), candidates=candidates)
    runs = result[str(fraction)]["runs"]
    assert runs[0]["all"]["tf"] == pytest.approx(b["tf"])
    best = max(runs, key=lambda r: r["tuning"]["tf"])  # no DO floor at this size
    assert result[str(fraction)]["chosen"] == best["label"]
    r = osm.run_split(prepared, truth, cfg, fraction)
    assert r["held_out"] == runs[0]["held_out"]
    nhs = (("hailstorm", None, True),)
    sd = osm.selection_density(prepared, truth, cfg, variants=nhs, fractions=(fraction,))
    assert sd[0]["held_out"] == r["held_out"] and sd[0]["ssr"] == pytest.approx(direct.ssr)
    sampled = osm.insert_sampling(prepared, truth, cfg, moduli=(1,), fractions=(fraction,))
    assert sampled[0]["tuning"] == r["tuning"]
    # extensions: chosen among both families by the same rule; the paper's choice unchanged
    ext = dataclasses.replace(cfg, edge_extension=1, fingerprint_bytes=4, origin_bytes=4)
    both = osm.tune(prepared, truth, (fraction,), candidates, extensions=[ext])[str(fraction)]
    assert both["chosen"] == result[str(fraction)]["chosen"]
    assert [r["family"] for r in both["runs"]] == ["paper", "paper", "extension"]
    assert both["chosen_extended"] == max(both["runs"], key=lambda r: r["tuning"]["tf"])["label"]
    abl = osm.ablation(prepared, truth, ext, fraction)
    packed_only = "NHs+LS(limit 2)+B+packed(4+4 B)"
    assert [a["label"] for a in abl] == [ext.label, "NHs+LS(limit 2)+B(ext 1)", packed_only]
    assert abl[0]["held_out"] == both["runs"][2]["held_out"]


def test_copy_reuse_by_hand() -> None:
    a = np.arange(10, dtype=np.uint64)  # 3 shingles of width 8
    b = np.concatenate([a, np.array([99], dtype=np.uint64)])  # a's 3 + 1 new
    c = a.copy()
    prepared = oe.Prepared(("a", "b", "c"), (a, b, c), 3 + 4 + 3, 31)
    r = osm.copy_reuse(prepared)
    assert r["copied_shingles"] == 3 and r["mean"] == 2.0 and r["share_copied_once"] == 0.0


def test_recommended_reads_the_choices_and_the_paper_floor() -> None:
    def run(label: str, do: float, tf: float) -> dict[str, Any]:
        return {"label": label, "held_out": {"do": do, "tf": tf}}

    two = [run("a", 90, 80), run("b", 90, 82)]
    small = {
        "0.003": {"chosen": "a", "chosen_extended": "b", "runs": two},
        "0.001": {"chosen": "a", "chosen_extended": "a", "runs": [run("a", 80, 77)]},
    }
    large = {"0.342": {"chosen": "c", "runs": [run("c", 99, 99)]}}
    rows = {r["fraction"]: r for r in osm.recommended(small, large)}
    assert set(rows) == {0.003, 0.001, 0.342}  # 0.033 is in neither result
    assert rows[0.003]["met"] and rows[0.003]["extended_tf"] == 82 and rows[0.003]["paper_tf"] == 80
    assert not rows[0.001]["met"]  # TF 77 < the paper's 78.1
    assert rows[0.342]["extended_label"] == "c" and rows[0.342]["met"]
