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
deciding) runs on **one worker thread** per process (:class:`BackendRunner`), in arrival
order, never on the event loop: the store connection is used by one thread, a request's
answer is computed as if requests came one after another, and the loop stays free for
``/healthz`` and for reading other requests while a heavy request is signed.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import hmac
import json
import logging
import re
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, MutableMapping
from importlib import resources
from typing import Annotated, Any, TypeVar

import orjson
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
    StrictFloat,
    StrictInt,
    StrictStr,
    ValidationError,
    model_validator,
)
from starlette.exceptions import HTTPException as StarletteHTTPException

from neardup import __version__
from neardup.detect.resultset import kept_of
from neardup.errors import (
    AuthError,
    InputError,
    InputTooLargeError,
    InputTypeError,
    NearDupError,
)
from neardup.records import Article, check_id, check_text, parse_date, shown
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
# JSON bodies

#: Deepest nesting of arrays and objects accepted in a JSON body (orjson's own limit is
#: 1,024, above Python's recursion limit for the code that walks the result).
MAX_JSON_DEPTH = 32

_NOT_JSON_NUMBERS = re.compile(rb"(?<![\w\"])-?(NaN|Infinity)(?![\w\"])")


def parse_json(raw: bytes) -> Any:
    """A request body -> its JSON value (orjson: strict RFC 8259, UTF-8, no NaN, no lone
    surrogates).  :class:`MalformedJSON` (400) for anything that is not JSON or nests
    deeper than :data:`MAX_JSON_DEPTH`; ``InputError`` for an empty body."""
    if not raw.strip():
        raise InputError("the request body is empty; send a JSON document")
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        hint = ""
        if _NOT_JSON_NUMBERS.search(raw[:65536]):
            hint = " (NaN and Infinity are not JSON numbers)"
        raise MalformedJSON(f"the request body is not valid JSON: {exc}{hint}") from exc
    if isinstance(value, list | dict):
        _check_depth(value)
    return value


def _check_depth(value: Any) -> None:
    # Iterative: a recursive walk would itself hit Python's recursion limit.
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            raise MalformedJSON(
                f"the request body nests arrays/objects deeper than {MAX_JSON_DEPTH} levels"
            )
        children = node.values() if isinstance(node, dict) else node
        stack.extend((c, depth + 1) for c in children if isinstance(c, list | dict))


# ---------------------------------------------------------------------------------------------
# ASGI middleware: request gate (token, size, time, memory), HEAD, metrics (pure ASGI: no
# per-request task overhead)


def token_error(headers: Mapping[str, str], token: str | None) -> AuthError | None:
    """Why a write with these headers is refused (``None``: it may go on).  The token is
    read from ``Authorization: Bearer <token>`` or ``X-API-Token`` and compared in
    constant time."""
    if token is None:
        return None
    given = headers.get("x-api-token")
    authorization = headers.get("authorization")
    if authorization is not None:
        scheme, _, value = authorization.partition(" ")
        if scheme.lower() == "bearer":
            given = value.strip()
    if given is None:
        return AuthError("this write needs the API token: Authorization: Bearer <token>")
    if not hmac.compare_digest(given.encode(), token.encode()):
        return AuthError("the API token is wrong")
    return None


#: Requests whose token is checked before their body is read: (method, path).
WRITES = frozenset({("POST", "/v1/documents")})


