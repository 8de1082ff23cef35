"""Crafted signatures, sketches and index files against every entry point that hands them to
compiled code: the only outcomes are the right answer or a neardup error.

The compiled kernels do not check bounds, so each entry point validates what a kernel relies
on (lengths, header counts, sortedness, value ranges) before it runs.  These tests mutate
valid inputs (header words, counts, masks, truncation, extension, order, dtype) and check
that a malformed input is refused with a :class:`~neardup.errors.NearDupError` and a
well-formed one is answered as the plain-Python references answer it.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from neardup.detect.resultset import ResultSetDeduper, reference_dedup
from neardup.errors import ConfigError, NearDupError, SignatureFormatError, StoreError
from neardup.index import HammingIndex, LSHIndex
from neardup.index._common import read_index_file, write_index_file
from neardup.rule import RuleConfig
from neardup.rule.coverage import estimate, scheme_for
from neardup.similarity import bottomk_at_least, bottomk_jaccard, containment, jaccard
from neardup.sketch import Signature, sign
from neardup.sketch.coverage import (
    HEADER_WORDS,
    MAX_SAMPLE_SIZE,
    OVERFLOW,
    STARTS,
    direction_counts_reference,
    layout_error,
)

FUZZ = settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

_TEXTS = (
    "Officials said the storm damaged hundreds of homes along the coast on Tuesday night.",
    "The central bank raised interest rates by a quarter point, citing persistent inflation.",
    "Rescue teams arrived later that night with food, water and medical supplies.",
    "Officials said the storm damaged hundreds of homes along the coast on Tuesday night. "
    "Rescue teams arrived later that night with food, water and medical supplies.",
    "The the the the the the the the the the the the the the the the the the the the.",
    "",
)


@functools.cache
def _coverage() -> tuple[Signature, ...]:
    return tuple(sign(t) for t in _TEXTS)


@functools.cache
def _sentences() -> tuple[Signature, ...]:
    return tuple(sign(t, "sentences") for t in (*_TEXTS, "A. B. C. D. E. F. G. H. I. J."))


@functools.cache
def _minhash() -> tuple[Signature, ...]:
    return tuple(sign(t, "minhash") for t in _TEXTS[:4])


@functools.cache
def _simhash() -> tuple[Signature, ...]:
    return tuple(sign(t, "simhash") for t in _TEXTS[:4])


def _u32(values: list[int]) -> npt.NDArray[np.uint32]:
    return np.array([v & 0xFFFFFFFF for v in values], dtype=np.uint32)


def _recount(v: list[int]) -> list[int]:
    """``v`` with its occurrence total and length made to agree with its per-type counts."""
    t = v[4]
    if len(v) < HEADER_WORDS + 2 * t:
        return v
    counts = [c for c in v[HEADER_WORDS + t : HEADER_WORDS + 2 * t] if c != OVERFLOW]
    v[5] = sum((c >> 16) & 0xFF for c in counts) & 0xFFFFFFFF
    want = HEADER_WORDS + 2 * t + sum(c & 0xFFFF for c in counts)
    return v[:want] if want <= len(v) else v + [0x10001] * min(want - len(v), 4096)


@st.composite
def _mutated_sketch(draw: st.DrawFn, base: Signature) -> Signature:
    """A coverage sketch with one of the faults a crafted one may have."""
    v = base.values.astype(np.int64).tolist()
    n = len(v)
    t = v[4]
    entries = HEADER_WORDS + 2 * t
    kind = draw(st.integers(0, 9))
    if kind == 0:  # any word
        v[draw(st.integers(0, n - 1))] = draw(st.integers(0, 0xFFFFFFFF))
    elif kind == 1:  # a header word, to a value at an edge
        i = draw(st.integers(0, HEADER_WORDS - 1))
        v[i] = draw(st.sampled_from([0, 1, 15, 16, MAX_SAMPLE_SIZE + 1, 0xFFFFFFFF, v[i] + 1]))
    elif kind == 2:  # a per-type count field, then the totals made to agree (or not)
        if t:
            i = HEADER_WORDS + t + draw(st.integers(0, t - 1))
            shift = draw(st.sampled_from([0, 16, 24]))
            field = draw(st.sampled_from([0, 1, 2, 15, 16, 255]))
            v[i] = (v[i] & ~(0xFF << shift if shift else 0xFFFF)) | (field << shift)
            if draw(st.booleans()):
                v = _recount(v)
    elif kind == 3:  # an entry's flags, mask or fingerprint
        if entries < n:
            i = draw(st.integers(entries, n - 1))
            v[i] ^= draw(st.sampled_from([STARTS, 1, 1 << 14, 1 << 16, 1 << 31]))
    elif kind == 4:  # every entry a starting one
        v[entries:] = [e | STARTS for e in v[entries:]]
    elif kind == 5:
        v = v[: draw(st.integers(0, n - 1))]
    elif kind == 6:
        v = v + draw(st.lists(st.integers(0, 0xFFFFFFFF), min_size=1, max_size=8))
    elif kind == 7:  # out of order
        v = v[:HEADER_WORDS] + draw(st.permutations(v[HEADER_WORDS:]))
    elif kind == 8:  # a bound at or below the listed keys
        v[0] &= ~(1 << 8)
        v[3] = draw(st.sampled_from([0, 1, v[HEADER_WORDS + t - 1] if t else 0]))
    else:  # another shingle width
        v[0] = (v[0] & 0xFFFF) | (draw(st.sampled_from([1, 2, 3, 5, 33, 0xFFFF])) << 16)
    if kind == 1 and v[1:3] != base.values[1:3].tolist() and draw(st.booleans()):
        # the scheme id the crafted header claims, so the rule's profile check passes
        sid = scheme_for(v[1] & 0xFFFFFFFF, v[2] & 0xFFFFFFFF, RuleConfig().profile_id)
        return Signature(sid, _u32(v))
    return Signature(base.scheme_id, _u32(v))


@st.composite
def _coverage_set(draw: st.DrawFn) -> list[Signature]:
    sigs = list(_coverage())
    rows = draw(st.lists(st.sampled_from(sigs), min_size=1, max_size=6))
    for _ in range(draw(st.integers(1, 2))):
        i = draw(st.integers(0, len(rows) - 1))
        rows[i] = draw(_mutated_sketch(draw(st.sampled_from(sigs))))
    return rows


def _outcome(call: Any) -> Any:
    """The answer, or ``None`` for a neardup error (anything else fails the test)."""
    try:
        return call()
    except NearDupError:
        return None


# -- coverage sketches: result-set dedup and the estimate --------------------------------


@FUZZ
@given(_coverage_set())
def test_result_set_dedup_of_crafted_coverage_sketches(rows: list[Signature]) -> None:
    got = _outcome(lambda: ResultSetDeduper(max_entries=0)(rows))
    expected = _outcome(lambda: reference_dedup(rows))
    if got is not None:
        assert all(0 <= r <= i for i, r in enumerate(got))
        # The kernel reads the entries of the rows it compares only, so it may answer a set
        # the reference refuses; when both answer, they agree.
        if expected is not None:
            assert got == expected


@FUZZ
@given(st.data())
def test_estimate_of_crafted_coverage_sketches(data: st.DataObject) -> None:
    sigs = _coverage()
    a = data.draw(_mutated_sketch(data.draw(st.sampled_from(sigs))))
    b = data.draw(st.sampled_from([*sigs, a]))
    if a.scheme_id != b.scheme_id:
        return
    got = _outcome(lambda: estimate(a, b))
    if got is not None:
        assert layout_error(a.values) is None and layout_error(b.values) is None
        if (a.values[0] >> 16) == (b.values[0] >> 16):
            assert (got.found_a, got.eligible_a) == direction_counts_reference(a.values, b.values)
            assert (got.found_b, got.eligible_b) == direction_counts_reference(b.values, a.values)


@FUZZ
@given(st.data())
def test_signature_bytes_decode_or_are_refused(data: st.DataObject) -> None:
    sig = data.draw(st.sampled_from([*_coverage(), *_minhash(), *_sentences()]))
    raw = bytearray(sig.to_bytes())
    kind = data.draw(st.integers(0, 3))
    if kind == 0 and raw:
        raw[data.draw(st.integers(0, len(raw) - 1))] ^= 1 << data.draw(st.integers(0, 7))
    elif kind == 1:
        raw = raw[: data.draw(st.integers(0, len(raw)))]
    elif kind == 2:
        raw += data.draw(st.binary(min_size=1, max_size=16))
    else:  # a header field
        at = data.draw(st.sampled_from([4, 5, 6, 8 + len(sig.scheme_id)]))
        raw[at] = data.draw(st.integers(0, 255))
    try:
        decoded = Signature.from_bytes(bytes(raw))
    except SignatureFormatError:
        return
    assert decoded.to_bytes() == bytes(raw)


def test_a_coverage_sketch_declaring_a_huge_sample_is_refused() -> None:
    good = _coverage()[0]
    v = good.values.astype(np.int64).tolist()
    for sample_size, max_word_count in ((0xFFFFFFFF, 15), (0, 15), (64, 0), (64, 16)):
        v[1], v[2] = sample_size, max_word_count
        crafted = Signature(
            scheme_for(sample_size, max_word_count, RuleConfig().profile_id), _u32(v)
        )
        assert layout_error(crafted.values) is not None
        # The header once sized a table of needed matches: 30 GiB for the first one.
        with pytest.raises(SignatureFormatError, match="position 0"):
            ResultSetDeduper(max_entries=0)([crafted, crafted])


def test_a_sampled_coverage_sketch_lists_keys_below_its_bound_only() -> None:
    long_text = " ".join(f"word{i}" for i in range(300))
    good = sign(long_text)
    assert good.values[0] >> 8 & 1 == 0  # sampled, not complete: its bound applies
    assert layout_error(good.values) is None
    v = good.values.astype(np.int64).tolist()
    v[3] = v[HEADER_WORDS + v[4] - 1]  # the last listed key is not below it
    crafted = Signature(good.scheme_id, _u32(v))
    assert layout_error(crafted.values) is not None
    with pytest.raises(SignatureFormatError):
        estimate(crafted, good)
    # The compiled merge and the reference read such a sketch differently.
    with pytest.raises(SignatureFormatError):
        ResultSetDeduper(max_entries=0)([good, crafted])


def test_coverage_sketches_of_different_widths_are_refused() -> None:
    good = _coverage()[0]
    v = good.values.astype(np.int64).tolist()
    v[0] = (v[0] & 0xFFFF) | (3 << 16)
    other = Signature(good.scheme_id, _u32(v))
    assert layout_error(other.values) is None  # well-formed alone ...
    with pytest.raises(SignatureFormatError, match="position 1"):  # ... not beside the other
        ResultSetDeduper(max_entries=0)([good, other])
    with pytest.raises(SignatureFormatError):
        reference_dedup([good, other])
    with pytest.raises(SignatureFormatError, match="widths"):
        estimate(good, other)


# -- set sketches and the set similarities -------------------------------------------------


@st.composite
def _mutated_set(draw: st.DrawFn, base: Signature) -> Signature:
    v = base.values.astype(np.int64).tolist()
    kind = draw(st.integers(0, 5))
    if kind == 0 and v:
        v[draw(st.integers(0, len(v) - 1))] = draw(st.integers(0, 0xFFFFFFFF))
    elif kind == 1:
        v = v[: draw(st.integers(0, len(v)))]
    elif kind == 2:
        v = v + draw(st.lists(st.integers(0, 0xFFFFFFFF), min_size=1, max_size=40))
    elif kind == 3:
        v = draw(st.permutations(v))
    elif kind == 4 and v:
        v = [*v, v[-1]]  # a repeated value
    dtype = draw(st.sampled_from([np.uint32, np.uint64]))
    return Signature(base.scheme_id, np.array(v, dtype=dtype))


_KS = st.sampled_from([None, 1, 2, 8, 10**6, 10**12, 2**62, (1 << 63) - 1])


@FUZZ
@given(st.data(), _KS, st.sampled_from([None, 1e-9, 0.5, 1.0]))
def test_result_set_dedup_of_crafted_set_sketches(
    data: st.DataObject, k: int | None, threshold: float | None
) -> None:
    base = _sentences()
    rows = [data.draw(_mutated_set(s)) if data.draw(st.booleans()) else s for s in base]
    rows = data.draw(st.permutations(rows))
    got = _outcome(lambda: ResultSetDeduper(max_entries=0)(rows, threshold, k=k))
    if got is not None:
        assert got == reference_dedup(rows, threshold, k=k)


@FUZZ
@given(st.data(), _KS)
def test_set_similarities_of_crafted_sets(data: st.DataObject, k: int | None) -> None:
    base = _sentences()
    a = data.draw(_mutated_set(data.draw(st.sampled_from(base))))
    b = data.draw(st.sampled_from([*base, a]))
    k = k or 4
    full = _outcome(lambda: bottomk_jaccard(a, b, k))
    decided = _outcome(lambda: bottomk_at_least(a, b, 0.5, k))
    assert (full is None) == (decided is None)
    if full is not None:
        assert decided == (full >= 0.5)
    _outcome(lambda: jaccard(a, b))
    _outcome(lambda: containment(a, b))


def test_a_huge_k_needs_no_table_of_that_size() -> None:
    a, b = _sentences()[0], _sentences()[1]
    for k in (10**12, (1 << 63) - 1):
        # The table of needed matches was sized 2 * k: a MemoryError, or an IndexError.
        assert ResultSetDeduper(max_entries=0)([a, b, a], 0.5, k=k) == [0, 1, 0]
        assert bottomk_at_least(a, b, 0.5, k) == (bottomk_jaccard(a, b, k) >= 0.5)
    with pytest.raises(ConfigError):
        ResultSetDeduper(max_entries=0)([a, b], 0.5, k=1 << 63)


# -- the indexes: odd signatures and arrays ------------------------------------------------


@st.composite
def _odd_signature(draw: st.DrawFn, base: Signature) -> Signature:
    v = base.values.astype(object).tolist()
    kind = draw(st.integers(0, 3))
    if kind == 0:
        v = v[: draw(st.integers(0, len(v)))]
    elif kind == 1:
        v = v + draw(st.lists(st.integers(0, 2**64 - 1), min_size=1, max_size=200))
    elif kind == 2:
        v[draw(st.integers(0, len(v) - 1))] = draw(st.integers(0, 2**64 - 1))
    dtype = draw(st.sampled_from([np.uint64, np.uint32]))
    if dtype is np.uint32:
        v = [x & 0xFFFFFFFF for x in v]
    scheme = draw(st.sampled_from([base.scheme_id, base.scheme_id + "x"]))
    return Signature(scheme, np.array(v, dtype=dtype))


_ARRAYS = st.sampled_from(
    [
        np.zeros((2, 1), dtype=np.uint64),
        np.zeros((3, 64), dtype=np.uint64),
        np.zeros((1, 200), dtype=np.uint64),
        np.zeros(128, dtype=np.uint64),
        np.zeros((2, 128), dtype=np.int64),
        np.zeros((2, 128), dtype=np.float64),
        np.zeros((2, 128), dtype=">u8"),
        np.zeros((2, 2), dtype=np.uint64)[:, :1],
    ]
)


@functools.cache
def _lsh() -> LSHIndex:
    index = LSHIndex()
    for i, s in enumerate(_minhash()):
        index.add(i, s)
    return index


@FUZZ
@given(st.data(), _ARRAYS)
def test_lsh_index_with_odd_signatures(data: st.DataObject, array: Any) -> None:
    index = _lsh()
    base = data.draw(st.sampled_from(_minhash()))
    q = data.draw(_odd_signature(base))
    well_formed = q.scheme_id == base.scheme_id and q.values.dtype == np.uint64 and len(q) == 128
    got = _outcome(lambda: index.query(q))
    assert (got is not None) == well_formed
    if well_formed:
        assert got == index.query(q, min_score=0.0, limit=10)
    assert (_outcome(lambda: index.query_many([q])) is not None) == well_formed
    assert (_outcome(lambda: index.query_keys(q, 0.5)) is not None) == well_formed
    for call in (index.candidate_rows, index.query_many):
        got_rows = _outcome(lambda: call(array))  # noqa: B023 - called at once
        if got_rows is not None:
            assert array.shape[-1:] == (128,) and array.dtype == np.uint64
    accepted = q.values.dtype == np.uint64 and len(q) == 128  # an empty index takes any scheme
    assert (_outcome(lambda: LSHIndex().add("k", q) or True) is not None) == accepted


@functools.cache
def _hamming() -> HammingIndex:
    index = HammingIndex()
    for i, s in enumerate(_simhash()):
        index.add(i, s)
    return index


@FUZZ
@given(
    st.data(),
    st.sampled_from(
        [
            np.array([1, 2], dtype=np.uint64),
            np.array([1, 2], dtype=np.int64),
            np.array([-1], dtype=np.int64),
            np.array([[1]], dtype=np.uint64),
            np.array([1.5]),
            np.array([1, 2], dtype=">u8"),
            np.array([5, 6, 7, 8], dtype=np.uint64)[::2],
        ]
    ),
    st.integers(-2, 70),
)
def test_hamming_index_with_odd_fingerprints(
    data: st.DataObject, array: Any, distance: int
) -> None:
    index = _hamming()
    base = data.draw(st.sampled_from(_simhash()))
    q = data.draw(_odd_signature(base))
    got = _outcome(lambda: index.query(q))
    if got is not None:
        assert q.values.dtype == np.uint64 and len(q) == 1
        assert got == index.query(int(q.values[0]))
    rows = _outcome(lambda: index.query_rows(array, distance))
    if rows is not None:
        assert 0 <= distance < len(index.config.layout)
        fps = array.astype(np.uint64)
        brute = {
            (i, r, int(np.bitwise_count(fps[i] ^ np.uint64(index.get(r)))))
            for i in range(fps.shape[0])
            for r in range(len(index))
            if int(np.bitwise_count(fps[i] ^ np.uint64(index.get(r)))) <= distance
        }
        assert set(zip(*(x.tolist() for x in rows), strict=True)) == brute


def test_lsh_candidate_rows_checks_the_array() -> None:
    index = _lsh()
    # Narrower rows were read past their end by the compiled lookup.
    with pytest.raises(NearDupError):
        index.candidate_rows(np.zeros((3, 64), dtype=np.uint64))
    qs, rows = index.candidate_rows(np.stack([s.values for s in _minhash()]))
    assert sorted(zip(qs.tolist(), rows.tolist(), strict=True)) == [(i, i) for i in range(4)]


def test_hamming_query_rows_checks_its_input() -> None:
    index = _hamming()
    with pytest.raises(NearDupError):
        index.query_rows(np.array([1.5]), 3)  # was a numba typing error
    with pytest.raises(NearDupError):
        index.query_rows(np.array([1], dtype=np.uint64), 64)


# -- the indexes: crafted files ------------------------------------------------------------


def _saved(tmp_path: Path, kind: str) -> tuple[Path, bytes]:
    path = tmp_path / kind
    if kind == "lsh":
        index: LSHIndex | HammingIndex = LSHIndex()
        for i, s in enumerate(_minhash()):
            index.add(f"k{i}", s)
    else:
        index = HammingIndex()
        for i, s in enumerate(_simhash()):
            index.add(f"k{i}", s)
    index.save(path)
    return path, (b"NDLSHIDX" if kind == "lsh" else b"NDHAMIDX")


_FIELD_VALUES = st.sampled_from([-1, 0, 3, 10**20, "abc", None, [1], {"a": 1}, 1.5, True])
_DTYPES = st.sampled_from(["<f8", "<i8", "<u4", "|u1", "<U2", "|b1", "<c16", "|S3", "<m8"])


@settings(FUZZ, max_examples=80)
@given(st.data(), st.sampled_from(["lsh", "hamming"]))
def test_index_files_with_crafted_contents(tmp_path: Path, data: st.DataObject, kind: str) -> None:
    path, magic = _saved(tmp_path, kind)
    meta, arrays = read_index_file(path, magic)
    meta = json.loads(json.dumps(meta))
    arrays = {name: a.copy() for name, a in arrays.items()}
    name = data.draw(st.sampled_from(sorted(arrays)))
    change = data.draw(st.integers(0, 4))
    if change == 0:
        field = data.draw(st.sampled_from(sorted(meta)))
        meta[field] = data.draw(_FIELD_VALUES)
    elif change == 1:
        field = data.draw(st.sampled_from(sorted(meta["config"])))
        meta["config"][field] = data.draw(_FIELD_VALUES)
    elif change == 2:
        arrays[name] = arrays[name].astype(data.draw(_DTYPES))
    elif change == 3:
        arrays[name] = arrays[name].reshape(-1)[:-1]
    else:
        del arrays[name]
    crafted = tmp_path / "crafted"
    try:  # a valid checksum: only the contents are wrong
        write_index_file(crafted, magic, meta, arrays)
    except (TypeError, ValueError):
        return  # not writable as an index file at all
    cls = LSHIndex if kind == "lsh" else HammingIndex
    try:
        index = cls.load(crafted)
    except StoreError:
        return
    for key in index.keys():  # noqa: SIM118 - the index's own listing
        index.get(key)
    # A loaded index answers, or refuses a query of another scheme than the one it holds.
    _outcome(lambda: index.query(_minhash()[0] if kind == "lsh" else _simhash()[0]))
    index.compact()


def _rewrite(path: Path, magic: bytes, **changes: Any) -> None:
    meta, arrays = read_index_file(path, magic)
    meta = json.loads(json.dumps(meta))
    arrays = {name: a.copy() for name, a in arrays.items()}
    for name, value in changes.items():
        if name in arrays:
            arrays[name] = value
        else:
            meta[name] = value
    write_index_file(path, magic, meta, arrays)


@pytest.mark.parametrize("kind", ["lsh", "hamming"])
@pytest.mark.parametrize(
    "changes",
    [
        {"key_offsets": np.array([0, 1, 2], dtype=np.float64)},  # was a TypeError
        {"key_offsets": np.array([0, 2, 1, 99], dtype=np.uint64)},
        {"key_bytes": np.frombuffer(b"\xff\xfe\xc0k0k1k2k3"[:8], dtype=np.uint8)},  # not UTF-8
        {"key_kind": "int"},  # was a KeyError: no key_ints array
        {"scheme_id": [1]},  # was an AttributeError on get()
        {"table_rows": np.zeros((1, 4), dtype="<U2")},  # was a ValueError
    ],
)
def test_index_files_with_malformed_parts_are_refused(
    tmp_path: Path, kind: str, changes: dict[str, Any]
) -> None:
    path, magic = _saved(tmp_path, kind)
    _rewrite(path, magic, **changes)
    cls = LSHIndex if kind == "lsh" else HammingIndex
    with pytest.raises(StoreError):
        cls.load(path)


@pytest.mark.parametrize("kind", ["lsh", "hamming"])
def test_index_file_with_a_count_that_is_not_a_number_is_refused(tmp_path: Path, kind: str) -> None:
    path, magic = _saved(tmp_path, kind)
    _rewrite(path, magic, **{"documents" if kind == "lsh" else "rows": "abc"})
    with pytest.raises(StoreError):  # was a ValueError from int()
        (LSHIndex if kind == "lsh" else HammingIndex).load(path)


def _hamming_file(tmp_path: Path, n: int = 300) -> tuple[Path, HammingIndex]:
    rng = np.random.default_rng(5)
    fps = rng.integers(0, 2**63, size=n, dtype=np.uint64)
    fps[1::7] = fps[0::7][: fps[1::7].shape[0]] ^ np.uint64(0b101)  # some near neighbours
    index = HammingIndex(max_distance=3)
    index.add_many([f"k{i}" for i in range(n)], fps)
    path = tmp_path / "hamming"
    index.save(path)
    return path, index


@pytest.mark.parametrize("edit", ["key", "row", "order"])
def test_hamming_file_whose_tables_do_not_index_its_fingerprints_is_refused(
    tmp_path: Path, edit: str
) -> None:
    path, index = _hamming_file(tmp_path)
    probe = np.array([int(index.get(f"k{i}")) for i in range(0, 300, 7)], dtype=np.uint64)
    assert HammingIndex.load(path).query_many(probe) == index.query_many(probe)
    _, arrays = read_index_file(path, b"NDHAMIDX")
    keys, rows = arrays["table_keys"].copy(), arrays["table_rows"].copy()
    if edit == "key":  # a key that is no row's fingerprint: a query would trust it
        keys[1, 100] ^= np.uint64(1)
    elif edit == "row":  # one row listed twice, another never
        rows[0, 10] = rows[0, 11]
    else:  # two rows swapped along with their keys: every key is right, the order is not
        keys[2, [0, -1]] = keys[2, [-1, 0]]
        rows[2, [0, -1]] = rows[2, [-1, 0]]
    _rewrite(path, b"NDHAMIDX", table_keys=keys, table_rows=rows)
    with pytest.raises(StoreError, match="damaged Hamming index"):
        HammingIndex.load(path)
