"""Bad input at the edges of the CLI and the service: each case ends in a one-line error with
a documented exit code (CLI) or a 4xx JSON error (HTTP), or in a documented result, never a
traceback, a 5xx or silently changed data.  Every CLI case runs through ``neardup.cli.main``
as the console command does."""

from __future__ import annotations

import gzip
import json
import os
import socket
import stat
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import run_cli
from neardup.batch.io import parse_json_line, read_lines
from neardup.errors import InputError, NotFoundError, StoreError
from neardup.samples import sample_corpus

warnings.filterwarnings("ignore", message=".*httpx2.*")

from fastapi.testclient import TestClient  # noqa: E402

from neardup.service.app import create_app  # noqa: E402
from neardup.service.load import iter_reuters  # noqa: E402
from neardup.service.settings import ServiceSettings  # noqa: E402

GOOD = sample_corpus()[:6]
BOM = b"\xef\xbb\xbf"


run = run_cli


def corpus(path: Path, rows: list[dict[str, Any]] | None = None, prefix: bytes = b"") -> Path:
    lines = b"".join(json.dumps(row).encode() + b"\n" for row in (rows or GOOD))
    path.write_bytes(prefix + lines)
    return path


# --- the one line rule: parse_json_line -----------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        BOM + b'{"id": "a", "text": "words"}\n',
        BOM + b'{"id": "a", "text": "words"}\r\n',
    ],
)
def test_a_byte_order_mark_starting_a_line_is_ignored(line: bytes) -> None:
    assert parse_json_line(line) == {"id": "a", "text": "words"}
    assert parse_json_line(BOM + b"\n") is None  # a line holding only the mark is blank


@pytest.mark.parametrize(
    "number",
    ["123456789012345678901234", "18446744073709551616", "-9223372036854775809", "9" * 400],
)
def test_integers_beyond_64_bits_are_read_exactly(number: str) -> None:
    line = f'{{"id": "a", "text": "words", "n": {number}, "deep": [{{"m": {number}}}]}}'
    value = parse_json_line(line.encode())
    assert value["n"] == int(number) and value["deep"][0]["m"] == int(number)
    assert type(value["n"]) is int


def test_floats_stay_floats() -> None:
    value = parse_json_line(b'{"a": 1.5, "b": 1e19, "c": -2.5e-300}')
    assert value == {"a": 1.5, "b": 1e19, "c": -2.5e-300}


# --- read_lines: the one way an input file is opened ----------------------------------------


def test_read_lines_reads_plain_and_gzip_alike(tmp_path: Path) -> None:
    plain = corpus(tmp_path / "a.jsonl")
    packed = tmp_path / "a.jsonl.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    assert list(read_lines(plain)) == list(read_lines(packed))


