"""Batch readers (JSONL, gzip, Parquet, directories, bad input) and atomic writers."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from neardup.batch.io import (
    AtomicJsonlWriter,
    ReadStats,
    check_complete,
    input_files,
    iter_records,
    read_at,
)
from neardup.errors import (
    ConflictError,
    IncompleteOutputError,
    InputError,
    NotFoundError,
    StoreError,
)
from neardup.records import FieldNames

DOCS = [
    {"id": "a", "text": "The first story.", "date": "1987-02-26T15:01:01Z", "extra": 1},
    {"id": "b", "text": "The second story.", "title": "Two"},
    {"id": 3, "text": "Numeric id.", "source": "wire"},
]


def _write_jsonl(path: Path, rows: list[object], compress: bool = False) -> Path:
    data = "".join(json.dumps(r) + "\n" for r in rows).encode("utf-8")
    path.write_bytes(gzip.compress(data) if compress else data)
    return path


def _ids(paths: list[Path], **kw: object) -> list[str]:
    return [r.article.id for r in iter_records(paths, **kw)]  # type: ignore[arg-type]


def test_jsonl_plain_and_gzip_detected_by_magic(tmp_path: Path) -> None:
    plain = _write_jsonl(tmp_path / "a.jsonl", DOCS)
    zipped = _write_jsonl(tmp_path / "b.jsonl", DOCS, compress=True)  # no .gz suffix
    for path in (plain, zipped):
        records = list(iter_records([path]))
        assert [r.article.id for r in records] == ["a", "b", "3"]
        assert [r.ordinal for r in records] == [0, 1, 2]
        assert records[0].raw == DOCS[0]
        assert records[0].location == f"{path}:1"
        assert records[0].article.date is not None


def test_parquet_and_directory_in_sorted_order(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    folder = tmp_path / "corpus"
    (folder / "sub").mkdir(parents=True)
    table = pa.table({"id": ["p1", "p2"], "text": ["parquet one", "parquet two"]})
    pq.write_table(table, folder / "sub" / "c.parquet")
    _write_jsonl(folder / "a.jsonl.gz", [DOCS[0]], compress=True)
    _write_jsonl(folder / "b.jsonl", [DOCS[1]])
    (folder / "notes.txt").write_text("ignored")
    (folder / ".hidden.jsonl").write_text("not json at all")
    files = input_files(folder)
    assert [f.name for f in files] == ["a.jsonl.gz", "b.jsonl", "c.parquet"]
    assert _ids(files) == ["a", "b", "p1", "p2"]
    assert _ids([folder / "sub" / "c.parquet"]) == ["p1", "p2"]


def test_configurable_field_names(tmp_path: Path) -> None:
    path = _write_jsonl(tmp_path / "x.jsonl", [{"key": "k1", "body": "hello there"}])
    (record,) = iter_records([path], fields=FieldNames(id="key", text="body"))
    assert record.article.id == "k1"
    assert record.article.text == "hello there"


def test_malformed_line_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(DOCS[0]) + "\n\n{not json\n" + json.dumps(DOCS[1]) + "\n")
    with pytest.raises(InputError, match=r"bad\.jsonl:3: not valid JSON"):
        list(iter_records([path]))
    stats = ReadStats()
    assert _ids([path], skip_invalid=True, stats=stats) == ["a", "b"]
    assert stats.invalid == 1
    assert stats.blank_lines == 1
    assert "bad.jsonl:3" in stats.examples[0]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (b'{"id": "x", "text": "caf\xe9"}', "not valid UTF-8"),
        (b'["a", "list"]', "expected a JSON object"),
        (b'{"text": "no id"}', "missing its 'id' field"),
        (b'{"id": "y"}', "missing its 'text' field"),
        (b'{"id": "z", "text": 5}', "must be a string"),
        (b'{"id": "w", "text": "t", "date": "yesterday"}', "not ISO-8601"),
    ],
)
def test_each_kind_of_bad_line(tmp_path: Path, line: bytes, message: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b'{"id": "ok", "text": "fine"}\n' + line + b"\n")
    with pytest.raises(InputError, match=message) as info:
        list(iter_records([path]))
    assert f"{path}:2:" in str(info.value)
    stats = ReadStats()
    assert _ids([path], skip_invalid=True, stats=stats) == ["ok"]
    assert stats.invalid == 1


def test_duplicate_ids_conflict_or_first_wins(tmp_path: Path) -> None:
    path = _write_jsonl(
        tmp_path / "d.jsonl",
        [{"id": "a", "text": "one"}, {"id": "a", "text": "two"}, {"id": "b", "text": "x"}],
    )
    with pytest.raises(ConflictError, match=r"d\.jsonl:2: duplicate id 'a'"):
        list(iter_records([path]))
    stats = ReadStats()
    records = list(iter_records([path], skip_invalid=True, stats=stats))
    assert [(r.article.id, r.article.text) for r in records] == [("a", "one"), ("b", "x")]
    assert stats.duplicate_ids == 1


def test_empty_text_is_read_normally(tmp_path: Path) -> None:
    path = _write_jsonl(tmp_path / "e.jsonl", [{"id": "e", "text": ""}])
    assert [r.article.text for r in iter_records([path])] == [""]


def test_truncated_gzip_is_an_input_error(tmp_path: Path) -> None:
    data = gzip.compress(b"".join(json.dumps(d).encode() + b"\n" for d in DOCS * 50))
    path = tmp_path / "cut.jsonl.gz"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(InputError, match="truncated or corrupt"):
        list(iter_records([path]))


def test_missing_and_empty_inputs(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError):
        input_files(tmp_path / "nope.jsonl")
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="no input file"):
        input_files(tmp_path / "empty")


def test_bad_parquet_file(tmp_path: Path) -> None:
    path = tmp_path / "broken.parquet"
    path.write_bytes(b"not parquet")
    with pytest.raises(InputError, match="Parquet"):
        list(iter_records([path]))


# --- writers ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["out.jsonl", "out.jsonl.gz"])
def test_atomic_writer_commit_and_marker(tmp_path: Path, name: str) -> None:
    out = tmp_path / name
    with AtomicJsonlWriter(out, run_key="k1", extra={"summary": {"n": 2}}) as writer:
        writer.write({"id": "a"})
        writer.write({"id": "b", "when": __import__("datetime").date(2020, 1, 2)})
        assert not out.exists()  # nothing visible before commit
        writer.commit()
    info = check_complete(out, run_key="k1")
    assert info["rows"] == 2
    assert info["summary"] == {"n": 2}
    with pytest.raises(IncompleteOutputError, match="different run"):
        check_complete(out, run_key="other")
    opener = gzip.open if name.endswith(".gz") else open
    with opener(out, "rt") as fh:  # type: ignore[operator]
        rows = [json.loads(line) for line in fh]
    assert rows == [{"id": "a"}, {"id": "b", "when": "2020-01-02"}]


def test_interrupted_writer_leaves_no_output_and_keeps_old(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    with AtomicJsonlWriter(out, run_key="old") as writer:
        writer.write({"v": 1})
        writer.commit()
    with pytest.raises(RuntimeError), AtomicJsonlWriter(out, run_key="new") as writer:
        writer.write({"v": 2})
        raise RuntimeError("killed")
    assert not (tmp_path / "out.jsonl.partial").exists()
    assert check_complete(out, run_key="old")["rows"] == 1  # the old output is intact


def test_partial_or_tampered_output_is_detected(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    out.write_text('{"id": "a"}\n')  # no marker: e.g. a crash between rename and marker
    with pytest.raises(IncompleteOutputError, match="no valid completion marker"):
        check_complete(out)
    with AtomicJsonlWriter(out) as writer:
        writer.write({"id": "a"})
        writer.commit()
    check_complete(out)
    with out.open("a") as fh:
        fh.write('{"id": "b"}\n')
    with pytest.raises(IncompleteOutputError, match="does not match"):
        check_complete(out)
    with pytest.raises(IncompleteOutputError, match="does not exist"):
        check_complete(tmp_path / "missing.jsonl")


def test_read_at_returns_only_requested_lines(tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    pa = pytest.importorskip("pyarrow")
    first = _write_jsonl(tmp_path / "a.jsonl.gz", DOCS, compress=True)
    second = tmp_path / "b.parquet"
    pq.write_table(pa.table({"id": ["p1", "p2", "p3"], "text": ["x", "y", "z"]}), second)
    records = list(iter_records([first, second]))
    wanted = [1, 3]  # the 2nd and 4th accepted documents
    got = list(
        read_at(
            [first, second],
            [records[k].file_index for k in wanted],
            [records[k].line for k in wanted],
        )
    )
    assert got == [records[k].raw for k in wanted]
    with pytest.raises(StoreError, match="changed"):
        list(read_at([first], [0], [99]))
