"""The backend's worker thread: every backend call runs there, in arrival order."""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["LIGHT_BODY_BYTES", "BackendRunner"]

_R = TypeVar("_R")


class BackendRunner:
    """Runs backend calls on one worker thread, in arrival order, off the event loop.

    One thread at a time uses the backend: the store connection is never shared, and
    requests are answered as if they came one after another (the backend's state is never
    seen half-updated).  The event loop only waits on the result, so it keeps reading
    requests, answering ``/healthz`` and the dedup fast path while a heavy request is
    computed.  A *light* call (a store read, one small article) made while nothing is
    pending runs at once on the loop's own thread instead: no other call can be running,
    so the rule holds, and it saves the two thread switches of a hop (their cost is in
    docs/service.md).
    """

    def __init__(self) -> None:
        self._pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="neardup")
        # Each counter is written by one thread only (submitted: the loop's; finished: the
        # worker's), so no update is lost.
        self._submitted = 0
        self._finished_count = 0

    @property
    def pending(self) -> int:
        """Calls submitted to the worker and not finished."""
        return self._submitted - self._finished_count

    async def __call__(self, fn: Callable[..., _R], *args: Any, light: bool = False) -> _R:
        if light and self.pending == 0:
            return fn(*args)
        loop = asyncio.get_running_loop()
        return await asyncio.wrap_future(self.submit(fn, *args), loop=loop)

    def submit(self, fn: Callable[..., _R], *args: Any) -> concurrent.futures.Future[_R]:
        """Queue a call on the worker thread (its result is the future's)."""
        self._submitted += 1
        future = self._pool.submit(fn, *args)
        future.add_done_callback(self._finished)
        return future

    def _finished(self, future: concurrent.futures.Future[Any]) -> None:
        self._finished_count += 1

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


#: Bodies up to this size are light (:class:`BackendRunner`): one article, a short
#: result set, whose signing is bounded by their size.
LIGHT_BODY_BYTES = 16 * 1024
