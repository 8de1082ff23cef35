"""Batch corpus dedup: one process or a Dask cluster, identical output (seed 002).

Pipeline (seed 002's "sketch -> verify", made parallel and streaming, with the one
near-duplicate rule of :mod:`neardup.rule` as the verification); this module is the driver,
the stages live in :mod:`~neardup.batch.signing` (1), :mod:`~neardup.batch.shuffle` (2) and
:mod:`~neardup.batch.judging` (3, 4), and run on an executor
(:mod:`~neardup.batch.executors`):

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
   their profiles (:mod:`neardup.batch.profiles`: :func:`neardup.rule.profile` of each,
   a partition at a time), saved per partition.
4. **Verify**: every candidate pair is screened by the rule's exact bounds, then judged by
   the rule where the bounds leave the answer open, in parallel chunks
   (:mod:`neardup.batch.verify`): for ``pairs`` its verdict (``duplicate``, ``partial``,
   ``similar`` or ``unrelated``) with the rule's score and features, for ``dedup`` only
   whether it is a duplicate.
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
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import xxhash

from neardup._jit import expect_work, forced
from neardup._kernels import distinct, distinct_below
from neardup.batch.executors import MAX_LOCAL_WORKERS, LocalPool, executor_for, progress_bar
from neardup.batch.io import (
    AtomicJsonlWriter,
    ReadStats,
    check_complete,
    input_fingerprint,
)
from neardup.batch.judging import (
    ChunkJudging,
    profile_stage,
    release_profiles,
    start_table_stage,
    verify_stage,
)
from neardup.batch.lazy import ROUND_CHARS, SWEEP_CHARS_PER_EDGE, lazy_verdicts, neighbour_graph
from neardup.batch.ranges import splittable
from neardup.batch.results import DedupResult, DedupSummary
from neardup.batch.shuffle import KeyShards, shuffle_stage
from neardup.batch.signing import Corpus, Meta, SignInputs, sign_stage, sign_stage_ranges
from neardup.batch.tasks import DedupConfig, sign_partition
from neardup.batch.unionfind import center_labels, component_labels
from neardup.batch.verify import (
    DUPLICATE,
    LABELS,
    UNRELATED,
    PairVerdicts,
)
from neardup.batch.workdir import WorkDir, remove_work_dir
from neardup.config import canonical_json, check_int
from neardup.errors import ConfigError, IncompleteOutputError, StoreError
from neardup.records import FieldNames
from neardup.rule import VERDICTS
from neardup.text import PYTHON_NS_PER_CHAR

__all__ = [
    "DedupResult",
    "DedupSummary",
    "dedup",
    "find_pairs",
    "run",
]


I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]

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
    :class:`LocalPool` forks, so its workers inherit them instead of each loading them:
    measured, two workers each spent 0.7 s loading numba and these kernels).  Compiled by
    force: a text this short would run the kernels' Python instead.  (The judging kernels
    are not warmed here: the workers call them on read-only, memory-mapped arrays, which
    numba compiles apart.)"""
    text = "warm up the compiled kernels of the signing pass once"
    with forced(True):
        sign_partition([text], config)


