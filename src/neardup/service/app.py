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
    GET  /healthz, GET /metrics        liveness and Prometheus text
    GET  /                             the web page

Guarantees: every error is a JSON body ``{"error": {"status", "type", "message", ...}}``
with a 4xx status for anything the caller did wrong (malformed JSON 400, validation 422,
oversized body or set 413, unknown id 404, missing token 401, conflicting re-ingest 409) —
an unexpected failure is a JSON 500 and is logged, never an HTML traceback.  Backend calls run
on the event-loop thread, one at a time per process: the store connection is never shared
between threads, and a request's answer is computed as if requests came one after another.
"""

from __future__ import annotations

import contextlib
import hmac
import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from importlib import resources
from typing import Annotated, Any, TypeVar

from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi_offline import FastAPIOffline
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictInt,
    StrictStr,
    ValidationError,
    model_validator,
)
from starlette.exceptions import HTTPException as StarletteHTTPException

from neardup import __version__
from neardup.errors import AuthError, InputError, InputTooLargeError, NearDupError
from neardup.records import Article, parse_date
from neardup.service.backend import Backend, open_backend
from neardup.service.metrics import Metrics, resident_memory_bytes
from neardup.service.settings import ServiceSettings
from neardup.service.warmup import warm_up

__all__ = ["create_app", "create_app_from_env"]

log = logging.getLogger("neardup.service")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


# ---------------------------------------------------------------------------------------------
# Error bodies


def error_body(status: int, kind: str, message: str, **extra: Any) -> dict[str, Any]:
    """The one JSON shape of every error answer."""
    return {"error": {"status": status, "type": kind, "message": message, **extra}}


def _json_error(status: int, kind: str, message: str, **extra: Any) -> JSONResponse:
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    return JSONResponse(error_body(status, kind, message, **extra), status, headers=headers)


_UNION_TAGS = {"str", "int", "float", "bool", "dict", "list", "none", "DedupItem", "ArticleIn"}


def _loc(loc: Any) -> str:
    # pydantic names union members in the location ("items.0.str"); keep only the path.
    parts = [str(p) for p in loc if p != "body" and str(p) not in _UNION_TAGS and "[" not in str(p)]
    return ".".join(parts) or "body"


async def _on_validation_error(request: Request, exc: Exception) -> JSONResponse:
    errors = list(exc.errors()) if isinstance(exc, RequestValidationError | ValidationError) else []
    if any(err.get("type") == "json_invalid" for err in errors):
        first = next(e for e in errors if e.get("type") == "json_invalid")
        return _json_error(
            400, "malformed_json", f"the request body is not valid JSON: {first.get('msg')}"
        )
    problems = [
        {"field": _loc(err.get("loc", ())), "problem": str(err.get("msg", "invalid"))}
        for err in errors
    ]
    first = problems[0] if problems else {"field": "body", "problem": "invalid"}
    message = f"{first['field']}: {first['problem']}"
    if len(problems) > 1:
        message += f" (and {len(problems) - 1} more problem(s))"
    return _json_error(422, "validation_error", message, problems=problems)


class MalformedJSON(Exception):
    """A request body that does not parse as JSON (answered 400, not 422: it is not a
    document with a bad field but no document at all)."""


async def _on_malformed(request: Request, exc: Exception) -> JSONResponse:
    return _json_error(400, "malformed_json", str(exc))


async def _on_neardup_error(request: Request, exc: Exception) -> JSONResponse:
    status = exc.http_status if isinstance(exc, NearDupError) else 500
    if status >= 500:
        log.error("request %s %s failed: %s", request.method, request.url.path, exc)
    return _json_error(status, type(exc).__name__, str(exc))


async def _on_http_error(request: Request, exc: Exception) -> JSONResponse:
    status = exc.status_code if isinstance(exc, StarletteHTTPException) else 500
    detail = exc.detail if isinstance(exc, StarletteHTTPException) else "error"
    kinds = {404: "not_found", 405: "method_not_allowed", 413: "too_large"}
    if status == 404 and detail == "Not Found":
        detail = f"no such endpoint: {request.method} {request.url.path}"
    return _json_error(status, kinds.get(status, "http_error"), str(detail))


async def _on_unexpected(request: Request, exc: Exception) -> JSONResponse:
    log.exception("unexpected error in %s %s", request.method, request.url.path)
    return _json_error(500, "internal_error", f"unexpected {type(exc).__name__}; see the log")


# ---------------------------------------------------------------------------------------------
# ASGI middleware: body-size limit and metrics (pure ASGI: no per-request task overhead)


class BodyLimit:
    """Reject request bodies over ``max_bytes`` with a JSON 413, before any parsing.

    A declared ``Content-Length`` over the limit is refused at once; a chunked body is read
    up to the limit and refused as soon as it passes it, so memory per request is bounded.
    """

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD", "OPTIONS"):
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", ()):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    await self._refuse(send, 400, "bad_request", "Content-Length is not a number")
                    return
                if declared > self.max_bytes:
                    await self._too_large(send, declared)
                    return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                await self._too_large(send, size)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        sent = False

        async def replay() -> Message:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _too_large(self, send: Send, size: int) -> None:
        await self._refuse(
            send,
            413,
            "too_large",
            f"request body is at least {size} bytes; the limit is {self.max_bytes} bytes",
        )

    @staticmethod
    async def _refuse(send: Send, status: int, kind: str, message: str) -> None:
        payload = json.dumps(error_body(status, kind, message)).encode()
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(payload)).encode()),
                    (b"connection", b"close"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": payload})


class RequestMetrics:
    """Count requests and time them by method, route template and status."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = 500

        async def record_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, record_status)
        finally:
            route = scope.get("route")
            template = getattr(route, "path", None) or "<unmatched>"
            self.metrics.observe(scope["method"], template, status, time.perf_counter() - start)


