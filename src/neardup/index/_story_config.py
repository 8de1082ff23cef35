"""Parameters of :class:`neardup.index.story.StoryIndex`: fingerprint size, the merge buffer,
and the approximate candidate stage of large windows."""

from __future__ import annotations

import dataclasses

from neardup.config import Config, check_choice, check_int

__all__ = ["StoryIndexConfig"]


@dataclasses.dataclass(frozen=True)
class StoryIndexConfig(Config):
    """Parameters of :class:`StoryIndex`: fingerprint ``bits`` (64, 128, 256), the
    ``buffer_size`` of rows added out of date order before a merge, and the approximate
    candidate stage of top-``k`` queries: when a window holds more than ``2 * candidates``
    sorted rows, only the (at least) ``candidates`` rows nearest in Hamming distance on the
    first ``prefilter_words`` 64-bit words of the fingerprint (0: all of them, the whole
    Hamming distance) are scored (``candidates=0``: always the exact scan)."""

    SCHEME = "story-index"

    bits: int = 256
    buffer_size: int = 4096
    candidates: int = 16384
    prefilter_words: int = 0

    def __post_init__(self) -> None:
        check_choice("bits", self.bits, (64, 128, 256))
        check_int("buffer_size", self.buffer_size, low=1, high=1 << 22)
        check_int("candidates", self.candidates, low=0, high=1 << 40)
        check_int("prefilter_words", self.prefilter_words, low=0, high=self.bits // 64)
