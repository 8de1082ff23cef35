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

Rooms, each importing only those below it: :mod:`.config` (``TextConfig``, ``Tokens``, stop
words, normalisation), :mod:`.forms` (one raw token -> its forms), :mod:`.scanner` (the
compiled scanner's vocabulary), :mod:`.tokens` (``tokenize`` and its fast paths),
:mod:`.sentences`.  Every name is imported from ``neardup.text``.

Guarantees: pure and deterministic; the same text and config give the same tokens on every
machine.  Linear in the text length.
"""

from __future__ import annotations

from neardup.text.config import ENGLISH_STOP_WORDS, TextConfig, Tokens, ensure_text
from neardup.text.forms import (
    forms_of_raw_token,
    forms_of_raw_tokens,
    raw_token_pieces,
    raw_tokens,
)
from neardup.text.sentences import sentence_spans, sentences
from neardup.text.tokens import (
    PYTHON_NS_PER_CHAR,
    token_forms,
    token_values,
    token_values_and_spans,
    tokenize,
    tokenize_reference,
)

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
