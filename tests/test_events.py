"""Breaking events (seed 003): threshold M and window W edges, attachment, reports, and
replay determinism (time comes from article dates, never the wall clock)."""

from __future__ import annotations

import datetime as dt
import random
from pathlib import Path
from typing import Any

import pytest

from neardup.api import NewsIndex
from neardup.detect.events import EventConfig, EventDetector, build_report
from neardup.detect.stream import StreamConfig
from neardup.errors import ConfigError, NotFoundError

H = 3_600_000_000  # one hour in microseconds


def test_threshold_edge_more_than_m() -> None:
    det = EventDetector(EventConfig(min_articles=3, window_seconds=3600.0))
    for seq in range(3):
        assert det.decide(f"a{seq}", seq, 0b1011, []).event is None
        det.add(seq, seq, 0b1011, None)
    # Three similar articles before it: not *more than* 3.
    assert det.decide("x", 10, 0b1011, []).event is None
    det.add(3, 10, 0b1011, None)
    outcome = det.decide("opener", 11, 0b1111, [])  # distance 1 to the others
    assert outcome.opened and outcome.event == "opener" and sorted(outcome.joined) == [0, 1, 2, 3]


def test_window_edges_and_distance() -> None:
    det = EventDetector(EventConfig(min_articles=1, window_seconds=3600.0, max_distance=2))
    det.add(1, 0, 0, None)
    det.add(2, 0, 0, None)
    det.add(3, 0, 0b111, None)  # distance 3: not similar
    assert det.neighbours(H, 0) == [1, 2]  # exactly W before: inside
    assert det.neighbours(H + 1, 0) == []  # one microsecond later: outside
    assert det.neighbours(-1, 0) == []  # articles dated after it do not count
    assert det.decide("late", H + 1, 0, []).event is None
    assert det.decide("edge", H, 0, []).opened


@pytest.mark.parametrize("size", [40, 3_000])  # a small window and one that grows its array
def test_neighbours_equal_brute_force(size: int) -> None:
    rng = random.Random(size)
    det = EventDetector(EventConfig(window_seconds=3600.0, max_distance=7))
    base = rng.getrandbits(64)
    added: list[tuple[int, int, int]] = []
    for seq in range(size):
        fp = base
        for _ in range(rng.randrange(12)):
            fp ^= 1 << rng.randrange(64)
        date = rng.randrange(2 * H)
        det.add(seq, date, fp, None)
        added.append((seq, date, fp))
    for _ in range(30):
        when, q = rng.randrange(3 * H), base ^ (1 << rng.randrange(64))
        inside = sorted(a for a in added if when - H <= a[1] <= when)  # by date, then seq
        expected = [seq for seq, _, fp in sorted(inside, key=lambda a: (a[1], a[0]))
                    if (fp ^ q).bit_count() <= 7]  # fmt: skip
        assert sorted(det.neighbours(when, q)) == sorted(expected)


