"""What every ``neardup`` command does the same way (the user's side is ``docs/cli.md``).

* **Exit codes**: 0 done; 2 usage (a bad option, an existing output without ``--force``);
  65 bad input data; 66 a missing input; 74 a store or file that cannot be read or written;
  77 a wrong API token; 130 interrupted.  A :class:`~neardup.errors.NearDupError` carries its
  code; ``neardup.cli.main`` prints its one-line message (never a traceback).
* **Malformed input lines** (:class:`BadLines`): ``--on-error stop`` (the default) stops at
  the first one with ``FILE:LINE: reason`` and exit 65; ``--on-error skip`` skips every one,
  whatever the reason, shows the first :data:`SHOWN` and counts them all in the summary.
  Blank texts are not errors: they are counted as empty.
* **Outputs** go where the user points, and an existing one is only replaced with
  ``--force`` (:func:`check_output`).
* **Progress bars** only on a terminal, unless ``--progress``/``--no-progress`` says otherwise.
* **An input without a document** gives a warning, then the usual summary.
* **Ctrl-C** (:class:`Interrupts`, :func:`run_isolated`): exit 130 with a message, never
  inside compiled code, never a half-written output line.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
import sys
import traceback
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from types import FrameType
from typing import IO, TYPE_CHECKING, Any, TypeVar

import click

from neardup.errors import ConfigError, InputError, NearDupError, NotFoundError, StoreError

if TYPE_CHECKING:
    from neardup.records import Article, FieldNames

__all__ = [
    "EXIT_INTERRUPTED",
    "SHOWN",
    "BadLines",
    "Interrupted",
    "Interrupts",
    "check_output",
    "force_option",
    "input_articles",
    "input_lines",
    "on_error_option",
    "open_output",
    "progress_option",
    "require_input",
    "run_isolated",
    "shared_data",
    "show_progress",
    "warn",
]

EXIT_INTERRUPTED = 130
#: Skipped lines shown in full on stderr; the rest are counted in the summary.
SHOWN = 10
#: The builtin errors that hostile data can raise where neardup code does not expect it
#: (a value that overflows, a wrong type deep in a field): a bad line, not a bug.
DATA_ERRORS: tuple[type[Exception], ...] = (
    ValueError,
    TypeError,
    OverflowError,
    RecursionError,
)

#: What processing one article may raise that makes it a bad line rather than a bug.
ARTICLE_ERRORS: tuple[type[Exception], ...] = (NearDupError, *DATA_ERRORS)

_F = TypeVar("_F", bound=Callable[..., Any])


# --- options ---------------------------------------------------------------------------------


def on_error_option(fn: _F) -> _F:
    """``--on-error stop|skip`` (default ``stop``)."""
    return click.option(
        "--on-error",
        type=click.Choice(["stop", "skip"]),
        default="stop",
        show_default=True,
        help="What a malformed input line does: stop the command there (exit 65, naming the"
        " file and line), or skip it and go on (each counted in the summary).",
    )(fn)


def force_option(fn: _F) -> _F:
    """``--force``: replace an existing output."""
    return click.option(
        "--force", is_flag=True, help="Replace the output if it exists (never done without)."
    )(fn)


def progress_option(fn: _F) -> _F:
    """``--progress/--no-progress`` (default: on when stderr is a terminal)."""
    return click.option(
        "--progress/--no-progress",
        default=None,
        help="Progress bars on stderr (default: only when stderr is a terminal).",
    )(fn)


def show_progress(flag: bool | None) -> bool:
    """Whether to draw progress bars: as asked, else only on a terminal."""
    if flag is not None:
        return flag
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def warn(message: str) -> None:
    """One warning line on stderr."""
    click.echo(f"neardup: warning: {message}", err=True)


# --- inputs and outputs ----------------------------------------------------------------------


def require_input(path: str | os.PathLike[str], what: str = "input") -> Path:
    """``path`` as a Path; ``NotFoundError`` (exit 66) when it does not exist."""
    p = Path(path)
    if not p.exists():
        raise NotFoundError(f"{what} {p} does not exist")
    return p


def shared_data(given: Path | None, *parts: str) -> Path:
    """The data folder holding ``parts`` (e.g. ``"reuters21578", "docs.jsonl.gz"``): the one
    given with ``--data``, else the first of :func:`neardup.samples.data_folders` that holds
    them.
    ``NotFoundError`` (66) says where it looked and how to point at the data."""
    if given is not None:
        if not Path(given, *parts).exists():
            raise NotFoundError(f"{Path(given, *parts)} does not exist (check --data)")
        return Path(given)
    from neardup.samples import data_folders

    candidates = data_folders()
    for folder in candidates:
        if Path(folder, *parts).exists():
            return folder
    looked = ", ".join(str(Path(c, *parts)) for c in candidates)
    raise NotFoundError(
        f"{Path(*parts)} not found (looked in: {looked}); pass --data with the folder that"
        " holds it, or set NEARDUP_DATA"
    )


def check_output(path: str | os.PathLike[str], force: bool, *, extra: Iterable[str] = ()) -> None:
    """Refuse an existing output unless ``force``; with it, remove the old file (and the
    sibling files named by ``extra`` suffixes, e.g. a completion marker) first, so a failed
    run can never be mistaken for the old output.  A folder must be empty or ``force``.
    Anything else that exists (a device such as ``/dev/null``, a pipe, a socket) is refused
    and never removed: outputs are written as new files."""
    p = Path(path)
    if not p.exists():
        return
    if not p.is_dir() and not p.is_file():
        raise ConfigError(f"{p} exists and is not a regular file: name a new file as the output")
    if p.is_dir():
        if not any(p.iterdir()):
            return
        if not force:
            raise ConfigError(f"{p} exists and is not empty: add --force to write into it")
        return
    if not force:
        raise ConfigError(f"{p} exists: add --force to replace it")
    try:
        p.unlink()
        for suffix in extra:
            p.with_name(p.name + suffix).unlink(missing_ok=True)
    except OSError as exc:
        raise StoreError(f"cannot replace {p}: {exc}") from exc


def open_output(path: str) -> IO[str]:
    """``path`` opened for writing text (``-``: stdout), its missing folders made, as every
    command's outputs are; ``StoreError`` (74) when it cannot be."""
    if path == "-":
        return sys.stdout
    try:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        return open(path, "w", encoding="utf-8")  # the caller closes it
    except OSError as exc:
        raise StoreError(f"cannot write {path}: {exc.strerror or exc}") from exc


