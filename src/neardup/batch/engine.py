"""Batch corpus dedup: one process or a Dask cluster, identical output (issue 5; seed 002).

Pipeline (seed 002's "sketch -> Jaccard -> LCS", made parallel and streaming):

1. **Sign** (pass 1 over the input): plain JSON Lines input is cut into byte ranges that
   the tasks read, parse and sign themselves (:mod:`neardup.batch.ranges`; on Dask the
   workers read their own ranges); gzip and Parquet input is streamed by the driver in
   partitions of ``partition_size`` documents.  Each partition is signed by
   :func:`neardup.batch.tasks.sign_partition`, which also computes its bucket keys; the
   driver checks duplicate ids in input order, keeps only ids, dates, lengths and
   positions, and saves the keys (the MinHash word shingles when verification needs them,
   and the signature values when a later stage needs them) to the work directory, so an
   interrupted run resumes there.
2. **Shuffle**: every document's bucket keys (:mod:`neardup.batch.banding`) are routed to a
   shard by key; each shard is grouped by key on a worker and yields candidate pairs.
3. **Verify**: the exact shingle sets of the documents in some candidate pair come from the
   shingles kept in pass 1 (MinHash with Jaccard verification) or from a second pass that
   re-reads only those documents (LCS needs token sequences; other methods); pairs are then
   scored in parallel chunks.
4. **Merge**: union-find over the pairs that passed (:mod:`neardup.batch.unionfind`); the
   kept document of each cluster follows ``keep``.

Determinism: partitions depend only on the input (byte ranges or document counts), every
task is a pure function of its inputs, pairs are de-duplicated and sorted, and union-find
labels are canonical (smallest member), so the output is byte-identical whatever the number
of workers or shards, and with the single-process path.

Memory (driver): ids, dates, lengths and positions (~150 bytes/document), the bucket keys
(``bands * 12`` bytes/document: 384 bytes at the default 32 bands) and the candidate pairs;
kept shingles and signature values live in the work directory (memory-mapped when read
back); texts are never held beyond the partitions in flight.  Measured peak per million
documents: see ``docs/batch.md``.
"""

from __future__ import annotations

import collections
import concurrent.futures
import contextlib
import dataclasses
import datetime as dt
import json
import multiprocessing
import os
import re
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from json.encoder import encode_basestring  # type: ignore[attr-defined]
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import xxhash
from tqdm import tqdm

from neardup.batch.banding import shard_of, unique_pairs
from neardup.batch.io import (
    AtomicJsonlWriter,
    InputRecord,
    ReadStats,
    atomic_write_bytes,
    check_complete,
    input_files,
    input_fingerprint,
    iter_records,
    read_at,
)
from neardup.batch.ranges import ByteRange, ParsedRange, parse_range, plan_ranges, splittable
from neardup.batch.tasks import (
    DedupConfig,
    PairScores,
    Payload,
    SignedPartition,
    candidate_pairs,
    keeps_shingles,
    pair_relation,
    partition_keys,
    payload_from_shingles,
    payload_partition,
    sign_minhash_partition,
    sign_partition,
    verify_pairs,
)
from neardup.batch.unionfind import component_labels
from neardup.config import canonical_json
from neardup.errors import ConfigError, ConflictError, IncompleteOutputError, StoreError
from neardup.records import FieldNames

__all__ = [
    "DedupResult",
    "DedupSummary",
    "Runner",
    "dedup",
    "find_pairs",
    "run",
]

U64 = npt.NDArray[np.uint64]
I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]
# A signed partition as a signing task returns it: bucket keys, signatures, and the word
# shingles (flat, offsets) when they are kept for verification.
_Signed = tuple[U64, SignedPartition, tuple[U64, I64] | None]

_NO_DATE = np.iinfo(np.int64).max
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
# Pairs scored per verification task: bounds the payload shipped with one task.
_VERIFY_CHUNK = 50_000
# Without --scheduler or --workers, inputs smaller than this, or machines with fewer than
# _LOCAL_MIN_CPUS cores, run in-process: on a 2-core machine shared with other jobs the
# second core is often busy, and a pool costs some CPU (warm-up, transfers) that one process
# does not pay (docs/batch.md); --workers 2 asks for the pool explicitly.
_LOCAL_BYTES = 256 << 20
_LOCAL_MIN_CPUS = 4
# Shards of the key shuffle (at least; two per worker).
_MIN_SHARDS = 8
# How long to wait for a Dask scheduler given with --scheduler.
SCHEDULER_TIMEOUT = "20s"


# Argument types shipped to Dask workers by scatter rather than inside the task graph.
_BULKY = (list, np.ndarray, Payload, SignedPartition)

# --- running tasks -----------------------------------------------------------------------


class LocalPool:
    """``workers`` processes on this machine, without Dask: what ``--workers N`` starts when
    no scheduler is given.

    A Dask LocalCluster costs seconds of start-up (scheduler, nanny and worker processes,
    each importing neardup and loading the compiled kernels: 2.6 CPU seconds more than one
    process on the 50k benchmark), which on a 2-core machine ate the gain of the second
    core.  Here the driver loads the kernels once (:func:`_warm_up`) and *forks* the workers
    (on Linux; elsewhere they are spawned), so a worker starts with everything loaded and
    costs milliseconds.  The workers are started at once, before the run creates any
    thread of its own (progress bars).  Tasks are the same pure functions as on Dask; with
    plain JSON Lines input each worker reads its own byte ranges, writes its arrays to the
    work directory and sends back only ids, dates, lengths and line numbers, so the output
    is byte-identical to one process (tested).
    """

    def __init__(self, workers: int) -> None:
        self.workers = workers
        method = "fork" if sys.platform.startswith("linux") else "spawn"
        self.executor = concurrent.futures.ProcessPoolExecutor(
            max_workers=workers, mp_context=multiprocessing.get_context(method)
        )
        # The first task starts every worker process now (a forking executor starts them
        # all at its first submit), while this process has no other threads.
        self.executor.submit(int).result()

    def submit(self, fn: Callable[..., Any], *args: Any) -> concurrent.futures.Future[Any]:
        """Run ``fn(*args)`` on a worker."""
        return self.executor.submit(fn, *args)

    def close(self) -> None:
        """Stop the workers (idempotent)."""
        self.executor.shutdown(wait=True, cancel_futures=True)


