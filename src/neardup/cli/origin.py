"""``neardup origin INPUT.jsonl -o OUT.jsonl``: where each document's text was copied from.

Streams the documents (in file order, or by date with ``--order date``) through the origin
detector of seed 004 and writes one JSON row per document::

    {"id", "dominant_origin", "most_copied_origin", "copied_fraction",
     "segments": [{"start", "end", "origin"}], "tokens", "fresh_tokens"}

``dominant_origin`` is the id of the document most of its selected shingles come from when
that leads every other origin by 10 % (its own id when it is mostly original; ``null`` when
no origin leads by 10 %).  ``segments`` are the maximal runs of tokens with one origin, as
character offsets into the text: copied runs carry the earlier document's id, novel runs the
document's own id.  A progress bar is shown on stderr when it is a terminal; a summary is
printed on stderr at the end.

Behaviour on bad input (the shared convention of docs/cli.md, never a traceback):

* a line that is not a JSON object, lacks ``id`` or ``text``, or has an unparsable date; a
  repeated id (its first occurrence is kept): ``--on-error stop`` (default) stops there with
  ``FILE:LINE: reason`` and exit 65 (rows already written stay; the state is saved up to
  that document); ``--on-error skip`` shows it, counts it and goes on;
* an empty text or one shorter than the shingle width: a row with no copied segment, all
  tokens fresh, and the document as its own dominant origin (no shingle to look up);
* ``--order date``: every document needs a date (else the line is bad); bad lines are
  reported first, then documents are processed sorted by date (stable, so equal dates keep
  file order; this reads the whole input first);
  with ``--state``, a document dated before the last one already processed is bad (origin
  detection needs time order);
* a memory size too small for one bucket: CapacityError, exit 2, before anything is read.

``--state FILE`` loads the detector from FILE when it exists (the stream continues where it
stopped; the configuration stored there is used, and giving different options is an error)
and saves it there at the end (atomically).  The ids of origin documents are always kept on
disk in an append-only log (with ``--state``: ``FILE.ids.dat`` / ``FILE.ids.idx``; without
it: in a temporary directory removed at the end), so resident memory is the table plus a
constant plus the ids seen (for repeated-id detection), 8 bytes a document.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import click

from neardup.cli.common import (
    ARTICLE_ERRORS,
    BadLines,
    Interrupts,
    check_output,
    force_option,
    input_articles,
    on_error_option,
    open_output,
    progress_option,
    require_input,
    show_progress,
    warn,
)
from neardup.detect.origin import OriginConfig, OriginDetector, StoreFollower, parse_memory
from neardup.detect.origin.config import ESTIMATIONS, EVICTIONS, PRESETS, SELECTIONS
from neardup.errors import ConfigError, InputError
from neardup.records import Article, FieldNames

__all__ = ["origin"]

# the research settings of the paper (seed 004) and our extensions: each defaults to the
# preset's value and, when given, overrides it
ADVANCED = (
    "selection",
    "selection_parameter",
    "no_overlap",
    "adaptive",
    "eviction",
    "estimation",
    "shingle_width",
    "bucket_size",
    "bridge_limit",
    "lucky_limit",
    "lucky_every",
    "bridge_tolerance",
    "edge_extension",
    "fingerprint_bytes",
    "origin_bytes",
    "seed",
)
_CONFIG_OPTIONS = ("memory", "preset", *ADVANCED)


class _GroupedCommand(click.Command):
    """``--help`` lists the options a user needs first and the research settings under
    their own heading."""

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        common: list[tuple[str, str]] = []
        advanced: list[tuple[str, str]] = []
        for param in self.get_params(ctx):
            if not isinstance(param, click.Option):
                continue
            record = param.get_help_record(ctx)
            if record is not None:
                (advanced if param.name in ADVANCED else common).append(record)
        with formatter.section("Options"):
            formatter.write_dl(common)
        with formatter.section(
            "Advanced: the paper's research settings (each defaults to the preset's value;"
            " see docs/origin.md)"
        ):
            formatter.write_dl(advanced)


def _build_config(ctx: click.Context, params: dict[str, Any]) -> OriginConfig:
    """The preset's configuration with every advanced setting given on the command line."""
    given_memory = ctx.get_parameter_source("memory") not in (
        click.core.ParameterSource.DEFAULT,
        None,
    )
    preset = params["preset"]
    if preset == "exact":
        if given_memory:
            raise ConfigError(
                "--preset exact keeps every shingle (memory grows with the stream): drop"
                " --memory, or use --preset balanced with it"
            )
        base = OriginConfig.preset(preset, None)
    else:
        base = OriginConfig.preset(preset, parse_memory(params["memory"]))
    overrides = {k: params[k] for k in ADVANCED if params.get(k) is not None}
    if "selection" in overrides and "no_overlap" not in overrides:
        overrides["no_overlap"] = None  # the selection's own default variant
    return dataclasses.replace(base, **overrides) if overrides else base