class RequestGate:
    """Admit a request body only when it may be read, and read it within limits.

    For a request with a body: a write (:data:`WRITES`) without the right token is refused
    with 401 before a byte of its body is read; a declared ``Content-Length`` over
    ``max_bytes`` is refused at once (413) and a chunked body as soon as it passes it; the
    whole body must arrive within ``timeout`` seconds (408, connection closed: a slow or
    stalled sender holds nothing longer); bodies being read or processed may hold at most
    ``budget`` bytes together (503 with ``Retry-After``: memory stays bounded however many
    clients send at once).  Refusals close the connection.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        max_bytes: int,
        timeout: float,
        budget: int,
        token: str | None,
    ) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.timeout = timeout
        self.budget = budget
        self.token = token
        self.pending = 0  # bytes held by bodies being read or processed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD", "OPTIONS"):
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        if (scope["method"], scope["path"]) in WRITES:
            denied = token_error(headers, self.token)
            if denied is not None:
                await refuse(send, 401, type(denied).__name__, str(denied))
                return
        declared = headers.get("content-length")
        if declared is not None:
            if not declared.isdigit():
                await refuse(send, 400, "bad_request", "Content-Length is not a number")
                return
            if int(declared) > self.max_bytes:
                await self._too_large(send, int(declared))
                return
        held = 0
        try:
            body = await self._read(receive, send)
            if body is None:
                return
            held = len(body)
            sent = False

            async def replay() -> Message:
                nonlocal sent
                if not sent:
                    sent = True
                    return {"type": "http.request", "body": body, "more_body": False}
                return await receive()

            await self.app(scope, replay, send)
        finally:
            self.pending -= held

    async def _read(self, receive: Receive, send: Send) -> bytes | None:
        """The whole body (its bytes counted in ``pending`` until the caller releases
        them), or ``None`` after answering the refusal or seeing a disconnect."""
        chunks: list[bytes] = []
        size = 0
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout
        complete = False
        try:
            while True:
                try:
                    message = await asyncio.wait_for(receive(), deadline - loop.time())
                except TimeoutError:
                    await refuse(
                        send,
                        408,
                        "request_timeout",
                        f"the request body did not arrive within {self.timeout:g} seconds",
                    )
                    return None
                if message["type"] == "http.disconnect":
                    return None
                chunk = message.get("body", b"")
                size += len(chunk)
                if size > self.max_bytes:
                    await self._too_large(send, size)
                    return None
                if chunk:
                    if self.pending + len(chunk) > self.budget:
                        await refuse(
                            send,
                            503,
                            "busy",
                            "the service is holding as many request bodies as it may at "
                            "once; retry shortly",
                            retry_after=True,
                        )
                        return None
                    self.pending += len(chunk)
                    chunks.append(chunk)
                if not message.get("more_body", False):
                    complete = True
                    return b"".join(chunks)
        finally:
            if not complete:
                self.pending -= sum(len(c) for c in chunks)

    async def _too_large(self, send: Send, size: int) -> None:
        await refuse(
            send,
            413,
            "too_large",
            f"request body is at least {size} bytes; the limit is {self.max_bytes} bytes",
        )


async def refuse(
    send: Send, status: int, kind: str, message: str, *, retry_after: bool = False
) -> None:
    """Answer a JSON error from a middleware and close the connection."""
    payload = json.dumps(error_body(status, kind, message)).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(payload)).encode()),
        (b"connection", b"close"),
    ]
    if status == 401:
        headers.append((b"www-authenticate", b"Bearer"))
    if retry_after:
        headers.append((b"retry-after", b"1"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})


class HeadAsGet:
    """Answer ``HEAD`` wherever ``GET`` is answered: the GET's status and headers, no body."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "HEAD":
            await self.app(scope, receive, send)
            return

        async def headers_only(message: Message) -> None:
            if message["type"] == "http.response.body":
                if message.get("more_body", False):
                    return
                message = {"type": "http.response.body", "body": b"", "more_body": False}
            await send(message)

        await self.app({**scope, "method": "GET"}, receive, headers_only)


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


#: Largest ``POST /v1/dedup`` body the fast path parses on the event loop (1,000 ids of up
#: to ~200 characters); larger ones are parsed on the backend's thread.
FAST_PATH_BYTES = 256 * 1024


