"""Batched verification (neardup.batch.verify) equals the rule's ``judge`` pair by pair,
on the texts a corpus really holds: scraped pages with furniture and quotes, Unicode and
CJK, one-word and empty texts; ragged profile rows survive take/concat/arrays."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from neardup.batch.verify import PairVerdicts, ProfileRows, profile_rows, verify_pairs
from neardup.rule import RuleConfig, judge

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


def test_verdicts_equal_judge_on_every_pair() -> None:
    rule = RuleConfig()
    rows = profile_rows(TEXTS, rule)
    pairs = np.array(list(itertools.combinations(range(len(TEXTS)), 2)), dtype=np.int64)
    verdicts = verify_pairs(pairs, rows, rule)
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


def test_profile_rows_take_concat_and_arrays() -> None:
    rule = RuleConfig()
    rows = profile_rows(TEXTS, rule)
    assert rows.rows == len(TEXTS)
    order = np.array([3, 0, 8, 5], dtype=np.int64)
    taken = rows.take(order)
    single = [profile_rows([TEXTS[i]], rule) for i in order.tolist()]
    joined = ProfileRows.concat(single)
    for name, value in taken.arrays().items():
        assert np.array_equal(value, joined.arrays()[name]), name
    again = ProfileRows.from_arrays(taken.arrays())
    pairs = np.array([[0, 1], [1, 3], [0, 2]], dtype=np.int64)
    assert np.array_equal(
        verify_pairs(pairs, again, rule).labels, verify_pairs(pairs, joined, rule).labels
    )


def test_no_pairs_and_concat_of_nothing() -> None:
    rule = RuleConfig()
    empty = verify_pairs(np.empty((0, 2), dtype=np.int64), profile_rows([], rule), rule)
    assert empty.labels.shape == (0,)
    assert PairVerdicts.concat([]).counts.shape == (0, 12)
    assert ProfileRows.concat([]).rows == 0


@pytest.mark.parametrize("text", ["", "word", STORY])
def test_a_text_and_itself(text: str) -> None:
    rule = RuleConfig()
    rows = profile_rows([text, text], rule)
    verdicts = verify_pairs(np.array([[0, 1]]), rows, rule)
    assert verdicts.label(0) == judge(text, text, rule).label
