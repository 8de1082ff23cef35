"""``neardup ingest``: one JSON decision per article, bad lines reported with line numbers
and skipped (or stopping), idempotent reruns, summary, exit codes."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from neardup.cli import cli
from neardup.store import open_store

KEYS = {"id", "status", "duplicate_of", "similar", "event"}


@pytest.fixture()
def input_file(reuters_docs: list[dict[str, Any]], tmp_path: Path) -> Path:
    docs = [d for d in reuters_docs[:120] if d["text"].strip()][:100]
    copy = {**docs[3], "id": "copy-of-3", "date": "1987-03-30T10:00:00"}
    lines = [json.dumps(d) for d in docs[:50]]
    lines += [
        '{"id": "no-text"}',
        "this is not json",
        '{"id": "bad-date", "text": "Some words here.", "date": "tomorrow-ish"}',
        '{"id": "empty", "text": "  "}',
        "[1, 2]",
        "",
    ]
    lines += [json.dumps(d) for d in docs[50:]] + [json.dumps(copy)]
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def invoke(*args: str) -> Any:
    return CliRunner().invoke(cli, list(args))


def test_ingest_prints_decisions_and_reports_bad_lines(input_file: Path, tmp_path: Path) -> None:
    store = str(tmp_path / "s.db")
    res = invoke("ingest", str(input_file), "--store", store)
    assert res.exit_code == 65, res.stderr
    out = [json.loads(line) for line in res.stdout.splitlines()]
    assert len(out) == 101 and all(set(d) == KEYS for d in out)
    assert out[-1]["id"] == "copy-of-3" and out[-1]["status"] == "duplicate"
    assert out[-1]["duplicate_of"] == out[3]["id"]
    assert {d["status"] for d in out} <= {"new", "duplicate", "similar"}
    for n in (51, 52, 53, 54, 55):
        assert f"line {n}:" in res.stderr
    assert "missing its 'text' field" in res.stderr and "not valid JSON" in res.stderr
    assert "5 skipped with errors" in res.stderr and "101 articles" in res.stderr
    assert open_store(store).count() == 101

    again = invoke("ingest", str(input_file), "--store", store)
    assert again.stdout == res.stdout  # same decisions, nothing counted twice
    assert "101 already stored" in again.stderr
    assert open_store(store).count() == 101


def test_on_error_stop_and_evidence(input_file: Path, tmp_path: Path) -> None:
    store = str(tmp_path / "s.db")
    res = invoke(
        "ingest",
        str(input_file),
        "--store",
        store,
        "--on-error",
        "stop",
        "--batch-size",
        "10",
        "--evidence",
    )
    assert res.exit_code == 65
    out = [json.loads(line) for line in res.stdout.splitlines()]
    assert len(out) == 50 and "matches" in out[0]
    assert "line 51:" in res.stderr and "line 52:" not in res.stderr
    assert open_store(store).count() == 50


def test_clean_gzip_input_and_stdin(reuters_docs: list[dict[str, Any]], tmp_path: Path) -> None:
    docs = [d for d in reuters_docs[:40] if d["text"].strip()]
    path = tmp_path / "in.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.writelines(json.dumps(d) + "\n" for d in docs)
    res = invoke("ingest", str(path), "--store", str(tmp_path / "g.db"), "--no-progress")
    assert res.exit_code == 0, res.stderr
    assert len(res.stdout.splitlines()) == len(docs)
    text = "".join(json.dumps(d) + "\n" for d in docs)
    res2 = CliRunner().invoke(
        cli, ["ingest", "-", "--store", str(tmp_path / "stdin.db")], input=text
    )
    assert res2.exit_code == 0 and res2.stdout == res.stdout
    res3 = invoke(
        "ingest",
        str(path),
        "--store",
        str(tmp_path / "l.db"),
        "--window-days",
        "30",
    )
    assert res3.exit_code == 0, res3.stderr
    assert [json.loads(x)["id"] for x in res3.stdout.splitlines()] == [d["id"] for d in docs]


def test_missing_input_and_bad_store(tmp_path: Path) -> None:
    res = invoke("ingest", str(tmp_path / "absent.jsonl"), "--store", str(tmp_path / "s.db"))
    assert res.exit_code != 0
    assert "absent.jsonl" in (res.stderr + str(res.exception))
    (tmp_path / "in.jsonl").write_text('{"id": "a", "text": "words"}\n')
    res = invoke("ingest", str(tmp_path / "in.jsonl"), "--store", "mysql://x/y")
    assert res.exit_code != 0


def test_main_maps_store_errors_to_exit_codes(tmp_path: Path) -> None:
    from neardup.cli import main

    (tmp_path / "in.jsonl").write_text('{"id": "a", "text": "words"}\n')
    with pytest.raises(SystemExit) as info:
        main(["ingest", str(tmp_path / "in.jsonl"), "--store", str(tmp_path / "no/dir/s.db")])
    assert info.value.code == 74
