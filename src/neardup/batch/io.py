"""Streaming input readers and atomic, verifiable output writers for batch dedup.

Input
-----
:func:`input_files` accepts a JSON Lines file (``.jsonl``/``.ndjson``/``.json``, optionally
gzip-compressed: compression is detected from the magic bytes, not the name), a Parquet file
(``.parquet``/``.pq``), or a directory of them (searched recursively, files taken in sorted
path order, hidden files and ``*.partial`` files ignored).  :func:`iter_records` streams the
documents one at a time; nothing holds the whole corpus.

Defined behaviour for bad input (the same in every pass over the input, so a second pass
sees exactly the documents the first pass saw):

* A malformed line (not UTF-8, not JSON, not an object, missing ``id``/``text``, bad
  ``date``: whatever :func:`parse_json_line` or :func:`check_object` refuse) raises
  :class:`~neardup.errors.InputError` naming the file and 1-based line number (Parquet:
  1-based row number); with ``skip_invalid`` it is skipped and counted in
  :attr:`ReadStats.invalid`.
* Blank lines are ignored (not counted).
* A duplicate ``id`` (an id already seen earlier in the same corpus) raises
  :class:`~neardup.errors.ConflictError` with the location of the repeat; with
  ``skip_invalid`` the later document is skipped and counted in
  :attr:`ReadStats.duplicate_ids`.  The first occurrence always wins.
* Empty texts (or texts without a single word) are read normally; the engine never groups
  them (each is its own cluster and is kept) and counts them.
* A truncated gzip stream raises :class:`~neardup.errors.InputError` naming the file.

Output
------
:class:`AtomicJsonlWriter` writes to ``<path>.partial`` and, only when everything was
written, fsyncs it, renames it over ``<path>`` (atomic on POSIX) and then writes the
completion marker ``<path>.complete`` (JSON: row count, SHA-256 of the bytes, the run key
and the finish time).  :func:`check_complete` verifies an output against its marker and
raises :class:`~neardup.errors.IncompleteOutputError` if the marker is missing or does not
match, so a partial or stale output is never mistaken for a complete one.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import gzip
import hashlib
import json
import os
import zlib
from collections.abc import Generator, Iterable, Iterator
from pathlib import Path
from typing import IO, Any

import numpy as np
import numpy.typing as npt

from neardup.errors import (
    ConflictError,
    IncompleteOutputError,
    InputError,
    NotFoundError,
    StoreError,
)
from neardup.records import Article, FieldNames

try:  # orjson parses news-sized JSON lines about 2x faster than json (docs/batch.md)
    import orjson

    _fast_loads: Any = orjson.loads
    _FAST_ERRORS: tuple[type[Exception], ...] = (orjson.JSONDecodeError,)
except ImportError:  # pragma: no cover - optional speed-up
    _fast_loads = None
    _FAST_ERRORS = ()

__all__ = [
    "AtomicJsonlWriter",
    "InputRecord",
    "ReadStats",
    "atomic_write_bytes",
    "check_complete",
    "check_object",
    "holds_rounded_integer",
    "input_files",
    "input_fingerprint",
    "iter_records",
    "json_default",
    "parse_json_line",
    "read_at",
    "read_lines",
]

_JSONL_SUFFIXES = (".jsonl", ".ndjson", ".json", ".jsonl.gz", ".ndjson.gz", ".json.gz")
_PARQUET_SUFFIXES = (".parquet", ".pq")
_GZIP_MAGIC = b"\x1f\x8b"
_BOM = b"\xef\xbb\xbf"
# How many skipped-line messages are kept as examples for the summary.
_MAX_EXAMPLES = 5


@dataclasses.dataclass
class ReadStats:
    """Counters of one pass over the input (mutable: filled while reading)."""

    documents: int = 0
    invalid: int = 0
    duplicate_ids: int = 0
    blank_lines: int = 0
    examples: list[str] = dataclasses.field(default_factory=list)

    def _note(self, message: str) -> None:
        if len(self.examples) < _MAX_EXAMPLES:
            self.examples.append(message)


@dataclasses.dataclass(frozen=True, slots=True)
class InputRecord:
    """One accepted document: its 0-based ordinal among accepted documents, where it came
    from (``file:line``), the parsed :class:`Article` and the original JSON object."""

    ordinal: int
    location: str
    article: Article
    raw: dict[str, Any]
    file_index: int = 0
    line: int = 0


def _is_parquet(path: Path) -> bool:
    return path.name.lower().endswith(_PARQUET_SUFFIXES)


def _is_input_name(path: Path) -> bool:
    name = path.name.lower()
    return name.endswith(_JSONL_SUFFIXES + _PARQUET_SUFFIXES)


def input_files(path: str | os.PathLike[str]) -> list[Path]:
    """The files of an input: the file itself, or a directory's input files in sorted order.

    Raises ``NotFoundError`` when the path does not exist and ``InputError`` when a
    directory holds no input file.
    """
    root = Path(path)
    if not root.exists():
        raise NotFoundError(f"input {root} does not exist")
    if root.is_file():
        return [root]
    files = sorted(
        p
        for p in root.rglob("*")
        if p.is_file()
        and _is_input_name(p)
        and not any(part.startswith(".") for part in p.relative_to(root).parts)
    )
    if not files:
        raise InputError(
            f"directory {root} holds no input file (*.jsonl, *.jsonl.gz, *.json, *.parquet)"
        )
    return files


def input_fingerprint(files: Iterable[Path]) -> list[list[Any]]:
    """``[path, size, mtime_ns]`` of each file: changes when an input file changes."""
    out: list[list[Any]] = []
    for f in files:
        st = f.stat()
        out.append([str(f.resolve()), st.st_size, st.st_mtime_ns])
    return out


def read_lines(path: str | os.PathLike[str]) -> Generator[tuple[int, bytes], None, None]:
    """``(1-based line number, bytes)`` of each line of a file, plain or gzip-compressed
    (recognised by its magic bytes, not its name): the one way every JSON Lines input file
    is opened.

    A missing file raises ``NotFoundError``; one that cannot be read (a directory, no
    permission, an I/O error) ``StoreError``; a gzip stream that is truncated or corrupt
    ``InputError`` naming the last line read whole, after the lines before it were given.
    """
    lineno = 0
    try:
        with open(path, "rb") as raw:
            stream: IO[bytes] | gzip.GzipFile = raw
            if raw.peek(2)[:2] == _GZIP_MAGIC:
                stream = gzip.GzipFile(fileobj=raw, mode="rb")
            for lineno, line in enumerate(stream, start=1):
                yield lineno, line
    except FileNotFoundError as exc:
        raise NotFoundError(f"input {path} does not exist") from exc
    except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
        raise InputError(
            f"{path}: compressed stream is truncated or corrupt after line {lineno}: {exc}"
        ) from exc
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {exc.strerror or exc}") from exc


def _jsonl_objects(path: Path) -> Iterator[tuple[int, Any]]:
    """``(line_number, parsed object or an InputError)`` for each line (``None``: blank)."""
    for lineno, line in read_lines(path):
        yield lineno, parse_json_line(line)


def parse_json_line(line: bytes) -> Any:
    """The JSON value of one input line, ``None`` for a blank line, or an ``InputError``
    saying why the line is unusable (returned, not raised: the caller decides).

    The one per-line rule of every reader (batch dedup, ``neardup ingest``/``origin``/
    ``synth``, the evaluation readers): whatever the bytes, this returns, never raises.
    A line holding JSON ``null`` is an ``InputError`` (``None`` means a blank line).  A UTF-8
    byte order mark at the start of a line is not part of its JSON and is ignored (editors
    on Windows write one at the start of a file).  Integers are read exactly, whatever their
    size.  Unusable: not UTF-8, not JSON, a number with more than Python's 4,300 digits,
    nesting deeper than the parser's recursion limit, or a lone UTF-16 surrogate escape
    (``"\\ud800"``: not a Unicode character, so no UTF-8 output could hold it).
    """
    if line.startswith(_BOM):
        line = line[len(_BOM) :]
    if not line.strip():
        return None
    if _fast_loads is not None:
        # orjson accepts a strict subset of what json does (valid UTF-8, no NaN, no lone
        # surrogates, 1,024 levels of nesting) and gives the same objects, except that it
        # reads an integer beyond 64 bits as a rounded float; such a line, and anything it
        # rejects, takes the json path below, which reads it exactly or words the error.
        try:
            fast = _fast_loads(line)
        except _FAST_ERRORS:
            pass
        else:
            if not holds_rounded_integer(fast):
                return _null_line() if fast is None else fast
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        return InputError(f"not valid UTF-8 at byte {exc.start} of the line")
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        return InputError(f"not valid JSON: {exc.msg} (column {exc.colno})")
    except RecursionError:
        return InputError("JSON nested too deeply")
    except ValueError:  # json's only other error: an integer of more than 4,300 digits
        return InputError("not usable JSON: a number longer than 4,300 digits")
    if "\\u" in text:
        try:
            json.dumps(value, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            return InputError("a string holds a lone UTF-16 surrogate (not a Unicode character)")
        except (ValueError, RecursionError) as exc:  # pragma: no cover - parsed values re-dump
            return InputError(f"not usable JSON: {exc}")
    return _null_line() if value is None else value


# The smallest magnitude orjson gives as a float for an integer token: it reads integers
# in [-2**63, 2**64) exactly and larger ones as (rounded) floats.
_WIDE = float(1 << 63)


def holds_rounded_integer(value: Any) -> bool:
    """Whether a value orjson parsed holds a float that may be a rounded integer token (an
    integer beyond 64 bits, which orjson reads as a float): such a document is read again
    with the json module, which reads integers exactly."""
    stack = [value]
    while stack:
        node = stack.pop()
        if type(node) is dict:
            children: Iterable[Any] = node.values()
        elif type(node) is list:
            children = node
        else:
            children = (node,)
        for child in children:
            kind = type(child)
            if kind is float:
                if abs(child) >= _WIDE and child.is_integer():
                    return True
            elif kind is dict or kind is list:
                stack.append(child)
    return False


def _null_line() -> InputError:
    return InputError("expected a JSON object, got null")


def check_object(obj: Any, names: FieldNames) -> Article:
    """The :class:`Article` of a parsed line (or the ``InputError`` :func:`parse_json_line`
    returned); raises ``InputError``/``InputTypeError`` (without a location) if invalid.

    Any value a field can hold gives an ``InputError``: the builtin errors building the
    article can raise on hostile values (a date that overflows in the conversion to UTC, an
    integer too long to turn into an id) are turned into one here."""
    if isinstance(obj, InputError):
        raise obj
    if not isinstance(obj, dict):
        raise InputError(f"expected a JSON object, got {type(obj).__name__}")
    try:
        return Article.from_mapping(obj, names)
    except InputError:
        raise
    except (ValueError, TypeError, OverflowError) as exc:
        raise InputError(f"unusable value: {exc}") from exc


def _parquet_objects(path: Path) -> Iterator[tuple[int, Any]]:
    import pyarrow.parquet as pq

    try:
        pfile = pq.ParquetFile(path)
    except Exception as exc:  # pyarrow raises several unrelated types for a bad file
        raise InputError(f"{path}: not a readable Parquet file: {exc}") from exc
    row = 0
    for batch in pfile.iter_batches(batch_size=4096):
        for obj in batch.to_pylist():
            row += 1
            yield row, obj


def iter_records(
    paths: Iterable[Path],
    *,
    fields: FieldNames | None = None,
    skip_invalid: bool = False,
    stats: ReadStats | None = None,
) -> Iterator[InputRecord]:
    """Stream the accepted documents of ``paths`` in order (see the module docstring).

    Deterministic: the same files give the same records with the same ordinals.  Memory:
    one document at a time plus the set of ids seen (for the duplicate check).
    """
    names = fields or FieldNames()
    counts = stats if stats is not None else ReadStats()
    seen: set[str] = set()
    ordinal = 0
    for file_index, path in enumerate(paths):
        objects = _parquet_objects(path) if _is_parquet(path) else _jsonl_objects(path)
        for lineno, obj in objects:
            where = f"{path}:{lineno}"
            if obj is None:
                counts.blank_lines += 1
                continue
            try:
                article = check_object(obj, names)
            except InputError as exc:
                if not skip_invalid:
                    raise type(exc)(f"{where}: {exc}") from exc
                counts.invalid += 1
                counts._note(f"{where}: {exc}")
                continue
            if article.id in seen:
                message = f"{where}: duplicate id {article.id!r} (first occurrence is kept)"
                if not skip_invalid:
                    raise ConflictError(message)
                counts.duplicate_ids += 1
                counts._note(message)
                continue
            seen.add(article.id)
            counts.documents += 1
            yield InputRecord(ordinal, where, article, obj, file_index, lineno)
            ordinal += 1


def read_at(
    paths: list[Path], file_index: npt.ArrayLike, line: npt.ArrayLike
) -> Iterator[dict[str, Any]]:
    """The JSON objects at (``file_index``, ``line``) positions, sorted ascending, as recorded
    by :func:`iter_records` (:attr:`InputRecord.file_index`, :attr:`InputRecord.line`).

    Only the requested lines are parsed (a second pass that needs a few documents costs
    little more than reading the bytes).  Raises ``StoreError`` if a requested line is gone
    (the input changed since it was first read).
    """
    files = np.asarray(file_index, dtype=np.int64)
    lines = np.asarray(line, dtype=np.int64)
    k = 0
    total = files.shape[0]
    while k < total:
        f = int(files[k])
        end = int(np.searchsorted(files, f, side="right"))
        wanted = lines[k:end]
        yield from _read_lines(paths[f], wanted)
        k = end


def _loads(line: bytes) -> Any:
    """A line :func:`iter_records` accepted, parsed again by the same rule (``ValueError``
    if it no longer parses: the input changed)."""
    value = parse_json_line(line)
    if value is None or isinstance(value, InputError):
        raise ValueError(f"the line no longer holds a JSON object ({value})")
    return value


def _read_lines(path: Path, wanted: npt.NDArray[np.int64]) -> Iterator[dict[str, Any]]:
    j = 0
    if _is_parquet(path):
        for lineno, obj in _parquet_objects(path):
            if j < wanted.shape[0] and lineno == wanted[j]:
                yield obj
                j += 1
    else:
        raw = path.open("rb")
        try:
            stream: IO[bytes] | gzip.GzipFile = raw
            if raw.peek(2)[:2] == _GZIP_MAGIC:
                stream = gzip.GzipFile(fileobj=raw, mode="rb")
            next_line = int(wanted[0]) if wanted.shape[0] else -1
            for lineno, text in enumerate(stream, start=1):
                if lineno != next_line:
                    continue
                yield _loads(text)
                j += 1
                if j == wanted.shape[0]:
                    break
                next_line = int(wanted[j])
        except (OSError, EOFError, zlib.error, ValueError) as exc:
            raise StoreError(f"{path} changed or became unreadable during the run: {exc}") from exc
        finally:
            raw.close()
    if j != wanted.shape[0]:
        raise StoreError(f"{path} changed during the run: expected lines are missing")


# --- output ------------------------------------------------------------------------------


def json_default(value: object) -> Any:
    """JSON fallback for values Parquet can hold (dates, decimals, bytes, numpy scalars)."""
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    item = getattr(value, "item", None)
    if callable(item):
        return item()
    return str(value)


def _marker_path(path: Path) -> Path:
    return path.with_name(path.name + ".complete")


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` via a temporary file and an atomic rename."""
    tmp = path.with_name(path.name + ".partial")
    try:
        with tmp.open("wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise StoreError(f"cannot write {path}: {exc}") from exc


class AtomicJsonlWriter:
    """Write JSON Lines to ``path`` atomically, then a completion marker.

    Use as a context manager and call :meth:`commit` at the end; leaving the block without
    committing (an exception, an interrupt) removes the ``.partial`` file and leaves any
    earlier complete output untouched.  A ``.gz`` path is gzip-compressed (deterministic:
    no timestamp in the header).
    """

    def __init__(
        self, path: str | os.PathLike[str], run_key: str = "", extra: dict[str, Any] | None = None
    ) -> None:
        self.path = Path(path)
        self.run_key = run_key
        self.extra = dict(extra or {})
        self.rows = 0
        self._tmp = self.path.with_name(self.path.name + ".partial")
        self._hash = hashlib.sha256()
        self._raw: IO[bytes] | None = None
        self._out: IO[bytes] | gzip.GzipFile | None = None
        self._committed = False

    def __enter__(self) -> AtomicJsonlWriter:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._raw = self._tmp.open("wb")
        except OSError as exc:
            raise StoreError(f"cannot write {self.path}: {exc}") from exc
        if self.path.name.endswith(".gz"):
            self._out = gzip.GzipFile(fileobj=self._raw, mode="wb", mtime=0)
        else:
            self._out = self._raw
        return self

    def write(self, row: dict[str, Any]) -> None:
        """Append one JSON object as a line."""
        if self._out is None:
            raise StoreError("writer is not open (use it as a context manager)")
        line = (
            json.dumps(row, ensure_ascii=False, separators=(",", ":"), default=json_default) + "\n"
        ).encode("utf-8", "surrogatepass")
        self._out.write(line)
        self._hash.update(line)
        self.rows += 1

    def write_lines(self, text: str, rows: int) -> None:
        """Append ``rows`` lines already formatted as JSON (``text`` ends with a line break).

        The same bytes and marker as :meth:`write` of each row, for callers that format many
        rows at once (one encode, one write and one hash update instead of one per row)."""
        if self._out is None:
            raise StoreError("writer is not open (use it as a context manager)")
        data = text.encode("utf-8", "surrogatepass")
        self._out.write(data)
        self._hash.update(data)
        self.rows += rows

    def commit(self) -> None:
        """Finish: fsync, rename over the final path, then write the completion marker."""
        if self._out is None or self._raw is None:
            raise StoreError("writer is not open (use it as a context manager)")
        try:
            if self._out is not self._raw:
                self._out.close()
            self._raw.flush()
            os.fsync(self._raw.fileno())
            self._raw.close()
            marker = _marker_path(self.path)
            # Remove the old marker first: if we die between the rename and the new marker,
            # the output reads as incomplete (safe), never as complete with stale content.
            marker.unlink(missing_ok=True)
            os.replace(self._tmp, self.path)
            _fsync_dir(self.path.parent)
            info = {
                **self.extra,
                "rows": self.rows,
                "sha256": self._hash.hexdigest(),
                "run_key": self.run_key,
                "finished": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            }
            atomic_write_bytes(marker, json.dumps(info, sort_keys=True).encode("ascii") + b"\n")
        except OSError as exc:
            raise StoreError(f"cannot finish {self.path}: {exc}") from exc
        self._committed = True
        self._out = self._raw = None

    def __exit__(self, *exc_info: object) -> None:
        if self._committed:
            return
        for handle in (self._out, self._raw):
            if handle is not None:
                with contextlib.suppress(OSError):
                    handle.close()
        self._tmp.unlink(missing_ok=True)


def check_complete(path: str | os.PathLike[str], run_key: str | None = None) -> dict[str, Any]:
    """Verify that ``path`` is a complete output; return its marker.

    Raises ``IncompleteOutputError`` when the marker is missing or unreadable, when the
    file's (uncompressed) row count or SHA-256 differ from the marker, or when ``run_key``
    is given and differs from the marker's.
    """
    out = Path(path)
    marker = _marker_path(out)
    if not out.exists():
        raise IncompleteOutputError(f"{out} does not exist")
    try:
        info: dict[str, Any] = json.loads(marker.read_text("ascii"))
    except (OSError, ValueError) as exc:
        raise IncompleteOutputError(
            f"{out} has no valid completion marker ({marker.name}): it is partial or stale"
        ) from exc
    digest = hashlib.sha256()
    rows = 0
    try:
        with out.open("rb") as raw:
            stream: IO[bytes] | gzip.GzipFile = raw
            if raw.peek(2)[:2] == _GZIP_MAGIC:
                stream = gzip.GzipFile(fileobj=raw, mode="rb")
            for line in stream:
                digest.update(line)
                rows += 1
    except (OSError, EOFError, zlib.error) as exc:
        raise IncompleteOutputError(f"{out} cannot be read back: {exc}") from exc
    if rows != info.get("rows") or digest.hexdigest() != info.get("sha256"):
        raise IncompleteOutputError(f"{out} does not match its completion marker")
    if run_key is not None and info.get("run_key") != run_key:
        raise IncompleteOutputError(f"{out} was written by a different run")
    return info
