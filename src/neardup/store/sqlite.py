"""The embedded SQLite store: one file, WAL journal, serialised writers.

Durability (its cost in ``benchmarks/bench_ingest.py`` and ``docs/stream.md``):

* ``synchronous=normal`` (default): in WAL mode a committed transaction is in the WAL file
  before ``COMMIT`` returns, so it survives the process being killed (``kill -9``,
  ``tests/test_durability.py``).  Only an OS crash or power loss can roll back the last
  transactions (never corrupting the file).
* ``synchronous=full``: the WAL is also fsync'ed at every commit, so commits survive power
  loss too, at the cost of one fsync per committed batch.

Choose with ``sqlite:///path.db?synchronous=full``.  Several processes may share one file:
writers serialise on ``BEGIN IMMEDIATE`` (waiting up to ``busy_timeout`` ms, default 30 s).

Reads: ``mmap_size`` (bytes, default 2 GiB, which SQLite caps at its build's maximum) maps
that much of the file into memory, so reading a candidate's row costs no ``read()`` call
(SQLite's memory-mapped I/O; its effect on ingest is measured in docs/stream.md).  The mapped
pages are the OS
page cache's, shared and reclaimable, but a process's resident size counts those it
touched.  ``mmap_size=0`` turns it off (then an I/O error reading the file is an error
code, not a signal).
"""

from __future__ import annotations

import sqlite3
import threading
import urllib.parse
from collections.abc import Sequence
from contextlib import suppress
from pathlib import Path
from typing import Any

from neardup.config import check_choice
from neardup.errors import ConfigError, StoreError
from neardup.store._sql import (
    _ARTICLE_TEXT_COLUMNS,
    MIGRATE_1_TO_2,
    SqlStoreBase,
    make_ddl,
    run_script,
)

__all__ = ["SQLiteStore"]

_DDL = make_ddl(seq="INTEGER PRIMARY KEY", integer="INTEGER", blob="BLOB")

_MMAP_SIZE = 1 << 31  # 2 GiB: bytes of the file read through a memory map (module docstring)

# MIGRATIONS[v] upgrades a store from schema version v to v + 1.
MIGRATIONS: dict[int, str] = {1: MIGRATE_1_TO_2.format(int="INTEGER")}

# Driver messages that mean damaged data rather than an unavailable store.
_CORRUPT = ("could not decode", "malformed", "not a database")


def parse_sqlite_url(url: str) -> tuple[str, dict[str, str]]:
    """A SQLite store URL or path -> ``(path, options)``, by the common convention.

    ``sqlite:///news.db`` is ``news.db`` relative to the current folder, ``sqlite:////var/
    news.db`` the absolute ``/var/news.db`` (three slashes, then the path), as in SQLAlchemy
    and most tools.  A plain path (``news.db``, ``/var/news.db``) means the same file.
    ``:memory:``, ``sqlite://`` and ``sqlite:///:memory:`` are an in-memory store.  Options
    follow ``?`` (``sqlite:///news.db?synchronous=full``).  ``sqlite://news.db`` (a host
    part) is refused with the two spellings that mean what was probably intended.
    """
    path = url
    query = ""
    if url.startswith("sqlite://"):
        rest, _, query = url[len("sqlite://") :].partition("?")
        if rest == "":
            rest = "/:memory:"
        if not rest.startswith("/"):
            raise ConfigError(
                f"SQLite store URL {url!r} has a host part; write sqlite:///{rest} for a file"
                f" relative to the current folder or sqlite:////{rest} for an absolute path"
            )
        path = urllib.parse.unquote(rest[1:])
    elif "?" in url and not Path(url).exists():
        path, _, query = url.partition("?")
    options = {k: v[-1] for k, v in urllib.parse.parse_qs(query).items()}
    if not path:
        raise ConfigError(f"SQLite store URL {url!r} names no file")
    return path, options


