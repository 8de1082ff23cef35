"""Story vectors, similar news and breaking events on real coverage (neardup.detect.story).

Sections (each printed and saved to ``benchmarks/results/story.json``):

* ``choice``: story-vector variants side by side on the read-labelled pairs of
  provenance_news_2018_dev (half A of the pairs: the part the defaults are chosen on) and on
  Reuters-21578 topics (precision of same-topic neighbours); ``heldout`` reports the chosen
  default on half B of the pairs.
* ``similar``: ``StoryDesk.similar(article, 20)`` against an exact TF-IDF cosine top-20 list
  computed here: how many related / partial / duplicate pairs either list shows, and the
  share of listed items from the same story (the ``event`` field).
* ``events``: the events opened on provenance_news_2018_dev (the summit burst plus two other
  stories, in date order), on Reuters with its real 1987 dates (listed with titles to read),
  and on Reuters articles crowded into 48 hours (no event should open).
* ``cost``: per-article microseconds of the story vector + index add alone (CPU time) on real
  text, and of the whole ``StoryDesk.ingest``.
* ``index``: ``StoryIndex`` with ``--n`` (default 1,000,000) stored stories (real Reuters
  story fingerprints replicated with a few flipped bits, dated over 30 days): median query
  time for k=20 within 4-hour and 48-hour windows, build and add cost, memory.

Run: ``python benchmarks/bench_story.py`` (``--quick`` for a small index, ``--skip-index``).
"""

from __future__ import annotations

import argparse
import collections
import datetime as dt
import gzip
import json
import statistics
import time
from typing import Any

import numpy as np

from _common import DATA, read_reuters, save
from neardup.detect.story import StoryConfig, StoryDesk, StoryEventConfig
from neardup.index.docfreq import DocumentFrequencies
from neardup.index.story import StoryIndex, to_us
from neardup.records import Article, parse_date
from neardup.shingles import token_hashes
from neardup.sketch.story import StoryVectorConfig, story_features, story_vector_of_features
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


VARIANTS: dict[str, dict[str, Any]] = {
    "256 bits, words (default)": {},
    "256 bits, words + bigrams": {"bigram_weight": 1.0},
    "256 bits, words, no paragraph rule": {"min_paragraph_words": 0},
    "128 bits, words": {"bits": 128},
    "64 bits, words": {"bits": 64},
}


def desk_lists(arts: list[Article], vector: StoryVectorConfig, k: int) -> dict[str, list[str]]:
    desk = StoryDesk(StoryConfig(vector=vector))
    for a in arts:
        desk.ingest(a)
    return {a.id: [x.id for x in desk.similar(a, k)] for a in arts}


def reuters_topic_precision(vector: StoryVectorConfig | None, docs: list[dict[str, Any]]) -> float:
    """Share of the 10 nearest stories (dated within 48 hours) sharing the query's single
    topic, over single-topic Reuters articles (None: the TF-IDF cosine baseline, no window)."""
    single = [d for d in docs if len(d["topics"]) == 1]
    if vector is None:
        rows = tfidf_rows([d["text"] for d in single])
        tops = cosine_topk(rows, 10)
        hits = [
            single[j]["topics"][0] == single[i]["topics"][0] for i, t in enumerate(tops) for j in t
        ]
        return round(sum(hits) / len(hits), 4)
    desk = StoryDesk(
        StoryConfig(vector=vector, events=StoryEventConfig(enabled=False), similar_window_seconds=0)
    )
    arts = [Article(d["id"], d["text"], None, parse_date(d["date"])) for d in single]
    for a in arts:
        desk.ingest(a)
    topic = {d["id"]: d["topics"][0] for d in single}
    hits = []
    for a in arts:
        for x in desk.similar(a, 10, min_similarity=-1.0):
            hits.append(topic[x.id] == topic[a.id])
    return round(sum(hits) / max(1, len(hits)), 4)


