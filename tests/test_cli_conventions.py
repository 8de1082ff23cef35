"""One convention for every command (docs/cli.md): the same exit code for the same class of
failure, ``--on-error stop|skip`` with stop by default, ``--force`` to replace an output, a
warning and a summary for an empty input, no traceback.  Every case runs through
``neardup.cli.main`` exactly as the console command does."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import run_cli
from neardup.samples import sample_corpus

Case = Callable[[Path], list[str]]

GOOD = sample_corpus()[:14]
BAD_LINE = '{"id": "oops", "text": 5}'


run = run_cli


def corpus(tmp: Path, bad_at: int | None = None, name: str = "in.jsonl") -> Path:
    lines = [json.dumps(row) for row in GOOD]
    if bad_at is not None:
        lines.insert(bad_at - 1, BAD_LINE)
    path = tmp / name
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def labels(tmp: Path, bad_at: int | None = None) -> Path:
    rows = [
        json.dumps({"id1": GOOD[i]["id"], "id2": GOOD[i + 1]["id"], "label": "different"})
        for i in range(4)
    ]
    if bad_at is not None:
        rows.insert(bad_at - 1, "{not json")
    path = tmp / "labels.jsonl"
    path.write_text("".join(r + "\n" for r in rows), encoding="utf-8")
    return path


def clusters(tmp: Path, bad_at: int | None = None) -> Path:
    rows = [json.dumps({"id": row["id"], "cluster": row["id"]}) for row in GOOD]
    if bad_at is not None:
        rows.insert(bad_at - 1, "[1, 2]")
    path = tmp / ("clusters.jsonl" if bad_at is None else "bad-clusters.jsonl")
    path.write_text("".join(r + "\n" for r in rows), encoding="utf-8")
    return path


# Each command reading articles, as a function of (input, tmp folder) -> argv.
READERS: dict[str, Callable[[Path, Path], list[str]]] = {
    "ingest": lambda src, tmp: ["ingest", str(src), "--store", str(tmp / "s.db")],
    "dedup": lambda src, tmp: ["dedup", str(src), "-o", str(tmp / "out.jsonl")],
    "pairs": lambda src, tmp: ["pairs", str(src), "-o", str(tmp / "out.jsonl")],
    "origin": lambda src, tmp: ["origin", str(src), "-o", str(tmp / "out.jsonl")],
    "synth": lambda src, tmp: ["synth", str(src), "-o", str(tmp / "synth"), "--min-words", "20"],
}

# Every command, with an input that does not exist.
MISSING: dict[str, Case] = {
    **{name: (lambda tmp, f=f: f(tmp / "absent.jsonl", tmp)) for name, f in READERS.items()},
    "align": lambda tmp: ["align", str(tmp / "absent.txt"), str(corpus(tmp))],
    "demo": lambda tmp: ["demo", "--data", str(tmp / "absent.jsonl.gz")],
    "eval pairs": lambda tmp: ["eval", "pairs", str(tmp / "absent"), "--docs", str(corpus(tmp))],
    "eval clusters": lambda tmp: [
        "eval",
        "clusters",
        str(tmp / "absent"),
        "--gold",
        str(clusters(tmp)),
    ],
    "eval stream": lambda tmp: ["eval", "stream", str(tmp / "absent"), "--docs", str(corpus(tmp))],
    "eval alignment": lambda tmp: [
        "eval",
        "alignment",
        str(tmp / "absent"),
        "--docs",
        str(corpus(tmp)),
    ],
    "serve": lambda tmp: [
        "serve",
        "--store",
        str(tmp / "s.db"),
        "--preload",
        "5",
        "--preload-path",
        str(tmp / "absent.gz"),
    ],
}


@pytest.mark.parametrize("name", sorted(MISSING))
def test_missing_input_exits_66(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = run(MISSING[name](tmp_path), capsys)
    assert code == 66, err
    assert "absent" in err or "not found" in err or "does not exist" in err
    assert not (tmp_path / "s.db").exists() and not (tmp_path / "out.jsonl").exists()


# Every command reading JSON Lines, with a malformed third line.
MALFORMED: dict[str, Case] = {
    **{name: (lambda tmp, f=f: f(corpus(tmp, bad_at=3), tmp)) for name, f in READERS.items()},
    "eval pairs": lambda tmp: ["eval", "pairs", str(labels(tmp, 3)), "--docs", str(corpus(tmp))],
    "eval clusters": lambda tmp: [
        "eval",
        "clusters",
        str(clusters(tmp, 3)),
        "--gold",
        str(clusters(tmp)),
    ],
    "eval alignment": lambda tmp: [
        "eval",
        "alignment",
        str(labels(tmp, 3)),
        "--docs",
        str(corpus(tmp)),
        "--id-fields",
        "id1,id2",
    ],
}


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_malformed_line_stops_with_file_and_line_by_default(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = run(MALFORMED[name](tmp_path), capsys)
    assert code == 65, err
    assert ".jsonl:3: " in err, err


@pytest.mark.parametrize("name", sorted(READERS))
def test_skip_mode_skips_counts_and_succeeds(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = run([*MALFORMED[name](tmp_path), "--on-error", "skip"], capsys)
    assert code == 0, err
    assert "in.jsonl:3" in err  # shown
    assert "1 malformed line skipped" in err or "malformed lines skipped: 1" in err  # counted


@pytest.mark.parametrize("name", ["dedup", "pairs", "origin", "synth"])
def test_existing_output_needs_force(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = READERS[name](corpus(tmp_path), tmp_path)
    target = Path(argv[argv.index("-o") + 1])
    assert run(argv, capsys)[0] == 0
    files = sorted(p.name for p in target.parent.iterdir())
    stamp = {p: p.stat().st_mtime_ns for p in target.parent.rglob("*")}
    code, err = run(argv, capsys)
    assert code == 2 and "--force" in err
    assert {p: p.stat().st_mtime_ns for p in target.parent.rglob("*")} == stamp  # untouched
    assert run([*argv, "--force"], capsys)[0] == 0
    assert sorted(p.name for p in target.parent.iterdir()) == files


@pytest.mark.parametrize("name", ["ingest", "dedup", "pairs", "origin"])
def test_empty_input_warns_and_summarises(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "in.jsonl"
    empty.write_text("\n\n", encoding="utf-8")
    code, err = run(READERS[name](empty, tmp_path), capsys)
    assert code == 0
    assert "warning:" in err and "holds no" in err
    assert "0 documents" in err or "documents: 0" in err or "0 articles" in err


def test_empty_texts_are_counted_not_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Wire BRIEF items have a title and no body: counted as empty by ingest as by dedup.
    rows = [*GOOD[:5], {"id": "brief-1", "text": ""}, {"id": "brief-2", "text": " \n "}]
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    code, err = run(["ingest", str(src), "--store", str(tmp_path / "s.db")], capsys)
    assert code == 0 and "2 with empty text (not stored)" in err
    code, err = run(["dedup", str(src), "-o", str(tmp_path / "d.jsonl")], capsys)
    assert code == 0 and "empty texts: 2" in err


# A store or an output that cannot be written: 74.
IO_ERRORS: dict[str, Case] = {
    "ingest": lambda tmp: ["ingest", str(corpus(tmp)), "--store", str(tmp / "no" / "s.db")],
    "serve": lambda tmp: ["serve", "--store", str(tmp / "no" / "s.db")],
    "dedup": lambda tmp: ["dedup", str(corpus(tmp)), "-o", str(corpus(tmp)) + "/out.jsonl"],
    "origin": lambda tmp: ["origin", str(corpus(tmp)), "-o", str(corpus(tmp)) + "/o.jsonl"],
    "synth": lambda tmp: ["synth", str(corpus(tmp)), "-o", str(corpus(tmp)) + "/dir"],
}


@pytest.mark.parametrize("name", sorted(IO_ERRORS))
def test_unwritable_store_or_output_exits_74(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = run(IO_ERRORS[name](tmp_path), capsys)
    assert code == 74, err


# A bad option value: 2, before anything is read or written.
USAGE: dict[str, Case] = {
    **{
        name: (lambda tmp, f=f: [*f(corpus(tmp), tmp), "--on-error", "maybe"])
        for name, f in READERS.items()
    },
    "align": lambda tmp: ["align", "-", "-"],
    "demo": lambda tmp: ["demo", "--size", "0"],
    "serve": lambda tmp: ["serve", "--port", "http"],
    "eval pairs": lambda tmp: ["eval", "pairs", str(labels(tmp)), "--id-fields", "a"],
    "eval alignment": lambda tmp: ["eval", "alignment", str(labels(tmp)), "--method", "all"],
}


@pytest.mark.parametrize("name", sorted(USAGE))
def test_usage_errors_exit_2(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = USAGE[name](tmp_path)
    if name in ("eval pairs", "eval alignment"):
        argv += ["--docs", str(corpus(tmp_path))]
    code, _ = run(argv, capsys)
    assert code == 2
    assert not (tmp_path / "s.db").exists() and not (tmp_path / "out.jsonl").exists()


def test_progress_bars_only_when_asked_off_a_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = corpus(tmp_path)
    for name in ("ingest", "origin"):
        _, err = run(_fresh(name, src, tmp_path), capsys)
        assert "\r" not in err and "it/s" not in err
        _, err = run([*_fresh(name, src, tmp_path), "--progress"], capsys)
        assert "\r" in err


def _fresh(name: str, src: Path, tmp: Path) -> list[str]:
    folder = tmp / f"{name}-{len(list(tmp.iterdir()))}"
    folder.mkdir()
    return READERS[name](src, folder)


def test_gzip_input_read_by_its_bytes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    packed = tmp_path / "in.data"
    with gzip.open(packed, "wt", encoding="utf-8") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in GOOD)
    for name in ("ingest", "origin"):
        code, err = run(_fresh(name, packed, tmp_path), capsys)
        assert code == 0 and "14 " in err, err
