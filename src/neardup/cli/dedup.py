"""``neardup dedup`` and ``neardup pairs``: batch corpus dedup (see ``docs/batch.md``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from neardup.batch.engine import DedupSummary, dedup, find_pairs
from neardup.batch.tasks import CANDIDATE_SOURCES, CLUSTERINGS, KEEP_POLICIES, DedupConfig
from neardup.records import FieldNames

__all__ = ["dedup_command", "pairs_command"]


def _common_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Options shared by ``dedup`` and ``pairs``."""
    options = [
        click.argument("input", type=click.Path(path_type=str)),
        click.option(
            "-o", "--output", required=True, type=click.Path(dir_okay=False), help="JSONL output."
        ),
        click.option(
            "--candidates",
            default=",".join(CANDIDATE_SOURCES),
            show_default=True,
            help="Sources of candidate pairs, comma-separated: lsh (whole texts alike), "
            "passages (a shared passage: excerpts, truncated reprints).",
        ),
        click.option(
            "--lsh-threshold",
            type=float,
            default=0.5,
            show_default=True,
            help="Jaccard the LSH bands are tuned for (candidates only: the rule decides).",
        ),
        click.option("--num-perm", type=int, default=128, show_default=True),
        click.option(
            "--bands", type=int, default=None, help="LSH bands (default: from --lsh-threshold)."
        ),
        click.option("--partition-size", type=int, default=5000, show_default=True),
        click.option("--scheduler", default=None, help="Dask scheduler address (default: local)."),
        click.option(
            "--workers",
            type=int,
            default=None,
            help="Local worker processes, without Dask (default: one process, or one per "
            "core for inputs of 256 MB or more on 4+ cores).",
        ),
        click.option(
            "--driver-reads",
            is_flag=True,
            help="With Dask: the driver reads the input and ships the texts (for clusters "
            "whose workers cannot see the input files). Default: workers read their own "
            "byte ranges of plain JSON Lines input.",
        ),
        click.option(
            "--against",
            type=click.Path(path_type=str),
            default=None,
            help="Existing corpus: only documents of INPUT are removed.",
        ),
        click.option("--skip-invalid", is_flag=True, help="Skip and count malformed lines."),
        click.option("--id-field", default="id", show_default=True),
        click.option("--text-field", default="text", show_default=True),
        click.option("--date-field", default="date", show_default=True),
        click.option("--title-field", default="title", show_default=True),
        click.option("--source-field", default="source", show_default=True),
        click.option("--work-dir", default=None, help="Intermediate files (default OUTPUT.work)."),
        click.option("--quiet", "-q", is_flag=True, help="No progress bars or summary."),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


def _fields(opts: dict[str, Any]) -> FieldNames:
    return FieldNames(
        id=opts["id_field"],
        text=opts["text_field"],
        title=opts["title_field"],
        date=opts["date_field"],
        source=opts["source_field"],
    )


def _config(opts: dict[str, Any], **extra: Any) -> DedupConfig:
    sources = tuple(s.strip() for s in opts["candidates"].split(",") if s.strip())
    return DedupConfig(
        candidates=sources,
        lsh_threshold=opts["lsh_threshold"],
        num_perm=opts["num_perm"],
        bands=opts["bands"],
        partition_size=opts["partition_size"],
        **extra,
    )


def _print_summary(summary: DedupSummary) -> None:
    stages = ", ".join(f"{k} {v:.1f}s" for k, v in summary.stage_seconds.items())
    verdicts = ", ".join(f"{n} {c}" for n, c in summary.verdicts.items())
    lines = [
        f"documents: {summary.documents}"
        + (f" (+{summary.existing_documents} existing)" if summary.existing_documents else ""),
        f"clusters: {summary.clusters}",
        f"removed: {summary.removed}",
        f"candidate pairs: {summary.candidate_pairs} ({summary.profiled_documents} documents "
        f"profiled); verdicts: {verdicts or 'none'}",
        f"empty texts: {summary.empty}; skipped invalid: {summary.invalid}; "
        f"skipped duplicate ids: {summary.duplicate_ids}",
        f"time: {summary.seconds:.1f}s ({stages})",
    ]
    if summary.resumed_partitions:
        lines.append(f"resumed partitions: {summary.resumed_partitions}")
    for example in summary.skipped_examples:
        lines.append(f"skipped: {example}")
    click.echo("\n".join(lines), err=True)


def _run(kind: str, opts: dict[str, Any], config: DedupConfig, write_kept: str | None) -> None:
    common = {
        "against": opts["against"],
        "fields": _fields(opts),
        "skip_invalid": opts["skip_invalid"],
        "scheduler": opts["scheduler"],
        "workers": opts["workers"],
        "worker_reads": not opts["driver_reads"],
        "work_dir": opts["work_dir"],
        "progress": not opts["quiet"],
    }
    if kind == "dedup":
        summary = dedup(opts["input"], opts["output"], config, write_kept=write_kept, **common)
    else:
        summary = find_pairs(opts["input"], opts["output"], config, **common)
    if not opts["quiet"]:
        _print_summary(summary)


@click.command("dedup")
@_common_options
@click.option(
    "--keep",
    type=click.Choice(KEEP_POLICIES),
    default="earliest",
    show_default=True,
    help="Which document of a cluster is kept.",
)
@click.option(
    "--clusters",
    type=click.Choice(CLUSTERINGS),
    default="centers",
    show_default=True,
    help="centers: every removed document is a duplicate of the one kept for it; "
    "components: a chain of duplicates is one cluster.",
)
@click.option("--write-kept", type=click.Path(dir_okay=False), default=None)
def dedup_command(keep: str, clusters: str, write_kept: str | None, **opts: Any) -> None:
    """Deduplicate INPUT (JSONL, .jsonl.gz, Parquet or a directory of them).

    Every candidate pair is judged by the near-duplicate rule; each document it calls a
    duplicate of a kept document is removed. Writes one row per document to OUTPUT:
    {"id", "cluster", "duplicate_of", "score"}.
    """
    _run("dedup", opts, _config(opts, keep=keep, clusters=clusters), write_kept)


@click.command("pairs")
@_common_options
def pairs_command(**opts: Any) -> None:
    """Write every pair of INPUT the near-duplicate rule relates, with its verdict.

    Rows: {"id_a", "id_b", "relation", "score", "features"}; relation is duplicate (the
    same article), partial (a passage copied) or similar (the same story, written apart).
    """
    _run("pairs", opts, _config(opts), None)
