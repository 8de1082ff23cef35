"""An acknowledged ingest survives kill -9: a subprocess ingests Reuters and prints each
committed id; it is killed at a random point; after a restart every acknowledged id is in
the store and the in-memory indexes agree with the store (checkpoint + log replay)."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from conftest import data_path, read_jsonl_gz
from neardup.api import NewsIndex, engine_of

WRITER = r"""
import json, sys
from neardup.api import NewsIndex
store, docs_path, every = sys.argv[1], sys.argv[2], int(sys.argv[3])
docs = [json.loads(line) for line in open(docs_path, encoding="utf-8")]
news = NewsIndex(store, checkpoint_every=every)
print("READY", flush=True)
for i in range(0, len(docs), 20):
    batch = docs[i:i + 20]
    results = news.ingest_many(batch)
    # Printed only after ingest_many returned, i.e. after the batch committed.
    for doc, res in zip(batch, results):
        if not isinstance(res, Exception):
            print("ACK", doc["id"], flush=True)
news.close()
print("DONE", flush=True)
"""


def _kill_after(store: str, docs_file: Path, acks_wanted: int, every: int) -> list[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, store, str(docs_file), str(every)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    acked: list[str] = []
    assert proc.stdout is not None
    try:
        deadline = time.monotonic() + 120
        for line in proc.stdout:
            if line.startswith("ACK ") and line.endswith("\n") and len(line.split()) == 2:
                acked.append(line.split()[1])
                if len(acked) >= acks_wanted:
                    break
            if time.monotonic() > deadline:
                break
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        # Lines already written before the kill are acknowledged too.
        rest, _ = proc.communicate(timeout=30)
    # Only complete (newline-terminated) lines count: the kill can cut the last one short,
    # e.g. to a bare "ACK " or a truncated id.
    complete = rest.split("\n")[:-1]
    acked += [ln.split()[1] for ln in complete if ln.startswith("ACK ") and len(ln.split()) == 2]
    assert proc.returncode == -signal.SIGKILL
    return acked


@pytest.mark.parametrize("seed", [1, 2])
def test_kill_minus_nine_loses_nothing_acknowledged(seed: int, tmp_path: Path) -> None:
    docs: list[dict[str, Any]] = [
        {k: d[k] for k in ("id", "text", "date", "title")}
        for d in read_jsonl_gz(data_path("reuters21578", "docs.jsonl.gz"), limit=1500)
    ]
    docs_file = tmp_path / "docs.jsonl"
    docs_file.write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    store = str(tmp_path / "news.db")
    rng = random.Random(seed)
    acked = _kill_after(store, docs_file, rng.randrange(100, 1200), every=rng.choice([50, 300]))
    assert acked, "the writer acknowledged nothing before the kill"
    with NewsIndex(store) as news:
        stored = {r.id for r in engine_of(news).store.iter_articles()}
        missing = [i for i in acked if i not in stored]
        assert missing == [], f"seed {seed}: {len(missing)} acknowledged ids lost"
        assert engine_of(news).consistency_errors() == []
        # The restarted stream goes on; a resent acknowledged article is a replay.
        results = news.ingest_many(docs)
        assert all(
            r.replayed
            for d, r in zip(docs, results, strict=True)
            if d["id"] in stored and not isinstance(r, Exception)
        )
        assert engine_of(news).consistency_errors() == []
        assert len(news) == sum(1 for r in results if not isinstance(r, Exception))
