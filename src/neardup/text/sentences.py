"""Sentences: ``[start, end)`` spans of the sentences of a text, and their tokens.

Sentences are split at ``.``, ``!``, ``?``, ``…`` and their full-width forms, and at blank
lines, but not after abbreviations (``Mr.``, ``Corp.``, ``U.S.``), initials (``J. Smith``),
inside decimals (``3.5``) or before a lower-case word.

Guarantees: pure and deterministic; linear in the text length; spans are stripped of white
space, never empty, in order.
"""

from __future__ import annotations

import re
from itertools import chain
from typing import Any

import numpy as np

from neardup._jit import compiled_worthwhile
from neardup.text.config import TextConfig, Tokens, ensure_text
from neardup.text.tokens import tokenize

__all__ = ["sentence_bounds", "sentence_spans", "sentence_spans_reference", "sentences"]

# Words after which a full stop does not end a sentence (checked case-insensitively).
_ABBREVIATIONS = frozenset(
    """mr mrs ms dr prof sr jr st mt gen col lt sgt capt cmdr adm gov sen rep rev hon pres
    inc corp co ltd plc llc bros dept univ assn est approx fig no nos vol vs etc al cf eg ie
    jan feb mar apr jun jul aug sep sept oct nov dec mon tue tues wed thu thur thurs fri sat sun
    ft pp ave blvd rd
    u.s u.k u.n e.g i.e a.m p.m""".split()  # noqa: SIM905
)

# The leading look-ahead lists the first characters of the three alternatives: it changes no
# match, and lets the engine skip to candidate positions instead of trying every alternative
# at every character.
_BOUNDARY_RE = re.compile(
    r"(?=[.!?…。！？\n])"
    r"(?:(?P<stop>[.!?…]+)(?P<close>[\"'”’)\]]*)(?P<space>\s+|$)"
    r"|(?P<wide>[。！？]+[」』”’)）]*)\s*"
    r"|(?P<para>\n[ \t\r\f\v]*\n\s*))"
)
# Longest abbreviation: a longer word is none (``str.lower`` never shortens a word).
_LONGEST_ABBREVIATION = max(map(len, _ABBREVIATIONS))

#: Cost of the Python path per character in nanoseconds (rounded up), for
#: :func:`neardup._jit.compiled_worthwhile`.
PYTHON_NS_PER_CHAR = 80

_WORD_BEFORE_RE = re.compile(r"([^\W_]+(?:\.[^\W_]+)*)$")
_END_OF_TEXT: tuple[re.Match[str] | None] = (None,)


def _is_false_dot(text: str, stop_start: int) -> bool:
    """True when the single ``.`` at ``stop_start`` follows an initial or an abbreviation."""
    # Two exits equal to the search below, without it: the word pattern must end right
    # before the stop (or before a newline there, as ``$`` allows), and a word ending in
    # seven word characters is neither an initial nor an abbreviation (none is that long).
    # ``[^\W_]`` is exactly ``str.isalnum`` (checked over every code point in the tests).
    last = text[stop_start - 1] if stop_start else " "
    if not last.isalnum() and last != "\n":
        return False
    if stop_start >= 7 and text[stop_start - 7 : stop_start].isalnum():
        return False
    before = _WORD_BEFORE_RE.search(text, max(0, stop_start - 24), stop_start)
    if before is None:
        return False
    return _is_abbreviation(before.group(1))


def _is_abbreviation(word: str) -> bool:
    """Whether a full stop after ``word`` ends no sentence: an initial ("J. Smith") or a
    known abbreviation."""
    return (len(word) == 1 and word.isalpha()) or word.lower() in _ABBREVIATIONS


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """``[start, end)`` character spans of the sentences of ``text``, in order.

    Spans are stripped of surrounding white space and never empty; text without any
    boundary is one sentence; empty or white-space-only text has none.  Equal to
    :func:`sentence_spans_reference` (tested on every code point's classes and on real
    corpora): a compiled scan (:mod:`neardup.text._sentence_kernels`) once the compiled
    kernels are worth loading (:func:`neardup._jit.compiled_worthwhile`).
    """
    text = ensure_text(text)
    if not compiled_worthwhile(PYTHON_NS_PER_CHAR * len(text)):
        return sentence_spans_reference(text)
    return [(a, b) for a, b in _compiled_bounds(text).tolist()]


def sentence_bounds(text: str) -> np.ndarray[Any, np.dtype[np.int64]]:
    """:func:`sentence_spans` as an ``(n, 2)`` int64 array (one row ``start, end``)."""
    text = ensure_text(text)
    if not compiled_worthwhile(PYTHON_NS_PER_CHAR * len(text)):
        return np.asarray(sentence_spans_reference(text), dtype=np.int64).reshape(-1, 2)
    return _compiled_bounds(text)


def _compiled_bounds(text: str) -> np.ndarray[Any, np.dtype[np.int64]]:
    from neardup.text import _sentence_kernels as kernels

    buf, classes = kernels.code_units(text)
    rows = kernels.boundary_matches(buf, classes)
    keep = np.ones(rows.shape[0], dtype=np.bool_)
    width = rows[:, 4] - rows[:, 3]
    # a single "." whose word may be an initial or an abbreviation: looked up here, as the
    # reference does (str.lower and the set)
    test = np.flatnonzero((rows[:, 3] >= 0) & (width <= _LONGEST_ABBREVIATION))
    for k, ws, we in zip(
        test.tolist(), rows[test, 3].tolist(), rows[test, 4].tolist(), strict=True
    ):
        if _is_abbreviation(text[ws:we]):
            keep[k] = False
    return kernels.cut_sentences(buf, classes, rows, keep)


def sentence_spans_reference(text: str) -> list[tuple[int, int]]:
    """:func:`sentence_spans` in Python: the boundary regular expression and the
    abbreviation test per full stop (the reference of the compiled scan)."""
    text = ensure_text(text)
    spans: list[tuple[int, int]] = []
    start = 0
    n = len(text)
    # Groups by number: 1 stop, 2 close, 4 wide (the pattern's named groups, read by index
    # once per boundary; equal to reading them by name).  The last "boundary" (None) is the
    # end of the text.
    for match in chain(_BOUNDARY_RE.finditer(text), _END_OF_TEXT):
        if match is None:
            end = n
        else:
            stop_start, stop_end = match.span(1)
            if stop_start >= 0:
                after = match.end()
                if after < n and text[after].islower():
                    continue  # "e.g. the", "approx. three"
                if (
                    stop_end - stop_start == 1
                    and text[stop_start] == "."
                    and _is_false_dot(text, stop_start)
                ):
                    continue
                end = match.end(2)
            elif match.start(4) >= 0:
                end = match.end(4)
            else:
                end = match.start()
        while start < end and text[start].isspace():
            start += 1
        while end > start and text[end - 1].isspace():
            end -= 1
        if end > start:
            spans.append((start, end))
        if match is None:
            break
        start = match.end()
    return spans


def sentences(text: str, config: TextConfig | None = None) -> list[tuple[tuple[int, int], Tokens]]:
    """Each sentence span of ``text`` with its tokens (offsets into ``text``)."""
    text = ensure_text(text)
    result: list[tuple[tuple[int, int], Tokens]] = []
    for start, end in sentence_spans(text):
        toks = tokenize(text[start:end], config)
        shifted = Tokens(
            toks.forms, tuple(s + start for s in toks.starts), tuple(e + start for e in toks.ends)
        )
        result.append(((start, end), shifted))
    return result
