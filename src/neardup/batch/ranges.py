"""Input partitions that Dask workers read themselves: byte ranges of JSON Lines files.

With a Dask client, the driver would otherwise read and parse every line and ship the texts
to the workers; on a 2-core machine that serial parse costs about as much as signing.
Here the driver only cuts each plain (uncompressed) JSON Lines file into ranges of about
``target`` bytes that end at a line break (:func:`plan_ranges`, one sequential read that
counts line breaks so every range knows its first line number), and each worker reads,
parses and validates its own range (:func:`parse_range`) with exactly the per-line rules of
:func:`neardup.batch.io.iter_records`.  Duplicate ids are checked by the driver, in input
order, since they span ranges.

Guarantees: the documents, their line numbers and every error or skip are those
:func:`~neardup.batch.io.iter_records` gives (tested); ranges depend only on the files and
``target``, never on the number of workers.  Gzip and Parquet inputs are not split (the
engine reads them on the driver).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from pathlib import Path

import numpy as np
import numpy.typing as npt

from neardup.batch.io import check_object
from neardup.errors import InputError, StoreError
from neardup.records import MAX_ID_BYTES, FieldNames, epoch_us, parse_date

__all__ = ["ByteRange", "ParsedRange", "parse_range", "plan_ranges", "splittable"]

I64 = npt.NDArray[np.int64]

_GZIP_MAGIC = b"\x1f\x8b"
_BLOCK = 8 << 20
_NO_DATE = np.iinfo(np.int64).max


@dataclasses.dataclass(frozen=True)
class ByteRange:
    """Bytes ``[start, end)`` of input file ``file_index`` (``path``), whose first line is
    line ``first_line`` (1-based) of the file."""

    file_index: int
    path: str
    start: int
    end: int
    first_line: int


@dataclasses.dataclass(frozen=True)
class ParsedRange:
    """The accepted documents of a range (before the duplicate-id check) and its problems.

    ``issues``: ``(line, message)`` of skipped invalid lines (``skip_invalid``), in order.
    ``error``: without ``skip_invalid``, the first invalid line's error (with its location);
    the documents listed are those before it.
    """

    ids: list[str]
    texts: list[str]
    dates: I64
    lengths: I64
    lines: I64
    issues: list[tuple[int, str]]
    error: InputError | None


def splittable(paths: list[Path]) -> bool:
    """Whether every file is plain (uncompressed) JSON Lines, so it can be cut into ranges."""
    for path in paths:
        if path.name.lower().endswith((".parquet", ".pq")):
            return False
        with path.open("rb") as fh:
            if fh.read(2) == _GZIP_MAGIC:
                return False
    return True


def plan_ranges(paths: list[Path], target: int, first_file: int = 0) -> list[ByteRange]:
    """Ranges of about ``target`` bytes, each ending just after a line break (or at the end
    of its file), covering every file in order; ``first_file`` numbers the first file."""
    ranges: list[ByteRange] = []
    for index, path in enumerate(paths, start=first_file):
        start, line, pos, cut = 0, 1, 0, target
        breaks_before = 0  # line breaks in [0, pos)
        with path.open("rb") as fh:
            while True:
                block = fh.read(_BLOCK)
                if not block:
                    break
                while pos + len(block) > cut:
                    nl = block.find(b"\n", max(0, cut - pos))
                    if nl < 0:
                        break
                    end = pos + nl + 1
                    ranges.append(ByteRange(index, str(path), start, end, line))
                    line = breaks_before + block.count(b"\n", 0, nl + 1) + 1
                    start, cut = end, end + target
                breaks_before += block.count(b"\n")
                pos += len(block)
        if pos > start:
            ranges.append(ByteRange(index, str(path), start, pos, line))
    return ranges


def date_key(value: dt.datetime | None) -> int:
    """A document's date as the batch stores it: microseconds since the epoch
    (:func:`neardup.records.epoch_us`), the largest int64 for no date."""
    return int(_NO_DATE) if value is None else epoch_us(value)


def _common_case(obj: object, fields: FieldNames) -> tuple[str, str, int] | None:
    """``(id, text, date in µs)`` of the common valid line (an object with a non-empty
    string id, a string text and a valid or absent date) without building an
    :class:`~neardup.records.Article`; ``None`` for anything else, which then takes
    :func:`~neardup.batch.io.check_object` and so gets exactly its checks and messages."""
    if type(obj) is not dict:
        return None
    doc_id = obj.get(fields.id)
    text = obj.get(fields.text)
    if type(doc_id) is not str or not doc_id or type(text) is not str:
        return None
    if "\x00" in text or "\x00" in doc_id or len(doc_id) * 4 > MAX_ID_BYTES:
        return None  # check_object's rule for NUL and long ids (lone surrogates never parse)
    value = obj.get(fields.date)
    if type(value) is str and value:
        # Fast path: a string datetime.fromisoformat takes as it is.  parse_date would strip
        # it (a no-op: fromisoformat rejects surrounding blanks) and read a final "Z" as
        # +00:00 (fromisoformat does too), so the instant is the same; an aware datetime's
        # offset is honoured by the subtraction, so no astimezone is needed.
        try:
            parsed = dt.datetime.fromisoformat(value)
        except ValueError:
            parsed = None
        # Years 1 and 9999 stay on parse_date's path: its conversion to UTC can overflow.
        if parsed is not None and 1 < parsed.year < 9999:
            if parsed.tzinfo is None:
                parsed = parsed.replace(tzinfo=dt.UTC)
            return doc_id, text, epoch_us(parsed)
    try:
        date = parse_date(value)
    except (InputError, OverflowError):  # check_object words both as InputError
        return None
    return doc_id, text, date_key(date)


def parse_range(part: ByteRange, fields: FieldNames, skip_invalid: bool) -> ParsedRange:
    """Read, parse and validate the lines of ``part`` (see :class:`ParsedRange`)."""
    from neardup.batch.io import parse_json_line as _parse_line  # the one per-line rule

    try:
        with open(part.path, "rb") as fh:
            fh.seek(part.start)
            data = fh.read(part.end - part.start)
    except OSError as exc:
        raise StoreError(
            f"a worker cannot read {part.path}: {exc} (workers need the input files; "
            "use --driver-reads on a cluster without shared storage)"
        ) from exc
    if len(data) != part.end - part.start:
        raise StoreError(f"{part.path} changed during the run; run again")
    ids: list[str] = []
    texts: list[str] = []
    dates: list[int] = []
    lines: list[int] = []
    issues: list[tuple[int, str]] = []
    error: InputError | None = None
    pieces = data.split(b"\n")
    ends_with_break = pieces[-1] == b""
    if ends_with_break:
        pieces.pop()  # the range ends with a line break
    last = len(pieces) - 1
    for offset, raw in enumerate(pieces):
        lineno = part.first_line + offset
        obj = _parse_line(raw)
        if obj is None:
            continue
        if isinstance(obj, InputError) and (offset < last or ends_with_break):
            # Word the error as the line reader does: it sees the line with its break.
            obj = _parse_line(raw + b"\n")
        accepted = _common_case(obj, fields)
        if accepted is None:
            try:
                article = check_object(obj, fields)
            except InputError as exc:
                where = f"{part.path}:{lineno}"
                if not skip_invalid:
                    error = type(exc)(f"{where}: {exc}")
                    break
                issues.append((lineno, f"{where}: {exc}"))
                continue
            accepted = (article.id, article.text, date_key(article.date))
        ids.append(accepted[0])
        texts.append(accepted[1])
        dates.append(accepted[2])
        lines.append(lineno)
    return ParsedRange(
        ids,
        texts,
        np.asarray(dates, dtype=np.int64),
        np.fromiter((len(t) for t in texts), dtype=np.int64, count=len(texts)),
        np.asarray(lines, dtype=np.int64),
        issues,
        error,
    )
