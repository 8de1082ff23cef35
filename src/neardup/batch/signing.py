"""Pass 1 of a batch run: read the corpus, keep each document's metadata, sign partitions.

Plain JSON Lines input is cut into byte ranges that the tasks read, parse and sign
themselves (:mod:`neardup.batch.ranges`); gzip and Parquet input is streamed by the driver
in partitions of ``partition_size`` documents.  Each partition's candidate keys come from
:func:`neardup.batch.tasks.sign_partition`; the driver checks duplicate ids in input order,
keeps only ids, dates, lengths and positions (:class:`Meta`), saves the keys to the work
directory (so an interrupted run resumes there) and routes them to the shuffle
(:class:`neardup.batch.shuffle.KeyShards`).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from neardup.batch.executors import Executor, call, progress_bar
from neardup.batch.io import (
    InputRecord,
    ReadStats,
    input_files,
    iter_records,
)
from neardup.batch.ranges import ByteRange, ParsedRange, date_key, parse_range, plan_ranges
from neardup.batch.results import DedupSummary
from neardup.batch.shuffle import KeyShards
from neardup.batch.tasks import DedupConfig, SignedPartition, sign_partition
from neardup.batch.workdir import WorkDir, save_arrays
from neardup.errors import ConflictError, StoreError
from neardup.records import FieldNames

I64 = npt.NDArray[np.int64]


# --- the corpus stream ---------------------------------------------------------------------


@dataclasses.dataclass
class Corpus:
    """Paths of the existing (``--against``) and new corpora, and how to read them."""

    new: list[Path]
    existing: list[Path]
    fields: FieldNames
    skip_invalid: bool

    @classmethod
    def of(
        cls,
        input: str | os.PathLike[str],
        against: str | os.PathLike[str] | None,
        fields: FieldNames | None,
        skip_invalid: bool,
    ) -> Corpus:
        """The corpus of a run's arguments (``fields=None``: the default field names)."""
        return cls(
            new=input_files(input),
            existing=input_files(against) if against is not None else [],
            fields=fields or FieldNames(),
            skip_invalid=skip_invalid,
        )

    def size_bytes(self) -> int:
        """The bytes of the input files as stored (compressed ones count compressed)."""
        return sum(p.stat().st_size for p in self.new + self.existing)

    def stream(self, stats: ReadStats | None = None) -> Iterator[tuple[bool, InputRecord]]:
        """``(is_existing, record)`` for every document, existing corpus first."""
        existing_stats = ReadStats()
        new_stats = stats if stats is not None else ReadStats()
        for record in iter_records(
            self.existing, fields=self.fields, skip_invalid=self.skip_invalid, stats=existing_stats
        ):
            yield True, record
        for record in iter_records(
            self.new, fields=self.fields, skip_invalid=self.skip_invalid, stats=new_stats
        ):
            yield False, record
        if stats is not None:
            merge_stats(stats, existing_stats)

    def partitions(
        self, size: int, stats: ReadStats | None = None
    ) -> Iterator[list[tuple[bool, InputRecord]]]:
        """The stream cut into lists of ``size`` documents."""
        batch: list[tuple[bool, InputRecord]] = []
        for item in self.stream(stats):
            batch.append(item)
            if len(batch) == size:
                yield batch
                batch = []
        if batch:
            yield batch


def merge_stats(stats: ReadStats, existing_stats: ReadStats) -> None:
    """Add the existing corpus's skipped-line counts (and first examples, up to 5) to
    ``stats``."""
    stats.invalid += existing_stats.invalid
    stats.duplicate_ids += existing_stats.duplicate_ids
    stats.examples.extend(existing_stats.examples[: max(0, 5 - len(stats.examples))])


# --- the pipeline --------------------------------------------------------------------------


@dataclasses.dataclass
class Meta:
    ids: list[str] = dataclasses.field(default_factory=list)
    existing: list[bool] = dataclasses.field(default_factory=list)
    dates: list[int] = dataclasses.field(default_factory=list)
    lengths: list[int] = dataclasses.field(default_factory=list)
    files: list[int] = dataclasses.field(default_factory=list)
    lines: list[int] = dataclasses.field(default_factory=list)
    part_starts: list[int] = dataclasses.field(default_factory=list)
    #: Each partition's byte range when the workers read their own (else empty).
    part_ranges: list[ByteRange] = dataclasses.field(default_factory=list)


