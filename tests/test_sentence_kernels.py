"""The compiled sentence scan equals the Python reference (the boundary regular expression
and the abbreviation test): on every code point's classes, on random strings over the
characters that matter, and on real corpora."""

from __future__ import annotations

import random
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import data_path, read_jsonl_gz
from neardup._jit import forced
from neardup.text import _sentence_kernels as kernels
from neardup.text.sentences import sentence_bounds, sentence_spans, sentence_spans_reference

# Everything the boundary pattern, the abbreviation test and the strip look at: stops, wide
# stops, closers, white space (also the control characters str.isspace counts), letters of
# both cases, digits, non-ASCII letters whose lower case is ASCII (KELVIN SIGN) or longer
# (DOTTED CAPITAL I), and the words of the abbreviation list.
_PIECES = [
    *".!?…。！？\"'”’)]」』）\n\n\t\r\x0b\x0c\x1c\x85\u2028\u3000  ",
    *"aAbZz09é\u212a\u0130_-,",
    "Mr", "mr", "U.S", "u.K", "e.g", "Corp", "J", "x", "approx", "Smith", "said",
    "3.5", "abcdefg", "ab.cd.ef", "..", "a..b", " the", " The", "\n\n", "\n \n",
]  # fmt: skip


def _compiled(text: str) -> list[tuple[int, int]]:
    with forced(True):
        return sentence_spans(text)


def test_class_table_is_the_regular_expressions_and_the_str_classes() -> None:
    """Every code point: SPACE is ``\\s`` and ``str.isspace``, ALNUM is ``[^\\W_]`` and
    ``str.isalnum`` (the reference reads each both ways: the pattern and the strip or the
    abbreviation test), LOWER is ``str.islower``."""
    table = kernels._code_point_classes()
    chars = np.arange(0x110000, dtype="<u4").tobytes().decode("utf-32-le", "surrogatepass")
    for bit, pattern, method in (
        (kernels.SPACE, r"\s+", str.isspace),
        (kernels.ALNUM, r"[^\W_]+", str.isalnum),
    ):
        expected = np.zeros(0x110000, dtype=bool)
        for m in re.finditer(pattern, chars):
            expected[m.start() : m.end()] = True
        assert np.array_equal((table & bit) != 0, expected)
        by_method = np.fromiter(map(method, chars), dtype=bool, count=0x110000)
        assert np.array_equal(expected, by_method)
    lower = np.fromiter(map(str.islower, chars), dtype=bool, count=0x110000)
    assert np.array_equal((table & kernels.LOWER) != 0, lower)
    assert np.array_equal(kernels._ascii_classes(), table[:128])


def test_random_strings_equal_reference() -> None:
    """Brute force: 20,000 random strings built from the characters that matter."""
    rng = random.Random(7)
    for _ in range(20_000):
        text = "".join(rng.choice(_PIECES) for _ in range(rng.randint(0, 40)))
        assert _compiled(text) == sentence_spans_reference(text), repr(text)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_any_text_equals_reference(text: str) -> None:
    assert _compiled(text) == sentence_spans_reference(text)


def test_known_sentences_and_array_form() -> None:
    text = "Mr. J. Smith paid $3.5 million. He left!  Then, e.g. the U.S. Corp. won.\n\nNew"
    expected = sentence_spans_reference(text)
    assert [text[a:b] for a, b in expected] == [
        "Mr. J. Smith paid $3.5 million.",
        "He left!",
        "Then, e.g. the U.S. Corp. won.",
        "New",
    ]
    assert _compiled(text) == expected
    for compiled in (True, False):
        with forced(compiled):
            bounds = sentence_bounds(text)
        assert bounds.dtype == np.int64 and bounds.shape == (4, 2)
        assert [tuple(r) for r in bounds.tolist()] == expected
    assert _compiled("") == [] and _compiled(" \n ") == []


@pytest.mark.data
@pytest.mark.parametrize(
    "corpus",
    [("pan13_text_alignment", "docs.jsonl.gz"), ("provenance_news_2018_dev", "docs.jsonl.gz")],
)
def test_compiled_sentences_equal_reference_on_corpora(corpus: tuple[str, str]) -> None:
    """Every text of PAN13 and of provenance_news_2018_dev: the same spans."""
    rows = read_jsonl_gz(data_path(*corpus))
    texts = [row["text"] for row in rows]
    assert texts
    for text in texts:
        assert _compiled(text) == sentence_spans_reference(text)