def _warm_up(config: DedupConfig) -> None:
    """Load the compiled kernels of the signing pass in this process (before a
    :class:`LocalPool` forks, so its workers inherit them instead of each loading them)."""
    text = "warm up the compiled kernels of the signing pass once"
    if config.method == "minhash":
        sign_minhash_partition([text], config)
    else:
        sign_partition([text], config)


class Runner:
    """Runs pure task functions in order: in-process, on a :class:`LocalPool`, or on a Dask
    client (bounded in flight).

    With ``client=None`` everything runs in the calling process.  Otherwise tasks are
    submitted to ``client`` with at most ``max_in_flight`` outstanding, and results are
    yielded in submission order (so the driver's output never depends on timing).
    """

    def __init__(self, client: Any = None, max_in_flight: int | None = None) -> None:
        self.client = client
        workers = 1
        if isinstance(client, LocalPool):
            workers = client.workers
        elif client is not None:
            try:
                workers = max(1, len(client.scheduler_info().get("workers", {})))
            except Exception:  # a client that cannot report its workers: assume a few
                workers = 2
        self.workers = workers
        self.max_in_flight = max_in_flight or 2 * workers + 1

    def imap(self, fn: Callable[..., Any], arg_tuples: Iterable[tuple[Any, ...]]) -> Iterator[Any]:
        """``fn(*args)`` for each args tuple, in order."""
        if self.client is None:
            for args in arg_tuples:
                yield fn(*args)
            return
        pending: collections.deque[Any] = collections.deque()
        if isinstance(self.client, LocalPool):
            for args in arg_tuples:
                pending.append(self.client.submit(fn, *args))
                if len(pending) >= self.max_in_flight:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
            return
        for args in arg_tuples:
            # Bulky arguments (texts, arrays) go to the workers by scatter, not inside the
            # task graph (which Dask warns about and handles worse).
            shipped = [
                # scatter() of a list scatters its items: wrap it to ship it as one object.
                self.client.scatter([a], hash=False)[0] if isinstance(a, _BULKY) else a
                for a in args
            ]
            pending.append(self.client.submit(fn, *shipped, pure=False))
            if len(pending) >= self.max_in_flight:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()


# --- results -----------------------------------------------------------------------------


@dataclasses.dataclass
class DedupSummary:
    """Counts and timings of a run (what the CLI prints)."""

    documents: int = 0
    existing_documents: int = 0
    clusters: int = 0
    removed: int = 0
    empty: int = 0
    invalid: int = 0
    duplicate_ids: int = 0
    candidate_pairs: int = 0
    verified_pairs: int = 0
    resumed_partitions: int = 0
    seconds: float = 0.0
    stage_seconds: dict[str, float] = dataclasses.field(default_factory=dict)
    skipped_examples: list[str] = dataclasses.field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able values."""
        return dataclasses.asdict(self)


@dataclasses.dataclass
class DedupResult:
    """Everything a run computed, indexed by document ordinal (existing corpus first)."""

    ids: list[str]
    existing: npt.NDArray[np.bool_]
    labels: I64
    kept_of: I64
    score: F64
    pairs: I64
    scores: PairScores
    summary: DedupSummary

    @property
    def removed(self) -> npt.NDArray[np.bool_]:
        """Documents removed: new documents whose cluster keeps another document."""
        removed: npt.NDArray[np.bool_] = (self.kept_of != np.arange(len(self.ids))) & ~self.existing
        return removed

    def rows(self) -> Iterator[dict[str, Any]]:
        """One output row per new document, in input order."""
        ids = self.ids
        removed = self.removed
        for d in range(len(ids)):
            if self.existing[d]:
                continue
            cluster = ids[int(self.kept_of[d])]
            if removed[d]:
                score = float(self.score[d])
                yield {
                    "id": ids[d],
                    "cluster": cluster,
                    "duplicate_of": cluster,
                    "score": None if np.isnan(score) else round(score, 6),
                }
            else:
                yield {"id": ids[d], "cluster": cluster, "duplicate_of": None, "score": None}

    def row_text(self, batch: int = 20_000) -> Iterator[tuple[str, int]]:
        """:meth:`rows` already formatted as the output's JSON lines, ``batch`` documents at a
        time: ``(text, rows)``.  Byte-identical to ``json.dumps(row, ensure_ascii=False,
        separators=(",", ":"))`` of each row (tested): ids are quoted by the json module's own
        string encoder, once per document, and scores are ``repr`` of the rounded float, as
        json writes them.  0.03 s instead of 0.24 s for the 50k benchmark's rows (cProfile)."""
        quoted = [encode_basestring(i) for i in self.ids]
        removed = self.removed.tolist()
        existing = self.existing.tolist()
        kept_of = self.kept_of.tolist()
        score = self.score.tolist()
        lines: list[str] = []
        count = 0
        for d, q in enumerate(quoted):
            if existing[d]:
                continue
            cluster = quoted[kept_of[d]]
            if removed[d]:
                s = score[d]
                shown = "null" if s != s else repr(round(s, 6))  # s != s: NaN
                lines.append(
                    f'{{"id":{q},"cluster":{cluster},"duplicate_of":{cluster},"score":{shown}}}\n'
                )
            else:
                lines.append(f'{{"id":{q},"cluster":{cluster},"duplicate_of":null,"score":null}}\n')
            count += 1
            if count == batch:
                yield "".join(lines), count
                lines, count = [], 0
        if count:
            yield "".join(lines), count

    def pair_rows(self, config: DedupConfig) -> Iterator[dict[str, Any]]:
        """One row per pair that passed verification, sorted by (first, second) ordinal."""
        s = self.scores
        for k in np.flatnonzero(s.passed):
            a, b = int(self.pairs[k, 0]), int(self.pairs[k, 1])
            jac = float(s.jaccard[k])
            cont = float(s.containment[k])
            est = float(s.estimated[k])
            lcs = float(s.lcs[k])
            basis = jac if not np.isnan(jac) else (lcs if not np.isnan(lcs) else est)
            yield {
                "id_a": self.ids[a],
                "id_b": self.ids[b],
                "estimated": round(est, 6),
                "jaccard": None if np.isnan(jac) else round(jac, 6),
                "containment": None if np.isnan(cont) else round(cont, 6),
                "lcs": None if np.isnan(lcs) else round(lcs, 6),
                "relation": pair_relation(basis, 0.0 if np.isnan(cont) else cont, config),
            }


# --- the work directory (restartable runs) -------------------------------------------------


