"""The stream's candidate search: which stored articles to judge against a new one.

Two sources, both exact indexes that know no rule (the rule decides afterwards):

* **shared passages** (:class:`~neardup.index.passages.PassageIndex`): the winnowed
  fingerprints of each article's prose shingles (:func:`passage_fingerprints`); every stored
  article sharing a run of ``passage_window + 3`` words of prose with the new one shares a
  fingerprint with it (Schleimer et al. 2003), so copies, write-thrus, truncated reprints and
  excerpts are all reached, whatever their lengths;
* **same story** (:class:`~neardup.index.story.StoryIndex`, kept by
  :mod:`neardup.detect.stream.stories`): the stored articles whose story vectors are
  nearest to the new one's within the story window, for reports of the same story that
  share no passage (seed 003's similar news).

The passage candidates sharing the most fingerprints (then by seq), at most
``max_verified``, and the first ``story_candidates`` story neighbours are judged: an
approximation, whose recall (pairs the rule relates that no candidate reaches) is measured
in docs/evaluation.md.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from neardup.detect.stream.config import CandidateConfig
from neardup.index.passages import PassageIndex
from neardup.index.story import StoryHit
from neardup.rule import Profile
from neardup.rule.junk import FURNITURE
from neardup.sketch.winnowing import winnow

__all__ = ["Candidate", "CandidateIndexes", "passage_fingerprints"]

U64 = npt.NDArray[np.uint64]


def passage_fingerprints(profile: Profile, window: int) -> U64:
    """Winnowed hashes of the prose shingles of ``profile`` (of all its shingles when it has
    no prose: a page of captions is still found by its exact copies)."""
    shingles = profile.shingles
    m = shingles.shape[0]
    if not m:
        return np.zeros(0, dtype=np.uint64)
    prose = (profile.flags[:m] & FURNITURE) == 0  # a shingle is prose when its first word is
    values = shingles[prose] if prose.any() else shingles
    return winnow(values, window)


@dataclasses.dataclass(frozen=True, slots=True)
class Candidate:
    """A stored article to judge: its seq, shared passage fingerprints (0 when it came from
    the story index only) and story similarity (``None`` when it came from the passage
    index only)."""

    seq: int
    shared: int
    story: float | None


class CandidateIndexes:
    """The in-memory passage index of one stream (state rebuilt from the store's log)."""

    def __init__(self, config: CandidateConfig) -> None:
        self.config = config
        self.passages = PassageIndex(max_postings=config.max_postings)

    def __len__(self) -> int:
        return len(self.passages)

    def __contains__(self, seq: object) -> bool:
        return seq in self.passages

    def add(self, seq: int, passages: U64) -> None:
        """Index a stored article."""
        self.passages.add(seq, passages)

    def add_many(self, seqs: list[int], passages: list[U64]) -> None:
        """Index stored articles in order."""
        for seq, fps in zip(seqs, passages, strict=True):
            self.passages.add(seq, fps)

    def query(
        self,
        passages: U64,
        story: Sequence[StoryHit] = (),
        exclude: int = -1,
        story_limit: int | None = None,
    ) -> list[Candidate]:
        """Candidates for an article: the passage candidates (most shared first, at most
        ``max_verified``), then the first ``story_limit`` (default ``story_candidates``)
        story neighbours not already among them."""
        keys, shared = self.passages.query(passages, exclude=exclude)
        cut = self.config.max_verified
        counts = dict(zip(keys[:cut].tolist(), shared[:cut].tolist(), strict=True))
        similarity = {int(h.key): h.similarity for h in story}
        seqs = self._select(keys, [int(h.key) for h in story], exclude, story_limit)
        return [
            Candidate(q, counts[q], None) if q in counts else Candidate(q, 0, similarity[q])
            for q in seqs
        ]

    def query_seqs(
        self,
        passages: U64,
        story: Sequence[int] = (),
        exclude: int = -1,
        story_limit: int | None = None,
    ) -> list[int]:
        """The seqs of :meth:`query`'s candidates, in its order (``story``: the story
        neighbours' seqs), without an object per candidate."""
        keys, _ = self.passages.query(passages, exclude=exclude)
        return self._select(keys, story, exclude, story_limit)

    def _select(
        self, keys: npt.NDArray[np.int64], story: Sequence[int], exclude: int, limit: int | None
    ) -> list[int]:
        # ``keys``: the passage index's answer, most shared first then by seq.
        out: list[int] = keys[: self.config.max_verified].tolist()
        limit = self.config.story_candidates if limit is None else limit
        if not story or limit <= 0:
            return out
        seen = set(out)
        taken = 0
        for seq in story:
            if taken >= limit:
                break
            if seq == exclude:
                continue
            taken += 1
            if seq in seen:
                continue
            seen.add(seq)
            out.append(seq)
        return out

    def state(self) -> dict[str, npt.NDArray[Any]]:
        """Arrays for a checkpoint (see :meth:`load_state`)."""
        return self.passages.state()

    def load_state(self, arrays: dict[str, npt.NDArray[Any]]) -> None:
        """Restore :meth:`state` into an empty index."""
        self.passages.load_state(arrays)

    def snapshot(self) -> list[int]:
        """Comparable contents (passage keys) for consistency checks."""
        return sorted(self.passages.keys())
