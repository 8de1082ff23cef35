"""Sentence sketch (seed 000: "Detecting documents near duplications in realtime", 2008).

Offline signature of an article: split it into natural sentences, normalise each (stemmed,
lower-cased, short words and punctuation dropped), take the CRC32 of each normalised sentence
as its shingle, sort, and keep the ``k`` smallest distinct values.  Keeping the minimum values
makes the sample consistent across documents, so two sketches can be compared by a sorted
merge (see :func:`neardup.similarity.bottomk_jaccard`, which is the exact Jaccard of the two
sentence sets when both sketches hold fewer than ``k`` values).

Default ``k = 32``: a sketch holding every sentence of an article is the exact sentence set,
and the bottom-k decision ``>= 0.5`` agrees with the exact one once ``k`` covers most
articles' sentences; result-set dedup does not slow down with ``k`` (only articles sharing a
sentence are merged) and a value costs 4 bytes, so the larger ``k`` is nearly free and leaves
headroom for web articles, which are longer than newswire.  The measurement behind the choice
is in docs/resultset.md (``benchmarks/bench_sketch_k.py``).

Guarantees: deterministic (CRC32 of UTF-8 bytes); the values are sorted ascending, distinct,
uint32, at most ``k`` of them.  A text with no sentence that keeps a term after normalisation
gives the empty signature, which is a near-duplicate only of another empty signature.
"""

from __future__ import annotations

import dataclasses
import zlib

import numpy as np

from neardup.config import Config, check_int
from neardup.errors import ConfigError
from neardup.sketch.base import Signature
from neardup.text import TextConfig, ensure_text, sentence_spans, tokenize

__all__ = ["SentenceSketchConfig", "sentence_hashes", "sign_sentences"]


@dataclasses.dataclass(frozen=True)
class SentenceSketchConfig(Config):
    """Parameters of the sentence sketch: ``k`` smallest sentence hashes are kept."""

    SCHEME = "sentences"

    k: int = 32
    text: TextConfig = dataclasses.field(
        default_factory=lambda: TextConfig(min_token_length=3, stem=True)
    )

    def __post_init__(self) -> None:
        check_int("k", self.k, low=1, high=1 << 16)
        if not isinstance(self.text, TextConfig):
            raise ConfigError(f"text must be a TextConfig, got {type(self.text).__name__}")


def sentence_hashes(text: str, config: SentenceSketchConfig | None = None) -> np.ndarray:
    """Sorted distinct CRC32 values of all normalised sentences of ``text`` (uint32)."""
    text = ensure_text(text)
    cfg = config or SentenceSketchConfig()
    crc32 = zlib.crc32
    values = set()
    for start, end in sentence_spans(text):
        forms = tokenize(text[start:end], cfg.text).forms
        if forms:
            values.add(crc32(" ".join(forms).encode("utf-8", "surrogatepass")))
    return np.array(sorted(values), dtype=np.uint32)


def sign_sentences(text: str, config: SentenceSketchConfig | None = None) -> Signature:
    """The bottom-``k`` sentence sketch of ``text``."""
    cfg = config or SentenceSketchConfig()
    return Signature(cfg.scheme_id, sentence_hashes(text, cfg)[: cfg.k])
