"""Estimation (Section 2.3): NB, expansion, bridging and BE on constructed cases."""

from __future__ import annotations

import numpy as np

from neardup.detect.origin.estimate import (
    BRIDGING,
    BRIDGING_EXPANSION,
    EXPANSION,
    NO_BRIDGING,
    dominant_origin,
    estimate,
    extend_edges,
    token_origins,
)

OWN = 50
A = 7


def make(m: int, first_bytes: list[int] | None = None) -> np.ndarray:
    fb = first_bytes if first_bytes is not None else [(10 + j) % 256 for j in range(m)]
    return np.array([(b << 56) | (j + 1) for j, b in enumerate(fb)], dtype=np.uint64)


def hits(m: int) -> dict[str, np.ndarray]:
    return {
        "found": np.zeros(m, dtype=bool),
        "origin": np.full(m, OWN, dtype=np.int64),
        "offset": np.zeros(m, dtype=np.uint8),
        "prev": np.zeros(m, dtype=np.uint8),
        "next": np.zeros(m, dtype=np.uint8),
    }


def set_hit(
    h: dict[str, np.ndarray], j: int, origin: int, offset: int, prev: int, nxt: int
) -> None:
    h["found"][j] = True
    h["origin"][j] = origin
    h["offset"][j] = offset
    h["prev"][j] = prev
    h["next"][j] = nxt


def run(fps: np.ndarray, h: dict[str, np.ndarray], method: int, limit: int = 30) -> list[int]:
    return estimate(
        OWN,
        fps,
        h["found"],
        h["origin"],
        h["offset"],
        h["prev"],
        h["next"],
        method,
        limit,
        0,
        lost(fps),
    ).tolist()


def lost(fps: np.ndarray) -> np.ndarray:
    """Every fingerprint may have been lost (the paper's table tracks nothing)."""
    return np.ones(fps.shape[0], dtype=np.bool_)


