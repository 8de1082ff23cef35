"""Token hashes, word shingles and spot signatures: golden values and exact oracles."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import xxhash
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup._jit import forced
from neardup.errors import ConfigError
from neardup.shingles import (
    SPOTSIGS_ANTECEDENTS,
    hash_forms,
    hash_set,
    mix64,
    spot_signatures,
    token_hashes,
    word_shingles,
    word_shingles_numpy,
)
from neardup.text import ENGLISH_STOP_WORDS, TextConfig, token_forms, tokenize, tokenize_reference

PLAIN = TextConfig(stem=False)

# The running example of the SpotSigs paper (Theobald et al., SIGIR 2008).
OBAMA = (
    "At a rally to kick off a weeklong campaign for the South Carolina primary, Obama tried "
    "to set the record straight from an attack circulating widely on the Internet that is "
    "designed to play into prejudices against Muslims and fears of terrorism."
)


def test_golden_token_hashes() -> None:
    assert hash_forms(["bank", "england", "東京"]).tolist() == [
        12916405540467720186,
        15950263034937808717,
        5087795124118550966,
    ]
    # xxh3_64 of UTF-8 with the seed, nothing else.
    assert hash_forms(["bank"], seed=7)[0] == xxhash.xxh3_64_intdigest(b"bank", 7)


def test_golden_mix64_and_shingles() -> None:
    assert mix64(np.array([0, 1, 2**64 - 1], dtype=np.uint64)).tolist() == [
        0,
        6238072747940578789,
        13029008266876403067,
    ]
    assert word_shingles(hash_forms(["a", "b", "c", "d", "e"]), 4).tolist() == [
        1080786588548997875,
        11674240252164605858,
    ]


def shingle_oracle(hashes: list[int], width: int) -> list[int]:
    """Pure-Python reference of word_shingles (big integers, reduced mod 2**64)."""
    poly = 0x9E3779B97F4A7C15
    mask = (1 << 64) - 1
    n = len(hashes)
    if n == 0:
        return []
    w = min(width, n)
    out = []
    for i in range(n - w + 1):
        acc = 0
        for h in hashes[i : i + w]:
            acc = (acc * poly + h) & mask
        out.append((acc + w) & mask)
    return mix64(np.array(out, dtype=np.uint64)).tolist()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 2**64 - 1), max_size=30), st.integers(1, 9))
def test_word_shingles_match_oracle(hashes: list[int], width: int) -> None:
    got = word_shingles(np.array(hashes, dtype=np.uint64), width).tolist()
    assert got == shingle_oracle(hashes, width)


def test_fewer_tokens_than_width_gives_one_shingle() -> None:
    h = hash_forms(["only", "two"])
    assert word_shingles(h, 5).shape == (1,)
    assert word_shingles(h, 5).tolist() == shingle_oracle(h.tolist(), 5)
    assert word_shingles(np.empty(0, dtype=np.uint64), 4).shape == (0,)


def test_width_validation() -> None:
    for bad in (0, -1, True, 2.0):
        with pytest.raises(ConfigError):
            word_shingles(hash_forms(["a"]), bad)  # type: ignore[arg-type]


def test_token_hashes_fast_path_equals_slow_path(reuters_docs: list[dict[str, Any]]) -> None:
    for cfg in (TextConfig(), TextConfig(drop_stop_words=True, numbers="mask")):
        for doc in reuters_docs[:800]:
            slow = hash_forms(tokenize(doc["text"], cfg).forms, 0)
            assert np.array_equal(token_hashes(doc["text"], cfg, 0), slow)
    weird = "東京株式 \ud800 Привет 3.5 don't"
    assert np.array_equal(
        token_hashes(weird, PLAIN, 3), hash_forms(tokenize(weird, PLAIN).forms, 3)
    )


# --- SpotSigs ---------------------------------------------------------------------------


def spot_oracle(
    forms: list[str], antecedents: set[str], stops: set[str], distance: int, chain: int
) -> list[str]:
    """SpotSigs chains as strings, built the way the reference implementation reads."""
    out = []
    n = len(forms)
    for i, word in enumerate(forms):
        if word not in antecedents:
            continue
        beads = []
        pos = i
        for _ in range(chain):
            k = pos + distance
            while k < n and forms[k] in stops:
                k += 1
            if k >= n:
                break
            beads.append(forms[k])
            pos = k
        if beads:
            out.append(":".join([word, *beads]))
    return out


def spot_hash_of(chain: str) -> int:
    """Hash of one chain string with the documented combination (antecedent, beads, count)."""
    parts = chain.split(":")
    h = hash_forms(parts).tolist()
    poly, mask = 0x9E3779B97F4A7C15, (1 << 64) - 1
    acc = h[0]
    for v in h[1:]:
        acc = (acc * poly + v) & mask
    acc = (acc + 0x53504F5400000000 + len(parts) - 1) & mask
    return int(mix64(np.array([acc], dtype=np.uint64))[0])


def test_spotsigs_paper_example() -> None:
    forms = token_forms(OBAMA, PLAIN)
    ante = {"a", "an", "the", "is"}
    chains = spot_oracle(forms, ante, set(ENGLISH_STOP_WORDS), 1, 2)
    # The seven signatures the paper lists for antecedents {a, an, the, is}, d = 1, c = 2.
    assert chains == [
        "a:rally:kick",
        "a:weeklong:campaign",
        "the:south:carolina",
        "the:record:straight",
        "an:attack:circulating",
        "the:internet:designed",
        "is:designed:play",
    ]
    got = spot_signatures(
        hash_forms(forms), hash_set(ante), hash_set(ENGLISH_STOP_WORDS), 1, 2
    ).tolist()
    assert got == [spot_hash_of(c) for c in chains]


VOCAB = ["the", "a", "is", "of", "bank", "rate", "cut", "oil", "was", "said", "in", "yen"]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from(VOCAB), max_size=25),
    st.integers(1, 3),
    st.integers(1, 4),
)
def test_spot_signatures_match_oracle(forms: list[str], distance: int, chain: int) -> None:
    ante = {"the", "a", "is", "was"}
    stops = {"the", "a", "is", "of", "was", "said", "in"}
    got = spot_signatures(hash_forms(forms), hash_set(ante), hash_set(stops), distance, chain)
    expected = [spot_hash_of(c) for c in spot_oracle(forms, ante, stops, distance, chain)]
    assert got.tolist() == expected


def test_spot_signatures_edge_cases() -> None:
    empty = np.empty(0, dtype=np.uint64)
    stops = hash_set(ENGLISH_STOP_WORDS)
    ante = hash_set(SPOTSIGS_ANTECEDENTS)
    assert spot_signatures(empty, ante, stops).shape == (0,)
    assert spot_signatures(hash_forms(["bank", "rate"]), ante, stops).shape == (0,)
    assert spot_signatures(hash_forms(["bank", "the"]), ante, stops).shape == (0,)  # no bead
    with pytest.raises(ConfigError):
        spot_signatures(hash_forms(["the"]), ante, stops, 0, 2)
    with pytest.raises(ConfigError):
        spot_signatures(hash_forms(["the"]), ante, stops, 1, 0)


def test_golden_spot_signatures() -> None:
    forms = token_forms(OBAMA, PLAIN)
    got = spot_signatures(
        hash_forms(forms), hash_set(SPOTSIGS_ANTECEDENTS), hash_set(ENGLISH_STOP_WORDS)
    )
    assert got.shape == (5,)
    assert xxhash.xxh64_hexdigest(got.astype("<u8").tobytes()) == GOLDEN_OBAMA_DEFAULT


GOLDEN_OBAMA_DEFAULT = "746faee4bdb9765d"  # 5 signatures, computed once


# --- compiled kernels equal their references ----------------------------------------------


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 2**64 - 1), max_size=40), st.integers(1, 9))
def test_compiled_word_shingles_equal_numpy(hashes: list[int], width: int) -> None:
    from neardup.shingles import word_shingles_numpy

    arr = np.array(hashes, dtype=np.uint64)
    assert np.array_equal(word_shingles(arr, width), word_shingles_numpy(arr, width))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 2**64 - 1), max_size=40), st.integers(1, 6), st.integers(1, 300))
def test_fused_minhash_kernel_equals_numpy(hashes: list[int], width: int, num_perm: int) -> None:
    from neardup import _kernels
    from neardup.sketch.minhash import (
        _minhash_permutations_numpy,
        minhash_values,
        permutation_params,
    )

    arr = np.array(hashes, dtype=np.uint64)
    a, b = permutation_params(num_perm, 1)
    shingles = word_shingles(arr, width)
    expected = minhash_values(shingles, num_perm, "permutations", 1)
    assert np.array_equal(_kernels.minhash_permutations(arr, width, a, b), expected)
    # minhash_values' own compiled pass equals the numpy blocks.
    if shingles.shape[0]:
        assert np.array_equal(expected, _minhash_permutations_numpy(shingles, num_perm, 1))


# Values drawn from a small pool so that repeats (and SimHash ties) occur.
POOLED = st.lists(
    st.sampled_from([0, 1, 2**63, 2**64 - 1, 0x5555555555555555, 0xAAAAAAAAAAAAAAAA, 12345]),
    max_size=12,
) | st.lists(st.integers(0, 2**64 - 1), max_size=60)


@settings(max_examples=200, deadline=None)
@given(POOLED)
def test_sorted_distinct_equals_np_unique(values: list[int]) -> None:
    from neardup import _kernels

    arr = np.array(values, dtype=np.uint64)
    for compiled in (True, False):  # the kernel, and the sort-and-mask path
        with forced(compiled):
            got = _kernels.sorted_distinct(arr)
        assert np.array_equal(got, np.unique(arr))
        assert got.dtype == np.uint64


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(-(2**40), 2**40), max_size=40), st.sampled_from(["<i8", "<i4"]))
def test_distinct_equals_np_unique_in_its_dtype(values: list[int], dtype: str) -> None:
    from neardup import _kernels

    arr = np.array(values, dtype=np.int64).astype(dtype)
    for shape in ((-1,), (-1, 2) if len(values) % 2 == 0 else (-1,)):
        shaped = arr.reshape(shape)
        got = _kernels.distinct(shaped)
        assert np.array_equal(got, np.unique(shaped))
        assert got.dtype == shaped.dtype


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 99), max_size=40), st.sampled_from(["<i8", "<i4", "<u4"]))
def test_distinct_below_equals_distinct(values: list[int], dtype: str) -> None:
    from neardup import _kernels

    arr = np.array(values, dtype=np.int64).astype(dtype)
    for shape in ((-1,), (-1, 2) if len(values) % 2 == 0 else (-1,)):
        shaped = arr.reshape(shape)
        got = _kernels.distinct_below(shaped, 100)
        assert np.array_equal(got, _kernels.distinct(shaped))
        assert got.dtype == shaped.dtype


@settings(max_examples=200, deadline=None)
@given(POOLED.filter(len), st.integers(1, 2**20))
def test_simhash_kernel_equals_numpy(values: list[int], scale: int) -> None:
    from neardup import _kernels
    from neardup.sketch.simhash import simhash_words

    arr = np.array(values, dtype=np.uint64)
    features, tf = np.unique(arr, return_counts=True)
    expected = simhash_words(features, tf.astype(np.int64) * scale, 64)
    assert _kernels.simhash64(arr, scale) == int(expected[0])


def test_compiled_signing_equals_numpy_on_reuters(reuters_docs: list[dict[str, Any]]) -> None:
    """sign_shingles, sign_simhash and the stream's MinHash of stored shingles take the
    compiled passes; on real text they give the numpy references' values."""
    from neardup.sketch.idf import IDF_SCALE, feature_hashes
    from neardup.sketch.minhash import _minhash_permutations_numpy, minhash_values
    from neardup.sketch.shingleset import TOKEN_SEED, ShingleSetConfig, sign_shingles
    from neardup.sketch.simhash import SimHashConfig, sign_simhash, simhash_words

    shingle_cfg, simhash_cfg = ShingleSetConfig(), SimHashConfig()
    texts = [d["text"] for d in reuters_docs[:400] if d["text"].strip()]
    for text in texts:
        tokens = token_hashes(text, shingle_cfg.text, TOKEN_SEED)
        shingles = sign_shingles(text, shingle_cfg).values
        assert np.array_equal(shingles, np.unique(word_shingles_numpy(tokens, shingle_cfg.width)))
        assert not shingles.flags.writeable
        features, tf = np.unique(
            feature_hashes(text, simhash_cfg.text, simhash_cfg.width), return_counts=True
        )
        expected = simhash_words(features, tf.astype(np.int64) * IDF_SCALE, 64)
        assert np.array_equal(sign_simhash(text, simhash_cfg).values, expected)
        if shingles.shape[0]:
            assert np.array_equal(
                minhash_values(shingles, 32, "permutations", 7),
                _minhash_permutations_numpy(shingles, 32, 7),
            )


