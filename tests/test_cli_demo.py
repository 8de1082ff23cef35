"""``neardup demo``: a result set with planted copies, deduplicated and explained (real
Reuters articles when the shared data is there, the synthetic sample stories otherwise)."""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import data_path
from neardup.cli import cli, main
from neardup.cli.demo import EDITS, edit_text, plant_copies


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["demo", *args], catch_exceptions=False)
    return result.exit_code, result.output


def test_demo_on_real_data_finds_the_planted_copies() -> None:
    path = data_path("reuters21578", "docs.jsonl.gz")
    code, out = run("--data", str(path), "--json", "--size", "60", "--copies", "8", "--seed", "4")
    assert code == 0
    report = json.loads(out)
    assert report["result_set_size"] == 68 and report["planted_copies"] == 8
    assert report["sketch"] == "coverage"  # the product's default signature
    # The oracle: the rule's verdict on the two full texts.  Every planted copy it calls a
    # duplicate is removed, and every one removed really pointed to an earlier rank.
    for p in report["planted"]:
        if p["exact_verdict"] == "duplicate":
            assert p["removed"], p
    for d in report["duplicates"]:
        assert d["of"] < d["position"]
    assert report["dedup_us"]["median"] > 0


def test_demo_with_the_sentence_sketch_follows_its_threshold() -> None:
    path = data_path("reuters21578", "docs.jsonl.gz")
    args = ("--data", str(path), "--json", "--size", "60", "--copies", "8", "--seed", "4")
    code, out = run(*args, "--sketch", "sentences")
    assert code == 0
    report = json.loads(out)
    assert report["sketch"] == "sentences" and report["threshold"] == 0.5
    # Every planted copy whose exact sentence Jaccard clears the threshold by the sketch's
    # error margin is removed.
    for p in report["planted"]:
        if p["exact_sentence_jaccard"] >= 0.55:
            assert p["removed"], p
    code, _ = run(*args, "--threshold", "0.4")
    assert code == 2  # a threshold has no meaning for the coverage sketch


def test_demo_text_output_is_deterministic() -> None:
    path = data_path("reuters21578", "docs.jsonl.gz")
    code, out = run("--data", str(path), "--size", "30", "--copies", "4")
    assert code == 0
    assert "planted copies found" in out and "kept" in out
    _, again = run("--data", str(path), "--size", "30", "--copies", "4")
    strip = [line for line in out.splitlines() if "us" not in line]
    assert strip == [line for line in again.splitlines() if "us" not in line]


def test_demo_missing_data_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["demo", "--data", str(tmp_path / "nope.jsonl.gz")])
    assert exc.value.code == 66
    assert "no data at" in capsys.readouterr().err


def test_demo_bad_file_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "docs.jsonl.gz"
    with gzip.open(bad, "wt") as fh:
        fh.write("not json\n")
    with pytest.raises(SystemExit) as exc:
        main(["demo", "--data", str(bad)])
    assert exc.value.code == 65
    assert "docs.jsonl.gz:1: not valid JSON" in capsys.readouterr().err
    empty = tmp_path / "empty.jsonl.gz"
    with gzip.open(empty, "wt") as fh:
        fh.write(json.dumps({"id": "1", "text": "short"}) + "\n")
    with pytest.raises(SystemExit) as exc:
        main(["demo", "--data", str(empty)])
    assert exc.value.code == 65


def test_demo_without_shared_data_uses_the_sample_stories(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A bare machine: no ../shared/data from here, NEARDUP_DATA pointing at an empty folder
    # (so the source checkout's neighbour is the only other place, and it must not count).
    import neardup.samples as samples

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(samples, "data_folders", lambda: [tmp_path / "nothing"])
    code, out = run("--json", "--copies", "6")
    assert code == 0
    report = json.loads(out)
    assert "synthetic sample stories" in report["data"]
    assert report["articles"] == 12 and report["planted_copies"] == 6
    assert report["planted_found"] >= 3  # resends, corrections and trims are found
    # a planted copy is shown under its own id, never under its original's
    ids = [d["id"] for d in report["duplicates"]]
    assert all("~" in i for i in ids) and len(set(ids)) == len(ids)
    assert all(d["id"].split("~")[0] == d["of_id"] for d in report["duplicates"])
    code, text = run("--copies", "6")
    assert code == 0 and "synthetic sample stories" in text.splitlines()[0]


def test_plant_copies_is_deterministic_and_labelled() -> None:
    texts = [
        f"Story {n} begins here. It has a second sentence. And a third one {n}." for n in range(6)
    ]
    a = plant_copies(texts, 4, seed=9)
    assert a == plant_copies(texts, 4, seed=9)
    ranked, labels, planted = a
    assert len(ranked) == 10 and len(planted) == 4
    for p in planted:
        assert p.original < p.position
        assert labels[p.original] == f"orig:{labels[p.position].split(':')[1]}"
        assert p.edit in EDITS


def test_edits_do_what_they_say() -> None:
    text = "One two three. Four five six. Seven eight nine. Ten eleven twelve."
    rng = random.Random(1)
    assert edit_text(text, "resend", rng).endswith(text)
    assert edit_text(text, "trimmed", rng) == "One two three. Four five six. Seven eight nine."
    corrected = edit_text(text, "correction", rng)
    assert len(corrected.split()) == len(text.split()) + 1
    rewritten = edit_text(text, "rewritten", rng)
    assert len(rewritten.split()) == len(text.split()) + 3
