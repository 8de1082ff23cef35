"""The text stage: tokens with offsets, sentences, the fast path, and hostile input."""

from __future__ import annotations

import unicodedata
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import data_path, read_jsonl_gz
from neardup._jit import forced
from neardup.errors import ConfigError, InputTypeError
from neardup.shingles import hash_forms, token_hashes
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


@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.parametrize("cfg", CONFIGS)
def test_fast_path_equals_tokenize_on_reuters(
    reuters_docs: list[dict[str, Any]], cfg: TextConfig, compiled: bool
) -> None:
    with forced(compiled):
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
        expected = list(tokenize_reference(text, cfg).forms)
        for compiled in (True, False):
            with forced(compiled):
                assert token_forms(text, cfg) == expected


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


@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.parametrize("cfg", CONFIGS)
def test_tokenize_equals_reference_on_reuters(
    reuters_docs: list[dict[str, Any]], cfg: TextConfig, compiled: bool
) -> None:
    with forced(compiled):
        for doc in reuters_docs[:1000]:
            assert tokenize(doc["text"], cfg) == tokenize_reference(doc["text"], cfg)


TRICKY = list(" .,'’3東京ｱｲ㍿㍻ﬁＡΩяthe a is é\u0301\ud800\x00")


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8") | st.sampled_from(TRICKY), max_size=60))
def test_tokenize_equals_reference_on_any_text(text: str) -> None:
    for cfg in [*CONFIGS, TextConfig(drop_stop_words=True, stop_words=frozenset({"ア", "the"}))]:
        expected = tokenize_reference(text, cfg)
        for compiled in (True, False):
            with forced(compiled):
                assert tokenize(text, cfg) == expected


@pytest.mark.parametrize("text", ["໐", "x ໐ 12", "໐໑.໒ ກາ", "๑๒๓ ภาษาไทย"])
def test_digits_of_no_space_scripts_are_numbers_on_every_path(text: str) -> None:
    """Lao and Thai digits are numbers (masked, dropped or kept by the policy), not pieces of
    a no-space script, on the Python path as in the reference and the compiled scanner."""
    for numbers in ("keep", "mask", "drop"):
        cfg = TextConfig(numbers=numbers)
        expected = tokenize_reference(text, cfg)
        for compiled in (True, False):
            with forced(compiled):
                assert tokenize(text, cfg) == expected


# --- the compiled scanner on multilingual text (tokens, offsets and hashes) ------------------

# Words and marks of the text users have: Latin with diacritics (precomposed and combining),
# typographic punctuation, Cyrillic, Greek (final sigma), Arabic (with Arabic-Indic digits),
# Hebrew, Devanagari, Thai, Han, kana (full and half width), Hangul, emoji (flags, skin tones,
# ZWJ sequences), ligatures, full-width and superscript forms, numbers in several scripts,
# invisible characters and lone surrogates.
MULTILINGUAL = [
    "café", "naïve", "Ångström", "e\u0301te\u0301", "Straße", "STRASSE", "Œuvre", "ǰ", "J\u030c",
    "İstanbul", "I\u0307", "don’t", "it's", "’90s", "O’Neill", "“quoted”", "«guillemets»",
    "—", "–", "…", "•", "\u00a0", "\u200b", "\u00ad", "\ufeff", "Москва", "МОСКВА", "курс",
    "ёлка", "Ελλάδα", "ΟΔΟΣ", "ς", "τράπεζας", "البنك", "٣٫٤", "١٢٣", "שלום", "नमस्ते", "२०१८",
    "ภาษาไทย", "東京株式", "日本語", "ひらがな", "カタカナ", "ｶﾀｶﾅ", "한국어", "🇺🇸", "👍🏽",
    "👨‍👩‍👧", "🚨", "ﬁnance", "ＡＢＣ", "x²", "Ⅻ", "½", "3.5", "1,000.25", "12.", ",5", "3.5x",
    "U.S.", "e-mail", "snake_case", "\ud800", "\x00", "'", "’", ".", ",", " ", "\n", "9a", "a9",
]  # fmt: skip
SEPARATORS = [" ", "", "\n", " — ", "’", "'", ".", ",", "\u00a0", "-"]


@st.composite
def multilingual_texts(draw: st.DrawFn) -> str:
    words = draw(st.lists(st.sampled_from(MULTILINGUAL) | st.text(max_size=4), max_size=25))
    seps = draw(st.lists(st.sampled_from(SEPARATORS), min_size=len(words), max_size=len(words)))
    return "".join(w + s for w, s in zip(words, seps, strict=True))


@settings(max_examples=400, deadline=None)
@given(multilingual_texts())
def test_compiled_scanner_equals_reference_on_multilingual_text(text: str) -> None:
    """Tokens, offsets and token hashes of the compiled scanner (and of the Python fast
    path) are the reference's, for every text-stage option that changes the pieces."""
    configs = [*CONFIGS, TextConfig(stem=False, cjk="chars", drop_stop_words=True)]
    for cfg in configs:
        expected = tokenize_reference(text, cfg)
        hashes = hash_forms(expected.forms, 5)
        for compiled in (True, False):
            with forced(compiled):
                assert tokenize(text, cfg) == expected
                assert token_forms(text, cfg) == list(expected.forms)
                assert np.array_equal(token_hashes(text, cfg, 5), hashes)


def test_scanner_classes_are_the_regular_expression_s() -> None:
    """The scanner's character table marks exactly what the token regular expression calls
    a letter or digit and a decimal digit, over all of Unicode."""
    import re

    from neardup._kernels import ALNUM, DIGIT
    from neardup.text import scanner as text_module

    table = text_module._code_point_classes()
    for cp in range(0, 0x110000, 97):  # a sample of every block (the table is built by runs)
        ch = chr(cp)
        assert bool(table[cp] & ALNUM) == bool(re.fullmatch(r"[^\W_]", ch))
        assert bool(table[cp] & DIGIT) == bool(re.fullmatch(r"\d", ch))
    digit, alnum = (table & DIGIT) != 0, (table & ALNUM) != 0
    assert not (digit & ~alnum).any()  # every decimal digit is a letter or digit
    assert np.array_equal(text_module._byte_classes(), table[:256])


@pytest.mark.data
def test_compiled_scanner_equals_reference_on_scraped_news() -> None:
    """All of provenance_news_2018_dev (real scraped pages, typographic punctuation, a few
    emoji and other scripts) and its texts with ASCII punctuation made typographic."""
    path = data_path("provenance_news_2018_dev", "docs.jsonl.gz")
    texts = [row["text"] for row in read_jsonl_gz(path)]
    curly = [t.replace("'", "’").replace('"', "”").replace(" - ", " — ") for t in texts[:100]]
    for cfg in (TextConfig(), TextConfig(drop_stop_words=True, numbers="mask")):
        with forced(True):
            for text in [*texts, *curly]:
                expected = tokenize_reference(text, cfg)
                assert tokenize(text, cfg) == expected
                assert np.array_equal(token_hashes(text, cfg, 0), hash_forms(expected.forms, 0))
