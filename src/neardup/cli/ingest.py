"""``neardup ingest INPUT.jsonl [--store PATH]``: the news stream from the command line.

Prints one JSON decision per input article on stdout, in input order::

    {"id": ..., "status": "new"|"duplicate"|"similar", "duplicate_of": ..., "similar":
     [{"id": ..., "score": ...}], "event": ...}

(``--evidence`` adds the matches with their distances and scores).  Decisions are printed
after their batch is committed, so a printed decision is durable, and a summary ends the run
on stderr.  The store is ``./neardup.db`` unless ``--store`` names another (the same default
as ``neardup serve``).  ``INPUT`` may be ``-`` (stdin) or gzip-compressed.

Input lines follow the shared convention (``neardup.cli.common``, docs/cli.md): a malformed
line (not JSON, not an object, no ``id`` or ``text``, a bad ``date``, an article the stream
refuses, the same id with different text) stops the command with ``FILE:LINE: reason`` and
exit 65 (``--on-error stop``, the default), after committing and printing every article
before it; with ``--on-error skip`` it is shown, counted and skipped.  An article whose text
has no word at all (a wire BRIEF item, say) is not an error: it is counted as empty and not
stored.  Ctrl-C stops after the current batch (committed and printed) with exit 130.
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from typing import Any

import click

from neardup.batch.io import check_object, parse_json_line
from neardup.cli.common import (
    DATA_ERRORS,
    BadLines,
    Interrupts,
    input_lines,
    on_error_option,
    progress_option,
    require_input,
    show_progress,
    warn,
)
from neardup.detect.stream.config import MAX_WINDOW_SECONDS
from neardup.detect.stream.judging import PROFILE_CACHE_BYTES
from neardup.errors import InputError
from neardup.records import Article, FieldNames

__all__ = ["ingest"]

_FIELDS = FieldNames()
#: Widest ``--window-days``: the supported dates span this many days.
MAX_WINDOW_DAYS = MAX_WINDOW_SECONDS / 86_400.0


def has_words(text: str) -> bool:
    """False for a text with no letter or digit (empty, blank, punctuation only)."""
    return any(ch.isalnum() for ch in text)


@click.command("ingest")
@click.argument("input_path", metavar="INPUT.jsonl", type=str)
@click.option(
    "--store",
    "store",
    default="neardup.db",
    show_default=True,
    help="Where articles are stored: a SQLite file (a path, or sqlite:///PATH relative to"
    " this folder) or postgresql://user@host/db. The same default as neardup serve.",
)
@on_error_option
@click.option(
    "--batch-size",
    type=click.IntRange(1, 100_000),
    default=256,
    show_default=True,
    help="Articles per committed transaction (larger: faster; smaller: decisions appear sooner).",
)
@click.option(
    "--window-days",
    # Up to the span of the supported dates (years 1 to 9999): any window at least that
    # wide matches every date, and a wider one cannot be held in microseconds.
    type=click.FloatRange(min=0, min_open=True, max=MAX_WINDOW_DAYS),
    default=None,
    help="Only match stored articles dated within this many days of the new one (default:"
    " any date).",
)
@click.option("--evidence", is_flag=True, help="Add the matches with their distances and scores.")
@click.option(
    "--cache-mb",
    type=click.IntRange(0, 1 << 30),
    default=PROFILE_CACHE_BYTES >> 20,
    show_default=True,
    help="Memory (MiB) for recently stored articles kept to judge new ones against; more"
    " keeps a long stream fast when copies come back long after their originals. Decisions"
    " do not depend on it.",
)
@progress_option
def ingest(
    input_path: str,
    store: str,
    on_error: str,
    batch_size: int,
    window_days: float | None,
    evidence: bool,
    cache_mb: int,
    progress: bool | None,
) -> None:
    """Ingest articles from INPUT.jsonl, printing one JSON decision per article."""
    from tqdm import tqdm

    from neardup.api import NewsIndex
    from neardup.detect.stream import StreamConfig

    if input_path != "-":
        require_input(input_path)  # before the store is created
    config = StreamConfig(
        window_seconds=None if window_days is None else window_days * 86_400.0,
    )
    run = _Run(BadLines(on_error, input_path), evidence)
    started = time.perf_counter()
    try:
        with (
            Interrupts() as stop,
            NewsIndex(store=store, config=config, profile_cache_bytes=cache_mb << 20) as news,
            tqdm(
                disable=not show_progress(progress),
                unit=" articles",
                file=sys.stderr,
                dynamic_ncols=True,
            ) as bar,
        ):
            run.opened = True
            batch: list[tuple[int, Article]] = []
            for line_no, raw in stop.iterate(input_lines(input_path)):
                obj = parse_json_line(raw)
                if obj is None:
                    continue
                run.lines += 1
                try:
                    article = check_object(obj, _FIELDS)
                except InputError as exc:
                    run.flush(news, batch, bar)  # keep the output in input order
                    run.bad.report(line_no, exc)
                    continue
                if not has_words(article.text):
                    run.counts["empty"] += 1
                    continue
                batch.append((line_no, article))
                if len(batch) >= batch_size:
                    run.flush(news, batch, bar)
                    stop.check()
            run.flush(news, batch, bar)
            run.finished = True
    finally:
        if run.opened:
            run.summarise(time.perf_counter() - started, input_path)


class _Run:
    """Counters and the batch flush of one ``neardup ingest`` run."""

    def __init__(self, bad: BadLines, evidence: bool) -> None:
        self.bad = bad
        self.evidence = evidence
        self.counts: Counter[str] = Counter()
        self.lines = 0
        self.opened = self.finished = False

    def flush(self, news: Any, batch: list[tuple[int, Article]], bar: Any) -> None:
        """Commit the batch, print its decisions, then report its refused articles."""
        if not batch:
            return
        from neardup.detect.stream import Decision

        articles = [a for _, a in batch]
        try:
            results: list[Any] = news.ingest_many(articles, batch_size=len(articles))
        except DATA_ERRORS:
            # A value no check caught broke the batch (rolled back): one by one, to commit
            # the others and name the line that cannot be ingested.
            results = []
            for article in articles:
                try:
                    results.extend(news.ingest_many([article], batch_size=1))
                except DATA_ERRORS as exc:
                    results.append(exc)
        refused: list[tuple[int, BaseException]] = []
        out = sys.stdout
        for (line_no, _), result in zip(batch, results, strict=True):
            if isinstance(result, Decision):
                self.counts["replayed" if result.replayed else result.status] += 1
                if result.event:
                    self.counts["in_event"] += 1
                out.write(json.dumps(result.to_dict(evidence=self.evidence)) + "\n")
            else:
                refused.append((line_no, result))
        out.flush()
        bar.update(len(batch))
        batch.clear()
        for line_no, error in refused:
            self.bad.report(line_no, error)

    def summarise(self, seconds: float, input_path: str) -> None:
        c = self.counts
        total = sum(c[s] for s in ("new", "duplicate", "partial", "similar", "replayed"))
        if self.finished and self.lines == 0:
            warn(f"{'stdin' if input_path == '-' else input_path} holds no article")
        rate = total / seconds if seconds > 0 else 0.0
        click.echo(
            f"neardup ingest: {total} articles in {seconds:.1f} s ({rate:,.0f}/s): "
            f"{c['new']} new, {c['duplicate']} duplicate, {c['partial']} partial, "
            f"{c['similar']} similar, "
            f"{c['replayed']} already stored, {c['in_event']} in events; "
            f"{c['empty']} with empty text (not stored); {self.bad.summary()}",
            err=True,
        )