def _detector(
    ctx: click.Context, params: dict[str, Any], state: str | None, scratch: str
) -> OriginDetector:
    config = _build_config(ctx, params)
    if state is None:
        # ids of origins on disk even without a state file: memory stays bounded
        return OriginDetector(config, id_log=str(Path(scratch) / "ids"))
    if not Path(state).exists():
        # ids of origins live next to the state file, so memory stays table + a constant
        return OriginDetector(config, id_log=state + ".ids")
    detector = OriginDetector.load(state)
    _check_state_config(ctx, state, detector.config, config)
    return detector


def _check_state_config(
    ctx: click.Context, state: str, saved: OriginConfig, config: OriginConfig
) -> None:
    explicit = [
        name
        for name in _CONFIG_OPTIONS
        if ctx.get_parameter_source(name) not in (click.core.ParameterSource.DEFAULT, None)
    ]
    if explicit and saved != config:
        raise ConfigError(
            f"--state {state} was made with {saved.label} (memory {saved.memory_bytes} B);"
            f" the options given ({', '.join(explicit)}) differ: drop them or use a new state"
            " file"
        )


@click.command("origin", cls=_GroupedCommand)
@click.argument("input_path", metavar="[INPUT.jsonl]", required=False)
@click.option(
    "-o", "--output", "output", default="-", show_default=True, help="Output JSONL ('-' = stdout)."
)
@click.option(
    "--memory",
    default="100MB",
    show_default=True,
    help="Size of the table of shingles (100MB, 2GiB, ...; about 10 bytes a shingle, so 100MB"
    " holds 9.8 million).  Every answer is exact until the table first overflows (the"
    " summary says whether it did); a longer stream keeps a sample and degrades gracefully.",
)
@click.option(
    "--preset",
    type=click.Choice(PRESETS),
    default="balanced",
    show_default=True,
    help="exact: keep every shingle, memory grows with the stream (no --memory);"
    " balanced: exact while the table has room, then a sample;"
    " small-memory: the same with smaller entries, for tables far smaller than the stream.",
)
@click.option(
    "--follow",
    "follow",
    default=None,
    metavar="STORE",
    help="Trace the articles of a neardup store (a SQLite file or sqlite:///...,"
    " postgresql://...) in the order they were ingested, instead of INPUT.  With --state,"
    " each run continues where the last one stopped and prints only the new articles.",
)
@click.option("--order", type=click.Choice(["file", "date"]), default="file", show_default=True,
              help="Process INPUT in file order, or sorted by date.")  # fmt: skip
@click.option(
    "--state",
    default=None,
    metavar="FILE",
    help="Continue the stream saved in FILE (when it exists) and save it there at the end.",
)
@on_error_option
@click.option("--id-field", default="id", show_default=True)
@click.option("--text-field", default="text", show_default=True)
@click.option("--date-field", default="date", show_default=True)
@progress_option
@force_option
@click.option(
    "--selection",
    type=click.Choice(SELECTIONS),
    default=None,
    help="Which shingles are anchors (kept under memory pressure) [preset: hailstorm].",
)
@click.option(
    "--selection-parameter", type=int, default=None, help="l, w or p (default: the paper's best)."
)
@click.option(
    "--no-overlap/--overlap",
    "no_overlap",
    default=None,
    help="'No complete overlap' variant of the selection [preset: on for modulo, winnowing"
    " and hailstorm, off for the others].",
)
@click.option(
    "--adaptive/--selected-only",
    "adaptive",
    default=None,
    help="Look up and keep every shingle while the table has room [preset], or only the"
    " selected ones (the paper's pipeline).",
)
@click.option("--eviction", type=click.Choice(EVICTIONS), default=None,
              help="[preset: lucky]")  # fmt: skip
@click.option("--estimation", type=click.Choice(ESTIMATIONS), default=None,
              help="nb, e (expansion), b (bridging), be [preset: b]")  # fmt: skip
