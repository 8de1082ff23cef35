"""``neardup ingest INPUT.jsonl --store PATH``: the news stream from the command line.

Prints one JSON decision per input article on stdout, in input order::

    {"id": ..., "status": "new"|"duplicate"|"similar", "duplicate_of": ..., "similar":
     [{"id": ..., "score": ...}], "event": ...}

(``--evidence`` adds the matches with their distances and scores).  Decisions are printed
after their batch is committed, so a printed decision is durable.  A progress bar is shown on
stderr when stderr is a terminal, and a summary at the end.

Bad input (a line that is not JSON or not an object, missing ``id`` or ``text``, an
unparsable ``date``, empty or oversized text, the same id with different text): with
``--on-error skip`` (default) the line is reported on stderr with its line number, counted,
and skipped; everything else is ingested and the command exits 65 at the end if anything was
skipped.  With ``--on-error stop`` it stops at the first bad line and exits 65: a line that
is not a JSON object stops before anything after it; an article refused inside a batch (bad
field, conflicting re-ingest) stops after that batch, whose other articles are committed and
printed.  Either way nothing valid is lost and the store is consistent.  ``INPUT`` may be
``-`` (stdin) or gzip-compressed (``.gz``).
"""

from __future__ import annotations

import gzip
import json
import sys
import time
from collections import Counter
from collections.abc import Iterator
from typing import IO, Any

import click

from neardup.errors import InputError, NearDupError

__all__ = ["ingest"]


def _lines(path: str) -> Iterator[tuple[int, bytes]]:
    if path == "-":
        stream: IO[bytes] = sys.stdin.buffer
        yield from enumerate(stream, start=1)
        return
    try:
        with open(path, "rb") as raw:
            fh: IO[bytes] = gzip.GzipFile(fileobj=raw) if path.endswith(".gz") else raw  # type: ignore[assignment]
            yield from enumerate(fh, start=1)
    except OSError as exc:
        raise click.FileError(path, hint=str(exc)) from exc


def _parse(line_no: int, raw: bytes) -> dict[str, Any] | InputError | None:
    stripped = raw.strip()
    if not stripped:
        return None
    try:
        data = json.loads(stripped.decode("utf-8"))
    except UnicodeDecodeError as exc:
        return InputError(f"line {line_no}: not UTF-8 ({exc.reason} at byte {exc.start})")
    except json.JSONDecodeError as exc:
        return InputError(f"line {line_no}: not valid JSON ({exc.msg}, column {exc.colno})")
    if not isinstance(data, dict):
        return InputError(f"line {line_no}: expected a JSON object, got {type(data).__name__}")
    return data


@click.command("ingest")
@click.argument("input_path", metavar="INPUT.jsonl", type=str)
@click.option(
    "--store",
    "store",
    default="neardup.db",
    show_default=True,
    help="Store URL or path (sqlite file, sqlite:///path, postgresql://...).",
)
@click.option(
    "--on-error",
    type=click.Choice(["skip", "stop"]),
    default="skip",
    show_default=True,
    help="Skip and count bad lines, or stop at the first one.",
)
@click.option(
    "--batch-size",
    type=click.IntRange(1, 100_000),
    default=256,
    show_default=True,
    help="Articles per committed transaction.",
)
@click.option(
    "--window-days",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="Only match stored articles dated within this many days.",
)
@click.option("--evidence", is_flag=True, help="Add matches, distances and scores.")
@click.option(
    "--progress/--no-progress",
    default=None,
    help="Progress bar on stderr (default: when stderr is a terminal).",
)
def ingest(
    input_path: str,
    store: str,
    on_error: str,
    batch_size: int,
    window_days: float | None,
    evidence: bool,
    progress: bool | None,
) -> None:
    """Ingest articles from INPUT.jsonl, printing one JSON decision per article."""
    from tqdm import tqdm

    from neardup.api import NewsIndex
    from neardup.detect.stream import Decision, StreamConfig

    config = StreamConfig(
        window_seconds=None if window_days is None else window_days * 86_400.0,
    )
    show = sys.stderr.isatty() if progress is None else progress
    counts: Counter[str] = Counter()
    errors = 0
    started = time.perf_counter()
    out = sys.stdout
    with (
        NewsIndex(store=store, config=config) as news,
        tqdm(disable=not show, unit=" articles", file=sys.stderr, dynamic_ncols=True) as bar,
    ):
        batch: list[tuple[int, dict[str, Any]]] = []
        stop_error: NearDupError | None = None

        def flush() -> None:
            nonlocal errors, stop_error
            results = news.ingest_many([d for _, d in batch], batch_size=len(batch) or 1)
            for (line_no, _), result in zip(batch, results, strict=True):
                if isinstance(result, Decision):
                    counts["replayed" if result.replayed else result.status] += 1
                    if result.event:
                        counts["in_event"] += 1
                    out.write(json.dumps(result.to_dict(evidence=evidence)) + "\n")
                else:
                    errors += 1
                    click.echo(f"neardup: line {line_no}: {result}", err=True)
                    if on_error == "stop" and stop_error is None:
                        stop_error = result
            out.flush()
            bar.update(len(batch))
            batch.clear()

        for line_no, raw in _lines(input_path):
            parsed = _parse(line_no, raw)
            if parsed is None:
                continue
            if isinstance(parsed, InputError):
                flush()  # keep output in input order
                if stop_error is not None:
                    break
                errors += 1
                click.echo(f"neardup: {parsed}", err=True)
                if on_error == "stop":
                    stop_error = parsed
                    break
                continue
            batch.append((line_no, parsed))
            if len(batch) >= batch_size:
                flush()
                if stop_error is not None:
                    break
        if stop_error is None:
            flush()
        elapsed = time.perf_counter() - started
    total = sum(counts[s] for s in ("new", "duplicate", "partial", "similar", "replayed"))
    rate = total / elapsed if elapsed > 0 else 0.0
    click.echo(
        f"neardup ingest: {total} articles in {elapsed:.1f} s ({rate:,.0f}/s): "
        f"{counts['new']} new, {counts['duplicate']} duplicate, {counts['partial']} partial, "
        f"{counts['similar']} similar, "
        f"{counts['replayed']} already stored, {counts['in_event']} in events; "
        f"{errors} skipped with errors",
        err=True,
    )
    if errors:
        sys.exit(InputError.exit_code)
