"""The text stage: tokens with offsets, sentences, the fast path, and hostile input."""

from __future__ import annotations

import unicodedata
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.errors import ConfigError, InputTypeError
from neardup.text import (
    TextConfig,
    forms_of_raw_token,
    forms_of_raw_tokens,
    raw_tokens,
    sentence_spans,
    sentences,
    token_forms,
    tokenize,
    tokenize_reference,
)

PLAIN = TextConfig(stem=False)


def sentence_texts(text: str) -> list[str]:
    return [text[s:e] for s, e in sentence_spans(text)]


# --- sentences --------------------------------------------------------------------------


def test_sentences_survive_abbreviations_initials_decimals() -> None:
    text = (
        "Mr. J. Smith of Acme Corp. said profit rose 3.5 pct to 1,000.25 dlrs. "
        "The U.S. Treasury disagreed. Shares fell e.g. in Tokyo."
    )
    assert sentence_texts(text) == [
        "Mr. J. Smith of Acme Corp. said profit rose 3.5 pct to 1,000.25 dlrs.",
        "The U.S. Treasury disagreed.",
        "Shares fell e.g. in Tokyo.",
    ]


def test_sentences_with_quotes_and_questions() -> None:
    text = '"We will not cut rates," he said. "Why?" she asked! Then silence.'
    assert sentence_texts(text) == [
        '"We will not cut rates," he said.',
        '"Why?" she asked!',
        "Then silence.",
    ]


def test_sentences_cjk_full_width_and_paragraphs() -> None:
    assert sentence_texts("東京の株価は上昇した。円は下落した。") == [
        "東京の株価は上昇した。",
        "円は下落した。",
    ]
    assert sentence_texts("first paragraph\n\nsecond paragraph") == [
        "first paragraph",
        "second paragraph",
    ]


def test_no_boundary_is_one_sentence_and_empty_is_none() -> None:
    assert sentence_texts("no boundary at all here") == ["no boundary at all here"]
    assert sentence_spans("") == []
    assert sentence_spans(" \n\t ") == []


def test_sentences_offsets_point_into_the_original() -> None:
    text = "First one.  Second one!\nThird?"
    for (start, end), toks in sentences(text, PLAIN):
        for form, s, e in zip(toks.forms, toks.starts, toks.ends, strict=True):
            assert start <= s < e <= end
            assert text[s:e].casefold() == form


# --- tokens -----------------------------------------------------------------------------


def test_tokens_numbers_apostrophes_and_offsets() -> None:
    text = "Don't sell 1,000.5 shares at 3.5 dlrs; it's U.S. policy"
    toks = tokenize(text, PLAIN)
    assert toks.forms == (
        "don't", "sell", "1,000.5", "shares", "at", "3.5", "dlrs", "it's", "u", "s", "policy",
    )  # fmt: skip
    for form, s, e in zip(toks.forms, toks.starts, toks.ends, strict=True):
        assert text[s:e].casefold() == form


def test_number_policies_stop_words_and_min_length() -> None:
    text = "The bank cut 11.5 pct of it"
    assert tokenize(text, TextConfig(stem=False, numbers="drop")).forms == (
        "the", "bank", "cut", "pct", "of", "it",
    )  # fmt: skip
    assert tokenize(text, TextConfig(stem=False, numbers="mask")).forms[3] == "0"
    assert tokenize(text, TextConfig(stem=False, drop_stop_words=True)).forms == (
        "bank", "cut", "11.5", "pct",
    )  # fmt: skip
    assert tokenize(text, TextConfig(stem=False, min_token_length=3)).forms == (
        "the", "bank", "cut", "11.5", "pct",
    )  # fmt: skip


def test_stemming_and_case_folding() -> None:
    assert tokenize("Rates ROSE, rising STRASSE Straße").forms == (
        "rate", "rose", "rise", "strass", "strass",
    )  # fmt: skip


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Привет мир, курс рубля", ("привет", "мир", "курс", "рубля")),
        ("Η τράπεζα της Ελλάδας", ("η", "τράπεζα", "τησ", "ελλάδασ")),  # casefold: ς -> σ
        ("البنك المركزي السعودي", ("البنك", "المركزي", "السعودي")),
        ("東京株式", ("東京", "京株", "株式")),
        ("ｆｕｌｌ ｗｉｄｔｈ", ("full", "width")),
    ],
)
def test_any_script_is_tokenised(text: str, expected: tuple[str, ...]) -> None:
    assert tokenize(text, PLAIN).forms == expected


def test_cjk_chars_policy() -> None:
    assert tokenize("東京株式", TextConfig(stem=False, cjk="chars")).forms == (
        "東",
        "京",
        "株",
        "式",
    )


@pytest.mark.parametrize(
    "text",
    [
        "lone \ud800 surrogate \udfff here",
        "control\x00chars\x07and\x1b[0m escapes\x7f",
        "".join(chr(i) for i in range(0, 0x3000, 7)),
        bytes(range(256)).decode("latin-1") * 3,
        "\ufeff\u200b\u200d zero width \u2028 separators",
        "",
        "   \n\t  ",
        "... !!! ???",
    ],
)
def test_hostile_text_never_crashes(text: str) -> None:
    toks = tokenize(text)
    assert len(toks.forms) == len(toks.starts) == len(toks.ends)
    assert list(toks.forms) == token_forms(text)
    for form in toks.forms:
        assert form  # never an empty token
        form.encode("utf-8", "surrogatepass")
    sentence_spans(text)


