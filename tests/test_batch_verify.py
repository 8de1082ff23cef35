"""Batched verification (neardup.batch.verify) equals the rule's ``judge`` pair by pair,
on the texts a corpus really holds: scraped pages with furniture and quotes, Unicode and
CJK, one-word and empty texts; ragged profile rows survive take/arrays and the profile
table's join."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup._jit import forced
from neardup.batch.judging import _saved_profiles, _table, release_profiles, table_stage
from neardup.batch.verify import (
    PairVerdicts,
    ProfileRows,
    _cosines,
    _coverage,
    profile_rows,
    row_counts,
    verify_pairs,
)
from neardup.batch.workdir import WorkDir
from neardup.rule import VERDICTS, Features, RuleConfig, decide, judge
from neardup.rule.features import Direction
from neardup.rule.verdict import decide_many

STORY = (
    "The central bank raised its main interest rate by half a point on Tuesday, the first "
    "increase in three years, citing a sharp rise in consumer prices over the winter. "
    "Officials said the decision was unanimous and that further increases could follow if "
    "inflation failed to slow in the coming months, according to a statement."
)
TEXTS = [
    STORY,
    "Share story\n" + STORY + "\nMost Read\n\n(AP Photo/Some One)",
    STORY[: len(STORY) // 2],
    "Analysts said: “" + STORY + "” They expected it.",
    "Die Zentralbank hat den Leitzins am Dienstag um einen halben Punkt angehoben, zum "
    "ersten Mal seit drei Jahren, wegen der stark gestiegenen Verbraucherpreise.",
    "央行周二将主要利率上调半个百分点，这是三年来首次加息，理由是冬季消费价格大幅上涨。",
    "央行周二将主要利率上调半个百分点，这是三年来首次加息。",
    "word",
    "",
    "   \n\n  ",
    "Most Read\nShare story\nSign up",
]


@pytest.mark.parametrize("compiled", [True, False])  # the kernels, and their numpy twins
def test_verdicts_equal_judge_on_every_pair(compiled: bool) -> None:
    rule = RuleConfig()
    rows = profile_rows(TEXTS, rule)
    pairs = np.array(list(itertools.combinations(range(len(TEXTS)), 2)), dtype=np.int64)
    with forced(compiled):
        verdicts = verify_pairs(pairs, rows, rule, features="all")
    labels = set()
    for k, (a, b) in enumerate(pairs.tolist()):
        expected = judge(TEXTS[a], TEXTS[b], rule)
        assert verdicts.label(k) == expected.label
        assert verdicts.scores[k] == expected.score
        assert verdicts.features(k) == expected.features
        labels.add(expected.label)
    assert {"duplicate", "unrelated"} <= labels


def test_another_rule_config_is_followed() -> None:
    rule = RuleConfig(partial_min_passage=10, duplicate_min_coverage=0.9, width=3)
    rows = profile_rows(TEXTS[:4], rule)
    pairs = np.array(list(itertools.combinations(range(4), 2)), dtype=np.int64)
    verdicts = verify_pairs(pairs, rows, rule)
    for k, (a, b) in enumerate(pairs.tolist()):
        assert verdicts.label(k) == judge(TEXTS[a], TEXTS[b], rule).label


def test_profile_rows_take_and_arrays(tmp_path: Path) -> None:
    """Rows taken from profiles equal the same rows joined by the profile table from
    per-partition saves (what batch judging reads), and verdicts read from either agree."""
    rule = RuleConfig()
    rows = profile_rows(TEXTS, rule)
    assert rows.rows == len(TEXTS)
    order = np.array([3, 0, 8, 5], dtype=np.int64)
    taken = rows.take(order)
    work = WorkDir(tmp_path / "work", "key")
    for part, i in enumerate(order.tolist()):  # one document a partition, in this order
        saved = _saved_profiles(np.zeros(1, dtype=np.int64), profile_rows([TEXTS[i]], rule))
        work.save("pay", part, saved)
    table_stage(work, np.arange(4, dtype=np.int64), 4, np.arange(4, dtype=np.int64))
    row_of, counts, joined = _table(work.path)
    assert row_of.tolist() == [0, 1, 2, 3]
    for name, value in taken.arrays().items():
        assert np.array_equal(value, joined.arrays()[name]), name
    assert np.array_equal(counts, np.column_stack(row_counts(taken)))
    assert not list(work.path.glob("pay.*"))  # the partitions' files are gone
    again = ProfileRows.from_arrays(taken.arrays())
    pairs = np.array([[0, 1], [1, 3], [0, 2]], dtype=np.int64)
    assert np.array_equal(
        verify_pairs(pairs, again, rule).labels,
        verify_pairs(pairs, joined, rule, counts=counts).labels,
    )
    release_profiles()


def test_no_pairs_and_verdicts_of_nothing() -> None:
    rule = RuleConfig()
    empty = verify_pairs(np.empty((0, 2), dtype=np.int64), profile_rows([], rule), rule)
    assert empty.labels.shape == (0,)
    assert PairVerdicts.concat([]).counts.shape == (0, 12)
    assert PairVerdicts.concat([]).kept.shape == (0,)


@pytest.mark.parametrize("text", ["", "word", STORY])
def test_a_text_and_itself(text: str) -> None:
    rule = RuleConfig()
    rows = profile_rows([text, text], rule)
    verdicts = verify_pairs(np.array([[0, 1]]), rows, rule)
    assert verdicts.label(0) == judge(text, text, rule).label


_COUNTS = st.tuples(
    st.integers(0, 60),
    st.integers(0, 60),
    st.integers(0, 60),
    st.integers(0, 60),
    st.integers(0, 60),
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(_COUNTS, _COUNTS, st.sampled_from([0.0, 0.1, 0.2, 0.2000001, 0.5, 1.0])),
        min_size=1,
        max_size=30,
    ),
    st.sampled_from(
        [
            RuleConfig(),
            RuleConfig(partial_min_passage=5, duplicate_min_coverage=0.6),
            RuleConfig(duplicate_min_coverage=0.5, duplicate_min_coverage_other=0.5),
        ]
    ),
)
def test_decide_many_equals_decide(
    rows: list[tuple[tuple[int, ...], tuple[int, ...], float]], rule: RuleConfig
) -> None:
    """Features of every kind (no prose, no tokens, values on the thresholds): the array
    form gives ``decide``'s label and score for each."""
    features = []
    for a, b, cosine in rows:
        # Keep each direction consistent: found <= total.
        da = Direction(min(a[0], a[1]), a[1], min(a[2], a[3]), a[3], a[4])
        db = Direction(min(b[0], b[1]), b[1], min(b[2], b[3]), b[3], b[4])
        features.append(Features(da, db, 0, 0.0, cosine))
    labels, scores = decide_many(
        np.array([f.coverage_a for f in features]),
        np.array([f.coverage_b for f in features]),
        np.array([f.passage for f in features], dtype=np.int64),
        np.array([f.cosine for f in features]),
        rule,
    )
    for k, f in enumerate(features):
        label, score, _ = decide(f, rule)
        assert VERDICTS[labels[k]] == label
        assert scores[k] == score