def input_lines(path: str) -> Iterator[tuple[int, bytes]]:
    """``(line number, bytes)`` of a JSON Lines input (``-``: stdin; gzip by its magic
    bytes).  A missing file is ``NotFoundError`` (66), an unreadable one ``StoreError`` (74),
    a truncated gzip stream ``InputError`` (65) naming the last good line
    (:func:`neardup.batch.io.read_lines`)."""
    if path == "-":
        yield from enumerate(sys.stdin.buffer, start=1)
        return
    from neardup.batch.io import read_lines

    require_input(path)
    yield from read_lines(path)


def input_articles(path: str, fields: FieldNames) -> Iterator[tuple[int, Article | InputError]]:
    """``(line number, article)`` of each non-blank line of a JSON Lines input, or the line's
    ``InputError`` in place of the article (the caller applies ``--on-error``)."""
    from neardup.batch.io import check_object, parse_json_line

    for line_no, raw in input_lines(path):
        obj = parse_json_line(raw)
        if obj is None:
            continue
        try:
            yield line_no, check_object(obj, fields)
        except InputError as exc:
            yield line_no, exc


class BadLines:
    """The ``--on-error`` convention for malformed input lines.

    :meth:`report` with ``stop`` raises the line's ``InputError`` (``FILE:LINE: reason``);
    with ``skip`` it counts the line and shows the first :data:`SHOWN` on stderr."""

    def __init__(self, mode: str, path: str) -> None:
        if mode not in ("stop", "skip"):
            raise ConfigError(f"--on-error must be stop or skip, got {mode!r}")
        self.mode = mode
        self.path = "stdin" if path == "-" else path
        self.count = 0

    def where(self, line_no: int) -> str:
        return f"{self.path}:{line_no}"

    def report(self, line_no: int, error: BaseException) -> None:
        """Stop (raise) or count and show one bad line."""
        reason = describe(error)
        message = f"{self.where(line_no)}: {reason}"
        if self.mode == "stop":
            raise InputError(message) from error
        self.count += 1
        if self.count <= SHOWN:
            click.echo(f"neardup: skipped {message}", err=True)
        if self.count == SHOWN + 1:
            click.echo("neardup: more malformed lines are skipped and counted, not shown", err=True)

    def summary(self) -> str:
        return f"{self.count} malformed line{'' if self.count == 1 else 's'} skipped"


