"""The coverage sketch (neardup.sketch.coverage, the ``"coverage"`` scheme): its byte format,
its found/eligible counts against a brute-force oracle on the rule's own definition, its
estimates against the exact coverages, its verdicts against ``judge()``, and the bounds the
result-set kernel uses."""

from __future__ import annotations

import random
from itertools import pairwise

import numpy as np
import pytest
import xxhash
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import neardup
from neardup.errors import ConfigError, SchemeMismatchError, SignatureFormatError
from neardup.rule import RuleConfig, judge, pair_features, profile
from neardup.rule.coverage import (
    CoverageSketchConfig,
    duplicate_bounds,
    estimate,
    is_duplicate,
    sign_coverage,
)
from neardup.shingles import token_hashes
from neardup.sketch import Signature, sign
from neardup.sketch.coverage import (
    HEADER_WORDS,
    MASK,
    MAX_WORD_COUNT,
    OVERFLOW,
    STARTS,
    direction_counts_reference,
    layout_code,
    layout_error,
    occurrence_keys,
    pair_counts,
    parse,
    sketch_values,
)
from neardup.sketch.shingleset import TOKEN_SEED

RULE = RuleConfig()

# --- generated news-like texts -------------------------------------------------------------

_SYLLABLES = ["ka", "lo", "mi", "ne", "ru", "sa", "to", "vi", "da", "pe", "ba", "gu", "fo"]
_STOP = ["the", "of", "and", "to", "in", "a", "that", "for", "on", "with", "was", "said"]
_VOCAB = sorted(
    {a + b + c for a in _SYLLABLES for b in _SYLLABLES for c in ("n", "r", "s", "m", "")}
)


def _sentence(rng: random.Random, vocab: list[str]) -> str:
    words = [
        rng.choice(_STOP) if rng.random() < 0.35 else vocab[int(rng.paretovariate(1.1)) % 400]
        for _ in range(rng.randint(9, 18))
    ]
    return " ".join(words).capitalize() + "."


def article(rng: random.Random, paragraphs: int) -> list[str]:
    """Paragraphs of a generated article (a private vocabulary order per article)."""
    vocab = _VOCAB[:]
    rng.shuffle(vocab)
    return [
        " ".join(_sentence(rng, vocab) for _ in range(rng.randint(2, 4))) for _ in range(paragraphs)
    ]


def _typos(paragraph: str, rate: float, rng: random.Random) -> str:
    return " ".join(w + "x" if rng.random() < rate else w for w in paragraph.split())


