"""Text stage: ``str`` -> normalised word tokens with character offsets, and sentences.

Everything later in neardup (shingles, signatures, origin detection) reads text only through
this module, so two documents are compared on exactly the same terms.

Steps, each controlled by one field of the frozen :class:`TextConfig`:

1. Tokens are found in the *original* text (so every token keeps its ``start``/``end``
   character offsets into it; origin detection maps results back through them).  A token is
   a run of letters/digits with inner apostrophes (``don't``), or a number with inner
   ``.``/``,`` (``3.5``, ``1,000``).  Punctuation, symbols, control characters and lone
   surrogates are never part of a token, so they cannot crash a later stage.
2. Each token is Unicode NFKC-normalised and case-folded (``casefold``).
3. Numbers are kept, dropped or masked to ``"0"`` (``numbers``).
4. Scripts written without spaces (Han, Hiragana, Katakana, Thai, ...) fall back to
   characters or overlapping character bigrams (``cjk``), so such text never vanishes.
5. Stop words (``stop_words``; English by default) and words shorter than
   ``min_token_length`` are dropped when asked (seed 000 drops short words).
6. Snowball stemming (PyStemmer, ``language``).

Sentences (:func:`sentence_spans`) are split at ``.``, ``!``, ``?``, ``…`` and their
full-width forms, and at blank lines, but not after abbreviations (``Mr.``, ``Corp.``,
``U.S.``), initials (``J. Smith``), inside decimals (``3.5``) or before a lower-case word.

Guarantees: pure and deterministic; the same text and config give the same tokens on every
machine.  Linear in the text length.
"""

from __future__ import annotations

import dataclasses
import operator
import re
import threading
import unicodedata
from collections.abc import Callable, Hashable, Iterable, Sequence
from functools import lru_cache
from itertools import chain
from typing import Any

import numpy as np
import numpy.typing as npt
import Stemmer

from neardup._jit import compiled_worthwhile
from neardup.config import Config, check_choice, check_int
from neardup.errors import ConfigError, InputTypeError

__all__ = [
    "ENGLISH_STOP_WORDS",
    "PYTHON_NS_PER_CHAR",
    "TextConfig",
    "Tokens",
    "ensure_text",
    "forms_of_raw_token",
    "forms_of_raw_tokens",
    "raw_token_pieces",
    "raw_tokens",
    "sentence_spans",
    "sentences",
    "token_forms",
    "token_values",
    "token_values_and_spans",
    "tokenize",
    "tokenize_reference",
]

# A standard English stop-word list (articles, pronouns, auxiliaries, prepositions,
# conjunctions), the usual choice for news text.
ENGLISH_STOP_WORDS: frozenset[str] = frozenset(
    """a about above after again against all am an and any are aren't as at be because been
    before being below between both but by can can't cannot could couldn't did didn't do does
    doesn't doing don't down during each few for from further had hadn't has hasn't have
    haven't having he he'd he'll he's her here here's hers herself him himself his how how's i
    i'd i'll i'm i've if in into is isn't it it's its itself let's me more most mustn't my
    myself no nor not of off on once only or other ought our ours ourselves out over own same
    shan't she she'd she'll she's should shouldn't so some such than that that's the their
    theirs them themselves then there there's these they they'd they'll they're they've this
    those through to too under until up very was wasn't we we'd we'll we're we've were weren't
    what what's when when's where where's which while who who's whom why why's will with won't
    would wouldn't you you'd you'll you're you've your yours yourself yourselves said says
    also""".split()  # noqa: SIM905 (a word list reads better as prose)
)

_STOP_WORD_LISTS: dict[str, frozenset[str]] = {"english": ENGLISH_STOP_WORDS}

_NUMBER_POLICIES = ("keep", "drop", "mask")
_CJK_POLICIES = ("bigrams", "chars")