class _WorkDir:
    """Per-partition intermediate files, valid only for one run key."""

    def __init__(self, path: Path, run_key: str) -> None:
        self.path = path
        try:
            path.mkdir(parents=True, exist_ok=True)
            manifest = path / "manifest.json"
            current = None
            if manifest.exists():
                try:
                    current = json.loads(manifest.read_text("ascii")).get("run_key")
                except ValueError:
                    current = None
            if current != run_key:
                _remove_work_files(path)
                atomic_write_bytes(manifest, json.dumps({"run_key": run_key}).encode("ascii"))
        except OSError as exc:
            raise StoreError(f"cannot use work directory {path}: {exc}") from exc

    def _file(self, kind: str, part: int) -> Path:
        return self.path / f"{kind}-{part:06d}.npy"

    def file(self, kind: str, part: int) -> Path:
        """The path of one saved array (``kind`` is ``"sig.<name>"`` or ``"pay.<name>"``)."""
        return self._file(kind, part)

    def save(self, kind: str, part: int, arrays: dict[str, np.ndarray]) -> None:
        """Save named arrays atomically; the ``done`` marker file is written last."""
        _save_arrays(self.path, kind, part, arrays)
        self.mark_done(kind, part)

    def mark_done(self, kind: str, part: int) -> None:
        """Write the ``done`` marker of arrays saved without one (by a pool worker)."""
        atomic_write_bytes(self._file(f"{kind}.done", part), b"")

    def done(self, kind: str, part: int) -> bool:
        return self._file(f"{kind}.done", part).exists()

    def load(self, kind: str, part: int, name: str, mmap: bool = False) -> np.ndarray:
        try:
            arr: np.ndarray = np.load(
                self._file(f"{kind}.{name}", part), mmap_mode="r" if mmap else None
            )
        except (OSError, ValueError) as exc:
            raise StoreError(
                f"work file {kind}.{name} of partition {part} is unreadable: {exc}"
            ) from exc
        return arr

    def remove(self) -> None:
        """Delete this run's files (only those), then the directory if it is empty."""
        _remove_work_dir(self.path)


def _save_arrays(path: Path, kind: str, part: int, arrays: dict[str, np.ndarray]) -> None:
    """Save named arrays of a partition atomically in the work directory ``path``, without
    the ``done`` marker (:class:`_WorkDir` writes it; a pool worker leaves it to the driver,
    which first applies the duplicate-id check)."""
    for name, arr in arrays.items():
        target = path / f"{kind}.{name}-{part:06d}.npy"
        tmp = target.with_name(target.name + ".partial")
        try:
            with tmp.open("wb") as fh:
                np.save(fh, np.ascontiguousarray(arr), allow_pickle=False)
            os.replace(tmp, target)
        except OSError as exc:
            tmp.unlink(missing_ok=True)
            raise StoreError(f"cannot write {target}: {exc}") from exc


_WORK_FILE_RE = re.compile(
    r"(?:(?:sig|pay|shard)\.[a-z_]+-\d{6}\.npy|manifest\.json)(?:\.partial)?"
)


def _remove_work_files(path: Path) -> None:
    """Remove the files a run put in ``path``; anything else a user keeps there stays."""
    if not path.is_dir():
        return
    for child in path.iterdir():
        if child.is_file() and _WORK_FILE_RE.fullmatch(child.name):
            child.unlink(missing_ok=True)


def _remove_work_dir(path: Path) -> None:
    """Remove the files a run put in ``path``, then ``path`` itself if that left it empty."""
    _remove_work_files(path)
    with contextlib.suppress(OSError):
        path.rmdir()


# --- the corpus stream ---------------------------------------------------------------------


@dataclasses.dataclass
class _Corpus:
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
    ) -> _Corpus:
        """The corpus of a run's arguments (``fields=None``: the default field names)."""
        return cls(
            new=input_files(input),
            existing=input_files(against) if against is not None else [],
            fields=fields or FieldNames(),
            skip_invalid=skip_invalid,
        )

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
            _merge_stats(stats, existing_stats)

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


def _merge_stats(stats: ReadStats, existing_stats: ReadStats) -> None:
    """Add the existing corpus's skipped-line counts (and first examples, up to 5) to
    ``stats``."""
    stats.invalid += existing_stats.invalid
    stats.duplicate_ids += existing_stats.duplicate_ids
    stats.examples.extend(existing_stats.examples[: max(0, 5 - len(stats.examples))])


def _date_us(value: dt.datetime | None) -> int:
    if value is None:
        return int(_NO_DATE)
    return (value - _EPOCH) // dt.timedelta(microseconds=1)


def _bar(progress: bool, desc: str, total: int | None = None, unit: str = "doc") -> tqdm:
    return tqdm(
        total=total,
        desc=desc,
        unit=unit,
        disable=not progress,
        file=sys.stderr,
        leave=False,
        dynamic_ncols=True,
        unit_scale=True,
    )


# --- the pipeline --------------------------------------------------------------------------


@dataclasses.dataclass
class _Meta:
    ids: list[str] = dataclasses.field(default_factory=list)
    existing: list[bool] = dataclasses.field(default_factory=list)
    dates: list[int] = dataclasses.field(default_factory=list)
    lengths: list[int] = dataclasses.field(default_factory=list)
    files: list[int] = dataclasses.field(default_factory=list)
    lines: list[int] = dataclasses.field(default_factory=list)
    part_starts: list[int] = dataclasses.field(default_factory=list)


@dataclasses.dataclass(frozen=True)
class _SignInputs:
    """What the signing pass works with, whichever way it reads the input
    (:func:`_sign_stage` or :func:`_sign_stage_ranges`)."""

    corpus: _Corpus
    config: DedupConfig
    runner: Runner
    work: _WorkDir
    stats: ReadStats
    summary: DedupSummary
    progress: bool
    shuffle: _KeyShards
    keep_values: bool
    keep_shingles: bool


