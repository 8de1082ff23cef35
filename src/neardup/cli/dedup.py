"""``neardup dedup`` and ``neardup pairs``: batch corpus dedup (see ``docs/batch.md``).

The shared conventions (``neardup.cli.common``, docs/cli.md): ``--on-error``, ``--force``,
``--progress``, the exit codes.  The work runs in a child process (:func:`run_isolated`):
Ctrl-C kills it and its workers at once, removes any partial output and exits 130, so
``OUTPUT`` is either complete (with its completion marker) or absent.  Finished partitions
stay in the work folder, and the same command resumes from them; a run stopped by bad input
removes the work folder it created (the input has to change, so nothing could resume).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from neardup.batch.engine import DedupSummary, dedup, find_pairs
from neardup.batch.executors import MAX_LOCAL_WORKERS
from neardup.batch.io import check_complete
from neardup.batch.tasks import CANDIDATE_SOURCES, CLUSTERINGS, KEEP_POLICIES, DedupConfig
from neardup.cli.common import (
    check_output,
    force_option,
    on_error_option,
    progress_option,
    require_input,
    run_isolated,
    show_progress,
    warn,
)
from neardup.errors import ConfigError, ConflictError, IncompleteOutputError, InputError
from neardup.records import FieldNames

__all__ = ["dedup_command", "pairs_command"]

# Files next to an output that belong to it: its completion marker and their temporaries.
_SIBLINGS = (".complete", ".partial", ".complete.partial")


_Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]


def _common_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Options shared by ``dedup`` and ``pairs``, in the order ``--help`` lists them."""
    options = [
        *_input_output_options(),
        *_candidate_options(),
        *_execution_options(),
        *_record_options(),
        *_work_options(),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


def _input_output_options() -> list[_Decorator]:
    return [
        click.argument("input", type=click.Path(path_type=str)),
        click.option(
            "-o",
            "--output",
            required=True,
            type=click.Path(dir_okay=False),
            help="JSON Lines output (.gz to compress); written only when complete.",
        ),
    ]


def _candidate_options() -> list[_Decorator]:
    """Where candidate pairs come from (candidates only: the rule decides)."""
    return [
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
        click.option(
            "--num-perm",
            type=int,
            default=128,
            show_default=True,
            help="MinHash values per document: more gives closer estimates and costs time.",
        ),
        click.option(
            "--bands",
            type=int,
            default=None,
            help="LSH bands (default: chosen from --lsh-threshold so few true pairs are missed).",
        ),
    ]


def _execution_options() -> list[_Decorator]:
    """How the work is cut and where it runs."""
    return [
        click.option(
            "--partition-size",
            type=int,
            default=5000,
            show_default=True,
            help="Documents per unit of work (smaller: less memory per worker, more units).",
        ),
        click.option("--scheduler", default=None, help="Dask scheduler address (default: local)."),
        click.option(
            "--workers",
            # Each is a forked process: a bound keeps a typo from exhausting the machine.
            type=click.IntRange(1, MAX_LOCAL_WORKERS),
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
    ]


def _record_options() -> list[_Decorator]:
    """Which documents count, how bad lines are handled, and the input's field names."""
    return [
        click.option(
            "--against",
            type=click.Path(path_type=str),
            default=None,
            help="Existing corpus: only documents of INPUT are removed.",
        ),
        on_error_option,
        click.option("--id-field", default="id", show_default=True),
        click.option("--text-field", default="text", show_default=True),
        click.option("--date-field", default="date", show_default=True),
        click.option("--title-field", default="title", show_default=True),
        click.option("--source-field", default="source", show_default=True),
    ]


def _work_options() -> list[_Decorator]:
    """The restartable work folder, overwriting, progress."""
    return [
        click.option(
            "--work-dir",
            default=None,
            help="Intermediate files, kept after an interruption so the same command resumes"
            " (default: OUTPUT.work next to the output).",
        ),
        force_option,
        progress_option,
    ]


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


def _print_summary(summary: DedupSummary, kind: str, opts: dict[str, Any]) -> None:
    stages = ", ".join(f"{k} {v:.1f}s" for k, v in summary.stage_seconds.items())
    verdicts = ", ".join(f"{n} {c}" for n, c in summary.verdicts.items())
    if summary.documents == 0 and summary.existing_documents == 0:
        warn(f"{opts['input']} holds no document")
    lines = [
        f"documents: {summary.documents}"
        + (f" (+{summary.existing_documents} existing)" if summary.existing_documents else "")
    ]
    if kind == "dedup":
        lines += [f"clusters: {summary.clusters}", f"removed: {summary.removed}"]
    else:
        lines.append(f"pairs written: {summary.verified_pairs}")
    lines += [
        f"candidate pairs: {summary.candidate_pairs} ({summary.profiled_documents} documents "
        f"profiled); verdicts: {verdicts or 'none'}",
        f"empty texts: {summary.empty}; malformed lines skipped: {summary.invalid}; "
        f"duplicate ids skipped: {summary.duplicate_ids}",
        f"time: {summary.seconds:.1f}s ({stages})",
    ]
    if summary.resumed_partitions:
        lines.append(f"resumed partitions: {summary.resumed_partitions}")
    for example in summary.skipped_examples:
        lines.append(f"skipped: {example}")
    click.echo("\n".join(lines), err=True)


def _run(kind: str, opts: dict[str, Any], config: DedupConfig, write_kept: str | None) -> None:
    if opts["input"] == "-":
        # The input is read more than once (signing, then profiling the candidates).
        raise ConfigError(f"{kind} reads its INPUT from files, not from stdin ('-')")
    require_input(opts["input"])
    if opts["against"] is not None:
        require_input(opts["against"], "--against corpus")
    out = Path(opts["output"])
    targets = [out] + ([Path(write_kept)] if write_kept is not None else [])
    for target in targets:
        check_output(target, opts["force"], extra=_SIBLINGS)
    work = Path(opts["work_dir"]) if opts["work_dir"] else out.with_name(out.name + ".work")
    fresh_work = not work.exists()
    common = {
        "against": opts["against"],
        "fields": _fields(opts),
        "skip_invalid": opts["on_error"] == "skip",
        "scheduler": opts["scheduler"],
        "workers": opts["workers"],
        "worker_reads": not opts["driver_reads"],
        "work_dir": work,
        "progress": show_progress(opts["progress"]),
    }

    def work_fn() -> DedupSummary:
        if kind == "dedup":
            return dedup(opts["input"], out, config, write_kept=write_kept, **common)
        return find_pairs(opts["input"], out, config, **common)

    def on_interrupt() -> None:
        _remove_unfinished(targets)
        _report_work(work, fresh_work)

    try:
        summary = run_isolated(work_fn, on_interrupt)
    except (InputError, ConflictError):
        if fresh_work:  # made by this run for an input that must now change: nothing to resume
            shutil.rmtree(work, ignore_errors=True)
        raise
    _print_summary(summary, kind, opts)


def _remove_unfinished(targets: list[Path]) -> None:
    """Remove what an interrupted run left of its outputs: temporaries, and an output whose
    completion marker is missing (it can only be this run's: an existing output is refused
    without --force and removed with it)."""
    for target in targets:
        for suffix in (".partial", ".complete.partial"):
            target.with_name(target.name + suffix).unlink(missing_ok=True)
        if target.exists():
            try:
                check_complete(target)
            except IncompleteOutputError:
                target.unlink(missing_ok=True)
                target.with_name(target.name + ".complete").unlink(missing_ok=True)
            else:
                click.echo(f"neardup: {target} was finished before the interruption", err=True)


def _report_work(work: Path, fresh: bool) -> None:
    """Say what happens to the work folder after an interruption."""
    if not work.is_dir():
        return
    finished = any(p.name.startswith(("sig.done-", "pay.done-")) for p in work.iterdir())
    if fresh and not finished:
        shutil.rmtree(work, ignore_errors=True)
        return
    click.echo(
        f"neardup: finished partitions are kept in {work}; the same command resumes from them"
        " (delete that folder to start over)",
        err=True,
    )


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
@click.option(
    "--write-kept",
    type=click.Path(dir_okay=False),
    default=None,
    help="Also write the kept documents, with all their fields, to this JSON Lines file.",
)
def dedup_command(keep: str, clusters: str, write_kept: str | None, **opts: Any) -> None:
    """Deduplicate INPUT (JSONL, .jsonl.gz, Parquet or a folder of them).

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
