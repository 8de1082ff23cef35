"""Event reports: the members in date order marked first / copy / independent, the first
publisher, the sources, the growth curve and a readable title (the member title closest to
the event's centroid)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence

import numpy as np

from neardup.detect.story.records import (
    COPY_KINDS,
    EventArticle,
    EventReport,
    Judge,
    KeptArticle,
    StoryEvent,
)
from neardup.index._common import Key
from neardup.rule import Profile, RuleConfig, profile
from neardup.sketch.story import StoryVector

__all__ = ["event_report", "event_title"]

_US = 1_000_000

VectorOf = Callable[[Profile], StoryVector]


def event_report(
    event: StoryEvent,
    members: Sequence[Key],
    metas: Sequence[KeptArticle],
    judge: Judge | None,
    candidates: int,
    title: str | None,
    growth_bucket_seconds: float,
) -> EventReport:
    """The report of ``event`` whose ``members`` (in date order) are kept as ``metas``.
    With a ``judge`` (on keys), each member after the first is compared with its
    ``candidates`` most story-similar earlier members: the first ``duplicate``/``partial``
    verdict marks it a copy of that member, none marks it independent."""
    kinds: list[tuple[str, Key | None]]
    if judge is None:
        kinds = [("first", None), *[("unjudged", None)] * (len(members) - 1)]
    else:
        kinds = _copy_marks(members, metas, judge, candidates)
    name = {k: m.name for k, m in zip(members, metas, strict=True)}
    articles = tuple(
        EventArticle(m.name, m.date_us, m.source, m.title, kind, None if of is None else name[of])
        for m, (kind, of) in zip(metas, kinds, strict=True)
    )
    counts: dict[str, int] = {}
    for m in metas:
        if m.source:
            counts[m.source] = counts.get(m.source, 0) + 1
    sources = tuple(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    first_publisher = (metas[0].source or metas[0].name) if metas else None
    copies = independent = None
    if judge is not None:
        copies = sum(1 for a in articles if a.kind == "copy")
        independent = sum(1 for a in articles if a.kind == "independent")
    return EventReport(
        event.id,
        title,
        event.opened_by,
        event.opened_at_us,
        articles,
        first_publisher,
        sources,
        _growth([m.date_us for m in metas], growth_bucket_seconds),
        copies,
        independent,
    )


def event_title(metas: Sequence[KeptArticle], rule: RuleConfig, vector_of: VectorOf) -> str | None:
    """The member title (or title segment) whose story vector is closest to the event's
    centroid; ``None`` when no member has a title with content words."""
    if not metas:
        return None
    centroid = np.mean([m.values for m in metas], axis=0).astype(np.float32)
    norm = float(np.linalg.norm(centroid))
    best: tuple[float, str] | None = None
    seen: set[str] = set()
    # A title is one short paragraph: the rule's paragraph cue must not drop it.
    rule = dataclasses.replace(rule, min_paragraph_tokens=0)
    for m in metas:
        for candidate in _title_segments(m.title):
            if candidate in seen:
                continue
            seen.add(candidate)
            vec = vector_of(profile(candidate, rule))
            if vec.is_empty or norm == 0.0:
                continue
            score = float(np.dot(vec.values, centroid)) / (
                norm * math.sqrt(float(np.dot(vec.values, vec.values)))
            )
            if best is None or score > best[0]:
                best = (score, candidate)
    return best[1] if best is not None else None


def _title_segments(title: str | None) -> list[str]:
    """A title and its parts around site-name separators (" | ", " - ", " :: ")."""
    if not title or not title.strip():
        return []
    text = " ".join(title.split())
    parts = [text]
    for sep in (" | ", " - ", " \u2014 ", " \u2013 ", " :: "):
        if sep in text:
            parts.extend(p.strip() for p in text.split(sep) if p.strip())
    return parts


def _copy_marks(
    members: Sequence[Key], metas: Sequence[KeptArticle], judge: Judge, candidates: int
) -> list[tuple[str, Key | None]]:
    fps = np.array([m.fingerprint for m in metas], dtype=np.uint64)
    marks: list[tuple[str, Key | None]] = [("first", None)]
    for n in range(1, len(members)):
        dist = np.bitwise_count(fps[:n] ^ fps[n]).sum(axis=1)
        order = np.lexsort((np.arange(n), dist))[:candidates]
        mark: tuple[str, Key | None] = ("independent", None)
        for j in order.tolist():
            if judge(members[j], members[n]) in COPY_KINDS:
                mark = ("copy", members[j])
                break
        marks.append(mark)
    return marks


def _growth(dates: list[int], bucket_seconds: float) -> tuple[tuple[float, int], ...]:
    if not dates:
        return ()
    step = round(bucket_seconds * _US)
    start = min(dates)
    counts: dict[int, int] = {}
    for d in dates:
        b = (d - start) // step
        counts[b] = counts.get(b, 0) + 1
    out: list[tuple[float, int]] = []
    total = 0
    for b in sorted(counts):
        total += counts[b]
        out.append(((b + 1) * step / 3600 / _US, total))
    return tuple(out)