def _sign_stage(job: _SignInputs) -> tuple[_Meta, list[SignedPartition]]:
    meta = _Meta()
    parts: list[SignedPartition] = []
    bar = _bar(job.progress, "signing")

    def tasks() -> Iterator[tuple[Any, ...]]:
        for p, batch in enumerate(job.corpus.partitions(job.config.partition_size, job.stats)):
            meta.part_starts.append(len(meta.ids))
            for is_existing, rec in batch:
                meta.ids.append(rec.article.id)
                meta.existing.append(is_existing)
                meta.dates.append(_date_us(rec.article.date))
                meta.lengths.append(len(rec.article.text))
                # Where to find it again (existing files come first in read_at's list).
                meta.files.append(rec.file_index + (0 if is_existing else len(job.corpus.existing)))
                meta.lines.append(rec.line)
            if job.work.done("sig", p):
                job.summary.resumed_partitions += 1
                yield (_resume_signed, p, len(batch))
            else:
                texts = [rec.article.text for _, rec in batch]
                yield (_sign_task, p, texts, job.config, job.keep_values, job.keep_shingles)

    for p, result in enumerate(job.runner.imap(_call, tasks())):
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
    keep_values: bool,
    keep_shingles: bool,
    sign: bool,
) -> tuple[ParsedRange, _Signed | None]:
    """Read, parse and (unless resumed) sign one byte range on the worker; the texts do not
    travel back."""
    parsed = parse_range(part, fields, skip_invalid)
    signed = None
    if sign and parsed.error is None:
        signed = _sign_task(0, parsed.texts, config, keep_values, keep_shingles)
    return dataclasses.replace(parsed, texts=[]), signed


def _range_task_saving(
    part: ByteRange,
    fields: FieldNames,
    skip_invalid: bool,
    config: DedupConfig,
    keep_values: bool,
    keep_shingles: bool,
    sign: bool,
    work_path: Path,
    index: int,
) -> tuple[ParsedRange, bool]:
    """:func:`_range_task` for a :class:`LocalPool` worker, which shares the driver's disk:
    the signed arrays go straight to the work directory (without the ``done`` marker) and
    only the parsed metadata travels back (at 1M documents the word shingles alone are
    1.2 GB, which pickling through a pipe would copy four times).  Returns whether arrays
    were saved."""
    parsed, signed = _range_task(
        part, fields, skip_invalid, config, keep_values, keep_shingles, sign
    )
    if signed is None:
        return parsed, False
    _save_arrays(work_path, "sig", index, _signed_arrays(signed))
    return parsed, True


def _signed_arrays(signed: _Signed) -> dict[str, np.ndarray]:
    """The work-directory arrays of a signed partition."""
    keys, part, shingles = signed
    arrays = {"keys": keys, "values": part.values, "lengths": part.lengths}
    if shingles is not None:
        arrays["shingles"], arrays["shingle_offsets"] = shingles
    return arrays


def _load_signed(work: _WorkDir, p: int, keep_shingles: bool) -> _Signed:
    """A signed partition back from the work directory (as a worker saved it)."""
    part = SignedPartition(work.load("sig", p, "values"), work.load("sig", p, "lengths"))
    shingles = None
    if keep_shingles:
        shingles = (work.load("sig", p, "shingles"), work.load("sig", p, "shingle_offsets"))
    return work.load("sig", p, "keys"), part, shingles


def _take_rows(signed: _Signed, rows: I64) -> _Signed:
    """Rows ``rows`` of a signed range (documents dropped as duplicate ids removed)."""
    keys, part, shingles = signed
    kept = SignedPartition(part.values[rows], part.lengths[rows])
    if shingles is not None:
        shingles = _gather_ragged(shingles[0], shingles[1], rows)
    return keys[rows], kept, shingles


def _sign_stage_ranges(job: _SignInputs) -> tuple[_Meta, list[SignedPartition]]:
    """:func:`_sign_stage` with the workers reading their own byte ranges of the input
    (:mod:`neardup.batch.ranges`); the driver checks duplicate ids in input order and keeps
    the same per-document metadata, so the result is the same."""
    target = max(1 << 16, job.config.partition_size * _RANGE_BYTES_PER_DOC)
    plan = [(True, r) for r in plan_ranges(job.corpus.existing, target)] + [
        (False, r) for r in plan_ranges(job.corpus.new, target, first_file=len(job.corpus.existing))
    ]
    meta = _Meta()
    parts: list[SignedPartition] = []
    seen: dict[bool, set[str]] = {True: set(), False: set()}
    counts = {True: ReadStats(), False: job.stats}
    bar = _bar(job.progress, "signing")

    pool = isinstance(job.runner.client, LocalPool)

    def tasks() -> Iterator[tuple[Any, ...]]:
        for p, (_, part) in enumerate(plan):
            sign = not job.work.done("sig", p)
            job.summary.resumed_partitions += 0 if sign else 1
            args = (
                part,
                job.corpus.fields,
                job.corpus.skip_invalid,
                job.config,
                job.keep_values,
                job.keep_shingles,
                sign,
            )
            if pool:
                yield (_range_task_saving, *args, job.work.path, p)
            else:
                yield (_range_task, *args)

    for p, (parsed, signed) in enumerate(job.runner.imap(_call, tasks())):
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
        meta.ids.extend(parsed.ids[i] for i in rows)
        meta.existing.extend([is_existing] * len(rows))
        meta.dates.extend(parsed.dates[take].tolist())
        meta.lengths.extend(parsed.lengths[take].tolist())
        meta.files.extend([part.file_index] * len(rows))
        meta.lines.extend(parsed.lines[take].tolist())
        if saved and len(rows) != len(parsed.ids):
            signed = _load_signed(job.work, p, job.keep_shingles)  # re-saved without dups
        elif saved:
            job.work.mark_done("sig", p)
        if signed is not None and len(rows) != len(parsed.ids):
            signed = _take_rows(signed, take)
        result = len(rows) if signed is None else signed
        _keep_signed(job.work, p, result, job.shuffle, meta.part_starts[p], parts)
        bar.update(len(rows))
    bar.close()
    _merge_stats(job.stats, counts[True])
    meta.part_starts.append(len(meta.ids))
    return meta, parts


def _keep_signed(
    work: _WorkDir,
    p: int,
    result: int | _Signed,
    shuffle: _KeyShards,
    start: int,
    parts: list[SignedPartition],
) -> I64:
    """Keep partition ``p`` (first document ``start``): save its freshly signed arrays in the
    work directory, or (``result`` is an int: resumed) check the saved ones hold that many
    documents; route its bucket keys to the shuffle and append it to ``parts``.  Returns
    its lengths."""
    if isinstance(result, int):  # resumed: load from the work directory
        keys = work.load("sig", p, "keys")
        lengths: I64 = work.load("sig", p, "lengths")
        if lengths.shape[0] != result:
            raise StoreError(f"work directory partition {p} does not match the input")
    else:
        keys, part, _ = result
        lengths = part.lengths
        work.save("sig", p, _signed_arrays(result))
    shuffle.add(keys, start)
    # Keep only the small lengths in memory; the values (when needed at all) are read
    # back memory-mapped for the few documents that end up in candidate pairs.
    parts.append(SignedPartition(work.load("sig", p, "values", mmap=True), lengths))
    return lengths


