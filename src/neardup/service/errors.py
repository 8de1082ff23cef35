"""Error answers of the HTTP service: one JSON shape, and the exception handlers that map
every failure onto it.

Every error is ``{"error": {"status", "type", "message", ...}}``: a 4xx status for anything
the caller did wrong (the status of a library error is its ``http_status``, see
:mod:`neardup.errors`), 400 for a body that is not JSON (:class:`MalformedJSON`), 422 for a
document with bad fields (each problem listed), and a logged JSON 500 for an unexpected
failure, never an HTML traceback.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException

from neardup.errors import NearDupError

__all__ = ["MalformedJSON", "error_body", "install_error_handlers"]

log = logging.getLogger("neardup.service")


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


def install_error_handlers(app: FastAPI) -> None:
    """Map every exception a route can raise onto the JSON error answer."""
    app.add_exception_handler(RequestValidationError, _on_validation_error)
    app.add_exception_handler(ValidationError, _on_validation_error)
    app.add_exception_handler(NearDupError, _on_neardup_error)
    app.add_exception_handler(MalformedJSON, _on_malformed)
    app.add_exception_handler(StarletteHTTPException, _on_http_error)
    app.add_exception_handler(Exception, _on_unexpected)
