"""One raw token -> its normalised forms: the token regular expression, the stemmer, the
split of scripts written without spaces, and the forms (with their spans within the token) of
one or many raw tokens.

Every step of the text stage depends on one token only, so applying :func:`forms_of_raw_token`
to every element of :func:`raw_tokens` gives exactly the forms of
:func:`neardup.text.tokenize` (tested).

Guarantees: pure and deterministic; batch calls (:func:`forms_of_raw_tokens`,
:func:`raw_token_pieces`) equal the one-token calls (Snowball stems each word on its own).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Sequence
from itertools import chain

import Stemmer

from neardup.text.config import DEFAULT_CONFIG, TextConfig, ensure_text, normalise

__all__ = [
    "forms_of_raw_token",
    "forms_of_raw_tokens",
    "raw_token_pieces",
    "raw_tokens",
]


# A number with inner separators ("3.5", "1,000.25") not glued to a following letter, or a
# run of letters/digits with inner apostrophes.  [^\W_] is "a letter or digit" in any script.
_TOKEN_RE = re.compile(r"\d+(?:[.,]\d+)+(?![^\W_])|[^\W_]+(?:['’][^\W_]+)*")
_NUMBER_RE = re.compile(r"\d+(?:[.,]\d+)*")
# Scripts usually written without spaces between words.
_NOSPACE_RE = re.compile(
    "[\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff"
    "\uf900-\ufaff\U00020000-\U0002ffff]"
)


_local = threading.local()


def _stemmer(language: str) -> Stemmer.Stemmer:
    # PyStemmer objects are not thread-safe; keep one per thread and language.
    cache: dict[str, Stemmer.Stemmer] | None = getattr(_local, "stemmers", None)
    if cache is None:
        cache = {}
        _local.stemmers = cache
    stemmer = cache.get(language)
    if stemmer is None:
        stemmer = Stemmer.Stemmer(language)
        cache[language] = stemmer
    return stemmer


def _split_nospace(form: str, start: int, policy: str) -> Iterable[tuple[str, int, int]]:
    """Split a token that contains characters of a no-space script.

    Runs of such characters become characters or overlapping bigrams; other runs inside the
    token stay whole.  Offsets are approximate only if NFKC changed the token's length, in
    which case the whole token span is used.
    """
    pieces: list[tuple[str, int, int]] = []
    i = 0
    n = len(form)
    while i < n:
        j = i
        if _NOSPACE_RE.match(form, i):
            while j < n and _NOSPACE_RE.match(form, j):
                j += 1
            run = form[i:j]
            if policy == "chars" or len(run) == 1:
                pieces.extend((ch, start + i + k, start + i + k + 1) for k, ch in enumerate(run))
            else:
                pieces.extend(
                    (run[k : k + 2], start + i + k, start + i + k + 2) for k in range(len(run) - 1)
                )
        else:
            while j < n and not _NOSPACE_RE.match(form, j):
                j += 1
            pieces.append((form[i:j], start + i, start + j))
        i = j
    return pieces


def raw_tokens(text: str) -> list[str]:
    """The raw (un-normalised) token strings of ``text``, in order.

    These are exactly the matches :func:`tokenize` starts from; each one is turned into zero
    or more normalised forms by :func:`forms_of_raw_token`.
    """
    return _TOKEN_RE.findall(ensure_text(text))


def forms_of_raw_token(raw: str, config: TextConfig | None = None) -> tuple[str, ...]:
    """The normalised forms one raw token yields under ``config`` (usually 0 or 1 form).

    Applying this to every element of :func:`raw_tokens` and concatenating gives exactly
    ``tokenize(text, config).forms``: every step of the text stage depends on one token only.
    """
    cfg = config or DEFAULT_CONFIG
    stops = cfg.effective_stop_words if cfg.drop_stop_words else frozenset()
    forms = _unstemmed_forms(raw, cfg, stops)
    if cfg.stem and forms:
        forms = _stemmer(cfg.language).stemWords(forms)
    return tuple(forms)


def forms_of_raw_tokens(
    raws: Sequence[str], config: TextConfig | None = None
) -> list[tuple[str, ...]]:
    """``[forms_of_raw_token(r, config) for r in raws]``, with one stemmer call for all.

    Same values (Snowball stems each word on its own, so stemming a batch equals stemming
    one word at a time; tested); the batch saves the per-call overhead of PyStemmer when a
    text brings many new words at once.
    """
    cfg = config or DEFAULT_CONFIG
    stops = cfg.effective_stop_words if cfg.drop_stop_words else frozenset()
    joined = " ".join(raws)
    if joined.isascii() and joined.count(" ") == len(raws) - 1:
        return _ascii_forms(joined, cfg, stops)
    parts = [_unstemmed_forms(raw, cfg, stops) for raw in raws]
    if not cfg.stem:
        return [tuple(p) for p in parts]
    stems = _stemmer(cfg.language).stemWords(list(chain.from_iterable(parts)))
    result: list[tuple[str, ...]] = []
    at = 0
    for part in parts:
        n = len(part)
        result.append(tuple(stems[at : at + n]) if n else ())
        at += n
    return result


def _ascii_forms(joined: str, cfg: TextConfig, stops: frozenset[str]) -> list[tuple[str, ...]]:
    """:func:`forms_of_raw_tokens` of ASCII tokens without spaces, joined by single spaces:
    the same steps as :func:`_unstemmed_forms` (ASCII normalisation is ``lower``; no
    no-space scripts), inlined, since this runs once per new word."""
    number = _NUMBER_RE.fullmatch
    policy = cfg.numbers
    min_len = cfg.min_token_length
    kept: list[str] = []
    where: list[int] = []
    for n, form in enumerate(joined.lower().split(" ")):
        if form[0].isdigit() and number(form):
            if policy == "drop":
                continue
            form = "0" if policy == "mask" else form
        elif len(form) < min_len or form in stops:
            continue
        kept.append(form)
        where.append(n)
    if cfg.stem and kept:
        kept = _stemmer(cfg.language).stemWords(kept)
    result: list[tuple[str, ...]] = [()] * (joined.count(" ") + 1)
    for n, form in zip(where, kept, strict=True):
        result[n] = (form,)
    return result


def _unstemmed_forms(raw: str, cfg: TextConfig, stops: frozenset[str]) -> list[str]:
    """The forms of one raw token before stemming (numbers, no-space scripts, stop words)."""
    return [form for form, _, _ in _unstemmed_pieces(raw, cfg, stops)]


def _unstemmed_pieces(
    raw: str, cfg: TextConfig, stops: frozenset[str]
) -> list[tuple[str, int, int]]:
    """The pieces of one raw token before stemming: each form with its span relative to the
    token's start (the whole token, unless a no-space script splits it and NFKC kept its
    length), as :func:`tokenize_reference` makes them."""
    form = normalise(raw)
    if form[0].isdigit() and _NUMBER_RE.fullmatch(form):
        if cfg.numbers == "drop":
            return []
        return [("0" if cfg.numbers == "mask" else form, 0, len(raw))]
    if not form.isascii() and _NOSPACE_RE.search(form):
        if len(form) == len(raw):
            return [p for p in _split_nospace(form, 0, cfg.cjk) if p[0] not in stops]
        return [(p, 0, len(raw)) for p, _, _ in _split_nospace(form, 0, cfg.cjk) if p not in stops]
    if len(form) < cfg.min_token_length or form in stops:
        return []
    return [(form, 0, len(raw))]


def raw_token_pieces(
    raws: Sequence[str], config: TextConfig | None = None
) -> list[list[tuple[str, int, int]]]:
    """For each raw token (an element of :func:`raw_tokens`), its normalised forms with their
    spans relative to the token's start: what :func:`tokenize` makes of it, with one stemmer
    call for all.  The forms are :func:`forms_of_raw_tokens`'s (tested)."""
    cfg = config or DEFAULT_CONFIG
    joined = " ".join(raws)
    if joined.isascii() and joined.count(" ") == len(raws) - 1:
        # ASCII: at most one form per token, spanning all of it (no-space scripts are not ASCII).
        return [
            [(form, 0, len(raw)) for form in forms]
            for raw, forms in zip(raws, forms_of_raw_tokens(raws, cfg), strict=True)
        ]
    stops = cfg.effective_stop_words if cfg.drop_stop_words else frozenset()
    parts = [_unstemmed_pieces(raw, cfg, stops) for raw in raws]
    if not cfg.stem:
        return parts
    stems = iter(_stemmer(cfg.language).stemWords([p[0] for part in parts for p in part]))
    return [[(next(stems), s, e) for _, s, e in part] for part in parts]
