"""Selection algorithms (seed 004, Section 2.1) against plain-Python brute force, on Reuters."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from neardup.detect.origin import TEXT_CONFIG, OriginConfig
from neardup.detect.origin.select import (
    _BREAK_SALT,
    all_shingles,
    hailstorm_positions,
    no_overlap_positions,
    select,
)
from neardup.shingles import hash_forms, mix64
from neardup.text import tokenize

K = 8


@pytest.fixture(scope="module")
def token_hash_docs(reuters_docs: list[dict[str, Any]]) -> list[np.ndarray]:
    out = []
    for doc in reuters_docs[:300]:
        forms = tokenize(doc["text"], TEXT_CONFIG).forms
        out.append(hash_forms(forms, 0))
    # edge cases: empty, shorter than k, exactly k
    out += [hash_forms([], 0), hash_forms(["a", "b"], 0), hash_forms(list("abcdefgh"), 0)]
    return out


def _shingles(th: np.ndarray) -> list[int]:
    return [int(x) for x in all_shingles(th, K)]


def brute_every(th: np.ndarray, step: int) -> list[int]:
    return [i for i in range(len(_shingles(th))) if i % step == 0]


def brute_modulo(th: np.ndarray, modulus: int) -> list[int]:
    return [i for i, f in enumerate(_shingles(th)) if f % modulus == 0]


def brute_winnowing(th: np.ndarray, w: int) -> list[int]:
    fps = _shingles(th)
    if not fps:
        return []
    w = min(w, len(fps))
    chosen: set[int] = set()
    for i in range(len(fps) - w + 1):
        window = fps[i : i + w]
        low = min(window)
        chosen.add(i + max(t for t, f in enumerate(window) if f == low))  # right-most minimum
    return sorted(chosen)


def brute_hailstorm(th: np.ndarray) -> list[int]:
    h = [int(x) for x in th]
    out = []
    for i in range(len(h) - K + 1):
        window = h[i : i + K]
        if min(window) in (window[0], window[-1]):
            out.append(i)
    return out


def brute_no_overlap(positions: list[int]) -> list[int]:
    """The paper's second pass, written as the definition: discard a shingle whose tokens
    are all covered by kept earlier shingles and selected later ones."""
    kept: list[int] = []
    for j, p in enumerate(positions):
        covered = set()
        for q in kept:
            covered.update(range(q, q + K))
        for q in positions[j + 1 :]:
            covered.update(range(q, q + K))
        if not set(range(p, p + K)) <= covered:
            kept.append(p)
    return kept


def brute_segments(th: np.ndarray, p: int) -> list[tuple[int, int]]:
    salted = mix64(np.asarray(th, dtype=np.uint64) ^ _BREAK_SALT)
    segs, start = [], 0
    for t in range(len(th)):
        if int(salted[t]) % p == 0 or t == len(th) - 1:
            if t + 1 - start >= p:
                segs.append((start, t + 1))
            start = t + 1
    return segs


def _positions(th: np.ndarray, cfg: OriginConfig) -> list[int]:
    sel = select(th, cfg)
    assert np.array_equal(sel.ends - sel.starts, np.full(len(sel), K))
    assert np.array_equal(sel.fingerprints, all_shingles(th, K)[sel.starts])
    return sel.starts.tolist()


@pytest.mark.parametrize("step", [4, 6, 8])
def test_every(token_hash_docs: list[np.ndarray], step: int) -> None:
    cfg = OriginConfig.paper(selection="every", selection_parameter=step, no_overlap=False)
    for th in token_hash_docs:
        assert _positions(th, cfg) == brute_every(th, step)


@pytest.mark.parametrize("modulus", [2, 3, 8])
def test_modulo_and_no_overlap(token_hash_docs: list[np.ndarray], modulus: int) -> None:
    plain = OriginConfig.paper(selection="modulo", selection_parameter=modulus, no_overlap=False)
    nm = OriginConfig.paper(selection="modulo", selection_parameter=modulus, no_overlap=True)
    for th in token_hash_docs:
        expected = brute_modulo(th, modulus)
        assert _positions(th, plain) == expected
        assert _positions(th, nm) == brute_no_overlap(expected)


@pytest.mark.parametrize("w", [5, 8, 9])
def test_winnowing_and_no_overlap(token_hash_docs: list[np.ndarray], w: int) -> None:
    plain = OriginConfig.paper(selection="winnowing", selection_parameter=w, no_overlap=False)
    nw = OriginConfig.paper(selection="winnowing", selection_parameter=w, no_overlap=True)
    for th in token_hash_docs:
        expected = brute_winnowing(th, w)
        assert _positions(th, plain) == expected
        assert _positions(th, nw) == brute_no_overlap(expected)


def test_hailstorm_and_no_overlap(token_hash_docs: list[np.ndarray]) -> None:
    hs = OriginConfig.paper(selection="hailstorm", no_overlap=False)
    nhs = OriginConfig.paper(selection="hailstorm", no_overlap=True)
    for th in token_hash_docs:
        expected = brute_hailstorm(th)
        assert _positions(th, hs) == expected
        assert _positions(th, nhs) == brute_no_overlap(expected)


def test_hailstorm_total_coverage_lemma_1(token_hash_docs: list[np.ndarray]) -> None:
    """Lemma 1: every token except the first/last k-1 is covered, also after NHs."""
    for th in token_hash_docs:
        n = len(th)
        for positions in (
            hailstorm_positions(th, K),
            no_overlap_positions(hailstorm_positions(th, K), K),
        ):
            covered = np.zeros(n, dtype=bool)
            for p in positions:
                covered[p : p + K] = True
            assert covered[K - 1 : n - K + 1].all()


def test_no_overlap_keeps_coverage(token_hash_docs: list[np.ndarray]) -> None:
    for th in token_hash_docs:
        for positions in (np.array(brute_modulo(th, 2), dtype=np.int64),):
            kept = no_overlap_positions(positions, K)
            full = np.zeros(len(th) + K, dtype=bool)
            part = np.zeros(len(th) + K, dtype=bool)
            for p in positions:
                full[p : p + K] = True
            for p in kept:
                part[p : p + K] = True
            assert np.array_equal(full, part)


def test_all(token_hash_docs: list[np.ndarray]) -> None:
    cfg = OriginConfig.paper(selection="all", no_overlap=False)
    for th in token_hash_docs:
        assert _positions(th, cfg) == list(range(max(len(th) - K + 1, 0)))


@pytest.mark.parametrize("method", ["hashbreak", "dct"])
@pytest.mark.parametrize("p", [3, 8])
def test_segment_methods(token_hash_docs: list[np.ndarray], method: str, p: int) -> None:
    cfg = OriginConfig.paper(selection=method, selection_parameter=p, no_overlap=False)
    fps_seen: dict[tuple[int, ...], int] = {}
    for th in token_hash_docs:
        sel = select(th, cfg)
        segs = brute_segments(th, p)
        assert list(zip(sel.starts.tolist(), sel.ends.tolist(), strict=True)) == segs
        for (a, b), fp in zip(segs, sel.fingerprints.tolist(), strict=True):
            key = tuple(int(x) for x in th[a:b])
            # same segment -> same fingerprint (deterministic function of the tokens)
            assert fps_seen.setdefault(key, fp) == fp


def test_dct_tolerates_small_change() -> None:
    """A DCT fingerprint survives changing one token's hash by a little (quantisation)."""
    rng = np.random.default_rng(0)
    th = rng.integers(0, 2**63, size=40, dtype=np.int64).astype(np.uint64)
    from neardup.detect.origin.select import _dct_fps

    starts = np.array([0], dtype=np.int64)
    ends = np.array([40], dtype=np.int64)
    base = _dct_fps(th, starts, ends)[0]
    nudged = th.copy()
    nudged[5] += np.uint64(1 << 20)  # a change far below the quantisation step
    assert _dct_fps(nudged, starts, ends)[0] == base
    other = th.copy()
    other[5] ^= np.uint64(1 << 62)
    assert _dct_fps(other, starts, ends)[0] != base


