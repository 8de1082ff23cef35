"""``/v1/events``: breaking events (seed 003) and one event's report."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI

from neardup.errors import InputError
from neardup.records import check_id, parse_date
from neardup.service.context import ServiceContext

__all__ = ["register"]


def register(app: FastAPI, ctx: ServiceContext) -> None:
    """Add the ``/v1/events`` routes."""

    @app.get("/v1/events", tags=["events"], summary="Breaking events")
    async def events(since: str | None = None, until: str | None = None) -> Any:
        """Events opened between ``since`` and ``until`` (ISO-8601; article dates, not the
        wall clock), oldest first, each with its readable ``title``, its number of
        ``articles`` and of ``sources``."""
        start, end = parse_date(since), parse_date(until)
        if start is not None and end is not None and start > end:
            raise InputError("since is after until")
        return {"events": await ctx.run(ctx.backend.events, start, end, light=True)}

    @app.get("/v1/events/{event_id}", tags=["events"], summary="One event's report")
    async def event(event_id: str) -> Any:
        """The event's report: title, articles in time order (each the first report, an
        independent report or a copy of an earlier one), first publisher, sources, growth,
        and how many are copies and independent reports.  A merged event's id gives the
        report of the event it merged into."""
        return await ctx.run(ctx.backend.event, check_id(event_id, "event id"), light=True)
