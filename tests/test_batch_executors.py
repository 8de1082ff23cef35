"""The executor seam: every executor yields results in submission order with at most
``max_in_flight`` outstanding, says what it can (in-process, shared work directory), and
executor_for picks the one for a run's client."""

from __future__ import annotations

import time

import pytest

from neardup.batch.executors import DaskExecutor, Executor, InProcess, LocalPool, executor_for


def _slow_square(x: int) -> int:
    time.sleep(0.01 * (x % 3))  # finish out of order on a pool
    return x * x


def test_in_process_runs_in_order() -> None:
    ex = executor_for(None)
    assert isinstance(ex, InProcess)
    assert ex.in_process and ex.shares_work_dir and ex.workers == 1
    assert list(ex.imap(_slow_square, [(i,) for i in range(7)])) == [i * i for i in range(7)]


def test_local_pool_yields_in_submission_order() -> None:
    warmed: list[bool] = []
    pool = LocalPool(2, max_in_flight=2, warm_up=lambda: warmed.append(True))
    try:
        assert warmed == [True]
        assert executor_for(pool) is pool
        assert pool.shares_work_dir and not pool.in_process and pool.workers == 2
        got = list(pool.imap(_slow_square, [(i,) for i in range(9)]))
        assert got == [i * i for i in range(9)]
    finally:
        pool.close()
        pool.close()


class _FakeFuture:
    def __init__(self, value: int) -> None:
        self.value = value

    def result(self) -> int:
        return self.value


class _FakeClient:
    """What DaskExecutor uses of a distributed.Client, in-process."""

    def __init__(self) -> None:
        self.scattered = 0

    def scheduler_info(self) -> dict[str, dict[str, int]]:
        return {"workers": {"a": 1, "b": 2, "c": 3}}

    def scatter(self, items: list[object], hash: bool) -> list[object]:
        self.scattered += 1
        return items

    def submit(self, fn, *args, pure: bool) -> _FakeFuture:  # type: ignore[no-untyped-def]
        assert pure is False
        return _FakeFuture(fn(*args))


def test_dask_executor_scatters_bulky_arguments_and_keeps_order() -> None:
    client = _FakeClient()
    ex = executor_for(client)
    assert isinstance(ex, DaskExecutor)
    assert ex.workers == 3 and ex.max_in_flight == 7
    assert not ex.in_process and not ex.shares_work_dir
    got = list(ex.imap(lambda xs, k: sum(xs) * k, [([1, 2], 2), ([3], 3)]))
    assert got == [6, 9]
    assert client.scattered == 2  # the lists, not the integers


def test_the_base_executor_runs_nothing() -> None:
    with pytest.raises(NotImplementedError):
        Executor().imap(_slow_square, [(1,)])
    Executor().close()


def _fail(message: str) -> None:
    raise ValueError(message)


@pytest.mark.parametrize("pooled", [False, True])
def test_started_tasks_finish_in_any_order_and_raise_their_errors(pooled: bool) -> None:
    """``start`` / ``first_done``: the earliest started of the finished tasks comes first;
    a task's exception is raised by its ``result()``."""
    ex: Executor = LocalPool(2) if pooled else InProcess()
    try:
        tasks = [ex.start(_slow_square, x) for x in (2, 0, 4)]  # sleeps 20, 0, 10 ms
        results = []
        while tasks:
            done = ex.first_done(tasks)
            assert done in tasks
            tasks.remove(done)
            results.append(done.result())
        assert sorted(results) == [0, 4, 16]
        if pooled:
            assert results[0] == 0  # the one that did not sleep
        else:
            assert results == [4, 0, 16]  # run when started, taken in order
        failing = ex.start(_fail, "bad") if pooled else None
        if failing is not None:
            with pytest.raises(ValueError, match="bad"):
                ex.first_done([failing]).result()
        else:
            with pytest.raises(ValueError, match="bad"):
                ex.start(_fail, "bad")
    finally:
        ex.close()


@pytest.mark.parametrize("pooled", [False, True])
def test_work_beside_the_workers(pooled: bool) -> None:
    """``beside`` runs in this process (a thread beside a pool's workers, at once in
    process): its result, or its exception, comes from ``result()``."""
    import threading

    ex: Executor = LocalPool(2) if pooled else InProcess()
    try:
        task = ex.beside(threading.get_ident)
        assert (task.result() == threading.get_ident()) is not pooled
        with pytest.raises(ValueError, match="beside"):
            ex.beside(_fail, "beside").result()
    finally:
        ex.close()


def test_the_pool_warm_up_loads_the_signing_kernels() -> None:
    """Before a pool forks, the driver loads numba and the signing kernels (forced: the
    warm-up's short text would otherwise run the kernels' Python), so the workers inherit
    them instead of each loading them."""
    import subprocess
    import sys

    code = (
        "from neardup._jit import numba_loaded\n"
        "from neardup.batch.engine import _warm_up\n"
        "from neardup.batch.tasks import DedupConfig\n"
        "assert not numba_loaded()\n"
        "_warm_up(DedupConfig())\n"
        "print(numba_loaded())\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True"