@click.option("--shingle-width", type=int, default=None, help="[preset: 8]")
@click.option("--bucket-size", type=int, default=None, help="[preset: 64]")
@click.option("--bridge-limit", type=int, default=None, help="Bridge length T [preset: 255].")
@click.option(
    "--lucky-limit",
    type=int,
    default=None,
    help="Halve a bucket's lucky scores when their mean reaches this [preset: 3; paper: 11].",
)
@click.option(
    "--lucky-every",
    type=int,
    default=None,
    help="Lucky bonus for every y-th selected shingle [preset: 3; paper: 7].",
)
@click.option(
    "--bridge-tolerance",
    type=int,
    default=None,
    help="Bridge partners whose offsets differ by up to this many shingles [preset: 2; paper: 0].",
)
@click.option(
    "--edge-extension",
    type=int,
    default=None,
    help="Call up to this many unfound neighbours of a found copied shingle copied [preset: 1;"
    " paper: 0].",
)
@click.option(
    "--fingerprint-bytes",
    type=click.IntRange(3, 6),
    default=None,
    help="Bytes of fingerprint kept per entry (3, 4 or 6) [preset: 4; paper: 6].",
)
@click.option(
    "--origin-bytes",
    type=click.IntRange(4, 8),
    default=None,
    help="Bytes per stored origin (4: streams of up to 2^31 documents; 8) [preset: 4; paper: 8].",
)
@click.option("--seed", type=int, default=None, help="[preset: 0]")
@click.pass_context
def origin(ctx: click.Context, /, input_path: str | None, output: str, follow: str | None,
           order: str, state: str | None, on_error: str, id_field: str, text_field: str,
           date_field: str, progress: bool | None, force: bool,
           **params: Any) -> None:  # fmt: skip
    """Find where each document's passages were first seen, and what is new in it.

    Reads INPUT.jsonl (one JSON object a line with id, text and optionally date; '-' for
    stdin; .gz read as gzip) in time order, or follows a store with --follow, and writes one
    JSON row per document: the copied and novel segments as character spans, each copied
    one with the earliest document it was seen in, the copied fraction and the document it
    mostly copies (its dominant origin).  Origin detection after Abdel Hamid et al., WWW
    2009 (seed 004).
    """
    from tqdm import tqdm

    if output != "-":
        check_output(output, force)
    if follow is not None:
        if input_path is not None:
            raise click.UsageError("give INPUT.jsonl or --follow STORE, not both")
        _follow(ctx, follow, params, state, output, progress, tqdm)
        return
    if input_path is None:
        raise click.UsageError("give INPUT.jsonl (or --follow STORE)")
    if input_path != "-":
        require_input(input_path)
    with contextlib.ExitStack() as stack:
        scratch = stack.enter_context(tempfile.TemporaryDirectory(prefix="neardup-origin-"))
        detector = _detector(ctx, params, state, scratch)
        stack.callback(detector.close_log)
        _run(ctx, detector, input_path, output, order, state, on_error, id_field, text_field,
             date_field, progress, tqdm)  # fmt: skip


def _run(ctx: click.Context, detector: OriginDetector, input_path: str, output: str,
         order: str, state: str | None, on_error: str, id_field: str, text_field: str,
         date_field: str, progress: bool | None, tqdm: Any) -> None:  # fmt: skip
    """The body of :func:`origin` (the id log lives in a temporary directory meanwhile)."""
    fields = FieldNames(id=id_field, text=text_field, date=date_field)
    interrupts = Interrupts()
    items: Iterator[tuple[int, Article | InputError]] = interrupts.iterate(
        input_articles(input_path, fields)
    )
    bad = BadLines(on_error, input_path)
    show = show_progress(progress)
    out: IO[str] = open_output(output)
    docs = tokens = fresh = copied_docs = other_dominant = lines = 0
    started = time.perf_counter()
    try:
        with (
            interrupts,
            tqdm(disable=not show, unit=" docs", file=sys.stderr, dynamic_ncols=True) as bar,
        ):
            if order == "date":
                items = iter(_by_date(list(items)))
            for line_no, item in items:
                lines += 1
                try:
                    if isinstance(item, InputError):
                        raise item
                    if order == "date":
                        _check_order(detector, item, line_no)
                    report = detector.process(item.id, item.text)
                except ARTICLE_ERRORS as exc:
                    bad.report(line_no, exc)
                    continue
                if order == "date" and isinstance(item, Article) and item.date is not None:
                    detector.last_date = item.date.isoformat()
                out.write(json.dumps(report.to_dict()) + "\n")
                docs += 1
                tokens += report.tokens
                fresh += report.fresh_tokens
                copied_docs += report.copied_fraction > 0
                other_dominant += report.dominant_origin not in (None, report.id)
                bar.update(1)
                interrupts.check()
    finally:
        if out is not sys.stdout:
            out.close()
        if state is not None:
            with interrupts:  # a second Ctrl-C does not cut the save short
                detector.save(state)
        seconds = time.perf_counter() - started
        if lines == 0 and not interrupts.stopping:
            warn(f"{'stdin' if input_path == '-' else input_path} holds no document")
        click.echo(
            f"neardup origin: {docs} documents, {tokens} tokens ({fresh} fresh) in"
            f" {seconds:.1f} s; {copied_docs} with copied text, {other_dominant} mostly copied"
            f" from one earlier document; {bad.summary()}; table {detector.table.nbytes} B,"
            f" {_exactness(detector)} ({detector.config.label})",
            err=True,
        )


