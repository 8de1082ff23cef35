"""``neardup synth`` and ``neardup eval pairs|clusters|stream`` end to end (``eval alignment``:
tests/test_alignment_eval.py)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from neardup.cli import main
from neardup.evaluation.methods import get_method, score_pairs
from neardup.evaluation.metrics import precision_recall_f1, roc_auc


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory, reuters_docs: list[dict[str, Any]]) -> Path:
    path = tmp_path_factory.mktemp("corpus") / "docs.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        for d in reuters_docs[:400]:
            fh.write(json.dumps(d) + "\n")
    return path


@pytest.fixture(scope="module")
def synth_dir(corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("synth")
    with pytest.MonkeyPatch.context():
        try:
            main(["synth", str(corpus), "-o", str(out), "--max-originals", "60", "--seed", "5"])
        except SystemExit as exc:  # pragma: no cover - a failure shows in the asserts below
            assert not exc.code
    return out


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def test_synth_writes_labelled_benchmark(
    synth_dir: Path, corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = _lines(synth_dir / "docs.jsonl")
    labels = _lines(synth_dir / "labels.jsonl")
    manifest = json.loads((synth_dir / "manifest.json").read_text())
    assert manifest["docs"] == len(docs) and manifest["pairs"] == len(labels)
    assert set(manifest["labels"]) == {"duplicate", "similar", "different"}
    assert not list(synth_dir.glob("*.partial"))
    # Reproducible: the same seed gives byte-identical files.
    code, _, err = run(
        capsys, "synth", str(corpus), "-o", str(tmp_path), "--max-originals", "60", "--seed", "5"
    )
    assert code == 0 and "pairs" in err
    assert (tmp_path / "docs.jsonl").read_bytes() == (synth_dir / "docs.jsonl").read_bytes()
    assert (tmp_path / "labels.jsonl").read_bytes() == (synth_dir / "labels.jsonl").read_bytes()


def test_synth_label_rule_option(
    synth_dir: Path, corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, _ = run(
        capsys, "synth", str(corpus), "-o", str(tmp_path), "--max-originals", "60",
        "--seed", "5", "--label-rule", "bag80",
    )  # fmt: skip
    assert code == 0
    default = _lines(synth_dir / "labels.jsonl")
    bag = _lines(tmp_path / "labels.jsonl")
    assert [p["labels"] for p in bag] == [p["labels"] for p in default]
    assert all(p["label"] == p["labels"]["bag80"] for p in bag)
    assert all(p["label"] == p["labels"]["guide"] for p in default)  # SynthConfig's default
    # The rules really differ on this corpus (cuts and typos are labelled differently).
    assert any(p["labels"]["bag80"] != p["labels"]["editorial"] for p in default)
    code, _, err = run(capsys, "synth", str(corpus), "-o", str(tmp_path), "--label-rule", "x")
    assert code != 0 and "label-rule" in err


def test_synth_label_rules_are_the_modules() -> None:
    """The CLI names the rules without importing the module: the same rules, same default."""
    from neardup.cli.eval import _LABEL_RULES
    from neardup.evaluation.synth import LABEL_RULES, SynthConfig

    assert set(_LABEL_RULES) == set(LABEL_RULES) and _LABEL_RULES[0] == SynthConfig().label_rule


def test_eval_pairs_matches_direct_computation(
    synth_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plots = tmp_path / "plots"
    code, out, _ = run(
        capsys,
        "eval", "pairs", str(synth_dir / "labels.jsonl"), "--docs", str(synth_dir / "docs.jsonl"),
        "--method", "shingles,minhash", "--threshold", "0.6", "--by", "edit",
        "--plots", str(plots), "--json",
    )  # fmt: skip
    assert code == 0
    result = json.loads(out)["methods"]
    assert set(result) == {"shingles", "minhash"}
    labels = _lines(synth_dir / "labels.jsonl")
    texts = {d["id"]: d["text"] for d in _lines(synth_dir / "docs.jsonl")}
    pairs = [(p["id1"], p["id2"]) for p in labels]
    y = [p["label"] == "duplicate" for p in labels]
    scores = score_pairs(get_method("shingles"), pairs, texts)
    direct = precision_recall_f1(scores, y, 0.6)
    assert result["shingles"]["at_threshold"] == direct.to_dict()
    assert result["shingles"]["roc_auc"] == pytest.approx(roc_auc(scores, y))
    exact = result["shingles"]["groups"]["exact"]
    assert exact["recall"] == 1.0 and exact["positives"] == exact["pairs"]
    for name in ("pr_curves.png", "score_distributions.png"):
        assert (plots / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_eval_pairs_readable_output(synth_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys,
        "eval", "pairs", str(synth_dir / "labels.jsonl"),
        "--docs", str(synth_dir / "docs.jsonl"), "--method", "sentences",
    )  # fmt: skip
    assert code == 0
    assert out.splitlines()[0].split()[:2] == ["method", "thr"]
    assert out.splitlines()[1].startswith("sentences")


def test_eval_clusters(synth_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gold = synth_dir / "docs.jsonl"
    code, out, _ = run(capsys, "eval", "clusters", str(gold), "--gold", str(gold), "--json")
    assert code == 0
    r = json.loads(out)
    assert r["ari"] == 1.0 and r["bcubed"]["f1"] == 1.0
    # A prediction that puts every document alone: B-cubed precision 1, recall < 1.
    docs = _lines(gold)
    singles = tmp_path / "pred.jsonl"
    singles.write_text(
        "".join(json.dumps({"id": d["id"], "duplicate_of": None}) + "\n" for d in docs)
    )
    code, out, _ = run(capsys, "eval", "clusters", str(singles), "--gold", str(gold), "--json")
    r = json.loads(out)
    groups = [d["synth"]["group"] for d in docs]
    n = len(docs)
    sizes: dict[str, int] = {}
    for g in groups:
        sizes[g] = sizes.get(g, 0) + 1
    assert r["bcubed"]["precision"] == 1.0
    assert r["bcubed"]["recall"] == pytest.approx(sum(1 / sizes[g] for g in groups) / n)
    assert r["ari"] == pytest.approx(0.0, abs=1e-9)
    # Chains are followed: c -> b -> a is one cluster.
    chain = tmp_path / "chain.jsonl"
    chain.write_text('{"id": "b", "duplicate_of": "a"}\n{"id": "c", "duplicate_of": "b"}\n')
    gold_abc = tmp_path / "gold.jsonl"
    gold_abc.write_text('{"ids": ["a", "b", "c"]}\n{"ids": ["d"]}\n')
    code, out, _ = run(capsys, "eval", "clusters", str(chain), "--gold", str(gold_abc), "--json")
    assert code == 0 and json.loads(out)["ari"] == 1.0
    # No predicted id among the gold ids: the scores compare unrelated sets, and it says so.
    other = tmp_path / "other.jsonl"
    other.write_text('{"id": "x", "duplicate_of": "y"}\n{"id": "z", "duplicate_of": null}\n')
    code, _, err = run(capsys, "eval", "clusters", str(other), "--gold", str(gold_abc))
    assert code == 0 and "warning: no id of" in err
    _, _, err = run(capsys, "eval", "clusters", str(chain), "--gold", str(gold_abc))
    assert "warning" not in err


def test_errors_are_clear(
    synth_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    labels, docs = str(synth_dir / "labels.jsonl"), str(synth_dir / "docs.jsonl")
    code, _, err = run(capsys, "eval", "pairs", labels, "--docs", docs, "--method", "nope")
    assert code == 2 and "unknown method" in err and "Traceback" not in err
    code, _, err = run(capsys, "eval", "pairs", labels, "--docs", str(tmp_path / "missing.jsonl"))
    assert code == 66 and "no such file" in err
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id1": "a", "id2": "b", "label": "duplicate"}\nnot json\n')
    code, _, err = run(capsys, "eval", "pairs", str(bad), "--docs", docs)
    assert code == 65 and "bad.jsonl:2" in err
    unknown = tmp_path / "unknown.jsonl"
    unknown.write_text('{"id1": "zz1", "id2": "zz2", "label": 1}\n')
    code, _, err = run(capsys, "eval", "pairs", str(unknown), "--docs", docs)
    assert code == 66 and "no document" in err
    code, _, err = run(capsys, "synth", str(tmp_path / "none.jsonl"), "-o", str(tmp_path / "o"))
    assert code == 66


def test_eval_stream_reads_the_stream_and_the_rule(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    story = (
        "The city council voted on Tuesday to build a new bridge over the river, ending a "
        "dispute that had divided residents of the two old quarters for a decade. Engineers "
        "said construction would start next spring and take about three years to finish."
    )
    other = (
        "A storm swept across the northern coast overnight, bringing down power lines and "
        "flooding several villages where residents were moved to schools and sports halls."
    )
    docs = [
        {"id": "a", "text": story, "date": "2024-01-01T00:00:00Z"},
        {"id": "b", "text": story + " Officials agreed.", "date": "2024-01-02T00:00:00Z"},
        {"id": "c", "text": other, "date": "2024-01-03T00:00:00Z"},
    ]
    (tmp_path / "docs.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    labels = [
        {"id1": "a", "id2": "b", "label": "duplicate"},
        {"id1": "a", "id2": "c", "label": "unrelated"},
    ]
    (tmp_path / "labels.jsonl").write_text("".join(json.dumps(x) + "\n" for x in labels))
    code, out, _ = run(
        capsys,
        "eval",
        "stream",
        str(tmp_path / "labels.jsonl"),
        "--docs",
        str(tmp_path / "docs.jsonl"),
        "--json",
    )
    result = json.loads(out)
    assert code == 0 and result["pairs"] == 2 and result["agreement_with_rule"] == 1.0
    assert result["stream"]["duplicate"]["f1"] == 1.0 == result["same_group"]["f1"]
    (tmp_path / "bad.jsonl").write_text(json.dumps({"id1": "a", "id2": "b", "label": "x"}) + "\n")
    code, _, err = run(
        capsys,
        "eval",
        "stream",
        str(tmp_path / "bad.jsonl"),
        "--docs",
        str(tmp_path / "docs.jsonl"),
    )
    assert code == 65 and "unknown label" in err
