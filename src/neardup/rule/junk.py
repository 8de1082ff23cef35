"""What a scraped page carries that is not the article's own prose.

A news page scraped from the web holds, besides the article, navigation and buttons
("Share story", "Most Read"), bylines and datelines, photo captions (often twice: thumbnail
and full size), embedded posts with their attribution lines, newsletter prompts and lists of
other stories.  Readers ignore them when they judge whether two pages carry the same article
(the labelling guide of ``provenance_news_2018_dev``: "ignore the junk"; "sharing verbatim
quotes ... does not make a pair partial"), so the judgement must too, and it must do so
without per-site lists.  Three generic cues find most of it, paragraph by paragraph:

* **short**: a paragraph of fewer than ``min_paragraph_tokens`` tokens (buttons, bylines,
  datelines, credit lines, section headings).  Running prose rarely has a paragraph that
  short;
* **repeated**: a paragraph that occurs more than once in the page (captions shown twice,
  repeated widgets); an article never repeats a paragraph word for word;
* **embedded**: a paragraph that ends with a parenthesised credit (``(AP Photo/...)``,
  ``(Photo: ...)``) or is followed by a short credit or attribution line (a line that is
  fully parenthesised, starts with a dash, names a photo, image, picture or credit, or has a
  ``Name/Agency`` slash): photo captions and embedded posts, which describe or quote
  material rather than tell the story.

They mark whole paragraphs as *furniture*.  Separately, words inside paired quotation marks
(``"..."``, ``“...”``, ``«...»``, ``„...“``) are marked *quoted*: two reports sharing a
politician's words have not copied each other's prose.

Paragraphs: on a web page every line is one; text hard-wrapped at a fixed width (newswire
such as Reuters) is recognised by its line breaks inside sentences (more than a third of
them continue in lower case), and its paragraphs are then separated by blank lines or
indented lines.

Guarantees: pure and deterministic; linear in the text length.  The cues are heuristics
(a caption without a credit line is prose to them); their effect on every evaluation set is
in docs/evaluation.md ("Ablations").
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

__all__ = ["CUES", "FURNITURE", "QUOTED", "paragraph_spans", "token_flags"]

FURNITURE = np.uint8(1)  # the token's paragraph is page furniture, not the article's prose
QUOTED = np.uint8(2)  # the token stands inside paired quotation marks

_CREDIT_WORD_RE = re.compile(r"\b(?:photo|image|picture|credit|foto)s?\b", re.IGNORECASE)
_SLASH_CREDIT_RE = re.compile(r"[^\W\d_]/[^\W\d_]")
_CREDIT_END_RE = re.compile(r"\(([^()]*)\)\W*$")
_DASH_START_RE = re.compile(r"^\s*(?:[—–]|-{1,2}\s)")
_QUOTE_RE = re.compile(r"[\"“”«»„]")
_OPENING = "“«„"
_CLOSING = "”»"


def _lines(text: str) -> list[tuple[int, int]]:
    """``[start, end)`` of every line (``\\r`` stripped), empty ones included."""
    spans = []
    start = 0
    while True:
        end = text.find("\n", start)
        stop = len(text) if end < 0 else end
        spans.append((start, stop - 1 if stop > start and text[stop - 1] == "\r" else stop))
        if end < 0:
            return spans
        start = end + 1


def _is_hard_wrapped(text: str, lines: Sequence[tuple[int, int]]) -> bool:
    """More than a third of the breaks between two non-empty lines continue in lower case."""
    breaks = wrapped = 0
    for (s1, e1), (s2, e2) in itertools.pairwise(lines):
        if e1 == s1 or e2 == s2 or text[s2].isspace():
            continue
        breaks += 1
        wrapped += text[s2].islower()
    return breaks >= 3 and 3 * wrapped > breaks


def paragraph_spans(text: str) -> list[tuple[int, int]]:
    """``[start, end)`` of each paragraph of ``text``, in order, stripped, never empty."""
    if "\n" not in text:
        return [_strip(text, 0, len(text))] if text.strip() else []
    lines = _lines(text)
    wrapped = _is_hard_wrapped(text, lines)
    spans: list[tuple[int, int]] = []
    start: int | None = None
    end = 0
    for s, e in lines:
        blank = not text[s:e].strip()
        opens = not wrapped or (e > s and text[s].isspace())
        if blank or (opens and start is not None):
            if start is not None:
                spans.append((start, end))
            start = None
        if not blank:
            if start is None:
                start = s
            end = e
    if start is not None:
        spans.append((start, end))
    return [_strip(text, s, e) for s, e in spans]


def _strip(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _is_credit_line(line: str) -> bool:
    stripped = line.strip()
    return bool(
        (stripped.startswith("(") and stripped.endswith(")"))
        or _DASH_START_RE.match(stripped)
        or _CREDIT_WORD_RE.search(stripped)
        or _SLASH_CREDIT_RE.search(stripped)
    )


def _ends_with_credit(paragraph: str) -> bool:
    m = _CREDIT_END_RE.search(paragraph)
    if m is None:
        return False
    inner = m.group(1)
    return bool(_CREDIT_WORD_RE.search(inner) or _SLASH_CREDIT_RE.search(inner))


CUES = ("short", "repeated", "embedded")


def _furniture(
    text: str, paras: Sequence[tuple[int, int]], counts: Sequence[int], min_tokens: int
) -> dict[str, list[bool]]:
    """Per cue, per paragraph: whether the cue marks it (the module docstring)."""
    norm = [text[s:e].casefold() for s, e in paras]
    seen = Counter(norm)
    out: dict[str, list[bool]] = {cue: [] for cue in CUES}
    for i, (s, e) in enumerate(paras):
        short = counts[i] < min_tokens
        out["short"].append(short)
        out["repeated"].append(seen[norm[i]] > 1)
        out["embedded"].append(
            _ends_with_credit(text[s:e])
            or (
                not short
                and i + 1 < len(paras)
                and counts[i + 1] < min_tokens
                and _is_credit_line(text[paras[i + 1][0] : paras[i + 1][1]])
            )
        )
    return out


def _quoted_spans(text: str, paras: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """``[start, end)`` of each pair of quotation marks closed in the same paragraph, marks
    included, in text order (disjoint)."""
    spans: list[tuple[int, int]] = []
    ends = iter([e for _, e in paras])
    end = -1
    open_at = -1
    # Every mark lies in a paragraph (paragraphs hold every non-space character).
    for m in _QUOTE_RE.finditer(text):
        at = m.start()
        if at >= end:  # a new paragraph: an open mark does not carry over
            end = next((e for e in ends if e > at), len(text))
            open_at = -1
        mark = text[at]
        if mark in _OPENING:
            open_at = at
        elif mark in _CLOSING:
            if open_at >= 0:
                spans.append((open_at, at + 1))
            open_at = -1
        elif open_at < 0:  # a straight quote opens or closes
            open_at = at
        else:
            spans.append((open_at, at + 1))
            open_at = -1
    return spans


def _mark_within(
    flags: npt.NDArray[np.uint8], starts: npt.NDArray[np.int64], spans: list[tuple[int, int]]
) -> None:
    """Add ``QUOTED`` to the tokens whose first character lies in one of ``spans``."""
    bounds = np.searchsorted(starts, np.array(spans, dtype=np.int64).reshape(-1)).tolist()
    for k in range(0, len(bounds), 2):
        flags[bounds[k] : bounds[k + 1]] |= QUOTED


def token_flags(
    text: str,
    starts: npt.NDArray[np.int64],
    *,
    min_paragraph_tokens: int,
    cues: Sequence[str] = CUES,
    quotes: bool = True,
) -> npt.NDArray[np.uint8]:
    """Per token (``starts``: its first character, ascending): ``FURNITURE | QUOTED`` bits.

    ``cues`` and ``quotes`` select what is marked (all by default; fewer only to measure
    what each earns, docs/evaluation.md)."""
    n = int(starts.shape[0])
    flags = np.zeros(n, dtype=np.uint8)
    if n == 0:
        return flags
    paras = paragraph_spans(text)
    if len(paras) == 1:
        para_of = np.zeros(n, dtype=np.int64)
        counts = [n]
    else:
        bounds = np.array([s for s, _ in paras], dtype=np.int64)
        para_of = np.searchsorted(bounds, starts, side="right") - 1
        counts = np.bincount(para_of, minlength=len(paras)).tolist()
    marks = _furniture(text, paras, counts, min_paragraph_tokens)
    junk = [any(marks[cue][i] for cue in cues) for i in range(len(paras))]
    if any(junk):
        flags[np.array(junk, dtype=np.bool_)[para_of]] = FURNITURE
    if quotes and _QUOTE_RE.search(text) is not None:
        spans = _quoted_spans(text, paras)
        if spans:
            _mark_within(flags, starts, spans)
    return flags