def _call(fn: Callable[..., Any], *args: Any) -> Any:
    return fn(*args)


def _resume_signed(part: int, count: int) -> int:
    return count


def _sign_task(
    part: int, texts: list[str], config: DedupConfig, keep_values: bool, keep_shingles: bool
) -> _Signed:
    """Sign a partition and compute its bucket keys on the worker; the signature values
    travel back only when a later stage needs them (they are 1 KB a document for MinHash).
    With ``keep_shingles`` the word shingles come back too (saved for verification, so
    candidates need not be re-read and re-tokenised)."""
    shingles: tuple[U64, I64] | None = None
    if keep_shingles:
        signed, flat, offsets = sign_minhash_partition(texts, config)
        shingles = (flat, offsets)
    else:
        signed = sign_partition(texts, config)
    keys = partition_keys(signed, config)
    if not keep_values:
        empty = np.empty((signed.values.shape[0], 0), dtype=np.uint64)
        signed = SignedPartition(empty, signed.lengths)
    return keys, signed, shingles


def _needs_values(config: DedupConfig, mode: str) -> bool:
    """Whether signature values are needed after the shuffle: for the estimate in pairs
    output, for ``verify="none"`` and for SimHash's distance filter."""
    return mode == "pairs" or config.verify == "none" or config.method == "simhash"


class _KeyShards:
    """Bucket keys of every document, routed to shards as partitions arrive (the map side
    of the shuffle): 12 bytes per key."""

    def __init__(self, config: DedupConfig, shards: int) -> None:
        self.config = config
        self.shards = shards
        self.keys: list[list[U64]] = [[] for _ in range(shards)]
        self.docs: list[list[npt.NDArray[np.int32]]] = [[] for _ in range(shards)]

    def add(self, keys: U64, start: int) -> None:
        n, per_doc = keys.shape
        docs = np.repeat(np.arange(start, start + n, dtype=np.int64), per_doc)
        flat = keys.reshape(-1)
        live = flat != 0
        flat, docs = flat[live], docs[live]
        where = shard_of(flat, self.shards)
        if self.shards <= 256:
            # numpy's stable sort of 8-bit integers is a radix sort: several times faster.
            where = where.astype(np.uint8)
        order = np.argsort(where, kind="stable")
        bounds = np.searchsorted(where[order], np.arange(self.shards + 1))
        for s in range(self.shards):
            sel = order[bounds[s] : bounds[s + 1]]
            self.keys[s].append(flat[sel])
            self.docs[s].append(docs[sel].astype(np.int32 if start + n < 2**31 else np.int64))


def _shuffle_stage(
    shuffle: _KeyShards, config: DedupConfig, runner: Runner, progress: bool, work: _WorkDir
) -> I64:
    shards = shuffle.shards
    shard_keys, shard_docs = shuffle.keys, shuffle.docs
    bar = _bar(progress, "buckets", total=shards, unit="shard")
    pool = isinstance(runner.client, LocalPool)

    def tasks() -> Iterator[tuple[Any, ...]]:
        for s in range(shards):
            keys = np.concatenate(shard_keys[s]) if shard_keys[s] else np.empty(0, np.uint64)
            docs = np.concatenate(shard_docs[s]) if shard_docs[s] else np.empty(0, np.int32)
            shard_keys[s] = []
            shard_docs[s] = []
            if pool:
                # A pool worker reads its shard from the work directory: one write and one
                # read instead of pickling 12 bytes a key through a pipe.
                _save_arrays(work.path, "shard", s, {"keys": keys, "docs": docs})
                yield (
                    _shard_task,
                    work.file("shard.keys", s),
                    work.file("shard.docs", s),
                    config.max_bucket,
                )
            else:
                yield (candidate_pairs, keys, docs.astype(np.int64), config.max_bucket)

    found: list[I64] = []
    for pairs in runner.imap(_call, tasks()):
        found.append(pairs)
        bar.update(1)
    bar.close()
    if not found:
        return np.empty((0, 2), dtype=np.int64)
    return unique_pairs(np.concatenate(found))


def _shard_task(keys_file: Path, docs_file: Path, max_bucket: int) -> I64:
    """:func:`candidate_pairs` of a shard saved in the work directory (then removed)."""
    try:
        keys = np.load(keys_file)
        docs = np.load(docs_file).astype(np.int64)
    except (OSError, ValueError) as exc:
        raise StoreError(f"work file {keys_file.name} is unreadable: {exc}") from exc
    keys_file.unlink(missing_ok=True)
    docs_file.unlink(missing_ok=True)
    return candidate_pairs(keys, docs, max_bucket)


def _payload_stage(
    corpus: _Corpus,
    config: DedupConfig,
    runner: Runner,
    work: _WorkDir,
    meta: _Meta,
    involved: I64,
    progress: bool,
) -> None:
    starts = np.asarray(meta.part_starts, dtype=np.int64)
    bar = _bar(progress, "re-reading", total=int(involved.shape[0]))
    owner = np.searchsorted(starts, involved, side="right") - 1
    todo = [int(p) for p in np.unique(owner) if not work.done("pay", int(p))]
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
            yield (_payload_task, p, docs - starts[p], texts, config)

    for result in runner.imap(_call, tasks()):
        if isinstance(result, tuple):
            p, rows, payload = result
            _save_payload(work, p, rows, payload)
            bar.update(int(rows.shape[0]))
    bar.close()


def _payload_from_kept(work: _WorkDir, meta: _Meta, involved: I64, runner: Runner) -> None:
    """Verification payloads of the ``involved`` documents from the shingles the signing
    pass kept (no second read of the input); same arrays as :func:`_payload_stage`.

    On a :class:`LocalPool` the partitions are done by the workers, which read the work
    directory themselves (same machine); Dask workers may not see it, so there (and in one
    process) the driver does them."""
    starts = np.asarray(meta.part_starts, dtype=np.int64)
    owner = np.searchsorted(starts, involved, side="right") - 1
    todo = [p for p in np.unique(owner).tolist() if not work.done("pay", p)]

    def tasks() -> Iterator[tuple[Any, ...]]:
        for p in todo:
            rows = involved[owner == p] - starts[p]
            files = (work.file("sig.shingles", p), work.file("sig.shingle_offsets", p))
            yield (_kept_payload_task, p, rows, *files)

    local = runner if isinstance(runner.client, LocalPool) else Runner(None)
    for p, rows, payload in local.imap(_call, tasks()):
        _save_payload(work, p, rows, payload)


