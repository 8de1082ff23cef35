"""Parameters of the story component: :class:`StoryConfig` (vectors, the index, judged
neighbours) and :class:`EventConfig` (the breaking-event rule of seed 003)."""

from __future__ import annotations

import dataclasses

from neardup.config import Config, check_int, check_range
from neardup.errors import ConfigError
from neardup.sketch.story import StoryVectorConfig


@dataclasses.dataclass(frozen=True)
class EventConfig(Config):
    """Breaking events: more than ``min_articles`` same-story articles within
    ``window_seconds`` from ``min_sources`` sources, that burst (module docs).

    ``enabled``: ``False`` turns detection off.
    ``min_similarity``: story similarity (estimated cosine) of "the same story".
    ``min_links``: members among an article's neighbours needed to join an event.
    ``background_seconds`` / ``burst_ratio``: the burst test (0 seconds: off).
    ``max_figure_share``: articles whose words are more than this share figures (tables:
    earnings, prices, spreads) do not count toward events.
    ``growth_bucket_seconds``: the step of a report's growth curve.
    """

    SCHEME = "story-events"

    enabled: bool = True
    min_articles: int = 15
    window_seconds: float = 4 * 3600.0
    min_similarity: float = 0.3
    min_sources: int = 3
    min_links: int = 2
    background_seconds: float = 7 * 86400.0
    burst_ratio: float = 1.0
    max_figure_share: float = 0.2
    growth_bucket_seconds: float = 3600.0

    def __post_init__(self) -> None:
        if not isinstance(self.enabled, bool):
            raise ConfigError("enabled must be a bool")
        check_range("max_figure_share", self.max_figure_share, low=0.0, high=1.0)
        check_int("min_articles", self.min_articles, low=0, high=1_000_000)
        check_range("window_seconds", self.window_seconds, low=0.0, low_open=True)
        check_range("min_similarity", self.min_similarity, low=-1.0, high=1.0)
        check_int("min_sources", self.min_sources, low=1, high=1_000_000)
        check_int("min_links", self.min_links, low=1, high=1_000_000)
        check_range("background_seconds", self.background_seconds, low=0.0)
        check_range("burst_ratio", self.burst_ratio, low=0.0, low_open=True)
        check_range("growth_bucket_seconds", self.growth_bucket_seconds, low=0.0, low_open=True)


def _default_vector() -> StoryVectorConfig:
    return StoryVectorConfig()


def _default_events() -> EventConfig:
    return EventConfig()


@dataclasses.dataclass(frozen=True)
class StoryConfig(Config):
    """The story detector.

    * ``vector``: the story vector (:class:`~neardup.sketch.story.StoryVectorConfig`);
    * ``buffer_size``: the story index's buffer of rows added out of date order;
    * ``df_bucket_bits``: document frequencies in ``2**df_bucket_bits`` hashed buckets;
    * ``window_seconds`` / ``min_similarity``: the one query per article -- the articles
      stored before it dated within this many seconds of it (2 days, either side), with at
      least this story similarity (0.15); it must cover the event window;
    * ``similar_window_seconds``: :meth:`StoryDesk.similar` and the stream's ``similar``
      look this many seconds either side of the article's date (7 days; 0: no window);
    * ``events``: the event rule (:class:`EventConfig`).
    """

    SCHEME = "stories"

    vector: StoryVectorConfig = dataclasses.field(default_factory=_default_vector)
    buffer_size: int = 4096
    df_bucket_bits: int = 22
    window_seconds: float = 2 * 86400.0
    min_similarity: float = 0.15
    similar_window_seconds: float = 7 * 86400.0
    events: EventConfig = dataclasses.field(default_factory=_default_events)

    def __post_init__(self) -> None:
        if not isinstance(self.vector, StoryVectorConfig):
            raise ConfigError("vector must be a StoryVectorConfig")
        if not isinstance(self.events, EventConfig):
            raise ConfigError("events must be an EventConfig")
        check_int("buffer_size", self.buffer_size, low=1, high=1 << 22)
        check_int("df_bucket_bits", self.df_bucket_bits, low=8, high=30)
        check_range("window_seconds", self.window_seconds, low=0.0, low_open=True)
        check_range("min_similarity", self.min_similarity, low=-1.0, high=1.0)
        check_range("similar_window_seconds", self.similar_window_seconds, low=0.0)
        if self.window_seconds < self.events.window_seconds:
            raise ConfigError(
                f"window_seconds ({self.window_seconds}) must cover the event window "
                f"({self.events.window_seconds})"
            )
        if self.min_similarity > self.events.min_similarity:
            raise ConfigError(
                f"min_similarity ({self.min_similarity}) must not exceed the events' "
                f"({self.events.min_similarity})"
            )
