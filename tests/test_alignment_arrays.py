"""The aligner's array forms (neardup.similarity.alignment) against Python references.

Oracles: the units of a text written as a loop over sentences and token lists (sentences
joined until each has ``min_sentence_words`` tokens, a short tail joined to the unit before
it); the tf-isf span cosine and the best unit cosine written with dictionaries; the tokens
inside a character range by filtering every token.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections import Counter
from typing import Any

import pytest

from neardup.shingles import hash_forms
from neardup.similarity import AlignmentConfig, prepare_text
from neardup.similarity import alignment as alignment_module
from neardup.similarity.alignment.model import _PairModel
from neardup.text import TextConfig, sentence_spans, tokenize

_ODD = [
    "",
    "   ",
    "a",
    "Dr. Smith said: 3.5 pct!Next one?  Yes... (no)",
    "東京は晴れ。明日は雨です。 OK.",
    "One. Two. Three words here. And four more words now. x",
    "Short. Tiny.",
    "\n\nThe end of it all.  \n\n",
]


def _reference_units(text: str, cfg: AlignmentConfig) -> tuple[list[tuple[int, int]], list[Any]]:
    toks = tokenize(text, cfg.text)
    forms = hash_forms(toks.forms, 0).tolist()
    starts, ends = list(toks.starts), list(toks.ends)
    spans: list[tuple[int, int]] = []
    units: list[list[tuple[int, int, int]]] = []
    pending: tuple[int, list[tuple[int, int, int]]] | None = None
    for start, end in sentence_spans(text):
        lo, hi = bisect.bisect_left(starts, start), bisect.bisect_left(starts, end)
        unit = list(zip(forms[lo:hi], starts[lo:hi], ends[lo:hi], strict=True))
        if pending is not None:
            start, unit = pending[0], pending[1] + unit
            pending = None
        if len(unit) < cfg.min_sentence_words:
            pending = (start, unit)
            continue
        spans.append((start, end))
        units.append(unit)
    if pending is not None and pending[1]:
        if spans:
            spans[-1] = (spans[-1][0], len(text.rstrip()))
            units[-1] = units[-1] + pending[1]
        else:
            spans.append((pending[0], len(text.rstrip())))
            units.append(pending[1])
    return spans, units


@pytest.fixture(scope="module")
def texts(reuters_docs: list[dict[str, Any]]) -> list[str]:
    return [d["text"] for d in reuters_docs[:300] if d["text"]] + _ODD


@pytest.mark.parametrize("min_words", [1, 3, 8])
def test_prepare_text_equals_the_sentence_loop(texts: list[str], min_words: int) -> None:
    for stop in (True, False):
        cfg = AlignmentConfig(
            min_sentence_words=min_words, text=TextConfig(drop_stop_words=stop, stem=True)
        )
        for text in texts:
            got = prepare_text(text, cfg)
            spans, units = _reference_units(text, cfg)
            assert got.spans == tuple(spans)
            assert [list(zip(*u, strict=True)) for u in got.tokens] == units
            assert list(got.terms) == [Counter(f for f, _, _ in u) for u in units]
            assert got.ptr[-1] == len(got.forms) == sum(len(u) for u in units)
            assert all(got.starts[1:] >= got.starts[:-1]) and all(got.ends[1:] >= got.ends[:-1])


def _vectors(model: _PairModel) -> tuple[list[dict[int, float]], list[dict[int, float]]]:
    units = [*model.susp.terms, *model.src.terms]
    n = len(units)
    isf = {t: math.log(n / sum(t in u for u in units)) for u in units for t in u}
    side = lambda terms: [{t: c * isf[t] for t, c in u.items()} for u in terms]  # noqa: E731
    return side(model.susp.terms), side(model.src.terms)


def _cos(a: dict[int, float], b: dict[int, float]) -> float:
    dot = sum(x * b.get(t, 0.0) for t, x in a.items())
    na = math.sqrt(sum(x * x for x in a.values()))
    nb = math.sqrt(sum(x * x for x in b.values()))
    return dot / (na * nb) if na and nb else 0.0


def _summed(vecs: list[dict[int, float]]) -> dict[int, float]:
    out: dict[int, float] = {}
    for v in vecs:
        for t, x in v.items():
            out[t] = out.get(t, 0.0) + x
    return out


def test_span_and_best_cosine_equal_dictionaries(texts: list[str]) -> None:
    long = [t for t in texts if len(sentence_spans(t)) >= 8][:12]
    checked = 0
    for a, b in itertools.pairwise(long):
        src = prepare_text(a)
        susp = prepare_text(b[: len(b) // 2] + " " + a[: len(a) // 2])
        model = _PairModel(susp, src)
        vs, vr = _vectors(model)
        for i in range(0, len(susp), 2):
            for j in range(0, len(src), 3):
                for di, dj in ((0, 0), (1, 2), (3, 1)):
                    if i + di >= len(susp) or j + dj >= len(src):
                        continue
                    want = _cos(_summed(vs[i : i + di + 1]), _summed(vr[j : j + dj + 1]))
                    got = model.span_cosine((i, i + di), (j, j + dj))
                    assert got == pytest.approx(want, abs=1e-12)
                    best = max(_cos(vs[i], vr[k]) for k in range(j, j + dj + 1))
                    assert model.best_cosine(i, (j, j + dj)) == pytest.approx(best, abs=1e-12)
                    checked += 1
    assert checked > 200


def test_tokens_in_equals_filtering(texts: list[str]) -> None:
    for text in texts[:80] + _ODD:
        prepared = prepare_text(text)
        toks = [t for u in prepared.tokens for t in zip(*u, strict=True)]
        for start in range(0, len(text) + 2, max(1, len(text) // 17)):
            for end in (start, start + 7, start + 150, len(text) + 1):
                want = [t for t in toks if t[1] >= start and t[2] <= end]
                got = alignment_module._tokens_in(prepared, start, end)
                assert list(zip(*got, strict=True)) == want