def test_coverage_arrays_equal_direction_coverage() -> None:
    rng = np.random.default_rng(3)
    tokens = rng.integers(0, 50, 2000)
    prose = np.minimum(tokens, rng.integers(0, 50, 2000))
    found_tokens = np.minimum(tokens, rng.integers(0, 50, 2000))
    found_prose = np.minimum(prose, found_tokens)
    got = _coverage(found_prose, prose, found_tokens, tokens)
    for k in range(2000):
        d = Direction(int(found_prose[k]), int(prose[k]), int(found_tokens[k]), int(tokens[k]), 0)
        assert got[k] == d.coverage


def test_cosine_of_huge_norms_is_exact() -> None:
    """Squared norms whose product passes 2**53 go through Python integers, as in the rule."""
    import math

    norm2 = np.array([(1 << 40) + 7, (1 << 30) + 3, 25, 0], dtype=np.int64)
    left = np.array([0, 2, 3, 0], dtype=np.int64)
    right = np.array([1, 2, 2, 0], dtype=np.int64)
    dots = np.array([(1 << 35) + 11, 25, 0, 5], dtype=np.int64)
    got = _cosines(dots, norm2, left, right)
    for k in range(4):
        n = int(norm2[left[k]]) * int(norm2[right[k]])
        want = min(1.0, int(dots[k]) / math.sqrt(n)) if n else 0.0
        assert got[k] == want


