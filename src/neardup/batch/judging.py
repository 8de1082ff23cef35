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
from neardup.batch.signing import Corpus, Meta
from neardup.batch.tasks import DedupConfig
from neardup.batch.verify import (
    PairVerdicts,
    ProfileRows,
)
from neardup.batch.verify import verify_pairs as judge_pairs
from neardup.batch.workdir import WorkDir
from neardup.errors import StoreError
from neardup.rule import RuleConfig

I64 = npt.NDArray[np.int64]

# Pairs judged per verification task: bounds the profiles shipped with one task.
_VERIFY_CHUNK = 50_000
# Fewest pairs per task when a stage is cut finer to keep every worker busy.
_MIN_CHUNK = 2_000


def _chunk_size(pairs: int, workers: int) -> int:
    """Pairs per verification task: at most ``_VERIFY_CHUNK``, and small enough that each
    worker gets about four tasks (the rounds of lazy judging are often far smaller than one
    full chunk, and one task per round would leave the other workers idle)."""
    if workers <= 1:
        return _VERIFY_CHUNK
    return max(_MIN_CHUNK, min(_VERIFY_CHUNK, -(-pairs // (4 * workers))))


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
    without content words (a ``dedup`` run)."""
    starts = np.asarray(meta.part_starts, dtype=np.int64)
    bar = progress_bar(progress, "profiling", total=int(involved.shape[0]))
    owner = np.searchsorted(starts, involved, side="right") - 1
    todo = [int(p) for p in distinct(owner) if not work.done("pay", int(p))]
    wanted = involved[np.isin(owner, todo)]
    files = np.asarray(meta.files, dtype=np.int64)[wanted]
    lines = np.asarray(meta.lines, dtype=np.int64)[wanted]
    objects = read_at(corpus.existing + corpus.new, files, lines)
    id_field, text_field = corpus.fields.id, corpus.fields.text

    def tasks() -> Iterator[tuple[Any, ...]]:
        for p in todo:
            docs = involved[owner == p]
            texts: list[str] = []
            for d in docs:
                obj = next(objects)
                # The same line must hold the same document as in the first pass.
                if str(obj.get(id_field)) != meta.ids[int(d)]:
                    raise StoreError("the input changed during the run; run again")
                texts.append(obj[text_field])
            yield (_profile_task, p, docs - starts[p], texts, config.rule, terms)

    for p, rows, profiles in runner.imap(call, tasks()):
        work.save("pay", p, {"rows": rows, **profiles.arrays()})
        bar.update(int(rows.shape[0]))
    bar.close()


def _profile_task(
    part: int, rows: I64, texts: list[str], rule: RuleConfig, terms: bool
) -> tuple[int, I64, ProfileRows]:
    return part, rows, partition_profiles(texts, rule, terms)


_PROFILE_NAMES = [f.name for f in dataclasses.fields(ProfileRows)]


def _mapped(file: Path) -> np.ndarray:
    """``file`` memory-mapped, from the process's cache while the file is the same one (a
    file written again, by another run, has another inode or time): lazy judging reads
    the same partitions once a round, and mapping a file costs more than judging a few
    pairs."""
    try:
        st = os.stat(file)
        return _mapped_as(str(file), (st.st_ino, st.st_mtime_ns, st.st_size))
    except (OSError, ValueError) as exc:
        raise StoreError(f"work file {file.name} is unreadable: {exc}") from exc


@functools.lru_cache(maxsize=4096)
def _mapped_as(file: str, stamp: tuple[int, int, int]) -> np.ndarray:
    arr: np.ndarray = np.load(file, mmap_mode="r")
    return arr


def release_profiles() -> None:
    """Unmap the work files :func:`_mapped` keeps (call when a run's judging is over, so
    that removing the work directory frees its disk space)."""
    _mapped_as.cache_clear()


def _gather_profiles(work_path: Path, starts: I64, docs: I64) -> ProfileRows:
    """The saved profiles of documents ``docs`` (ascending ordinals; partitions start at
    ``starts``), read memory-mapped from the work directory: only their pages are touched."""
    owner = np.searchsorted(starts, docs, side="right") - 1
    pieces: list[ProfileRows] = []
    for p in distinct(owner).tolist():  # docs are sorted: partitions come in order
        local = docs[owner == p] - starts[p]
        arrays: dict[str, np.ndarray] = {}
        for name in ["rows", *_PROFILE_NAMES]:
            arrays[name] = _mapped(work_path / f"pay.{name}-{p:06d}.npy")
        where = np.searchsorted(arrays["rows"], local)
        pieces.append(ProfileRows.from_arrays(arrays).take(where))
    return ProfileRows.concat(pieces)


def _verify_chunk(
    chunk: I64, work_path: Path, starts: I64, rule: RuleConfig, features: str, question: str
) -> PairVerdicts:
    """The rule's verdicts on a chunk of pairs of document ordinals, reading the profiles
    from the work directory (in this process, or on a :class:`LocalPool` worker, which
    shares the disk)."""
    docs = distinct(chunk)
    return judge_pairs(
        np.searchsorted(docs, chunk),
        _gather_profiles(work_path, starts, docs),
        rule,
        features,
        question,
    )


def verify_stage(
    pairs: I64,
    config: DedupConfig,
    runner: Executor,
    work: WorkDir,
    meta: Meta,
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
    starts = np.asarray(meta.part_starts, dtype=np.int64)
    ship = not runner.shares_work_dir
    bar = progress_bar(progress, "verifying", total=int(pairs.shape[0]), unit="pair")

    size = _chunk_size(int(pairs.shape[0]), runner.workers)

    def tasks() -> Iterator[tuple[Any, ...]]:
        for lo in range(0, pairs.shape[0], size):
            chunk = pairs[lo : lo + size]
            if ship:
                docs = distinct(chunk)
                rows = _gather_profiles(work.path, starts, docs)
                local = np.searchsorted(docs, chunk)
                yield (judge_pairs, local, rows, config.rule, features, question)
            else:
                yield (_verify_chunk, chunk, work.path, starts, config.rule, features, question)

    results: list[PairVerdicts] = []
    for verdicts in runner.imap(call, tasks()):
        results.append(verdicts)
        bar.update(verdicts.labels.shape[0])
    bar.close()
    return PairVerdicts.concat(results)
