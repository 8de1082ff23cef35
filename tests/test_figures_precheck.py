"""The stream's figures pre-check (``similarity.overlap.figures_replaced``) claims only what
the names/figures test (``key_overlap``) would find, and skipping the word test on it
changes no decision.

Oracle: :func:`key_overlap` itself (the exact test the stream applies beyond the figures
window), on real Reuters texts with figure, paragraph and packaging edits, and on generated
texts; the stream's decisions with the pre-check against the same stream with it turned off.
"""

from __future__ import annotations

import datetime as dt
import random
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.detect.stream import NewsStream, StreamConfig
from neardup.similarity.overlap import (
    OverlapConfig,
    digit_runs,
    figures_replaced,
    key_overlap,
    never_peeled,
    never_peeled_digits,
    peel_packaging,
    prepare,
)
from neardup.store import open_store

_DIGITS = re.compile(r"\b[0-9]+\b")


def _edit(text: str, rng: random.Random) -> str:
    """One random edit a wire copy may carry: a changed figure, a dropped or added
    paragraph, a new dated headline, a figure-free headline, or none."""
    kind = rng.randrange(6)
    if kind == 0:
        runs = list(_DIGITS.finditer(text))
        if runs:
            m = rng.choice(runs)
            return text[: m.start()] + str(int(m.group()) + 1) + text[m.end() :]
    if kind == 1:
        paras = text.split("\n    ")
        if len(paras) > 2:
            del paras[rng.randrange(len(paras))]
            return "\n    ".join(paras)
    if kind == 2:
        return f"Updated {rng.randrange(1, 28)} March 1987\n\n{text}"
    if kind == 3:
        return f"Share this article\n\n{text}\n\nCopyright Reuters {rng.randrange(1980, 1990)}"
    if kind == 4:
        return text + f"\n    The figures for {rng.randrange(1990, 1999)} were not given."
    return text


def _check(stored_text: str, new_text: str, cfg: OverlapConfig) -> bool:
    stored, new = prepare(stored_text, cfg), prepare(new_text, cfg)
    i, j = never_peeled(new, cfg)
    pi, pj = peel_packaging(stored, new, cfg)
    assert i >= j or (pi <= i and j <= pj)  # never-peeled paragraphs are kept
    core = never_peeled_digits(new_text, cfg)
    # With the text's own runs given (the stream's path): the same set.
    assert never_peeled_digits(new_text, cfg, runs=digit_runs(new_text).keys) == core
    if not (cfg.mask_digits or cfg.mask_calendar):  # the same paragraphs as never_peeled
        assert core == frozenset().union(*(digit_runs(t).keys for t in new.texts[i:j]))
    claimed = figures_replaced(digit_runs(stored_text), digit_runs(new_text), core, cfg)
    if claimed:
        k = key_overlap(stored, new, cfg)
        assert k.figures_added > 0.0 or k.figures_kept_share < 1.0, (stored_text, new_text)
    return claimed


def test_claims_hold_on_real_reuters(reuters_docs: list[dict[str, Any]]) -> None:
    rng = random.Random(7)
    texts = [str(d["text"]) for d in reuters_docs if len(str(d["text"])) > 200][:300]
    cfg = OverlapConfig()
    claimed = 0
    for k, text in enumerate(texts):
        copy = _edit(text, rng)
        claimed += _check(text, copy, cfg)
        claimed += _check(copy, text, cfg)
        claimed += _check(text, texts[(k + 1) % len(texts)], cfg)  # another story
    # Not vacuous: most other stories and many edited copies differ in a figure.
    assert claimed > 300


_WORDS = st.sampled_from(["Bank", "rose", "the", "March", "pct", "12", "7", "1987", "said", "Co"])


@st.composite
def _texts(draw: st.DrawFn) -> str:
    paras = draw(st.lists(st.lists(_WORDS, min_size=1, max_size=30), min_size=1, max_size=5))
    sep = draw(st.sampled_from(["\n\n", "\n    "]))
    return sep.join(" ".join(p) for p in paras)


@settings(max_examples=300, deadline=None)
@given(_texts(), _texts(), st.sampled_from([0, 5, 20]))
def test_claims_hold_on_generated_texts(stored: str, new: str, max_words: int) -> None:
    _check(stored, new, OverlapConfig(packaging_max_words=max_words))