@dataclasses.dataclass(frozen=True)
class SignInputs:
    """What the signing pass works with, whichever way it reads the input
    (:func:`sign_stage` or :func:`sign_stage_ranges`)."""

    corpus: Corpus
    config: DedupConfig
    runner: Executor
    work: WorkDir
    stats: ReadStats
    summary: DedupSummary
    progress: bool
    shuffle: KeyShards


def sign_stage(job: SignInputs) -> tuple[Meta, list[I64]]:
    meta = Meta()
    parts: list[I64] = []
    bar = progress_bar(job.progress, "signing")

    def tasks() -> Iterator[tuple[Any, ...]]:
        for p, batch in enumerate(job.corpus.partitions(job.config.partition_size, job.stats)):
            meta.part_starts.append(len(meta.ids))
            for is_existing, rec in batch:
                meta.ids.append(rec.article.id)
                meta.existing.append(is_existing)
                meta.dates.append(date_key(rec.article.date))
                meta.lengths.append(len(rec.article.text))
                # Where to find it again (existing files come first in read_at's list).
                meta.files.append(rec.file_index + (0 if is_existing else len(job.corpus.existing)))
                meta.lines.append(rec.line)
            if job.work.done("sig", p):
                job.summary.resumed_partitions += 1
                yield (_resume_signed, p, len(batch))
            else:
                texts = [rec.article.text for _, rec in batch]
                yield (_sign_task, p, texts, job.config)

    for p, result in enumerate(job.runner.imap(call, tasks())):
        lengths = _keep_signed(job.work, p, result, job.shuffle, meta.part_starts[p], parts)
        bar.update(int(lengths.shape[0]))
    bar.close()
    meta.part_starts.append(len(meta.ids))
    return meta, parts


# Bytes of input per range a worker reads itself, per document of --partition-size
# (Reuters-like news lines are about 1 KB).
_RANGE_BYTES_PER_DOC = 1024


def _range_task(
    part: ByteRange,
    fields: FieldNames,
    skip_invalid: bool,
    config: DedupConfig,
    sign: bool,
) -> tuple[ParsedRange, SignedPartition | None]:
    """Read, parse and (unless resumed) sign one byte range on the worker; the texts do not
    travel back."""
    parsed = parse_range(part, fields, skip_invalid)
    signed = None
    if sign and parsed.error is None:
        signed = _sign_task(0, parsed.texts, config)
    return dataclasses.replace(parsed, texts=[]), signed


def _range_task_saving(
    part: ByteRange,
    fields: FieldNames,
    skip_invalid: bool,
    config: DedupConfig,
    sign: bool,
    work_path: Path,
    index: int,
) -> tuple[ParsedRange, bool]:
    """:func:`_range_task` for a :class:`LocalPool` worker, which shares the driver's disk:
    the signed arrays go straight to the work directory (without the ``done`` marker) and
    only the parsed metadata travels back.  Returns whether arrays were saved."""
    parsed, signed = _range_task(part, fields, skip_invalid, config, sign)
    if signed is None:
        return parsed, False
    save_arrays(work_path, "sig", index, _signed_arrays(signed))
    return parsed, True


def _signed_arrays(signed: SignedPartition) -> dict[str, np.ndarray]:
    """The work-directory arrays of a signed partition."""
    return {"keys": signed.keys, "key_offsets": signed.key_offsets, "lengths": signed.lengths}


def _load_signed(work: WorkDir, p: int) -> SignedPartition:
    """A signed partition back from the work directory (as a worker saved it)."""
    return SignedPartition(
        work.load("sig", p, "keys"),
        work.load("sig", p, "key_offsets"),
        work.load("sig", p, "lengths"),
    )


