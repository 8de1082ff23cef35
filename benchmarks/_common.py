"""Shared helpers of the benchmark scripts: machine info, the real data, and saving results.

Every ``benchmarks/bench_<topic>.py`` records the machine it ran on next to its figures and writes
them to ``benchmarks/results/<topic>.json``; this module is the one copy of that code. Scripts are
run as ``python benchmarks/bench_<topic>.py``, so the script folder is on ``sys.path`` and they
import it as ``_common``.
"""

from __future__ import annotations

import datetime
import gzip
import json
import os
import platform
from collections.abc import Iterable, Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

#: The shared data folder (``shared/data`` beside the repository); ``NEARDUP_DATA`` overrides.
DATA = Path(os.environ.get("NEARDUP_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
#: Reuters-21578 in wire (chronological) order, one JSON object per line.
REUTERS = DATA / "reuters21578"
RESULTS = Path(__file__).resolve().parent / "results"

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
