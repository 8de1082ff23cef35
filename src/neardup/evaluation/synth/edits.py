"""The copy edits: text surgery with known changes (paragraphs, sentences, truncation,
boilerplate, headlines) and noise (typos, OCR confusions, changed numbers and dates).

Deterministic: every edit draws only from the ``random.Random`` it is given."""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from typing import Any

from neardup.config import check_choice, check_range
from neardup.errors import InputError
from neardup.evaluation.synth.config import (
    _WORD_RE,
    COPY_EDITS,
    Copy,
)
from neardup.text import sentence_spans

_BOILERPLATE = (
    "Copyright 1987 The Daily Financial Wire. All rights reserved.",
    "This material may not be published, broadcast, rewritten or redistributed.",
    "Subscribe to our morning newsletter for the top business stories of the day.",
    "Follow us on Twitter and Facebook for breaking news updates.",
    "Click here to read more stories from our markets desk.",
    "Related coverage: markets, commodities and company news.",
    "Advertisement",
    "Share this article with your friends and colleagues by e-mail.",
    "Sign up now to receive alerts when new stories on this topic are published.",
    "Reporting by our correspondents; editing by the newsroom staff.",
    "For reprints and permissions please contact the syndication department.",
    "Read the full report on our website, updated every fifteen minutes.",
    "Comments are closed for this story.",
    "Most read today: the five stories our readers could not stop talking about.",
)


_PARA_RE = re.compile(r"\n[ \t]*\n\s*|\n[ \t]+(?=\S)")


_INDENTED_RE = re.compile(r"\n[ \t]+\S")


_NUMBER_RE = re.compile(r"\d+(?:[.,]\d+)*")


_MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]


_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]


_DATE_WORD_RE = re.compile(r"\b(" + "|".join(_MONTHS + _DAYS + [m[:3] for m in _MONTHS]) + r")\b")


_HEADLINE_PREFIXES = ("UPDATE 1-", "UPDATE 2-", "CORRECTED-", "REFILE-", "WRAPUP-", "")


_HEADLINE_SUFFIXES = (" - report", " -sources", " (Reuters)", " - analysts", "")


_KEY_NEIGHBOURS = {
    "a": "qwsz", "b": "vghn", "c": "xdfv", "d": "serfcx", "e": "wsdr", "f": "drtgvc",
    "g": "ftyhbv", "h": "gyujnb", "i": "ujko", "j": "huikmn", "k": "jiolm", "l": "kop",
    "m": "njk", "n": "bhjm", "o": "iklp", "p": "ol", "q": "wa", "r": "edft", "s": "awedxz",
    "t": "rfgy", "u": "yhji", "v": "cfgb", "w": "qase", "x": "zsdc", "y": "tghu", "z": "asx",
}  # fmt: skip


# OCR confusions (character shapes), tried in order of their frequency in OCR error studies.
_OCR_CONFUSIONS = (
    ("rn", "m"), ("m", "rn"), ("cl", "d"), ("d", "cl"), ("l", "1"), ("1", "l"), ("O", "0"),
    ("0", "O"), ("e", "c"), ("c", "e"), ("i", "l"), ("h", "b"), ("S", "5"), ("B", "8"),
    ("g", "q"), ("u", "v"), ("n", "h"), ("a", "o"), ("t", "f"),
)  # fmt: skip


def perturb_words(text: str, rate: float, rng: random.Random, *, insertion: str = "random") -> str:
    """Edit about ``rate`` of the white-space words of ``text``, for planted near-copies.

    Each word draws one number ``r`` from ``rng``: below ``rate/3`` the word is deleted,
    below ``2*rate/3`` it is replaced by a random word of the text, below ``rate`` it is kept
    and a word is inserted after it (``insertion="random"``: a random word of the text, one
    more draw; ``"duplicate"``: the word itself).  Deterministic for a seeded ``rng``; the
    benchmarks' recorded corpora depend on this exact sequence of draws.
    """
    check_choice("insertion", insertion, ("random", "duplicate"))
    words = text.split()
    out: list[str] = []
    for w in words:
        r = rng.random()
        if r < rate / 3:
            continue
        if r < 2 * rate / 3:
            out.append(rng.choice(words))
            continue
        out.append(w)
        if r < rate:
            out.append(rng.choice(words) if insertion == "random" else w)
    return " ".join(out)


