"""Origin detection at small memory: the seen-id store against a set, the CLI's bounded
default, state files of other versions, labels, and sampled inserts.  (The small-memory
analysis itself is research: tests/research/test_origin_small_memory.py.)"""

from __future__ import annotations

import dataclasses
import json
import random
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from neardup.cli import cli
from neardup.detect.origin import OriginConfig, OriginDetector
from neardup.detect.origin.persist import save_state
from neardup.detect.origin.seen import PENDING, SeenIds
from neardup.detect.origin.table import BucketTable
from neardup.errors import ConfigError, ConflictError, StoreError


def test_seen_ids_match_a_set() -> None:
    rng = random.Random(7)
    seen = SeenIds()
    oracle: set[str] = set()
    for _ in range(3 * PENDING + 123):  # several flushes and merges
        doc_id = f"doc-{rng.randrange(10 * PENDING)}"
        assert seen.add(doc_id) == (doc_id not in oracle)
        oracle.add(doc_id)
    assert len(seen) == len(oracle)
    probes = [f"doc-{i}" for i in range(10 * PENDING)]
    assert [p in seen for p in probes] == [p in oracle for p in probes]
    assert 42 not in seen  # not a string: never seen
    reloaded = SeenIds(seen.to_array())
    assert [p in reloaded for p in probes] == [p in oracle for p in probes]
    assert seen.nbytes == 8 * len(oracle)
    assert np.all(np.diff(seen.to_array().astype(np.float64)) > 0)  # sorted, distinct


TEXT = " ".join(f"w{i}" for i in range(40))


def test_states_of_older_versions_are_refused_with_a_message(tmp_path: Path) -> None:
    det = OriginDetector(OriginConfig.paper(memory_bytes=1 << 16))
    det.process("a", TEXT)
    det.save(tmp_path / "s.npz")
    # an older file: a bare .npz, not a state file with its digest
    files = {k: np.asarray(v) for k, v in det.state_arrays().items()}
    np.savez(tmp_path / "old.npz", **files)
    with pytest.raises(StoreError, match="not a neardup state file"):
        OriginDetector.load(tmp_path / "old.npz")
    # a checksummed file whose version is not this one's
    meta = json.loads(files["meta"].tobytes())
    meta["version"] = 2
    files["meta"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    save_state(tmp_path / "v2.npz", files)
    with pytest.raises(StoreError, match=r"version 2.*rebuild"):
        OriginDetector.load(tmp_path / "v2.npz")
    again = OriginDetector.load(tmp_path / "s.npz")
    with pytest.raises(ConflictError):
        again.process("a", TEXT)
    assert again.process("b", TEXT).dominant_origin == "a"


def test_cli_keeps_ids_on_disk_without_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    made: list[OriginDetector] = []
    original = OriginDetector.__init__

    def spy(self: OriginDetector, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        made.append(self)

    monkeypatch.setattr(OriginDetector, "__init__", spy)
    rows = [{"id": "a", "text": TEXT}, {"id": "b", "text": f"fresh words {TEXT}"}]
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = CliRunner().invoke(cli, ["origin", str(tmp_path / "in.jsonl"), "--memory", "1MB"])
    assert result.exit_code == 0, result.output
    out = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert out[1]["dominant_origin"] == "a"
    assert made and made[0].registry_size == 0  # no in-memory id registry
    assert list(scratch.iterdir()) == []  # the temporary id log is removed


def test_labels_name_the_knobs() -> None:
    assert OriginConfig.paper().label == "NHs+LS+BE"
    cfg = OriginConfig.paper(lucky_limit=3, lucky_every=3, estimation="b", bridge_limit=255)
    assert cfg.label == "NHs+LS(limit 3, y 3)+B(T 255)"
    ext = dataclasses.replace(
        cfg, bridge_tolerance=2, edge_extension=1, fingerprint_bytes=3, origin_bytes=4
    )
    assert ext.label == "NHs+LS(limit 3, y 3)+B(T 255, tol 2, ext 1)+packed(3+4 B)"
    for bad in ({"fingerprint_bytes": 5}, {"origin_bytes": 6}, {"bridge_tolerance": 128},
                {"edge_extension": -1}, {"fingerprint_bytes": True}):  # fmt: skip
        with pytest.raises(ConfigError):
            OriginConfig.paper(**bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("insert_modulo", [1, 3])
def test_insert_modulo_stores_only_the_sample(
    reuters_docs: list[dict[str, Any]], insert_modulo: int
) -> None:
    """Only sampled fingerprints are stored; the id registry still counts exactly the stored
    entries per origin (so an evicted origin's id is freed, never looked up after)."""
    cfg = OriginConfig.paper(memory_bytes=20 * (64 * 18 + 1), insert_modulo=insert_modulo)
    det = OriginDetector(cfg, reject_repeated_ids=False)
    for d in [d for d in reuters_docs if d["text"]][:400]:
        det.process(d["id"], d["text"])
    table = det.table
    assert isinstance(table, BucketTable)
    used = np.arange(table.capacity) % table.bucket_size < np.repeat(table.fill, 64)
    low = table.tag_lo[used].astype(np.uint64) >> np.uint64(16)
    assert np.all(low % np.uint64(insert_modulo) == 0)
    counts = np.bincount(table.origin[used] >> 1)
    registry = {o: v[1] for o, v in det._registry.items()}
    assert registry == {o: int(c) for o, c in enumerate(counts) if c}


def test_cli_takes_the_small_memory_options(tmp_path: Path) -> None:
    rows = [{"id": "a", "text": TEXT}, {"id": "b", "text": f"fresh words {TEXT}"}]
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    args = ["origin", str(tmp_path / "in.jsonl"), "--memory", "60KB", "--estimation", "b"]
    args += ["--lucky-limit", "3", "--lucky-every", "3", "--bridge-limit", "255"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert "adaptive(NHs)+LS(limit 3, y 3)+B(T 255, tol 2, ext 1)+packed(4+4 B)" in result.stderr
    bad = CliRunner().invoke(cli, [*args[:-6], "--lucky-limit", "0"])
    assert bad.exit_code != 0 and isinstance(bad.exception, ConfigError)
