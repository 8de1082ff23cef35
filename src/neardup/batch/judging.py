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
from neardup.batch.executors import Executor, InProcess, Task, call, progress_bar
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
        work.save("pay", p, _saved_profiles(rows, profiles))
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
    save_arrays(work_path, "pay", p, _saved_profiles(rows, profiles))
    return p, int(rows.shape[0])


def _saved_profiles(rows: I64, profiles: ProfileRows) -> dict[str, np.ndarray]:
    """A partition's profiles as saved: their partition ``rows``, arrays and
    :func:`~neardup.batch.verify.row_counts` (made here, by the tasks that profile)."""
    return {"rows": rows, "counts": np.column_stack(row_counts(profiles)), **profiles.arrays()}


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
# The work files of a partition's profiles.
_SAVED_NAMES = ["rows", "counts", *_PROFILE_NAMES]


def start_table_stage(runner: Executor, work: WorkDir, meta: Meta, involved: I64) -> Task:
    """:func:`table_stage` on a pool worker (the driver meanwhile prepares the judging),
    else in this process (run to completion here; Dask workers may not share the work
    directory).  The table is ready once the returned task's ``result()`` has returned."""
    args = (work, np.asarray(meta.part_starts, dtype=np.int64), len(meta.ids), involved)
    if runner.shares_work_dir and not runner.in_process:
        return runner.start(call, table_stage, *args)
    return InProcess().start(table_stage, *args)


def table_stage(work: WorkDir, part_starts: I64, documents: int, involved: I64) -> None:
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
    starts = part_starts
    owner = np.searchsorted(starts, involved, side="right") - 1
    parts = distinct(owner).tolist()
    sources = [{name: work.load("pay", p, name, mmap=True) for name in _SAVED_NAMES} for p in parts]
    sizes = {
        name: sum(int(src[name].shape[0]) for src in sources)
        for name in ["rows", "norm2", *_RAGGED]
    }
    rows_total = sizes["rows"]
    row_of = np.full(documents, -1, dtype=np.int64)
    outputs: dict[str, _TableFile] = {}
    try:
        for name in _PROFILE_NAMES:
            shape = (rows_total + 1,) if name.endswith("offsets") else (sizes[name],)
            outputs[name] = _TableFile(work, name, sources[0][name].dtype, shape)
        outputs["counts"] = _TableFile(work, "counts", np.dtype(np.int64), (rows_total, 4))
        at = dict.fromkeys(_RAGGED, 0)
        row = 0
        for p, src in zip(parts, sources, strict=True):
            k = int(src["rows"].shape[0])
            row_of[np.asarray(src["rows"]) + starts[p]] = np.arange(row, row + k)
            outputs["norm2"].write(src["norm2"])
            for flat, offsets in _RAGGED.items():
                outputs[flat].write(src[flat])
                if flat != "term_counts":  # its offsets are the terms'
                    # Each partition's offsets without its last (the next one's first).
                    outputs[offsets].write(np.asarray(src[offsets][:-1]) + at[flat])
                at[flat] += int(src[flat].shape[0])
            outputs["counts"].write(src["counts"])
            row += k
        for flat, offsets in _RAGGED.items():
            if flat != "term_counts":
                outputs[offsets].write(np.array([at[flat]], dtype=np.int64))
        outputs["row_of"] = _TableFile(work, "row_of", np.dtype(np.int64), (documents,))
        outputs["row_of"].write(row_of)
        for table_file in outputs.values():
            table_file.commit()
    finally:
        for table_file in outputs.values():
            table_file.close()
    work.mark_done(_TABLE, 0)
    for p in parts:
        work.discard("pay", p, _SAVED_NAMES)


class _TableFile:
    """One array of the profile table, written front to back as a ``.npy`` file (the
    header for its final shape, then the pieces in order: sequential writes, where
    filling a new memory-mapped file faulted every page in) and put in place by
    :meth:`commit` once complete."""

    def __init__(self, work: WorkDir, name: str, dtype: np.dtype, shape: tuple[int, ...]) -> None:
        self.target = work.file(f"{_TABLE}.{name}", 0)
        self.partial = self.target.with_name(self.target.name + ".partial")
        self.dtype = dtype
        self.size = int(np.prod(shape))
        self.written = 0
        try:
            self.fh = self.partial.open("wb")
            header = {"descr": np.lib.format.dtype_to_descr(dtype), "fortran_order": False}
            np.lib.format.write_array_header_1_0(self.fh, {**header, "shape": shape})
        except OSError as exc:
            raise StoreError(f"cannot write {self.target}: {exc}") from exc

    def write(self, piece: np.ndarray) -> None:
        data = np.ascontiguousarray(piece, dtype=self.dtype)
        self.written += int(data.size)
        try:
            self.fh.write(data.reshape(-1).view(np.uint8).data)
        except OSError as exc:
            raise StoreError(f"cannot write {self.target}: {exc}") from exc

    def commit(self) -> None:
        if self.written != self.size:
            raise AssertionError(f"{self.target.name}: {self.written} of {self.size} values")
        try:
            self.fh.close()
            os.replace(self.partial, self.target)
        except OSError as exc:
            raise StoreError(f"cannot write {self.target}: {exc}") from exc

    def close(self) -> None:
        """Close the file; remove it unless committed."""
        self.fh.close()
        self.partial.unlink(missing_ok=True)


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


