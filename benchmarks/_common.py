"""Shared helpers of the benchmark scripts: machine info, the real data, and saving results.

Every ``benchmarks/bench_<topic>.py`` records the machine it ran on next to its figures and writes
them to ``benchmarks/results/<topic>.json``; this module is the one copy of that code, of the
Reuters-21578 reader, and of the small timing and memory probes several scripts share. Scripts are
run as ``python benchmarks/bench_<topic>.py``, so the script folder is on ``sys.path`` and they
import it as ``_common``.
"""

from __future__ import annotations

import datetime
import gzip
import json
import multiprocessing
import os
import platform
import resource
import time
from collections.abc import Callable, Iterable, Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

#: The shared data folder (``shared/data`` beside the repository); ``NEARDUP_DATA`` overrides.
DATA = Path(os.environ.get("NEARDUP_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
#: Reuters-21578 in wire (chronological) order, one JSON object per line.
REUTERS = DATA / "reuters21578"
#: Where ``save(topic, ...)`` writes; ``NEARDUP_BENCH_RESULTS`` redirects it (e.g. for trial runs
#: that must not replace the recorded results).
RESULTS = Path(os.environ.get("NEARDUP_BENCH_RESULTS", Path(__file__).resolve().parent / "results"))

DEFAULT_LIBRARIES = ("neardup", "numpy", "numba")


def cpu_model() -> str:
    """The ``model name`` line of /proc/cpuinfo, or ``"unknown"``."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def loadavg() -> list[float]:
    """The 1, 5 and 15 minute load averages, rounded to 0.01."""
    return [round(x, 2) for x in os.getloadavg()]


def machine(libraries: Iterable[str] = DEFAULT_LIBRARIES) -> dict[str, Any]:
    """Platform, CPU model and count, load average, Python and library versions, date (UTC).

    ``versions`` maps each requested distribution name to its installed version, or ``None``
    when it is not installed.
    """
    versions: dict[str, str | None] = {}
    for lib in libraries:
        try:
            versions[lib] = metadata.version(lib)
        except metadata.PackageNotFoundError:
            versions[lib] = None
    return {
        "platform": platform.platform(),
        "cpu": cpu_model(),
        "cpus": os.cpu_count(),
        "loadavg": loadavg(),
        "python": platform.python_version(),
        "versions": versions,
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    }


def read_reuters(name: str = "docs.jsonl.gz") -> Iterator[dict[str, Any]]:
    """Rows of one Reuters-21578 file (``docs.jsonl.gz`` or a labels file), in file order."""
    path = REUTERS / name
    if not path.exists():
        raise SystemExit(f"real data not found at {path}; set NEARDUP_DATA")
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            yield json.loads(line)


def load_texts(limit: int | None = None, min_chars: int = 200) -> list[str]:
    """Reuters-21578 bodies of at least ``min_chars`` characters, in wire order."""
    out = []
    for row in read_reuters():
        text = row["text"]
        if len(text) >= min_chars:
            out.append(text)
            if limit is not None and len(out) >= limit:
                break
    return out


def save(
    target: str | Path,
    payload: dict[str, Any],
    *,
    libraries: Iterable[str] = DEFAULT_LIBRARIES,
    indent: int = 2,
) -> Path:
    """Write ``payload`` as JSON and return the path written.

    ``target`` is a topic (written to ``benchmarks/results/<topic>.json``) or an explicit path
    (for scripts with ``--out``). A payload without a ``"machine"`` entry gets
    ``machine(libraries)`` as its first key.
    """
    path = target if isinstance(target, Path) else RESULTS / f"{target}.json"
    if "machine" not in payload:
        payload = {"machine": machine(libraries), **payload}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=indent) + "\n")
    return path


def rss_bytes() -> int:
    """Resident set size of this process now (VmRSS of /proc/self/status), 0 if unknown."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def peak_rss_bytes() -> int:
    """Peak resident set size of this process so far (``ru_maxrss``, KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _child(queue: Any, fn: Callable[..., dict[str, Any]], args: tuple[Any, ...]) -> None:
    result = fn(*args)
    result["child_peak_rss_bytes"] = peak_rss_bytes()
    queue.put(result)


def isolated(fn: Callable[..., dict[str, Any]], *args: Any) -> dict[str, Any]:
    """Run ``fn(*args)`` in a forked child so its memory is measured alone (the data is shared).

    Returns ``fn``'s result dict plus ``child_peak_rss_bytes``; raises RuntimeError if the child
    dies without a result (e.g. killed for memory) instead of waiting for ever.
    """
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    proc = ctx.Process(target=_child, args=(queue, fn, args))
    proc.start()
    while True:
        try:
            result: dict[str, Any] = queue.get(timeout=5)
            break
        except Exception:  # queue.Empty: keep waiting while the child lives
            if not proc.is_alive():
                raise RuntimeError(
                    f"{fn.__name__}{args[:1]} failed (exit {proc.exitcode})"
                ) from None
    proc.join()
    return result


def timed(fn: Callable[[], Any], repeat: int) -> list[float]:
    """Wall-clock microseconds of ``repeat`` calls of ``fn`` (``time.perf_counter``), in order."""
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        out.append((time.perf_counter() - start) * 1e6)
    return out


def prf(pred: Any, gold: Any) -> dict[str, float | int]:
    """Precision, recall, F1 (4 decimals) and error counts of boolean predictions vs gold."""
    tp = int(np.sum(pred & gold))
    p = tp / max(1, int(np.sum(pred)))
    r = tp / max(1, int(np.sum(gold)))
    return {
        "precision": round(p, 4),
        "recall": round(r, 4),
        "f1": round(2 * p * r / (p + r), 4) if p + r else 0.0,
        "false_positives": int(np.sum(pred & ~gold)),
        "false_negatives": int(np.sum(~pred & gold)),
    }