class SQLiteStore(SqlStoreBase):
    """A :class:`~neardup.store.Store` in one SQLite file (see the module docstring)."""

    def __init__(self, url: str, *, create: bool = True) -> None:
        self.url = url
        path, options = parse_sqlite_url(url)
        unknown = set(options) - {"synchronous", "busy_timeout", "mmap_size"}
        if unknown:
            raise ConfigError(f"unknown SQLite store option(s): {', '.join(sorted(unknown))}")
        self.synchronous = options.get("synchronous", "normal").lower()
        check_choice("synchronous", self.synchronous, ("normal", "full"))
        try:
            busy_ms = int(options.get("busy_timeout", "30000"))
        except ValueError as exc:
            raise ConfigError("busy_timeout must be an integer (milliseconds)") from exc
        try:
            self.mmap_size = int(options.get("mmap_size", str(_MMAP_SIZE)))
        except ValueError as exc:
            raise ConfigError("mmap_size must be an integer (bytes)") from exc
        if self.mmap_size < 0:
            raise ConfigError(f"mmap_size must be >= 0 bytes, got {self.mmap_size}")
        self.path = path
        if path != ":memory:" and not create and not Path(path).exists():
            raise StoreError(f"store {path!r} does not exist")
        self._lock = threading.RLock()
        self._depth = 0
        try:
            self._conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            self._conn.execute(f"PRAGMA busy_timeout = {busy_ms}")
            mode = self._conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if path != ":memory:" and str(mode).lower() != "wal":
                raise StoreError(f"store {path!r}: could not switch to WAL mode (got {mode})")
            self._conn.execute(f"PRAGMA synchronous = {self.synchronous.upper()}")
            self._conn.execute(f"PRAGMA mmap_size = {self.mmap_size}")
            self._init_schema()
            self.check_recent()
        except sqlite3.Error as exc:
            with suppress(Exception):
                self._conn.close()
            raise StoreError(f"cannot open SQLite store {path!r}: {exc}") from exc
        except BaseException:
            with suppress(Exception):
                self._conn.close()
            raise

    _db_error = sqlite3.Error

    @property
    def _label(self) -> str:
        return f"SQLite store {self.path!r}"

    def _init_schema(self) -> None:
        with self.write():
            run_script(_DDL, self._exec)
            self._check_version(MIGRATIONS, self._exec)

    def _insert_returning_seq(self, text: str, params: Sequence[Any]) -> int:
        cur = self._exec(text, params)
        return int(cur.lastrowid)

    def _input_problem(self, exc: BaseException) -> str | None:
        message = str(exc).lower()
        if isinstance(exc, sqlite3.DataError):
            return "too_large" if "too big" in message else "invalid"
        if isinstance(exc, sqlite3.DatabaseError) and any(m in message for m in _CORRUPT):
            return "corrupt"
        return None

    def _undecodable(self, where: str, params: Sequence[Any]) -> str | None:
        # Read the values stored as text as bytes (SQLite hands them over undecoded) and
        # decode them here.
        columns = ", ".join(
            f"CASE WHEN typeof({c}) = 'text' THEN CAST({c} AS BLOB) END"
            for c in _ARTICLE_TEXT_COLUMNS
        )
        try:
            rows = self._conn.execute(
                f"SELECT seq, {columns} FROM articles {where}", tuple(params)
            ).fetchall()
        except sqlite3.Error:
            return None
        bad: list[str] = []
        for seq, *values in rows:
            for name, value in zip(_ARTICLE_TEXT_COLUMNS, values, strict=True):
                try:
                    if value is not None:
                        bytes(value).decode("utf-8")
                except UnicodeDecodeError:
                    label = bytes(values[0] or b"").decode("utf-8", "replace")
                    bad.append(f"{label!r} (seq {seq}, column {name})")
                    break
        if not bad:
            return None
        return (
            f"{self._label}: stored bytes of article(s) {', '.join(bad[:10])} are not valid "
            "UTF-8 (the store is damaged); restore the store from a backup"
        )

    def _begin(self) -> None:
        self._exec("BEGIN IMMEDIATE")

    def _rollback(self, tx: None, exc: BaseException) -> None:
        self._conn.rollback()

    def _commit(self, tx: None) -> None:
        try:
            self._conn.execute("COMMIT")
        except sqlite3.Error as exc:
            self._conn.rollback()
            raise StoreError(f"{self._label}: commit failed: {exc}") from exc

    def close(self) -> None:
        """Close the connection (idempotent)."""
        with self._lock, suppress(sqlite3.Error):
            self._conn.close()
