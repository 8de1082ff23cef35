"""Shared helpers of bench_resultset.py, bench_lcs.py and bench_sketch_k.py."""

from __future__ import annotations

import datetime
import gzip
import json
import os
import platform
from importlib import metadata
from pathlib import Path
from typing import Any

DATA = Path(os.environ.get("NEARDUP_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
RESULTS = Path(__file__).resolve().parent / "results"


def machine() -> dict[str, Any]:
    """Platform, CPU model, Python and library versions, and the date (UTC)."""
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    versions = {}
    for lib in ("neardup", "numpy", "numba", "pydivsufsort", "xxhash", "PyStemmer"):
        try:
            versions[lib] = metadata.version(lib)
        except metadata.PackageNotFoundError:
            versions[lib] = "absent"
    return {
        "platform": platform.platform(),
        "cpu": cpu,
        "cpus": os.cpu_count(),
        "loadavg_1min": os.getloadavg()[0],
        "python": platform.python_version(),
        "versions": versions,
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    }


def load_texts(limit: int | None = None, min_chars: int = 200) -> list[str]:
    """Reuters-21578 bodies of at least ``min_chars`` characters, in wire order."""
    path = DATA / "reuters21578" / "docs.jsonl.gz"
    if not path.exists():
        raise SystemExit(f"real data not found at {path}; set NEARDUP_DATA")
    out = []
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            text = json.loads(line)["text"]
            if len(text) >= min_chars:
                out.append(text)
                if limit is not None and len(out) >= limit:
                    break
    return out


def save(topic: str, payload: dict[str, Any]) -> Path:
    """Write ``benchmarks/results/<topic>.json`` with the machine info."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{topic}.json"
    path.write_text(json.dumps({"machine": machine(), **payload}, indent=2) + "\n")
    return path