def test_digit_runs_equal_the_regular_expression_on_reuters(
    reuters_docs: list[dict[str, Any]],
) -> None:
    # The compiled ASCII scan against its definition, the regular expression.
    texts = [str(d["text"]) for d in reuters_docs[:3000]]
    assert sum(t.isascii() for t in texts) > 2900
    for text in texts:
        runs = digit_runs(text)
        assert runs.keys == frozenset(_DIGITS.findall(text)), text[:80]
        assert runs.words == frozenset(_DIGITS.findall(text.casefold()))


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet="09aZ_ .,-'\n\u00e9\u0663", max_size=40))
def test_digit_runs_equal_the_regular_expression(text: str) -> None:
    # Digits next to letters, underscores, a non-ASCII letter and an Arabic-Indic digit
    # (word characters to the regular expression): ASCII and non-ASCII paths alike.
    runs = digit_runs(text)
    assert runs.keys == frozenset(_DIGITS.findall(text))
    assert runs.words == frozenset(_DIGITS.findall(text.casefold()))


def test_masks_make_no_claim() -> None:
    cfg = OverlapConfig(mask_digits=True)
    new = "Profit was 12 mln dlrs in 1987."
    assert not figures_replaced(
        digit_runs("Profit was 13 mln dlrs."), digit_runs(new), never_peeled_digits(new), cfg
    )
    # The same pair without masks: a figure is replaced.
    assert figures_replaced(
        digit_runs("Profit was 13 mln dlrs."), digit_runs(new), never_peeled_digits(new)
    )


def _shifted(docs: list[dict[str, Any]], cycles: int) -> list[dict[str, Any]]:
    """The documents again in each cycle, two days later (beyond the 18 h figures window),
    with an edit: every later copy is compared across news days."""
    out = []
    rng = random.Random(11)
    for c in range(cycles):
        for d in docs:
            date = dt.datetime.fromisoformat(d["date"]) + dt.timedelta(days=2 * c)
            text = d["text"] if c == 0 else _edit(d["text"], rng)
            out.append({"id": f"{d['id']}~{c}", "text": text, "date": date.isoformat()})
    return out


@pytest.mark.parametrize("test_after", [False, True])
def test_stream_decisions_are_unchanged(
    reuters_docs: list[dict[str, Any]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    test_after: bool,
) -> None:
    """Statuses, duplicate targets and every match's id and verdict are those of the word
    test run on every candidate (the pre-check only drops word figures from the evidence),
    also when candidates ranked after the duplicate are word-tested too (``test_after``)."""
    docs = [d for d in reuters_docs[:300] if str(d["text"]).strip() and d.get("date")]
    articles = _shifted(docs, 3)

    def run(name: str) -> list[tuple[Any, ...]]:
        store = open_store(f"sqlite:///{tmp_path / name}")
        config = StreamConfig(verify="overlap", overlap_test_after_duplicate=test_after)
        stream = NewsStream(store, config)
        out = []
        for start in range(0, len(articles), 64):
            for r in stream.ingest_many(articles[start : start + 64]):
                assert not isinstance(r, Exception)
                verdicts = tuple((m.id, m.verdict, m.score) for m in r.matches)
                out.append((r.id, r.status, r.duplicate_of, verdicts))
        stream.close()
        return out

    calls: list[bool] = []
    import neardup.detect.stream as stream_module
    from neardup.index.facts import CandidateFacts

    # Both forms of the pre-check: on the facts held in memory (index.facts) and on digit
    # runs (similarity.overlap, for articles without facts).
    real: Callable[..., bool] = figures_replaced  # the function the stream imports
    real_facts = CandidateFacts.figures_replaced

    def counted(*args: Any, **kwargs: Any) -> bool:
        calls.append(real(*args, **kwargs))
        return calls[-1]

    def counted_facts(self: CandidateFacts, *args: Any, **kwargs: Any) -> Any:
        out = real_facts(self, *args, **kwargs)
        calls.extend(bool(x) for x in out)
        return out

    monkeypatch.setattr(stream_module, "figures_replaced", counted)
    monkeypatch.setattr(CandidateFacts, "figures_replaced", counted_facts)
    fast = run("fast.db")
    monkeypatch.setattr(stream_module, "figures_replaced", lambda *a, **k: False)
    monkeypatch.setattr(
        CandidateFacts, "figures_replaced", lambda self, seqs, *a, **k: np.zeros(len(seqs), bool)
    )
    every = run("every.db")
    assert fast == every
    # Not vacuous: the pre-check ran and skipped word tests, and decisions of each kind.
    # (Fewer when the candidates after the duplicate need no word test: 25 vs 98.)
    assert sum(calls) > (50 if test_after else 20)
    statuses = {s for _, s, _, _ in every}
    assert statuses == {"new", "duplicate", "similar"}
