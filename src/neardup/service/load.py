"""Preload a sample of real articles (Reuters-21578) into the service's store at start.

``neardup serve --preload N`` ingests the first ``N`` Reuters-21578 articles with a non-empty
body, in the corpus's chronological order, through the same ingest path as
``POST /v1/documents``; ingest is idempotent, so restarting with the same ``--preload`` adds
nothing twice.  The data is read in place (never copied) from ``preload_path`` when given
(only there), else the first that exists of ``$NEARDUP_DATA/reuters21578/docs.jsonl.gz``,
``../shared/data/...`` from the working directory, and the shared folder next to the source
checkout.
"""

from __future__ import annotations

import gzip
import json
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from neardup.errors import InputError, NotFoundError
from neardup.records import Article

__all__ = ["find_reuters", "iter_reuters", "preload"]

log = logging.getLogger("neardup.service")

_RELATIVE = Path("reuters21578") / "docs.jsonl.gz"


def find_reuters(path: str | None = None) -> Path:
    """The Reuters ``docs.jsonl.gz`` to preload from; ``NotFoundError`` naming where it looked."""
    candidates: list[Path] = []
    if path:
        # A path the user gave is the only place to look: never silently use another file.
        given = Path(path)
        candidate = given / _RELATIVE if given.is_dir() else given
        if not candidate.is_file():
            raise NotFoundError(f"Reuters-21578 data for --preload not found at {candidate}")
        return candidate
    env = os.environ.get("NEARDUP_DATA")
    if env:
        candidates.append(Path(env) / _RELATIVE)
    candidates.append(Path.cwd().parent / "shared" / "data" / _RELATIVE)
    candidates.append(Path(__file__).resolve().parents[4] / "shared" / "data" / _RELATIVE)
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    looked = ", ".join(str(c) for c in candidates)
    raise NotFoundError(f"Reuters-21578 data for --preload not found (looked in: {looked})")


def iter_reuters(path: Path, limit: int) -> Iterator[Article]:
    """The first ``limit`` articles of ``path`` whose text is not blank (BRIEF items are)."""
    count = 0
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for number, line in enumerate(fh, 1):
            if count >= limit:
                return
            try:
                data: Any = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(f"{path}:{number}: not JSON: {exc}") from exc
            article = Article.from_mapping(data)
            if not article.text.strip():
                continue
            count += 1
            yield article


def preload(backend: Any, limit: int, path: str | None = None, batch: int = 500) -> int:
    """Ingest ``limit`` real articles through ``backend``; returns how many were ingested."""
    source = find_reuters(path)
    done = 0
    chunk: list[Article] = []
    for article in iter_reuters(source, limit):
        chunk.append(article)
        if len(chunk) >= batch:
            backend.ingest(chunk)
            done += len(chunk)
            chunk = []
    if chunk:
        backend.ingest(chunk)
        done += len(chunk)
    log.info("preloaded %d Reuters articles from %s", done, source)
    return done
