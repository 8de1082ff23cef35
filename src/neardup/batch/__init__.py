"""Batch corpus dedup on one machine or a Dask cluster, every candidate pair judged by the
near-duplicate rule (:mod:`neardup.rule`).

:func:`dedup` writes one row per document (``id``, ``cluster``, ``duplicate_of``,
``score``); :func:`find_pairs` writes every candidate pair the rule relates (duplicate,
partial, similar) with its score and features; :func:`run` returns the clusters and
verdicts in memory.  See ``docs/batch.md``.
"""

from __future__ import annotations

from neardup.batch.engine import DedupResult, DedupSummary, dedup, find_pairs, run
from neardup.batch.executors import DaskExecutor, Executor, InProcess, LocalPool
from neardup.batch.io import check_complete, input_files, iter_records
from neardup.batch.tasks import DedupConfig
from neardup.batch.unionfind import UnionFind, component_labels

__all__ = [
    "DaskExecutor",
    "DedupConfig",
    "DedupResult",
    "DedupSummary",
    "Executor",
    "InProcess",
    "LocalPool",
    "UnionFind",
    "check_complete",
    "component_labels",
    "dedup",
    "find_pairs",
    "input_files",
    "iter_records",
    "run",
]