def choice(arts: list[Article], story: dict[str, str], labels: list[dict[str, Any]]) -> dict:
    half_a = labels[0::2]
    half_b = labels[1::2]
    reuters = [d for d in load_reuters()[:6000]]
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
    for name, params in VARIANTS.items():
        vector = StoryVectorConfig(**params)
        lists = desk_lists(arts, vector, 20)
        out[name] = {
            "related_A": pair_recall(lists, half_a, "related")["share"],
            "related_B": pair_recall(lists, half_b, "related")["share"],
            "same_story": same_story(lists, story)["same_story_share"],
            "reuters_topic_p10": reuters_topic_precision(vector, reuters),
        }
        print(f"  {name:40s} {out[name]}")
    print(f"  {'baseline tf-idf cosine':40s} {out['baseline tf-idf cosine']}")
    return out


# --- similar --------------------------------------------------------------------------------


def similar_section(
    arts: list[Article], story: dict[str, str], labels: list[dict[str, Any]]
) -> dict:
    rows = tfidf_rows([a.text for a in arts])
    ids = [a.id for a in arts]
    base = {ids[i]: [ids[j] for j in t] for i, t in enumerate(cosine_topk(rows, 20))}
    desk = StoryDesk()
    for a in arts:
        desk.ingest(a)
    ours = {a.id: [x.id for x in desk.similar(a, 20)] for a in arts}
    by_id = {a.id: a.id for a in arts}
    ours_by_id = {i: [x.id for x in desk.similar(i, 20)] for i in by_id}
    out = {}
    for name, lists in (
        ("tf-idf cosine top-20 (baseline)", base),
        ("similar(article, 20)", ours),
        ("similar(id, 20) (fingerprint only)", ours_by_id),
    ):
        out[name] = {
            lab: pair_recall(lists, labels, lab) for lab in ("related", "partial", "duplicate")
        }
        out[name].update(same_story(lists, story))
        print(f"  {name:38s} " + json.dumps(out[name]))
    for half, part in (("A", labels[0::2]), ("B", labels[1::2])):
        out[f"related, half {half}"] = {
            "baseline": pair_recall(base, part, "related")["share"],
            "similar(article, 20)": pair_recall(ours, part, "related")["share"],
        }
    return out


# --- events ---------------------------------------------------------------------------------


def describe(desk: StoryDesk, story: dict[str, str] | None, limit: int = 40) -> list[dict]:
    out = []
    for e in desk.events()[:limit]:
        report = desk.report(e.id)
        item: dict[str, Any] = {
            "id": e.id,
            "opened": dt.datetime.fromtimestamp(e.opened_at_us / 1e6, dt.UTC).isoformat(),
            "articles": len(e.members),
            "title": report.title,
            "hours": report.growth[-1][0] if report.growth else 0,
        }
        if story is not None:
            item["stories"] = dict(collections.Counter(story[m] for m in e.members))
        out.append(item)
    return out


def events_section(arts: list[Article], story: dict[str, str]) -> dict:
    out: dict[str, Any] = {}
    desk = StoryDesk()
    for a in arts:
        desk.ingest(a)
    summit = sum(1 for v in story.values() if v == "helsinki")
    events = describe(desk, story)
    biggest = max((e["stories"].get("helsinki", 0) for e in events), default=0)
    out["provenance"] = {
        "events": events,
        "summit_articles": summit,
        "largest_summit_event_share": round(biggest / summit, 4),
        "other_stories_in_summit_events": sum(
            n
            for e in events
            if e["stories"].get("helsinki")
            for s, n in e["stories"].items()
            if s != "helsinki"
        ),
    }
    print("  provenance:", json.dumps(out["provenance"])[:600])

    docs = load_reuters()
    topics = {d["id"]: ",".join(d["topics"]) or "-" for d in docs}
    titles = {d["id"]: d["title"] for d in docs}
    for name, events in (
        ("reuters", StoryEventConfig()),
        ("reuters, min_similarity 0.25", StoryEventConfig(min_similarity=0.25)),
        ("reuters, no figure rule", StoryEventConfig(max_figure_share=1.0)),
    ):
        desk = StoryDesk(StoryConfig(events=events))
        for d in docs:
            desk.ingest(Article(d["id"], d["text"], d["title"], parse_date(d["date"])))
        listed = describe(desk, topics, limit=100)
        for e in listed:
            e["first_titles"] = [titles[m] for m in desk.events()[listed.index(e)].members[:8]]
        out[name] = {"events": len(desk.events()), "listed": listed}
        print(f"  {name}: {len(desk.events())} events")
        for e in listed:
            print(f"    {e['articles']:4d} {e['hours']:6.1f} h  {e['title']!r}  {e['stories']}")
            print(f"         {e['first_titles']}")

    rng = np.random.default_rng(7)
    pick = rng.choice(len(docs), 2000, replace=False)
    base = to_us(dt.datetime(1987, 3, 2, tzinfo=dt.UTC))
    assert base is not None
    crowd = sorted(
        (
            Article(
                docs[p]["id"],
                docs[p]["text"],
                docs[p]["title"],
                dt.datetime.fromtimestamp((base + int(rng.integers(0, 48 * HOUR))) / 1e6, dt.UTC),
            )
            for p in pick.tolist()
        ),
        key=lambda a: (a.date, a.id),
    )
    desk = StoryDesk()
    for a in crowd:
        desk.ingest(a)
    out["crowded_48h"] = {
        "articles": len(crowd),
        "events": len(desk.events()),
        "listed": describe(desk, topics),
    }
    print(f"  reuters crowded into 48 h: {len(crowd)} articles, {len(desk.events())} events")
    return out