def _kept_payload_task(
    part: int, rows: I64, shingles_file: Path, offsets_file: Path
) -> tuple[int, I64, Payload]:
    """The payload of rows ``rows`` of partition ``part`` from its kept shingles (read
    memory-mapped: only those rows' pages are touched)."""
    try:
        flat = np.load(shingles_file, mmap_mode="r")
        offsets = np.load(offsets_file)
    except (OSError, ValueError) as exc:
        raise StoreError(f"work file of partition {part} is unreadable: {exc}") from exc
    return part, rows, payload_from_shingles(flat, offsets, rows)


def _save_payload(work: _WorkDir, p: int, rows: I64, payload: Payload) -> None:
    """Save partition ``p``'s verification payload of its documents ``rows``."""
    arrays: dict[str, np.ndarray] = {
        "rows": rows,
        "shingles": payload.shingles,
        "shingle_offsets": payload.shingle_offsets,
    }
    if payload.tokens is not None and payload.token_offsets is not None:
        arrays["tokens"] = payload.tokens
        arrays["token_offsets"] = payload.token_offsets
    work.save("pay", p, arrays)


def _payload_task(
    part: int, rows: I64, texts: list[str], config: DedupConfig
) -> tuple[int, I64, Payload]:
    return part, rows, payload_partition(texts, config)


def _gather_ragged(flat: np.ndarray, offsets: np.ndarray, rows: I64) -> tuple[U64, I64]:
    """Rows ``rows`` of a ragged array, as a new compact ragged array."""
    begin = offsets[rows]
    sizes = offsets[rows + 1] - begin
    new_offsets = np.zeros(rows.shape[0] + 1, dtype=np.int64)
    np.cumsum(sizes, out=new_offsets[1:])
    total = int(new_offsets[-1])
    index = np.repeat(begin - new_offsets[:-1], sizes) + np.arange(total, dtype=np.int64)
    return np.asarray(flat[index], dtype=np.uint64), new_offsets


def _verify_stage(
    pairs: I64,
    parts: list[SignedPartition],
    config: DedupConfig,
    runner: Runner,
    work: _WorkDir | None,
    meta: _Meta,
    mode: str,
    progress: bool,
) -> PairScores:
    starts = np.asarray(meta.part_starts, dtype=np.int64)
    # Signatures are read back only when a score needs them (memory, I/O).
    need_values = _needs_values(config, mode)
    width = (parts[0].values.shape[1] if parts else 1) if need_values else 0
    with_payload = work is not None
    with_tokens = config.verify == "lcs"
    cache: dict[int, dict[str, np.ndarray]] = {}

    def payload_of(p: int) -> dict[str, np.ndarray]:
        if p not in cache and work is not None:
            names = ["rows", "shingles", "shingle_offsets"]
            if with_tokens:
                names += ["tokens", "token_offsets"]
            cache[p] = {n: work.load("pay", p, n, mmap=True) for n in names}
        return cache[p]

    def gather(docs: I64) -> tuple[U64, I64, Payload | None]:
        values = np.empty((docs.shape[0], width), dtype=np.uint64)
        lengths = np.empty(docs.shape[0], dtype=np.int64)
        owner = np.searchsorted(starts, docs, side="right") - 1
        set_parts: list[tuple[U64, I64]] = []
        tok_parts: list[tuple[U64, I64]] = []
        for p in np.unique(owner):
            sel = np.flatnonzero(owner == p)
            local = docs[sel] - starts[p]
            if need_values:
                values[sel] = parts[p].values[local]
            lengths[sel] = parts[p].lengths[local]
            if with_payload:
                pay = payload_of(int(p))
                rows = np.searchsorted(pay["rows"], local)
                set_parts.append(_gather_ragged(pay["shingles"], pay["shingle_offsets"], rows))
                if with_tokens:
                    tok_parts.append(_gather_ragged(pay["tokens"], pay["token_offsets"], rows))
        payload = None
        if with_payload:
            payload = Payload(
                *_concat_ragged(set_parts),
                *(_concat_ragged(tok_parts) if with_tokens else (None, None)),
            )
        return values, lengths, payload

    bar = _bar(progress, "verifying", total=int(pairs.shape[0]), unit="pair")

    def tasks() -> Iterator[tuple[Any, ...]]:
        for lo in range(0, pairs.shape[0], _VERIFY_CHUNK):
            chunk = pairs[lo : lo + _VERIFY_CHUNK]
            docs = np.unique(chunk)
            local = np.searchsorted(docs, chunk)
            values, lengths, payload = gather(docs)
            yield (verify_pairs, local, values, lengths, payload, config, mode)

    results: list[PairScores] = []
    for scores in runner.imap(_call, tasks()):
        results.append(scores)
        bar.update(scores.passed.shape[0])
    bar.close()
    if not results:
        empty = np.empty(0, dtype=np.float64)
        return PairScores(empty, empty, empty, empty, np.empty(0, dtype=bool))
    return PairScores(
        *(
            np.concatenate([getattr(r, f.name) for r in results])
            for f in dataclasses.fields(PairScores)
        )
    )


def _concat_ragged(pieces: list[tuple[U64, I64]]) -> tuple[U64, I64]:
    """Concatenate ragged arrays in order."""
    flats = [f for f, _ in pieces]
    offsets = [np.zeros(1, dtype=np.int64)]
    base = 0
    for flat, off in pieces:
        offsets.append(off[1:] + base)
        base += int(flat.shape[0])
    flat_all = np.concatenate(flats) if flats else np.empty(0, dtype=np.uint64)
    return flat_all.astype(np.uint64, copy=False), np.concatenate(offsets)


def _choose_kept(labels: I64, meta: _Meta, existing: npt.NDArray[np.bool_], keep: str) -> I64:
    """For every document, the ordinal of its cluster's kept document."""
    n = labels.shape[0]
    ordinal = np.arange(n, dtype=np.int64)
    dates = np.asarray(meta.dates, dtype=np.int64)
    lengths = np.asarray(meta.lengths, dtype=np.int64)
    # lexsort: the last key is primary.  Existing documents always win (--against).
    if keep == "earliest":
        keys: tuple[np.ndarray, ...] = (ordinal, dates, ~existing, labels)
    elif keep == "longest":
        keys = (ordinal, -lengths, ~existing, labels)
    else:
        keys = (ordinal, ~existing, labels)
    order = np.lexsort(keys)
    first = np.ones(n, dtype=bool)
    first[1:] = labels[order][1:] != labels[order][:-1]
    kept_of_label = np.empty(n, dtype=np.int64)
    kept_of_label[labels[order][first]] = order[first]
    result: I64 = kept_of_label[labels]
    return result


