"""The stream's candidate search: which stored articles to judge against a new one.

Two sources, both exact indexes that know no rule (the rule decides afterwards):

* **shared passages** (:class:`~neardup.index.passages.PassageIndex`): the winnowed
  fingerprints of each article's prose shingles (:func:`passage_fingerprints`); every stored
  article sharing a run of ``passage_window + 3`` words of prose with the new one shares a
  fingerprint with it (Schleimer et al. 2003), so copies, write-thrus, truncated reprints and
  excerpts are all reached, whatever their lengths;
* **near fingerprints** (:class:`~neardup.index.hamming.HammingIndex`): stored articles whose
  64-bit SimHash is within ``similar_max_distance`` bits (seed 003), for similar stories
  that share no passage.

Candidates are ranked by the number of shared passage fingerprints (then SimHash distance,
then seq) and the first ``max_verified`` are judged: an approximation, whose recall (pairs
the rule relates that no candidate reaches) is measured in docs/evaluation.md.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import numpy.typing as npt

from neardup.detect.stream.config import CandidateConfig
from neardup.index.hamming import HammingIndex
from neardup.index.passages import PassageIndex
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
    """A stored article to judge: its seq, shared passage fingerprints and SimHash distance
    (``None`` when it came from the passage index only)."""

    seq: int
    shared: int
    distance: int | None


class CandidateIndexes:
    """The in-memory candidate indexes of one stream (state rebuilt from the store's log)."""

    def __init__(self, config: CandidateConfig) -> None:
        self.config = config
        # A 256-row add buffer: every query scans the buffer by brute force, and at one add
        # per query a smaller buffer measured faster queries for the same add cost.
        self.fingerprints = HammingIndex(max_distance=config.similar_max_distance, buffer_size=256)
        self.passages = PassageIndex(max_postings=config.max_postings)

    def __len__(self) -> int:
        return len(self.passages)

    def __contains__(self, seq: object) -> bool:
        return seq in self.passages

    def add(self, seq: int, fingerprint: int, passages: U64) -> None:
        """Index a stored article."""
        self.fingerprints.add(seq, np.uint64(fingerprint))
        self.passages.add(seq, passages)

    def add_many(self, seqs: list[int], fingerprints: list[int], passages: list[U64]) -> None:
        """Index stored articles in order."""
        if seqs:
            self.fingerprints.add_many(seqs, np.asarray(fingerprints, dtype=np.uint64))
        for seq, fps in zip(seqs, passages, strict=True):
            self.passages.add(seq, fps)

    def query(self, fingerprint: int, passages: U64, exclude: int = -1) -> list[Candidate]:
        """Candidates for an article, best first (at most ``max_verified``)."""
        cfg = self.config
        keys, shared = self.passages.query(passages, exclude=exclude)
        near, distance = self.fingerprints.query_key_array(
            np.uint64(fingerprint), cfg.similar_max_distance
        )
        by_seq: dict[int, list[Any]] = {}
        for seq, count in zip(keys.tolist(), shared.tolist(), strict=True):
            by_seq[seq] = [count, None]
        for seq, dist in zip(near.tolist(), distance.tolist(), strict=True):
            if seq == exclude:
                continue
            by_seq.setdefault(seq, [0, None])[1] = dist
        ranked = sorted(
            by_seq.items(), key=lambda kv: (-kv[1][0], 64 if kv[1][1] is None else kv[1][1], kv[0])
        )
        return [Candidate(seq, c, d) for seq, (c, d) in ranked[: cfg.max_verified]]

    def state(self) -> dict[str, npt.NDArray[Any]]:
        """Arrays for a checkpoint (see :meth:`load_state`)."""
        keys = [int(k) for k in self.fingerprints.keys()]  # noqa: SIM118 (no __iter__)
        fps = np.fromiter(
            (self.fingerprints.get(k) for k in keys), dtype=np.uint64, count=len(keys)
        )
        return {
            "index_keys": np.asarray(keys, dtype=np.int64),
            "index_fps": fps,
            **self.passages.state(),
        }

    def load_state(self, arrays: dict[str, npt.NDArray[Any]]) -> None:
        """Restore :meth:`state` into empty indexes."""
        keys = arrays["index_keys"].astype(np.int64).tolist()
        if keys:
            self.fingerprints.add_many(keys, arrays["index_fps"].astype(np.uint64))
        self.passages.load_state(arrays)

    def snapshot(self) -> tuple[dict[int, int], list[int]]:
        """Comparable contents (fingerprints by seq, passage keys) for consistency checks."""
        keys = [int(k) for k in self.fingerprints.keys()]  # noqa: SIM118 (no __iter__)
        return {k: int(self.fingerprints.get(k)) for k in keys}, sorted(self.passages.keys())
