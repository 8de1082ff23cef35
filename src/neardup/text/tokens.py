"""Text -> normalised tokens with their character offsets, and the fast paths without them.

:func:`tokenize` runs the compiled scanner (:mod:`neardup.text.scanner`) or, for short work
in a process that has not loaded the compiled kernels, the same steps in Python; both equal
:func:`tokenize_reference`, the straightforward implementation (tested).  :func:`token_forms`,
:func:`token_values` and :func:`token_values_and_spans` are the same tokens without offsets,
or with a value per form (the token hashes of :mod:`neardup.shingles`).

Guarantees: pure and deterministic; linear in the text length; the caches are bounded and
never change a result.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from itertools import chain

import numpy as np
import numpy.typing as npt

from neardup._jit import compiled_worthwhile
from neardup._memo import bounded_cache
from neardup.text.config import DEFAULT_CONFIG, TextConfig, Tokens, ensure_text, normalise
from neardup.text.forms import (
    _NOSPACE_RE,
    _NUMBER_RE,
    _TOKEN_RE,
    _split_nospace,
    _stemmer,
    forms_of_raw_token,
    forms_of_raw_tokens,
    raw_tokens,
)
from neardup.text.scanner import _vocabulary

__all__ = [
    "PYTHON_NS_PER_CHAR",
    "token_forms",
    "token_values",
    "token_values_and_spans",
    "tokenize",
    "tokenize_reference",
]

#: Cost of the Python token path per character in nanoseconds (rounded up, between its warm
#: and cold cache costs), for :func:`neardup._jit.compiled_worthwhile`.
PYTHON_NS_PER_CHAR = 100

# Per-config caches raw token -> forms (with spans: ``None`` for a token of a no-space
# script).  News vocabularies are small, so a bounded dict turns the per-token Python work
# into one lookup.
_FORMS_CACHE_LIMIT = 1 << 18
_span_caches: dict[Hashable, dict[str, tuple[str, ...] | None]] = {}
_forms_caches: dict[Hashable, dict[str, tuple[str, ...]]] = {}


def tokenize(text: str, config: TextConfig | None = None) -> Tokens:
    """Normalised tokens of ``text`` with their character spans in ``text``.

    Empty, whitespace-only or punctuation-only text gives zero tokens (never an error).
    Equal to :func:`tokenize_reference` (tested): the compiled scanner finds the raw tokens
    of any text and each distinct raw token is normalised and stemmed once per process
    (:class:`_Vocabulary`); short work in a process that has not loaded the compiled kernels
    takes the same steps in Python (:func:`neardup._jit.compiled_worthwhile`).
    """
    text = ensure_text(text)
    cfg = config or DEFAULT_CONFIG
    if not compiled_worthwhile(PYTHON_NS_PER_CHAR * len(text)):
        return _tokenize_python(text, cfg)
    vocabulary = _vocabulary(cfg)
    numbers, spans = vocabulary.scan(text, None, spans=True)
    return Tokens(
        vocabulary.forms_of(numbers), tuple(spans[0::2].tolist()), tuple(spans[1::2].tolist())
    )


def _tokenize_python(text: str, cfg: TextConfig) -> Tokens:
    """:func:`tokenize` in Python: the token regular expression, and each distinct raw token
    normalised and stemmed once per process (the cache of :func:`token_forms`); tokens of
    no-space scripts, whose pieces have their own offsets, take the full path every time."""
    cache = _span_cache(cfg)
    forms: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    for match in _TOKEN_RE.finditer(text):
        raw = match.group()
        try:
            got = cache[raw]
        except KeyError:
            got = cache[raw] = _simple_forms(raw, cfg)
        if got is None:
            piece_forms, piece_starts, piece_ends = _nospace_token(raw, match.start(), cfg)
            forms.extend(piece_forms)
            starts.extend(piece_starts)
            ends.extend(piece_ends)
        elif got:
            forms.append(got[0])
            starts.append(match.start())
            ends.append(match.end())
    return Tokens(tuple(forms), tuple(starts), tuple(ends))


def _simple_forms(raw: str, cfg: TextConfig) -> tuple[str, ...] | None:
    """The (at most one) form of a token spanning its whole match, or ``None`` when the
    normalised token has no-space-script characters (pieces with their own offsets) and is
    not a number (a number in a no-space script's digits is one number, as for every
    script)."""
    form = normalise(raw)
    if (
        not form.isascii()
        and _NOSPACE_RE.search(form)
        and not (form[0].isdigit() and _NUMBER_RE.fullmatch(form))
    ):
        return None
    return forms_of_raw_token(raw, cfg)


def _span_cache(cfg: TextConfig) -> dict[str, tuple[str, ...] | None]:
    return bounded_cache(_span_caches, cfg, _FORMS_CACHE_LIMIT)


def _nospace_token(raw: str, start: int, cfg: TextConfig) -> tuple[list[str], list[int], list[int]]:
    """Forms and offsets of a token whose normalised form has no-space-script characters."""
    stops = cfg.effective_stop_words if cfg.drop_stop_words else frozenset()
    form = normalise(raw)
    end = start + len(raw)
    offsets_exact = len(form) == len(raw)
    forms: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    for piece, s, e in _split_nospace(form, start, cfg.cjk):
        if piece in stops:
            continue
        forms.append(piece)
        starts.append(s if offsets_exact else start)
        ends.append(e if offsets_exact else end)
    if cfg.stem and forms:
        forms = _stemmer(cfg.language).stemWords(forms)
    return forms, starts, ends


def tokenize_reference(text: str, config: TextConfig | None = None) -> Tokens:
    """The straightforward implementation :func:`tokenize` is tested equal to (slower)."""
    text = ensure_text(text)
    cfg = config or DEFAULT_CONFIG
    stops = cfg.effective_stop_words if cfg.drop_stop_words else frozenset()
    min_len = cfg.min_token_length
    numbers = cfg.numbers
    forms: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    for match in _TOKEN_RE.finditer(text):
        raw = match.group()
        start = match.start()
        form = normalise(raw)
        if form[0].isdigit() and _NUMBER_RE.fullmatch(form):
            if numbers == "drop":
                continue
            if numbers == "mask":
                form = "0"
            forms.append(form)
            starts.append(start)
            ends.append(match.end())
            continue
        if not form.isascii() and _NOSPACE_RE.search(form):
            offsets_exact = len(form) == len(raw)
            for piece, s, e in _split_nospace(form, start, cfg.cjk):
                if piece in stops:
                    continue
                forms.append(piece)
                starts.append(s if offsets_exact else start)
                ends.append(e if offsets_exact else match.end())
            continue
        if len(form) < min_len or form in stops:
            continue
        forms.append(form)
        starts.append(start)
        ends.append(match.end())
    if cfg.stem and forms:
        forms = _stemmer(cfg.language).stemWords(forms)
    return Tokens(tuple(forms), tuple(starts), tuple(ends))


def _forms_cache(cfg: TextConfig) -> dict[str, tuple[str, ...]]:
    return bounded_cache(_forms_caches, cfg, _FORMS_CACHE_LIMIT)


def token_forms(text: str, config: TextConfig | None = None) -> list[str]:
    """``tokenize(text, config).forms`` without the offsets, faster.

    The same forms in the same order (tested).  Memory is bounded (the caches are cleared
    past 262,144 raw tokens in Python, 1,048,576 in the compiled vocabulary).
    """
    text = ensure_text(text)
    cfg = config or DEFAULT_CONFIG
    if compiled_worthwhile(PYTHON_NS_PER_CHAR * len(text)):
        vocabulary = _vocabulary(cfg)
        numbers, _ = vocabulary.scan(text, None, spans=False)
        return list(vocabulary.forms_of(numbers))
    cache = _forms_cache(cfg)
    raws = raw_tokens(text)
    try:
        parts = [cache[r] for r in raws]
    except KeyError:
        new = list(dict.fromkeys(r for r in raws if r not in cache))
        cache.update(zip(new, forms_of_raw_tokens(new, cfg), strict=True))
        parts = [cache[r] for r in raws]
    return list(chain.from_iterable(parts))


def token_values(
    text: str, config: TextConfig, channel: tuple[Hashable, Callable[[str], int]]
) -> npt.NDArray[np.uint64]:
    """``[value_of(f) for f in tokenize(text, config).forms]`` as ``uint64`` for ``channel
    = (name, value_of)``, through the compiled scanner: ``value_of`` is called once per
    distinct piece of a raw token per process and remembered under ``name`` (which must
    name ``value_of``: a token hash and its seed, for example).  ``value_of`` must return
    an integer in ``[0, 2**64)``; ``text`` must be a ``str`` (:func:`ensure_text`)."""
    return _vocabulary(config).scan(text, channel, spans=False)[0]


def token_values_and_spans(
    text: str, config: TextConfig, channel: tuple[Hashable, Callable[[str], int]]
) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """:func:`token_values` with each token's ``[start, end)`` character span (the spans of
    :func:`tokenize`), from the same single compiled scan."""
    values, spans = _vocabulary(config).scan(text, channel, spans=True)
    return values, spans[0::2], spans[1::2]