class DedupFastPath:
    """Answer ``POST /v1/dedup`` in its common shape without the framework's routing.

    The endpoint's answer is a few microseconds of work on cached signatures, so on the
    benchmark the framework around it (routing, request object, dependency solving,
    exception middleware) was a large share of the server's CPU.  ``answer(body)`` returns
    the response bytes for the common shape (stored ids only, every id's signature already
    in memory) and ``None`` for anything else, which then goes through the normal route
    (and the backend's worker thread): the same code computes the same answer, and every
    error is worded there.  The fast path runs on the event loop, so it touches no store
    and parses only bodies up to :data:`FAST_PATH_BYTES`.  Sits inside
    :class:`RequestGate` (sizes, time and token still enforced) and
    :class:`RequestMetrics` (still counted, under the route's template).
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
        payload = self.answer(body) if len(body) <= FAST_PATH_BYTES else None
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
    """An article to ingest.  Other fields are refused (422): they would not be stored."""

    model_config = ConfigDict(
        extra="forbid",
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
            "examples": [{"items": ["wire-1", "wire-7", {"id": "fresh", "text": "..."}]}]
        },
    )

    items: list[Annotated[DedupItem, BeforeValidator(_bare_id)]] = Field(
        description="Ranked items: a stored id as a bare string or {id}, or {text} (+ optional id)."
    )
    threshold: StrictFloat | None = Field(
        default=None,
        gt=0.0,
        le=1.0,
        allow_inf_nan=False,
        description="Omitted: the near-duplicate rule decides (the default).  Given: seed "
        "000's sentence sketch, near-duplicates at a sentence similarity >= threshold.",
    )


class AlignIn(BaseModel):
    """A stored article and one stored source to align it with, passage by passage."""

    model_config = ConfigDict(extra="forbid")

    id: StrictStr
    source: StrictStr


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
    check_text(text, f"{where}: text")


#: The fields of an article in ``POST /v1/documents``; any other is refused (422), since
#: it would not be stored.
ARTICLE_FIELDS = ("id", "text", "title", "date", "source")


def _check_article_fields(item: Any, where: str) -> None:
    """Strict schema of one article (``Article.from_mapping`` checks the rest)."""
    if not isinstance(item, dict):
        return  # from_mapping words it
    unknown = [k for k in item if k not in ARTICLE_FIELDS]
    if unknown:
        names = ", ".join(shown(k, 40) for k in unknown[:5])
        raise InputError(
            f"{where}: unknown field(s) {names}; an article has only {', '.join(ARTICLE_FIELDS)}"
        )
    for name in ("title", "date", "source"):
        value = item.get(name)
        if value is not None and not isinstance(value, str):
            raise InputTypeError(
                f"{where}: {name!r} must be a string or null, got {type(value).__name__}"
            )


def _parse_articles(raw: Any, settings: ServiceSettings) -> tuple[list[Article], bool]:
    """Body of POST /v1/documents -> (articles, is_batch); errors name the article."""
    if isinstance(raw, list):
        items, batch = raw, True
    elif isinstance(raw, dict) and "articles" in raw and "text" not in raw:
        items, batch = raw["articles"], True
        if not isinstance(items, list):
            raise InputError("articles must be a list of article objects")
        if len(raw) > 1:
            extra = ", ".join(shown(k, 40) for k in raw if k != "articles")
            raise InputError(f"unknown field(s) {extra} next to articles")
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
        _check_article_fields(item, where)
        try:
            article = Article.from_mapping(item)
        except InputError as exc:
            raise type(exc)(f"{where}: {exc}" if batch else str(exc)) from exc
        _check_text(article.text, f"{where} {shown(article.id)}", settings)
        if article.id in seen:
            raise InputError(f"{where}: id {shown(article.id)} appears twice in the batch")
        seen.add(article.id)
        articles.append(article)
    return articles, batch


def _dedup_keys(items: list[DedupItem], settings: ServiceSettings) -> list[str]:
    """Each item's key (its id, else ``#<position>``), every value checked: ids, texts and
    the total of characters to sign (``max_dedup_chars``)."""
    if len(items) > settings.max_result_set:
        raise InputTooLargeError(
            f"the result set has {len(items)} items; the limit is {settings.max_result_set}"
        )
    keys = []
    total = 0
    for n, item in enumerate(items):
        if item.id is not None:
            check_id(item.id, f"items[{n}].id")
        if item.text is not None:
            _check_text(item.text, f"items[{n}]", settings)
            total += len(item.text)
        keys.append(item.id if item.id is not None else f"#{n}")
    if total > settings.max_dedup_chars:
        raise InputTooLargeError(
            f"the result set's texts have {total} characters together; the limit is "
            f"{settings.max_dedup_chars} (send long stored articles by id)"
        )
    if len(set(keys)) != len(keys):
        seen: set[str] = set()
        dup = next(k for k in keys if k in seen or seen.add(k))  # type: ignore[func-returns-value]
        raise InputError(f"item key {shown(dup)} appears twice; give each text item a distinct id")
    return keys


def _fast_dedup_body(
    raw: bytes,
) -> tuple[list[tuple[str | None, str | None]] | None, list[str], float | None]:
    """The hot path of POST /v1/dedup: ``{"items": [ids...], "threshold"?: x}`` parsed with
    orjson.  Returns ``(None, [], None)`` for anything else, which the model then
    validates (with its error messages); the answers are the same either way."""
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
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


def _json_response(content: Any) -> Response:
    """``content`` (plain JSON values already, see ``backend.plain``) rendered as FastAPI's
    JSONResponse renders it, without the ``jsonable_encoder`` pass over every value."""
    body = json.dumps(content, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return Response(body.encode("utf-8"), media_type="application/json")


def _dedup_answer(keys: list[str], positions: list[int], threshold: float | None) -> bytes:
    """The JSON answer of ``POST /v1/dedup`` (shared by the route and its fast path)."""
    kept = kept_of(positions)
    answer = {
        "keep": [keys[i] for i, k in enumerate(kept) if k == i],
        "duplicate_of": {keys[i]: keys[k] for i, k in enumerate(kept) if k != i},
        "positions": positions,
        "threshold": threshold,
    }
    # Rendered directly: the answer is plain JSON already (no encoder pass needed).
    return json.dumps(answer, separators=(",", ":")).encode()


_R = TypeVar("_R")


class BackendRunner:
    """Runs backend calls on one worker thread, in arrival order, off the event loop.

    One thread at a time uses the backend: the store connection is never shared, and
    requests are answered as if they came one after another (the backend's state is never
    seen half-updated).  The event loop only waits on the result, so it keeps reading
    requests, answering ``/healthz`` and the dedup fast path while a heavy request is
    computed.  A *light* call (a store read, one small article) made while nothing is
    pending runs at once on the loop's own thread instead: no other call can be running,
    so the rule holds, and it saves the two thread switches of a hop (~0.2 ms of CPU a
    request measured on the service).
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
#: result set; signing 16 KB of text takes a few milliseconds.
LIGHT_BODY_BYTES = 16 * 1024