ASCII_PIECES = st.sampled_from(
    ["1", "22", "3.5", "1,000", ".", ",", "'", "a", "Bc", "x1", " ", "\n", "-", "'s", "9a", "_"]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(ASCII_PIECES, max_size=30).map("".join))
def test_ascii_scanner_equals_the_token_regex(text: str) -> None:
    """The compiled scanner finds the same tokens (checked through their hashes)."""
    for cfg in (PLAIN, TextConfig(numbers="mask", drop_stop_words=True)):
        slow = hash_forms(tokenize_reference(text, cfg).forms, 0)
        for compiled in (True, False):
            with forced(compiled):
                assert np.array_equal(token_hashes(text, cfg, 0), slow)


def test_spot_signatures_accept_unsorted_sets() -> None:
    forms = token_forms(OBAMA, PLAIN)
    ante, stops = hash_set(SPOTSIGS_ANTECEDENTS), hash_set(ENGLISH_STOP_WORDS)
    expected = spot_signatures(hash_forms(forms), ante, stops)
    got = spot_signatures(hash_forms(forms), ante[::-1].copy(), stops[::-1].copy())
    assert np.array_equal(got, expected)


def _tiny_vocabulary(cfg: TextConfig) -> Any:
    """A fresh compiled-scanner vocabulary for ``cfg`` with an 8-entry table, so scans stop
    at a half-full table and resume many times."""
    from neardup import _kernels
    from neardup.text import scanner as text

    vocabulary = text._Vocabulary(cfg)
    vocabulary.table = _kernels.TokenTable(8)
    text._vocabularies[cfg] = vocabulary
    return vocabulary