def test_ssr_roughly_as_paper(token_hash_docs: list[np.ndarray]) -> None:
    """Expected fractions: Hs 2/k, M l 1/l, W w 2/(w+1) (Section 2.1)."""
    total = sum(max(len(th) - K + 1, 0) for th in token_hash_docs)

    def ratio(cfg: OriginConfig) -> float:
        return sum(len(select(th, cfg)) for th in token_hash_docs) / total

    assert abs(ratio(OriginConfig.paper(no_overlap=False)) - 2 / K) < 0.03
    assert (
        abs(
            ratio(OriginConfig.paper(selection="modulo", selection_parameter=4, no_overlap=False))
            - 0.25
        )
        < 0.02
    )
    assert (
        abs(
            ratio(
                OriginConfig.paper(selection="winnowing", selection_parameter=8, no_overlap=False)
            )
            - 2 / 9
        )
        < 0.03
    )
    assert ratio(OriginConfig.paper()) < ratio(OriginConfig.paper(no_overlap=False))


def brute_dct_fingerprint(values: list[int]) -> int:
    """The documented DCT fingerprint, written plainly: map to [-1, 1), remove the mean,
    DCT-II coefficients 1..16, scale by the largest magnitude, 4-bit quantise, pack, mix."""
    import math

    n = len(values)
    x = [(v >> 11) * (2.0 / 2**53) - 1.0 for v in values]
    mean = sum(x) / n
    x = [v - mean for v in x]
    coeffs = []
    for u in range(1, 17):
        c = 0.0
        if u < n:
            for i in range(n):
                c += x[i] * math.cos(math.pi / n * (i + 0.5) * u)
        coeffs.append(c)
    peak = max(abs(c) for c in coeffs)
    packed = 0
    for c in coeffs:
        q = 8 if peak == 0.0 else math.floor((c / peak + 1.0) * 8.0)
        packed = (packed << 4) | min(max(q, 0), 15)
    poly = 0x9E3779B97F4A7C15
    return int(mix64(np.array([packed ^ ((n * poly) % 2**64)], dtype=np.uint64))[0])


def brute_hashbreak_fingerprint(values: list[int]) -> int:
    acc = 0
    for v in values:
        acc = (acc * 0x9E3779B97F4A7C15 + v) % 2**64
    tagged = (acc + len(values) + 0x4842) % 2**64
    return int(mix64(np.array([tagged], dtype=np.uint64))[0])


@pytest.mark.parametrize("method", ["hashbreak", "dct"])
def test_segment_fingerprints_brute_force(token_hash_docs: list[np.ndarray], method: str) -> None:
    cfg = OriginConfig.paper(selection=method, selection_parameter=4, no_overlap=False)
    brute = brute_dct_fingerprint if method == "dct" else brute_hashbreak_fingerprint
    checked = 0
    for th in token_hash_docs[:100]:
        sel = select(th, cfg)
        for a, b, fp in zip(
            sel.starts.tolist(), sel.ends.tolist(), sel.fingerprints.tolist(), strict=True
        ):
            assert brute([int(v) for v in th[a:b]]) == fp
            checked += 1
    assert checked > 500
