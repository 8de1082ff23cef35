"""Realtime result-set dedup against the brute-force all-pairs oracle, the cache, bad input."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.cli.demo import plant_copies
from neardup.detect.resultset import (
    DEFAULT_K,
    ResultSetDeduper,
    dedup_result_set,
    reference_dedup,
)
from neardup.errors import (
    ConfigError,
    InputError,
    InputTypeError,
    SchemeMismatchError,
    SignatureFormatError,
)
from neardup.rule import RuleConfig
from neardup.rule.coverage import estimate, is_duplicate
from neardup.similarity import bottomk_jaccard
from neardup.sketch import Signature, sign
from neardup.sketch.coverage import STARTS, layout_error

SCHEME = "sentences/v1:test"


def sig(values: list[int] | set[int] | frozenset[int], scheme: str = SCHEME) -> Signature:
    return Signature(scheme, np.array(sorted(values), dtype=np.uint32))


def all_pairs_oracle(sigs: list[Signature], threshold: float, k: int) -> list[int]:
    """Brute force on the definition: smallest j < i with bottom-k similarity >= threshold."""
    return [
        next((j for j in range(i) if bottomk_jaccard(sigs[i], sigs[j], k) >= threshold), i)
        for i in range(len(sigs))
    ]


@pytest.fixture(scope="module")
def real_sets(reuters_docs: list[dict[str, Any]]) -> list[list[str]]:
    """Three result sets of 100 real articles each, with 15 planted edited copies."""
    texts = [d["text"] for d in reuters_docs if len(d["text"]) >= 200]
    sets = []
    for seed in range(3):
        draw = random.Random(seed).sample(texts, 100)
        ranked, _, _ = plant_copies(draw, 15, seed)
        sets.append(ranked)
    return sets


@pytest.mark.parametrize("k", [4, 8, 16])
def test_matches_all_pairs_oracle_on_real_articles(real_sets: list[list[str]], k: int) -> None:
    for texts in real_sets:
        sigs = [sign(t, "sentences", k=k) for t in texts]
        for threshold in (0.2, 0.5, 0.8, 1.0):
            expected = all_pairs_oracle(sigs, threshold, k)
            assert ResultSetDeduper(max_entries=0)(sigs, threshold, k=k) == expected
            assert reference_dedup(sigs, threshold, k=k) == expected


def test_planted_copies_above_threshold_are_found(real_sets: list[list[str]]) -> None:
    texts = real_sets[0]
    draw = texts  # the planted set itself
    sigs = [sign(t, "sentences") for t in draw]
    result = dedup_result_set(sigs, 0.5)
    assert all(r <= i for i, r in enumerate(result))
    assert all(result[r] <= r for r in result)
    # Every item removed really is a near-duplicate of the item it points to, and every item
    # kept is a near-duplicate of no earlier item.
    for i, r in enumerate(result):
        if r != i:
            assert bottomk_jaccard(sigs[i], sigs[r], DEFAULT_K) >= 0.5
        else:
            assert all(bottomk_jaccard(sigs[i], sigs[j], DEFAULT_K) < 0.5 for j in range(i))
    assert len(set(result)) < len(result)  # the planted copies made duplicates


def test_planted_copies_are_found_by_edit() -> None:
    base = [
        "The central bank cut its key rate by half a point. Analysts had expected the move. "
        "Markets rose sharply after the news. The currency weakened against the dollar. "
        f"Officials said more cuts were possible in story {n}."
        for n in range(5)
    ]
    base = [t.replace("story", f"story {'abcde'[n]} item") for n, t in enumerate(base)]
    texts, _, planted = plant_copies(base, 4, seed=3)
    result = dedup_result_set([sign(t, "sentences") for t in texts], 0.5)
    for p in planted:
        if p.edit in ("resend", "trimmed", "correction"):
            assert result[p.position] == p.original or result[p.position] < p.position


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.frozensets(st.integers(0, 30), max_size=12), max_size=25),
    st.sampled_from([0.1, 0.3, 1 / 3, 0.5, 0.6, 0.75, 1.0]),
    st.integers(min_value=1, max_value=10),
)
def test_matches_oracle_on_overlapping_random_sets(
    sets: list[frozenset[int]], threshold: float, k: int
) -> None:
    sigs = [sig(s) for s in sets]
    expected = all_pairs_oracle(sigs, threshold, k)
    assert ResultSetDeduper(max_entries=0)(sigs, threshold, k=k) == expected
    assert reference_dedup(sigs, threshold, k=k) == expected


def test_empty_signatures_duplicate_only_each_other() -> None:
    sigs = [sig([1, 2]), sig([]), sig([1, 2]), sig([]), sig([3]), sig([])]
    assert dedup_result_set(sigs, 0.5) == [0, 1, 0, 1, 4, 1]
    assert dedup_result_set(
        [
            sign("", "sentences"),
            sign("   ", "sentences"),
            sign("Real text here today.", "sentences"),
        ],
        1.0,
    ) == [
        0,
        0,
        2,
    ]


def test_sizes_and_default_k() -> None:
    assert dedup_result_set([], 0.5) == []
    assert dedup_result_set([sig([5])], 0.5) == [0]
    rng = np.random.default_rng(7)
    big = [sig(set(rng.integers(0, 2**32, 16).tolist())) for _ in range(1000)]
    big[999] = big[3]
    result = dedup_result_set(big, 0.5)
    assert result[999] == 3 and result[:999] == list(range(999))
    # Signatures longer than the default k: k is the longest one (40), both read as full
    # sketches, window <= 139: 30 of 40 match.  With k=41 nothing was trimmed: exact 30/50.
    long_a = sig(range(100, 140))
    long_b = sig(list(range(100, 130)) + list(range(200, 210)))
    assert bottomk_jaccard(long_a, long_b, 40) == 0.75
    assert bottomk_jaccard(long_a, long_b, 41) == 0.6
    assert dedup_result_set([long_a, long_b], 0.75) == [0, 0]
    assert dedup_result_set([long_a, long_b], 0.7, k=41) == [0, 1]
    assert dedup_result_set([long_a, long_b], 0.6, k=41) == [0, 0]


def test_bad_input() -> None:
    a = sig([1, 2, 3])
    with pytest.raises(SchemeMismatchError):
        dedup_result_set([a, sig([1, 2, 3], scheme="sentences/v1:other")], 0.5)
    with pytest.raises(InputTypeError):
        dedup_result_set([a, np.array([1, 2, 3], dtype=np.uint32)], 0.5)  # type: ignore[list-item]
    with pytest.raises(InputTypeError):
        dedup_result_set(a, 0.5)  # type: ignore[arg-type]
    unsorted = Signature(SCHEME, np.array([3, 1], dtype=np.uint32))
    with pytest.raises(InputError, match="sorted set"):
        dedup_result_set([a, unsorted], 0.5)
    for bad in (0.0, -1.0, 1.01, float("nan"), "0.5"):
        with pytest.raises(ConfigError):
            dedup_result_set([a], bad)  # type: ignore[arg-type]
    with pytest.raises(ConfigError):
        dedup_result_set([a], 0.5, k=0)
    with pytest.raises(ConfigError):
        ResultSetDeduper(max_entries=-1)


def test_cache_hits_and_bounds() -> None:
    deduper = ResultSetDeduper(max_entries=2, max_positions=1000)
    sets = [[sig([n, n + 1]), sig([n, n + 1]), sig([n + 5])] for n in range(0, 40, 10)]
    first = deduper(sets[0], 0.5)
    assert first == [0, 0, 2]
    again = deduper(sets[0], 0.5)
    assert again == first and deduper.cache_info()["hits"] == 1
    again.append(99)  # a caller mutating its answer cannot corrupt the cache
    assert deduper(sets[0], 0.5) == first
    # A different threshold or k is a different key.
    deduper(sets[0], 1.0)
    deduper(sets[0], 1.0, k=3)
    info = deduper.cache_info()
    assert info["entries"] == 2 and info["misses"] == 3
    # LRU: sets[0]@0.5 was evicted by the last two.
    deduper(sets[0], 0.5)
    assert deduper.cache_info()["misses"] == 4
    # The position bound evicts too.
    small = ResultSetDeduper(max_entries=100, max_positions=5)
    for s in sets:
        small(s, 0.5)
    assert small.cache_info()["positions"] <= 5
    # Disabled cache still answers.
    off = ResultSetDeduper(max_entries=0)
    assert off(sets[1], 0.5) == [0, 0, 2] and off.cache_info()["entries"] == 0
    deduper.cache_clear()
    assert deduper.cache_info()["entries"] == 0


def test_cached_answer_is_checked_like_a_fresh_one() -> None:
    # An invalid set is never cached, so it raises every time.
    deduper = ResultSetDeduper()
    mixed = [sig([1]), sig([1], scheme="sentences/v1:other")]
    for _ in range(2):
        with pytest.raises(SchemeMismatchError):
            deduper(mixed, 0.5)
    assert deduper.cache_info()["entries"] == 0


# --- coverage sketches (the default scheme): the rule's verdict on estimated coverages -------


def test_coverage_dedup_matches_the_reference_on_real_articles(
    real_sets: list[list[str]],
) -> None:
    for texts in real_sets:
        sigs = [sign(t) for t in texts]
        expected = reference_dedup(sigs)
        assert ResultSetDeduper(max_entries=0)(sigs) == expected
        assert dedup_result_set(sigs) == expected
        for strict in (
            RuleConfig(duplicate_min_coverage=0.9, duplicate_min_coverage_other=0.9),
            RuleConfig(duplicate_min_coverage=0.4, duplicate_min_coverage_other=0.1),
        ):
            assert ResultSetDeduper(max_entries=0)(sigs, rule=strict) == reference_dedup(
                sigs, rule=strict
            )
        assert len(set(expected)) < len(expected)  # the planted copies made duplicates


def test_coverage_dedup_removes_exactly_what_the_rule_estimates(
    real_sets: list[list[str]],
) -> None:
    texts = real_sets[1]
    sigs = [sign(t) for t in texts]
    result = dedup_result_set(sigs)
    for i, r in enumerate(result):
        if r != i:
            e = estimate(sigs[i], sigs[r])
            assert is_duplicate(e.coverage_a, e.coverage_b, RuleConfig())


_PARAS = [
    "The central bank raised its main interest rate by half a point on Tuesday, the first "
    "increase in three years, citing a sharp rise in consumer prices over the winter.",
    "Officials said the decision was unanimous and that further increases could follow if "
    "inflation failed to slow in the coming months, according to a statement.",
    "Economists had expected a smaller move, and markets reacted with a brief fall in share "
    "prices before recovering in the afternoon as traders digested the news.",
    "A storm swept across the northern coast overnight, bringing down power lines and "
    "flooding several villages where residents were moved to schools and sports halls.",
    "Rescue teams worked through the night, and the regional government promised help for "
    "farmers whose fields were under water for the second time this decade.",
]


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.lists(st.integers(0, len(_PARAS) - 1), min_size=0, max_size=4).map(
            lambda idx: "\n\n".join(_PARAS[i] for i in idx)
        ),
        max_size=12,
    ),
    st.sampled_from([4, 16, 64]),
)
def test_coverage_dedup_matches_the_reference_on_overlapping_texts(
    texts: list[str], sample_size: int
) -> None:
    sigs = [sign(t, "coverage", sample_size=sample_size) for t in texts]
    assert ResultSetDeduper(max_entries=0)(sigs) == reference_dedup(sigs)


def test_coverage_dedup_of_edge_texts() -> None:
    # Texts without words are never duplicates (the rule's coverage of an empty text is 0);
    # one-word texts are compared on their one shingle.
    sigs = [sign(t) for t in ("", "   ", "Hello", "Hello", "Real text here today.")]
    assert dedup_result_set(sigs) == [0, 1, 2, 2, 4]
    assert dedup_result_set([]) == []


def _strided(s: Signature, dtype: type[np.unsignedinteger[Any]]) -> Signature:
    """The same values held by a read-only strided view (a signature keeps such a view)."""
    wide = np.zeros(2 * len(s.values), dtype=dtype)
    wide[::2] = s.values
    wide.flags.writeable = False
    return Signature(s.scheme_id, wide[::2])


def test_coverage_dedup_of_strided_and_wide_rows() -> None:
    sigs = [sign(p) for p in _PARAS] + [sign(_PARAS[0])]
    expected = ResultSetDeduper(max_entries=0)(sigs)
    strided = [*sigs[:-1], _strided(sigs[-1], np.uint32)]
    assert ResultSetDeduper(max_entries=0)(strided) == expected
    for wide in (
        _strided(sigs[-1], np.uint64),
        Signature(sigs[0].scheme_id, np.zeros(0, np.uint64)),
    ):
        with pytest.raises(SignatureFormatError, match="uint32"):
            ResultSetDeduper(max_entries=0)([*sigs[:-1], wide])


def test_coverage_dedup_parameters_and_bad_input() -> None:
    sigs = [sign(p) for p in _PARAS]
    with pytest.raises(ConfigError):
        dedup_result_set(sigs, 0.5)  # a threshold is for set sketches
    with pytest.raises(ConfigError):
        dedup_result_set(sigs, k=8)
    with pytest.raises(ConfigError):
        dedup_result_set(sigs, rule="strict")  # type: ignore[arg-type]
    with pytest.raises(ConfigError):
        dedup_result_set([sign(p, "sentences") for p in _PARAS], rule=RuleConfig())
    with pytest.raises(SchemeMismatchError):
        dedup_result_set(sigs, rule=RuleConfig(width=5))  # sketches of another profile
    with pytest.raises(SchemeMismatchError):
        dedup_result_set([sigs[0], sign(_PARAS[1], "sentences")])
    broken = sigs[1].values.copy()
    broken[5] += 1  # one occurrence more than the sketch holds
    bad = Signature(sigs[1].scheme_id, broken)
    with pytest.raises(SignatureFormatError):
        ResultSetDeduper(max_entries=0)([sigs[0], bad])
    with pytest.raises(SignatureFormatError):
        reference_dedup([sigs[0], bad])


def _too_many_starts(sig: Signature) -> Signature:
    """``sig`` cut to its first word type, given 200 entries that each start a shingle at its
    single occurrence: every count and mask is in range, but at most one shingle starts at
    an occurrence (more keys than the table sized by the occurrences holds)."""
    v = sig.values
    head = v[:6].copy()
    head[4], head[5] = 1, 1
    count = np.array([(1 << 16) | 200], dtype=np.uint32)  # one stored occurrence, 200 entries
    entries = ((np.arange(1, 201, dtype=np.uint32) << 16) | STARTS | 1).astype(np.uint32)
    return Signature(sig.scheme_id, np.concatenate((head, v[6 : 6 + 1], count, entries)))


def test_sketches_with_more_starting_shingles_than_occurrences_are_refused() -> None:
    bad = _too_many_starts(sign(_PARAS[0]))
    assert layout_error(bad.values) is not None
    # Without the check these overran the kernel's table (a crash of the process).
    with pytest.raises(SignatureFormatError, match="position 0"):
        ResultSetDeduper(max_entries=0)([bad] * 50)
    with pytest.raises(SignatureFormatError):
        ResultSetDeduper(max_entries=0)([sign(_PARAS[0]), bad, bad])
    with pytest.raises(SignatureFormatError):
        reference_dedup([bad, bad])


def test_cache_is_keyed_by_the_rule() -> None:
    deduper = ResultSetDeduper()
    longer = "\n\n".join(_PARAS[i] for i in (0, 1, 3, 4))
    sigs = [sign(_PARAS[0]), sign(longer)]
    e = estimate(sigs[0], sigs[1])
    assert e.coverage_a == 1.0 and 0.1 < e.coverage_b < 0.3  # a quarter of the longer text
    loose = RuleConfig(duplicate_min_coverage=0.1, duplicate_min_coverage_other=0.1)
    assert deduper(sigs) == [0, 1]
    assert deduper(sigs, rule=loose) == [0, 0]
    assert deduper(sigs) == [0, 1]
    assert deduper.cache_info()["hits"] == 1