# A number with inner separators ("3.5", "1,000.25") not glued to a following letter, or a
# run of letters/digits with inner apostrophes.  [^\W_] is "a letter or digit" in any script.
_TOKEN_RE = re.compile(r"\d+(?:[.,]\d+)+(?![^\W_])|[^\W_]+(?:['’][^\W_]+)*")
_NUMBER_RE = re.compile(r"\d+(?:[.,]\d+)*")
# Scripts usually written without spaces between words.
_NOSPACE_RE = re.compile(
    "[\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff"
    "\uf900-\ufaff\U00020000-\U0002ffff]"
)


@dataclasses.dataclass(frozen=True)
class TextConfig(Config):
    """Parameters of the text stage.

    ``stop_words`` of ``None`` means the built-in list for ``language`` (English only ships a
    list; other languages get an empty one unless a list is given).
    """

    SCHEME = "text"

    language: str = "english"
    stem: bool = True
    drop_stop_words: bool = False
    stop_words: frozenset[str] | None = None
    min_token_length: int = 1
    numbers: str = "keep"
    cjk: str = "bigrams"

    def __post_init__(self) -> None:
        if self.language not in _available_languages():
            names = ", ".join(sorted(_available_languages()))
            raise ConfigError(
                f"language must be a Snowball language ({names}), got {self.language!r}"
            )
        check_int("min_token_length", self.min_token_length, low=1, high=64)
        check_choice("numbers", self.numbers, _NUMBER_POLICIES)
        check_choice("cjk", self.cjk, _CJK_POLICIES)
        if self.stop_words is not None:
            words = frozenset(self.stop_words)
            if not all(isinstance(w, str) for w in words):
                raise ConfigError("stop_words must be strings")
            # Stop words are compared with normalised tokens, so normalise the list once.
            object.__setattr__(self, "stop_words", frozenset(_normalise(w) for w in words))

    @property
    def effective_stop_words(self) -> frozenset[str]:
        """The stop-word list in force (normalised)."""
        if self.stop_words is not None:
            return self.stop_words
        return _STOP_WORD_LISTS.get(self.language, frozenset())


@dataclasses.dataclass(frozen=True, slots=True)
class Tokens:
    """Normalised tokens of a text, each with its ``[start, end)`` span in the original."""

    forms: tuple[str, ...]
    starts: tuple[int, ...]
    ends: tuple[int, ...]

    def __len__(self) -> int:
        return len(self.forms)


@lru_cache(maxsize=1)
def _available_languages() -> frozenset[str]:
    return frozenset(Stemmer.algorithms())


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


def _normalise(token: str) -> str:
    if token.isascii():
        return token.lower()
    return unicodedata.normalize("NFKC", token).casefold()


def ensure_text(text: object, what: str = "text") -> str:
    """Return ``text`` if it is a ``str``; raise ``InputTypeError`` otherwise.

    ``bytes`` are refused rather than guessed at: decode them first (the CLI decodes files as
    UTF-8 with a clear error).
    """
    if isinstance(text, str):
        return text
    if isinstance(text, bytes | bytearray | memoryview):
        raise InputTypeError(f"{what} must be str, got bytes: decode it first (e.g. as UTF-8)")
    raise InputTypeError(f"{what} must be str, got {type(text).__name__}")


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


