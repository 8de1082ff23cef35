"""Passage alignment (neardup.similarity.alignment) and the PAN measures.

Oracles: passages of real Reuters text planted verbatim into another real article (the
aligner must return exactly the planted spans on both sides), brute-force tf-isf cosine and
Dice for the seeds, a brute-force fixed point for the clustering, and the PAN measures of
Potthast et al. (2010) computed on explicit sets of characters.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections import Counter
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.errors import ConfigError, InputTooLargeError, InputTypeError
from neardup.evaluation.alignment import PanCase, pan_measures
from neardup.shingles import hash_forms
from neardup.similarity import (
    AlignedPassage,
    AlignmentConfig,
    align_passages,
    align_prepared,
    prepare_text,
    unit_pairs,
)
from neardup.similarity import alignment as alignment_module
from neardup.similarity.alignment import common_runs
from neardup.similarity.alignment import model as alignment_model
from neardup.text import sentence_spans, tokenize

# --- real text fixtures ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def articles(reuters_docs: list[dict[str, Any]]) -> list[str]:
    """Reuters bodies with at least 10 sentences (long enough to plant passages into)."""
    out = [d["text"] for d in reuters_docs if d["text"] and len(sentence_spans(d["text"])) >= 10]
    assert len(out) >= 40
    return out


def _unrelated_pair(articles: list[str], start: int) -> tuple[str, str]:
    """Two articles the aligner finds nothing between (the 'unrelated' oracle)."""
    for a in articles[start:]:
        for b in articles[start + 1 :]:
            if a is not b and not align_passages(a, b) and not align_passages(b, a):
                return a, b
    pytest.skip("no unrelated pair found")


def _sentence_run(text: str, first: int, count: int) -> tuple[int, int]:
    spans = sentence_spans(text)
    return spans[first][0], spans[first + count - 1][1]


def _plant(host: str, passage: str, after_sentence: int) -> tuple[str, int]:
    """``host`` with ``passage`` inserted after one of its sentences; the passage's offset."""
    cut = sentence_spans(host)[after_sentence][1]
    planted = host[:cut] + " " + passage + " " + host[cut:]
    return planted, cut + 1


# --- the aligner vs exact oracles ---------------------------------------------------------------


def test_unrelated_articles_give_nothing(articles: list[str]) -> None:
    """Most pairs of different real articles share no passage; the aligner says so."""
    empty = sum(not align_passages(a, b) for a, b in itertools.pairwise(articles[:31]))
    assert empty >= 25


@pytest.mark.parametrize(("first", "count", "where"), [(0, 3, 2), (2, 4, 5), (4, 2, 0)])
def test_planted_verbatim_passage_found_with_exact_spans(
    articles: list[str], first: int, count: int, where: int
) -> None:
    source, host = _unrelated_pair(articles, 3 * first)
    a, b = _sentence_run(source, first, count)
    suspicious, offset = _plant(host, source[a:b], where)
    got = align_passages(source, suspicious)
    assert [(p.this_offset, p.this_length, p.source_offset, p.source_length) for p in got] == [
        (offset, b - a, a, b - a)
    ]
    assert suspicious[got[0].this_offset : got[0].this_end] == source[a:b]
    assert got[0].similarity > 0.9


def test_two_planted_passages_in_reverse_order(articles: list[str]) -> None:
    source, host = _unrelated_pair(articles, 10)
    a1, b1 = _sentence_run(source, 0, 3)
    a2, b2 = _sentence_run(source, 6, 3)
    # the later source passage first, far apart in the host
    step, off2 = _plant(host, source[a2:b2], 1)
    suspicious, off1 = _plant(step, source[a1:b1], len(sentence_spans(step)) - 2)
    got = align_passages(source, suspicious)
    spans = [(p.this_offset, p.this_length, p.source_offset, p.source_length) for p in got]
    assert spans == [(off2, b2 - a2, a2, b2 - a2), (off1, b1 - a1, a1, b1 - a1)]


