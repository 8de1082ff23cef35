"""Parameters of the news stream (what a user sets) and of its candidate search."""

from __future__ import annotations

import dataclasses

from neardup.config import Config, check_int, check_range
from neardup.detect.story import StoryConfig
from neardup.errors import ConfigError
from neardup.records import MAX_DATE, MIN_DATE
from neardup.rule import RuleConfig

__all__ = ["MAX_WINDOW_SECONDS", "CandidateConfig", "StreamConfig"]

#: Widest ``window_seconds``: the span of the dates an article may carry.
MAX_WINDOW_SECONDS = ((MAX_DATE - MIN_DATE).days + 1) * 86_400.0


@dataclasses.dataclass(frozen=True)
class CandidateConfig(Config):
    """Where the stream looks for the stored articles to judge (advanced).

    * ``passage_window``: winnowing window over word 4-shingles (Schleimer et al. 2003):
      every shared run of at least ``passage_window + 3`` words of prose is found (8: any
      shared passage of 11 words, a third of the rule's shortest partial copy);
    * ``max_postings``: a passage fingerprint held by more stored articles than this is
      boilerplate and skipped (64);
    * ``max_verified``: at most this many candidates, those sharing the most fingerprints,
      are judged per article (32);
    * ``story_candidates``: the stored articles most similar in story (the story index's
      answer to the article's one query, :mod:`neardup.detect.stream.stories`) judged too,
      for reports of the same story that share no passage (16).
    """

    SCHEME = "stream-candidates"

    passage_window: int = 8
    max_postings: int = 64
    max_verified: int = 32
    story_candidates: int = 16

    def __post_init__(self) -> None:
        check_int("passage_window", self.passage_window, low=1, high=1024)
        check_int("max_postings", self.max_postings, low=1, high=1 << 30)
        check_int("max_verified", self.max_verified, low=1, high=100_000)
        check_int("story_candidates", self.story_candidates, low=0, high=100_000)


@dataclasses.dataclass(frozen=True)
class StreamConfig(Config):
    """What the news stream does with each article (defaults: docs/stream.md).

    * ``rule``: the near-duplicate judgement (:class:`~neardup.rule.RuleConfig`): the same
      for every detector; its profile fields are fixed for the life of a store, its
      thresholds may change between runs;
    * ``similar_limit``: at most this many related articles listed per decision (10);
    * ``window_seconds``: only stored articles dated within this many seconds of the new one
      are compared (``None``: all);
    * ``store_text``: keep each article's text in the store (needed to explain a decision
      and to show passages);
    * ``max_text_chars``: longer texts are refused with ``InputTooLargeError`` (1,000,000);
    * ``stories``: the story vector, its index and breaking events
      (:class:`~neardup.detect.story.StoryConfig`; seed 003);
    * ``candidates``: where candidates come from (:class:`CandidateConfig`).
    """

    SCHEME = "stream"

    rule: RuleConfig = dataclasses.field(default_factory=RuleConfig)
    similar_limit: int = 10
    window_seconds: float | None = None
    store_text: bool = True
    max_text_chars: int = 1_000_000
    stories: StoryConfig = dataclasses.field(default_factory=StoryConfig)
    candidates: CandidateConfig = dataclasses.field(default_factory=CandidateConfig)

    def __post_init__(self) -> None:
        if not isinstance(self.rule, RuleConfig):
            raise ConfigError(f"rule must be a RuleConfig, got {type(self.rule).__name__}")
        check_int("similar_limit", self.similar_limit, low=0, high=10_000)
        if self.window_seconds is not None:
            # A window as wide as the span of every date matches them all; a wider one
            # cannot be held in microseconds.
            window = self.window_seconds
            check_range("window_seconds", window, low=0.0, high=MAX_WINDOW_SECONDS, low_open=True)
        if not isinstance(self.store_text, bool):
            raise ConfigError("store_text must be a bool")
        check_int("max_text_chars", self.max_text_chars, low=1)
        if not isinstance(self.stories, StoryConfig):
            raise ConfigError(f"stories must be a StoryConfig, got {type(self.stories).__name__}")
        if not isinstance(self.candidates, CandidateConfig):
            raise ConfigError("candidates must be a CandidateConfig")
