"""Request metrics in the Prometheus text exposition format (version 0.0.4), hand-written.

Counters and a latency histogram per ``(method, route template, status)``; gauges (index sizes,
resident memory) are supplied by the caller at render time.  No dependency: the format is a
few lines of text, and ``prometheus_client`` would add a global registry that does not suit
an app factory called several times in one process (tests).

Guarantees: counts are exact per process.  With ``--workers N`` each worker keeps its own
figures and a scrape reaches one worker (say which by the ``pid`` label), as with any
multi-process Python server that does not share memory.
"""

from __future__ import annotations

import bisect
import os
import threading
from collections.abc import Mapping

__all__ = ["LATENCY_BUCKETS", "Metrics", "resident_memory_bytes"]

#: Upper bounds (seconds) of the latency histogram: fine below 10 ms, where the dedup goal is.
LATENCY_BUCKETS: tuple[float, ...] = (
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
)  # fmt: skip


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _number(value: float) -> str:
    # Integral values print without an exponent (1000000, not 1e+06): easier to read by eye.
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def resident_memory_bytes() -> int:
    """Resident set size of this process from /proc (0 where /proc is absent)."""
    try:
        with open("/proc/self/statm", encoding="ascii") as fh:
            pages = int(fh.read().split()[1])
    except (OSError, ValueError, IndexError):
        return 0
    return pages * os.sysconf("SC_PAGE_SIZE")


class Metrics:
    """Thread-safe request counters and latency histograms."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[tuple[str, str, str], int] = {}
        self._hist: dict[tuple[str, str], list[int]] = {}
        self._sums: dict[tuple[str, str], float] = {}

    def observe(self, method: str, route: str, status: int, seconds: float) -> None:
        """Record one finished request."""
        key = (method, route)
        bucket = bisect.bisect_left(LATENCY_BUCKETS, seconds)
        with self._lock:
            ckey = (method, route, str(status))
            self._counts[ckey] = self._counts.get(ckey, 0) + 1
            hist = self._hist.get(key)
            if hist is None:
                hist = self._hist[key] = [0] * (len(LATENCY_BUCKETS) + 1)
            hist[bucket] += 1
            self._sums[key] = self._sums.get(key, 0.0) + seconds

    def render(self, gauges: Mapping[str, tuple[str, float]]) -> str:
        """The exposition text; ``gauges`` maps a metric name to (help text, value)."""
        pid = str(os.getpid())
        lines = [
            "# HELP neardup_http_requests_total HTTP requests served, by route and status.",
            "# TYPE neardup_http_requests_total counter",
        ]
        with self._lock:
            counts = sorted(self._counts.items())
            hists = sorted((k, list(v)) for k, v in self._hist.items())
            sums = dict(self._sums)
        for (method, route, status), n in counts:
            lines.append(
                f'neardup_http_requests_total{{method="{method}",route="{_escape(route)}",'
                f'status="{status}",pid="{pid}"}} {n}'
            )
        lines += [
            "# HELP neardup_http_request_duration_seconds Time from request to response end.",
            "# TYPE neardup_http_request_duration_seconds histogram",
        ]
        for (method, route), hist in hists:
            labels = f'method="{method}",route="{_escape(route)}",pid="{pid}"'
            cumulative = 0
            for bound, n in zip(LATENCY_BUCKETS, hist, strict=False):
                cumulative += n
                lines.append(
                    f'neardup_http_request_duration_seconds_bucket{{{labels},le="{bound}"}} '
                    f"{cumulative}"
                )
            cumulative += hist[-1]
            lines.append(
                f'neardup_http_request_duration_seconds_bucket{{{labels},le="+Inf"}} {cumulative}'
            )
            lines.append(
                f"neardup_http_request_duration_seconds_sum{{{labels}}} {sums[(method, route)]:.6f}"
            )
            lines.append(f"neardup_http_request_duration_seconds_count{{{labels}}} {cumulative}")
        for name, (help_text, value) in sorted(gauges.items()):
            lines += [
                f"# HELP {name} {help_text}",
                f"# TYPE {name} gauge",
                f'{name}{{pid="{pid}"}} {_number(value)}',
            ]
        return "\n".join(lines) + "\n"