def test_table_growth_and_interrupted_scans(reuters_docs: list[dict[str, Any]]) -> None:
    """A tiny table forces many grow-and-rescan passes; an interrupted scan (tokens left
    pending, never stored) must not corrupt later results."""
    from neardup import _kernels
    from neardup.text import scanner as text

    cfg = TextConfig(numbers="mask")
    seed = 99
    vocabulary = _tiny_vocabulary(cfg)
    texts = [d["text"] for d in reuters_docs[:200]]
    # Interrupted: scan, report unknown tokens, but never store them.
    buf, classes = text._code_units(texts[0])
    _kernels.scan_tokens(
        buf, classes, vocabulary.table, vocabulary.pieces, vocabulary.numbers, 10**9
    )
    with forced(True):
        for doc in [*texts, "Привет мир 東京株式 don’t", "naïve café"]:
            expected = hash_forms(tokenize_reference(doc, cfg).forms, seed)
            assert np.array_equal(token_hashes(doc, cfg, seed), expected)
    assert vocabulary.table.keys.shape[0] > 8
    assert 2 * vocabulary.table.used <= vocabulary.table.keys.shape[0]


@pytest.mark.parametrize(
    "cfg", [TextConfig(), TextConfig(drop_stop_words=True, min_token_length=3, numbers="drop")]
)
def test_scanner_learns_a_whole_piece_at_once(
    reuters_docs: list[dict[str, Any]], cfg: TextConfig
) -> None:
    """A batch-engine-sized piece (many documents joined) full of new, repeated and dropped
    words, on a tiny table: the scan stops at half full and resumes many times inside one
    text; the result must equal the reference tokenizer's, on ASCII and on Unicode."""
    seed = 12345
    vocabulary = _tiny_vocabulary(cfg)
    texts = [d["text"] for d in reuters_docs[:300]]
    curly = [t.replace("'", "’").replace('"', "“") + " Ελλάδα 東京株式" for t in texts[:100]]
    with forced(True):
        for piece in (" \n ".join(texts[:150]), " \n ".join(texts[100:300]), " ".join(curly)):
            expected = hash_forms(tokenize_reference(piece, cfg).forms, seed)
            assert np.array_equal(token_hashes(piece, cfg, seed), expected)
    assert vocabulary.table.keys.shape[0] >= 1 << 14  # grew (and resumed) many times
    # Every pending entry was resolved: no negative values left in the table.
    assert int(vocabulary.table.values.min()) >= 0


def test_token_hashes_and_spans_equal_tokenize_and_hash_forms() -> None:
    from neardup.shingles import token_hashes_and_spans
    from neardup.text import TextConfig, tokenize

    cfg = TextConfig()
    texts = [
        "Plain ASCII text, with 3.5 numbers and don't.",
        "“Curly quotes” — dashes, café, naïve, Zürich; 東京で会議 and Ünïcödé.",
        "",
        "   \n\n  ",
        "x" * 5000 + " the end",
    ]
    for text in texts * 2:  # the second round: every raw token known
        hashes, starts, ends = token_hashes_and_spans(text, cfg, 0)
        toks = tokenize(text, cfg)
        assert hashes.tolist() == hash_forms(toks.forms, 0).tolist()
        assert starts.tolist() == list(toks.starts) and ends.tolist() == list(toks.ends)
