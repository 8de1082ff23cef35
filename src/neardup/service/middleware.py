"""ASGI middleware of the service (pure ASGI: no per-request task overhead): the request
gate (token, size, time, memory), ``HEAD`` answered as ``GET``, and request metrics."""

from __future__ import annotations

import asyncio
import hmac
import json
import time
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from typing import Any

from neardup.errors import AuthError
from neardup.service.errors import error_body
from neardup.service.metrics import Metrics

__all__ = [
    "WRITES",
    "ASGIApp",
    "HeadAsGet",
    "Message",
    "Receive",
    "RequestGate",
    "RequestMetrics",
    "Scope",
    "Send",
    "refuse",
    "replaying",
    "token_error",
]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


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
            await self.app(scope, replaying(body, receive), send)
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


def replaying(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that gives the app ``body`` (already read by a middleware) as one
    message, then whatever ``receive`` gives (a disconnect)."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay
