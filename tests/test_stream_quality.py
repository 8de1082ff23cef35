"""The stream-quality evaluation: verdicts and per-edit counts against a brute-force recount
(SimHash distance and shingle Jaccard recomputed with Python sets), on a small Reuters slice."""

from __future__ import annotations

import datetime as dt
import gzip
import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from conftest import oracle_verdict
from neardup.detect.stream import StreamConfig
from neardup.errors import ConfigError
from neardup.evaluation.stream_quality import (
    GOLD,
    PREDICTED,
    StreamQualityConfig,
    count_by_edit,
    describe_rule,
    exact_groups,
    pair_evidence,
    pair_verdicts,
    rates,
    render_markdown,
    run_stream,
    stream_order,
    stream_quality,
    threshold_curves,
    what_if,
)
from neardup.evaluation.synth import LABEL_RULES, SynthConfig, synthesize
from neardup.index.lsh import LSHIndexConfig
from neardup.sketch.minhash import minhash_values
from neardup.sketch.shingleset import sign_shingles
from neardup.sketch.simhash import sign_simhash


@pytest.fixture(scope="module")
def bench(reuters_docs: list[dict[str, Any]]) -> Any:
    return synthesize(reuters_docs[:500], SynthConfig(max_originals=40, seed=5))


@pytest.fixture(scope="module")
def streamed(bench: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    order = stream_order(bench)
    decisions, refused, _, _ = run_stream(order, tmp_path_factory.mktemp("sq"))
    return order, decisions, refused


def _utc(iso: str) -> dt.datetime:
    d = dt.datetime.fromisoformat(iso)
    return d if d.tzinfo else d.replace(tzinfo=dt.UTC)


def _brute_verdict(
    a: str,
    b: str,
    texts: dict[str, str],
    cfg: StreamConfig,
    dates: dict[str, str | None] | None = None,
) -> str:
    """The stream's rule recomputed from scratch for stored ``a`` and new ``b``: popcount
    distance or brute-force LSH banding for the candidate, Python sets for the verdict
    (``dates``: ISO dates by id, for the figures window of the word-overlap rule)."""
    fa = int(sign_simhash(texts[a], cfg.simhash).values[0])
    fb = int(sign_simhash(texts[b], cfg.simhash).values[0])
    ha = sign_shingles(texts[a], cfg.shingles).values
    hb = sign_shingles(texts[b], cfg.shingles).values
    candidate = bin(fa ^ fb).count("1") <= cfg.similar_max_distance
    if not candidate and cfg.candidates == "simhash+lsh":
        bands, rows = LSHIndexConfig(
            num_perm=cfg.lsh_num_perm, threshold=cfg.lsh_threshold
        ).band_layout
        ma = minhash_values(ha, cfg.lsh_num_perm).tolist()
        mb = minhash_values(hb, cfg.lsh_num_perm).tolist()
        candidate = any(
            ma[i * rows : (i + 1) * rows] == mb[i * rows : (i + 1) * rows] for i in range(bands)
        ) and sum(x == y for x, y in zip(ma, mb, strict=True)) >= cfg.lsh_min_score * len(ma)
    if not candidate:
        return "none"
    da, db = (dates or {}).get(a), (dates or {}).get(b)
    gap = None if da is None or db is None else abs(_utc(db) - _utc(da)).total_seconds()
    got = oracle_verdict(set(hb.tolist()), set(ha.tolist()), cfg, texts[b], texts[a], gap)
    return "none" if got is None else got


def test_stream_order_is_originals_then_copies_by_date(bench: Any) -> None:
    order = stream_order(bench)
    assert sorted(d["id"] for d in order) == sorted(d["id"] for d in bench.docs)
    roles = [d["synth"]["role"] for d in order]
    n = roles.count("original")
    assert set(roles[:n]) == {"original"} and "original" not in roles[n:]
    for part in (order[:n], order[n:]):
        dates = [d["date"] for d in part if d["date"] is not None]
        assert dates == sorted(dates)
    # Every copy comes after its original.
    pos = {d["id"]: i for i, d in enumerate(order)}
    for d in order[n:]:
        assert pos[d["synth"]["copy_of"]] < pos[d["id"]]


def test_verdicts_and_per_edit_counts_match_a_brute_force_recount(
    bench: Any, streamed: Any
) -> None:
    order, decisions, refused = streamed
    assert not refused
    cfg = StreamConfig()
    texts = {d["id"]: d["text"] for d in bench.docs}
    dates = {d["id"]: d.get("date") for d in bench.docs}
    ids = [d["id"] for d in order]
    verdicts = pair_verdicts(bench.pairs, decisions, {i: k for k, i in enumerate(ids)})
    brute: dict[tuple[str, str, str, str], int] = {}
    for rule in LABEL_RULES:
        for p, got in zip(bench.pairs, verdicts, strict=True):
            a, b = p["id1"], p["id2"]
            if ids.index(a) > ids.index(b):
                a, b = b, a
            # The later article's decision, read by hand.
            dec = decisions[b]
            by_hand = "none"
            for m in dec.matches:
                if m.id == a:
                    by_hand = m.verdict
            if by_hand == "none" and dec.status == "duplicate" and dec.duplicate_of == a:
                by_hand = "duplicate"
            assert got == by_hand
            assert got == _brute_verdict(a, b, texts, cfg, dates), (p, got)
            key = (p["edit"], p["labels"][rule], got)
            brute[(rule, *key)] = brute.get((rule, *key), 0) + 1
    edits = [p["edit"] for p in bench.pairs]
    for rule in LABEL_RULES:
        counts = count_by_edit(edits, [p["labels"][rule] for p in bench.pairs], verdicts)
        assert set(counts) == {*edits, "all"}
        for e in set(edits):
            for g in GOLD:
                for v in PREDICTED:
                    assert counts[e][g][v] == brute.get((rule, e, g, v), 0)
        for g in GOLD:
            for v in PREDICTED:
                assert counts["all"][g][v] == sum(
                    n for (r, _, gg, vv), n in brute.items() if (r, gg, vv) == (rule, g, v)
                )
        # Rates from the brute-force table by their textbook definitions.
        tp = sum(n for (r, _, g, v), n in brute.items() if (r, g, v) == (rule, *("duplicate",) * 2))
        pred = sum(n for (r, _, _, v), n in brute.items() if r == rule and v == "duplicate")
        actual = sum(n for (r, _, g, _), n in brute.items() if r == rule and g == "duplicate")
        got_rates = rates(counts["all"])
        assert got_rates["duplicate_precision"] == pytest.approx(tp / pred)
        assert got_rates["duplicate_recall"] == pytest.approx(tp / actual)
    assert verdicts.count("duplicate") >= 20  # the slice really exercises the stream


def test_rates_on_a_hand_made_table() -> None:
    cell = {
        "duplicate": {"duplicate": 8, "similar": 1, "none": 1},
        "similar": {"duplicate": 2, "similar": 3, "none": 5},
        "different": {"duplicate": 0, "similar": 1, "none": 9},
    }
    r = rates(cell)
    assert r["duplicate_precision"] == pytest.approx(8 / 10)
    assert r["duplicate_recall"] == pytest.approx(8 / 10)
    assert r["similar_precision"] == pytest.approx(3 / 5)
    assert r["similar_recall"] == pytest.approx(3 / 10)
    assert r["same_story_recall"] == pytest.approx(14 / 20)
    assert (r["different_related"], r["different"]) == (1, 10)
    empty = rates({g: dict.fromkeys(PREDICTED, 0) for g in GOLD})
    assert empty["duplicate_precision"] is None and empty["similar_recall"] is None


def test_offline_evidence_verdicts_and_curves_match_a_brute_force_rule(bench: Any) -> None:
    # The offline evidence models the shingle rule (the word-overlap rule needs the texts).
    cfg = StreamConfig(verify="shingles")
    texts = {d["id"]: d["text"] for d in bench.docs}
    ev = pair_evidence(bench.pairs, texts, cfg)
    # The offline rule (id2 taken as the new article) against the from-scratch recount.
    offline = ev.verdicts(cfg).tolist()
    for p, got in zip(bench.pairs, offline, strict=True):
        assert got == _brute_verdict(p["id1"], p["id2"], texts, cfg), p
    simhash_only = StreamConfig(verify="shingles", candidates="simhash")
    for p, got in zip(bench.pairs, ev.verdicts(simhash_only).tolist(), strict=True):
        assert got == _brute_verdict(p["id1"], p["id2"], texts, simhash_only), p
    assert offline.count("duplicate") >= 20 and ev.lsh.any()
    # Orientation: swapping stored and new swaps containment and coverage, nothing else.
    swapped = [{**p, "id1": p["id2"], "id2": p["id1"]} for p in bench.pairs]
    flipped = pair_evidence(swapped, texts, cfg)
    assert flipped.jaccard.tolist() == ev.jaccard.tolist()
    assert flipped.containment.tolist() == ev.coverage.tolist()
    assert flipped.coverage.tolist() == ev.containment.tolist()
    assert (ev.smaller_containment >= ev.jaccard).all()
    # The ingest position decides which of a pair is the new article.
    p0 = bench.pairs[1]
    moved = pair_evidence([p0], texts, cfg, {p0["id1"]: 1, p0["id2"]: 0})
    assert (moved.containment[0], moved.coverage[0]) == (ev.coverage[1], ev.containment[1])
    gold = {r: [p["labels"][r] for p in bench.pairs] for r in LABEL_RULES}
    curves = threshold_curves(ev, gold, cfg)
    wi = what_if(ev, gold, cfg)
    grid = curves["grid"]
    for rule in LABEL_RULES:
        c = curves["rules"][rule]
        assert c["jaccard"][grid.index(cfg.duplicate_min_jaccard)] == c["default"]
        assert c["containment"][grid.index(cfg.duplicate_min_containment)] == c["default"]
        assert c["coverage"][grid.index(cfg.duplicate_min_coverage)] == c["default"]
        assert c["shared"][curves["shared"].index(cfg.duplicate_min_shared)] == c["default"]
        assert c["raw_distance"][cfg.duplicate_max_distance] == c["raw_default"]
        assert wi["shingle rule, SimHash + LSH candidates"][rule] == c["default"]
        # More candidates can only add duplicates.
        assert c["simhash_default"]["recall"] <= c["default"]["recall"]
        assert c["default"]["recall"] <= c["ungated_default"]["recall"]
        assert c["raw_distance"][-1]["recall"] >= c["raw_distance"][0]["recall"]
        # Recall can only fall as a threshold rises.
        for key in ("jaccard", "containment", "coverage", "shared"):
            recalls = [x["recall"] for x in c[key]]
            assert all(x >= y for x, y in itertools.pairwise(recalls)), key


def test_offline_verdicts_of_the_raw_rule_and_errors(bench: Any) -> None:
    texts = {d["id"]: d["text"] for d in bench.docs}
    raw = StreamConfig(verify="none")
    ev = pair_evidence(bench.pairs, texts, raw)
    got = ev.verdicts(raw).tolist()
    for p, v in zip(bench.pairs, got, strict=True):
        fa = int(sign_simhash(texts[p["id1"]], raw.simhash).values[0])
        fb = int(sign_simhash(texts[p["id2"]], raw.simhash).values[0])
        d = bin(fa ^ fb).count("1")
        want = "duplicate" if d <= 3 else "similar" if d <= 7 else "none"
        assert v == want
    with pytest.raises(ConfigError):
        ev.verdicts(StreamConfig(verify="lcs"))
    with pytest.raises(ConfigError):
        ev.candidate(raw, "everything")


def _write_gz(path: Path, rows: list[dict[str, Any]]) -> Path:
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row) + "\n")
    return path


