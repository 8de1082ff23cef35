"""``neardup ingest``: one JSON decision per article, bad lines reported with their file and
line and skipped (or stopping), empty texts counted, idempotent reruns, summary, exit codes."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from neardup.cli import cli
from neardup.errors import NearDupError
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


class Result:
    """A CliRunner result with the exit code ``neardup.cli.main`` gives a neardup error."""

    def __init__(self, raw: Any) -> None:
        self.stdout, self.exception = raw.stdout, raw.exception
        self.stderr = raw.stderr + (f"\n{raw.exception}" if raw.exception else "")
        error = raw.exception
        self.exit_code = error.exit_code if isinstance(error, NearDupError) else raw.exit_code


def invoke(*args: str, input: str | None = None) -> Result:
    return Result(CliRunner().invoke(cli, list(args), input=input))


def test_ingest_prints_decisions_and_reports_bad_lines(input_file: Path, tmp_path: Path) -> None:
    store = str(tmp_path / "s.db")
    res = invoke("ingest", str(input_file), "--store", store, "--on-error", "skip")
    assert res.exit_code == 0, res.stderr
    out = [json.loads(line) for line in res.stdout.splitlines()]
    assert len(out) == 101 and all(set(d) == KEYS for d in out)
    assert out[-1]["id"] == "copy-of-3" and out[-1]["status"] == "duplicate"
    assert out[-1]["duplicate_of"] == out[3]["id"]
    assert {d["status"] for d in out} <= {"new", "duplicate", "similar"}
    for n in (51, 52, 53, 55):
        assert f"skipped {input_file}:{n}:" in res.stderr
    assert f"{input_file}:54" not in res.stderr  # blank text: counted as empty, not an error
    assert "missing its 'text' field" in res.stderr and "not valid JSON" in res.stderr
    assert "4 malformed lines skipped" in res.stderr and "101 articles" in res.stderr
    assert "1 with empty text (not stored)" in res.stderr
    assert open_store(store).count() == 101

    again = invoke("ingest", str(input_file), "--store", store, "--on-error", "skip")
    assert again.stdout == res.stdout  # same decisions, nothing counted twice
    assert "101 already stored" in again.stderr
    assert open_store(store).count() == 101


def test_cache_size_changes_no_decision(input_file: Path, tmp_path: Path) -> None:
    runs = [
        invoke("ingest", str(input_file), "--store", str(tmp_path / f"{mb}.db"), "--on-error",
               "skip", "--cache-mb", str(mb))
        for mb in (0, 1, 512)
    ]  # fmt: skip
    assert all(r.exit_code == 0 for r in runs), [r.stderr for r in runs]
    assert runs[0].stdout == runs[1].stdout == runs[2].stdout
    bad = invoke("ingest", str(input_file), "--store", str(tmp_path / "x.db"), "--cache-mb", "-1")
    assert bad.exit_code == 2 and "--cache-mb" in bad.stderr


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
    assert f"{input_file}:51:" in res.stderr and f"{input_file}:52:" not in res.stderr
    assert open_store(store).count() == 50
    # stop is the default
    res = invoke("ingest", str(input_file), "--store", str(tmp_path / "t.db"))
    assert res.exit_code == 65 and f"{input_file}:51: " in str(res.exception)


def test_clean_gzip_input_and_stdin(reuters_docs: list[dict[str, Any]], tmp_path: Path) -> None:
    docs = [d for d in reuters_docs[:40] if d["text"].strip()]
    path = tmp_path / "in.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.writelines(json.dumps(d) + "\n" for d in docs)
    res = invoke("ingest", str(path), "--store", str(tmp_path / "g.db"), "--no-progress")
    assert res.exit_code == 0, res.stderr
    assert len(res.stdout.splitlines()) == len(docs)
    text = "".join(json.dumps(d) + "\n" for d in docs)
    res2 = invoke("ingest", "-", "--store", str(tmp_path / "stdin.db"), input=text)
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
    assert res.exit_code == 66
    assert "absent.jsonl" in (res.stderr + str(res.exception))
    assert not (tmp_path / "s.db").exists()  # nothing created for a missing input
    (tmp_path / "in.jsonl").write_text('{"id": "a", "text": "words"}\n')
    res = invoke("ingest", str(tmp_path / "in.jsonl"), "--store", "mysql://x/y")
    assert res.exit_code == 2


def test_main_maps_store_errors_to_exit_codes(tmp_path: Path) -> None:
    from neardup.cli import main

    (tmp_path / "in.jsonl").write_text('{"id": "a", "text": "words"}\n')
    with pytest.raises(SystemExit) as info:
        main(["ingest", str(tmp_path / "in.jsonl"), "--store", str(tmp_path / "no/dir/s.db")])
    assert info.value.code == 74


def test_reuters_brief_items_are_counted_as_empty_not_errors(
    reuters_docs: list[dict[str, Any]], tmp_path: Path
) -> None:
    # The first 300 Reuters-21578 documents as they come, BRIEF items (a title, no body)
    # included: a clean run by default, the BRIEFs counted as empty.
    docs = reuters_docs[:300]
    briefs = sum(1 for d in docs if not d["text"].strip())
    assert briefs > 0
    path = tmp_path / "reuters.jsonl"
    path.write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    res = invoke("ingest", str(path), "--store", str(tmp_path / "r.db"))
    assert res.exit_code == 0, res.stderr
    assert f"{briefs} with empty text (not stored)" in res.stderr
    assert "0 malformed lines skipped" in res.stderr
    assert len(res.stdout.splitlines()) == 300 - briefs