def _edited_corpus(seed: int, n: int) -> list[str]:
    """Copies, cuts, excerpts and unrelated texts of a few stories: every verdict occurs."""
    rng = np.random.default_rng(seed)
    words = (STORY + " " + TEXTS[4]).split()
    texts = []
    for _ in range(n):
        base = words[int(rng.integers(0, 20)) :][: int(rng.integers(5, len(words)))]
        kind = int(rng.integers(0, 4))
        if kind == 0:  # word edits
            base = [w if rng.random() > 0.1 else "edit" for w in base]
        elif kind == 1:  # shuffled sentences-ish: blocks of 8 words
            blocks = [base[i : i + 8] for i in range(0, len(base), 8)]
            rng.shuffle(blocks)
            base = [w for b in blocks for w in b]
        elif kind == 2:  # unrelated filler around a passage
            base = ["filler"] * int(rng.integers(0, 60)) + base[:40]
        texts.append(("\n" if rng.random() < 0.2 else " ").join(base))
    return texts + TEXTS


@pytest.mark.parametrize(("seed", "compiled"), [(0, True), (1, True), (1, False)])
def test_screened_answers_equal_judge(seed: int, compiled: bool) -> None:
    """The bounds screen changes no answer: on every pair of an edited corpus, the verdict
    question gives judge's verdict (features kept or not) and the duplicate question says
    duplicate exactly when judge does, with judge's score."""
    rule = RuleConfig()
    texts = _edited_corpus(seed, 40)
    rows = profile_rows(texts, rule)
    pairs = np.array(list(itertools.combinations(range(len(texts)), 2)), dtype=np.int64)
    with forced(compiled):
        verdicts = verify_pairs(pairs, rows, rule, features="none")
        related = verify_pairs(pairs, rows, rule, features="related")
        duplicate = verify_pairs(pairs, rows, rule, features="none", question="duplicate")
    seen = set()
    for k, (a, b) in enumerate(pairs.tolist()):
        expected = judge(texts[a], texts[b], rule)
        seen.add(expected.label)
        assert verdicts.label(k) == related.label(k) == expected.label
        assert verdicts.scores[k] == expected.score
        if expected.label != "unrelated":
            assert related.features(k) == expected.features
        if expected.label == "duplicate":
            assert duplicate.label(k) == "duplicate"
            assert duplicate.scores[k] == expected.score
        else:
            assert duplicate.label(k) == "not duplicate"
            assert np.isnan(duplicate.scores[k])
    assert seen == set(VERDICTS)


def test_bounds_hold_for_every_pair() -> None:
    """copy_possible_pairs never rules out the verdict judge gives (the screen's guarantee),
    and rules out some pairs (it screens)."""
    from neardup.batch.verify import _screen_counts, row_counts
    from neardup.rule.bounds import copy_possible_pairs

    for rule in (RuleConfig(), RuleConfig(width=3, partial_min_passage=12)):
        texts = _edited_corpus(5, 40)
        rows = profile_rows(texts, rule)
        pairs = np.array(list(itertools.combinations(range(len(texts)), 2)), dtype=np.int64)
        left, right = pairs[:, 0].copy(), pairs[:, 1].copy()
        shared, _ = _screen_counts(
            left,
            right,
            rows.sets,
            rows.set_offsets,
            rows.terms,
            rows.term_counts,
            rows.term_offsets,
            False,
        )
        per = row_counts(rows)
        dup, part = copy_possible_pairs(
            shared, tuple(c[left] for c in per), tuple(c[right] for c in per), rule
        )
        for k, (a, b) in enumerate(pairs.tolist()):
            label = judge(texts[a], texts[b], rule).label
            assert dup[k] or label != "duplicate"
            assert part[k] or dup[k] or label != "partial"
        assert not dup.all()
        assert not (dup | part).all()


def test_duplicate_question_keeps_no_features() -> None:
    from neardup.errors import ConfigError

    rows = profile_rows(TEXTS[:2], RuleConfig())
    with pytest.raises(ConfigError):
        verify_pairs(np.array([[0, 1]]), rows, RuleConfig(), question="duplicate")
    with pytest.raises(ConfigError):
        verify_pairs(np.array([[0, 1]]), rows, RuleConfig(), question="maybe")


def test_row_counts_equal_profile_counts() -> None:
    from neardup.batch.verify import row_counts
    from neardup.rule import profile
    from neardup.rule.bounds import profile_counts

    rule = RuleConfig()
    per = row_counts(profile_rows(TEXTS, rule))
    for d, text in enumerate(TEXTS):
        assert tuple(int(c[d]) for c in per) == profile_counts(profile(text, rule))