def split_paragraphs(text: str) -> tuple[list[str], str]:
    """Paragraphs of ``text`` and the separator to join them with.

    Paragraphs end at blank lines or at a line break followed by indentation (the newswire
    convention).  Text with a single paragraph is split into groups of two sentences, so
    paragraph edits apply to every article with at least two sentences.
    """
    sep = "\n    " if _INDENTED_RE.search(text) else "\n\n"
    paras = [p.strip() for p in _PARA_RE.split(text) if p.strip()]
    if len(paras) < 2:
        spans = sentence_spans(text)
        paras = [
            text[spans[i][0] : spans[min(i + 1, len(spans) - 1)][1]]
            for i in range(0, len(spans), 2)
        ]
        sep = "\n\n"
    return paras, sep


def _sentences(text: str) -> list[str]:
    return [text[s:e] for s, e in sentence_spans(text)]


def _whole_sentence(sentence: str) -> bool:
    """A sentence that stays one sentence wherever it is put (capital start, final stop)."""
    return sentence[:1].isupper() and sentence.rstrip("\"'”’)")[-1:] in (".", "!", "?")


def _count_words(text: str) -> int:
    return len(_WORD_RE.findall(text))


def _pick(rng: random.Random, n: int, fraction: float, keep_one: bool) -> list[int]:
    """``round(fraction * n)`` distinct indices (at least 1; at most n - 1 if ``keep_one``)."""
    k = max(1, round(fraction * n))
    if keep_one:
        k = min(k, n - 1)
    k = min(k, n)
    return sorted(rng.sample(range(n), k)) if k > 0 else []


def _new_headline(title: str | None, text: str, rng: random.Random) -> str:
    base = title.strip() if title and title.strip() else ""
    if not base or rng.random() < 0.5:
        # A headline made from the lead: its first eight words, upper-cased as wires do.
        lead = _WORD_RE.findall(text)[:8]
        base = " ".join(lead).upper()
    new = rng.choice(_HEADLINE_PREFIXES) + base + rng.choice(_HEADLINE_SUFFIXES)
    return new if new != title else "UPDATE 3-" + base


def _edit_headline(text: str, title: str | None, rng: random.Random) -> Copy:
    headline = _new_headline(title, text, rng)
    return Copy(headline + "\n" + text, headline, 1)


def _edit_boilerplate(text: str, title: str | None, s: float, rng: random.Random) -> Copy:
    target = max(1, round(s * _count_words(text)))
    top: list[str] = []
    bottom: list[str] = []
    added = 0
    while added < target:
        line = rng.choice(_BOILERPLATE)
        (top if rng.random() < 0.4 else bottom).append(line)
        added += _count_words(line)
    _paras, sep = split_paragraphs(text)
    return Copy(sep.join([*top, text.strip(), *bottom]), title, len(top) + len(bottom))


def _edit_paragraph_drop(text: str, title: str | None, s: float, rng: random.Random) -> Copy:
    paras, sep = split_paragraphs(text)
    drop = set(_pick(rng, len(paras), s, keep_one=True))
    return Copy(sep.join(p for i, p in enumerate(paras) if i not in drop), title, len(drop))


