"""One text against many packed profiles (neardup.rule): the packed features, screen and
verdicts equal the pair-by-pair rule, and the screen's early-outs are bounds of it."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup._jit import forced
from neardup.errors import SchemeMismatchError, SignatureFormatError
from neardup.rule import VERDICTS, Profile, RuleConfig, decide, pair_features, profile
from neardup.rule.bounds import screen, screen_rows
from neardup.rule.features import (
    Direction,
    Features,
    cosines,
    features_rows,
    pack_profile,
    pack_profile_bytes,
    pack_rows,
    unpack_profile,
)
from neardup.rule.verdict import decide_many

WORDS = ["alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa", "tau", "rho", "phi"]


@st.composite
def texts(draw: st.DrawFn) -> str:
    # Paragraphs of one to 40 words: long ones are prose, short ones furniture; quotes and
    # captions mark words; small vocabularies give partial and whole copies.
    vocab = draw(st.integers(3, len(WORDS)))
    paras = draw(
        st.lists(
            st.lists(
                st.sampled_from([*WORDS[:vocab], '"quoted', 'words"', "(Photo/x)", "1987"]),
                max_size=40,
            ),
            max_size=6,
        )
    )
    return "\n\n".join(" ".join(p) for p in paras)


def _copy_of(base: str, cut: int, extra: str) -> str:
    words = base.split(" ")
    return " ".join(words[cut:]) + " " + extra


@st.composite
def families(draw: st.DrawFn) -> tuple[str, list[str]]:
    """A text and several others, some of them edited copies of it (so that every verdict
    occurs)."""
    base = draw(texts())
    others = []
    for _ in range(draw(st.integers(0, 6))):
        if base and draw(st.booleans()):
            others.append(_copy_of(base, draw(st.integers(0, 30)), draw(texts())))
        else:
            others.append(draw(texts()))
    return base, others


def _config(draw_width: int, passage: int) -> RuleConfig:
    return RuleConfig(width=draw_width, partial_min_passage=passage)


def test_a_packed_profile_unpacks_to_the_same_profile() -> None:
    text = "The central bank raised its main rate.\n\n" + " ".join(["alpha beta gamma"] * 9)
    p = profile(text)
    q = unpack_profile(pack_profile(p), p.scheme_id)
    assert q == p
    assert np.array_equal(q.shingle_set, p.shingle_set)
    assert (q.prose, q.term_norm2, q.tokens) == (p.prose, p.term_norm2, p.tokens)
    assert q.term_counts.dtype == np.uint32 and q.flags.dtype == np.uint8
    empty = Profile(
        p.scheme_id,
        *(np.zeros(0, d) for d in (np.uint64, np.uint8, np.uint64)),
        np.zeros(0, np.uint32),
    )
    assert unpack_profile(pack_profile(empty), p.scheme_id) == empty


@settings(max_examples=150, deadline=None)
@given(texts(), st.integers(1, 5), st.booleans())
def test_a_stored_profile_packs_as_the_profile_it_stores(
    text: str, width: int, compiled: bool
) -> None:
    # What judging reads back from a store: its packed row straight from the stored bytes,
    # compiled or not, is the row of the profile those bytes hold, word for word.
    cfg = _config(width, 8)
    data = profile(text, cfg).to_bytes()
    expected = pack_profile(Profile.from_bytes(data, scheme_id=cfg.profile_id))
    with forced(compiled):
        got = pack_profile_bytes(data, cfg.profile_id)
    assert got.dtype == np.uint64
    assert got.tolist() == expected.tolist()


def test_stored_profile_bytes_of_another_scheme_or_damaged_are_refused() -> None:
    data = profile("The central bank raised its main rate again today.").to_bytes()
    with pytest.raises(SchemeMismatchError):
        pack_profile_bytes(data, "another-scheme")
    sid = Profile.from_bytes(data).scheme_id
    for bad in (data[:-1], data + b"x", b"NDPF", b""):
        with pytest.raises(SignatureFormatError):
            pack_profile_bytes(bad, sid)


@settings(max_examples=150, deadline=None)
@given(families(), st.integers(1, 5), st.integers(1, 40))
def test_packed_features_screen_and_verdicts_equal_the_rule(
    family: tuple[str, list[str]], width: int, passage: int
) -> None:
    cfg = _config(width, passage)
    base, others = family
    pa = profile(base, cfg)
    pbs = [profile(o, cfg) for o in others]
    rows, offsets = pack_rows([pack_profile(p) for p in pbs])
    # features of every row, in a shuffled order with repeats
    select = np.array([i for i in reversed(range(len(pbs)))] * 2, dtype=np.int64)
    got = features_rows(pa, rows, offsets, select, width)
    labels, scores = decide_many(got.coverage_a, got.coverage_b, got.passage, got.cosine, cfg)
    for j, i in enumerate(select.tolist()):
        f = pair_features(pa, pbs[i], width)
        assert got.coverage_a[j] == f.coverage_a
        assert got.coverage_b[j] == f.coverage_b
        assert got.passage[j] == f.passage
        assert got.cosine[j] == f.cosine
        assert got.shared[j] == f.shared_shingles
        label, score, _ = decide(f, cfg)
        assert VERDICTS[labels[j]] == label
        assert scores[j] == score
    # the screen: the same as screen() on profiles, and its early-out is a bound of the rule
    s = screen_rows(pa, rows, offsets, cfg)
    ref = screen(pa, pbs, cfg)
    assert s.shared.tolist() == ref.shared.tolist()
    assert s.cosine.tolist() == ref.cosine
    assert s.copy_possible.tolist() == ref.copy_possible.tolist()
    for i, pb in enumerate(pbs):
        f = pair_features(pa, pb, width)
        label = decide(f, cfg)[0]
        if not s.copy_possible[i]:
            assert label == ("similar" if f.cosine >= cfg.similar_min_cosine else "unrelated")


def test_the_bound_leaves_copies_possible_for_copies() -> None:
    # Not vacuous: copies are screened as possible, unrelated texts are decided by the bound.
    cfg = RuleConfig()
    base = " ".join(f"w{i}" for i in range(120))
    copy = " ".join(f"w{i}" for i in range(5, 120)) + " extra words here"
    other = " ".join(f"v{i}" for i in range(120))
    pa = profile(base, cfg)
    rows, offsets = pack_rows([pack_profile(profile(t, cfg)) for t in (copy, other)])
    s = screen_rows(pa, rows, offsets, cfg)
    assert s.copy_possible.tolist() == [True, False]
    f = features_rows(pa, rows, offsets, np.array([0]), cfg.width)
    labels, _ = decide_many(f.coverage_a, f.coverage_b, f.passage, f.cosine, cfg)
    assert VERDICTS[labels[0]] == "duplicate"


def test_nothing_to_screen() -> None:
    cfg = RuleConfig()
    rows, offsets = pack_rows([])
    s = screen_rows(profile("some words here", cfg), rows, offsets, cfg)
    assert s.shared.shape == (0,) and s.cosine.shape == (0,) and s.copy_possible.shape == (0,)
    f = features_rows(profile("some words", cfg), rows, offsets, np.zeros(0, np.int64), 4)
    assert f.coverage_a.shape == (0,)


directions = st.builds(
    lambda found, extra, ftok, extra_tok, run: Direction(
        found, found + extra, found + ftok, found + extra + ftok + extra_tok, run
    ),
    st.integers(0, 60),
    st.integers(0, 60),
    st.integers(0, 20),
    st.integers(0, 20),
    st.integers(0, 60),
)
thresholds = st.sampled_from([0.0, 0.2, 0.3, 0.5, 1.0]) | st.floats(0.0, 1.0)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(directions, directions, thresholds), min_size=1, max_size=8),
    st.integers(1, 40),
)
def test_decide_many_equals_decide(pairs: list[tuple[Direction, Direction, float]], p: int) -> None:
    cfg = RuleConfig(partial_min_passage=p)
    feats = [Features(a, b, 0, 0.0, cos) for a, b, cos in pairs]
    labels, scores = decide_many(
        np.array([f.coverage_a for f in feats]),
        np.array([f.coverage_b for f in feats]),
        np.array([f.passage for f in feats], dtype=np.int64),
        np.array([f.cosine for f in feats]),
        cfg,
    )
    for j, f in enumerate(feats):
        label, score, _ = decide(f, cfg)
        assert (VERDICTS[labels[j]], scores[j]) == (label, score)


@pytest.mark.parametrize("scale", [1, 1 << 27, 1 << 40])
def test_cosines_are_the_rules_floats_for_large_norms(scale: int) -> None:
    rng = np.random.default_rng(7)
    norm2 = int(rng.integers(1, 1000)) * scale
    norms2 = rng.integers(0, 1000, size=50).astype(np.int64) * scale
    dots = rng.integers(0, 1000, size=50).astype(np.int64) * scale
    got = cosines(dots, norm2, norms2)
    for d, b, c in zip(dots.tolist(), norms2.tolist(), got.tolist(), strict=True):
        n = norm2 * b
        assert c == (min(1.0, d / math.sqrt(n)) if n else 0.0)


@pytest.mark.parametrize("count", [3, 1 << 20, 1 << 26, 1 << 27])
def test_packed_cosines_are_the_rules_for_large_term_counts(count: int) -> None:
    # Squared norms past 2**53 (counts of 2**27 and more) take the exact path.
    cfg = RuleConfig()
    base = profile("alpha beta gamma delta omega sigma kappa tau rho phi " * 3, cfg)

    def with_counts(p: Profile, scale: list[int]) -> Profile:
        counts = np.array([min(count * s, 4_000_000_000) for s in scale], dtype=np.uint32)
        return Profile(p.scheme_id, p.shingles, p.flags, p.terms, counts)

    k = base.terms.shape[0]
    a = with_counts(base, [1 + i % 3 for i in range(k)])
    others = [with_counts(base, [1 + (i + j) % 4 for i in range(k)]) for j in range(3)]
    rows, offsets = pack_rows([pack_profile(p) for p in others])
    f = features_rows(a, rows, offsets, np.arange(3), cfg.width)
    s = screen_rows(a, rows, offsets, cfg)
    for j, b in enumerate(others):
        want = pair_features(a, b, cfg.width).cosine
        assert f.cosine[j] == want and s.cosine[j] == want


def test_pack_rows_equals_concatenation() -> None:
    rows = [np.arange(n, dtype=np.uint64) * np.uint64(7) for n in (3, 0, 5)]
    strided = np.arange(20, dtype=np.uint64)[::2]
    for case in ([], rows, [*rows, strided]):
        packed, offsets = pack_rows(case)
        want = np.concatenate(case) if case else np.zeros(0, np.uint64)
        assert packed.dtype == np.uint64 and packed.tolist() == want.tolist()
        assert offsets.tolist() == [0, *np.cumsum([len(r) for r in case]).tolist()]
