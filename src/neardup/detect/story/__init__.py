"""Same-story coverage: "more coverage of this story" and breaking events (seed 003).

Seed 003 ("General Simhash-based Framework for News Aggregators", MECS 2017) lists similar
news and detects breaking events ("more than 15 similar news ... within 4 hours") from one
SimHash per article made on the article's *feature vector*.  Here that vector is the story
vector of :mod:`neardup.sketch.story` (TF-IDF over the content terms of the rule's profile,
weighed with the document frequencies of the stream so far, projected to ``bits``
dimensions) and the fingerprints live in a :class:`~neardup.index.story.StoryIndex` searched
by time window.

:class:`StoryDesk` is the whole detector, used alone (:meth:`StoryDesk.ingest`) or by the
news stream (:mod:`neardup.detect.stream.stories`), which calls its steps itself:

* :meth:`StoryDesk.vector` -- an article's story vector, from its profile's terms, with the
  document frequencies of the articles before it;
* :meth:`StoryDesk.neighbours` -- the one windowed query per article: the articles stored
  before it dated within ``window_seconds`` of it with story similarity at least
  ``min_similarity``, most similar first (the stream judges the first of them with the
  rule; the event rule reads the last ``events.window_seconds`` of them);
* :meth:`StoryDesk.decide` -- the event rule below (pure: nothing changes);
* :meth:`StoryDesk.add`, :meth:`StoryDesk.set_member`, :meth:`StoryDesk.merge` -- record the
  article and the outcome (the stream logs each step, so a replay of its log calls the same
  three in the same order and rebuilds the same state).

Event rule (time is the article's date, never the wall clock).  When a dated article ``A``
arrives, ``R`` is the set of earlier-ingested articles counted toward events, dated in
``[t - window, t]``, whose story similarity to ``A`` is at least ``min_similarity``.

1. *Join*: ``A`` joins an *active* event (one with a member dated in the window) when at
   least ``min_links`` articles of ``R`` are its members or when ``A``'s similarity to its
   centroid (the sum of its members' story vectors) is at least ``min_similarity`` (the
   event with most links, then the most similar, then the oldest); the rest of ``R`` joins
   with it, so an event grows as coverage continues.
2. *Open*: otherwise, when ``len(R) > min_articles`` (seed 003's "more than 15"), the burst
   comes from at least ``min_sources`` sources (an article without a source counts as a
   source of its own), and it is a *burst*: the story was not running before -- ``A`` has
   at most ``len(R) / burst_ratio`` neighbours in the whole ``background_seconds`` before
   the window -- an event opens: its id is ``A``'s id and ``R`` joins it with ``A``.
   Templated items that recur every day (market reports, earnings tables, dividend
   notices) have as many neighbours on each earlier day, so they do not burst while the
   stream has the days before.
3. *Merge*: active events whose centroid is as similar to the grown event's as a same-story
   article fire on one story: they merge into the one opened first (its id stays; the
   others resolve to it).

Tables are not stories: an article whose words are more than ``max_figure_share`` figures
(earnings tables, price lists, spreads; 20 %: 86 % of Reuters' third-quarter earnings
items, 2 % of its topical news, 0.2 % of scraped web news) is indexed for similar news but
does not count toward events.  Undated articles are indexed (found by queries without a
window) but not counted toward events either; texts without content terms (empty, figures or
page furniture only) are not indexed, and :meth:`StoryDesk.similar` answers ``[]`` for them.

Guarantees: deterministic -- replaying the same articles in the same order gives the same
events, reports and state (ties break by insertion order).  Persistence: :meth:`state` /
:meth:`from_state` (and :meth:`save` / :meth:`load` to a folder) restore the index, the
document frequencies and the detector's state exactly.
"""

from neardup.detect.story.config import EventConfig, StoryConfig
from neardup.detect.story.desk import StoryDesk, figure_share
from neardup.detect.story.records import (
    COPY_KINDS,
    EventArticle,
    EventReport,
    Judge,
    Neighbours,
    StoryEvent,
    StoryItem,
    StoryOutcome,
)

__all__ = [
    "COPY_KINDS",
    "EventArticle",
    "EventConfig",
    "EventReport",
    "Judge",
    "Neighbours",
    "StoryConfig",
    "StoryDesk",
    "StoryEvent",
    "StoryItem",
    "StoryOutcome",
    "figure_share",
]
