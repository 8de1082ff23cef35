"""Shared machinery for the frozen, validated parameter dataclasses of every stage.

Each stage keeps its own config class next to its code (``text.TextConfig``,
``sketch.minhash.MinHashConfig``, ...); this module gives them one way to validate values,
to render themselves canonically, and to derive a *scheme id*: a short, stable string that
names the exact parameters a signature was made with.  Two signatures are comparable only
when their scheme ids are equal.

Guarantees: ``scheme_id`` is deterministic across processes and machines (it hashes a
canonical JSON rendering with xxh64, never Python's salted ``hash()``).
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Iterable
from typing import Any

import xxhash

from neardup.errors import ConfigError

__all__ = ["Config", "canonical_json", "check_choice", "check_int", "check_range"]


def check_range(
    name: str,
    value: float,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
) -> None:
    """Raise ``ConfigError`` naming the parameter when ``value`` is outside the range."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"{name} must be a number, got {type(value).__name__}")
    if value != value:  # NaN
        raise ConfigError(f"{name} must be a number, got NaN")
    if low is not None and (value <= low if low_open else value < low):
        bound = f"> {low}" if low_open else f">= {low}"
        raise ConfigError(f"{name} must be {bound}, got {value}")
    if high is not None and (value >= high if high_open else value > high):
        bound = f"< {high}" if high_open else f"<= {high}"
        raise ConfigError(f"{name} must be {bound}, got {value}")


def check_int(name: str, value: int, *, low: int | None = None, high: int | None = None) -> None:
    """Raise ``ConfigError`` unless ``value`` is an ``int`` (not ``bool``) within the range."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{name} must be an integer, got {type(value).__name__}")
    check_range(name, value, low=low, high=high)


def check_choice(name: str, value: object, choices: Iterable[object]) -> None:
    """Raise ``ConfigError`` unless ``value`` is one of ``choices``."""
    options = tuple(choices)
    if value not in options:
        listed = ", ".join(repr(c) for c in options)
        raise ConfigError(f"{name} must be one of {listed}, got {value!r}")


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, frozenset | set):
        return sorted(_plain(v) for v in value)
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    return value


def canonical_json(value: Any) -> str:
    """A canonical JSON rendering (sorted keys, sets sorted) of a config or plain value."""
    return json.dumps(_plain(value), sort_keys=True, separators=(",", ":"), ensure_ascii=True)


class Config:
    """Mixin for frozen config dataclasses: ``scheme_id`` and a dict rendering.

    Subclasses are ``@dataclasses.dataclass(frozen=True)`` and validate in
    ``__post_init__`` by raising ``ConfigError``.  ``SCHEME`` names the method (``"minhash"``)
    and ``VERSION`` is bumped whenever the bytes a config produces change.
    """

    SCHEME: str = "config"
    VERSION: int = 1

    def to_dict(self) -> dict[str, Any]:
        """The parameters as plain JSON-able values."""
        plain = _plain(self)
        if not isinstance(plain, dict):
            raise ConfigError(f"{type(self).__name__} is not a dataclass")
        return plain

    @functools.cached_property
    def scheme_id(self) -> str:
        """``"<scheme>/v<version>:<16 hex digits>"``: equal iff the parameters are equal."""
        digest = xxhash.xxh64_hexdigest(canonical_json(self).encode("ascii"), seed=0)
        return f"{self.SCHEME}/v{self.VERSION}:{digest}"