def sign_stage_ranges(job: SignInputs) -> tuple[Meta, list[I64]]:
    """:func:`sign_stage` with the workers reading their own byte ranges of the input
    (:mod:`neardup.batch.ranges`); the driver checks duplicate ids in input order and keeps
    the same per-document metadata, so the result is the same."""
    target = max(1 << 16, job.config.partition_size * _RANGE_BYTES_PER_DOC)
    plan = [(True, r) for r in plan_ranges(job.corpus.existing, target)] + [
        (False, r) for r in plan_ranges(job.corpus.new, target, first_file=len(job.corpus.existing))
    ]
    meta = Meta()
    parts: list[I64] = []
    seen: dict[bool, set[str]] = {True: set(), False: set()}
    counts = {True: ReadStats(), False: job.stats}
    bar = progress_bar(job.progress, "signing")

    # Workers that share the work directory save their arrays there themselves.
    pool = job.runner.shares_work_dir and not job.runner.in_process

    def tasks() -> Iterator[tuple[Any, ...]]:
        for p, (_, part) in enumerate(plan):
            sign = not job.work.done("sig", p)
            job.summary.resumed_partitions += 0 if sign else 1
            args = (part, job.corpus.fields, job.corpus.skip_invalid, job.config, sign)
            if pool:
                yield (_range_task_saving, *args, job.work.path, p)
            else:
                yield (_range_task, *args)

    for p, (parsed, signed) in enumerate(job.runner.imap(call, tasks())):
        saved = False
        if pool:  # the worker saved the arrays (or resumed): taken from disk below
            saved, signed = bool(signed), None
        is_existing, part = plan[p]
        st = counts[is_existing]
        ids_seen = seen[is_existing]
        rows: list[int] = []
        notes: list[tuple[int, str]] = list(parsed.issues)
        for i, doc_id in enumerate(parsed.ids):
            if doc_id in ids_seen:
                line = int(parsed.lines[i])
                message = f"{part.path}:{line}: duplicate id {doc_id!r} (first occurrence is kept)"
                if not job.corpus.skip_invalid:
                    raise ConflictError(message)
                st.duplicate_ids += 1
                notes.append((line, message))
                continue
            ids_seen.add(doc_id)
            rows.append(i)
        if parsed.error is not None:
            raise parsed.error
        st.invalid += len(parsed.issues)
        for _, message in sorted(notes):
            st._note(message)
        st.documents += len(rows)
        take = np.asarray(rows, dtype=np.int64)
        meta.part_starts.append(len(meta.ids))
        meta.part_ranges.append(part)
        meta.ids.extend(parsed.ids[i] for i in rows)
        meta.existing.extend([is_existing] * len(rows))
        meta.dates.extend(parsed.dates[take].tolist())
        meta.lengths.extend(parsed.lengths[take].tolist())
        meta.files.extend([part.file_index] * len(rows))
        meta.lines.extend(parsed.lines[take].tolist())
        if saved and len(rows) != len(parsed.ids):
            signed = _load_signed(job.work, p)  # re-saved without dups
        elif saved:
            job.work.mark_done("sig", p)
        if signed is not None and len(rows) != len(parsed.ids):
            signed = signed.take(take)
        result = len(rows) if signed is None else signed
        _keep_signed(job.work, p, result, job.shuffle, meta.part_starts[p], parts)
        bar.update(len(rows))
    bar.close()
    merge_stats(job.stats, counts[True])
    meta.part_starts.append(len(meta.ids))
    return meta, parts


def _keep_signed(
    work: WorkDir,
    p: int,
    result: int | SignedPartition,
    shuffle: KeyShards,
    start: int,
    parts: list[I64],
) -> I64:
    """Keep partition ``p`` (first document ``start``): save its freshly signed arrays in the
    work directory, or (``result`` is an int: resumed) check the saved ones hold that many
    documents; route its keys to the shuffle and append its lengths to ``parts``.  Returns
    its lengths."""
    if isinstance(result, int):  # resumed: load from the work directory
        signed = _load_signed(work, p)
        if signed.lengths.shape[0] != result:
            raise StoreError(f"work directory partition {p} does not match the input")
    else:
        signed = result
        work.save("sig", p, _signed_arrays(signed))
    shuffle.add(signed.keys, signed.key_offsets, start)
    parts.append(signed.lengths)
    return signed.lengths


def _resume_signed(part: int, count: int) -> int:
    return count


def _sign_task(part: int, texts: list[str], config: DedupConfig) -> SignedPartition:
    """The candidate keys of a partition, computed on the worker."""
    return sign_partition(texts, config)
