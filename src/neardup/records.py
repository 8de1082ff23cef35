"""The input record every interface shares: :class:`Article`, and its parsing from a mapping.

Detectors define their own output records next to their code (``detect.stream.Decision``,
``detect.origin`` reports, ...); only the input is shared by all of them.

Every value a caller controls is checked here, once, so the Python API, the CLI and the
service refuse the same inputs with the same ``InputError`` whatever the store:

* **Text** (an article's text, id, title and source; the service applies the same rule to
  every text it receives): a NUL character (U+0000) or a lone surrogate (U+D800-U+DFFF,
  e.g. from a broken ``\\ud800`` JSON escape) is refused, never replaced: such text cannot
  be stored as UTF-8 (PostgreSQL refuses NUL, no UTF-8 encoder takes a lone surrogate), and
  a silent replacement would change the text and its hash behind the caller's back.
* **Ids**: non-empty, at most :data:`MAX_ID_BYTES` bytes in UTF-8 (a URL of up to 2,048
  characters fits; PostgreSQL cannot index much longer keys); integer ids must fit in 64
  bits and are turned into their decimal string.
* **Dates**: ISO-8601 (a date without a zone is UTC) whose UTC instant lies in years 1 to
  9999 (:data:`MIN_DATE`, :data:`MAX_DATE`); ``0001-01-01T00:00:00+14:00`` is before it.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Mapping
from typing import Any

import xxhash

from neardup.errors import InputError, InputTooLargeError, InputTypeError

__all__ = [
    "MAX_DATE",
    "MAX_ID_BYTES",
    "MIN_DATE",
    "Article",
    "FieldNames",
    "check_id",
    "check_text",
    "epoch_us",
    "from_epoch_us",
    "parse_date",
    "shown",
    "text_hash",
]

#: Longest id accepted, in UTF-8 bytes (PostgreSQL's B-tree takes keys up to 2,704 bytes).
MAX_ID_BYTES = 2048
#: Integer ids must lie in [-2**63, 2**64): their decimal string is the id.
_INT_ID_BITS = 64
#: The supported range of dates (UTC): every instant Python's datetime can hold in UTC.
MIN_DATE = dt.datetime(1, 1, 1, tzinfo=dt.UTC)
MAX_DATE = dt.datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=dt.UTC)


def shown(value: object, limit: int = 60) -> str:
    """``repr(value)`` cut to about ``limit`` characters, for error messages that quote
    client input (a 1 MB id is not echoed back whole)."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 5] + "...'" + f" ({len(text)} chars)"


def _bad_character(value: str) -> str | None:
    """Why ``value`` cannot be stored as text (NUL or a lone surrogate), else ``None``."""
    nul = value.find("\x00")
    if nul >= 0:
        return f"contains a NUL character (U+0000) at position {nul}"
    if value.isascii():
        return None
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"contains a lone surrogate (U+{ord(value[exc.start]):04X}) at position {exc.start}"
    return None


def check_text(value: str, what: str) -> str:
    """``value`` unchanged if it can be stored as UTF-8 text, else ``InputError`` naming
    ``what`` and the position of the first NUL or lone surrogate (the module's rule)."""
    problem = _bad_character(value)
    if problem is not None:
        raise InputError(f"{what} {problem}; NUL and lone surrogates are not accepted")
    return value


def check_id(value: str, what: str = "id") -> str:
    """``value`` unchanged if it is a valid id (non-empty text, at most
    :data:`MAX_ID_BYTES` UTF-8 bytes, no NUL or lone surrogate), else ``InputError``."""
    if not isinstance(value, str) or not value:
        raise InputError(f"{what} must be a non-empty string, got {shown(value)}")
    check_text(value, f"{what} {shown(value)}")
    if len(value) * 4 > MAX_ID_BYTES and len(value.encode("utf-8")) > MAX_ID_BYTES:
        raise InputTooLargeError(
            f"{what} {shown(value)} is {len(value.encode('utf-8'))} bytes long in UTF-8; "
            f"the limit is {MAX_ID_BYTES}"
        )
    return value


def text_hash(text: str) -> str:
    """128-bit content hash of an article's text (xxh3_128 of its UTF-8 bytes, hex): equal
    text, equal hash.  Stored with every article; the store checks a text read back against
    it, and an id re-ingested with another text is a conflict."""
    return xxhash.xxh3_128_hexdigest(text.encode("utf-8", "surrogatepass"))


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
    Anything else, and an instant outside :data:`MIN_DATE`..:data:`MAX_DATE` in UTC, raises
    ``InputError`` naming the value.
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
            raise InputError(
                f"date {shown(value)} is not ISO-8601 (e.g. 1987-02-26T15:01:01Z)"
            ) from exc
    else:
        raise InputTypeError(f"date must be an ISO-8601 string, got {type(value).__name__}")
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=dt.UTC)
    try:
        return parsed.astimezone(dt.UTC)
    except (OverflowError, ValueError) as exc:  # years 1 and 9999 with an offset
        raise InputError(
            f"date {shown(value if isinstance(value, str) else parsed.isoformat())} is outside "
            f"the supported range {MIN_DATE.isoformat()} to {MAX_DATE.isoformat()} (UTC)"
        ) from exc


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_ONE_US = dt.timedelta(microseconds=1)


def epoch_us(when: dt.datetime) -> int:
    """An aware datetime as integer microseconds since 1970-01-01 UTC: the one time unit of
    stores, indexes and checkpoints (exact: no float rounding, any date in the range)."""
    return (when - _EPOCH) // _ONE_US


def from_epoch_us(value: int) -> dt.datetime:
    """The inverse of :func:`epoch_us`: an aware UTC datetime."""
    return _EPOCH + dt.timedelta(microseconds=value)


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
        check_id(self.id, "article id")
        where = f"article {shown(self.id)}:"
        if not isinstance(self.text, str):
            raise InputTypeError(f"{where} text must be a string")
        check_text(self.text, f"{where} text")
        for name in ("title", "source"):
            value = getattr(self, name)
            if value is not None:
                if not isinstance(value, str):
                    raise InputTypeError(f"{where} {name} must be a string or None")
                check_text(value, f"{where} {name}")
        if self.date is not None:
            # Naive -> UTC, any zone -> UTC, range-checked: the same rule as a date string.
            try:
                object.__setattr__(self, "date", parse_date(self.date))
            except InputError as exc:
                raise type(exc)(f"{where} {exc}") from exc

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
        if isinstance(raw_id, int) and not -(1 << 63) <= raw_id < 1 << _INT_ID_BITS:
            raise InputError(f"integer {f.id!r} must fit in 64 bits; send a longer id as a string")
        article_id = check_id(str(raw_id), f.id)
        if f.text not in data or data[f.text] is None:
            raise InputError(f"article {shown(article_id)} is missing its {f.text!r} field")
        text = data[f.text]
        if not isinstance(text, str):
            raise InputTypeError(f"article {shown(article_id)}: {f.text!r} must be a string")
        title = data.get(f.title)
        source = data.get(f.source)
        try:
            date = parse_date(data.get(f.date))
        except InputError as exc:
            raise type(exc)(f"article {shown(article_id)}: {exc}") from exc
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