def _best_scores(n: int, pairs: I64, scores: PairScores, config: DedupConfig) -> F64:
    """Per document, its highest verification score over the pairs that passed."""
    if config.verify == "jaccard":
        basis = scores.jaccard
    elif config.verify == "lcs":
        basis = scores.lcs
    else:
        basis = scores.estimated
    best = np.full(n, -np.inf)
    ok = scores.passed
    np.maximum.at(best, pairs[ok, 0], basis[ok])
    np.maximum.at(best, pairs[ok, 1], basis[ok])
    return np.where(np.isfinite(best), best, np.nan)


def _make_client(
    scheduler: str | None, workers: int | None, input_bytes: int, config: DedupConfig
) -> tuple[Any, Any]:
    """``(client, cluster)``: a Dask client for ``scheduler``; without one, a
    :class:`LocalPool` of ``workers`` processes (or of every core, for inputs of
    ``_LOCAL_BYTES`` or more on ``_LOCAL_MIN_CPUS`` cores or more), or none."""
    if scheduler is None:
        count = workers if workers is not None else (os.cpu_count() or 1)
        small = input_bytes < _LOCAL_BYTES or count < _LOCAL_MIN_CPUS
        if count <= 1 or (workers is None and small):
            return None, None
        _warm_up(config)
        pool = LocalPool(count)
        return pool, pool
    try:
        from distributed import Client
    except ImportError as exc:  # pragma: no cover - dask is a declared extra
        raise ConfigError("Dask is not installed: pip install 'neardup[dask]'") from exc
    try:
        return Client(scheduler, timeout=SCHEDULER_TIMEOUT), None  # type: ignore[no-untyped-call]
    except (OSError, TimeoutError, ValueError) as exc:
        raise StoreError(f"cannot reach the Dask scheduler {scheduler}: {exc}") from exc


def run_key(
    config: DedupConfig,
    corpus: _Corpus,
    mode: str,
) -> str:
    """A digest of everything that determines a run's output (config, inputs, mode)."""
    material = {
        "config": config.to_dict(),
        "mode": mode,
        "new": input_fingerprint(corpus.new),
        "existing": input_fingerprint(corpus.existing),
        "fields": dataclasses.asdict(corpus.fields),
        "skip_invalid": corpus.skip_invalid,
    }
    return xxhash.xxh64_hexdigest(canonical_json(material).encode("utf-8"), seed=0)


