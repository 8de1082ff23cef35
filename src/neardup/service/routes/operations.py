"""``/healthz`` and ``/metrics``: liveness that never waits on heavy work, and Prometheus."""

from __future__ import annotations

import asyncio
import concurrent.futures
from typing import Any

from fastapi import FastAPI
from fastapi.responses import PlainTextResponse, Response

from neardup import __version__
from neardup.service.context import ServiceContext
from neardup.service.metrics import resident_memory_bytes

__all__ = ["HEALTH_WAIT_SECONDS", "register"]

#: How long ``/healthz`` waits for a fresh store figure before answering the last one.
HEALTH_WAIT_SECONDS = 0.02


def register(app: FastAPI, ctx: ServiceContext) -> None:
    """Add the operations routes."""
    health = ctx.health
    metrics = ctx.metrics

    @app.get("/healthz", tags=["operations"], summary="Liveness and store reachability")
    async def healthz() -> Any:
        """Answered on the event loop however busy the backend is: with fresh store figures
        when the backend is idle (waiting at most 20 ms for them), else at once with the
        last ones (``"busy": true``) while a refresh is queued behind the work."""
        runner = ctx.runner
        busy = runner.pending > 0
        pending = ctx.health_refresh
        if pending is None or pending.done():
            # One store read queued at a time, however often /healthz is called.
            pending = ctx.health_refresh = runner.submit(ctx.backend.health)
            pending.add_done_callback(_remember_health)
        if busy:
            return {"status": "ok", "version": __version__, **health, "busy": True}
        try:
            fresh = await asyncio.wait_for(
                asyncio.shield(asyncio.wrap_future(pending)), HEALTH_WAIT_SECONDS
            )
        except TimeoutError:
            return {"status": "ok", "version": __version__, **health, "busy": True}
        return {"status": "ok", "version": __version__, **fresh, "busy": False}

    def _remember_health(done: concurrent.futures.Future[dict[str, Any]]) -> None:
        if not done.cancelled() and done.exception() is None:
            health.update(done.result())

    @app.get("/metrics", tags=["operations"], response_class=PlainTextResponse)
    async def prometheus() -> Response:
        """Prometheus text format: request counts and latency by route, index sizes, memory."""
        gauges = {
            f"neardup_{name}": (help_text, value)
            for name, (help_text, value) in (await ctx.run(ctx.backend.sizes)).items()
        }
        gauges["neardup_process_resident_memory_bytes"] = (
            "Resident memory of this worker process.",
            resident_memory_bytes(),
        )
        gauges["neardup_backend_queue"] = (
            "Backend calls waiting or running on the worker thread.",
            ctx.runner.pending,
        )
        return PlainTextResponse(
            metrics.render(gauges), media_type="text/plain; version=0.0.4; charset=utf-8"
        )
