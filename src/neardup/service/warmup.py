"""Warm a worker process up before it serves: imports and JIT compilation off the request path.

A fresh worker pays, on its first requests, for imports done lazily and for loading its
compiled kernels (numba), or compiling them when the on-disk cache does not hold them yet.
In the service that cost landed on the first requests: the first 1,000 articles ingested over
HTTP cost 1.1 ms of server CPU each against 0.3 ms in steady state (``docs/service.md``,
*Performance*).  :func:`warm_up` runs the service's own code paths once (ingest, similar
news, events, result-set dedup, the judgement with its explanation), on scratch objects,
while the worker starts; nothing the service does not run (the batch engine's and the
Python API's other indexes), which on a new machine would only add to the compiling.

Guarantees: touches nothing the service serves from (a throw-away ``:memory:`` store);
deterministic synthetic texts; bounded (about two seconds of CPU once the numba cache is
warm).  Any failure is logged and ignored: warming is a speed-up, never a condition for
serving.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time

__all__ = ["finish_warm_up_beside", "start_warm_up_beside", "warm_up"]

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


def _warm_result_sets(texts: list[str]) -> None:
    # Result-set dedup (both signatures) and the judgement with its explanation: the kernels
    # ingest does not run, first, so a warm-up beside a preload compiles them meanwhile.
    from neardup.detect.resultset import dedup_result_set
    from neardup.rule import judge
    from neardup.sketch import sign

    dedup_result_set([sign(t, "sentences") for t in texts], 0.5)
    dedup_result_set([sign(t) for t in texts])  # the default: the rule's coverage sketch
    judge(texts[0], texts[1], explain=True)


def _warm_stream(texts: list[str]) -> None:
    from neardup.api import NewsIndex
    from neardup.records import Article
    from neardup.service.backend import plain

    with NewsIndex(store=":memory:", checkpoint=None) as scratch:
        articles = [
            Article.from_mapping({"id": f"w{i}", "text": t, "date": f"1987-02-26T1{i}:00:00Z"})
            for i, t in enumerate(texts)
        ]
        plain(scratch.ingest_many(articles[:3]))
        plain(scratch.ingest_many(articles[3:]))
        plain(scratch.similar("w0", 10))
        plain(scratch.events())


def warm_up() -> float:
    """Run the service's hot paths once on scratch data; returns the seconds it took."""
    start = time.perf_counter()
    try:
        texts = _texts(6)
        _warm_result_sets(texts)
        _warm_stream(texts)
    except Exception as exc:
        # A failed warm-up must never stop the service: it only loses the speed-up.
        log.warning("warm-up skipped: %s: %s", type(exc).__name__, exc)
    took = time.perf_counter() - start
    log.info("warm-up took %.2f s", took)
    return took


def _cores() -> int:
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity is not None else (os.cpu_count() or 1)


def start_warm_up_beside() -> subprocess.Popen[bytes] | None:
    """Start :func:`warm_up` in a process of its own, to run beside work of the caller's.

    On a new machine most of a first start is numba compiling kernels (tens of seconds);
    what this process compiles goes to numba's on-disk cache, which the service's workers
    then load.  ``neardup serve --preload N`` runs it beside its preload, which compiles
    the ingest kernels meanwhile (:func:`warm_up` compiles the others first).  ``None``
    when the machine has one core, where it would only take the caller's, or when the
    process cannot be started.  The caller ends it with :func:`finish_warm_up_beside`;
    nothing depends on its outcome."""
    if _cores() < 2:
        return None
    try:
        return subprocess.Popen(
            [sys.executable, "-m", "neardup.service.warmup"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    except OSError as exc:  # an interpreter this user may not start, say: only slower
        log.info("warm-up beside the caller not started: %s", exc)
        return None


#: The longest :func:`finish_warm_up_beside` waits: several times a cold warm-up on a slow
#: 2-core machine (about 40 s measured), so only a process that hangs is cut short.
WARM_UP_WAIT_SECONDS = 600.0


def finish_warm_up_beside(helper: subprocess.Popen[bytes] | None, *, cancel: bool = False) -> None:
    """Wait for a :func:`start_warm_up_beside` process to end (at most
    :data:`WARM_UP_WAIT_SECONDS`), or end it now (``cancel``: the caller's work failed);
    ``None`` does nothing.  Never raises for the process's own failure."""
    if helper is None:
        return
    if not cancel:
        try:
            helper.wait(timeout=WARM_UP_WAIT_SECONDS)
            return
        except subprocess.TimeoutExpired:
            log.warning(
                "warm-up beside the caller still running after %.0f s: ended", WARM_UP_WAIT_SECONDS
            )
    helper.kill()
    helper.wait()


if __name__ == "__main__":
    warm_up()