def figure_1() -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The paper's Figure 1: B copies A5..A11 as B7..B13; B7 (=A5) and B11 (=A9) are found.

    0-based: selected shingles j = 6 (A offset 4) and j = 10 (A offset 8) are hits; their
    stored neighbour bytes are those of A4/A6 and A8/A10, which equal B6?/B8 and B10/B12
    because the copied shingles are identical; B6 is not copied (different first byte).
    """
    fps = make(14)
    fb = [int(f) >> 56 for f in fps]
    h = hits(14)
    set_hit(h, 6, A, 4, prev=99, nxt=fb[7])  # A4 differs from B6 (not copied)
    set_hit(h, 10, A, 8, prev=fb[9], nxt=fb[11])
    return fps, h


def test_nb_reports_only_hits() -> None:
    fps, h = figure_1()
    est = run(fps, h, NO_BRIDGING)
    assert [j for j, o in enumerate(est) if o == A] == [6, 10]


def test_bridging_fills_between_matching_offsets() -> None:
    fps, h = figure_1()
    est = run(fps, h, BRIDGING)
    assert [j for j, o in enumerate(est) if o == A] == [6, 7, 8, 9, 10]


def test_expansion_labels_matching_neighbours() -> None:
    fps, h = figure_1()
    est = run(fps, h, EXPANSION)
    # B8 and B10 and B12 in the paper's 1-based numbering; B6 does not match
    assert [j for j, o in enumerate(est) if o == A] == [6, 7, 9, 10, 11]


def test_be_is_bridging_plus_expansion() -> None:
    fps, h = figure_1()
    est = run(fps, h, BRIDGING_EXPANSION)
    assert [j for j, o in enumerate(est) if o == A] == [6, 7, 8, 9, 10, 11]  # B13 undiscovered


def test_be_needs_matching_inner_neighbours() -> None:
    fps, h = figure_1()
    h["next"][6] = 1  # condition (e) fails: no bridge, expansion from 10 only
    est = run(fps, h, BRIDGING_EXPANSION)
    assert [j for j, o in enumerate(est) if o == A] == [6, 9, 10, 11]
    assert [j for j, o in enumerate(run(fps, h, BRIDGING)) if o == A] == [6, 7, 8, 9, 10]


def test_bridging_conditions() -> None:
    fps = make(40)
    # offsets disagree (c): no bridge
    h = hits(40)
    set_hit(h, 2, A, 10, 0, 0)
    set_hit(h, 6, A, 15, 0, 0)
    assert run(fps, h, BRIDGING).count(A) == 2
    # different origins (b): no bridge
    h = hits(40)
    set_hit(h, 2, A, 10, 0, 0)
    set_hit(h, 6, A + 1, 14, 0, 0)
    assert run(fps, h, BRIDGING).count(A) == 1
    # too long for T (bridge of 30 shingles not < 30), fine for T = 31
    h = hits(40)
    set_hit(h, 2, A, 0, 0, 0)
    set_hit(h, 32, A, 30, 0, 0)
    assert run(fps, h, BRIDGING).count(A) == 2
    assert run(fps, h, BRIDGING, limit=31).count(A) == 31
    # offsets wrap modulo 256 (one stored byte)
    h = hits(40)
    set_hit(h, 2, A, 250, 0, 0)
    set_hit(h, 8, A, 0, 0, 0)
    assert run(fps, h, BRIDGING).count(A) == 7
    # chained bridges share an end point; the nearest partner is used (d)
    h = hits(40)
    set_hit(h, 0, A, 0, 0, 0)
    set_hit(h, 5, A, 5, 0, 0)
    set_hit(h, 9, A, 9, 0, 0)
    assert run(fps, h, BRIDGING).count(A) == 10


def test_found_shingles_keep_their_own_origin() -> None:
    fps = make(10)
    h = hits(10)
    set_hit(h, 1, A, 0, 0, 0)
    set_hit(h, 3, 3, 40, 0, 0)  # a common phrase seen earlier in doc 3
    set_hit(h, 5, A, 4, 0, 0)
    est = run(fps, h, BRIDGING)
    assert est[1:6] == [A, A, 3, A, A]


def test_token_origins_leftmost_cover() -> None:
    est = np.array([OWN, A, 9], dtype=np.int64)
    starts = np.array([0, 2, 4], dtype=np.int64)
    ends = starts + 4
    out = token_origins(10, starts, ends, est, OWN).tolist()
    assert out == [-1, -1, A, A, A, A, 9, 9, -1, -1]


def test_dominant_origin_ten_percent_rule() -> None:
    own = 100
    assert dominant_origin(np.array([1] * 11 + [2] * 10, dtype=np.int64), own) == (1, 1)
    assert dominant_origin(np.array([1] * 10 + [2] * 10, dtype=np.int64), own) == (None, 1)
    assert dominant_origin(np.array([1] * 10 + [2] * 10 + [own] * 10, dtype=np.int64), own) == (
        None,
        own,
    )
    assert dominant_origin(np.array([1] * 12 + [own] * 11, dtype=np.int64), own) == (None, 1)
    assert dominant_origin(np.array([own] * 3, dtype=np.int64), own) == (own, own)
    assert dominant_origin(np.array([], dtype=np.int64), own) == (own, own)


def test_bridge_tolerance_accepts_small_offset_shifts() -> None:
    fps = make(40)
    h = hits(40)
    set_hit(h, 2, A, 10, 0, 0)
    set_hit(h, 7, A, 14, 0, 0)  # 5 apart in D, 4 apart in the origin: one shingle lost
    assert run(fps, h, BRIDGING).count(A) == 2
    tol1 = estimate(OWN, fps, *(h[k] for k in hits(0)), BRIDGING, 30, 1, lost(fps)).tolist()
    assert [j for j, o in enumerate(tol1) if o == A] == [2, 3, 4, 5, 6, 7]
    # shifted by 3: beyond a tolerance of 2; circular distance mod 256 (250 -> 3 is 9)
    h = hits(40)
    set_hit(h, 2, A, 250, 0, 0)
    set_hit(h, 8, A, 3, 0, 0)
    assert (
        estimate(OWN, fps, *(h[k] for k in hits(0)), BRIDGING, 30, 2, lost(fps)).tolist().count(A)
        == 2
    )
    assert (
        estimate(OWN, fps, *(h[k] for k in hits(0)), BRIDGING, 30, 3, lost(fps)).tolist().count(A)
        == 7
    )


def test_extend_edges_labels_neighbours_of_found_copies_only() -> None:
    fps = make(12)
    h = hits(12)
    set_hit(h, 3, A, 0, 0, 0)
    set_hit(h, 5, A, 2, 0, 0)
    set_hit(h, 10, OWN, 0, 0, 0)  # found, but repeated inside D: no extension from it
    est = run(fps, h, BRIDGING)
    assert [j for j, o in enumerate(est) if o == A] == [3, 4, 5]
    one = extend_edges(OWN, h["found"], np.array(est), 1, lost(fps)).tolist()
    assert [j for j, o in enumerate(one) if o == A] == [2, 3, 4, 5, 6]
    two = extend_edges(OWN, h["found"], np.array(est), 2, lost(fps)).tolist()
    assert [j for j, o in enumerate(two) if o == A] == [1, 2, 3, 4, 5, 6, 7]
    assert two[10] == OWN and two[9] == OWN and two[11] == OWN
    assert est == run(fps, h, BRIDGING)  # the input is not modified


def _brute_bridge(found: list[bool], origin: list[int], offset: list[int], limit: int,
                  tol: int) -> list[int]:  # fmt: skip
    """Bridging with an offset tolerance written from its definition, plainly."""
    m = len(found)
    est = [origin[j] if found[j] else OWN for j in range(m)]
    guessed = [False] * m
    for j in range(m):
        if not found[j] or origin[j] == OWN:
            continue
        partners = [
            t
            for t in range(j + 1, min(m, j + limit))
            if found[t]
            and origin[t] == origin[j]
            and min((d := ((t - j) - (offset[t] - offset[j])) % 256), 256 - d) <= tol
        ]
        if partners:
            for i in range(j + 1, partners[0]):
                if not found[i] and not guessed[i]:
                    est[i], guessed[i] = origin[j], True
    return est


def _brute_extend(found: list[bool], est: list[int], radius: int) -> list[int]:
    out = list(est)
    labelled = [f or e != OWN for f, e in zip(found, est, strict=True)]
    done = [False] * len(est)
    for j, f in enumerate(found):
        if not f or est[j] == OWN:
            continue
        for step in (-1, 1):
            for s in range(1, radius + 1):
                i = j + step * s
                if not 0 <= i < len(est) or labelled[i]:
                    break
                if not done[i]:
                    out[i], done[i] = est[j], True
    return out


def test_tolerance_and_extension_match_brute_force_on_random_hits() -> None:
    rng = np.random.default_rng(11)
    for _ in range(300):
        m = int(rng.integers(1, 60))
        found = rng.random(m) < 0.3
        origin = np.where(found, rng.choice([A, A + 1, OWN], size=m), OWN).astype(np.int64)
        offset = (np.arange(m) + rng.integers(-3, 4, size=m) + 200).astype(np.uint8)
        zeros = np.zeros(m, dtype=np.uint8)
        fps = make(m)
        for tol in (0, 1, 2, 127):
            limit = int(rng.integers(2, 40))
            est = estimate(
                OWN, fps, found, origin, offset, zeros, zeros, BRIDGING, limit, tol, lost(fps)
            )
            want = _brute_bridge(found.tolist(), origin.tolist(), offset.tolist(), limit, tol)
            assert est.tolist() == want
            for radius in (1, 2, 5):
                got = extend_edges(OWN, found, est, radius, lost(fps)).tolist()
                assert got == _brute_extend(found.tolist(), want, radius)
