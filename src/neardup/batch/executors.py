"""Where batch tasks run: one seam for this process, a local process pool and Dask.

The pipeline (:mod:`neardup.batch.engine`) hands every stage's tasks, pure functions of
plain data, to an :class:`Executor`, which yields their results in submission order, so
the output never depends on timing or on where the tasks ran.  The stages ask the
executor two questions instead of its type:

* ``in_process``: do tasks run in this process?  Then their results need no transfer
  (a signed partition is returned, not written to disk and read back);
* ``shares_work_dir``: can the workers read and write the driver's work directory?  Then
  a task reads its inputs there and writes its arrays there (a pool worker signs its byte
  ranges and saves the keys itself; a shuffle shard or a chunk's profiles are read from
  disk rather than pickled); otherwise (Dask, whose workers may be other machines) the
  driver ships them.

Three executors, after datatrove's ``executor`` package (one class per place to run):
:class:`InProcess`, :class:`LocalPool` (forked processes, no Dask) and
:class:`DaskExecutor` (any ``distributed.Client``); :func:`executor_for` picks the one for
what :func:`neardup.batch.run` was given.

Besides :meth:`Executor.imap` (results in submission order), a stage that decides what to
run next from what has finished (lazy judging, :mod:`neardup.batch.lazy`) starts tasks one
by one (:meth:`Executor.start`) and takes whichever finishes first
(:meth:`Executor.first_done`); work of the driver's own that needs no task's result runs
on a thread while the workers run theirs (:meth:`Executor.beside`; at once in process).

Guarantees: ``imap`` yields results in submission order with at most ``max_in_flight``
tasks outstanding (the memory bound of the driver); the same results on every executor
(tested).
"""

from __future__ import annotations

import collections
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from neardup.batch.tasks import SignedPartition
from neardup.batch.verify import ProfileRows
from neardup.config import check_int

if TYPE_CHECKING:  # the pool's modules are imported only when a pool starts
    import concurrent.futures

__all__ = [
    "MAX_LOCAL_WORKERS",
    "DaskExecutor",
    "Executor",
    "InProcess",
    "LocalPool",
    "Task",
    "executor_for",
]

#: Most worker processes a :class:`LocalPool` starts.
MAX_LOCAL_WORKERS = 256

# Argument types shipped to Dask workers by scatter rather than inside the task graph.
_BULKY = (list, np.ndarray, ProfileRows, SignedPartition)


class Executor:
    """Runs pure task functions and yields their results in submission order."""

    #: Worker processes (sizes the shuffle: two shards per worker).
    workers: int = 1
    #: Tasks run in the calling process.
    in_process: bool = False
    #: Workers read and write the driver's work directory.
    shares_work_dir: bool = False

    def imap(self, fn: Callable[..., Any], arg_tuples: Iterable[tuple[Any, ...]]) -> Iterator[Any]:
        """``fn(*args)`` for each args tuple, in order."""
        raise NotImplementedError

    def start(self, fn: Callable[..., Any], *args: Any) -> Task:
        """Start ``fn(*args)``; :meth:`first_done` tells when it has finished."""
        raise NotImplementedError

    def first_done(self, tasks: Sequence[Task]) -> Task:
        """One of ``tasks`` (started here) that has finished, the earliest started of those
        finished; waits until one has."""
        raise NotImplementedError

    def beside(self, fn: Callable[..., Any], *args: Any) -> Task:
        """Run ``fn(*args)`` in this process while it waits for the workers: on a thread
        (started now; its result or exception comes from ``result()``)."""
        return _Thread(fn, args)

    def close(self) -> None:
        """Release what the executor started (idempotent); nothing by default."""


class Task(Protocol):
    """A started task (a future): its result, or its exception raised."""

    def result(self) -> Any: ...