def _keep_rank(meta: Meta, existing: npt.NDArray[np.bool_], keep: str) -> I64:
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
        if workers is not None:
            check_int("workers", workers, low=1, high=MAX_LOCAL_WORKERS)
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
    corpus: Corpus,
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
    corpus = Corpus.of(input, against, fields, skip_invalid)
    # Its text is about as many characters as the input has bytes (fewer: JSON and
    # multi-byte characters; more for gzip): a long job loads the compiled kernels at once
    # instead of first running their Python for the budget's worth.
    expect_work(PYTHON_NS_PER_CHAR * corpus.size_bytes())
    key = run_key(cfg, corpus, mode)
    use_ranges = worker_reads and splittable(corpus.existing + corpus.new)
    work = WorkDir(
        Path(work_dir) if work_dir is not None else Path(tempfile.mkdtemp(prefix="neardup-")),
        # Partitions differ between the two reading modes: never resume across them.
        key + ("-ranges" if use_ranges else ""),
    )
    runner = executor_for(client)
    summary = DedupSummary()
    stats = ReadStats()
    clock = time.perf_counter()

    # At least 8 shards: each shard's sort needs ~40 bytes a key at once, so smaller shards
    # bound the peak (1M documents: 25M keys); the shard count never changes the pairs.
    shuffle = KeyShards(cfg, max(_MIN_SHARDS, runner.workers * 2))
    signer = sign_stage_ranges if use_ranges else sign_stage
    with _stage(summary, "sign"):
        meta, parts = signer(
            SignInputs(corpus, cfg, runner, work, stats, summary, progress, shuffle)
        )
    with _stage(summary, "shuffle"):
        pairs = shuffle_stage(shuffle, cfg, runner, progress, work)
    summary.candidate_pairs = int(pairs.shape[0])
    existing = np.asarray(meta.existing, dtype=bool)
    rank = _keep_rank(meta, existing, cfg.keep)
    lazy = mode == "dedup" and cfg.clusters == "centers"
    if lazy:
        # Judging's reading of the pairs needs no profile: built while the workers profile.
        chars = np.asarray(meta.lengths, dtype=np.int64)
        pair_cost = chars[pairs[:, 0]] + chars[pairs[:, 1]]
        graph = runner.beside(neighbour_graph, pairs, rank, existing, pair_cost)
    with _stage(summary, "profile"):
        involved = distinct_below(pairs, len(meta.ids))
        if involved.shape[0]:
            # dedup asks only whether pairs are duplicates: no content words (the cosine).
            terms = mode == "pairs"
            profile_stage(corpus, cfg, runner, work, meta, involved, terms, progress)
        # A pool worker joins the profile table while this process prepares the judging.
        table = start_table_stage(runner, work, meta, involved)
    summary.profiled_documents = int(involved.shape[0])
    with _stage(summary, "verify"), _releasing_profiles():
        if lazy:
            # Greedy centers consult few verdicts: judge only those (same clusters).
            verdicts, judged = lazy_verdicts(
                pairs,
                rank,
                existing,
                ChunkJudging(pairs, cfg, runner, work, mode, table),
                round_cost=ROUND_CHARS,
                edge_cost=SWEEP_CHARS_PER_EDGE,
                graph=graph.result(),  # made with each pair's cost
            )
            table.result()  # finished (and its error raised) even with nothing judged
        else:
            table.result()
            verdicts = verify_stage(pairs, cfg, runner, work, mode, progress)
            judged = np.ones(pairs.shape[0], dtype=bool)
    with _stage(summary, "merge"):
        n = len(meta.ids)
        labels, kept_of, best = _clusters(n, pairs, verdicts, rank, existing, cfg.clusters)
    result = DedupResult(meta.ids, existing, labels, kept_of, best, pairs, verdicts, summary)
    _summarise(result, parts, stats, mode)
    summary.judged_pairs = int(judged.sum())
    # Pairs never judged carry the "not duplicate" label; they are not verdicts.
    if "not duplicate" in summary.verdicts:
        summary.verdicts["not duplicate"] -= int(pairs.shape[0]) - summary.judged_pairs
    summary.seconds = time.perf_counter() - clock
    if not keep_work:
        work.remove()
    return result


@contextlib.contextmanager
def _stage(summary: DedupSummary, name: str) -> Iterator[None]:
    """Time one stage of a run into ``summary.stage_seconds[name]`` (wall seconds)."""
    start = time.perf_counter()
    try:
        yield
    finally:
        summary.stage_seconds[name] = time.perf_counter() - start


@contextlib.contextmanager
def _releasing_profiles() -> Iterator[None]:
    """Unmap the profiles the judging kept mapped, once it is over (or failed)."""
    try:
        yield
    finally:
        release_profiles()


def _summarise(result: DedupResult, parts: list[I64], stats: ReadStats, mode: str) -> None:
    """Fill ``result.summary``'s counts from the result, the signed lengths and the reader."""
    summary, existing, verdicts = result.summary, result.existing, result.verdicts
    lengths = np.concatenate(parts) if parts else np.empty(0, np.int64)
    new = ~existing
    summary.documents = int(new.sum())
    summary.existing_documents = int(existing.sum())
    summary.removed = int(result.removed.sum())
    kept_of = result.kept_of
    summary.clusters = int(distinct(kept_of[new]).shape[0]) if kept_of.shape[0] else 0
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
    corpus = Corpus.of(input, against, fields, skip_invalid)
    key = run_key(cfg, corpus, mode)
    targets = [out] + ([kept_path] if kept_path is not None else [])
    previous = _already_done(targets, key)
    if previous is not None:
        known = {f.name for f in dataclasses.fields(DedupSummary)}
        return DedupSummary(**{k: v for k, v in previous.items() if k in known})
    own_cluster = None
    if client is None:
        client, own_cluster = _make_client(scheduler, workers, corpus.size_bytes(), cfg)
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
    remove_work_dir(Path(work_dir) if work_dir else _default_work_dir(out))
    return summary


def _write_kept(
    corpus: Corpus,
    result: DedupResult,
    path: Path,
    key: str,
    summary: dict[str, Any],
    progress: bool,
) -> None:
    removed = result.removed
    offset = int(result.existing.sum())
    bar = progress_bar(progress, "writing kept")
    new_only = Corpus(corpus.new, [], corpus.fields, corpus.skip_invalid)
    with AtomicJsonlWriter(path, key, extra={"summary": summary}) as writer:
        for _, record in new_only.stream():
            if not removed[offset + record.ordinal]:
                writer.write(record.raw)
            bar.update(1)
        writer.commit()
    bar.close()
