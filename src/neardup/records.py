"""The input record every interface shares: :class:`Article`, and its parsing from a mapping.

Detectors define their own output records next to their code (``detect.stream.Decision``,
``detect.origin`` reports, ...); only the input is shared by all of them.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Mapping
from typing import Any

from neardup.errors import InputError, InputTypeError

__all__ = ["Article", "FieldNames", "parse_date"]


@dataclasses.dataclass(frozen=True, slots=True)
class FieldNames:
    """Which keys of an input mapping hold each article field (configurable on the CLI)."""

    id: str = "id"
    text: str = "text"
    title: str = "title"
    date: str = "date"
    source: str = "source"


_DEFAULT_FIELDS = FieldNames()


def parse_date(value: object) -> dt.datetime | None:
    """ISO-8601 text (or a datetime) -> an aware UTC datetime; ``None``/"" -> ``None``.

    A date without a time zone is taken as UTC (documented: newswire feeds rarely say).
    Anything else raises ``InputError`` naming the value.
    """
    if value is None or value == "":
        return None
    if isinstance(value, dt.datetime):
        parsed = value
    elif isinstance(value, str):
        text = value.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        try:
            parsed = dt.datetime.fromisoformat(text)
        except ValueError as exc:
            raise InputError(f"date {value!r} is not ISO-8601 (e.g. 1987-02-26T15:01:01Z)") from exc
    else:
        raise InputTypeError(f"date must be an ISO-8601 string, got {type(value).__name__}")
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=dt.UTC)
    return parsed.astimezone(dt.UTC)


@dataclasses.dataclass(frozen=True, slots=True)
class Article:
    """One document: a unique ``id``, its ``text``, and optional metadata."""

    id: str
    text: str
    title: str | None = None
    date: dt.datetime | None = None
    source: str | None = None
    extra: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id:
            raise InputError(f"article id must be a non-empty string, got {self.id!r}")
        if not isinstance(self.text, str):
            raise InputTypeError(f"article {self.id!r}: text must be a string")

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], fields: FieldNames | None = None) -> Article:
        """Build from a JSON object; ``InputError`` names the missing or bad field.

        Numeric ids are accepted and turned into strings; other fields are kept in ``extra``.
        """
        f = fields or _DEFAULT_FIELDS
        if not isinstance(data, Mapping):
            raise InputTypeError(f"an article must be a JSON object, got {type(data).__name__}")
        if f.id not in data or data[f.id] is None or data[f.id] == "":
            raise InputError(f"article is missing its {f.id!r} field")
        raw_id = data[f.id]
        if isinstance(raw_id, bool) or not isinstance(raw_id, str | int):
            raise InputTypeError(
                f"{f.id!r} must be a string or integer, got {type(raw_id).__name__}"
            )
        article_id = str(raw_id)
        if f.text not in data or data[f.text] is None:
            raise InputError(f"article {article_id!r} is missing its {f.text!r} field")
        text = data[f.text]
        if not isinstance(text, str):
            raise InputTypeError(f"article {article_id!r}: {f.text!r} must be a string")
        title = data.get(f.title)
        source = data.get(f.source)
        try:
            date = parse_date(data.get(f.date))
        except InputError as exc:
            raise type(exc)(f"article {article_id!r}: {exc}") from exc
        known = {f.id, f.text, f.title, f.date, f.source}
        extra = {k: v for k, v in data.items() if k not in known}
        return cls(
            id=article_id,
            text=text,
            title=title if isinstance(title, str) else None,
            date=date,
            source=source if isinstance(source, str) else None,
            extra=extra,
        )
