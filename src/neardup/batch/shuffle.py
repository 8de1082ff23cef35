"""The key shuffle of a batch run: candidate keys routed to shards as partitions are signed
(:class:`KeyShards`, the map side), then each shard grouped by key on a worker into
candidate pairs (:func:`shuffle_stage`, :func:`neardup.batch.banding.bucket_pairs`).  The
number of shards never changes the pairs (:mod:`neardup.batch.banding`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from neardup.batch.banding import shard_of, unique_pairs
from neardup.batch.executors import Executor, call, progress_bar
from neardup.batch.tasks import DedupConfig, candidate_pairs
from neardup.batch.workdir import WorkDir, save_arrays
from neardup.errors import StoreError

U64 = npt.NDArray[np.uint64]
I64 = npt.NDArray[np.int64]


class KeyShards:
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


def shuffle_stage(
    shuffle: KeyShards, config: DedupConfig, runner: Executor, progress: bool, work: WorkDir
) -> I64:
    shards = shuffle.shards
    shard_keys, shard_docs = shuffle.keys, shuffle.docs
    bar = progress_bar(progress, "buckets", total=shards, unit="shard")
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
                save_arrays(work.path, "shard", s, {"keys": keys, "docs": docs})
                yield (
                    _shard_task,
                    work.file("shard.keys", s),
                    work.file("shard.docs", s),
                    config.max_bucket,
                )
            else:
                yield (candidate_pairs, keys, docs.astype(np.int64), config.max_bucket)

    found: list[I64] = []
    for pairs in runner.imap(call, tasks()):
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