def test_read_lines_errors(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError):
        list(read_lines(tmp_path / "missing.jsonl"))
    with pytest.raises(StoreError, match="cannot read"):
        list(read_lines(tmp_path))
    whole = gzip.compress(corpus(tmp_path / "a.jsonl").read_bytes() * 50)
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(whole[: len(whole) // 2])
    seen: list[int] = []
    with pytest.raises(InputError, match="truncated or corrupt after line"):
        for number, _ in read_lines(cut):
            seen.append(number)
    assert seen  # the lines before the damage were given


# --- commands --------------------------------------------------------------------------------


def test_dedup_keeps_big_integers_and_reads_a_bom(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [dict(row, n=123456789012345678901234 + i) for i, row in enumerate(GOOD)]
    src = corpus(tmp_path / "in.jsonl", rows, prefix=BOM)
    kept = tmp_path / "kept.jsonl"
    argv = ["dedup", str(src), "-o", str(tmp_path / "out.jsonl"), "--write-kept", str(kept)]
    code, err = run(argv, capsys)
    assert code == 0, err
    out = [json.loads(line) for line in kept.read_text().splitlines()]
    assert out and all(type(row["n"]) is int for row in out)
    assert {row["n"] for row in out} <= {row["n"] for row in rows}


def test_a_bom_starting_the_input_is_not_a_bad_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = corpus(tmp_path / "in.jsonl", prefix=BOM)
    code, err = run(["ingest", "--store", str(tmp_path / "s.db"), str(src)], capsys)
    assert code == 0, err
    assert "0 malformed lines skipped" in err


@pytest.mark.parametrize("command", ["dedup", "origin", "synth"])
def test_an_output_that_is_not_a_file_is_refused_and_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    src = corpus(tmp_path / "in.jsonl")
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    code, err = run([command, str(src), "-o", str(pipe), "--force"], capsys)
    assert code == 2
    assert "not a regular file" in err
    assert stat.S_ISFIFO(pipe.stat().st_mode)  # never removed


@pytest.mark.parametrize("command", ["dedup", "origin", "synth"])
def test_outputs_in_missing_folders_are_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    src = corpus(tmp_path / "in.jsonl")
    out = tmp_path / "not" / "yet" / "out.jsonl"
    code, err = run([command, str(src), "-o", str(out)], capsys)
    assert code == 0, err
    if command == "synth":  # its output is a folder of files
        assert any(out.iterdir())
    else:
        assert out.is_file() and out.stat().st_size > 0


def test_write_kept_that_is_not_a_file_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = corpus(tmp_path / "in.jsonl")
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    argv = ["dedup", str(src), "-o", str(tmp_path / "o.jsonl"), "--write-kept", str(pipe)]
    code, err = run([*argv, "--force"], capsys)
    assert code == 2 and "not a regular file" in err
    assert stat.S_ISFIFO(pipe.stat().st_mode)


@pytest.mark.parametrize("command", ["dedup", "pairs"])
@pytest.mark.parametrize("workers", ["0", "-1", "99999999999"])
def test_workers_out_of_range(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str, workers: str
) -> None:
    src = corpus(tmp_path / "in.jsonl")
    argv = [command, str(src), "-o", str(tmp_path / "o.jsonl"), "--workers", workers]
    code, err = run(argv, capsys)
    assert code == 2 and "--workers" in err


@pytest.mark.parametrize("command", ["dedup", "pairs"])
def test_dedup_and_pairs_do_not_read_stdin(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    code, err = run([command, "-", "-o", str(tmp_path / "o.jsonl")], capsys)
    assert code == 2 and "not from stdin" in err


@pytest.mark.parametrize("days", ["inf", "1e308", "3652060"])
def test_ingest_window_beyond_the_date_range(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], days: str
) -> None:
    src = corpus(tmp_path / "in.jsonl")
    argv = ["ingest", "--store", str(tmp_path / "s.db"), "--window-days", days, str(src)]
    code, err = run(argv, capsys)
    assert code == 2 and "--window-days" in err
    assert not (tmp_path / "s.db").exists()


def _labelled(tmp_path: Path) -> tuple[Path, Path]:
    docs = corpus(tmp_path / "docs.jsonl")
    labels = tmp_path / "labels.jsonl"
    pairs = [
        {"id1": GOOD[i]["id"], "id2": GOOD[i + 1]["id"], "label": "different"} for i in range(3)
    ]
    labels.write_text("".join(json.dumps(p) + "\n" for p in pairs))
    return docs, labels


@pytest.mark.parametrize("threshold", ["nan", "inf", "-inf"])
def test_eval_pairs_threshold_must_be_finite(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], threshold: str
) -> None:
    docs, labels = _labelled(tmp_path)
    argv = ["eval", "pairs", str(labels), "--docs", str(docs), "--method", "simhash"]
    code, err = run([*argv, "--threshold", threshold], capsys)
    assert code == 2 and "--threshold" in err


def test_eval_pairs_plots_folder_that_cannot_be_made(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    docs, labels = _labelled(tmp_path)
    blocked = docs / "plots"  # under a file: no folder can be made there
    argv = ["eval", "pairs", str(labels), "--docs", str(docs), "--method", "simhash"]
    code, err = run([*argv, "--plots", str(blocked)], capsys)
    assert code == 74 and "--plots" in err


def test_demo_data_that_is_not_gzip_is_read_or_refused_as_data(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    garbage = tmp_path / "docs.jsonl.gz"
    garbage.write_bytes(b"\x86\x8c not json, not gzip\n")
    code, err = run(["demo", "--data", str(garbage)], capsys)
    assert code == 65 and "not valid UTF-8" in err
    whole = gzip.compress(corpus(tmp_path / "a.jsonl").read_bytes() * 50)
    garbage.write_bytes(whole[: len(whole) // 2])
    code, err = run(["demo", "--data", str(garbage)], capsys)
    assert code == 65 and "truncated or corrupt" in err


def test_preload_reads_plain_json_lines_and_refuses_garbage_as_data(tmp_path: Path) -> None:
    rows = [row for row in GOOD if row["text"].strip()]
    plain = corpus(tmp_path / "docs.jsonl", rows)
    assert [a.id for a in iter_reuters(plain, 3)] == [r["id"] for r in rows[:3]]
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_bytes(b"\x86\x8c\x00 garbage\n")
    with pytest.raises(InputError, match="not valid UTF-8"):
        list(iter_reuters(garbage, 3))


def test_serve_refuses_a_host_that_does_not_resolve(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "s.db"
    argv = ["serve", "--store", str(store), "--host", "nonexistent.invalid", "--port", "0"]
    code, err = run(argv, capsys)
    assert code == 2 and "--host" in err
    assert not store.exists()  # checked before the store is opened


def test_serve_refuses_a_port_in_use(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        argv = ["serve", "--store", str(tmp_path / "s.db"), "--port", port]
        code, err = run(argv, capsys)
    assert code == 74 and "cannot listen" in err


# --- the service: hostile requests get a 4xx JSON error or a sensible answer -----------------

ARTICLE = {
    "id": "a1",
    "text": "Shares rose sharply on Monday in Tokyo. Analysts expect more gains this week.",
    "date": "1987-02-26T15:01:01Z",
}


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    folder = tmp_path_factory.mktemp("edges")
    cfg = ServiceSettings(store=f"sqlite:///{folder / 'edges.db'}")
    with TestClient(create_app(cfg), raise_server_exceptions=False) as c:
        assert c.post("/v1/documents", json=ARTICLE).status_code == 200
        yield c


REQUESTS: list[tuple[str, str, bytes | None, int]] = [
    ("post", "/v1/documents", BOM + json.dumps(ARTICLE).encode(), 400),
    ("post", "/v1/documents", b'{"id": 18446744073709551616, "text": "words"}', 422),
    ("post", "/v1/documents", b'{"id": "x", "text": "words", "n": 1e400}', 400),
    ("post", "/v1/documents", b'{"articles": [null]}', 422),
    ("post", "/v1/documents", b'{"id": "x", "text": "words", "date": "2020-02-30"}', 422),
    ("post", "/v1/documents", json.dumps({"id": "é" * 1100, "text": "words"}).encode(), 413),
    ("post", "/v1/dedup", b'{"items": ["a1"], "threshold": NaN}', 400),
    ("post", "/v1/dedup", b'{"items": ["a1", {"id": "a1", "text": "other"}]}', 422),
    ("post", "/v1/dedup", b'{"items": []}', 200),
    ("post", "/v1/origin", b'{"id": "a1", "text": "both"}', 422),
    ("post", "/v1/align", b'{"id": "a1", "source": "nope"}', 404),
    ("get", "/v1/documents/%ff/similar", None, 404),
    ("get", "/v1/documents/a1/similar?limit=99999999999999999999999", None, 413),
    ("get", "/v1/events?since=2020-01-01&until=2019-01-01", None, 422),
    ("get", "/v1/events?until=9999-12-31T23:59:59-14:00", None, 422),
    ("delete", "/v1/documents/a1", None, 405),
]


@pytest.mark.parametrize(("method", "path", "body", "status"), REQUESTS)
def test_hostile_requests(
    client: TestClient, method: str, path: str, body: bytes | None, status: int
) -> None:
    kwargs = {} if body is None else {"content": body}
    response = getattr(client, method)(path, **kwargs)
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    if status >= 400:
        error = response.json()["error"]
        assert error["status"] == status and error["message"]


def test_an_integer_id_beyond_64_bits_is_refused_by_name(client: TestClient) -> None:
    body = b'{"id": 123456789012345678901234567890, "text": "words"}'
    response = client.post("/v1/documents", content=body)
    assert response.status_code == 422
    assert "64 bits" in response.json()["error"]["message"]


def test_python_api_bounds_the_window_and_the_workers() -> None:
    from neardup.batch.engine import _make_client
    from neardup.batch.executors import MAX_LOCAL_WORKERS, LocalPool
    from neardup.batch.tasks import DedupConfig
    from neardup.detect.stream import StreamConfig
    from neardup.detect.stream.config import MAX_WINDOW_SECONDS
    from neardup.errors import ConfigError

    for window in (float("inf"), float("nan"), MAX_WINDOW_SECONDS * 2, 0.0):
        with pytest.raises(ConfigError):
            StreamConfig(window_seconds=window)
    assert StreamConfig(window_seconds=MAX_WINDOW_SECONDS).window_seconds == MAX_WINDOW_SECONDS
    for workers in (0, -1, MAX_LOCAL_WORKERS + 1, 10**20):
        with pytest.raises(ConfigError):
            LocalPool(workers)
        with pytest.raises(ConfigError):
            _make_client(None, workers, 0, DedupConfig())