def _edit_paragraph_reorder(text: str, title: str | None, s: float, rng: random.Random) -> Copy:
    paras, sep = split_paragraphs(text)
    chosen = _pick(rng, len(paras), s, keep_one=False)
    if len(chosen) < 2:
        chosen = sorted(rng.sample(range(len(paras)), 2))
    moved = chosen[:]
    rng.shuffle(moved)
    if moved == chosen:  # make sure the order really changes: rotate by one
        moved = chosen[1:] + chosen[:1]
    out = paras[:]
    for dst, src in zip(chosen, moved, strict=True):
        out[dst] = paras[src]
    return Copy(sep.join(out), title, len(chosen))


def _insert_units(
    units: list[str], donors: Sequence[str], target_words: int, rng: random.Random
) -> tuple[list[str], int]:
    out = units[:]
    inserted = 0
    added = 0
    while added < target_words and donors:
        piece = rng.choice(donors)
        out.insert(rng.randint(0, len(out)), piece)
        added += _count_words(piece)
        inserted += 1
    return out, inserted


def _edit_paragraph_insert(
    text: str, title: str | None, s: float, rng: random.Random, donor_text: list[str]
) -> Copy:
    paras, sep = split_paragraphs(text)
    donors = [p for d in donor_text for p in split_paragraphs(d)[0]]
    out, n = _insert_units(paras, donors, max(1, round(s * _count_words(text))), rng)
    return Copy(sep.join(out), title, n)


def _sentence_pieces(text: str) -> tuple[str, list[list[str]]]:
    """Text before the first sentence, and ``[sentence, separator after it]`` pieces; joining
    them gives ``text`` back exactly."""
    spans = sentence_spans(text)
    pieces = [
        [text[a:b], text[b : spans[i + 1][0] if i + 1 < len(spans) else len(text)]]
        for i, (a, b) in enumerate(spans)
    ]
    return text[: spans[0][0]] if spans else text, pieces


def _join_pieces(prefix: str, pieces: list[list[str]]) -> str:
    return (prefix + "".join(x + sep for x, sep in pieces)).rstrip()


def _edit_sentence_drop(text: str, title: str | None, s: float, rng: random.Random) -> Copy:
    prefix, pieces = _sentence_pieces(text)
    drop = set(_pick(rng, len(pieces), s, keep_one=True))
    kept = [p for i, p in enumerate(pieces) if i not in drop]
    for i in range(len(kept) - 1):
        # The old boundary may have relied on the dropped sentence (a lower-case start after
        # a blank line): a blank line keeps every remaining boundary where it was.
        if kept[i + 1][0][:1].islower() and "\n\n" not in kept[i][1]:
            kept[i][1] = "\n\n"
    return Copy(_join_pieces(prefix, kept), title, len(drop))


def _insert_sentences(
    text: str, donors: Sequence[str], target_words: int, rng: random.Random
) -> tuple[str, int]:
    """Insert whole donor sentences at random sentence boundaries, each set off by a blank
    line so the sentence structure of the rest is unchanged."""
    prefix, pieces = _sentence_pieces(text)
    added = inserted = 0
    while added < target_words and donors:
        sentence = rng.choice(donors)
        at = rng.randint(0, len(pieces))
        if at == len(pieces) and pieces:
            pieces[-1][1] = "\n\n"
        pieces.insert(at, [sentence, "\n\n" if at < len(pieces) else ""])
        added += _count_words(sentence)
        inserted += 1
    return _join_pieces(prefix, pieces), inserted


def _donor_sentences(texts: Sequence[str]) -> list[str]:
    return [
        x
        for d in texts
        for x in _sentences(d)
        if _whole_sentence(x) and len(sentence_spans(x)) == 1
    ]


def _edit_sentence_insert(
    text: str, title: str | None, s: float, rng: random.Random, donor_text: list[str]
) -> Copy:
    target = max(1, round(s * _count_words(text)))
    out, n = _insert_sentences(text, _donor_sentences(donor_text), target, rng)
    return Copy(out, title, n)


