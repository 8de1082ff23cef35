"""Whole-partition profiles (neardup.batch.profiles) equal the rule's profile of every
text: Unicode, CJK, furniture and quotes, empty and short texts, texts holding the
separator word, and partitions longer than one tokenising chunk."""

from __future__ import annotations

import numpy as np
import pytest

from neardup.batch import profiles
from neardup.batch.fastsign import _SEPARATOR
from neardup.batch.profiles import partition_profiles
from neardup.batch.verify import ProfileRows, profile_rows
from neardup.rule import RuleConfig
from test_batch_verify import TEXTS, _edited_corpus


def _assert_rows_equal(got: ProfileRows, want: ProfileRows) -> None:
    for name, value in want.arrays().items():
        other = got.arrays()[name]
        assert other.dtype == value.dtype, name
        assert np.array_equal(other, value), name


@pytest.mark.parametrize(
    "rule", [RuleConfig(), RuleConfig(width=2, min_paragraph_tokens=3), RuleConfig(width=9)]
)
def test_partition_profiles_equal_profile_rows(rule: RuleConfig) -> None:
    texts = [*_edited_corpus(2, 30), "1999 and 2000", "a b", "“quoted words” here", "x"]
    _assert_rows_equal(partition_profiles(texts, rule), profile_rows(texts, rule))


def test_without_terms_only_the_terms_differ() -> None:
    rule = RuleConfig()
    got = partition_profiles(TEXTS, rule, terms=False)
    want = profile_rows(TEXTS, rule)
    for name in ("shingles", "shingle_offsets", "flags", "token_offsets", "sets", "set_offsets"):
        assert np.array_equal(got.arrays()[name], want.arrays()[name]), name
    assert got.terms.shape == (0,) and got.term_counts.shape == (0,)
    assert np.array_equal(got.term_offsets, np.zeros(len(TEXTS) + 1))
    assert not got.norm2.any()


def test_separator_word_in_a_text_falls_back() -> None:
    rule = RuleConfig()
    texts = [*TEXTS, f"a text that holds {_SEPARATOR} itself, and more words after it"]
    _assert_rows_equal(partition_profiles(texts, rule), profile_rows(texts, rule))
    bare = partition_profiles(texts, rule, terms=False)
    assert bare.rows == len(texts) and bare.terms.shape == (0,)


def test_many_chunks_and_no_texts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(profiles, "_CHUNK_CHARS", 300)
    rule = RuleConfig()
    texts = _edited_corpus(4, 25) + TEXTS
    _assert_rows_equal(partition_profiles(texts, rule), profile_rows(texts, rule))
    assert partition_profiles([], rule).rows == 0
    assert partition_profiles(["", ""], rule).rows == 2
