"""Parameters of origin detection (seed 004, Abdel Hamid et al., WWW 2009), and memory sizes.

:class:`OriginConfig` names every choice of the paper's three phases (Section 2):

* selection (Section 2.1): ``all``, ``every`` (Every l-th), ``modulo`` (M l), ``winnowing``
  (W w), ``hashbreak`` (revised hash-breaking Hb p), ``dct`` (Dct p), ``hailstorm`` (Hs), and
  ``no_overlap=True`` for the "no complete overlap" variants NM l, NW w, NHs;
* hashing (Section 2.2): a fixed-size bucketed table of ``memory_bytes`` (``None`` = unlimited,
  the reference mode) with ``bucket_size`` shingles a bucket and ``eviction`` ``random``,
  ``lru``, ``copycount`` or ``lucky``;
* estimation (Section 2.3): ``nb``, ``e`` (expansion), ``b`` (bridging, limit ``bridge_limit``
  T), ``be`` (bridging with expansion).

and one mode of ours, ``adaptive`` (the default; docs/origin.md, "Exact while memory
lasts"): every shingle is looked up and stored while its bucket has room, so a stream whose
shingles fit is answered exactly (the reference mode's answer); a full bucket evicts the
shingles that are not selected ("loose") first and drops new loose ones, so under pressure
the table holds the selected shingles (the anchors) as in the paper; each bucket remembers
which fingerprints it lost (a 64-bit mask), and only shingles that may have been lost are
estimated.

Defaults (chosen on the tuning half of the copy stream by ``tune_default`` in
``research/origin_small.py``; docs/origin.md): adaptive, NHs anchors, Lucky eviction with halving
limit 3 and y = 3, bridging with T = 255 and offset tolerance 2, edge extension 1, 4-byte
fingerprints and origins.  :meth:`OriginConfig.paper` is the paper's NHs + Lucky + BE with
its constants (k = 8, 64 shingles a bucket, T = 30, y = 7, halving limit 11, 6 + 8-byte
entries, only selected shingles looked up); :meth:`OriginConfig.preset` names the
configurations a user picks from.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from neardup.config import Config, check_choice, check_int
from neardup.errors import ConfigError

__all__ = [
    "DEFAULT_SELECTION_PARAMETER",
    "ESTIMATIONS",
    "EVICTIONS",
    "PRESETS",
    "SELECTIONS",
    "OriginConfig",
    "parse_memory",
]

PRESETS = ("exact", "balanced", "small-memory")
SELECTIONS = ("all", "every", "modulo", "winnowing", "hashbreak", "dct", "hailstorm")
EVICTIONS = ("random", "lru", "copycount", "lucky")
ESTIMATIONS = ("nb", "e", "b", "be")

# The parameter value that performed best for each type in the paper (Section 3.4: "NHs,
# 4th, NW8, NM3, Hb3 and Dct8"); ``all`` and ``hailstorm`` take no parameter.
DEFAULT_SELECTION_PARAMETER: dict[str, int] = {
    "every": 4,
    "modulo": 3,
    "winnowing": 8,
    "hashbreak": 3,
    "dct": 8,
}
_NO_OVERLAP_SELECTIONS = ("modulo", "winnowing", "hailstorm")
_SEGMENT_SELECTIONS = ("hashbreak", "dct")
_PARAMETER_RANGE = {"every": (1, 1024), "modulo": (1, 1 << 20), "winnowing": (1, 1024)}
_PARAMETER_RANGE.update({"hashbreak": (1, 1024), "dct": (1, 1024)})


@dataclasses.dataclass(frozen=True)
class OriginConfig(Config):
    """Every parameter of the origin detector; frozen and validated.

    ``selection_parameter`` is l (every, modulo), w (winnowing) or p (hashbreak, dct); ``None``
    takes the paper's best value (:data:`DEFAULT_SELECTION_PARAMETER`).  ``memory_bytes`` is
    the hard budget of the hash table (``None``: unlimited, no eviction).  ``insert_modulo``
    r > 1 (not in the paper; 1 = the paper) still looks up every selected shingle but stores
    only those whose fingerprint bits 16-31 are 0 mod r: a content-defined 1/r sample, the
    same shingles in every document, so a small table spans r times more documents while
    every token stays covered by a looked-up shingle (see docs/origin.md, small memory).
    Three more extensions, not in the paper (defaults = the paper; docs/origin.md, "Small
    memory"): ``bridge_tolerance`` d lets bridging accept partners whose offset difference is
    off by at most d (word edits shift the offsets); ``edge_extension`` r labels up to r
    unfound selected neighbours on each side of a found copied shingle (unverified; marks
    tokens only); ``fingerprint_bytes`` 4 or 3 (paper: 6) and ``origin_bytes`` 4 (paper: 8)
    pack an entry into fewer bytes, so the same ``memory_bytes`` holds more entries (4-byte
    origins: streams of at most 2^32 documents; fewer fingerprint bits: more false matches,
    bucket_size / 2^(8 x fingerprint_bytes) per probe of a new shingle).
    ``seed`` seeds the token hashes and the eviction random generator (results are
    deterministic for a seed).
    """

    SCHEME = "origin"

    shingle_width: int = 8
    selection: str = "hailstorm"
    selection_parameter: int | None = None
    no_overlap: bool | None = None
    memory_bytes: int | None = 100_000_000
    bucket_size: int = 64
    eviction: str = "lucky"
    estimation: str = "b"
    bridge_limit: int = 255
    lucky_every: int = 3
    lucky_limit: int = 3
    copycount_saturated: int = 10
    seed: int = 0
    insert_modulo: int = 1
    bridge_tolerance: int = 2
    edge_extension: int = 1
    fingerprint_bytes: int = 4
    origin_bytes: int = 4
    adaptive: bool = True

    def __post_init__(self) -> None:
        check_int("shingle_width", self.shingle_width, low=1, high=64)
        check_choice("selection", self.selection, SELECTIONS)
        check_choice("eviction", self.eviction, EVICTIONS)
        check_choice("estimation", self.estimation, ESTIMATIONS)
        if self.no_overlap is None:
            # the paper's variant where it defines one (NM, NW, NHs); plain elsewhere
            object.__setattr__(self, "no_overlap", self.selection in _NO_OVERLAP_SELECTIONS)
        if not isinstance(self.no_overlap, bool):
            raise ConfigError(f"no_overlap must be a bool or None, got {self.no_overlap!r}")
        if self.no_overlap and self.selection in _SEGMENT_SELECTIONS:
            raise ConfigError(
                f"selection {self.selection!r} cuts the text into segments that never overlap:"
                " no_overlap does not apply (use no_overlap=False or None)"
            )
        if not isinstance(self.adaptive, bool):
            raise ConfigError(f"adaptive must be a bool, got {self.adaptive!r}")
        if self.adaptive and self.selection in _SEGMENT_SELECTIONS:
            raise ConfigError(
                "adaptive mode keeps every shingle and needs a shingle selection for its"
                f" anchors, not {self.selection!r} (segments); use adaptive=False"
            )
        if self.selection_parameter is not None:
            if self.selection not in _PARAMETER_RANGE:
                raise ConfigError(f"selection {self.selection!r} takes no selection_parameter")
            low, high = _PARAMETER_RANGE[self.selection]
            check_int("selection_parameter", self.selection_parameter, low=low, high=high)
        if self.memory_bytes is not None:
            check_int("memory_bytes", self.memory_bytes, low=1)
        check_int("bucket_size", self.bucket_size, low=1, high=255)
        check_int("bridge_limit", self.bridge_limit, low=2, high=255)
        check_int("lucky_every", self.lucky_every, low=1, high=1 << 20)
        check_int("lucky_limit", self.lucky_limit, low=1, high=254)
        check_int("copycount_saturated", self.copycount_saturated, low=1, high=255)
        check_int("seed", self.seed, low=0, high=(1 << 64) - 1)
        check_int("insert_modulo", self.insert_modulo, low=1, high=1 << 16)
        check_int("bridge_tolerance", self.bridge_tolerance, low=0, high=127)
        check_int("edge_extension", self.edge_extension, low=0, high=255)
        check_int("fingerprint_bytes", self.fingerprint_bytes, low=3, high=6)
        check_choice("fingerprint_bytes", self.fingerprint_bytes, (6, 4, 3))
        check_int("origin_bytes", self.origin_bytes, low=4, high=8)
        check_choice("origin_bytes", self.origin_bytes, (8, 4))

    @classmethod
    def preset(cls, name: str, memory_bytes: int | None = 100_000_000) -> OriginConfig:
        """A named configuration for users (:data:`PRESETS`):

        * ``"exact"``: every shingle kept, memory grows with the stream (about 200 bytes a
          distinct shingle): the exact origin of every passage (the paper's reference mode);
          ``memory_bytes`` must be None.
        * ``"balanced"`` (the default): exact while the ``memory_bytes`` table has room,
          then thinned to Hailstorm anchors (the defaults of this class).
        * ``"small-memory"``: the same with 3-byte fingerprints, so a small table holds a
          third more shingles at the cost of one false match per ~4 million new shingles.
        """
        check_choice("preset", name, PRESETS)
        if name == "exact":
            if memory_bytes is not None:
                raise ConfigError(
                    "the exact preset keeps every shingle (memory grows with the stream):"
                    " give no memory size, or use the balanced preset with one"
                )
            return cls(memory_bytes=None)
        if memory_bytes is None:
            raise ConfigError(f"the {name} preset needs a memory size (like 100MB)")
        if name == "small-memory":
            return cls(memory_bytes=memory_bytes, fingerprint_bytes=3)
        return cls(memory_bytes=memory_bytes)

    @classmethod
    def paper(cls, **overrides: Any) -> OriginConfig:
        """The paper's best configuration, NHs + Lucky + BE with its constants (k = 8, 64
        shingles a bucket, T = 30, y = 7, halving limit 11, 6 + 8-byte entries), only the
        selected shingles looked up and stored; ``overrides`` change single fields (the
        research grid of ``research/origin_experiments.py`` starts here)."""
        base: dict[str, Any] = {
            "selection": "hailstorm", "no_overlap": None, "eviction": "lucky",
            "estimation": "be", "bridge_limit": 30, "lucky_every": 7, "lucky_limit": 11,
            "bridge_tolerance": 0, "edge_extension": 0, "fingerprint_bytes": 6,
            "origin_bytes": 8, "adaptive": False,
        }  # fmt: skip
        base.update(overrides)
        return cls(**base)

    @classmethod
    def reference(cls, shingle_width: int = 8, seed: int = 0) -> OriginConfig:
        """The reference mode: All selection, unlimited memory, no estimation (Section 3.1)."""
        return cls(
            shingle_width=shingle_width,
            selection="all",
            no_overlap=False,
            memory_bytes=None,
            eviction="random",
            estimation="nb",
            seed=seed,
        )

    @property
    def parameter(self) -> int:
        """The effective selection parameter (l, w or p); 0 for all and hailstorm."""
        if self.selection_parameter is not None:
            return self.selection_parameter
        return DEFAULT_SELECTION_PARAMETER.get(self.selection, 0)

    @property
    def label(self) -> str:
        """The paper's short name, e.g. ``NHs+LS+BE`` or ``4th+R+NB`` (adaptive mode:
        ``adaptive(NHs)+...``, the anchors' selection in brackets)."""
        names = {"all": "All", "hailstorm": "Hs", "modulo": "M", "winnowing": "W"}
        names.update({"hashbreak": "Hb", "dct": "Dct"})
        if self.selection == "every":
            sel = f"{self.parameter}th"
        else:
            sel = names[self.selection] + (str(self.parameter) if self.parameter else "")
            if self.no_overlap:
                sel = "N" + sel
        if self.insert_modulo > 1:
            sel += f"(store 1/{self.insert_modulo})"
        if self.adaptive:
            sel = f"adaptive({sel})"
        evict = {"random": "R", "lru": "LRU", "copycount": "CC", "lucky": "LS"}[self.eviction]
        if self.eviction == "lucky":
            knobs = [f"limit {self.lucky_limit}"] if self.lucky_limit != 11 else []
            knobs += [f"y {self.lucky_every}"] if self.lucky_every != 7 else []
            evict += f"({', '.join(knobs)})" if knobs else ""
        estimation = self.estimation.upper()
        knobs = []
        if self.estimation in ("b", "be") and self.bridge_limit != 30:
            knobs.append(f"T {self.bridge_limit}")
        if self.estimation in ("b", "be") and self.bridge_tolerance:
            knobs.append(f"tol {self.bridge_tolerance}")
        if self.edge_extension:
            knobs.append(f"ext {self.edge_extension}")
        estimation += f"({', '.join(knobs)})" if knobs else ""
        packed = ""
        if (self.fingerprint_bytes, self.origin_bytes) != (6, 8):
            packed = f"+packed({self.fingerprint_bytes}+{self.origin_bytes} B)"
        return f"{sel}+{evict}+{estimation}{packed}"


_MEMORY_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?i?b?)\s*$", re.IGNORECASE)
_UNITS = {
    "": 1,
    "b": 1,
    "k": 10**3,
    "kb": 10**3,
    "m": 10**6,
    "mb": 10**6,
    "g": 10**9,
    "gb": 10**9,
    "t": 10**12,
    "tb": 10**12,
    "kib": 1 << 10,
    "mib": 1 << 20,
    "gib": 1 << 30,
    "tib": 1 << 40,
}


def parse_memory(text: str) -> int:
    """``"100MB"`` -> 100,000,000 bytes.  Units B, KB, MB, GB, TB (powers of 1000) and KiB,
    MiB, GiB, TiB (powers of 1024), case-insensitive; a bare number is bytes."""
    match = _MEMORY_RE.match(str(text))
    if match is None or match.group(2).lower() not in _UNITS:
        raise ConfigError(f"memory size {text!r} is not like 100MB, 2GiB or 5000000")
    value = int(float(match.group(1)) * _UNITS[match.group(2).lower()])
    if value < 1:
        raise ConfigError(f"memory size {text!r} is less than one byte")
    return value
