"""Batch corpus dedup: one process or a Dask cluster, identical output (seed 002).

Pipeline (seed 002's "sketch -> verify", made parallel and streaming, with the one
near-duplicate rule of :mod:`neardup.rule` as the verification):

1. **Sign** (pass 1 over the input): plain JSON Lines input is cut into byte ranges that
   the tasks read, parse and sign themselves (:mod:`neardup.batch.ranges`; on Dask the
   workers read their own ranges); gzip and Parquet input is streamed by the driver in
   partitions of ``partition_size`` documents.  Each partition's candidate keys (MinHash
   LSH bands and winnowed passage fingerprints of the rule's word shingles) come from
   :func:`neardup.batch.tasks.sign_partition`; the driver checks duplicate ids in input
   order, keeps only ids, dates, lengths and positions, and saves the keys to the work
   directory, so an interrupted run resumes there.
2. **Shuffle**: every document's keys are routed to a shard by key; each shard is grouped
   by key on a worker and yields candidate pairs (:mod:`neardup.batch.banding`).
3. **Profile**: a second pass re-reads only the documents in some candidate pair and makes
   their profiles (:func:`neardup.rule.profile`), saved per partition.
4. **Verify**: every candidate pair is judged by the rule, in parallel chunks
   (:mod:`neardup.batch.verify`): ``duplicate``, ``partial``, ``similar`` or
   ``unrelated``, with the rule's score and features.
5. **Cluster**: the ``duplicate`` verdicts make the clusters (:mod:`neardup.batch.unionfind`):
   by default greedy centers (every removed document is a duplicate of the document kept
   for it, preferred by ``keep``), or connected components (``clusters="components"``).

Determinism: partitions depend only on the input (byte ranges or document counts), every
task is a pure function of its inputs, pairs are de-duplicated and sorted, and both
clusterings depend only on the verdicts and the ``keep`` order, so the output is
byte-identical whatever the number of workers or shards, and with the single-process path.

Memory (driver): ids, dates, lengths and positions (~150 bytes/document), the candidate
keys (12 bytes each: 25 LSH bands and about one passage fingerprint per 14 words) and the
candidate pairs with their verdicts; profiles live in the work directory (memory-mapped
when read back); texts are never held beyond the partitions in flight.  Measured peak per
million documents: see ``docs/batch.md``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import json
import os
import re
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from json.encoder import encode_basestring  # type: ignore[attr-defined]
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import xxhash
from tqdm import tqdm

from neardup.batch.banding import shard_of, unique_pairs
from neardup.batch.executors import Executor, LocalPool, executor_for
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
from neardup.batch.profiles import partition_profiles
from neardup.batch.ranges import ByteRange, ParsedRange, parse_range, plan_ranges, splittable
from neardup.batch.tasks import DedupConfig, SignedPartition, candidate_pairs, sign_partition
from neardup.batch.unionfind import center_labels, component_labels
from neardup.batch.verify import (
    DUPLICATE,
    LABELS,
    UNRELATED,
    PairVerdicts,
    ProfileRows,
)
from neardup.batch.verify import verify_pairs as judge_pairs
from neardup.config import canonical_json
from neardup.errors import ConfigError, ConflictError, IncompleteOutputError, StoreError
from neardup.records import FieldNames
from neardup.rule import VERDICTS, RuleConfig

__all__ = [
    "DedupResult",
    "DedupSummary",
    "dedup",
    "find_pairs",
    "run",
]

U64 = npt.NDArray[np.uint64]
I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]

_NO_DATE = np.iinfo(np.int64).max
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
# Pairs judged per verification task: bounds the profiles shipped with one task.
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


# --- running tasks -----------------------------------------------------------------------


def _warm_up(config: DedupConfig) -> None:
    """Load the compiled kernels of the signing pass in this process (before a
    :class:`LocalPool` forks, so its workers inherit them instead of each loading them)."""
    text = "warm up the compiled kernels of the signing pass once"
    sign_partition([text], config)


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
    # Pairs the output is about: duplicate verdicts (dedup), related pairs written (pairs).
    verified_pairs: int = 0
    profiled_documents: int = 0
    verdicts: dict[str, int] = dataclasses.field(default_factory=dict)
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
    verdicts: PairVerdicts
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

    def pair_rows(self) -> Iterator[dict[str, Any]]:
        """One row per candidate pair the rule did not call ``unrelated``, sorted by (first,
        second) ordinal: ``id_a``, ``id_b``, ``relation`` (the verdict), ``score`` and
        ``features`` (as :meth:`neardup.rule.Verdict.to_dict` gives them).  Only a run in
        ``pairs`` mode keeps the features these rows need (none otherwise)."""
        v = self.verdicts
        for k, features in v.related():
            a, b = int(self.pairs[k, 0]), int(self.pairs[k, 1])
            yield {
                "id_a": self.ids[a],
                "id_b": self.ids[b],
                "relation": v.label(k),
                "score": round(float(v.scores[k]), 6),
                "features": features.to_dict(),
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
    r"(?:(?:sig|pay|shard)\.[a-z_0-9]+-\d{6}\.npy|manifest\.json)(?:\.partial)?"
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
    runner: Executor
    work: _WorkDir
    stats: ReadStats
    summary: DedupSummary
    progress: bool
    shuffle: _KeyShards


def _sign_stage(job: _SignInputs) -> tuple[_Meta, list[I64]]:
    meta = _Meta()
    parts: list[I64] = []
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
                yield (_sign_task, p, texts, job.config)

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
    _save_arrays(work_path, "sig", index, _signed_arrays(signed))
    return parsed, True


def _signed_arrays(signed: SignedPartition) -> dict[str, np.ndarray]:
    """The work-directory arrays of a signed partition."""
    return {"keys": signed.keys, "key_offsets": signed.key_offsets, "lengths": signed.lengths}


def _load_signed(work: _WorkDir, p: int) -> SignedPartition:
    """A signed partition back from the work directory (as a worker saved it)."""
    return SignedPartition(
        work.load("sig", p, "keys"),
        work.load("sig", p, "key_offsets"),
        work.load("sig", p, "lengths"),
    )


def _sign_stage_ranges(job: _SignInputs) -> tuple[_Meta, list[I64]]:
    """:func:`_sign_stage` with the workers reading their own byte ranges of the input
    (:mod:`neardup.batch.ranges`); the driver checks duplicate ids in input order and keeps
    the same per-document metadata, so the result is the same."""
    target = max(1 << 16, job.config.partition_size * _RANGE_BYTES_PER_DOC)
    plan = [(True, r) for r in plan_ranges(job.corpus.existing, target)] + [
        (False, r) for r in plan_ranges(job.corpus.new, target, first_file=len(job.corpus.existing))
    ]
    meta = _Meta()
    parts: list[I64] = []
    seen: dict[bool, set[str]] = {True: set(), False: set()}
    counts = {True: ReadStats(), False: job.stats}
    bar = _bar(job.progress, "signing")

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
            signed = _load_signed(job.work, p)  # re-saved without dups
        elif saved:
            job.work.mark_done("sig", p)
        if signed is not None and len(rows) != len(parsed.ids):
            signed = signed.take(take)
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
    result: int | SignedPartition,
    shuffle: _KeyShards,
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


def _call(fn: Callable[..., Any], *args: Any) -> Any:
    return fn(*args)


def _resume_signed(part: int, count: int) -> int:
    return count


def _sign_task(part: int, texts: list[str], config: DedupConfig) -> SignedPartition:
    """The candidate keys of a partition, computed on the worker."""
    return sign_partition(texts, config)


class _KeyShards:
    """Candidate keys of every document, routed to shards as partitions arrive (the map side
    of the shuffle): 12 bytes per key."""

    def __init__(self, config: DedupConfig, shards: int) -> None:
        self.config = config
        self.shards = shards
        self.keys: list[list[U64]] = [[] for _ in range(shards)]
        self.docs: list[list[npt.NDArray[np.int32]]] = [[] for _ in range(shards)]

    def add(self, keys: U64, key_offsets: I64, start: int) -> None:
        n = key_offsets.shape[0] - 1
        docs = np.repeat(np.arange(start, start + n, dtype=np.int64), np.diff(key_offsets))
        flat = np.asarray(keys, dtype=np.uint64)
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
    shuffle: _KeyShards, config: DedupConfig, runner: Executor, progress: bool, work: _WorkDir
) -> I64:
    shards = shuffle.shards
    shard_keys, shard_docs = shuffle.keys, shuffle.docs
    bar = _bar(progress, "buckets", total=shards, unit="shard")
    pool = runner.shares_work_dir and not runner.in_process

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


def _profile_stage(
    corpus: _Corpus,
    config: DedupConfig,
    runner: Executor,
    work: _WorkDir,
    meta: _Meta,
    involved: I64,
    terms: bool,
    progress: bool,
) -> None:
    """Profiles of the ``involved`` documents (those in some candidate pair), made from
    their texts re-read by (file, line), saved per partition (``pay``); ``terms=False``:
    without content words (a ``dedup`` run)."""
    starts = np.asarray(meta.part_starts, dtype=np.int64)
    bar = _bar(progress, "profiling", total=int(involved.shape[0]))
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
            yield (_profile_task, p, docs - starts[p], texts, config.rule, terms)

    for p, rows, profiles in runner.imap(_call, tasks()):
        work.save("pay", p, {"rows": rows, **profiles.arrays()})
        bar.update(int(rows.shape[0]))
    bar.close()


def _profile_task(
    part: int, rows: I64, texts: list[str], rule: RuleConfig, terms: bool
) -> tuple[int, I64, ProfileRows]:
    return part, rows, partition_profiles(texts, rule, terms)


_PROFILE_NAMES = [f.name for f in dataclasses.fields(ProfileRows)]


def _gather_profiles(work_path: Path, starts: I64, docs: I64) -> ProfileRows:
    """The saved profiles of documents ``docs`` (ascending ordinals; partitions start at
    ``starts``), read memory-mapped from the work directory: only their pages are touched."""
    owner = np.searchsorted(starts, docs, side="right") - 1
    pieces: list[ProfileRows] = []
    for p in np.unique(owner).tolist():  # docs are sorted: partitions come in order
        local = docs[owner == p] - starts[p]
        arrays: dict[str, np.ndarray] = {}
        for name in ["rows", *_PROFILE_NAMES]:
            file = work_path / f"pay.{name}-{p:06d}.npy"
            try:
                arrays[name] = np.load(file, mmap_mode="r")
            except (OSError, ValueError) as exc:
                raise StoreError(f"work file {file.name} is unreadable: {exc}") from exc
        where = np.searchsorted(arrays["rows"], local)
        pieces.append(ProfileRows.from_arrays(arrays).take(where))
    return ProfileRows.concat(pieces)


def _verify_chunk(
    chunk: I64, work_path: Path, starts: I64, rule: RuleConfig, features: str, question: str
) -> PairVerdicts:
    """The rule's verdicts on a chunk of pairs of document ordinals, reading the profiles
    from the work directory (in this process, or on a :class:`LocalPool` worker, which
    shares the disk)."""
    docs = np.unique(chunk)
    return judge_pairs(
        np.searchsorted(docs, chunk),
        _gather_profiles(work_path, starts, docs),
        rule,
        features,
        question,
    )


def _verify_stage(
    pairs: I64,
    config: DedupConfig,
    runner: Executor,
    work: _WorkDir,
    meta: _Meta,
    mode: str,
    progress: bool,
) -> PairVerdicts:
    """The rule's verdict on every candidate pair, in chunks of ``_VERIFY_CHUNK`` pairs;
    the features are kept for the related pairs in ``pairs`` mode.  On an executor that
    shares the work directory (this process, a :class:`LocalPool`) a chunk's task reads its
    documents' profiles there; Dask workers may not see it, so there the driver gathers
    them and ships them with the chunk."""
    features = "related" if mode == "pairs" else "none"
    question = "verdict" if mode == "pairs" else "duplicate"
    starts = np.asarray(meta.part_starts, dtype=np.int64)
    ship = not runner.shares_work_dir
    bar = _bar(progress, "verifying", total=int(pairs.shape[0]), unit="pair")

    def tasks() -> Iterator[tuple[Any, ...]]:
        for lo in range(0, pairs.shape[0], _VERIFY_CHUNK):
            chunk = pairs[lo : lo + _VERIFY_CHUNK]
            if ship:
                docs = np.unique(chunk)
                rows = _gather_profiles(work.path, starts, docs)
                local = np.searchsorted(docs, chunk)
                yield (judge_pairs, local, rows, config.rule, features, question)
            else:
                yield (_verify_chunk, chunk, work.path, starts, config.rule, features, question)

    results: list[PairVerdicts] = []
    for verdicts in runner.imap(_call, tasks()):
        results.append(verdicts)
        bar.update(verdicts.labels.shape[0])
    bar.close()
    return PairVerdicts.concat(results)


def _keep_rank(meta: _Meta, existing: npt.NDArray[np.bool_], keep: str) -> I64:
    """Every document's rank in the order of preference of the kept document (0: kept
    first): existing documents (``--against``) first, then by ``keep``, then input order."""
    n = existing.shape[0]
    ordinal = np.arange(n, dtype=np.int64)
    # lexsort: the last key is primary.
    if keep == "earliest":
        keys: tuple[np.ndarray, ...] = (ordinal, np.asarray(meta.dates, dtype=np.int64))
    elif keep == "longest":
        keys = (ordinal, -np.asarray(meta.lengths, dtype=np.int64))
    else:
        keys = (ordinal,)
    order = np.lexsort((*keys, ~existing))
    rank = np.empty(n, dtype=np.int64)
    rank[order] = ordinal
    return rank


def _choose_kept(labels: I64, rank: I64) -> I64:
    """For every document, the ordinal of its cluster's kept document (the best ranked)."""
    n = labels.shape[0]
    order = np.lexsort((rank, labels))
    first = np.ones(n, dtype=bool)
    first[1:] = labels[order][1:] != labels[order][:-1]
    kept_of_label = np.empty(n, dtype=np.int64)
    kept_of_label[labels[order][first]] = order[first]
    result: I64 = kept_of_label[labels]
    return result


