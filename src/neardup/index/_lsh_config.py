"""Parameters of :class:`neardup.index.lsh.LSHIndex`: the signature length it accepts and its
band layout, tuned for a threshold (:func:`neardup.sketch.banding.optimal_bands`, datasketch's
criterion) or given."""

from __future__ import annotations

import dataclasses

from neardup.config import Config, check_int, check_range
from neardup.errors import ConfigError
from neardup.sketch.banding import optimal_bands

__all__ = ["LSHIndexConfig"]


@dataclasses.dataclass(frozen=True)
class LSHIndexConfig(Config):
    """Parameters of :class:`LSHIndex`.

    * ``num_perm``: MinHash signature length the index accepts.
    * ``threshold``: Jaccard similarity the bands are tuned for (default 0.8).
    * ``false_positive_weight``, ``false_negative_weight``: weights of the tuning criterion
      (sum to 1; default 0.5 each, as datasketch).
    * ``bands``, ``rows``: give both to override the tuning.
    * ``buffer_size``: recent documents scanned linearly before being sorted into a segment.
    """

    SCHEME = "lsh-index"

    num_perm: int = 128
    threshold: float = 0.8
    false_positive_weight: float = 0.5
    false_negative_weight: float = 0.5
    bands: int | None = None
    rows: int | None = None
    buffer_size: int = 256

    def __post_init__(self) -> None:
        check_int("num_perm", self.num_perm, low=1, high=1 << 14)
        check_range("threshold", self.threshold, low=0.0, high=1.0, low_open=True, high_open=True)
        check_range("false_positive_weight", self.false_positive_weight, low=0.0, high=1.0)
        check_range("false_negative_weight", self.false_negative_weight, low=0.0, high=1.0)
        if abs(self.false_positive_weight + self.false_negative_weight - 1.0) > 1e-9:
            raise ConfigError("false_positive_weight + false_negative_weight must be 1")
        check_int("buffer_size", self.buffer_size, low=1, high=1 << 20)
        if (self.bands is None) != (self.rows is None):
            raise ConfigError("give both bands and rows to override the tuning, or neither")
        if self.bands is not None and self.rows is not None:
            check_int("bands", self.bands, low=1, high=self.num_perm)
            check_int("rows", self.rows, low=1, high=self.num_perm)
            if self.bands * self.rows > self.num_perm:
                raise ConfigError(
                    f"bands * rows = {self.bands * self.rows} exceeds num_perm = {self.num_perm}"
                )

    @property
    def band_layout(self) -> tuple[int, int]:
        """``(bands, rows)``: the override, or the tuned values for the threshold."""
        if self.bands is not None and self.rows is not None:
            return self.bands, self.rows
        return optimal_bands(
            float(self.threshold),
            self.num_perm,
            float(self.false_positive_weight),
            float(self.false_negative_weight),
        )
