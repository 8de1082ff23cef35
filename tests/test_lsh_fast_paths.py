"""LSHIndex single-call and growth paths against brute force: adds one by one across many
growths of the signature map, removes, compaction, strided queries, batch ranking, files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from neardup.index import LSHIndex
from neardup.sketch.base import Signature

SCHEME = "minhash/v1:test"


def brute(sigs: np.ndarray, keys: list[Any], q: np.ndarray, bands: int, rows: int) -> list[Any]:
    """Candidates = rows sharing at least one whole band with ``q``; score = equal share."""
    eq = sigs == q
    hit = eq[:, : bands * rows].reshape(len(keys), bands, rows).all(axis=2).any(axis=1)
    scores = eq.mean(axis=1)
    return sorted(
        ((keys[i], float(scores[i])) for i in np.flatnonzero(hit)), key=lambda t: (-t[1], t[0])
    )


def corpus(n: int, num_perm: int, seed: int) -> np.ndarray:
    """Random signatures, a third of them near copies of earlier ones (shared bands, chains)
    and some exact duplicates (long chains)."""
    rng = np.random.default_rng(seed)
    sigs = rng.integers(0, 2**64 - 1, size=(n, num_perm), dtype=np.uint64, endpoint=True)
    for i in range(1, n):
        if i % 3 == 0:
            src = sigs[rng.integers(0, i)]
            keep = rng.random(num_perm) < rng.uniform(0.5, 1.0)
            sigs[i] = np.where(keep, src, sigs[i])
        elif i % 17 == 0:
            sigs[i] = sigs[i - 1]
    return sigs


def test_one_by_one_growth_removal_and_queries_equal_brute_force() -> None:
    num_perm, bands, rows = 32, 8, 4
    sigs = corpus(3_000, num_perm, seed=40)
    index = LSHIndex(num_perm=num_perm, bands=bands, rows=rows, buffer_size=32)
    for i in range(sigs.shape[0]):  # many doublings of the rows, the tables and the map
        index.add(i, Signature(SCHEME, sigs[i]))
    removed = set(range(0, 3_000, 7))
    for k in sorted(removed):
        index.remove(k)
    live = [k for k in range(3_000) if k not in removed]
    rng = np.random.default_rng(41)
    probes = [sigs[i] for i in range(0, 3_000, 37)]
    probes += [np.where(rng.random(num_perm) < 0.8, p, 0).astype(np.uint64) for p in probes]
    expected = [brute(sigs[live], live, p, bands, rows) for p in probes]
    assert [index.query(Signature(SCHEME, p)) for p in probes] == expected
    assert index.query_many(np.array(probes)) == expected
    assert index.query_many(np.array(probes), limit=2) == [e[:2] for e in expected]
    for p, e in zip(probes, expected, strict=True):
        assert sorted(index.query_keys(Signature(SCHEME, p))) == sorted(k for k, _ in e)
        assert index.query(Signature(SCHEME, p), min_score=0.7) == [t for t in e if t[1] >= 0.7]
    more = corpus(500, num_perm, seed=42)
    for i in range(500):  # adds after removals and compactions
        index.add(10_000 + i, Signature(SCHEME, more[i]))
    everything = np.concatenate([sigs[live], more])
    keys = live + list(range(10_000, 10_500))
    for p in probes[:20]:
        assert index.query(Signature(SCHEME, p)) == brute(everything, keys, p, bands, rows)


def test_strided_and_held_views_stay_correct() -> None:
    """A signature made from a strided read-only view holds contiguous values (the layout the
    compiled query reads) and gets the same answer; an outside view of the index's
    signatures makes growth copy instead of move."""
    sigs = corpus(600, 16, seed=43)
    index = LSHIndex(num_perm=16, bands=4, rows=4)
    index.add_many(list(range(300)), sigs[:300])
    wide = np.repeat(sigs[:50], 2, axis=1)[:, ::2]  # equal values, stride 16 bytes
    wide.flags.writeable = False
    held = index._values  # an outside view of the map: it cannot move
    for i in range(300, 600):
        index.add(i, Signature(SCHEME, sigs[i]))
    assert held[:300].tolist() == sigs[:300].tolist()
    for i in range(50):
        strided = Signature(SCHEME, wide[i])
        assert strided.values.flags.c_contiguous and not strided.values.flags.writeable
        assert index.query(strided) == index.query(Signature(SCHEME, sigs[i].copy()))
        assert index.query(strided) == brute(sigs, list(range(600)), sigs[i], 4, 4)


def test_file_of_grown_index_equals_bulk_built(tmp_path: Path) -> None:
    sigs = corpus(1_500, 32, seed=44)
    one_by_one = LSHIndex(num_perm=32, bands=8, rows=4)
    for i in range(1_500):
        one_by_one.add(i, Signature(SCHEME, sigs[i]))
    bulk = LSHIndex(num_perm=32, bands=8, rows=4)
    bulk.add_many(list(range(1_500)), [Signature(SCHEME, s) for s in sigs])
    one_by_one.save(tmp_path / "a.idx")
    bulk.save(tmp_path / "b.idx")
    assert (tmp_path / "a.idx").read_bytes() == (tmp_path / "b.idx").read_bytes()
    loaded = LSHIndex.load(tmp_path / "a.idx")
    for i in range(0, 1_500, 50):
        q = Signature(SCHEME, sigs[i])
        assert loaded.query(q) == bulk.query(q) == brute(sigs, list(range(1_500)), sigs[i], 8, 4)


def test_pickle_and_deepcopy_keep_answers() -> None:
    import copy
    import pickle

    sigs = corpus(800, 16, seed=45)
    index = LSHIndex(num_perm=16, bands=4, rows=4)
    for i in range(600):
        index.add(i, Signature(SCHEME, sigs[i]))
    probes = [Signature(SCHEME, s) for s in sigs[::40]]
    expected = [index.query(p) for p in probes]
    for twin in (pickle.loads(pickle.dumps(index)), copy.deepcopy(index)):
        assert [twin.query(p) for p in probes] == expected
        for i in range(600, 800):  # grows again, from the plain array it was given
            twin.add(i, Signature(SCHEME, sigs[i]))
        keys = list(range(800))
        assert [twin.query(p) for p in probes] == [
            brute(sigs, keys, p.values, 4, 4) for p in probes
        ]
    assert [index.query(p) for p in probes] == expected  # the original is untouched


def test_queries_between_adds_removes_and_growth_equal_brute_force() -> None:
    """A query after every change (the compiled code's arrays are bound once and must follow
    every growth of the signatures and the tables, compaction and reload), with layouts of
    few and of many bands (the lookups' work space in the output buffer, or its own)."""
    for num_perm, bands, rows in ((16, 4, 4), (48, 40, 1), (64, 32, 2)):
        sigs = corpus(1_200, num_perm, seed=46 + bands)
        index = LSHIndex(num_perm=num_perm, bands=bands, rows=rows, buffer_size=8)
        live: list[int] = []
        rng = np.random.default_rng(bands)
        for i in range(1_200):
            index.add(i, Signature(SCHEME, sigs[i]))
            live.append(i)
            if i % 5 == 4:
                gone = live.pop(int(rng.integers(0, len(live))))
                index.remove(gone)
            if i % 3 == 0 or i < 40:
                j = int(rng.integers(0, i + 1))
                expected = brute(sigs[live], live, sigs[j], bands, rows)
                assert index.query(Signature(SCHEME, sigs[j])) == expected
        index.compact()
        q = Signature(SCHEME, sigs[live[-1]])
        assert index.query(q) == brute(sigs[live], live, sigs[live[-1]], bands, rows)


def test_query_inputs_checked_before_the_compiled_code() -> None:
    """Values the compiled code must not see (another dtype or length, two dimensions,
    another scheme) raise; equal values in any layout answer alike."""
    import pytest

    from neardup.errors import SchemeMismatchError

    sigs = corpus(300, 16, seed=50)
    index = LSHIndex(num_perm=16, bands=4, rows=4)
    index.add_many(list(range(300)), [Signature(SCHEME, s) for s in sigs])
    expected = brute(sigs, list(range(300)), sigs[7], 4, 4)
    assert index.query(Signature(SCHEME, sigs[7])) == expected
    held = sigs[7].copy()
    held.flags.writeable = False  # kept as given (no copy)
    assert index.query(Signature(SCHEME, held)) == expected
    with pytest.raises(SchemeMismatchError):
        index.query(Signature(SCHEME, sigs[7].astype(np.uint32)))
    with pytest.raises(SchemeMismatchError):
        index.query(Signature(SCHEME, sigs[7][:8]))
    with pytest.raises(SchemeMismatchError):
        index.query(Signature("minhash/v1:other", sigs[7]))
    for _ in range(3):  # the usual path after the general one, and back
        assert index.query(Signature(SCHEME, sigs[7])) == expected
        assert index.query(Signature(SCHEME, sigs[7]), min_score=0.5) == [
            t for t in expected if t[1] >= 0.5
        ]
        assert index.query(Signature(SCHEME, sigs[7]), limit=1) == expected[:1]


def test_adds_of_strided_views_equal_brute_force() -> None:
    """Adds held back and stored together take the same values whether each signature is
    contiguous or a strided read-only view, in any mix within one stored block."""
    sigs = corpus(700, 16, seed=44)
    wide = np.repeat(sigs, 2, axis=1)[:, ::2]  # equal values, stride 16 bytes
    wide.flags.writeable = False
    index = LSHIndex(num_perm=16, bands=4, rows=4, buffer_size=32)
    for i in range(700):
        index.add(i, Signature(SCHEME, wide[i] if i % 5 == 0 or i >= 600 else sigs[i]))
    assert index.get(599).values.tolist() == sigs[599].tolist()
    for i in range(0, 700, 7):
        assert index.query(Signature(SCHEME, sigs[i])) == brute(
            sigs, list(range(700)), sigs[i], 4, 4
        )
