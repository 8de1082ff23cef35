"""Winnowed passage fingerprints (neardup.batch.winnow) against brute force, and their
guarantee: two texts sharing a run of ``window + width - 1`` tokens share a fingerprint."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup._jit import forced
from neardup.batch.fastsign import partition_shingles
from neardup.batch.winnow import passage_keys, winnow
from neardup.rule import RuleConfig


def _reference(row: list[int], window: int) -> list[int]:
    """Every window's minimum (rightmost on ties), as a sorted distinct list."""
    if not row:
        return []
    w = min(window, len(row))
    chosen = set()
    for start in range(len(row) - w + 1):
        part = row[start : start + w]
        smallest = min(part)
        chosen.add(part[max(i for i, v in enumerate(part) if v == smallest)])
    return sorted(chosen)


def _ragged(rows: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    offsets = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum([len(r) for r in rows], out=offsets[1:])
    flat = np.array([v for r in rows for v in r], dtype=np.uint64)
    return flat, offsets


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.lists(st.integers(0, 40), max_size=60), max_size=6),
    st.integers(1, 15),
    st.booleans(),
)
def test_winnow_equals_brute_force(rows: list[list[int]], window: int, compiled: bool) -> None:
    flat, offsets = _ragged(rows)
    with forced(compiled):  # the compiled kernel and its numpy reference alike
        values, out_offsets = winnow(flat, offsets, window)
    assert out_offsets.shape[0] == len(rows) + 1
    for d, row in enumerate(rows):
        assert values[out_offsets[d] : out_offsets[d + 1]].tolist() == _reference(row, window)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(0, 10**6), min_size=0, max_size=40),
    st.lists(st.integers(0, 10**6), min_size=0, max_size=40),
    st.lists(st.integers(0, 10**6), min_size=8, max_size=40),
    st.integers(1, 5),
    st.integers(2, 6),
)
def test_shared_run_always_shares_a_fingerprint(
    left: list[int], right: list[int], shared: list[int], width: int, extra: int
) -> None:
    """Token sequences ``left + shared`` and ``shared + right``: if ``shared`` has at least
    ``window + width - 1`` tokens, their word shingles share a passage key."""
    window = max(1, len(shared) - width + 1 - extra % 2)
    words_a = " ".join(f"w{t}" for t in [*left, *shared])
    words_b = " ".join(f"w{t}" for t in [*shared, *right])
    rule = RuleConfig()
    flat, offsets = partition_shingles([words_a, words_b], rule.text, width)
    keys, key_offsets = passage_keys(flat, offsets, window)
    a = set(keys[key_offsets[0] : key_offsets[1]].tolist())
    b = set(keys[key_offsets[1] : key_offsets[2]].tolist())
    assert a & b
    assert 0 not in a | b


def test_density_is_about_two_per_window() -> None:
    """Schleimer et al.'s expected density 2 / (window + 1) on random hashes."""
    rng = np.random.default_rng(0)
    flat = rng.integers(0, 2**63, 200_000, dtype=np.int64).astype(np.uint64)
    offsets = np.array([0, flat.shape[0]], dtype=np.int64)
    values, _ = winnow(flat, offsets, 27)
    assert abs(values.shape[0] / flat.shape[0] - 2 / 28) < 0.005


def test_short_and_empty_rows() -> None:
    flat, offsets = _ragged([[], [5], [9, 3, 7], [4, 4, 4, 4]])
    values, out = winnow(flat, offsets, 10)
    assert out.tolist() == [0, 0, 1, 2, 3]
    assert values.tolist() == [5, 3, 4]
