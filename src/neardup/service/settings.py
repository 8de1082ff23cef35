"""Frozen, validated settings of ``neardup serve`` (:class:`ServiceSettings`).

Every limit the service enforces lives here with its default, so the documentation, the CLI
and the tests read one source.  Settings travel to uvicorn worker processes as canonical JSON
in the environment variable :data:`SETTINGS_ENV` (see :meth:`ServiceSettings.to_env` and
:func:`neardup.service.app.create_app_from_env`), because ``uvicorn --workers N`` starts each
worker from an import string and cannot pass Python objects.
"""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Any

from neardup.config import Config, check_int, check_range
from neardup.errors import ConfigError

__all__ = ["SETTINGS_ENV", "ServiceSettings"]

#: Environment variable carrying the settings (canonical JSON) to uvicorn worker processes.
SETTINGS_ENV = "NEARDUP_SERVICE_SETTINGS"


@dataclasses.dataclass(frozen=True)
class ServiceSettings(Config):
    """Parameters of the HTTP service.

    ``store``: a store path or URL (``news.db``, ``sqlite:///news.db`` relative to the current
    folder, ``sqlite:////abs/news.db``, or ``postgresql://...``); ``./neardup.db`` by default,
    the same store ``neardup ingest`` and :class:`~neardup.api.NewsIndex` use.
    ``host``/``port``: the listening socket; the default binds to loopback only.
    ``workers``: uvicorn worker processes.  Each keeps its own in-memory indexes and catches
    up from the store's log before deciding, inside the store's write lock, so N workers
    decide as one; PostgreSQL is the store meant for that (SQLite serialises them too, on
    one machine, with one writer at a time).
    ``token``: when set, every write (``POST /v1/documents``) must carry
    ``Authorization: Bearer <token>`` (or ``X-API-Token``); reads stay open.
    ``preload``: number of sample articles ingested at start (0 = none): Reuters-21578 read
    from ``preload_path`` or the shared data folder, else the synthetic sample corpus (see
    :mod:`neardup.service.load`).
    Limits: ``max_body_bytes`` per request body (413 above), ``body_timeout_seconds`` for a
    whole body to arrive (408 after), ``max_pending_body_bytes`` for all bodies being read
    or processed at once (503 with ``Retry-After`` above), ``max_text_chars`` per text
    (413 above), ``max_batch`` articles per ``POST /v1/documents``, ``max_result_set`` items
    per ``POST /v1/dedup`` (1,000) and ``max_dedup_chars`` characters of text to sign in one
    (413 above; ~1 s of signing), ``max_similar`` results per similar query.
    ``signature_cache``: stored result-set signatures kept decoded in memory (LRU entries per
    scheme).
    ``origin_memory_bytes``: the origin detector's fixed table (seed 004); 32 MiB holds every
    selected shingle of all of Reuters-21578, and a pasted-text query copies it once.
    """

    SCHEME = "service"

    store: str = "neardup.db"
    host: str = "127.0.0.1"
    port: int = 8000
    workers: int = 1
    token: str | None = None
    preload: int = 0
    preload_path: str | None = None
    max_body_bytes: int = 16 * 1024 * 1024
    body_timeout_seconds: float = 30.0
    max_pending_body_bytes: int = 256 * 1024 * 1024
    max_text_chars: int = 1_000_000
    max_batch: int = 1000
    max_result_set: int = 1000
    max_dedup_chars: int = 4_000_000
    max_similar: int = 100
    signature_cache: int = 1_000_000
    origin_memory_bytes: int = 32 * 1024 * 1024
    log_level: str = "warning"

    def __post_init__(self) -> None:
        if not isinstance(self.store, str) or not self.store.strip():
            raise ConfigError("store must be a non-empty store URL or path")
        if not isinstance(self.host, str) or not self.host:
            raise ConfigError("host must be a non-empty string")
        check_int("port", self.port, low=0, high=65535)
        check_int("workers", self.workers, low=1, high=64)
        if self.token is not None and (not isinstance(self.token, str) or len(self.token) < 8):
            raise ConfigError("token must be a string of at least 8 characters")
        check_int("preload", self.preload, low=0, high=10_000_000)
        check_int("max_body_bytes", self.max_body_bytes, low=1024, high=1 << 31)
        check_range(
            "body_timeout_seconds", self.body_timeout_seconds, low=0.0, high=3600.0, low_open=True
        )
        check_int("max_pending_body_bytes", self.max_pending_body_bytes, low=1024, high=1 << 40)
        check_int("max_dedup_chars", self.max_dedup_chars, low=1, high=1 << 31)
        check_int("max_text_chars", self.max_text_chars, low=1, high=1 << 30)
        check_int("max_batch", self.max_batch, low=1, high=100_000)
        check_int("max_result_set", self.max_result_set, low=1, high=100_000)
        check_int("max_similar", self.max_similar, low=1, high=10_000)
        check_int("signature_cache", self.signature_cache, low=0, high=1 << 30)
        check_int("origin_memory_bytes", self.origin_memory_bytes, low=1 << 16, high=1 << 40)
        if self.log_level not in ("critical", "error", "warning", "info", "debug", "trace"):
            raise ConfigError(f"log_level {self.log_level!r} is not a uvicorn log level")

    @property
    def is_postgres(self) -> bool:
        """True when the store URL names a PostgreSQL server."""
        return self.store.startswith(("postgresql://", "postgres://"))

    def to_env(self) -> str:
        """Canonical JSON for :data:`SETTINGS_ENV` (includes the token: keep the env private)."""
        return json.dumps(dataclasses.asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> ServiceSettings:
        """Inverse of :meth:`to_env`; ``ConfigError`` on unknown keys or bad values."""
        try:
            data: Any = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{SETTINGS_ENV} is not valid JSON: {exc}") from exc
        if not isinstance(data, dict):
            raise ConfigError(f"{SETTINGS_ENV} must hold a JSON object")
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(f"unknown service settings: {', '.join(unknown)}")
        return cls(**data)

    @classmethod
    def from_environ(cls) -> ServiceSettings:
        """Settings from :data:`SETTINGS_ENV`, or the defaults when it is unset."""
        raw = os.environ.get(SETTINGS_ENV)
        return cls() if raw is None else cls.from_json(raw)