def _chunk_task(
    chunk: I64, config: DedupConfig, runner: Executor, work: WorkDir, mode: str
) -> tuple[Any, ...]:
    """The task judging ``chunk`` (pairs of document ordinals), as ``(fn, *args)``: on an
    executor that shares the work directory (this process, a :class:`LocalPool`) it reads
    its documents' profiles there; Dask workers may not see it, so there the driver gathers
    them and ships them with the chunk.  ``pairs`` mode keeps the related pairs' features."""
    features = "related" if mode == "pairs" else "none"
    question = "verdict" if mode == "pairs" else "duplicate"
    if not runner.shares_work_dir:
        docs = distinct(chunk)
        row_of, _, profiles = _table(work.path)
        rows = profiles.take(row_of[docs])
        local = np.searchsorted(docs, chunk)
        return (judge_pairs, local, rows, config.rule, features, question)
    return (_verify_chunk, chunk, work.path, config.rule, features, question)


def verify_stage(
    pairs: I64,
    config: DedupConfig,
    runner: Executor,
    work: WorkDir,
    mode: str,
    progress: bool,
) -> PairVerdicts:
    """The rule's verdict on every candidate pair, in chunks of at most ``_VERIFY_CHUNK``
    pairs (:func:`_chunk_size`, :func:`_chunk_task`)."""
    bar = progress_bar(progress, "verifying", total=int(pairs.shape[0]), unit="pair")
    size = _chunk_size(int(pairs.shape[0]), runner.workers)
    tasks = (
        _chunk_task(pairs[lo : lo + size], config, runner, work, mode)
        for lo in range(0, pairs.shape[0], size)
    )
    results: list[PairVerdicts] = []
    for verdicts in runner.imap(call, tasks):
        results.append(verdicts)
        bar.update(verdicts.labels.shape[0])
    bar.close()
    return PairVerdicts.concat(results)


class ChunkJudging:
    """Lazy judging's batches (:class:`neardup.batch.lazy.Judging`) as verification tasks on
    ``runner``: a batch is cut into one chunk for each idle worker (:func:`_chunk_size`),
    and each chunk's verdicts come back as soon as it is judged.

    On a pool, a worker counts as idle while it has fewer than two chunks: the second
    waits in its queue, so that the worker goes on judging while the driver takes the
    first one's verdicts and sweeps (without it, two workers waited 2-3 ms for the driver
    after every chunk).  A batch of fewer than ``_MIN_CHUNK`` pairs asked while every
    worker is busy is held back and sent with the next ones, or as soon as a worker has
    nothing to judge (sweeps late in the rounds often ask for a handful of pairs, and a
    task costs its dispatch whatever its size).  ``table``: the task making the profile
    table (:func:`start_table_stage`), waited for before the first chunk starts."""

    def __init__(
        self,
        pairs: I64,
        config: DedupConfig,
        runner: Executor,
        work: WorkDir,
        mode: str,
        table: Task,
    ) -> None:
        self.table: Task | None = table
        self.pairs = pairs
        self.config = config
        self.runner = runner
        self.work = work
        self.mode = mode
        self.depth = 1 if runner.in_process else 2
        self.tasks: list[tuple[Task, I64]] = []
        self.held: list[I64] = []

    def idle(self) -> int:
        return max(0, self.depth * self.runner.workers - len(self.tasks))

    def running(self) -> int:
        return len(self.tasks) + len(self.held)

    def start(self, todo: I64) -> None:
        if self.table is not None:
            self.table.result()
            self.table = None
        self.held.append(todo)
        if sum(t.shape[0] for t in self.held) >= _MIN_CHUNK or not self._all_busy():
            self._send()

    def next(self) -> tuple[I64, PairVerdicts]:
        if self.held and not self._all_busy():
            self._send()
        done = self.runner.first_done([task for task, _ in self.tasks])
        at = next(i for i, (task, _) in enumerate(self.tasks) if task is done)
        task, chunk = self.tasks.pop(at)
        verdicts: PairVerdicts = task.result()
        return chunk, verdicts

    def _all_busy(self) -> bool:
        return len(self.tasks) >= self.runner.workers

    def _send(self) -> None:
        todo = self.held[0] if len(self.held) == 1 else np.concatenate(self.held)
        self.held = []
        size = _chunk_size(int(todo.shape[0]), max(1, self.idle()))
        for lo in range(0, todo.shape[0], size):
            chunk = todo[lo : lo + size]
            args = _chunk_task(self.pairs[chunk], self.config, self.runner, self.work, self.mode)
            self.tasks.append((self.runner.start(call, *args), chunk))
