"""Set similarity, the bottom-k estimate with early termination, and the longest common substring.

Oracles: Python set arithmetic, the bottom-k window computed from the *full* sets, and a
brute-force longest common substring.
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.errors import (
    ConfigError,
    InputError,
    InputTooLargeError,
    InputTypeError,
    SchemeMismatchError,
)
from neardup.similarity import (
    CommonSubstring,
    bottomk_at_least,
    bottomk_jaccard,
    containment,
    jaccard,
    longest_common_substring,
    need_table,
)
from neardup.similarity import substring as substring_module
from neardup.sketch import Signature, sign

small_sets = st.frozensets(st.integers(min_value=0, max_value=40), max_size=30)
u32_sets = st.frozensets(st.integers(min_value=0, max_value=2**32 - 1), max_size=40)
ks = st.integers(min_value=1, max_value=24)


def arr(s: frozenset[int]) -> np.ndarray:
    return np.array(sorted(s), dtype=np.uint32)


def oracle_bottomk(a: frozenset[int], b: frozenset[int], k: int) -> Fraction:
    """The bottom-k estimate from the FULL sets: the window is known from the sketches."""
    sketch_a, sketch_b = sorted(a)[:k], sorted(b)[:k]
    taus = [s[-1] for s, full in ((sketch_a, a), (sketch_b, b)) if len(s) >= k]
    tau = min(taus) if taus else None
    window = {x for x in a | b if tau is None or x <= tau}
    if not window:
        return Fraction(1)
    return Fraction(len({x for x in a & b if x in window}), len(window))


# --- exact measures ------------------------------------------------------------------------


@given(small_sets, small_sets)
def test_jaccard_and_containment_match_set_arithmetic(a: frozenset[int], b: frozenset[int]) -> None:
    expected_j = 1.0 if not (a | b) else len(a & b) / len(a | b)
    assert jaccard(arr(a), arr(b)) == expected_j
    expected_c = (1.0 if not b else 0.0) if not a else len(a & b) / len(a)
    assert containment(arr(a), arr(b)) == expected_c


@given(st.lists(st.integers(-50, 50), max_size=30), st.lists(st.integers(-50, 50), max_size=30))
def test_unsorted_and_repeated_input_is_read_as_a_set(a: list[int], b: list[int]) -> None:
    sa, sb = set(a), set(b)
    expected = 1.0 if not (sa | sb) else len(sa & sb) / len(sa | sb)
    assert jaccard(np.array(a, dtype=np.int64), np.array(b, dtype=np.int64)) == expected


def test_signatures_compare_only_within_a_scheme() -> None:
    a = Signature("sentences/v1:00", np.array([1, 2, 3], dtype=np.uint32))
    b = Signature("sentences/v1:00", np.array([2, 3, 4], dtype=np.uint32))
    other = Signature("sentences/v1:ff", np.array([2, 3, 4], dtype=np.uint32))
    assert jaccard(a, b) == 0.5
    with pytest.raises(SchemeMismatchError):
        jaccard(a, other)
    with pytest.raises(SchemeMismatchError):
        bottomk_at_least(a, other, 0.5, 4)
    with pytest.raises(InputTypeError):
        jaccard(a, np.array([1], dtype=np.uint32))


def test_signature_values_are_read_only_contiguous_little_endian() -> None:
    """Every input layout gives the layout compiled code reads in place; a fresh read-only
    contiguous array is kept without a copy."""
    base = np.arange(12, dtype=np.uint64)
    kept = base.copy()
    kept.flags.writeable = False
    strided = base[::2]
    strided.flags.writeable = False
    for values in (base, kept, strided, base.astype(np.uint32)[::3]):
        sig = Signature("minhash/x", values)
        v = sig.values
        assert v.flags.c_contiguous and not v.flags.writeable and v.dtype.byteorder in "<="
        assert v.tolist() == np.asarray(values).tolist()
    assert Signature("minhash/x", kept).values is kept


def test_bad_set_input_is_a_typed_error() -> None:
    with pytest.raises(InputError):
        jaccard(np.zeros((2, 2), dtype=np.uint32), np.zeros(2, dtype=np.uint32))
    with pytest.raises(InputTypeError):
        jaccard(np.array([0.5, 1.5]), np.array([1.0]))
    with pytest.raises(ConfigError):
        bottomk_jaccard([1], [1], 0)
    for bad in (0.0, -0.1, 1.5, float("nan")):
        with pytest.raises(ConfigError):
            bottomk_at_least([1], [1], bad, 4)


# --- bottom-k estimate ---------------------------------------------------------------------


@given(u32_sets, u32_sets, ks)
def test_bottomk_estimate_from_sketches_equals_window_of_full_sets(
    a: frozenset[int], b: frozenset[int], k: int
) -> None:
    # The signatures hold only the k smallest values; the oracle sees the whole sets.
    got = bottomk_jaccard(arr(a)[:k], arr(b)[:k], k)
    assert got == float(oracle_bottomk(a, b, k))
    # Longer sketches are cut to their k smallest values.
    assert bottomk_jaccard(arr(a), arr(b), k) == got


@given(small_sets, small_sets, ks)
def test_bottomk_is_exact_jaccard_when_nothing_was_trimmed(
    a: frozenset[int], b: frozenset[int], k: int
) -> None:
    if len(a) < k and len(b) < k:
        assert bottomk_jaccard(arr(a), arr(b), k) == jaccard(arr(a), arr(b))


def _all_thresholds(k: int) -> list[float]:
    """Every value the estimate can take (window <= 2k), and its float neighbours."""
    values = {m / u for u in range(1, 2 * k + 1) for m in range(1, u + 1)}
    out = set()
    for v in values:
        out.update((v, float(np.nextafter(v, 0.0)), float(np.nextafter(v, 2.0))))
    return sorted(t for t in out if 0.0 < t <= 1.0)


@settings(max_examples=150, deadline=None)
@given(small_sets, small_sets, st.integers(min_value=1, max_value=10))
def test_early_termination_agrees_with_full_merge_at_every_threshold(
    a: frozenset[int], b: frozenset[int], k: int
) -> None:
    x, y = arr(a)[: k + 2], arr(b)[: k + 2]
    full = bottomk_jaccard(x, y, k)
    for threshold in _all_thresholds(k):
        assert bottomk_at_least(x, y, threshold, k) == (full >= threshold), threshold


def test_early_termination_on_real_sentence_sketches(reuters_docs: list[dict[str, str]]) -> None:
    texts = [d["text"] for d in reuters_docs[:400] if d["text"].strip()]
    sigs = [sign(t, "sentences", k=8) for t in texts]
    # Pairs of neighbours in the wire (corrections and re-sends come close together).
    for s, t in itertools.pairwise(sigs):
        full = bottomk_jaccard(s, t, 8)
        for threshold in (0.1, 0.25, 0.5, 0.75, 0.9, 1.0):
            assert bottomk_at_least(s, t, threshold, 8) == (full >= threshold)


def test_need_table_agrees_with_float_division() -> None:
    for threshold in (0.1, 0.3, 1 / 3, 0.5, 0.7, 0.9, 1.0, 1e-9):
        need = need_table(threshold, 64)
        assert need[0] == 0
        assert all(need[u] <= need[u + 1] for u in range(64))
        for u in range(1, 65):
            m = int(need[u])
            assert m / u >= threshold
            assert m == 0 or (m - 1) / u < threshold


def test_empty_sets() -> None:
    e = np.zeros(0, dtype=np.uint32)
    one = np.array([7], dtype=np.uint32)
    assert jaccard(e, e) == 1.0 and jaccard(e, one) == 0.0
    assert bottomk_jaccard(e, e, 4) == 1.0 and bottomk_jaccard(one, e, 4) == 0.0
    assert bottomk_at_least(e, e, 1.0, 4) and not bottomk_at_least(e, one, 0.01, 4)
    assert containment(e, e) == 1.0 and containment(e, one) == 0.0


# --- longest common substring --------------------------------------------------------------


def brute_lcs(a: list[object] | str, b: list[object] | str) -> tuple[int, int, int]:
    """(length, a_start, b_start): longest, then leftmost in a, then leftmost in b."""
    best = (0, 0, 0)
    for i in range(len(a)):
        for j in range(len(b)):
            n = 0
            while i + n < len(a) and j + n < len(b) and a[i + n] == b[j + n]:
                n += 1
            if n > best[0]:
                best = (n, i, j)
    return best


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="abc .", max_size=40), st.text(alphabet="abc .", max_size=40))
def test_lcs_characters_against_brute_force(a: str, b: str) -> None:
    got = longest_common_substring(a, b)
    length, a_start, b_start = brute_lcs(a, b)
    assert (got.length, got.a_start, got.b_start) == (length, a_start, b_start)
    assert a[got.a_start : got.a_end] == b[got.b_start : got.b_end]
    assert got.ratio_a == (length / len(a) if a else 0.0)
    assert got.ratio_b == (length / len(b) if b else 0.0)


@settings(max_examples=200, deadline=None)
@given(
    st.text(alphabet=st.characters(codec="utf-8"), max_size=25),
    st.text(alphabet=st.characters(codec="utf-8"), max_size=25),
)
def test_lcs_any_unicode_against_brute_force(a: str, b: str) -> None:
    got = longest_common_substring(a, b)
    assert (got.length, got.a_start, got.b_start) == brute_lcs(a, b)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from(["the", "bank", "said", "rate", "cut"]), max_size=30),
    st.lists(st.sampled_from(["the", "bank", "said", "rate", "cut"]), max_size=30),
)
def test_lcs_tokens_against_brute_force(a: list[str], b: list[str]) -> None:
    got = longest_common_substring(a, b)
    assert (got.length, got.a_start, got.b_start) == brute_lcs(a, b)
    assert a[got.a_start : got.a_end] == b[got.b_start : got.b_end]


@settings(max_examples=50, deadline=None)
@given(
    st.lists(st.integers(0, 70000), min_size=1, max_size=30),
    st.lists(st.integers(0, 70000), min_size=1, max_size=30),
)
def test_lcs_wide_alphabets(a: list[int], b: list[int]) -> None:
    # Many distinct symbols: 2- and 4-byte suffix-sort encodings.
    a = a + list(range(300))
    got = longest_common_substring(np.array(a), np.array(b))
    assert (got.length, got.a_start, got.b_start) == brute_lcs(a, b)


def test_lcs_seed_example() -> None:
    # Seed 002 names " in California." (15 characters); "ing a beautiful " is 16 and common
    # too, the brute force agrees.
    a, b = "Selling a beautiful house in California.", "Buying a beautiful crip in California."
    got = longest_common_substring(a, b)
    assert a[got.a_start : got.a_end] == "ing a beautiful "
    assert (got.length, got.a_start, got.b_start) == brute_lcs(a, b)


def test_lcs_real_articles(reuters_docs: list[dict[str, str]]) -> None:
    texts = [d["text"] for d in reuters_docs if len(d["text"]) > 1500][:2]
    a, b = texts[0], texts[0][400:1400] + "\x00" + texts[1][:300]
    got = longest_common_substring(a, b)
    assert got.length == 1000 and got.a_start == 400 and got.b_start == 0


def test_lcs_bad_input() -> None:
    assert longest_common_substring("", "abc") == CommonSubstring(0, 0, 0, 0, 3)
    with pytest.raises(InputTypeError):
        longest_common_substring("abc", ["a"])
    with pytest.raises(InputTypeError):
        longest_common_substring(b"abc", b"abc")  # type: ignore[arg-type]
    with pytest.raises(InputTypeError):
        longest_common_substring([["unhashable"]], [["unhashable"]])
    assert longest_common_substring("a\ud800b\x00", "\ud800b").length == 2


def test_lcs_size_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(substring_module, "MAX_ELEMENTS", 10)
    with pytest.raises(InputTooLargeError):
        longest_common_substring("abcdef", "abcdef")
