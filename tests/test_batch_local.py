"""Batch dedup speed paths: the local process pool (``workers=N`` without Dask) gives the
single process's output byte for byte on real Reuters data, the batch row formatter gives
``json.dumps`` bytes, and the fast date path gives ``parse_date``'s instant."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from neardup.batch import DedupConfig, dedup, run
from neardup.batch import signing as signing_module
from neardup.batch.engine import DedupResult, DedupSummary, LocalPool
from neardup.batch.io import check_object
from neardup.batch.ranges import _common_case, date_key
from neardup.batch.verify import PairVerdicts
from neardup.errors import ConflictError, InputError
from neardup.evaluation.synth import perturb_words
from neardup.records import FieldNames, parse_date


def _corpus(tmp_path: Path, reuters_docs: list[dict[str, Any]]) -> Path:
    """600 real Reuters documents and 80 edited copies, shuffled, with dates."""
    rng = random.Random(11)
    base = [{"id": d["id"], "text": d["text"], "date": d["date"]} for d in reuters_docs[:600]]
    sources = [d for d in base if len(d["text"]) > 300]
    copies = [
        {
            "id": f"copy{k}",
            "text": perturb_words(src["text"], rng.uniform(0.0, 0.1), rng, insertion="duplicate"),
            "date": "1988-01-01T00:00:00Z",
        }
        for k, src in enumerate(rng.choice(sources) for _ in range(80))
    ]
    docs = base + copies
    rng.shuffle(docs)
    path = tmp_path / "corpus.jsonl"
    path.write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    return path


def test_local_pool_output_is_byte_identical_to_one_process(
    tmp_path: Path, reuters_docs: list[dict[str, Any]]
) -> None:
    path = _corpus(tmp_path, reuters_docs)
    cfg = DedupConfig(partition_size=64)  # ranges of 64 KB: several tasks
    outputs = {}
    for workers in (1, 2, 3):
        out = tmp_path / f"out-{workers}.jsonl"
        summary = dedup(path, out, cfg, workers=workers)
        outputs[workers] = out.read_bytes()
        assert summary.documents == 680
    assert outputs[2] == outputs[1]
    assert outputs[3] == outputs[1]
    rows = [json.loads(line) for line in outputs[1].splitlines()]
    assert sum(r["duplicate_of"] is not None for r in rows) >= 40  # the copies were found


def test_local_pool_reports_bad_lines_and_duplicate_ids_as_one_process(
    tmp_path: Path, reuters_docs: list[dict[str, Any]]
) -> None:
    lines = [json.dumps({"id": d["id"], "text": d["text"]}) for d in reuters_docs[:300]]
    lines.insert(40, "not json")
    lines.insert(200, json.dumps({"id": reuters_docs[5]["id"], "text": "a repeated id"}))
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    cfg = DedupConfig(partition_size=64)
    local = run(path, cfg, skip_invalid=True)
    pool = LocalPool(2)
    try:
        pooled = run(path, cfg, skip_invalid=True, client=pool)
        with pytest.raises(InputError, match=r"bad\.jsonl:41: not valid JSON"):
            run(path, cfg, client=pool)
        no_bad = tmp_path / "dups.jsonl"
        no_bad.write_text("\n".join(lines[:40] + lines[41:]) + "\n", encoding="utf-8")
        with pytest.raises(ConflictError, match=r"dups\.jsonl:200: duplicate id"):
            run(no_bad, cfg, client=pool)
    finally:
        pool.close()
    assert list(pooled.rows()) == list(local.rows())
    assert np.array_equal(pooled.pairs, local.pairs)
    assert pooled.summary.invalid == local.summary.invalid == 1
    assert pooled.summary.duplicate_ids == local.summary.duplicate_ids == 1
    assert pooled.summary.skipped_examples == local.summary.skipped_examples


def test_row_text_equals_json_dumps_of_each_row() -> None:
    ids = ["plain", 'quo"te', "back\\slash", "tab\there", "ünïcode", "nul\x00x", "lone\udc80", "é"]
    n = len(ids)
    kept_of = np.array([0, 0, 2, 2, 4, 4, 6, 0], dtype=np.int64)
    score = np.array([np.nan, 0.5123456789, np.nan, 1.0, np.nan, np.nan, np.nan, 1 / 3])
    existing = np.array([False] * (n - 1) + [True])
    result = DedupResult(
        ids=ids,
        existing=existing,
        labels=kept_of.copy(),
        kept_of=kept_of,
        score=score,
        pairs=np.empty((0, 2), dtype=np.int64),
        verdicts=PairVerdicts.empty(),
        summary=DedupSummary(),
    )
    expected = "".join(
        json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n" for row in result.rows()
    )
    for batch in (1, 3, 100):
        pieces = list(result.row_text(batch))
        assert "".join(text for text, _ in pieces) == expected
        assert sum(count for _, count in pieces) == n - 1
    assert "NaN" not in expected and '"score":null' in expected  # a NaN score prints null


@pytest.mark.parametrize(
    "value",
    [
        "1987-02-26T15:01:01Z",
        "1987-02-26T15:01:01z",
        "1987-02-26T15:01:01+05:30",
        "1987-02-26T15:01:01.123456-03:00",
        "1987-02-26",
        " 1987-02-26 ",
        "1987-02-26T15:01:01",
        "19870226T150101Z",
        "0001-01-01T00:00:00+05:00",
        "2020-02-30",
        "yesterday",
        "",
        None,
        12,
    ],
)
def test_fast_date_path_gives_parse_dates_instant(value: object) -> None:
    """Same instant, or the same refusal: an invalid date, or one whose conversion to UTC
    overflows, is left to the general path (``None``), where ``check_object`` refuses the
    line with an ``InputError``."""

    def outcome(fn: Any) -> tuple[str, object]:
        try:
            return "ok", fn()
        except (InputError, OverflowError):
            return "ok", None

    expected = outcome(lambda: date_key(parse_date(value)))
    got = outcome(lambda: _common_case({"id": "a", "text": "b", "date": value}, FieldNames()))
    if got[0] == "ok" and got[1] is not None:
        got = ("ok", got[1][2])  # type: ignore[index]
    assert got == expected
    if expected[1] is None and value not in (None, ""):
        with pytest.raises(InputError):
            check_object({"id": "a", "text": "b", "date": value}, FieldNames())


_REAL_RANGE_TASK = signing_module._range_task_saving


def _range_task_failing_at_3(*args: Any) -> Any:
    """A pool worker's range task that fails on partition 3 (module level: it is pickled)."""
    if args[-1] == 3:
        raise RuntimeError("worker lost during partition 3")
    return _REAL_RANGE_TASK(*args)