def describe(error: BaseException) -> str:
    """A bad line's reason in a few words (a neardup error's own message)."""
    if isinstance(error, NearDupError):
        return str(error)
    if isinstance(error, RecursionError):
        return "nested too deeply"
    if isinstance(error, UnicodeError):
        return "text that is not valid Unicode"
    return f"unusable value ({type(error).__name__}: {error})"


# --- Ctrl-C ----------------------------------------------------------------------------------


class Interrupted(KeyboardInterrupt):
    """Raised at a safe point after Ctrl-C (``neardup.cli.main`` exits 130)."""


class Interrupts:
    """Ctrl-C handling for commands whose loop is in this package (``ingest``, ``origin``).

    Python would raise ``KeyboardInterrupt`` wherever the main thread is when the signal
    arrives, including inside a compiled (numba) call, whose dispatcher then fails with a
    ``SystemError`` or worse.  Inside this context Ctrl-C only sets a flag (and says so);
    the command calls :meth:`check` between its steps, where no compiled code runs, and
    :meth:`interruptible` marks the places where stopping at once is safe and needed
    (waiting for input).  A second Ctrl-C while stopping is ignored with a message, so the
    clean-up (committing, saving state) always finishes.
    """

    def __init__(self) -> None:
        self.pending = False
        self.stopping = False
        self._open = 0
        self._previous: Any = None

    def __enter__(self) -> Interrupts:
        # A Ctrl-C that was ignored when the command started (a background job of a script,
        # nohup) stays ignored.
        self._previous = signal.getsignal(signal.SIGINT)
        if self._previous is not signal.SIG_IGN:
            signal.signal(signal.SIGINT, self._handler)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)

    def _handler(self, signum: int, frame: FrameType | None) -> None:
        if self.stopping:
            _say("neardup: already stopping; finishing the current step\n")
            return
        self.stopping = True
        if self._open:
            raise Interrupted
        self.pending = True
        _say("neardup: interrupted; stopping after the current step\n")

    def check(self) -> None:
        """A safe point: raise :class:`Interrupted` if Ctrl-C was pressed."""
        if self.pending:
            self.pending = False
            raise Interrupted

    @contextlib.contextmanager
    def interruptible(self) -> Iterator[None]:
        """A region where Ctrl-C stops at once (no compiled code runs inside)."""
        self.check()
        self._open += 1
        try:
            yield
        finally:
            self._open -= 1

    def iterate(self, items: Iterable[Any]) -> Iterator[Any]:
        """``items``, each fetched in an interruptible region (reading input may block)."""
        it = iter(items)
        while True:
            with self.interruptible():
                try:
                    item = next(it)
                except StopIteration:
                    return
            yield item


def _say(text: str) -> None:
    # os.write, not print: this runs in a signal handler, maybe while stderr is mid-write.
    with contextlib.suppress(OSError):
        os.write(2, text.encode())


