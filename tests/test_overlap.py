"""Directed word overlap (neardup.similarity.overlap) against a brute-force matcher."""

from __future__ import annotations

import itertools
import random
import re
from collections import Counter
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.errors import ConfigError
from neardup.evaluation.synth import applicable, apply_edit, perturb_words
from neardup.similarity.overlap import (
    Overlap,
    OverlapConfig,
    delete_keys,
    key_overlap,
    key_words,
    lcs_length,
    overlap,
    overlap_words,
    paragraphs,
    peel_packaging,
    prepare,
    sequence_containment,
    words,
)


def brute_lcs(u: str, v: str) -> int:
    """Longest common subsequence by trying every subsequence of the shorter string."""
    short, long_ = (u, v) if len(u) <= len(v) else (v, u)
    for k in range(len(short), 0, -1):
        for idx in itertools.combinations(range(len(short)), k):
            sub = "".join(short[i] for i in idx)
            it = iter(long_)
            if all(c in it for c in sub):
                return k
    return 0


def brute_overlap(stored: list[str], new: list[str], cfg: OverlapConfig) -> Overlap:
    """The documented matching, done the slow way: exact bag intersection, then (joined) every
    split of every left-over new word, then every left-over pair compared by its LCS."""
    pool = Counter(stored)
    rest: list[str] = []
    exact = 0
    counts = Counter(new)
    common = pool & counts
    exact = sum(common.values())
    pool -= common
    left = counts - common
    for w in new:  # left-over new words in text order
        if left[w] > 0:
            left[w] -= 1
            rest.append(w)
    joined = 0
    if cfg.match_joined:
        still: list[str] = []
        for w in rest:
            for i in range(1, len(w)):
                x, y = w[:i], w[i:]
                if pool[x] > 0 and pool[y] > (1 if x == y else 0):
                    pool[x] -= 1
                    pool[y] -= 1
                    joined += 1
                    break
            else:
                still.append(w)
        rest = still
    fuzzy = 0
    if cfg.max_deletes > 0:
        for u in rest:
            if len(u) < cfg.fuzzy_min_length:
                continue
            best: tuple[int, str] | None = None
            for v in sorted(pool):
                if pool[v] <= 0 or len(v) < cfg.fuzzy_min_length:
                    continue
                allowed = cfg.max_deletes
                if min(len(u), len(v)) < cfg.long_word_length:
                    allowed = min(1, allowed)
                need = max(len(u), len(v)) - lcs_length(u, v)
                if need <= allowed and (best is None or (need, v) < best):
                    best = (need, v)
            if best is not None:
                pool[best[1]] -= 1
                fuzzy += 1
    return Overlap(
        stored_words=len(stored),
        new_words=len(new),
        stored_matched=exact + 2 * joined + fuzzy,
        new_matched=exact + joined + fuzzy,
        exact=exact,
        fuzzy=fuzzy,
        joined=joined,
    )


CONFIGS = [
    OverlapConfig(),
    OverlapConfig(max_deletes=2, match_joined=True),
    OverlapConfig(max_deletes=2, long_word_length=4, fuzzy_min_length=3),
    OverlapConfig(max_deletes=0),
]


@given(
    st.text("abcd", min_size=1, max_size=7),
    st.text("abcd", min_size=1, max_size=7),
)
@settings(max_examples=200, deadline=None)
def test_lcs_and_delete_keys(u: str, v: str) -> None:
    assert lcs_length(u, v) == brute_lcs(u, v)
    for d in (1, 2):
        shared = bool(delete_keys(u, d) & delete_keys(v, d))
        # SymSpell's symmetric delete: a common key <=> LCS >= max length - d (non-empty).
        assert shared == (lcs_length(u, v) >= max(len(u), len(v)) - d and lcs_length(u, v) > 0)


_WORD = st.text("abcde", min_size=1, max_size=6)


@given(st.lists(_WORD, max_size=25), st.lists(_WORD, max_size=25), st.sampled_from(CONFIGS))
@settings(max_examples=300, deadline=None)
def test_matches_brute_force_on_random_words(
    stored: list[str], new: list[str], cfg: OverlapConfig
) -> None:
    got = overlap_words(stored, new, cfg)
    assert got == brute_overlap(stored, new, cfg)
    assert 0.0 <= got.coverage <= 1.0 and 0.0 <= got.added <= 1.0
    assert got.stored_matched <= len(stored) and got.new_matched <= len(new)


@given(st.lists(_WORD, max_size=25), st.lists(_WORD, max_size=25))
@settings(max_examples=200, deadline=None)
def test_decide_gives_the_same_answer(stored: list[str], new: list[str]) -> None:
    cfg = OverlapConfig()
    for rule in ((0.5, 0.2), (0.3, 0.5), (0.9, 0.05)):
        full = overlap_words(stored, new, cfg)
        fast = overlap_words(stored, new, cfg, decide=rule)
        assert (full.coverage >= rule[0] and full.added <= rule[1]) == (
            fast.coverage >= rule[0] and fast.added <= rule[1]
        )


