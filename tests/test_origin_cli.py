"""``neardup origin``: output rows, bad input, --order date, --state continuity."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from neardup.cli import cli
from neardup.errors import NearDupError

BASE = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho"


def write(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def run(args: list[str]) -> tuple[int, list[dict[str, Any]], str]:
    """Invoke like ``neardup.cli.main``: a NearDupError exits with its exit code."""
    result = CliRunner().invoke(cli, ["origin", *args])
    out = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    code = result.exit_code
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        if not isinstance(result.exception, NearDupError):
            raise result.exception
        code = result.exception.exit_code
    return code, out, result.stderr


def test_rows_and_segments(tmp_path: Path) -> None:
    copied = "one two three four five six seven eight nine ten eleven twelve"
    rows = [
        {"id": "a", "text": f"{BASE} {copied}", "date": "2020-01-01"},
        {"id": "b", "text": f"Fresh start words here. {copied}", "date": "2020-01-02"},
        {"id": "short", "text": "too short", "date": "2020-01-03"},
        {"id": "empty", "text": "", "date": "2020-01-04"},
    ]
    code, out, err = run(
        [
            str(write(tmp_path / "in.jsonl", rows)),
            "--selection",
            "all",
            "--overlap",
            "--memory",
            "1MB",
        ]
    )
    assert code == 0, err
    assert [r["id"] for r in out] == ["a", "b", "short", "empty"]
    b = out[1]
    text = rows[1]["text"]
    copied_segs = [s for s in b["segments"] if s["origin"] == "a"]
    assert [text[s["start"] : s["end"]] for s in copied_segs] == [copied]
    assert b["fresh_tokens"] == 4 and b["tokens"] == 16
    assert b["dominant_origin"] == "a" and b["copied_fraction"] == pytest.approx(12 / 16)
    assert out[2]["fresh_tokens"] == 2 and out[2]["dominant_origin"] == "short"
    assert out[3] == {
        "id": "empty",
        "dominant_origin": "empty",
        "most_copied_origin": "empty",
        "copied_fraction": 0.0,
        "segments": [],
        "tokens": 0,
        "fresh_tokens": 0,
    }
    assert "4 documents" in err


def test_bad_lines_skip_and_stop(tmp_path: Path) -> None:
    rows = [
        "not json",
        {"id": "a", "text": BASE},
        {"text": "no id"},
        {"id": "a", "text": "again"},
        {"id": "c", "text": BASE, "date": "yesterday"},
        {"id": "d", "text": BASE},
    ]
    path = write(tmp_path / "in.jsonl", rows)
    code, out, err = run([str(path), "--memory", "1MB", "--on-error", "skip"])
    assert code == 0
    assert [r["id"] for r in out] == ["a", "d"]
    assert f"{path}:1: not valid JSON" in err and f"{path}:4: " in err
    assert "already processed" in err and "4 malformed lines skipped" in err
    for args in ([], ["--on-error", "stop"]):  # stop is the default
        code, out, err = run([str(path), "--memory", "1MB", *args])
        assert code == 65 and out == []


def test_memory_too_small(tmp_path: Path) -> None:
    path = write(tmp_path / "in.jsonl", [{"id": "a", "text": BASE}])
    result = CliRunner().invoke(cli, ["origin", str(path), "--memory", "500B"])
    assert "too small for one bucket" in str(result.exception)
    result = CliRunner().invoke(cli, ["origin", str(path), "--memory", "lots"])
    assert "not like 100MB" in str(result.exception)


def test_order_date_and_state(tmp_path: Path) -> None:
    rows = [
        {"id": "late", "text": f"copy: {BASE}", "date": "2020-01-05"},
        {"id": "early", "text": BASE, "date": "2020-01-01"},
        {"id": "nodate", "text": BASE},
    ]
    args = ["--order", "date", "--memory", "1MB", "--on-error", "skip"]
    code, out, err = run([str(write(tmp_path / "in.jsonl", rows)), *args])
    assert code == 0 and "needs a date" in err
    assert [r["id"] for r in out] == ["early", "late"]
    assert out[1]["dominant_origin"] == "early"
    # continuing a stream with a state file; an older document is refused
    state = tmp_path / "state.npz"
    first = write(tmp_path / "1.jsonl", rows[1:2])
    second = write(
        tmp_path / "2.jsonl", [rows[0], {"id": "old", "text": "x y", "date": "2019-01-01"}]
    )
    assert run([str(first), "--order", "date", "--state", str(state), "--memory", "1MB"])[0] == 0
    code, out, err = run(
        [str(second), "--order", "date", "--state", str(state), "--on-error", "skip"]
    )
    assert code == 0 and "before the last processed" in err
    assert [r["id"] for r in out] == ["late"] and out[0]["dominant_origin"] == "early"
    code, _, err = run([str(second), "--state", str(state), "--memory", "2MB"])
    assert code == 2  # ConfigError: the state was made with another memory size


def test_state_split_equals_one_run(tmp_path: Path, reuters_docs: list[dict[str, Any]]) -> None:
    rows = [{"id": d["id"], "text": d["text"]} for d in reuters_docs[:400] if d["text"]]
    half = len(rows) // 2
    whole = write(tmp_path / "all.jsonl", rows)
    code, full, _ = run([str(whole), "--memory", "200KB"])
    assert code == 0
    state = tmp_path / "s.npz"
    _, a, _ = run(
        [str(write(tmp_path / "a.jsonl", rows[:half])), "--memory", "200KB", "--state", str(state)]
    )
    _, b, _ = run([str(write(tmp_path / "b.jsonl", rows[half:])), "--state", str(state)])
    assert a + b == full


def test_small_memory_extensions_match_the_api(
    tmp_path: Path, reuters_docs: list[dict[str, Any]]
) -> None:
    """The small-memory options reach the engine: the CLI's rows equal the Python API's."""
    from neardup.detect.origin import OriginConfig, OriginDetector

    rows = [{"id": d["id"], "text": d["text"]} for d in reuters_docs[:300] if d["text"]]
    flags = {"bridge_tolerance": 2, "edge_extension": 2, "fingerprint_bytes": 3, "origin_bytes": 4}
    args = [str(write(tmp_path / "in.jsonl", rows)), "--memory", "64KB", "--bridge-limit", "255"]
    for name, value in flags.items():
        args += ["--" + name.replace("_", "-"), str(value)]
    code, out, err = run(args)
    assert code == 0, err
    assert "packed(3+4 B)" in err
    config = OriginConfig(memory_bytes=64 * 1000, bridge_limit=255, **flags)
    detector = OriginDetector(config)
    expected = [detector.process(r["id"], r["text"]).to_dict() for r in rows]
    assert out == json.loads(json.dumps(expected))
    # the extensions change the result on this stream (else the test shows nothing)
    plain, _, _ = run(args[:5])
    assert plain != out
    result = CliRunner().invoke(cli, ["origin", args[0], "--fingerprint-bytes", "5"])
    assert isinstance(result.exception, NearDupError) and result.exception.exit_code == 2
    assert "fingerprint_bytes" in str(result.exception)