def test_interrupted_pool_run_resumes_with_identical_output(
    tmp_path: Path, reuters_docs: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Workers save their arrays without the ``done`` marker; the driver writes it in input
    order, so a failed pool run resumes from exactly the partitions it had finished."""
    path = _corpus(tmp_path, reuters_docs)
    cfg = DedupConfig(partition_size=64)
    out = tmp_path / "out.jsonl"
    monkeypatch.setattr(signing_module, "_range_task_saving", _range_task_failing_at_3)
    with pytest.raises(RuntimeError, match="partition 3"):
        dedup(path, out, cfg, workers=2)
    assert not out.exists()
    monkeypatch.setattr(signing_module, "_range_task_saving", _REAL_RANGE_TASK)
    summary = dedup(path, out, cfg, workers=2)
    assert summary.resumed_partitions == 3
    fresh = tmp_path / "fresh.jsonl"
    dedup(path, fresh, cfg)
    assert out.read_bytes() == fresh.read_bytes()


def _pairs_oracle(keys: np.ndarray, docs: np.ndarray, max_bucket: int) -> set[tuple[int, int]]:
    """Brute force: sort (key, doc), pair each entry with the next ``max_bucket`` entries of
    its bucket (the documented rule), keep distinct documents, ordered."""
    entries = sorted(zip(keys.tolist(), docs.tolist(), strict=True))
    entries = [e for e in entries if e[0] != 0]
    pairs = set()
    for i, (key, doc) in enumerate(entries):
        for key2, doc2 in entries[i + 1 : i + 1 + max_bucket]:
            if key2 == key and doc2 != doc:
                pairs.add((min(doc, doc2), max(doc, doc2)))
    return pairs


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_radix_path_of_bucket_pairs_matches_brute_force(seed: int) -> None:
    """Ascending documents take the radix sort; shuffled ones take lexsort: both equal the
    brute-force rule, with buckets larger than ``max_bucket`` and full 64-bit keys."""
    from neardup.batch.banding import _stable_sort_by_key, bucket_pairs

    rng = np.random.default_rng(seed)
    n = 4000
    pool = rng.integers(0, 2**64, 300, dtype=np.uint64)
    pool[:3] = [0, 1, 2**64 - 1]  # no key; extremes of every 16-bit digit
    keys = pool[rng.integers(0, pool.shape[0], n)]
    single = rng.random(n) < 0.5  # half the entries: keys of one document only
    keys[single] = rng.integers(0, 2**64, int(single.sum()), dtype=np.uint64)
    docs = np.sort(rng.integers(0, 900, n))
    assert np.unique(keys, return_counts=True)[1].max() > 9  # a bucket beyond max_bucket
    expected = _pairs_oracle(keys, docs, 8)
    got = bucket_pairs(keys, docs, 8)
    assert {(int(a), int(b)) for a, b in got} == expected
    assert got.shape[0] == len(expected)
    shuffled = rng.permutation(n)
    again = bucket_pairs(keys[shuffled], docs[shuffled], 8)
    assert np.array_equal(again, got)
    sorted_keys, sorted_docs = _stable_sort_by_key(keys, docs)
    order = np.lexsort((docs, keys))
    assert np.array_equal(sorted_keys, keys[order]) and np.array_equal(sorted_docs, docs[order])


@pytest.mark.parametrize(
    ("mode", "cfg", "gzipped"),
    [
        ("pairs", DedupConfig(partition_size=64), False),
        ("dedup", DedupConfig(partition_size=100, candidates=("lsh",)), False),
        ("dedup", DedupConfig(partition_size=100, candidates=("passages",)), False),
        ("dedup", DedupConfig(partition_size=100), True),  # driver reads
    ],
)
def test_local_pool_matches_one_process_in_other_modes(
    tmp_path: Path, reuters_docs: list[dict[str, Any]], mode: str, cfg: DedupConfig, gzipped: bool
) -> None:
    import gzip

    path = _corpus(tmp_path, reuters_docs)
    if gzipped:
        packed = tmp_path / "corpus.jsonl.gz"
        packed.write_bytes(gzip.compress(path.read_bytes(), mtime=0))
        path.unlink()
        path = packed
    local = run(path, cfg, mode=mode)
    pool = LocalPool(2)
    try:
        pooled = run(path, cfg, mode=mode, client=pool)
    finally:
        pool.close()
    assert np.array_equal(pooled.pairs, local.pairs)
    assert list(pooled.rows()) == list(local.rows())
    assert list(pooled.pair_rows()) == list(local.pair_rows())
    assert local.summary.verdicts["duplicate"] > 0


def test_verify_chunks_keep_every_worker_busy() -> None:
    from neardup.batch.judging import _MIN_CHUNK, _VERIFY_CHUNK, _chunk_size

    assert _chunk_size(10_000_000, 1) == _VERIFY_CHUNK
    assert _chunk_size(10_000_000, 2) == _VERIFY_CHUNK
    assert _chunk_size(40_000, 2) == 20_000  # one task a worker
    assert _chunk_size(40_001, 2) == 20_001
    assert _chunk_size(100, 2) == _MIN_CHUNK
    for pairs in (1, 999, 8_001, 123_457, 5_000_000):
        for workers in (1, 2, 3, 8):
            size = _chunk_size(pairs, workers)
            assert _MIN_CHUNK <= size <= _VERIFY_CHUNK


def test_small_verify_chunks_give_the_same_output(
    tmp_path: Path, reuters_docs: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    from neardup.batch import judging

    path = _corpus(tmp_path, reuters_docs)
    cfg = DedupConfig(partition_size=64)
    one = tmp_path / "one.jsonl"
    dedup(path, one, cfg, workers=1)
    monkeypatch.setattr(judging, "_MIN_CHUNK", 3)  # many tiny tasks in every lazy round
    two = tmp_path / "two.jsonl"
    dedup(path, two, cfg, workers=2)
    assert two.read_bytes() == one.read_bytes()


def test_a_worker_profiling_its_range_refuses_a_changed_input(tmp_path: Path) -> None:
    """A pool worker re-reads its partition's byte range for the profiles: the documents it
    finds must be the signing pass's (same ids at the same lines), else the run stops."""
    from neardup.batch.judging import _profile_range_task
    from neardup.batch.ranges import plan_ranges
    from neardup.errors import StoreError
    from neardup.rule import RuleConfig

    texts = ["the first article text here", "a second one, a bit longer", "and a third"]
    path = tmp_path / "in.jsonl"
    rows = [json.dumps({"id": f"d{i}", "text": t}) for i, t in enumerate(texts)]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    (part,) = plan_ranges([path], 1 << 20)
    lines, ids = np.array([1, 3], dtype=np.int64), ["d0", "d2"]
    args = (FieldNames(), RuleConfig(), False, tmp_path)
    p, n = _profile_range_task(0, np.array([0, 2]), part, lines, ids, *args)
    assert (p, n) == (0, 2)
    with pytest.raises(StoreError, match="input changed"):
        _profile_range_task(0, np.array([0, 2]), part, lines, ["d0", "d9"], *args)
    with pytest.raises(StoreError, match="input changed"):
        _profile_range_task(0, np.array([0, 2]), part, np.array([1, 4]), ids, *args)


def test_a_small_dedup_never_loads_numba(tmp_path: Path) -> None:
    """A few dozen documents (copies among them, so lazy judging runs its rounds and costs
    the rest) are deduplicated on the kernels' own Python: numba's load would cost more
    than the whole job (docs/batch.md)."""
    import subprocess
    import sys

    rng = random.Random(7)
    words = [f"w{i}" for i in range(400)]
    texts = [" ".join(rng.choice(words) for _ in range(120)) for _ in range(30)]
    texts += [t.replace("w1 ", "w2 ", 3) for t in texts[:12]]
    path = tmp_path / "small.jsonl"
    path.write_text(
        "".join(json.dumps({"id": str(i), "text": t}) + "\n" for i, t in enumerate(texts)),
        encoding="utf-8",
    )
    code = (
        "import sys; from neardup.batch import run; "
        f"result = run({str(path)!r}); "
        "print(result.summary.verdicts.get('duplicate', 0), 'numba' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    duplicates, loaded = out.stdout.split()
    assert int(duplicates) > 0
    assert loaded == "False"


def test_a_long_dedup_chooses_the_compiled_kernels_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run declares its input's size (``expect_work``); work beyond the reference budget
    makes every later choice the compiled kernels', smaller work changes nothing (checked
    in a fresh interpreter, where numba is not loaded yet)."""
    import subprocess
    import sys

    import neardup.batch.engine as engine
    from neardup.text import PYTHON_NS_PER_CHAR

    declared: list[int] = []
    monkeypatch.setattr(engine, "expect_work", declared.append)
    path = tmp_path / "c.jsonl"
    path.write_text('{"id": "a", "text": "one two three four five"}\n', encoding="utf-8")
    engine.run(path)
    assert declared == [PYTHON_NS_PER_CHAR * path.stat().st_size]

    code = (
        "from neardup import _jit; b = _jit.REFERENCE_BUDGET; "
        "first = _jit.compiled_worthwhile(1000); _jit.expect_work(b // 2); "
        "small = _jit.compiled_worthwhile(1000); _jit.expect_work(b + 1); "
        "print(first, small, _jit.compiled_worthwhile(1000))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False", "True"]