def test_deterministic_and_prepared_path_equal(articles: list[str]) -> None:
    source, host = _unrelated_pair(articles, 0)
    a, b = _sentence_run(source, 1, 4)
    suspicious, _ = _plant(host, source[a:b], 3)
    cfg = AlignmentConfig()
    first = align_passages(source, suspicious, cfg)
    assert first == align_passages(source, suspicious, cfg)
    assert first == align_prepared(prepare_text(source, cfg), prepare_text(suspicious, cfg), cfg)
    assert first  # not a vacuous equality


@pytest.mark.parametrize("block", [256, 7, 1])
def test_seeds_match_brute_force(
    articles: list[str], block: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """unit_pairs returns exactly the unit pairs whose tf-isf cosine and Dice pass the
    floors, with their values (pure-Python recomputation from the units' term counts), in
    row-major order, whatever the block size of the products."""
    monkeypatch.setattr(alignment_model, "_BLOCK_ROWS", block)
    source, host = _unrelated_pair(articles, 5)
    a, b = _sentence_run(source, 0, 5)
    suspicious, _ = _plant(host, source[a:b], 4)
    src, susp = prepare_text(source), prepare_text(suspicious)
    got = unit_pairs(src, susp, 0.1, 0.1)
    units = [*susp.terms, *src.terms]
    n = len(units)
    isf = {t: math.log(n / sum(t in u for u in units)) for u in units for t in u}
    want: dict[tuple[int, int], tuple[float, float]] = {}
    for i, x in enumerate(susp.terms):
        for j, y in enumerate(src.terms):
            wx = {t: c * isf[t] for t, c in x.items()}
            wy = {t: c * isf[t] for t, c in y.items()}
            dot = sum(v * wy.get(t, 0.0) for t, v in wx.items())
            nx = math.sqrt(sum(v * v for v in wx.values()))
            ny = math.sqrt(sum(v * v for v in wy.values()))
            cos = dot / (nx * ny) if nx and ny else 0.0
            dice = 2 * len(set(x) & set(y)) / (len(x) + len(y))
            if cos > 0.1 and dice > 0.1:
                want[(i, j)] = (cos, dice)
    have = {
        (int(i), int(j)): (float(c), float(d))
        for i, j, c, d in zip(got.rows, got.cols, got.cosine, got.dice, strict=True)
    }
    assert list(have) == sorted(want) and len(want) >= 5
    for k, (c, d) in want.items():
        assert have[k][0] == pytest.approx(c, abs=1e-9)
        assert have[k][1] == pytest.approx(d, abs=1e-12)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 30), st.integers(0, 30)), min_size=1, max_size=25, unique=True
    ),
    st.integers(0, 4),
)
def test_clustering_is_a_closed_partition(seeds: list[tuple[int, int]], gap: int) -> None:
    """Oracle: the clusters partition the seeds, no cluster splits further on either side,
    and seeds close on both sides are never separated by a single split."""
    clusters = alignment_model._cluster(list(seeds), gap)
    flat = sorted(s for c in clusters for s in c)
    assert flat == sorted(seeds)
    for c in clusters:
        for side in (0, 1):
            assert len(alignment_model._split(c, side, gap)) == 1
            values = sorted(s[side] for s in c)
            assert all(b - a <= gap + 1 for a, b in itertools.pairwise(values))


# --- bad input ---------------------------------------------------------------------------------


def test_empty_short_and_wrong_types() -> None:
    assert align_passages("", "") == []
    assert align_passages("Hi.", "Hi.") == []
    assert align_passages("   \n ", "Some words here and there.") == []
    assert align_passages("...!!!", "??") == []
    with pytest.raises(InputTypeError):
        align_passages(b"bytes", "text")  # type: ignore[arg-type]
    with pytest.raises(InputTypeError):
        align_passages("text", None)  # type: ignore[arg-type]


