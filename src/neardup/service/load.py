"""Preload sample articles into the service's store at start (``neardup serve --preload N``).

The first ``N`` Reuters-21578 articles with a non-empty body, in the corpus's chronological
order, when that data is found: at ``preload_path`` when given (only there), else the first
that exists of ``$NEARDUP_DATA/reuters21578/docs.jsonl.gz``, ``../shared/data/...`` from the
working folder, and the shared folder beside the source checkout.  When none is found (and
no path was given), the synthetic sample corpus neardup ships (:mod:`neardup.samples`: a
breaking story with its reprints, copies and a round-up with copied passages) is loaded
instead, and :class:`Preloaded` says so.  Both go through the same ingest path as
``POST /v1/documents``; ingest is idempotent, so restarting with the same ``--preload`` adds
nothing twice.  The data is read in place, never copied.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from collections.abc import Iterable, Iterator
from pathlib import Path

from neardup.errors import InputError, NotFoundError
from neardup.records import Article

__all__ = ["Preloaded", "find_reuters", "iter_reuters", "preload", "reuters_candidates"]

log = logging.getLogger("neardup.service")

_RELATIVE = Path("reuters21578") / "docs.jsonl.gz"


@dataclasses.dataclass(frozen=True)
class Preloaded:
    """What a preload did: ``count`` articles from ``source`` (a file, or the sample corpus,
    in which case ``looked_in`` lists where Reuters-21578 was looked for)."""

    count: int
    source: str
    sample: bool = False
    looked_in: tuple[str, ...] = ()

    def describe(self) -> str:
        """One line for the console."""
        if not self.sample:
            return f"preloaded {self.count} Reuters-21578 articles from {self.source}"
        return (
            f"preloaded the {self.count} articles of the synthetic sample corpus (Reuters-21578"
            f" not found in {', '.join(self.looked_in)}; with that data present, or"
            " --preload-path FILE, --preload loads real Reuters articles)"
        )


def reuters_candidates() -> list[Path]:
    """Where the Reuters sample is looked for, in order (:func:`neardup.samples.data_folders`)."""
    from neardup.samples import data_folders

    return [folder / _RELATIVE for folder in data_folders()]


def find_reuters(path: str | None = None) -> Path:
    """The Reuters ``docs.jsonl.gz`` to preload from; ``NotFoundError`` naming where it looked."""
    if path:
        # A path the user gave is the only place to look: never silently use another file.
        given = Path(path)
        candidate = given / _RELATIVE if given.is_dir() else given
        if not candidate.is_file():
            raise NotFoundError(f"Reuters-21578 data for --preload not found at {candidate}")
        return candidate
    candidates = reuters_candidates()
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    looked = ", ".join(str(c) for c in candidates)
    raise NotFoundError(f"Reuters-21578 data for --preload not found (looked in: {looked})")


def iter_reuters(path: Path, limit: int) -> Iterator[Article]:
    """The first ``limit`` articles of ``path`` whose text is not blank (BRIEF items are).

    The file is JSON Lines, plain or gzip (:func:`neardup.batch.io.read_lines`): a malformed
    line or a damaged gzip stream is ``InputError``, a file that cannot be read
    ``StoreError``."""
    from neardup.batch.io import check_object, parse_json_line, read_lines
    from neardup.records import FieldNames

    fields = FieldNames()
    count = 0
    with contextlib.closing(read_lines(path)) as lines:
        for number, line in lines:
            if count >= limit:
                return
            data = parse_json_line(line)
            if data is None:
                continue
            try:
                article = check_object(data, fields)
            except InputError as exc:
                raise InputError(f"{path}:{number}: {exc}") from exc
            if not article.text.strip():
                continue
            count += 1
            yield article


def _ingest(backend: object, articles: Iterable[Article], batch: int) -> int:
    done = 0
    chunk: list[Article] = []
    for article in articles:
        chunk.append(article)
        if len(chunk) >= batch:
            backend.ingest(chunk)  # type: ignore[attr-defined]
            done += len(chunk)
            chunk = []
    if chunk:
        backend.ingest(chunk)  # type: ignore[attr-defined]
        done += len(chunk)
    return done


def preload(backend: object, limit: int, path: str | None = None, batch: int = 500) -> Preloaded:
    """Ingest ``limit`` sample articles through ``backend`` (see the module docstring)."""
    try:
        source = find_reuters(path)
    except NotFoundError:
        if path:
            raise
        from neardup.samples import sample_corpus

        rows = sample_corpus()[:limit]
        done = _ingest(backend, (Article.from_mapping(r) for r in rows), batch)
        looked = tuple(str(c) for c in reuters_candidates())
        result = Preloaded(done, "the synthetic sample corpus", sample=True, looked_in=looked)
    else:
        done = _ingest(backend, iter_reuters(source, limit), batch)
        result = Preloaded(done, str(source))
    log.info("%s", result.describe())
    return result