def _story(n: int) -> str:
    return " ".join(
        f"Company number {n} reported quarterly results for period {k} with revenue growth "
        f"of {n + k} percent and analysts in city {n * 7 + k} expected more."
        for k in range(6)
    )


def _other_story() -> str:
    return " ".join(
        f"The council of town {k} voted on the harbour plan after residents of district {k} "
        "complained about noise, traffic and the cost of the new bridge."
        for k in range(6)
    )


def test_exact_groups_found_including_a_takeover(tmp_path: Path) -> None:
    docs = [
        {"id": "a", "text": _story(1), "date": "2020-01-01T10:00:00Z"},
        {"id": "b", "text": _story(1), "date": "2020-01-01T11:00:00Z"},
        {"id": "c", "text": _story(2), "date": "2020-01-02T10:00:00Z"},
        # An exact copy of c dated earlier but ingested later: it takes over as original.
        {"id": "d", "text": _story(2), "date": "2020-01-01T09:00:00Z"},
        {"id": "e", "text": "", "date": "2020-01-03T10:00:00Z"},
        # A different story (not the template of a-d, whose copies with other numbers are
        # duplicates under the stream's rule, as under the editorial label rule).
        {"id": "f", "text": _other_story(), "date": "2020-01-03T11:00:00Z"},
    ]
    corpus = _write_gz(tmp_path / "docs.jsonl.gz", docs)
    groups = _write_gz(tmp_path / "groups.jsonl.gz", [{"ids": ["a", "b"]}, {"ids": ["c", "d"]}])
    store = tmp_path / "store"
    store.mkdir()
    r = exact_groups(corpus, groups, store)
    assert (r["groups"], r["groups_found"], r["groups_split"]) == (2, 2, [])
    assert r["takeovers_in_groups"] == 1
    assert (r["ingested"], r["refused"]) == (5, 1)
    # A group that is not one: reported as split.
    _write_gz(tmp_path / "bad.jsonl.gz", [{"ids": ["a", "f"]}])
    store2 = tmp_path / "store2"
    store2.mkdir()
    bad = exact_groups(corpus, tmp_path / "bad.jsonl.gz", store2)
    assert bad["groups_found"] == 0 and bad["groups_split"] == [["a", "f"]]


