"""What the stream returns: a :class:`Decision` per article, with its :class:`Match` evidence."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import orjson

__all__ = ["STATUSES", "Decision", "Match"]

# An article's status is the strongest verdict among its matches ("new" when none).
STATUSES = ("new", "duplicate", "partial", "similar")


@dataclasses.dataclass(frozen=True, slots=True)
class Match:
    """One stored article the new (or queried) article was judged against.

    ``verdict``: the rule's ``duplicate``, ``partial`` or ``similar``; ``score``: the
    rule's ranking score; ``coverage``: the share of the new article's prose found in the
    stored one; ``coverage_other``: the share of the stored article's prose found in the new
    one; ``passage``: the longest shared run of narrative words; ``cosine``: the content-word
    cosine; ``distance``: the SimHash Hamming distance (seed 003's fingerprint).
    """

    id: str
    verdict: str
    score: float
    coverage: float
    coverage_other: float
    passage: int
    cosine: float
    distance: int

    def to_dict(self) -> dict[str, Any]:
        # Spelled out: dataclasses.asdict deep-copies and costs ~10 us a match at ingest.
        return {
            "id": self.id,
            "verdict": self.verdict,
            "score": self.score,
            "coverage": self.coverage,
            "coverage_other": self.coverage_other,
            "passage": self.passage,
            "cosine": self.cosine,
            "distance": self.distance,
        }


@dataclasses.dataclass(frozen=True, slots=True)
class Decision:
    """The decision for one ingested article, with its evidence.

    * ``status``: ``new``, ``duplicate``, ``partial`` or ``similar`` (the strongest verdict
      among the matches);
    * ``duplicate_of``: the original (earliest article) of the duplicate group it joined,
      or, when it duplicates no group's original, the stored article it duplicates best (it
      then heads a group of its own; :mod:`neardup.detect.stream.groups`);
    * ``similar``: the other matches, best first (at most ``similar_limit``);
    * ``matches``: the evidence: the duplicates (at most ``similar_limit + 1``), then
      ``similar``;
    * ``event``: the breaking event it belongs to;
    * ``took_over``: ids that now point at this article as their original (it is earlier
      than the group it duplicates);
    * ``merged``: originals of other groups this article bridged into its group because
      their originals duplicate each other (they and their members now point at
      ``duplicate_of``, or at this article when it took over);
    * ``replayed``: ``True`` when this is the stored decision returned again for an
      idempotent re-ingest.
    """

    id: str
    status: str
    duplicate_of: str | None = None
    similar: tuple[Match, ...] = ()
    matches: tuple[Match, ...] = ()
    event: str | None = None
    took_over: tuple[str, ...] = ()
    merged: tuple[str, ...] = ()
    replayed: bool = False

    def to_dict(self, *, evidence: bool = True) -> dict[str, Any]:
        """The CLI's JSON object; ``evidence`` adds ``matches``, ``took_over``, ``merged``
        and ``replayed``."""
        out: dict[str, Any] = {
            "id": self.id,
            "status": self.status,
            "duplicate_of": self.duplicate_of,
            "similar": [
                {"id": m.id, "verdict": m.verdict, "score": round(m.score, 6)} for m in self.similar
            ],
            "event": self.event,
        }
        if evidence:
            out["matches"] = [m.to_dict() for m in self.matches]
            out["took_over"] = list(self.took_over)
            out["merged"] = list(self.merged)
            out["replayed"] = self.replayed
        return out

    def to_json(self) -> str:
        """Compact JSON, keys sorted (UTF-8 text, shortest round-trip floats)."""
        return orjson.dumps(self.to_dict(), option=orjson.OPT_SORT_KEYS).decode()

    @classmethod
    def from_json(cls, text: str, *, replayed: bool = False) -> Decision:
        """Read :meth:`to_json`."""
        data = json.loads(text)
        matches = tuple(Match(**m) for m in data["matches"])
        by_id = {m.id: m for m in matches}
        return cls(
            id=data["id"],
            status=data["status"],
            duplicate_of=data["duplicate_of"],
            similar=tuple(by_id[s["id"]] for s in data["similar"]),
            matches=matches,
            event=data["event"],
            took_over=tuple(data["took_over"]),
            merged=tuple(data.get("merged", ())),
            replayed=replayed,
        )
