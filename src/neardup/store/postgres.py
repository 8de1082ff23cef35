"""The PostgreSQL store (psycopg 3), for deployments with several service processes.

URL: ``postgresql://user@host:port/db?schema=name`` (``schema`` defaults to ``neardup``; every
table lives in it, so one database can hold several independent stores).

Concurrency: :meth:`PostgresStore.write` opens a transaction and takes a transaction-scoped
advisory lock keyed by the schema name (``pg_advisory_xact_lock``), so writers of one store
are serialised.  A stream ingests inside that lock after replaying the log entries other
processes appended, so its check-then-insert sees every earlier acknowledged article: the
decisions are the same as with one process.  Commits are durable per the server's own
settings (``synchronous_commit=on`` by default).
"""

from __future__ import annotations

import re
import threading
import urllib.parse
from collections.abc import Sequence
from contextlib import suppress
from typing import Any

import xxhash

from neardup.errors import ConfigError, StoreError
from neardup.store._sql import MIGRATE_1_TO_2, SqlStoreBase, make_ddl, run_script

__all__ = ["PostgresStore", "drop_schema"]

_DDL = make_ddl(seq="BIGSERIAL PRIMARY KEY", integer="BIGINT", blob="BYTEA")

MIGRATIONS: dict[int, str] = {1: MIGRATE_1_TO_2.format(int="BIGINT")}

_SCHEMA_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")


def _split_url(url: str) -> tuple[str, str]:
    parts = urllib.parse.urlsplit(url)
    query = urllib.parse.parse_qs(parts.query)
    schema = query.pop("schema", ["neardup"])[-1]
    if not _SCHEMA_RE.match(schema):
        raise ConfigError(f"PostgreSQL schema name must be an identifier, got {schema!r}")
    rest = urllib.parse.urlencode({k: v[-1] for k, v in query.items()})
    conninfo = urllib.parse.urlunsplit(parts._replace(query=rest))
    return conninfo, schema


def _lock_key(schema: str) -> int:
    # A stable signed 64-bit key (never Python's salted hash()).
    value = xxhash.xxh64_intdigest(f"neardup-store:{schema}".encode(), seed=0)
    return value - (1 << 64) if value >= 1 << 63 else value


def drop_schema(url: str) -> None:
    """Drop the store's schema and everything in it (tests and tear-down)."""
    import psycopg

    conninfo, schema = _split_url(url)
    try:
        with psycopg.connect(conninfo, autocommit=True, connect_timeout=5) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    except psycopg.Error as exc:
        raise StoreError(f"cannot drop PostgreSQL schema {schema!r}: {exc}") from exc


class PostgresStore(SqlStoreBase):
    """A :class:`~neardup.store.Store` in a PostgreSQL schema (see the module docstring)."""

    def __init__(self, url: str, *, create: bool = True) -> None:
        import psycopg

        self._psycopg = psycopg
        self._db_error = psycopg.Error
        self.url = url
        conninfo, self.schema = _split_url(url)
        self._key = _lock_key(self.schema)
        self._lock = threading.RLock()
        self._depth = 0
        try:
            self._conn = psycopg.connect(conninfo, autocommit=True, connect_timeout=10)
        except psycopg.Error as exc:
            raise StoreError(f"cannot connect to PostgreSQL store: {exc}") from exc
        try:
            with self.write():
                exists = self._conn.execute(
                    "SELECT 1 FROM pg_namespace WHERE nspname = %s", (self.schema,)
                ).fetchone()
                if exists is None and not create:
                    raise StoreError(f"PostgreSQL store schema {self.schema!r} does not exist")
                self._conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{self.schema}"')
                self._conn.execute(f'SET search_path TO "{self.schema}"')
                run_script(_DDL, self._conn.execute)
                self._check_version(MIGRATIONS, self._conn.execute)
            self._conn.execute(f'SET search_path TO "{self.schema}"')
            self.check_recent()
        except psycopg.Error as exc:
            self._conn.close()
            raise StoreError(f"cannot initialise PostgreSQL store: {exc}") from exc
        except BaseException:
            self._conn.close()
            raise

    @property
    def _label(self) -> str:
        return f"PostgreSQL store {self.schema!r}"

    def _sql(self, text: str) -> str:
        return text.replace("?", "%s")

    def _insert_returning_seq(self, text: str, params: Sequence[Any]) -> int:
        row = self._fetchone(text + " RETURNING seq", params)
        return int(row[0])

    def _input_problem(self, exc: BaseException) -> str | None:
        errors = self._psycopg.errors
        if isinstance(exc, errors.ProgramLimitExceeded | errors.StringDataRightTruncation):
            return "too_large"  # e.g. a key too long for its index
        if isinstance(exc, errors.DataCorrupted | errors.IndexCorrupted):
            return "corrupt"
        if isinstance(exc, self._psycopg.DataError):
            return "invalid"  # NUL in text (refused by the driver), out-of-range numbers
        return None

    def _begin(self) -> Any:
        try:
            tx = self._conn.transaction()
            tx.__enter__()
        except self._psycopg.Error as exc:
            raise StoreError(f"{self._label}: {exc}") from exc
        try:
            self._conn.execute("SELECT pg_advisory_xact_lock(%s)", (self._key,))
        except BaseException as exc:
            self._rollback(tx, exc)
            raise
        return tx

    def _rollback(self, tx: Any, exc: BaseException) -> None:
        with suppress(self._psycopg.Error):
            tx.__exit__(type(exc), exc, exc.__traceback__)
        if isinstance(exc, self._psycopg.Error):
            raise StoreError(f"{self._label}: {exc}") from exc

    def _commit(self, tx: Any) -> None:
        try:
            tx.__exit__(None, None, None)
        except self._psycopg.Error as exc:
            raise StoreError(f"{self._label}: commit failed: {exc}") from exc

    def close(self) -> None:
        """Close the connection (idempotent)."""
        with self._lock:
            self._conn.close()
