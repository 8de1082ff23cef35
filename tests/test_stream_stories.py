"""The story component of the news stream: events decided at ingest are stored, replayed
from the log and checkpoint alike, reported with copies apart; similar() and its edges."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from neardup.api import NewsIndex, engine_of
from neardup.detect.story import StoryDesk
from neardup.detect.stream import NewsStream, StreamConfig
from neardup.errors import InputError, NotFoundError, StoreError
from neardup.records import Article
from neardup.store import open_store
from test_story import WORDS, burst_stream


def as_docs(arts: list[Article]) -> list[dict[str, object]]:
    return [
        {
            "id": a.id,
            "text": a.text,
            "title": a.title,
            "date": a.date.isoformat() if a.date else None,
            "source": a.source,
        }
        for a in arts
    ]


def with_copies(arts: list[Article]) -> list[Article]:
    """The burst plus a verbatim reprint of two of its reports by other sites."""
    quake = [a for a in arts if a.id.startswith("quake")]
    out = list(arts)
    for n, src in enumerate(quake[3:5]):
        date = src.date + dt.timedelta(minutes=2)  # type: ignore[operator]
        out.append(Article(f"reprint{n}", src.text, src.title, date, f"mirror{n}"))
    return sorted(out, key=lambda a: (a.date, a.id))


def test_stream_opens_the_burst_event_and_reports_it(tmp_path: Path) -> None:
    arts = with_copies(burst_stream(11))
    with NewsIndex(str(tmp_path / "e.db")) as news:
        results = news.ingest_many(as_docs(arts), batch_size=40)
        assert all(not isinstance(r, Exception) for r in results)
        events = news.events()
        assert len(events) == 1
        report = news.event(events[0].id)
        ids = [a.id for a in report.articles]
        assert all(i.startswith(("quake", "reprint")) for i in ids) and len(ids) >= 25
        assert report.title == "Strong quake tremor hits, rescuers search rubble"
        assert report.first_publisher == report.articles[0].source
        copies = {a.id: a.copy_of for a in report.articles if a.kind == "copy"}
        assert {"reprint0", "reprint1"} <= set(copies)
        assert report.copies == len(copies) and report.independent == len(ids) - 1 - len(copies)
        plain = report.to_dict()
        assert plain["opened_at"] and plain["articles"][0]["date"]
        # The store agrees with the detector: every member points at the event.
        stored = {r.id for r in engine_of(news).store.event_articles(events[0].id)}
        assert stored == set(ids)
        assert engine_of(news).consistency_errors() == []
        # similar(): the reprint of a report is a duplicate in its group, not repeated.
        assert news.duplicates("reprint0") == ["quake3"]
        items = news.similar("quake3", 20)
        assert items and "reprint0" not in {m.id for m in items}
        assert {m.verdict for m in items} <= {"partial", "similar", "duplicate"}
        assert all(m.id.startswith(("quake", "reprint")) for m in items)
        with pytest.raises(NotFoundError):
            news.event("no-such-event")
        with pytest.raises(NotFoundError):
            news.similar("no-such-id")
        with pytest.raises(InputError):
            news.similar("quake3", -1)
        assert news.similar("quake3", 0) == []


@pytest.mark.parametrize("mode", ["log", "checkpoint"])
def test_restart_rebuilds_the_same_story_state(tmp_path: Path, mode: str) -> None:
    arts = with_copies(burst_stream(12))
    docs = as_docs(arts)
    cfg = StreamConfig()
    whole = NewsStream(open_store(str(tmp_path / "whole.db")), cfg)
    want = [r.to_dict() for r in whole.ingest_many(docs)]  # type: ignore[union-attr]
    want_state = whole._state.stories.snapshot()
    whole.close()
    ckpt = tmp_path / "part.ckpt.npz"
    part = NewsStream(open_store(str(tmp_path / "part.db")), cfg, checkpoint_path=ckpt)
    got = [r.to_dict() for r in part.ingest_many(docs[:310])]  # type: ignore[union-attr]
    part.close()  # checkpoints
    if mode == "log":
        ckpt.unlink()
    part = NewsStream(open_store(str(tmp_path / "part.db")), cfg, checkpoint_path=ckpt)
    assert part.stats["restored_from_checkpoint"] == (mode == "checkpoint")
    got += [r.to_dict() for r in part.ingest_many(docs[310:])]  # type: ignore[union-attr]
    assert got == want
    assert part._state.stories.snapshot() == want_state
    assert part.consistency_errors() == []
    part.close()


def test_undated_and_tables_do_not_count_toward_events(tmp_path: Path) -> None:
    arts = burst_stream(13)
    undated = [Article(a.id, a.text, a.title, None, a.source) for a in arts]
    with NewsIndex(str(tmp_path / "u.db")) as news:
        news.ingest_many(as_docs(undated))
        assert news.events() == []
        assert news.similar("quake5", 5)  # indexed all the same
    table = "Shr 1.20 dlrs vs 1.05 dlrs Net 12.5 mln vs 10.1 mln Revs 150.2 mln vs 130.4 mln"
    t0 = dt.datetime(2024, 5, 1, tzinfo=dt.UTC)
    tables = [
        Article(
            f"t{n}", f"{table} Qtr {n} {WORDS[n % 5]}", None, t0 + dt.timedelta(minutes=n), f"s{n}"
        )
        for n in range(40)
    ]
    with NewsIndex(str(tmp_path / "t.db")) as news:
        news.ingest_many(as_docs(tables))
        assert news.events() == []
        assert engine_of(news).consistency_errors() == []


def test_merge_resolves_and_survives_state_round_trip() -> None:
    """Two events on one story merge into the older; the merged id resolves to it, and the
    state (checkpoint arrays) gives the same detector."""
    desk = StoryDesk()
    arts = burst_stream(14)
    for a in arts:
        desk.ingest(a)
    event = desk.events()[0]
    members = list(event.members)
    # Split the event by hand into two, then merge them back.
    other = members[len(members) // 2]
    for key in members[len(members) // 2 :]:
        desk.set_member(key, other)
    assert {e.id for e in desk.events()} == {event.id, other}
    moved = desk.merge(event.id, other)
    assert len(moved) == len(members) - len(members) // 2
    assert desk.resolve(other) == event.id and desk.event(other).id == event.id
    meta, arrays = desk.state()
    back = StoryDesk.from_state(meta, arrays, desk.config)
    assert back.snapshot() == desk.snapshot() and back.resolve(other) == event.id
    with pytest.raises(StoreError):
        desk.merge(event.id, "no-such-event")
    with pytest.raises(NotFoundError):
        desk.resolve("no-such-event")
