"""What the routes of one app share: settings, metrics, the backend and its worker thread."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypeVar

from neardup.service.backend import Backend
from neardup.service.metrics import Metrics
from neardup.service.runner import BackendRunner
from neardup.service.settings import ServiceSettings

__all__ = ["ServiceContext"]

_R = TypeVar("_R")


@dataclasses.dataclass
class ServiceContext:
    """The state of one app.  ``backend`` and ``runner`` are set by the app's lifespan
    (the backend is opened on the runner's thread) before any request is answered;
    ``health`` holds the last store figures ``/healthz`` saw."""

    settings: ServiceSettings
    metrics: Metrics = dataclasses.field(default_factory=Metrics)
    health: dict[str, Any] = dataclasses.field(default_factory=dict)
    backend_or_none: Backend | None = None
    runner_or_none: BackendRunner | None = None
    health_refresh: Any = None  # the queued store read of /healthz (a Future), if any

    @property
    def backend(self) -> Backend:
        assert self.backend_or_none is not None, "the app's lifespan has not started"
        return self.backend_or_none

    @property
    def runner(self) -> BackendRunner:
        assert self.runner_or_none is not None, "the app's lifespan has not started"
        return self.runner_or_none

    async def run(self, fn: Callable[..., _R], *args: Any, light: bool = False) -> _R:
        """``fn(*args)`` on the backend's thread (see :class:`BackendRunner`; ``light``: a
        call bounded to about a millisecond, run at once when nothing is pending)."""
        return await self.runner(fn, *args, light=light)
