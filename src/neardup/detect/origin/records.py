"""Output records of origin detection: :class:`Segment` and :class:`OriginReport` (frozen)."""

from __future__ import annotations

import dataclasses
from typing import Any

__all__ = ["OriginReport", "Segment", "ShingleOrigins"]


@dataclasses.dataclass(frozen=True, slots=True)
class Segment:
    """A maximal run of tokens ``text[start:end]`` that is copied from ``origin`` or novel.

    ``start``/``end`` are character offsets into the document's original text, from the
    first token's start to the last token's end; a novel segment has ``copied=False`` and
    the document's own id as ``origin``.
    """

    start: int
    end: int
    origin: str
    copied: bool

    def to_dict(self) -> dict[str, Any]:
        """``{"start", "end", "origin"}`` (the CLI's row format) plus ``copied``."""
        return {"start": self.start, "end": self.end, "origin": self.origin, "copied": self.copied}


@dataclasses.dataclass(frozen=True, slots=True, eq=False)
class ShingleOrigins:
    """The origin of every looked-up shingle of a report, kept as arrays until asked for."""

    starts: Any
    ends: Any
    origins: Any
    names: dict[int, str]

    def as_tuples(self) -> tuple[tuple[int, int, str], ...]:
        """``(start token, end token, origin id)`` per shingle."""
        names = self.names
        return tuple(
            (s, e, names[o])
            for s, e, o in zip(
                self.starts.tolist(), self.ends.tolist(), self.origins.tolist(), strict=True
            )
        )


@dataclasses.dataclass(frozen=True, slots=True)
class OriginReport:
    """What origin detection says about one document (seed 004, Sections 2 and 3.2).

    ``dominant_origin`` is the id of the document most of the selected shingles come from
    when it leads every other origin by at least 10 % (the document's own id when it is
    mostly original), else ``None``; ``most_copied_origin`` is the plain arg-max.
    ``fresh_tokens`` counts tokens not covered by any copied shingle; ``copied_fraction`` is
    ``1 - fresh_tokens / tokens`` (0.0 for a document without tokens).  ``shingle_origins``
    gives, per looked-up shingle in order, its token range and origin id.
    """

    id: str
    tokens: int
    fresh_tokens: int
    copied_fraction: float
    dominant_origin: str | None
    most_copied_origin: str
    segments: tuple[Segment, ...]
    selected_shingles: int
    total_shingles: int
    shingles: ShingleOrigins | None = dataclasses.field(default=None, compare=False, repr=False)

    @property
    def shingle_origins(self) -> tuple[tuple[int, int, str], ...]:
        """Per looked-up shingle in order: its token range ``[start, end)`` and origin id."""
        return () if self.shingles is None else self.shingles.as_tuples()

    @property
    def copied_segments(self) -> tuple[Segment, ...]:
        """Only the copied segments."""
        return tuple(s for s in self.segments if s.copied)

    def to_dict(self) -> dict[str, Any]:
        """The CLI's JSON row."""
        return {
            "id": self.id,
            "dominant_origin": self.dominant_origin,
            "most_copied_origin": self.most_copied_origin,
            "copied_fraction": round(self.copied_fraction, 6),
            "segments": [
                {"start": s.start, "end": s.end, "origin": s.origin} for s in self.segments
            ],
            "tokens": self.tokens,
            "fresh_tokens": self.fresh_tokens,
        }
