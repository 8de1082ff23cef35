"""``neardup serve``: the HTTP service (JSON API v1, web page, metrics); see docs/service.md.

:func:`create_app` builds the FastAPI app from :class:`ServiceSettings`; the CLI command
``neardup serve`` runs it on uvicorn.  Needs the ``service`` extra (fastapi, uvicorn).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from neardup.service.settings import ServiceSettings

if TYPE_CHECKING:
    from neardup.service.app import create_app

__all__ = ["ServiceSettings", "create_app"]


def __getattr__(name: str) -> Any:
    # FastAPI is imported only when the app is built, so settings load without it.
    if name == "create_app":
        from neardup.service.app import create_app

        return create_app
    raise AttributeError(f"module 'neardup.service' has no attribute {name!r}")
