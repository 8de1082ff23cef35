"""Compiled sentence boundaries (private): the scan of :func:`neardup.text.sentence_spans`.

One pass over the text's code units (the bytes of an ASCII text, else its UTF-32 code
points, so positions are ``str`` indices) finds the matches of the sentence module's
boundary regular expression exactly as ``re.finditer`` does, drops the full stops followed
by a lower-case letter, and reports, for each single ``.`` that may follow an initial or an
abbreviation, the span of the word the abbreviation test reads; the caller looks those few
words up in Python (their ``str.lower`` and the abbreviation set) and a second pass cuts and
strips the sentences.  The character classes (the regular expression's ``\\s`` and
``[^\\W_]``, and ``str.islower``) come from a table indexed by code point, built from the
regular expression engine's own classes and ``str.islower``.  numba because this is a
scanning loop over characters that numpy cannot vectorise; the Python path of
:mod:`neardup.text.sentences` is the reference it is tested equal to.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

import numpy as np
import numpy.typing as npt

from neardup._jit import njit

SPACE = 1
LOWER = 2
ALNUM = 4

_SPACE_RUN_RE = re.compile(r"\s+")
_ALNUM_RUN_RE = re.compile(r"[^\W_]+")


def _class_table(size: int) -> npt.NDArray[np.uint8]:
    """The class bits of code points ``0 .. size - 1``: ``\\s`` and ``[^\\W_]`` from the
    regular expression engine itself, ``str.islower`` per code point."""
    chars = np.arange(size, dtype="<u4").tobytes().decode("utf-32-le", "surrogatepass")
    table = np.zeros(size, dtype=np.uint8)
    for pattern, bit in ((_SPACE_RUN_RE, SPACE), (_ALNUM_RUN_RE, ALNUM)):
        for match in pattern.finditer(chars):
            table[match.start() : match.end()] |= bit
    table[np.fromiter(map(str.islower, chars), dtype=np.bool_, count=size)] |= LOWER
    table.flags.writeable = False
    return table


@lru_cache(maxsize=1)
def _ascii_classes() -> npt.NDArray[np.uint8]:
    return _class_table(128)


@lru_cache(maxsize=1)
def _code_point_classes() -> npt.NDArray[np.uint8]:
    """All of Unicode (one byte a code point; built once, for the first non-ASCII text)."""
    return _class_table(0x110000)


def code_units(text: str) -> tuple[npt.NDArray[Any], npt.NDArray[np.uint8]]:
    """The text as the kernels read it and the class table for that width."""
    if text.isascii():
        return np.frombuffer(text.encode("ascii"), dtype=np.uint8), _ascii_classes()
    data = text.encode("utf-32-le", "surrogatepass")
    return np.frombuffer(data, dtype="<u4"), _code_point_classes()


@njit(cache=True, inline="always")
def _is_stop(c: int) -> bool:  # . ! ? …
    return c == 0x2E or c == 0x21 or c == 0x3F or c == 0x2026


@njit(cache=True, inline="always")
def _is_close(c: int) -> bool:  # " ' ” ’ ) ]
    return c == 0x22 or c == 0x27 or c == 0x201D or c == 0x2019 or c == 0x29 or c == 0x5D


@njit(cache=True, inline="always")
def _is_wide(c: int) -> bool:  # 。！？
    return c == 0x3002 or c == 0xFF01 or c == 0xFF1F


@njit(cache=True, inline="always")
def _is_wide_close(c: int) -> bool:  # 」』”’)）
    return c == 0x300D or c == 0x300F or c == 0x201D or c == 0x2019 or c == 0x29 or c == 0xFF09


@njit(cache=True, inline="always")
def _is_blank(c: int) -> bool:  # [ \t\r\f\v]
    return c == 0x20 or c == 0x09 or c == 0x0D or c == 0x0C or c == 0x0B


@njit(cache=True)
def _word_before(buf: Any, classes: Any, s: int) -> tuple[int, int]:
    """The word ``_is_false_dot`` reads before the ``.`` at ``s`` (the leftmost match of
    ``[^\\W_]+(?:\\.[^\\W_]+)*$`` in ``[max(0, s - 24), s)``), or ``(-1, -1)`` when the dot is
    surely a full stop (no such word, or seven alphanumerics before it)."""
    last = buf[s - 1] if s > 0 else 0x20
    if not (classes[last] & ALNUM) and last != 0x0A:
        return -1, -1
    if s >= 7:
        run = True
        for k in range(s - 7, s):
            if not (classes[buf[k]] & ALNUM):
                run = False
                break
        if run:
            return -1, -1
    lo = max(0, s - 24)
    e = s - 1 if last == 0x0A else s  # "$" also matches before a final newline
    if e <= lo or not (classes[buf[e - 1]] & ALNUM):
        return -1, -1
    k = e - 1
    while k - 1 >= lo:
        d = buf[k - 1]
        if classes[d] & ALNUM or (d == 0x2E and classes[buf[k]] & ALNUM):
            k -= 1
        else:
            break
    if buf[k] == 0x2E:
        k += 1
    return k, e


@njit(cache=True)
def boundary_matches(buf: Any, classes: Any) -> npt.NDArray[np.int64]:
    """Rows ``match start, match end, sentence end, word start, word end`` of the boundary
    matches that may end a sentence, in order: full stops not followed by a lower-case
    letter, wide stops and blank lines; ``word start >= 0`` marks a single ``.`` whose word
    the caller must test (an initial or an abbreviation does not end the sentence)."""
    n = buf.shape[0]
    cap = 0
    for p in range(n):
        c = buf[p]
        if _is_stop(c) or _is_wide(c) or c == 0x0A:
            cap += 1
    out = np.empty((cap, 5), dtype=np.int64)
    m = 0
    p = 0
    while p < n:
        c = buf[p]
        if _is_stop(c):
            q = p
            while q < n and _is_stop(buf[q]):
                q += 1
            stop_end = q
            while q < n and _is_close(buf[q]):
                q += 1
            close_end = q
            if q < n and not (classes[buf[q]] & SPACE):
                p += 1  # no match here: the regular expression tries the next position
                continue
            while q < n and classes[buf[q]] & SPACE:
                q += 1
            if q < n and classes[buf[q]] & LOWER:
                p = q  # "e.g. the": consumed, ends nothing
                continue
            ws, we = -1, -1
            if stop_end - p == 1 and c == 0x2E:
                ws, we = _word_before(buf, classes, p)
            out[m, 0], out[m, 1], out[m, 2], out[m, 3], out[m, 4] = p, q, close_end, ws, we
            m += 1
            p = q
        elif _is_wide(c):
            q = p
            while q < n and _is_wide(buf[q]):
                q += 1
            while q < n and _is_wide_close(buf[q]):
                q += 1
            end = q
            while q < n and classes[buf[q]] & SPACE:
                q += 1
            out[m, 0], out[m, 1], out[m, 2], out[m, 3], out[m, 4] = p, q, end, -1, -1
            m += 1
            p = q
        elif c == 0x0A:
            q = p + 1
            while q < n and _is_blank(buf[q]):
                q += 1
            if q < n and buf[q] == 0x0A:
                q += 1
                while q < n and classes[buf[q]] & SPACE:
                    q += 1
                out[m, 0], out[m, 1], out[m, 2], out[m, 3], out[m, 4] = p, q, p, -1, -1
                m += 1
                p = q
            else:
                p += 1
        else:
            p += 1
    return out[:m]


@njit(cache=True)
def cut_sentences(buf: Any, classes: Any, rows: Any, keep: Any) -> npt.NDArray[np.int64]:
    """Sentence spans (rows ``start, end``) between the kept boundary matches: each from the
    end of the previous kept match (0 first) to its sentence end (the text's end last),
    stripped of white space, empty ones left out."""
    n = buf.shape[0]
    out = np.empty((rows.shape[0] + 1, 2), dtype=np.int64)
    m = 0
    start = 0
    for k in range(rows.shape[0] + 1):
        if k < rows.shape[0]:
            if not keep[k]:
                continue
            end = rows[k, 2]
        else:
            end = n
        a, b = start, end
        while a < b and classes[buf[a]] & SPACE:
            a += 1
        while b > a and classes[buf[b - 1]] & SPACE:
            b -= 1
        if b > a:
            out[m, 0], out[m, 1] = a, b
            m += 1
        if k < rows.shape[0]:
            start = rows[k, 1]
    return out[:m]
