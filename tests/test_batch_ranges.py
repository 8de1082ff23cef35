"""Worker-read byte ranges (neardup.batch.ranges) give exactly what the driver's reader
gives: same documents, line numbers, skips and errors; and the Dask path that uses them gives
the single-process output, also with duplicate ids and invalid lines."""

from __future__ import annotations

import gzip
import itertools
import json
from pathlib import Path

import numpy as np
import pytest

from neardup.batch import DedupConfig, run
from neardup.batch import ranges as ranges_module
from neardup.batch.io import ReadStats, iter_records
from neardup.batch.ranges import parse_range, plan_ranges, splittable
from neardup.errors import ConflictError, InputError
from neardup.records import FieldNames

MESSY = (
    b'{"id": "a", "text": "The first story about rates.", "date": "1987-02-26T15:01:01Z"}\n'
    b"\n"
    b'{"id": "b", "text": "The second story."}\r\n'
    b'{"id": "c", "text": broken\n'
    b'{"id": "d", "text": "caf\xc3\xa9 au lait", "title": "T"}\n'
    b"[1, 2, 3]\n"
    b'{"id": "e", "text": "bad \xff byte"}\n'
    b'{"id": "f", "text": "x", "date": "yesterday"}\n'
    b'{"id": "g", "text": "NaN is json-only", "score": NaN}\n'
    b'{"id": "h", "text": 5}\n'
    b'{"id": "i", "text": "no newline at the end"}'
)


def _from_ranges(path: Path, target: int, skip_invalid: bool) -> tuple[list, list, list]:
    docs, issues, errors = [], [], []
    for part in plan_ranges([path], target):
        parsed = parse_range(part, FieldNames(), skip_invalid)
        docs += list(zip(parsed.ids, parsed.lines.tolist(), parsed.lengths.tolist(), strict=True))
        issues += [message for _, message in parsed.issues]
        if parsed.error is not None:
            errors.append((type(parsed.error), str(parsed.error)))
            break
    return docs, issues, errors


@pytest.mark.parametrize("block", [5, 64, 8 << 20])
@pytest.mark.parametrize("target", [1, 7, 60, 200, 10_000])
def test_ranges_cover_the_file_at_line_breaks(
    tmp_path: Path, target: int, block: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ranges_module, "_BLOCK", block)  # cuts that fall across read blocks
    path = tmp_path / "messy.jsonl"
    path.write_bytes(MESSY)
    ranges = plan_ranges([path], target)
    assert ranges[0].start == 0 and ranges[-1].end == len(MESSY)
    for a, b in itertools.pairwise(ranges):
        assert a.end == b.start and MESSY[a.end - 1 : a.end] == b"\n"
    for r in ranges:  # first_line is the 1-based line number of the range's first byte
        assert r.first_line == MESSY[: r.start].count(b"\n") + 1


@pytest.mark.parametrize("target", [1, 60, 10_000])
def test_ranges_read_what_the_line_reader_reads(tmp_path: Path, target: int) -> None:
    path = tmp_path / "messy.jsonl"
    path.write_bytes(MESSY)
    stats = ReadStats()
    expected = [
        (r.article.id, r.line, len(r.article.text))
        for r in iter_records([path], skip_invalid=True, stats=stats)
    ]
    docs, issues, _ = _from_ranges(path, target, skip_invalid=True)
    assert docs == expected
    assert len(issues) == stats.invalid == 5  # c, [1,2,3], e, f, h (NaN is accepted)
    assert issues == stats.examples  # same wording and location
    # Without skip_invalid: the same first error, same type and message.
    with pytest.raises(InputError) as info:
        list(iter_records([path]))
    _, _, errors = _from_ranges(path, target, skip_invalid=False)
    assert errors == [(type(info.value), str(info.value))]


def test_splittable_only_for_plain_jsonl(tmp_path: Path) -> None:
    plain = tmp_path / "a.jsonl"
    plain.write_bytes(MESSY)
    packed = tmp_path / "b.jsonl.gz"
    packed.write_bytes(gzip.compress(MESSY))
    assert splittable([plain])
    assert not splittable([plain, packed])
    assert not splittable([tmp_path / "c.parquet"])


def _corpus(tmp_path: Path, reuters_docs: list[dict]) -> Path:
    rows = [
        json.dumps({"id": d["id"], "text": d["text"], "date": d["date"]})
        for d in reuters_docs[:400]
    ]
    rows += [json.dumps({"id": f"c{k}", "text": reuters_docs[k]["text"]}) for k in range(0, 60, 3)]
    rows.insert(50, "not json")
    rows.insert(120, json.dumps({"id": reuters_docs[3]["id"], "text": "a repeated id"}))
    path = tmp_path / "corpus.jsonl"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def test_dask_workers_reading_ranges_match_one_process(
    tmp_path: Path, reuters_docs: list[dict]
) -> None:
    distributed = pytest.importorskip("distributed")
    path = _corpus(tmp_path, reuters_docs)
    cfg = DedupConfig(partition_size=64)  # ranges of 64 KB: several per file
    local = run(path, cfg, skip_invalid=True)
    assert local.summary.invalid == 1 and local.summary.duplicate_ids == 1
    with pytest.raises(InputError, match=r"corpus\.jsonl:51: not valid JSON"):
        run(path, cfg)
    for workers in (1, 2):
        with (
            distributed.LocalCluster(
                n_workers=workers, threads_per_worker=1, processes=False, dashboard_address=None
            ) as cluster,
            distributed.Client(cluster) as client,
        ):
            result = run(path, cfg, skip_invalid=True, client=client)
            with pytest.raises(InputError, match=r"corpus\.jsonl:51: not valid JSON"):
                run(path, cfg, client=client)  # the first bad line, as in one process
            without_bad_line = tmp_path / "dups.jsonl"
            lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
            without_bad_line.write_text("".join(lines[:50] + lines[51:]), encoding="utf-8")
            with pytest.raises(ConflictError) as from_workers:
                run(without_bad_line, cfg, client=client)
            with pytest.raises(ConflictError) as from_driver:
                run(without_bad_line, cfg)
            assert str(from_workers.value) == str(from_driver.value)
            assert "dups.jsonl:120: duplicate id" in str(from_workers.value)
        assert list(result.rows()) == list(local.rows())
        assert np.array_equal(result.pairs, local.pairs)
        assert result.summary.invalid == 1 and result.summary.duplicate_ids == 1
        assert result.summary.skipped_examples == local.summary.skipped_examples


def test_range_reading_and_driver_reading_agree(tmp_path: Path, reuters_docs: list[dict]) -> None:
    """Plain JSON Lines is read by ranges; gzip (and ``worker_reads=False``) by the driver's
    line reader: the same clusters, pairs and verdicts either way."""
    path = _corpus(tmp_path, reuters_docs)
    packed = tmp_path / "corpus.jsonl.gz"
    packed.write_bytes(gzip.compress(path.read_bytes()))
    cfg = DedupConfig(partition_size=64)
    by_ranges = run(path, cfg, skip_invalid=True)
    for other in (
        run(path, cfg, skip_invalid=True, worker_reads=False),
        run(packed, cfg, skip_invalid=True),
    ):
        assert list(other.rows()) == list(by_ranges.rows())
        assert np.array_equal(other.pairs, by_ranges.pairs)
        assert list(other.pair_rows()) == list(by_ranges.pair_rows())
        assert other.summary.invalid == by_ranges.summary.invalid == 1
        assert other.summary.duplicate_ids == by_ranges.summary.duplicate_ids == 1
