"""Warm a worker process up before it serves: imports and JIT compilation off the request path.

A fresh worker pays, on its first ingest, for imports done lazily and for numba compiling what
its on-disk cache cannot hold (the typed lists through which the indexes probe their sorted
segments are compiled in every process: ~1-2 s of CPU measured on the 2-core benchmark
machine).  In the service that cost landed on the first requests: the first 1,000 articles
ingested over HTTP cost 1.1 ms of server CPU each against 0.3 ms in steady state
(``docs/service.md``, *Performance*).  :func:`warm_up` runs the same code paths once, on
scratch objects, while the worker starts.

Guarantees: touches nothing the service serves from (a throw-away ``:memory:`` store and
indexes of its own); deterministic synthetic texts; bounded (a few hundred milliseconds of
CPU once the numba cache is warm).  Any failure is logged and ignored: warming is a speed-up,
never a condition for serving.
"""

from __future__ import annotations

import logging
import time

import numpy as np

__all__ = ["warm_up"]

log = logging.getLogger("neardup.service")

_PROSE = (
    "shares rose sharply in tokyo on monday as exporters led gains after the central bank "
    "said it would keep interest rates unchanged while analysts expected further growth in "
    "industrial output and oil prices fell on reports of higher supply from producers"
)


def _texts(count: int) -> list[str]:
    """Deterministic news-like texts; consecutive pairs share most of their sentences, so the
    verification stages (containment, coverage, sentence sketches) run too."""
    words_of = _PROSE.split()
    out = []
    for i in range(count):
        base = i - (i % 2)
        words = [words_of[(base * 7 + j * 3) % len(words_of)] for j in range(60)]
        sentences = [" ".join(words[k : k + 12]).capitalize() + "." for k in range(0, 60, 12)]
        sentences.append(f"Reported by desk {i}.")
        out.append(" ".join(sentences))
    return out


def _warm_indexes() -> None:
    # One row per segment (buffer of 1): every add makes a segment, so queries run both the
    # single-segment path and the typed-list path over several segments, as a large index does.
    from neardup.index import HammingIndex, LSHIndex
    from neardup.sketch import sign

    hamming = HammingIndex(max_distance=7, buffer_size=1)
    lsh = LSHIndex(num_perm=32, threshold=0.2, buffer_size=1)
    rng = np.random.default_rng(0)
    fingerprints = rng.integers(0, np.iinfo(np.int64).max, size=4, dtype=np.int64)
    for key, text in enumerate(_texts(4)):
        hamming.add(key, int(fingerprints[key]))
        hamming.query(int(fingerprints[0]), 7)
        lsh.add(key, sign(text, "minhash", num_perm=32))
        lsh.query(sign(text, "minhash", num_perm=32))


def _warm_stream() -> None:
    from neardup.api import NewsIndex
    from neardup.detect.resultset import dedup_result_set
    from neardup.records import Article
    from neardup.service.backend import plain
    from neardup.sketch import sign

    texts = _texts(6)
    with NewsIndex(store=":memory:", checkpoint=None) as scratch:
        articles = [
            Article.from_mapping({"id": f"w{i}", "text": t, "date": f"1987-02-26T1{i}:00:00Z"})
            for i, t in enumerate(texts)
        ]
        plain(scratch.ingest_many(articles[:3]))
        plain(scratch.ingest_many(articles[3:]))
        plain(scratch.similar("w0", 10))
        plain(scratch.events())
    dedup_result_set([sign(t, "sentences") for t in texts], 0.5)
    dedup_result_set([sign(t) for t in texts])  # the default: the rule's coverage sketch
    _warm_rule(texts)


def _warm_rule(texts: list[str]) -> None:
    # The compiled pair features of the judgement (loaded from numba's cache on first use).
    from neardup.rule import judge

    judge(texts[0], texts[1], explain=True)


def warm_up() -> float:
    """Run the service's hot paths once on scratch data; returns the seconds it took."""
    start = time.perf_counter()
    try:
        _warm_indexes()
        _warm_stream()
    except Exception as exc:
        # A failed warm-up must never stop the service: it only loses the speed-up.
        log.warning("warm-up skipped: %s: %s", type(exc).__name__, exc)
    took = time.perf_counter() - start
    log.info("warm-up took %.2f s", took)
    return took
