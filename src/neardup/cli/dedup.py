"""``neardup dedup`` and ``neardup pairs``: batch corpus dedup (see ``docs/batch.md``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from neardup.batch.engine import DedupSummary, dedup, find_pairs
from neardup.batch.tasks import KEEP_POLICIES, METHODS, VERIFY_MODES, DedupConfig
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
            "--method",
            type=click.Choice(METHODS),
            default="minhash",
            show_default=True,
            help="Signature that makes candidate pairs.",
        ),
        click.option(
            "--verify",
            type=click.Choice(VERIFY_MODES),
            default="jaccard",
            show_default=True,
            help="Exact check of candidates: shingle Jaccard, longest common substring, none.",
        ),
        click.option("--num-perm", type=int, default=128, show_default=True),
        click.option("--width", type=int, default=4, show_default=True, help="Shingle width."),
        click.option("--bands", type=int, default=None, help="LSH bands (default: from T)."),
        click.option(
            "--max-distance", type=int, default=3, show_default=True, help="SimHash bits."
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
    return DedupConfig(
        method=opts["method"],
        verify=opts["verify"],
        num_perm=opts["num_perm"],
        width=opts["width"],
        bands=opts["bands"],
        max_distance=opts["max_distance"],
        partition_size=opts["partition_size"],
        **extra,
    )


def _print_summary(summary: DedupSummary, what: str) -> None:
    stages = ", ".join(f"{k} {v:.1f}s" for k, v in summary.stage_seconds.items())
    lines = [
        f"documents: {summary.documents}"
        + (f" (+{summary.existing_documents} existing)" if summary.existing_documents else ""),
        f"clusters: {summary.clusters}",
        f"removed: {summary.removed}",
        f"{what}: {summary.verified_pairs} of {summary.candidate_pairs} candidate pairs verified",
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
        _print_summary(summary, "pairs" if kind == "pairs" else "duplicates")


@click.command("dedup")
@_common_options
@click.option(
    "--threshold",
    type=float,
    default=0.5,
    show_default=True,
    help="Minimum similarity for a duplicate (of the --verify score).",
)
@click.option(
    "--keep",
    type=click.Choice(KEEP_POLICIES),
    default="earliest",
    show_default=True,
    help="Which document of a cluster is kept.",
)
@click.option("--write-kept", type=click.Path(dir_okay=False), default=None)
def dedup_command(threshold: float, keep: str, write_kept: str | None, **opts: Any) -> None:
    """Deduplicate INPUT (JSONL, .jsonl.gz, Parquet or a directory of them).

    Writes one row per document to OUTPUT: {"id", "cluster", "duplicate_of", "score"}.
    """
    _run("dedup", opts, _config(opts, threshold=threshold, keep=keep), write_kept)


@click.command("pairs")
@_common_options
@click.option(
    "--min-score",
    type=float,
    default=0.5,
    show_default=True,
    help="Minimum verified score of a reported pair.",
)
@click.option("--duplicate-score", type=float, default=0.8, show_default=True)
@click.option("--partial-containment", type=float, default=0.8, show_default=True)
def pairs_command(
    min_score: float, duplicate_score: float, partial_containment: float, **opts: Any
) -> None:
    """Write every candidate pair of INPUT that passed verification, with its scores.

    Rows: {"id_a", "id_b", "estimated", "jaccard", "containment", "lcs", "relation"};
    relation is duplicate, partial (the shorter mostly contained in the longer) or similar.
    """
    config = _config(
        opts,
        threshold=min_score,
        duplicate_score=duplicate_score,
        partial_containment=partial_containment,
    )
    _run("pairs", opts, config, None)
