"""Passages end where copying ends (neardup.similarity.alignment): relative seeds, the
single-unit rule and the merging of neighbouring passages, against exact oracles.

Oracles: copies built from real Reuters sentences with known spans (every passage must lie
inside the copied region on both sides, a new sentence between two copied paragraphs must
split them), and brute-force definitions of the seed filter and the merge rule.
"""

from __future__ import annotations

import re
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.similarity import AlignedPassage, AlignmentConfig, align_passages, prepare_text
from neardup.similarity import alignment as alignment_module
from neardup.similarity.alignment import UnitPairs, unit_pairs
from neardup.text import sentence_spans
from neardup.text.sentences import _ABBREVIATIONS


@pytest.fixture(scope="module")
def articles(reuters_docs: list[dict[str, Any]]) -> list[str]:
    """Reuters bodies with at least 12 sentences."""
    out = [d["text"] for d in reuters_docs if d["text"] and len(sentence_spans(d["text"])) >= 12]
    assert len(out) >= 40
    return out


def _unrelated(articles: list[str], start: int) -> tuple[str, str]:
    """Two articles the aligner finds nothing between."""
    for a in articles[start:]:
        for b in articles[start + 1 :]:
            if a is not b and not align_passages(a, b) and not align_passages(b, a):
                return a, b
    pytest.skip("no unrelated pair found")


def _drop_every(text: str, k: int) -> str:
    """``text`` with every ``k``-th word left out (a light, non-verbatim edit)."""
    words = text.split(" ")
    return " ".join(w for i, w in enumerate(words) if i % k != k - 1)


# --- passages stay inside the copy -------------------------------------------------------------


@pytest.mark.parametrize("start", [0, 5, 10, 15])
@pytest.mark.parametrize("edit", [0, 6])
def test_passages_never_extend_past_the_copied_region(
    articles: list[str], start: int, edit: int
) -> None:
    """A run of source sentences (verbatim, or with every 6th word dropped) planted between
    two unrelated articles' sentences: every passage lies inside the planted region in the
    suspicious text and inside the copied sentences in the source, and the copy is found."""
    source, host = _unrelated(articles, start)
    spans = sentence_spans(source)
    a, b = spans[2][0], spans[7][1]
    copied = source[a:b] if not edit else _drop_every(source[a:b], edit)
    cut = sentence_spans(host)[3][1]
    suspicious = host[:cut] + " " + copied + " " + host[cut:]
    lo, hi = cut + 1, cut + 1 + len(copied)
    got = align_passages(source, suspicious)
    assert got, "the planted copy was not found"
    for p in got:
        assert lo <= p.this_offset and p.this_end <= hi
        assert a <= p.source_offset and p.source_end <= b
    found = sum(p.this_length for p in got)
    assert found >= 0.8 * len(copied)


@pytest.mark.parametrize("start", [0, 8, 16])
@pytest.mark.parametrize("edit", [0, 7])
def test_a_new_sentence_between_copied_paragraphs_splits_them(
    articles: list[str], start: int, edit: int
) -> None:
    """Two copied paragraphs (verbatim or lightly edited) with a new sentence between them:
    two passages, neither covering the new sentence, each inside its paragraph."""
    source, _ = _unrelated(articles, start)
    spans = sentence_spans(source)
    first = source[spans[0][0] : spans[3][1]]
    second = source[spans[5][0] : spans[9][1]]
    if edit:
        first, second = _drop_every(first, edit), _drop_every(second, edit)
    new = (
        "Meanwhile our own reporter walked along the frozen river at dawn and met nobody"
        " at all, only a lonely heron standing in the reeds beside an abandoned rowing boat."
    )
    suspicious = first + " " + new + " " + second
    got = align_passages(source, suspicious)
    n0 = len(first) + 1
    n1 = n0 + len(new) + 1
    assert len(got) == 2
    assert got[0].this_offset >= 0 and got[0].this_end <= len(first)
    assert got[1].this_offset >= n1 and got[1].this_end <= len(suspicious)
    assert got[0].source_end <= spans[3][1] and got[1].source_offset >= spans[5][0]
    assert all(not (p.this_offset < n1 - 1 and n0 < p.this_end) for p in got)


# --- the rules against their definitions -----------------------------------------------------


def _seeds_brute(pairs: UnitPairs, cosine: float, dice: float, rel: float) -> set[tuple[int, int]]:
    above = [
        (int(i), int(j), float(c))
        for i, j, c, d in zip(pairs.rows, pairs.cols, pairs.cosine, pairs.dice, strict=True)
        if c > cosine and d > dice
    ]
    out = set()
    for i, j, c in above:
        best_i = max(x for a, _, x in above if a == i)
        best_j = max(x for _, b, x in above if b == j)
        if c >= rel * best_i and c >= rel * best_j:
            out.add((i, j))
    return out


@pytest.mark.parametrize("rel", [0.0, 0.5, 0.7, 1.0])
def test_relative_seeds_equal_their_definition(articles: list[str], rel: float) -> None:
    """A seed survives iff its cosine is at least ``rel`` times the best seed cosine of its
    suspicious unit and of its source unit (a real pair sharing a wire story's sentences)."""
    a, b = articles[3], articles[4]
    spans = sentence_spans(a)
    susp = b + " " + a[spans[1][0] : spans[8][1]] + " " + a[spans[2][0] : spans[4][1]]
    pairs = unit_pairs(prepare_text(a), prepare_text(susp), 0.1, 0.1)
    got = alignment_module._seeds(pairs, 0.15, 0.15, rel)
    assert len(got) == len(set(got))
    assert set(got) == _seeds_brute(pairs, 0.15, 0.15, rel)
    assert len(got) > 0