_T = TypeVar("_T")


def run_isolated(work: Callable[[], _T], on_interrupt: Callable[[], None] | None = None) -> _T:
    """``work()`` in a child process that ignores Ctrl-C, for commands whose work runs in
    compiled code with no safe point of ours (``dedup``, ``pairs``).

    The child (and any worker process it starts) is in its own process group; on Ctrl-C,
    SIGTERM or SIGHUP this process kills that group at once, calls ``on_interrupt`` (to
    remove partial outputs) and raises :class:`Interrupted`; the OS frees everything the
    child held.  The child's result or exception comes back through a pipe, so errors and
    summaries are printed here as for any command.  Where ``fork`` is missing, ``work``
    runs in this process.
    """
    if not hasattr(os, "fork"):  # pragma: no cover - Windows
        return work()
    stops = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, stops)
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child's lines run in another process
        _child(work, read_end, write_end, stops, blocked)
    os.close(write_end)
    with contextlib.suppress(OSError):
        os.setpgid(pid, pid)  # also done by the child: whichever runs first
    received: list[int] = []

    def stop(signum: int, frame: FrameType | None) -> None:
        if received:  # already stopping: let the clean-up finish
            _say("neardup: already stopping; removing partial outputs\n")
            return
        received.append(signum)
        with contextlib.suppress(OSError):
            os.killpg(pid, signal.SIGKILL)
        raise Interrupted

    # A signal ignored when the command started (Ctrl-C in a background job of a script,
    # SIGHUP under nohup) stays ignored.
    previous = {
        s: signal.signal(s, stop) for s in stops if signal.getsignal(s) is not signal.SIG_IGN
    }
    chunks: list[bytes] = []
    try:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        while chunk := os.read(read_end, 1 << 16):
            chunks.append(chunk)
        _, status = os.waitpid(pid, 0)
    except Interrupted:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
        if on_interrupt is not None:
            on_interrupt()
        if received and received[0] != signal.SIGINT:
            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(Exception):
                    stream.flush()
            _say(f"neardup: stopped by signal {received[0]}\n")
            os._exit(128 + received[0])
        raise
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        os.close(read_end)
    result: _T = _result(b"".join(chunks), status)
    return result


def _child(
    work: Callable[[], Any],
    read_end: int,
    write_end: int,
    stops: tuple[signal.Signals, ...],
    blocked: set[int | signal.Signals],
) -> None:  # pragma: no cover - runs in the child process
    code = 0
    try:
        os.close(read_end)
        with contextlib.suppress(OSError):
            os.setpgid(0, 0)
        for s in stops:
            signal.signal(s, signal.SIG_IGN if s == signal.SIGINT else signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        try:
            outcome: tuple[str, Any] = ("ok", work())
        except BaseException as exc:
            outcome = ("error", exc)
        try:
            payload = pickle.dumps(outcome)
        except Exception:
            error = outcome[1] if outcome[0] == "error" else None
            text = "".join(traceback.format_exception(error)) if error else "unpicklable result"
            payload = pickle.dumps(("crash", text))
        with os.fdopen(write_end, "wb") as out:
            out.write(payload)
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
    except BaseException:
        code = 70
    finally:
        os._exit(code)


def _result(payload: bytes, status: int) -> Any:
    if not payload:
        how = (
            f"signal {os.WTERMSIG(status)}"
            if os.WIFSIGNALED(status)
            else f"exit {os.WEXITSTATUS(status)}"
        )
        raise NearDupError(f"the worker process ended without a result ({how})")
    try:
        kind, value = pickle.loads(payload)
    except Exception as exc:  # an exception type that cannot be rebuilt from its pickle
        raise NearDupError(f"the worker process failed: {exc}") from exc
    if kind == "ok":
        return value
    if kind == "crash":
        raise NearDupError(f"the worker process failed:\n{value}")
    raise value