class _Finished:
    """A task run to completion when it was started."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def result(self) -> Any:
        return self.value


class _Thread:
    """``fn(*args)`` on a thread of this process."""

    def __init__(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
        self.value: Any = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, args=(fn, args), daemon=True)
        self.thread.start()

    def _run(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
        try:
            self.value = fn(*args)
        except BaseException as exc:  # raised in the caller by result()
            self.error = exc

    def result(self) -> Any:
        self.thread.join()
        if self.error is not None:
            raise self.error
        return self.value


class InProcess(Executor):
    """Every task in the calling process, one after the other."""

    in_process = True
    shares_work_dir = True

    def imap(self, fn: Callable[..., Any], arg_tuples: Iterable[tuple[Any, ...]]) -> Iterator[Any]:
        """``fn(*args)`` for each args tuple, in order."""
        for args in arg_tuples:
            yield fn(*args)

    def start(self, fn: Callable[..., Any], *args: Any) -> Task:
        """Run ``fn(*args)`` now (its exception is raised here)."""
        return _Finished(fn(*args))

    def first_done(self, tasks: Sequence[Task]) -> Task:
        """The first of ``tasks`` (all finished)."""
        return tasks[0]

    def beside(self, fn: Callable[..., Any], *args: Any) -> Task:
        """Run ``fn(*args)`` now: nothing runs beside it."""
        return self.start(fn, *args)


def _bounded(
    submit: Callable[..., Any],
    fn: Callable[..., Any],
    arg_tuples: Iterable[tuple[Any, ...]],
    most: int,
) -> Iterator[Any]:
    """Submit ``fn(*args)`` for each args tuple with at most ``most`` outstanding; yield the
    results in submission order."""
    pending: collections.deque[Any] = collections.deque()
    for args in arg_tuples:
        pending.append(submit(fn, *args))
        if len(pending) >= most:
            yield pending.popleft().result()
    while pending:
        yield pending.popleft().result()


class LocalPool(Executor):
    """``workers`` processes on this machine, without Dask: what ``--workers N`` starts when
    no scheduler is given.

    A Dask LocalCluster costs seconds of start-up (scheduler, nanny and worker processes,
    each importing neardup and loading the compiled kernels), which on a 2-core machine ate
    the gain of the second core.  Here the driver loads the kernels once (``warm_up``,
    before the fork) and *forks* the workers (on Linux; elsewhere they are spawned), so a
    worker starts with everything loaded and costs milliseconds.  The workers are started
    at once, before the run creates any thread of its own (progress bars).  They share the
    driver's disk: with plain JSON Lines input each worker reads its own byte ranges, writes
    its arrays to the work directory and sends back only ids, dates, lengths and line
    numbers, so the output is byte-identical to one process (tested).
    """

    shares_work_dir = True

    def __init__(
        self,
        workers: int,
        max_in_flight: int | None = None,
        warm_up: Callable[[], Any] | None = None,
    ) -> None:
        check_int("workers", workers, low=1, high=MAX_LOCAL_WORKERS)
        if warm_up is not None:
            warm_up()
        self.workers = workers
        self.max_in_flight = max_in_flight or 2 * workers + 1
        method = "fork" if sys.platform.startswith("linux") else "spawn"
        import concurrent.futures
        import multiprocessing

        self.executor = concurrent.futures.ProcessPoolExecutor(
            max_workers=workers, mp_context=multiprocessing.get_context(method)
        )
        # The first task starts every worker process now (a forking executor starts them
        # all at its first submit), while this process has no other threads.
        self.executor.submit(int).result()

    def submit(self, fn: Callable[..., Any], *args: Any) -> concurrent.futures.Future[Any]:
        """Run ``fn(*args)`` on a worker."""
        return self.executor.submit(fn, *args)

    def imap(self, fn: Callable[..., Any], arg_tuples: Iterable[tuple[Any, ...]]) -> Iterator[Any]:
        """``fn(*args)`` for each args tuple on the workers, results in order."""
        return _bounded(self.submit, fn, arg_tuples, self.max_in_flight)

    def start(self, fn: Callable[..., Any], *args: Any) -> Task:
        """Run ``fn(*args)`` on a worker."""
        return self.submit(fn, *args)

    def first_done(self, tasks: Sequence[Task]) -> Task:
        """The earliest started of ``tasks`` that has finished (waits for one)."""
        import concurrent.futures

        concurrent.futures.wait(tasks, return_when=concurrent.futures.FIRST_COMPLETED)  # type: ignore[arg-type]
        return next(t for t in tasks if t.done())  # type: ignore[attr-defined]

    def close(self) -> None:
        """Stop the workers (idempotent)."""
        self.executor.shutdown(wait=True, cancel_futures=True)


class DaskExecutor(Executor):
    """Tasks on a Dask cluster through ``client`` (a ``distributed.Client``), at most
    ``max_in_flight`` outstanding.  The workers may be other machines: they are not
    assumed to see the work directory.  Bulky arguments (texts, arrays, profiles) go to
    the workers by ``scatter``, not inside the task graph."""

    def __init__(self, client: Any, max_in_flight: int | None = None) -> None:
        self.client = client
        try:
            self.workers = max(1, len(client.scheduler_info().get("workers", {})))
        except Exception:  # a client that cannot report its workers: assume a few
            self.workers = 2
        self.max_in_flight = max_in_flight or 2 * self.workers + 1

    def _submit(self, fn: Callable[..., Any], *args: Any) -> Any:
        shipped = [
            # scatter() of a list scatters its items: wrap it to ship it as one object.
            self.client.scatter([a], hash=False)[0] if isinstance(a, _BULKY) else a
            for a in args
        ]
        return self.client.submit(fn, *shipped, pure=False)

    def imap(self, fn: Callable[..., Any], arg_tuples: Iterable[tuple[Any, ...]]) -> Iterator[Any]:
        """``fn(*args)`` for each args tuple on the cluster, results in order."""
        return _bounded(self._submit, fn, arg_tuples, self.max_in_flight)

    def start(self, fn: Callable[..., Any], *args: Any) -> Task:
        """Run ``fn(*args)`` on the cluster."""
        task: Task = self._submit(fn, *args)
        return task

    def first_done(self, tasks: Sequence[Task]) -> Task:
        """The earliest started of ``tasks`` that has finished (waits for one)."""
        from distributed import wait

        wait(list(tasks), return_when="FIRST_COMPLETED")  # type: ignore[no-untyped-call]
        return next(t for t in tasks if t.done())  # type: ignore[attr-defined]


def executor_for(client: Any = None) -> Executor:
    """The executor of a run's ``client`` argument: :class:`InProcess` for ``None``, an
    :class:`Executor` itself (a :class:`LocalPool`), a :class:`DaskExecutor` for anything
    else (a ``distributed.Client``)."""
    if client is None:
        return InProcess()
    if isinstance(client, Executor):
        return client
    return DaskExecutor(client)


def call(fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)``: the one task function the stages submit (``(fn, *args)`` tuples)."""
    return fn(*args)


class ProgressBar(Protocol):
    """What the stages call on a progress bar."""

    def update(self, n: float | None = 1) -> bool | None: ...

    def close(self) -> None: ...


class _NoBar:
    """The bar when progress is off: tqdm is not even imported."""

    def update(self, n: float | None = 1) -> bool | None:
        return None

    def close(self) -> None:
        return None


def progress_bar(
    progress: bool, desc: str, total: int | None = None, unit: str = "doc"
) -> ProgressBar:
    """A progress bar on stderr (tqdm), shown only when ``progress``."""
    if not progress:
        return _NoBar()
    from tqdm import tqdm

    bar: ProgressBar = tqdm(
        total=total,
        desc=desc,
        unit=unit,
        file=sys.stderr,
        leave=False,
        dynamic_ncols=True,
        unit_scale=True,
    )
    return bar
