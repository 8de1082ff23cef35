"""The HTTP service: JSON API v1, the web page, health and metrics (FastAPI).

:func:`create_app` builds the app from :class:`~neardup.service.settings.ServiceSettings`;
``neardup serve`` runs it on uvicorn.  Endpoints (see docs/service.md and ``/docs``)::

    POST /v1/documents                 ingest one article or a batch -> decisions (token if set)
    GET  /v1/documents                 the most recently ingested articles (for the page)
    GET  /v1/documents/{id}            one stored article with its ingest decision
    GET  /v1/documents/{id}/similar    similar stored stories, best first
    POST /v1/dedup                     dedup a result set (stored ids and/or texts), seed 000
    GET  /v1/events?since=&until=      breaking events (seed 003)
    GET  /v1/events/{id}               one event's report
    POST /v1/origin                    copied / novel segments of a text or stored id (seed 004)
    POST /v1/align                     passages of a stored article taken from one stored source
    GET  /healthz, GET /metrics        liveness and Prometheus text
    GET  /                             the web page
    (HEAD is answered wherever GET is.)

Guarantees: every error is a JSON body ``{"error": {"status", "type", "message", ...}}``
with a 4xx status for anything the caller did wrong (malformed JSON 400, missing token 401,
unknown id 404, slow body 408, conflicting re-ingest 409, oversized body, text or set 413,
validation 422) — an unexpected failure is a JSON 500 and is logged, never an HTML
traceback; 503 means the store is unavailable (or, with ``Retry-After``, that the bodies
being processed already fill ``max_pending_body_bytes``).

Resources: a write's token is checked before its body is read; a body is read up to
``max_body_bytes`` and within ``body_timeout_seconds``; JSON is parsed by orjson (nesting
deeper than :data:`MAX_JSON_DEPTH` refused).  Every backend call (store access, signing,
deciding) runs on **one worker thread** per process
(:class:`~neardup.service.runner.BackendRunner`), in arrival
order, never on the event loop: the store connection is used by one thread, a request's
answer is computed as if requests came one after another, and the loop stays free for
``/healthz`` and for reading other requests while a heavy request is signed.

Where things are: this module assembles the app; ``routes/`` has one module per resource
(documents, dedup, events, origin, operations, page), each translating HTTP to a backend
call; ``backend.py`` maps those calls onto the Python API (:class:`neardup.api.NewsIndex`);
``models.py`` and ``bodies.py`` parse and check request bodies; ``errors.py`` maps every
failure onto the JSON error; ``middleware.py`` holds the ASGI gate, ``HEAD`` and metrics;
``runner.py`` the backend's worker thread.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator, Callable

from fastapi import FastAPI
from fastapi_offline import FastAPIOffline

from neardup import __version__
from neardup.service.backend import Backend, open_backend
from neardup.service.context import ServiceContext
from neardup.service.errors import install_error_handlers
from neardup.service.middleware import HeadAsGet, RequestGate, RequestMetrics
from neardup.service.models import install_openapi
from neardup.service.routes import dedup, documents, events, operations, origin, page
from neardup.service.runner import BackendRunner
from neardup.service.settings import ServiceSettings
from neardup.service.warmup import warm_up

__all__ = ["RequestGate", "create_app", "create_app_from_env"]

#: Python's thread switch interval in the service process (see ``lifespan``).
SWITCH_INTERVAL_SECONDS = 0.001


def _open_and_warm(ctx: ServiceContext, given: Backend | None) -> Backend:
    """The backend (``given`` or opened from the settings), warmed up and preloaded."""
    cfg = ctx.settings
    opened = given if given is not None else open_backend(cfg)
    try:
        # JIT compilation and lazy imports now, not on the first requests (warmup.py).
        warm_up()
        if cfg.preload:
            from neardup.service.load import preload

            preload(opened, cfg.preload, cfg.preload_path)
        ctx.health.update(opened.health())
    except BaseException:
        if given is None:
            opened.close()
        raise
    return opened


def _lifespan(
    ctx: ServiceContext, given: Backend | None
) -> Callable[[FastAPI], contextlib.AbstractAsyncContextManager[None]]:
    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        # Opened on the runner's thread, which makes every later backend call (module doc).
        runner = ctx.runner_or_none = BackendRunner()
        # The loop thread waits for the GIL at most this long while the worker thread signs
        # texts (Python's default is 5 ms): /healthz and reads stay fast under heavy work.
        sys.setswitchinterval(SWITCH_INTERVAL_SECONDS)
        try:
            ctx.backend_or_none = await runner(_open_and_warm, ctx, given)
            try:
                yield
            finally:
                if given is None:
                    await runner(ctx.backend.close)
        finally:
            runner.close()

    return lifespan


def create_app(settings: ServiceSettings | None = None, backend: Backend | None = None) -> FastAPI:
    """The FastAPI app.  ``backend`` (tests) replaces the one opened from ``settings.store``."""
    ctx = ServiceContext(settings or ServiceSettings())
    cfg = ctx.settings
    # FastAPIOffline: /docs and /redoc with their scripts served from the fastapi-offline
    # package, not a CDN, so the API documentation works without internet access.
    app = FastAPIOffline(
        title="neardup",
        version=__version__,
        description=(
            "Near-duplicate and copied-text detection for news: ingest-time dedup, similar "
            "stories, breaking events, realtime result-set dedup and origin detection."
        ),
        lifespan=_lifespan(ctx, backend),
    )
    install_error_handlers(app)
    documents.register(app, ctx)
    dedup.register(app, ctx)  # adds its fast path first: the innermost middleware
    events.register(app, ctx)
    origin.register(app, ctx)
    operations.register(app, ctx)
    install_openapi(app)
    page.register(app)
    app.add_middleware(
        RequestGate,
        max_bytes=cfg.max_body_bytes,
        timeout=cfg.body_timeout_seconds,
        budget=max(cfg.max_pending_body_bytes, cfg.max_body_bytes),  # one body always fits
        token=cfg.token,
    )
    app.add_middleware(HeadAsGet)
    app.add_middleware(RequestMetrics, metrics=ctx.metrics)
    return app


def create_app_from_env() -> FastAPI:
    """Factory for ``uvicorn --factory``: settings from ``NEARDUP_SERVICE_SETTINGS``."""
    return create_app(ServiceSettings.from_environ())