@given(st.lists(_WORD, min_size=1, max_size=30), st.randoms(use_true_random=False))
@settings(max_examples=100, deadline=None)
def test_a_shuffled_copy_is_whole(stored: list[str], rng: random.Random) -> None:
    new = stored[:]
    rng.shuffle(new)
    got = overlap_words(stored, new)
    assert (got.coverage, got.added, got.exact) == (1.0, 0.0, len(stored))


def _texts(reuters_docs: list[dict[str, Any]], n: int) -> list[str]:
    return [str(d["text"]) for d in reuters_docs if len(str(d["text"])) > 400][:n]


def test_real_noisy_copies_match_brute_force(reuters_docs: list[dict[str, Any]]) -> None:
    texts = _texts(reuters_docs, 12)
    rng = random.Random(7)
    for cfg in CONFIGS[:3]:
        for i, text in enumerate(texts):
            stored = words(text, cfg)[:150]
            noisy = words(perturb_words(" ".join(stored), 0.3, rng), cfg)
            other = words(texts[(i + 1) % len(texts)], cfg)[:60]
            for new in (noisy, noisy + other, noisy[: len(noisy) // 2]):
                assert overlap_words(stored, new, cfg) == brute_overlap(stored, new, cfg)


def test_noise_is_recovered_on_real_text(reuters_docs: list[dict[str, Any]]) -> None:
    # Copies with 30 % of their words misspelt (synth's typo and OCR edits) keep nearly all
    # of the original's words under fuzzy matching, far more than exact matching sees.
    rng = random.Random(3)
    for text in _texts(reuters_docs, 20):
        for edit in ("typos", "ocr"):
            copy = apply_edit(edit, text, None, 0.3, rng).text
            noisy = overlap(text, copy)
            exact_only = overlap(text, copy, OverlapConfig(max_deletes=0))
            assert noisy.fuzzy > 0 and noisy.coverage > exact_only.coverage
            assert noisy.added <= 0.2 and noisy.coverage >= 0.7, (edit, noisy)


def test_packaging_is_peeled_but_inserted_story_is_not(
    reuters_docs: list[dict[str, Any]],
) -> None:
    a, b = _texts(reuters_docs, 2)
    boiler = "Copyright 1987 The Daily Financial Wire. All rights reserved."
    packaged = overlap(a, f"{boiler}\n\n{a}\n\nComments are closed for this story.")
    assert packaged.added == 0.0 and packaged.coverage == 1.0
    assert packaged.packaging == len(words(boiler)) + 6
    # A whole paragraph of another story inside the article is content, not packaging.
    inserted = overlap(a, a + "\n\n" + b + "\n\n" + a)
    assert inserted.packaging == 0 and inserted.added > 0.0
    off = overlap(a, f"{boiler}\n\n{a}", OverlapConfig(packaging_max_words=0))
    assert off.packaging == 0 and off.added > 0.0


def test_empty_and_masks() -> None:
    assert overlap("", "").coverage == 1.0 and overlap("", "").added == 0.0
    assert overlap("some words", "").coverage == 0.0
    cfg = OverlapConfig(mask_digits=True, mask_calendar=True)
    got = overlap("rose 12.5 pct in March", "rose 13.7 pct in April", cfg)
    assert got.added == 0.0
    assert overlap("rose 12.5 pct in March", "rose 13.7 pct in April").added > 0.0


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_deletes": 3},
        {"max_deletes": 2, "fuzzy_min_length": 2},
        {"packaging_min_found": 1.5},
        {"packaging_max_words": -1},
    ],
)
def test_config_is_validated(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        OverlapConfig(**kwargs)


def brute_sequence(stored: str, new: str, width: int, cfg: OverlapConfig) -> float:
    """Sequence containment the slow way: every word missing from the stored text is compared
    with every stored word by LCS; n-gram positions counted one by one."""
    ps, pn = prepare(stored, cfg), prepare(new, cfg)
    i, j = peel_packaging(ps, pn, cfg)
    kept = [w for ws in pn.paragraphs[i:j] for w in ws]
    vocab = sorted(set(ps.words))
    fixed = []
    for w in kept:
        if w not in ps.counts and len(w) >= cfg.fuzzy_min_length and cfg.max_deletes:
            best = None
            for v in vocab:
                if len(v) < cfg.fuzzy_min_length:
                    continue
                allowed = cfg.max_deletes if min(len(w), len(v)) >= cfg.long_word_length else 1
                need = max(len(w), len(v)) - lcs_length(w, v)
                if need <= allowed and (best is None or (need, v) < best):
                    best = (need, v)
            w = best[1] if best else w
        fixed.append(w)
    n = len(fixed) - width + 1
    if n <= 0:
        return 1.0
    theirs = [tuple(ps.words[k : k + width]) for k in range(len(ps.words) - width + 1)]
    return sum(tuple(fixed[k : k + width]) in theirs for k in range(n)) / n


def test_sequence_containment_matches_brute_force(reuters_docs: list[dict[str, Any]]) -> None:
    texts = _texts(reuters_docs, 10)
    rng = random.Random(11)
    cfg = OverlapConfig()
    for i, text in enumerate(texts):
        for edit in ("typos", "ocr", "paragraph_reorder"):
            copy = apply_edit(
                edit, text, None, 0.3 if edit != "paragraph_reorder" else 0.6, rng
            ).text
            for stored, new in ((text, copy), (texts[i - 1], copy)):
                full = sequence_containment(prepare(stored, cfg), prepare(new, cfg), 3, cfg)
                assert full == pytest.approx(brute_sequence(stored, new, 3, cfg))
                for t in (0.3, 0.5, 0.8):
                    fast = sequence_containment(
                        prepare(stored, cfg), prepare(new, cfg), 3, cfg, at_least=t
                    )
                    assert (fast >= t) == (full >= t) and fast <= full + 1e-12


def brute_key_words(text: str, cfg: OverlapConfig) -> list[str]:
    """Key words the slow way: scan the text token by token, remembering the last
    non-blank, non-quote character before each token."""
    out: list[str] = []
    for m in re.finditer(r"\w+", text):
        tok = m.group()
        before = text[: m.start()].rstrip(" \t\r\n\"'(<[")
        opens = not before or before[-1] in ".!?:;"
        if any(c.isdigit() for c in tok) or (tok[0].isupper() and not opens):
            out.extend(words(tok, cfg))
    return out


def brute_found(w: str, vocabulary: set[str], cfg: OverlapConfig) -> bool:
    """A key word occurs among the other text's words: figures (digit runs, calendar words)
    exactly; others exactly or within the allowed deletes of some word (by LCS)."""
    if w in vocabulary:
        return True
    calendar = {"january", "february", "march", "april", "may", "june", "july", "august",
                "september", "october", "november", "december", "jan", "feb", "mar", "apr",
                "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec", "monday", "tuesday",
                "wednesday", "thursday", "friday", "saturday", "sunday"}  # fmt: skip
    if w.isdigit() or w in calendar or len(w) < cfg.fuzzy_min_length:
        return False
    for v in vocabulary:
        if len(v) < cfg.fuzzy_min_length:
            continue
        allowed = cfg.max_deletes if min(len(w), len(v)) >= cfg.long_word_length else 1
        if max(len(w), len(v)) - lcs_length(w, v) <= min(allowed, cfg.max_deletes):
            return True
    return False


def test_key_words_and_key_overlap_match_brute_force(reuters_docs: list[dict[str, Any]]) -> None:
    texts = _texts(reuters_docs, 30)
    rng = random.Random(11)
    cfg = OverlapConfig()
    for i, text in enumerate(texts):
        assert key_words(text, cfg) == brute_key_words(text, cfg)
        for edit in ("typos", "numbers", "ocr"):
            if not applicable(edit, text):
                continue
            new = apply_edit(edit, text, None, 0.3, rng).text
            other = texts[(i + 1) % len(texts)]
            for a, b in ((text, new), (text, other)):
                pa, pb = prepare(a, cfg), prepare(b, cfg)
                got = key_overlap(pa, pb, cfg)
                i0, j0 = peel_packaging(pa, pb, cfg)
                mine = [w for p in paragraphs(b)[i0:j0] for w in key_words(p, cfg)]
                kept_vocab = {w for ws in pb.paragraphs[i0:j0] for w in ws}
                # Key words are taken per paragraph (a paragraph opens a sentence).
                theirs = [w for p in paragraphs(a) for w in brute_key_words(p, cfg)]
                assert got.names_new + got.figures_new == len(mine)
                found = sum(brute_found(w, set(pa.counts), cfg) for w in mine)
                assert got.names_found + got.figures_found == found
                kept = sum(brute_found(w, kept_vocab, cfg) for w in theirs)
                assert got.names_kept + got.figures_kept == kept
                assert got.names_stored + got.figures_stored == len(theirs)


def test_another_retailers_notice_replaces_the_figures(
    reuters_docs: list[dict[str, Any]],
) -> None:
    # Two real templated notices of different retailers (Reuters 2075 and 2208) share most
    # words, not their figures; a re-send keeps them all.
    by_id = {d["id"]: str(d["text"]) for d in reuters_docs}
    ames, ross = by_id["reuters-2075"], by_id["reuters-2208"]
    other = key_overlap(prepare(ames), prepare(ross))
    assert other.figures_added > 0.3 and other.figures_kept_share < 0.7
    same = key_overlap(prepare(ames), prepare(ames.replace("firstr", "first")))
    assert same.names_added == 0.0 and same.figures_added == 0.0
    assert same.names_kept_share == 1.0 and same.figures_kept_share == 1.0
