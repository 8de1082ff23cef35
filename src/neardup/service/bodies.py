"""Request bodies: JSON parsing with one parser and one depth limit, the text limits, and
validation against a request model.

Bodies are parsed here rather than by FastAPI so that a malformed body is a 400 whatever its
``Content-Type``, with the same rules for every route.
"""

from __future__ import annotations

import json
import re
from typing import Any, TypeVar

import orjson
from pydantic import BaseModel

from neardup.batch.io import holds_rounded_integer
from neardup.errors import InputError, InputTooLargeError
from neardup.records import check_text
from neardup.service.errors import MalformedJSON
from neardup.service.settings import ServiceSettings

__all__ = ["MAX_JSON_DEPTH", "check_text_limits", "model_body", "parse_json"]

#: Deepest nesting of arrays and objects accepted in a JSON body (orjson's own limit is
#: 1,024, above Python's recursion limit for the code that walks the result).
MAX_JSON_DEPTH = 32

_NOT_JSON_NUMBERS = re.compile(rb"(?<![\w\"])-?(NaN|Infinity)(?![\w\"])")


def parse_json(raw: bytes) -> Any:
    """A request body -> its JSON value (orjson: strict RFC 8259, UTF-8, no NaN, no lone
    surrogates; integers exact whatever their size).  :class:`MalformedJSON` (400) for
    anything that is not JSON or nests deeper than :data:`MAX_JSON_DEPTH`; ``InputError``
    for an empty body."""
    if not raw.strip():
        raise InputError("the request body is empty; send a JSON document")
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        hint = ""
        if _NOT_JSON_NUMBERS.search(raw[:65536]):
            hint = " (NaN and Infinity are not JSON numbers)"
        raise MalformedJSON(f"the request body is not valid JSON: {exc}{hint}") from exc
    if isinstance(value, list | dict):
        _check_depth(value)
        if holds_rounded_integer(value):
            # orjson rounds an integer beyond 64 bits to a float; read exactly, an id that
            # large is refused by name ("must fit in 64 bits"), not as "got float".
            value = json.loads(raw)
    return value


def _check_depth(value: Any) -> None:
    # Iterative: a recursive walk would itself hit Python's recursion limit.
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            raise MalformedJSON(
                f"the request body nests arrays/objects deeper than {MAX_JSON_DEPTH} levels"
            )
        children = node.values() if isinstance(node, dict) else node
        stack.extend((c, depth + 1) for c in children if isinstance(c, list | dict))


_M = TypeVar("_M", bound=BaseModel)


def model_body(raw: bytes, model: type[_M]) -> _M:
    """``raw`` parsed (:func:`parse_json`) and validated by ``model`` (422 with every
    problem listed otherwise)."""
    return model.model_validate(parse_json(raw))


def check_text_limits(text: str, where: str, settings: ServiceSettings) -> None:
    """``InputError`` unless ``text`` is non-empty, within ``max_text_chars`` and storable
    (:func:`neardup.records.check_text`); ``where`` names it in the message."""
    if len(text) > settings.max_text_chars:
        raise InputTooLargeError(
            f"{where}: text has {len(text)} characters; the limit is {settings.max_text_chars}"
        )
    if not text.strip():
        raise InputError(f"{where}: text is empty")
    check_text(text, f"{where}: text")