def run(
    input: str | os.PathLike[str],
    config: DedupConfig | None = None,
    *,
    against: str | os.PathLike[str] | None = None,
    fields: FieldNames | None = None,
    skip_invalid: bool = False,
    client: Any = None,
    work_dir: str | os.PathLike[str] | None = None,
    mode: str = "dedup",
    progress: bool = False,
    keep_work: bool = False,
    worker_reads: bool = True,
) -> DedupResult:
    """Run the pipeline and return the clusters (no output written).

    ``client``: a ``distributed.Client`` or a :class:`LocalPool` to run tasks on, or
    ``None`` for this process.
    ``worker_reads``: with a client and plain JSON Lines input, the workers read and parse
    their own byte ranges of the files (they must see the same paths); ``False`` makes the
    driver read everything and ship the texts (for clusters without shared storage).
    ``work_dir``: where intermediate files go (default: a new temporary directory); a run
    interrupted and started again with the same work directory and inputs resumes from the
    finished partitions.
    """
    cfg = config or DedupConfig()
    if mode not in ("dedup", "pairs"):
        raise ConfigError(f"mode must be 'dedup' or 'pairs', got {mode!r}")
    corpus = _Corpus.of(input, against, fields, skip_invalid)
    key = run_key(cfg, corpus, mode)
    use_ranges = worker_reads and splittable(corpus.existing + corpus.new)
    work = _WorkDir(
        Path(work_dir) if work_dir is not None else Path(tempfile.mkdtemp(prefix="neardup-")),
        # Partitions differ between the two reading modes: never resume across them.
        key + ("-ranges" if use_ranges else ""),
    )
    runner = Runner(client)
    summary = DedupSummary()
    stats = ReadStats()
    clock = time.perf_counter()

    t0 = time.perf_counter()
    # At least 8 shards: each shard's sort needs ~40 bytes a key at once, so smaller shards
    # bound the peak (1M documents: 25M keys); the shard count never changes the pairs.
    shuffle = _KeyShards(cfg, max(_MIN_SHARDS, runner.workers * 2))
    keep_shingles = keeps_shingles(cfg, mode)
    sign_stage = _sign_stage_ranges if use_ranges else _sign_stage
    meta, parts = sign_stage(
        _SignInputs(
            corpus=corpus,
            config=cfg,
            runner=runner,
            work=work,
            stats=stats,
            summary=summary,
            progress=progress,
            shuffle=shuffle,
            keep_values=_needs_values(cfg, mode),
            keep_shingles=keep_shingles,
        )
    )
    summary.stage_seconds["sign"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    pairs = _shuffle_stage(shuffle, cfg, runner, progress, work)
    summary.stage_seconds["shuffle"] = time.perf_counter() - t0
    summary.candidate_pairs = int(pairs.shape[0])

    needs_payload = cfg.verify != "none" or mode == "pairs"
    t0 = time.perf_counter()
    if needs_payload and pairs.shape[0]:
        involved = np.unique(pairs)
        if keep_shingles:
            _payload_from_kept(work, meta, involved, runner)
        else:
            _payload_stage(corpus, cfg, runner, work, meta, involved, progress)
    summary.stage_seconds["reread"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    # A local pool verifies in this process: the compiled scoring is cheaper than shipping
    # the gathered shingle sets to a worker (1M benchmark: 1.1 s here, 2.3 s through the
    # pool).  Dask workers may be many, on other machines: there the chunks go out.
    verifier = Runner(None) if isinstance(runner.client, LocalPool) else runner
    scores = _verify_stage(
        pairs, parts, cfg, verifier, work if needs_payload else None, meta, mode, progress
    )
    summary.stage_seconds["verify"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    n = len(meta.ids)
    existing = np.asarray(meta.existing, dtype=bool)
    ok = scores.passed
    labels = component_labels(n, pairs[ok, 0], pairs[ok, 1])
    kept_of = _choose_kept(labels, meta, existing, cfg.keep)
    best = _best_scores(n, pairs, scores, cfg)
    summary.stage_seconds["merge"] = time.perf_counter() - t0

    lengths = np.concatenate([p.lengths for p in parts]) if parts else np.empty(0, np.int64)
    result = DedupResult(meta.ids, existing, labels, kept_of, best, pairs, scores, summary)
    new = ~existing
    summary.documents = int(new.sum())
    summary.existing_documents = int(existing.sum())
    summary.removed = int(result.removed.sum())
    summary.clusters = int(np.unique(kept_of[new]).shape[0]) if n else 0
    summary.empty = int(((lengths == 0) & new).sum())
    summary.invalid = stats.invalid
    summary.duplicate_ids = stats.duplicate_ids
    summary.skipped_examples = list(stats.examples)
    summary.verified_pairs = int(ok.sum())
    summary.seconds = time.perf_counter() - clock
    if not keep_work:
        work.remove()
    return result


def _default_work_dir(output: Path) -> Path:
    return output.with_name(output.name + ".work")


def _already_done(paths: list[Path], key: str) -> dict[str, Any] | None:
    try:
        infos = [check_complete(p, key) for p in paths]
    except IncompleteOutputError:
        return None
    summary = infos[0].get("summary")
    return summary if isinstance(summary, dict) else None


def dedup(
    input: str | os.PathLike[str],
    output: str | os.PathLike[str],
    config: DedupConfig | None = None,
    *,
    write_kept: str | os.PathLike[str] | None = None,
    against: str | os.PathLike[str] | None = None,
    fields: FieldNames | None = None,
    skip_invalid: bool = False,
    client: Any = None,
    scheduler: str | None = None,
    workers: int | None = None,
    work_dir: str | os.PathLike[str] | None = None,
    progress: bool = False,
    worker_reads: bool = True,
) -> DedupSummary:
    """Deduplicate ``input`` and write one row per document to ``output`` (JSON Lines).

    Rows: ``{"id", "cluster", "duplicate_of", "score"}`` in input order.  With
    ``write_kept`` the kept documents are written with all their original fields.  Outputs
    are atomic with completion markers; if they are already complete for the same inputs and
    parameters the run is skipped (its summary is returned).  Without ``client`` or
    ``scheduler``: ``workers`` > 1 starts a :class:`LocalPool` of that many forked processes
    (no Dask); with ``workers=None`` a pool of one process per core is used only for inputs
    of 256 MB or more on machines with at least 4 cores, and this process otherwise.  For a
    Dask LocalCluster, start one and pass its client.  ``worker_reads``: see :func:`run`.
    """
    cfg = config or DedupConfig()
    out = Path(output)
    kept_path = Path(write_kept) if write_kept is not None else None
    return _run_and_write(
        input,
        out,
        kept_path,
        cfg,
        "dedup",
        against,
        fields,
        skip_invalid,
        client,
        scheduler,
        workers,
        work_dir,
        progress,
        worker_reads,
    )


def find_pairs(
    input: str | os.PathLike[str],
    output: str | os.PathLike[str],
    config: DedupConfig | None = None,
    *,
    against: str | os.PathLike[str] | None = None,
    fields: FieldNames | None = None,
    skip_invalid: bool = False,
    client: Any = None,
    scheduler: str | None = None,
    workers: int | None = None,
    work_dir: str | os.PathLike[str] | None = None,
    progress: bool = False,
    worker_reads: bool = True,
) -> DedupSummary:
    """Write every candidate pair that passed verification (``config.threshold`` is the
    minimum score) with its estimated and exact scores and a relation, as JSON Lines."""
    cfg = config or DedupConfig()
    return _run_and_write(
        input,
        Path(output),
        None,
        cfg,
        "pairs",
        against,
        fields,
        skip_invalid,
        client,
        scheduler,
        workers,
        work_dir,
        progress,
        worker_reads,
    )


def _run_and_write(
    input: str | os.PathLike[str],
    out: Path,
    kept_path: Path | None,
    cfg: DedupConfig,
    mode: str,
    against: str | os.PathLike[str] | None,
    fields: FieldNames | None,
    skip_invalid: bool,
    client: Any,
    scheduler: str | None,
    workers: int | None,
    work_dir: str | os.PathLike[str] | None,
    progress: bool,
    worker_reads: bool = True,
) -> DedupSummary:
    corpus = _Corpus.of(input, against, fields, skip_invalid)
    key = run_key(cfg, corpus, mode)
    targets = [out] + ([kept_path] if kept_path is not None else [])
    previous = _already_done(targets, key)
    if previous is not None:
        known = {f.name for f in dataclasses.fields(DedupSummary)}
        return DedupSummary(**{k: v for k, v in previous.items() if k in known})
    own_cluster = None
    if client is None:
        size = sum(p.stat().st_size for p in corpus.new + corpus.existing)
        client, own_cluster = _make_client(scheduler, workers, size, cfg)
    try:
        result = run(
            input,
            cfg,
            against=against,
            fields=fields,
            skip_invalid=skip_invalid,
            client=client,
            work_dir=work_dir or _default_work_dir(out),
            mode=mode,
            progress=progress,
            keep_work=True,
            worker_reads=worker_reads,
        )
    finally:
        if own_cluster is not None:
            client.close()
            own_cluster.close()
    summary = result.summary
    t0 = time.perf_counter()
    plain = summary.to_dict()
    if kept_path is not None:
        _write_kept(corpus, result, kept_path, key, plain, progress)
    with AtomicJsonlWriter(out, key, extra={"summary": plain}) as writer:
        if mode == "dedup":
            for text, count in result.row_text():
                writer.write_lines(text, count)
        else:
            for row in result.pair_rows(cfg):
                writer.write(row)
        writer.commit()
    summary.stage_seconds["write"] = time.perf_counter() - t0
    _remove_work_dir(Path(work_dir) if work_dir else _default_work_dir(out))
    return summary


def _write_kept(
    corpus: _Corpus,
    result: DedupResult,
    path: Path,
    key: str,
    summary: dict[str, Any],
    progress: bool,
) -> None:
    removed = result.removed
    offset = int(result.existing.sum())
    bar = _bar(progress, "writing kept")
    new_only = _Corpus(corpus.new, [], corpus.fields, corpus.skip_invalid)
    with AtomicJsonlWriter(path, key, extra={"summary": summary}) as writer:
        for _, record in new_only.stream():
            if not removed[offset + record.ordinal]:
                writer.write(record.raw)
            bar.update(1)
        writer.commit()
    bar.close()