def test_huge_input_refused_and_long_input_handled(articles: list[str]) -> None:
    cfg = AlignmentConfig(max_text_chars=10_000)
    with pytest.raises(InputTooLargeError):
        align_passages("word " * 5000, "text", cfg)
    # a long document (many articles) still aligns: the planted passage is found
    source = " ".join(articles[:60])
    a, b = _sentence_run(articles[40], 0, 3)
    suspicious, offset = _plant(articles[70], articles[40][a:b], 2)
    got = align_passages(source, suspicious)
    assert any(p.this_offset <= offset and p.this_end >= offset + (b - a) for p in got)


@pytest.mark.parametrize(
    "bad",
    [
        {"seed_cosine": 1.5},
        {"seed_dice": -0.1},
        {"max_gap_units": -1},
        {"min_sentence_words": 0},
        {"validation_cosine": float("nan")},
        {"boundary_ngram": 1.5},
        {"max_text_chars": 0},
        {"text": "english"},
    ],
)
def test_config_validation(bad: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        AlignmentConfig(**bad)


def test_config_is_frozen_and_has_scheme_id() -> None:
    cfg = AlignmentConfig()
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.seed_cosine = 0.5  # type: ignore[misc]
    assert cfg.scheme_id == AlignmentConfig().scheme_id
    assert cfg.scheme_id != AlignmentConfig(seed_cosine=0.5).scheme_id


def test_unit_pairs_floor_guard(articles: list[str]) -> None:
    src, susp = prepare_text(articles[0]), prepare_text(articles[1])
    pairs = unit_pairs(src, susp, 0.3, 0.3)
    with pytest.raises(ConfigError):
        alignment_module.align_pair(pairs, AlignmentConfig(seed_cosine=0.2))


# --- the PAN measures vs brute force -----------------------------------------------------------


def _chars(c: PanCase) -> set[tuple[str, str, int]]:
    return {(c.pair, "t", i) for i in range(c.this_start, c.this_end)} | {
        (c.pair, "s", i) for i in range(c.source_start, c.source_end)
    }


def _brute(cases: list[PanCase], dets: list[PanCase]) -> tuple[float, float, float, float]:
    """Potthast et al. 2010, literally, on sets of (pair, document, character) references."""
    if not cases and not dets:
        return 1.0, 1.0, 1.0, 1.0
    if not cases or not dets:
        return 0.0, 0.0, 1.0, 0.0

    def detects(r: PanCase, s: PanCase) -> bool:
        cr, cs = _chars(r), _chars(s)
        return any(x[1] == "t" for x in cr & cs) and any(x[1] == "s" for x in cr & cs)

    def share(x: PanCase, others: list[PanCase]) -> float:
        got: set[tuple[str, str, int]] = set()
        for o in others:
            if detects(o, x) if x in cases else detects(x, o):
                got |= _chars(x) & _chars(o)
        return len(got) / len(_chars(x))

    rec = sum(share(s, dets) for s in cases) / len(cases)
    prec = sum(share(r, cases) for r in dets) / len(dets)
    counts = [sum(detects(r, s) for r in dets) for s in cases]
    hit = [k for k in counts if k]
    gran = sum(hit) / len(hit) if hit else 1.0
    f1 = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
    return prec, rec, gran, f1 / math.log2(1 + gran)


def _case(pair: str, a: int, la: int, b: int, lb: int) -> PanCase:
    return PanCase(pair, a, a + la, b, b + lb)


case_st = st.builds(
    _case,
    st.sampled_from(["p1", "p2"]),
    st.integers(0, 40),
    st.integers(1, 15),
    st.integers(0, 40),
    st.integers(1, 15),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(case_st, max_size=5, unique=True), st.lists(case_st, max_size=6, unique=True))
def test_pan_measures_equal_brute_force(cases: list[PanCase], dets: list[PanCase]) -> None:
    got = pan_measures(cases, dets)
    prec, rec, gran, plagdet = _brute(cases, dets)
    assert got.precision == pytest.approx(prec)
    assert got.recall == pytest.approx(rec)
    assert got.granularity == pytest.approx(gran)
    assert got.plagdet == pytest.approx(plagdet)


def test_pan_measures_granularity_example() -> None:
    """One case found in two halves: precision = recall = 1, granularity 2, plagdet
    1 / log2(3)."""
    case = _case("p", 100, 200, 0, 200)
    halves = [_case("p", 100, 100, 0, 100), _case("p", 200, 100, 100, 100)]
    got = pan_measures([case], halves)
    assert (got.precision, got.recall, got.granularity) == (1.0, 1.0, 2.0)
    assert got.plagdet == pytest.approx(1 / math.log2(3))
    # a detection overlapping only on the suspicious side detects nothing
    wrong_source = _case("p", 100, 200, 500, 200)
    assert pan_measures([case], [wrong_source]).recall == 0.0


def test_aligned_passage_fields() -> None:
    p = AlignedPassage(10, 5, 20, 7, 0.5)
    assert (p.this_end, p.source_end) == (15, 27)
    assert p.to_dict() == {
        "this_offset": 10,
        "this_length": 5,
        "source_offset": 20,
        "source_length": 7,
        "similarity": 0.5,
    }


def test_units_equal_tokenising_each_unit_alone(reuters_docs: list[dict[str, Any]]) -> None:
    """prepare_text tokenises the whole text once; oracle: tokenising each unit's own span
    gives the same tokens (offsets shifted back), on real text of every shape."""
    texts = [d["text"] for d in reuters_docs[:400] if d["text"]]
    texts += ["Dr. Smith said: 3.5 pct!Next one?  Yes... (no)", "東京は晴れ。明日は雨です。 OK."]
    checked = 0
    for text in texts:
        prepared = prepare_text(text)
        for (a, b), toks in zip(prepared.spans, prepared.tokens, strict=True):
            alone = tokenize(text[a:b], AlignmentConfig().text)
            assert toks.forms == tuple(hash_forms(alone.forms, 0).tolist())
            assert toks.starts == tuple(s + a for s in alone.starts)
            assert toks.ends == tuple(e + a for e in alone.ends)
            assert Counter(toks.forms) == prepared.terms[prepared.spans.index((a, b))]
            checked += 1
    assert checked > 1000


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_output_invariants_on_real_text_mixtures(data: st.DataObject) -> None:
    """On texts stitched from real Reuters sentences (some shared, in any order): spans lie
    inside both texts, passages are sorted and disjoint on the suspicious side, long enough,
    and similarities are cosines."""
    pool = _SENTENCES
    if not pool:
        pytest.skip("real data not available")
    pick = st.lists(st.sampled_from(range(len(pool))), min_size=0, max_size=25)
    src_ids = data.draw(pick)
    lo = data.draw(st.integers(0, len(src_ids)))
    hi = data.draw(st.integers(lo, len(src_ids)))
    # some of the source's sentences, in order, between unrelated or repeated ones
    susp_ids = data.draw(pick) + src_ids[lo:hi] + data.draw(pick)
    source = " ".join(pool[i] for i in src_ids)
    suspicious = " ".join(pool[i] for i in susp_ids)
    cfg = AlignmentConfig()
    got = align_passages(source, suspicious, cfg)
    for p in got:
        assert 0 <= p.this_offset < p.this_end <= len(suspicious)
        assert 0 <= p.source_offset < p.source_end <= len(source)
        assert min(p.this_length, p.source_length) >= cfg.min_passage_chars
        assert 0.0 <= p.similarity <= 1.0 + 1e-9
    assert all(a.this_end <= b.this_offset for a, b in itertools.pairwise(got))


def _real_sentences() -> list[str]:
    from conftest import DATA_DIR, read_jsonl_gz

    path = DATA_DIR / "reuters21578" / "docs.jsonl.gz"
    if not path.exists():
        return []
    out: list[str] = []
    for d in read_jsonl_gz(path, limit=60):
        text = d["text"] or ""
        out += [text[a:b] for a, b in sentence_spans(text)]
    return out[:400]


_SENTENCES = _real_sentences()


# --- copies end where copying ends ----------------------------------------------------------


def test_a_new_sentence_between_two_copied_paragraphs_splits_the_passage(
    articles: list[str],
) -> None:
    source, _ = _unrelated_pair(articles, 20)
    a1, b1 = _sentence_run(source, 0, 3)
    a2, b2 = _sentence_run(source, 3, 3)
    new = "Meanwhile our own reporter walked along the frozen river and met nobody at all."
    suspicious = source[a1:b1] + " " + new + " " + source[a2:b2]
    got = align_passages(source, suspicious)
    spans = [(p.this_offset, p.this_end, p.source_offset, p.source_end) for p in got]
    second = len(source[a1:b1]) + len(new) + 2
    assert spans == [(0, b1 - a1, a1, b1), (second, second + b2 - a2, a2, b2)]
    start = suspicious.index(new)
    assert all(not (p.this_offset < start + len(new) and start < p.this_end) for p in got)


def _runs_brute(a: list[int], b: list[int], n: int) -> list[tuple[int, int, int]]:
    out = []
    for i in range(len(a)):
        for j in range(len(b)):
            if a[i] != b[j] or (i + 1 < len(a) and j + 1 < len(b) and a[i + 1] == b[j + 1]):
                continue  # not the end of a maximal run
            k = 0
            while i - k >= 0 and j - k >= 0 and a[i - k] == b[j - k]:
                k += 1
            if k >= n:
                out.append((i, j, k))
    return sorted(out)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(0, 4), max_size=40),
    st.lists(st.integers(0, 4), max_size=40),
    st.integers(1, 4),
)
def test_common_runs_equal_a_brute_force_oracle(a: list[int], b: list[int], n: int) -> None:
    assert common_runs(a, b, n) == _runs_brute(a, b, n)


