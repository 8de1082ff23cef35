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
import json
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import click

from neardup.batch.io import check_object, parse_json_line
from neardup.cli.common import (
    ARTICLE_ERRORS,
    BadLines,
    Interrupts,
    check_output,
    force_option,
    input_lines,
    on_error_option,
    open_output,
    progress_option,
    require_input,
    show_progress,
    warn,
)
from neardup.detect.origin import OriginConfig, OriginDetector, parse_memory
from neardup.detect.origin.config import ESTIMATIONS, EVICTIONS, SELECTIONS
from neardup.errors import ConfigError, InputError
from neardup.records import Article, FieldNames

__all__ = ["origin"]

_CONFIG_OPTIONS = (
    "memory",
    "selection",
    "selection_parameter",
    "no_overlap",
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


def _articles(path: str, fields: FieldNames) -> Iterator[tuple[int, Article | InputError]]:
    for line_no, raw in input_lines(path):
        obj = parse_json_line(raw)
        if obj is None:
            continue
        try:
            yield line_no, check_object(obj, fields)
        except InputError as exc:
            yield line_no, exc


def _build_config(params: dict[str, Any]) -> OriginConfig:
    return OriginConfig(
        shingle_width=params["shingle_width"],
        selection=params["selection"],
        selection_parameter=params["selection_parameter"],
        no_overlap=params["no_overlap"],
        memory_bytes=parse_memory(params["memory"]),
        bucket_size=params["bucket_size"],
        eviction=params["eviction"],
        estimation=params["estimation"],
        bridge_limit=params["bridge_limit"],
        lucky_limit=params["lucky_limit"],
        lucky_every=params["lucky_every"],
        bridge_tolerance=params["bridge_tolerance"],
        edge_extension=params["edge_extension"],
        fingerprint_bytes=params["fingerprint_bytes"],
        origin_bytes=params["origin_bytes"],
        seed=params["seed"],
    )


def _detector(
    ctx: click.Context, params: dict[str, Any], state: str | None, scratch: str
) -> OriginDetector:
    config = _build_config(params)
    if state is None:
        # ids of origins on disk even without a state file: memory stays bounded
        return OriginDetector(config, id_log=str(Path(scratch) / "ids"))
    if not Path(state).exists():
        # ids of origins live next to the state file, so memory stays table + a constant
        return OriginDetector(config, id_log=state + ".ids")
    detector = OriginDetector.load(state)
    explicit = [
        name
        for name in _CONFIG_OPTIONS
        if ctx.get_parameter_source(name) not in (click.core.ParameterSource.DEFAULT, None)
    ]
    if explicit and detector.config != config:
        raise ConfigError(
            f"--state {state} was made with {detector.config.label} (memory"
            f" {detector.config.memory_bytes} B); the options given ({', '.join(explicit)})"
            " differ: drop them or use a new state file"
        )
    return detector


@click.command("origin")
@click.argument("input_path", metavar="INPUT.jsonl")
@click.option(
    "-o", "--output", "output", default="-", show_default=True, help="Output JSONL ('-' = stdout)."
)
@click.option(
    "--memory", default="100MB", show_default=True, help="Hash-table budget (100MB, 2GiB, ...)."
)
@click.option("--selection", type=click.Choice(SELECTIONS), default="hailstorm", show_default=True)
@click.option(
    "--selection-parameter", type=int, default=None, help="l, w or p (default: the paper's best)."
)
@click.option(
    "--no-overlap/--overlap",
    "no_overlap",
    default=True,
    show_default=True,
    help="'No complete overlap' variant (modulo, winnowing, hailstorm).",
)
@click.option("--eviction", type=click.Choice(EVICTIONS), default="lucky", show_default=True)
@click.option("--estimation", type=click.Choice(ESTIMATIONS), default="be", show_default=True)
@click.option("--shingle-width", type=int, default=8, show_default=True)
@click.option("--bucket-size", type=int, default=64, show_default=True)
@click.option("--bridge-limit", type=int, default=30, show_default=True)
@click.option(
    "--lucky-limit",
    type=int,
    default=11,
    show_default=True,
    help="Halve a bucket's lucky scores when their mean reaches this (2-3 at small memory).",
)
@click.option(
    "--lucky-every",
    type=int,
    default=7,
    show_default=True,
    help="Lucky bonus for every y-th selected shingle (3 at small memory).",
)
@click.option(
    "--bridge-tolerance",
    type=int,
    default=0,
    show_default=True,
    help="Extension: bridge partners whose offsets differ by up to this many shingles (2 at"
    " small memory).",
)
@click.option(
    "--edge-extension",
    type=int,
    default=0,
    show_default=True,
    help="Extension: call up to this many neighbours of a found copied shingle copied (1-2 at"
    " small memory).",
)
@click.option(
    "--fingerprint-bytes",
    type=click.IntRange(3, 6),
    default=6,
    show_default=True,
    help="Extension: bytes of fingerprint kept per entry (6 = the paper; 3 or 4 pack more"
    " entries into the same memory).",
)
@click.option(
    "--origin-bytes",
    type=click.IntRange(4, 8),
    default=8,
    show_default=True,
    help="Extension: bytes per stored origin (8 = the paper; 4 allows 2^32 documents).",
)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--order", type=click.Choice(["file", "date"]), default="file", show_default=True)
@click.option("--state", default=None, help="Load the detector from / save it to this file.")
@on_error_option
@click.option("--id-field", default="id", show_default=True)
@click.option("--text-field", default="text", show_default=True)
@click.option("--date-field", default="date", show_default=True)
@progress_option
@force_option
@click.pass_context
def origin(ctx: click.Context, /, input_path: str, output: str, order: str, state: str | None,
           on_error: str, id_field: str, text_field: str, date_field: str,
           progress: bool | None, force: bool, **params: Any) -> None:  # fmt: skip
    """Find where each document's passages were first seen (origin detection, seed 004)."""
    from tqdm import tqdm

    if input_path != "-":
        require_input(input_path)
    if output != "-":
        check_output(output, force)
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
        _articles(input_path, fields)
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
            f" from one earlier document; {bad.summary()}; table {detector.table.nbytes} B"
            f" ({detector.config.label})",
            err=True,
        )


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