class DedupFastPath:
    """Answer ``POST /v1/dedup`` in its common shape without the framework's routing.

    The endpoint's answer is a few microseconds of work on cached signatures, so on the
    benchmark the framework around it (routing, request object, dependency solving,
    exception middleware) was a large share of the server's CPU.  ``answer(body)`` returns
    the response bytes for the common shape (stored ids only, every id known) and ``None``
    for anything else, which then goes through the normal route: the same code computes the
    same answer, and every error is worded there.  Sits inside :class:`BodyLimit` (sizes
    still enforced) and :class:`RequestMetrics` (still counted, under the route's template).
    """

    def __init__(self, app: ASGIApp, answer: Callable[[bytes], bytes | None], route: Any) -> None:
        self.app = app
        self.answer = answer
        self.route = route

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != "/v1/dedup" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        payload = self.answer(body)
        if payload is None:
            sent = False

            async def replay() -> Message:
                nonlocal sent
                if not sent:
                    sent = True
                    return {"type": "http.request", "body": body, "more_body": False}
                return await receive()

            await self.app(scope, replay, send)
            return
        scope["route"] = self.route
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(payload)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": payload})


# ---------------------------------------------------------------------------------------------
# Request models (they also document the API in /docs)


class ArticleIn(BaseModel):
    """An article to ingest; fields other than these are kept as the article's ``extra``."""

    model_config = ConfigDict(
        extra="allow",
        json_schema_extra={
            "examples": [
                {
                    "id": "wire-1",
                    "text": "Shares rose sharply on Monday. Analysts expect more gains.",
                    "title": "Shares rise",
                    "date": "1987-02-26T15:01:01Z",
                    "source": "reuters",
                }
            ]
        },
    )

    id: StrictStr | StrictInt
    text: StrictStr
    title: StrictStr | None = None
    date: StrictStr | None = None
    source: StrictStr | None = None


class BatchIn(BaseModel):
    """A batch of articles, ingested in order."""

    articles: list[ArticleIn]


class DedupItem(BaseModel):
    """A result-set item: a stored ``id``, or a ``text`` (with an optional ``id`` as its label)."""

    model_config = ConfigDict(extra="forbid")

    id: StrictStr | None = None
    text: StrictStr | None = None

    @model_validator(mode="after")
    def _one_of(self) -> DedupItem:
        if self.id is None and self.text is None:
            raise ValueError("an item needs an id (stored article) or a text")
        return self


def _bare_id(value: Any) -> Any:
    # A bare string in a result set is a stored id: the common case, kept short on the wire.
    return {"id": value} if isinstance(value, str) else value


