"""``NewsIndex.dedup`` (result-set dedup of stored ids), ``kept_of`` and the public records
of ``NewsIndex``, each against an oracle.

Oracles: :func:`dedup_result_set` on the signatures of the stored texts (``neardup.sign``),
a brute-force walk of the pointers for :func:`kept_of`, the store's own rows for the
:class:`~neardup.api.Event` records.
"""

from __future__ import annotations

import datetime as dt
import warnings
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.api import Event, NewsIndex, engine_of, sizes_of
from neardup.detect import kept_of
from neardup.detect.resultset import dedup_result_set
from neardup.detect.stored import SignatureCache, StoredResultSets, stored_sketch
from neardup.errors import ConfigError, InputTypeError, NotFoundError
from neardup.records import Article
from neardup.sketch import sign


def stored_docs(reuters_docs: list[dict[str, Any]], n: int) -> list[dict[str, Any]]:
    """``n`` Reuters articles with text, and an edited copy after every tenth."""
    docs = [
        {k: d[k] for k in ("id", "text", "title", "date") if d.get(k) is not None}
        for d in reuters_docs
        if d["text"].strip()
    ][:n]
    copies = [
        {**d, "id": f"copy-{d['id']}", "text": d["text"] + " Reuters adds detail."}
        for d in docs[::10]
    ]
    return docs + copies


@pytest.fixture(scope="module")
def news(tmp_path_factory: pytest.TempPathFactory, reuters_docs: list[dict[str, Any]]) -> Any:
    folder = tmp_path_factory.mktemp("api-dedup")
    docs = stored_docs(reuters_docs, 80)
    with NewsIndex(str(folder / "news.db"), checkpoint=None, signature_cache=1000) as index:
        index.ingest_many(docs)
        yield index, {d["id"]: d["text"] for d in docs}


def oracle(signatures: list[Any], threshold: float | None) -> list[int]:
    if threshold is None:
        return dedup_result_set(signatures)
    return dedup_result_set(signatures, threshold)


def rankings(ids: list[str]) -> list[list[str]]:
    """A few rankings that put copies near and far from their originals."""
    return [ids, ids[::-1], ids[7:] + ids[:7], sorted(ids)[:40]]


@pytest.mark.parametrize("threshold", [None, 0.3, 0.5, 1.0])
def test_dedup_of_stored_ids_equals_the_library_on_the_stored_texts(
    news: Any, threshold: float | None
) -> None:
    index, texts = news
    scheme = "coverage" if threshold is None else "sentences"
    for ranked in rankings(list(texts)):
        sigs = [sign(texts[i], scheme) for i in ranked]
        expected = oracle(sigs, threshold)
        assert index.dedup(ranked, threshold) == expected
        # every signature is now held: the cached answer is the same, without the store
        assert index.dedup_cached(ranked, threshold) == expected
    if threshold is None:  # the planted copies are found by the rule
        positions = index.dedup(list(texts))
        ids = list(texts)
        dropped = {ids[i] for i, p in enumerate(positions) if p != i}
        assert {i for i in ids if i.startswith("copy-")} <= dropped


def test_dedup_mixes_stored_ids_and_texts_signed_now(news: Any) -> None:
    index, texts = news
    ids = list(texts)[:30]
    fresh = Article(id="fresh", text=texts[ids[4]] + " An editor's line.")
    items: list[str | Article] = [*ids[:10], fresh, *ids[10:]]
    for threshold in (None, 0.5):
        scheme = "coverage" if threshold is None else "sentences"
        sigs = [sign(i.text if isinstance(i, Article) else texts[i], scheme) for i in items]
        expected = oracle(sigs, threshold)
        assert index.dedup(items, threshold) == expected
    assert index.dedup([fresh]) == [0] and index.dedup([]) == []
    with pytest.raises(NotFoundError, match="fresh"):
        index.dedup(["fresh"])  # a text item is never stored
    with pytest.raises(InputTypeError, match="one string"):
        index.dedup(ids[0])
    with pytest.raises(InputTypeError, match="one string"):
        index.dedup_cached(ids[0])
    with pytest.raises(InputTypeError, match=r"items\[1\]"):
        index.dedup([ids[0], 7])  # type: ignore[list-item]


def test_dedup_names_unknown_ids_and_the_cache_never_changes_an_answer(
    tmp_path: Path, reuters_docs: list[dict[str, Any]]
) -> None:
    docs = stored_docs(reuters_docs, 30)
    texts = {d["id"]: d["text"] for d in docs}
    ids = list(texts)
    expected = dedup_result_set([sign(texts[i]) for i in ids])
    with NewsIndex(str(tmp_path / "none.db"), checkpoint=None, signature_cache=0) as uncached:
        uncached.ingest_many(docs)
        assert uncached.dedup_cached(ids) is None
        assert uncached.dedup(ids) == expected
        assert uncached.dedup_cached(ids) is None  # nothing is held
        with pytest.raises(NotFoundError, match="'nope-1', 'nope-2'"):
            uncached.dedup([ids[0], "nope-1", "nope-2"])
    with NewsIndex(str(tmp_path / "small.db"), checkpoint=None, signature_cache=5) as small:
        small.ingest_many(docs)
        assert small.dedup(ids) == expected  # more ids than the cache holds
        assert sizes_of(small)["signature_cache_entries"] == 5
        assert small.dedup_cached(ids) is None
        held = sorted(ids)[-5:]  # missing ids are read and cached in sorted order
        assert small.dedup_cached(held) == dedup_result_set([sign(texts[i]) for i in held])
    with pytest.raises(ConfigError):
        NewsIndex(":memory:", checkpoint=None, signature_cache=-1)