def test_stream_quality_end_to_end_writes_plot_and_markdown(tmp_path: Path) -> None:
    from conftest import data_path

    reuters = data_path("reuters21578", "docs.jsonl.gz")
    r = stream_quality(reuters, tmp_path, StreamQualityConfig(max_originals=15, seed=1))
    assert (tmp_path / "stream_thresholds.png").stat().st_size > 10_000
    assert set(r["variants"]) == {
        "default",
        "verify=shingles",
        "candidates=simhash",
        "verify=none",
    }
    assert r["variants"]["default"]["stream_config"]["candidates"] == "simhash+lsh"
    for name, agreement in r["offline_agreement"]["by_variant"].items():
        if r["variants"][name]["stream_config"]["verify"] == "overlap":
            assert agreement["agree"] is None  # not modelled offline (needs the texts)
            continue
        assert agreement["agree"] == r["pairs"], (name, agreement["disagreements"])
    for v in r["variants"].values():
        for rule in LABEL_RULES:
            total = sum(sum(row.values()) for row in v["counts"][rule]["all"].values())
            assert total == r["pairs"]
    text = "\n".join(render_markdown(r))
    assert "## 6. Stream decisions" in text and "img/stream_thresholds.png" in text
    # The rule sentence is generated from the default configuration.
    assert "plus MinHash LSH (32 permutations, bands for threshold 0.1" in text
    assert "keeps >= 0.5 of the stored article's words and adds <= 0.2 of its own" in text
    # The shingle rule's sentence, for its variant.
    shingle_rule = describe_rule(r["variants"]["verify=shingles"]["stream_config"])
    assert "coverage (share of the stored article's shingles in the new one) >= 0.5" in (
        shingle_rule
    )
    json.dumps(r)  # JSON-able as the report stores it


