"""The service never answers client input with a 5xx: structure-aware fuzzing of every
endpoint (``tests/service_fuzz.py``) on SQLite and on PostgreSQL.

The normal suite sends 600 requests a backend; ``-m slow`` sends 20,000 a backend and, when
``NEARDUP_FUZZ_RESULTS`` names a file, records the counts there (a test run never writes into
the checkout on its own)::

    NEARDUP_FUZZ_RESULTS=benchmarks/results/service_fuzz.json \
        python -m pytest -q -m slow tests/test_service_fuzz.py
"""

from __future__ import annotations

import json
import os
import platform
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

warnings.filterwarnings("ignore", message=".*httpx2.*")

from fastapi.testclient import TestClient  # noqa: E402

import service_fuzz  # noqa: E402
from neardup.service.app import create_app  # noqa: E402
from neardup.service.settings import ServiceSettings  # noqa: E402
from test_store import pg_url_or_skip  # noqa: E402

SEED_ARTICLES = [
    {"id": f"seed-{i}", "text": f"{service_fuzz.VALID_TEXT} Story number {i} of the day."}
    for i in range(20)
]


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'fuzz.db'}"
        return
    url = pg_url_or_skip()
    yield url
    from neardup.store.postgres import drop_schema

    drop_schema(url)


def fuzz(store_url: str, n: int, seed: int) -> service_fuzz.Report:
    settings = ServiceSettings(store=store_url, max_text_chars=200_000, body_timeout_seconds=5)
    with TestClient(create_app(settings), raise_server_exceptions=False) as client:
        assert client.post("/v1/documents", json=SEED_ARTICLES).status_code == 200
        report = service_fuzz.run(client, n, seed, [a["id"] for a in SEED_ARTICLES])
        assert client.get("/healthz").status_code == 200  # still serving
    return report


def test_fuzzed_requests_never_get_a_5xx(store_url: str) -> None:
    report = fuzz(store_url, 600, seed=1)
    assert report.failures == [], "\n".join(report.failures[:10])
    assert report.statuses[200] > 50 and sum(report.statuses.values()) == 600
    assert len([s for s in report.statuses if 400 <= s < 500]) >= 5  # many kinds refused


@pytest.mark.slow
def test_twenty_thousand_fuzzed_requests_never_get_a_5xx(store_url: str) -> None:
    start = time.perf_counter()
    report = fuzz(store_url, 20_000, seed=2024)
    seconds = time.perf_counter() - start
    backend = "postgres" if store_url.startswith("postgresql") else "sqlite"
    record = os.environ.get("NEARDUP_FUZZ_RESULTS")
    if record:
        _record(Path(record), backend, report, seconds)
    assert report.failures == [], "\n".join(report.failures[:10])
    assert report.requests >= 20_000


def _record(out: Path, backend: str, report: Any, seconds: float) -> None:
    saved: dict[str, Any] = json.loads(out.read_text()) if out.exists() else {}
    saved[backend] = {
        "requests": report.requests,
        "seconds": round(seconds, 1),
        "responses_5xx": sum(n for s, n in report.statuses.items() if s >= 500),
        "failures": report.failures[:20],
        "statuses": {str(k): v for k, v in sorted(report.statuses.items())},
        "by_endpoint": {
            k: {str(s): n for s, n in sorted(v.items())}
            for k, v in sorted(report.by_endpoint.items())
        },
        "machine": f"{platform.machine()} {os.cpu_count()} cpus, load {os.getloadavg()[0]:.1f}",
        "date": time.strftime("%Y-%m-%d"),
    }
    out.write_text(json.dumps(saved, indent=1, sort_keys=True) + "\n")