def _follow(ctx: click.Context, url: str, params: dict[str, Any], state: str | None,
            output: str, progress: bool | None, tqdm: Any) -> None:  # fmt: skip
    """``--follow STORE``: the store's articles in ingest order, continued from ``state``."""
    from neardup.store import open_store

    explicit = any(
        ctx.get_parameter_source(name) not in (click.core.ParameterSource.DEFAULT, None)
        for name in _CONFIG_OPTIONS
    )
    saved = StoreFollower.saved_config(state) if state is not None and not explicit else None
    config = saved or _build_config(ctx, params)
    store = open_store(url, create=False)
    try:
        follower = StoreFollower(store, config, state_path=state)
        if follower.checkpoint_note:
            click.echo(f"neardup: {follower.checkpoint_note}", err=True)
        show = show_progress(progress)
        out: IO[str] = open_output(output)
        started = time.perf_counter()
        counts = {"docs": 0, "tokens": 0, "fresh": 0}
        try:
            with tqdm(disable=not show, unit=" docs", file=sys.stderr, dynamic_ncols=True) as bar:

                def emit(report: Any) -> None:
                    out.write(json.dumps(report.to_dict()) + "\n")
                    counts["docs"] += 1
                    counts["tokens"] += report.tokens
                    counts["fresh"] += report.fresh_tokens
                    bar.update(1)

                follower.catch_up(emit)
        finally:
            if out is not sys.stdout:
                out.close()
            follower.save()
    finally:
        store.close()
    seconds = time.perf_counter() - started
    click.echo(
        f"neardup origin: {counts['docs']} new articles of {url} ({follower.documents} in all),"
        f" {counts['tokens']} tokens ({counts['fresh']} fresh) in {seconds:.1f} s;"
        f" {_exactness(follower.detector)} ({follower.config.label})",
        err=True,
    )


def _exactness(detector: OriginDetector) -> str:
    """In user words: are the answers so far exact?"""
    first = detector.first_loss
    if first is None:
        return "every answer exact (the table never filled)"
    return f"exact up to document {first + 1}, then a sample (the table filled)"


def _by_date(
    items: list[tuple[int, Article | InputError]],
) -> list[tuple[int, Article | InputError]]:
    """Bad lines first (in file order, so ``--on-error stop`` stops before processing), then
    the articles stably sorted by date; an article without a date is a bad line."""
    bad: list[tuple[int, Article | InputError]] = []
    good: list[tuple[str, int, int, Article]] = []
    for i, (line_no, item) in enumerate(items):
        if isinstance(item, InputError):
            bad.append((line_no, item))
        elif item.date is None:
            bad.append((line_no, InputError("--order date needs a date")))
        else:
            good.append((item.date.isoformat(), i, line_no, item))
    good.sort(key=lambda g: (g[0], g[1]))
    return bad + [(line_no, item) for _, _, line_no, item in good]


def _check_order(detector: OriginDetector, article: Article, line_no: int) -> None:
    last = detector.last_date
    if article.date is not None and last is not None and article.date.isoformat() < last:
        raise InputError(
            f"date {article.date.isoformat()} is before the last processed"
            f" document ({last}); origin detection needs time order"
        )
