"""Passes 2 and 3 of a batch run: profile the documents of the candidate pairs, then judge
every pair by the rule.

The profiles are made from the texts re-read by (file, line) (:func:`profile_stage`,
:mod:`neardup.batch.profiles`) and saved per partition in the work directory; the pairs are
judged in chunks (:func:`verify_stage`, :mod:`neardup.batch.verify`), each chunk's task
reading its documents' profiles from the work directory, or, on an executor whose workers
do not share it (Dask), receiving them from the driver.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from neardup._kernels import distinct
from neardup.batch.executors import Executor, call, progress_bar
from neardup.batch.io import read_at
from neardup.batch.profiles import partition_profiles
from neardup.batch.ranges import ByteRange, parse_range
from neardup.batch.signing import Corpus, Meta
from neardup.batch.tasks import DedupConfig
from neardup.batch.verify import (
    PairVerdicts,
    ProfileRows,
    row_counts,
)
from neardup.batch.verify import verify_pairs as judge_pairs
from neardup.batch.workdir import WorkDir, save_arrays
from neardup.errors import StoreError
from neardup.records import FieldNames
from neardup.rule import RuleConfig

I64 = npt.NDArray[np.int64]

# Pairs judged per verification task: bounds the profiles shipped with one task.
_VERIFY_CHUNK = 50_000
# Fewest pairs per task when a stage is cut finer to keep every worker busy.
_MIN_CHUNK = 2_000


def _chunk_size(pairs: int, workers: int) -> int:
    """Pairs per verification task: at most ``_VERIFY_CHUNK``, and small enough that every
    worker gets one (the rounds of lazy judging are often far smaller than one full chunk,
    and one task per round would leave the other workers idle).  One task a worker, not
    several: a round's tasks are alike and short, and each more costs its dispatch and
    the wait for the last one (on 100,000 planted documents, two workers judged the rounds
    in 9.4 s of wall time with one task each, 10.5 s with two, 11.7 s with four)."""
    if workers <= 1:
        return _VERIFY_CHUNK
    return max(_MIN_CHUNK, min(_VERIFY_CHUNK, -(-pairs // workers)))


def profile_stage(
    corpus: Corpus,
    config: DedupConfig,
    runner: Executor,
    work: WorkDir,
    meta: Meta,
    involved: I64,
    terms: bool,
    progress: bool,
) -> None:
    """Profiles of the ``involved`` documents (those in some candidate pair), made from
    their texts re-read by (file, line), saved per partition (``pay``); ``terms=False``:
    without content words (a ``dedup`` run).

    Where the signing pass read byte ranges and the workers share the work directory (a
    :class:`LocalPool`), each worker reads its partition's range again and saves the
    profiles itself: the driver neither parses the texts nor ships them (on two workers
    that serial parse and transfer took as long as a third of the profiling)."""
    if work.done(_TABLE, 0):  # a resumed run: every profile is in the table already
        return
    starts = np.asarray(meta.part_starts, dtype=np.int64)
    bar = progress_bar(progress, "profiling", total=int(involved.shape[0]))
    owner = np.searchsorted(starts, involved, side="right") - 1
    todo = [int(p) for p in distinct(owner) if not work.done("pay", int(p))]
    all_lines = np.asarray(meta.lines, dtype=np.int64)
    rule = config.rule
    if meta.part_ranges and runner.shares_work_dir and not runner.in_process:
        fields = corpus.fields

        def tasks() -> Iterator[tuple[Any, ...]]:
            for p in todo:
                docs = involved[owner == p]
                ids = [meta.ids[int(d)] for d in docs]
                part = meta.part_ranges[p]
                args = (part, all_lines[docs], ids, fields, rule, terms)
                yield (_profile_range_task, p, docs - starts[p], *args, work.path)

        for p, rows in runner.imap(call, tasks()):
            work.mark_done("pay", p)
            bar.update(rows)
        bar.close()
        return
    wanted = involved[np.isin(owner, todo)]
    files = np.asarray(meta.files, dtype=np.int64)[wanted]
    objects = read_at(corpus.existing + corpus.new, files, all_lines[wanted])
    id_field, text_field = corpus.fields.id, corpus.fields.text

    def driver_tasks() -> Iterator[tuple[Any, ...]]:
        for p in todo:
            docs = involved[owner == p]
            texts: list[str] = []
            for d in docs:
                obj = next(objects)
                # The same line must hold the same document as in the first pass.
                if str(obj.get(id_field)) != meta.ids[int(d)]:
                    raise _changed()
                texts.append(obj[text_field])
            yield (_profile_task, p, docs - starts[p], texts, rule, terms)

    for p, rows, profiles in runner.imap(call, driver_tasks()):
        work.save("pay", p, {"rows": rows, **profiles.arrays()})
        bar.update(int(rows.shape[0]))
    bar.close()


def _changed() -> StoreError:
    return StoreError("the input changed during the run; run again")


def _profile_task(
    part: int, rows: I64, texts: list[str], rule: RuleConfig, terms: bool
) -> tuple[int, I64, ProfileRows]:
    return part, rows, partition_profiles(texts, rule, terms)


def _profile_range_task(
    p: int,
    rows: I64,
    part: ByteRange,
    lines: I64,
    ids: list[str],
    fields: FieldNames,
    rule: RuleConfig,
    terms: bool,
    work_path: Path,
) -> tuple[int, int]:
    """Profiles of the documents at ``lines`` of byte range ``part`` (partition ``p``,
    partition rows ``rows``), read and parsed by the signing pass's own reader and checked
    to hold the same ids, saved by this worker in the work directory (without the ``done``
    marker, which the driver writes).  Returns ``(p, documents profiled)``."""
    parsed = parse_range(part, fields, skip_invalid=True)
    at = np.searchsorted(parsed.lines, lines)
    if at.shape[0] and (
        int(at.max()) >= parsed.lines.shape[0] or not np.array_equal(parsed.lines[at], lines)
    ):
        raise _changed()
    texts = []
    for i, expected in zip(at.tolist(), ids, strict=True):
        if parsed.ids[i] != expected:
            raise _changed()
        texts.append(parsed.texts[i])
    profiles = partition_profiles(texts, rule, terms)
    save_arrays(work_path, "pay", p, {"rows": rows, **profiles.arrays()})
    return p, int(rows.shape[0])


_PROFILE_NAMES = [f.name for f in dataclasses.fields(ProfileRows)]
# The ragged arrays of a profile, each with the name of its offsets.
_RAGGED = {
    "shingles": "shingle_offsets",
    "flags": "token_offsets",
    "sets": "set_offsets",
    "terms": "term_offsets",
    "term_counts": "term_offsets",
}
# The work files of the run's one profile table (every profiled document, in ordinal order).
_TABLE = "table"
_TABLE_NAMES = ["row_of", "counts", *_PROFILE_NAMES]


def table_stage(work: WorkDir, meta: Meta, involved: I64) -> None:
    """Join the profiles saved per partition into one table in the work directory (a
    ``.npy`` file per array, rows in ordinal order, offsets rebased) with each row's
    :func:`~neardup.batch.verify.row_counts` and each document's row (``row_of``, -1 for
    a document without a profile), then remove the partitions' files.

    Judging then reads any document's profile in place, memory-mapped, instead of copying
    its rows out of its partition's files for every chunk of every round of lazy judging
    (about half of the judging's time before).  The table is written once, a partition at a
    time (memory: one partition), each file atomically, with a ``done`` marker last, so a
    resumed run finds either the finished table or the partitions' files."""
    if work.done(_TABLE, 0) or involved.shape[0] == 0:
        return
    starts = np.asarray(meta.part_starts, dtype=np.int64)
    owner = np.searchsorted(starts, involved, side="right") - 1
    parts = distinct(owner).tolist()
    sources = [
        {name: work.load("pay", p, name, mmap=True) for name in ["rows", *_PROFILE_NAMES]}
        for p in parts
    ]
    sizes = {
        name: sum(int(src[name].shape[0]) for src in sources)
        for name in ["rows", "norm2", *_RAGGED]
    }
    rows_total = sizes["rows"]
    outputs: dict[str, np.ndarray] = {}
    for name in _PROFILE_NAMES:
        shape = (rows_total + 1,) if name.endswith("offsets") else (sizes[name],)
        outputs[name] = _open_table_file(work, name, sources[0][name].dtype, shape)
    counts = _open_table_file(work, "counts", np.dtype(np.int64), (rows_total, 4))
    row_of = _open_table_file(work, "row_of", np.dtype(np.int64), (len(meta.ids),))
    row_of[:] = -1
    at = dict.fromkeys(outputs, 0)
    row = 0
    for p, src in zip(parts, sources, strict=True):
        k = int(src["rows"].shape[0])
        row_of[np.asarray(src["rows"]) + starts[p]] = np.arange(row, row + k, dtype=np.int64)
        outputs["norm2"][row : row + k] = src["norm2"]
        for flat, offsets in _RAGGED.items():
            base = at[flat]
            size = int(src[flat].shape[0])
            outputs[flat][base : base + size] = src[flat]
            at[flat] = base + size
            if flat != "term_counts":
                outputs[offsets][row : row + k + 1] = np.asarray(src[offsets]) + base
        counts[row : row + k] = np.column_stack(row_counts(ProfileRows.from_arrays(src)))
        row += k
    for name, arr in [*outputs.items(), ("counts", counts), ("row_of", row_of)]:
        _close_table_file(work, name, arr)
    work.mark_done(_TABLE, 0)
    for p in parts:
        work.discard("pay", p, ["rows", *_PROFILE_NAMES])


def _open_table_file(work: WorkDir, name: str, dtype: np.dtype, shape: tuple[int, ...]) -> Any:
    target = work.file(f"{_TABLE}.{name}", 0)
    try:
        return np.lib.format.open_memmap(
            target.with_name(target.name + ".partial"), mode="w+", dtype=dtype, shape=shape
        )
    except OSError as exc:
        raise StoreError(f"cannot write {target}: {exc}") from exc


def _close_table_file(work: WorkDir, name: str, arr: Any) -> None:
    target = work.file(f"{_TABLE}.{name}", 0)
    try:
        arr.flush()
        del arr
        os.replace(target.with_name(target.name + ".partial"), target)
    except OSError as exc:
        raise StoreError(f"cannot write {target}: {exc}") from exc


def _mapped(file: Path) -> np.ndarray:
    """``file`` memory-mapped, from the process's cache while the file is the same one (a
    file written again, by another run, has another inode or time): lazy judging reads
    the table once a round, and mapping a file costs more than judging a few pairs."""
    try:
        st = os.stat(file)
        return _mapped_as(str(file), (st.st_ino, st.st_mtime_ns, st.st_size))
    except (OSError, ValueError) as exc:
        raise StoreError(f"work file {file.name} is unreadable: {exc}") from exc


@functools.lru_cache(maxsize=64)
def _mapped_as(file: str, stamp: tuple[int, int, int]) -> np.ndarray:
    arr: np.ndarray = np.load(file, mmap_mode="r")
    return np.asarray(arr)  # a plain view of the mapping (what the kernels take)


def release_profiles() -> None:
    """Unmap the work files :func:`_mapped` keeps (call when a run's judging is over, so
    that removing the work directory frees its disk space)."""
    _mapped_as.cache_clear()


def _table(work_path: Path) -> tuple[I64, I64, ProfileRows]:
    """The profile table: ``(row_of, counts, profiles)``, memory-mapped."""
    arrays = {name: _mapped(work_path / f"{_TABLE}.{name}-000000.npy") for name in _TABLE_NAMES}
    return arrays["row_of"], arrays["counts"], ProfileRows.from_arrays(arrays)


def _verify_chunk(
    chunk: I64, work_path: Path, rule: RuleConfig, features: str, question: str
) -> PairVerdicts:
    """The rule's verdicts on a chunk of pairs of document ordinals, reading the profiles in
    place from the table in the work directory (in this process, or on a
    :class:`LocalPool` worker, which shares the disk)."""
    row_of, counts, profiles = _table(work_path)
    return judge_pairs(row_of[chunk], profiles, rule, features, question, counts=counts)


def verify_stage(
    pairs: I64,
    config: DedupConfig,
    runner: Executor,
    work: WorkDir,
    mode: str,
    progress: bool,
) -> PairVerdicts:
    """The rule's verdict on every candidate pair, in chunks of at most ``_VERIFY_CHUNK``
    pairs (:func:`_chunk_size`); the features are kept for the related pairs in ``pairs``
    mode.  On an executor that shares the work directory (this process, a
    :class:`LocalPool`) a chunk's task reads its documents' profiles there; Dask workers
    may not see it, so there the driver gathers them and ships them with the chunk."""
    features = "related" if mode == "pairs" else "none"
    question = "verdict" if mode == "pairs" else "duplicate"
    ship = not runner.shares_work_dir
    bar = progress_bar(progress, "verifying", total=int(pairs.shape[0]), unit="pair")

    size = _chunk_size(int(pairs.shape[0]), runner.workers)

    def tasks() -> Iterator[tuple[Any, ...]]:
        for lo in range(0, pairs.shape[0], size):
            chunk = pairs[lo : lo + size]
            if ship:
                docs = distinct(chunk)
                row_of, _, profiles = _table(work.path)
                rows = profiles.take(row_of[docs])
                local = np.searchsorted(docs, chunk)
                yield (judge_pairs, local, rows, config.rule, features, question)
            else:
                yield (_verify_chunk, chunk, work.path, config.rule, features, question)

    results: list[PairVerdicts] = []
    for verdicts in runner.imap(call, tasks()):
        results.append(verdicts)
        bar.update(verdicts.labels.shape[0])
    bar.close()
    return PairVerdicts.concat(results)
