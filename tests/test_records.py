"""The shared input record: every caller-controlled value is checked once, here, into a
typed ``InputError`` (dates in range, id length and type, NUL and lone surrogates)."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given
from hypothesis import strategies as st

from neardup.errors import InputError, InputTooLargeError, InputTypeError
from neardup.records import (
    MAX_DATE,
    MAX_ID_BYTES,
    MIN_DATE,
    Article,
    check_id,
    check_text,
    epoch_us,
    from_epoch_us,
    parse_date,
    shown,
    text_hash,
)


@pytest.mark.parametrize(
    "value",
    [
        "0001-01-01T00:00:00+14:00",  # before year 1 in UTC
        "9999-12-31T23:59:59-14:00",  # after year 9999 in UTC
        "0001-01-01T00:00:00+00:01",
    ],
)
def test_dates_that_overflow_in_utc_are_input_errors(value: str) -> None:
    with pytest.raises(InputError, match="outside the supported range"):
        parse_date(value)
    with pytest.raises(InputError, match="outside the supported range"):
        Article.from_mapping({"id": "a", "text": "t", "date": value})


def test_dates_at_the_ends_of_the_range_are_accepted() -> None:
    assert parse_date("0001-01-01T00:00:00Z") == MIN_DATE
    assert parse_date("9999-12-31T23:59:59.999999Z") == MAX_DATE
    assert parse_date("9999-12-31T23:59:59.999999") == MAX_DATE  # no zone: UTC
    assert parse_date("2024-03-01T12:00:00+05:30") == dt.datetime(2024, 3, 1, 6, 30, tzinfo=dt.UTC)
    for bad in ("2024-02-30", "yesterday", "2024-01-01T00:00:00+99:00"):
        with pytest.raises(InputError):
            parse_date(bad)
    with pytest.raises(InputTypeError):
        parse_date(20240101)


def test_article_dates_are_normalised_to_utc_and_checked() -> None:
    naive = Article("a", "t", date=dt.datetime(2024, 1, 1, 12))
    assert naive.date == dt.datetime(2024, 1, 1, 12, tzinfo=dt.UTC)
    east = dt.timezone(dt.timedelta(hours=14))
    with pytest.raises(InputError, match="outside"):
        Article("a", "t", date=dt.datetime(1, 1, 1, tzinfo=east))


@pytest.mark.parametrize(
    ("field", "value", "problem"),
    [
        ("text", "a\x00b", "NUL"),
        ("text", "a\ud800b", r"lone surrogate \(U\+D800\)"),
        ("text", "\udfff", r"lone surrogate \(U\+DFFF\)"),
        ("title", "x\x00", "NUL"),
        ("source", "\ud83d", "lone surrogate"),
        ("id", "a\x00", "NUL"),
        ("id", "\ud800", "lone surrogate"),
    ],
)
def test_nul_and_lone_surrogates_are_refused_everywhere(
    field: str, value: str, problem: str
) -> None:
    data = {"id": "a", "text": "some text", field: value}
    with pytest.raises(InputError, match=problem):
        Article.from_mapping(data)
    with pytest.raises(InputError, match=problem):
        Article(**{"id": "a", "text": "some text", field: value})


def test_valid_unicode_passes_unchanged() -> None:
    text = "Crème brûlée \U0001f600 مرحبا 中文 \u202e"
    assert check_text(text, "text") is text
    assert Article("é" * 10, text, title=text).text == text


def test_ids_have_a_byte_limit_and_integer_ids_fit_in_64_bits() -> None:
    assert check_id("x" * MAX_ID_BYTES) == "x" * MAX_ID_BYTES
    with pytest.raises(InputTooLargeError, match=str(MAX_ID_BYTES)):
        check_id("x" * (MAX_ID_BYTES + 1))
    with pytest.raises(InputTooLargeError):
        check_id("é" * (MAX_ID_BYTES // 2 + 1))  # 2 bytes each in UTF-8
    with pytest.raises(InputTooLargeError):
        Article.from_mapping({"id": "x" * 1_000_000, "text": "t"})
    assert Article.from_mapping({"id": 2**64 - 1, "text": "t"}).id == str(2**64 - 1)
    assert Article.from_mapping({"id": -(2**63), "text": "t"}).id == str(-(2**63))
    for big in (2**64, -(2**63) - 1, 10**5000):
        with pytest.raises(InputError, match="64 bits"):
            Article.from_mapping({"id": big, "text": "t"})
    for empty in ("", None):
        with pytest.raises(InputError):
            Article.from_mapping({"id": empty, "text": "t"})


def test_messages_quote_long_input_shortly() -> None:
    with pytest.raises(InputError) as err:
        Article.from_mapping({"id": "x" * 1_000_000, "text": "t"})
    assert len(str(err.value)) < 300
    assert shown("abc") == "'abc'" and len(shown("y" * 10_000)) < 80


def test_text_hash_is_the_stored_content_hash() -> None:
    # A fixed value: stored rows are checked against it, so it must never change.
    assert text_hash("Shares rose.") == "8f1b4ba6ebfc506409867c00688adb66"
    assert text_hash("Shares rose.") != text_hash("Shares rose!")
    assert len(text_hash("")) == 32


@given(st.datetimes(timezones=st.just(dt.UTC)))
def test_epoch_microseconds_are_exact_and_invert(when: dt.datetime) -> None:
    us = epoch_us(when)
    delta = when - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
    assert us == (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    assert from_epoch_us(us) == when