def _obfuscated_pair(seed: int) -> tuple[str, str, tuple[int, int]]:
    """A source with one copied sentence pair, and a suspicious text holding it with 45 % of
    its words replaced and all shuffled (random obfuscation), between unrelated sentences;
    with the suspicious span of the copy."""
    import random

    filler_a = (
        "The harbour authority published its yearly report on Monday morning. "
        "Officials declined to comment on the pending budget. "
    )
    copied = (
        "Shipping volumes through the northern terminal rose sharply after the new cranes "
        "arrived from the coastal yards, while the older southern piers handled mostly fishing "
        "boats and a few passenger ferries during the long summer season."
    )
    filler_b = (
        "My grandmother grew tomatoes in a small garden behind the house. "
        "We ate them with bread and salt every evening. "
    )
    other = [
        "purple",
        "violin",
        "elephant",
        "quantum",
        "marble",
        "sugar",
        "lantern",
        "velvet",
        "orbit",
        "canyon",
    ]
    rng = random.Random(seed)
    words = [rng.choice(other) if rng.random() < 0.45 else w for w in copied.split()]
    rng.shuffle(words)
    copy = " ".join(words) + "."
    return (
        filler_a + copied + " " + filler_a,
        filler_b + copy + " " + filler_b,
        (
            len(filler_b),
            len(filler_b) + len(copy),
        ),
    )


def test_retry_reads_an_empty_pair_with_looser_evidence() -> None:
    """A heavily obfuscated copy the strict pass misses is found by the retry, which is
    exactly the strict pipeline run with the retry config; a pair the strict pass answers is
    not retried; and the retry never runs twice."""
    cfg = AlignmentConfig(retry_empty=True)
    source, suspicious, (lo, hi) = _obfuscated_pair(11)
    strict = dataclasses.replace(cfg, retry_empty=False)
    assert AlignmentConfig().retry_empty is False  # the default reads news strictly
    assert align_passages(source, suspicious, strict) == []
    found = align_passages(source, suspicious, cfg)
    assert found == align_passages(source, suspicious, cfg.retry_config())
    assert len(found) == 1 and lo <= found[0].this_offset and found[0].this_end <= hi
    assert cfg.retry_config().retry_empty is False
    assert cfg.retry_config().seed_relative == cfg.retry_seed_relative
    # a verbatim copy is answered by the strict pass: the retry changes nothing
    assert align_passages(source, source, cfg) == align_passages(source, source, strict) != []