# --- cost -----------------------------------------------------------------------------------


def cost_section(arts: list[Article]) -> dict:
    out = {}
    reuters = load_reuters()[:5000]
    for name, texts, dates in (
        ("reuters", [d["text"] for d in reuters], [parse_date(d["date"]) for d in reuters]),
        ("provenance", [a.text for a in arts], [a.date for a in arts]),
    ):
        cfg = StoryVectorConfig()
        for t in texts:  # warm the token caches, as in a running stream
            story_features(t, cfg)
        df = DocumentFrequencies()
        index = StoryIndex()
        start = time.process_time()
        for i, (t, d) in enumerate(zip(texts, dates, strict=True)):
            feats, tf = story_features(t, cfg)
            vec = story_vector_of_features(feats, tf, cfg, df)
            if not vec.is_empty:
                index.add(i, vec, d)
                df.add(feats)
        vector_add = (time.process_time() - start) / len(texts) * 1e6
        desk = StoryDesk()
        start = time.process_time()
        for i, (t, d) in enumerate(zip(texts, dates, strict=True)):
            desk.ingest(Article(str(i), t, None, d))
        ingest = (time.process_time() - start) / len(texts) * 1e6
        out[name] = {
            "articles": len(texts),
            "vector_and_add_us": round(vector_add, 1),
            "desk_ingest_us": round(ingest, 1),
        }
        print(f"  {name}: {out[name]}")
    return out


# --- the index at scale -----------------------------------------------------------------------


def index_section(n: int, queries: int) -> dict:
    docs = load_reuters()
    cfg = StoryVectorConfig()
    df = DocumentFrequencies()
    vecs = []
    for d in docs:
        feats, tf = story_features(d["text"], cfg)
        vec = story_vector_of_features(feats, tf, cfg, df)
        if not vec.is_empty:
            vecs.append(vec)
            df.add(feats)
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

    index = StoryIndex()
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
    for hours in (4, 48):
        times = []
        counts = []
        for q in rng.integers(n // 2, n, queries).tolist():
            vec = vecs[int(src[q])]
            t = int(dates[q])
            t1 = time.perf_counter()
            hits = index.nearest(vec, 20, t - hours * HOUR, t)
            times.append((time.perf_counter() - t1) * 1e3)
            counts.append(len(hits))
        out[f"query_{hours}h"] = {
            "median_ms": round(statistics.median(times), 3),
            "p99_ms": round(float(np.percentile(times, 99)), 3),
            "rows_in_window": int(n * hours / (30 * 24)),
        }
    print(f"  index: {out}")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1_000_000, help="stories in the index section")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--quick", action="store_true", help="a 100,000-story index")
    parser.add_argument("--skip-index", action="store_true")
    parser.add_argument(
        "--only", choices=("choice", "similar", "events", "cost", "index"), action="append"
    )
    parser.add_argument("--out", default="story")
    args = parser.parse_args()
    arts, story, labels = load_prov()
    payload: dict[str, Any] = {}
    only = set(args.only or ("choice", "similar", "events", "cost", "index"))
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
        payload["index"] = index_section(100_000 if args.quick else args.n, args.queries)
    print("saved", save(args.out, payload))


if __name__ == "__main__":
    main()