def _merge_brute(
    passages: list[AlignedPassage], gap_chars: int, share: float, susp: Any, src: Any
) -> list[AlignedPassage]:
    """The merge rule written out on character offsets and token lists."""
    toks_s = [(f, s, e) for u in susp.tokens for f, s, e in zip(*u, strict=True)]
    toks_r = [(f, s, e) for u in src.tokens for f, s, e in zip(*u, strict=True)]
    out = [passages[0]]
    for q in passages[1:]:
        p = out[-1]
        lo, hi = min(p.source_offset, q.source_offset), max(p.source_end, q.source_end)
        gap = [f for f, s, e in toks_s if s >= p.this_end and e <= q.this_offset]
        known = {f for f, s, e in toks_r if s >= lo and e <= hi}
        ok = not gap or sum(f in known for f in gap) >= share * len(gap)
        if q.this_offset - p.this_end <= gap_chars and ok:
            end = max(p.this_end, q.this_end)
            sim = max(p.similarity, q.similarity)
            out[-1] = AlignedPassage(p.this_offset, end - p.this_offset, lo, hi - lo, sim)
        else:
            out.append(q)
    return out


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_merge_equals_its_definition(data: st.DataObject) -> None:
    """Random disjoint passages on two real texts: :func:`_merge` equals the rule written
    out on offsets and tokens."""
    src_text = _TEXTS[0]
    if not src_text:
        pytest.skip("needs reuters21578 in ../shared/data")
    susp_text = _TEXTS[1] + " " + src_text[: len(src_text) // 2]
    cfg = AlignmentConfig(
        merge_gap_chars=data.draw(st.sampled_from([1, 50, 300, 5000])),
        merge_share=data.draw(st.sampled_from([0.0, 0.5, 0.8, 1.0])),
    )
    model = unit_pairs(prepare_text(src_text, cfg), prepare_text(susp_text, cfg), 0.2, 0.2).model
    cuts = sorted(set(data.draw(st.lists(st.integers(0, len(susp_text)), min_size=2, max_size=10))))
    passages = []
    for x, y in zip(cuts[::2], cuts[1::2], strict=False):
        if y > x:
            c = data.draw(st.integers(0, len(src_text) - 1))
            d = data.draw(st.integers(c + 1, len(src_text)))
            passages.append(AlignedPassage(x, y - x, c, d - c, data.draw(st.floats(0, 1))))
    if not passages:
        return
    got = alignment_module._merge(model, passages, cfg)
    assert got == _merge_brute(
        passages, cfg.merge_gap_chars, cfg.merge_share, model.susp, model.src
    )
    assert len(got) <= len(passages)


def _texts() -> list[str]:
    from conftest import DATA_DIR, read_jsonl_gz

    path = DATA_DIR / "reuters21578" / "docs.jsonl.gz"
    if not path.exists():
        return ["", ""]
    return [d["text"] for d in read_jsonl_gz(path, limit=200) if len(d["text"] or "") > 1500][:2]


_TEXTS = _texts()


# --- the text stage's fast sentence path equals its plain definition --------------------------

_PLAIN_BOUNDARY = re.compile(
    r"(?P<stop>[.!?…]+)(?P<close>[\"'”’)\]]*)(?P<space>\s+|$)"
    r"|(?P<wide>[。！？]+[」』”’)）]*)\s*"
    r"|(?P<para>\n[ \t\r\f\v]*\n\s*)"
)
_PLAIN_WORD_BEFORE = re.compile(r"([^\W_]+(?:\.[^\W_]+)*)$")


def _plain_sentence_spans(text: str) -> list[tuple[int, int]]:
    """Sentence spans by the plain rule: every boundary match, the word before every single
    full stop searched (no look-ahead, no shortcut)."""
    spans: list[tuple[int, int]] = []
    start = 0

    def add(a: int, b: int) -> None:
        while a < b and text[a].isspace():
            a += 1
        while b > a and text[b - 1].isspace():
            b -= 1
        if b > a:
            spans.append((a, b))

    for m in _PLAIN_BOUNDARY.finditer(text):
        if m.group("stop") is not None:
            if m.end() < len(text) and text[m.end()].islower():
                continue
            if m.group("stop") == ".":
                before = _PLAIN_WORD_BEFORE.search(text, max(0, m.start() - 24), m.start())
                if before is not None:
                    word = before.group(1)
                    if (len(word) == 1 and word.isalpha()) or word.lower() in _ABBREVIATIONS:
                        continue
            end = m.end("close")
        elif m.group("wide") is not None:
            end = m.end("wide")
        else:
            end = m.start()
        add(start, end)
        start = m.end()
    add(start, len(text))
    return spans


def test_word_characters_are_exactly_isalnum() -> None:
    """The shortcut in ``sentence_spans`` relies on ``[^\\W_]`` being ``str.isalnum``."""
    word = re.compile(r"[^\W_]")
    assert all(bool(word.match(c)) == c.isalnum() for c in map(chr, range(sys.maxunicode + 1)))


_PIECES = st.sampled_from(
    [".", ". ", "..", "!", "?", "…", "\n", "\n\n", " \n \n", "。", "！", "」", '"', ")", " ",
     "a", "B", "J", "Mr", "mr", "e.g", "U.S", "approx", "Washington", "ab12", "x_y", "é",
     "Ünd", "7", "abcdefg", "abcdef", "\t", "sept", "Sept"]
)  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(st.lists(_PIECES, max_size=40))
def test_sentence_spans_equal_the_plain_rule(pieces: list[str]) -> None:
    text = "".join(pieces)
    assert sentence_spans(text) == _plain_sentence_spans(text)


def test_sentence_spans_equal_the_plain_rule_on_real_text(articles: list[str]) -> None:
    for text in articles[:300]:
        assert sentence_spans(text) == _plain_sentence_spans(text)