class DedupIn(BaseModel):
    """A ranked result set to deduplicate; bare strings are stored ids."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {"items": ["wire-1", "wire-7", {"id": "fresh", "text": "..."}], "threshold": 0.5}
            ]
        },
    )

    items: list[Annotated[DedupItem, BeforeValidator(_bare_id)]] = Field(
        description="Ranked items: a stored id as a bare string or {id}, or {text} (+ optional id)."
    )
    threshold: float | None = Field(default=None, gt=0.0, le=1.0)


class OriginIn(BaseModel):
    """A stored article's ``id`` or a new ``text`` to trace to its origins."""

    model_config = ConfigDict(extra="forbid")

    id: StrictStr | None = None
    text: StrictStr | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> OriginIn:
        if (self.id is None) == (self.text is None):
            raise ValueError("give exactly one of id (a stored article) or text")
        return self


def _token_header(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "in": "header",
        "required": False,
        "schema": {"type": "string"},
        "description": "the API token, when the service has one (Bearer <token> for Authorization)",
    }


_DOCUMENTS_BODY_SCHEMA: dict[str, Any] = {
    "parameters": [_token_header("authorization"), _token_header("x-api-token")],
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {
                "schema": {
                    "oneOf": [
                        {"$ref": "#/components/schemas/ArticleIn"},
                        {"type": "array", "items": {"$ref": "#/components/schemas/ArticleIn"}},
                        {"$ref": "#/components/schemas/BatchIn"},
                    ]
                }
            }
        },
    },
}


def _body_schema(name: str) -> dict[str, Any]:
    return {
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{name}"}}},
        }
    }


_M = TypeVar("_M", bound=BaseModel)


# ---------------------------------------------------------------------------------------------
# The app


def _check_text(text: str, where: str, settings: ServiceSettings) -> None:
    if len(text) > settings.max_text_chars:
        raise InputTooLargeError(
            f"{where}: text has {len(text)} characters; the limit is {settings.max_text_chars}"
        )
    if not text.strip():
        raise InputError(f"{where}: text is empty")


def _parse_articles(raw: Any, settings: ServiceSettings) -> tuple[list[Article], bool]:
    """Body of POST /v1/documents -> (articles, is_batch); errors name the article."""
    if isinstance(raw, list):
        items, batch = raw, True
    elif isinstance(raw, dict) and "articles" in raw and "text" not in raw:
        items, batch = raw["articles"], True
        if not isinstance(items, list):
            raise InputError("articles must be a list of article objects")
    elif isinstance(raw, dict):
        items, batch = [raw], False
    else:
        raise InputError("the body must be an article object, a list of them, or {articles: [...]}")
    if not items:
        raise InputError("the batch is empty")
    if len(items) > settings.max_batch:
        raise InputTooLargeError(
            f"the batch has {len(items)} articles; the limit is {settings.max_batch}"
        )
    articles = []
    seen: set[str] = set()
    for n, item in enumerate(items):
        where = f"articles[{n}]" if batch else "article"
        try:
            article = Article.from_mapping(item)
        except InputError as exc:
            raise type(exc)(f"{where}: {exc}" if batch else str(exc)) from exc
        _check_text(article.text, f"{where} {article.id!r}", settings)
        if article.id in seen:
            raise InputError(f"{where}: id {article.id!r} appears twice in the batch")
        seen.add(article.id)
        articles.append(article)
    return articles, batch


def _dedup_keys(items: list[DedupItem], settings: ServiceSettings) -> list[str]:
    keys = []
    for n, item in enumerate(items):
        if item.text is not None:
            _check_text(item.text, f"items[{n}]", settings)
        keys.append(item.id if item.id is not None else f"#{n}")
    if len(set(keys)) != len(keys):
        dup = next(k for k in keys if keys.count(k) > 1)
        raise InputError(f"item key {dup!r} appears twice; give each text item a distinct id")
    return keys


