"""Shared fixtures: paths to the real data in ../shared/data, skipped cleanly when absent."""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

DATA_DIR = Path(
    os.environ.get("NEARDUP_DATA", Path(__file__).resolve().parents[2] / "shared" / "data")
)


def data_path(*parts: str) -> Path:
    """Path of a file under ../shared/data; skips the test when it is absent."""
    path = DATA_DIR.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"real data not available: {path} (set NEARDUP_DATA to the shared/data folder)")
    return path


def read_jsonl_gz(path: Path, limit: int | None = None) -> Iterator[dict[str, Any]]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for i, line in enumerate(fh):
            if limit is not None and i >= limit:
                return
            yield json.loads(line)


@pytest.fixture(scope="session")
def reuters_docs() -> list[dict[str, Any]]:
    """The first 3,000 Reuters-21578 documents (chronological), read in place."""
    return list(read_jsonl_gz(data_path("reuters21578", "docs.jsonl.gz"), limit=3000))


def oracle_verdict(
    new: set[int],
    old: set[int],
    cfg: Any,
    new_text: str = "",
    old_text: str = "",
    gap_seconds: float | None = None,
) -> str | None:
    """The stream's verification rule (``neardup.detect.stream``) recomputed from scratch
    for the new article (shingle set ``new``) against a stored one (``old``): Python set
    arithmetic for the shingle rule; with ``verify="overlap"``, once the shingles overlap
    enough, the full word overlap (no ``decide`` short cut; the measure itself is tested
    against a brute-force matcher in tests/test_overlap.py), the sequence containment and
    the names/figures test, whose figures may change freely when the two are dated at most
    ``overlap_figures_window_seconds`` apart (``gap_seconds``), not at all beyond, and by the
    moderate thresholds when a date is unknown.  ``"duplicate"``, ``"similar"`` or ``None``
    (unrelated)."""
    from neardup.similarity.overlap import key_overlap, overlap, prepare, sequence_containment

    shared = len(new & old)
    jaccard = shared / len(new | old) if new | old else 1.0
    in_old = shared / len(new) if new else 0.0  # share of the new article in the stored one
    in_new = shared / len(old) if old else 0.0  # share of the stored article in the new one
    dup = jaccard >= cfg.duplicate_min_jaccard or (
        in_old >= cfg.duplicate_min_containment
        and in_new >= cfg.duplicate_min_coverage
        and shared >= cfg.duplicate_min_shared
    )
    fast = (  # the shingle sets settle it (StreamConfig.overlap_accept_containment)
        cfg.overlap_accept_containment is not None
        and in_old >= cfg.overlap_accept_containment
        and in_new >= cfg.overlap_min_coverage
        and shared >= cfg.duplicate_min_shared
    )
    if (
        cfg.verify == "overlap"
        and max(in_old, in_new) >= cfg.overlap_min_shingle_overlap
        and not fast
    ):
        o = overlap(old_text, new_text, cfg.overlap)
        po, pn = prepare(old_text, cfg.overlap), prepare(new_text, cfg.overlap)
        k = key_overlap(po, pn, cfg.overlap)
        window = cfg.overlap_figures_window_seconds
        if window is None or gap_seconds is None:
            other_figures = (
                k.figures_added > cfg.overlap_figures_added
                and k.figures_kept_share < cfg.overlap_figures_kept
            )
        else:
            other_figures = gap_seconds > window and (
                k.figures_added > 0 or k.figures_kept_share < 1
            )
        other_names = (
            k.names_added > cfg.overlap_names_added and k.names_kept_share < cfg.overlap_names_kept
        )
        dup = (
            o.coverage >= cfg.overlap_min_coverage
            and o.added <= cfg.overlap_max_added
            and (
                o.stored_matched >= cfg.overlap_min_matched or jaccard >= cfg.duplicate_min_jaccard
            )
            and sequence_containment(po, pn, cfg.overlap_sequence_width, cfg.overlap)
            >= cfg.overlap_min_sequence
            and not (other_figures or other_names)
        )
    if dup:
        return "duplicate"
    return "similar" if max(in_old, in_new) >= cfg.similar_min_overlap else None