def test_neighbours_over_a_sliding_window_with_late_articles_and_a_checkpoint() -> None:
    # Dates move forward over 12 windows (pruning the oldest articles) with one article in
    # five dated up to a window late (inserted mid-array); queries near the newest date see
    # only articles the prune keeps, so brute force over everything added is the oracle,
    # before and after a checkpoint round trip.
    rng = random.Random(7)
    det = EventDetector(EventConfig(window_seconds=3600.0, max_distance=7))
    base = rng.getrandbits(64)
    added: list[tuple[int, int, int]] = []
    newest = 0
    for seq in range(4_000):
        newest += rng.randrange(12 * H // 4_000)
        date = newest - (rng.randrange(H) if rng.random() < 0.2 else 0)
        fp = base
        for _ in range(rng.randrange(12)):
            fp ^= 1 << rng.randrange(64)
        det.add(seq, date, fp, None)
        added.append((seq, date, fp))
        if seq % 97 == 0:
            when, q = newest - rng.randrange(H), base ^ (1 << rng.randrange(64))
            expected = {
                s for s, d, f in added if when - H <= d <= when and (f ^ q).bit_count() <= 7
            }
            assert set(det.neighbours(when, q)) == expected
    assert len(det) < len(added)  # the prune ran
    restored = EventDetector(EventConfig(window_seconds=3600.0, max_distance=7))
    restored.load_state(det.state())
    assert restored.snapshot() == det.snapshot()
    for _ in range(20):
        when, q = newest - rng.randrange(H), base ^ (1 << rng.randrange(64))
        assert restored.neighbours(when, q) == det.neighbours(when, q)


def test_attach_undated_linked_and_disabled() -> None:
    det = EventDetector(EventConfig(min_articles=0, window_seconds=60.0))
    det.add(1, 0, 5, "ev-b")
    det.add(2, 0, 5, "ev-a")
    out = det.decide("n", 1, 5, [])
    assert out.event == "ev-a" and not out.opened  # smallest id among several
    assert det.decide("u", None, 5, ["ev-z"]).event == "ev-z"
    assert det.decide("u", None, 5, []).event is None
    off = EventDetector(EventConfig(enabled=False, min_articles=0))
    off.add(1, 0, 5, None)
    assert off.decide("x", 0, 5, []).event is None


def test_config_validation() -> None:
    for bad in ({"min_articles": -1}, {"window_seconds": 0}, {"max_distance": 65}):
        with pytest.raises(ConfigError):
            EventConfig(**bad)  # type: ignore[arg-type]


def test_report_growth_and_sources() -> None:
    arts = [
        ("c", 2 * H + 5, "Reuters", "t3"),
        ("a", 0, "AP", "t1"),
        ("b", 10, None, "t2"),
        ("d", 2 * H + 9, "AP", "t4"),
    ]
    rep = build_report("a", "a", 0, arts, 3600.0)
    assert [a.id for a in rep.articles] == ["a", "b", "c", "d"]
    assert rep.first_publisher == "AP"
    assert rep.sources == (("AP", 2), ("Reuters", 1))
    assert rep.growth == ((1.0, 2), (3.0, 4))
    assert rep.to_dict()["growth"][-1] == {"hours": 3.0, "count": 4}


def burst_stream(docs: list[dict[str, Any]], seed: int) -> list[dict[str, Any]]:
    """Real Reuters articles plus a burst: 20 lightly edited reports of one story from
    different sources within 3 hours, then one more 10 hours later."""
    rng = random.Random(seed)
    story = next(d for d in docs if len(d["text"]) > 1200)
    start = dt.datetime.fromisoformat(docs[0]["date"])
    out = [{**d, "source": "reuters"} for d in docs]
    for n in range(20):
        words = story["text"].split()
        i = rng.randrange(len(words))
        words[i] = words[i].upper() + "s"
        when = start + dt.timedelta(minutes=9 * n + 1)
        out.insert(
            30 + 2 * n,
            {
                "id": f"burst-{n:02d}",
                "text": " ".join(words),
                "date": when.isoformat(),
                "source": f"outlet-{n % 6}",
                "title": f"report {n}",
            },
        )
    late = start + dt.timedelta(hours=13)
    out.append(
        {"id": "burst-late", "text": story["text"], "date": late.isoformat(), "source": "outlet-9"}
    )
    return out


def replay(path: Path, stream: list[dict[str, Any]]) -> list[dict[str, Any]]:
    with NewsIndex(str(path), StreamConfig()) as news:
        news.ingest_many(stream, batch_size=64)
        return [news.event(e.id).to_dict() for e in news.events()]


def test_burst_opens_event_and_replay_is_deterministic(
    reuters_docs: list[dict[str, Any]], tmp_path: Path
) -> None:
    stream = burst_stream(reuters_docs[:400], seed=11)
    first = replay(tmp_path / "one.db", stream)
    assert replay(tmp_path / "two.db", stream) == first
    burst = [e for e in first if e["id"].startswith("burst-")]
    assert len(burst) == 1
    event = burst[0]
    story = next(d for d in reuters_docs[:400] if len(d["text"]) > 1200)["id"]
    # Seed 003 defaults: the source story and 15 reports are 16 similar articles within 4 h,
    # more than 15, so the 16th report opens the event.
    assert event["opened_by"] == "burst-15"
    ids = [a["id"] for a in event["articles"]]
    assert {story, *(f"burst-{n:02d}" for n in range(20))} <= set(ids)
    dates = [a["date"] for a in event["articles"]]
    assert dates == sorted(dates)
    assert "burst-late" in ids  # attached later through its duplicate original
    assert event["first_publisher"] == "reuters"  # the source story came first
    assert sum(s["count"] for s in event["sources"]) == len(ids)
    counts = [g["count"] for g in event["growth"]]
    assert counts == sorted(counts) and counts[-1] == len(ids)
    with NewsIndex(str(tmp_path / "one.db")) as news:
        assert news.decision("burst-14").event is None
        assert news.decision("burst-17").event == "burst-15"
        since = dt.datetime.fromisoformat(event["opened_at"])
        assert [e.id for e in news.events(since=since, until=since + dt.timedelta(seconds=1))] == [
            "burst-15"
        ]
        later = news.events(since=since + dt.timedelta(seconds=1))
        cut = (since - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)) // dt.timedelta(microseconds=1)
        assert all(e.opened_at_us >= cut + 1_000_000 for e in later)
        assert len(later) == len([e for e in news.events() if e.opened_at_us > cut])
        with pytest.raises(NotFoundError):
            news.event("nope")