def _fast_dedup_body(
    raw: bytes,
) -> tuple[list[tuple[str | None, str | None]] | None, list[str], float | None]:
    """The hot path of POST /v1/dedup: ``{"items": [ids...], "threshold"?: x}`` parsed with
    the C JSON parser.  Returns ``(None, [], None)`` for anything else, which the model then
    validates (with its error messages); the answers are the same either way."""
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return None, [], None
    if not isinstance(data, dict) or not set(data) <= {"items", "threshold"}:
        return None, [], None
    items = data.get("items")
    threshold = data.get("threshold")
    if not isinstance(items, list) or not all(type(i) is str for i in items):
        return None, [], None
    if threshold is not None and (
        type(threshold) not in (int, float) or not 0.0 < threshold <= 1.0
    ):
        return None, [], None
    if len(set(items)) != len(items):
        return None, [], None
    return [(i, None) for i in items], items, None if threshold is None else float(threshold)


def _kept_of(positions: list[int]) -> list[int]:
    """Follow each item's pointer to the kept item its chain ends at (ranking order kept)."""
    kept = []
    for i, j in enumerate(positions):
        while positions[j] != j and positions[j] < j:
            j = positions[j]
        kept.append(j if j != i else i)
    return kept


def _json_response(content: Any) -> Response:
    """``content`` (plain JSON values already, see ``backend.plain``) rendered as FastAPI's
    JSONResponse renders it, without the ``jsonable_encoder`` pass over every value."""
    body = json.dumps(content, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return Response(body.encode("utf-8"), media_type="application/json")


def _dedup_answer(keys: list[str], positions: list[int], threshold: float) -> bytes:
    """The JSON answer of ``POST /v1/dedup`` (shared by the route and its fast path)."""
    kept = _kept_of(positions)
    answer = {
        "keep": [keys[i] for i, k in enumerate(kept) if k == i],
        "duplicate_of": {keys[i]: keys[k] for i, k in enumerate(kept) if k != i},
        "positions": positions,
        "threshold": threshold,
    }
    # Rendered directly: the answer is plain JSON already (no encoder pass needed).
    return json.dumps(answer, separators=(",", ":")).encode()


def create_app(settings: ServiceSettings | None = None, backend: Backend | None = None) -> FastAPI:
    """The FastAPI app.  ``backend`` (tests) replaces the one opened from ``settings.store``."""
    cfg = settings or ServiceSettings()
    metrics = Metrics()
    state: dict[str, Backend] = {}

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        # Opened here, on the event-loop thread that serves every request (see module doc).
        state["backend"] = backend if backend is not None else open_backend(cfg)
        try:
            # JIT compilation and lazy imports now, not on the first requests (warmup.py).
            warm_up()
            if cfg.preload:
                from neardup.service.load import preload

                preload(state["backend"], cfg.preload, cfg.preload_path)
            yield
        finally:
            if backend is None:
                state["backend"].close()

    # FastAPIOffline: /docs and /redoc with their scripts served from the fastapi-offline
    # package, not a CDN, so the API documentation works without internet access.
    app = FastAPIOffline(
        title="neardup",
        version=__version__,
        description=(
            "Near-duplicate and copied-text detection for news: ingest-time dedup, similar "
            "stories, breaking events, realtime result-set dedup and origin detection."
        ),
        lifespan=lifespan,
    )
    app.add_exception_handler(RequestValidationError, _on_validation_error)
    app.add_exception_handler(ValidationError, _on_validation_error)
    app.add_exception_handler(NearDupError, _on_neardup_error)
    app.add_exception_handler(MalformedJSON, _on_malformed)
    app.add_exception_handler(StarletteHTTPException, _on_http_error)
    app.add_exception_handler(Exception, _on_unexpected)

    def be() -> Backend:
        return state["backend"]

    def require_token(authorization: str | None, x_api_token: str | None) -> None:
        if cfg.token is None:
            return
        given = x_api_token
        if authorization is not None:
            scheme, _, value = authorization.partition(" ")
            if scheme.lower() == "bearer":
                given = value.strip()
        if given is None:
            raise AuthError("this write needs the API token: Authorization: Bearer <token>")
        if not hmac.compare_digest(given.encode(), cfg.token.encode()):
            raise AuthError("the API token is wrong")

    async def model_body(request: Request, model: type[_M]) -> _M:
        # Parsed here rather than by FastAPI so that a malformed body is a 400 whatever its
        # Content-Type, and pydantic-core parses and validates in one pass.
        raw = await request.body()
        if not raw.strip():
            raise InputError("the request body is empty; send a JSON document")
        return model.model_validate_json(raw)

    async def json_body(request: Request) -> Any:
        raw = await request.body()
        if not raw.strip():
            raise InputError("the request body is empty; send a JSON document")
        try:
            return json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise MalformedJSON(f"the request body is not valid JSON: {exc}") from exc

    @app.post(
        "/v1/documents",
        tags=["documents"],
        summary="Ingest one article or a batch",
        openapi_extra=_DOCUMENTS_BODY_SCHEMA,
        responses={401: {"description": "token missing or wrong"}},
    )
    async def ingest(request: Request) -> Response:
        """A decision per article, as ``neardup ingest`` prints: ``{"id", "status": "new" |
        "duplicate" | "similar", "duplicate_of", "similar": [{"id", "score"}], "event"}``.
        A single article gets its decision; a batch (a list, or ``{"articles": [...]}``) gets
        ``{"decisions": [...]}`` in order.  Re-ingesting an id with the same text returns the
        same decision; with a different text, 409.  The answer is sent only after the store
        committed, so an acknowledged article survives a crash."""
        # Headers read here rather than declared as parameters: FastAPI's dependency solving
        # was a measurable share of a one-article request (docs/service.md, Performance).
        headers = request.headers
        require_token(headers.get("authorization"), headers.get("x-api-token"))
        articles, batch = _parse_articles(await json_body(request), cfg)
        decisions = be().ingest(articles)
        return _json_response({"decisions": decisions} if batch else decisions[0])

    @app.get("/v1/documents", tags=["documents"], summary="Recently ingested articles")
    async def recent(limit: Annotated[int, Query(ge=1, le=1000)] = 50) -> Any:
        """The last ``limit`` ingested articles, newest first (id, title, date, status)."""
        return {"documents": be().recent(limit)}

    @app.get("/v1/documents/{doc_id}", tags=["documents"], summary="One stored article")
    async def document(doc_id: str) -> Any:
        """The stored article (text, title, date, source) and the decision made at ingest."""
        return be().document(doc_id)

    @app.get("/v1/documents/{doc_id}/similar", tags=["documents"], summary="Similar stories")
    async def similar(doc_id: str, limit: Annotated[int, Query(ge=1)] = 10) -> Any:
        """Other coverage of the article's story, most similar first: each item has the
        rule's ``verdict`` (``partial`` or ``duplicate``: a copy; ``similar``: written
        independently), its scores, title, date and source.  ``duplicates`` lists the
        article's own duplicate group (its original and copies), which ``similar`` leaves
        out."""
        if limit > cfg.max_similar:
            raise InputTooLargeError(f"limit {limit} is over the maximum {cfg.max_similar}")
        return {"id": doc_id, **be().similar(doc_id, limit)}

    @app.post(
        "/v1/dedup",
        tags=["result sets"],
        summary="Deduplicate a ranked result set",
        openapi_extra=_body_schema("DedupIn"),
    )
    async def dedup(request: Request) -> Any:
        """Seed 000's realtime dedup.  ``items`` in ranking order: a bare string or ``{"id"}``
        is a stored article (its stored signature is used), ``{"text"}`` is signed now (its
        key is its ``id`` if given, else ``"#<position>"``).  Answer: ``keep`` (keys kept, in
        ranking order), ``duplicate_of`` (each dropped key -> the kept key it duplicates,
        following chains to the kept item), ``positions`` (the library's raw answer: for each
        position, the earliest position it near-duplicates, or itself)."""
        raw = await request.body()
        refs, keys, threshold = _fast_dedup_body(raw)
        if refs is None:
            # Anything but the common shape (ids only) goes through the model, which also
            # words every error.
            body = await model_body(request, DedupIn)
            keys = _dedup_keys(body.items, cfg)
            refs = [(item.id if item.text is None else None, item.text) for item in body.items]
            threshold = body.threshold
        if len(refs) > cfg.max_result_set:
            raise InputTooLargeError(
                f"the result set has {len(refs)} items; the limit is {cfg.max_result_set}"
            )
        if threshold is None:
            threshold = cfg.dedup_threshold
        positions = be().dedup(refs, threshold) if refs else []
        return Response(_dedup_answer(keys, positions, threshold), media_type="application/json")

    def fast_dedup(raw: bytes) -> bytes | None:
        # The route's common case (see DedupFastPath); None sends the request to the route.
        refs, keys, threshold = _fast_dedup_body(raw)
        if not refs or len(refs) > cfg.max_result_set:
            return None
        if threshold is None:
            threshold = cfg.dedup_threshold
        try:
            positions = be().dedup(refs, threshold)
        except NearDupError:
            return None  # the route raises it again and words the error
        return _dedup_answer(keys, positions, threshold)

    @app.get("/v1/events", tags=["events"], summary="Breaking events")
    async def events(since: str | None = None, until: str | None = None) -> Any:
        """Events opened between ``since`` and ``until`` (ISO-8601; article dates, not the
        wall clock), oldest first, each with its readable ``title``, its number of
        ``articles`` and of ``sources``."""
        start, end = parse_date(since), parse_date(until)
        if start is not None and end is not None and start > end:
            raise InputError("since is after until")
        return {"events": be().events(start, end)}

    @app.get("/v1/events/{event_id}", tags=["events"], summary="One event's report")
    async def event(event_id: str) -> Any:
        """The event's report: title, articles in time order (each the first report, an
        independent report or a copy of an earlier one), first publisher, sources, growth,
        and how many are copies and independent reports.  A merged event's id gives the
        report of the event it merged into."""
        return be().event(event_id)

    @app.post(
        "/v1/origin",
        tags=["origin"],
        summary="Copied and novel segments",
        openapi_extra=_body_schema("OriginIn"),
    )
    async def origin(request: Request) -> Any:
        """Seed 004: for a stored ``id`` (as of its ingest) or a new ``text`` (against all
        stored articles; nothing is stored), the copied segments with the earlier article each
        came from, the novel segments, the copied fraction and the dominant origin."""
        body = await model_body(request, OriginIn)
        if body.text is not None:
            _check_text(body.text, "text", cfg)
        return be().origin(body.id, body.text)

    @app.get("/healthz", tags=["operations"], summary="Liveness and store reachability")
    async def healthz() -> Any:
        return {"status": "ok", "version": __version__, **be().health()}

    @app.get("/metrics", tags=["operations"], response_class=PlainTextResponse)
    async def prometheus() -> Response:
        """Prometheus text format: request counts and latency by route, index sizes, memory."""
        gauges = {
            f"neardup_{name}": (help_text, value)
            for name, (help_text, value) in be().sizes().items()
        }
        gauges["neardup_process_resident_memory_bytes"] = (
            "Resident memory of this worker process.",
            resident_memory_bytes(),
        )
        return PlainTextResponse(
            metrics.render(gauges), media_type="text/plain; version=0.0.4; charset=utf-8"
        )

    def openapi() -> dict[str, Any]:
        # Bodies are parsed by hand (see model_body), so their models are added here.
        if app.openapi_schema is None:
            schema = get_openapi(
                title=app.title, version=app.version, description=app.description, routes=app.routes
            )
            components = schema.setdefault("components", {}).setdefault("schemas", {})
            for model in (ArticleIn, BatchIn, DedupItem, DedupIn, OriginIn):
                body = model.model_json_schema(ref_template="#/components/schemas/{model}")
                components.update(body.pop("$defs", {}))
                components[model.__name__] = body
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]

    static_dir = resources.files("neardup.service") / "static"

    @app.get("/", include_in_schema=False)
    async def page() -> HTMLResponse:
        return HTMLResponse(static_dir.joinpath("index.html").read_text(encoding="utf-8"))

    app.mount("/static", StaticFiles(directory=str(static_dir)), name="static")
    dedup_route = next(r for r in app.routes if getattr(r, "path", None) == "/v1/dedup")
    app.add_middleware(DedupFastPath, answer=fast_dedup, route=dedup_route)
    app.add_middleware(BodyLimit, max_bytes=cfg.max_body_bytes)
    app.add_middleware(RequestMetrics, metrics=metrics)
    return app


def create_app_from_env() -> FastAPI:
    """Factory for ``uvicorn --factory``: settings from ``NEARDUP_SERVICE_SETTINGS``."""
    return create_app(ServiceSettings.from_environ())
