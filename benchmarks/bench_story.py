"""Story vectors, similar news and breaking events on real coverage (the news stream's story
component: neardup.detect.story, neardup.detect.stream.stories).

Sections (each printed and saved to ``benchmarks/results/story.json``):

* ``choice``: story-vector variants side by side (bits, maintained IDF or none) on the
  read-labelled pairs of provenance_news_2018_dev (half A of the pairs: the part the defaults
  are chosen on; half B held out) and on Reuters-21578 topics (precision of same-topic
  neighbours).
* ``similar``: ``NewsIndex.similar(id, 20)`` on provenance_news_2018_dev ingested in date order
  against an exact TF-IDF cosine top-20 list computed here: how many related / partial /
  duplicate pairs either list shows (and with ``duplicates(id)``, the article's own group),
  the share of listed items from the same story, and the median time of a call.
* ``events``: the events the stream opens on provenance_news_2018_dev (the summit burst plus
  two other stories, in date order), on Reuters with its real 1987 dates (listed with titles
  to read), and on Reuters articles crowded into 48 hours (no event should open).
* ``cost``: per-article CPU microseconds of the story component (vector from the profile's
  terms, the one windowed query, the event rule, the index add) side by side with the rule's
  profile of the same text and with the 64-bit SimHash it replaced, alternating in blocks.
* ``index``: ``StoryIndex`` with ``--n`` (default 1,000,000) stored stories (real Reuters
  story fingerprints replicated with a few flipped bits, dated over 30 days): median query
  time for k=40 within 4-hour, 48-hour and 14-day windows, build and add cost, memory.
* ``similar_at_scale``: ``NewsStream.similar(id, 20)`` median on a store of ``--similar-n``
  articles of the replicated Reuters stream (benchmarks/bench_ingest.py's).
* ``stream_side``: the whole ingest of the first 6,000 replicated articles with the
  defaults, without story candidates, and without them nor events, alternating twice.

Run: ``python benchmarks/bench_story.py`` (``--only SECTION``, ``--quick``, ``--skip-index``).
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import datetime as dt
import gzip
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from _common import DATA, read_reuters, save
from neardup.api import NewsIndex
from neardup.detect.story import EventConfig, StoryConfig, StoryDesk
from neardup.detect.stream import NewsStream, StreamConfig
from neardup.index.docfreq import DocumentFrequencies
from neardup.index.story import StoryIndex, to_us
from neardup.records import Article, parse_date
from neardup.rule import profile
from neardup.shingles import token_hashes
from neardup.sketch.simhash import sign_simhash
from neardup.sketch.story import StoryVectorConfig, story_vector
from neardup.store import open_store
from neardup.text import TextConfig

PROV = DATA / "provenance_news_2018_dev"
HOUR = 3600 * 1_000_000


# --- data ---------------------------------------------------------------------------------


def load_prov() -> tuple[list[Article], dict[str, str], list[dict[str, Any]]]:
    with gzip.open(PROV / "docs.jsonl.gz", "rt", encoding="utf-8") as fh:
        docs = [json.loads(line) for line in fh]
    with open(PROV / "labels_read.jsonl", encoding="utf-8") as fh:
        labels = [json.loads(line) for line in fh]
    arts = [
        Article(d["id"], d["text"], d["title"], parse_date(d["date"]), d["publisher"]) for d in docs
    ]
    arts.sort(key=lambda a: (a.date, a.id))
    return arts, {d["id"]: d["event"] for d in docs}, labels


def load_reuters() -> list[dict[str, Any]]:
    return [r for r in read_reuters() if len(r["text"]) >= 200]


# --- the TF-IDF cosine baseline -------------------------------------------------------------


def tfidf_rows(texts: list[str]) -> Any:
    """Plain TF-IDF (stemmed words, stop words dropped, smoothed IDF over these texts, raw
    TF), L2-normalised, as a sparse matrix: the baseline a user would compute with a TF-IDF
    vectoriser."""
    import scipy.sparse as sp

    cfg = TextConfig(drop_stop_words=True)
    vocab: dict[int, int] = {}
    rows, cols, vals = [], [], []
    for i, text in enumerate(texts):
        feats, counts = np.unique(token_hashes(text, cfg), return_counts=True)
        for f, c in zip(feats.tolist(), counts.tolist(), strict=True):
            rows.append(i)
            cols.append(vocab.setdefault(f, len(vocab)))
            vals.append(float(c))
    m = sp.csr_matrix((vals, (rows, cols)), shape=(len(texts), len(vocab)))
    df = np.asarray((m > 0).sum(axis=0)).ravel()
    idf = np.log((1 + len(texts)) / (1 + df)) + 1
    m = sp.csr_matrix(m.multiply(idf[None, :]))
    norms = np.sqrt(np.asarray(m.multiply(m).sum(axis=1)).ravel())
    norms[norms == 0] = 1.0
    return sp.diags(1.0 / norms) @ m


def cosine_topk(matrix: Any, k: int) -> list[list[int]]:
    """Exact top-k by cosine for every row (ties: lower row first)."""
    out: list[list[int]] = []
    for start in range(0, matrix.shape[0], 500):
        block = (matrix[start : start + 500] @ matrix.T).toarray()
        for r in range(block.shape[0]):
            block[r, start + r] = -np.inf
        out.extend(np.argsort(-block, axis=1, kind="stable")[:, :k].tolist())
    return out


def pair_recall(
    lists: dict[str, list[str]], labels: list[dict[str, Any]], label: str
) -> dict[str, Any]:
    pairs = [(x["a"], x["b"]) for x in labels if x["label"] == label]
    hit = sum(1 for a, b in pairs if b in lists.get(a, ()) or a in lists.get(b, ()))
    return {"pairs": len(pairs), "listed": hit, "share": round(hit / max(1, len(pairs)), 4)}


def same_story(lists: dict[str, list[str]], story: dict[str, str]) -> dict[str, Any]:
    items = [(a, b) for a, xs in lists.items() for b in xs]
    same = sum(1 for a, b in items if story[a] == story[b])
    return {
        "items": len(items),
        "same_story_share": round(same / max(1, len(items)), 4),
        "empty_lists": sum(1 for xs in lists.values() if not xs),
    }


# --- choice of the story vector ---------------------------------------------------------------


VARIANTS: dict[str, tuple[StoryVectorConfig, bool]] = {
    "256 bits, maintained IDF (default)": (StoryVectorConfig(), True),
    "256 bits, no IDF (TF only)": (StoryVectorConfig(), False),
    "128 bits, maintained IDF": (StoryVectorConfig(bits=128), True),
    "64 bits, maintained IDF": (StoryVectorConfig(bits=64), True),
}


def variant_index(
    arts: list[Article], cfg: StoryVectorConfig, idf: bool
) -> tuple[StoryIndex, dict[str, Any]]:
    """Story vectors from the rule profiles' terms in stream order (document frequencies of
    the articles before each when ``idf``), indexed by id."""
    df = DocumentFrequencies()
    index = StoryIndex(bits=cfg.bits)
    vecs = {}
    for a in arts:
        p = profile(a.text)
        vec = story_vector(p.terms, p.term_counts, cfg, df if idf else None)
        if not vec.is_empty:
            index.add(a.id, vec, a.date)
            vecs[a.id] = vec
            df.add(p.terms)
    return index, vecs


def variant_lists(
    arts: list[Article], cfg: StoryVectorConfig, idf: bool, k: int, window_h: float | None
) -> dict[str, list[str]]:
    index, vecs = variant_index(arts, cfg, idf)
    out: dict[str, list[str]] = {}
    for a in arts:
        if a.id not in vecs:
            out[a.id] = []
            continue
        since = until = None
        if window_h is not None and a.date is not None:
            since = a.date - dt.timedelta(hours=window_h)
            until = a.date + dt.timedelta(hours=window_h)
        hits = index.nearest(vecs[a.id], k, since, until, exclude=(a.id,))
        out[a.id] = [str(h.key) for h in hits]
    return out


def reuters_topic_precision(variant: tuple[StoryVectorConfig, bool] | None, docs: list) -> float:
    """Share of the 10 nearest stories sharing the query's single topic, over single-topic
    Reuters articles (``None``: the TF-IDF cosine baseline)."""
    single = [d for d in docs if len(d["topics"]) == 1]
    topic = [d["topics"][0] for d in single]
    if variant is None:
        tops = cosine_topk(tfidf_rows([d["text"] for d in single]), 10)
        hits = [topic[j] == topic[i] for i, t in enumerate(tops) for j in t]
        return round(sum(hits) / len(hits), 4)
    arts = [Article(str(i), d["text"], None, parse_date(d["date"])) for i, d in enumerate(single)]
    lists = variant_lists(arts, variant[0], variant[1], 10, None)
    hits = [topic[int(j)] == topic[int(i)] for i, xs in lists.items() for j in xs]
    return round(sum(hits) / max(1, len(hits)), 4)


def choice(arts: list[Article], story: dict[str, str], labels: list[dict[str, Any]]) -> dict:
    half_a, half_b = labels[0::2], labels[1::2]
    reuters = load_reuters()[:6000]
    rows = tfidf_rows([a.text for a in arts])
    ids = [a.id for a in arts]
    base = {ids[i]: [ids[j] for j in t] for i, t in enumerate(cosine_topk(rows, 20))}
    out: dict[str, Any] = {
        "baseline tf-idf cosine": {
            "related_A": pair_recall(base, half_a, "related")["share"],
            "related_B": pair_recall(base, half_b, "related")["share"],
            "reuters_topic_p10": reuters_topic_precision(None, reuters),
        }
    }
    for name, variant in VARIANTS.items():
        lists = variant_lists(arts, variant[0], variant[1], 20, 7 * 24)
        out[name] = {
            "related_A": pair_recall(lists, half_a, "related")["share"],
            "related_B": pair_recall(lists, half_b, "related")["share"],
            "same_story": same_story(lists, story)["same_story_share"],
            "reuters_topic_p10": reuters_topic_precision(variant, reuters),
        }
        print(f"  {name:40s} {out[name]}")
    print(f"  {'baseline tf-idf cosine':40s} {out['baseline tf-idf cosine']}")
    return out


# --- similar --------------------------------------------------------------------------------


def as_doc(a: Article) -> dict[str, Any]:
    return {
        "id": a.id,
        "text": a.text,
        "title": a.title,
        "date": a.date.isoformat() if a.date else None,
        "source": a.source,
    }


def similar_section(
    arts: list[Article], story: dict[str, str], labels: list[dict[str, Any]]
) -> dict:
    rows = tfidf_rows([a.text for a in arts])
    ids = [a.id for a in arts]
    base = {ids[i]: [ids[j] for j in t] for i, t in enumerate(cosine_topk(rows, 20))}
    with tempfile.TemporaryDirectory() as tmp, NewsIndex(str(Path(tmp) / "p.db")) as news:
        news.ingest_many([as_doc(a) for a in arts])
        times = []
        ours: dict[str, list[str]] = {}
        verdicts: collections.Counter[str] = collections.Counter()
        for a in arts:
            t0 = time.perf_counter()
            items = news.similar(a.id, 20)
            times.append((time.perf_counter() - t0) * 1e3)
            ours[a.id] = [m.id for m in items]
            verdicts.update(m.verdict for m in items)
        reach = {i: xs + news.duplicates(i) for i, xs in ours.items()}
    out: dict[str, Any] = {}
    for name, lists in (
        ("tf-idf cosine top-20 (baseline)", base),
        ("similar(id, 20)", ours),
        ("similar(id, 20) + duplicates(id)", reach),
    ):
        out[name] = {
            lab: pair_recall(lists, labels, lab) for lab in ("related", "partial", "duplicate")
        }
        out[name].update(same_story(lists, story))
        print(f"  {name:34s} " + json.dumps(out[name]))
    out["similar verdicts"] = dict(verdicts)
    out["similar_median_ms"] = round(statistics.median(times), 3)
    for half, part in (("A", labels[0::2]), ("B", labels[1::2])):
        out[f"related, half {half}"] = {
            "baseline": pair_recall(base, part, "related")["share"],
            "similar(id, 20)": pair_recall(ours, part, "related")["share"],
        }
    print(f"  verdicts {dict(verdicts)}; median {out['similar_median_ms']} ms")
    return out


# --- events ---------------------------------------------------------------------------------


def describe(news: NewsIndex, groups: dict[str, str] | None, limit: int = 60) -> list[dict]:
    out = []
    for row in news.events()[:limit]:
        report = news.event(row.id)
        item: dict[str, Any] = {
            "id": row.id,
            "opened": row.opened_at.isoformat(),
            "articles": len(report.articles),
            "title": report.title,
            "hours": report.growth[-1][0] if report.growth else 0,
            "first_publisher": report.first_publisher,
            "sources": len(report.sources),
            "copies": report.copies,
            "independent": report.independent,
            "first_titles": [a.title for a in report.articles[:8]],
        }
        if groups is not None:
            item["stories"] = dict(collections.Counter(groups[a.id] for a in report.articles))
        out.append(item)
    return out


def stream_events(docs: list[dict[str, Any]], groups: dict[str, str] | None) -> list[dict]:
    with tempfile.TemporaryDirectory() as tmp, NewsIndex(str(Path(tmp) / "e.db")) as news:
        results = news.ingest_many(docs)
        bad = [r for r in results if isinstance(r, Exception)]
        assert all(type(r).__name__ == "InputError" for r in bad), bad[:3]
        return describe(news, groups)


def events_section(arts: list[Article], story: dict[str, str]) -> dict:
    out: dict[str, Any] = {}
    events = stream_events([as_doc(a) for a in arts], story)
    summit = sum(1 for v in story.values() if v == "helsinki")
    biggest = max((e["stories"].get("helsinki", 0) for e in events), default=0)
    out["provenance"] = {
        "events": events,
        "summit_articles": summit,
        "largest_summit_event_share": round(biggest / summit, 4),
        "other_stories_in_events": sum(
            n for e in events for s, n in e["stories"].items() if s != "helsinki"
        ),
    }
    for e in events:
        print(f"  provenance {e['articles']:4d} {e['hours']:6.1f} h {e['title']!r} {e['stories']}")
        print(f"     copies {e['copies']} independent {e['independent']} sources {e['sources']}")

    docs = load_reuters()
    topics = {d["id"]: ",".join(d["topics"]) or "-" for d in docs}
    ordered = sorted(docs, key=lambda d: (d["date"] is None, d["date"] or "", d["id"]))
    reuters = [
        {"id": d["id"], "text": d["text"], "title": d["title"], "date": d["date"]} for d in ordered
    ]
    # Without a source each article counts as a source of its own; with its true one
    # ("Reuters"), one outlet's own wire never makes the 3 sources of an event.
    for name, source in (("reuters", None), ("reuters, source Reuters", "Reuters")):
        listed = stream_events([{**d, "source": source} for d in reuters], topics)
        out[name] = {"events": len(listed), "listed": listed}
        print(f"  {name} (real 1987 dates): {len(listed)} events")
        for e in listed:
            print(f"    {e['articles']:4d} {e['hours']:6.1f} h  {e['title']!r}  {e['stories']}")
            print(f"         {e['first_titles']}")

    rng = np.random.default_rng(7)
    pick = rng.choice(len(docs), 2000, replace=False)
    start = dt.datetime(1987, 3, 2, tzinfo=dt.UTC)
    crowd = sorted(
        (
            {
                "id": docs[p]["id"],
                "text": docs[p]["text"],
                "title": docs[p]["title"],
                "date": (start + dt.timedelta(seconds=int(rng.integers(0, 48 * 3600)))).isoformat(),
            }
            for p in pick.tolist()
        ),
        key=lambda d: (d["date"], d["id"]),
    )
    crowded = stream_events(crowd, topics)
    out["crowded_48h"] = {"articles": len(crowd), "events": len(crowded), "listed": crowded}
    print(f"  reuters crowded into 48 h: {len(crowd)} articles, {len(crowded)} events")
    return out


# --- cost -----------------------------------------------------------------------------------


def cost_section(arts: list[Article], block: int = 250) -> dict:
    """CPU microseconds per article, three contenders alternating in blocks of ``block``
    articles over the same texts in stream order: the rule's profile (which the stream makes
    anyway), the story component on that profile, and the 64-bit SimHash the story component
    replaced (sign_simhash; its Hamming-index query not counted)."""
    out = {}
    reuters = load_reuters()[:8000]
    for name, items in (
        ("reuters", [(d["id"], d["text"], parse_date(d["date"]), None) for d in reuters]),
        ("provenance", [(a.id, a.text, a.date, a.source) for a in arts]),
    ):
        desk = StoryDesk()
        profiles = [profile(t) for _, t, _, _ in items]  # warm caches and compiled code
        spent = {"profile": 0.0, "story": 0.0, "simhash": 0.0}
        for start in range(0, len(items), block):
            chunk = items[start : start + block]
            profs = profiles[start : start + block]
            c0 = time.process_time()
            for _, text, _, _ in chunk:
                profile(text)
            c1 = time.process_time()
            for (doc_id, text, date, source), p in zip(chunk, profs, strict=True):
                vec = desk.vector_of(p)
                t = to_us(date)
                hits = desk.neighbours(vec, t)
                outcome = desk.decide(doc_id, vec, t, source, desk.counts(text), hits)
                desk.add(doc_id, doc_id, vec, p.terms, t, source=source, counted=True)
                desk.apply(doc_id, outcome)
            c2 = time.process_time()
            for _, text, _, _ in chunk:
                sign_simhash(text)
            c3 = time.process_time()
            spent["profile"] += c1 - c0
            spent["story"] += c2 - c1
            spent["simhash"] += c3 - c2
        n = len(items)
        out[name] = {
            "articles": n,
            **{f"{k}_us": round(v / n * 1e6, 1) for k, v in spent.items()},
            "story_over_profile": round(spent["story"] / spent["profile"], 3),
            "story_over_simhash": round(spent["story"] / spent["simhash"], 3),
        }
        print(f"  {name}: {out[name]}")
    return out


# --- the index at scale -----------------------------------------------------------------------


def index_section(n: int, queries: int, candidates: int, prefilter_words: int) -> dict:
    docs = load_reuters()
    cfg = StoryVectorConfig()
    df = DocumentFrequencies()
    vecs = []
    for d in docs:
        p = profile(d["text"])
        vec = story_vector(p.terms, p.term_counts, cfg, df)
        if not vec.is_empty:
            vecs.append(vec)
            df.add(p.terms)
    base_fps = np.array([v.fingerprint for v in vecs], dtype=np.uint64)
    rng = np.random.default_rng(11)
    src = rng.integers(0, len(vecs), n)
    fps = base_fps[src].copy()
    # A few flipped bits per copy, so replicas are near but not equal.
    for _ in range(8):
        word = rng.integers(0, 4, n)
        bit = rng.integers(0, 64, n).astype(np.uint64)
        fps[np.arange(n), word] ^= np.uint64(1) << bit
    span = 30 * 24 * HOUR
    start_us = to_us(dt.datetime(2026, 1, 1, tzinfo=dt.UTC))
    assert start_us is not None
    # Dates increase with arrival, with a 2-hour jitter (late arrivals go to the buffer).
    dates = start_us + np.sort(rng.integers(0, span, n)) + rng.integers(0, 2 * HOUR, n)
    from neardup.sketch.base import Signature

    index = StoryIndex(candidates=candidates, prefilter_words=prefilter_words)
    t0 = time.process_time()
    for i in range(n):
        index.add(i, Signature(cfg.scheme_id, fps[i]), int(dates[i]))
    build = time.process_time() - t0
    out: dict[str, Any] = {
        "stored": n,
        "days": 30,
        "add_us_per_article": round(build / n * 1e6, 2),
        "nbytes": index.nbytes,
    }
    approx_cfg = index.config
    exact_cfg = dataclasses.replace(approx_cfg, candidates=0)
    for hours in (4, 48, 7 * 24, 14 * 24):
        times: dict[str, list[float]] = {"exact": [], "approx": []}
        recall = []
        for q in rng.integers(n // 2, n, queries).tolist():
            vec = vecs[int(src[q])]
            t = int(dates[q])
            got = {}
            # Alternate the contenders query by query (same load for both).
            for name, cfg_ in (("exact", exact_cfg), ("approx", approx_cfg)):
                index.config = cfg_
                t1 = time.perf_counter()
                hits = index.nearest(vec, 40, t - hours * HOUR, t + hours * HOUR)
                times[name].append((time.perf_counter() - t1) * 1e3)
                got[name] = {h.key for h in hits}
            if got["exact"]:
                recall.append(len(got["exact"] & got["approx"]) / len(got["exact"]))
        index.config = approx_cfg
        out[f"query_{hours}h_either_side"] = {
            **{
                f"{name}_{stat}_ms": round(fn(v), 3)
                for name, v in times.items()
                for stat, fn in (
                    ("median", statistics.median),
                    ("p99", lambda x: float(np.percentile(x, 99))),
                )
            },
            "recall_at_40": round(float(np.mean(recall)), 4),
            "min_recall_at_40": round(float(np.min(recall)), 4),
            "rows_in_window": int(n * min(1.0, 2 * hours / (30 * 24))),
        }
    print(f"  index: {out}")
    return out


def similar_at_scale(n: int, queries: int) -> dict:
    """``NewsStream.similar(id, 20)`` on a store of the replicated Reuters stream."""
    from bench_ingest import load_reuters as ingest_docs
    from bench_ingest import replicated

    docs = ingest_docs()
    with tempfile.TemporaryDirectory() as tmp:
        stream = NewsStream(open_store(str(Path(tmp) / "s.db")), StreamConfig())
        ids: list[str] = []
        batch: list[dict[str, Any]] = []
        c0 = time.process_time()
        for d in replicated(docs, n):
            batch.append(d)
            ids.append(d["id"])
            if len(batch) == 256:
                stream.ingest_many(batch)
                batch = []
        if batch:
            stream.ingest_many(batch)
        ingest_cpu = time.process_time() - c0
        rng = np.random.default_rng(3)
        times = []
        for i in rng.integers(0, len(ids), queries).tolist():
            t0 = time.perf_counter()
            stream.similar(ids[i], 20)
            times.append((time.perf_counter() - t0) * 1e3)
        stream.close()
    out = {
        "stored": n,
        "ingest_articles_per_cpu_s": round(n / ingest_cpu, 1),
        "similar_median_ms": round(statistics.median(times), 3),
        "similar_p99_ms": round(float(np.percentile(times, 99)), 3),
    }
    print(f"  similar at scale: {out}")
    return out


def stream_side(n: int, rounds: int = 2) -> dict:
    """Ingest rate of the replicated Reuters stream (bench_ingest.py's ``ingest_run``, first
    ``n`` articles) with the defaults, without story candidates, and without story
    candidates nor events, alternating ``rounds`` times: the stream's cost of the story
    component beyond the vector and index (measured by ``cost``)."""
    from bench_ingest import ingest_run
    from bench_ingest import load_reuters as ingest_docs
    from neardup.detect.stream import CandidateConfig

    docs = ingest_docs()
    configs = {
        "default": StreamConfig(),
        "story_candidates=0": StreamConfig(candidates=CandidateConfig(story_candidates=0)),
        "story_candidates=0, events off": StreamConfig(
            candidates=CandidateConfig(story_candidates=0),
            stories=StoryConfig(events=EventConfig(enabled=False)),
        ),
    }
    out: dict[str, Any] = {name: {"articles_per_cpu_s": []} for name in configs}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(rounds):
            for name, config in configs.items():
                run = ingest_run(docs, n, config, Path(tmp), batch=256)
                run.pop("_decisions")
                out[name]["articles_per_cpu_s"].append(run["articles_per_cpu_s"])
                out[name]["statuses"] = run["statuses"]
    print(f"  stream side by side: {out}")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1_000_000, help="stories in the index section")
    parser.add_argument("--similar-n", type=int, default=50_000, help="articles stored")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--quick", action="store_true", help="a 100,000-story index")
    parser.add_argument("--skip-index", action="store_true")
    parser.add_argument("--candidates", type=int, default=16384, help="index: approximate stage")
    parser.add_argument("--prefilter-words", type=int, default=0, help="index: 0 = all words")
    sections = ("choice", "similar", "events", "cost", "index", "similar_at_scale", "stream_side")
    parser.add_argument("--only", choices=sections, action="append")
    parser.add_argument("--out", default="story")
    args = parser.parse_args()
    arts, story, labels = load_prov()
    payload: dict[str, Any] = {}
    only = set(args.only or sections)
    if "choice" in only:
        print("choice (pairs half A and Reuters topics choose; half B is held out):")
        payload["choice"] = choice(arts, story, labels)
    if "similar" in only:
        print("similar:")
        payload["similar"] = similar_section(arts, story, labels)
    if "events" in only:
        print("events:")
        payload["events"] = events_section(arts, story)
    if "cost" in only:
        print("cost:")
        payload["cost"] = cost_section(arts)
    if "index" in only and not args.skip_index:
        print("index:")
        payload["index"] = index_section(
            100_000 if args.quick else args.n, args.queries, args.candidates, args.prefilter_words
        )
    if "similar_at_scale" in only:
        print("similar at scale:")
        payload["similar_at_scale"] = similar_at_scale(args.similar_n, args.queries)
    if "stream_side" in only:
        print("stream side by side:")
        payload["stream_side"] = stream_side(6000)
    print("saved", save(args.out, payload))


if __name__ == "__main__":
    main()
