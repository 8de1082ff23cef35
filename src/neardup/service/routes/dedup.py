"""``POST /v1/dedup``: realtime dedup of a ranked result set (seed 000), and its fast path.

The route parses and checks the body, calls ``NewsIndex.dedup`` through the backend, and
renders the library's positions with the groups they form
(:func:`neardup.detect.resultset.kept_of`).  :class:`DedupFastPath` answers the common shape
(stored ids only, every signature in memory) on the event loop with the same code.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import orjson
from fastapi import FastAPI, Request
from fastapi.responses import Response

from neardup.detect.resultset import kept_of
from neardup.errors import InputError, InputTooLargeError
from neardup.records import check_id, shown
from neardup.service.bodies import check_text_limits, model_body
from neardup.service.context import ServiceContext
from neardup.service.middleware import ASGIApp, Receive, Scope, Send, replaying
from neardup.service.models import DedupIn, DedupItem, body_schema
from neardup.service.runner import LIGHT_BODY_BYTES
from neardup.service.settings import ServiceSettings

__all__ = ["FAST_PATH_BYTES", "DedupFastPath", "dedup_answer", "register"]

#: Largest ``POST /v1/dedup`` body the fast path parses on the event loop (1,000 ids of up
#: to ~200 characters); larger ones are parsed on the backend's thread.
FAST_PATH_BYTES = 256 * 1024


class DedupFastPath:
    """Answer ``POST /v1/dedup`` in its common shape without the framework's routing.

    The endpoint's answer is little work on cached signatures, so the framework around it
    (routing, request object, dependency solving, exception middleware) would be a large
    share of its cost (figures in docs/service.md).  ``answer(body)`` returns
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
            await self.app(scope, replaying(body, receive), send)
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


def dedup_keys(items: list[DedupItem], settings: ServiceSettings) -> list[str]:
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
            check_text_limits(item.text, f"items[{n}]", settings)
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


def fast_dedup_body(
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


def dedup_answer(keys: list[str], positions: list[int], threshold: float | None) -> bytes:
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


def register(app: FastAPI, ctx: ServiceContext) -> None:
    """Add ``POST /v1/dedup`` and its fast path (a middleware in front of the route)."""
    cfg = ctx.settings

    def do_dedup(raw: bytes) -> Response:
        refs, keys, threshold = (
            fast_dedup_body(raw)
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
            keys = dedup_keys(body.items, cfg)
            refs = [(item.id if item.text is None else None, item.text) for item in body.items]
            threshold = body.threshold
        else:
            for n, key in enumerate(keys):
                check_id(key, f"items[{n}]")
        if len(refs) > cfg.max_result_set:
            raise InputTooLargeError(
                f"the result set has {len(refs)} items; the limit is {cfg.max_result_set}"
            )
        positions = ctx.backend.dedup(refs, threshold) if refs else []
        return Response(dedup_answer(keys, positions, threshold), media_type="application/json")

    @app.post(
        "/v1/dedup",
        tags=["result sets"],
        summary="Deduplicate a ranked result set",
        openapi_extra=body_schema("DedupIn"),
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
        return await ctx.run(do_dedup, raw, light=len(raw) <= LIGHT_BODY_BYTES)

    def fast_dedup(raw: bytes) -> bytes | None:
        # The route's common case (see DedupFastPath), on the event loop: answered only from
        # signatures already in memory; None sends the request to the route.
        refs, keys, threshold = fast_dedup_body(raw)
        if not refs or len(refs) > cfg.max_result_set:
            return None
        positions = ctx.backend.dedup_cached(keys, threshold)
        if positions is None:
            return None
        return dedup_answer(keys, positions, threshold)

    route = next(r for r in app.routes if getattr(r, "path", None) == "/v1/dedup")
    app.add_middleware(DedupFastPath, answer=fast_dedup, route=route)
