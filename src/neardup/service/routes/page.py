"""``GET /``: the web page, and its static files under ``/static``."""

from __future__ import annotations

from importlib import resources

from fastapi import FastAPI
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

__all__ = ["register"]


def register(app: FastAPI) -> None:
    """Add the page and mount its static files."""
    static_dir = resources.files("neardup.service") / "static"

    @app.get("/", include_in_schema=False)
    async def page() -> HTMLResponse:
        return HTMLResponse(static_dir.joinpath("index.html").read_text(encoding="utf-8"))

    app.mount("/static", StaticFiles(directory=str(static_dir)), name="static")
