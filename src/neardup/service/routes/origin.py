"""``POST /v1/origin`` and ``POST /v1/align``: where a text's passages come from (seed 004)."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request

from neardup.records import check_id
from neardup.service.bodies import check_text_limits, model_body
from neardup.service.context import ServiceContext
from neardup.service.models import AlignIn, OriginIn, body_schema

__all__ = ["register"]


def register(app: FastAPI, ctx: ServiceContext) -> None:
    """Add the origin and alignment routes."""
    cfg = ctx.settings

    def do_origin(raw: bytes) -> Any:
        body = model_body(raw, OriginIn)
        if body.text is not None:
            check_text_limits(body.text, "body", cfg)
        if body.id is not None:
            check_id(body.id)
        return ctx.backend.origin(body.id, body.text)

    @app.post(
        "/v1/origin",
        tags=["origin"],
        summary="Copied and novel segments",
        openapi_extra=body_schema("OriginIn"),
    )
    async def origin(request: Request) -> Any:
        """Seed 004: for a stored ``id`` (as of its ingest) or a new ``text`` (against all
        stored articles; nothing is stored), the copied segments with the earlier article each
        came from, the novel segments, the copied fraction and the dominant origin."""
        return await ctx.run(do_origin, await request.body())

    def do_align(raw: bytes) -> Any:
        body = model_body(raw, AlignIn)
        return ctx.backend.align(check_id(body.id), check_id(body.source, "source"))

    @app.post(
        "/v1/align",
        tags=["origin"],
        summary="Passages of an article taken from one source",
        openapi_extra=body_schema("AlignIn"),
    )
    async def align(request: Request) -> Any:
        """The passages of stored article ``id`` copied from stored article ``source``,
        verbatim or reworded, as character spans on both sides (passage alignment)."""
        return await ctx.run(do_align, await request.body())