#: Python's thread switch interval in the service process (see ``lifespan``).
SWITCH_INTERVAL_SECONDS = 0.001

#: How long ``/healthz`` waits for a fresh store figure before answering the last one.
HEALTH_WAIT_SECONDS = 0.02


def create_app(settings: ServiceSettings | None = None, backend: Backend | None = None) -> FastAPI:
    """The FastAPI app.  ``backend`` (tests) replaces the one opened from ``settings.store``."""
    cfg = settings or ServiceSettings()
    metrics = Metrics()
    state: dict[str, Any] = {}
    health: dict[str, Any] = {}  # the last store figures /healthz saw (see healthz)

    def open_and_warm() -> Backend:
        opened = backend if backend is not None else open_backend(cfg)
        try:
            # JIT compilation and lazy imports now, not on the first requests (warmup.py).
            warm_up()
            if cfg.preload:
                from neardup.service.load import preload

                preload(opened, cfg.preload, cfg.preload_path)
            health.update(opened.health())
        except BaseException:
            if backend is None:
                opened.close()
            raise
        return opened

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        # Opened on the runner's thread, which makes every later backend call (module doc).
        runner = BackendRunner()
        state["runner"] = runner
        # The loop thread waits for the GIL at most this long while the worker thread signs
        # texts (Python's default is 5 ms): /healthz and reads stay fast under heavy work.
        sys.setswitchinterval(SWITCH_INTERVAL_SECONDS)
        try:
            state["backend"] = await runner(open_and_warm)
            try:
                yield
            finally:
                if backend is None:
                    await runner(state["backend"].close)
        finally:
            runner.close()

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
        return state["backend"]  # type: ignore[no-any-return]

    async def run(fn: Callable[..., _R], *args: Any, light: bool = False) -> _R:
        """``fn(*args)`` on the backend's thread (see :class:`BackendRunner`; ``light``: a
        call bounded to about a millisecond, run at once when nothing is pending)."""
        runner: BackendRunner = state["runner"]
        return await runner(fn, *args, light=light)

    def model_body(raw: bytes, model: type[_M]) -> _M:
        # Parsed here rather than by FastAPI so that a malformed body is a 400 whatever its
        # Content-Type, with one parser (and one depth limit) for every body.
        return model.model_validate(parse_json(raw))

    def do_ingest(raw: bytes) -> Response:
        articles, batch = _parse_articles(parse_json(raw), cfg)
        decisions = be().ingest(articles)
        return _json_response({"decisions": decisions} if batch else decisions[0])

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
        same decision; with a different text, 409.  Fields other than ``id``, ``text``,
        ``title``, ``date`` and ``source`` are refused (422).  The answer is sent only after
        the store committed, so an acknowledged article survives a crash.  The token (when
        the service has one) is checked before the body is read."""
        # The gate checked the token already; checked again here so that the route is safe
        # whatever the middleware (headers read directly: FastAPI's dependency solving was
        # a measurable share of a one-article request, docs/service.md).
        denied = token_error(request.headers, cfg.token)
        if denied is not None:
            raise denied
        raw = await request.body()
        return await run(do_ingest, raw, light=len(raw) <= LIGHT_BODY_BYTES)

    @app.get("/v1/documents", tags=["documents"], summary="Recently ingested articles")
    async def recent(limit: Annotated[int, Query(ge=1, le=1000)] = 50) -> Any:
        """The last ``limit`` ingested articles, newest first (id, title, date, status)."""
        return {"documents": await run(be().recent, limit, light=True)}

    @app.get("/v1/documents/{doc_id}", tags=["documents"], summary="One stored article")
    async def document(doc_id: str) -> Any:
        """The stored article (text, title, date, source) and the decision made at ingest."""
        return await run(be().document, check_id(doc_id), light=True)

    @app.get("/v1/documents/{doc_id}/similar", tags=["documents"], summary="Similar stories")
    async def similar(doc_id: str, limit: Annotated[int, Query(ge=1)] = 10) -> Any:
        """Other coverage of the article's story, most similar first: each item has the
        rule's ``verdict`` (``partial`` or ``duplicate``: a copy; ``similar``: written
        independently), its scores, title, date and source.  ``duplicates`` lists the
        article's own duplicate group (its original and copies), which ``similar`` leaves
        out."""
        if limit > cfg.max_similar:
            raise InputTooLargeError(f"limit {limit} is over the maximum {cfg.max_similar}")
        found = await run(be().similar, check_id(doc_id), limit, light=True)
        return {"id": doc_id, **found}

    def do_dedup(raw: bytes) -> Response:
        refs, keys, threshold = (
            _fast_dedup_body(raw)
            if len(raw) <= FAST_PATH_BYTES
            else (
                None,
                [],
                None,
            )
        )
        if refs is None:
            # Anything but the common shape (ids only) goes through the model, which also
            # words every error.
            body = model_body(raw, DedupIn)
            keys = _dedup_keys(body.items, cfg)
            refs = [(item.id if item.text is None else None, item.text) for item in body.items]
            threshold = body.threshold
        else:
            for n, key in enumerate(keys):
                check_id(key, f"items[{n}]")
        if len(refs) > cfg.max_result_set:
            raise InputTooLargeError(
                f"the result set has {len(refs)} items; the limit is {cfg.max_result_set}"
            )
        positions = be().dedup(refs, threshold) if refs else []
        return Response(_dedup_answer(keys, positions, threshold), media_type="application/json")

    @app.post(
        "/v1/dedup",
        tags=["result sets"],
        summary="Deduplicate a ranked result set",
        openapi_extra=_body_schema("DedupIn"),
    )
    async def dedup(request: Request) -> Any:
        """Realtime dedup of a ranked result set (seed 000).  ``items`` in ranking order: a
        bare string or ``{"id"}`` is a stored article, ``{"text"}`` is signed now (its key is
        its ``id`` if given, else ``"#<position>"``).  Without ``threshold`` an item is a
        duplicate when the near-duplicate rule calls it one, estimated from the two
        articles' coverage sketches; with ``threshold``, when seed 000's sentence sketches
        are at least that similar (``threshold`` is echoed, ``null`` for the rule).  Answer:
        ``keep`` (keys kept, in ranking order), ``duplicate_of`` (each dropped key -> the kept
        key it duplicates, following chains to the kept item), ``positions`` (the library's
        raw answer: for each position, the earliest position it near-duplicates, or
        itself).  At most ``max_result_set`` items and ``max_dedup_chars`` characters of text
        together."""
        raw = await request.body()
        return await run(do_dedup, raw, light=len(raw) <= LIGHT_BODY_BYTES)

    def fast_dedup(raw: bytes) -> bytes | None:
        # The route's common case (see DedupFastPath), on the event loop: answered only from
        # signatures already in memory; None sends the request to the route.
        refs, keys, threshold = _fast_dedup_body(raw)
        if not refs or len(refs) > cfg.max_result_set:
            return None
        positions = be().dedup_cached(keys, threshold)
        if positions is None:
            return None
        return _dedup_answer(keys, positions, threshold)

    @app.get("/v1/events", tags=["events"], summary="Breaking events")
    async def events(since: str | None = None, until: str | None = None) -> Any:
        """Events opened between ``since`` and ``until`` (ISO-8601; article dates, not the
        wall clock), oldest first, each with its readable ``title``, its number of
        ``articles`` and of ``sources``."""
        start, end = parse_date(since), parse_date(until)
        if start is not None and end is not None and start > end:
            raise InputError("since is after until")
        return {"events": await run(be().events, start, end, light=True)}

    @app.get("/v1/events/{event_id}", tags=["events"], summary="One event's report")
    async def event(event_id: str) -> Any:
        """The event's report: title, articles in time order (each the first report, an
        independent report or a copy of an earlier one), first publisher, sources, growth,
        and how many are copies and independent reports.  A merged event's id gives the
        report of the event it merged into."""
        return await run(be().event, check_id(event_id, "event id"), light=True)

    def do_origin(raw: bytes) -> Any:
        body = model_body(raw, OriginIn)
        if body.text is not None:
            _check_text(body.text, "body", cfg)
        if body.id is not None:
            check_id(body.id)
        return be().origin(body.id, body.text)

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
        return await run(do_origin, await request.body())

    def do_align(raw: bytes) -> Any:
        body = model_body(raw, AlignIn)
        return be().align(check_id(body.id), check_id(body.source, "source"))

    @app.post(
        "/v1/align",
        tags=["origin"],
        summary="Passages of an article taken from one source",
        openapi_extra=_body_schema("AlignIn"),
    )
    async def align(request: Request) -> Any:
        """The passages of stored article ``id`` copied from stored article ``source``,
        verbatim or reworded, as character spans on both sides (passage alignment)."""
        return await run(do_align, await request.body())

    @app.get("/healthz", tags=["operations"], summary="Liveness and store reachability")
    async def healthz() -> Any:
        """Answered on the event loop however busy the backend is: with fresh store figures
        when the backend is idle (waiting at most 20 ms for them), else at once with the
        last ones (``"busy": true``) while a refresh is queued behind the work."""
        runner: BackendRunner = state["runner"]
        busy = runner.pending > 0
        pending = state.get("health")
        if pending is None or pending.done():
            # One store read queued at a time, however often /healthz is called.
            pending = state["health"] = runner.submit(be().health)
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
            for name, (help_text, value) in (await run(be().sizes)).items()
        }
        gauges["neardup_process_resident_memory_bytes"] = (
            "Resident memory of this worker process.",
            resident_memory_bytes(),
        )
        gauges["neardup_backend_queue"] = (
            "Backend calls waiting or running on the worker thread.",
            state["runner"].pending,
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
            for model in (ArticleIn, BatchIn, DedupItem, DedupIn, OriginIn, AlignIn):
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
    app.add_middleware(
        RequestGate,
        max_bytes=cfg.max_body_bytes,
        timeout=cfg.body_timeout_seconds,
        budget=max(cfg.max_pending_body_bytes, cfg.max_body_bytes),  # one body always fits
        token=cfg.token,
    )
    app.add_middleware(HeadAsGet)
    app.add_middleware(RequestMetrics, metrics=metrics)
    return app


def create_app_from_env() -> FastAPI:
    """Factory for ``uvicorn --factory``: settings from ``NEARDUP_SERVICE_SETTINGS``."""
    return create_app(ServiceSettings.from_environ())