def test_stored_sketch_uses_the_stored_signature_of_the_scheme(news: Any) -> None:
    index, texts = news
    store = engine_of(index).store
    row = store.get(next(iter(texts)))
    assert row is not None
    for scheme in ("coverage", "sentences"):
        assert stored_sketch(row, scheme).digest() == sign(row.text, scheme).digest()
    sets = StoredResultSets(store, capacity=2)
    assert sets.cached == 0
    sets.signatures([row.id], "sentences")
    sets.signatures([row.id], "coverage")
    assert sets.cached == 2


def test_signature_cache_is_first_in_first_out_and_bounded() -> None:
    cache = SignatureCache(2)
    a, b, c = (sign(t) for t in ("One text here.", "Another one.", "A third."))
    cache.put("a", a)
    cache.put("b", b)
    cache.put("c", c)
    assert len(cache) == 2 and cache.lookup(["a", "b", "c"]) == [None, b, c]
    empty = SignatureCache(0)
    empty.put("a", a)
    assert len(empty) == 0
    with pytest.raises(ConfigError):
        SignatureCache(-1)


# --- kept_of -------------------------------------------------------------------------------


def kept_oracle(positions: list[int], i: int) -> int:
    """Follow the pointer from ``i`` until it stops pointing back (recursive form)."""
    j = positions[i]
    if positions[j] == j or positions[j] > j:
        return j
    return kept_oracle(positions, j)


@st.composite
def answers(draw: st.DrawFn) -> list[int]:
    """Arrays shaped like ``dedup_result_set`` answers: ``p[i] <= i``."""
    n = draw(st.integers(0, 40))
    return [draw(st.integers(0, i)) for i in range(n)]


@settings(max_examples=300, deadline=None)
@given(answers())
def test_kept_of_follows_every_chain_to_a_kept_item(positions: list[int]) -> None:
    kept = kept_of(positions)
    assert kept == [kept_oracle(positions, i) for i in range(len(positions))]
    for i, k in enumerate(kept):
        assert k <= i and positions[k] == k  # a kept item, ranked no lower


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 9), min_size=10, max_size=10))
def test_kept_of_ends_on_any_pointer_array(positions: list[int]) -> None:
    assert kept_of(positions) == [kept_oracle(positions, i) for i in range(10)]


def test_kept_of_groups_a_real_answer(news: Any) -> None:
    index, texts = news
    ids = list(texts)
    positions = index.dedup(ids, 0.3)
    kept = kept_of(positions)
    assert kept == [kept_oracle(positions, i) for i in range(len(ids))]
    assert kept_of([0, 0, 1, 3, 2]) == [0, 0, 0, 3, 0]


# --- the public records of NewsIndex ---------------------------------------------------------


def burst(n: int = 20) -> list[dict[str, Any]]:
    """``n`` rewrites of one story ten minutes apart: enough to open an event."""
    t0 = dt.datetime(1987, 3, 2, 9, tzinfo=dt.UTC)
    base = (
        "A strong earthquake struck the coastal region early on Monday, officials said. "
        "Rescue teams searched collapsed buildings for survivors as aftershocks continued. "
    )
    return [
        {
            "id": f"quake-{i}",
            "text": base + f"Report {i} from the scene: crews worked through the night {i}.",
            "title": "Strong quake hits coast",
            "date": (t0 + dt.timedelta(minutes=10 * i)).isoformat(),
            "source": f"wire-{i % 4}",
        }
        for i in range(n)
    ]


def test_events_are_public_records_matching_the_store(tmp_path: Path) -> None:
    with NewsIndex(str(tmp_path / "events.db"), checkpoint=None) as index:
        index.ingest_many(burst())
        events = index.events()
        assert events and all(type(e) is Event for e in events)
        rows = engine_of(index).events()
        assert [e.id for e in events] == [r.id for r in rows]
        for event, row in zip(events, rows, strict=True):
            report = index.event(event.id)
            assert event.opened_by == row.opened_by
            opened = dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(
                microseconds=row.opened_at_us
            )
            assert event.opened_at == opened and event.opened_at.tzinfo is not None
            assert event.title == report.title and event.articles == len(report.articles)
            assert event.sources == len(report.sources)
            with pytest.warns(DeprecationWarning, match="opened_at"):
                assert event.opened_at_us == row.opened_at_us
        assert index.events(since="1990-01-01") == []


def test_the_engine_is_private_with_a_deprecation_path(tmp_path: Path) -> None:
    with NewsIndex(str(tmp_path / "s.db"), checkpoint=None) as index:
        with pytest.warns(DeprecationWarning, match="NewsIndex.stream"):
            engine = index.stream
        assert engine is engine_of(index)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            index.events()
            index.dedup([])