def edited(paras: list[str], rng: random.Random, donor: list[str]) -> list[str]:
    """One random edit of the kinds news copies undergo (several at once sometimes)."""
    out = paras[:]
    for _ in range(rng.choice([1, 1, 2])):
        edit = rng.choice(["drop", "insert", "truncate", "typos", "boilerplate", "reorder"])
        if edit == "drop" and len(out) > 1:
            for _ in range(rng.randint(1, max(1, len(out) // 2))):
                if len(out) > 1:
                    out.pop(rng.randrange(len(out)))
        elif edit == "insert":
            for _ in range(rng.randint(1, len(out))):
                out.insert(rng.randrange(len(out) + 1), rng.choice(donor))
        elif edit == "truncate":
            out = out[: max(1, int(len(out) * rng.uniform(0.2, 0.9)))]
        elif edit == "typos":
            rate = rng.choice([0.02, 0.05, 0.1, 0.2])
            out = [_typos(p, rate, rng) for p in out]
        elif edit == "boilerplate":
            out = ["Share this story", *out, "Most Read", "Sign up for our newsletter"]
        else:
            rng.shuffle(out)
    return out


def text(paras: list[str]) -> str:
    return "\n\n".join(paras)


def generated_pairs(count: int, seed: int) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    pairs = []
    for _ in range(count):
        base = article(rng, rng.randint(2, 12))
        other = article(rng, 6)
        kind = rng.random()
        if kind < 0.8:
            pairs.append((text(base), text(edited(base, rng, other))))
        else:  # unrelated, or an excerpt inside another report
            mix = other[:3] + base[: rng.randint(0, 2)] + other[3:]
            pairs.append((text(base), text(mix)))
    return pairs


# --- the byte format -----------------------------------------------------------------------


def test_golden_values_of_a_small_sketch() -> None:
    # Five tokens, width 2: words 7 and 9 appear twice; the furniture flag is on token 4.
    words = np.array([7 << 32, 9 << 32, 7 << 32, 3 << 32, 9 << 32], dtype=np.uint64)
    shingles = np.array([0x1111 << 48, 0x2222 << 48, 0x3333 << 48, 0x4444 << 48], dtype=np.uint64)
    flags = np.array([0, 0, 0, 0, 1], dtype=np.uint8)
    values = sketch_values(words, shingles, flags, width=2, sample_size=3, max_word_count=4)
    # word 3 (1 occurrence) then word 7 (2 occurrences) fill the sample of 3; 9 is left out
    starts = 1 << 15
    assert values.tolist() == [
        1 | (0 << 8) | (2 << 16),  # format 1, not complete, width 2
        3,  # sample_size
        4,  # max_word_count
        9,  # bound: the first word key left out
        2,  # word types listed
        3,  # occurrences sampled
        3,  # word keys
        7,
        (1 << 24) | (1 << 16) | 2,  # word 3: 1 counted of 1 occurrence, 2 entries
        (2 << 24) | (2 << 16) | 3,  # word 7: 2 counted of 2 occurrences, 3 entries
        (0x3333 << 16) | 0b01,  # word 3 (token 3): shingle 2 covers it
        (0x4444 << 16) | starts | 0b01,  # shingle 3 starts at it
        (0x1111 << 16) | starts | 0b01,  # word 7, occurrence 0 (token 0): shingle 0
        (0x2222 << 16) | 0b10,  # occurrence 1 (token 2): shingle 1 covers it,
        (0x3333 << 16) | starts | 0b10,  # shingle 2 starts at it
    ]
    sig = Signature("coverage/v1:test", values)
    blob = sig.to_bytes()
    assert blob[8 + len("coverage/v1:test") + 4 :][:8] == bytes.fromhex("0100020003000000")
    assert Signature.from_bytes(blob) == sig


def test_golden_bytes_of_the_default_scheme() -> None:
    sig = neardup.sign(
        "The central bank raised its main interest rate by half a point on Tuesday, the "
        "first increase in three years, citing a sharp rise in consumer prices."
    )
    assert sig.scheme_id == CoverageSketchConfig().scheme_id
    assert sig.scheme == "coverage"
    assert sig.values.dtype == np.uint32
    # format 1, complete (a short text: every word sampled), width 4; 24 words, 27 tokens
    assert sig.values[:6].tolist() == [1 | (1 << 8) | (4 << 16), 64, 15, 0, 24, 27]
    # the bytes of the default scheme are pinned: a change here breaks stored sketches
    assert xxhash.xxh64_hexdigest(sig.to_bytes()) == "eb94431a8c3c0aa2"


def test_scheme_id_depends_on_the_profile_not_the_thresholds() -> None:
    base = CoverageSketchConfig()
    looser = CoverageSketchConfig(rule=RuleConfig(duplicate_min_coverage=0.6))
    wider = CoverageSketchConfig(rule=RuleConfig(width=5))
    assert base.scheme_id == looser.scheme_id
    assert base.scheme_id != wider.scheme_id
    assert base.scheme_id != CoverageSketchConfig(sample_size=32).scheme_id
    with pytest.raises(ConfigError):
        CoverageSketchConfig(sample_size=0)
    with pytest.raises(ConfigError):
        CoverageSketchConfig(max_word_count=MAX_WORD_COUNT + 1)
    with pytest.raises(ConfigError):
        CoverageSketchConfig(rule="strict")  # type: ignore[arg-type]


def test_the_default_scheme_and_sentences_by_name() -> None:
    assert neardup.sign("Some words here.").scheme == "coverage"
    assert sign("Some words here.", "sentences").scheme == "sentences"
    assert sign("Some words here.", "coverage", sample_size=8).scheme_id == (
        CoverageSketchConfig(sample_size=8).scheme_id
    )


def test_size_is_bounded_whatever_the_length() -> None:
    rng = random.Random(5)
    long_text = text(article(rng, 400))  # about 20,000 words
    sig = sign_coverage(long_text)
    cfg = CoverageSketchConfig()
    bound = (
        6
        + 2 * (2 * cfg.sample_size + cfg.max_word_count)
        + 2 * (cfg.sample_size + cfg.max_word_count)
    )
    assert len(sig) <= bound
    assert layout_error(sig.values) is None


@pytest.mark.parametrize(
    "body",
    ["", "   \n\n ", "Word", "Share story\nMost Read\nSign up", "東京で会議が開かれた。"],
)
def test_edge_texts_give_well_formed_sketches(body: str) -> None:
    sig = sign_coverage(body)
    assert layout_error(sig.values) is None
    e = estimate(sig, sig)
    exact = pair_features(profile(body), profile(body), RULE.width)
    assert e.coverage_a == exact.coverage_a  # a text in itself: every sampled token found


def test_malformed_sketches_are_refused() -> None:
    good = sign_coverage("The bank raised its rate on Tuesday, the first rise in years.")
    bad_values = good.values.copy()
    bad_values[4] += 1  # one more word type than the sketch holds
    bad = Signature(good.scheme_id, bad_values)
    assert layout_error(bad.values) is not None
    with pytest.raises(SignatureFormatError):
        estimate(good, bad)
    with pytest.raises(SignatureFormatError):
        parse(bad.values)
    with pytest.raises(SchemeMismatchError):
        estimate(good, sign("x y z", "coverage", sample_size=8))


# --- found / eligible against the rule's definition ----------------------------------------


def _selection(keys: list[int], sample: int, cap: int) -> tuple[dict[int, bool], int | None]:
    """The sampled word types (key -> overflow?) and the bound, by plain Python."""
    counts: dict[int, int] = {}
    for k in keys:
        counts[k] = counts.get(k, 0) + 1
    listed: dict[int, bool] = {}
    stored = overflowing = 0
    for k in sorted(counts):
        if stored >= sample or overflowing >= sample:
            return listed, k
        listed[k] = counts[k] > cap
        if listed[k]:
            overflowing += 1
        else:
            stored += counts[k]
    return listed, None


def oracle_counts(a: str, b: str, sample: int, cap: int) -> tuple[int, int]:
    """``(found, eligible)`` of ``a`` in ``b`` from the rule's definitions: a token is found
    when one of the shingles covering it is anywhere in ``b``; the eligible tokens are the
    counted tokens of ``a``'s sampled words below ``b``'s bound and sampled by ``b``."""
    pa, pb = profile(a, RULE), profile(b, RULE)
    keys_a = [int(h) >> 32 for h in token_hashes(a, RULE.text, TOKEN_SEED)]
    keys_b = [int(h) >> 32 for h in token_hashes(b, RULE.text, TOKEN_SEED)]
    listed_a, _ = _selection(keys_a, sample, cap)
    listed_b, bound_b = _selection(keys_b, sample, cap)
    n, m = pa.tokens, len(pa.shingles)
    span = min(RULE.width, n)
    in_b = set(pb.shingles.tolist())
    shingles = pa.shingles.tolist()
    counted = [not (f & 1) for f in pa.flags.tolist()]
    if not any(counted):
        counted = [True] * n
    found = eligible = 0
    for t in range(n):
        k = keys_a[t]
        if not counted[t] or listed_a.get(k, True) or listed_b.get(k, False):
            continue  # not sampled by a (absent or overflow), or an overflow word of b
        if bound_b is not None and k >= bound_b:
            continue
        eligible += 1
        covering = range(max(0, t - span + 1), min(t, m - 1) + 1)
        found += any(shingles[p] in in_b for p in covering)
    return found, eligible


def _fingerprint_collision(a: str, b: str) -> bool:
    """Two different shingles of the two texts with the same 16-bit fingerprint."""
    values = np.unique(np.concatenate((profile(a, RULE).shingles, profile(b, RULE).shingles)))
    return len(np.unique(values >> np.uint64(48))) < len(values)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from([(8, 2), (16, 4), (64, 8), (200, 15)]))
def test_counts_equal_the_rules_definition(seed: int, params: tuple[int, int]) -> None:
    sample, cap = params
    a, b = generated_pairs(1, seed)[0]
    assume(not _fingerprint_collision(a, b))
    cfg = CoverageSketchConfig(sample_size=sample, max_word_count=cap)
    sa, sb = sign_coverage(a, cfg), sign_coverage(b, cfg)
    e = estimate(sa, sb)
    assert (e.found_a, e.eligible_a) == oracle_counts(a, b, sample, cap)
    assert (e.found_b, e.eligible_b) == oracle_counts(b, a, sample, cap)


def _arrays(draw: st.DrawFn, width: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n = draw(st.integers(0, 40))
    keys = draw(st.lists(st.integers(1, 12), min_size=n, max_size=n))
    m = max(n - width + 1, 1) if n else 0
    fps = draw(st.lists(st.integers(0, 20), min_size=m, max_size=m))
    flags = draw(st.lists(st.sampled_from([0, 0, 0, 1, 2]), min_size=n, max_size=n))
    return (
        np.array([k << 32 for k in keys], dtype=np.uint64),
        np.array([f << 48 for f in fps], dtype=np.uint64),
        np.array(flags, dtype=np.uint8),
    )


@st.composite
def sketch_pairs(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray]:
    """Two sketches of one width built from arbitrary arrays with few word keys and shingle
    fingerprints, so they share words and fingerprints often."""
    width = draw(st.integers(1, 5))
    sample, cap = draw(st.integers(1, 30)), draw(st.integers(1, 8))
    return tuple(  # type: ignore[return-value]
        sketch_values(*_arrays(draw, width), width=width, sample_size=sample, max_word_count=cap)
        for _ in range(2)
    )


@settings(max_examples=300, deadline=None)
@given(sketch_pairs())
def test_compiled_counts_equal_the_reference(pair: tuple[np.ndarray, np.ndarray]) -> None:
    xa, ya = pair
    assert layout_error(xa) is None and layout_error(ya) is None
    values = np.concatenate((xa, ya))
    exact = pair_counts(values, 0, len(xa), True)
    assert exact[:2] == direction_counts_reference(xa, ya)
    assert exact[2:] == direction_counts_reference(ya, xa)
    upper = pair_counts(values, 0, len(xa), False)
    assert upper[1] == exact[1] and upper[3] == exact[3]  # the same eligible tokens
    assert upper[0] >= exact[0] and upper[2] >= exact[2]  # an upper bound of found


# --- estimates and verdicts ----------------------------------------------------------------


def _exact_and_estimate(pairs: list[tuple[str, str]]) -> tuple[np.ndarray, np.ndarray]:
    exact, est = [], []
    for a, b in pairs:
        f = pair_features(profile(a, RULE), profile(b, RULE), RULE.width)
        e = estimate(sign_coverage(a), sign_coverage(b))
        exact.append((f.coverage_a, f.coverage_b))
        est.append((e.coverage_a, e.coverage_b))
    return np.array(exact), np.array(est)


def test_estimates_are_close_to_the_exact_coverages() -> None:
    exact, est = _exact_and_estimate(generated_pairs(150, seed=11))
    error = np.abs(exact - est)
    assert error.mean() < 0.04
    assert abs(float((est - exact).mean())) < 0.02  # no systematic bias
    assert np.quantile(error, 0.95) < 0.15


MARGIN = 0.1  # the verdict test leaves out pairs whose coverage is this close to a threshold


def test_verdicts_agree_with_judge_away_from_the_thresholds() -> None:
    pairs = generated_pairs(400, seed=12)
    exact, est = _exact_and_estimate(pairs)
    agree = kept = duplicates = 0
    for (a, b), (ca, cb), (ea, eb) in zip(pairs, exact, est, strict=True):
        high, low = max(ca, cb), min(ca, cb)
        if abs(high - RULE.duplicate_min_coverage) < MARGIN:
            continue
        if abs(low - RULE.duplicate_min_coverage_other) < MARGIN:
            continue
        kept += 1
        truth = judge(a, b, RULE).label == "duplicate"
        duplicates += truth
        agree += is_duplicate(ea, eb, RULE) == truth
    assert kept >= 250 and 50 <= duplicates <= kept - 50  # both verdicts well represented
    assert agree / kept >= 0.98


@settings(max_examples=500, deadline=None)
@given(
    st.floats(0, 1),
    st.floats(0, 1),
    st.floats(0, 1),
    st.floats(0, 1),
)
def test_kernel_bounds_are_bounds_of_the_rule(ca: float, cb: float, t1: float, t2: float) -> None:
    high, low = max(t1, t2), min(t1, t2)
    rule = RuleConfig(duplicate_min_coverage=high, duplicate_min_coverage_other=low)
    accept_at, reject_below = duplicate_bounds(rule)
    if min(ca, cb) >= accept_at:
        assert is_duplicate(ca, cb, rule)
    if min(ca, cb) < reject_below:
        assert not is_duplicate(ca, cb, rule)
    verdict = judge_label_of(ca, cb, rule)
    assert is_duplicate(ca, cb, rule) == (verdict == "duplicate")


def judge_label_of(ca: float, cb: float, rule: RuleConfig) -> str:
    """The rule's label for these coverages as ``decide`` gives it (the rule, once)."""
    from neardup.rule import clauses_of, label_of

    return label_of(clauses_of(rule, ca, cb, 0, 0.0))


def test_overflow_words_are_listed_without_occurrences() -> None:
    rng = random.Random(3)
    body = text(article(rng, 30))
    sig = sign_coverage(body, CoverageSketchConfig(sample_size=200, max_word_count=2))
    parts = parse(sig.values)
    assert any(v is None for v in parts.types.values())
    per_type = sig.values[6 + len(parts.types) : 6 + 2 * len(parts.types)]
    assert (per_type == OVERFLOW).any()


def _entries_fault_reference(values: np.ndarray) -> bool:
    """Plain Python: whether a sketch of sound structure has a malformed entry (the rule
    ``entries_code`` checks in one branch-free pass)."""
    v = values.astype(np.int64).tolist()
    t = v[4]
    at = HEADER_WORDS + 2 * t
    for count in v[HEADER_WORDS + t : HEADER_WORDS + 2 * t]:
        if count == OVERFLOW:
            continue
        stored = (count >> 16) & 0xFF
        entries = v[at : at + (count & 0xFFFF)]
        at += count & 0xFFFF
        fingerprints = [e >> 16 for e in entries]
        if any(b <= a for a, b in pairwise(fingerprints)):
            return True
        if any(e & MASK == 0 or e & MASK & ~((1 << stored) - 1) for e in entries):
            return True
        if sum(1 for e in entries if e & STARTS) > stored:
            return True
    return False


def _occurrence_keys_reference(values: np.ndarray) -> list[int]:
    """Plain Python: ``word << 16 | fingerprint`` of every entry starting a shingle, in order."""
    v = values.astype(np.int64).tolist()
    t = v[4]
    at = HEADER_WORDS + 2 * t
    out = []
    for word, count in zip(
        v[HEADER_WORDS : HEADER_WORDS + t], v[HEADER_WORDS + t : at], strict=True
    ):
        if count == OVERFLOW:
            continue
        out += [word << 16 | e >> 16 for e in v[at : at + (count & 0xFFFF)] if e & STARTS]
        at += count & 0xFFFF
    return out


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(0, 6), st.integers(0, 3))
def test_entry_check_and_occurrence_keys_equal_their_references(
    seed: int, flips: int, paragraphs: int
) -> None:
    rng = random.Random(seed)
    text = "\n\n".join(article(rng, paragraphs + 1))
    values = sign_coverage(text).values.copy()
    at = HEADER_WORDS + 2 * int(values[4])
    if at == len(values):
        return
    for _ in range(flips):  # damage the entries only: the structure stays sound
        values[rng.randrange(at, len(values))] ^= np.uint32(1 << rng.randrange(32))
    assert layout_code(values, 0, len(values), False) == 0
    expected = 7 if _entries_fault_reference(values) else 0
    assert layout_code(values, 0, len(values), True) == expected
    keys = np.zeros(len(values), dtype=np.uint64)
    words = np.full(len(values), 7, dtype=np.uint64)  # any contents
    marks = np.zeros(len(values), dtype=np.uint8)
    m = occurrence_keys(values, 0, len(values), keys, words, marks)
    assert not marks.any()  # left zero for the next row
    assert keys[:m].tolist() == _occurrence_keys_reference(values)
    if not expected:  # the keys result-set dedup finds candidates by, as the parser reads
        assert set(keys[:m].tolist()) == parse(values).occurrence_keys
