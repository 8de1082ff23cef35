"""index.facts: the candidate screen never drops a candidate the exact shingle rule keeps.

Oracle: the stream's shingle arithmetic on the exact 64-bit sets (``_exact_codes`` below,
the rule of ``NewsStream._verify``), and ``similarity.overlap.figures_replaced`` on the
digit-run strings, on real Reuters texts and their edited copies.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.detect.stream import NewsStream, StreamConfig
from neardup.evaluation.synth import perturb_words
from neardup.index.facts import (
    FIGURES,
    KEEP,
    UNRELATED,
    CandidateFacts,
    ScreenRule,
    candidate_union,
    figure_hashes,
)
from neardup.similarity.overlap import digit_runs, figures_replaced, never_peeled_digits
from neardup.sketch.shingleset import ShingleSetConfig, sign_shingles
from neardup.store import open_store

RULE = ScreenRule(
    min_jaccard=0.5,
    min_containment=0.5,
    min_coverage=0.5,
    min_shared=20,
    similar_min_overlap=0.5,
    word_floor=0.1,
    accept_containment=0.9,
    min_word_coverage=0.5,
)


def _exact_codes(a: np.ndarray, b: np.ndarray, rule: ScreenRule) -> int:
    inter = int(np.intersect1d(a, b, assume_unique=True).size)
    union = a.size + b.size - inter
    jaccard = inter / union if union else 1.0
    contain, cover = inter / a.size, inter / b.size
    most = max(contain, cover)
    if (
        jaccard >= rule.min_jaccard
        or (contain >= rule.min_containment and cover >= rule.min_coverage and inter >= 20)
        or most >= rule.similar_min_overlap
    ):
        return KEEP
    if rule.word_floor is not None and most >= rule.word_floor:
        accept = rule.accept_containment
        if accept is not None and contain >= accept and cover >= 0.5 and inter >= 20:
            return KEEP
        return FIGURES
    return UNRELATED


@pytest.fixture(scope="module")
def texts(reuters_docs: list[dict[str, Any]]) -> list[str]:
    """Reuters texts plus edited copies (words replaced, truncated): every code occurs."""
    base = [str(d["text"]) for d in reuters_docs if len(str(d["text"]).split()) > 40][:150]
    rng = random.Random(7)
    out = list(base)
    for t in base:
        out.append(perturb_words(t, rng.choice([0.05, 0.2, 0.4, 0.7]), rng))
        words = t.split()
        out.append(" ".join(words[: len(words) // 3]))
    return out


def test_screen_equals_the_exact_rule_on_real_texts(texts: list[str]) -> None:
    cfg = ShingleSetConfig()
    sets = [sign_shingles(t, cfg).values for t in texts]
    facts = CandidateFacts()
    for seq, values in enumerate(sets):
        facts.add(seq + 1, values, None, None)
    seqs = list(range(1, len(sets) + 1))
    seen: dict[int, int] = {}
    rng = random.Random(1)
    for i in rng.sample(range(len(sets)), 120):
        codes = facts.screen(seqs, sets[i], RULE.params())
        for j, code in enumerate(codes.tolist()):
            exact = _exact_codes(sets[i], sets[j], RULE)
            # The 32-bit counts are an upper bound: never less related than exact; on these
            # texts no two 64-bit values share their low 32 bits, so they are equal.
            assert code == exact, (i, j, code, exact)
            seen[exact] = seen.get(exact, 0) + 1
    assert seen.get(KEEP, 0) > 100 and seen.get(FIGURES, 0) > 20 and seen.get(UNRELATED, 0) > 1000


def test_screen_is_an_upper_bound_under_32_bit_collisions() -> None:
    # Values sharing their low 32 bits: the multiset count can only over-count.
    rng = np.random.default_rng(3)
    for _ in range(300):
        low = rng.integers(0, 50, size=200).astype(np.uint64)
        high = rng.integers(0, 4, size=200).astype(np.uint64) << np.uint64(32)
        pool = np.unique(low | high)
        a = np.unique(rng.choice(pool, size=rng.integers(5, 60), replace=False))
        b = np.unique(rng.choice(pool, size=rng.integers(5, 60), replace=False))
        facts = CandidateFacts()
        facts.add(1, b, None, None)
        code = int(facts.screen([1], a, RULE.params())[0])
        exact = _exact_codes(a, b, RULE)
        # KEEP > FIGURES > UNRELATED in relatedness: the screen is never below exact.
        rank = {UNRELATED: 0, FIGURES: 1, KEEP: 2}
        assert rank[code] >= rank[exact]


def test_shared_count_is_the_multiset_count_of_the_low_32_bits() -> None:
    """The screen's table count equals, per 32-bit value, the smaller multiplicity summed
    (the count of merging the two sorted 32-bit multisets), collisions and all."""
    from collections import Counter

    from neardup.index.facts import _count_table, _shared_count

    rng = np.random.default_rng(11)
    for _ in range(300):
        low = rng.integers(0, 40, size=300).astype(np.uint64)
        high = rng.integers(0, 5, size=300).astype(np.uint64) << np.uint64(32)
        pool = np.unique(low | high)
        a = rng.choice(pool, size=rng.integers(0, 80), replace=False)
        b = np.sort(rng.choice(pool, size=rng.integers(0, 80), replace=False).astype(np.uint32))
        ca = Counter((a & np.uint64(0xFFFFFFFF)).tolist())
        cb = Counter(b.tolist())
        expected = sum(min(n, ca[v]) for v, n in cb.items())
        keys, counts, mask = _count_table(a)
        assert _shared_count(keys, counts, mask, b, 0, b.shape[0]) == expected


def test_unknown_and_empty_are_kept() -> None:
    facts = CandidateFacts()
    values = np.arange(1, 50, dtype=np.uint64)
    facts.add(5, np.zeros(0, dtype=np.uint64), None, None)
    codes = facts.screen([5, 6, 10**12, -3], values, RULE.params())
    assert codes.tolist() == [KEEP, KEEP, KEEP, KEEP]
    assert facts.screen([], values, RULE.params()).size == 0
    empty = np.zeros(0, dtype=np.uint64)
    facts.add(7, values, None, None)
    assert facts.screen([7], empty, RULE.params()).tolist() == [KEEP]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(-2, 60)),
    st.lists(st.integers(-2, 60)),
    st.integers(-2, 60),
)
def test_candidate_union_equals_numpy(a: list[int], b: list[int], exclude: int) -> None:
    got = candidate_union(np.array(a, dtype=np.int64), np.array(b, dtype=np.int64), exclude)
    want = np.setdiff1d(np.union1d(np.array(a, dtype=np.int64), b), [exclude])
    assert got.dtype == np.int64 and got.tolist() == want.tolist()


def test_add_is_idempotent_and_huge_seqs_are_not_tracked() -> None:
    facts = CandidateFacts()
    facts.add(3, np.array([1, 2, 3], dtype=np.uint64), 10, None)
    facts.add(3, np.array([9], dtype=np.uint64), 20, None)  # facts never change
    assert len(facts) == 1 and 3 in facts
    facts.add(10**15, np.array([1], dtype=np.uint64), None, None)
    assert 10**15 not in facts and len(facts) == 1
    assert facts.nbytes < 1 << 20


def test_figures_replaced_equals_the_reference(texts: list[str]) -> None:
    day = 86_400 * 1_000_000
    facts = CandidateFacts()
    ascii_texts = [t for t in texts if t.isascii()][:200]
    for seq, text in enumerate(ascii_texts):
        runs = digit_runs(text)
        facts.add(seq, np.zeros(1, dtype=np.uint64), seq * day, figure_hashes(runs.keys))
    rng = random.Random(5)
    outcomes = set()
    for i in rng.sample(range(len(ascii_texts)), 60):
        new = ascii_texts[i]
        new_runs = digit_runs(new)
        core = never_peeled_digits(new)
        date = i * day + day // 2
        got = facts.figures_replaced(
            list(range(len(ascii_texts))),
            figure_hashes(new_runs.words),
            lambda core=core: figure_hashes(core),  # type: ignore[misc]
            date,
            18 * 3600 * 1_000_000,
        )
        for j, text in enumerate(ascii_texts):
            far = abs(j * day - date) > 18 * 3600 * 1_000_000
            want = far and figures_replaced(digit_runs(text), new_runs, core)
            assert bool(got[j]) == want, (i, j)
            outcomes.add(want)
    assert outcomes == {True, False}
    # Unknown figures or dates are never "replaced".
    facts.add(10_000, np.zeros(1, dtype=np.uint64), None, figure_hashes(["1"]))
    facts.add(10_001, np.zeros(1, dtype=np.uint64), 0, None)
    empty = figure_hashes([])
    got = facts.figures_replaced([10_000, 10_001, 99_999], empty, lambda: empty, 10 * day, 0.0)
    assert not got.any()


def test_state_round_trip_and_damaged_state(texts: list[str]) -> None:
    facts = CandidateFacts()
    cfg = ShingleSetConfig()
    for seq, text in enumerate(texts[:50]):
        runs = digit_runs(text)
        facts.add(3 * seq, sign_shingles(text, cfg).values, seq, figure_hashes(runs.keys))
    state = facts.state()
    back = CandidateFacts()
    back.load_state(state)
    query = sign_shingles(texts[0], cfg).values
    seqs = list(range(0, 150))
    assert np.array_equal(
        back.screen(seqs, query, RULE.params()), facts.screen(seqs, query, RULE.params())
    )
    assert len(back) == len(facts) == 50
    empty = CandidateFacts()
    empty.load_state({})
    assert len(empty) == 0
    bad = dict(state)
    bad["facts_counts"] = bad["facts_counts"][:-1]
    with pytest.raises(ValueError):
        CandidateFacts().load_state(bad)
    bad = dict(state)
    bad["facts_starts"] = bad["facts_starts"] + 10**6
    with pytest.raises(ValueError):
        CandidateFacts().load_state(bad)


def test_restart_from_checkpoint_keeps_the_facts_and_the_decisions(
    reuters_docs: list[dict[str, Any]], tmp_path: Path
) -> None:
    """A stream restarted from its checkpoint screens from the restored facts (no store read
    for a screened-out candidate) and decides as one that never stopped."""
    docs = [d for d in reuters_docs[:200] if str(d["text"]).strip()]
    rng = random.Random(2)
    later = [
        {"id": f"{d['id']}~1", "text": perturb_words(str(d["text"]), 0.3, rng), "date": d["date"]}
        for d in docs
    ]
    cfg = StreamConfig(verify="overlap")

    def run(name: str, restart: bool) -> list[str]:
        path = tmp_path / name
        ckpt = tmp_path / f"{name}.ckpt"
        stream = NewsStream(open_store(f"sqlite:///{path}"), cfg, checkpoint_path=ckpt)
        out = [r.to_json() for r in stream.ingest_many(docs)]  # type: ignore[union-attr]
        if restart:
            stream.checkpoint()
            held = len(stream._facts)
            stream.close()
            stream = NewsStream(open_store(f"sqlite:///{path}"), cfg, checkpoint_path=ckpt)
            assert stream.stats["restored_from_checkpoint"] == 1
            assert len(stream._facts) == held > 100
        out += [r.to_json() for r in stream.ingest_many(later)]  # type: ignore[union-attr]
        stream.close()
        return out

    assert run("restarted.db", True) == run("straight.db", False)