def test_rule_descriptions_follow_the_configuration() -> None:
    from neardup.evaluation.stream_quality import _stream_config_dict, describe_rule

    text = describe_rule(
        _stream_config_dict(StreamConfig(verify="shingles", duplicate_min_coverage=0.3))
    )
    assert "MinHash LSH" in text and ">= 0.3 and at least 20 shingles" in text
    assert "MinHash LSH" not in describe_rule(
        _stream_config_dict(StreamConfig(candidates="simhash"))
    )
    assert "common substring of >= 0.5" in describe_rule(
        _stream_config_dict(StreamConfig(verify="lcs"))
    )
    raw = describe_rule(_stream_config_dict(StreamConfig(verify="none")))
    assert "duplicate when d <= 3, similar up to d <= 7" in raw and "LSH" not in raw


def test_config_errors() -> None:
    with pytest.raises(ConfigError):
        StreamQualityConfig(max_originals=1)
    with pytest.raises(ConfigError):
        StreamQualityConfig(batch_size=0)


@pytest.mark.slow  # all of Reuters goes through the stream (exact groups): about 20 s
def test_cli_eval_stream(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from conftest import DATA_DIR, data_path
    from neardup.cli import main

    data_path("reuters21578", "docs.jsonl.gz")

    def run(*args: str) -> tuple[int, str, str]:
        try:
            main(list(args))
            code = 0
        except SystemExit as exc:
            code = int(exc.code or 0)
        out = capsys.readouterr()
        return code, out.out, out.err

    code, out, _ = run(
        "eval", "stream", "--data", str(DATA_DIR), "--max-originals", "12", "--json",
        "--plots", str(tmp_path),
    )  # fmt: skip
    assert code == 0
    result = json.loads(out)
    assert result["pairs"] > 0 and set(result["variants"]) == {
        "default",
        "verify=shingles",
        "candidates=simhash",
        "verify=none",
    }
    assert (tmp_path / "stream_thresholds.png").exists()
    code, _, err = run("eval", "stream", "--data", str(tmp_path / "missing"))
    assert code == 65 and "Reuters data not found" in err