def _edit_truncate(text: str, title: str | None, s: float, rng: random.Random) -> Copy:
    spans = sentence_spans(text)
    cut = len(_pick(rng, len(spans), s, keep_one=True))
    return Copy(text[: spans[len(spans) - cut - 1][1]], title, cut)


def _typo(word: str, rng: random.Random) -> str:
    i = rng.randrange(len(word))
    op = rng.randrange(4)
    if op == 0 and len(word) > 1:  # swap two adjacent letters
        i = min(i, len(word) - 2)
        new = word[:i] + word[i + 1] + word[i] + word[i + 2 :]
    elif op == 1 and len(word) > 2:  # drop a letter
        new = word[:i] + word[i + 1 :]
    elif op == 2:  # double a letter
        new = word[:i] + word[i] + word[i:]
    else:  # hit a neighbouring key
        ch = word[i]
        near = _KEY_NEIGHBOURS.get(ch.lower(), "e")
        rep = rng.choice(near)
        new = word[:i] + (rep.upper() if ch.isupper() else rep) + word[i + 1 :]
    if new.casefold() == word.casefold():
        new = word[:i] + word[i] + word[i:]
    return new


def _ocr(word: str, rng: random.Random) -> str:
    options = [(a, b) for a, b in _OCR_CONFUSIONS if a in word]
    if not options:
        return word[:-1] + ("1" if word[-1] != "1" else "l")
    a, b = rng.choice(options)
    starts = [m.start() for m in re.finditer(re.escape(a), word)]
    i = rng.choice(starts)
    return word[:i] + b + word[i + len(a) :]


def _replace_words(
    text: str, s: float, rng: random.Random, change: Any, pattern: re.Pattern[str]
) -> Copy:
    matches = list(pattern.finditer(text))
    if not matches:
        return Copy(text, None, 0)
    # The strength is a fraction of *all* words; candidates are the words an edit can touch.
    total = _count_words(text)
    k = min(len(matches), max(1, round(s * total)))
    chosen = sorted(rng.sample(range(len(matches)), k))
    out: list[str] = []
    pos = 0
    for idx in chosen:
        m = matches[idx]
        out.append(text[pos : m.start()])
        out.append(change(m.group(), rng))
        pos = m.end()
    out.append(text[pos:])
    return Copy("".join(out), None, k)


_LETTER_WORD_RE = re.compile(r"[^\W\d_]{3,}")


def _edit_typos(text: str, title: str | None, s: float, rng: random.Random) -> Copy:
    c = _replace_words(text, s, rng, _typo, _LETTER_WORD_RE)
    return Copy(c.text, title, c.changes, content=text)


def _edit_ocr(text: str, title: str | None, s: float, rng: random.Random) -> Copy:
    c = _replace_words(text, s, rng, _ocr, re.compile(r"\w{2,}"))
    # Scanned text also loses a few spaces (two words run together): one per ~50 words.
    spaces = [m.start() for m in re.finditer(r"(?<=\w) (?=\w)", c.text)]
    lost = sorted(rng.sample(spaces, min(len(spaces), round(s * len(spaces) / 5))))
    out = c.text
    for i in reversed(lost):
        out = out[:i] + out[i + 1 :]
    return Copy(out, title, c.changes + len(lost), content=text)


def _change_number(token: str, rng: random.Random) -> str:
    digits = [i for i, ch in enumerate(token) if ch.isdigit()]
    i = rng.choice(digits[1:] if len(digits) > 1 else digits)
    old = token[i]
    low = 1 if i == digits[0] and len(digits) > 1 else 0
    new = rng.choice([d for d in "0123456789"[low:] if d != old])
    return token[:i] + new + token[i + 1 :]


def _change_date_word(token: str, rng: random.Random) -> str:
    for names in (_MONTHS, _DAYS):
        for name in names:
            if token in (name, name[:3]):
                other = rng.choice([n for n in names if n != name])
                return other if token == name else other[:3]
    return token


