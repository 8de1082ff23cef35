"""``neardup dedup`` / ``neardup pairs``: outputs, summary, edge cases and exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from neardup.batch.io import check_complete
from neardup.cli import main

STORY = (
    "The central bank raised its key interest rate by half a point on Tuesday, citing rising "
    "inflation and a weaker currency, and said further increases were possible if price "
    "pressures did not ease in the coming months."
)
OTHER = (
    "Crude oil prices fell sharply in early trading after producers agreed to lift output "
    "quotas, traders said, with benchmark futures down more than two dollars a barrel."
)


def _corpus(tmp_path: Path, extra_lines: list[str] | None = None) -> Path:
    rows = [
        {"doc": "a", "body": STORY, "when": "1987-03-02T00:00:00Z", "keepme": [1, 2]},
        {"doc": "b", "body": STORY + " Analysts expected it.", "when": "1987-03-01T00:00:00Z"},
        {"doc": "c", "body": OTHER, "when": None},
    ]
    lines = [json.dumps(r) for r in rows] + (extra_lines or [])
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _exit_code(argv: list[str]) -> int:
    try:
        main(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


FIELDS = ["--id-field", "doc", "--text-field", "body", "--date-field", "when"]


def test_dedup_command_writes_rows_kept_and_summary(tmp_path: Path, capsys) -> None:
    src = _corpus(tmp_path)
    out = tmp_path / "out.jsonl"
    kept = tmp_path / "kept.jsonl"
    argv = ["dedup", str(src), "-o", str(out), "--write-kept", str(kept), *FIELDS]
    assert _exit_code(argv) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert rows == [
        {"id": "a", "cluster": "b", "duplicate_of": "b", "score": rows[0]["score"]},
        {"id": "b", "cluster": "b", "duplicate_of": None, "score": None},
        {"id": "c", "cluster": "c", "duplicate_of": None, "score": None},
    ]
    assert 0.5 <= rows[0]["score"] <= 1.0  # the rule's score of a duplicate
    kept_rows = [json.loads(line) for line in kept.read_text().splitlines()]
    assert [r["doc"] for r in kept_rows] == ["b", "c"]
    check_complete(out)
    check_complete(kept)
    err = capsys.readouterr().err
    for word in ("documents: 3", "clusters: 2", "removed: 1", "duplicate 1", "time:"):
        assert word in err
    # --driver-reads (the driver parses instead of the range readers): the same rows.
    again = tmp_path / "again.jsonl"
    argv = ["dedup", str(src), "-o", str(again), "--driver-reads", "--no-progress", *FIELDS]
    assert _exit_code(argv) == 0
    assert again.read_bytes() == out.read_bytes()


def test_keep_first_and_existing_output(tmp_path: Path, capsys) -> None:
    src = _corpus(tmp_path)
    out = tmp_path / "out.jsonl"
    argv = ["dedup", str(src), "-o", str(out), "--no-progress", *FIELDS]
    assert _exit_code([*argv, "--keep", "first"]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert rows[1]["duplicate_of"] == "a"
    err = capsys.readouterr().err
    assert "documents: 3" in err and "\r" not in err  # no progress bar off a terminal
    # an existing output is kept unless --force
    before = out.read_bytes()
    assert _exit_code([*argv, "--keep", "earliest"]) == 2
    assert "add --force" in capsys.readouterr().err and out.read_bytes() == before
    assert _exit_code([*argv, "--keep", "earliest", "--force"]) == 0
    assert out.read_bytes() != before
    check_complete(out)


def test_pairs_command(tmp_path: Path, capsys) -> None:
    src = _corpus(tmp_path)
    out = tmp_path / "pairs.jsonl"
    argv = ["pairs", str(src), "-o", str(out), "--no-progress", *FIELDS]
    assert _exit_code(argv) == 0
    (row,) = [json.loads(line) for line in out.read_text().splitlines()]
    err = capsys.readouterr().err
    assert "pairs written: 1" in err and "removed" not in err  # pairs removes nothing
    assert (row["id_a"], row["id_b"]) == ("a", "b")
    assert row["relation"] == "duplicate"  # a is wholly in b, which adds one sentence
    assert row["features"]["coverage_a"] == 1.0
    assert set(row) == {"id_a", "id_b", "relation", "score", "features"}


def test_against_option(tmp_path: Path) -> None:
    src = _corpus(tmp_path)
    old = tmp_path / "old.jsonl"
    old.write_text(json.dumps({"doc": "old-c", "body": OTHER}) + "\n")
    out = tmp_path / "out.jsonl"
    argv = ["dedup", str(src), "-o", str(out), "--against", str(old), "--no-progress", *FIELDS]
    assert _exit_code(argv) == 0
    rows = {r["id"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert set(rows) == {"a", "b", "c"}
    assert rows["c"]["duplicate_of"] == "old-c"


def test_malformed_line_exit_65_with_line_number(tmp_path: Path, capsys) -> None:
    src = _corpus(tmp_path, extra_lines=["{broken"])
    out = tmp_path / "out.jsonl"
    assert _exit_code(["dedup", str(src), "-o", str(out), "--no-progress", *FIELDS]) == 65
    err = capsys.readouterr().err
    assert f"{src}:4: not valid JSON" in err
    assert "Traceback" not in err
    assert not out.exists()
    assert not out.with_name(out.name + ".work").exists()  # nothing left to resume
    assert _exit_code(["dedup", str(src), "-o", str(out), "--on-error", "skip", *FIELDS]) == 0
    err = capsys.readouterr().err
    assert "malformed lines skipped: 1" in err
    assert f"{src}:4" in err
    assert len(out.read_text().splitlines()) == 3


def test_non_utf8_and_duplicate_ids(tmp_path: Path, capsys) -> None:
    src = _corpus(tmp_path)
    with src.open("ab") as fh:
        fh.write(b'{"doc": "x", "body": "caf\xe9"}\n')
        fh.write(json.dumps({"doc": "a", "body": "again"}).encode() + b"\n")
    out = tmp_path / "out.jsonl"
    assert _exit_code(["dedup", str(src), "-o", str(out), "--no-progress", *FIELDS]) == 65
    assert "not valid UTF-8" in capsys.readouterr().err
    assert _exit_code(["dedup", str(src), "-o", str(out), "--on-error", "skip", *FIELDS]) == 0
    err = capsys.readouterr().err
    assert "malformed lines skipped: 1" in err
    assert "duplicate ids skipped: 1" in err


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["--lsh-threshold", "1.5"], 2),
        (["--lsh-threshold", "0"], 2),
        (["--candidates", "nope"], 2),
        (["--candidates", ""], 2),
        (["--keep", "random"], 2),
        (["--clusters", "cliques"], 2),
        (["--num-perm", "1"], 2),
        (["--workers", "abc"], 2),
    ],
)
def test_bad_options_exit_2(tmp_path: Path, args: list[str], code: int) -> None:
    src = _corpus(tmp_path)
    assert _exit_code(["dedup", str(src), "-o", str(tmp_path / "o.jsonl"), *args, *FIELDS]) == code


def test_missing_input_exit_66_and_missing_output_option(tmp_path: Path) -> None:
    assert _exit_code(["dedup", str(tmp_path / "none.jsonl"), "-o", str(tmp_path / "o")]) == 66
    assert _exit_code(["dedup", str(_corpus(tmp_path))]) == 2


def test_missing_text_field_is_exit_65(tmp_path: Path, capsys) -> None:
    src = _corpus(tmp_path)  # default field names do not exist in this corpus
    assert _exit_code(["dedup", str(src), "-o", str(tmp_path / "o.jsonl")]) == 65
    assert "missing its 'id' field" in capsys.readouterr().err


def test_unreachable_scheduler_exit_74(tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.setattr("neardup.batch.engine.SCHEDULER_TIMEOUT", "1s")
    src = _corpus(tmp_path)
    argv = ["dedup", str(src), "-o", str(tmp_path / "o.jsonl"), "--no-progress", *FIELDS]
    assert _exit_code([*argv, "--scheduler", "tcp://127.0.0.1:9"]) == 74
    assert "Dask scheduler" in capsys.readouterr().err


def test_chained_duplicates_and_clusters_option(tmp_path: Path) -> None:
    """b (the story alone) is a duplicate of a and of c (the story with two different
    follow-ups), but a and c share only the story: a partial copy. Centers keep c apart;
    components join the chain."""
    tail_a = (
        " The finance ministry welcomed the decision in a statement, while opposition leaders "
        "said households would pay for years of loose policy and rising debts. Exporters "
        "warned that a stronger currency would cut their sales abroad within months, and "
        "unions called for wage talks to begin before the summer holidays."
    )
    tail_c = (
        " In the markets, government bond yields climbed to their highest level since the "
        "spring, and the currency gained against the dollar and the euro. Banks were expected "
        "to raise mortgage rates by the end of the week, brokers said, adding that house "
        "prices could fall in the second half of the year."
    )
    rows = [
        {"doc": "a", "body": STORY + tail_a, "when": "1987-03-01T00:00:00Z"},
        {"doc": "b", "body": STORY, "when": "1987-03-02T00:00:00Z"},
        {"doc": "c", "body": STORY + tail_c, "when": "1987-03-03T00:00:00Z"},
    ]
    src = tmp_path / "chain.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    from neardup.rule import judge

    assert judge(rows[0]["body"], rows[1]["body"]).label == "duplicate"
    assert judge(rows[1]["body"], rows[2]["body"]).label == "duplicate"
    assert judge(rows[0]["body"], rows[2]["body"]).label == "partial"
    out = {}
    for how in ("centers", "components"):
        path = tmp_path / f"{how}.jsonl"
        argv = ["dedup", str(src), "-o", str(path), "--clusters", how, "--no-progress", *FIELDS]
        assert _exit_code(argv) == 0
        lines = path.read_text().splitlines()
        out[how] = {r["id"]: r["duplicate_of"] for r in map(json.loads, lines)}
    assert out["components"] == {"a": None, "b": "a", "c": "a"}
    assert out["centers"] == {"a": None, "b": "a", "c": None}
