"""The text stage's parameters and records: :class:`TextConfig`, :class:`Tokens`, the stop-word
lists, the normalisation of one token (NFKC and case folding) and the one type check of text
(:func:`ensure_text`).

Guarantees: a :class:`TextConfig` is frozen and validated (``ConfigError``), its stop words
normalised as tokens are; :func:`ensure_text` refuses anything but ``str``.
"""

from __future__ import annotations

import dataclasses
import unicodedata
from functools import lru_cache

import Stemmer

from neardup.config import Config, check_choice, check_int
from neardup.errors import ConfigError, InputTypeError

__all__ = [
    "DEFAULT_CONFIG",
    "ENGLISH_STOP_WORDS",
    "TextConfig",
    "Tokens",
    "ensure_text",
    "normalise",
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
            object.__setattr__(self, "stop_words", frozenset(normalise(w) for w in words))

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


def normalise(token: str) -> str:
    """``token`` NFKC-normalised and case-folded (ASCII: lower-cased, the same result)."""
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


DEFAULT_CONFIG = TextConfig()