def test_surrogates_and_controls_are_not_tokens() -> None:
    assert tokenize("a\ud800b\x00c", PLAIN).forms == ("a", "b", "c")
    assert tokenize("\x00\x01\x02", PLAIN).forms == ()


def test_bytes_and_other_types_are_refused() -> None:
    with pytest.raises(InputTypeError, match="decode"):
        tokenize(b"bytes text")  # type: ignore[arg-type]
    with pytest.raises(InputTypeError):
        token_forms(42)  # type: ignore[arg-type]
    with pytest.raises(InputTypeError):
        sentence_spans(None)  # type: ignore[arg-type]


def test_config_validation() -> None:
    with pytest.raises(ConfigError, match="language"):
        TextConfig(language="klingon")
    with pytest.raises(ConfigError, match="numbers"):
        TextConfig(numbers="round")
    with pytest.raises(ConfigError, match="min_token_length"):
        TextConfig(min_token_length=0)
    with pytest.raises(ConfigError, match="stop_words"):
        TextConfig(stop_words=frozenset({1}))  # type: ignore[arg-type]


def test_custom_stop_words_are_normalised() -> None:
    cfg = TextConfig(stem=False, drop_stop_words=True, stop_words=frozenset({"BANK"}))
    assert tokenize("The Bank rose", cfg).forms == ("the", "rose")


# --- the fast path ----------------------------------------------------------------------

CONFIGS = [
    TextConfig(),
    PLAIN,
    TextConfig(drop_stop_words=True, min_token_length=3, numbers="mask"),
    TextConfig(numbers="drop", cjk="chars"),
]


@pytest.mark.parametrize("cfg", CONFIGS)
def test_fast_path_equals_tokenize_on_reuters(
    reuters_docs: list[dict[str, Any]], cfg: TextConfig
) -> None:
    for doc in reuters_docs[:1500]:
        assert token_forms(doc["text"], cfg) == list(tokenize(doc["text"], cfg).forms)


@settings(max_examples=300, deadline=None)
@given(
    st.text(
        alphabet=st.characters(codec="utf-8") | st.sampled_from(list(" .,'’3東京Ωя")), max_size=80
    )
)
def test_fast_path_equals_tokenize_on_any_text(text: str) -> None:
    for cfg in CONFIGS:
        assert token_forms(text, cfg) == list(tokenize(text, cfg).forms)


def test_raw_tokens_and_forms_of_raw_token() -> None:
    raws = raw_tokens("The 3.5 pct, don't")
    assert raws == ["The", "3.5", "pct", "don't"]
    assert forms_of_raw_token("The", TextConfig(drop_stop_words=True)) == ()
    assert forms_of_raw_token("Rates") == ("rate",)
    assert forms_of_raw_token("東京株") == ("東京", "京株")


@pytest.mark.parametrize("cfg", [*CONFIGS, TextConfig(drop_stop_words=True, min_token_length=3)])
def test_forms_of_raw_tokens_batch_equals_one_at_a_time(
    reuters_docs: list[dict[str, Any]], cfg: TextConfig
) -> None:
    """The batch (one stemmer call; an inlined path for ASCII batches) against the
    one-token function, on a Reuters vocabulary: all-ASCII, mixed, and edge batches."""
    vocab = sorted({r for doc in reuters_docs[:1500] for r in raw_tokens(doc["text"])})
    ascii_vocab = [r for r in vocab if r.isascii()]
    extra = ["東京株", "Ωmega", "ＡＢＣ", "3.5", "1,000", "3rd", "don't", "a b", "The"]
    for batch in (ascii_vocab, vocab + extra, extra, ["x"], []):
        assert forms_of_raw_tokens(batch, cfg) == [forms_of_raw_token(r, cfg) for r in batch]
    assert len(ascii_vocab) > 10_000  # the ASCII path was really exercised


def test_ten_megabyte_text() -> None:
    unit = "The central bank cut its 11.5 pct rate. Mr. Smith said markets rallied! "
    text = unit * (10_000_000 // len(unit))
    assert len(text) >= 9_900_000
    forms = token_forms(text)
    assert len(forms) == 13 * (10_000_000 // len(unit))
    assert len(sentence_spans(text)) == 2 * (10_000_000 // len(unit))


def test_nfkc_changes_length_offsets_stay_in_bounds() -> None:
    text = "ﬁnance ㍻ ＡＢＣ"  # ligature, squared era name, full-width letters
    toks = tokenize(text, PLAIN)
    assert toks.forms[0] == "finance"
    for s, e in zip(toks.starts, toks.ends, strict=True):
        assert 0 <= s < e <= len(text)
    assert unicodedata.normalize("NFKC", "ＡＢＣ").casefold() in toks.forms


# --- the cached tokenize equals the straightforward one (forms and offsets) -------------------


@pytest.mark.parametrize("cfg", CONFIGS)
def test_tokenize_equals_reference_on_reuters(
    reuters_docs: list[dict[str, Any]], cfg: TextConfig
) -> None:
    for doc in reuters_docs[:1000]:
        assert tokenize(doc["text"], cfg) == tokenize_reference(doc["text"], cfg)


TRICKY = list(" .,'’3東京ｱｲ㍿㍻ﬁＡΩяthe a is é\u0301\ud800\x00")


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8") | st.sampled_from(TRICKY), max_size=60))
def test_tokenize_equals_reference_on_any_text(text: str) -> None:
    for cfg in [*CONFIGS, TextConfig(drop_stop_words=True, stop_words=frozenset({"ア", "the"}))]:
        assert tokenize(text, cfg) == tokenize_reference(text, cfg)
