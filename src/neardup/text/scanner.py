"""The compiled scanner's vocabulary: what :mod:`neardup._kernels` reads to find and resolve
the tokens of a text in one pass.

:class:`_Vocabulary` maps each raw token seen so far (one :class:`~neardup.text.TextConfig`)
to its pieces, the forms of :func:`~neardup.text.forms.raw_token_pieces` with their spans, and
to the values callers attach to a form (a token hash).  The character-class tables the
scanner reads are built from the very classes of the token regular expression.

Guarantees: a scan gives the pieces :func:`neardup.text.tokenize_reference` gives (tested);
memory is bounded (a full vocabulary starts afresh); scans are serialised by a lock.
"""

from __future__ import annotations

import operator
import re
import threading
from collections.abc import Callable, Hashable
from functools import lru_cache
from typing import Any

import numpy as np
import numpy.typing as npt

from neardup.text.config import TextConfig
from neardup.text.forms import raw_token_pieces

__all__: list[str] = []

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
    """All of Unicode (one byte a code point; built once, for the first non-ASCII text)."""
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