def tokenize(text: str, config: TextConfig | None = None) -> Tokens:
    """Normalised tokens of ``text`` with their character spans in ``text``.

    Empty, whitespace-only or punctuation-only text gives zero tokens (never an error).
    Equal to :func:`tokenize_reference` (tested): the compiled scanner finds the raw tokens
    of any text and each distinct raw token is normalised and stemmed once per process
    (:class:`_Vocabulary`); short work in a process that has not loaded the compiled kernels
    takes the same steps in Python (:func:`neardup._jit.compiled_worthwhile`).
    """
    text = ensure_text(text)
    cfg = config or _DEFAULT_CONFIG
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
    normalised token has no-space-script characters (pieces with their own offsets)."""
    form = _normalise(raw)
    if not form.isascii() and _NOSPACE_RE.search(form):
        return None
    return forms_of_raw_token(raw, cfg)


_span_caches: dict[TextConfig, dict[str, tuple[str, ...] | None]] = {}


def _span_cache(cfg: TextConfig) -> dict[str, tuple[str, ...] | None]:
    cache = _span_caches.get(cfg)
    if cache is None:
        if len(_span_caches) > 64:
            _span_caches.clear()
        cache = _span_caches[cfg] = {}
    elif len(cache) > _FORMS_CACHE_LIMIT:
        cache.clear()  # bounded memory; correctness does not depend on the cache
    return cache


def _nospace_token(raw: str, start: int, cfg: TextConfig) -> tuple[list[str], list[int], list[int]]:
    """Forms and offsets of a token whose normalised form has no-space-script characters."""
    stops = cfg.effective_stop_words if cfg.drop_stop_words else frozenset()
    form = _normalise(raw)
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
    cfg = config or _DEFAULT_CONFIG
    stops = cfg.effective_stop_words if cfg.drop_stop_words else frozenset()
    min_len = cfg.min_token_length
    numbers = cfg.numbers
    forms: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    for match in _TOKEN_RE.finditer(text):
        raw = match.group()
        start = match.start()
        form = _normalise(raw)
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


_DEFAULT_CONFIG = TextConfig()

#: Cost of the Python token path per character, for :func:`neardup._jit.compiled_worthwhile`
#: (about 70 ns on Reuters with a warm cache, twice that cold).
PYTHON_NS_PER_CHAR = 100

# --- fast path for signatures (no offsets) ------------------------------------------------


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
    cfg = config or _DEFAULT_CONFIG
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
    cfg = config or _DEFAULT_CONFIG
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
    form = _normalise(raw)
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
    cfg = config or _DEFAULT_CONFIG
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


# Per-config caches raw token -> forms.  News vocabularies are small (Reuters: ~40k distinct
# raw tokens), so a bounded dict turns the per-token Python work into one lookup.
_FORMS_CACHE_LIMIT = 1 << 18
_forms_caches: dict[TextConfig, dict[str, tuple[str, ...]]] = {}


def _forms_cache(cfg: TextConfig) -> dict[str, tuple[str, ...]]:
    cache = _forms_caches.get(cfg)
    if cache is None:
        if len(_forms_caches) > 64:
            _forms_caches.clear()
        cache = {}
        _forms_caches[cfg] = cache
    elif len(cache) > _FORMS_CACHE_LIMIT:
        cache.clear()  # bounded memory; correctness does not depend on the cache
    return cache


def token_forms(text: str, config: TextConfig | None = None) -> list[str]:
    """``tokenize(text, config).forms`` without the offsets, faster.

    The same forms in the same order (tested).  Memory is bounded (the caches are cleared
    past 262,144 raw tokens in Python, 1,048,576 in the compiled vocabulary).
    """
    text = ensure_text(text)
    cfg = config or _DEFAULT_CONFIG
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


# --- the compiled scanner's vocabulary -----------------------------------------------------

# Runs of the two character classes of _TOKEN_RE; the scanner's table is built from these.
_ALNUM_RUN_RE = re.compile(r"[^\W_]+")
_DIGIT_RUN_RE = re.compile(r"\d+")


def _class_table(size: int) -> npt.NDArray[np.uint8]:
    """The scanner's class bits of code points ``0 .. size - 1``: exactly the characters the
    token regular expression matches as ``[^\\W_]`` and as ``\\d``."""
    from neardup._kernels import ALNUM, DIGIT

    chars = np.arange(size, dtype="<u4").tobytes().decode("utf-32-le", "surrogatepass")
    table = np.zeros(size, dtype=np.uint8)
    for pattern, bit in ((_ALNUM_RUN_RE, ALNUM), (_DIGIT_RUN_RE, DIGIT)):
        for match in pattern.finditer(chars):
            table[match.start() : match.end()] |= bit
    table.flags.writeable = False
    return table


@lru_cache(maxsize=1)
def _byte_classes() -> npt.NDArray[np.uint8]:
    return _class_table(256)


_BYTE_CLASSES = [_byte_classes()]  # the classes of ASCII text, built at import (cheap)


@lru_cache(maxsize=1)
def _code_point_classes() -> npt.NDArray[np.uint8]:
    """All of Unicode (1.1 MB; built in about 60 ms, once, for the first non-ASCII text)."""
    return _class_table(0x110000)


def _code_units(text: str) -> tuple[npt.NDArray[Any], npt.NDArray[np.uint8]]:
    """The text as the scanner reads it (bytes of ASCII, else UTF-32 code points: positions
    are ``str`` indices either way) and the class table for that width."""
    if text.isascii():
        return np.frombuffer(text.encode("ascii"), dtype=np.uint8), _BYTE_CLASSES[0]
    data = text.encode("utf-32-le", "surrogatepass")
    return np.frombuffer(data, dtype="<u4"), _code_point_classes()


_NO_SPANS = np.zeros(0, dtype=np.int64)


class _Vocabulary:
    """Raw token -> its pieces (forms with spans within the token), for one
    :class:`TextConfig`, in the arrays the compiled scanner reads (:mod:`neardup._kernels`).

    Each piece carries values per *channel*: its number (from which :meth:`forms_of` reads
    the form) and, for each channel a caller names, ``value_of(form)`` (a token hash, for
    :mod:`neardup.shingles`), computed once per piece.  A lock serialises scans: a scan
    updates the table, and learning runs Python code between two compiled calls.
    """

    LIMIT = 1 << 20  # slots kept before the vocabulary starts afresh (bounded memory)

    def __init__(self, config: TextConfig) -> None:
        from neardup import _kernels

        self.kernels = _kernels
        self.config = config
        self.table = _kernels.TokenTable()
        self.pieces = _kernels.Pieces()
        self.forms: list[str] = []  # the form of each piece
        self.numbers = np.arange(1024, dtype=np.uint64)  # the channel of piece numbers
        self.channels: dict[Hashable, tuple[npt.NDArray[np.uint64], int]] = {}
        self.calls = 0
        self.lock = threading.Lock()

    @property
    def full(self) -> bool:
        return self.pieces.slots >= self.LIMIT

    def forms_of(self, numbers: npt.NDArray[np.uint64]) -> tuple[str, ...]:
        """The forms of pieces ``numbers``."""
        if numbers.shape[0] == 0:
            return ()
        if numbers.shape[0] == 1:
            return (self.forms[int(numbers[0])],)
        got: tuple[str, ...] = operator.itemgetter(*numbers.tolist())(self.forms)
        return got

    def _values(
        self, channel: tuple[Hashable, Callable[[str], int]] | None
    ) -> npt.NDArray[np.uint64]:
        """The values of every piece so far on ``channel`` (``None``: piece numbers)."""
        count = len(self.forms)
        if channel is None:
            if self.numbers.shape[0] < count:
                self.numbers = np.arange(2 * count, dtype=np.uint64)
            return self.numbers
        name, value_of = channel
        entry = self.channels.get(name)
        if entry is not None and entry[1] == count:
            return entry[0]
        values, filled = entry if entry is not None else (np.zeros(1024, dtype=np.uint64), 0)
        if values.shape[0] < count:
            grown = np.zeros(2 * count, dtype=np.uint64)
            grown[:filled] = values[:filled]
            values = grown
        values[filled:count] = [value_of(form) for form in self.forms[filled:count]]
        self.channels[name] = (values, count)
        return values

    def _learn(self, text: str, misses: npt.NDArray[np.int64]) -> None:
        """Store the pieces of the reported tokens ``(start, end, key)`` of ``text``."""
        found = misses.tolist()
        starts, ends, keys = found[0::3], found[1::3], found[2::3]
        raws = [text[s:e] for s, e in zip(starts, ends, strict=True)]
        pieces = raw_token_pieces(raws, self.config)
        slots = self.pieces.append([[(s, e) for _, s, e in token] for token in pieces])
        self.forms.extend(form for token in pieces for form, _, _ in token)
        self.table.set_many(np.array(keys, dtype=np.int64), slots)

    def scan(
        self,
        text: str,
        channel: tuple[Hashable, Callable[[str], int]] | None,
        spans: bool,
    ) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.int64]]:
        """The values of ``text``'s pieces on ``channel`` in order, and their spans (flat
        ``start, end`` pairs) when asked for.  One scan; the text's new tokens are learnt
        together (one stemmer call) and filled into the scan's output in place.  A scan
        stopped by a half-full table (or a full output) resumes where it stopped."""
        buf, classes = _code_units(text)
        kernels = self.kernels
        n = buf.shape[0]
        with self.lock:
            entry = self.channels.get(channel[0]) if channel is not None else None
            if entry is not None and entry[1] == len(self.forms):
                values = entry[0]
            else:
                values = self._values(channel)
            self.calls += 1
            scan = kernels.scan_tokens(
                buf, classes, self.table, self.pieces, values, self.calls, 0, spans
            )
            if scan.stop == n and scan.waiting == 0:  # the usual case: every token known
                return scan.values(), scan.spans() if spans else _NO_SPANS
            done: list[tuple[npt.NDArray[np.uint64], npt.NDArray[np.int64]]] = []
            start = bound = 0
            while True:
                if scan.missed:
                    self._learn(text, scan.misses())
                    values = self._values(channel)
                resolved = kernels.resolve(scan, self.table, self.pieces, values)
                if resolved is None:  # cannot happen: every pending token was learnt
                    raise RuntimeError("token scanner left a token unresolved")
                done.append(resolved)
                if scan.stop >= n:
                    break
                if 2 * (self.table.used + 1) > self.table.keys.shape[0]:
                    self.table.grow()
                elif scan.stop == start:  # a token with more pieces than the room left
                    bound = 2 * max(bound, n - start + 1)
                start = scan.stop
                self.calls += 1
                scan = kernels.scan_tokens(
                    buf, classes, self.table, self.pieces, values, self.calls, start, spans, bound
                )
        if len(done) == 1:
            return done[0]
        return np.concatenate([d[0] for d in done]), np.concatenate([d[1] for d in done])


_vocabularies: dict[TextConfig, _Vocabulary] = {}


_last_vocabulary: list[_Vocabulary] = []  # the one used last (an identity check is cheaper
# than hashing a config: this runs once per text)


def _vocabulary(config: TextConfig) -> _Vocabulary:
    if _last_vocabulary:
        last = _last_vocabulary[0]
        if last.config is config and not last.full:
            return last
    vocabulary = _vocabularies.get(config)
    if vocabulary is None or vocabulary.full:
        if len(_vocabularies) > 16:
            _vocabularies.clear()
        vocabulary = _vocabularies[config] = _Vocabulary(config)
    _last_vocabulary[:] = [vocabulary]
    return vocabulary


# --- sentences -------------------------------------------------------------------------

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
_WORD_BEFORE_RE = re.compile(r"([^\W_]+(?:\.[^\W_]+)*)$")


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
    word = before.group(1)
    if len(word) == 1 and word.isalpha():
        return True  # an initial: "J. Smith"
    return word.lower() in _ABBREVIATIONS


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """``[start, end)`` character spans of the sentences of ``text``, in order.

    Spans are stripped of surrounding white space and never empty; text without any
    boundary is one sentence; empty or white-space-only text has none.
    """
    text = ensure_text(text)
    spans: list[tuple[int, int]] = []
    start = 0
    n = len(text)
    # Groups by number: 1 stop, 2 close, 4 wide (the pattern's named groups, read by index
    # once per boundary; equal to reading them by name).
    for match in _BOUNDARY_RE.finditer(text):
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
        start = match.end()
    _append_stripped(text, start, n, spans)
    return spans


def _append_stripped(text: str, start: int, end: int, spans: list[tuple[int, int]]) -> None:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    if end > start:
        spans.append((start, end))


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