def _clusters(
    n: int, pairs: I64, verdicts: PairVerdicts, rank: I64, existing: npt.NDArray[np.bool_], how: str
) -> tuple[I64, I64, F64]:
    """``(labels, kept_of, score)`` of every document from the duplicate verdicts:
    ``score`` is the rule's score of the verdict that removes it (NaN for kept documents)."""
    ok = verdicts.labels == DUPLICATE
    left, right, scores = pairs[ok, 0], pairs[ok, 1], verdicts.scores[ok]
    best = np.full(n, -np.inf)
    if how == "components":
        labels = component_labels(n, left, right)
        kept_of = _choose_kept(labels, rank)
        # The highest score of its duplicate verdicts.
        np.maximum.at(best, left, scores)
        np.maximum.at(best, right, scores)
    else:
        kept_of = center_labels(rank, left, right, pinned=existing)
        labels = kept_of
        # The score of its duplicate verdict with its kept document.
        joins_left = kept_of[left] == right
        joins_right = kept_of[right] == left
        best[left[joins_left]] = scores[joins_left]
        best[right[joins_right]] = scores[joins_right]
    best[kept_of == np.arange(n)] = -np.inf
    return labels, kept_of, np.where(np.isfinite(best), best, np.nan)


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

    ``client``: a ``distributed.Client``, a :class:`LocalPool` (or any
    :class:`~neardup.batch.executors.Executor`) to run tasks on, or ``None`` for this
    process.
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
    runner = executor_for(client)
    summary = DedupSummary()
    stats = ReadStats()
    clock = time.perf_counter()

    t0 = time.perf_counter()
    # At least 8 shards: each shard's sort needs ~40 bytes a key at once, so smaller shards
    # bound the peak (1M documents: 25M keys); the shard count never changes the pairs.
    shuffle = _KeyShards(cfg, max(_MIN_SHARDS, runner.workers * 2))
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
        )
    )
    summary.stage_seconds["sign"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    pairs = _shuffle_stage(shuffle, cfg, runner, progress, work)
    summary.stage_seconds["shuffle"] = time.perf_counter() - t0
    summary.candidate_pairs = int(pairs.shape[0])

    t0 = time.perf_counter()
    involved = np.unique(pairs)
    if involved.shape[0]:
        # dedup asks only whether pairs are duplicates: no content words (the cosine).
        terms = mode == "pairs"
        _profile_stage(corpus, cfg, runner, work, meta, involved, terms, progress)
    summary.profiled_documents = int(involved.shape[0])
    summary.stage_seconds["profile"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    verdicts = _verify_stage(pairs, cfg, runner, work, meta, mode, progress)
    summary.stage_seconds["verify"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    n = len(meta.ids)
    existing = np.asarray(meta.existing, dtype=bool)
    rank = _keep_rank(meta, existing, cfg.keep)
    labels, kept_of, best = _clusters(n, pairs, verdicts, rank, existing, cfg.clusters)
    summary.stage_seconds["merge"] = time.perf_counter() - t0

    lengths = np.concatenate(parts) if parts else np.empty(0, np.int64)
    result = DedupResult(meta.ids, existing, labels, kept_of, best, pairs, verdicts, summary)
    new = ~existing
    summary.documents = int(new.sum())
    summary.existing_documents = int(existing.sum())
    summary.removed = int(result.removed.sum())
    summary.clusters = int(np.unique(kept_of[new]).shape[0]) if n else 0
    summary.empty = int(((lengths == 0) & new).sum())
    summary.invalid = stats.invalid
    summary.duplicate_ids = stats.duplicate_ids
    summary.skipped_examples = list(stats.examples)
    counted = np.bincount(verdicts.labels.astype(np.int64), minlength=len(LABELS))
    # dedup asks only whether each pair is a duplicate; pairs asks for the verdict.
    names = ("duplicate", "not duplicate") if mode == "dedup" else VERDICTS
    summary.verdicts = {name: int(counted[LABELS.index(name)]) for name in names}
    related = int(counted[: len(VERDICTS)].sum() - counted[UNRELATED])
    summary.verified_pairs = int(counted[DUPLICATE]) if mode == "dedup" else related
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
    """Write every candidate pair the rule does not call ``unrelated``, with its verdict
    (``relation``: duplicate, partial or similar), score and features, as JSON Lines."""
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
            for row in result.pair_rows():
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
