"""``/v1/documents``: ingest one article or a batch, the recent articles, one stored
article, and its similar stories."""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import FastAPI, Query, Request
from fastapi.responses import Response

from neardup.errors import InputError, InputTooLargeError, InputTypeError
from neardup.records import Article, check_id, shown
from neardup.service.bodies import check_text_limits, parse_json
from neardup.service.context import ServiceContext
from neardup.service.middleware import token_error
from neardup.service.runner import LIGHT_BODY_BYTES
from neardup.service.settings import ServiceSettings

__all__ = ["ARTICLE_FIELDS", "json_response", "parse_articles", "register"]

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


def parse_articles(raw: Any, settings: ServiceSettings) -> tuple[list[Article], bool]:
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
        check_text_limits(article.text, f"{where} {shown(article.id)}", settings)
        if article.id in seen:
            raise InputError(f"{where}: id {shown(article.id)} appears twice in the batch")
        seen.add(article.id)
        articles.append(article)
    return articles, batch


def json_response(content: Any) -> Response:
    """``content`` (plain JSON values already, see ``backend.plain``) rendered as FastAPI's
    JSONResponse renders it, without the ``jsonable_encoder`` pass over every value."""
    body = json.dumps(content, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return Response(body.encode("utf-8"), media_type="application/json")


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


def register(app: FastAPI, ctx: ServiceContext) -> None:
    """Add the ``/v1/documents`` routes."""
    cfg = ctx.settings

    def do_ingest(raw: bytes) -> Response:
        articles, batch = parse_articles(parse_json(raw), cfg)
        decisions = ctx.backend.ingest(articles)
        return json_response({"decisions": decisions} if batch else decisions[0])

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
        # whatever the middleware (headers read directly, not through FastAPI's dependency
        # solving, which costs a share of a one-article request: docs/service.md).
        denied = token_error(request.headers, cfg.token)
        if denied is not None:
            raise denied
        raw = await request.body()
        return await ctx.run(do_ingest, raw, light=len(raw) <= LIGHT_BODY_BYTES)

    @app.get("/v1/documents", tags=["documents"], summary="Recently ingested articles")
    async def recent(limit: Annotated[int, Query(ge=1, le=1000)] = 50) -> Any:
        """The last ``limit`` ingested articles, newest first (id, title, date, status)."""
        return {"documents": await ctx.run(ctx.backend.recent, limit, light=True)}

    @app.get("/v1/documents/{doc_id}", tags=["documents"], summary="One stored article")
    async def document(doc_id: str) -> Any:
        """The stored article (text, title, date, source) and the decision made at ingest."""
        return await ctx.run(ctx.backend.document, check_id(doc_id), light=True)

    @app.get("/v1/documents/{doc_id}/similar", tags=["documents"], summary="Similar stories")
    async def similar(doc_id: str, limit: Annotated[int, Query(ge=1)] = 10) -> Any:
        """Other coverage of the article's story, most similar first: each item has the
        rule's ``verdict`` (``partial`` or ``duplicate``: a copy; ``similar``: written
        independently), its scores, title, date and source.  ``duplicates`` lists the
        article's own duplicate group (its original and copies), which ``similar`` leaves
        out."""
        if limit > cfg.max_similar:
            raise InputTooLargeError(f"limit {limit} is over the maximum {cfg.max_similar}")
        found = await ctx.run(ctx.backend.similar, check_id(doc_id), limit, light=True)
        return {"id": doc_id, **found}