def _edit_numbers(text: str, title: str | None, s: float, rng: random.Random) -> Copy:
    units = list(_NUMBER_RE.finditer(text)) + list(_DATE_WORD_RE.finditer(text))
    units.sort(key=lambda m: m.start())
    if not units:
        return Copy(text, title, 0)
    chosen = _pick(rng, len(units), s, keep_one=False)
    out: list[str] = []
    pos = 0
    for idx in chosen:
        m = units[idx]
        word = m.group()
        new = _change_number(word, rng) if word[0].isdigit() else _change_date_word(word, rng)
        out.append(text[pos : m.start()])
        out.append(new)
        pos = m.end()
    out.append(text[pos:])
    return Copy("".join(out), title, len(chosen), content=text)


def _edit_mixed(
    text: str, title: str | None, s: float, rng: random.Random, donor_text: list[str]
) -> Copy:
    c = _edit_headline(text, title, rng)
    headline, body = c.text.split("\n", 1)
    parts = [1]
    body_c = _edit_sentence_drop(body, title, s / 2, rng)
    parts.append(body_c.changes)
    body_c = _edit_boilerplate(body_c.text, title, s, rng)
    parts.append(body_c.changes)
    body_c = _edit_typos(body_c.text, title, s / 10, rng)
    parts.append(body_c.changes)
    return Copy(
        headline + "\n" + body_c.text,
        c.title,
        sum(parts),
        content=headline + "\n" + body_c.content_text,
    )


def applicable(edit: str, text: str) -> bool:
    """Whether ``edit`` can change ``text`` at all (e.g. ``numbers`` needs a number)."""
    if edit == "numbers":
        return bool(_NUMBER_RE.search(text) or _DATE_WORD_RE.search(text))
    if edit in ("paragraph_drop", "paragraph_reorder"):
        return len(split_paragraphs(text)[0]) >= 2
    if edit in ("sentence_drop", "truncate"):
        return len(sentence_spans(text)) >= 2
    return True


def apply_edit(
    edit: str,
    text: str,
    title: str | None,
    strength: float,
    rng: random.Random,
    donor_text: Sequence[str] = (),
) -> Copy:
    """Apply one named ``edit`` of ``strength`` to ``text``; pure given the ``rng`` state.

    ``donor_text`` supplies the paragraphs/sentences that insertions borrow (other articles).
    Raises ``InputError`` when the edit cannot apply (see :func:`applicable`).
    """
    check_choice("edit", edit, COPY_EDITS)
    check_range("strength", strength, low=0.0, high=1.0)
    if not applicable(edit, text):
        raise InputError(f"edit {edit!r} cannot change this text (too short or no numbers)")
    donors = list(donor_text)
    if edit in ("paragraph_insert", "sentence_insert", "mixed") and not donors:
        raise InputError(f"edit {edit!r} needs donor articles")
    if edit == "exact":
        return Copy(text, title, 0)
    if edit == "headline":
        return _edit_headline(text, title, rng)
    if edit == "paragraph_insert":
        return _edit_paragraph_insert(text, title, strength, rng, donors)
    if edit == "sentence_insert":
        return _edit_sentence_insert(text, title, strength, rng, donors)
    if edit == "mixed":
        return _edit_mixed(text, title, strength, rng, donors)
    simple = {
        "boilerplate": _edit_boilerplate,
        "paragraph_drop": _edit_paragraph_drop,
        "paragraph_reorder": _edit_paragraph_reorder,
        "sentence_drop": _edit_sentence_drop,
        "truncate": _edit_truncate,
        "typos": _edit_typos,
        "ocr": _edit_ocr,
        "numbers": _edit_numbers,
    }
    return simple[edit](text, title, strength, rng)


def strip_boilerplate(text: str) -> str:
    """``text`` without the boilerplate lines this module adds (they are not story content)."""
    for line in _BOILERPLATE:
        text = text.replace(line, " ")
    return text
