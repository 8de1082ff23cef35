"""Request models of the JSON API v1.  They validate the bodies the routes parse by hand
(:func:`neardup.service.bodies.model_body`) and document the API in ``/docs``
(:func:`install_openapi` adds them to the schema, since no route declares them).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictFloat,
    StrictInt,
    StrictStr,
    model_validator,
)

__all__ = [
    "AlignIn",
    "ArticleIn",
    "BatchIn",
    "DedupIn",
    "DedupItem",
    "OriginIn",
    "body_schema",
    "install_openapi",
]


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


def body_schema(name: str) -> dict[str, Any]:
    """The OpenAPI request body of a route whose body is the model called ``name``."""
    return {
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{name}"}}},
        }
    }


def install_openapi(app: FastAPI) -> None:
    """Serve an OpenAPI schema that includes the request models."""

    def openapi() -> dict[str, Any]:
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
